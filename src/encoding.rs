//! Text encodings: a file's bytes decoded to text with the encoding, BOM and line ending they
//! came in, and text encoded back the same way, or refused where the encoding cannot hold it.
//!
//! Detection, in order:
//! 1. a BOM: UTF-8 (`EF BB BF`), UTF-16LE (`FF FE`), UTF-16BE (`FE FF`);
//! 2. valid UTF-8;
//! 3. a legacy encoding guessed by `chardetng` and decoded by `encoding_rs`, the crates Firefox
//!    uses for unlabeled pages.
//!
//! Binary stays binary: bytes are text only if they decode without a single malformed sequence
//! and hold no NUL and, outside UTF-8, no C0 control but tab, line feed, form feed and carriage
//! return (nor DEL, nor a C1 control once decoded). Legacy text has none of those (ISO-2022-JP,
//! which needs ESC, is not guessed), while random bytes have one in ten; a single-byte encoding
//! would otherwise decode any byte string at all.

use std::borrow::Cow;
use std::fmt;

use encoding_rs::{Encoding, UTF_16BE, UTF_16LE, UTF_8};

/// chardetng reads at most this many bytes, from the first non-ASCII one on: its guess settles
/// within a few kilobytes of non-ASCII text, and it reads about 6 MB/s of dense Japanese (64 KiB
/// took 3 to 11 ms, a third of decoding 5 MiB). The whole file is still decoded, and refused if
/// malformed.
const MAX_DETECTED_BYTES: usize = 16 * 1024;

/// A file's bytes as text, with what is needed to write them back the same way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    /// The text without its BOM; line endings as the file has them.
    pub text: String,
    pub encoding: &'static Encoding,
    /// The file starts with a BOM (always true for UTF-16, which is detected only by its BOM).
    pub bom: bool,
    /// The ending of the first line: the one added lines take.
    pub line_ending: LineEnding,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineEnding {
    Lf,
    CrLf,
}

impl Decoded {
    /// The encoding's name as the WHATWG Encoding Standard spells it: `UTF-8`, `UTF-16LE`,
    /// `Shift_JIS`, `GBK`, `windows-1252`, ….
    pub fn encoding_name(&self) -> &'static str {
        self.encoding.name()
    }

    /// Plain UTF-8, without a BOM: the text is the file's bytes, and written back as they are.
    pub fn is_plain_utf8(&self) -> bool {
        self.encoding == UTF_8 && !self.bom
    }

    /// The note a reader gets for text that is not plain UTF-8: `[encoding: Shift_JIS]`,
    /// `[encoding: UTF-16LE with BOM]`.
    pub fn note(&self) -> String {
        let bom = if self.bom { " with BOM" } else { "" };
        format!("[encoding: {}{bom}; edits keep it]", self.encoding.name())
    }
}

/// A character the file's encoding cannot represent. `line` and `column` are 1-based, the
/// column counted in characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unrepresentable {
    pub ch: char,
    pub line: usize,
    pub column: usize,
    pub encoding: &'static str,
}

impl fmt::Display for Unrepresentable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} (U+{:04X}) at line {}, column {} cannot be written in the file's encoding {}: \
             write it another way (an escape the file's language has) or convert the file to \
             UTF-8 with write_file first",
            self.ch, self.ch as u32, self.line, self.column, self.encoding
        )
    }
}

/// [`decode`] without copying plain UTF-8 (the common case): its bytes become the text. Binary
/// bytes are handed back.
pub fn decode_owned(bytes: Vec<u8>) -> Result<Decoded, Vec<u8>> {
    if bytes.starts_with(b"\xEF\xBB\xBF") || memchr::memchr(0, &bytes).is_some() {
        return decode(&bytes).ok_or(bytes);
    }
    match String::from_utf8(bytes) {
        Ok(text) => Ok(decoded(text, UTF_8, false)),
        Err(e) => {
            let bytes = e.into_bytes();
            decode(&bytes).ok_or(bytes)
        }
    }
}

/// UTF-8 text as it is, without a BOM, NUL bytes included: a file edit_file edits as UTF-8
/// whatever `decode` says.
pub fn plain_utf8(text: String) -> Decoded {
    decoded(text, UTF_8, false)
}

/// The encoding a `write_file` label names (a WHATWG label: `Shift_JIS`, `latin1`, `gbk`,
/// `utf-16le`…), or `None` for one replay cannot write: unknown, or decode-only (`replacement`,
/// `ISO-2022-KR`, whose encoder writes UTF-8 instead). UTF-16 is written with its BOM, the only
/// way it is read back as text.
pub fn for_label(label: &str) -> Option<(&'static Encoding, bool)> {
    let encoding = Encoding::for_label(label.trim().as_bytes())?;
    if encoding == UTF_16LE || encoding == UTF_16BE {
        return Some((encoding, true));
    }
    (encoding.output_encoding() == encoding).then_some((encoding, false))
}

