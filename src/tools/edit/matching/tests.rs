//! Table tests for the edit engine: one `check` line per case.
//!
//! Regex replacement cases marked `// node` were confirmed against Node v20's
//! `String.prototype.replace` with the same pattern (flags `m`, plus `g` for
//! `limit: 0`, plus `i` for case-insensitive).

use super::*;

/// The edits applied under the tools' own bound.
fn apply_edits(content: &str, edits: &[Edit]) -> Result<String, EditError> {
    apply_edits_within(content, edits, MAX_EDITED_BYTES)
}

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

fn edit(old: &str, new: &str, limit: usize, is_regex: bool, case_insensitive: bool) -> Edit {
    Edit { old_text: old.to_owned(), new_text: new.to_owned(), limit, is_regex, case_insensitive }
}

/// Standard mode: literal, case-sensitive, limit 1.
fn lit(old: &str, new: &str) -> Edit {
    edit(old, new, 1, false, false)
}

/// Literal with an explicit limit.
fn lim(old: &str, new: &str, limit: usize) -> Edit {
    edit(old, new, limit, false, false)
}

/// Case-insensitive literal, limit 1.
fn ci(old: &str, new: &str) -> Edit {
    edit(old, new, 1, false, true)
}

/// Case-insensitive literal with an explicit limit.
fn ci_lim(old: &str, new: &str, limit: usize) -> Edit {
    edit(old, new, limit, false, true)
}

/// Regex, limit 1.
fn re(pattern: &str, new: &str) -> Edit {
    edit(pattern, new, 1, true, false)
}

/// Regex, limit 0 (all).
fn re_all(pattern: &str, new: &str) -> Edit {
    edit(pattern, new, 0, true, false)
}

/// Regex with an explicit limit.
fn re_lim(pattern: &str, new: &str, limit: usize) -> Edit {
    edit(pattern, new, limit, true, false)
}

/// Case-insensitive regex, limit 0.
fn re_ci_all(pattern: &str, new: &str) -> Edit {
    edit(pattern, new, 0, true, true)
}

/// A literal miss; `check` compares misses without their near match, which `near::tests` covers.
fn not_found(edit_index: usize, whitespace_fallback: bool) -> EditError {
    EditError::NotFound {
        edit_index,
        kind: NotFoundKind::Literal { whitespace_fallback, near: None },
    }
}

/// `error` without the near match of a literal miss.
fn without_near(error: EditError) -> EditError {
    match error {
        EditError::NotFound {
            edit_index,
            kind: NotFoundKind::Literal { whitespace_fallback, .. },
        } => not_found(edit_index, whitespace_fallback),
        other => other,
    }
}

fn empty_old(edit_index: usize) -> EditError {
    EditError::NotFound { edit_index, kind: NotFoundKind::EmptyOldText }
}

fn re_not_found(edit_index: usize, pattern: &str) -> EditError {
    EditError::NotFound { edit_index, kind: NotFoundKind::Regex { pattern: pattern.to_owned() } }
}

fn not_unique(edit_index: usize, n: usize) -> EditError {
    EditError::NotUnique { edit_index, n, whitespace_normalized: false }
}

fn ws_not_unique(edit_index: usize, n: usize) -> EditError {
    EditError::NotUnique { edit_index, n, whitespace_normalized: true }
}

fn missing(edit_index: usize, group: usize, n_groups: usize) -> EditError {
    EditError::MissingGroup { edit_index, group, n_groups }
}

fn too_large(edit_index: usize) -> EditError {
    EditError::TooLarge { edit_index, max_bytes: MAX_EDITED_BYTES }
}

#[track_caller]
fn check(content: &str, edits: &[Edit], expect: Result<&str, EditError>) {
    let got = apply_edits(content, edits);
    let shown: String = format!("{content:?}").chars().take(300).collect();
    assert_eq!(
        got.as_deref().map_err(|e| without_near(e.clone())),
        expect,
        "content {shown}, edits {edits:?}"
    );
}

// ---------------------------------------------------------------------------
// Rule 1: standard mode, exact match with uniqueness guard
// ---------------------------------------------------------------------------

