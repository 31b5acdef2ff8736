//! Sessions through the real binary: execute_command's `background` and `tty`, command_session's
//! reads by offset, input, kill and list; the limits (16 running, 64 MiB of output), bad input,
//! and sessions ending with the server. Also the foreground head-and-tail note.
//!
//! See: issue #23 (commands ended after 60 s, took no input, and kept only the first 512 KB).

use std::net::TcpListener;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::harness::{require, Response, Server, TestEnv};

/// A tools/call result: its first text item, `structuredContent`, and `isError`.
struct Reply {
    text: String,
    data: Value,
    is_error: bool,
}

#[track_caller]
fn decode(response: &Response) -> Reply {
    let result = response.result();
    Reply {
        text: result["content"][0]["text"].as_str().expect("a text item").to_owned(),
        data: result["structuredContent"].clone(),
        is_error: result["isError"] == true,
    }
}

/// Starts `command` as a background session that is not waited for; returns its id.
#[track_caller]
fn start(server: &mut Server, command: &str) -> u64 {
    start_with(server, json!({"command": command, "background": true, "waitSeconds": 0}))
}

#[track_caller]
fn start_with(server: &mut Server, args: Value) -> u64 {
    let reply = decode(&server.call("execute_command", args));
    reply.data["session"].as_u64().unwrap_or_else(|| panic!("no session in {}", reply.text))
}

#[track_caller]
fn session(server: &mut Server, args: Value) -> Reply {
    decode(&server.call("command_session", args))
}

/// Reads session `id` from where the last read ended until it ends: its output from there.
/// Every reply must start where the one before ended, and drop nothing.
#[track_caller]
fn follow(server: &mut Server, id: u64, limit: Duration) -> (String, Reply) {
    let until = Instant::now() + limit;
    let mut output = String::new();
    let mut offset = None;
    loop {
        let reply = session(server, json!({"session": id, "waitSeconds": 8}));
        let chunk = reply.data["output"].as_str().expect("output");
        let next = reply.data["nextOffset"].as_u64().expect("nextOffset");
        let from = next - chunk.len() as u64;
        assert_eq!(*offset.get_or_insert(from), from, "offsets do not follow on");
        offset = Some(next);
        output.push_str(chunk);
        assert_eq!(reply.data["dropped"], 0, "{}", reply.text);
        if !reply.data["exitCode"].is_null() {
            return (output, reply);
        }
        assert!(Instant::now() < until, "session {id} still running after {limit:?}: {output}");
    }
}

/// Reads session `id` from offset 0 on until its output contains `needle`; returns it all.
#[track_caller]
fn read_until(server: &mut Server, id: u64, needle: &str) -> String {
    let until = Instant::now() + Duration::from_secs(20);
    let mut output = String::new();
    let mut args = json!({"session": id, "offset": 0});
    while !output.contains(needle) {
        assert!(Instant::now() < until, "no {needle:?} from session {id}: {output:?}");
        let reply = session(server, args);
        output.push_str(reply.data["output"].as_str().expect("output"));
        // On from where that read ended.
        args = json!({"session": id, "waitSeconds": 2});
    }
    output
}

#[test]
fn a_90_s_command_is_followed_to_its_end() {
    let env = TestEnv::new(&[], &[]);
    let mut server = Server::start(&env);
    let command = "for i in 1 2 3 4 5 6 7 8 9; do echo tick $i; sleep 10; done; echo done";
    let reply = decode(&server.call(
        "execute_command",
        json!({"command": command, "background": true, "waitSeconds": 1}),
    ));
    let first = reply.data["stdout"].as_str().expect("stdout").to_owned();
    let next = format!("[running]\n[session 1, next offset: {}]", first.len());
    assert!(reply.text.ends_with(&next), "{}", reply.text);
    assert_eq!(reply.data["exitCode"], Value::Null);
    let list = session(&mut server, json!({}));
    assert!(list.text.starts_with("1\t[running]\t"), "{}", list.text);
    assert!(list.text.ends_with(&format!("\t{command}")), "{}", list.text);
    let (rest, last) = follow(&mut server, 1, Duration::from_secs(150));
    let ticks: String = (1..=9).map(|i| format!("tick {i}\n")).collect();
    assert_eq!(first + &rest, format!("{ticks}done\n"));
    assert!(last.text.ends_with("[exit code: 0]\n[session 1, next offset: 68]"), "{}", last.text);
    assert_eq!(last.data["exitCode"], 0);
    let list = session(&mut server, json!({}));
    let seconds = list.data["sessions"][0]["seconds"].as_u64().expect("seconds");
    assert!((89..=100).contains(&seconds), "ran {seconds} s");
    assert_eq!(list.data["sessions"][0]["bytes"], 68);
}

