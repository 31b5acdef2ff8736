//! Commands do not outlive the server, however it ends: SIGTERM, SIGKILL, or the end of its
//! stdin, for a server and for `replay call`. Each row runs a command that leaves processes in
//! its process group (a background job, a job of a subshell that already exited), ends replay
//! while they run, and then looks through `/proc` for any of them. A process that leaves the
//! group (`setsid`) is covered where commands run in a PID namespace of their own (the `r23`
//! rows), and not in the fallback without one (SECURITY.md says so).
//!
//! See: issue #14 (before it, a server ended by SIGTERM or SIGKILL left `sleep 77 & sleep 78`
//! running); issue #23 (before it, a `setsid` or double-forked child outlived the deadline and
//! the server).

use std::fs;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::json;

use crate::harness::{self, require, Server, TestEnv};

/// A `sleep` duration no other process on the machine uses, to find this row's processes by:
/// the test process's pid spread over a range no one sleeps for.
pub fn marker(row: u32) -> String {
    format!("{}", 7_000_000 + (std::process::id() % 100_000) * 10 + row)
}

/// `sleep N` processes alive (not zombies) for each of `markers`, by `/proc/<pid>/cmdline`.
pub fn running(markers: &[String]) -> Vec<(u32, String)> {
    let Ok(entries) = fs::read_dir("/proc") else { return Vec::new() };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(cmdline) = fs::read(format!("/proc/{pid}/cmdline")) else { continue };
        let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
        let zombie = fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|stat| {
                stat.rsplit_once(')').map(|(_, rest)| rest.trim_start().starts_with('Z'))
            })
            .unwrap_or(true);
        for marker in markers {
            if !zombie
                && args.first().is_some_and(|a| a.ends_with(b"sleep"))
                && args.get(1) == Some(&marker.as_bytes())
            {
                found.push((pid, marker.clone()));
            }
        }
    }
    found
}

/// Waits until every marker has a running process (the command got going).
#[track_caller]
pub fn wait_running(markers: &[String]) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let found = running(markers);
        if markers.iter().all(|m| found.iter().any(|(_, f)| f == m)) {
            return;
        }
        assert!(Instant::now() < deadline, "the command's processes never all ran: {found:?}");
        thread::sleep(Duration::from_millis(20));
    }
}

/// Asserts that within 5 s no process of `markers` is left, killing any that is, so that a
/// failing row leaves nothing behind either.
#[track_caller]
pub fn assert_none_left(what: &str, markers: &[String]) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let found = running(markers);
        if found.is_empty() {
            return;
        }
        if Instant::now() >= deadline {
            for (pid, _) in &found {
                let _ = kill(Pid::from_raw(*pid as i32), Signal::SIGKILL);
            }
            panic!("{what}: the command's processes outlived replay: {found:?}");
        }
        thread::sleep(Duration::from_millis(20));
    }
}

/// The command of a row: a background job, a job left by a subshell that already exited, and
/// the foreground job the shell waits for.
fn command(markers: &[String]) -> String {
    format!("sleep {} & (sleep {} &); sleep {}", markers[0], markers[1], markers[2])
}

fn markers(row: u32) -> Vec<String> {
    (0..3).map(|i| marker(row * 3 + i)).collect()
}

/// A server running the row's command, ended by `signal`.
fn server_killed_by(signal: Signal, row: u32) {
    let env = TestEnv::new(&[], &[]);
    let markers = markers(row);
    let mut server = Server::start(&env);
    let args = json!({"command": command(&markers), "timeout": 60});
    server.send(&json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "execute_command", "arguments": args}}));
    wait_running(&markers);
    kill(Pid::from_raw(server.pid() as i32), signal).expect("signalling replay");
    drop(server);
    assert_none_left(&format!("server ended by {signal}"), &markers);
}

#[test]
fn commands_die_when_the_server_gets_sigterm() {
    server_killed_by(Signal::SIGTERM, 0);
}

#[test]
fn commands_die_when_the_server_gets_sigkill() {
    server_killed_by(Signal::SIGKILL, 1);
}

/// At the end of stdin the server answers what it received, the command included (here cut by
/// its deadline), and exits; nothing it started stays.
#[test]
fn commands_die_when_the_server_reaches_the_end_of_stdin() {
    let env = TestEnv::new(&[], &[]);
    let markers = markers(2);
    let mut server = Server::start(&env);
    let args = json!({"command": command(&markers), "timeout": 2});
    server.send(&json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "execute_command", "arguments": args}}));
    wait_running(&markers);
    let (replies, status) = server.finish();
    assert!(status.success(), "{status:?}");
    assert_eq!(replies.len(), 1, "{replies:?}");
    assert!(replies[0].line.contains("timed out"), "{}", replies[0].line);
    assert_none_left("server at the end of stdin", &markers);
}

