//! The whitespace-normalized line match: finding `oldText`'s lines with their indentation
//! and inner runs of blanks set aside, and re-indenting `newText` to the match.

use super::*;

/// Outcome of the whitespace-normalized search.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum BlockSearch {
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
pub(super) struct LineSpan {
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
pub(super) fn find_normalized_block(text: &str, old: &str, stop: &dyn Fn() -> bool) -> BlockSearch {
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
pub(super) struct BlockPattern<'a> {
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
pub(super) fn line_spans(text: &str) -> Vec<LineSpan> {
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
pub(super) fn block_range(text: &str, block: &[LineSpan], with_terminator: bool) -> Range<usize> {
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

pub(super) fn is_blank(line: &str) -> bool {
    line.trim().is_empty()
}

/// The leading spaces and tabs of `line`.
pub(super) fn leading_indent(line: &str) -> &str {
    let len = line.len() - line.trim_start_matches([' ', '\t']).len();
    &line[..len]
}

/// The longest indentation prefix shared by all non-blank `lines`.
pub(super) fn common_indent<'a>(lines: impl IntoIterator<Item = &'a str>) -> &'a str {
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
pub(super) fn relative<'a>(line: &'a str, indent: &str) -> &'a str {
    if is_blank(line) {
        return "";
    }
    line.strip_prefix(indent).unwrap_or(line).trim_end()
}

/// Re-indents `new` for a block whose common indent is `indent`: `new`'s own
/// common indent is replaced by `indent` on every non-blank line (relative
/// indentation is kept); blank lines become empty, keeping a CRLF's `\r`.
pub(super) fn reindent(new: &str, indent: &str) -> String {
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
