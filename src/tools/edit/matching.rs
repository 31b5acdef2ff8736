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

pub mod near;
#[cfg(test)]
mod tests;

use near::Near;

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

// ---------------------------------------------------------------------------
// Literal modes
// ---------------------------------------------------------------------------

/// Applies one literal (non-regex) edit.
fn apply_literal(
    text: &str,
    edit: &Edit,
    edit_index: usize,
    style: FileStyle<'_>,
) -> Result<String, EditError> {
    let (old, new) = adapt_literal_texts(edit, style);
    if old.is_empty() {
        return Err(EditError::NotFound { edit_index, kind: NotFoundKind::EmptyOldText });
    }
    let finder = LiteralFinder::new(&old, edit.case_insensitive).map_err(|detail| {
        EditError::InvalidRegex { edit_index, pattern: edit.old_text.clone(), detail }
    })?;
    let mut hits = finder.find_iter(text).take_while(|_| !(style.stop)());
    if edit.limit != 1 {
        let ranges: Vec<Range<usize>> = hits.take(max_count(edit.limit)).collect();
        if (style.stop)() {
            return Err(EditError::Stopped);
        }
        if ranges.is_empty() {
            return Err(not_found_literal(edit_index, false, text, &old));
        }
        return replace_ranges(text, &ranges, &new, edit_index, style.max_bytes);
    }
    match (hits.next(), hits.next()) {
        (Some(only), None) => replace_ranges(text, &[only], &new, edit_index, style.max_bytes),
        (Some(_), Some(_)) => Err(EditError::NotUnique {
            edit_index,
            n: 2 + hits.count(),
            whitespace_normalized: false,
        }),
        _ if (style.stop)() => Err(EditError::Stopped),
        (None, _) if edit.case_insensitive => Err(not_found_literal(edit_index, false, text, &old)),
        (None, _) => replace_normalized_block(text, &old, &new, edit_index, style),
    }
}

/// Runs the whitespace-normalized fallback and applies its unique match.
fn replace_normalized_block(
    text: &str,
    old: &str,
    new: &str,
    edit_index: usize,
    style: FileStyle<'_>,
) -> Result<String, EditError> {
    let max_bytes = style.max_bytes;
    match find_normalized_block(text, old, style.stop) {
        BlockSearch::Stopped => Err(EditError::Stopped),
        BlockSearch::NotApplicable => Err(not_found_literal(edit_index, false, text, old)),
        BlockSearch::Found { count: 0, .. } => Err(not_found_literal(edit_index, true, text, old)),
        BlockSearch::Found { count: 1, first } => {
            let indent = common_indent(text[first.clone()].split('\n'));
            // Every line of `new` may gain the indent: bounded before it is built.
            let most =
                new.len().saturating_add(new.split('\n').count().saturating_mul(indent.len()));
            fits(text.len().saturating_add(most), edit_index, max_bytes)?;
            let replacement = reindent(new, indent);
            replace_ranges(text, &[first], &replacement, edit_index, max_bytes)
        }
        BlockSearch::Found { count, .. } => {
            Err(EditError::NotUnique { edit_index, n: count, whitespace_normalized: true })
        }
    }
}

/// A literal edit's miss, with the nearest text in `text` when something is similar: shown,
/// never applied.
fn not_found_literal(
    edit_index: usize,
    whitespace_fallback: bool,
    text: &str,
    old: &str,
) -> EditError {
    let near = near::nearest(text, old).map(Box::new);
    EditError::NotFound { edit_index, kind: NotFoundKind::Literal { whitespace_fallback, near } }
}

/// `limit` as an iterator bound: `0` means unbounded.
fn max_count(limit: usize) -> usize {
    if limit == 0 {
        usize::MAX
    } else {
        limit
    }
}

/// Adapts a literal edit's texts to the file: drops a copied BOM and converts
/// LF to CRLF for CRLF files (see the module docs).
fn adapt_literal_texts<'e>(edit: &'e Edit, style: FileStyle<'_>) -> (Cow<'e, str>, Cow<'e, str>) {
    let mut old = edit.old_text.as_str();
    let mut new = edit.new_text.as_str();
    if style.bom {
        if let Some(rest) = old.strip_prefix(BOM) {
            old = rest;
            new = new.strip_prefix(BOM).unwrap_or(new);
        }
    }
    if style.crlf {
        (lf_to_crlf(old), lf_to_crlf(new))
    } else {
        (Cow::Borrowed(old), Cow::Borrowed(new))
    }
}

