//! The pure edit engine behind `edit_file` and `edit_files`.
//!
//! [`apply_edits_within`] turns a file's content and a list of [`Edit`]s into the new
//! content, or into the first [`EditError`]. It never touches the filesystem:
//! the tool layer reads the file, calls this, and writes (or diffs) the result.
//!
//! # Matching modes (per edit)
//!
//! * **Standard** (`is_regex: false`, `case_insensitive: false`, `limit: 1`):
//!   exact substring; it must occur exactly once (non-overlapping count). If it
//!   does not occur at all, a *whitespace-normalized line match* is tried (see
//!   [`find_normalized_block`]), under the same uniqueness guard.
//! * **Case-insensitive literal**: an escaped pattern compiled with the `i`
//!   flag. The uniqueness guard still applies at `limit: 1`; no fallback.
//! * **Limit ≠ 1 literal**: replace up to `limit` occurrences (`0` = all),
//!   left to right, non-overlapping; no uniqueness guard, no fallback.
//! * **Regex**: ECMAScript pattern via [`JsRegex`]; the first `limit` matches
//!   are replaced (`0` = all), iterated like JavaScript's global `replace`.
//!   No uniqueness guard, no fallback. See [`Template`] for `newText`
//!   expansion. In literal modes `newText` is inserted verbatim.
//!
//! # File-format handling (all edits of one call)
//!
//! * A leading UTF-8 BOM is removed before matching and restored afterwards,
//!   so `oldText` at the very start of the file matches and regex `^` sees the
//!   first real character. In literal modes a BOM that the caller copied into
//!   the start of `oldText` is dropped too (and then also from `newText`), so
//!   the file never ends up with two.
//! * If the file (as read) has more `\r\n` than lone `\n`, it is a CRLF file:
//!   in literal modes every lone `\n` in `oldText` and `newText` becomes
//!   `\r\n` before matching, so text sent with LF matches and the result stays
//!   CRLF; in regex mode only `newText` is converted (the pattern is the
//!   caller's business). Files that are LF or mixed are left alone and the
//!   texts are used as sent. The style is detected once, from the original
//!   content, not re-detected after every edit.
//!
//! # Size bound
//!
//! No edit may make the text larger than [`MAX_EDITED_BYTES`]; the size is
//! checked before the text is built ([`EditError::TooLarge`]).
//! [`apply_edits_within`] takes another bound.

use std::borrow::Cow;
use std::fmt;
use std::ops::Range;

use crate::js_regex::JsRegex;

mod block;
mod literal;
pub mod near;
mod regex;
mod template;
#[cfg(test)]
mod tests;

use block::*;
use literal::*;
use near::Near;
use regex::*;
use template::*;

const BOM: char = '\u{feff}';

/// The largest text an edit may produce: 64 MiB, the largest message replay
/// reads, so nothing a client could write with write_file is refused.
///
/// Without a bound, one request could exhaust memory: a regex that matches
/// the empty string, `limit: 0` and `` $` `` in newText make the result
/// quadratic in the file (a 200 KB file becomes 20 GB), each further edit of
/// the call squares it again, and a failed allocation aborts the process,
/// which no `catch_unwind` survives. Found by the `edit` fuzz target.
pub const MAX_EDITED_BYTES: usize = 64 * MIB;

const MIB: usize = 1024 * 1024;

/// One edit operation, as received from the tool call.
#[derive(Debug, Clone)]
pub struct Edit {
    pub old_text: String,
    pub new_text: String,
    /// Maximum number of replacements; `0` means all.
    pub limit: usize,
    pub is_regex: bool,
    pub case_insensitive: bool,
}

/// What an edit that matched nothing was looking for, so the message can say
/// what was tried and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotFoundKind {
    /// A literal `oldText`; `whitespace_fallback` says whether the
    /// whitespace-normalized line match ran as well, and `near` shows the
    /// nearest text and what differs, when something is similar.
    Literal { whitespace_fallback: bool, near: Option<Box<Near>> },
    /// A literal edit with an empty `oldText`, which is refused rather than
    /// matched "everywhere".
    EmptyOldText,
    /// A regex that matched nothing.
    Regex { pattern: String },
}

/// Why an edit sequence was rejected. `edit_index` is 0-based; messages show
/// it 1-based. The caller maps every variant to JSON-RPC -32603.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EditError {
    NotFound {
        edit_index: usize,
        kind: NotFoundKind,
    },
    NotUnique {
        edit_index: usize,
        n: usize,
        whitespace_normalized: bool,
    },
    InvalidRegex {
        edit_index: usize,
        pattern: String,
        detail: String,
    },
    MissingGroup {
        edit_index: usize,
        group: usize,
        n_groups: usize,
    },
    /// A valid pattern that hit the backtracking limit on this content.
    RegexGaveUp {
        edit_index: usize,
        pattern: String,
    },
    /// The edit would make the text larger than `max_bytes`
    /// (`MAX_EDITED_BYTES` unless the caller chose another bound).
    TooLarge {
        edit_index: usize,
        max_bytes: usize,
    },
    /// The caller's `stop` said so (the call was cancelled): nothing is applied.
    Stopped,
}

