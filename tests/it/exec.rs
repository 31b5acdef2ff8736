//! `execute_command` and the Landlock sandbox through the real binary: the reply format, the working directory, deadlines, process cleanup, output caps, concurrency, cancellation, `--no-exec`, `--deny-command` and what the kernel lets commands touch.
//!
//! Replies are decoded into `Run` (stdout item, optional stderr item, `isError` exactly as
//! sent) and compared whole in `check` rows. Process checks read `/proc`, so the tests that
//! make them are built on Linux only: a pid counts as gone when its entry vanished or it is a
//! zombie (reaped later by whoever inherited it). Sandbox
//! tests first ask the kernel whether it has Landlock (`require`: a failure under `CI=true`, a
//! skip saying so elsewhere).

#[cfg(target_os = "linux")]
use std::fs;
use std::io::{ErrorKind, Read};
use std::net::TcpListener;
#[cfg(target_os = "linux")]
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::harness::{
    path_str, replay_command, require, Content, Response, Server, TestEnv, ToolResult,
};

/// What the server keeps of each output stream.
const CAP: usize = 512 * 1024;
/// Of `CAP`, the bytes kept from a stream's start; the rest are its last.
const HEAD: usize = 128 * 1024;

/// An `execute_command` result: the stdout item, the stderr item when there is one, and
/// `isError` as sent (`None` when absent).
#[derive(Debug)]
struct Run {
    out: String,
    err: Option<String>,
    is_error: Option<bool>,
}

impl Run {
    #[track_caller]
    fn decode(response: &Response) -> Run {
        let result: ToolResult = serde_json::from_value(response.result().clone())
            .unwrap_or_else(|e| panic!("malformed tools/call result ({e}): {}", response.line));
        let mut texts = result.content.into_iter().map(|item| match item {
            Content::Text { text } => text,
            other => panic!("expected text content, got {other:?} in {}", response.line),
        });
        let out = texts.next().unwrap_or_else(|| panic!("no content: {}", response.line));
        let err = texts.next();
        assert!(texts.next().is_none(), "more than two content items: {}", response.line);
        Run { out, err, is_error: result.is_error }
    }

    /// The stderr item, or "" when there is none.
    fn err(&self) -> &str {
        self.err.as_deref().unwrap_or("")
    }
}

fn exec(server: &mut Server, args: Value) -> Run {
    Run::decode(&server.call("execute_command", args))
}

fn sh(server: &mut Server, command: &str) -> Run {
    exec(server, json!({"command": command}))
}

/// `command` replies with exactly `out` (footer included) and `err` (the whole stderr item),
/// and `isError: true` when `failed`, no `isError` otherwise.
#[track_caller]
fn check(server: &mut Server, command: &str, out: &str, err: Option<&str>, failed: bool) {
    let run = sh(server, command);
    assert_eq!(run.out, out, "stdout item of {command:?}");
    assert_eq!(run.err.as_deref(), err, "stderr item of {command:?}");
    assert_eq!(run.is_error, failed.then_some(true), "isError of {command:?}");
}

/// `command` exits 0 and its stdout item is `stdout` plus the footer.
#[track_caller]
fn check_ok(server: &mut Server, command: &str, stdout: &str) {
    let run = sh(server, command);
    assert_eq!(run.out, format!("{stdout}[exit code: 0]"), "{command:?}; stderr: {:?}", run.err);
    assert_eq!(run.is_error, None, "isError of {command:?}");
}

/// `command` fails: non-zero exit, isError true, and `stderr` appears in the stderr item.
#[track_caller]
fn check_fails(server: &mut Server, command: &str, stderr: &str) -> Run {
    let run = sh(server, command);
    assert_eq!(run.is_error, Some(true), "{command:?} did not fail: {run:?}");
    assert!(!run.out.ends_with("[exit code: 0]"), "{command:?} exited 0: {run:?}");
    assert!(run.err().contains(stderr), "{command:?}: stderr lacks {stderr:?}: {run:?}");
    run
}

/// `command` fails to write: the read-only mount namespace refuses it first ("Read-only file
/// system"), or Landlock ("Permission denied") where there is no namespace; on macOS, by
/// Seatbelt ("Operation not permitted").
#[track_caller]
fn check_write_refused(server: &mut Server, command: &str) {
    let run = sh(server, command);
    assert_eq!(run.is_error, Some(true), "{command:?} did not fail: {run:?}");
    let refused = ["Read-only file system", REFUSED];
    assert!(refused.iter().any(|r| run.err().contains(r)), "{command:?}: {run:?}");
}

/// `execute_command` with `args` is refused with `code` and a message containing `needle`.
#[track_caller]
fn check_refused(server: &mut Server, args: Value, code: i64, needle: &str) {
    let error = server.call_err("execute_command", args.clone(), code);
    assert!(error.message.contains(needle), "{args}: message lacks {needle:?}: {error:?}");
}

/// Sends a `tools/call` with a chosen `id` without waiting for the reply.
fn send_call(server: &mut Server, id: &Value, tool: &str, args: Value) {
    let params = json!({"name": tool, "arguments": args});
    server.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}));
}

fn allow(env: &TestEnv, rel: &str, access: &str) -> String {
    format!("{}:{access}", env.p(rel))
}

/// `replay --mcp-server --allow <root>:rw` plus `extra` flags.
fn start_with_flags(env: &TestEnv, extra: &[&str]) -> Server {
    let root = allow(env, "root", "rw");
    let mut args = vec!["--mcp-server", "--allow", &root];
    args.extend_from_slice(extra);
    Server::start_with(args)
}

