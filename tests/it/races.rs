//! No tool can be tricked by a directory swapped for a symlink between check and use.
//!
//! A swapper thread turns `root/d` into a symlink to `outside` (a sibling of the allowed root,
//! holding the same names with secret content) and back, as fast as it can, while the client
//! pipelines every path-taking tool at `root/d/…` and walks `root`. Every reply must arrive;
//! errors are fine. Afterwards `outside` must be unchanged, byte for byte, and no reply may
//! show anything of it. The server runs with `--no-sandbox`: Landlock would hide the bug, and
//! this test is about replay's own path handling. Run with `--nocapture` to see the counts.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::harness::{replay_command, Server, TestEnv};

/// How long the client keeps calls coming; the swapper runs until the last reply is in.
const HAMMER: Duration = Duration::from_secs(5);

/// How many calls the client keeps in flight: enough that the blocking pool always has work.
const IN_FLIGHT: usize = 64;

/// A line both sides' files hold, so one edit matches inside and outside alike.
const SHARED: &str = "shared line";

/// Modes no inside file or directory has, so get_file_info shows when it looked outside.
const OUTSIDE_FILE_MODE: u32 = 0o604;
const OUTSIDE_DIR_MODE: u32 = 0o705;

/// See: issue #7 (tools checked a path, then opened it by path again).
#[test]
fn no_tool_follows_a_directory_swapped_for_a_symlink() {
    race("default", &[]);
}

/// The same race through the fallback that walks the path itself instead of using `openat2`.
///
/// See: issue #7.
#[test]
fn no_tool_follows_a_directory_swapped_for_a_symlink_walk_fallback() {
    race("walk", &[("REPLAY_CONFINE", "walk")]);
}

#[expect(clippy::print_stderr, reason = "the race's figures are reported on the test output")]
fn report(label: &str, text: &str) {
    eprintln!("[race {label}] {text}");
}

/// What the client saw from one tool.
#[derive(Default)]
struct Tally {
    calls: usize,
    errors: usize,
    leaks: usize,
    first_leak: Option<String>,
}

fn race(label: &str, server_env: &[(&str, &str)]) {
    let env = race_env();
    let marker = env.marker().to_owned();
    let outside_before = env.snapshot().under("outside");

    let allow = format!("{}:rw", env.p("root"));
    let mut cmd = replay_command();
    cmd.args(["--mcp-server", "--no-sandbox", "--allow", &allow]);
    cmd.envs(server_env.iter().copied());
    let mut server = Server::from_command(cmd);
    server.initialize("2025-06-18");

    let swapper = Swapper {
        d: env.path("root/d"),
        parked: env.path("root/d.parked"),
        outside: env.path("outside"),
    };
    let stop = AtomicBool::new(false);
    let started = Instant::now();
    let (tallies, (swaps, repairs)) = thread::scope(|scope| {
        // Set on every way out of this scope, a failed assertion included: the scope waits for
        // the swapper, which would otherwise never end.
        let _stop = StopOnDrop(&stop);
        let swapping = scope.spawn(|| swapper.run(&stop));
        let tallies = hammer(&mut server, &env, &marker);
        stop.store(true, Ordering::Relaxed);
        (tallies, swapping.join().expect("the swapper thread"))
    });
    let elapsed = started.elapsed();
    swapper.restore();
    drop(server);

    let n_calls = report_counts(label, &tallies, elapsed, swaps, repairs);
    let failures = leaks(&tallies, &outside_before.diff(&env.snapshot().under("outside")));
    assert!(
        failures.is_empty(),
        "the symlink swap reached outside the root ({label}; {n_calls} calls, {swaps} swaps):\n\
         {failures}"
    );
    assert!(env.is_dir("root/d") && !env.exists("root/d.parked"), "the swapper restored root/d");
}