#[rustfmt::skip]
#[test]
fn standard_exact() {
    check("foo bar baz", &[lit("bar", "qux")], Ok("foo qux baz"));
    check("foo bar baz", &[lit("bar ", "")], Ok("foo baz"));
    check("a\nb\nc\n", &[lit("b\nc\n", "x\n")], Ok("a\nx\n"));
    check("a a", &[lit("a", "b")], Err(not_unique(0, 2)));
    check("x.x.x", &[lit("x", "y")], Err(not_unique(0, 3)));
    // Occurrences are counted non-overlapping, as `limit: 0` would replace them.
    check("aaaa", &[lit("aa", "b")], Err(not_unique(0, 2)));
    check("aaa", &[lit("aa", "b")], Ok("ba"));
    // Literal newText is verbatim: no `$`/`\` expansion.
    check("a", &[lit("a", "$1 $& $$ \\1 \\0")], Ok("$1 $& $$ \\1 \\0"));
    check("ünïcödé", &[lit("ïcö", "ICO")], Ok("ünICOdé"));
    check("abc", &[lit("abc", "")], Ok(""));
    // Exact match wins over the fallback even if the text is indented differently.
    check("  a\nb\n", &[lit("a\nb", "x")], Ok("  x\n"));
}

#[rustfmt::skip]
#[test]
fn standard_not_found() {
    check("foo", &[lit("bar", "x")], Err(not_found(0, true)));
    // An all-blank oldText does not run the fallback.
    check("foo\n\n", &[lit("  \n \n", "x")], Err(not_found(0, false)));
    check("", &[lit("a", "b")], Err(not_found(0, true)));
}

#[rustfmt::skip]
#[test]
fn empty_old_text_is_refused() {
    check("", &[lit("", "x")], Err(empty_old(0)));
    check("abc", &[lit("", "x")], Err(empty_old(0)));
    check("abc", &[lim("", "x", 0)], Err(empty_old(0)));
    check("abc", &[ci("", "x")], Err(empty_old(0)));
    // ...but an empty regex is a real pattern (matches at the start, as in JS).
    check("abc", &[re("", "x")], Ok("xabc"));
}

// ---------------------------------------------------------------------------
// Rule 2: whitespace-normalized line match
// ---------------------------------------------------------------------------

#[rustfmt::skip]
#[test]
fn whitespace_fallback_reindents() {
    // oldText copied without indentation; newText re-indented to the block's.
    check("fn f() {\n    let x = 1;\n    let y = 2;\n}\n", &[lit("let x = 1;\nlet y = 2;\n", "let x = 10;\nif x {\n    y();\n}\n")], Ok("fn f() {\n    let x = 10;\n    if x {\n        y();\n    }\n}\n"));
    // oldText more indented than the file.
    check("  a();\n  b();\nc", &[lit("        a();\n        b();", "x();\ny();")], Ok("  x();\n  y();\nc"));
    // Tabs in the file: the file's own prefix is reused.
    check("\t\ta();\n\t\tb();\n", &[lit("a();\nb();\n", "x();\n  y();\n")], Ok("\t\tx();\n\t\t  y();\n"));
    // newText's own common indent is replaced, relative indent kept.
    check("\ta\n\tb\n", &[lit("a\nb\n", "    x\n      y\n")], Ok("\tx\n\t  y\n"));
    // Blank lines in newText become empty and get no indent.
    check("    a\n    b\n", &[lit("a\nb\n", "x\n   \n  y\n")], Ok("    x\n\n      y\n"));
    // Deleting a block.
    check("k\n  a\n  b\nz\n", &[lit("a\nb\n", "")], Ok("k\nz\n"));
}

