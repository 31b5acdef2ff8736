//! The matcher's table: an old text, one update's hunks, and the new text or the error.

use super::*;
use crate::tools::patch::parse::{parse, FileOp};

/// The hunks of `*** Update File: f` with `body`, applied to `text`; an error is its message
/// up to the near match's quoted lines.
fn run(text: &str, body: &str) -> String {
    let patch = parse(&format!("*** Begin Patch\n*** Update File: f\n{body}\n*** End Patch"))
        .unwrap_or_else(|e| panic!("the test's patch does not parse: {e}"));
    let FileOp::Update { hunks, .. } = &patch.files[0] else { unreachable!() };
    match apply_hunks(text, hunks) {
        Ok(new) => new,
        Err(e) => {
            let message = e.to_string();
            let cut = message.find(". The file there:").unwrap_or(message.len());
            format!("error: {}", &message[..cut])
        }
    }
}

#[track_caller]
fn check(text: &str, body: &str, expect: &str) {
    assert_eq!(run(text, body), expect, "\ntext: {text:?}\nhunks:\n{body}");
}

#[test]
fn exact() {
    check("a\nb\nc\n", "@@\n a\n-b\n+B\n c", "a\nB\nc\n");
    check("a\nb\nc\n", "@@\n-a\n+x\n+y", "x\ny\nb\nc\n");
    check("a\nb\nc\n", "@@\n-c", "a\nb\n");
    check("a\n", "@@\n-a", "");
    // Two hunks in order; the second is searched after the first.
    check("x\n1\nx\n2\n", "@@\n-x\n+y\n 1\n@@\n-x\n+z", "y\n1\nz\n2\n");
}

#[test]
fn whitespace_tolerant() {
    // Trailing whitespace in the file.
    check("a  \nb\t\n", "@@\n-a\n+A\n b", "A\nb\t\n");
    // Context lines matched up to whitespace are kept as the file has them.
    check("  a\n\tb \n  c\n", "@@\n a\n-b\n+B\n c", "  a\nB\n  c\n");
    // Indentation differs.
    check("    if x:\n        y()\n", "@@\n if x:\n-    y()\n+    z()", "    if x:\n    z()\n");
    // Typographic quotes and dashes against ASCII.
    check("say(\u{201C}hi\u{201D}) \u{2014} ok\n", "@@\n-say(\"hi\") - ok\n+done", "done\n");
    // The strictest pass wins: an exact match is taken over an earlier trimmed one.
    check(" a\na\n", "@@\n-a\n+b", " a\nb\n");
}

#[test]
fn anchors() {
    let text = "fn f() {\n    x\n}\nfn g() {\n    x\n}\n";
    check(text, "@@ fn g() {\n-    x\n+    y", "fn f() {\n    x\n}\nfn g() {\n    y\n}\n");
    // Without the anchor, the two places are ambiguous.
    check(text, "@@\n-    x\n+    y", "error: hunk 1: its context and '-' lines match at line 2 and at line 5: add context lines, or an '@@ LINE' line naming a line above the right place (a function's or class's header)");
    // Stacked anchors.
    let text = "class A:\n  def f():\n    x\nclass B:\n  def f():\n    x\n";
    check(
        text,
        "@@ class B:\n@@   def f():\n-    x\n+    y",
        "class A:\n  def f():\n    x\nclass B:\n  def f():\n    y\n",
    );
    // An insertion after its anchor.
    check("a\nb\nc\n", "@@ a\n+new", "a\nnew\nb\nc\n");
    // An insertion without one goes at the end.
    check("a\nb\n", "@@\n+new", "a\nb\nnew\n");
    check("", "@@\n+new", "new\n");
    check(
        "a\nb\n",
        "@@ zzz\n-a",
        "error: hunk 1: the '@@ zzz' line was not found; read the file again and write the hunk against its text",
    );
}

#[test]
fn end_of_file() {
    // The last of two identical lines, by End of File, without ambiguity.
    check("x\ny\nx\n", "@@\n-x\n+z\n*** End of File", "x\ny\nz\n");
    // Not at the end: found where it is, as Codex falls back.
    check("x\ny\n", "@@\n-x\n+z\n*** End of File", "z\ny\n");
    // Trailing empty old lines (blank lines before the next header) are retried without.
    check("a\nb\n", "@@\n a\n-b\n+c\n \n", "a\nc\n");
}

#[test]
fn line_endings() {
    // CRLF kept, also on added lines; lines outside the hunk keep their own ending.
    check("a\r\nb\r\nc\r\n", "@@\n a\n-b\n+B\n+B2", "a\r\nB\r\nB2\r\nc\r\n");
    check("a\r\nb\nc\r\n", "@@\n-c\n+C", "a\r\nb\nC\r\n");
    // No final newline stays without one, also when the last line changes or lines are added.
    check("a\nb", "@@\n a\n-b\n+c", "a\nc");
    check("a\nb", "@@\n b\n+c", "a\nb\nc");
    check("a\r\nb", "@@\n+c", "a\r\nb\r\nc");
    // Unicode content is kept as is.
    check("é\n日本\n", "@@\n-日本\n+中文", "é\n中文\n");
}

#[test]
fn misses() {
    check(
        "alpha\nbeta\ngamma\n",
        "@@\n-alpha\n-bta\n-gamma\n+x",
        "error: hunk 1: its context and '-' lines were not found; the nearest text is lines 1-3; line 2: the text differs: file \"beta\" vs oldText \"bta\"",
    );
    check(
        "a\nb\n",
        "@@\n-b\n+c\n@@\n-a\n+d",
        "error: hunk 2: its context and '-' lines match at line 1, above line 2 where the hunk before it ends or its '@@' line is: order a file's hunks from its top to its bottom",
    );
    check(
        "one\ntwo\nthree\n",
        "@@ two\n-one\n+1",
        "error: hunk 1: its context and '-' lines match at line 1, above line 2 where the hunk before it ends or its '@@' line is: order a file's hunks from its top to its bottom",
    );
    check("a\n", "@@\n-a\n-b", "error: hunk 1: its context and '-' lines were not found; read the file again and write the hunk against its text");
}
