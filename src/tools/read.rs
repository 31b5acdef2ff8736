//! read_file and read_multiple_files: text as text, binary as image, audio or a resource blob;
//! read_file also reads some lines of a text file (`paging`).

mod paging;

use std::os::unix::fs::FileExt;
use std::path::Path;

use serde::Deserialize;

use crate::base64;
use crate::encoding::{self, Decoded};
use crate::error::ToolError;
use crate::fs::read::{open_regular, read_all, read_capped, MAX_READ_BYTES};
use crate::policy::ResolvedPath;
use crate::reply_size::{self, escaped_text_len, size_name, Budget, Cap, REPLY_BYTES, REPLY_NAME};
use crate::tools::{Content, Ctx, Output, Structured};
use paging::{Limits, PageError, Range};

/// How much of a file's start a partial read looks at to tell a binary file: one with a NUL byte
/// there is binary, whatever the lines asked for hold (grep_files looks at as much).
const SNIFF_BYTES: u64 = 4096;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadFileArgs {
    path: String,
    offset: Option<u64>,
    limit: Option<u64>,
    head: Option<u64>,
    tail: Option<u64>,
    #[serde(default)]
    line_numbers: bool,
}

impl ReadFileArgs {
    /// The lines asked for; `None` (no paging parameter, `lineNumbers` false or absent) reads
    /// the whole file, exactly as the contract says.
    fn range(&self) -> Result<Option<Range>, ToolError> {
        let ranged = self.offset.is_some() || self.limit.is_some();
        let conflict = |field: &str, other: &str| {
            ToolError::invalid_params(
                field,
                format!(
                    "cannot be combined with `{other}`: give `head`, or `tail`, or \
                     `offset` and `limit`"
                ),
            )
        };
        let range = match (self.head, self.tail) {
            (Some(_), Some(_)) => return Err(conflict("tail", "head")),
            (Some(_), None) if ranged => return Err(conflict("head", self.range_field())),
            (None, Some(_)) if ranged => return Err(conflict("tail", self.range_field())),
            (Some(n), None) => Range::From { first: 1, count: Some(n) },
            (None, Some(n)) => Range::Last(n),
            (None, None) if ranged || self.line_numbers => {
                Range::From { first: self.offset.unwrap_or(1), count: self.limit }
            }
            (None, None) => return Ok(None),
        };
        Ok(Some(range))
    }

    /// `offset`, or `limit` when only it is given.
    fn range_field(&self) -> &'static str {
        if self.offset.is_some() {
            "offset"
        } else {
            "limit"
        }
    }

    /// The first paging parameter given, to name in an error.
    fn paging_field(&self) -> &'static str {
        [
            ("offset", self.offset.is_some()),
            ("limit", self.limit.is_some()),
            ("head", self.head.is_some()),
            ("tail", self.tail.is_some()),
        ]
        .into_iter()
        .find_map(|(name, given)| given.then_some(name))
        .unwrap_or("lineNumbers")
    }
}

#[derive(Deserialize)]
pub struct ReadMultipleFilesArgs {
    paths: Vec<String>,
}

pub fn read_file(ctx: &Ctx, args: ReadFileArgs) -> Result<Output, ToolError> {
    let range = args.range()?;
    let resolved = ctx.policy.resolve_read(&args.path)?;
    let budget = ctx.settings.budget();
    if let Some(range) = range {
        return read_lines(ctx, &resolved, &args, range, budget);
    }
    if budget.tokens().is_some() {
        // Escaping never shrinks text: a file bigger than the budget is paged from line 1, and
        // only the page is read, so a 16 MiB file costs the memory of its reply.
        let size = resolved.metadata().map_err(|e| ToolError::io("read", &resolved.shown, e))?.size;
        if size > budget.left() as u64 {
            if let Some(page) = first_page(ctx, &resolved, &args, budget)? {
                return Ok(page);
            }
        }
    }
    let bytes = read_capped(&resolved)?;
    let size = bytes.len() as u64;
    // The content's sha256, for a writer's `expectedSha256`: the file as read, in one pass.
    let sha256 = crate::fs::digest::sha256_hex(&bytes);
    let decoded = match encoding::decode_owned(bytes) {
        Ok(decoded) => decoded,
        Err(bytes) => {
            let content = vec![binary_content(&resolved.real, bytes)];
            let structured = Some(Structured::Value(serde_json::json!({ "sha256": sha256 })));
            return Ok(Output { content, is_error: false, structured });
        }
    };
    let json = escaped_text_len(decoded.text.as_bytes());
    if json > budget.left() {
        if budget.tokens().is_some() {
            if let Some(page) = first_page(ctx, &resolved, &args, budget)? {
                return Ok(page);
            }
        }
        return Err(ToolError::ReplyTooLarge { path: resolved.shown, size, json });
    }
    let structured = Some(Structured::Value(text_data(&decoded, sha256)));
    let note = (!decoded.is_plain_utf8()).then(|| Content::Text(decoded.note()));
    let content = std::iter::once(Content::Text(decoded.text)).chain(note).collect();
    Ok(Output { content, is_error: false, structured })
}