#[rustfmt::skip]
#[test]
fn whitespace_fallback_block_boundaries() {
    // Without a final newline in oldText the block stops before the terminator...
    check("  a\n  b\n  c\n", &[lit("a\nb", "x")], Ok("  x\n  c\n"));
    // ...with one, the terminator is part of the block.
    check("  a\n  b\n  c\n", &[lit("a\nb\n", "x\n")], Ok("  x\n  c\n"));
    check("  a\n  b\n  c\n", &[lit("a\nb\n", "x")], Ok("  x  c\n"));
    // The last line of the file has no terminator.
    check("  a\n  b", &[lit("a\nb\n", "x\n")], Ok("  x\n"));
    // Candidate blocks are whole lines: a partial first line does not match.
    check("x = foo(\n  1)\n", &[lit("foo(\n1)", "bar()")], Err(not_found(0, true)));
    check("    a\n    b\n", &[lit("a\n  b\n", "x")], Err(not_found(0, true)));
}

#[rustfmt::skip]
#[test]
fn whitespace_fallback_normalization() {
    // Trailing whitespace is ignored on both sides.
    check("a();   \nb();\n", &[lit("a();\nb();\n", "c();\n")], Ok("c();\n"));
    check("  a();\n  b();\n", &[lit("a(); \t\nb();  \n", "c();\n")], Ok("  c();\n"));
    // Blank lines match blank lines, whatever whitespace they hold.
    check("  a\n   \n  b\n", &[lit("a\n\nb\n", "x\n")], Ok("  x\n"));
    check("  a\n  z\n  b\n", &[lit("a\n\nb\n", "x\n")], Err(not_found(0, true)));
    // Relative indentation must match exactly (tabs are not expanded).
    check("  a\n    b\n", &[lit("a\nb\n", "x\n")], Err(not_found(0, true)));
    check("\tif a {\n\t\tb()\n\t}\n", &[lit("if a {\n    b()\n}\n", "x")], Err(not_found(0, true)));
    // Mixed indentation: the common prefix is the longest shared run.
    check("\t a\n\t b\n", &[lit("a\nb\n", "x\ny\n")], Ok("\t x\n\t y\n"));
}

#[rustfmt::skip]
#[test]
fn whitespace_fallback_uniqueness_and_scope() {
    check("  a\n  b\n\n    a\n    b\n", &[lit("a\nb\n", "x\n")], Err(ws_not_unique(0, 2)));
    check("  a\n  a\n  a\n", &[lit("a  \n", "x\n")], Err(ws_not_unique(0, 3)));
    // Non-overlapping count: three "a" lines hold one two-line block.
    check(" a\n a\n a\n", &[lit("a\na\n", "x\n")], Ok(" x\n a\n"));
    // Only at limit 1, only case-sensitive, never for regex.
    check("  a\n  b\n", &[lim("a\nb\n", "x", 0)], Err(not_found(0, false)));
    check("  a\n  b\n", &[lim("a\nb\n", "x", 2)], Err(not_found(0, false)));
    check("  a\n  b\n", &[ci("a\nb\n", "x")], Err(not_found(0, false)));
    check("  a\n  b\n", &[re("a\nb\n", "x")], Err(re_not_found(0, "a\nb\n")));
}

// ---------------------------------------------------------------------------
// Rule 3: case-insensitive literal
// ---------------------------------------------------------------------------

#[rustfmt::skip]
#[test]
fn case_insensitive_literal() {
    check("Hello World", &[ci("hello", "Bye")], Ok("Bye World"));
    check("Hello hello", &[ci("HELLO", "x")], Err(not_unique(0, 2)));
    check("Hello hello", &[ci_lim("HELLO", "x", 0)], Ok("x x"));
    check("Hello hello hELLO", &[ci_lim("HELLO", "x", 2)], Ok("x x hELLO"));
    // Regex metacharacters are literal.
    check("a.B*c(d)", &[ci("A.b*C(D)", "ok")], Ok("ok"));
    check("axbbc", &[ci("a.b*c", "ok")], Err(not_found(0, false)));
    // Non-ASCII folding keeps byte offsets valid.
    check("STRASSE Ärger!", &[ci("ärger", "x")], Ok("STRASSE x!"));
    // Unicode simple case folding: KELVIN SIGN (3 bytes) matches `k` (1 byte).
    check("1 \u{212a} 2", &[ci("k", "x")], Ok("1 x 2"));
    check("foo", &[ci("bar", "x")], Err(not_found(0, false)));
    check("A", &[ci("a", "$0\\1")], Ok("$0\\1"));
}