// ---------------------------------------------------------------------------------------------
// Processes, through /proc
// ---------------------------------------------------------------------------------------------

/// `/proc/<pid>/stat` fields after the command name: state, ppid, pgrp, ...
#[cfg(target_os = "linux")]
fn stat_fields(pid: &str) -> Option<Vec<String>> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    Some(rest.split_whitespace().map(str::to_owned).collect())
}

/// Whether `pid` exists and is not a zombie.
#[cfg(target_os = "linux")]
fn alive(pid: u32) -> bool {
    stat_fields(&pid.to_string()).is_some_and(|f| f.first().is_some_and(|state| state != "Z"))
}

/// The live (non-zombie) processes whose process group is `pgid`.
#[cfg(target_os = "linux")]
fn group_members(pgid: u32) -> Vec<u32> {
    let Ok(entries) = fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            stat_fields(&pid.to_string()).is_some_and(|f| {
                f.first().is_some_and(|state| state != "Z")
                    && f.get(2).is_some_and(|pgrp| *pgrp == pgid.to_string())
            })
        })
        .collect()
}

/// Polls until `done` holds; fails with `what` after 5 s.
#[track_caller]
#[cfg(target_os = "linux")]
fn poll_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !done() {
        assert!(Instant::now() < deadline, "still true after 5 s: {what}");
        thread::sleep(Duration::from_millis(20));
    }
}

#[track_caller]
#[cfg(target_os = "linux")]
fn assert_gone(pid: u32) {
    poll_until(&format!("process {pid} is alive"), || !alive(pid));
}

#[track_caller]
#[cfg(target_os = "linux")]
fn assert_group_gone(pgid: u32) {
    poll_until(&format!("process group {pgid} has live members"), || {
        group_members(pgid).is_empty()
    });
}

/// Shell words that print the shell's pid as the host sees it: `$$` and `$!` are the pids in
/// the command's PID namespace. `read` is a builtin, so `/proc/self` is the shell.
#[cfg(target_os = "linux")]
const HOST_PID: &str = "read -r hp _ < /proc/self/stat; echo $hp";

/// The pid a command wrote (`echo $$ > file`), waiting for the whole line to be there.
#[track_caller]
#[cfg(target_os = "linux")]
fn read_pid(env: &TestEnv, rel: &str) -> u32 {
    let mut pid = None;
    poll_until(&format!("{rel} holds no pid"), || {
        let text = fs::read_to_string(env.path(rel)).unwrap_or_default();
        pid = text.strip_suffix('\n').and_then(|p| p.trim().parse().ok());
        pid.is_some()
    });
    pid.expect("polled")
}

/// The pid on the first line of a stdout item.
#[track_caller]
#[cfg(target_os = "linux")]
fn first_line_pid(run: &Run) -> u32 {
    let line = run.out.lines().next().unwrap_or_default();
    line.parse().unwrap_or_else(|e| panic!("no pid on the first line ({e}): {run:?}"))
}

// ---------------------------------------------------------------------------------------------
// Reply format
// ---------------------------------------------------------------------------------------------

#[test]
fn reply_format_rows() {
    let env = TestEnv::new(&[], &[]);
    let mut server = Server::start(&env);
    let s = &mut server;
    check(s, "echo hi", "hi\n[exit code: 0]", None, false);
    check(s, "printf hi", "hi\n[exit code: 0]", None, false);
    check(s, "printf 'a\\n\\n'", "a\n\n[exit code: 0]", None, false);
    check(s, "true", "(no output)\n[exit code: 0]", None, false);
    check(s, "printf ''", "(no output)\n[exit code: 0]", None, false);
    check(s, "exit 3", "(no output)\n[exit code: 3]", None, true);
    check(s, "echo x; exit 255", "x\n[exit code: 255]", None, true);
    check(s, "echo err >&2", "(no output)\n[exit code: 0]", Some("[stderr]\nerr\n"), false);
    check(s, "printf e >&2", "(no output)\n[exit code: 0]", Some("[stderr]\ne"), false);
    check(s, "echo o; echo e >&2; exit 1", "o\n[exit code: 1]", Some("[stderr]\ne\n"), true);
    // Killed by a signal: 128 + the signal.
    check(s, "kill -9 $$", "(no output)\n[exit code: 137]", None, true);
    // `/bin/sh -c COMMAND`.
    check(s, "echo \"$0\"", "/bin/sh\n[exit code: 0]", None, false);
    check(s, "echo \"$1\"; echo $#", "\n0\n[exit code: 0]", None, false);
    // stdin is /dev/null: nothing to read, never the server's protocol stream.
    check(s, "cat", "(no output)\n[exit code: 0]", None, false);
    check(s, "read x; echo \"[$x]\"", "[]\n[exit code: 0]", None, false);
    #[cfg(target_os = "linux")]
    check(s, "readlink /proc/self/fd/0", "/dev/null\n[exit code: 0]", None, false);

    let run = sh(s, "no-such-command-xyz");
    assert_eq!(run.out, "(no output)\n[exit code: 127]");
    assert!(run.err().starts_with("[stderr]\n") && run.err().contains("not found"), "{run:?}");
    assert_eq!(run.is_error, Some(true));
}

