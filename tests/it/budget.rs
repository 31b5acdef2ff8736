//! The reply budget: under the default `--max-reply-tokens` (20,000) no tool's text goes over
//! 20,000 bytes, hence over 20,000 o200k tokens (a token is at least one byte), and each tool
//! that reaches it says what it left out and how to get the rest; `0` gives whole replies.

use serde_json::{json, Value};

use crate::harness::{path_str, replay_command, run_cli, Server, TestEnv};

/// The default bound, in tokens and so in bytes of text at most.
const BOUND: usize = 20_000;

/// A server on `env`'s root with `args` after `--allow`.
fn server(env: &TestEnv, args: &[&str]) -> Server {
    let allow = format!("{}:rw", path_str(&env.root()));
    let mut all = vec!["--mcp-server", "--allow", allow.as_str()];
    all.extend_from_slice(args);
    Server::start_with(all)
}

/// `n` numbered lines of about 60 bytes: 1,000 lines are 60 KB, three times the bound.
fn lines(n: usize) -> String {
    (1..=n)
        .map(|i| format!("line {i:05} of a source file with some words in it, and more\n"))
        .collect()
}

/// The bytes of every text item of a result.
#[track_caller]
fn text_bytes(result: &Value) -> usize {
    let items = result["content"].as_array().expect("content");
    items.iter().map(|item| item["text"].as_str().map_or(0, str::len)).sum()
}

#[track_caller]
fn within_bound(result: &Value) {
    let n = text_bytes(result);
    assert!(n <= BOUND, "{n} bytes of text, over the {BOUND}-token bound");
}

#[test]
fn read_file_of_a_big_text_file_gives_whole_lines_up_to_the_bound_and_the_next_offset() {
    let text = lines(1000);
    let env = TestEnv::new(&[], &[("root/big.txt", text.as_str())]);
    let mut server = server(&env, &[]);
    let reply = server.call("read_file", json!({"path": env.p("root/big.txt")}));
    within_bound(reply.result());
    let texts = reply.texts();
    assert_eq!(texts.len(), 2, "{texts:?}");
    let shown = texts[0].lines().count();
    assert!(shown > 100 && text.starts_with(&texts[0]), "{shown} lines");
    let next = shown + 1;
    assert_eq!(
        texts[1],
        format!("[lines 1-{shown} of 1000; cut at the 20,000-token cap; next: offset={next}]")
    );
    // The rest comes page by page from there.
    let page = server.call("read_file", json!({"path": env.p("root/big.txt"), "offset": next}));
    within_bound(page.result());
    assert!(page.texts()[0].starts_with(&format!("line {next:05} ")), "{:?}", page.texts());
}

#[test]
fn without_a_bound_read_file_returns_the_whole_file() {
    let text = lines(1000);
    let env = TestEnv::new(&[], &[("root/big.txt", text.as_str())]);
    let mut server = server(&env, &["--max-reply-tokens", "0"]);
    assert_eq!(server.call_text("read_file", json!({"path": env.p("root/big.txt")})), text);
}

#[test]
fn a_smaller_bound_cuts_sooner() {
    let text = lines(1000);
    let env = TestEnv::new(&[], &[("root/big.txt", text.as_str())]);
    let mut server = server(&env, &["--max-reply-tokens", "3000"]);
    let reply = server.call("read_file", json!({"path": env.p("root/big.txt")}));
    assert!(text_bytes(reply.result()) <= 3000, "{}", text_bytes(reply.result()));
    assert!(reply.texts()[1].contains("cut at the 3,000-token cap"), "{:?}", reply.texts()[1]);
}

#[test]
fn a_binary_file_is_still_read_whole() {
    let mut bytes = vec![0u8; 64 * 1024];
    bytes[1] = 7;
    let env = TestEnv::new(&[], &[]);
    env.write("root/blob.bin", &bytes);
    let mut server = server(&env, &[]);
    let reply = server.call("read_file", json!({"path": env.p("root/blob.bin")}));
    assert_eq!(reply.result()["content"][0]["type"], "resource", "{}", reply.line);
}

