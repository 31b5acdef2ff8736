//! Content digests: the sha256 get_file_info and read_file report, and the stale-write guard
//! (`expectedSha256`) compares before a writer changes a file.

use std::io::{self, Read};
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::error::ToolError;
use crate::fs::read::open_regular;
use crate::policy::ResolvedPath;

/// The sha256 of `bytes`, as 64 lowercase hex digits (what `sha256sum` prints).
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// The sha256 of everything `reader` gives, read 64 KiB at a time: memory stays bounded
/// whatever the file's size.
pub fn sha256_of(mut reader: impl Read) -> io::Result<String> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0; 64 * 1024];
    loop {
        match reader.read(&mut buf) {
            Ok(0) => return Ok(hex(&hasher.finalize())),
            Ok(n) => hasher.update(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

fn hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Refuses the change (`ToolError::Stale`) unless `actual`, the sha256 of the content the call
/// read, is `expected` (hex, either case). `actual` is `None` for a file that does not exist.
pub fn check(path: &Path, expected: &str, actual: Option<String>) -> Result<(), ToolError> {
    let expected = expected.trim().to_ascii_lowercase();
    if actual.as_deref() == Some(expected.as_str()) {
        return Ok(());
    }
    Err(ToolError::Stale { path: path.to_path_buf(), expected, actual })
}

/// `check` against the file's current content, read once as a stream, for a writer that does
/// not read the file otherwise (write_file).
pub fn check_file(resolved: &ResolvedPath, expected: &str) -> Result<(), ToolError> {
    let actual = match open_regular(resolved) {
        Ok((file, _)) => {
            Some(sha256_of(file).map_err(|e| ToolError::io("hash", &resolved.shown, e))?)
        }
        Err(ToolError::NotFound { .. }) => None,
        Err(e) => return Err(e),
    };
    check(&resolved.shown, expected, actual)
}

#[cfg(test)]
mod tests;