// ---------------------------------------------------------------------------
// Rule 4: regex mode
// ---------------------------------------------------------------------------

#[rustfmt::skip]
#[test]
fn regex_matches_node() {
    check("hello world", &[re(r"(\w+) (\w+)", "$2 $1")], Ok("world hello")); // node
    check("baaab", &[re_all("a*", "X")], Ok("XbXXbX")); // node
    check("abc", &[re_all("x*", "-")], Ok("-a-b-c-")); // node
    check("ab", &[re_all("(a)|(b)", "[$1$2]")], Ok("[a][b]")); // node
    check("foo", &[re_all("o", "$$")], Ok("f$$")); // node
    check("foo", &[re("o", "$&$&")], Ok("fooo")); // node
    check("abc", &[re("b", "[$`|$']")], Ok("a[a|c]c")); // node
    check("2024-05", &[re(r"(?<y>\d{4})-(?<m>\d\d)", "$<m>/$<y>")], Ok("05/2024")); // node
    check("abcdefghij", &[re("(a)(b)(c)(d)(e)(f)(g)(h)(i)(j)", "$10")], Ok("j")); // node
    check("a", &[re("(a)", "$10")], Ok("a0")); // node
    check("a", &[re("(a)", "$")], Ok("$")); // node
    check("a", &[re("(a)", "$x")], Ok("$x")); // node
    check("x12y", &[re(r"(\d+)", "<$01>")], Ok("x<12>y")); // node
    check("a\nb", &[re_all("^", ">")], Ok(">a\n>b")); // node
    check("a\nb", &[re_all("$", ";")], Ok("a;\nb;")); // node
    check("a\n\nb", &[re_all("^(.*)$", "\"$1\"")], Ok("\"a\"\n\"\"\n\"b\"")); // node
    check("Hello hello", &[re_ci_all("HELLO", "bye")], Ok("bye bye")); // node
    check("b", &[re("(a)?b", "[$1]")], Ok("[]")); // node
    check("café é", &[re_all("é", "e")], Ok("cafe e")); // node
    check("ab", &[re_all("(?:)", "-")], Ok("-a-b-")); // node
    check("x1", &[re(r"\d", "a\\b")], Ok("xa\\b")); // node
    check("ab", &[re("(a)(b)", "$2$1$&")], Ok("baab")); // node
    check("a", &[re("(a)", "$<nope>")], Ok("$<nope>")); // node
    check("fooo", &[re_all("o(?=o)", "0")], Ok("f00o")); // node
    check("foo fo", &[re_all("(?<=f)o", "0")], Ok("f0o f0")); // node
    check("foo", &[re(r"(o)\1", "X")], Ok("fX")); // node
    check("abc", &[re("(?<w>b)", "[$<w>|$<w]")], Ok("a[b|$<w]c")); // node
    check("a  \nb\t\nc", &[re_all(r"\s+$", "")], Ok("a\nb\nc")); // node
    check("foo\n  foo\n\tfoo", &[re_all(r"^(\s*)foo", "$1bar")], Ok("bar\n  bar\n\tbar")); // node
    check("xy", &[re_all("(x)|y", "[$1]")], Ok("[x][]")); // node
    check("abab", &[re_all("a|ab", "<$&>")], Ok("<a>b<a>b")); // node
    check("1234", &[re_all(r"(\d)(\d)", "$2$1")], Ok("2143")); // node
    check("é", &[re_all("(?:)", "-")], Ok("-é-")); // node
}

#[rustfmt::skip]
#[test]
fn regex_limit_and_not_found() {
    // No uniqueness guard: limit 1 replaces the first match.
    check("a a a", &[re("a", "b")], Ok("b a a"));
    check("a a a", &[re_lim("a", "b", 2)], Ok("b b a"));
    check("a a a", &[re_lim("a", "b", 9)], Ok("b b b"));
    check("abc", &[re("x+", "y")], Err(re_not_found(0, "x+")));
    check("ABC", &[re_ci_all("b", "x")], Ok("AxC"));
}

