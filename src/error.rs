//! `ToolError`: every way a tool call fails, with the contract's error codes in one `match`.
//!
//! `EditNotApplied` carries the edit engine's message as text, not its `EditError`: that type
//! holds `Near`, whose making and wording live with the matcher in `tools::edit`, which this
//! layer may not import, and no caller reads an edit failure as more than its code and message.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use crate::policy::{Denied, DenyReason};
use crate::reply_size::{size_name, Cap};

#[cfg(test)]
mod tests;

/// The contract's error codes a tool can produce. The protocol's own codes (-32700, -32600,
/// -32601) live in `protocol::jsonrpc`, since no tool can cause them.
pub const NOT_ALLOWED: i32 = -32001;
pub const NOT_FOUND: i32 = -32002;
pub const INVALID_PARAMS: i32 = -32602;
pub const INTERNAL: i32 = -32603;

#[derive(Debug)]
pub enum ToolError {
    /// The policy refused a path: outside the allowed directories, or a write under a read-only
    /// one (-32001).
    NotAllowed(Denied),
    /// A path the policy could not use at all (`DenyReason::Invalid`: empty, a NUL byte, too
    /// long): bad arguments (-32602).
    InvalidPath(Denied),
    NotFound {
        path: PathBuf,
    },
    NoGlobMatch {
        pattern: String,
    },
    InvalidParams {
        field: String,
        detail: String,
    },
    NotADirectory {
        path: PathBuf,
    },
    IsADirectory {
        path: PathBuf,
    },
    /// A device, socket or FIFO where a regular file is needed.
    NotRegularFile {
        path: PathBuf,
    },
    /// A file to edit that is not text in any encoding replay reads (`encoding::decode`).
    Binary {
        path: PathBuf,
    },
    /// Text the file's encoding cannot hold, refused before anything is written. `op` is
    /// `edit` or `write`.
    Unrepresentable {
        op: &'static str,
        path: PathBuf,
        what: crate::encoding::Unrepresentable,
    },
    /// A partial read's line longer than what a page may hold: `cap` is the bound, in raw or
    /// JSON-escaped bytes. `line` is `None` for the last line.
    LineTooLong {
        path: PathBuf,
        line: Option<u64>,
        cap: Cap,
    },
    /// A file with other names (hard links), which changing in place would change too.
    HardLinked {
        path: PathBuf,
        links: u64,
    },
    /// A directory where copy_file would overwrite a file: a directory is never replaced.
    DirectoryInTheWay {
        path: PathBuf,
    },
    /// A file where copy_file would put a directory: a directory does not replace a file.
    FileInTheWay {
        path: PathBuf,
    },
    AlreadyExists {
        path: PathBuf,
    },
    TooLarge {
        path: PathBuf,
        size: u64,
        cap: u64,
    },
    /// A whole file whose text, JSON-escaped (`json` bytes), would pass the reply's bound.
    ReplyTooLarge {
        path: PathBuf,
        size: u64,
        json: usize,
    },
    /// The client cancelled the call (`notifications/cancelled`); the reply is never sent.
    Cancelled,
    Io {
        op: &'static str,
        path: PathBuf,
        source: io::Error,
    },
    InvalidRegex {
        pattern: String,
        detail: String,
    },
    /// execute_command refused a command on the `--deny-command` list.
    CommandDenied {
        name: String,
    },
    /// execute_command refused because the deny rules could not be applied to commands
    /// (`why`: the start walk gave up).
    DenyUncovered {
        why: String,
    },
    /// execute_command waited `seconds` for the deny rules' covers, which the walk of the
    /// allowed directories at start had not finished.
    CoversPending {
        seconds: u64,
    },
    /// An edit did not apply (not found, not unique, bad regex, missing group): nothing written.
    /// `detail` is the edit's own message (`tools::edit`'s `From<EditError>`).
    EditNotApplied {
        detail: String,
    },
    /// A file whose content no longer has the sha256 the call's `expectedSha256` gave (`actual`
    /// is `None` for a file that is gone): nothing was changed.
    Stale {
        path: PathBuf,
        expected: String,
        actual: Option<String>,
    },
    /// A tool panicked; the server goes on.
    Panicked {
        detail: String,
    },
    /// A tool's schema in `schemas/` did not compile (a build that passed its tests cannot
    /// have this; the call is refused rather than run unchecked).
    BrokenSchema {
        tool: String,
        detail: String,
    },
}

