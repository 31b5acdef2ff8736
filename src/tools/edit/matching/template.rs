//! The regex mode's `newText`: `$` and `\\` references parsed once into pieces, expanded per
//! match.

use super::*;

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
pub(super) struct Template<'a> {
    pieces: Vec<Piece<'a>>,
}

#[derive(Debug, PartialEq, Eq)]
pub(super) enum Piece<'a> {
    Text(&'a str),
    Group(usize),
    Before,
    After,
}

impl<'a> Template<'a> {
    /// Parses `new`; `Err(g)` names the first reference to a missing group.
    pub(super) fn parse(new: &'a str, regex: &JsRegex, groups: usize) -> Result<Self, usize> {
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
    pub(super) fn expanded_len(&self, captures: &fancy_regex::Captures<'_>, text: &str) -> usize {
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

    pub(super) fn expand(
        &self,
        captures: &fancy_regex::Captures<'_>,
        text: &str,
        out: &mut String,
    ) {
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
pub(super) fn parse_dollar<'a>(
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
pub(super) fn parse_backslash(
    bytes: &[u8],
    i: usize,
    groups: usize,
) -> Result<Parsed<'static>, usize> {
    match bytes.get(i + 1) {
        Some(digit) if digit.is_ascii_digit() => {
            Ok(Some((numbered_group(usize::from(digit - b'0'), groups)?, 2)))
        }
        _ => Ok(None),
    }
}

/// Parses `$<name>` at `new[i]`; unknown names stay literal.
pub(super) fn parse_named<'a>(new: &'a str, i: usize, regex: &JsRegex) -> Parsed<'a> {
    let name_start = i + 2;
    let name_len = new[name_start..].find('>')?;
    let name = &new[name_start..name_start + name_len];
    let index = regex.group_index(name)?;
    Some((Piece::Group(index), name_len + 3))
}

/// Group `g` (0 = whole match), or `Err(g)` if the pattern lacks it.
pub(super) fn numbered_group(g: usize, groups: usize) -> Result<Piece<'static>, usize> {
    if g <= groups {
        Ok(Piece::Group(g))
    } else {
        Err(g)
    }
}
