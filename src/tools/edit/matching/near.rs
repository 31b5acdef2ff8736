//! Why a literal `oldText` missed: the nearest region of the text, its lines as they are, and
//! what differs, for the error an agent reads instead of re-reading the file.
//!
//! Edits fail most on drift that a model cannot see in its own copy: typographic quotes for
//! ASCII ones, tabs for spaces, spacing inside a line, trailing whitespace, one line of several
//! that changed, NFC against NFD. Each line is reduced to a *key* that drift does not change
//! (NFC, no whitespace, typographic quotes and dashes folded to ASCII), then:
//!
//! 1. every text line whose key equals one of oldText's votes for the window that would put them
//!    side by side; the window with most votes wins if at least half of oldText's lines agree;
//! 2. failing that, the text line most like oldText's longest line (a bigram count over every
//!    line, then a character diff of the best few) anchors the window, if they are 70% alike;
//! 3. each line of the window is compared with oldText's, and the drift named.
//!
//! Nothing here is applied: the near match is only shown. The work is linear in the text and
//! bounded besides (`MAX_TEXT_BYTES`, `MAX_VOTES`, `MAX_OLD_LINES`, `MAX_OLD_LINE_BYTES`), and the result is small:
//! at most `MAX_SHOWN_LINES` lines of at most `MAX_SHOWN_BYTES` bytes and `MAX_DIFFERENCES`
//! differences, each quoting at most `MAX_QUOTED_BYTES` of a line: under 2 KB in all.

use std::collections::HashMap;
use std::fmt;

use unicode_normalization::{is_nfc_quick, IsNormalized, UnicodeNormalization};

use super::block::common_indent;

/// A text bigger than this is not searched for a near match (the miss says only that oldText
/// was not found). A 2 MiB text takes about 20 ms (`bench.py --only edit-miss`).
const MAX_TEXT_BYTES: usize = 32 * 1024 * 1024;
/// oldText's lines past this are not looked for, and of each line only this many bytes.
const MAX_OLD_LINES: usize = 400;
const MAX_OLD_LINE_BYTES: usize = 4096;
/// Votes counted in all: a text of ten million `}` lines against an oldText of many `}` stops
/// here, with the best window so far.
const MAX_VOTES: usize = 2_000_000;
/// Lines of the text shown, and bytes of each.
const MAX_SHOWN_LINES: usize = 6;
const MAX_SHOWN_BYTES: usize = 160;
/// Bytes of a quoted piece of a line (escaped, so that whitespace shows).
const MAX_QUOTED_BYTES: usize = 48;
/// Differences named; more are counted.
const MAX_DIFFERENCES: usize = 3;
/// How alike (0 to 1, by characters) a line must be to anchor a window on its own.
const MIN_RATIO: f32 = 0.7;

/// The nearest region of the text to a literal oldText that was not found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Near {
    /// The region's first and last lines, 1-based.
    pub first: usize,
    pub last: usize,
    /// Lines shown: the 1-based number of the first, and the lines (cut, `\r` removed).
    pub shown_from: usize,
    pub shown: Vec<String>,
    /// What differs, one phrase each, and how many more lines differ than those named.
    pub differences: Vec<String>,
    pub unnamed: usize,
}

/// The nearest region to `old` in `text`, or `None` when nothing is similar enough to help.
pub fn nearest(text: &str, old: &str) -> Option<Near> {
    if text.len() > MAX_TEXT_BYTES {
        return None;
    }
    let old_lines: Vec<&str> = lines_of(old).take(MAX_OLD_LINES).collect();
    let old_keys: Vec<String> =
        old_lines.iter().map(|line| key(prefix(line, MAX_OLD_LINE_BYTES))).collect();
    let start = window_by_votes(text, &old_keys).or_else(|| window_by_likeness(text, &old_keys))?;
    let window: Vec<&str> = lines_of(text).skip(start).take(old_lines.len()).collect();
    Some(describe(start, &window, &old_lines))
}

