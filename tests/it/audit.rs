//! The audit log (`--audit-log FILE`): a JSON line per tool call, whole after a SIGKILL,
//! rotated at its size bound, never holding contents or output. See: issue #26.

use std::os::unix::fs::PermissionsExt;

use serde_json::{json, Value};

use crate::harness::{replay_command, run_cli, Server, TestEnv};

/// Every line of `text`, parsed; a line that is not JSON fails the test.
#[track_caller]
fn lines(text: &str) -> Vec<Value> {
    assert!(text.is_empty() || text.ends_with('\n'), "a cut line at the end: {text:?}");
    text.lines()
        .map(|line| {
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}"))
        })
        .collect()
}

#[test]
fn every_call_is_a_whole_json_line_even_after_a_sigkill() {
    let env = TestEnv::new(&["root"], &[("root/a.txt", "TOPSECRET-CONTENT\n")]);
    let log = env.path("audit.jsonl");
    let allow = format!("{}:rw", env.p("root"));
    let log_arg = log.display().to_string();
    let mut server =
        Server::start_with(["--mcp-server", "--allow", &allow, "--audit-log", &log_arg]);
    server.call_text("read_file", json!({"path": "a.txt"}));
    server.call_err("read_file", json!({"path": "/etc/passwd"}), -32001);
    server.call_text("write_file", json!({"path": "b.txt", "content": "WRITTEN-CONTENT"}));
    server.call("execute_command", json!({"command": "echo COMMAND-OUTPUT-$((6*7))"}));
    // Pipelined calls still in flight when the server is killed: whatever was written of
    // them is whole lines.
    for i in 0..20 {
        server.send(&json!({"jsonrpc": "2.0", "id": 1000 + i, "method": "tools/call",
            "params": {"name": "get_file_info", "arguments": {"path": "a.txt"}}}));
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(server.pid() as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let _ = server.finish();

    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!text.contains("TOPSECRET") && !text.contains("WRITTEN-CONTENT"), "{text}");
    assert!(!text.contains("COMMAND-OUTPUT-42"), "{text}");
    let mode = std::fs::metadata(&log).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let lines = lines(&text);
    assert!(lines.len() >= 4, "{text}");
    for line in &lines {
        for key in
            ["time", "client", "tool", "paths", "outcome", "bytesIn", "bytesOut", "durationMs"]
        {
            assert!(line.get(key).is_some(), "no {key}: {line}");
        }
        assert_eq!(line["client"], json!({"name": "replay-it", "version": "0"}), "{line}");
        let time = line["time"].as_str().unwrap();
        assert!(time.len() == 24 && time.ends_with('Z') && time.as_bytes()[10] == b'T', "{time}");
    }
    let read = &lines[0];
    assert_eq!(read["tool"], "read_file");
    assert_eq!(read["outcome"], "ok");
    assert_eq!(read["paths"], json!([env.p("root/a.txt")]));
    assert!(read["bytesOut"].as_u64().unwrap() > 0 && read["bytesIn"].as_u64().unwrap() > 0);
    assert_eq!(lines[1]["outcome"], -32001, "{}", lines[1]);
    assert_eq!(lines[1]["paths"], json!(["/etc/passwd"]), "{}", lines[1]);
    assert_eq!(lines[2]["paths"], json!([env.p("root/b.txt")]), "{}", lines[2]);
    assert_eq!(lines[3]["tool"], "execute_command");
    assert_eq!(lines[3]["command"], "echo COMMAND-OUTPUT-$((6*7))");
}

#[test]
fn the_log_rotates_at_its_bound_keeping_one_old_file() {
    let env = TestEnv::new(&["root"], &[("root/a.txt", "a")]);
    let log = env.path("audit.jsonl");
    let allow = format!("{}:rw", env.p("root"));
    let log_arg = log.display().to_string();
    let mut server = Server::start_with([
        "--mcp-server",
        "--allow",
        &allow,
        "--audit-log",
        &log_arg,
        "--audit-log-size",
        "2K",
    ]);
    for _ in 0..40 {
        server.call_text("read_file", json!({"path": "a.txt"}));
    }
    server.finish();
    let current = std::fs::read_to_string(&log).unwrap();
    let old = std::fs::read_to_string(env.path("audit.jsonl.1")).unwrap();
    assert!(current.len() <= 2048 && !current.is_empty(), "{}", current.len());
    assert!(old.len() <= 2048 && !old.is_empty(), "{}", old.len());
    let (current, old) = (lines(&current), lines(&old));
    // The old file holds the lines just before the current ones: together, the latest calls.
    assert!(old.len() + current.len() < 40);
    assert!(old.iter().chain(&current).all(|l| l["tool"] == "read_file"));
    let mode = std::fs::metadata(env.path("audit.jsonl.1")).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
}

#[test]
fn an_audit_log_that_cannot_be_opened_is_a_usage_error() {
    let env = TestEnv::new(&["root"], &[]);
    let mut cmd = replay_command();
    let log = env.p("missing/dir/audit.jsonl");
    cmd.args(["--mcp-server", "--allow", &env.p("root"), "--audit-log", &log]);
    let out = run_cli(cmd, "");
    assert_eq!(out.status.code(), Some(2), "{}", out.stderr);
    assert!(out.stderr.contains(&format!("--audit-log {log}")), "{}", out.stderr);
}
