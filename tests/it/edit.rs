//! `edit_file` and `edit_files`: every matching mode as one-line `check` rows, all-or-nothing failures, dryRun, file-format preservation, globs and the policy.
//!
//! `check_edit` runs each row three ways: as a dryRun (a diff, nothing written, mtime kept), for
//! real (the reply and the bytes on disk), and through `edit_files` (the same bytes), so the
//! tools cannot drift apart. `check_edit_fails` asserts the error for both the dryRun and the
//! real call, the unchanged bytes and mtime, no leftover temp file, and the inline form that
//! `edit_files` reports for the same failure.

use std::fs;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use crate::harness::{path_str, replay_command, Server, TestEnv};

/// The file every `check_*` row edits.
const FILE: &str = "root/f.txt";

/// A modification time far in the past, so any write would visibly change it.
fn old_mtime() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_000_000_000)
}

fn set_mtime(env: &TestEnv, rel: &str, time: SystemTime) {
    let file = fs::File::options().write(true).open(env.path(rel)).expect("open for set_modified");
    file.set_modified(time).expect("set_modified");
}

fn mtime(env: &TestEnv, rel: &str) -> SystemTime {
    fs::metadata(env.path(rel)).and_then(|m| m.modified()).expect("mtime")
}

/// `replay --mcp-server --allow <root>:ro`.
fn start_read_only(env: &TestEnv) -> Server {
    let allow = format!("{}:ro", path_str(&env.root()));
    Server::start_with(["--mcp-server", "--allow", &allow])
}

/// `edits` on a file holding `initial` give `expect`: as a dryRun (a diff, or `(no changes)`
/// when `expect == initial`, with nothing written), as a real edit, and through `edit_files`.
#[track_caller]
fn check_edit(initial: &str, edits: Value, expect: &str) {
    let env = TestEnv::new(&[], &[(FILE, initial)]);
    set_mtime(&env, FILE, old_mtime());
    let mut server = Server::start(&env);
    let path = env.p(FILE);

    let preview =
        server.call_text("edit_file", json!({"path": path, "edits": edits, "dryRun": true}));
    if expect == initial {
        assert_eq!(preview, "(no changes)");
    } else {
        let header = format!("--- {path}\n+++ {path}\n@@ ");
        assert!(
            preview.starts_with(&header),
            "dryRun did not return a diff of {path}: {preview:?}"
        );
    }
    assert_eq!(env.read_string(FILE), initial, "dryRun wrote the file");
    assert_eq!(mtime(&env, FILE), old_mtime(), "dryRun touched the file");

    assert_eq!(
        server.call_text("edit_file", json!({"path": path, "edits": edits})),
        format!("Successfully edited {path}")
    );
    assert_eq!(env.read_string(FILE), expect);
    assert_eq!(env.names("root"), ["f.txt"], "temp files left behind");

    env.write(FILE, initial);
    let texts = server.call("edit_files", json!({"paths": [path], "edits": edits})).texts();
    assert_eq!(texts, [format!("Successfully edited {path}")]);
    assert_eq!(env.read_string(FILE), expect, "edit_files disagrees with edit_file");
}

/// `edits` on a file holding `initial` fail with `code` and a message starting with `prefix`,
/// both as a dryRun and for real, leaving the file byte-identical, untouched and alone in its
/// directory. For -32603, `edit_files` reports the same message inline.
#[track_caller]
fn check_edit_fails(initial: &str, edits: Value, code: i64, prefix: &str) {
    let env = TestEnv::new(&[], &[(FILE, initial)]);
    set_mtime(&env, FILE, old_mtime());
    let mut server = Server::start(&env);
    let path = env.p(FILE);

    let mut message = String::new();
    for dry_run in [true, false] {
        let args = json!({"path": path, "edits": edits, "dryRun": dry_run});
        let error = server.call_err("edit_file", args, code);
        assert!(
            error.message.starts_with(prefix),
            "dryRun {dry_run}: expected a message starting with {prefix:?}, got {:?}",
            error.message
        );
        message = error.message;
    }
    assert_eq!(env.read(FILE), initial.as_bytes(), "a failed edit changed the file");
    assert_eq!(mtime(&env, FILE), old_mtime(), "a failed edit touched the file");
    assert_eq!(env.names("root"), ["f.txt"], "temp files left behind");

    if code == -32603 {
        let texts = server.call("edit_files", json!({"paths": [path], "edits": edits})).texts();
        assert_eq!(texts, [format!("{path}: [error -32603] {message}")]);
        assert_eq!(env.read(FILE), initial.as_bytes(), "a failed edit_files changed the file");
    }
}

/// `tool` with `args` is -32602, the message names `field`, and `FILE` is untouched.
#[track_caller]
fn check_invalid_params(tool: &str, args: Value, field: &str) {
    let env = TestEnv::new(&[], &[(FILE, "x\n")]);
    let mut server = Server::start(&env);
    let error = server.call_err(tool, args, -32602);
    assert!(error.message.contains(field), "message does not name {field:?}: {:?}", error.message);
    assert_eq!(env.read_string(FILE), "x\n");
}

/// A single literal edit.
fn lit(old: &str, new: &str) -> Value {
    json!([{"oldText": old, "newText": new}])
}

// ---------------------------------------------------------------------------------------------
// Standard mode: exact, unique
// ---------------------------------------------------------------------------------------------

#[test]
fn literal_exact_rows() {
    check_edit("hello world\n", lit("world", "there"), "hello there\n");
    check_edit("a\nb\nc\n", lit("a\nb\n", "x\n"), "x\nc\n");
    check_edit("keep drop keep", json!([{"oldText": " drop"}]), "keep keep");
    check_edit("keep drop keep", lit("drop ", ""), "keep keep");
    check_edit("start middle", lit("start", "S"), "S middle");
    check_edit("no newline at end", lit("end", "END"), "no newline at END");
    check_edit("whole", lit("whole", "new\ncontent\n"), "new\ncontent\n");
    check_edit("h\u{e9}llo \u{1f980}\n", lit("\u{1f980}", "crab"), "h\u{e9}llo crab\n");
    check_edit("x = a.b*c(d);", lit("a.b*c(d)", "e"), "x = e;");
    check_edit("a.c abc", lit("a.c", "_"), "_ abc");
    check_edit("v", lit("v", "$1 \\1 $& $$"), "$1 \\1 $& $$");
    check_edit("same\n", lit("same", "same"), "same\n");
    check_edit("x\n", json!([{"oldText": "x", "newText": "x", "limit": 1}]), "x\n");
    // Occurrences are counted non-overlapping, so "aa" occurs once in "aaa".
    check_edit("aaa", lit("aa", "X"), "Xa");
}

