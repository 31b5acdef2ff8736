//! The command line: `--mcp-server`, `--allow PATH[:rw|:ro]`, positional dirs, `~`, `--help`, `--version` and exit codes.

use std::process::Command;

use serde_json::json;

use crate::harness::{path_str, replay_command, run_cli, Server, TestEnv};

fn replay(args: &[&str]) -> Command {
    let mut cmd = replay_command();
    cmd.args(args);
    cmd
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"it","version":"0"}}}
"#;

#[test]
fn without_mcp_server_flag_exits_2_with_usage() {
    let env = TestEnv::new(&[], &[]);
    let root = path_str(&env.root());
    for args in [vec![], vec!["--allow", root.as_str()], vec![root.as_str()]] {
        let out = run_cli(replay(&args), INIT);
        assert_eq!(out.status.code(), Some(2), "{args:?}: stderr {}", out.stderr);
        assert!(
            out.stderr.to_lowercase().contains("usage"),
            "{args:?}: no usage on stderr: {}",
            out.stderr
        );
        assert_eq!(out.stdout, "", "{args:?}: stdout must stay empty");
    }
}

#[test]
fn unknown_flag_is_a_usage_error() {
    let out = run_cli(replay(&["--mcp-server", "--no-such-flag"]), INIT);
    assert_eq!(out.status.code(), Some(2), "stderr {}", out.stderr);
    assert!(out.stderr.contains("--no-such-flag"), "{}", out.stderr);
    assert_eq!(out.stdout, "");
}

#[test]
fn allow_of_a_missing_path_fails_before_serving() {
    let env = TestEnv::new(&[], &[]);
    let missing = env.p("does-not-exist");
    for allow in [missing.clone(), format!("{missing}:ro"), format!("{missing}:rw")] {
        let out = run_cli(
            replay(&["--mcp-server", "--allow", &path_str(&env.root()), "--allow", &allow]),
            INIT,
        );
        assert!(!out.status.success(), "{allow}: exit {:?}", out.status);
        assert!(
            out.stderr.contains(&missing),
            "{allow}: stderr does not name the path: {}",
            out.stderr
        );
        assert_eq!(out.stdout, "", "{allow}: served before failing");
    }
}

#[test]
fn help_exits_0_and_mentions_allow() {
    let out = run_cli(replay(&["--help"]), "");
    assert_eq!(out.status.code(), Some(0), "stderr {}", out.stderr);
    let text = format!("{}{}", out.stdout, out.stderr);
    assert!(text.contains("--allow"), "{text}");
    assert!(text.contains("--mcp-server"), "{text}");
}

#[test]
fn version_exits_0_and_prints_the_version() {
    let out = run_cli(replay(&["--version"]), "");
    assert_eq!(out.status.code(), Some(0), "stderr {}", out.stderr);
    let text = format!("{}{}", out.stdout, out.stderr);
    assert!(text.contains(env!("CARGO_PKG_VERSION")), "{text}");
}

#[test]
fn server_info_version_is_the_package_version() {
    let env = TestEnv::new(&[], &[]);
    let allow = path_str(&env.root());
    let mut server = Server::spawn(["--mcp-server", "--allow", &allow]);
    let result = server.initialize("2025-06-18");
    assert_eq!(result.pointer("/serverInfo/version"), Some(&json!(env!("CARGO_PKG_VERSION"))));
}

#[test]
fn positional_dirs_work_like_allow() {
    let env = TestEnv::new(&["second"], &[("root/a.txt", "a"), ("second/b.txt", "b")]);
    let (root, second) = (path_str(&env.root()), env.p("second"));
    let mut positional = Server::start_with(["--mcp-server", &root, &second]);
    let mut flagged = Server::start_with(["--mcp-server", "--allow", &root, "--allow", &second]);
    let listed = positional.call_text("list_allowed_directories", json!({}));
    assert_eq!(listed, flagged.call_text("list_allowed_directories", json!({})));
    assert_eq!(listed.lines().count(), 2, "{listed}");
    assert!(listed.lines().next().is_some_and(|l| l.starts_with(&format!("{root} ("))), "{listed}");
    assert_eq!(positional.call_text("read_file", json!({"path": env.p("second/b.txt")})), "b");
    assert_eq!(positional.call_text("read_file", json!({"path": "a.txt"})), "a");
}