#[test]
fn output_is_text_even_when_it_is_not_utf8() {
    let env = TestEnv::new(&[], &[]);
    let mut server = Server::start(&env);
    let run = sh(&mut server, "printf 'a\\377b\\n'");
    assert_eq!(run.out, "a\u{fffd}b\n[exit code: 0]");
}

// ---------------------------------------------------------------------------------------------
// Arguments and the working directory
// ---------------------------------------------------------------------------------------------

/// `base/ro` (read-only, the first root, so the project directory) and `base/root`
/// (read-write): the default working directory is `root`, relative ones resolve under `ro`.
fn workdir_env() -> (TestEnv, Server) {
    let env =
        TestEnv::new(&["ro/rel", "root/sub", "outside"], &[("root/f.txt", "f"), ("ro/r.txt", "r")]);
    env.symlink(&env.p("outside"), "root/link_out");
    env.symlink(&env.p("root/sub"), "root/link_sub");
    let server = Server::start_with([
        "--mcp-server",
        "--allow",
        &allow(&env, "ro", "ro"),
        "--allow",
        &allow(&env, "root", "rw"),
    ]);
    (env, server)
}

#[test]
fn working_directory_rows() {
    let (env, mut server) = workdir_env();
    let s = &mut server;
    let pwd = |s: &mut Server, dir: Option<&str>| -> String {
        let args = match dir {
            Some(dir) => json!({"command": "pwd -P", "workingDirectory": dir}),
            None => json!({"command": "pwd -P"}),
        };
        let run = exec(s, args);
        assert_eq!(run.is_error, None, "{run:?}");
        run.out.strip_suffix("\n[exit code: 0]").expect("footer").to_owned()
    };
    // The first read-write root, though a read-only one comes first.
    assert_eq!(pwd(s, None), env.p("root"));
    assert_eq!(pwd(s, Some(&env.p("root/sub"))), env.p("root/sub"));
    // Read permission suffices.
    assert_eq!(pwd(s, Some(&env.p("ro"))), env.p("ro"));
    assert_eq!(pwd(s, Some(&env.p("root/link_sub"))), env.p("root/sub"));
    assert_eq!(pwd(s, Some(&format!("{}/sub/..", env.p("root")))), env.p("root"));
    // Relative: against the project directory, the first root, not the default cwd.
    assert_eq!(pwd(s, Some("rel")), env.p("ro/rel"));
    assert_eq!(pwd(s, Some(".")), env.p("ro"));
    assert_eq!(pwd(s, Some("../root/sub")), env.p("root/sub"));
}

#[test]
fn working_directory_refusals_run_nothing() {
    let (env, mut server) = workdir_env();
    let before = env.snapshot();
    // Would leave a file in the cwd and in both roots if it ran anywhere.
    let command = format!(
        "touch ran.txt; touch {}/ran.txt; touch {}/ran.txt",
        env.p("root"),
        env.p("outside")
    );
    let s = &mut server;
    let wd = |dir: String| json!({"command": command, "workingDirectory": dir});
    let outside = format!("path not allowed: {} is outside", env.p("outside"));
    check_refused(s, wd(format!("{}/../outside", env.p("root"))), -32001, &outside);
    check_refused(s, wd(env.p("outside")), -32001, &outside);
    check_refused(s, wd("../outside".into()), -32001, &outside);
    check_refused(s, wd(env.p("root/link_out")), -32001, "path not allowed");
    check_refused(s, wd(path_str(env.base())), -32001, "path not allowed");
    check_refused(s, wd("/".into()), -32001, "path not allowed: / is outside");
    check_refused(s, wd(env.p("root/missing")), -32002, &env.p("root/missing"));
    check_refused(s, wd(env.p("root/f.txt")), -32603, "not a directory");
    assert_eq!(before.diff(&env.snapshot()), "", "a refused command ran");
}

#[test]
fn invalid_arguments_rows() {
    let env = TestEnv::new(&[], &[]);
    let mut server = Server::start(&env);
    let s = &mut server;
    check_refused(s, json!({}), -32602, "command");
    check_refused(s, json!({"workingDirectory": env.p("root")}), -32602, "command");
    check_refused(s, json!({"command": 42}), -32602, "command");
    check_refused(s, json!({"command": "touch t", "timeout": 0}), -32602, "timeout");
    check_refused(s, json!({"command": "touch t", "timeout": 61}), -32602, "timeout");
    check_refused(s, json!({"command": "touch t", "timeout": "5"}), -32602, "timeout");
    check_refused(s, json!({"command": "touch t", "timeout": 1.5}), -32602, "timeout");
    check_refused(
        s,
        json!({"command": "touch t", "workingDirectory": 1}),
        -32602,
        "workingDirectory",
    );
    assert!(!env.exists("root/t"), "an invalid call ran");
    // The bounds themselves are fine.
    let run = exec(s, json!({"command": "echo ok", "timeout": 60}));
    assert_eq!(run.out, "ok\n[exit code: 0]");
    let run = exec(s, json!({"command": "echo ok", "timeout": 1}));
    assert_eq!(run.out, "ok\n[exit code: 0]");
}

// ---------------------------------------------------------------------------------------------
// Deadlines and what a command leaves behind
// ---------------------------------------------------------------------------------------------

/// Runs `command` with `timeout: 1`; returns the reply and how long it took.
fn run_with_one_second(server: &mut Server, command: &str) -> (Run, Duration) {
    let start = Instant::now();
    let run = exec(server, json!({"command": command, "timeout": 1}));
    (run, start.elapsed())
}