#[test]
fn literal_failure_rows() {
    check_edit_fails(
        "x\nx\n",
        lit("x", "y"),
        -32603,
        "edit #1: oldText is not unique: found 2 occurrences",
    );
    check_edit_fails(
        "ab ab ab",
        lit("ab", "y"),
        -32603,
        "edit #1: oldText is not unique: found 3 occurrences",
    );
    check_edit_fails("hello\n", lit("absent", "y"), -32603, "edit #1: oldText not found");
    check_edit_fails("hello\n", lit("Hello", "y"), -32603, "edit #1: oldText not found");
    check_edit_fails("hello\n", lit("", "y"), -32603, "edit #1: oldText not found");
}

// ---------------------------------------------------------------------------------------------
// Standard mode: whitespace-normalized fallback
// ---------------------------------------------------------------------------------------------

const INDENTED: &str = "impl A {\n        fn f() {\n            old();\n        }\n}\n";

#[test]
fn whitespace_fallback_rows() {
    // oldText without indentation: newText is re-indented to 8 spaces, relative indent kept.
    check_edit(
        INDENTED,
        lit("fn f() {\n    old();\n}", "fn f() {\n    new();\n    more();\n}"),
        "impl A {\n        fn f() {\n            new();\n            more();\n        }\n}\n",
    );
    // oldText and newText with 4 spaces.
    check_edit(
        INDENTED,
        lit("    fn f() {\n        old();\n    }", "    fn g() {\n        new();\n    }"),
        "impl A {\n        fn g() {\n            new();\n        }\n}\n",
    );
    // Tabs.
    check_edit(
        "fn f() {\n\tif a {\n\t\tb();\n\t}\n}\n",
        lit("if a {\n\tb();\n}", "if c {\n\td();\n}"),
        "fn f() {\n\tif c {\n\t\td();\n\t}\n}\n",
    );
    // Trailing whitespace is ignored on both sides.
    check_edit("    let x = 1;\n", lit("let x = 1;   ", "let x = 2;"), "    let x = 2;\n");
    check_edit("  a  \n  b\n", lit("a\nb", "c"), "  c\n");
    // Blank lines inside the block.
    check_edit(
        "    a();\n\n    b();\n",
        lit("a();\n\nb();", "x();\n\ny();"),
        "    x();\n\n    y();\n",
    );
    // An oldText ending with a newline replaces the last line's terminator too.
    check_edit("  a\n  b\n  c\n", lit("a\nb\n", "x\n"), "  x\n  c\n");
    // CRLF file, texts sent with LF.
    check_edit("  a\r\n  b\r\n", lit("a\nb", "c\nd"), "  c\r\n  d\r\n");
    check_edit("  a\r\n  b\r\n  c\r\n", lit("a\nb\n", "x\n"), "  x\r\n  c\r\n");
    // An empty newText deletes the block, as the exact match would.
    check_edit("  a\n  b\n  c\n", lit("a\nb", ""), "\n  c\n");
    // A BOM before the first line does not count as indentation.
    check_edit("\u{feff}  a\n  b\n", lit("a\nb", "c"), "\u{feff}  c\n");
}

/// The same edit through the exact path and through the fallback gives the same file.
#[test]
fn exact_and_fallback_agree() {
    let file = "fn f() {\n    x = 1;\n    y = 2;\n}\n";
    let want = "fn f() {\n    x = 3;\n}\n";
    check_edit(file, lit("    x = 1;\n    y = 2;", "    x = 3;"), want);
    check_edit(file, lit("x = 1;\ny = 2;", "x = 3;"), want);
    check_edit(file, lit("  x = 1;\n  y = 2;", "  x = 3;"), want);
}

#[test]
fn whitespace_fallback_failure_rows() {
    check_edit_fails(
        "  a\n  b\n    a\n    b\n",
        lit("a\nb", "c"),
        -32603,
        "edit #1: oldText is not unique: found 2 whitespace-normalized matches",
    );
    // Relative indentation must agree.
    check_edit_fails(
        "  a\n    b\n",
        lit("a\nb", "c"),
        -32603,
        "edit #1: oldText not found (also tried a whitespace-normalized line match)",
    );
    // No fallback with caseInsensitive, isRegex or limit != 1: the message says only
    // "not found;", without "(also tried …)".
    let block = "    a\n    b\n";
    check_edit_fails(
        block,
        json!([{"oldText": "a\nb", "newText": "c", "caseInsensitive": true}]),
        -32603,
        "edit #1: oldText not found;",
    );
    check_edit_fails(
        block,
        json!([{"oldText": "a\nb", "newText": "c", "limit": 0}]),
        -32603,
        "edit #1: oldText not found;",
    );
    check_edit_fails(
        block,
        json!([{"oldText": "a\nb", "newText": "c", "limit": 2}]),
        -32603,
        "edit #1: oldText not found;",
    );
    check_edit_fails(
        block,
        json!([{"oldText": "a\nb", "newText": "c", "isRegex": true}]),
        -32603,
        "edit #1: pattern not found: /a\nb/",
    );
}

// ---------------------------------------------------------------------------------------------
// Regex mode
// ---------------------------------------------------------------------------------------------

fn re(pattern: &str, new: &str, limit: u64) -> Value {
    json!([{"oldText": pattern, "newText": new, "isRegex": true, "limit": limit}])
}

#[test]
fn regex_lead_clarification() {
    // `^(.*)$` with newText `"\1"` and limit 0 quotes every line, the empty one included.
    check_edit(
        "a\n\nb\n",
        json!([{"oldText": "^(.*)$", "newText": "\"\\1\"", "isRegex": true, "limit": 0}]),
        "\"a\"\n\"\"\n\"b\"\n",
    );
}