/// The lines of `text` split at `\n`, each without a `\r` before it; a final `\n` ends the last
/// line rather than starting an empty one.
fn lines_of(text: &str) -> impl Iterator<Item = &str> {
    let body = text.strip_suffix('\n').unwrap_or(text);
    body.split('\n').map(|line| line.strip_suffix('\r').unwrap_or(line))
}

// ---------------------------------------------------------------------------------------------
// Keys
// ---------------------------------------------------------------------------------------------

/// What a line says once drift is folded away: NFC, without whitespace, with typographic quotes,
/// dashes and the ellipsis written in ASCII. Each output char is handed to `out`.
fn fold(line: &str, mut out: impl FnMut(char)) {
    let mut put = |c: char| {
        if c.is_whitespace() {
            return;
        }
        match c {
            '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' | '\u{2032}' => out('\''),
            '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' | '\u{2033}' => out('"'),
            '\u{2010}' | '\u{2011}' | '\u{2012}' | '\u{2013}' | '\u{2014}' | '\u{2212}' => out('-'),
            '\u{2026}' => "...".chars().for_each(&mut out),
            c => out(c),
        }
    };
    if line.is_ascii() {
        line.chars().for_each(&mut put);
    } else {
        line.nfc().for_each(&mut put);
    }
}

fn key(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    fold(line, |c| out.push(c));
    out
}

/// FNV-1a over a line's key, without building it.
fn key_hash(line: &str) -> (u64, usize) {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut len = 0;
    fold(line, |c| {
        let mut buf = [0u8; 4];
        for &b in c.encode_utf8(&mut buf).as_bytes() {
            hash = (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        len += 1;
    });
    (hash, len)
}

/// Keys this short (`}`, `)`, blank) match almost anywhere, so they do not vote.
fn votes(key_len: usize) -> bool {
    key_len >= 2
}

// ---------------------------------------------------------------------------------------------
// Finding the window
// ---------------------------------------------------------------------------------------------

/// The 0-based first line of the window where most of oldText's line keys line up with the
/// text's, if at least half of those that vote do.
fn window_by_votes(text: &str, old_keys: &[String]) -> Option<usize> {
    let mut wanted: HashMap<u64, Vec<usize>> = HashMap::new();
    let mut n_voting = 0;
    for (j, k) in old_keys.iter().enumerate() {
        if votes(k.chars().count()) {
            n_voting += 1;
            wanted.entry(key_hash(k).0).or_default().push(j);
        }
    }
    if n_voting == 0 {
        return None;
    }
    let mut tally: HashMap<usize, usize> = HashMap::new();
    let mut n_votes = 0;
    'lines: for (t, line) in lines_of(text).enumerate() {
        let (hash, len) = key_hash(line);
        if !votes(len) {
            continue;
        }
        let Some(js) = wanted.get(&hash) else { continue };
        for &j in js {
            if let Some(start) = t.checked_sub(j) {
                *tally.entry(start).or_default() += 1;
                n_votes += 1;
                if n_votes == MAX_VOTES {
                    break 'lines;
                }
            }
        }
    }
    let (start, count) =
        tally.into_iter().max_by_key(|&(start, count)| (count, usize::MAX - start))?;
    (count * 2 >= n_voting).then_some(start)
}

/// The window anchored on the text line most like oldText's longest line.
fn window_by_likeness(text: &str, old_keys: &[String]) -> Option<usize> {
    let (j, anchor) = old_keys.iter().enumerate().max_by_key(|(_, k)| k.chars().count())?;
    let anchor: Vec<char> = anchor.chars().collect();
    if anchor.len() < 4 {
        return None;
    }
    // Bigrams of the anchor, hashed into 4,096 bits: a line's share of them is a cheap first
    // estimate of likeness, and only the best few lines get the exact comparison.
    let mut bits = [0u64; 64];
    for pair in anchor.windows(2) {
        let h = bigram_bit(pair[0], pair[1]);
        bits[h / 64] |= 1 << (h % 64);
    }
    const CANDIDATES: usize = 8;
    // A line holding all of the anchor's bigrams scores no higher for holding them again.
    let most = anchor.len() - 1;
    let mut best: Vec<(usize, usize, &str)> = Vec::with_capacity(CANDIDATES + 1);
    for (t, line) in lines_of(text).enumerate() {
        let mut shared = 0;
        let mut len = 0;
        let mut previous = None;
        fold(line, |c| {
            if let Some(p) = previous {
                let h = bigram_bit(p, c);
                shared += usize::from(bits[h / 64] & (1 << (h % 64)) != 0);
            }
            previous = Some(c);
            len += 1;
        });
        let shared = shared.min(most);
        if len < anchor.len() / 2 || shared * 2 < most {
            continue;
        }
        if best.len() < CANDIDATES || shared > best[best.len() - 1].1 {
            let at = best.partition_point(|&(_, s, _)| s >= shared);
            best.insert(at, (t, shared, line));
            best.truncate(CANDIDATES);
        }
    }
    let anchor: String = anchor.into_iter().collect();
    let (t, ratio) = best
        .iter()
        .map(|&(t, _, line)| {
            let line = key(line);
            // oldText may be a piece of the line.
            let ratio = if line.contains(&anchor) { 1.0 } else { likeness(&anchor, &line) };
            (t, ratio)
        })
        .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))?;
    (ratio >= MIN_RATIO).then(|| t.saturating_sub(j))
}

