//! Fuzz target: the edit engine. Arbitrary content and up to four edits (oldText, newText,
//! isRegex, caseInsensitive, limit) through `apply_edits_within`, which must never panic. The
//! size bound is 256 KiB instead of the tools' 64 MiB: the same code, but no input spends
//! seconds growing a text (four edits each matching every position of a text grown to 40 MB
//! took two minutes), which libFuzzer would report as a timeout.
//!
//! Checked besides: a literal miss's message, with its near match, stays under 2 KB. And where
//! the answer is cheap and certain: a single exact literal edit on an LF
//! file without a BOM replaces exactly what `str::replacen` / `str::replace` would, or reports
//! it not unique; and a regex edit whose newText is `$&` (each match replaced by itself) leaves
//! the content unchanged.

#![no_main]

use libfuzzer_sys::fuzz_target;
use replay::fuzz::tools::edit::matching::{apply_edits_within, Edit, EditError, NotFoundKind};

const MAX_BYTES: usize = 256 * 1024;

// The input, UTF-8 in fields split by NUL, so that seeds are easy to write by hand:
//
//     content NUL ( flags oldText NUL newText NUL )*
//
// `flags` is the first character of each oldText field: bit 0 isRegex, bit 1 caseInsensitive,
// bit 2 (regex only) newText is `$&`, bits 3-5 limit (0-7).
fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let mut fields = text.split('\0');
    let content = fields.next().unwrap_or_default();
    let mut edits = Vec::new();
    while let (Some(old), Some(new)) = (fields.next(), fields.next()) {
        let mut chars = old.chars();
        let Some(flags) = chars.next().map(u32::from) else { break };
        let is_regex = flags & 1 != 0;
        edits.push(Edit {
            old_text: chars.as_str().to_string(),
            new_text: if is_regex && flags & 4 != 0 { "$&".to_string() } else { new.to_string() },
            limit: (flags >> 3 & 7) as usize,
            is_regex,
            case_insensitive: flags & 2 != 0,
        });
        if edits.len() == 4 {
            break;
        }
    }
    let result = apply_edits_within(content, &edits, MAX_BYTES);
    // A literal miss shows the nearest text, in under 2 KB whatever the content.
    if let Err(error @ EditError::NotFound { kind: NotFoundKind::Literal { .. }, .. }) = &result {
        let message = error.to_string();
        assert!(message.len() < 2048, "{} bytes: {message}", message.len());
    }
    let [edit] = edits.as_slice() else { return };
    if edit.is_regex {
        if edit.new_text == "$&" {
            if let Ok(out) = &result {
                assert_eq!(out, content, "`$&` changed the content: {edit:?}");
            }
        }
        return;
    }
    check_exact_literal(content, edit, &result);
});

/// What a literal, case-sensitive edit must do when `oldText` occurs as it is, in a file where
/// neither CRLF conversion nor BOM handling applies.
fn check_exact_literal(content: &str, edit: &Edit, result: &Result<String, EditError>) {
    let plain = !content.contains('\r') && !content.starts_with('\u{feff}');
    let old = edit.old_text.as_str();
    if edit.case_insensitive || !plain || old.is_empty() || !content.contains(old) {
        return;
    }
    let occurrences = content.matches(old).count();
    let expected = match edit.limit {
        0 => Ok(content.replace(old, &edit.new_text)),
        1 if occurrences > 1 => Err(occurrences),
        n => Ok(content.replacen(old, &edit.new_text, n)),
    };
    match (result, expected) {
        (Ok(got), Ok(want)) => {
            assert_eq!(got, &want, "literal edit {edit:?}");
            assert!(got.contains(&edit.new_text));
        }
        (Err(EditError::NotUnique { n, whitespace_normalized: false, .. }), Err(want)) => {
            assert_eq!(*n, want, "occurrence count for {edit:?}");
        }
        (Err(EditError::TooLarge { .. }), Ok(want)) => {
            assert!(want.len() > MAX_BYTES, "refused a result of {} bytes: {edit:?}", want.len());
        }
        (got, want) => panic!("literal edit {edit:?}: got {got:?}, expected {want:?}"),
    }
}