#[track_caller]
fn assert_timed_out(run: &Run, code: u32) {
    assert_eq!(run.is_error, Some(true), "{run:?}");
    assert!(
        run.out.lines().any(|line| line.starts_with("[timed out after 1 s")),
        "no timeout line: {run:?}"
    );
    assert!(run.out.ends_with(&format!("\n[exit code: {code}]")), "{run:?}");
}

#[test]
fn timeout_stops_the_command_with_sigterm() {
    let env = TestEnv::new(&[], &[]);
    let mut server = Server::start(&env);
    let (run, took) = run_with_one_second(&mut server, "echo start; sleep 100");
    assert!(took >= Duration::from_secs(1) && took < Duration::from_secs(6), "took {took:?}");
    assert!(run.out.starts_with("start\n"), "partial output lost: {run:?}");
    assert_timed_out(&run, 143);
}

#[test]
#[cfg(target_os = "linux")]
fn timeout_escalates_to_sigkill_when_term_is_ignored() {
    let env = TestEnv::new(&[], &[]);
    let mut server = Server::start(&env);
    let (run, took) =
        run_with_one_second(&mut server, &format!("trap '' TERM; {HOST_PID}; sleep 100"));
    // The deadline, then the whole 3 s grace.
    assert!(took >= Duration::from_secs(4) && took < Duration::from_secs(7), "took {took:?}");
    assert_timed_out(&run, 137);
    // The partial output is there, and the sleep that ignored SIGTERM too is gone.
    assert_group_gone(first_line_pid(&run));
}

#[test]
#[cfg(target_os = "linux")]
fn timeout_kills_background_children() {
    let env = TestEnv::new(&[], &[]);
    let mut server = Server::start(&env);
    let command = format!("sh -c '{HOST_PID} > pid.txt; exec sleep 1000' & {HOST_PID}; sleep 100");
    let (run, took) = run_with_one_second(&mut server, &command);
    assert!(took < Duration::from_secs(6), "took {took:?}");
    assert_timed_out(&run, 143);
    assert_gone(read_pid(&env, "root/pid.txt"));
    assert_group_gone(first_line_pid(&run));
}

#[test]
#[cfg(target_os = "linux")]
fn normal_exit_kills_background_children() {
    let env = TestEnv::new(&[], &[]);
    let mut server = Server::start(&env);
    let start = Instant::now();
    // The shell exits at once; the sleep would hold the output pipes open for 1000 s.
    let command = format!(
        "sh -c '{HOST_PID} > pid.txt; exec sleep 1000' & \
         while [ ! -s pid.txt ]; do sleep 0.01; done; cat pid.txt; {HOST_PID}"
    );
    let run = sh(&mut server, &command);
    let took = start.elapsed();
    assert!(took < Duration::from_secs(3), "a background child held the reply {took:?}");
    assert_eq!(run.is_error, None, "{run:?}");
    let pids: Vec<u32> = run.out.lines().take(2).filter_map(|l| l.parse().ok()).collect();
    assert_eq!(pids.len(), 2, "{run:?}");
    assert!(run.out.ends_with("\n[exit code: 0]"), "{run:?}");
    assert_gone(pids[0]);
    assert_group_gone(pids[1]);
}

// ---------------------------------------------------------------------------------------------
// Output caps
// ---------------------------------------------------------------------------------------------

/// `n` bytes of `y` written to stdout, or to stderr when `to_stderr`, are kept whole up to the
/// cap, and otherwise as their first 128 KB and last 384 KB with a note of exactly how many
/// bytes were cut between them.
#[track_caller]
fn check_cap(server: &mut Server, n: usize, to_stderr: bool) {
    let redirect = if to_stderr { " >&2" } else { "" };
    let run = sh(server, &format!("head -c {n} /dev/zero | tr '\\0' y{redirect}"));
    let stream = if to_stderr { "stderr" } else { "stdout" };
    let kept = if n > CAP {
        format!(
            "{}\n[{stream}: {} bytes cut here, between the first 128 KB and the last 384 KB of {n} bytes]\n{}",
            "y".repeat(HEAD),
            n - CAP,
            "y".repeat(CAP - HEAD)
        )
    } else {
        "y".repeat(n)
    };
    let (out, err) = match to_stderr {
        false => (format!("{kept}\n[exit code: 0]"), None),
        true => ("(no output)\n[exit code: 0]".to_owned(), Some(format!("[stderr]\n{kept}"))),
    };
    assert!(run.out == out, "{stream} {n}: stdout item differs (len {})", run.out.len());
    assert!(
        run.err == err,
        "{stream} {n}: stderr item differs (len {:?})",
        run.err.as_ref().map(String::len)
    );
    assert_eq!(run.is_error, None);
}

#[test]
fn stdout_is_capped_at_512_kb() {
    let env = TestEnv::new(&[], &[]);
    let mut server = Server::start(&env);
    for n in [CAP, CAP + 1, 2_000_000] {
        check_cap(&mut server, n, false);
    }
}

#[test]
fn stderr_is_capped_at_512_kb() {
    let env = TestEnv::new(&[], &[]);
    let mut server = Server::start(&env);
    for n in [CAP, CAP + 1, 2_000_000] {
        check_cap(&mut server, n, true);
    }
}

