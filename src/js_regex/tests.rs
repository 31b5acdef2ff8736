//! Translation tables, panic checks, and differential tests against node on the same patterns.

use std::process::Command;

use super::fast::{only_lf, FastRegex};
use super::*;

#[track_caller]
fn check(pattern: &str, expect: &str) {
    match translate(pattern) {
        Ok(got) => assert_eq!(got, expect, "translating {pattern:?}"),
        Err(err) => panic!("translating {pattern:?}: {err}"),
    }
}

#[track_caller]
fn check_error(pattern: &str, detail: &str) {
    match translate(pattern) {
        Ok(got) => panic!("translating {pattern:?}: expected an error, got {got:?}"),
        Err(err) => assert!(
            err.detail.contains(detail),
            "translating {pattern:?}: expected {detail:?} in {err}"
        ),
    }
}

const S: &str =
    r"\t\n\v\f\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}";

#[test]
fn translates_anchors_dot_and_boundaries() {
    check("^a$", &format!("{LINE_START}a{LINE_END}"));
    check(".", DOT);
    check(r"\b", WORD_BOUNDARY);
    check(r"\B", NOT_WORD_BOUNDARY);
    check("", "");
}

#[test]
fn translates_class_escapes() {
    check(r"\d\D", "[0-9][^0-9]");
    check(r"\w\W", "[0-9A-Z_a-z][^0-9A-Z_a-z]");
    check(r"\s", &format!("[{S}]"));
    check(r"\S", &format!("[^{S}]"));
    check(r"[\d_]", "[0-9_]");
    check(r"[^\s]", &format!("[^{S}]"));
    check(r"[\D]", "[[^0-9]]");
    check(r"[\w-]", r"[0-9A-Z_a-z\-]");
    check(r"[\d-z]", r"[0-9\-z]");
    check(r"[a-\d]", r"[a\-0-9]");
}

#[test]
fn translates_character_escapes() {
    check(r"a\/b", "a/b");
    check(r"\x41\u0042", "AB");
    check(r"\x4", "x4");
    check(r"\u{41}", "u{41}");
    check(r"\uD83D\uDE00", "😀");
    check(r"\uD83D", NO_CHAR);
    check(r"\uD83Dx", &format!("{NO_CHAR}x"));
    check(r"\cJ\cm", r"\x{A}\x{D}");
    check(r"\c1", r"\\c1");
    check(r"\c", r"\\c");
    check(r"\0", r"\x{0}");
    check(r"\08", r"\x{0}8");
    check(r"\101\400", "A 0");
    check(r"\8\9", "89");
    check(r"\t\n\r\v\f", r"\x{9}\x{A}\x{D}\x{B}\x{C}");
    check(r"\-\:\'\%\@", r"\-:'%@");
    check(r"\a\e\z\p\K\<", "aezpK<");
    check(r"\.\*\\\$", r"\.\*\\\$");
    check(r"\k<a>", "k<a>");
    check("a\u{2028}b", r"a\x{2028}b");
}

#[test]
fn translates_groups_and_backreferences() {
    check("(?<year>a)", "(?P<year>a)");
    check("(?<$x>a)", "(a)");
    check("(?:a)(?=b)(?!c)", "(?:a)(?=b)(?!c)");
    check("(?<=a)(?<!b)", "(?<=a)(?<!b)");
    check("(?<=^|,)", &format!("(?<={LINE_START}|,)"));
    check("(?<!a|bc)", "(?<!a|bc)");
    check(r"(a)\1", r"(a)(?(<1>)\k<1>)");
    check(r"(?<q>a)\k<q>\1", r"(?P<q>a)(?(<1>)\k<1>)(?(<1>)\k<1>)");
    check(r"\1(a)", "(?:)(a)");
    check(r"(a\1)", "(a(?:))");
    check(r"(a)\2", r"(a)\x{2}");
    check(r"(a)\12", r"(a)\x{A}");
    check(r"(a)\18", r"(a)\x{1}8");
}