#[test]
fn positional_dirs_with_access_suffix() {
    let env = TestEnv::new(&["second"], &[]);
    let root = format!("{}:rw", path_str(&env.root()));
    let second = format!("{}:ro", env.p("second"));
    let mut server = Server::start_with(["--mcp-server", &root, &second]);
    let listed = server.call_text("list_allowed_directories", json!({}));
    let expected = [
        format!("{} (read-write)", path_str(&env.root())),
        format!("{} (read-only)", env.p("second")),
    ];
    assert_eq!(listed.lines().collect::<Vec<_>>(), expected);
}

#[test]
fn no_directories_serves_and_denies_every_path() {
    let env = TestEnv::new(&[], &[("root/a.txt", "a")]);
    let before = env.snapshot();
    let mut server = Server::start_with(["--mcp-server"]);
    server.call_err("read_file", json!({"path": env.p("root/a.txt")}), -32001);
    server.call_err("write_file", json!({"path": env.p("root/new.txt"), "content": "x"}), -32001);
    server.call_err("read_file", json!({"path": "relative.txt"}), -32001);
    server.call_err("list_directory", json!({"path": "/"}), -32001);
    assert_eq!(server.request("ping", json!({})).result(), &json!({}));
    assert_eq!(before.diff(&env.snapshot()), "");
}

#[test]
fn tilde_expands_to_home() {
    let env = TestEnv::new(&["home/proj"], &[("home/proj/p.txt", "p")]);
    for allow in ["~/proj", "~/proj:ro"] {
        let mut cmd = replay(&["--mcp-server", "--allow", allow]);
        cmd.env("HOME", env.p("home"));
        let mut server = Server::from_command(cmd);
        server.initialize("2025-06-18");
        let listed = server.call_text("list_allowed_directories", json!({}));
        assert!(listed.starts_with(&format!("{} (", env.p("home/proj"))), "{allow}: {listed}");
        assert_eq!(server.call_text("read_file", json!({"path": env.p("home/proj/p.txt")})), "p");
    }
}

#[test]
fn tilde_alone_is_home() {
    let env = TestEnv::new(&["home"], &[]);
    let mut cmd = replay(&["--mcp-server", "--allow", "~:ro"]);
    cmd.env("HOME", env.p("home"));
    let mut server = Server::from_command(cmd);
    server.initialize("2025-06-18");
    assert_eq!(
        server.call_text("list_allowed_directories", json!({})).trim_end(),
        format!("{} (read-only)", env.p("home"))
    );
}

#[test]
fn stdout_carries_only_jsonrpc_lines() {
    // Every line is checked by the harness as it is read; this drives a mix of successes,
    // errors and garbage through one session and reads everything up to EOF.
    let env = TestEnv::new(&[], &[("root/a.txt", "a")]);
    let mut server = Server::start(&env);
    server.send_raw("garbage");
    server.send_raw(r#"{"jsonrpc":"2.0","id":"x1","method":"tools/call","params":{"name":"read_file","arguments":{"path":"/etc/passwd"}}}"#);
    server.send_raw(r#"{"jsonrpc":"2.0","id":"x2","method":"tools/call","params":{"name":"read_file","arguments":{"path":"a.txt"}}}"#);
    server.send_raw(r#"{"jsonrpc":"2.0","id":"x3","method":"nope"}"#);
    let (messages, status) = server.finish();
    assert_eq!(messages.len(), 4, "{:?}", messages.iter().map(|m| &m.line).collect::<Vec<_>>());
    assert_eq!(status.code(), Some(0));
}