#[test]
fn streams_are_capped_independently_and_never_deadlock() {
    let env = TestEnv::new(&[], &[]);
    let mut server = Server::start(&env);
    // One stream over the cap, the other small.
    let run = sh(&mut server, "head -c 600000 /dev/zero | tr '\\0' o; echo small >&2");
    let note = "[stdout: 75712 bytes cut here, between the first 128 KB and the last 384 KB of 600000 bytes]";
    assert!(run.out.contains(note), "no cut note");
    assert_eq!(run.err.as_deref(), Some("[stderr]\nsmall\n"));
    // 10 MB on each stream at once: both pipes must be drained while the child runs.
    let run = sh(
        &mut server,
        "head -c 10000000 /dev/zero | tr '\\0' o & head -c 10000000 /dev/zero | tr '\\0' e >&2; wait",
    );
    assert!(run.out.starts_with(&"o".repeat(HEAD)), "stdout lost");
    let cut = 10_000_000 - CAP;
    assert!(run.out.ends_with(&format!(
        "[stdout: {cut} bytes cut here, between the first 128 KB and the last 384 KB of 10000000 bytes]\n{}\n[exit code: 0]",
        "o".repeat(CAP - HEAD)
    )));
    assert!(run.err().starts_with(&format!("[stderr]\n{}", "e".repeat(HEAD))), "stderr lost");
    assert!(run.err().ends_with(&format!(
        "[stderr: {cut} bytes cut here, between the first 128 KB and the last 384 KB of 10000000 bytes]\n{}",
        "e".repeat(CAP - HEAD)
    )));
}

// ---------------------------------------------------------------------------------------------
// Concurrency and cancellation
// ---------------------------------------------------------------------------------------------

#[test]
fn a_running_command_does_not_hold_up_other_requests() {
    let env = TestEnv::new(&[], &[("root/a.txt", "A")]);
    let mut server = Server::start(&env);
    send_call(
        &mut server,
        &json!("slow"),
        "execute_command",
        json!({"command": "sleep 2; echo done"}),
    );
    send_call(&mut server, &json!("fast"), "read_file", json!({"path": env.p("root/a.txt")}));
    let first = server.next_message();
    assert_eq!(first.value["id"], json!("fast"), "the read waited for the command: {}", first.line);
    assert_eq!(first.text(), "A");
    let run = Run::decode(&server.reply_to(&json!("slow")));
    assert_eq!(run.out, "done\n[exit code: 0]");
}

/// Sends `echo $$ > pid.txt; sleep 30` (the host's pid) as request `id`, waits until it runs,
/// cancels it.
#[cfg(target_os = "linux")]
fn start_and_cancel(server: &mut Server, env: &TestEnv, id: i64) -> u32 {
    let command = format!("{HOST_PID} > pid.txt; sleep 30");
    send_call(server, &json!(id), "execute_command", json!({"command": command}));
    let pgid = read_pid(env, "root/pid.txt");
    server.notify("notifications/cancelled", json!({"requestId": id, "reason": "x"}));
    pgid
}

#[test]
#[cfg(target_os = "linux")]
fn cancelled_command_is_killed_and_never_answered() {
    let env = TestEnv::new(&[], &[]);
    let mut server = Server::start(&env);
    let pgid = start_and_cancel(&mut server, &env, 1000);
    let start = Instant::now();
    let run = sh(&mut server, "echo after");
    assert_eq!(run.out, "after\n[exit code: 0]");
    assert!(start.elapsed() < Duration::from_secs(3), "took {:?}", start.elapsed());
    assert_group_gone(pgid);
    let (messages, status) = server.finish();
    let answered: Vec<&str> = messages
        .iter()
        .filter(|m| m.value.get("id") == Some(&json!(1000)))
        .map(|m| m.line.as_str())
        .collect();
    assert!(answered.is_empty(), "the cancelled request was answered: {answered:?}");
    assert!(status.success(), "exit status {status:?}");
}

/// A cancel sent right behind its request, before the call has started, still cancels it.
/// See: the exec tests' report (the call used to register only once its thread started).
#[test]
fn cancel_right_behind_the_request_is_not_lost() {
    let env = TestEnv::new(&[], &[]);
    let mut server = Server::start(&env);
    let start = Instant::now();
    send_call(&mut server, &json!(50), "execute_command", json!({"command": "sleep 3; echo late"}));
    server.notify("notifications/cancelled", json!({"requestId": 50, "reason": "x"}));
    let (messages, status) = server.finish();
    assert!(!messages.iter().any(|m| m.value.get("id") == Some(&json!(50))), "{messages:?}");
    assert!(start.elapsed() < Duration::from_secs(3), "took {:?}", start.elapsed());
    assert!(status.success(), "exit status {status:?}");
}

#[test]
fn cancelling_an_unknown_or_finished_request_changes_nothing() {
    let env = TestEnv::new(&[], &[]);
    let mut server = Server::start(&env);
    check_ok(&mut server, "echo one", "one\n");
    // The id `request` gave that call, and one never used.
    for id in [json!(2), json!(777), json!("nope")] {
        server.notify("notifications/cancelled", json!({"requestId": id, "reason": "x"}));
    }
    check_ok(&mut server, "echo two", "two\n");
    let (messages, status) = server.finish();
    assert!(messages.is_empty(), "unexpected messages: {messages:?}");
    assert!(status.success());
}

// ---------------------------------------------------------------------------------------------
// --no-exec and --deny-command
// ---------------------------------------------------------------------------------------------