/// `root/d` and `outside` holding the same names; outside, with secret content (the marker) and
/// modes no inside entry has.
fn race_env() -> TestEnv {
    let env = TestEnv::new(&["root/d/sub", "outside/sub"], &[]);
    let marker = env.marker().to_owned();
    for rel in ["f.txt", "a.txt", "sub/s.txt"] {
        env.write(&format!("root/d/{rel}"), format!("inside {rel}\n{SHARED}\n"));
    }
    let secret = format!("OUTSIDE-{marker}\n{SHARED}\n");
    for rel in ["f.txt", "a.txt", "sub/s.txt", &format!("outside-only-{marker}.txt")] {
        env.write(&format!("outside/{rel}"), &secret);
        env.set_mode(&format!("outside/{rel}"), OUTSIDE_FILE_MODE);
    }
    env.set_mode("outside/sub", OUTSIDE_DIR_MODE);
    env.set_mode("outside", OUTSIDE_DIR_MODE);
    env
}

/// Reports the race's figures, per tool too; the number of calls.
fn report_counts(
    label: &str,
    tallies: &BTreeMap<&'static str, Tally>,
    elapsed: Duration,
    swaps: u64,
    repairs: u64,
) -> usize {
    let n_calls: usize = tallies.values().map(|t| t.calls).sum();
    let secs = elapsed.as_secs_f64();
    report(
        label,
        &format!(
            "{secs:.1} s: {n_calls} calls ({:.0}/s), {swaps} swaps ({:.0}/s), {repairs} repairs \
             (a swap step failed, the server having made root/d anew)",
            n_calls as f64 / secs,
            swaps as f64 / secs
        ),
    );
    for (tool, t) in tallies {
        report(
            label,
            &format!(
                "  {tool:<20} {:>6} calls {:>6} errors {:>5} leaks",
                t.calls, t.errors, t.leaks
            ),
        );
    }

    n_calls
}

/// What reached outside the root: each tool's replies that showed outside, and the changes to
/// the outside directory (`outside_diff`); empty if nothing did.
fn leaks(tallies: &BTreeMap<&'static str, Tally>, outside_diff: &str) -> String {
    let mut failures = String::new();
    for (tool, t) in tallies.iter().filter(|(_, t)| t.leaks > 0) {
        let example = t.first_leak.as_deref().unwrap_or_default();
        let example: String = example.chars().take(400).collect();
        failures.push_str(&format!(
            "  {tool}: {} of {} replies showed outside; first: {example}\n",
            t.leaks, t.calls
        ));
    }
    if !outside_diff.is_empty() {
        let lines: Vec<&str> = outside_diff.lines().collect();
        failures.push_str(&format!("  the outside directory changed ({} entries):\n", lines.len()));
        for line in lines.iter().take(40) {
            failures.push_str(&format!("  {line}\n"));
        }
    }
    failures
}

/// Sends calls for `HAMMER`, keeping `IN_FLIGHT` of them unanswered, then waits for the rest.
/// Every reply is checked for the marker (outside content and the outside-only name) and, for
/// get_file_info, the outside modes. A writing tool's escape shows in `outside`, not here.
fn hammer(server: &mut Server, env: &TestEnv, marker: &str) -> BTreeMap<&'static str, Tally> {
    let calls = calls(env);
    let outside_modes = [
        format!("permissions: {OUTSIDE_FILE_MODE:03o}"),
        format!("permissions: {OUTSIDE_DIR_MODE:03o}"),
    ];
    let mut tallies: BTreeMap<&'static str, Tally> = BTreeMap::new();
    let mut pending: HashMap<u64, &'static str> = HashMap::new();
    let deadline = Instant::now() + HAMMER;
    let mut next_id: u64 = 1_000_000;
    loop {
        let sending = Instant::now() < deadline;
        while sending && pending.len() < IN_FLIGHT {
            let (tool, args) = &calls[next_id as usize % calls.len()];
            server.send(&json!({
                "jsonrpc": "2.0",
                "id": next_id,
                "method": "tools/call",
                "params": {"name": tool, "arguments": args},
            }));
            pending.insert(next_id, tool);
            next_id += 1;
        }
        if pending.is_empty() {
            break;
        }
        let reply = server.next_message();
        let Some(id) = reply.value.get("id").and_then(Value::as_u64) else {
            // A notification (a log message, say): not a reply.
            continue;
        };
        let tool = pending
            .remove(&id)
            .unwrap_or_else(|| panic!("a reply to no pending call: {}", reply.line));
        let tally = tallies.entry(tool).or_default();
        tally.calls += 1;
        let is_error = reply.value.get("error").is_some()
            || reply.value.pointer("/result/isError") == Some(&json!(true));
        tally.errors += usize::from(is_error);
        let shows_outside = reply.line.contains(marker)
            || (tool == "get_file_info"
                && outside_modes.iter().any(|m| reply.line.contains(m.as_str())));
        if shows_outside {
            tally.leaks += 1;
            tally.first_leak.get_or_insert_with(|| reply.line.clone());
        }
    }
    tallies
}