fn bigram_bit(a: char, b: char) -> usize {
    ((u32::from(a).wrapping_mul(31) ^ u32::from(b).wrapping_mul(0x9e37)) % 4096) as usize
}

/// How alike two keys are, 0 to 1: twice the characters a diff keeps, over both lengths.
fn likeness(a: &str, b: &str) -> f32 {
    // Long lines are compared by their first 500 characters: the diff is quadratic at worst.
    let cut = |s: &str| -> String { s.chars().take(500).collect() };
    similar::TextDiff::configure()
        .timeout(std::time::Duration::from_millis(20))
        .diff_chars(&cut(a), &cut(b))
        .ratio()
}

// ---------------------------------------------------------------------------------------------
// Describing it
// ---------------------------------------------------------------------------------------------

/// The near match at 0-based line `start`: `window` holds the text's lines there, as many as
/// oldText has (fewer at the end of the text).
fn describe(start: usize, window: &[&str], old_lines: &[&str]) -> Near {
    // The engine's own indent (spaces and tabs): what the whitespace-normalized match forgives.
    let window_indent = common_indent(window.iter().copied());
    let old_indent = common_indent(old_lines.iter().copied());
    let mut differences = Vec::new();
    let mut unnamed = 0;
    let mut first_differing = None;
    for (i, old) in old_lines.iter().enumerate() {
        let line_no = start + i + 1;
        let Some(file) = window.get(i) else {
            first_differing.get_or_insert(i);
            if differences.len() < MAX_DIFFERENCES {
                differences.push(format!(
                    "oldText goes on for {} more line(s) after the end of the text",
                    old_lines.len() - window.len()
                ));
            } else {
                unnamed += 1;
            }
            break;
        };
        let file = segment(file, old, i, old_lines.len());
        // A common indent is the whitespace-normalized match's business: only a line's own
        // indent, relative to its block's, is drift here.
        let (file, old) = if file.len() == window[i].len() {
            (strip_indent(file, window_indent), strip_indent(old, old_indent))
        } else {
            (file, *old)
        };
        let causes = compare(file, old);
        if causes.is_empty() {
            continue;
        }
        first_differing.get_or_insert(i);
        if differences.len() == MAX_DIFFERENCES {
            unnamed += 1;
            continue;
        }
        for cause in causes.into_iter().take(MAX_DIFFERENCES - differences.len()) {
            differences.push(format!("line {line_no}: {cause}"));
        }
    }
    if differences.is_empty() && window_indent != old_indent {
        // Only the block's indent differs, which the whitespace-normalized match forgives; it
        // does not run with limit other than 1 or caseInsensitive.
        differences.push(format!(
            "the file's lines are indented by {} where oldText's are by {}",
            quoted(window_indent),
            quoted(old_indent)
        ));
    }
    let last = start + window.len().max(1);
    // The shown lines: the whole window when it is short, else from the line before the first
    // difference.
    let from = match first_differing {
        Some(i) if window.len() > MAX_SHOWN_LINES => i.saturating_sub(1),
        _ => 0,
    };
    let shown = window.iter().skip(from).take(MAX_SHOWN_LINES).map(|line| cut(line)).collect();
    Near { first: start + 1, last, shown_from: start + from + 1, shown, differences, unnamed }
}

