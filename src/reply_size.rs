//! How big a reply is on the wire: the bounds on a reply, and the exact size of text and values
//! once written as JSON (escapes included), measured without writing them.
//!
//! Below `protocol` and `tools`, so that a tool can budget its output in the same bytes the
//! protocol counts: a control byte costs six (`\u0001`), a newline or a quote two.
//!
//! A bound on raw bytes is not a bound on the reply: 16 MiB of control bytes make a 96 MiB
//! line, and a request naming one file fifty times made gigabytes. So the tools count the
//! escaped size of what they return ([`escaped_text_len`], without building the escaped text)
//! and keep it within [`REPLY_BYTES`] (24 MiB) with a [`Budget`]: read_file refuses (pointing at
//! paging), the listings, searches and diffs stop with a note that says how to narrow the
//! request, read_multiple_files answers the files that no longer fit with a note. The
//! protocol's cap on a reply line, [`MAX_REPLY_BYTES`] (32 MiB), is the backstop for what no tool
//! bounds.

use serde_json::Value;

/// The most a tool's reply may hold: its content items and structured content, counted as
/// JSON-escaped bytes. 24 MiB: the largest reply replay promised before, a whole 16 MiB binary
/// file as base64 (21.3 MiB), still fits, and so does any 16 MiB text with ordinary escaping.
pub const REPLY_BYTES: usize = 24 << 20;

/// `REPLY_BYTES` as the notes say it.
pub const REPLY_NAME: &str = "24 MiB";

/// The most one reply line may hold, envelope, notes and a batch's replies together included:
/// `REPLY_BYTES` with room for the envelope and the notes that head items. A reply over it (a
/// batch whose replies add up past it, or output no tool bounds) becomes an error that says how
/// to ask for less.
pub const MAX_REPLY_BYTES: usize = 32 << 20;

/// The length of `n` bytes as base64 (with padding).
pub const fn base64_len(n: usize) -> usize {
    n.div_ceil(3) * 4
}

/// The default bound on a reply's text in o200k tokens (`--max-reply-tokens`): Claude Code
/// refuses a tool result over 25,000 tokens, and its own tokenizer counts more than o200k.
pub const REPLY_TOKENS: u32 = 20_000;

/// The JSON-escaped bytes a reply of `tokens` o200k tokens may take: as many bytes as tokens.
/// A token is at least one byte of the text, and escaping never shrinks it, so the bound
/// holds for any text without counting its tokens (no cost, and no tokenizer in the binary).
/// It is loose: the benchmark corpus's text files average 0.29 tokens per escaped byte, but
/// files of small numbers (`0 1 0 1 …`, petgraph's test graphs) take 1.00, so no smaller
/// number of bytes per token holds even for the corpus.
pub const fn token_bytes(tokens: u32) -> usize {
    let bytes = tokens as usize;
    if bytes < REPLY_BYTES {
        bytes
    } else {
        REPLY_BYTES
    }
}

/// Room a reply under a token bound keeps for the notes that say what it left out and how to
/// get it: the longest (execute_command's two cut notes and its exit code) take about 600
/// bytes.
const NOTES_BYTES: usize = 1024;

/// What is left of a reply's bound as a tool writes it.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    left: usize,
    /// The bound in tokens, when the reply has one (`--max-reply-tokens`); else the bound is
    /// `REPLY_BYTES`.
    tokens: Option<u32>,
}

impl Default for Budget {
    fn default() -> Budget {
        Budget { left: REPLY_BYTES, tokens: None }
    }
}

impl Budget {
    /// A budget of `bytes` (the tests use small ones).
    pub fn of(bytes: usize) -> Budget {
        Budget { left: bytes, tokens: None }
    }

    /// The budget of a reply of at most `tokens` o200k tokens; 0 is no token bound, only
    /// `REPLY_BYTES`.
    pub fn of_tokens(tokens: u32) -> Budget {
        match tokens {
            0 => Budget::default(),
            // The notes that say what was left out are written past what the tools count.
            n => Budget {
                left: token_bytes(n) - NOTES_BYTES.min(token_bytes(n) / 2),
                tokens: Some(n),
            },
        }
    }

    /// The same bound, with `bytes` left (a part of a reply that shares it).
    pub fn within(self, bytes: usize) -> Budget {
        Budget { left: bytes.min(self.left), ..self }
    }

    /// The same bound, with nothing left.
    pub fn spent(self) -> Budget {
        Budget { left: 0, ..self }
    }