/// The calls the client cycles through: reads, writes, moves, copies and deletes through `root/d`, and
/// walks of `root` and `root/d`. No argument names the marker, so a reply can only show it by
/// having looked outside. What a call writes names its tool, so a change to `outside` says who
/// made it. Names are reused, so the tree stays small however long the race runs.
fn calls(env: &TestEnv) -> Vec<(&'static str, Value)> {
    let root = env.p("root");
    let dir = env.p("root/d");
    let d = |rel: &str| env.p(&format!("root/d/{rel}"));
    let r = |rel: &str| env.p(&format!("root/{rel}"));
    let write = |rel: &str| {
        let content = format!("written by write_file\n{SHARED}\n");
        ("write_file", json!({"path": d(rel), "content": content}))
    };
    let (old_text, new_text) = (format!("{SHARED}.*"), format!("{SHARED} by edit_file"));
    let edit = json!([{"oldText": old_text, "newText": new_text, "isRegex": true}]);
    let move_file = |source: String, destination: String| {
        ("move_file", json!({"source": source, "destination": destination}))
    };
    let copy = |source: String, destination: String, overwrite: bool| {
        let args = json!({"source": source, "destination": destination, "overwrite": overwrite});
        ("copy_file", args)
    };
    // Matches the outside content without spelling the marker.
    let secret = "OUTSIDE-SEC[R]ET";
    let mut calls = vec![
        ("read_file", json!({"path": d("f.txt")})),
        ("list_directory", json!({"path": dir})),
        ("get_file_info", json!({"path": d("f.txt")})),
        write("f.txt"),
        ("read_multiple_files", json!({"paths": [d("f.txt"), d("a.txt"), d("sub/s.txt")]})),
        ("directory_tree", json!({"path": root})),
        ("edit_file", json!({"path": d("a.txt"), "edits": edit})),
        ("get_file_info", json!({"path": d("sub")})),
        ("read_file", json!({"path": d("a.txt")})),
        ("delete_file", json!({"path": d("a.txt")})),
        ("list_directory", json!({"path": d("sub")})),
        write("a.txt"),
        ("grep_files", json!({"regex": secret, "directory": root})),
        move_file(d("f.txt"), d("moved-f.txt")),
        ("read_file", json!({"path": d("sub/s.txt")})),
        move_file(d("moved-f.txt"), d("f.txt")),
        ("search_files", json!({"directory": root, "nameContains": "-only-"})),
        move_file(d("a.txt"), r("moved-a.txt")),
        ("glob_search", json!({"directory": root, "globs": ["**/*only*"]})),
        move_file(r("moved-a.txt"), d("a.txt")),
        ("edit_file", json!({"path": d("f.txt"), "edits": edit, "dryRun": true})),
        ("delete_file", json!({"path": d("sub")})),
        ("get_file_info", json!({"path": dir})),
        ("create_directory", json!({"path": d("sub")})),
        write("sub/s.txt"),
        ("directory_tree", json!({"path": dir})),
        ("edit_files", json!({"paths": [d("*.txt")], "edits": edit, "dryRun": true})),
        ("grep_files", json!({"regex": secret, "directory": dir})),
        ("search_files", json!({"directory": dir, "nameContains": "-only-"})),
        ("glob_search", json!({"directory": dir, "globs": ["*"]})),
        ("read_multiple_files", json!({"paths": [d("sub/s.txt"), d("a.txt")]})),
        // The working directory is entered through a handle: reading relative to it stays in.
        (
            "execute_command",
            json!({"command": "cat f.txt a.txt sub/s.txt; ls", "workingDirectory": dir}),
        ),
        // Copies out of root/d (a copy of outside content would show in the grep of root), and
        // into it (a write outside would change `outside`).
        copy(d("f.txt"), r("copied-f.txt"), true),
        copy(d("sub"), r("copied-sub"), false),
        ("delete_file", json!({"path": r("copied-sub")})),
        copy(r("copied-f.txt"), d("copied-in.txt"), true),
        copy(d("a.txt"), d("sub/copied-a.txt"), true),
    ];
    // New names, made and removed again: a file, a directory with a parent to create, a move
    // out of root/d into the root.
    for n in 0..3 {
        calls.push(write(&format!("new-{n}.txt")));
        calls.push(("create_directory", json!({"path": d(&format!("made-{n}/deeper"))})));
        calls.push(("list_directory", json!({"path": dir})));
        calls.push(move_file(d(&format!("new-{n}.txt")), r(&format!("moved-{n}.txt"))));
        calls.push(("delete_file", json!({"path": d(&format!("made-{n}"))})));
        calls.push(("delete_file", json!({"path": r(&format!("moved-{n}.txt"))})));
    }
    calls
}