/// `replay call execute_command` ended by SIGKILL, which it cannot catch.
#[test]
fn commands_die_when_replay_call_gets_sigkill() {
    let env = TestEnv::new(&[], &[]);
    let markers = markers(3);
    let args = json!({"command": command(&markers), "timeout": 60}).to_string();
    let mut cmd: Command = harness::replay_command();
    cmd.args(["call", "execute_command", &args, "--allow", &env.p("root")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = cmd.spawn().expect("starting replay call");
    wait_running(&markers);
    kill(Pid::from_raw(child.id() as i32), Signal::SIGKILL).expect("signalling replay");
    let _ = child.wait();
    assert_none_left("replay call ended by SIGKILL", &markers);
}

// ---------------------------------------------------------------------------------------------
// Processes that leave the group: the PID namespace
// ---------------------------------------------------------------------------------------------

/// A command whose processes leave its process group, each in a session of its own: a `setsid`
/// child, a `setsid` grandchild whose parent (a subshell) has exited, and the foreground job.
fn escaping(markers: &[String]) -> String {
    format!("setsid sleep {} & (setsid sleep {} &); sleep {}", markers[0], markers[1], markers[2])
}

/// Whether the server's commands run in a PID namespace of their own: the shell's `NSpid`
/// line in /proc (the host's) shows two levels. Skips (or fails under CI) without one.
fn pid_namespace(server: &mut Server) -> bool {
    let args = json!({"command": "grep NSpid /proc/self/status", "timeout": 10});
    let data = server.call("execute_command", args).result()["structuredContent"].clone();
    let line = data["stdout"].as_str().unwrap_or_default().to_string();
    require("a PID namespace for commands (user namespaces)", line.split_whitespace().count() > 2)
}

/// A server ended by `signal` while a foreground command's escaped processes run.
fn foreground_escapees_die_when_server_gets(signal: Signal, row: u32) {
    let env = TestEnv::new(&[], &[]);
    let markers = markers(row);
    let mut server = Server::start(&env);
    if !pid_namespace(&mut server) {
        return;
    }
    let args = json!({"command": escaping(&markers), "timeout": 60});
    server.send(&json!({"jsonrpc": "2.0", "id": 70, "method": "tools/call",
        "params": {"name": "execute_command", "arguments": args}}));
    wait_running(&markers);
    kill(Pid::from_raw(server.pid() as i32), signal).expect("signalling replay");
    drop(server);
    assert_none_left(&format!("setsid children, server ended by {signal}"), &markers);
}

#[test]
fn setsid_children_die_when_the_server_gets_sigterm() {
    foreground_escapees_die_when_server_gets(Signal::SIGTERM, 10);
}

#[test]
fn setsid_children_die_when_the_server_gets_sigkill() {
    foreground_escapees_die_when_server_gets(Signal::SIGKILL, 11);
}

/// The seccomp fallback (no namespace, so no PID namespace): the command's init is its
/// subreaper, which the `setsid` children are handed to, and which kills them when the server
/// goes.
#[cfg(target_os = "linux")]
fn fallback_escapees_die_when_server_gets(signal: Signal, row: u32) {
    let env = TestEnv::new(&[], &[]);
    let markers = markers(row);
    let mut cmd = harness::replay_command();
    let allow = format!("{}:rw", harness::path_str(&env.root()));
    cmd.args(["--mcp-server", "--allow", &allow]).env("REPLAY_COMMAND_ISOLATION", "seccomp");
    let mut server = Server::from_command(cmd);
    server.initialize("2025-06-18");
    let args = json!({"command": escaping(&markers), "timeout": 60});
    server.send(&json!({"jsonrpc": "2.0", "id": 70, "method": "tools/call",
        "params": {"name": "execute_command", "arguments": args}}));
    wait_running(&markers);
    kill(Pid::from_raw(server.pid() as i32), signal).expect("signalling replay");
    drop(server);
    assert_none_left(&format!("setsid children without a PID namespace, {signal}"), &markers);
}

#[cfg(target_os = "linux")]
#[test]
fn setsid_children_die_with_the_server_in_the_seccomp_fallback_sigkill() {
    fallback_escapees_die_when_server_gets(Signal::SIGKILL, 18);
}

#[cfg(target_os = "linux")]
#[test]
fn setsid_children_die_with_the_server_in_the_seccomp_fallback_sigterm() {
    fallback_escapees_die_when_server_gets(Signal::SIGTERM, 19);
}

/// A session's escaped processes, its shell still running: the server exits at the end of its
/// stdin (sessions do not hold it), or is SIGKILLed.
fn session_escapees_die_when_server_ends(sigkill: bool, row: u32) {
    let env = TestEnv::new(&[], &[]);
    let markers = markers(row);
    let mut server = Server::start(&env);
    if !pid_namespace(&mut server) {
        return;
    }
    let args = json!({"command": escaping(&markers), "background": true, "waitSeconds": 0});
    let data = server.call("execute_command", args).result()["structuredContent"].clone();
    assert!(data["session"].is_u64(), "no session: {data}");
    wait_running(&markers);
    if sigkill {
        kill(Pid::from_raw(server.pid() as i32), Signal::SIGKILL).expect("signalling replay");
        drop(server);
    } else {
        let (_, status) = server.finish();
        assert!(status.success(), "{status:?}");
    }
    let how = if sigkill { "SIGKILL" } else { "the end of stdin" };
    assert_none_left(&format!("a session's setsid children, server ended by {how}"), &markers);
}

#[test]
fn a_sessions_setsid_children_die_when_the_server_exits() {
    session_escapees_die_when_server_ends(false, 12);
}

#[test]
fn a_sessions_setsid_children_die_when_the_server_gets_sigkill() {
    session_escapees_die_when_server_ends(true, 13);
}

/// The deadline ends the whole command, the processes that left its group included, while the
/// server runs on.
#[test]
fn the_deadline_ends_a_commands_setsid_children() {
    let env = TestEnv::new(&[], &[]);
    let markers = markers(14);
    let mut server = Server::start(&env);
    if !pid_namespace(&mut server) {
        return;
    }
    let args = json!({"command": format!("{}; wait", escaping(&markers)), "timeout": 1});
    server.send(&json!({"jsonrpc": "2.0", "id": 70, "method": "tools/call",
        "params": {"name": "execute_command", "arguments": args}}));
    wait_running(&markers);
    let line = server.next_line_within(Duration::from_secs(15));
    assert!(line.contains("timed out"), "{line}");
    assert_none_left("setsid children at the deadline", &markers);
    let reply = server.call("execute_command", json!({"command": "echo still here"}));
    assert!(reply.line.contains("still here"), "{}", reply.line);
}

/// `kill: true` ends a session's whole tree, and a shell that exits ends what it left.
#[test]
fn kill_and_the_shells_exit_end_a_sessions_setsid_children() {
    let env = TestEnv::new(&[], &[]);
    let (killed, exited) = (markers(15), markers(16));
    let mut server = Server::start(&env);
    if !pid_namespace(&mut server) {
        return;
    }
    let args = json!({"command": escaping(&killed), "background": true, "waitSeconds": 0});
    let data = server.call("execute_command", args).result()["structuredContent"].clone();
    let id = data["session"].as_u64().unwrap_or_else(|| panic!("no session: {data}"));
    wait_running(&killed);
    server.call("command_session", json!({"session": id, "kill": true}));
    assert_none_left("a session's setsid children after kill", &killed);
    // The shell exits once its escapees run; they end with it.
    let command = format!(
        "setsid sleep {} & (setsid sleep {} &); setsid sleep {} & sleep 0.5",
        exited[0], exited[1], exited[2]
    );
    let args = json!({"command": command, "background": true, "waitSeconds": 0});
    server.call("execute_command", args);
    wait_running(&exited);
    assert_none_left("a session's setsid children after its shell exited", &exited);
}

/// A server the user runs outside the sandbox (tmux, here) listens on a Unix socket by path,
/// which neither Landlock nor the read-only mount namespace closes (connect needs no write on
/// the socket file's filesystem). A command that asks it to run a process would get one
/// outside the sandbox and its PID namespace, which outlives the server. The namespace covers
/// tmux's directory (`tmux-<uid>`) with an empty tmpfs.
#[test]
#[expect(clippy::disallowed_methods, reason = "the user's own tmux server, outside the sandbox")]
fn a_command_cannot_start_a_process_through_the_users_tmux() {
    let tmux = Command::new("tmux").arg("-V").output().is_ok_and(|o| o.status.success());
    if !require("tmux", tmux) {
        return;
    }
    let env = TestEnv::new(&[], &[]);
    // tmux's own place for its socket, as a user's tmux has it.
    let name =
        env.root().parent().and_then(|b| b.file_name()).map(|n| n.to_string_lossy().into_owned());
    let name = name.expect("the test's directory has a name");
    let started = Command::new("tmux")
        .args(["-L", &name, "new-session", "-d", "sleep 600"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(started, "the user's tmux server did not start");
    let socket = Command::new("tmux")
        .args(["-L", &name, "display-message", "-p", "#{socket_path}"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .expect("asking tmux for its socket");
    let markers = markers(17);
    let mut server = Server::start(&env);
    let ask = format!("tmux -S '{socket}' new-window -d 'sleep {}'", markers[0]);
    server.call("execute_command", json!({"command": ask}));
    let pid = Pid::from_raw(server.pid() as i32);
    kill(pid, Signal::SIGKILL).expect("signalling replay");
    drop(server);
    let left = running(&markers);
    for (pid, _) in &left {
        let _ = kill(Pid::from_raw(*pid as i32), Signal::SIGKILL);
    }
    let _ = Command::new("tmux").args(["-L", &name, "kill-server"]).status();
    assert!(left.is_empty(), "a process started through tmux outlived the server: {left:?}");
}