/// `text` in `encoding`, after its BOM if `bom`: see [`encode`].
pub fn encode_as(
    encoding: &'static Encoding,
    bom: bool,
    text: &str,
) -> Result<Vec<u8>, Unrepresentable> {
    let like = Decoded { text: String::new(), encoding, bom, line_ending: LineEnding::Lf };
    encode(&like, text)
}

/// The bytes as text, or `None` if they are binary.
pub fn decode(bytes: &[u8]) -> Option<Decoded> {
    let (encoding, bom, body) = if let Some(body) = bytes.strip_prefix(b"\xEF\xBB\xBF") {
        (UTF_8, true, body)
    } else if let Some(body) = bytes.strip_prefix(b"\xFF\xFE") {
        (UTF_16LE, true, body)
    } else if let Some(body) = bytes.strip_prefix(b"\xFE\xFF") {
        (UTF_16BE, true, body)
    } else if let Ok(text) = std::str::from_utf8(bytes) {
        return (!text.contains('\0')).then(|| decoded(text.to_string(), UTF_8, false));
    } else {
        if has_binary_byte(bytes) {
            return None;
        }
        (guess(bytes), false, bytes)
    };
    let text = if encoding == UTF_8 {
        std::str::from_utf8(body).ok()?.to_string()
    } else {
        decode_body(encoding, body)?
    };
    let binary = if encoding == UTF_8 {
        text.contains('\0')
    } else {
        // Bytes of the UTF-8 text, not characters: ten times faster on 5 MiB of Shift_JIS, and
        // an ASCII byte in UTF-8 is always that character. The legacy bytes were checked for
        // C0 controls already, which their decoders map to themselves.
        (bom && has_binary_byte(text.as_bytes())) || has_c1_control(&text)
    };
    if binary {
        return None;
    }
    Some(decoded(text, encoding, bom))
}

/// Bytes from which an ASCII-compatible legacy decode is split in two at a line feed, the
/// halves decoded on two threads: Shift_JIS decodes at about 170 MB/s, 30 ms of a 5 MiB read.
const SPLIT_DECODE_BYTES: usize = 1 << 20;

/// `body` decoded, without replacement. In the ASCII-compatible encodings `chardetng` guesses, a
/// line feed byte is always a line feed, never part of a character, and no decoder keeps state
/// past it: the halves decode as the whole does, and a malformed sequence fails either.
fn decode_body(encoding: &'static Encoding, body: &[u8]) -> Option<String> {
    let whole = |body: &[u8]| {
        encoding.decode_without_bom_handling_and_without_replacement(body).map(Cow::into_owned)
    };
    if body.len() < SPLIT_DECODE_BYTES || !encoding.is_ascii_compatible() {
        return whole(body);
    }
    let mid = body.len() / 2;
    let Some(split) = memchr::memchr(b'\n', &body[mid..]).map(|i| mid + i + 1) else {
        return whole(body);
    };
    let (head, tail) = body.split_at(split);
    let (first, second) = std::thread::scope(|scope| {
        let second = scope.spawn(|| whole(tail));
        (whole(head), second.join().ok().flatten())
    });
    let mut text = first?;
    text.push_str(&second?);
    Some(text)
}

fn decoded(text: String, encoding: &'static Encoding, bom: bool) -> Decoded {
    let line_ending = match text.find('\n') {
        Some(i) if i > 0 && text.as_bytes()[i - 1] == b'\r' => LineEnding::CrLf,
        _ => LineEnding::Lf,
    };
    Decoded { text, encoding, bom, line_ending }
}

/// chardetng's guess from the non-ASCII part of the bytes (a long ASCII prefix says nothing).
fn guess(bytes: &[u8]) -> &'static Encoding {
    let first = bytes.iter().position(|&b| !b.is_ascii()).unwrap_or(0);
    // Back to the line's start, so that a multi-byte character's first byte is not cut.
    let start = bytes[..first].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let end = bytes.len().min(start + MAX_DETECTED_BYTES);
    let mut detector = chardetng::EncodingDetector::new(chardetng::Iso2022JpDetection::Deny);
    detector.feed(&bytes[start..end], end == bytes.len());
    detector.guess(None, chardetng::Utf8Detection::Deny)
}

/// A byte no legacy text encoding chardetng guesses puts in text: C0 controls but tab, line
/// feed, form feed, carriage return; and DEL.
fn is_binary_byte(b: u8) -> bool {
    // Bits 9, 10, 12 and 13: tab, line feed, form feed, carriage return.
    const ALLOWED: u32 = 0x3600;
    b == 0x7F || (b < 0x20 && (ALLOWED >> b) & 1 == 0)
}

/// Whether any byte is `is_binary_byte`: a branch-free OR over 4 KiB chunks, which the compiler
/// vectorizes: 1.8 ms for 5 MiB, against 3.6 ms with an exit test at each byte.
fn has_binary_byte(bytes: &[u8]) -> bool {
    bytes.chunks(4096).any(|chunk| chunk.iter().fold(false, |acc, &b| acc | is_binary_byte(b)))
}