#[test]
fn regex_syntax_rows() {
    check_edit("a\n\nb\n", re("^(.*)$", "\"$1\"", 1), "\"a\"\n\nb\n");
    check_edit("ab\nb\n", re("^b", "B", 1), "ab\nB\n");
    check_edit("a\nba\nab\n", re("a$", "A", 0), "A\nbA\nab\n");
    check_edit("a\nb axb", re("a.b", "X", 1), "a\nb X");
    check_edit("x1 y22 z333", re("\\d+", "#", 0), "x# y# z#");
    check_edit("ab-cd_e", re("\\w+", "w", 0), "w-w");
    check_edit("cat concat cat.", re("\\bcat\\b", "dog", 0), "dog concat dog.");
    check_edit("$5 and 6 and $7", re("(?<=\\$)\\d+", "N", 0), "$N and 6 and $N");
    check_edit("foobar foobaz", re("foo(?!bar)", "X", 0), "foobar Xbaz");
    check_edit("on 2024-05.", re("(?<y>\\d{4})-(?<m>\\d{2})", "$<m>/$<y>", 1), "on 05/2024.");
    check_edit("a/b", re("a\\/b", "a|b", 1), "a|b");
    check_edit("BAB", re("\\x41", "a", 1), "BaB");
    check_edit("caf\u{e9}", re("\\u00e9", "e", 1), "cafe");
    check_edit("a \t b\n c", re("\\s+", " ", 0), "a b c");
    check_edit("color colour", re("colou?r", "C", 0), "C C");
    check_edit("banana", re("[aeiou]", "", 0), "bnn");
    check_edit("<a>x<b>", re("<.+?>", "", 0), "x");
    check_edit("aab", re("(a)\\1", "X", 1), "Xb");
    check_edit("one two", re("one|two", "n", 0), "n n");
    // Empty matches at line anchors: no phantom line after the final newline.
    check_edit("a\nb\n", re("^", "> ", 0), "> a\n> b\n");
    check_edit("a\nb\n", re("$", ";", 0), "a;\nb;\n");
    // CRLF: `.` stops at \r, `$` matches before it, the \r\n pair is one line break.
    check_edit("a\r\nb\r\n", re("^(.*)$", "[\\1]", 0), "[a]\r\n[b]\r\n");
    // Empty matches step one character, as JavaScript's global replace does.
    check_edit("abc", re("x*", "-", 0), "-a-b-c-");
    check_edit("baaac", re("a*", "-", 0), "-b--c-");
    check_edit("ab", re("", "x", 0), "xaxbx");
    // Patterns may span lines explicitly.
    check_edit("a\nb\nc\n", re("a\\nb", "X", 1), "X\nc\n");
    check_edit("a\nb\nc\n", re("a[\\s\\S]*?c", "X", 1), "X\n");
    check_edit("a\nb\nc\n", re("a[^]*c", "X", 1), "X\n");
}

/// JavaScript's `\d`, `\w` and `\b` are ASCII-only (non-unicode mode).
#[test]
fn regex_classes_are_ascii_rows() {
    check_edit_fails("\u{663}", re("\\d", "#", 1), -32603, "edit #1: pattern not found: /\\d/");
    check_edit_fails("\u{e9}", re("\\w", "#", 1), -32603, "edit #1: pattern not found: /\\w/");
    check_edit("\u{e9}t\u{e9}", re("\\bt\\b", "T", 1), "\u{e9}T\u{e9}");
}

#[test]
fn regex_replacement_rows() {
    check_edit("abc", re("(b)", "[$1]", 1), "a[b]c");
    check_edit("abc", re("(b)", "[\\1]", 1), "a[b]c");
    check_edit("abc", re("b", "<\\0>", 1), "a<b>c");
    check_edit("abc", re("b", "<$0>", 1), "a<b>c");
    check_edit("abc", re("b", "<$&>", 1), "a<b>c");
    check_edit("abc", re("b", "$$", 1), "a$c");
    check_edit("abc", re("b", "$$1", 1), "a$1c");
    check_edit("ab", re("(a)(b)", "$2$1", 1), "ba");
    check_edit("ab", re("(a)(b)", "\\2\\1", 1), "ba");
    check_edit("abc", re("(x)?b", "[$1]", 1), "a[]c");
    check_edit("abc", re("b", "[$`|$']", 1), "a[a|c]c");
    // Anything that is not a reference is literal text.
    check_edit("abc", re("b", "\\n\\\\", 1), "a\\n\\\\c");
    check_edit("abc", re("b", "$x $", 1), "a$x $c");
    check_edit("abc", re("(?<g>b)", "[$<g>|$<nope>]", 1), "a[b|$<nope>]c");
    // JavaScript's two-digit rule: with one group, `$10` is group 1 followed by "0".
    check_edit("abc", re("(b)", "$10", 1), "ab0c");
    check_edit("abcdefghijk", re("(a)(b)(c)(d)(e)(f)(g)(h)(i)(j)", "$10$9\\9", 1), "jiik");
}

#[test]
fn regex_limit_rows() {
    // Without limit only the first match is replaced, and there is no uniqueness guard.
    check_edit("a a a", json!([{"oldText": "a", "newText": "b", "isRegex": true}]), "b a a");
    check_edit("a a a", re("a", "b", 2), "b b a");
    check_edit("a a a", re("a", "b", 0), "b b b");
    check_edit("a a a", re("a", "b", 10), "b b b");
}

#[test]
fn regex_failure_rows() {
    check_edit_fails("abc", re("(", "x", 1), -32603, "edit #1: invalid regex");
    check_edit_fails("abc", re("[a", "x", 1), -32603, "edit #1: invalid regex");
    check_edit_fails("abc", re("a{2,1}", "x", 1), -32603, "edit #1: invalid regex");
    check_edit_fails("abc", re("zzz", "x", 0), -32603, "edit #1: pattern not found: /zzz/");
    check_edit_fails(
        "abc",
        re(".*", "\\1", 1),
        -32603,
        "edit #1: replacement references capture group 1",
    );
    check_edit_fails(
        "abc",
        re("(a)", "$2", 1),
        -32603,
        "edit #1: replacement references capture group 2",
    );
    // The reference is checked before matching, so it is reported even without a match.
    check_edit_fails(
        "abc",
        re("zzz", "$1", 1),
        -32603,
        "edit #1: replacement references capture group 1",
    );
    check_edit_fails(
        "abc",
        json!([
            {"oldText": "a", "newText": "A"},
            {"oldText": "(", "newText": "x", "isRegex": true}
        ]),
        -32603,
        "edit #2: invalid regex",
    );
}

/// A pattern that backtracks exponentially is stopped by the engine's step limit: -32603, the
/// file unchanged, and the server goes on answering.
#[test]
fn runaway_regex_is_refused_unchanged() {
    let initial = format!("{}b\n", "a".repeat(30));
    let env = TestEnv::new(&[], &[(FILE, initial.as_str())]);
    let mut server = Server::start(&env);
    let args = json!({"path": env.p(FILE), "edits": re("(a+)+$", "x", 1)});
    let error = server.call_err("edit_file", args, -32603);
    assert!(error.message.starts_with("edit #1: "), "{:?}", error.message);
    assert_eq!(env.read_string(FILE), initial);
    assert_eq!(env.names("root"), ["f.txt"]);
    server.call_text("edit_file", json!({"path": env.p(FILE), "edits": lit("b", "c")}));
    assert_eq!(env.read_string(FILE), format!("{}c\n", "a".repeat(30)));
}

// ---------------------------------------------------------------------------------------------
// caseInsensitive and limit
// ---------------------------------------------------------------------------------------------

