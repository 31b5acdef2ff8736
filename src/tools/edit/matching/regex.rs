//! Regex mode: the first `limit` matches, iterated as JavaScript's `String.prototype.replace`
//! with the `g` flag does.

use super::*;

/// Applies one regex edit: the first `limit` matches (0 = all), iterated like
/// JavaScript's `String.prototype.replace` with the `g` flag.
pub(super) fn apply_regex(
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
pub(super) fn next_char_boundary(text: &str, i: usize) -> usize {
    text.get(i..).and_then(|rest| rest.chars().next()).map_or(text.len() + 1, |c| i + c.len_utf8())
}

/// Positions where an empty match is an artifact of line anchoring rather
/// than a line: the end of a file that ends with a line terminator (the file
/// `a\n` has one line, not two), and the middle of a `\r\n` pair.
pub(super) fn is_phantom_position(text: &str, i: usize) -> bool {
    let (before, after) = text.split_at(i);
    let at_end_after_terminator =
        after.is_empty() && (before.ends_with('\n') || before.ends_with('\r'));
    let inside_crlf = before.ends_with('\r') && after.starts_with('\n');
    at_end_after_terminator || inside_crlf
}