/// The part of a text line that oldText's line `i` of `n` stands for: where the key of oldText's
/// line is only part of the file line's, its first line may start inside the file's line, its
/// last end inside it, and a single line lie anywhere in it.
fn segment<'a>(file: &'a str, old: &str, i: usize, n: usize) -> &'a str {
    let (kf, ko) = (key(file), key(old));
    if kf == ko || ko.is_empty() {
        return file;
    }
    let at = match (i == 0, i + 1 == n) {
        (true, true) => kf.find(&ko),
        (true, false) => kf.ends_with(&ko).then(|| kf.len() - ko.len()),
        (false, true) => kf.starts_with(&ko).then_some(0),
        (false, false) => None,
    };
    let Some(at) = at else { return file };
    // Map the key's byte range back to the line: walk the line, folding as the key does.
    let (key_start, key_end) = (at, at + ko.len());
    let mut produced = 0;
    let mut begin = None;
    let mut end = file.len();
    for (pos, c) in file.char_indices() {
        let mut width = 0;
        fold(c.encode_utf8(&mut [0u8; 4]), |k| width += k.len_utf8());
        if width == 0 {
            continue;
        }
        if begin.is_none() && produced >= key_start {
            begin = Some(pos);
        }
        produced += width;
        if produced >= key_end {
            end = pos + c.len_utf8();
            break;
        }
    }
    // Folding char by char can disagree with folding the line (NFC composes across chars); then
    // the whole line is compared.
    match begin {
        Some(begin) if key(&file[begin..end]) == ko => &file[begin..end],
        _ => file,
    }
}

/// What makes `file` differ from `old`, one phrase per kind of drift; empty when they are equal.
fn compare(file: &str, old: &str) -> Vec<String> {
    if file == old {
        return Vec::new();
    }
    if key(file) != key(old) {
        return vec![different_text(file, old)];
    }
    let mut causes = Vec::new();
    let (file_lead, old_lead) = (leading(file), leading(old));
    if file_lead != old_lead {
        causes.push(match (file_lead.contains('\t'), old_lead.contains('\t')) {
            (true, false) => {
                format!("the file indents with a tab where oldText has {}", spaces(old_lead))
            }
            (false, true) => {
                format!("the file indents with {} where oldText has a tab", spaces(file_lead))
            }
            _ => format!(
                "the file indents by {} where oldText has {}",
                quoted(file_lead),
                quoted(old_lead)
            ),
        });
    }
    let (file_trail, old_trail) = (trailing(file), trailing(old));
    if file_trail != old_trail {
        causes.push(format!(
            "trailing whitespace: the file has {} at the end of the line, oldText {}",
            quoted(file_trail),
            quoted(old_trail)
        ));
    }
    let (file_core, old_core) = (file.trim(), old.trim());
    let squeeze = |s: &str| -> String { s.chars().filter(|c| !c.is_whitespace()).collect() };
    if squeeze(file_core) == squeeze(old_core) && file_core != old_core {
        causes.push(format!("spacing inside the line: {}", snippets(file_core, old_core)));
    }
    let file_quotes = typographic(file);
    let old_quotes = typographic(old);
    if file_quotes != old_quotes {
        causes.push(match (file_quotes.is_empty(), old_quotes.is_empty()) {
            (false, true) => format!(
                "the file has typographic {file_quotes} where oldText has ASCII quotes or dashes"
            ),
            (true, false) => format!(
                "oldText has typographic {old_quotes} where the file has ASCII quotes or dashes"
            ),
            _ => format!("the file has typographic {file_quotes} where oldText has {old_quotes}"),
        });
    }
    let (file_nfc, old_nfc) = (is_nfc(file), is_nfc(old));
    if file_nfc != old_nfc {
        causes.push(if file_nfc {
            "Unicode normalization: the file's accented letters are composed (NFC), oldText's \
             decomposed (NFD)"
                .to_string()
        } else {
            "Unicode normalization: the file's accented letters are decomposed (NFD), oldText's \
             composed (NFC)"
                .to_string()
        });
    }
    if causes.is_empty() {
        // Equal keys, different lines, none of the above: NBSP for a space, or the like.
        causes.push(different_text(file, old));
    }
    causes
}

