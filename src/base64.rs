//! Standard base64 (RFC 4648, with padding) for binary content in MCP results.
//!
//! Twenty lines of encoder instead of a dependency: replay only ever encodes.

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

pub fn encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[track_caller]
    fn check(input: &[u8], expect: &str) {
        assert_eq!(super::encode(input), expect);
    }

    #[test]
    fn rfc4648_vectors() {
        check(b"", "");
        check(b"f", "Zg==");
        check(b"fo", "Zm8=");
        check(b"foo", "Zm9v");
        check(b"foob", "Zm9vYg==");
        check(b"fooba", "Zm9vYmE=");
        check(b"foobar", "Zm9vYmFy");
        check(&[0, 255, 128], "AP+A");
    }
}
