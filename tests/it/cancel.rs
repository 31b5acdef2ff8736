//! CPU-bound calls: bounded where they can be, stopped by `notifications/cancelled` where they cannot.
//!
//! See: issue #13, item 8. A dryRun diff of 100,000 changed lines took 51 s (the diff was
//! quadratic); after `notifications/cancelled`, an offset scan of a 1 TiB sparse file, a regex
//! edit and a diff went on burning CPU, and a write_file sent after them waited until they were
//! done. These tests watch the server's CPU time in `/proc/<pid>/stat`: after a cancel it must
//! stop growing, and a write to another file must be answered at once. `/proc` is Linux's, so
//! they are built there only; the bounded diff runs everywhere.

#[cfg(target_os = "linux")]
use std::fs;
#[cfg(target_os = "linux")]
use std::thread;
use std::time::{Duration, Instant};

use serde_json::json;
#[cfg(target_os = "linux")]
use serde_json::Value;

use crate::harness::{Server, TestEnv};

/// The server's CPU time so far (user and system, all threads), in seconds.
#[cfg(target_os = "linux")]
fn cpu_seconds(server: &Server) -> f64 {
    let stat = fs::read_to_string(format!("/proc/{}/stat", server.pid())).expect("stat");
    // The fields after the command name, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat.rsplit_once(')').expect("comm").1.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    let ticks: u64 =
        fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime");
    let per_second =
        nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK).ok().flatten().unwrap_or(100);
    ticks as f64 / per_second as f64
}

/// Sends `tools/call` with id `id` and does not wait for its reply.
#[cfg(target_os = "linux")]
fn send_call(server: &mut Server, id: &str, tool: &str, args: Value) {
    server.send(&json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": args},
    }));
}

/// Waits until the server has spent `seconds` of CPU more than at the start: the call is busy.
#[track_caller]
#[cfg(target_os = "linux")]
fn wait_until_busy(server: &Server, seconds: f64) {
    let start = cpu_seconds(server);
    let deadline = Instant::now() + Duration::from_secs(10);
    while cpu_seconds(server) < start + seconds {
        assert!(Instant::now() < deadline, "the call never got busy; stderr:\n{}", server.stderr());
        // Polling the kernel's counter: there is no event to wait on.
        thread::sleep(Duration::from_millis(20));
    }
}

/// Cancels `id`, and asserts that the server's CPU time stops growing within a second and that
/// a write to another file is answered promptly (never the cancelled call).
#[track_caller]
#[cfg(target_os = "linux")]
fn cancel_and_check(mut server: Server, env: &TestEnv, id: &str) {
    server.notify("notifications/cancelled", json!({"requestId": id, "reason": "test"}));
    // CPU time is measured over time: the second has to pass.
    thread::sleep(Duration::from_secs(1));
    let after_one = cpu_seconds(&server);
    thread::sleep(Duration::from_secs(1));
    let after_two = cpu_seconds(&server);
    assert!(
        after_two - after_one < 0.25,
        "the server spent {:.2} s of CPU in the second second after the cancel",
        after_two - after_one
    );
    let started = Instant::now();
    let reply = server.call("write_file", json!({"path": env.p("root/other.txt"), "content": "x"}));
    assert_eq!(reply.text(), format!("Successfully wrote {}", env.p("root/other.txt")));
    let waited = started.elapsed();
    assert!(waited < Duration::from_secs(2), "the write waited {waited:?}");
    let (messages, _) = server.finish();
    let answered: Vec<_> =
        messages.iter().filter(|m| m.value.get("id") == Some(&json!(id))).collect();
    assert!(answered.is_empty(), "the cancelled call was answered: {answered:?}");
}

/// 100,000 lines, `line N`.
fn numbered_lines(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

#[test]
fn a_dry_run_diff_of_100k_changed_lines_answers_in_bounded_time() {
    let env = TestEnv::new(&[], &[]);
    env.write("root/f.txt", numbered_lines(100_000));
    let mut server = Server::start(&env);
    let started = Instant::now();
    let edits = json!([{"oldText": "^line", "newText": "LINE", "isRegex": true, "limit": 0}]);
    let text = server.call_text(
        "edit_file",
        json!({"path": env.p("root/f.txt"), "edits": edits, "dryRun": true}),
    );
    // A correctness bound on a loaded two-core machine, not a benchmark.
    assert!(started.elapsed() < Duration::from_secs(10), "took {:?}", started.elapsed());
    assert!(text.starts_with(&format!("--- {}", env.p("root/f.txt"))), "{}", &text[..200]);
    assert!(text.contains("\n-line 1\n") && text.contains("\n+LINE 100000\n"), "not the diff");
    assert_eq!(env.read_string("root/f.txt"), numbered_lines(100_000), "a dry run wrote");
}

#[test]
#[cfg(target_os = "linux")]
fn a_cancelled_offset_scan_of_a_1_tib_sparse_file_stops() {
    let env = TestEnv::new(&[], &[]);
    // Text at the start (a partial read refuses a file whose first 4 KiB hold a NUL), then a
    // terabyte of holes: the scan for a line far away reads zeros for minutes.
    env.write("root/sparse.txt", "line\n".repeat(2000));
    let file = fs::OpenOptions::new().write(true).open(env.path("root/sparse.txt")).expect("open");
    file.set_len(1 << 40).expect("set_len");
    let mut server = Server::start(&env);
    send_call(
        &mut server,
        "scan",
        "read_file",
        json!({"path": env.p("root/sparse.txt"), "offset": 1_000_000_000_000u64}),
    );
    wait_until_busy(&server, 0.3);
    cancel_and_check(server, &env, "scan");
}

#[test]
#[cfg(target_os = "linux")]
fn a_cancelled_regex_edit_stops() {
    let env = TestEnv::new(&[], &[]);
    env.write("root/f.txt", "abcdefg\n".repeat(2 * 1024 * 1024));
    let mut server = Server::start(&env);
    // Sixteen passes over 14 million matches each: minutes of work, and no growth.
    let edit = json!({"oldText": "[a-z]", "newText": "$&", "isRegex": true, "limit": 0});
    let edits: Vec<Value> = (0..16).map(|_| edit.clone()).collect();
    send_call(
        &mut server,
        "edit",
        "edit_file",
        json!({"path": env.p("root/f.txt"), "edits": edits}),
    );
    wait_until_busy(&server, 0.3);
    cancel_and_check(server, &env, "edit");
    assert_eq!(env.read_string("root/f.txt"), "abcdefg\n".repeat(2 * 1024 * 1024));
}

#[test]
#[cfg(target_os = "linux")]
fn cancelled_dry_run_diffs_stop() {
    let env = TestEnv::new(&[], &[]);
    let text = numbered_lines(100_000);
    let paths: Vec<String> = (0..40)
        .map(|i| {
            env.write(&format!("root/f{i}.txt"), &text);
            env.p(&format!("root/f{i}.txt"))
        })
        .collect();
    let mut server = Server::start(&env);
    let edits = json!([{"oldText": "^line", "newText": "LINE", "isRegex": true, "limit": 0}]);
    send_call(
        &mut server,
        "diffs",
        "edit_files",
        json!({"paths": paths, "edits": edits, "dryRun": true}),
    );
    wait_until_busy(&server, 0.3);
    cancel_and_check(server, &env, "diffs");
}