#[rustfmt::skip]
#[test]
fn regex_line_anchors_skip_phantom_lines() {
    // The project lead's example: the empty match after the final newline is not a line.
    check("a\n\nb\n", &[re_all("^(.*)$", "\"$1\"")], Ok("\"a\"\n\"\"\n\"b\"\n")); // JS appends `""`
    check("a\nb\n", &[re_all("$", ";")], Ok("a;\nb;\n"));
    check("a\nb\n", &[re_all("^", ">")], Ok(">a\n>b\n"));
    check("a\n", &[re_all("^$", "x")], Err(re_not_found(0, "^$")));
    check("", &[re("^", "x")], Ok("x"));
    check("\n", &[re_all("^", ">")], Ok(">\n"));
    // Non-empty matches at the end are kept.
    check("a\n", &[re_all("\n", "!")], Ok("a!"));
    // An empty match between `\r` and `\n` is skipped too.
    check("a\r\nb\nc", &[re_all("(?=\n)", "X")], Ok("a\r\nbX\nc")); // JS: "a\rX\nbX\nc"
}

#[rustfmt::skip]
#[test]
fn regex_replacement_forms() {
    // `\0`, `$0`, `$&`: whole match, no group needed.
    check("ab", &[re("b", "[\\0|$0|$&]")], Ok("a[b|b|b]")); // JS: `$0` stays literal
    check("ab", &[re("b", "$00")], Ok("ab0"));
    // sed-style references are one digit.
    check("a", &[re("(a)", "\\1\\1")], Ok("aa"));
    check("a", &[re("(a)", "\\12")], Ok("a2"));
    check("abcdefghij", &[re("(a)(b)(c)(d)(e)(f)(g)(h)(i)(j)", "\\10")], Ok("a0"));
    check("a", &[re("(a)", "$15")], Ok("a5")); // node
    // A backslash not followed by a digit is literal; `\\1` is `\` + group 1.
    check("a", &[re("a", "\\n\\\\")], Ok("\\n\\\\"));
    check("a", &[re("(a)", "\\\\1")], Ok("\\a"));
    check("a", &[re("a", "x\\")], Ok("x\\"));
    // Non-participating groups expand to "".
    check("b", &[re("(?<x>a)?b", "[$<x>]")], Ok("[]")); // node
    check("b", &[re("(a)?b", "[\\1]")], Ok("[]"));
    check("a", &[re("(?<x>a)", "$<x")], Ok("$<x")); // node
}

#[rustfmt::skip]
#[test]
fn regex_missing_group() {
    check("abc", &[re(".*", "\\1")], Err(missing(0, 1, 0)));
    check("abc", &[re(".*", "$1")], Err(missing(0, 1, 0)));
    check("a", &[re("(a)", "$2")], Err(missing(0, 2, 1)));
    check("a", &[re("(a)", "$25")], Err(missing(0, 2, 1)));
    check("a", &[re("(a)", "ok $1 \\3")], Err(missing(0, 3, 1)));
    // Reported up front, even when the pattern matches nothing.
    check("xyz", &[re("(a)", "$2")], Err(missing(0, 2, 1)));
    // `$$1` is a literal `$` followed by `1`, not a reference.
    check("a", &[re("a", "$$1")], Ok("$1")); // node
}

#[test]
fn regex_invalid() {
    let got = apply_edits("abc", &[lit("a", "b"), re("(a", "x")]);
    let Err(EditError::InvalidRegex { edit_index, pattern, detail }) = got else {
        panic!("expected InvalidRegex, got {got:?}");
    };
    assert_eq!((edit_index, pattern.as_str()), (1, "(a"));
    assert!(!detail.is_empty());
}

// ---------------------------------------------------------------------------
// Rule 5: literal limit
// ---------------------------------------------------------------------------