#[test]
fn case_insensitive_rows() {
    let ci =
        |old: &str, new: &str| json!([{"oldText": old, "newText": new, "caseInsensitive": true}]);
    check_edit("Hello World", ci("hello", "Bye"), "Bye World");
    check_edit("xA.Bx aXb", ci("a.b", "_"), "x_x aXb");
    check_edit("Caf\u{c9} bar", ci("caf\u{e9}", "tea"), "tea bar");
    check_edit(
        "Foo foo FOO",
        json!([{"oldText": "foo", "newText": "bar", "caseInsensitive": true, "limit": 0}]),
        "bar bar bar",
    );
    check_edit(
        "aA Aa",
        json!([
            {"oldText": "A+", "newText": "x", "isRegex": true, "caseInsensitive": true, "limit": 0}
        ]),
        "x x",
    );
    check_edit_fails(
        "Foo foo",
        ci("foo", "bar"),
        -32603,
        "edit #1: oldText is not unique: found 2 occurrences",
    );
    check_edit_fails("Foo", ci("bar", "baz"), -32603, "edit #1: oldText not found;");
}

#[test]
fn literal_limit_rows() {
    let limited = |limit: u64| json!([{"oldText": "a", "newText": "b", "limit": limit}]);
    check_edit("a a a", limited(0), "b b b");
    check_edit("a a a", limited(2), "b b a");
    check_edit("a a a", limited(5), "b b b");
    check_edit("a x x", limited(0), "b x x");
    check_edit_fails("x x", limited(0), -32603, "edit #1: oldText not found;");
}

// ---------------------------------------------------------------------------------------------
// Sequencing and all-or-nothing
// ---------------------------------------------------------------------------------------------

#[test]
fn sequencing_rows() {
    // Edit #2 matches text produced by edit #1.
    check_edit(
        "one\n",
        json!([{"oldText": "one", "newText": "two"}, {"oldText": "two", "newText": "three"}]),
        "three\n",
    );
    check_edit(
        "a b c\n",
        json!([
            {"oldText": "a", "newText": "A"},
            {"oldText": "c", "newText": "C"},
            {"oldText": "A b", "newText": "ab"}
        ]),
        "ab C\n",
    );
    // Edits that cancel out are "(no changes)" in a dryRun.
    check_edit(
        "x\n",
        json!([{"oldText": "x", "newText": "y"}, {"oldText": "y", "newText": "x"}]),
        "x\n",
    );
    // Regex and literal edits mix.
    check_edit(
        "v1 v2\n",
        json!([
            {"oldText": "v(\\d)", "newText": "w$1", "isRegex": true, "limit": 0},
            {"oldText": "w2", "newText": "z"}
        ]),
        "w1 z\n",
    );
}

#[test]
fn all_or_nothing_rows() {
    check_edit_fails(
        "alpha beta\n",
        json!([{"oldText": "alpha", "newText": "A"}, {"oldText": "gamma", "newText": "G"}]),
        -32603,
        "edit #2: oldText not found",
    );
    // Edit #1 makes edit #2 ambiguous.
    check_edit_fails(
        "a b\n",
        json!([{"oldText": "a", "newText": "b"}, {"oldText": "b", "newText": "c"}]),
        -32603,
        "edit #2: oldText is not unique: found 2 occurrences",
    );
    // Edit #2 no longer finds what edit #1 replaced.
    check_edit_fails(
        "a b\n",
        json!([{"oldText": "a", "newText": "x"}, {"oldText": "a", "newText": "y"}]),
        -32603,
        "edit #2: oldText not found",
    );
    check_edit_fails(
        "a b c\n",
        json!([
            {"oldText": "a", "newText": "A"},
            {"oldText": "b", "newText": "B"},
            {"oldText": "(x)", "newText": "$2", "isRegex": true}
        ]),
        -32603,
        "edit #3: replacement references capture group 2",
    );
}

// ---------------------------------------------------------------------------------------------
// File format and metadata
// ---------------------------------------------------------------------------------------------

#[test]
fn crlf_and_bom_rows() {
    check_edit("a\r\nb\r\nc\r\n", lit("a\nb", "x\ny"), "x\r\ny\r\nc\r\n");
    check_edit("a\r\nb\r\n", lit("b\n", "b\nb2\n"), "a\r\nb\r\nb2\r\n");
    check_edit("a\r\nb\r\n", re("^b$", "x\ny", 1), "a\r\nx\r\ny\r\n");
    check_edit("\u{feff}first\nsecond\n", lit("first", "1st"), "\u{feff}1st\nsecond\n");
    // A BOM copied into oldText (and newText) does not end up doubled.
    check_edit(
        "\u{feff}first\nsecond\n",
        lit("\u{feff}first", "\u{feff}1st"),
        "\u{feff}1st\nsecond\n",
    );
    // Regex `^` sees the first real character, not the BOM.
    check_edit("\u{feff}first\n", re("^f", "F", 1), "\u{feff}First\n");
    check_edit("\u{feff}a\r\nb\r\n", lit("a\nb", "c"), "\u{feff}c\r\n");
    // Files with as many lone LFs as CRLFs are left as they are.
    check_edit("a\r\nb\nc\n", lit("b\nc", "B\nC"), "a\r\nB\nC\n");
    // The style is detected once, so edit #2 (sent with LF) matches what edit #1 wrote.
    check_edit(
        "a\r\nb\r\n",
        json!([{"oldText": "a", "newText": "x\ny"}, {"oldText": "y\nb", "newText": "z"}]),
        "x\r\nz\r\n",
    );
}

#[test]
fn edit_keeps_the_file_mode() {
    for mode in [0o640, 0o755] {
        let env = TestEnv::new(&[], &[(FILE, "#!/bin/sh\necho old\n")]);
        env.set_mode(FILE, mode);
        let mut server = Server::start(&env);
        server.call_text("edit_file", json!({"path": env.p(FILE), "edits": lit("old", "new")}));
        assert_eq!(env.read_string(FILE), "#!/bin/sh\necho new\n");
        assert_eq!(env.mode(FILE), mode, "mode {mode:o} not kept");
        assert_eq!(env.names("root"), ["f.txt"]);
    }
}

#[test]
fn edit_through_an_inside_symlink_keeps_the_link() {
    let env = TestEnv::new(&[], &[("root/target.txt", "old\n")]);
    env.symlink("target.txt", "root/link.txt");
    let mut server = Server::start(&env);
    let path = env.p("root/link.txt");
    assert_eq!(
        server.call_text("edit_file", json!({"path": path, "edits": lit("old", "new")})),
        format!("Successfully edited {path}")
    );
    assert!(env.is_symlink("root/link.txt"), "the link was replaced by a file");
    assert_eq!(env.read_link("root/link.txt"), std::path::Path::new("target.txt"));
    assert_eq!(env.read_string("root/target.txt"), "new\n");
    assert_eq!(env.names("root"), ["link.txt", "target.txt"]);
}

