//! The bound on a reply's size, counted as JSON: what the reply's line will take once escaped.
//!
//! A bound on raw bytes is not a bound on the reply. In a JSON string a control character takes
//! six bytes (`\u0001`), a newline, tab, quote or backslash two, and binary content travels as
//! base64 (four bytes for three). So 16 MiB of control bytes make a 96 MiB line, and a request
//! naming one file fifty times made gigabytes. The tools count the escaped size with
//! [`json_len`], without building the escaped text, and keep every reply within
//! [`REPLY_BYTES`]: read_file refuses (pointing at paging), the listings, searches and diffs stop
//! with a note that says how to narrow the request, read_multiple_files answers the files that
//! no longer fit with a note.
//!
//! 24 MiB: the largest reply replay promised before, a whole 16 MiB binary file as base64
//! (21.3 MiB), still fits, and so does any 16 MiB text with ordinary escaping. The protocol's
//! own cap on a reply line (the backstop, for what the tools do not bound) must be above it.

/// The most a tool's reply may hold: its content items and structured content, counted as
/// JSON-escaped bytes. The envelope, the notes and paths heading items add a little.
pub const REPLY_BYTES: usize = 24 * 1024 * 1024;

/// `REPLY_BYTES` as the notes say it.
pub const REPLY_NAME: &str = "24 MiB";

/// Extra bytes each byte takes inside a JSON string, beyond itself (serde_json's escaping).
const EXTRA: [u8; 256] = {
    let mut extra = [0u8; 256];
    let mut b = 0;
    while b < 0x20 {
        extra[b] = 5; // \u00XX
        b += 1;
    }
    extra[b'\n' as usize] = 1;
    extra[b'\r' as usize] = 1;
    extra[b'\t' as usize] = 1;
    extra[0x08] = 1; // \b
    extra[0x0c] = 1; // \f
    extra[b'"' as usize] = 1;
    extra[b'\\' as usize] = 1;
    extra
};

/// The bytes `text` takes inside a JSON string (without the quotes), as serde_json writes it.
/// One table lookup per byte: 16 MiB of source code are counted in 12 to 33 ms (release, on
/// this shared two-core machine); skipping 8 clean bytes at a time was no faster measurably.
pub fn json_len(text: &[u8]) -> usize {
    text.len() + text.iter().map(|&b| usize::from(EXTRA[usize::from(b)])).sum::<usize>()
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(text: &str) {
        let escaped = serde_json::to_string(text).unwrap();
        assert_eq!(json_len(text.as_bytes()), escaped.len() - 2, "{text:?} -> {escaped}");
    }

    #[test]
    fn counts_as_serde_json_escapes() {
        check("");
        check("plain text");
        check("a \"quoted\" \\ back\\slash");
        check("\n\r\t\u{8}\u{c}");
        check("\u{0}\u{1}\u{1f} \u{7f}");
        check("ü € 😀");
        let all: String = (0u8..128).map(char::from).collect();
        check(&all);
    }

    #[test]
    fn base64_lengths() {
        assert_eq!(base64_len(0), 0);
        assert_eq!(base64_len(1), 4);
        assert_eq!(base64_len(3), 4);
        assert_eq!(base64_len(4), 8);
        assert_eq!(base64_len(16 << 20), crate::base64::encode(&vec![0; 16 << 20]).len());
    }

    #[test]
    fn a_budget_takes_what_fits() {
        let mut budget = Budget::of(10);
        assert!(budget.take(4));
        assert!(!budget.take(7));
        assert_eq!(budget.left(), 6);
        assert!(budget.take(6));
        assert!(!budget.take(1));
    }
}