/// Turns `d` into a symlink to `outside` and back, in a loop. The server may itself create,
/// move or delete `d` while it is parked (write_file makes missing parents), so every step may
/// fail; `repair` then puts the real directory back and the loop goes on.
struct Swapper {
    d: PathBuf,
    parked: PathBuf,
    outside: PathBuf,
}

impl Swapper {
    /// Swaps until `stop`; returns (swaps, repairs): how often `d` was a symlink, and how often
    /// the server's own changes had to be undone.
    fn run(&self, stop: &AtomicBool) -> (u64, u64) {
        let (mut swaps, mut repairs) = (0, 0);
        while !stop.load(Ordering::Relaxed) {
            if fs::rename(&self.d, &self.parked).is_err()
                || symlink(&self.outside, &self.d).is_err()
            {
                self.restore();
                repairs += 1;
                continue;
            }
            swaps += 1;
            if fs::remove_file(&self.d).is_err() || fs::rename(&self.parked, &self.d).is_err() {
                self.restore();
                repairs += 1;
            }
        }
        (swaps, repairs)
    }

    /// Leaves `d` the real directory and `parked` gone. A `d` the server made while ours was
    /// parked is removed (never followed: `remove_dir_all` does not follow symlinks).
    fn restore(&self) {
        if is_symlink(&self.d) {
            let _ = fs::remove_file(&self.d);
        }
        if is_symlink(&self.parked) {
            let _ = fs::remove_file(&self.parked);
        }
        if fs::symlink_metadata(&self.parked).is_ok() && fs::rename(&self.parked, &self.d).is_err()
        {
            let _ = fs::remove_dir_all(&self.d);
            let _ = fs::rename(&self.parked, &self.d);
        }
    }
}

fn is_symlink(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

#[test]
fn swapper_leaves_a_real_directory() {
    let env = TestEnv::new(&["root/d", "outside"], &[("root/d/f.txt", "inside")]);
    let swapper = Swapper {
        d: env.path("root/d"),
        parked: env.path("root/d.parked"),
        outside: env.path("outside"),
    };
    // A symlink where the directory belongs, the directory parked: the state a failed step
    // leaves behind.
    fs::rename(env.path("root/d"), env.path("root/d.parked")).expect("park");
    symlink(env.path("outside"), env.path("root/d")).expect("symlink");
    swapper.restore();
    assert!(env.is_dir("root/d") && !env.exists("root/d.parked"));
    assert_eq!(env.read_string("root/d/f.txt"), "inside");
}