#[test]
fn no_exec_leaves_the_tool_out() {
    let env = TestEnv::new(&[], &[]);
    let mut server = start_with_flags(&env, &["--no-exec"]);
    let result = server.request("tools/list", json!({})).result().clone();
    let names: Vec<&str> = result["tools"]
        .as_array()
        .expect("tools array")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(!names.contains(&"execute_command"), "{names:?}");
    assert!(names.contains(&"read_file"), "{names:?}");
    check_refused(&mut server, json!({"command": "touch t"}), -32602, "execute_command");
    assert!(!env.exists("root/t"));
}

#[test]
fn deny_command_rows() {
    let env = TestEnv::new(&[], &[("root/x", "keep")]);
    let mut server = start_with_flags(&env, &["--deny-command", "rm", "--deny-command", "curl"]);
    let s = &mut server;
    for command in [
        "rm x",
        "ls; rm x",
        "touch made; rm x",
        "/bin/rm x",
        "sudo rm x",
        "FOO=1 rm x",
        "true && rm x",
        "echo x | rm x",
        "echo $(rm x)",
        "curl -s http://127.0.0.1:9",
    ] {
        let name = if command.contains("curl") { "`curl`" } else { "`rm`" };
        check_refused(s, json!({"command": command}), -32001, name);
    }
    assert_eq!(env.names("root"), ["x"], "a refused command ran");
    // A denied name as an argument is no command.
    check_ok(s, "echo rm", "rm\n");
    check_ok(s, "echo curl rm", "curl rm\n");
    check_ok(s, "ls", "x\n");
    check_ok(s, "rmdir --version >/dev/null && echo rmdir", "rmdir\n");
}

// ---------------------------------------------------------------------------------------------
// The kernel's sandbox: Landlock on Linux, Seatbelt on macOS
// ---------------------------------------------------------------------------------------------

/// How the sandbox's refusal of a file reads: Landlock's EACCES, Seatbelt's EPERM.
#[cfg(target_os = "linux")]
const REFUSED: &str = "Permission denied";
#[cfg(not(target_os = "linux"))]
const REFUSED: &str = "Operation not permitted";

#[expect(clippy::print_stderr, reason = "a skipped test says why on the test output")]
fn skip(why: &str) {
    eprintln!("skipped: {why}");
}

/// Whether the kernel creates a Landlock ruleset handling `fs` rights (and network rights when
/// `net`). Asks the kernel, so it also works where securityfs (`/sys/kernel/security/lsm`) is
/// not mounted. Creating a ruleset restricts nothing. macOS always has Seatbelt.
#[cfg(target_os = "linux")]
fn kernel_has_landlock(net: bool) -> bool {
    use landlock::{
        Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetError,
        ABI,
    };
    let probe = || -> Result<(), RulesetError> {
        let ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(AccessFs::from_all(ABI::V1))?;
        let ruleset =
            if net { ruleset.handle_access(AccessNet::from_all(ABI::V4))? } else { ruleset };
        ruleset.create().map(drop)
    };
    let listed = fs::read_to_string("/sys/kernel/security/lsm")
        .map(|lsm| lsm.split(',').any(|name| name.trim() == "landlock"));
    listed.unwrap_or(true) && probe().is_ok()
}

#[cfg(not(target_os = "linux"))]
fn kernel_has_landlock(_net: bool) -> bool {
    true
}

/// True when the sandbox can be tested; see `require`.
fn landlock() -> bool {
    require("a kernel with Landlock", kernel_has_landlock(false))
}

/// `root` (read-write), `ro` (read-only), and outside them `outside` holding the marker.
fn sandbox_env() -> TestEnv {
    let env = TestEnv::new(
        &["outside", "tools"],
        &[("ro/file.txt", "read me\n"), ("tools/tool.txt", "tool\n")],
    );
    let marker = env.marker().to_owned();
    env.write("outside/secret.txt", &marker);
    env
}

fn start_sandboxed(env: &TestEnv, extra: &[&str]) -> Server {
    let ro = allow(env, "ro", "ro");
    let mut args = vec!["--allow", &ro];
    args.extend_from_slice(extra);
    start_with_flags(env, &args)
}

#[test]
fn sandbox_keeps_commands_out_of_everything_else() {
    if !landlock() {
        return;
    }
    let env = sandbox_env();
    let mut server = start_sandboxed(&env, &[]);
    let s = &mut server;
    let secret = env.p("outside/secret.txt");
    let response = s.call("execute_command", json!({"command": format!("cat {secret}")}));
    assert!(!response.line.contains(env.marker()), "the secret leaked: {}", response.line);
    let run = Run::decode(&response);
    assert_eq!(run.is_error, Some(true), "{run:?}");
    assert!(run.err().contains(REFUSED), "{run:?}");

    let before = env.snapshot();
    check_write_refused(s, &format!("touch {}", env.p("outside/new")));
    check_write_refused(s, &format!("mkdir {}", env.p("new_dir")));
    check_write_refused(s, &format!("rm {secret}"));
    check_fails(s, &format!("ls {}", env.p("outside")), REFUSED);
    // Under the read-only root: readable, not writable.
    check_ok(s, &format!("cat {}", env.p("ro/file.txt")), "read me\n");
    check_write_refused(s, &format!("touch {}", env.p("ro/x")));
    check_write_refused(s, &format!("rm {}", env.p("ro/file.txt")));
    check_write_refused(s, &format!("echo more >> {}", env.p("ro/file.txt")));
    let run = exec(s, json!({"command": "touch x", "workingDirectory": env.p("ro")}));
    assert_eq!(run.is_error, Some(true), "{run:?}");
    assert_eq!(before.diff(&env.snapshot()), "", "a sandboxed command changed files");

    let listed = s.call_text("list_allowed_directories", json!({}));
    assert!(!listed.contains("[sandbox:"), "sandbox in force, yet: {listed}");
}