#[test]
fn read_multiple_files_shares_the_bound_and_names_the_file_it_cut() {
    let big = lines(1000);
    let env = TestEnv::new(&[], &[("root/big.txt", big.as_str()), ("root/small.txt", "small\n")]);
    let mut server = server(&env, &[]);
    let paths = [env.p("root/big.txt"), env.p("root/small.txt"), env.p("root/big.txt")];
    let reply = server.call("read_multiple_files", json!({"paths": paths}));
    within_bound(reply.result());
    let texts = reply.texts();
    assert_eq!(texts[1], format!("{}:\nsmall\n", env.p("root/small.txt")));
    for cut in [&texts[0], &texts[2]] {
        assert!(cut.starts_with(&format!("{}:\nline 00001 ", env.p("root/big.txt"))), "{cut}");
        assert!(cut.contains("; next: offset="), "{cut}");
        assert!(cut.ends_with("(cut to its share of the reply; read the rest with read_file)"));
    }
    // A fair share: the two big files got the same.
    assert_eq!(texts[0].len(), texts[2].len());
}

#[test]
fn a_common_word_grep_stops_at_the_bound_and_says_how_to_narrow() {
    let env = TestEnv::new(&["root/src"], &[]);
    for i in 0..40 {
        env.write(&format!("root/src/f{i:02}.rs"), lines(100));
    }
    let mut server = server(&env, &[]);
    let reply = server.call("grep_files", json!({"directory": env.p("root/src"), "regex": "line"}));
    within_bound(reply.result());
    let text = reply.texts().join("\n");
    assert!(
        text.starts_with("[results truncated: showing the first ")
            && text.contains("as many as fit the reply's 20,000-token bound; narrow the regex"),
        "{}",
        &text[..200]
    );
    let structured = &reply.result()["structuredContent"];
    assert_eq!(structured["truncated"], true, "{structured}");
}

#[test]
fn a_wide_tree_and_a_long_listing_stop_at_the_bound() {
    let env = TestEnv::new(&["root/d"], &[]);
    for i in 0..2000 {
        env.write(&format!("root/d/a-file-with-a-longish-name-{i:04}.txt"), "");
    }
    let mut server = server(&env, &[]);
    let tree = server.call("directory_tree", json!({"path": env.p("root/d")}));
    within_bound(tree.result());
    let note = tree.texts().last().cloned().unwrap_or_default();
    assert!(note.contains("the reply's 20,000-token bound"), "{note}");
    assert!(note.contains("smaller depth or maxEntries"), "{note}");
    let list = server.call("list_directory", json!({"path": env.p("root/d")}));
    within_bound(list.result());
    assert!(list.text().contains("entries not shown: the reply reached its 20,000-token bound"));
    let glob =
        server.call("glob_search", json!({"directory": env.p("root/d"), "globs": ["*.txt"]}));
    within_bound(glob.result());
    assert!(glob.texts().join("\n").contains("reached its 20,000-token bound"));
}

#[test]
fn a_long_command_output_keeps_its_head_and_tail_within_the_bound() {
    let env = TestEnv::new(&[], &[]);
    let mut server = server(&env, &[]);
    let reply = server.call(
        "execute_command",
        json!({"command": "seq 1 200000; seq 1 50000 >&2", "workingDirectory": env.p("root")}),
    );
    within_bound(reply.result());
    let out = &reply.texts()[0];
    assert!(out.starts_with("1\n2\n3\n"), "{}", &out[..20]);
    assert!(out.ends_with("199999\n200000\n[exit code: 0]"), "{}", &out[out.len() - 40..]);
    assert!(out.contains("cut here to fit the reply's 20,000-token bound"), "no note");
    let err = &reply.texts()[1];
    assert!(err.starts_with("[stderr]\n1\n2\n") && err.ends_with("\n50000\n"));
    // The structured content is the same cut.
    let structured = &reply.result()["structuredContent"];
    assert!(structured["stdout"].as_str().unwrap_or_default().len() <= BOUND, "{structured}");
}

