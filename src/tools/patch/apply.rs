//! An update's hunks matched in a file's text and applied: `(old text, hunks) -> new text`.
//!
//! Matching follows Codex's reference implementation (`seek_sequence`): each hunk's old lines
//! (its context and `-` lines) are looked for exactly, then ignoring trailing whitespace, then
//! ignoring whitespace on both sides, then with typographic dashes, quotes and spaces folded to
//! ASCII; the first pass that finds them decides. Where Codex takes the first match, this
//! refuses a hunk whose lines match in two places unless an `@@` anchor placed it: a patch must
//! not edit a place its author did not see. The search for a hunk starts after the previous
//! hunk, and after its `@@` anchors (each looked for after the one before). `*** End of File`
//! tries the file's end first. Old lines that end with an empty line (the file's final newline,
//! as models write it) are retried without it, as Codex does.
//!
//! A hunk with no old lines inserts its lines after its last anchor, or at the end of the file
//! without one (Codex appends at the end even after an anchor, which puts an insertion meant
//! for a function at the bottom of the file).
//!
//! The text keeps its own line endings: lines outside the hunks are kept byte for byte, and
//! the lines a hunk writes take the ending of the file's first line (CRLF stays CRLF). The file
//! keeps its final newline, or its lack of one; an empty file gains one.

use std::fmt;

use super::parse::Hunk;
use crate::tools::edit::matching::near::{nearest, Near};

/// Why a hunk did not apply. `hunk` is 1-based, in the file's hunks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApplyError {
    pub hunk: usize,
    pub kind: ApplyErrorKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApplyErrorKind {
    /// An `@@` line's text was not found after `after` (a 1-based line; 0: the file's start).
    AnchorNotFound { anchor: String, after: usize, near: Option<Box<Near>> },
    /// The hunk's old lines were not found after `after`.
    NotFound { after: usize, near: Option<Box<Near>> },
    /// The old lines match only before `after`, at `at` (1-based): the hunks are out of order.
    OutOfOrder { at: usize, after: usize },
    /// The old lines match at these 1-based lines (the first two found) and no anchor chose.
    Ambiguous { lines: [usize; 2] },
}

impl fmt::Display for ApplyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "hunk {}: ", self.hunk)?;
        let (after, near) = match &self.kind {
            ApplyErrorKind::AnchorNotFound { anchor, after, near } => {
                write!(f, "the '@@ {anchor}' line was not found")?;
                (*after, near)
            }
            ApplyErrorKind::NotFound { after, near } => {
                write!(f, "its context and '-' lines were not found")?;
                (*after, near)
            }
            ApplyErrorKind::OutOfOrder { at, after } => {
                return write!(
                    f,
                    "its context and '-' lines match at line {at}, above line {after} where the \
                     hunk before it ends or its '@@' line is: order a file's hunks from its top \
                     to its bottom"
                );
            }
            ApplyErrorKind::Ambiguous { lines: [first, second] } => {
                return write!(
                    f,
                    "its context and '-' lines match at line {first} and at line {second}: add \
                     context lines, or an '@@ LINE' line naming a line above the right place \
                     (a function's or class's header)"
                );
            }
        };
        if after > 0 {
            write!(f, " after line {after}")?;
        }
        match near {
            Some(near) => write!(f, "; {near}"),
            None => f.write_str("; read the file again and write the hunk against its text"),
        }
    }
}

/// Applies `hunks`, in order, to `text`. Pure: the text is only read.
pub fn apply_hunks(text: &str, hunks: &[Hunk]) -> Result<String, ApplyError> {
    let lines = split_lines(text);
    let mut replacements: Vec<Replacement<'_>> = Vec::with_capacity(hunks.len());
    let mut cursor = 0;
    for (i, hunk) in hunks.iter().enumerate() {
        let error = |kind| ApplyError { hunk: i + 1, kind };
        let mut from = cursor;
        for anchor in &hunk.anchors {
            let Some(&at) = find(&lines, std::slice::from_ref(anchor), from, 1).first() else {
                let near = nearest(text, anchor).map(Box::new);
                let anchor = anchor.clone();
                return Err(error(ApplyErrorKind::AnchorNotFound { anchor, after: from, near }));
            };
            from = at + 1;
        }
        let anchored = !hunk.anchors.is_empty();
        if hunk.old.is_empty() {
            let at = if anchored && !hunk.at_eof { from } else { lines.len() };
            replacements.push((at, 0, hunk.new.iter().map(|l| Piece::Added(l)).collect()));
            cursor = at;
            continue;
        }
        let (mut old, mut new) = (&hunk.old[..], &hunk.new[..]);
        let mut found = locate(&lines, old, from, hunk.at_eof);
        while found.is_empty() && old.len() > 1 && old.last().is_some_and(String::is_empty) {
            old = &old[..old.len() - 1];
            if new.last().is_some_and(String::is_empty) {
                new = &new[..new.len() - 1];
            }
            found = locate(&lines, old, from, hunk.at_eof);
        }
        match found[..] {
            [] if from > 0 && !find(&lines, old, 0, 1).is_empty() => {
                let at = find(&lines, old, 0, 1)[0] + 1;
                return Err(error(ApplyErrorKind::OutOfOrder { at, after: from }));
            }
            [] => {
                let near = nearest(text, &hunk.old.join("\n")).map(Box::new);
                return Err(error(ApplyErrorKind::NotFound { after: from, near }));
            }
            [first, second, ..] if !anchored => {
                return Err(error(ApplyErrorKind::Ambiguous { lines: [first + 1, second + 1] }));
            }
            [at, ..] => {
                replacements.push((at, old.len(), pieces(at, old, new)));
                cursor = at + old.len();
            }
        }
    }
    Ok(render(text, &lines, &replacements))
}