/// Finds non-overlapping occurrences of a literal, exactly or ignoring case.
enum LiteralFinder<'a> {
    Exact(&'a str),
    /// Case-insensitive search goes through an escaped regex with the `i`
    /// flag: lowercasing both sides would change byte lengths (e.g. `İ`) and
    /// break the offsets.
    IgnoreCase(fancy_regex::Regex),
}

impl<'a> LiteralFinder<'a> {
    fn new(needle: &'a str, case_insensitive: bool) -> Result<Self, String> {
        if !case_insensitive {
            return Ok(LiteralFinder::Exact(needle));
        }
        fancy_regex::RegexBuilder::new(&fancy_regex::escape(needle))
            .case_insensitive(true)
            .build()
            .map(LiteralFinder::IgnoreCase)
            .map_err(|err| format!("case-insensitive search could not be compiled: {err}"))
    }

    fn find_iter<'t>(&'t self, text: &'t str) -> Box<dyn Iterator<Item = Range<usize>> + 't> {
        match self {
            // memchr's SIMD search: 1,000 edits of a 10 MB file each scan all of it (the
            // uniqueness guard counts every occurrence), so the scan speed is the edit speed.
            // Non-overlapping, like `str::match_indices`; a match of a `str` needle in a
            // `str` starts and ends on char boundaries.
            LiteralFinder::Exact(needle) => Box::new(
                memchr::memmem::find_iter(text.as_bytes(), needle.as_bytes())
                    .map(|start| start..start + needle.len()),
            ),
            // An escaped literal never needs the backtracking VM, so matching
            // cannot fail; `map_while` just avoids unwrapping the `Result`.
            LiteralFinder::IgnoreCase(regex) => {
                Box::new(regex.find_iter(text).map_while(Result::ok).map(|hit| hit.range()))
            }
        }
    }
}

/// Refuses a text of `size` bytes if it is over `max_bytes`.
fn fits(size: usize, edit_index: usize, max_bytes: usize) -> Result<(), EditError> {
    if size > max_bytes {
        return Err(EditError::TooLarge { edit_index, max_bytes });
    }
    Ok(())
}

/// Replaces each of the sorted, non-overlapping `ranges` with `replacement`,
/// after checking the size of the result.
fn replace_ranges(
    text: &str,
    ranges: &[Range<usize>],
    replacement: &str,
    edit_index: usize,
    max_bytes: usize,
) -> Result<String, EditError> {
    let removed: usize = ranges.iter().map(|range| range.len()).sum();
    let added = ranges.len().saturating_mul(replacement.len());
    let size = (text.len() - removed).saturating_add(added);
    fits(size, edit_index, max_bytes)?;
    let mut out = String::with_capacity(size);
    let mut last = 0;
    for range in ranges {
        out.push_str(&text[last..range.start]);
        out.push_str(replacement);
        last = range.end;
    }
    out.push_str(&text[last..]);
    Ok(out)
}

// ---------------------------------------------------------------------------
// Whitespace-normalized line match
// ---------------------------------------------------------------------------

/// Outcome of the whitespace-normalized search.
#[derive(Debug, PartialEq, Eq)]
enum BlockSearch {
    /// `oldText` has no non-blank line; matching blank blocks "loosely" would
    /// hit almost anywhere, so the fallback does not run.
    NotApplicable,
    /// `count` non-overlapping matching blocks; `first` is the byte range of
    /// the first one (meaningful only when `count > 0`).
    Found { count: usize, first: Range<usize> },
    /// `stop` said so before the search was done.
    Stopped,
}

/// One line of the file: `start..end` is its text without the `\n` (a `\r`
/// before it is kept and ignored as trailing whitespace), `next` is where the
/// following line starts.
#[derive(Debug, Clone, Copy)]
struct LineSpan {
    start: usize,
    end: usize,
    next: usize,
}

