//! apply_patch: the Codex envelope's cases, all or nothing across files, the fence, and a
//! SIGKILL at each step of the commit recovered at the next start. See: issue #25.

use std::os::unix::process::ExitStatusExt;

use serde_json::json;

use crate::harness::{replay_command, replay_command_with_kill_hook, Server, TestEnv};

fn patch(body: &str) -> String {
    format!("*** Begin Patch\n{body}*** End Patch\n")
}

/// `apply_patch` with `patch` relative to the root; the reply's text.
#[track_caller]
fn apply(server: &mut Server, env: &TestEnv, body: &str) -> String {
    let args = json!({"patch": patch(body), "workingDirectory": env.p("root")});
    server.call_text("apply_patch", args)
}

#[track_caller]
fn apply_err(server: &mut Server, env: &TestEnv, body: &str, code: i64) -> String {
    let args = json!({"patch": patch(body), "workingDirectory": env.p("root")});
    server.call_err("apply_patch", args, code).message
}

#[test]
fn add_update_delete_and_move_in_one_patch() {
    let env = TestEnv::new(
        &[],
        &[
            ("root/a.txt", "one\ntwo\nthree\n"),
            ("root/b.txt", "keep\nold\n"),
            ("root/d.txt", "d\n"),
        ],
    );
    let mut server = Server::start(&env);
    let reply = apply(
        &mut server,
        &env,
        "*** Add File: new/c.txt\n+c1\n+c2\n\
         *** Update File: a.txt\n@@\n one\n-two\n+TWO\n three\n\
         *** Update File: b.txt\n*** Move to: moved/e.txt\n keep\n-old\n+new\n\
         *** Delete File: d.txt\n",
    );
    let root = env.p("root");
    assert_eq!(
        reply,
        format!(
            "A {root}/new/c.txt\nM {root}/a.txt\nR {root}/b.txt -> {root}/moved/e.txt\nD {root}/d.txt"
        )
    );
    assert_eq!(env.read_string("root/new/c.txt"), "c1\nc2\n");
    assert_eq!(env.read_string("root/a.txt"), "one\nTWO\nthree\n");
    assert_eq!(env.read_string("root/moved/e.txt"), "keep\nnew\n");
    assert!(!env.exists("root/b.txt"));
    assert!(!env.exists("root/d.txt"));
}

/// Each row: the file's text, the patch's Update body for it, the text after.
#[test]
fn update_rows() {
    let rows: &[(&str, &str, &str)] = &[
        // `@@ anchor` picks the second of two equal blocks.
        (
            "fn a() {\n    x = 1;\n}\nfn b() {\n    x = 1;\n}\n",
            "@@ fn b() {\n-    x = 1;\n+    x = 2;\n",
            "fn a() {\n    x = 1;\n}\nfn b() {\n    x = 2;\n}\n",
        ),
        // `*** End of File` matches at the end.
        ("x\ny\nx\n", "@@\n-x\n+z\n*** End of File\n", "x\ny\nz\n"),
        // Trailing whitespace in the file is tolerated, and kept on context lines.
        ("a  \nb\nc\n", "@@\n a\n-b\n+B\n", "a  \nB\nc\n"),
        // Leading whitespace too.
        ("    a\n    b\n", "@@\n a\n-b\n+    B\n", "    a\n    B\n"),
        // CRLF stays CRLF, also for the lines the hunk adds.
        ("a\r\nb\r\n", "@@\n a\n-b\n+B\n+C\n", "a\r\nB\r\nC\r\n"),
        // Two hunks, in order.
        ("1\n2\n3\n4\n5\n6\n", "@@\n-2\n+two\n@@\n-5\n+five\n", "1\ntwo\n3\n4\nfive\n6\n"),
    ];
    let env = TestEnv::new(&[], &[]);
    let mut server = Server::start(&env);
    for (i, (before, hunks, after)) in rows.iter().enumerate() {
        let name = format!("f{i}.txt");
        env.write(&format!("root/{name}"), before);
        apply(&mut server, &env, &format!("*** Update File: {name}\n{hunks}"));
        assert_eq!(env.read_string(&format!("root/{name}")), *after, "row {i}: {hunks:?}");
    }
}

#[test]
fn ambiguous_context_is_refused_and_nothing_changes() {
    let env = TestEnv::new(&[], &[("root/f.txt", "x = 1;\ny\nx = 1;\n")]);
    let mut server = Server::start(&env);
    let before = env.snapshot();
    let message =
        apply_err(&mut server, &env, "*** Update File: f.txt\n-x = 1;\n+x = 2;\n", -32603);
    assert!(message.contains("match at line 1 and at line 3"), "{message}");
    assert_eq!(before.diff(&env.snapshot()), "");
}

