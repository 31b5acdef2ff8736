//! replay without an MCP client: `replay call`, `replay tools`, `replay schema` and
//! `replay print-config`, their output and exit statuses, and subcommands against directories
//! that share their names.

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

use crate::harness::{
    path_str, replay_command, run_cli, CliOutput, Server, TestEnv, BIN, WRITING_TOOLS,
};

fn replay(args: &[&str]) -> Command {
    let mut cmd = replay_command();
    cmd.args(args);
    cmd
}

/// `replay ARGS` with `stdin`, run to completion.
fn run(args: &[&str], stdin: &str) -> CliOutput {
    run_cli(replay(args), stdin)
}

#[track_caller]
fn expect_status(out: &CliOutput, status: i32, what: &str) {
    assert_eq!(
        out.status.code(),
        Some(status),
        "{what}: status\nstdout: {}\nstderr: {}",
        out.stdout,
        out.stderr
    );
}

/// `replay call TOOL ARGS --allow ROOT:rw` plus `flags`.
fn call(env: &TestEnv, tool: &str, args: &str, flags: &[&str]) -> CliOutput {
    let allow = format!("{}:rw", path_str(&env.root()));
    let mut line = vec!["call", tool, args, "--allow", &allow];
    line.extend_from_slice(flags);
    run(&line, "")
}

// ---------------------------------------------------------------------------------------------
// replay call
// ---------------------------------------------------------------------------------------------

