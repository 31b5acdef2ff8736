//! How big a reply is on the wire: the bounds on a reply, and the exact size of text and values
//! once written as JSON (escapes included), measured without writing them.
//!
//! Below `protocol` and `tools`, so that a tool can budget its output in the same bytes the
//! protocol counts: a control byte costs six (`\u0001`), a newline or a quote two.
//!
//! A bound on raw bytes is not a bound on the reply: 16 MiB of control bytes make a 96 MiB
//! line, and a request naming one file fifty times made gigabytes. So the tools count the
//! escaped size of what they return ([`escaped_text_len`], without building the escaped text)
//! and keep it within [`REPLY_BYTES`] with a [`Budget`]: read_file refuses (pointing at
//! paging), the listings, searches and diffs stop with a note that says how to narrow the
//! request, read_multiple_files answers the files that no longer fit with a note. The
//! protocol's cap on a reply line, [`MAX_REPLY_BYTES`], is the backstop for what no tool
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

/// What is left of a reply's bound as a tool writes it.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    left: usize,
}

impl Default for Budget {
    fn default() -> Budget {
        Budget { left: REPLY_BYTES }
    }
}

impl Budget {
    /// A budget of `bytes` (the tests use small ones).
    pub fn of(bytes: usize) -> Budget {
        Budget { left: bytes }
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
    // One table lookup per byte: 3.6 GB/s in a release build on the 2-core machine (for
    // plain text and for control bytes alike), where serde_json writes the same text at 0.15
    // to 0.5 GB/s; so measuring a reply before writing it adds a tenth at most. Skipping 8
    // clean bytes at a time was no faster measurably.
    text.len() + text.iter().map(|&b| usize::from(ESCAPE_EXTRA[usize::from(b)])).sum::<usize>()
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

#[cfg(test)]
mod tests;