#[test]
fn binary_file_is_refused_unchanged() {
    let bytes: &[u8] = b"abc\xff\xfe\x00old\n";
    let env = TestEnv::new(&[], &[]);
    env.write(FILE, bytes);
    let mut server = Server::start(&env);
    for dry_run in [false, true] {
        server.call_err(
            "edit_file",
            json!({"path": env.p(FILE), "edits": lit("old", "new"), "dryRun": dry_run}),
            -32603,
        );
    }
    assert_eq!(env.read(FILE), bytes);
    assert_eq!(env.names("root"), ["f.txt"]);
}

#[test]
fn directory_is_refused() {
    let env = TestEnv::new(&["root/dir"], &[]);
    let before = env.snapshot();
    let mut server = Server::start(&env);
    server.call_err(
        "edit_file",
        json!({"path": env.p("root/dir"), "edits": lit("a", "b")}),
        -32603,
    );
    assert_eq!(before.diff(&env.snapshot()), "");
}

// ---------------------------------------------------------------------------------------------
// Replies, paths and dryRun
// ---------------------------------------------------------------------------------------------

#[test]
fn dry_run_diff_is_exact() {
    let env = TestEnv::new(&[], &[(FILE, "a\nb\nc\n")]);
    let mut server = Server::start(&env);
    let path = env.p(FILE);
    let diff = server
        .call_text("edit_file", json!({"path": path, "edits": lit("b", "B"), "dryRun": true}));
    assert_eq!(diff, format!("--- {path}\n+++ {path}\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"));
    assert_eq!(env.read_string(FILE), "a\nb\nc\n");
}

#[test]
fn dry_run_of_a_missing_file_lists_the_edits() {
    let env = TestEnv::new(&[], &[]);
    let mut server = Server::start(&env);
    let path = env.p("root/missing.txt");
    let edits = json!([
        {"oldText": "a", "newText": "b"},
        {"oldText": "^x", "newText": "y", "isRegex": true, "limit": 0}
    ]);
    let text = server.call_text("edit_file", json!({"path": path, "edits": edits, "dryRun": true}));
    let head = format!("{path} does not exist; the edits that would be applied:\nedit #1: ");
    assert!(text.starts_with(&head), "{text:?}");
    assert!(text.contains("\nedit #2: "), "{text:?}");
    assert_eq!(text.lines().count(), 3, "{text:?}");
    assert!(!env.exists("root/missing.txt"));
    assert_eq!(env.names("root"), Vec::<String>::new());
}

#[test]
fn real_edit_of_a_missing_file_is_not_found() {
    let env = TestEnv::new(&[], &[]);
    let mut server = Server::start(&env);
    server.call_err(
        "edit_file",
        json!({"path": env.p("root/missing.txt"), "edits": lit("a", "b")}),
        -32002,
    );
    assert_eq!(env.names("root"), Vec::<String>::new());
}

#[test]
fn reply_uses_the_normalized_path() {
    let env = TestEnv::new(&["root/sub"], &[(FILE, "a\n")]);
    let mut server = Server::start(&env);
    let client = format!("{}/sub/./../f.txt", path_str(&env.root()));
    assert_eq!(
        server.call_text("edit_file", json!({"path": client, "edits": lit("a", "b")})),
        format!("Successfully edited {}", env.p(FILE))
    );
    assert_eq!(env.read_string(FILE), "b\n");
}

#[test]
fn relative_path_resolves_in_the_first_root() {
    let env = TestEnv::new(&["second"], &[(FILE, "a\n"), ("second/f.txt", "a\n")]);
    let mut server = Server::start_also(&env, &[("second", "rw")]);
    assert_eq!(
        server.call_text("edit_file", json!({"path": "f.txt", "edits": lit("a", "b")})),
        format!("Successfully edited {}", env.p(FILE))
    );
    assert_eq!(env.read_string(FILE), "b\n");
    assert_eq!(env.read_string("second/f.txt"), "a\n");
}

#[test]
fn invalid_params_rows() {
    let p = |edits: Value| json!({"path": "f.txt", "edits": edits});
    check_invalid_params("edit_file", json!({"edits": [{"oldText": "x"}]}), "path");
    check_invalid_params("edit_file", json!({"path": "f.txt"}), "edits");
    check_invalid_params("edit_file", json!({"path": 5, "edits": [{"oldText": "x"}]}), "path");
    check_invalid_params("edit_file", p(json!("x")), "edits");
    check_invalid_params("edit_file", p(json!([])), "edits");
    check_invalid_params("edit_file", p(json!([{}])), "oldText");
    check_invalid_params("edit_file", p(json!([{"newText": "y"}])), "oldText");
    check_invalid_params("edit_file", p(json!([{"oldText": 5}])), "oldText");
    check_invalid_params("edit_file", p(json!([{"oldText": "x", "newText": 5}])), "newText");
    check_invalid_params("edit_file", p(json!([{"oldText": "x", "limit": "2"}])), "limit");
    check_invalid_params("edit_file", p(json!([{"oldText": "x", "limit": -1}])), "limit");
    check_invalid_params("edit_file", p(json!([{"oldText": "x", "limit": 1.5}])), "limit");
    check_invalid_params("edit_file", p(json!([{"oldText": "x", "isRegex": "yes"}])), "isRegex");
    check_invalid_params(
        "edit_file",
        p(json!([{"oldText": "x", "caseInsensitive": 1}])),
        "caseInsensitive",
    );
    check_invalid_params(
        "edit_file",
        json!({"path": "f.txt", "edits": [{"oldText": "x"}], "dryRun": "true"}),
        "dryRun",
    );
    check_invalid_params("edit_files", json!({"edits": [{"oldText": "x"}]}), "paths");
    check_invalid_params(
        "edit_files",
        json!({"paths": "f.txt", "edits": [{"oldText": "x"}]}),
        "paths",
    );
    check_invalid_params("edit_files", json!({"paths": ["f.txt"]}), "edits");
    check_invalid_params(
        "edit_files",
        json!({"paths": ["f.txt"], "edits": [{"newText": "x"}]}),
        "oldText",
    );
}

// ---------------------------------------------------------------------------------------------
// Policy
// ---------------------------------------------------------------------------------------------