#[test]
fn call_prints_the_text_and_exits_0() {
    let env = TestEnv::new(&[], &[("root/a.txt", "alpha\nbeta")]);
    let out = call(&env, "read_file", r#"{"path": "a.txt"}"#, &[]);
    expect_status(&out, 0, "read_file");
    assert_eq!(out.stdout, "alpha\nbeta\n");
    assert_eq!(out.stderr, "");
}

#[test]
fn call_write_file_writes() {
    let env = TestEnv::new(&[], &[]);
    let args = json!({"path": "sub/new.txt", "content": "written\n"}).to_string();
    let out = call(&env, "write_file", &args, &[]);
    expect_status(&out, 0, "write_file");
    assert_eq!(out.stdout, format!("Successfully wrote {}\n", env.p("root/sub/new.txt")));
    assert_eq!(env.read_string("root/sub/new.txt"), "written\n");
}

#[test]
fn call_edit_file_edits() {
    let env = TestEnv::new(&[], &[("root/e.txt", "one two")]);
    let args = json!({"path": "e.txt", "edits": [{"oldText": "two", "newText": "2"}]}).to_string();
    let out = call(&env, "edit_file", &args, &[]);
    expect_status(&out, 0, "edit_file");
    assert_eq!(env.read_string("root/e.txt"), "one 2");
}

#[test]
fn call_policy_denial_exits_1_with_the_code() {
    let env = TestEnv::new(&["outside"], &[("outside/s.txt", "secret")]);
    let before = env.snapshot();
    for (tool, args) in [
        ("read_file", json!({"path": env.p("outside/s.txt")})),
        ("write_file", json!({"path": env.p("outside/new.txt"), "content": "x"})),
        ("delete_file", json!({"path": env.p("outside/s.txt")})),
        ("read_file", json!({"path": "../outside/s.txt"})),
    ] {
        let out = call(&env, tool, &args.to_string(), &[]);
        expect_status(&out, 1, tool);
        assert_eq!(out.stdout, "", "{tool}");
        assert!(out.stderr.contains("error -32001: path not allowed"), "{tool}: {}", out.stderr);
        assert!(!out.stderr.contains("secret"), "{tool}: {}", out.stderr);
    }
    assert_eq!(before.diff(&env.snapshot()), "");
}

#[test]
fn call_other_tool_errors_exit_1_with_their_codes() {
    let env = TestEnv::new(&["root/ro"], &[("root/a.txt", "a")]);
    let ro = format!("{}:ro", env.p("root/ro"));
    let rows = [
        ("read_file", r#"{"path": "missing.txt"}"#, "error -32002: "),
        // Schema validation: the tool's own -32602, not a usage error.
        ("read_file", r#"{"path": 3}"#, "error -32602: invalid params: `path`"),
        ("read_file", r#"{}"#, "error -32602: invalid params: `path` is required"),
        ("read_file", r#"[]"#, "error -32602: invalid params: `arguments`"),
        ("create_directory", r#"{"path": "a.txt"}"#, "error -32603: "),
        (
            "edit_file",
            r#"{"path": "a.txt", "edits": [{"oldText": "zz", "newText": "y"}]}"#,
            "error -32603: ",
        ),
    ];
    for (tool, args, expect) in rows {
        let out = call(&env, tool, args, &["--allow", &ro]);
        expect_status(&out, 1, args);
        assert!(out.stderr.contains(expect), "{args}: {}", out.stderr);
        assert_eq!(out.stdout, "", "{args}");
    }
    let out = call(&env, "write_file", r#"{"path": "ro/x", "content": "x"}"#, &["--allow", &ro]);
    expect_status(&out, 1, "write under a read-only root");
    assert!(out.stderr.contains("error -32001: "), "{}", out.stderr);
    assert!(!env.exists("root/ro/x"));
}

#[test]
fn call_usage_errors_exit_2() {
    let env = TestEnv::new(&[], &[("root/a.txt", "a")]);
    let root = path_str(&env.root());
    let rows: Vec<(Vec<&str>, &str)> = vec![
        (vec!["call", "cat", "{}", &root], r#"call names no tool: "cat""#),
        (vec!["call", "read_file", "{path: a.txt}", &root], "JSON-ARGS is not JSON"),
        // A directory where JSON-ARGS goes is not JSON either.
        (vec!["call", "read_file", &root], "JSON-ARGS is not JSON"),
        (vec!["call"], "<TOOL>"),
        (vec!["call", "read_file", "{}", "--no-such-flag"], "--no-such-flag"),
        (vec!["call", "read_file", "{}", "--tool-errors", "result"], "--tool-errors"),
        (vec!["call", "read_file", "{}", "--tools", "cat"], r#"--tools names no tool: "cat""#),
    ];
    for (line, expect) in rows {
        let out = run(&line, "");
        expect_status(&out, 2, &line.join(" "));
        assert!(out.stderr.contains(expect), "{line:?}: {}", out.stderr);
        assert_eq!(out.stdout, "", "{line:?}");
    }
    // The unknown tool lists the tools there are.
    let out = run(&["call", "cat", "{}"], "");
    assert!(out.stderr.contains("read_file, read_multiple_files, write_file"), "{}", out.stderr);
}

#[test]
fn call_a_missing_directory_exits_1() {
    let env = TestEnv::new(&[], &[]);
    let missing = env.p("missing");
    let out = run(&["call", "list_allowed_directories", "{}", &missing], "");
    expect_status(&out, 1, "missing directory");
    assert!(out.stderr.contains(&missing), "{}", out.stderr);
}

/// A tool the configuration leaves out is refused as the server refuses it: -32602, exit 1.
#[test]
fn call_a_left_out_tool_is_refused() {
    let env = TestEnv::new(&[], &[("root/a.txt", "a")]);
    let rows: [(&str, &str, &[&str]); 4] = [
        ("write_file", r#"{"path": "a.txt", "content": "x"}"#, &["--read-only"]),
        ("execute_command", r#"{"command": "touch ran"}"#, &["--no-exec"]),
        ("grep_files", r#"{"regex": "a", "directory": "."}"#, &["--tools", "read_file"]),
        ("delete_file", r#"{"path": "a.txt"}"#, &["--disable-tool", "delete_file"]),
    ];
    for (tool, args, flags) in rows {
        let before = env.snapshot();
        let out = call(&env, tool, args, flags);
        expect_status(&out, 1, tool);
        assert!(
            out.stderr.contains(&format!(
                "error -32602: invalid params: `name` names no tool of this server: {tool:?}"
            )),
            "{tool}: {}",
            out.stderr
        );
        assert_eq!(before.diff(&env.snapshot()), "", "{tool}");
    }
    // --read-only: even a :rw root is read-only to the tools that remain.
    let out = call(&env, "read_file", r#"{"path": "a.txt"}"#, &["--read-only"]);
    expect_status(&out, 0, "read_file --read-only");
    let out = call(&env, "list_allowed_directories", "{}", &["--read-only"]);
    assert_eq!(out.stdout, format!("{} (read-only)\n", env.p("root")));
}

#[test]
fn call_json_prints_the_result_object() {
    let env = TestEnv::new(&["root/d"], &[("root/a.txt", "a")]);
    let out = call(&env, "list_directory", r#"{"path": "."}"#, &["--json"]);
    expect_status(&out, 0, "list_directory --json");
    assert_eq!(out.stdout.lines().count(), 1, "one line: {}", out.stdout);
    let result: Value = serde_json::from_str(&out.stdout).expect("stdout is JSON");
    assert_eq!(result["content"], json!([{"type": "text", "text": "[FILE] a.txt\n[DIR]  d"}]));
    assert_eq!(
        result["structuredContent"]["entries"][1],
        json!({"name": "d", "type": "directory"})
    );
    assert!(result.get("isError").is_none(), "{result}");
    // A failure: the isError result on stdout, the message on stderr, status 1.
    let out = call(&env, "read_file", r#"{"path": "/etc/passwd"}"#, &["--json"]);
    expect_status(&out, 1, "read_file --json, refused");
    let result: Value = serde_json::from_str(&out.stdout).expect("stdout is JSON");
    assert_eq!(result["isError"], true);
    assert_eq!(result["structuredContent"]["error"]["code"], -32001);
    assert!(out.stderr.contains("error -32001: "), "{}", out.stderr);
}

#[test]
fn call_binary_content_is_a_note_in_text_and_data_in_json() {
    let env = TestEnv::new(&[], &[]);
    env.write("root/p.png", b"\x89PNG\r\n\x1a\n\0\0");
    let out = call(&env, "read_file", r#"{"path": "p.png"}"#, &[]);
    expect_status(&out, 0, "read_file png");
    assert_eq!(out.stdout, "[image image/png, 10 bytes: --json gives its data as base64]\n");
    let out = call(&env, "read_file", r#"{"path": "p.png"}"#, &["--json"]);
    let result: Value = serde_json::from_str(&out.stdout).expect("stdout is JSON");
    assert_eq!(result["content"][0]["data"], "iVBORw0KGgoAAA==");
}

#[test]
fn call_takes_positional_dirs_and_arguments_from_stdin() {
    let env = TestEnv::new(&["second"], &[("second/b.txt", "bee")]);
    let (root, second) = (path_str(&env.root()), env.p("second"));
    let args = json!({"path": env.p("second/b.txt")}).to_string();
    let out = run(&["call", "read_file", "-", &root, &format!("{second}:ro")], &args);
    expect_status(&out, 0, "stdin arguments");
    assert_eq!(out.stdout, "bee\n");
    let out = run(&["call", "list_allowed_directories", "{}", &root, &format!("{second}:ro")], "");
    assert_eq!(out.stdout, format!("{root} (read-write)\n{second} (read-only)\n"));
    // No arguments at all is `{}`.
    let out = run(&["call", "list_allowed_directories", "--allow", &root], "");
    assert_eq!(out.stdout, format!("{root} (read-write)\n"));
}

#[test]
fn call_keeps_logs_off_stdout() {
    let env = TestEnv::new(&[], &[("root/a.txt", "a")]);
    let out = call(&env, "read_file", r#"{"path": "a.txt"}"#, &["--log-level", "trace"]);
    expect_status(&out, 0, "read_file --log-level trace");
    assert_eq!(out.stdout, "a\n");
    assert!(
        out.stderr.contains("allowed directory")
            || out.stderr.contains("INFO")
            || out.stderr.contains("TRACE"),
        "{}",
        out.stderr
    );
}

#[test]
fn call_execute_command_runs_in_the_allowed_directory() {
    let env = TestEnv::new(&[], &[]);
    let out = call(&env, "execute_command", r#"{"command": "pwd; touch made"}"#, &[]);
    expect_status(&out, 0, "execute_command");
    assert_eq!(out.stdout, format!("{}\n[exit code: 0]\n", env.p("root")));
    assert!(env.exists("root/made"));
    let out =
        call(&env, "execute_command", r#"{"command": "rm -rf made"}"#, &["--deny-command", "rm"]);
    expect_status(&out, 1, "denied command");
    assert!(out.stderr.contains("error -32001: "), "{}", out.stderr);
    assert!(env.exists("root/made"));
}

// ---------------------------------------------------------------------------------------------
// replay tools, replay schema
// ---------------------------------------------------------------------------------------------

fn tool_names(out: &CliOutput) -> Vec<String> {
    out.stdout
        .lines()
        .map(|l| l.split_whitespace().next().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn tools_lists_every_tool_with_one_sentence() {
    let out = run(&["tools"], "");
    expect_status(&out, 0, "tools");
    assert_eq!(out.stderr, "");
    let names = tool_names(&out);
    assert_eq!(names.len(), 19, "{}", out.stdout);
    assert_eq!(names[0], "read_file");
    assert!(
        out.stdout.contains(
            "execute_command           Run a shell command with /bin/sh -c, for builds, tests, git.\n"
        ),
        "{}",
        out.stdout
    );
    for line in out.stdout.lines() {
        assert!(line.ends_with('.'), "one sentence: {line}");
    }
}

#[test]
fn tools_respects_the_selection_flags() {
    let rows: &[(&[&str], &[&str])] = &[
        (&["--tools", "grep_files,read_file"], &["read_file", "grep_files"]),
        (&["--read-only", "--tools", "read_file,write_file"], &["read_file"]),
        (&["--tools", "execute_command,list_directory", "--no-exec"], &["list_directory"]),
        (&["--tools", "move_file,delete_file", "--disable-tool", "delete_file"], &["move_file"]),
    ];
    for (flags, expect) in rows {
        let out = run(&[&["tools"], *flags].concat(), "");
        expect_status(&out, 0, &flags.join(" "));
        assert_eq!(tool_names(&out), *expect, "{flags:?}");
    }
    let out = run(&["tools", "--read-only"], "");
    let names = tool_names(&out);
    assert_eq!(names.len(), 9, "{names:?}");
    for writer in WRITING_TOOLS {
        assert!(!names.iter().any(|n| n == writer), "{writer} listed under --read-only");
    }
    let out = run(&["tools", "--disable-tool", "cat"], "");
    expect_status(&out, 2, "tools --disable-tool cat");
    assert!(out.stderr.contains(r#"--disable-tool names no tool: "cat""#), "{}", out.stderr);
}

/// `replay tools` and a server's tools/list name the same tools under the same flags.
#[test]
fn tools_matches_the_servers_tools_list() {
    let env = TestEnv::new(&[], &[]);
    let allow = path_str(&env.root());
    for flags in [&["--read-only"][..], &["--tools", "read_file,edit_file"], &["--no-exec"]] {
        let out = run(&[&["tools"], flags].concat(), "");
        let mut server = Server::start_with([&["--mcp-server", "--allow", &allow], flags].concat());
        let result = server.request("tools/list", json!({})).result().clone();
        let listed: Vec<String> = result["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .map(|t| t["name"].as_str().expect("name").to_string())
            .collect();
        assert_eq!(tool_names(&out), listed, "{flags:?}");
    }
}

#[test]
fn schema_prints_the_input_schema_of_schemas_dir() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas");
    let mut count = 0;
    for entry in std::fs::read_dir(&dir).expect("schemas/") {
        let path = entry.expect("entry").path();
        let file: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("JSON");
        let name = file["name"].as_str().expect("name");
        let out = run(&["schema", name], "");
        expect_status(&out, 0, name);
        let printed: Value = serde_json::from_str(&out.stdout).expect("stdout is JSON");
        assert_eq!(printed, file["inputSchema"], "{name}");
        assert!(out.stdout.contains("\n  \""), "{name}: pretty-printed");
        count += 1;
    }
    assert_eq!(count, 19);
    let out = run(&["schema", "cat"], "");
    expect_status(&out, 2, "schema cat");
    assert!(out.stderr.contains(r#"schema names no tool: "cat""#), "{}", out.stderr);
    assert_eq!(out.stdout, "");
}

// ---------------------------------------------------------------------------------------------
// replay print-config
// ---------------------------------------------------------------------------------------------

fn canonical_bin() -> String {
    path_str(&std::fs::canonicalize(BIN).expect("canonical binary path"))
}

#[test]
fn print_config_json_clients() {
    let env = TestEnv::new(&["docs"], &[]);
    let root = path_str(&env.root());
    let docs = env.p("docs");
    let expected_args = json!([
        "--mcp-server",
        "--allow",
        format!("{root}:rw"),
        "--allow",
        format!("{docs}:ro"),
        "--no-exec",
        "--tool-errors",
        "result"
    ]);
    for (client, key, kind, extra) in [
        ("claude-desktop", "mcpServers", None, None),
        ("cursor", "mcpServers", None, None),
        ("vscode", "servers", Some("stdio"), None),
        ("claude-code", "mcpServers", Some("stdio"), Some("--json")),
    ] {
        let mut line = vec!["print-config", client, &root, "--allow-read", &docs, "--no-exec"];
        line.extend(["--tool-errors", "result"]);
        line.extend(extra);
        let out = run(&line, "");
        expect_status(&out, 0, client);
        let config: Value = serde_json::from_str(&out.stdout).expect("stdout is JSON");
        let entry = &config[key]["replay"];
        assert_eq!(entry["command"], json!(canonical_bin()), "{client}: {}", out.stdout);
        assert!(Path::new(entry["command"].as_str().unwrap()).is_absolute());
        assert_eq!(entry["args"], expected_args, "{client}");
        assert_eq!(entry.get("type").and_then(Value::as_str), kind, "{client}");
    }
}

#[test]
fn print_config_claude_code_is_a_command_line() {
    let env = TestEnv::new(&["my dir"], &[]);
    let dir = env.p("my dir");
    let out = run(&["print-config", "claude-code", "--allow", &dir, "--read-only"], "");
    expect_status(&out, 0, "claude-code");
    assert_eq!(
        out.stdout,
        format!(
            "claude mcp add --transport stdio --scope project replay -- {} --mcp-server --allow '{dir}:rw' --read-only\n",
            canonical_bin()
        )
    );
}

/// The printed configuration starts a server: its command and args, run as a client would.
#[test]
fn print_config_starts_a_working_server() {
    let env = TestEnv::new(&[], &[("root/a.txt", "a")]);
    let root = path_str(&env.root());
    let out = run(&["print-config", "cursor", &root, "--read-only"], "");
    let config: Value = serde_json::from_str(&out.stdout).expect("stdout is JSON");
    let entry = &config["mcpServers"]["replay"];
    let args: Vec<&str> =
        entry["args"].as_array().expect("args").iter().map(|a| a.as_str().unwrap()).collect();
    let mut server = Server::start_with(args);
    assert_eq!(server.call_text("read_file", json!({"path": "a.txt"})), "a");
    let error = server.call_err("write_file", json!({"path": "b.txt", "content": "b"}), -32602);
    assert!(error.message.contains("names no tool"), "{}", error.message);
}

#[test]
fn print_config_errors() {
    let env = TestEnv::new(&[], &[]);
    let out = run(&["print-config", "emacs"], "");
    expect_status(&out, 2, "unknown client");
    assert!(out.stderr.contains("claude-desktop"), "{}", out.stderr);
    let out = run(&["print-config", "cursor", &env.p("missing")], "");
    expect_status(&out, 1, "missing directory");
    assert!(out.stderr.contains(&env.p("missing")), "{}", out.stderr);
    let out = run(&["print-config", "cursor", "--tools", "cat"], "");
    expect_status(&out, 2, "unknown tool");
    assert_eq!(out.stdout, "");
}

// ---------------------------------------------------------------------------------------------
// Subcommands and directories of the same name
// ---------------------------------------------------------------------------------------------

/// With `--mcp-server`, a bare word is a directory even when a subcommand has its name.
#[test]
fn a_directory_named_like_a_subcommand_is_served() {
    let env = TestEnv::new(&["root/tools", "root/call"], &[("root/tools/t.txt", "t")]);
    for line in [
        vec!["--mcp-server", "tools", "call"],
        vec!["--mcp-server", "./tools", "./call"],
        vec!["./tools", "--mcp-server", "call"],
    ] {
        let mut cmd = replay(&line);
        cmd.current_dir(env.root());
        let mut server = Server::from_command(cmd);
        server.initialize("2025-06-18");
        let listed = server.call_text("list_allowed_directories", json!({}));
        assert_eq!(
            listed,
            format!("{} (read-write)\n{} (read-write)", env.p("root/tools"), env.p("root/call")),
            "{line:?}"
        );
        assert_eq!(server.call_text("read_file", json!({"path": "t.txt"})), "t");
    }
}

#[test]
fn a_subcommand_first_with_mcp_server_says_how_to_serve_the_directory() {
    for name in ["tools", "call", "schema"] {
        let out = run(&[name, "--mcp-server"], "");
        expect_status(&out, 2, name);
        assert!(out.stderr.contains(&format!("replay --mcp-server ./{name}")), "{}", out.stderr);
        assert_eq!(out.stdout, "");
    }
}

#[test]
fn help_names_the_subcommands_and_call_documents_its_exit_status() {
    let out = run(&["--help"], "");
    expect_status(&out, 0, "--help");
    for word in
        ["call", "tools", "schema", "print-config", "--read-only", "--tools", "--disable-tool"]
    {
        assert!(out.stdout.contains(word), "--help lacks {word}");
    }
    let out = run(&["call", "--help"], "");
    expect_status(&out, 0, "call --help");
    assert!(out.stdout.contains("Exit status: 0"), "{}", out.stdout);
    assert!(
        out.stdout.contains("-32602 arguments that do not match the tool's schema"),
        "{}",
        out.stdout
    );
}

// ---------------------------------------------------------------------------------------------
// Ctrl-C
// ---------------------------------------------------------------------------------------------

/// SIGINT cancels `replay call`: the command it started is killed with its group, not left
/// running without its deadline, and replay exits 130.
#[test]
fn call_interrupted_kills_its_command_and_exits_130() {
    use std::io::Read;
    use std::process::Stdio;
    use std::sync::mpsc;

    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;

    use crate::harness::REPLY_TIMEOUT;

    let env = TestEnv::new(&[], &[]);
    let fifo = env.path("root/fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
    let allow = path_str(&env.root());
    // The shell says its pid through the FIFO (an open for writing waits for the reader), then
    // becomes the sleep.
    // `/proc/self` (the host's) names the shell as the host sees it: `$$` is its pid in the
    // command's PID namespace.
    let args = r#"{"command": "read -r p _ < /proc/self/stat; echo $p > fifo; exec sleep 50"}"#;
    let mut cmd = replay(&["call", "execute_command", args, "--allow", &allow]);
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn replay");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::fs::File::open(&fifo).and_then(|mut f| f.read_to_string(&mut text));
        let _ = tx.send(text);
    });
    let Ok(pid) = rx.recv_timeout(REPLY_TIMEOUT) else {
        let _ = child.kill();
        panic!("the command never started");
    };
    let pid: i32 = pid.trim().parse().expect("a pid");
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).expect("SIGINT");
    let (tx, rx) = mpsc::channel();
    let mut stderr = child.stderr.take().expect("stderr");
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        let _ = tx.send(text);
    });
    let stderr = rx.recv_timeout(REPLY_TIMEOUT).unwrap_or_else(|_| {
        let _ = child.kill();
        panic!("replay did not end after SIGINT");
    });
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted by signal 2"), "{stderr}");
    // The sleep was the shell's own process (exec), killed with its PID namespace when replay
    // ended the command. The kernel's kill of a namespace runs on after the exit: gone, a
    // zombie, or the pid reused by another program (pids wrap at 32,768 on a busy machine)
    // all mean it no longer runs; a wait for that, not a look at once.
    let started = std::time::Instant::now();
    let runs = || {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let (comm, rest) = stat.rsplit_once(')').unwrap_or_default();
        comm.ends_with("(sleep") && !rest.trim_start().starts_with(['Z', 'X'])
    };
    while runs() {
        assert!(started.elapsed() < REPLY_TIMEOUT, "sleep {pid} runs on");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}
