//! The parser's table: each Codex case, the lenient forms, and each malformed input with its line.

use super::*;

/// One line per file, then one per hunk: `A path "contents"`, `D path`, `U path [-> to]`,
/// `  @@ [anchors] old -> new [eof] (line N)`; an error is its message.
fn render(result: Result<Patch, ParseError>) -> String {
    let patch = match result {
        Ok(patch) => patch,
        Err(e) => return format!("error: {e}"),
    };
    let mut out = Vec::new();
    for file in &patch.files {
        match file {
            FileOp::Add { path, contents, line } => {
                out.push(format!("A {path} {contents:?} @{line}"))
            }
            FileOp::Delete { path, line } => out.push(format!("D {path} @{line}")),
            FileOp::Update { path, move_to, hunks, line } => {
                match move_to {
                    Some(to) => out.push(format!("U {path} -> {to} @{line}")),
                    None => out.push(format!("U {path} @{line}")),
                }
                for hunk in hunks {
                    let eof = if hunk.at_eof { " eof" } else { "" };
                    out.push(format!(
                        "  @@ {:?} {:?} -> {:?}{eof} @{}",
                        hunk.anchors, hunk.old, hunk.new, hunk.line
                    ));
                }
            }
        }
    }
    out.join("\n")
}

#[track_caller]
fn check(input: &str, expect: &str) {
    let got = render(parse(input));
    assert_eq!(got, expect, "\ninput:\n{input}");
}

#[test]
fn codex_cases() {
    // Add, delete, update with a move and an anchor.
    check(
        "*** Begin Patch\n*** Add File: path/add.py\n+abc\n+def\n*** Delete File: path/delete.py\n\
         *** Update File: path/update.py\n*** Move to: path/update2.py\n@@ def f():\n-    pass\n\
         +    return 123\n*** End Patch",
        "A path/add.py \"abc\\ndef\\n\" @2\nD path/delete.py @5\n\
         U path/update.py -> path/update2.py @6\n  @@ [\"def f():\"] [\"    pass\"] -> [\"    return 123\"] @8",
    );
    // An update followed by an add; a bare `@@`.
    check(
        "*** Begin Patch\n*** Update File: file.py\n@@\n+line\n*** Add File: other.py\n+content\n*** End Patch\n",
        "U file.py @2\n  @@ [] [] -> [\"line\"] @3\nA other.py \"content\\n\" @5",
    );
    // The first hunk without `@@`.
    check(
        "*** Begin Patch\n*** Update File: file2.py\n import foo\n+bar\n*** End Patch",
        "U file2.py @2\n  @@ [] [\"import foo\"] -> [\"import foo\", \"bar\"] @3",
    );
    // Two hunks, the second anchored; an empty line inside a hunk is empty context.
    check(
        "*** Begin Patch\n*** Update File: a\n@@\n x\n\n-y\n+z\n@@ fn g() {\n-1\n+2\n*** End Patch",
        "U a @2\n  @@ [] [\"x\", \"\", \"y\"] -> [\"x\", \"\", \"z\"] @3\n  @@ [\"fn g() {\"] [\"1\"] -> [\"2\"] @8",
    );
    // End of File, then another hunk is refused only if unprefixed; a blank line between hunks.
    check(
        "*** Begin Patch\n*** Update File: a\n@@\n-x\n+y\n*** End of File\n\n@@ k\n-1\n+2\n*** End Patch",
        "U a @2\n  @@ [] [\"x\"] -> [\"y\"] eof @3\n  @@ [\"k\"] [\"1\"] -> [\"2\"] @8",
    );
    // Stacked anchors narrow one after the other.
    check(
        "*** Begin Patch\n*** Update File: a.py\n@@ class A\n@@     def f():\n-        x\n+        y\n*** End Patch",
        "U a.py @2\n  @@ [\"class A\", \"    def f():\"] [\"        x\"] -> [\"        y\"] @3",
    );
    // A unified diff's line range is dropped; git's function header after it anchors.
    check(
        "*** Begin Patch\n*** Update File: a\n@@ -1,2 +1,2 @@\n-x\n+y\n@@ -9 +9 @@ fn g()\n-1\n+2\n*** End Patch",
        "U a @2\n  @@ [] [\"x\"] -> [\"y\"] @3\n  @@ [\"fn g()\"] [\"1\"] -> [\"2\"] @6",
    );
    // A lone `*** Move to:` is not a hunk: the update still needs one.
    check(
        "*** Begin Patch\n*** Update File: a\n*** Move to: b\n@@\n-x\n+x\n*** End Patch",
        "U a -> b @2\n  @@ [] [\"x\"] -> [\"x\"] @4",
    );
}

