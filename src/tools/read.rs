//! read_file and read_multiple_files: text as text, binary as image, audio or a resource blob.

use std::io::Read;

use nix::fcntl::OFlag;
use std::path::Path;

use serde::Deserialize;

use crate::base64;
use crate::error::ToolError;
use crate::policy::ResolvedPath;
use crate::tools::{Content, Ctx, Output};

/// read_file refuses files larger than this: a model cannot use more in one reply, and the
/// base64 of a binary file grows it by a third again.
pub const MAX_READ_BYTES: u64 = 16 * 1024 * 1024;

#[derive(Deserialize)]
pub struct ReadFileArgs {
    path: String,
}

#[derive(Deserialize)]
pub struct ReadMultipleFilesArgs {
    paths: Vec<String>,
}

pub fn read_file(ctx: &Ctx, args: ReadFileArgs) -> Result<Output, ToolError> {
    let resolved = ctx.policy.resolve_read(&args.path)?;
    let bytes = read_capped(&resolved)?;
    Ok(Output {
        content: vec![content_for(&resolved.real, bytes)],
        is_error: false,
        structured: None,
        structured_json: None,
    })
}

/// One text item per path, in the order given; a failure is that item's text, never the call's.
pub fn read_multiple_files(ctx: &Ctx, args: ReadMultipleFilesArgs) -> Result<Output, ToolError> {
    let content = args
        .paths
        .iter()
        .map(|path| {
            let body = match read_one_of_many(ctx, path) {
                Ok(body) => body,
                Err(e) => format!("[error: {e}]"),
            };
            Content::Text(format!("{path}:\n{body}"))
        })
        .collect();
    Ok(Output { content, is_error: false, structured: None, structured_json: None })
}

fn read_one_of_many(ctx: &Ctx, path: &str) -> Result<String, ToolError> {
    let resolved = ctx.policy.resolve_read(path)?;
    let bytes = read_capped(&resolved)?;
    match text_of(bytes) {
        Ok(text) => Ok(text),
        Err(bytes) => Ok(format!(
            "[binary file: {} bytes, {}; read it alone with read_file to get its content]",
            bytes.len(),
            mime_type(&resolved.real)
        )),
    }
}

/// Reads a regular file of at most `MAX_READ_BYTES`.
fn read_capped(resolved: &ResolvedPath) -> Result<Vec<u8>, ToolError> {
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
        let source = std::io::Error::other("not a regular file (a device, socket or pipe)");
        return Err(ToolError::Io { op: "read", path: shown.clone(), source });
    }
    if meta.len() > MAX_READ_BYTES {
        return Err(ToolError::TooLarge {
            path: shown.clone(),
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
            path: shown.clone(),
            size: bytes.len() as u64,
            cap: MAX_READ_BYTES,
        });
    }
    Ok(bytes)
}

/// Text is valid UTF-8 without NUL bytes; anything else is binary and handed back.
fn text_of(bytes: Vec<u8>) -> Result<String, Vec<u8>> {
    if bytes.contains(&0) {
        return Err(bytes);
    }
    String::from_utf8(bytes).map_err(|e| e.into_bytes())
}

fn content_for(path: &Path, bytes: Vec<u8>) -> Content {
    let bytes = match text_of(bytes) {
        Ok(text) => return Content::Text(text),
        Err(bytes) => bytes,
    };
    let mime_type = mime_type(path);
    let data = base64::encode(&bytes);
    if mime_type.starts_with("image/") {
        Content::Image { data, mime_type }
    } else if mime_type.starts_with("audio/") {
        Content::Audio { data, mime_type }
    } else {
        Content::Blob { uri: file_uri(path), data, mime_type }
    }
}

/// `file://` URI with the bytes outside RFC 3986's unreserved set and `/` percent-encoded.
fn file_uri(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut uri = String::from("file://");
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri
}

/// The MIME type by extension, for binary content only.
pub fn mime_type(path: &Path) -> &'static str {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or_default().to_ascii_lowercase();
    match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "bmp" => "image/bmp",
        "ico" => "image/x-icon",
        "tif" | "tiff" => "image/tiff",
        "avif" => "image/avif",
        "svg" => "image/svg+xml",
        "wav" => "audio/wav",
        "mp3" => "audio/mpeg",
        "ogg" | "oga" => "audio/ogg",
        "flac" => "audio/flac",
        "m4a" => "audio/mp4",
        "aac" => "audio/aac",
        "opus" => "audio/opus",
        "pdf" => "application/pdf",
        "zip" => "application/zip",
        "gz" | "tgz" => "application/gzip",
        "tar" => "application/x-tar",
        "xz" => "application/x-xz",
        "zst" => "application/zstd",
        "bz2" => "application/x-bzip2",
        "7z" => "application/x-7z-compressed",
        "wasm" => "application/wasm",
        "json" => "application/json",
        "mp4" => "video/mp4",
        "webm" => "video/webm",
        "woff" => "font/woff",
        "woff2" => "font/woff2",
        "ttf" => "font/ttf",
        "otf" => "font/otf",
        "sqlite" | "db" => "application/vnd.sqlite3",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(path: &str, expect: &str) {
        assert_eq!(file_uri(Path::new(path)), expect);
    }

    #[test]
    fn file_uris() {
        check("/a/b.bin", "file:///a/b.bin");
        check("/a b/c#d", "file:///a%20b/c%23d");
        check("/ü", "file:///%C3%BC");
    }
}