fn python() -> Option<&'static str> {
    let python = "/usr/bin/python3";
    Path::new(python).exists().then_some(python)
}

/// A REPL in a terminal, with default flags: the prompt, an answer to input, and the exit at
/// end of input (^D).
#[test]
fn python_repl_is_driven_through_a_terminal() {
    let Some(python) = python() else {
        require("/usr/bin/python3", false);
        return;
    };
    let env = TestEnv::new(&[], &[]);
    let mut server = Server::start(&env);
    let id = start_with(
        &mut server,
        json!({"command": format!("{python} -i -q"), "tty": true, "waitSeconds": 0}),
    );
    read_until(&mut server, id, ">>> ");
    session(&mut server, json!({"session": id, "input": "print(6 * 7)\n"}));
    // The terminal echoes the line and ends lines with \r\n.
    read_until(&mut server, id, ">>> print(6 * 7)\r\n42\r\n>>> ");
    session(&mut server, json!({"session": id, "input": "import os; os.isatty(0)\n"}));
    read_until(&mut server, id, "os.isatty(0)\r\nTrue\r\n>>> ");
    session(&mut server, json!({"session": id, "closeInput": true}));
    let (_, last) = follow(&mut server, id, Duration::from_secs(20));
    assert_eq!(last.data["exitCode"], 0, "{}", last.text);
}

/// A free loopback port: bound by the test, then let go.
fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    listener.local_addr().expect("its address").port()
}

/// A dev server in the background, reached from a foreground command, then killed.
#[test]
fn a_dev_server_runs_in_the_background_until_killed() {
    let Some(python) = python() else {
        require("/usr/bin/python3", false);
        return;
    };
    let env = TestEnv::new(&[], &[("root/hello.txt", "hello from the dev server\n")]);
    let mut server = Server::start(&env);
    let port = free_port();
    let id = start(&mut server, &format!("{python} -u -m http.server {port} --bind 127.0.0.1"));
    read_until(&mut server, id, "Serving HTTP");
    let fetch = format!(
        "{python} -c 'import urllib.request as u; print(u.urlopen(\"http://127.0.0.1:{port}/hello.txt\").read().decode(), end=\"\")'"
    );
    let reply = decode(&server.call("execute_command", json!({"command": fetch})));
    assert_eq!(reply.text, "hello from the dev server\n[exit code: 0]");
    // The request's log line, on stderr, is in the session's output.
    read_until(&mut server, id, "\"GET /hello.txt HTTP/1.1\" 200");
    let killed = session(&mut server, json!({"session": id, "kill": true}));
    assert!(killed.text.contains("[exit code: 137]"), "{}", killed.text);
    assert!(killed.is_error);
    let reply = decode(&server.call("execute_command", json!({"command": fetch})));
    assert_eq!(reply.text, "(no output)\n[exit code: 1]");
}