impl fmt::Display for EditError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EditError::NotFound { edit_index, kind } => {
                write!(f, "edit #{}: ", edit_index + 1)?;
                match kind {
                    NotFoundKind::Literal { whitespace_fallback, near } => {
                        f.write_str("oldText not found")?;
                        if *whitespace_fallback {
                            f.write_str(" (also tried a whitespace-normalized line match)")?;
                        }
                        match near {
                            None => f.write_str("; re-read the file and copy the exact text"),
                            // Line numbers count in the text the earlier edits left.
                            Some(near) if *edit_index == 1 => write!(f, "; after edit #1, {near}"),
                            Some(near) if *edit_index > 1 => {
                                write!(f, "; after edits #1-#{edit_index}, {near}")
                            }
                            Some(near) => write!(f, "; {near}"),
                        }
                    }
                    NotFoundKind::EmptyOldText => f.write_str(
                        "oldText not found: oldText is empty; quote the exact text to replace \
                         (use write_file to replace a whole file)",
                    ),
                    NotFoundKind::Regex { pattern } => write!(f, "pattern not found: /{pattern}/"),
                }
            }
            EditError::NotUnique { edit_index, n, whitespace_normalized: false } => write!(
                f,
                "edit #{}: oldText is not unique: found {n} occurrences; add surrounding \
                 context so it matches exactly one place, or set limit: 0 (all) / limit: N",
                edit_index + 1
            ),
            EditError::NotUnique { edit_index, n, whitespace_normalized: true } => write!(
                f,
                "edit #{}: oldText is not unique: found {n} whitespace-normalized matches; add \
                 surrounding context so it matches exactly one place, or copy the file's exact \
                 indentation (limit: 0 / limit: N apply only to exact matches)",
                edit_index + 1
            ),
            EditError::InvalidRegex { edit_index, pattern, detail } => {
                write!(f, "edit #{}: invalid regex `{pattern}`: {detail}", edit_index + 1)
            }
            EditError::RegexGaveUp { edit_index, pattern } => write!(
                f,
                "edit #{}: regex `{pattern}` needed too much backtracking on this file and was \
                 stopped; simplify it (avoid nested quantifiers such as `(a+)+`)",
                edit_index + 1
            ),
            EditError::TooLarge { edit_index, max_bytes } => {
                write!(f, "edit #{}: the edited text would be larger than ", edit_index + 1)?;
                match max_bytes % MIB {
                    0 => write!(f, "{} MiB", max_bytes / MIB)?,
                    _ => write!(f, "{max_bytes} bytes")?,
                }
                f.write_str("; replace fewer matches (limit: N) or with a shorter newText")
            }
            EditError::MissingGroup { edit_index, group, n_groups } => write!(
                f,
                "edit #{}: replacement references capture group {group}, but the pattern has \
                 only {n_groups} group(s)",
                edit_index + 1
            ),
            EditError::Stopped => f.write_str("the edits were cancelled; nothing was changed"),
        }
    }
}

impl std::error::Error for EditError {}

/// Applies the edits in order to an in-memory copy; the first failure aborts
/// the whole sequence, so the caller never sees (or writes) a partial result.
/// No edit may make the text larger than `max_bytes` (not counting a BOM). The fuzz target uses a small bound, so
/// that no input spends seconds growing a text towards 64 MiB.
pub fn apply_edits_within(
    content: &str,
    edits: &[Edit],
    max_bytes: usize,
) -> Result<String, EditError> {
    apply_edits_until(content, edits, max_bytes, &|| false)
}

/// [`apply_edits_within`], asking `stop` as it goes (between edits, at every regex match, and
/// every few thousand candidates of the other searches): once it says so, the edits end with
/// [`EditError::Stopped`]. A long edit (a regex over a 64 MiB text) ends soon after its call is
/// cancelled.
pub fn apply_edits_until(
    content: &str,
    edits: &[Edit],
    max_bytes: usize,
    stop: &dyn Fn() -> bool,
) -> Result<String, EditError> {
    let (bom, body) = match content.strip_prefix(BOM) {
        Some(rest) => (true, rest),
        None => (false, content),
    };
    let style = FileStyle { bom, crlf: uses_crlf(body), max_bytes, stop };
    let mut text = body.to_owned();
    for (edit_index, edit) in edits.iter().enumerate() {
        if stop() {
            return Err(EditError::Stopped);
        }
        text = if edit.is_regex {
            apply_regex(&text, edit, edit_index, style)?
        } else {
            apply_literal(&text, edit, edit_index, style)?
        };
    }
    if bom {
        text.insert(0, BOM);
    }
    Ok(text)
}

/// Properties of the file as read, which decide how edit texts are adapted,
/// and the size the text may grow to; and when to stop.
#[derive(Clone, Copy)]
struct FileStyle<'s> {
    bom: bool,
    crlf: bool,
    max_bytes: usize,
    stop: &'s dyn Fn() -> bool,
}

/// True if `\r\n` is the dominant line ending (strictly more `\r\n` than lone
/// `\n`); ties and mixed files count as LF so nothing gets converted.
fn uses_crlf(text: &str) -> bool {
    let crlf = text.matches("\r\n").count();
    let lf = text.bytes().filter(|&b| b == b'\n').count();
    crlf > lf - crlf
}

/// Turns every `\n` not already preceded by `\r` into `\r\n`.
fn lf_to_crlf(text: &str) -> Cow<'_, str> {
    if !has_lone_lf(text) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + text.len() / 16 + 1);
    let mut pieces = text.split('\n');
    let mut previous = pieces.next().unwrap_or_default();
    out.push_str(previous);
    for piece in pieces {
        if !previous.ends_with('\r') {
            out.push('\r');
        }
        out.push('\n');
        out.push_str(piece);
        previous = piece;
    }
    Cow::Owned(out)
}

fn has_lone_lf(text: &str) -> bool {
    text.match_indices('\n').any(|(i, _)| !text[..i].ends_with('\r'))
}