/// `structuredContent` for a whole text file: `encoding_data`'s and the file's `sha256`.
fn text_data(decoded: &Decoded, sha256: String) -> serde_json::Value {
    let mut data = encoding_data(decoded);
    data["sha256"] = sha256.into();
    data
}

/// `structuredContent` for text: `{"encoding": "Shift_JIS"}`, and `"bom": true` when it has one.
fn encoding_data(decoded: &Decoded) -> serde_json::Value {
    let mut data = serde_json::json!({ "encoding": decoded.encoding_name() });
    if decoded.bom {
        data["bom"] = true.into();
    }
    data
}

/// A text file too big for the reply's budget, read whole: its lines from the first, as many as
/// the budget holds, and the note that says where the next page starts. `None` for a file that
/// is not text (a NUL byte, or not UTF-8), which is read whole as binary content.
fn first_page(
    ctx: &Ctx,
    resolved: &ResolvedPath,
    args: &ReadFileArgs,
    budget: Budget,
) -> Result<Option<Output>, ToolError> {
    let range = Range::From { first: 1, count: None };
    match read_lines(ctx, resolved, args, range, budget) {
        // Without paging arguments, the only invalid parameter is paging a binary file.
        Err(ToolError::InvalidParams { .. }) => Ok(None),
        page => page.map(Some),
    }
}

/// Some lines of a text file, then the note that says which and of how many: two text items.
/// Only what the range needs is read (see `paging`), so the size cap applies to the lines
/// returned, not to the file.
fn read_lines(
    ctx: &Ctx,
    resolved: &ResolvedPath,
    args: &ReadFileArgs,
    range: Range,
    budget: Budget,
) -> Result<Output, ToolError> {
    let shown = &resolved.shown;
    let (file, meta) = open_regular(resolved)?;
    let size = meta.len();
    let json_cap = budget.left();
    let limits = Limits { cap: MAX_READ_BYTES as usize, json_cap, count_up_to: MAX_READ_BYTES };
    if args.line_numbers && matches!(range, Range::Last(_)) && size > limits.count_up_to {
        return Err(ToolError::invalid_params(
            "lineNumbers",
            format!(
                "cannot be combined with `tail` on a file over {}: {} is {size} bytes, and its \
                 lines are not counted (that would read all of it); leave out lineNumbers, or \
                 page from the start with offset and limit",
                size_name(limits.cap),
                shown.display()
            ),
        ));
    }
    let stop = || ctx.cancel.is_cancelled();
    let binary = || {
        ToolError::invalid_params(
            args.paging_field(),
            format!(
                "applies to text files only, and {} is binary (a NUL byte, or bytes that are \
                 not UTF-8); leave out offset, limit, head, tail and lineNumbers to read it \
                 whole, as base64",
                shown.display()
            ),
        )
    };
    let mut start = vec![0; size.min(SNIFF_BYTES) as usize];
    let n = file.read_at(&mut start, 0).map_err(|e| ToolError::io("read", shown, e))?;
    let start = &start[..n];
    let utf16 = start.starts_with(b"\xFF\xFE") || start.starts_with(b"\xFE\xFF");
    if !utf16 && start.contains(&0) {
        return Err(binary());
    }
    let numbers = args.line_numbers;
    // The JSON cap is the budget's: named by its tokens when it has them.
    let named = |cap: Cap| match cap {
        Cap::Json(_) => budget.page_cap(),
        cap => cap,
    };
    let page_of = |file: &dyn FileExt, size: u64| {
        let page = match range {
            Range::From { first, count } => {
                let reader = Reader { file, at: 0 };
                paging::from_start(reader, first, count, numbers, size, limits, &stop)
            }
            Range::Last(n) => {
                let read_at = |buf: &mut [u8], at: u64| file.read_exact_at(buf, at);
                paging::last_lines(read_at, n, numbers, size, limits)
            }
        };
        page.map_err(|e| match e {
            PageError::Io(e) => ToolError::io("read", shown, e),
            PageError::LineTooLong { line, cap } => {
                ToolError::LineTooLong { path: shown.clone(), line, cap: named(cap) }
            }
            PageError::Stopped => ToolError::Cancelled,
        })
        .map(|mut page| {
            page.cut = page.cut.map(named);
            page
        })
    };
    // Plain UTF-8 is paged from the file, reading only what the page needs. Text in another
    // encoding is decoded whole (up to the 16 MiB a whole read takes) and paged from memory.
    // A start that is not UTF-8 (but for a character cut at its end) is decoded too, so that
    // its ASCII lines are not paged as UTF-8.
    let utf8_start = std::str::from_utf8(start).map_or_else(|e| e.error_len().is_none(), |_| true);
    if !utf16 && utf8_start && !start.starts_with(b"\xEF\xBB\xBF") {
        let page = page_of(&file, size)?;
        if memchr::memchr(0, &page.text).is_some() {
            return Err(binary());
        }
        let note = page.note();
        if let Ok(text) = String::from_utf8(page.text) {
            return Ok(Output {
                content: vec![Content::Text(text), Content::Text(note)],
                is_error: false,
                structured: Some(Structured::Value(serde_json::json!({ "encoding": "UTF-8" }))),
            });
        }
    }
    let decoded = encoding::decode(&read_all(file, &meta, shown)?).ok_or_else(binary)?;
    let text = Text(decoded.text.as_bytes());
    let page = page_of(&text, decoded.text.len() as u64)?;
    let note = page.note();
    let note = format!("{}; {}", &note[..note.len() - 1], &decoded.note()[1..]);
    let text = String::from_utf8(page.text).map_err(|_| binary())?;
    Ok(Output {
        content: vec![Content::Text(text), Content::Text(note)],
        is_error: false,
        structured: Some(Structured::Value(encoding_data(&decoded))),
    })
}