    /// The bound in tokens, if the reply has one.
    pub fn tokens(&self) -> Option<u32> {
        self.tokens
    }

    /// How the notes name the bound: `20,000-token`, or `24 MiB`.
    pub fn name(&self) -> String {
        match self.tokens {
            Some(n) => format!("{}-token", thousands(n)),
            None => REPLY_NAME.to_owned(),
        }
    }

    /// The cap a page of read_file is held to: this bound's bytes, named by its tokens.
    pub fn page_cap(&self) -> Cap {
        match self.tokens {
            Some(n) => Cap::Tokens(n),
            None => Cap::Json(self.left),
        }
    }

    pub fn left(&self) -> usize {
        self.left
    }

    /// Takes `n` bytes if they fit; otherwise takes nothing and says so.
    pub fn take(&mut self, n: usize) -> bool {
        match self.left.checked_sub(n) {
            Some(left) => {
                self.left = left;
                true
            }
            None => false,
        }
    }
}

/// The length of `text` written as a JSON string, quotes included, exactly as serde_json
/// writes it: `"` and `\` take two bytes, `\b \t \n \f \r` two, other control bytes six.
pub fn escaped_len(text: &str) -> usize {
    escaped_text_len(text.as_bytes()) + 2
}

/// The bytes `text` takes inside a JSON string, without the quotes.
pub fn escaped_text_len(text: &[u8]) -> usize {
    // Counted in blocks of 255 bytes with one-byte counters, a form the compiler turns into
    // 16-byte vector compares: 0.73 ms for a 5 MiB text file in a release build on the
    // 2-core machine, where a table lookup per byte took 1.39 ms (both for every reply, as the
    // tool and the protocol each measure it before writing).
    let mut extra = 0;
    for block in text.chunks(255) {
        let (mut control, mut short, mut doubled) = (0u8, 0u8, 0u8);
        for &byte in block {
            control += u8::from(byte < 0x20);
            // \b \t \n \f \r: 8 to 13 but 11.
            short += u8::from(byte.wrapping_sub(8) < 6) & u8::from(byte != 11);
            doubled += u8::from(byte == b'"') + u8::from(byte == b'\\');
        }
        extra += 5 * usize::from(control) - 4 * usize::from(short) + usize::from(doubled);
    }
    text.len() + extra
}

/// The bytes a name takes inside a JSON string as it is shown: valid UTF-8 as it is, each
/// invalid sequence as U+FFFD (three bytes), as `String::from_utf8_lossy` shows it. Costing such
/// a name by its raw bytes let 30,000 names of 255 bytes not UTF-8 take a directory_tree reply
/// to 44 MB, refused whole, where its bound is 24 MiB.
pub fn shown_escaped_len(raw: &[u8]) -> usize {
    raw.utf8_chunks()
        .map(|c| escaped_text_len(c.valid().as_bytes()) + 3 * usize::from(!c.invalid().is_empty()))
        .sum()
}

/// The bytes each byte adds when escaped.
static ESCAPE_EXTRA: [u8; 256] = {
    let mut extra = [0u8; 256];
    let mut b = 0;
    while b < 0x20 {
        extra[b] = 5;
        b += 1;
    }
    extra[0x08] = 1;
    extra[0x09] = 1;
    extra[0x0a] = 1;
    extra[0x0c] = 1;
    extra[0x0d] = 1;
    extra[b'"' as usize] = 1;
    extra[b'\\' as usize] = 1;
    extra
};

/// Appends `text` as a JSON string, quotes included, byte for byte as serde_json writes it
/// (`\"`, `\\`, `\b \t \n \f \r`, other control bytes as `\u00xx`, everything else as it is).
///
/// Sixteen bytes are looked at a time and the runs between escapes copied whole: 1.9 ms for a
/// 5 MiB text file (a newline every ~60 bytes) in a release build on the 2-core machine, where
/// serde_json's writer took 3.7 ms, the largest part of read_file's own time on such a file.
pub fn push_json_string(out: &mut Vec<u8>, text: &str) {
    let bytes = text.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut start = 0;
    let mut blocks = bytes.chunks_exact(16);
    let mut at = 0;
    for block in &mut blocks {
        let mut mask = escapes_in(block.try_into().unwrap_or(&[0; 16]));
        while mask != 0 {
            let i = at + mask.trailing_zeros() as usize;
            out.extend_from_slice(&bytes[start..i]);
            push_escape(out, bytes[i]);
            start = i + 1;
            mask &= mask - 1;
        }
        at += 16;
    }
    for (i, &byte) in bytes.iter().enumerate().skip(at) {
        if ESCAPE_EXTRA[usize::from(byte)] != 0 {
            out.extend_from_slice(&bytes[start..i]);
            push_escape(out, byte);
            start = i + 1;
        }
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// Bit `i` set when byte `i` of the block is escaped: a control byte, `"` or `\\`.
#[cfg(target_arch = "x86_64")]
fn escapes_in(block: &[u8; 16]) -> u32 {
    use std::arch::x86_64::{
        _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };
    // SAFETY: SSE2 is part of every x86_64 CPU, and the unaligned load reads exactly the 16
    // bytes the reference covers.
    unsafe {
        let v = _mm_loadu_si128(block.as_ptr().cast());
        // min(v, 0x1f) == v: v is at most 0x1f, unsigned.
        let control = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1f)), v);
        let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(0x22));
        let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(0x5c));
        _mm_movemask_epi8(_mm_or_si128(control, _mm_or_si128(quote, backslash))) as u32
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn escapes_in(block: &[u8; 16]) -> u32 {
    escapes_in_words(block)
}

