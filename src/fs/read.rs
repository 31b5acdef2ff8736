//! The capped read of a whole regular file, which every tool that takes a file's whole content
//! shares (read_file, read_multiple_files, edit_file, edit_files): one open, refused unless it
//! is a regular file, and never more than `MAX_READ_BYTES` (16 MiB) read.

use std::fs::{File, Metadata};
use std::io::Read;
use std::path::Path;

use nix::fcntl::OFlag;

use crate::error::ToolError;
use crate::policy::ResolvedPath;
use crate::reply_size::{self, REPLY_BYTES};

/// A whole file is read (or edited) only up to this: a model cannot use more in one reply, and
/// the base64 of a binary file grows it by a third again. A partial read returns at most this
/// much, and counts the lines of a file up to this size.
pub const MAX_READ_BYTES: u64 = 16 * 1024 * 1024;

// A whole file of the largest size read_file returns fits a reply even as base64.
const _: () = assert!(reply_size::base64_len(MAX_READ_BYTES as usize) <= REPLY_BYTES);

/// Opens a regular file for reading: a directory, device, socket or FIFO is refused, at once.
pub fn open_regular(resolved: &ResolvedPath) -> Result<(File, Metadata), ToolError> {
    let shown = &resolved.shown;
    // O_NONBLOCK: opening a FIFO must not hang the call; it changes nothing for regular files.
    let file = resolved
        .open(OFlag::O_RDONLY | OFlag::O_NONBLOCK)
        .map_err(|e| ToolError::io("read", shown, e))?;
    let meta = file.metadata().map_err(|e| ToolError::io("read", shown, e))?;
    if meta.is_dir() {
        return Err(ToolError::IsADirectory { path: shown.clone() });
    }
    if !meta.is_file() {
        return Err(ToolError::NotRegularFile { path: shown.clone() });
    }
    Ok((file, meta))
}

/// Reads a whole regular file of at most `MAX_READ_BYTES`.
pub fn read_capped(resolved: &ResolvedPath) -> Result<Vec<u8>, ToolError> {
    let (file, meta) = open_regular(resolved)?;
    read_all(file, &meta, &resolved.shown)
}

/// Reads an open regular file of at most `MAX_READ_BYTES` (`meta` is its metadata).
pub fn read_all(file: File, meta: &Metadata, shown: &Path) -> Result<Vec<u8>, ToolError> {
    if meta.len() > MAX_READ_BYTES {
        return Err(ToolError::TooLarge {
            path: shown.to_path_buf(),
            size: meta.len(),
            cap: MAX_READ_BYTES,
        });
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    // The file may grow between the stat and the read: never take more than the cap.
    file.take(MAX_READ_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| ToolError::io("read", shown, e))?;
    if bytes.len() as u64 > MAX_READ_BYTES {
        return Err(ToolError::TooLarge {
            path: shown.to_path_buf(),
            size: bytes.len() as u64,
            cap: MAX_READ_BYTES,
        });
    }
    Ok(bytes)
}