impl ToolError {
    pub fn code(&self) -> i32 {
        match self {
            ToolError::NotAllowed(_) | ToolError::CommandDenied { .. } => NOT_ALLOWED,
            ToolError::NotFound { .. } | ToolError::NoGlobMatch { .. } => NOT_FOUND,
            ToolError::InvalidParams { .. } | ToolError::InvalidPath(_) => INVALID_PARAMS,
            ToolError::NotADirectory { .. }
            | ToolError::IsADirectory { .. }
            | ToolError::NotRegularFile { .. }
            | ToolError::Binary { .. }
            | ToolError::Unrepresentable { .. }
            | ToolError::HardLinked { .. }
            | ToolError::DirectoryInTheWay { .. }
            | ToolError::FileInTheWay { .. }
            | ToolError::LineTooLong { .. }
            | ToolError::AlreadyExists { .. }
            | ToolError::TooLarge { .. }
            | ToolError::ReplyTooLarge { .. }
            | ToolError::Cancelled
            | ToolError::Io { .. }
            | ToolError::EditNotApplied { .. }
            | ToolError::Stale { .. }
            | ToolError::InvalidRegex { .. }
            | ToolError::Panicked { .. }
            | ToolError::DenyUncovered { .. }
            | ToolError::CoversPending { .. }
            | ToolError::BrokenSchema { .. } => INTERNAL,
        }
    }

    pub fn invalid_params(field: &str, detail: impl Into<String>) -> ToolError {
        ToolError::InvalidParams { field: field.to_string(), detail: detail.into() }
    }

    /// Wraps an I/O error, turning "no such file" into the contract's -32002.
    pub fn io(op: &'static str, path: &Path, source: io::Error) -> ToolError {
        match source.kind() {
            io::ErrorKind::NotFound => ToolError::NotFound { path: path.to_path_buf() },
            io::ErrorKind::NotADirectory => ToolError::NotADirectory { path: path.to_path_buf() },
            io::ErrorKind::IsADirectory => ToolError::IsADirectory { path: path.to_path_buf() },
            io::ErrorKind::AlreadyExists => ToolError::AlreadyExists { path: path.to_path_buf() },
            _ => ToolError::Io { op, path: path.to_path_buf(), source },
        }
    }
}

/// An error written as text inside a reply or on a terminal: every form is here, each the one
/// the contract (or the command line) fixes for its place.
impl ToolError {
    /// read_multiple_files' item for a file that failed (after its `path:` line):
    /// `[error: message]`.
    pub fn as_item(&self) -> String {
        format!("[error: {self}]")
    }

    /// edit_files' line for a file that failed: `path: [error CODE] message`.
    pub fn as_line(&self, path: &Path) -> String {
        format!("{}: [error {}] {self}", path.display(), self.code())
    }
}

/// An error where no JSON-RPC error object carries it (a result with `--tool-errors result`,
/// `replay call`'s stderr): `error CODE: message`.
pub fn as_text(code: i32, message: &str) -> String {
    format!("error {code}: {message}")
}

