//! Attacks on sessions through the real binary: commands that leave a process outside their
//! process group holding the output, out-of-range numbers, the deny list and the spill file;
//! and `replay install` on config paths that are no regular file, or a huge one.

use std::os::unix::fs::FileTypeExt;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::kill;
use nix::unistd::Pid;
use serde_json::{json, Value};

use crate::harness::{path_str, raw_call, replay_command, require, run_cli, Server, TestEnv};

/// SIGKILL to a process the test's command left outside the server's reach.
struct KillOnDrop(i32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = kill(Pid::from_raw(self.0), nix::sys::signal::SIGKILL);
    }
}

/// A server whose commands run without the mount and PID namespaces (the seccomp fallback):
/// only there does a `setsid` child outlive its shell, which the rows on held output need
/// (orphans.rs has the namespace's rows). Its commands' pids are the host's, too.
fn fallback_server(env: &TestEnv) -> Server {
    let mut cmd = replay_command();
    cmd.args(["--mcp-server", "--allow", &format!("{}:rw", path_str(&env.root()))]);
    cmd.env("REPLAY_COMMAND_ISOLATION", "seccomp");
    let mut server = Server::from_command(cmd);
    server.initialize("2025-06-18");
    server
}

#[track_caller]
fn structured(server: &mut Server, tool: &str, args: Value) -> Value {
    server.call(tool, args).result()["structuredContent"].clone()
}

/// Starts, as session `n`, a command whose shell exits at once, leaving a `setsid` child (out
/// of the process group, so the server's kill misses it) that holds the output pipe for 1000 s.
/// Waits until the shell is gone (reaped by the server); returns a guard that kills the child.
fn leave_setsid_child(server: &mut Server, env: &TestEnv, n: usize) -> (u64, KillOnDrop) {
    let pid_file = format!("pid{n}");
    let command = format!(
        "setsid sh -c 'echo $$ > {pid_file}; exec sleep 1000' & \
         while [ ! -s {pid_file} ]; do sleep 0.01; done; echo $$"
    );
    let args = json!({"command": command, "background": true, "waitSeconds": 0});
    let data = structured(server, "execute_command", args);
    let id = data["session"].as_u64().unwrap_or_else(|| panic!("no session: {data}"));
    let until = Instant::now() + Duration::from_secs(20);
    let mut output = String::new();
    while !output.ends_with('\n') {
        assert!(Instant::now() < until, "no pid from session {id}: {output:?}");
        let read = structured(server, "command_session", json!({"session": id, "waitSeconds": 1}));
        output.push_str(read["output"].as_str().expect("output"));
    }
    let guard =
        KillOnDrop(env.read_string(&format!("root/{pid_file}")).trim().parse().expect("a pid"));
    let shell = Pid::from_raw(output.trim().parse().expect("the shell's pid"));
    while kill(shell, None).is_ok() {
        assert!(Instant::now() < until, "session {id}'s shell still there");
        std::thread::sleep(Duration::from_millis(10));
    }
    (id, guard)
}

/// The shell has exited, but a `setsid` child holds the output: the list says `[running]`, so
/// `kill` must end it (or at least stop following it), not answer "session 1 has ended".
#[test]
fn a_session_whose_shell_exited_is_killed_though_a_setsid_child_holds_its_output() {
    let env = TestEnv::new(&[], &[]);
    let mut server = fallback_server(&env);
    let (id, _child) = leave_setsid_child(&mut server, &env, 1);
    let killed = server.call("command_session", json!({"session": id, "kill": true}));
    assert!(
        killed.value.get("error").is_none(),
        "kill refused a session the list shows running: {}",
        killed.line
    );
    let data = killed.result()["structuredContent"].clone();
    assert!(!data["exitCode"].is_null(), "still running after kill: {data}");
    let text = killed.result()["content"][0]["text"].as_str().expect("text").to_string();
    assert!(text.contains("still holds its output; stopped reading"), "{text}");
}

/// Sixteen commands that each leave a `setsid` child holding their output must not use up the
/// server's sessions for good: their shells have exited, and `kill` is refused on them.
#[test]
fn sessions_whose_shells_exited_do_not_lock_out_new_ones() {
    let env = TestEnv::new(&[], &[]);
    let mut server = fallback_server(&env);
    let _children: Vec<_> = (1..=16).map(|n| leave_setsid_child(&mut server, &env, n).1).collect();
    let args = json!({"command": "echo 17", "background": true, "waitSeconds": 5});
    let reply = server.call("execute_command", args);
    assert!(
        reply.value.get("error").is_none(),
        "no 17th session while 16 exited shells' children live on: {}",
        reply.line
    );
}