#[test]
fn lenient_forms() {
    // Whitespace around markers and headers, CRLF, blank lines around the envelope.
    check(
        "\n  *** Begin Patch  \r\n *** Add File: a.txt\r\n+hi\r\n  *** End Patch \r\n\n",
        "A a.txt \"hi\\n\" @3",
    );
    // Heredoc wrappers as a model writes them for a shell.
    check("<<'EOF'\n*** Begin Patch\n*** Delete File: x\n*** End Patch\nEOF\n", "D x @3");
    check("<<EOF\n*** Begin Patch\n*** Delete File: x\n*** End Patch\nEOF", "D x @3");
    check("<<\"EOF\"\n*** Begin Patch\n*** Delete File: x\n*** End Patch\nEOF", "D x @3");
    // Paths keep inner spaces; an add line of just '+' is an empty line.
    check(
        "*** Begin Patch\n*** Add File: my file.txt\n+\n+b\n*** End Patch",
        "A my file.txt \"\\nb\\n\" @2",
    );
}

#[test]
fn malformed() {
    check("", "error: line 1: expected '*** Begin Patch' as the first line, found ''");
    check(
        "diff --git a/x b/x\n",
        "error: line 1: expected '*** Begin Patch' as the first line, found 'diff --git a/x b/x'",
    );
    check(
        "*** Begin Patch\n*** Delete File: x\n",
        "error: line 3: expected '*** End Patch' as the last line: the patch may have been cut off",
    );
    check(
        "*** Begin Patch\n*** Update File: a\n@@\n-x\n+y\n",
        "error: line 6: expected '*** End Patch' as the last line: the patch may have been cut off",
    );
    check(
        "*** Begin Patch\n*** Update File: a\n@@\n-x\nmissing prefix\n*** End Patch",
        "error: line 5: expected a hunk line starting with ' ' (context), '-' (removed) or '+' \
         (added), '@@', '*** End of File' or a file header, found 'missing prefix'",
    );
    check(
        "*** Begin Patch\n*** Update File: a\n@@\n-x\n*** End of File\n y\n*** End Patch",
        "error: line 6: expected a hunk line starting with ' ' (context), '-' (removed) or '+' \
         (added), '@@', '*** End of File' or a file header, found ' y'",
    );
    check(
        "*** Begin Patch\n*** Rename File: a\n*** End Patch",
        "error: line 2: expected a file header ('*** Add File: PATH', '*** Delete File: PATH' or \
         '*** Update File: PATH') or '*** End Patch', found '*** Rename File: a'",
    );
    check(
        "*** Begin Patch\n*** Add File: new.txt\n*** End Patch",
        "error: line 2: '*** Add File: new.txt' has no lines: expected lines starting with '+' after it",
    );
    check(
        "*** Begin Patch\n*** Update File: test.py\n*** End Patch",
        "error: line 2: '*** Update File: test.py' has no hunk: expected '@@' and lines starting \
         with ' ', '-' or '+' after it",
    );
    check(
        "*** Begin Patch\n*** Update File: a\n@@\n*** End Patch",
        "error: line 4: the hunk has no lines: expected lines starting with ' ', '-' or '+'",
    );
    check(
        "*** Begin Patch\n*** Update File: a\n@@\n*** End of File\n*** End Patch",
        "error: line 4: the hunk has no lines: expected lines starting with ' ', '-' or '+'",
    );
    check(
        "*** Begin Patch\n*** Delete File:\n*** End Patch",
        "error: line 2: expected a path after '*** Delete File: '",
    );
    check(
        "*** Begin Patch\n*** Delete File: a\n*** End Patch\nrm -rf /\n",
        "error: line 4: expected nothing after '*** End Patch', found 'rm -rf /'",
    );
    check(
        "*** Begin Patch\n*** End Patch",
        "error: line 2: the patch names no file: expected a file header after '*** Begin Patch'",
    );
    // The heredoc opener without its closer is not a patch.
    check(
        "<<'EOF'\n*** Begin Patch\n*** Delete File: x\n*** End Patch\n",
        "error: line 1: expected '*** Begin Patch' as the first line, found '<<'EOF''",
    );
}

#[test]
fn limits() {
    let big = format!(
        "*** Begin Patch\n*** Add File: a\n+{}\n*** End Patch",
        "x".repeat(MAX_PATCH_BYTES)
    );
    check(
        &big,
        &format!(
            "error: the patch is {} bytes, over the 16777216-byte limit: split it into several patches",
            big.len()
        ),
    );
    let many: String = (0..=MAX_PATCH_FILES).map(|i| format!("*** Delete File: f{i}\n")).collect();
    check(
        &format!("*** Begin Patch\n{many}*** End Patch"),
        "error: the patch names 1001 files, over the limit of 1000: split it into several patches",
    );
    let most: String = (0..MAX_PATCH_FILES).map(|i| format!("*** Delete File: f{i}\n")).collect();
    let patch = parse(&format!("*** Begin Patch\n{most}*** End Patch")).unwrap();
    assert_eq!(patch.files.len(), MAX_PATCH_FILES);
}