/// Searches `text` for blocks of whole lines that equal `old` line by line
/// once each side's common leading indentation (the longest run of spaces and
/// tabs shared by its non-blank lines) is removed.
///
/// Choices, all aimed at "copied from a differently indented context":
/// * trailing whitespace (including a CRLF's `\r`) is ignored on every line,
///   since editors and models both drop or add it silently;
/// * relative indentation must match exactly (tabs are not expanded), so
///   indentation-sensitive code is not matched against a different structure;
/// * blank lines only match blank lines;
/// * if `old` ends with `\n` the block includes the last line's terminator,
///   otherwise the block stops before it (before `\r\n` in CRLF files);
/// * matches are counted non-overlapping, like the exact search.
///
/// Cost: each candidate start first compares one trimmed line, so the scan is
/// linear in the file for typical input; the full comparison (which needs the
/// candidate's common indent) only runs once every trimmed line agrees.
/// The scan asks `stop` every 4,096 candidates: a file of identical lines and a long `old`
/// that differs only at its end make it quadratic.
fn find_normalized_block(text: &str, old: &str, stop: &dyn Fn() -> bool) -> BlockSearch {
    let (old_body, with_terminator) = match old.strip_suffix('\n') {
        Some(body) => (body, true),
        None => (old, false),
    };
    let old_lines: Vec<&str> = old_body.split('\n').collect();
    if old_lines.iter().all(|line| is_blank(line)) {
        return BlockSearch::NotApplicable;
    }
    let pattern = BlockPattern::new(&old_lines);
    let lines = line_spans(text);
    let height = old_lines.len();

    let mut count = 0;
    let mut first = 0..0;
    let mut i = 0;
    while i + height <= lines.len() {
        if i % 4096 == 0 && stop() {
            return BlockSearch::Stopped;
        }
        let block = &lines[i..i + height];
        if pattern.matches(text, block) {
            if count == 0 {
                first = block_range(text, block, with_terminator);
            }
            count += 1;
            i += height;
        } else {
            i += 1;
        }
    }
    BlockSearch::Found { count, first }
}

/// `oldText`'s lines, pre-normalized once per edit.
struct BlockPattern<'a> {
    /// Each line with all surrounding whitespace removed: a cheap necessary
    /// condition checked before the exact comparison.
    trimmed: Vec<&'a str>,
    /// Each line without the common indent and trailing whitespace.
    relative: Vec<&'a str>,
}

impl<'a> BlockPattern<'a> {
    fn new(lines: &[&'a str]) -> Self {
        let indent = common_indent(lines.iter().copied());
        BlockPattern {
            trimmed: lines.iter().map(|line| line.trim()).collect(),
            relative: lines.iter().map(|line| relative(line, indent)).collect(),
        }
    }

    fn matches(&self, text: &str, block: &[LineSpan]) -> bool {
        let line = |span: &LineSpan| &text[span.start..span.end];
        let trimmed_equal =
            block.iter().zip(&self.trimmed).all(|(span, want)| line(span).trim() == *want);
        if !trimmed_equal {
            return false;
        }
        let indent = common_indent(block.iter().map(line));
        block.iter().zip(&self.relative).all(|(span, want)| relative(line(span), indent) == *want)
    }
}

/// Splits `text` into lines; a final line without terminator counts, the
/// empty "line" after a final `\n` does not.
fn line_spans(text: &str) -> Vec<LineSpan> {
    let mut spans = Vec::new();
    let mut start = 0;
    for (newline, _) in text.match_indices('\n') {
        spans.push(LineSpan { start, end: newline, next: newline + 1 });
        start = newline + 1;
    }
    if start < text.len() {
        spans.push(LineSpan { start, end: text.len(), next: text.len() });
    }
    spans
}

/// The byte range a matched block replaces (see [`find_normalized_block`]).
fn block_range(text: &str, block: &[LineSpan], with_terminator: bool) -> Range<usize> {
    let (Some(first), Some(last)) = (block.first(), block.last()) else {
        return 0..0;
    };
    let end = if with_terminator {
        last.next
    } else if last.next > last.end && text[..last.end].ends_with('\r') {
        last.end - 1
    } else {
        last.end
    };
    first.start..end
}

fn is_blank(line: &str) -> bool {
    line.trim().is_empty()
}

/// The leading spaces and tabs of `line`.
fn leading_indent(line: &str) -> &str {
    let len = line.len() - line.trim_start_matches([' ', '\t']).len();
    &line[..len]
}

/// The longest indentation prefix shared by all non-blank `lines`.
fn common_indent<'a>(lines: impl IntoIterator<Item = &'a str>) -> &'a str {
    let mut common: Option<&str> = None;
    for line in lines.into_iter().filter(|line| !is_blank(line)) {
        let indent = leading_indent(line);
        common = Some(match common {
            None => indent,
            Some(shared) => {
                let len = shared.bytes().zip(indent.bytes()).take_while(|(a, b)| a == b).count();
                // Indents are ASCII, so any byte count is a char boundary.
                &shared[..len]
            }
        });
    }
    common.unwrap_or("")
}

/// `line` without `indent` and trailing whitespace; blank lines become "".
fn relative<'a>(line: &'a str, indent: &str) -> &'a str {
    if is_blank(line) {
        return "";
    }
    line.strip_prefix(indent).unwrap_or(line).trim_end()
}