/// `escapes_in` without vector instructions: eight bytes at a time, each escaped byte found by
/// its flag. Used elsewhere than x86_64, and tested against the vector form everywhere.
#[cfg_attr(all(target_arch = "x86_64", not(test)), expect(dead_code))]
fn escapes_in_words(block: &[u8; 16]) -> u32 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    // 0x80 in each zero byte of `w`, nothing elsewhere.
    let zero_bytes = |w: u64| !(((w & LOW7).wrapping_add(LOW7)) | w | LOW7);
    let mut mask = 0;
    for (half, word) in block.chunks_exact(8).enumerate() {
        let w = u64::from_le_bytes(word.try_into().unwrap_or_default());
        let mut flags = zero_bytes(w & (ONES * 0xe0))
            | zero_bytes(w ^ (ONES * 0x22))
            | zero_bytes(w ^ (ONES * 0x5c));
        while flags != 0 {
            mask |= 1 << (half * 8 + flags.trailing_zeros() as usize / 8);
            flags &= flags - 1;
        }
    }
    mask
}

fn push_escape(out: &mut Vec<u8>, byte: u8) {
    let short = match byte {
        b'"' => b'"',
        b'\\' => b'\\',
        0x08 => b'b',
        0x09 => b't',
        0x0a => b'n',
        0x0c => b'f',
        0x0d => b'r',
        _ => {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.extend_from_slice(b"\\u00");
            out.push(HEX[usize::from(byte >> 4)]);
            out.push(HEX[usize::from(byte & 0xf)]);
            return;
        }
    };
    out.push(b'\\');
    out.push(short);
}

/// A JSON object written member by member as bytes: the tools' one way of writing JSON by
/// hand, for data only ever serialized (10,000 matches as `Value` objects cost megabytes of
/// peak memory and their drop). Strings go through [`push_json_string`]; `raw` takes JSON the
/// caller spells itself (numbers, literals, punctuation of nested values).
pub struct JsonObject {
    out: Vec<u8>,
}

impl Default for JsonObject {
    fn default() -> Self {
        JsonObject::with_capacity(0)
    }
}

impl JsonObject {
    /// An object whose buffer is sized for `len` bytes, so that a large one is not copied as
    /// it grows.
    pub fn with_capacity(len: usize) -> JsonObject {
        let mut out = Vec::with_capacity(len.max(1));
        out.push(b'{');
        JsonObject { out }
    }

    /// Starts the next member; its value follows.
    pub fn field(&mut self, name: &str) -> &mut Self {
        if self.out.len() > 1 {
            self.out.push(b',');
        }
        self.string(name);
        self.out.push(b':');
        self
    }

    pub fn string(&mut self, s: &str) -> &mut Self {
        push_json_string(&mut self.out, s);
        self
    }

    pub fn raw(&mut self, json: &str) -> &mut Self {
        self.out.extend_from_slice(json.as_bytes());
        self
    }

    /// `[item, item, …]`, each written by `write`.
    pub fn array<T>(
        &mut self,
        items: impl IntoIterator<Item = T>,
        mut write: impl FnMut(&mut Self, T),
    ) {
        self.out.push(b'[');
        for (i, item) in items.into_iter().enumerate() {
            if i > 0 {
                self.out.push(b',');
            }
            write(self, item);
        }
        self.out.push(b']');
    }

    /// Closes the object. Only UTF-8 went in (`&str`s, escaped or as spelled).
    pub fn finish(mut self) -> String {
        self.out.push(b'}');
        String::from_utf8(self.out).unwrap_or_default()
    }
}