/// Each escape is refused with -32001, for a dryRun and for real, and nothing changes anywhere.
#[test]
fn escapes_are_not_allowed() {
    let env = TestEnv::new(
        &["outside_dir", "root2"],
        &[
            (FILE, "x\n"),
            ("outside.txt", "x\n"),
            ("outside_dir/f.txt", "x\n"),
            ("root2/f.txt", "x\n"),
        ],
    );
    env.symlink("../outside.txt", "root/link_out.txt");
    env.symlink("../outside_dir", "root/dir_out");
    let escapes = [
        ("absolute outside", env.p("outside.txt")),
        ("dot-dot", format!("{}/../outside.txt", path_str(&env.root()))),
        ("relative dot-dot", "../outside.txt".to_owned()),
        ("symlink to outside", env.p("root/link_out.txt")),
        ("symlinked parent", env.p("root/dir_out/f.txt")),
        ("prefix sibling", env.p("root2/f.txt")),
    ];
    let before = env.snapshot();
    let mut server = Server::start(&env);
    let edits = lit("x", "ESCAPED");
    for (name, path) in &escapes {
        for dry_run in [true, false] {
            let args = json!({"path": path, "edits": edits, "dryRun": dry_run});
            let reply = server.call("edit_file", args);
            assert_eq!(reply.error().code, -32001, "{name} (dryRun {dry_run}): {}", reply.line);
            let args = json!({"paths": [env.p(FILE), path], "edits": edits, "dryRun": dry_run});
            let reply = server.call("edit_files", args);
            assert_eq!(
                reply.error().code,
                -32001,
                "edit_files {name} (dryRun {dry_run}): {}",
                reply.line
            );
        }
    }
    assert_eq!(before.diff(&env.snapshot()), "");
}

#[test]
fn read_only_root_allows_dry_run_only() {
    let env = TestEnv::new(&[], &[(FILE, "a\n")]);
    let before = env.snapshot();
    let mut server = start_read_only(&env);
    let path = env.p(FILE);
    let edits = lit("a", "b");
    let diff = server.call_text("edit_file", json!({"path": path, "edits": edits, "dryRun": true}));
    assert!(diff.starts_with(&format!("--- {path}\n+++ {path}\n@@ ")), "{diff:?}");
    server.call_err("edit_file", json!({"path": path, "edits": edits}), -32001);

    let texts =
        server.call("edit_files", json!({"paths": [path], "edits": edits, "dryRun": true})).texts();
    assert!(texts[0].starts_with(&format!("--- {path}\n")), "{texts:?}");
    let glob = format!("{}/*.txt", path_str(&env.root()));
    server.call_err("edit_files", json!({"paths": [glob], "edits": edits}), -32001);
    server.call_err("edit_files", json!({"paths": [path], "edits": edits}), -32001);
    assert_eq!(before.diff(&env.snapshot()), "");
}

// ---------------------------------------------------------------------------------------------
// edit_files
// ---------------------------------------------------------------------------------------------

/// The tree every `check_glob` row starts from; every file holds "x\n".
const GLOB_TREE: &[&str] =
    &["a.txt", "ab.txt", "b.txt", "c.md", "sub/d.txt", "sub/deep/e.txt", "sub/deep/f.md"];

/// `pattern` (relative to the root) edits exactly the files `expect` lists, one reply item each
/// in that (sorted) order; the same again with the pattern sent relative.
#[track_caller]
fn check_glob(pattern: &str, expect: &[&str]) {
    let env = TestEnv::new(&[], &[]);
    let mut server = Server::start(&env);
    let want: Vec<String> = expect
        .iter()
        .map(|rel| format!("Successfully edited {}", env.p(&format!("root/{rel}"))))
        .collect();
    let absolute = format!("{}/{pattern}", path_str(&env.root()));
    for sent in [absolute.as_str(), pattern] {
        for rel in GLOB_TREE {
            env.write(&format!("root/{rel}"), "x\n");
        }
        let args = json!({"paths": [sent], "edits": lit("x", "y")});
        assert_eq!(server.call("edit_files", args).texts(), want, "glob {sent:?}");
        for rel in GLOB_TREE {
            let content = if expect.contains(rel) { "y\n" } else { "x\n" };
            assert_eq!(
                env.read_string(&format!("root/{rel}")),
                content,
                "{rel} after glob {sent:?}"
            );
        }
    }
}

#[test]
fn glob_rows() {
    check_glob("*.txt", &["a.txt", "ab.txt", "b.txt"]);
    check_glob("*", &["a.txt", "ab.txt", "b.txt", "c.md"]);
    check_glob("?.txt", &["a.txt", "b.txt"]);
    check_glob("{a,c}.*", &["a.txt", "c.md"]);
    check_glob("[ab].txt", &["a.txt", "b.txt"]);
    check_glob("**/*.txt", &["a.txt", "ab.txt", "b.txt", "sub/d.txt", "sub/deep/e.txt"]);
    check_glob("**/*.md", &["c.md", "sub/deep/f.md"]);
    check_glob("sub/**", &["sub/d.txt", "sub/deep/e.txt", "sub/deep/f.md"]);
    check_glob("sub/*.txt", &["sub/d.txt"]);
    check_glob("sub/*/e.txt", &["sub/deep/e.txt"]);
}

#[test]
fn edit_files_literal_paths_in_the_order_given() {
    let env =
        TestEnv::new(&[], &[("root/b.txt", "x\n"), ("root/a.txt", "x\n"), ("root/c.txt", "x\n")]);
    let mut server = Server::start(&env);
    let args = json!({"paths": [env.p("root/b.txt"), "a.txt"], "edits": lit("x", "y")});
    assert_eq!(
        server.call("edit_files", args).texts(),
        [
            format!("Successfully edited {}", env.p("root/b.txt")),
            format!("Successfully edited {}", env.p("root/a.txt"))
        ]
    );
    assert_eq!(env.read_string("root/a.txt"), "y\n");
    assert_eq!(env.read_string("root/b.txt"), "y\n");
    assert_eq!(env.read_string("root/c.txt"), "x\n");
}

/// Expectation chosen here (the tool dedups by real path): a file named twice, literally and
/// through a glob, is edited once; a second application would fail "not found".
#[test]
fn edit_files_edits_a_file_named_twice_once() {
    let env = TestEnv::new(&[], &[("root/a.txt", "v1\n")]);
    let mut server = Server::start(&env);
    let path = env.p("root/a.txt");
    let args = json!({"paths": [path, "*.txt"], "edits": lit("v1", "v2")});
    assert_eq!(server.call("edit_files", args).texts(), [format!("Successfully edited {path}")]);
    assert_eq!(env.read_string("root/a.txt"), "v2\n");
}