#[test]
fn a_miss_names_the_file_and_hunk_and_shows_the_nearest_text() {
    let env = TestEnv::new(&[], &[("root/f.txt", "let total = compute(a, b);\n")]);
    let mut server = Server::start(&env);
    let message = apply_err(
        &mut server,
        &env,
        "*** Update File: f.txt\n-let total = compute(a, c);\n+let total = 0;\n",
        -32603,
    );
    assert!(message.contains("f.txt (patch line 3): hunk 1:"), "{message}");
    assert!(message.contains("compute(a, b)"), "no nearest text: {message}");
}

/// The third of three files fails: the first two are left byte-identical.
#[test]
fn all_or_nothing_when_the_third_file_fails() {
    let env = TestEnv::new(&[], &[("root/a", "a\n"), ("root/b", "b\n"), ("root/c", "c\n")]);
    let mut server = Server::start(&env);
    let before = env.snapshot();
    apply_err(
        &mut server,
        &env,
        "*** Update File: a\n-a\n+A\n*** Update File: b\n-b\n+B\n*** Update File: c\n-nope\n+C\n",
        -32603,
    );
    assert_eq!(before.diff(&env.snapshot()), "");
}

/// Each row: a malformed patch and what its -32602 message says.
#[test]
fn malformed_patches_name_the_line() {
    let env = TestEnv::new(&[], &[("root/f.txt", "f\n")]);
    let mut server = Server::start(&env);
    let rows: &[(&str, &str)] = &[
        ("*** Begin Patch\n*** Add File: n\n+n\n", "line 4: expected '*** End Patch'"),
        (
            "*** Begin Patch\n*** Update File: f.txt\n-f\nf2\n*** End Patch",
            "line 4: expected a hunk line",
        ),
        (
            "*** Begin Patch\n*** Add File: f.txt\n+x\n*** End Patch",
            "line 2: '*** Add File: f.txt' names a file that exists",
        ),
        (
            "*** Begin Patch\n*** Update File: no.txt\n-x\n+y\n*** End Patch",
            "line 2: '*** Update File: no.txt' names no file",
        ),
    ];
    let before = env.snapshot();
    for (text, expect) in rows {
        let args = json!({"patch": text, "workingDirectory": env.p("root")});
        let message = server.call_err("apply_patch", args, -32602).message;
        assert!(message.contains(expect), "{text:?}: {message}");
    }
    assert_eq!(before.diff(&env.snapshot()), "");
}

#[test]
fn too_many_files_are_refused_up_front() {
    let env = TestEnv::new(&[], &[]);
    let mut server = Server::start(&env);
    let body: String = (0..1001).map(|i| format!("*** Add File: f{i}\n+x\n")).collect();
    let message = apply_err(&mut server, &env, &body, -32602);
    assert!(message.contains("names 1001 files, over the limit of 1000"), "{message}");
    assert!(!env.exists("root/f0"));
}

/// Adds, moves and deletes outside the allowed directories or under `:ro` are refused before
/// any file changes, also when they come last.
#[test]
fn read_only_and_outside_paths_are_refused_before_anything_changes() {
    let env = TestEnv::new(&["ro"], &[("root/a", "a\n"), ("ro/r", "r\n"), ("out", "o\n")]);
    let mut server = Server::start_also(&env, &[("ro", "ro")]);
    let (ro, out) = (env.p("ro"), env.p("out"));
    let lasts = [
        format!("*** Add File: {ro}/new\n+x\n"),
        format!("*** Delete File: {ro}/r\n"),
        format!("*** Update File: {ro}/r\n-r\n+R\n"),
        format!("*** Update File: a2\n*** Move to: {ro}/moved\n-a\n+A\n"),
        format!("*** Add File: {out}2\n+x\n"),
        format!("*** Delete File: {out}\n"),
    ];
    env.write("root/a2", "a\n");
    let before = env.snapshot();
    for last in &lasts {
        let body = format!("*** Update File: a\n-a\n+A\n{last}");
        let args = json!({"patch": patch(&body), "workingDirectory": env.p("root")});
        let error = server.call("apply_patch", args).expect_error(-32001);
        assert!(!error.message.is_empty(), "{last}");
        assert_eq!(before.diff(&env.snapshot()), "", "{last}");
    }
}