#[test]
fn translates_quantifiers() {
    check("a*b+c?", "a*b+c?");
    check("a*?b+?c??", "a*?b+?c??");
    check("a{2}b{2,}c{2,3}d{2,3}?", "a{2}b{2,}c{2,3}d{2,3}?");
    check("a{", r"a\{");
    check("{foo}", r"\{foo\}");
    check("a{1,2", r"a\{1,2");
    check("x{,3}", r"x\{,3\}");
    check("a{0,99999999999}", "a*");
    check("(?=a)*", "(?:|(?=a))");
    check("(?=a)+", "(?=a)");
    check("(?:)*", "(?:|(?:))");
    check("(^)?", &format!("(?:|({LINE_START}))"));
    check("😀+", "😀");
    check("😀*?", "😀");
    check("😀{0}", NO_CHAR);
    // A group that can match the empty string among other things repeats on the VM (JS refuses
    // an empty optional iteration); an exact count has no optional iteration.
    check("(|a)*", "(?:(?=)(|a))*");
    check("(?:a??)+?", "(?:(?=)(?:a??))+?");
    check("(?:a*)+?", "(?:a*)+?");
    check("(b*)*x", "(b*)*x");
    check("(|a)?", "(|a)?");
    check("(|a){2}", "(|a){2}");
    check("(a)*", "(a)*");
}

#[test]
fn translates_classes() {
    check("[]", NO_CHAR);
    check("[^]", ANY_CHAR);
    check("[a[]", r"[a\[]");
    check("[&&a]", r"[\&\&a]");
    check("[a~~b]", r"[a\~\~b]");
    check("[*--]", r"[\*-\-]");
    check(r"[\]]", r"[\]]");
    check("[^a-c]", "[^a-c]");
    check("[-a]", r"[\-a]");
    check(r"[\b]", r"[\x{8}]");
    check(r"[\c1\c_\c*]", r"[\x{11}\x{1F}\\c\*]");
    check(r"[\1\8]", r"[\x{1}8]");
    check(r"[\uD83D\uDE00]", "[😀]");
    check(r"[\uD800]", NO_CHAR);
    check(r"[^\uD800]", ANY_CHAR);
    check(r"[\u0000-\uFFFF]", "[\\x{0}-\u{D7FF}\u{E000}-\u{FFFF}]");
    check("]}", r"\]\}");
}

#[test]
fn rejects_invalid_patterns() {
    check_error("(", "unterminated group");
    check_error("a)", "unmatched `)`");
    check_error("*a", "nothing to repeat");
    check_error("a**", "nothing to repeat");
    check_error("a+??", "nothing to repeat");
    check_error("{1}", "nothing to repeat");
    check_error("x{1}{2}", "nothing to repeat");
    check_error("^*", "nothing to repeat");
    check_error(r"\b+", "nothing to repeat");
    check_error("(?<=a)*", "invalid quantifier");
    check_error("a{2,1}", "out of order");
    check_error("[z-a]", "out of order");
    check_error("[a", "unterminated character class");
    check_error("\\", "\\ at end of pattern");
    check_error("(?i:x)", "invalid group");
    check_error("(?<1>x)", "invalid capture group name");
    check_error("(?<a", "invalid capture group name");
    check_error("(?<a>x)(?<a>y)", "duplicate capture group name");
    check_error(r"(?<a>x)\k", "invalid named reference");
    check_error(r"(?<a>x)\k<b>", "invalid named capture referenced");
    check_error(r"(?<a>x)[\k]", "invalid escape");
    check_error(r"(a)(?<=\1)", "inside lookbehind");
}

/// Patterns that have tripped up regex translators: truncated escapes, groups and classes, huge
/// counts, names, astral characters, nested lookarounds.
#[rustfmt::skip]
const TRICKY: &[&str] = &[
    "(", ")", "[", "]", "\\", "(?", "(?<", "(?<=", "(?<!", "(?<>", "(?<a>", "(?P<a>x)", "(?:",
    "(?=", "|", "||", "*", "+?", "{", "}", "{1,", "[]]", "[^]]", "a{2,1}", "a{4294967296}",
    "a{99999999999999999999}", "\\u", "\\u12", "\\uD800\\u", "\\x", "\\x1", "\\k", "\\k<",
    "\\k<a", "(?<a>x)\\k<a", "(?<a>x)(?<a>y)", "\\k<é>", "(?<é>x)", "[\\", "[a-", "[a-\\", "[\\c",
    "\\c", "\\0", "\\00000", "\\99999999999999999999999", "((((((((((a))))))))))", "😀",
    "[😀-😂]", "😀{0}", "(?<=(?<=a)b)c", "(?<=a+)b", "(?<!\\b)", "((?=a)*)*", "\u{0}",
];