/// Where a hunk applies: its first line, how many lines it replaces, and what it writes.
type Replacement<'a> = (usize, usize, Vec<Piece<'a>>);

/// A line a hunk writes: one of the file's own (a context line, kept byte for byte even where
/// it matched only up to whitespace), or one of the patch's.
enum Piece<'a> {
    Kept(usize),
    Added(&'a str),
}

/// The lines a hunk matched at `at` writes: its context lines (those `old` and `new` share, by
/// a line diff) as the file has them, the others from the patch.
fn pieces<'a>(at: usize, old: &[String], new: &'a [String]) -> Vec<Piece<'a>> {
    let mut out = Vec::with_capacity(new.len());
    for op in similar::capture_diff_slices(similar::Algorithm::Myers, old, new) {
        match op {
            similar::DiffOp::Equal { old_index, len, .. } => {
                out.extend((old_index..old_index + len).map(|i| Piece::Kept(at + i)));
            }
            similar::DiffOp::Insert { new_index, new_len, .. }
            | similar::DiffOp::Replace { new_index, new_len, .. } => {
                out.extend(new[new_index..new_index + new_len].iter().map(|l| Piece::Added(l)));
            }
            similar::DiffOp::Delete { .. } => {}
        }
    }
    out
}

/// A line's text without its ending, and its ending (`\n`, `\r\n`, or empty for a last line
/// without one).
struct Line<'a> {
    body: &'a str,
    eol: &'a str,
}

/// The text's lines; a final `\n` ends the last line rather than starting an empty one.
fn split_lines(text: &str) -> Vec<Line<'_>> {
    let mut lines = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let (line, tail) = match rest.find('\n') {
            Some(i) => (&rest[..=i], &rest[i + 1..]),
            None => (rest, ""),
        };
        let body = line.strip_suffix('\n').unwrap_or(line);
        let body = body.strip_suffix('\r').unwrap_or(body);
        lines.push(Line { body, eol: &line[body.len()..] });
        rest = tail;
    }
    lines
}

/// Where `pattern` matches at or after `from`: at the end first when `at_eof`, then anywhere
/// (at most two positions, which is enough to refuse an ambiguous hunk).
fn locate(lines: &[Line<'_>], pattern: &[String], from: usize, at_eof: bool) -> Vec<usize> {
    if at_eof && lines.len() >= pattern.len() {
        let end = lines.len() - pattern.len();
        if end >= from && (0..PASSES).any(|pass| matches_at(lines, pattern, end, pass)) {
            return vec![end];
        }
    }
    find(lines, pattern, from, 2)
}

const PASSES: usize = 4;

/// Up to `limit` positions at or after `from` where `pattern` matches, by the strictest pass
/// that finds any.
fn find(lines: &[Line<'_>], pattern: &[String], from: usize, limit: usize) -> Vec<usize> {
    if pattern.len() > lines.len() {
        return Vec::new();
    }
    let last = lines.len() - pattern.len();
    for pass in 0..PASSES {
        let found: Vec<usize> =
            (from..=last).filter(|&at| matches_at(lines, pattern, at, pass)).take(limit).collect();
        if !found.is_empty() {
            return found;
        }
    }
    Vec::new()
}

fn matches_at(lines: &[Line<'_>], pattern: &[String], at: usize, pass: usize) -> bool {
    lines[at..at + pattern.len()].iter().zip(pattern).all(|(line, want)| {
        let have = line.body;
        match pass {
            0 => have == want,
            1 => have.trim_end() == want.trim_end(),
            2 => have.trim() == want.trim(),
            _ => folded(have).eq(folded(want)),
        }
    })
}

/// The line trimmed, with typographic dashes, quotes and spaces as their ASCII counterparts:
/// Codex's last pass, for a model that writes ASCII against a file with typography.
fn folded(line: &str) -> impl Iterator<Item = char> + '_ {
    line.trim().chars().map(|c| match c {
        '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
        '\u{2018}'..='\u{201B}' => '\'',
        '\u{201C}'..='\u{201F}' => '"',
        '\u{00A0}' | '\u{2002}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => ' ',
        other => other,
    })
}

/// The text with the replacements made: kept lines byte for byte, new lines with the file's
/// line ending, the final newline as the file had it (an empty file gains one).
fn render(text: &str, lines: &[Line<'_>], replacements: &[Replacement<'_>]) -> String {
    let eol = lines.first().map_or("\n", |line| if line.eol.is_empty() { "\n" } else { line.eol });
    let final_newline = text.is_empty() || text.ends_with('\n');
    // Each output line: its text, and its own ending if it is a kept line that has one.
    let mut out: Vec<(&str, &str)> = Vec::with_capacity(lines.len());
    let mut next = 0;
    for (at, len, new) in replacements {
        out.extend(lines[next..*at].iter().map(|line| (line.body, line.eol)));
        out.extend(new.iter().map(|piece| match piece {
            Piece::Kept(i) => (lines[*i].body, lines[*i].eol),
            Piece::Added(line) => (*line, ""),
        }));
        next = at + len;
    }
    out.extend(lines[next..].iter().map(|line| (line.body, line.eol)));
    let mut result = String::with_capacity(text.len() + 64);
    let n = out.len();
    for (i, (body, own_eol)) in out.into_iter().enumerate() {
        result.push_str(body);
        if i + 1 < n || final_newline {
            result.push_str(if own_eol.is_empty() { eol } else { own_eol });
        }
    }
    result
}

#[cfg(test)]
mod tests;