#[test]
fn dry_run_shows_the_diff_and_writes_nothing() {
    let env = TestEnv::new(&[], &[("root/f.txt", "a\nb\n")]);
    let mut server = Server::start(&env);
    let before = env.snapshot();
    let body = patch("*** Update File: f.txt\n a\n-b\n+B\n*** Add File: n.txt\n+n\n");
    let args = json!({"patch": body, "workingDirectory": env.p("root"), "dryRun": true});
    let text = server.call_text("apply_patch", args);
    let root = env.p("root");
    assert!(text.starts_with(&format!("M {root}/f.txt\n--- {root}/f.txt\n")), "{text}");
    assert!(text.contains("-b\n+B\n"), "{text}");
    assert!(text.contains(&format!("A {root}/n.txt\n")) && text.ends_with("+n"), "{text}");
    assert_eq!(before.diff(&env.snapshot()), "");
}

/// A file's name under the root and its content (`None`: absent).
type FileState = (&'static str, Option<&'static str>);

/// A server SIGKILLed after each step of a three-file commit (`REPLAY_JOURNAL_KILL_AT`, debug
/// builds), four patch shapes each: 20 kills. After the next server's start, every file is all
/// old or all new, the same for all, and no temp file or backup is left.
#[test]
fn sigkill_at_each_commit_step_leaves_all_old_or_all_new_after_restart() {
    if !cfg!(debug_assertions) {
        return;
    }
    let shapes: [(&str, &[FileState]); 4] = [
        (
            "*** Update File: a\n-a\n+A\n*** Update File: b\n-b\n+B\n*** Update File: c\n-c\n+C\n",
            &[("a", Some("A\n")), ("b", Some("B\n")), ("c", Some("C\n"))],
        ),
        (
            "*** Add File: n\n+n\n*** Delete File: b\n*** Update File: c\n-c\n+C\n",
            &[("n", Some("n\n")), ("b", None), ("c", Some("C\n"))],
        ),
        (
            "*** Update File: a\n*** Move to: m\n-a\n+M\n*** Delete File: c\n",
            &[("a", None), ("m", Some("M\n")), ("c", None)],
        ),
        (
            "*** Delete File: a\n*** Delete File: b\n*** Add File: sub/s\n+s\n",
            &[("a", None), ("b", None), ("sub/s", Some("s\n"))],
        ),
    ];
    let steps = ["planned", "staged", "committed", "applied", "cleaned"];
    let old = [("a", Some("a\n")), ("b", Some("b\n")), ("c", Some("c\n"))];
    let mut kills = 0;
    for (shape, (body, new)) in shapes.iter().enumerate() {
        for step in steps {
            let env = TestEnv::new(&[], &[("root/a", "a\n"), ("root/b", "b\n"), ("root/c", "c\n")]);
            let state = env.p("state");
            let allow = format!("{}:rw", env.p("root"));
            let mut cmd = replay_command_with_kill_hook();
            cmd.args(["--mcp-server", "--allow", &allow]);
            cmd.env("XDG_STATE_HOME", &state).env("REPLAY_JOURNAL_KILL_AT", step);
            let mut server = Server::from_command(cmd);
            server.initialize("2025-06-18");
            let args = json!({"patch": patch(body), "workingDirectory": env.p("root")});
            server.send(&json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                "params": {"name": "apply_patch", "arguments": args}}));
            let (replies, status) = server.finish();
            let what = format!("shape {shape}, killed after {step}");
            assert_eq!(status.signal(), Some(9), "{what}: {replies:?}");
            kills += 1;

            // The next server recovers at its start.
            let mut cmd = replay_command();
            cmd.args(["--mcp-server", "--allow", &allow]).env("XDG_STATE_HOME", &state);
            let mut server = Server::from_command(cmd);
            server.initialize("2025-06-18");
            let listed = server.call_text("list_allowed_directories", json!({}));
            assert!(!listed.is_empty());
            let expect_new = matches!(step, "committed" | "applied" | "cleaned");
            // Every file the old tree or the patch names, with what it holds in the one or
            // the other.
            let mut files: Vec<(&str, Option<&str>)> = Vec::new();
            for (name, content) in old {
                let patched = new.iter().find(|(n, _)| *n == name).map(|(_, c)| *c);
                files.push((name, if expect_new { patched.unwrap_or(content) } else { content }));
            }
            for (name, content) in new.iter().filter(|(n, _)| !old.iter().any(|(o, _)| o == n)) {
                files.push((name, if expect_new { *content } else { None }));
            }
            for (name, content) in files {
                let rel = format!("root/{name}");
                match content {
                    Some(content) => assert_eq!(env.read_string(&rel), content, "{what}: {name}"),
                    None => assert!(!env.exists(&rel), "{what}: {name} is there"),
                }
            }
            let leftovers: Vec<String> = env
                .names("root")
                .into_iter()
                .filter(|name| name.starts_with(".replay-patch."))
                .collect();
            assert_eq!(leftovers, Vec::<String>::new(), "{what}");
        }
    }
    assert_eq!(kills, 20);
}