/// The 17th running session is refused, naming the way out; a killed session makes room, and
/// stays readable until 16 newer sessions have started.
#[test]
fn a_17th_running_session_is_refused() {
    let env = TestEnv::new(&[], &[]);
    let mut server = Server::start(&env);
    for i in 1..=16 {
        assert_eq!(start(&mut server, &format!("echo {i}; exec sleep 1000")), i);
    }
    let args = json!({"command": "echo 17", "background": true});
    let err = server.call_err("execute_command", args.clone(), -32602);
    assert!(
        err.message.contains(r#"end one with command_session {"session": 1, "kill": true}"#),
        "{}",
        err.message
    );
    read_until(&mut server, 1, "1\n");
    let killed = session(&mut server, json!({"session": 1, "kill": true}));
    assert_eq!(killed.text, "[exit code: 137]\n[session 1, next offset: 2]");
    // Ended, it is read again from offset 0, by one newer than it (2..=16).
    let again = session(&mut server, json!({"session": 1, "offset": 0}));
    assert_eq!(again.text, "1\n[exit code: 137]\n[session 1, next offset: 2]");
    assert_eq!(start_with(&mut server, args), 17);
    let err = server.call_err("command_session", json!({"session": 1}), -32602);
    assert!(err.message.contains("no session 1 "), "{}", err.message);
    assert!(session(&mut server, json!({"session": 2, "offset": 0})).text.starts_with("2\n"));
}

/// `yes`' 17-byte line: the byte at offset `at` of its output is `LINE[at % 17]`.
const LINE: &[u8] = b"0123456789abcdef\n";

fn line_bytes(at: u64, len: usize) -> String {
    (0..len).map(|i| LINE[((at + i as u64) % LINE.len() as u64) as usize] as char).collect()
}

/// 70,000,000 bytes of output: the oldest 2,891,136 are dropped, said exactly, and the last
/// 64 MiB read in 512 KB steps, each at its offset, nothing read twice.
#[test]
fn output_over_64_mib_drops_the_oldest_exactly() {
    const TOTAL: u64 = 70_000_000;
    const KEPT: u64 = 64 * 1024 * 1024;
    let env = TestEnv::new(&[], &[]);
    let mut server = Server::start(&env);
    let id = start(&mut server, &format!("yes 0123456789abcdef | head -c {TOTAL}"));
    let until = Instant::now() + Duration::from_secs(60);
    while session(&mut server, json!({})).data["sessions"][0]["exitCode"].is_null() {
        assert!(Instant::now() < until, "the 70 MB command did not end");
        std::thread::sleep(Duration::from_millis(50));
    }
    let dropped = TOTAL - KEPT;
    let first = session(&mut server, json!({"session": id, "offset": 0}));
    let note = format!(
        "[{dropped} bytes dropped before offset {dropped}: a session keeps its last 64 MiB]\n"
    );
    assert!(first.text.starts_with(&note), "{}", &first.text[..200]);
    assert_eq!(first.data["dropped"], dropped);
    let mut offset = dropped;
    let mut reply = first;
    loop {
        let output = reply.data["output"].as_str().expect("output");
        assert_eq!(output.len(), (512 * 1024).min((TOTAL - offset) as usize));
        assert!(output == line_bytes(offset, output.len()), "wrong bytes at offset {offset}");
        offset += output.len() as u64;
        assert_eq!(reply.data["nextOffset"], offset);
        if offset == TOTAL {
            break;
        }
        reply = session(&mut server, json!({"session": id}));
        assert_eq!(reply.data["dropped"], 0);
    }
    assert!(reply.text.ends_with(&format!("[exit code: 0]\n[session {id}, next offset: {TOTAL}]")));
    // From inside the dropped part: exactly the bytes before the oldest kept.
    let reply = session(&mut server, json!({"session": id, "offset": 1000}));
    assert_eq!(reply.data["dropped"], dropped - 1000);
    assert!(reply
        .text
        .starts_with(&format!("[{} bytes dropped before offset {dropped}: ", dropped - 1000)));
}

/// A foreground stream over 512 KB keeps its first 128 KB and its last 384 KB, with the exact
/// count of the bytes cut between them.
#[test]
fn foreground_output_keeps_its_head_and_tail() {
    let env = TestEnv::new(&[], &[]);
    let mut server = Server::start(&env);
    let command = "printf START; head -c 700000 /dev/zero | tr '\\0' m; printf END";
    let response = server.call("execute_command", json!({"command": command}));
    let text = decode(&response).text;
    let note = "\n[stdout: 175720 bytes cut here, between the first 128 KB and the last 384 KB of 700008 bytes]\n";
    let head = format!("START{}", "m".repeat(128 * 1024 - 5));
    let tail = format!("{}END", "m".repeat(384 * 1024 - 3));
    assert!(text == format!("{head}{note}{tail}\n[exit code: 0]"), "{}", &text[..100]);
    let data = &response.result()["structuredContent"];
    assert_eq!(data["stdoutBytes"], 700_008);
    assert_eq!(data["stdoutTruncated"], true);
}

/// Each bad call gets -32602 (or -32603), changes nothing, and the server goes on.
#[test]
fn bad_session_calls_are_refused_and_change_nothing() {
    let env = TestEnv::new(&[], &[]);
    let mut server = Server::start(&env);
    let err = server.call_err("command_session", json!({"session": 99}), -32602);
    assert!(err.message.contains("no session 99 "), "{}", err.message);
    let err = server.call_err("command_session", json!({"input": "x"}), -32602);
    assert!(err.message.contains("`session` is required with input"), "{}", err.message);
    for args in [
        json!({"waitSeconds": 61}),
        json!({"session": 1, "waitSeconds": -1}),
        json!({"session": 1, "offset": -1}),
    ] {
        server.call_err("command_session", args, -32602);
    }
    let long = json!({"command": "true", "background": true, "waitSeconds": 61});
    server.call_err("execute_command", long, -32602);
    let err = server.call_err("execute_command", json!({"command": "true", "timeout": 61}), -32602);
    assert!(err.message.contains("give background: true"), "{}", err.message);

    // Input after closeInput, and an offset past the end: refused, no input written.
    let cat = start(&mut server, "cat; echo cat ended; exec sleep 1000");
    session(&mut server, json!({"session": cat, "input": "one\n"}));
    read_until(&mut server, cat, "one\n");
    let past = json!({"session": cat, "input": "two\n", "offset": 1000});
    let err = server.call_err("command_session", past, -32602);
    assert!(err.message.contains("1000 is past the end of session"), "{}", err.message);
    session(&mut server, json!({"session": cat, "closeInput": true}));
    read_until(&mut server, cat, "cat ended\n");
    for args in
        [json!({"session": cat, "input": "three\n"}), json!({"session": cat, "closeInput": true})]
    {
        let err = server.call_err("command_session", args, -32602);
        assert!(err.message.contains("input was closed (closeInput)"), "{}", err.message);
    }
    let all = session(&mut server, json!({"session": cat, "offset": 0}));
    assert_eq!(all.data["output"], "one\ncat ended\n");

    // A session that exited, and one killed: input and kill refused, output still readable.
    let exited = start(&mut server, "echo bye; exit 3");
    follow(&mut server, exited, Duration::from_secs(20));
    let killed = start(&mut server, "echo hold; exec sleep 1000");
    read_until(&mut server, killed, "hold\n");
    session(&mut server, json!({"session": killed, "kill": true}));
    for (id, code) in [(exited, 3), (killed, 137)] {
        for args in [
            json!({"session": id, "input": "x"}),
            json!({"session": id, "closeInput": true}),
            json!({"session": id, "kill": true}),
        ] {
            let err = server.call_err("command_session", args, -32602);
            let ended = format!("session {id} has ended ([exit code: {code}]); its output stays");
            assert!(err.message.contains(&ended), "{}", err.message);
        }
        let reply = session(&mut server, json!({"session": id, "offset": 0}));
        assert!(reply.text.contains(&format!("[exit code: {code}]")), "{}", reply.text);
    }
    server.request("ping", json!({})).result();
    session(&mut server, json!({"session": cat, "kill": true}));
}

/// `tty` where no pseudo-terminal can be had (here /dev/ptmx masked by /dev/null in a mount
/// namespace of the server's own): -32603, and the server goes on.
#[cfg(target_os = "linux")]
#[test]
fn tty_without_pseudo_terminals_is_an_error() {
    let unshare = ["/usr/bin/unshare", "/bin/unshare"].into_iter().find(|p| Path::new(p).exists());
    let Some(unshare) = unshare.filter(|u| user_namespaces(u)) else {
        require("unshare(1) and unprivileged user namespaces", false);
        return;
    };
    let env = TestEnv::new(&[], &[]);
    let allow = format!("{}:rw", crate::harness::path_str(&env.root()));
    let mut cmd = unshare_command(unshare);
    cmd.args(["-rm", "sh", "-c", "mount --bind /dev/null /dev/ptmx && exec \"$0\" \"$@\""]);
    cmd.args([crate::harness::BIN, "--mcp-server", "--allow", &allow, "--no-sandbox"]);
    let mut server = Server::from_command(cmd);
    server.initialize("2025-06-18");
    let args = json!({"command": "tty", "tty": true});
    let err = server.call_err("execute_command", args, -32603);
    assert!(err.message.contains("open a pseudo-terminal for tty: true (run without tty"));
    let list = session(&mut server, json!({}));
    assert_eq!(list.text, "(no sessions)");
    assert_eq!(start(&mut server, "echo fine"), 1);
}

#[cfg(target_os = "linux")]
#[expect(clippy::disallowed_methods, reason = "a mount namespace for the server, by unshare(1)")]
fn unshare_command(unshare: &str) -> std::process::Command {
    std::process::Command::new(unshare)
}

#[cfg(target_os = "linux")]
fn user_namespaces(unshare: &str) -> bool {
    unshare_command(unshare)
        .args(["-rm", "true"])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A session's processes end with the server: at the end of its input (the idle session does
/// not hold it up), and when it is SIGKILLed.
#[cfg(target_os = "linux")]
#[test]
fn sessions_end_with_the_server() {
    use crate::orphans::{assert_none_left, marker, wait_running};
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;

    let env = TestEnv::new(&[], &[]);
    let markers = [marker(90), marker(91)];
    let mut server = Server::start(&env);
    start(&mut server, &format!("sleep {} & exec sleep {}", markers[0], markers[1]));
    wait_running(&markers);
    let (_, status) = server.finish();
    assert!(status.success(), "{status}");
    assert_none_left("server at end of input", &markers);

    let markers = [marker(92), marker(93)];
    let mut server = Server::start(&env);
    start(&mut server, &format!("sleep {} & exec sleep {}", markers[0], markers[1]));
    wait_running(&markers);
    kill(Pid::from_raw(server.pid() as i32), Signal::SIGKILL).expect("SIGKILL to replay");
    drop(server);
    assert_none_left("server SIGKILLed", &markers);
}