impl From<Denied> for ToolError {
    fn from(denied: Denied) -> ToolError {
        match denied.reason {
            DenyReason::Invalid { .. } => ToolError::InvalidPath(denied),
            _ => ToolError::NotAllowed(denied),
        }
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolError::NotAllowed(denied) | ToolError::InvalidPath(denied) => denied.fmt(f),
            ToolError::NotFound { path } => write!(f, "not found: {}", path.display()),
            ToolError::NoGlobMatch { pattern } => {
                write!(f, "not found: the glob `{}` matched no files", shortened(pattern))
            }
            ToolError::EditNotApplied { detail } => f.write_str(detail),
            ToolError::Stale { path, expected, actual: Some(actual) } => write!(
                f,
                "{} changed since it was read: its sha256 is {actual}, not {expected}; nothing was \
                 changed: read it again and redo the change against its current text",
                path.display()
            ),
            ToolError::Stale { path, expected, actual: None } => write!(
                f,
                "{} does not exist, so it cannot have the expected sha256 {expected}; nothing was \
                 changed",
                path.display()
            ),
            ToolError::DenyUncovered { why } => write!(
                f,
                "commands are refused: the deny rules could not be applied to commands ({why}), \
                 so a command could read the files they hide; the user can restart replay with a \
                 narrower --allow directory, or with --no-default-deny or fewer --deny rules"
            ),
            ToolError::CoversPending { seconds } => write!(
                f,
                "the command did not run: it waited {seconds} s for the walk of the allowed \
                 directories that hides the deny rules' files from commands, which has not \
                 finished (a slow or hung filesystem in them?); try again later, or the user can \
                 restart replay with a narrower --allow directory"
            ),
            ToolError::CommandDenied { name } => {
                write!(f, "command not allowed: `{name}` is on this server's --deny-command list")
            }
            ToolError::InvalidRegex { pattern, detail } => {
                write!(f, "invalid regex `{}`: {detail}", shortened(pattern))
            }
            ToolError::InvalidParams { field, detail } => {
                write!(f, "invalid params: `{field}` {detail}")
            }
            ToolError::NotADirectory { path } => {
                write!(f, "not a directory: {} (or one of its parents is a file)", path.display())
            }
            ToolError::IsADirectory { path } => write!(
                f,
                "is a directory: {}; use list_directory or directory_tree for directories",
                path.display()
            ),
            ToolError::NotRegularFile { path } => {
                write!(f, "not a regular file: {} is a device, FIFO or socket", path.display())
            }
            ToolError::LineTooLong { path, line, cap } => line_too_long(f, path, *line, *cap),
            ToolError::Binary { path } => write!(
                f,
                "edit failed: {}: not text (a NUL byte, or bytes no text encoding has); binary \
                 files cannot be edited",
                path.display()
            ),
            ToolError::Unrepresentable { op, path, what } => {
                write!(f, "{op} failed: {}: {what}; nothing was written", path.display())
            }
            ToolError::HardLinked { path, links } => write!(
                f,
                "append failed: {}: the file has {links} hard links, and appending in place \
                 would change the other names too; write the whole content without append \
                 instead",
                path.display()
            ),
            ToolError::DirectoryInTheWay { path } => write!(
                f,
                "overwrite failed: {}: it is a directory, and copy_file overwrites files only; \
                 delete it first with delete_file if that is really intended",
                path.display()
            ),
            ToolError::FileInTheWay { path } => write!(
                f,
                "overwrite failed: {}: a directory does not replace a file; delete the file \
                 first with delete_file if that is really intended",
                path.display()
            ),
            ToolError::AlreadyExists { path } => {
                write!(f, "already exists: {}; nothing was overwritten", path.display())
            }
            ToolError::TooLarge { path, size, cap } => write!(
                f,
                "file too large: {} is {size} bytes, and a whole file is read (or edited) only up \
                 to {cap} bytes; read it in parts with read_file's offset and limit, or head or \
                 tail",
                path.display()
            ),
            ToolError::ReplyTooLarge { path, size, json } => write!(
                f,
                "reply too large: {} is {size} bytes of text, which take {json} bytes escaped as \
                 JSON (control characters take 6 bytes each, quotes and backslashes 2), over the \
                 {} a reply may hold; read it in parts with read_file's offset and limit, or \
                 head or tail",
                path.display(),
                crate::reply_size::REPLY_NAME
            ),
            ToolError::Cancelled => write!(f, "cancelled by the client"),
            ToolError::Io { op, path, source } => {
                write!(f, "{op} failed: {}: {source}", path.display())
            }
            ToolError::Panicked { detail } => write!(f, "internal error: {detail}"),
            ToolError::BrokenSchema { tool, detail } => {
                write!(f, "internal error: the input schema of {tool} does not compile: {detail}")
            }
        }
    }
}

/// LineTooLong's message: which line, and the bound it crossed in the bytes that bound counts.
fn line_too_long(
    f: &mut fmt::Formatter<'_>,
    path: &Path,
    line: Option<u64>,
    cap: Cap,
) -> fmt::Result {
    write!(f, "read failed: {}: ", path.display())?;
    match line {
        Some(n) => write!(f, "line {n}")?,
        None => f.write_str("the last line")?,
    }
    match cap {
        Cap::Json(n) => write!(
            f,
            " alone takes more than the {} of JSON a reply may hold (control \
                 characters take 6 bytes each once escaped)",
            size_name(n)
        ),
        Cap::Bytes(n) => {
            write!(f, " alone is longer than the {} a partial read returns", size_name(n))
        }
        Cap::Tokens(_) => write!(
            f,
            " alone is over the reply's {} bound; see a part of it with execute_command \
             (`cut -c 1-20000`), or start the server with a larger --max-reply-tokens",
            cap.name()
        ),
    }
}

impl std::error::Error for ToolError {}

/// A client's string as a message quotes it: whole up to 200 characters, else its start, so
/// that an error never echoes megabytes (a pattern can be as long as the request).
pub fn shortened(s: &str) -> std::borrow::Cow<'_, str> {
    const SHOWN: usize = 200;
    match s.char_indices().nth(SHOWN) {
        None => std::borrow::Cow::Borrowed(s),
        Some((end, _)) => {
            std::borrow::Cow::Owned(format!("{}… ({} bytes in all)", &s[..end], s.len()))
        }
    }
}