#[rustfmt::skip]
#[test]
fn literal_limit() {
    check("a a a", &[lim("a", "b", 2)], Ok("b b a"));
    check("a a a", &[lim("a", "b", 0)], Ok("b b b"));
    check("a a a", &[lim("a", "b", 5)], Ok("b b b"));
    check("a", &[lim("a", "b", 0)], Ok("b"));
    check("aaaa", &[lim("aa", "b", 0)], Ok("bb"));
    check("a a", &[lim("a", "$&", 0)], Ok("$& $&"));
    check("xyz", &[lim("a", "b", 0)], Err(not_found(0, false)));
}

// ---------------------------------------------------------------------------
// Rule 6: line endings and BOM
// ---------------------------------------------------------------------------

#[rustfmt::skip]
#[test]
fn crlf_files() {
    check("a\r\nb\r\nc\r\n", &[lit("a\nb\n", "x\ny\n")], Ok("x\r\ny\r\nc\r\n"));
    check("a\r\nb\r\n", &[lit("a\r\nb", "x")], Ok("x\r\n"));
    check("a\r\nb\r\n", &[lit("a\r\nb\n", "x\r\ny\n")], Ok("x\r\ny\r\n"));
    check("A\r\nB\r\n", &[ci("a\nb", "x\ny")], Ok("x\r\ny\r\n"));
    check("a\r\na\r\n", &[lim("a\n", "b\n", 0)], Ok("b\r\nb\r\n"));
    // Regex: only newText is converted.
    check("a\r\nb\r\n", &[re("b", "x\ny")], Ok("a\r\nx\r\ny\r\n"));
    check("a\r\nb\r\n", &[re(r"a\r\n", "z\n")], Ok("z\r\nb\r\n"));
    // The fallback on a CRLF file keeps the CRLFs.
    check("  a\r\n  b\r\n  c\r\n", &[lit("a\nb\n", "x\ny\n")], Ok("  x\r\n  y\r\n  c\r\n"));
    check("  a\r\n  b\r\n  c\r\n", &[lit("a\nb", "x")], Ok("  x\r\n  c\r\n"));
    check("  a\r\n  b\r\n", &[lit("a\nb\n", "x\n\ny\n")], Ok("  x\r\n\r\n  y\r\n"));
}

#[rustfmt::skip]
#[test]
fn lf_and_mixed_files_are_left_alone() {
    // Mixed (1 CRLF, 1 lone LF): no conversion, exact text is used as sent.
    check("a\r\nb\nc", &[lit("b\nc", "x\ny")], Ok("a\r\nx\ny"));
    // An LF oldText still finds CRLF lines through the fallback (`\r` is trailing whitespace).
    check("a\r\nb\nc", &[lit("a\nb", "x")], Ok("x\nc"));
    check("a\nb\n", &[re("b", "x\ny")], Ok("a\nx\ny\n"));
    check("a\nb\n", &[lit("b", "x\r\ny")], Ok("a\nx\r\ny\n"));
}

#[test]
fn crlf_detection() {
    assert!(uses_crlf("a\r\nb\r\n"));
    assert!(uses_crlf("a\r\nb\r\nc\n"));
    assert!(!uses_crlf("a\r\nb\n"));
    assert!(!uses_crlf("a\nb\n"));
    assert!(!uses_crlf(""));
    assert_eq!(lf_to_crlf("a\nb\r\n\n"), "a\r\nb\r\n\r\n");
    assert_eq!(lf_to_crlf("\n"), "\r\n");
    assert!(matches!(lf_to_crlf("a\r\nb"), Cow::Borrowed(_)));
}

#[rustfmt::skip]
#[test]
fn byte_order_mark() {
    check("\u{feff}abc", &[lit("abc", "x")], Ok("\u{feff}x"));
    check("\u{feff}abc", &[lit("\u{feff}ab", "\u{feff}xy")], Ok("\u{feff}xyc"));
    check("\u{feff}abc", &[lit("\u{feff}ab", "xy")], Ok("\u{feff}xyc"));
    check("\u{feff}a\nb", &[re("^a", "x")], Ok("\u{feff}x\nb"));
    check("\u{feff}a", &[re("^", ">")], Ok("\u{feff}>a"));
    check("\u{feff}  a\n  b\n", &[lit("a\nb\n", "x\n")], Ok("\u{feff}  x\n"));
    check("\u{feff}a\r\nb\r\n", &[lit("a\nb", "x\ny")], Ok("\u{feff}x\r\ny\r\n"));
    check("abc", &[lit("\u{feff}abc", "x")], Err(not_found(0, true)));
}