/// Numbers the schema bounds are refused with -32602, and the server goes on.
#[test]
fn out_of_range_session_numbers_are_refused() {
    let env = TestEnv::new(&[], &[]);
    let mut server = Server::start(&env);
    let max = u64::MAX;
    let start = |extra: Value| {
        let mut args = json!({"command": "echo hi", "background": true});
        args.as_object_mut().expect("object").extend(extra.as_object().expect("object").clone());
        args
    };
    for args in [
        start(json!({"waitSeconds": max})),
        start(json!({"timeout": max})),
        start(json!({"waitSeconds": -1})),
    ] {
        server.call_err("execute_command", args, -32602);
    }
    for args in [
        json!({"session": 0}),
        json!({"session": -1}),
        json!({"session": 1.5}),
        json!({"session": "1"}),
        json!({"session": max}),
        json!({"session": 1, "waitSeconds": max}),
        json!({"session": 1, "offset": -1}),
    ] {
        server.call_err("command_session", args, -32602);
    }
    let id = structured(&mut server, "execute_command", start(json!({"waitSeconds": 5})));
    let id = id["session"].as_u64().expect("a session");
    let err = server.call_err("command_session", json!({"session": id, "offset": max}), -32602);
    assert!(err.message.contains("past the end"), "{}", err.message);
    // Ended: kill and closeInput are refused twice alike, and the output stays.
    for _ in 0..2 {
        server.call_err("command_session", json!({"session": id, "kill": true}), -32602);
        server.call_err("command_session", json!({"session": id, "closeInput": true}), -32602);
    }
    let data = structured(&mut server, "command_session", json!({"session": id, "offset": 0}));
    assert_eq!(data["output"], "hi\n", "{data}");
}

/// `--deny-command` holds for a background or tty command as for a foreground one.
#[test]
fn a_denied_command_is_refused_as_a_session_too() {
    let env = TestEnv::new(&[], &[]);
    let root = format!("{}:rw", env.root().display());
    let mut server =
        Server::start_with(["--mcp-server", "--allow", &root, "--deny-command", "curl"]);
    for mode in ["background", "tty"] {
        let args = json!({"command": "true; curl x", mode: true, "waitSeconds": 0});
        let err = server.call_err("execute_command", args, -32001);
        assert!(err.message.contains("`curl`"), "{}", err.message);
    }
    let listed = structured(&mut server, "command_session", json!({}));
    assert_eq!(listed["sessions"], json!([]), "{listed}");
}

/// A session's output is in an unnamed file: another command finds it neither in its TMPDIR
/// nor through the server's descriptors.
#[test]
fn a_command_cannot_read_another_sessions_output() {
    let env = TestEnv::new(&[], &[]);
    let mut server = Server::start(&env);
    // Written in two halves so that no command line holds the whole marker.
    let args = json!({"command": "echo SPILL-$((6*7))-MARK; exec sleep 1000", "background": true, "waitSeconds": 1});
    let id = structured(&mut server, "execute_command", args)["session"].as_u64().expect("id");
    let until = Instant::now() + Duration::from_secs(10);
    while structured(&mut server, "command_session", json!({"session": id, "offset": 0}))["output"]
        != "SPILL-42-MARK\n"
    {
        assert!(Instant::now() < until, "no output from session {id}");
    }
    // The server's pid as the host sees it: a command's $PPID is its PID namespace's init.
    let probe = format!(
        "for f in \"$TMPDIR\"/* \"$TMPDIR\"/.* /proc/{}/fd/*; do \
         timeout 2 grep -l \"SPILL-4\"2-MARK \"$f\" 2>/dev/null; done; echo probed",
        server.pid()
    );
    let data = structured(&mut server, "execute_command", json!({"command": probe, "timeout": 30}));
    assert_eq!(data["stdout"], "probed\n", "{data}");
    server.call("command_session", json!({"session": id, "kill": true}));
}

/// A foreground command whose `setsid` child holds stdout open: the shell has exited, and the
/// call must still answer by its deadline (2 s, then the 3 s grace), not when the child ends
/// (1000 s), and say why the output stopped. While it waits, the server does not exit at the
/// end of stdin either.
#[test]
fn a_setsid_child_holding_stdout_does_not_hold_a_foreground_reply() {
    let env = TestEnv::new(&[], &[]);
    let mut server = fallback_server(&env);
    let command = "setsid sh -c 'echo $$ > pid; exec sleep 1000' & \
                   while [ ! -s pid ]; do sleep 0.01; done; echo shell done";
    server.send_raw(&raw_call(7, "execute_command", json!({"command": command, "timeout": 2})));
    let until = Instant::now() + Duration::from_secs(20);
    while !env.exists("root/pid") || env.read_string("root/pid").trim().is_empty() {
        assert!(Instant::now() < until, "the command wrote no pid");
        std::thread::sleep(Duration::from_millis(10));
    }
    let _child = KillOnDrop(env.read_string("root/pid").trim().parse().expect("a pid"));
    let line = server.next_line_within(Duration::from_secs(15));
    assert!(line.contains("shell done"), "{line}");
    assert!(line.contains("still holds its output; stopped reading"), "{line}");
}