#[test]
fn never_panics() {
    for pattern in TRICKY {
        for case_insensitive in [false, true] {
            let _ = JsRegex::new(pattern, case_insensitive);
        }
    }
    let deep = "(".repeat(10_000) + &")".repeat(10_000);
    assert!(JsRegex::new(&deep, false).is_err());
}

#[test]
fn api() {
    let re = JsRegex::new(r"(?<year>\d{4})-(?<$m>\d\d)(x)?", false).unwrap();
    assert_eq!(re.group_count(), 3);
    assert_eq!(re.group_index("year"), Some(1));
    assert_eq!(re.group_index("$m"), Some(2));
    assert_eq!(re.group_index("nope"), None);
    let caps = re.regex().captures("on 2024-05").unwrap().unwrap();
    assert_eq!(caps.name("year").map(|m| m.as_str()), Some("2024"));
    assert_eq!(caps.get(2).map(|m| m.as_str()), Some("05"));

    let err = JsRegex::new("a(", false).unwrap_err();
    assert_eq!(err.pattern, "a(");
    assert_eq!(err.to_string(), "invalid regex `a(`: unterminated group at offset 1");
    assert!(JsRegex::new("ABC", true).unwrap().regex().is_match("xabcx").unwrap());
}

// ---- differential test against node ----