// ---------------------------------------------------------------------------
// Rule 7: sequences
// ---------------------------------------------------------------------------

#[rustfmt::skip]
#[test]
fn sequences() {
    check("abc", &[lit("a", "x"), lit("x", "y")], Ok("ybc"));
    check("abc", &[lit("a", "x"), re("[xb]", "_"), lim("c", "!", 0)], Ok("_b!"));
    check("abc", &[lit("a", "x"), lit("a", "y")], Err(not_found(1, true)));
    check("abc", &[lit("b", "a"), lit("a", "z")], Err(not_unique(1, 2)));
    check("abc", &[lit("a", "x"), re("(b)", "$2"), lit("c", "z")], Err(missing(1, 2, 1)));
    check("abc", &[], Ok("abc"));
}

// ---------------------------------------------------------------------------
// Messages
// ---------------------------------------------------------------------------

#[test]
fn messages() {
    let cases = [
        (
            not_unique(0, 2),
            "edit #1: oldText is not unique: found 2 occurrences; add surrounding context so it \
             matches exactly one place, or set limit: 0 (all) / limit: N",
        ),
        (
            ws_not_unique(2, 3),
            "edit #3: oldText is not unique: found 3 whitespace-normalized matches; add \
             surrounding context so it matches exactly one place, or copy the file's exact \
             indentation (limit: 0 / limit: N apply only to exact matches)",
        ),
        (
            not_found(1, true),
            "edit #2: oldText not found (also tried a whitespace-normalized line match); \
             re-read the file and copy the exact text",
        ),
        (
            not_found(0, false),
            "edit #1: oldText not found; re-read the file and copy the exact text",
        ),
        (
            empty_old(0),
            "edit #1: oldText not found: oldText is empty; quote the exact text to replace \
             (use write_file to replace a whole file)",
        ),
        (re_not_found(0, "fo+"), "edit #1: pattern not found: /fo+/"),
        (
            missing(4, 2, 1),
            "edit #5: replacement references capture group 2, but the pattern has only 1 group(s)",
        ),
        (
            too_large(1),
            "edit #2: the edited text would be larger than 64 MiB; replace fewer matches \
             (limit: N) or with a shorter newText",
        ),
        (
            EditError::TooLarge { edit_index: 0, max_bytes: 1000 },
            "edit #1: the edited text would be larger than 1000 bytes; replace fewer matches \
             (limit: N) or with a shorter newText",
        ),
        (
            EditError::InvalidRegex {
                edit_index: 0,
                pattern: "(a".to_owned(),
                detail: "unclosed group".to_owned(),
            },
            "edit #1: invalid regex `(a`: unclosed group",
        ),
    ];
    for (error, message) in cases {
        assert_eq!(error.to_string(), message);
    }
}

// ---------------------------------------------------------------------------
// Size bound
// ---------------------------------------------------------------------------

/// An edit that would grow the text past `MAX_EDITED_BYTES` is refused before
/// the text is built, instead of exhausting memory and aborting the server.
/// See: the `edit` fuzz target's out-of-memory input (three empty-regex
/// edits with `` $` `` and `$'`, each squaring the text).
#[rustfmt::skip]
#[test]
fn fuzz_edit_growth_is_bounded() {
    // Every position of an empty match expands to the text before it: quadratic.
    check(&"x".repeat(20_000), &[re_all("", "$`")], Err(too_large(0)));
    // Each edit squares the text: the third would be about 200 MB.
    let square = re_all("", "$`$'");
    check("abcdefghij", &[square.clone(), square.clone(), square], Err(too_large(2)));
    // Literal replacements: 1,000 matches of 100 KB each.
    check(&"a".repeat(1_000), &[lim("a", &"b".repeat(100_000), 0)], Err(too_large(0)));
    check(&"a".repeat(1_000), &[ci_lim("A", &"b".repeat(100_000), 0)], Err(too_large(0)));
    // The whitespace fallback re-indents each line of newText by the block's indent.
    let deep = format!("{}target\n", " ".repeat(1_000_000));
    check(&deep, &[lit("target  ", &"x\n".repeat(100))], Err(too_large(0)));
    // Growth below the bound is not refused: 1,001 empty matches, 1,000 bytes each.
    let grown = "x".repeat(1_001 * 1_000 + 1_000);
    check(&"x".repeat(1_000), &[re_lim("", &"x".repeat(1_000), 0)], Ok(&grown));
}