/// Decoded text, read as a file is: the pages of a file in a legacy encoding come from it.
struct Text<'a>(&'a [u8]);

impl FileExt for Text<'_> {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
        let rest = self.0.get(offset as usize..).unwrap_or_default();
        let n = rest.len().min(buf.len());
        buf[..n].copy_from_slice(&rest[..n]);
        Ok(n)
    }

    fn write_at(&self, _: &[u8], _: u64) -> std::io::Result<usize> {
        Err(std::io::ErrorKind::Unsupported.into())
    }
}

/// A `FileExt` read from its start, as `paging::from_start` reads.
struct Reader<'a> {
    file: &'a dyn FileExt,
    at: u64,
}

impl std::io::Read for Reader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.file.read_at(buf, self.at)?;
        self.at += n as u64;
        Ok(n)
    }
}

/// One text item per path, in the order given; a failure is that item's text, never the call's.
/// The items share one reply's budget (`reply_size`): a file that no longer fits is not read,
/// and its item says how to get it.
pub fn read_multiple_files(ctx: &Ctx, args: ReadMultipleFilesArgs) -> Result<Output, ToolError> {
    let budget = ctx.settings.budget();
    if budget.tokens().is_some() {
        return read_shares(ctx, &args.paths, budget);
    }
    let mut budget = budget;
    let mut content = Vec::with_capacity(args.paths.len());
    for path in &args.paths {
        if ctx.cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        // The item's own JSON (`{"type":"text","text":""},`) and its `path:\n` head.
        let head = 32 + escaped_text_len(path.as_bytes()) + 2;
        let room = budget.left().saturating_sub(head);
        let body = match read_one_of_many(ctx, path, room, head) {
            Ok(body) => body,
            Err(e) => e.as_item(),
        };
        // The notes and errors are short; taken whether or not they fit.
        if !budget.take(head + escaped_text_len(body.as_bytes())) {
            budget = budget.spent();
        }
        content.push(Content::Text(format!("{path}:\n{body}")));
    }
    Ok(Output { content, is_error: false, structured: None })
}

/// read_multiple_files under a token budget: each file gets a fair share of it (`fair_shares`,
/// by size), and a file over its share gives its first lines with read_file's paging note.
fn read_shares(ctx: &Ctx, paths: &[String], budget: Budget) -> Result<Output, ToolError> {
    // The item's own JSON (`{"type":"text","text":""},`) and its `path:\n` head.
    let head = |path: &String| 32 + escaped_text_len(path.as_bytes()) + 2;
    // What each asks for: a file its size, a path that fails a short error.
    let wants: Vec<usize> = paths
        .iter()
        .map(|path| {
            let size = ctx.policy.resolve_read(path).ok().and_then(|r| r.metadata().ok());
            // A file's text escaped: a quarter more for quotes, backslashes and tabs.
            let size = size.map_or(256, |m| usize::try_from(m.size).unwrap_or(usize::MAX));
            head(path) + size.saturating_add(size / 4)
        })
        .collect();
    let shares = reply_size::fair_shares(&wants, budget.left());
    let mut content = Vec::with_capacity(paths.len());
    for (path, share) in paths.iter().zip(shares) {
        if ctx.cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        let room = share.saturating_sub(head(path));
        let body = match share_of(ctx, path, budget.within(room)) {
            Ok(body) => body,
            Err(e) => e.as_item(),
        };
        content.push(Content::Text(format!("{path}:\n{body}")));
    }
    Ok(Output { content, is_error: false, structured: None })
}