/// (pattern, flags besides `gm`, subject). Every row must give exactly node's matches.
const ROWS: &[(&str, &str, &str)] = &[
    // Line anchors on LF, CRLF, CR and the Unicode separators.
    ("^", "", "a\nb\r\nc\rd\u{2028}e\u{2029}f"),
    ("$", "", "a\nb\r\nc\rd\u{2028}e\u{2029}f"),
    ("^$", "", "a\r\n\r\nb\n\nc"),
    (r"^\s*$", "", "x\r\n  \r\n\ny"),
    ("^foo$", "", "foo\r\nfoo\nbar foo\rfoo"),
    ("o$", "", "foo\r\nfoo"),
    ("^.*$", "", "one\r\ntwo\nthree"),
    ("^", "", ""),
    ("a$|^b", "", "a\u{2028}b a\u{2029}b"),
    // Dot.
    (".+", "", "ab\r\ncd\u{2028}ef\u{85}g"),
    ("a.c", "", "abc a\nc a\u{2029}c aéc"),
    // Class escapes are ASCII (except \s, which is JS's own list).
    (r"\d+", "", "a1\u{663}23b"),
    (r"\w+", "", "héllo wörld_1"),
    (r"\W+", "", "héllo wörld"),
    (r"\s+", "", "a\u{a0}b\u{85}c\u{feff}d\u{3000}e\tf\u{b}g"),
    (r"\S+", "", "a\u{a0}b\u{85}c\u{feff}d\u{3000}e\tf\u{b}g"),
    (r"\D\W\S", "", "a b!! 1_x"),
    (r"[\d_]+", "", "a_1_2b"),
    (r"[^\s]+", "", "ab cd\u{a0}ef"),
    (r"[\w-]+", "", "foo-bar baz"),
    (r"[\d-z]+", "", "1-z a"),
    (r"[^\D]", "", "a1b2"),
    (r"[\S\s]", "", "a\nb"),
    // Word boundaries are ASCII.
    (r"\bcaf\b", "", "café caf cafe"),
    (r"\B", "", "ab é-c"),
    (r"\bé", "", "aé é"),
    (r"\b\w+\b", "", "naïve café über"),
    // Character escapes.
    (r"a\/b", "", "a/b"),
    (r"\x41\u0042", "", "AB ab"),
    (r"\uD83D\uDE00", "", "x😀y"),
    (r"\cJ\cm", "", "a\n\rb"),
    (r"\0", "", "a\0b"),
    (r"\t\n\r\v\f", "", "\t\n\r\u{b}\u{c}"),
    (r#"\-\:\'\"\%\@"#, "", r#"-:'"%@"#),
    (r"[\b]", "", "a\u{8}b"),
    (r"\a\e\z\p\K", "", "aezpK"),
    (r"\x4", "", "x4"),
    (r"\u{3}", "", "uuuu"),
    (r"\c", "", r"\c"),
    (r"\c1", "", r"\c1"),
    (r"[\c1]", "", "\u{11}1"),
    (r"[\c]", "", r"a\c"),
    (r"\101\08\400", "", "A\u{0}8 0"),
    (r"\8\9", "", "89"),
    // Groups and backreferences.
    (r"(?<year>\d{4})-(?<month>\d\d)", "", "2024-05 1999-12"),
    ("(?:ab)+", "", "ababab"),
    ("foo(?=bar)", "", "foobar foobaz"),
    ("foo(?!bar)", "", "foobar foobaz"),
    (r"(?<=\$)\d+", "", "$12 34 $5"),
    (r"(?<!\$)\b\d+", "", "$12 34 $5"),
    (r"(?<=^|,)\w+", "", "a,b\nc"),
    (r"(?<!^|,)\w", "", "ab,cd\nef"),
    ("(?<!a|bc)d", "", "ad bcd cd"),
    (r"(\w)\1", "", "aabbcd"),
    (r#"(?<q>['"]).*?\k<q>"#, "", r#"'a' "b" 'c""#),
    (r"(a)?b\1", "", "b ab aba"),
    (r"\1(a)", "", "aa"),
    (r"(a\1)b", "", "aab"),
    (r"(a\1)+", "", "aaa"),
    (r"\k<a>(?<a>.)", "", "xx"),
    (r"(a)\2", "", "a\u{2}"),
    (r"(a)\12", "", "a\n"),
    (r"\k<a>", "", "k<a>"),
    (r"(?<a>.)\1\k<a>", "", "xxx"),
    ("(a)|(b)", "", "ab"),
    ("a|b|", "", "abc"),
    // Quantifiers.
    ("a{2}", "", "aaaaa"),
    ("a{2,}", "", "a aa aaa"),
    ("a{1,2}?", "", "aaa"),
    ("a{", "", "a{"),
    ("{foo}", "", "{foo}"),
    ("a{1,2", "", "a{1,2"),
    ("x{,3}", "", "x{,3}"),
    ("a+?b", "", "aaab"),
    ("a*", "", "baac"),
    ("a*?", "", "aa"),
    ("(?=a)*a", "", "a"),
    ("(?=(a))?", "", "a"),
    ("(?:)*", "", "ab"),
    ("(^)*", "", "b"),
    ("(a|)+", "", "b"),
    // Classes.
    ("[]", "", "abc"),
    ("[^]", "", "a\nb"),
    ("[a[]+", "", "a[b"),
    ("[&&a]+", "", "a&b"),
    ("[~~]+", "", "a~~b"),
    ("[*--]+", "", "*+,-."),
    (r"[\]]", "", "a]b"),
    ("[^a-c]+", "", "abcdef"),
    ("[-a]+|[b-]+", "", "a-b"),
    ("]}", "", "]}"),
    (r"[\u0000-\uFFFF]+", "", "aé\u{ffff}"),
    // Non-BMP characters: a quantifier after one applies to its low surrogate in JS.
    ("😀+", "", "😀😀"),
    ("a😀?", "", "a😀 a"),
    (r"\uD83D\uDE00*b", "", "😀b b"),
    // A repeated group that can match the empty string: JS refuses an empty optional iteration
    // and backtracks into the group (found by fuzzing).
    ("(|a)*", "", "a aa b"),
    ("(?:|a)+b", "", "aab b"),
    ("(a??)*", "", "aa"),
    ("(a*?){2,}", "", "aaa"),
    (r"((((|a))|||||||\|k|$)|b)*", "", "a"),
    ("(|a)*?b", "", "aab"),
    (r"(\s*)*x", "", "   x  "),
    ("(a*b*)+c", "", "aabbc abc"),
    // Case-insensitive.
    ("abc", "i", "ABC aBc"),
    ("[a-z]+", "i", "Hello WORLD"),
    ("é", "i", "É é"),
    ("σ", "i", "ςΣσ"),
    (r"\w+", "i", "FooBar"),
    // `\b` and `\B` stay ASCII under `i`: LONG S and KELVIN SIGN are not word characters.
    (r"\b", "i", "\u{17F}?"),
    (r"\b", "i", "a\u{17F} \u{212A}k"),
    (r"\B", "i", "\u{17F}s\u{212A}"),
    ("^foo", "i", "FOO\r\nfoo"),
    ("[^a]", "i", "aAb"),
    // Errors (both sides must reject the pattern).
    ("(", "", ""),
    ("a)", "", ""),
    ("*a", "", ""),
    ("a**", "", ""),
    ("{1}", "", ""),
    ("(?<1>x)", "", ""),
    ("a{2,1}", "", ""),
    ("(?i:x)", "", ""),
    ("(?<a>x)(?<a>y)", "", ""),
    ("[z-a]", "", ""),
    ("\\", "", ""),
    (r"(?<a>x)\k<b>", "", ""),
    ("^*", "", ""),
    ("(?<=a)*", "", ""),
];

/// (pattern, flags, subject, why): rows where we knowingly differ from node. The test checks that
/// they still differ, so this list stays true.
#[rustfmt::skip]
const DIVERGENT_ROWS: &[(&str, &str, &str, &str)] = &[
    (".", "", "😀", "a non-BMP character is one char here, two UTF-16 units in JS"),
    ("x*", "", "😀x", "an empty match never lands inside a surrogate pair here"),
    (r"[\uD83D\uDE00]", "", "😀", "a surrogate-pair escape in a class is one character here"),
    ("k", "i", "\u{212A}", "simple case folding pairs k with U+212A KELVIN SIGN"),
    ("s", "i", "\u{17F}", "simple case folding pairs s with U+017F LONG S"),
    (r"(a)\1", "i", "aA", "fancy-regex backreferences ignore the i flag"),
    ("(?<=a+)b", "", "aab", "fancy-regex needs a fixed-length lookbehind"),
    ("(?:(a)|b)+", "", "ab", "JS resets the captures of a group at each iteration"),
    ("(|a)?", "", "ab", "a bounded repeat of a group that can match the empty string takes the empty branch"),
    ("(|a){0,2}", "", "aab", "a bounded repeat of a group that can match the empty string takes the empty branch"),
];

/// (start byte, end byte, capture groups) of each match, or an error message.
type Outcome = std::result::Result<Vec<(usize, usize, Vec<Option<String>>)>, String>;

/// All matches the way JS `matchAll` with the `g` flag finds them: each search starts where the
/// previous match ended, and after an empty match one character further.
fn match_all(pattern: &str, flags: &str, text: &str) -> Outcome {
    let re = JsRegex::new(pattern, flags.contains('i')).map_err(|err| err.to_string())?;
    let mut matches = Vec::new();
    let mut pos = 0;
    while pos <= text.len() {
        let Some(caps) = re.regex().captures_from_pos(text, pos).map_err(|err| err.to_string())?
        else {
            break;
        };
        let Some(whole) = caps.get(0) else { break };
        let groups =
            (1..=re.group_count()).map(|i| caps.get(i).map(|m| m.as_str().to_string())).collect();
        matches.push((whole.start(), whole.end(), groups));
        pos = whole.end();
        if whole.start() == whole.end() {
            pos += text[pos..].chars().next().map_or(1, char::len_utf8);
        }
    }
    Ok(matches)
}

/// Reads `[[pattern, flags, subject], …]` from the file named by its argument and prints node's
/// outcome for each, as `{"error": message}` or `{"matches": [[start, end, [groups]], …]}` with
/// UTF-8 byte offsets.
const NODE_SCRIPT: &str = r#"
const rows = JSON.parse(require('fs').readFileSync(process.argv[1], 'utf8'));
const bytes = (text, index) => Buffer.byteLength(text.slice(0, index), 'utf8');
const out = rows.map(([pattern, flags, text]) => {
  let re;
  try { re = new RegExp(pattern, 'gm' + flags); } catch (e) { return { error: String(e.message) }; }
  return { matches: [...text.matchAll(re)].map(m => [
    bytes(text, m.index),
    bytes(text, m.index + m[0].length),
    m.slice(1).map(g => g === undefined ? null : g.toWellFormed()),
  ]) };
});
process.stdout.write(JSON.stringify(out));
"#;

fn node_outcomes(rows: &[(&str, &str, &str)]) -> Vec<Outcome> {
    // One file per call: the differential and fuzz tests may run at once in one process.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = format!("js_regex_rows_{}_{call}.json", std::process::id());
    let path = std::env::temp_dir().join(name);
    std::fs::write(&path, serde_json::to_string(rows).unwrap()).unwrap();
    let output = node().arg("-e").arg(NODE_SCRIPT).arg(&path).output().unwrap();
    let _ = std::fs::remove_file(&path);
    assert!(output.status.success(), "node failed: {}", String::from_utf8_lossy(&output.stderr));
    let results: Vec<serde_json::Value> = serde_json::from_slice(&output.stdout).unwrap();
    results.iter().map(outcome_from_json).collect()
}

fn outcome_from_json(value: &serde_json::Value) -> Outcome {
    if let Some(error) = value.get("error") {
        return Err(error.to_string());
    }
    let matches = value["matches"].as_array().expect("matches array");
    Ok(matches
        .iter()
        .map(|m| {
            let offset = |i: usize| m[i].as_u64().expect("offset") as usize;
            let groups = m[2]
                .as_array()
                .expect("groups array")
                .iter()
                .map(|g| g.as_str().map(str::to_string))
                .collect();
            (offset(0), offset(1), groups)
        })
        .collect())
}

/// Equal matches, or both errors (messages differ between engines).
fn same(a: &Outcome, b: &Outcome) -> bool {
    match (a, b) {
        (Ok(a), Ok(b)) => a == b,
        (Err(_), Err(_)) => true,
        _ => false,
    }
}

#[expect(clippy::disallowed_methods, reason = "the reference implementation is node itself")]
fn node() -> Command {
    Command::new("node")
}

fn node_available() -> bool {
    node().arg("--version").output().is_ok()
}

#[test]
#[allow(clippy::print_stderr, reason = "reports the known divergences")]
fn differential_against_node() {
    if !crate::capability::require(
        "node (to run the same patterns in JavaScript)",
        node_available(),
    ) {
        return;
    }
    let divergent = DIVERGENT_ROWS.iter().map(|&(p, f, t, _)| (p, f, t));
    let rows: Vec<(&str, &str, &str)> = ROWS.iter().copied().chain(divergent).collect();
    let node = node_outcomes(&rows);
    assert_eq!(node.len(), rows.len());

    let mut failures = Vec::new();
    for (i, (&(pattern, flags, text), node)) in rows.iter().zip(&node).enumerate() {
        let rust = match_all(pattern, flags, text);
        let why = i.checked_sub(ROWS.len()).map(|j| DIVERGENT_ROWS[j].3);
        match why {
            None if !same(&rust, node) => failures.push(format!(
                "/{pattern}/gm{flags} on {text:?}\n   rust: {rust:?}\n   node: {node:?}"
            )),
            Some(why) if same(&rust, node) => failures.push(format!(
                "/{pattern}/gm{flags} on {text:?} now agrees with node ({rust:?}); \
                 drop it from DIVERGENT_ROWS ({why})"
            )),
            Some(why) => eprintln!(
                "known divergence, {why}: /{pattern}/gm{flags} on {text:?}\n   rust: {rust:?}\n   node: {node:?}"
            ),
            None => {}
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} rows differ from node:\n{}",
        failures.len(),
        rows.len(),
        failures.join("\n")
    );
}

/// Pieces of random patterns: JS syntax that fancy-regex reads differently, in every context.
#[rustfmt::skip]
const PATTERN_PIECES: &[&str] = &[
    "a", "b", "é", "A", "_", " ", "u", "c", "\n", "\r", "😀", ".", "^", "$", "|", "*", "+", "?",
    "*?", "{2}", "{1,", "{", "}", "]", "-", "&&", "--", "\\", "[", "[^", "[]", "[^]", "(", ")",
    "(?:", "(?=", "(?!", "(?<=", "(?<!", "(?<n>", "(?<m>a)", "(a)", "(b)?", "(a|b)", "(?:a|)",
    "(|a)", "(?:|b)", "(a??)",
    "(?=a)", "a*", "b+", "a{1,2}", "[ab]", "[^a]", "[a-z]", r"[\w-]", r"[\s\S]", r"[\b]",
    r"[\d-z]", r"[a-\d]", r"[\c1]", r"[\1]", r"[\]a]", r"\b", r"\B", r"\d", r"\D", r"\w", r"\W",
    r"\s", r"\S", r"\1", r"\2", r"\8", r"\12", r"\400", r"\0", r"\k<n>", r"\k<m>", r"\x41", r"\x4",
    r"\u00e9", r"\u{2}", r"\uD83D\uDE00", r"\c", r"\c1", r"\cA", r"\-", r"\]", r"\[", r"\/", r"\{",
];

/// Pieces of random subjects.
#[rustfmt::skip]
const SUBJECT_PIECES: &[&str] = &[
    "a", "b", "é", "A", "z", "_", "1", "8", "-", "[", "]", "&", "/", "\\", "c", "u", "{", "}",
    " ", " 0", "\n", "\r", "\r\n", "\u{2028}", "\u{a0}", "\0", "\u{1}", "\u{8}", "\u{11}",
];

/// Deterministic random (pattern, flags, subject) rows, without a dependency (xorshift64).
fn random_rows(mut seed: u64, count: usize) -> Vec<(String, &'static str, String)> {
    let mut below = |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    (0..count)
        .map(|i| {
            let pattern =
                (0..1 + below(7)).map(|_| PATTERN_PIECES[below(PATTERN_PIECES.len())]).collect();
            let text =
                (0..below(24)).map(|_| SUBJECT_PIECES[below(SUBJECT_PIECES.len())]).collect();
            (pattern, if i % 4 == 0 { "i" } else { "" }, text)
        })
        .collect()
}

#[test]
fn random_patterns_never_panic() {
    for (pattern, flags, text) in random_rows(1, 3_000) {
        let _ = match_all(&pattern, flags, &text);
    }
}

/// Random rows against node: 2,000 in every test run, more for hunting bugs by hand:
/// `REPLAY_REGEX_FUZZ_ROWS=200000 SEED=7 cargo test fuzz_against_node -- --nocapture`. Skips
/// the documented divergences that random patterns hit (lookbehind limits, case-insensitive
/// backreferences).
#[test]
#[allow(clippy::print_stderr, reason = "lists every differing row")]
fn fuzz_against_node() {
    if !crate::capability::require(
        "node (to run the same patterns in JavaScript)",
        node_available(),
    ) {
        return;
    }
    let seed = std::env::var("SEED").ok().and_then(|s| s.parse().ok());
    let n_rows =
        std::env::var("REPLAY_REGEX_FUZZ_ROWS").ok().and_then(|s| s.parse().ok()).unwrap_or(2_000);
    let cases = random_rows(seed.unwrap_or(1), n_rows);
    let rows: Vec<(&str, &str, &str)> =
        cases.iter().map(|(p, f, t)| (p.as_str(), *f, t.as_str())).collect();
    let node = node_outcomes(&rows);
    let mut failures = 0;
    for (&(pattern, flags, text), node) in rows.iter().zip(&node) {
        let rust = match_all(pattern, flags, text);
        let lookbehind = rust
            .as_ref()
            .is_err_and(|e| e.contains("Look-behind") || e.contains("inside lookbehind"));
        let caseless_backref = flags == "i" && (pattern.contains(r"\k") || pattern.contains(r"\1"));
        if !same(&rust, node) && !lookbehind && !caseless_backref {
            failures += 1;
            eprintln!("/{pattern}/gm{flags} on {text:?}\n   rust: {rust:?}\n   node: {node:?}");
        }
    }
    assert_eq!(failures, 0, "{failures} of {} rows differ", rows.len());
}

/// The lines (0-based) that matches touch, the way grep_files reports them.
fn touched_lines(text: &str, spans: impl Iterator<Item = (usize, usize)>) -> Vec<usize> {
    let line_of = |at: usize| text.as_bytes()[..at].iter().filter(|&&b| b == b'\n').count();
    let mut lines: Vec<usize> = Vec::new();
    for (start, end) in spans {
        if start == text.len() && start > 0 && text.ends_with('\n') {
            break;
        }
        let last = if end > start { end - 1 } else { start };
        lines.extend(line_of(start)..=line_of(last));
    }
    lines.sort_unstable();
    lines.dedup();
    lines
}

/// Wherever `FastRegex` applies, it finds the same lines as the exact engine: over the table
/// rows and 1,500 random patterns, on texts whose only line terminator is `\n`.
#[test]
fn fast_twin_finds_the_lines_the_exact_engine_finds() {
    let mut rows: Vec<(String, bool, String)> =
        ROWS.iter().map(|&(p, f, t)| (p.to_string(), f.contains('i'), t.to_string())).collect();
    let mut seed: u64 = 11;
    let mut next = |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    const TOKENS: &[&str] = &[
        "a", "b", "é", ".", "^", "$", r"\b", r"\B", r"\d", r"\w", r"\s", "[ab]", "[^a]", "(a|b)",
        "a*", "b+", "?", "(?:a|)", "x", "\n", "[\\s\\S]", "(a)", "A", "_", " ",
    ];
    // `\r` and U+2028 too: a pattern without `^`/`$` must agree on any text.
    // LONG S and KELVIN SIGN fold to ASCII letters: a case-insensitive `\b` must not take them
    // as word characters in one engine and not the other (a fuzz find).
    const SUBJECT: &[&str] = &[
        "a", "b", "é", "\n", " ", "A", "_", "1", "x", "ab\n", "\u{a0}", "\r", "\u{2028}",
        "\u{17F}", "\u{212A}",
    ];
    for i in 0..1_500 {
        let pattern: String = (0..1 + next(6)).map(|_| TOKENS[next(TOKENS.len())]).collect();
        let text: String = (0..next(30)).map(|_| SUBJECT[next(SUBJECT.len())]).collect();
        rows.push((pattern, i % 4 == 0, text));
    }
    let mut compared = 0;
    for (pattern, case_insensitive, text) in &rows {
        let (Ok(exact), Some(fast)) =
            (JsRegex::new(pattern, *case_insensitive), FastRegex::new(pattern, *case_insensitive))
        else {
            continue;
        };
        if !fast.applies_to(text.as_bytes()) {
            continue;
        }
        let exact_spans: Vec<(usize, usize)> = exact
            .regex()
            .find_iter(text)
            .map_while(Result::ok)
            .map(|m| (m.start(), m.end()))
            .collect();
        let fast_spans = fast.regex().find_iter(text.as_bytes()).map(|m| (m.start(), m.end()));
        assert_eq!(
            touched_lines(text, fast_spans),
            touched_lines(text, exact_spans.into_iter()),
            "pattern {pattern:?} (i: {case_insensitive}) on {text:?}"
        );
        compared += 1;
    }
    assert!(compared > 800, "only {compared} rows compared");
}

#[track_caller]
fn check_applies(text: &str, expect: bool) {
    assert_eq!(only_lf(text.as_bytes()), expect, "{text:?}");
}

#[test]
fn fast_twin_applies_only_to_lf_text() {
    check_applies("a\nb\n", true);
    check_applies("", true);
    check_applies("é – ü\n", true);
    check_applies("a\r\nb", false);
    check_applies("a\rb", false);
    check_applies("a\u{2028}b", false);
    check_applies("a\u{2029}b", false);
}
