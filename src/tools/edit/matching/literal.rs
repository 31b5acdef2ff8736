//! Literal modes: exact `oldText`, then the whitespace-normalized block fallback.

use super::*;

/// Applies one literal (non-regex) edit.
pub(super) fn apply_literal(
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
pub(super) fn replace_normalized_block(
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
pub(super) fn not_found_literal(
    edit_index: usize,
    whitespace_fallback: bool,
    text: &str,
    old: &str,
) -> EditError {
    let near = near::nearest(text, old).map(Box::new);
    EditError::NotFound { edit_index, kind: NotFoundKind::Literal { whitespace_fallback, near } }
}

/// `limit` as an iterator bound: `0` means unbounded.
pub(super) fn max_count(limit: usize) -> usize {
    if limit == 0 {
        usize::MAX
    } else {
        limit
    }
}

/// Adapts a literal edit's texts to the file: drops a copied BOM and converts
/// LF to CRLF for CRLF files (see the module docs).
pub(super) fn adapt_literal_texts<'e>(
    edit: &'e Edit,
    style: FileStyle<'_>,
) -> (Cow<'e, str>, Cow<'e, str>) {
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
pub(super) enum LiteralFinder<'a> {
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
pub(super) fn fits(size: usize, edit_index: usize, max_bytes: usize) -> Result<(), EditError> {
    if size > max_bytes {
        return Err(EditError::TooLarge { edit_index, max_bytes });
    }
    Ok(())
}

/// Replaces each of the sorted, non-overlapping `ranges` with `replacement`,
/// after checking the size of the result.
pub(super) fn replace_ranges(
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