/// Re-indents `new` for a block whose common indent is `indent`: `new`'s own
/// common indent is replaced by `indent` on every non-blank line (relative
/// indentation is kept); blank lines become empty, keeping a CRLF's `\r`.
fn reindent(new: &str, indent: &str) -> String {
    let own = common_indent(new.split('\n'));
    let mut out = String::with_capacity(new.len() + indent.len() * 8);
    for (i, line) in new.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        if is_blank(line) {
            if line.ends_with('\r') {
                out.push('\r');
            }
        } else {
            out.push_str(indent);
            out.push_str(line.strip_prefix(own).unwrap_or(line));
        }
    }
    out
}

// ---------------------------------------------------------------------------
// Regex mode
// ---------------------------------------------------------------------------

/// Applies one regex edit: the first `limit` matches (0 = all), iterated like
/// JavaScript's `String.prototype.replace` with the `g` flag.
fn apply_regex(
    text: &str,
    edit: &Edit,
    edit_index: usize,
    style: FileStyle<'_>,
) -> Result<String, EditError> {
    let js = JsRegex::new(&edit.old_text, edit.case_insensitive).map_err(|err| {
        EditError::InvalidRegex { edit_index, pattern: err.pattern, detail: err.detail }
    })?;
    let new =
        if style.crlf { lf_to_crlf(&edit.new_text) } else { Cow::Borrowed(edit.new_text.as_str()) };
    // Checked before matching, so a bad reference is reported even when the
    // pattern happens to match nothing.
    let template = Template::parse(&new, &js, js.group_count()).map_err(|group| {
        EditError::MissingGroup { edit_index, group, n_groups: js.group_count() }
    })?;

    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut replaced = 0;
    let mut pos = 0;
    while replaced < max_count(edit.limit) && pos <= text.len() {
        if (style.stop)() {
            return Err(EditError::Stopped);
        }
        let captures = match js.regex().captures_from_pos(text, pos) {
            Ok(Some(captures)) => captures,
            Ok(None) => break,
            Err(_) => {
                return Err(EditError::RegexGaveUp { edit_index, pattern: edit.old_text.clone() });
            }
        };
        let Some(whole) = captures.get(0) else { break };
        let range = whole.range();
        // Like JS, step past an empty match by one character so the search
        // makes progress; a non-empty match may be followed by an empty one.
        pos = if range.is_empty() { next_char_boundary(text, range.end) } else { range.end };
        if range.is_empty() && is_phantom_position(text, range.start) {
            continue;
        }
        // The result so far, with this expansion: checked before it is built.
        let size = out.len() + (range.start - copied);
        let size = size.saturating_add(template.expanded_len(&captures, text));
        fits(size, edit_index, style.max_bytes)?;
        out.push_str(&text[copied..range.start]);
        template.expand(&captures, text, &mut out);
        copied = range.end;
        replaced += 1;
    }
    if replaced == 0 {
        return Err(EditError::NotFound {
            edit_index,
            kind: NotFoundKind::Regex { pattern: edit.old_text.clone() },
        });
    }
    fits(out.len() + (text.len() - copied), edit_index, style.max_bytes)?;
    out.push_str(&text[copied..]);
    Ok(out)
}

/// The position after the character at `i`, or past the end at the end.
fn next_char_boundary(text: &str, i: usize) -> usize {
    text.get(i..).and_then(|rest| rest.chars().next()).map_or(text.len() + 1, |c| i + c.len_utf8())
}

/// Positions where an empty match is an artifact of line anchoring rather
/// than a line: the end of a file that ends with a line terminator (the file
/// `a\n` has one line, not two), and the middle of a `\r\n` pair.
fn is_phantom_position(text: &str, i: usize) -> bool {
    let (before, after) = text.split_at(i);
    let at_end_after_terminator =
        after.is_empty() && (before.ends_with('\n') || before.ends_with('\r'));
    let inside_crlf = before.ends_with('\r') && after.starts_with('\n');
    at_end_after_terminator || inside_crlf
}

/// A parsed regex-mode `newText`.
///
/// Recognized forms (anything else is literal text, as in JavaScript):
/// * `$$` → `$`; `$&`, `$0`, `\0` → the whole match;
/// * `$n` / `$nn` → group n / nn, with JavaScript's rule for two digits: `$nn`
///   is group nn if the pattern has that many groups, else group n followed
///   by the second digit; `\n` is always a single digit;
/// * `` $` `` / `$'` → the text before / after the match;
/// * `$<name>` → the named group (empty if it did not participate); if the
///   pattern has no group of that name the text stays literal.
///
/// A numbered reference past the pattern's group count is an error instead of
/// JavaScript's literal fallback; a backslash not followed by a digit is
/// literal (there is no `\\` escape).
#[derive(Debug, PartialEq, Eq)]
struct Template<'a> {
    pieces: Vec<Piece<'a>>,
}