#[test]
fn edit_files_reports_per_file_failures_inline() {
    let env = TestEnv::new(
        &[],
        &[
            ("root/a.txt", "x\n"),
            ("root/b.txt", "none\n"),
            ("root/c.txt", "x x\n"),
            ("root/d.txt", "x\n"),
        ],
    );
    set_mtime(&env, "root/b.txt", old_mtime());
    set_mtime(&env, "root/c.txt", old_mtime());
    let mut server = Server::start(&env);
    let args = json!({"paths": ["*.txt"], "edits": lit("x", "y")});
    let texts = server.call("edit_files", args).texts();
    assert_eq!(texts.len(), 4, "{texts:?}");
    assert_eq!(texts[0], format!("Successfully edited {}", env.p("root/a.txt")));
    let b = format!("{}: [error -32603] edit #1: oldText not found", env.p("root/b.txt"));
    assert!(texts[1].starts_with(&b), "{:?}", texts[1]);
    let c = format!(
        "{}: [error -32603] edit #1: oldText is not unique: found 2 occurrences",
        env.p("root/c.txt")
    );
    assert!(texts[2].starts_with(&c), "{:?}", texts[2]);
    assert_eq!(texts[3], format!("Successfully edited {}", env.p("root/d.txt")));
    assert_eq!(env.read_string("root/a.txt"), "y\n");
    assert_eq!(env.read_string("root/b.txt"), "none\n");
    assert_eq!(env.read_string("root/c.txt"), "x x\n");
    assert_eq!(env.read_string("root/d.txt"), "y\n");
    assert_eq!(mtime(&env, "root/b.txt"), old_mtime());
    assert_eq!(mtime(&env, "root/c.txt"), old_mtime());
    assert_eq!(env.names("root"), ["a.txt", "b.txt", "c.txt", "d.txt"], "temp files left behind");
}

/// Expectation chosen here: a literal path that does not exist is a per-file -32002, inline.
#[test]
fn edit_files_missing_literal_path_is_inline() {
    let env = TestEnv::new(&[], &[("root/a.txt", "x\n")]);
    let mut server = Server::start(&env);
    let missing = env.p("root/missing.txt");
    let args = json!({"paths": [missing, "a.txt"], "edits": lit("x", "y")});
    let texts = server.call("edit_files", args).texts();
    assert_eq!(texts.len(), 2, "{texts:?}");
    assert!(texts[0].starts_with(&format!("{missing}: [error -32002] ")), "{:?}", texts[0]);
    assert_eq!(texts[1], format!("Successfully edited {}", env.p("root/a.txt")));
    assert!(!env.exists("root/missing.txt"));
}

#[test]
fn edit_files_glob_without_match_is_not_found() {
    let env = TestEnv::new(&[], &[("root/a.txt", "x\n")]);
    let before = env.snapshot();
    let mut server = Server::start(&env);
    for paths in [json!(["*.nothing"]), json!([env.p("root/a.txt"), "*.nothing"])] {
        for dry_run in [false, true] {
            let args = json!({"paths": paths, "edits": lit("x", "y"), "dryRun": dry_run});
            server.call_err("edit_files", args, -32002);
        }
    }
    assert_eq!(before.diff(&env.snapshot()), "");
}

#[test]
fn edit_files_glob_reaching_outside_changes_nothing() {
    let env = TestEnv::new(
        &["outside"],
        &[
            ("root/a.txt", "x\n"),
            ("root/z.txt", "x\n"),
            ("outside/o.txt", "x\n"),
            ("outside.txt", "x\n"),
        ],
    );
    env.symlink("../outside.txt", "root/m_link.txt");
    let before = env.snapshot();
    let mut server = Server::start(&env);
    let root = path_str(&env.root());
    let patterns = [
        format!("{root}/../outside/*.txt"),
        env.p("outside/*.txt"),
        "../outside/*.txt".to_owned(),
        // The symlink inside the root points at an outside file the glob matches.
        format!("{root}/*.txt"),
        "*.txt".to_owned(),
    ];
    for pattern in &patterns {
        for dry_run in [false, true] {
            let paths = [env.p("root/a.txt"), pattern.clone()];
            let args = json!({"paths": paths, "edits": lit("x", "y"), "dryRun": dry_run});
            let reply = server.call("edit_files", args);
            assert_eq!(reply.error().code, -32001, "{pattern} (dryRun {dry_run}): {}", reply.line);
        }
    }
    assert_eq!(before.diff(&env.snapshot()), "");
}

#[test]
fn edit_files_relative_glob_ignores_the_process_cwd() {
    let env = TestEnv::new(
        &["cwd"],
        &[("root/a.txt", "x\n"), ("cwd/a.txt", "x\n"), ("cwd/b.txt", "x\n")],
    );
    let mut cmd = replay_command();
    cmd.args(["--mcp-server", "--allow", &format!("{}:rw", path_str(&env.root()))]);
    cmd.current_dir(env.path("cwd"));
    let mut server = Server::from_command(cmd);
    server.initialize("2025-06-18");
    let args = json!({"paths": ["*.txt"], "edits": lit("x", "y")});
    assert_eq!(
        server.call("edit_files", args).texts(),
        [format!("Successfully edited {}", env.p("root/a.txt"))]
    );
    assert_eq!(env.read_string("root/a.txt"), "y\n");
    assert_eq!(env.read_string("cwd/a.txt"), "x\n");
    assert_eq!(env.read_string("cwd/b.txt"), "x\n");
}

#[test]
fn edit_files_dry_run_writes_nothing_anywhere() {
    let env = TestEnv::new(
        &[],
        &[("root/a.txt", "x\n"), ("root/b.txt", "x\n"), ("root/c.txt", "none\n")],
    );
    for rel in ["root/a.txt", "root/b.txt", "root/c.txt"] {
        set_mtime(&env, rel, old_mtime());
    }
    let before = env.snapshot();
    let mut server = Server::start(&env);
    let missing = env.p("root/missing.txt");
    let args = json!({"paths": ["*.txt", missing], "edits": lit("x", "y"), "dryRun": true});
    let texts = server.call("edit_files", args).texts();
    assert_eq!(texts.len(), 4, "{texts:?}");
    for (i, rel) in ["root/a.txt", "root/b.txt"].iter().enumerate() {
        let path = env.p(rel);
        assert_eq!(texts[i], format!("--- {path}\n+++ {path}\n@@ -1 +1 @@\n-x\n+y\n"));
    }
    let c = format!("{}: [error -32603] edit #1: oldText not found", env.p("root/c.txt"));
    assert!(texts[2].starts_with(&c), "{:?}", texts[2]);
    assert!(texts[3].starts_with(&format!("{missing} does not exist; ")), "{:?}", texts[3]);
    assert_eq!(before.diff(&env.snapshot()), "");
    for rel in ["root/a.txt", "root/b.txt", "root/c.txt"] {
        assert_eq!(mtime(&env, rel), old_mtime(), "{rel} touched");
    }
}

// ---------------------------------------------------------------------------------------------
// Pipelining
// ---------------------------------------------------------------------------------------------