#[test]
fn sandbox_lets_ordinary_work_through() {
    if !landlock() {
        return;
    }
    let env = sandbox_env();
    env.write("root/src/a.txt", "needle\n");
    env.write(
        "root/hello.c",
        "#include <stdio.h>\nint main(void) { puts(\"hello from cc\"); return 0; }\n",
    );
    let mut server = start_sandboxed(&env, &[]);
    let s = &mut server;
    check_ok(s, "ls", "hello.c\nsrc\n");
    check_ok(s, "grep -r needle .", "./src/a.txt:needle\n");
    check_ok(s, "echo made > new.txt && cat new.txt && rm new.txt", "made\n");
    check_ok(s, "mkdir -p d/e && mv d/e d/f && ls d", "f\n");
    check_ok(s, "test -n \"$TMPDIR\" && echo x > \"$TMPDIR/t\" && cat \"$TMPDIR/t\"", "x\n");
    check_ok(s, "echo gone > /dev/null && echo ok", "ok\n");
    check_ok(s, "head -c 4 /dev/urandom | wc -c", "4\n");

    let run = sh(s, "git init -q && git status");
    assert_eq!(run.is_error, None, "git: {run:?}");
    assert!(run.out.contains("No commits yet"), "git: {run:?}");
    assert!(env.is_dir("root/.git"));

    let has_cc = sh(s, "command -v cc").is_error.is_none();
    if has_cc {
        check_ok(s, "cc -o hello hello.c && ./hello", "hello from cc\n");
    } else {
        skip("no cc on PATH: not compiling");
        let run = sh(s, "rustc --version");
        assert_eq!(run.is_error, None, "rustc: {run:?}");
    }
}

#[test]
fn no_sandbox_lifts_the_confinement_and_says_so() {
    let env = sandbox_env();
    let mut server = start_sandboxed(&env, &["--no-sandbox"]);
    let secret = env.p("outside/secret.txt");
    check_ok(&mut server, &format!("cat {secret}; echo"), &format!("{}\n", env.marker()));
    let listed = server.call_text("list_allowed_directories", json!({}));
    let notes: Vec<&str> = listed.lines().filter(|l| l.starts_with("[sandbox:")).collect();
    assert_eq!(notes.len(), 1, "{listed}");
    assert!(notes[0].starts_with("[sandbox: off (--no-sandbox)"), "{listed}");
    assert!(listed.ends_with(notes[0]), "the note is not the last line: {listed}");
}

#[test]
fn sandbox_read_adds_a_readable_directory_for_commands_only() {
    if !landlock() {
        return;
    }
    let env = sandbox_env();
    let tools = env.p("tools");
    let mut server = start_sandboxed(&env, &["--sandbox-read", &tools]);
    let s = &mut server;
    check_ok(s, &format!("cat {tools}/tool.txt"), "tool\n");
    check_write_refused(s, &format!("touch {tools}/new"));
    check_fails(s, &format!("cat {}", env.p("outside/secret.txt")), REFUSED);
    assert_eq!(env.names("tools"), ["tool.txt"]);
    // The file tools' policy is unchanged.
    s.call_err("read_file", json!({"path": format!("{tools}/tool.txt")}), -32001);
    check_refused(s, json!({"command": "ls", "workingDirectory": tools}), -32001, "");
}

/// Runs bash's `/dev/tcp` against a fresh listener; returns the reply and what was received.
fn connect_back(server: &mut Server) -> (Run, Option<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("local addr").port();
    let run = sh(server, &format!("bash -c 'echo hi > /dev/tcp/127.0.0.1/{port}'"));
    // The command has finished: a connection it made is already queued.
    listener.set_nonblocking(true).expect("nonblocking");
    let received = match listener.accept() {
        Ok((mut stream, _)) => {
            stream.set_nonblocking(false).expect("blocking");
            stream.set_read_timeout(Some(Duration::from_secs(5))).expect("read timeout");
            let mut text = String::new();
            stream.read_to_string(&mut text).expect("read the connection");
            Some(text)
        }
        Err(e) if e.kind() == ErrorKind::WouldBlock => None,
        Err(e) => panic!("accept: {e}"),
    };
    (run, received)
}

#[test]
fn deny_network_blocks_tcp_for_commands() {
    if !landlock() {
        return;
    }
    if !require("Landlock with network rights (ABI 4+)", kernel_has_landlock(true)) {
        return;
    }
    let env = TestEnv::new(&[], &[]);
    let mut open = Server::start(&env);
    let (run, received) = connect_back(&mut open);
    assert_eq!(run.is_error, None, "without --deny-network: {run:?}");
    assert_eq!(received.as_deref(), Some("hi\n"));

    let mut denied = start_with_flags(&env, &["--deny-network"]);
    let (run, received) = connect_back(&mut denied);
    assert_eq!(run.is_error, Some(true), "with --deny-network: {run:?}");
    assert_eq!(received, None, "a connection got through");
}