/// Whether the text has a C1 control (U+0080 to U+009F, `C2 80` to `C2 9F` in UTF-8):
/// windows-1252 maps its five undefined bytes to these, and no text has them.
fn has_c1_control(text: &str) -> bool {
    let bytes = text.as_bytes();
    memchr::memchr_iter(0xC2, bytes).any(|i| matches!(bytes.get(i + 1), Some(0x80..=0x9F)))
}

/// `text` in the encoding, with the BOM, of `like`. Line endings are the text's own (the edit
/// engines and apply_patch give the lines they add the file's). Nothing is returned, only the first
/// character the encoding cannot represent, if there is one.
pub fn encode(like: &Decoded, text: &str) -> Result<Vec<u8>, Unrepresentable> {
    let encoding = like.encoding;
    let mut out = Vec::with_capacity(text.len() + 3);
    if encoding == UTF_16LE || encoding == UTF_16BE {
        if like.bom {
            out.extend_from_slice(if encoding == UTF_16LE { b"\xFF\xFE" } else { b"\xFE\xFF" });
        }
        for unit in text.encode_utf16() {
            let bytes = if encoding == UTF_16LE { unit.to_le_bytes() } else { unit.to_be_bytes() };
            out.extend_from_slice(&bytes);
        }
        return Ok(out);
    }
    if encoding == UTF_8 {
        if like.bom {
            out.extend_from_slice(b"\xEF\xBB\xBF");
        }
        out.extend_from_slice(text.as_bytes());
        return Ok(out);
    }
    let mut encoder = encoding.new_encoder();
    let mut read = 0;
    loop {
        let room = encoder
            .max_buffer_length_from_utf8_without_replacement(text.len() - read)
            .unwrap_or(text.len() * 4 + 16);
        out.reserve(room);
        let start = out.len();
        out.resize(start + room, 0);
        let (result, n_read, n_written) =
            encoder.encode_from_utf8_without_replacement(&text[read..], &mut out[start..], true);
        out.truncate(start + n_written);
        read += n_read;
        match result {
            encoding_rs::EncoderResult::InputEmpty => return Ok(out),
            encoding_rs::EncoderResult::OutputFull => continue,
            encoding_rs::EncoderResult::Unmappable(ch) => {
                let at = read - ch.len_utf8();
                let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
                return Err(Unrepresentable {
                    ch,
                    line: text[..at].matches('\n').count() + 1,
                    column: text[line_start..at].chars().count() + 1,
                    encoding: encoding.name(),
                });
            }
        }
    }
}

/// `new_text`, an edit of `like.text`, encoded so that the bytes of the lines the edit left
/// alone are `original`'s own, even where the encoding maps two byte sequences to one
/// character (Shift_JIS's NEC and IBM duplicates): when `original` does not come back from
/// encoding its own text, the unchanged first and last lines are copied from it.
pub fn encode_edit(
    like: &Decoded,
    original: &[u8],
    new_text: &str,
) -> Result<Vec<u8>, Unrepresentable> {
    let whole = encode(like, new_text)?;
    // UTF-8 and UTF-16 (decoded without replacement) encode every text back to its bytes.
    if [UTF_8, UTF_16LE, UTF_16BE].contains(&like.encoding) {
        return Ok(whole);
    }
    let old_text = like.text.as_str();
    // The unchanged lines: the longest common prefix and suffix, at line boundaries.
    let prefix = common_prefix(old_text, new_text);
    let prefix = old_text[..prefix].rfind('\n').map_or(0, |i| i + 1);
    let max_suffix = (old_text.len() - prefix).min(new_text.len() - prefix);
    let suffix = common_suffix(&old_text[prefix..], &new_text[prefix..]).min(max_suffix);
    let suffix = match old_text[old_text.len() - suffix..].find('\n') {
        Some(i) if suffix > 0 => suffix - i - 1,
        _ => 0,
    };
    if encode(like, old_text).ok().as_deref() == Some(original) {
        return Ok(whole);
    }
    let bom = if like.bom { encode(like, "").map_or(0, |b| b.len()) } else { 0 };
    let head = encode(like, &old_text[..prefix])?.len();
    let tail = encode(like, &old_text[old_text.len() - suffix..])?.len() - bom;
    let middle = encode(like, &new_text[prefix..new_text.len() - suffix])?;
    let mut out = Vec::with_capacity(whole.len());
    out.extend_from_slice(&original[..head.min(original.len())]);
    out.extend_from_slice(&middle[bom..]);
    out.extend_from_slice(&original[original.len().saturating_sub(tail)..]);
    Ok(out)
}

fn common_prefix(a: &str, b: &str) -> usize {
    let n = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    (0..=n).rev().find(|&i| a.is_char_boundary(i)).unwrap_or(0)
}

fn common_suffix(a: &str, b: &str) -> usize {
    let n = a.bytes().rev().zip(b.bytes().rev()).take_while(|(x, y)| x == y).count();
    (0..=n).rev().find(|&i| a.is_char_boundary(a.len() - i)).unwrap_or(0)
}

#[cfg(test)]
mod tests;