/// Requests sent back-to-back without waiting are applied in the order sent: each one's oldText
/// exists only after the previous one ran.
#[test]
fn pipelined_edits_apply_in_arrival_order() {
    let env = TestEnv::new(&[], &[(FILE, "value = 0;\n")]);
    let mut server = Server::start(&env);
    let path = env.p(FILE);
    let n = 20;
    for i in 0..n {
        let edits = json!([{"oldText": format!("= {i};"), "newText": format!("= {};", i + 1)}]);
        // Alternate the two tools: both change files, so both are serialized.
        let params = if i % 2 == 0 {
            json!({"name": "edit_file", "arguments": {"path": path, "edits": edits}})
        } else {
            json!({"name": "edit_files", "arguments": {"paths": [path], "edits": edits}})
        };
        let id = format!("e{i}");
        server.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}));
    }
    for i in 0..n {
        let reply = server.reply_to(&json!(format!("e{i}")));
        assert_eq!(reply.text(), format!("Successfully edited {path}"), "request e{i}");
    }
    assert_eq!(env.read_string(FILE), "value = 20;\n");
    assert_eq!(env.names("root"), ["f.txt"]);
}

// ---------------------------------------------------------------------------------------------
// Misses that show the fix (issue #15)
// ---------------------------------------------------------------------------------------------

/// A literal edit that matches neither exactly nor whitespace-normalized names the nearest lines,
/// shows the file's text there with line numbers, and says what differs; edit_file (dryRun and
/// real) and edit_files inline alike, and the file is untouched. Nothing similar: short, as before.
#[rustfmt::skip]
#[test]
fn edit_misses_show_the_nearest_text_and_what_differs() {
    let miss = "edit #1: oldText not found (also tried a whitespace-normalized line match); ";
    // Typographic quotes against ASCII ones.
    check_edit_fails("a = 1\nname = \u{201c}x\u{201d}\n", lit("name = \"x\"", "y"), -32603,
        &format!("{miss}the nearest text is line 2; line 2: the file has typographic “ ” where oldText has ASCII quotes or dashes. The file there:\n     2\tname = “x”"));
    // Tabs against spaces, inside a block.
    check_edit_fails("if a {\n\tb();\n\tc();\n}\n", lit("if a {\n    b();\n\tc();\n}", "x"), -32603,
        &format!("{miss}the nearest text is lines 1-4; line 2: the file indents with a tab where oldText has 4 spaces. The file there:\n     1\tif a {{\n     2\t\tb();\n     3\t\tc();\n     4\t}}"));
    // Spacing inside a line.
    check_edit_fails("f(a, b)\n", lit("f(a,b)", "g"), -32603,
        &format!("{miss}the nearest text is line 1; line 1: spacing inside the line: file \"f(a, b)\" vs oldText \"f(a,b)\". The file there:\n     1\tf(a, b)"));
    // Trailing whitespace, beside a line that differs.
    check_edit_fails("x = 1  \ny = 2\n", lit("x = 1\ny = 3", "z"), -32603,
        &format!("{miss}the nearest text is lines 1-2; line 1: trailing whitespace: the file has \"  \" at the end of the line, oldText \"\"; line 2: the text differs: file \"y = 2\" vs oldText \"y = 3\". The file there:\n     1\tx = 1  \n     2\ty = 2"));
    // One line of several.
    check_edit_fails("fn f() {\n    one();\n    two();\n}\n", lit("fn f() {\n    one();\n    too();\n}", "x"), -32603,
        &format!("{miss}the nearest text is lines 1-4; line 3: the text differs: file \"    two();\" vs oldText \"    too();\". The file there:\n     1\tfn f() {{\n     2\t    one();\n     3\t    two();\n     4\t}}"));
    // NFC in the file, NFD in oldText.
    check_edit_fails("caf\u{e9} = 1\n", lit("cafe\u{301} = 1", "x"), -32603,
        &format!("{miss}the nearest text is line 1; line 1: Unicode normalization: the file's accented letters are composed (NFC), oldText's decomposed (NFD). The file there:\n     1\tcafé = 1"));
    // A later edit counts lines in the text the earlier ones left.
    check_edit_fails("a\nb = \u{2018}1\u{2019}\n",
        json!([{"oldText": "a\n", "newText": "x\ny\n"}, {"oldText": "b = '1'", "newText": "c"}]), -32603,
        "edit #2: oldText not found (also tried a whitespace-normalized line match); after edit #1, the nearest text is line 3; line 3: the file has typographic ‘ ’ where oldText has ASCII quotes or dashes. The file there:\n     3\tb = ‘1’");
    // Nothing similar: as short as before.
    check_edit_fails("alpha\nbeta\n", lit("something else", "x"), -32603,
        "edit #1: oldText not found (also tried a whitespace-normalized line match); re-read the file and copy the exact text");
}

/// A FIFO is not a file to edit: edit_file answers "not a regular file" at once, as read_file
/// does, and never reads it as empty text nor replaces it with a regular file (an empty-matching
/// regex would otherwise "edit" it). See: #17 (C3).
#[test]
fn edit_file_refuses_a_fifo_at_once_and_leaves_it() {
    let env = TestEnv::new(&["root"], &[]);
    let fifo = env.path("root/fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o644)).expect("mkfifo");
    let mut server = Server::start(&env);
    for edit in [
        json!({"oldText": "x", "newText": "y"}),
        json!({"oldText": "^", "newText": "y", "isRegex": true}),
    ] {
        for dry_run in [false, true] {
            let args = json!({"path": env.p("root/fifo"), "edits": [edit], "dryRun": dry_run});
            let error = server.call_err("edit_file", args, -32603);
            assert!(error.message.contains("not a regular file"), "{}", error.message);
        }
    }
    let kind = fs::symlink_metadata(&fifo).expect("stat").file_type();
    assert!(std::os::unix::fs::FileTypeExt::is_fifo(&kind), "the FIFO was replaced");
}

/// A glob's match whose name is not UTF-8 cannot be named as text: shown lossily it named
/// another file (`\u{fffd}.txt`, edited while `\xff.txt` stayed as it was). Such a glob is
/// refused before any file is touched. (A stranger's find.)
#[cfg(target_os = "linux")]
#[test]
fn a_glob_matching_a_name_not_utf8_is_refused() {
    use std::os::unix::ffi::OsStrExt;
    let env =
        TestEnv::new(&["root/g"], &[("root/g/a.txt", "hello"), ("root/g/\u{fffd}.txt", "hello")]);
    let odd = env.path("root/g").join(std::ffi::OsStr::from_bytes(b"\xff.txt"));
    fs::write(&odd, "hello").expect("write");
    let mut server = Server::start(&env);
    let args = json!({"paths": [env.p("root/g/*.txt")], "edits": [{"oldText": "hello", "newText": "bye"}]});
    let error = server.call("edit_files", args).expect_error(-32602).message;
    assert!(error.contains("not UTF-8"), "{error}");
    assert_eq!(env.read_string("root/g/a.txt"), "hello");
    assert_eq!(env.read_string("root/g/\u{fffd}.txt"), "hello");
    assert_eq!(fs::read(&odd).expect("read"), b"hello");
}