/// Commands get a private TMPDIR of this server's own, under a per-user directory. The server
/// empties it at exit (a sandboxed server used to leave `/tmp/replay-<pid>` behind); the
/// sandbox does not let it remove the directory from the parent, so the next server to start
/// does, as it does for a server that was killed.
#[test]
fn the_commands_tmpdir_is_private_emptied_at_exit_and_removed_by_the_next_server() {
    let env = TestEnv::new(&["root", "ro"], &[]);
    let mut server = start_with_own_tmpdir(&env);
    let run = sh(&mut server, "printf %s \"$TMPDIR\" && touch \"$TMPDIR/left-behind\"");
    assert_eq!(run.is_error, None, "{run:?}");
    let tmpdir = std::path::PathBuf::from(run.out.trim_end_matches("[exit code: 0]").trim());
    let parent = tmpdir.parent().expect("TMPDIR has a parent");
    let uid = nix_uid();
    assert_eq!(
        parent.file_name().and_then(|n| n.to_str()),
        Some(format!("replay-cmd-tmp-{uid}").as_str()),
        "TMPDIR {tmpdir:?}"
    );
    assert!(tmpdir.join("left-behind").exists());
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(parent).unwrap().permissions());
    assert_eq!(mode & 0o077, 0, "the per-user directory is private: {mode:o}");
    let (_, status) = server.finish();
    assert_eq!(status.code(), Some(0));
    let left: Vec<_> =
        std::fs::read_dir(&tmpdir).map(|d| d.flatten().count()).into_iter().collect();
    assert!(left.iter().all(|&n| n == 0), "{tmpdir:?} is not empty after exit");

    // A server killed outright leaves its directory whole.
    let mut killed = start_with_own_tmpdir(&env);
    let run = sh(&mut killed, "printf %s \"$TMPDIR\" && touch \"$TMPDIR/left-behind\"");
    let killed_tmpdir = std::path::PathBuf::from(run.out.trim_end_matches("[exit code: 0]").trim());
    // SIGKILL while its stdin is open: dropping a `Server` closes stdin first, and a server
    // that sees the end of input in time exits in order, emptying its TMPDIR.
    let pid = nix::unistd::Pid::from_raw(i32::try_from(killed.pid()).expect("a pid"));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL).expect("SIGKILL the server");
    drop(killed);
    assert!(killed_tmpdir.join("left-behind").exists());

    // The next server removes both; its own starts empty and private.
    let mut next = start_with_own_tmpdir(&env);
    check_ok(&mut next, "ls -A \"$TMPDIR\" | wc -l", "0\n");
    let run = sh(&mut next, "printf %s \"$TMPDIR\"");
    assert_eq!(run.is_error, None, "{run:?}");
    let next_tmpdir = std::path::PathBuf::from(run.out.trim_end_matches("[exit code: 0]").trim());
    assert!(!tmpdir.exists(), "{tmpdir:?} is left behind after the next server started");
    assert!(!killed_tmpdir.exists(), "{killed_tmpdir:?} is left behind by a killed server");
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(&next_tmpdir).expect("the next TMPDIR").permissions(),
    );
    assert_eq!(mode & 0o777, 0o700, "{next_tmpdir:?}");
}

/// `start_sandboxed` with a `TMPDIR` of the test's own. In the shared temp directory, a server
/// another test starts meanwhile could sweep a killed server's directory before this test looks.
fn start_with_own_tmpdir(env: &TestEnv) -> Server {
    env.mkdir("tmp");
    let (root, ro) = (allow(env, "root", "rw"), allow(env, "ro", "ro"));
    let mut cmd = replay_command();
    cmd.env("TMPDIR", env.path("tmp"));
    cmd.args(["--mcp-server", "--allow", &root, "--allow", &ro]);
    let mut server = Server::from_command(cmd);
    server.initialize("2025-06-18");
    server
}

fn nix_uid() -> u32 {
    nix::unistd::geteuid().as_raw()
}

/// Two servers each pid 1 of a PID namespace of its own, reading the one /proc they share
/// (`unshare --pid --fork` without --mount-proc): the second must not take, or remove, the
/// first's TMPDIR.
#[cfg(target_os = "linux")]
#[test]
fn two_servers_both_pid_one_keep_apart_tmpdirs() {
    if !require("root, for unshare --pid", crate::isolation::is_root()) {
        return;
    }
    let env = TestEnv::new(&["root", "ro"], &[]);
    let mut first = start_in_pid_namespace(&env, &[]);
    check_ok(&mut first, "echo kept > \"$TMPDIR/keep\" && cat \"$TMPDIR/keep\"", "kept\n");
    let mut second = start_in_pid_namespace(&env, &[]);
    check_ok(&mut second, "ls -A \"$TMPDIR\" | wc -l", "0\n");
    check_ok(&mut first, "cat \"$TMPDIR/keep\" && mktemp -p \"$TMPDIR\" >/dev/null", "kept\n");
}

/// `start_with_own_tmpdir`, as pid 1 of a PID namespace of its own (`unshare` and `extra`).
#[cfg(target_os = "linux")]
fn start_in_pid_namespace(env: &TestEnv, extra: &[&str]) -> Server {
    env.mkdir("tmp");
    let (root, ro) = (allow(env, "root", "rw"), allow(env, "ro", "ro"));
    #[expect(clippy::disallowed_methods, reason = "the server runs as pid 1 of its own")]
    let mut cmd = std::process::Command::new("unshare");
    cmd.args(["--pid", "--fork", "--kill-child"]).args(extra);
    cmd.arg(replay_command().get_program());
    cmd.env("TMPDIR", env.path("tmp"));
    cmd.args(["--mcp-server", "--allow", &root, "--allow", &ro]);
    let mut server = Server::from_command(cmd);
    server.initialize("2025-06-18");
    server
}