/// Appends `value` as compact JSON, as serde_json writes it, its strings through
/// [`push_json_string`].
pub fn push_json(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::String(text) => push_json_string(out, text),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                push_json(out, item);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            out.push(b'{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                push_json_string(out, key);
                out.push(b':');
                push_json(out, item);
            }
            out.push(b'}');
        }
        // Null, booleans and numbers: serde_json's own spelling. Writing to a Vec cannot fail.
        scalar => {
            let _ = serde_json::to_writer(&mut *out, scalar);
        }
    }
}

/// The least and the most bytes `value` takes as JSON (`json_len` lies between), found without
/// reading its strings: a byte of a string takes one byte escaped, or at most six (`\u001f`).
pub fn json_len_range(value: &Value) -> (usize, usize) {
    let string = |s: &str| (s.len() + 2, 6 * s.len() + 2);
    let sum = |parts: &mut dyn Iterator<Item = (usize, usize)>, fixed: usize| {
        parts.fold((fixed, fixed), |(lo, hi), (a, b)| (lo + a, hi + b))
    };
    match value {
        Value::String(s) => string(s),
        Value::Array(items) => {
            sum(&mut items.iter().map(json_len_range), 2 + items.len().saturating_sub(1))
        }
        Value::Object(map) => {
            let mut members = map.iter().map(|(k, v)| {
                let (key, (lo, hi)) = (string(k), json_len_range(v));
                (key.0 + 1 + lo, key.1 + 1 + hi)
            });
            sum(&mut members, 2 + map.len().saturating_sub(1))
        }
        other => {
            let len = json_len(other);
            (len, len)
        }
    }
}

/// The length of `value` written by serde_json (compact), without writing it.
pub fn json_len(value: &Value) -> usize {
    match value {
        Value::Null => 4,
        Value::Bool(true) => 4,
        Value::Bool(false) => 5,
        Value::Number(n) => n.to_string().len(),
        Value::String(s) => escaped_len(s),
        Value::Array(items) => {
            2 + items.iter().map(json_len).sum::<usize>() + items.len().saturating_sub(1)
        }
        Value::Object(map) => {
            let members: usize = map.iter().map(|(k, v)| escaped_len(k) + 1 + json_len(v)).sum();
            2 + members + map.len().saturating_sub(1)
        }
    }
}

/// Shares of `total` for items that want `wants`: an item that wants less than an even share
/// of what is left gets what it wants, and the others split the rest evenly (water-filling), so
/// one big file does not crowd out the small ones, nor they it.
pub fn fair_shares(wants: &[usize], total: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..wants.len()).collect();
    order.sort_by_key(|&i| wants[i]);
    let mut shares = vec![0; wants.len()];
    let mut left = total;
    for (k, &i) in order.iter().enumerate() {
        let even = left / (wants.len() - k);
        shares[i] = wants[i].min(even);
        left -= shares[i];
    }
    shares
}

#[cfg(test)]
mod tests;

/// The cap a page was cut at, or that one line alone passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cap {
    /// A page's cap in bytes (read_file's `Limits::cap`).
    Bytes(usize),
    /// A page's cap in JSON-escaped bytes (read_file's `Limits::json_cap`).
    Json(usize),
    /// The reply's bound in tokens (`--max-reply-tokens`), kept as `token_bytes` of JSON.
    Tokens(u32),
}

impl Cap {
    /// How the note and the errors name it: `16 MiB`, or `24 MiB JSON`.
    pub fn name(self) -> String {
        match self {
            Cap::Bytes(n) => size_name(n),
            Cap::Json(n) => format!("{} JSON", size_name(n)),
            Cap::Tokens(n) => format!("{}-token", thousands(n)),
        }
    }

    /// The JSON-escaped bytes a page may take under this cap, when it bounds them.
    pub fn json_bytes(self) -> Option<usize> {
        match self {
            Cap::Bytes(_) => None,
            Cap::Json(n) => Some(n),
            Cap::Tokens(n) => Some(token_bytes(n)),
        }
    }
}

/// `20,000` for 20000.
pub fn thousands(n: u32) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// `16 MiB` for a whole number of MiB, else bytes.
pub fn size_name(bytes: usize) -> String {
    const MIB: usize = 1024 * 1024;
    if bytes >= MIB && bytes % MIB == 0 {
        format!("{} MiB", bytes / MIB)
    } else {
        format!("{bytes} bytes")
    }
}