fn different_text(file: &str, old: &str) -> String {
    format!("the text differs: {}", snippets(file, old))
}

/// `file "…abc…" vs oldText "…abd…"`: each side from a little before the first character that
/// differs, quoted with escapes so that whitespace shows.
fn snippets(file: &str, old: &str) -> String {
    let common = file.chars().zip(old.chars()).take_while(|(a, b)| a == b).count();
    let from = common.saturating_sub(12);
    let part = |s: &str| -> String {
        let mut out = String::new();
        if from > 0 {
            out.push('…');
        }
        out.extend(s.chars().skip(from).take(MAX_QUOTED_BYTES));
        quoted(&out)
    };
    format!("file {} vs oldText {}", part(file), part(old))
}

fn is_nfc(s: &str) -> bool {
    match is_nfc_quick(s.chars()) {
        IsNormalized::Yes => true,
        IsNormalized::No => false,
        IsNormalized::Maybe => s.nfc().eq(s.chars()),
    }
}

/// The typographic quotes and dashes in `s`, in order of first appearance, e.g. `“ ”`.
fn typographic(s: &str) -> String {
    let mut seen: Vec<char> = Vec::new();
    for c in s.chars() {
        let fancy = matches!(
            c,
            '\u{2018}'..='\u{201F}' | '\u{2032}' | '\u{2033}' | '\u{2010}'..='\u{2014}' | '\u{2212}'
        );
        if fancy && !seen.contains(&c) {
            seen.push(c);
        }
    }
    seen.iter().map(char::to_string).collect::<Vec<_>>().join(" ")
}

fn spaces(lead: &str) -> String {
    match lead.len() {
        0 => "no indent".to_string(),
        1 => "1 space".to_string(),
        n => format!("{n} spaces"),
    }
}

fn leading(line: &str) -> &str {
    &line[..line.len() - line.trim_start().len()]
}

fn trailing(line: &str) -> &str {
    &line[line.trim_end().len()..]
}

fn strip_indent<'a>(line: &'a str, indent: &str) -> &'a str {
    line.strip_prefix(indent).unwrap_or(line)
}

/// The first `max` bytes of `s`, fewer to end at a character.
fn prefix(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// A line as shown: at most `MAX_SHOWN_BYTES` bytes, cut at a character.
fn cut(line: &str) -> String {
    cut_at(line, MAX_SHOWN_BYTES)
}

/// `s` in double quotes with escapes (`"\t  x"`), at most `MAX_QUOTED_BYTES` bytes of it.
fn quoted(s: &str) -> String {
    let escaped = format!("{s:?}");
    if escaped.len() <= MAX_QUOTED_BYTES {
        return escaped;
    }
    let mut out = cut_at(&escaped, MAX_QUOTED_BYTES);
    out.push('"');
    out
}

/// The first `max` bytes of `s` (fewer, to end at a character), and `…` if it went on.
fn cut_at(s: &str, max: usize) -> String {
    let head = prefix(s, max);
    if head.len() == s.len() {
        return s.to_string();
    }
    format!("{head}…")
}

impl fmt::Display for Near {
    /// `nearest is lines 12-14; line 13: …. The file there:` and the lines, numbered as
    /// read_file's lineNumbers numbers them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.first == self.last {
            write!(f, "the nearest text is line {}", self.first)?;
        } else {
            write!(f, "the nearest text is lines {}-{}", self.first, self.last)?;
        }
        if !self.differences.is_empty() {
            write!(f, "; {}", self.differences.join("; "))?;
        }
        if self.unnamed > 0 {
            write!(f, "; {} more line(s) differ", self.unnamed)?;
        }
        f.write_str(". The file there:")?;
        for (i, line) in self.shown.iter().enumerate() {
            write!(f, "\n{:>6}\t{line}", self.shown_from + i)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