/// The bound is exact for literal and regex replacements: a result of
/// `max_bytes` is kept, one byte more is refused.
#[rustfmt::skip]
#[test]
fn size_bound_is_exact() {
    let within = |content: &str, edit: Edit, max_bytes| {
        apply_edits_within(content, &[edit], max_bytes).map_err(|e| e.to_string())
    };
    assert_eq!(within("ab", lim("a", "xyz", 0), 4), Ok("xyzb".to_owned()));
    assert_eq!(within("ab", lim("a", "xyz", 0), 3), Err("edit #1: the edited text would be larger than 3 bytes; replace fewer matches (limit: N) or with a shorter newText".to_owned()));
    assert_eq!(within("ab", re_all("", "-"), 5), Ok("-a-b-".to_owned()));
    assert!(within("ab", re_all("", "-"), 4).is_err());
    assert_eq!(within("ab", re_all("b", "$`$&$'"), 4), Ok("aab".to_owned()));
    assert!(within("ab", re_all("b", "$`$&$'"), 2).is_err());
    // A BOM is not counted: it was there before the edit.
    assert_eq!(within("\u{feff}ab", lim("a", "x", 0), 2), Ok("\u{feff}xb".to_owned()));
}

// ---------------------------------------------------------------------------
// Internals
// ---------------------------------------------------------------------------

#[test]
fn indentation_helpers() {
    assert_eq!(common_indent(["    a", "  b", "", "      c"]), "  ");
    assert_eq!(common_indent(["\t\ta", "\t b"]), "\t");
    assert_eq!(common_indent(["   ", ""]), "");
    assert_eq!(relative("    a  \r", "  "), "  a");
    assert_eq!(reindent("  a\n    b\n", "\t"), "\ta\n\t  b\n");
    assert_eq!(reindent("", "\t"), "");
}

// ---------------------------------------------------------------------------
// Scale
// ---------------------------------------------------------------------------

/// 1,000 literal edits on ~2 MB, then one `limit: 0` regex over the result.
/// Checks results only; a quadratic implementation shows up as a slow test.
#[test]
fn many_edits_on_large_content() {
    let lines = 90_000;
    let content: String = (0..lines).map(|i| format!("line {i:06} value {i}\n")).collect();
    assert!(content.len() > 2_000_000);

    let mut edits: Vec<Edit> = (0..lines)
        .step_by(90)
        .map(|i| lit(&format!("line {i:06} value {i}\n"), &format!("LINE {i}\n")))
        .collect();
    assert_eq!(edits.len(), 1_000);
    edits.push(re_all(r"value (\d+)$", "v=$1"));

    let Ok(out) = apply_edits(&content, &edits) else {
        panic!("edits failed");
    };
    assert_eq!(out.matches("LINE ").count(), 1_000);
    assert_eq!(out.matches(" v=").count(), lines - 1_000);
    assert!(out.starts_with("LINE 0\nline 000001 v=1\n"));
    assert!(out.ends_with("line 089999 v=89999\n"));
}

/// The fallback on a large file with many near-miss lines stays linear-ish.
#[rustfmt::skip]
#[test]
fn whitespace_fallback_on_large_content() {
    let prefix: String = (0..50_000).map(|i| format!("    call({i});\n")).collect();
    let content = format!("{prefix}    target();\n    done();\n");
    check(&content, &[lit("target();\ndone();\n", "x();\n")], Ok(&format!("{prefix}    x();\n")));
}