#[test]
fn max_reply_tokens_must_be_a_whole_number() {
    let env = TestEnv::new(&[], &[]);
    let root = path_str(&env.root());
    for bad in ["-5", "many", "1.5", ""] {
        let mut cmd = replay_command();
        cmd.args(["--mcp-server", "--allow", root.as_str(), "--max-reply-tokens", bad]);
        let out = run_cli(cmd, "");
        assert_eq!(out.status.code(), Some(2), "{bad:?}: stderr {}", out.stderr);
        assert!(
            out.stderr.contains("--max-reply-tokens") && out.stderr.contains("whole number"),
            "{bad:?}: {}",
            out.stderr
        );
        assert_eq!(out.stdout, "");
    }
}

/// A budgeted read of a 16 MiB file is answered within the memory of its reply and of the
/// scan that counts the file's lines (a buffer of a few MiB), not of the file: read whole, the
/// file and its reply take 32 MiB and more.
#[cfg(target_os = "linux")]
#[test]
fn a_budgeted_read_of_a_16_mib_file_holds_its_reply_not_the_file() {
    let env = TestEnv::new(&[], &[]);
    let line = "x".repeat(63) + "\n";
    env.write("root/huge.txt", line.repeat(16 << 20 >> 6));
    let grew_kib = |args: &[&str]| {
        let mut server = server(&env, args);
        let before_kib = server.peak_rss_kib();
        let reply = server.call("read_file", json!({"path": env.p("root/huge.txt")}));
        assert!(reply.value.get("result").is_some(), "{}", &reply.line[..200]);
        server.peak_rss_kib().saturating_sub(before_kib)
    };
    let (budgeted, whole) = (grew_kib(&[]), grew_kib(&["--max-reply-tokens", "0"]));
    assert!(whole > 32 * 1024, "read whole, the peak RSS grew by only {whole} KiB");
    assert!(budgeted < 8 * 1024, "the peak RSS grew by {budgeted} KiB for a 20 kB reply");
}

/// A session's output is read within the bound, from the offset the reply names.
#[test]
fn a_session_reads_its_output_within_the_bound_and_names_the_next_offset() {
    let env = TestEnv::new(&[], &[]);
    let mut server = server(&env, &[]);
    let args = json!({"command": "seq 1 100000", "background": true, "waitSeconds": 30,
                      "workingDirectory": env.p("root")});
    let reply = server.call("execute_command", args);
    within_bound(reply.result());
    let text = reply.texts().join("\n");
    assert!(text.starts_with("1\n2\n3\n"), "{}", &text[..20]);
    let tail = &text[text.len() - 80..];
    assert!(tail.contains(", next offset: ") && tail.contains(" more bytes]"), "{tail}");
}

/// apply_patch's dry run keeps its diffs within the bound, names the file it left out, and
/// changes nothing.
#[test]
fn a_patch_dry_run_keeps_its_diffs_within_the_bound() {
    let env = TestEnv::new(&["root"], &[]);
    let mut patch = String::from("*** Begin Patch\n");
    let mut before = Vec::new();
    for i in 0..4 {
        let text: String = (0..2_000).map(|n| format!("line {n} of file {i}\n")).collect();
        env.write(&format!("root/f{i}.txt"), text.as_bytes());
        before.push(text);
        patch.push_str(&format!("*** Update File: f{i}.txt\n"));
        for n in (0..2_000).step_by(2) {
            patch.push_str(&format!("@@\n-line {n} of file {i}\n+LINE {n} of file {i}\n"));
        }
    }
    patch.push_str("*** End Patch\n");
    let mut server = server(&env, &[]);
    let args = json!({"patch": patch, "workingDirectory": env.p("root"), "dryRun": true});
    let reply = server.call("apply_patch", args);
    within_bound(reply.result());
    let text = reply.text();
    assert!(text.contains("[diff not shown: the reply reached its 20,000-token bound"), "{text}");
    for (i, text) in before.iter().enumerate() {
        assert_eq!(env.read(&format!("root/f{i}.txt")), text.as_bytes(), "f{i}.txt");
    }
}