#[derive(Debug, PartialEq, Eq)]
enum Piece<'a> {
    Text(&'a str),
    Group(usize),
    Before,
    After,
}

impl<'a> Template<'a> {
    /// Parses `new`; `Err(g)` names the first reference to a missing group.
    fn parse(new: &'a str, regex: &JsRegex, groups: usize) -> Result<Self, usize> {
        let bytes = new.as_bytes();
        let mut pieces = Vec::new();
        let mut literal_start = 0;
        let mut i = 0;
        while i < bytes.len() {
            let parsed = match bytes[i] {
                b'$' => parse_dollar(new, i, regex, groups)?,
                b'\\' => parse_backslash(bytes, i, groups)?,
                _ => None,
            };
            match parsed {
                Some((piece, len)) => {
                    if literal_start < i {
                        pieces.push(Piece::Text(&new[literal_start..i]));
                    }
                    pieces.push(piece);
                    i += len;
                    literal_start = i;
                }
                None => i += 1,
            }
        }
        if literal_start < new.len() {
            pieces.push(Piece::Text(&new[literal_start..]));
        }
        Ok(Template { pieces })
    }

    /// The length of what [`Template::expand`] appends for this match.
    fn expanded_len(&self, captures: &fancy_regex::Captures<'_>, text: &str) -> usize {
        let whole = captures.get(0).map_or(0..0, |m| m.range());
        self.pieces
            .iter()
            .map(|piece| match piece {
                Piece::Text(literal) => literal.len(),
                Piece::Group(g) => captures.get(*g).map_or(0, |m| m.range().len()),
                Piece::Before => whole.start,
                Piece::After => text.len() - whole.end,
            })
            .fold(0, usize::saturating_add)
    }

    fn expand(&self, captures: &fancy_regex::Captures<'_>, text: &str, out: &mut String) {
        let whole = captures.get(0).map_or(0..0, |m| m.range());
        for piece in &self.pieces {
            match piece {
                Piece::Text(literal) => out.push_str(literal),
                Piece::Group(g) => out.push_str(captures.get(*g).map_or("", |m| m.as_str())),
                Piece::Before => out.push_str(&text[..whole.start]),
                Piece::After => out.push_str(&text[whole.end..]),
            }
        }
    }
}

/// A recognized form and its length in bytes, `None` for literal text.
type Parsed<'a> = Option<(Piece<'a>, usize)>;

/// Parses the `$` form starting at `new[i]`.
fn parse_dollar<'a>(
    new: &'a str,
    i: usize,
    regex: &JsRegex,
    groups: usize,
) -> Result<Parsed<'a>, usize> {
    let bytes = new.as_bytes();
    let Some(&next) = bytes.get(i + 1) else {
        return Ok(None);
    };
    let piece = match next {
        b'$' => (Piece::Text("$"), 2),
        b'&' => (Piece::Group(0), 2),
        b'`' => (Piece::Before, 2),
        b'\'' => (Piece::After, 2),
        b'<' => return Ok(parse_named(new, i, regex)),
        b'0'..=b'9' => {
            let first = usize::from(next - b'0');
            let two_digit = bytes
                .get(i + 2)
                .filter(|b| b.is_ascii_digit())
                .map(|b| first * 10 + usize::from(b - b'0'));
            match two_digit {
                Some(g) if (1..=groups).contains(&g) => (Piece::Group(g), 3),
                _ => (numbered_group(first, groups)?, 2),
            }
        }
        _ => return Ok(None),
    };
    Ok(Some(piece))
}

/// Parses `\d` at `bytes[i]`.
fn parse_backslash(bytes: &[u8], i: usize, groups: usize) -> Result<Parsed<'static>, usize> {
    match bytes.get(i + 1) {
        Some(digit) if digit.is_ascii_digit() => {
            Ok(Some((numbered_group(usize::from(digit - b'0'), groups)?, 2)))
        }
        _ => Ok(None),
    }
}

/// Parses `$<name>` at `new[i]`; unknown names stay literal.
fn parse_named<'a>(new: &'a str, i: usize, regex: &JsRegex) -> Parsed<'a> {
    let name_start = i + 2;
    let name_len = new[name_start..].find('>')?;
    let name = &new[name_start..name_start + name_len];
    let index = regex.group_index(name)?;
    Some((Piece::Group(index), name_len + 3))
}

/// Group `g` (0 = whole match), or `Err(g)` if the pattern lacks it.
fn numbered_group(g: usize, groups: usize) -> Result<Piece<'static>, usize> {
    if g <= groups {
        Ok(Piece::Group(g))
    } else {
        Err(g)
    }
}