/// `replay install cursor --config PATH root` with HOME in the test's directory: its exit
/// status (`None` when it ran past 15 s and was killed) and its peak resident memory in KiB, as
/// its own `VmHWM` shows while it runs. Not `wait4`'s `ru_maxrss`: a child's counts the test
/// process's memory at the spawn (a few hundred MB with the suite running beside it). A call
/// refused at once may end between two looks, with a peak of 0: it read nothing.
fn install_into(env: &TestEnv, config: &Path) -> (Option<i32>, i64) {
    let mut cmd = replay_command();
    cmd.args(["install", "cursor", "--config", &path_str(config), &path_str(&env.root())])
        .env("HOME", env.base())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = cmd.spawn().expect("spawn replay install");
    let status_file = format!("/proc/{}/status", child.id());
    let until = Instant::now() + Duration::from_secs(15);
    let mut peak_kib = 0;
    loop {
        if let Ok(status) = std::fs::read_to_string(&status_file) {
            let hwm = status.lines().find_map(|line| line.strip_prefix("VmHWM:"));
            let kib = hwm.and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok());
            peak_kib = peak_kib.max(kib.unwrap_or(0));
        }
        if let Some(status) = child.try_wait().expect("wait for replay install") {
            return (Some(status.code().unwrap_or(-1)), peak_kib);
        }
        if Instant::now() >= until {
            let _ = child.kill();
            let _ = child.wait();
            return (None, peak_kib);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// A config path that is a FIFO (or links to one) is refused, not read forever.
#[test]
fn install_does_not_hang_on_a_fifo_config() {
    let env = TestEnv::new(&[], &[]);
    let fifo = env.path("mcp.json");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("mkfifo");
    let (status, _) = install_into(&env, &fifo);
    assert!(status.is_some(), "replay install still reading the FIFO {fifo:?} after 15 s");
    assert!(std::fs::symlink_metadata(&fifo).expect("fifo").file_type().is_fifo());
}

/// A config path that is a character device (a client's file linked to `/dev/null` to turn it
/// off) is refused: install must not replace the device with a regular file, nor write a
/// backup beside it (run as root on the real `/dev/null`, it replaced the system's). Made with
/// mknod in the test's directory, never the real one.
#[test]
fn install_leaves_a_device_config_alone() {
    let env = TestEnv::new(&[], &[]);
    let device = env.path("null");
    let made = nix::sys::stat::mknod(
        &device,
        nix::sys::stat::SFlag::S_IFCHR,
        nix::sys::stat::Mode::from_bits_truncate(0o666),
        libc::makedev(1, 3),
    );
    if !require("CAP_MKNOD (root) to make a character device", made.is_ok()) {
        return;
    }
    env.symlink(&path_str(&device), "mcp.json");
    let (status, _) = install_into(&env, &env.path("mcp.json"));
    let kind = std::fs::symlink_metadata(&device).expect("device").file_type();
    assert!(kind.is_char_device(), "install replaced the device {device:?} ({kind:?})");
    assert_eq!(env.names(""), ["mcp.json", "null", "root"], "install wrote beside the device");
    assert_ne!(status, Some(0), "install said it wrote a device");
}

/// A config file far bigger than any config (1 GiB, sparse) is refused before it is read:
/// reading it whole took 1 GiB of memory.
#[test]
fn install_does_not_read_a_huge_config_into_memory() {
    let env = TestEnv::new(&[], &[]);
    let big = env.path("mcp.json");
    std::fs::File::create(&big).and_then(|f| f.set_len(1 << 30)).expect("a sparse file");
    let (status, peak_kib) = install_into(&env, &big);
    assert!(status.is_some(), "replay install ran past 15 s on a 1 GiB config");
    assert!(peak_kib < 100 * 1024, "replay install peaked at {peak_kib} KiB on a 1 GiB config");
    assert_eq!(std::fs::metadata(&big).expect("big").len(), 1 << 30, "the config changed");
}

/// `install --project DIR` edits a file inside DIR: a cloned project whose `.cursor` (or
/// `.vscode/mcp.json`) is a symlink out of it must not steer the write to another directory or
/// another of the user's files.
#[test]
fn install_project_does_not_follow_links_out_of_the_project() {
    let env = TestEnv::new(&["project/.vscode", "victim"], &[("victim/settings.json", "{}\n")]);
    env.symlink(&path_str(&env.path("victim")), "project/.cursor");
    env.symlink(&path_str(&env.path("victim/settings.json")), "project/.vscode/mcp.json");
    let before = env.snapshot().under("victim");
    for client in ["cursor", "vscode"] {
        let mut cmd = replay_command();
        cmd.args(["install", client, "--project", &env.p("project"), &env.p("root")])
            .env("HOME", env.base());
        run_cli(cmd, "");
    }
    let diff = before.diff(&env.snapshot().under("victim"));
    assert!(diff.is_empty(), "install --project wrote outside the project:\n{diff}");
}