/// One file's part of read_multiple_files under a token budget: its whole text when it fits
/// `budget`, else its first lines and the paging note; binary files as a note.
fn share_of(ctx: &Ctx, path: &str, budget: Budget) -> Result<String, ToolError> {
    let resolved = ctx.policy.resolve_read(path)?;
    let (file, meta) = open_regular(&resolved)?;
    if meta.len() <= budget.left() as u64 {
        let bytes = read_all(file, &meta, &resolved.shown)?;
        match text_with_note(bytes) {
            Ok(text) if escaped_text_len(text.as_bytes()) <= budget.left() => return Ok(text),
            Ok(_) => {}
            Err(bytes) => return Ok(binary_note(&resolved, bytes.len())),
        }
    }
    let range = Range::From { first: 1, count: None };
    let page = match read_lines(ctx, &resolved, &PAGE_FROM_START, range, budget) {
        Ok(page) => page,
        Err(ToolError::InvalidParams { .. }) => {
            return Ok(binary_note(&resolved, meta.len() as usize));
        }
        Err(e) => return Err(e),
    };
    let mut parts = page.content.into_iter().filter_map(|item| match item {
        Content::Text(text) => Some(text),
        _ => None,
    });
    let (text, note) = (parts.next().unwrap_or_default(), parts.next().unwrap_or_default());
    Ok(format!("{text}{note} (cut to its share of the reply; read the rest with read_file)"))
}

/// read_file's arguments for a page from the first line, without line numbers.
const PAGE_FROM_START: ReadFileArgs = ReadFileArgs {
    path: String::new(),
    offset: None,
    limit: None,
    head: None,
    tail: None,
    line_numbers: false,
};

fn binary_note(resolved: &ResolvedPath, len: usize) -> String {
    format!(
        "[binary file: {len} bytes, {}; read it alone with read_file to get its content]",
        mime_type(&resolved.real)
    )
}

/// One file's text for read_multiple_files, or the note that stands for it. Its text is read
/// only if the file's size fits in `room`, what is left of the reply's budget, and kept only
/// if its escaped size does; the caller charges the budget. `head` is what the item takes
/// besides.
fn read_one_of_many(ctx: &Ctx, path: &str, room: usize, head: usize) -> Result<String, ToolError> {
    let resolved = ctx.policy.resolve_read(path)?;
    let (file, meta) = open_regular(&resolved)?;
    let full = |json: usize| {
        if json > REPLY_BYTES - head {
            format!(
                "[not read: its text takes {json} bytes once escaped as JSON (control \
                 characters take 6 bytes each), over the {REPLY_NAME} a reply may hold; read it \
                 in parts with read_file's offset and limit]"
            )
        } else {
            format!(
                "[not read: this reply has reached its {REPLY_NAME} bound; read the file with \
                 read_file, or in a read_multiple_files call of its own]"
            )
        }
    };
    // Escaping never shrinks text: a file bigger than what is left cannot fit.
    if meta.len() > room as u64 && meta.len() <= MAX_READ_BYTES {
        return Ok(full(meta.len() as usize));
    }
    let bytes = read_all(file, &meta, &resolved.shown)?;
    match text_with_note(bytes) {
        Ok(text) => {
            let json = escaped_text_len(text.as_bytes());
            if json > room {
                return Ok(full(json));
            }
            Ok(text)
        }
        Err(bytes) => Ok(binary_note(&resolved, bytes.len())),
    }
}

/// A file's text in whatever encoding, with the note that names one other than plain UTF-8 on
/// a line of its own; the bytes back if they are binary.
fn text_with_note(bytes: Vec<u8>) -> Result<String, Vec<u8>> {
    let decoded = encoding::decode_owned(bytes)?;
    let note = (!decoded.is_plain_utf8()).then(|| decoded.note());
    let mut text = decoded.text;
    if let Some(note) = note {
        text.push('\n');
        text.push_str(&note);
    }
    Ok(text)
}

/// Binary bytes as an image, audio or resource item, by the file's extension.
fn binary_content(path: &Path, bytes: Vec<u8>) -> Content {
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
