//! Hardening: 10,000 pipelined requests, hostile input, vanishing clients, SIGKILL mid-write.
//!
//! These tests need what `Server` keeps to itself (the pid for `/proc` and SIGKILL, raw bytes on
//! stdin, dropping stdout), so they drive the binary through `Proc`, a thinner wrapper. Run with
//! `--nocapture` to see the measurements they print (peak RSS, crash-round statistics).

use std::fs;
use std::io::{self, BufWriter, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::{json, Value};

use crate::harness::{
    line_reader, replay_command, stderr_collector, Server, TestEnv, REPLY_TIMEOUT,
};

/// The prefix of replay's temp files (`src/tools/write.rs`, `TEMP_PREFIX`).
const TEMP_PREFIX: &str = ".replay-tmp.";

/// The most resident memory the server may reach while serving the load test, and while
/// skipping a 100 MB line.
#[cfg(target_os = "linux")]
const PEAK_RSS_LIMIT_KIB: u64 = 100 * 1024;

#[expect(clippy::print_stderr, reason = "the measurements are reported on the test output")]
fn report(line: &str) {
    eprintln!("[hardening] {line}");
}

// ---------------------------------------------------------------------------------------------
// Proc: the binary with raw pipes
// ---------------------------------------------------------------------------------------------

/// `replay --mcp-server --allow <root>:rw` with its pipes in the test's hands. No handshake:
/// requests before `initialize` are served. Stderr is collected; the child is killed on drop.
struct Proc {
    child: Option<Child>,
    pid: Pid,
    stdin: Option<ChildStdin>,
    stdout: Option<ChildStdout>,
    stderr: Arc<Mutex<Vec<u8>>>,
}

impl Proc {
    fn spawn(env: &TestEnv) -> Proc {
        let allow = format!("{}:rw", env.p("root"));
        let mut cmd = replay_command();
        cmd.args(["--mcp-server", "--allow", &allow]);
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap_or_else(|e| panic!("spawning replay: {e}"));
        let pid = Pid::from_raw(i32::try_from(child.id()).expect("pid fits i32"));
        let stderr = stderr_collector(child.stderr.take().expect("piped stderr"));
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        Proc { child: Some(child), pid, stdin, stdout, stderr }
    }

    fn take_stdin(&mut self) -> ChildStdin {
        self.stdin.take().expect("stdin already taken")
    }

    fn take_stdout(&mut self) -> ChildStdout {
        self.stdout.take().expect("stdout already taken")
    }

    /// Stdout, read line by line on a thread.
    fn lines(&mut self) -> Receiver<String> {
        line_reader(self.take_stdout())
    }

    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().expect("stderr lock")).into_owned()
    }

    /// The process's peak resident set so far (`VmHWM`), in KiB.
    #[cfg(target_os = "linux")]
    fn peak_rss_kib(&self) -> u64 {
        let status = fs::read_to_string(format!("/proc/{}/status", self.pid))
            .unwrap_or_else(|e| panic!("reading /proc/{}/status: {e}", self.pid));
        let line = status
            .lines()
            .find_map(|line| line.strip_prefix("VmHWM:"))
            .unwrap_or_else(|| panic!("no VmHWM in /proc/{}/status:\n{status}", self.pid));
        line.trim().trim_end_matches("kB").trim().parse().expect("VmHWM is a number of kB")
    }

    fn sigkill(&self) {
        kill(self.pid, Signal::SIGKILL).unwrap_or_else(|e| panic!("SIGKILL {}: {e}", self.pid));
    }

    /// Whether the process has exited (and is reaped) within `limit`, with its status.
    fn exit_within(&mut self, limit: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + limit;
        let child = self.child.as_mut().expect("child already reaped");
        loop {
            if let Some(status) = child.try_wait().expect("try_wait") {
                self.child = None;
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            // Polling, not synchronizing: nothing to wait on but the exit itself.
            thread::sleep(Duration::from_millis(5));
        }
    }

    /// The exit status; fails (after killing it) if the process runs past `limit`.
    #[track_caller]
    fn wait(&mut self, limit: Duration) -> ExitStatus {
        match self.exit_within(limit) {
            Some(status) => status,
            None => panic!("replay did not exit within {limit:?}; stderr:\n{}", self.stderr()),
        }
    }

    /// Closes stdin and expects exit status 0 soon, with no panic reported on stderr.
    #[track_caller]
    fn finish_cleanly(&mut self) {
        self.stdin = None;
        let status = self.wait(REPLY_TIMEOUT);
        let stderr = self.stderr();
        assert_eq!(status.code(), Some(0), "exit status {status:?}; stderr:\n{stderr}");
        assert!(!stderr.contains("panicked"), "replay panicked:\n{stderr}");
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.stdin = None;
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The next stdout message, checked to be one JSON-RPC 2.0 object; fails after `limit`.
#[track_caller]
fn next_message(rx: &Receiver<String>, limit: Duration, proc: &Proc) -> Value {
    match rx.recv_timeout(limit) {
        Ok(line) => parse_message(&line),
        Err(RecvTimeoutError::Timeout) => {
            panic!("no reply from replay within {limit:?}; stderr:\n{}", proc.stderr())
        }
        Err(RecvTimeoutError::Disconnected) => {
            panic!("replay closed stdout (exited?); stderr:\n{}", proc.stderr())
        }
    }
}

#[track_caller]
fn parse_message(line: &str) -> Value {
    let value: Value = serde_json::from_str(line).unwrap_or_else(|e| {
        let short: String = line.chars().take(200).collect();
        panic!("replay wrote a non-JSON line to stdout ({e}): {short:?}")
    });
    assert_eq!(value.get("jsonrpc"), Some(&json!("2.0")), "not JSON-RPC 2.0: {line}");
    value
}

/// Stdout must close (the process is done writing) within `limit`; returns what came first.
#[track_caller]
fn rest_of_output(rx: &Receiver<String>, limit: Duration, proc: &Proc) -> Vec<Value> {
    let deadline = Instant::now() + limit;
    let mut rest = Vec::new();
    loop {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(line) => rest.push(parse_message(&line)),
            Err(RecvTimeoutError::Disconnected) => return rest,
            Err(RecvTimeoutError::Timeout) => {
                panic!("replay kept stdout open past {limit:?}; stderr:\n{}", proc.stderr())
            }
        }
    }
}

fn error_code(message: &Value) -> Option<i64> {
    message.pointer("/error/code").and_then(Value::as_i64)
}

fn text_of(message: &Value) -> &str {
    message.pointer("/result/content/0/text").and_then(Value::as_str).unwrap_or_else(|| {
        panic!("expected a tool result with text, got: {message}");
    })
}

fn request(id: impl Into<Value>, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id.into(), "method": method, "params": params}).to_string()
}

fn tool_call(id: impl Into<Value>, tool: &str, arguments: Value) -> String {
    request(id, "tools/call", json!({"name": tool, "arguments": arguments}))
}

/// A pid that no process has now: a child that ran and was reaped.
fn dead_pid() -> u32 {
    let mut child = replay_command()
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawning replay --version");
    let pid = child.id();
    child.wait().expect("waiting for replay --version");
    let raw = Pid::from_raw(i32::try_from(pid).expect("pid fits i32"));
    assert_eq!(kill(raw, None), Err(nix::errno::Errno::ESRCH), "pid {pid} was reused at once");
    pid
}

/// The names in `dir` that look like replay temp files.
fn temp_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read_dir {}: {e}", dir.display()))
        .map(|entry| entry.expect("dir entry").file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(TEMP_PREFIX))
        .collect();
    names.sort();
    names
}

// ---------------------------------------------------------------------------------------------
// Load
// ---------------------------------------------------------------------------------------------

const LOAD_REQUESTS: usize = 10_000;
const READ_TEXT: &str = "hello, load\n";

/// What request `i` of the load test is; the mix repeats every 25 requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Ping,
    ToolsList,
    Read,
    Info,
    List,
    Grep,
    Write,
    Edit,
    NotFound,
    Outside,
    MissingParam,
    NoMethod,
    BadEnvelope,
}

fn kind_of(i: usize) -> Kind {
    match i % 25 {
        0..=4 => Kind::Ping,
        5 => Kind::ToolsList,
        6..=9 => Kind::Read,
        10 | 11 => Kind::Info,
        12 | 13 => Kind::List,
        14 => Kind::Grep,
        15..=17 => Kind::Write,
        18..=20 => Kind::Edit,
        21 => Kind::NotFound,
        22 => Kind::Outside,
        23 if i / 25 % 2 == 0 => Kind::MissingParam,
        23 => Kind::NoMethod,
        _ => Kind::BadEnvelope,
    }
}

/// The small tree grep_files and list_directory work on: 4 directories of 5 files, a needle
/// in every third file.
fn load_tree(env: &TestEnv) -> Vec<String> {
    let mut needles = Vec::new();
    for d in 0..4 {
        for f in 0..5 {
            let rel = format!("root/tree/d{d}/f{f}.txt");
            if (d * 5 + f) % 3 == 0 {
                env.write(&rel, format!("alpha\nneedle {d}{f}\nomega\n"));
                needles.push(format!("{}:2:needle {d}{f}", env.p(&rel)));
            } else {
                env.write(&rel, "alpha\nomega\n");
            }
        }
    }
    needles
}

fn load_line(env: &TestEnv, i: usize) -> String {
    let read = env.p("root/read.txt");
    match kind_of(i) {
        Kind::Ping => request(i, "ping", json!({})),
        Kind::ToolsList => request(i, "tools/list", json!({})),
        Kind::Read => tool_call(i, "read_file", json!({"path": read})),
        Kind::Info => tool_call(i, "get_file_info", json!({"path": read})),
        Kind::List => tool_call(i, "list_directory", json!({"path": env.p("root/tree")})),
        Kind::Grep => tool_call(
            i,
            "grep_files",
            json!({"regex": "needle \\d+", "directory": env.p("root/tree")}),
        ),
        Kind::Write => tool_call(
            i,
            "write_file",
            json!({"path": env.p(&format!("root/out/w{i}.txt")),
                   "content": format!("written {i}\n")}),
        ),
        Kind::Edit => tool_call(
            i,
            "edit_file",
            json!({"path": env.p(&format!("root/edit/e{i}.txt")),
                   "edits": [{"oldText": format!("old-{i}"), "newText": format!("new-{i}")}]}),
        ),
        Kind::NotFound => tool_call(i, "read_file", json!({"path": env.p("root/missing.txt")})),
        Kind::Outside => tool_call(i, "read_file", json!({"path": env.p("secret.txt")})),
        Kind::MissingParam => tool_call(i, "read_file", json!({})),
        Kind::NoMethod => request(i, "no/such/method", json!({})),
        Kind::BadEnvelope => json!({"jsonrpc": "1.0", "id": i, "method": "ping"}).to_string(),
    }
}

/// Checks the reply to load request `i`.
#[track_caller]
fn check_load_reply(env: &TestEnv, i: usize, reply: &Value, needles: &[String]) {
    let want_error = match kind_of(i) {
        Kind::NotFound => Some(-32002),
        Kind::Outside => Some(-32001),
        Kind::MissingParam => Some(-32602),
        Kind::NoMethod => Some(-32601),
        Kind::BadEnvelope => Some(-32600),
        _ => None,
    };
    if let Some(code) = want_error {
        assert_eq!(error_code(reply), Some(code), "request {i} ({:?}): {reply}", kind_of(i));
        return;
    }
    assert!(reply.get("error").is_none(), "request {i} ({:?}) failed: {reply}", kind_of(i));
    match kind_of(i) {
        Kind::Ping => assert_eq!(reply["result"], json!({}), "{reply}"),
        Kind::ToolsList => {
            let tools = reply.pointer("/result/tools").and_then(Value::as_array);
            assert_eq!(tools.map(Vec::len), Some(18), "request {i}: {reply}");
        }
        Kind::Read => assert_eq!(text_of(reply), READ_TEXT),
        Kind::Info => assert!(text_of(reply).contains("size: 12"), "{reply}"),
        Kind::List => {
            assert_eq!(text_of(reply), "[DIR]  d0\n[DIR]  d1\n[DIR]  d2\n[DIR]  d3", "{reply}")
        }
        Kind::Grep => {
            let expected = format!("{}\n[{} matches]", needles.join("\n"), needles.len());
            assert_eq!(text_of(reply), expected, "request {i}");
        }
        Kind::Write => {
            let path = env.p(&format!("root/out/w{i}.txt"));
            assert_eq!(text_of(reply), format!("Successfully wrote {path}"));
        }
        Kind::Edit => {
            let path = env.p(&format!("root/edit/e{i}.txt"));
            assert_eq!(text_of(reply), format!("Successfully edited {path}"));
        }
        kind => unreachable!("{kind:?} expects an error"),
    }
}

/// What the load test's replies have covered so far.
struct LoadTally {
    answered: Vec<bool>,
    n_answered: usize,
    parse_errors: usize,
}

impl LoadTally {
    #[track_caller]
    fn take(&mut self, env: &TestEnv, reply: &Value, needles: &[String]) {
        let id = &reply["id"];
        if id.is_null() {
            assert_eq!(error_code(reply), Some(-32700), "a reply with a null id: {reply}");
            self.parse_errors += 1;
            return;
        }
        let i = id.as_u64().unwrap_or_else(|| panic!("unexpected id in {reply}")) as usize;
        assert!(i < LOAD_REQUESTS, "reply to an id never sent: {reply}");
        assert!(!self.answered[i], "second reply to request {i}: {reply}");
        self.answered[i] = true;
        self.n_answered += 1;
        check_load_reply(env, i, reply, needles);
    }
}

/// 10,000 requests written without waiting for a single reply (plus notifications and garbage
/// lines), while another thread reads: every id answered exactly once with the right kind of
/// reply, the files written, and the server's peak RSS under `PEAK_RSS_LIMIT_KIB`.
#[test]
fn ten_thousand_pipelined_requests_get_one_right_reply_each_in_bounded_memory() {
    let env = TestEnv::new(&["root/out"], &[("root/read.txt", READ_TEXT), ("secret.txt", "s")]);
    let needles = load_tree(&env);
    for i in (0..LOAD_REQUESTS).filter(|&i| kind_of(i) == Kind::Edit) {
        env.write(&format!("root/edit/e{i}.txt"), format!("key = old-{i}\n"));
    }
    let lines: Vec<String> = (0..LOAD_REQUESTS).map(|i| load_line(&env, i)).collect();
    let mut server = Proc::spawn(&env);
    let replies = server.lines();
    let mut stdin = server.take_stdin();
    let started = Instant::now();
    // Notifications and unparseable lines go between the requests; only the latter are answered
    // (with a null id), so a reply to a notification shows up as one null id too many.
    let is_garbage_after = |i: usize| i % 1999 == 0;
    let garbage = (0..LOAD_REQUESTS).filter(|&i| is_garbage_after(i)).count();
    let writer = thread::spawn(move || -> io::Result<ChildStdin> {
        let mut out = BufWriter::new(&mut stdin);
        for (i, line) in lines.iter().enumerate() {
            writeln!(out, "{line}")?;
            if i % 997 == 0 {
                writeln!(out, r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#)?;
                let cancel_unknown = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                            "params": {"requestId": format!("never-{i}")}});
                writeln!(out, "{cancel_unknown}")?;
                writeln!(out, r#"{{"jsonrpc":"2.0","method":"notifications/no_such_thing"}}"#)?;
            }
            if is_garbage_after(i) {
                writeln!(out, "{{not json {i}")?;
            }
        }
        out.flush()?;
        drop(out);
        Ok(stdin)
    });

    let deadline = Instant::now() + Duration::from_secs(120);
    let mut tally =
        LoadTally { answered: vec![false; LOAD_REQUESTS], n_answered: 0, parse_errors: 0 };
    while tally.n_answered < LOAD_REQUESTS || tally.parse_errors < garbage {
        let left = deadline.saturating_duration_since(Instant::now());
        let reply = next_message(&replies, left.min(REPLY_TIMEOUT), &server);
        tally.take(&env, &reply, &needles);
    }
    let stdin = writer.join().expect("writer thread").expect("writing the requests");
    let elapsed = started.elapsed();
    #[cfg(target_os = "linux")]
    {
        let peak_kib = server.peak_rss_kib();
        report(&format!(
            "load: {LOAD_REQUESTS} requests answered in {elapsed:.2?}; \
             peak RSS (VmHWM) {peak_kib} KiB ({:.1} MB)",
            peak_kib as f64 / 1024.0
        ));
        assert!(
            peak_kib < PEAK_RSS_LIMIT_KIB,
            "peak RSS {peak_kib} KiB exceeds {PEAK_RSS_LIMIT_KIB} KiB"
        );
    }
    #[cfg(not(target_os = "linux"))]
    report(&format!("load: {LOAD_REQUESTS} requests answered in {elapsed:.2?}"));
    drop(stdin);
    let extra = rest_of_output(&replies, REPLY_TIMEOUT, &server);
    assert!(extra.is_empty(), "replies beyond one per request: {extra:?}");
    server.finish_cleanly();
    for i in 0..LOAD_REQUESTS {
        match kind_of(i) {
            Kind::Write => {
                assert_eq!(env.read_string(&format!("root/out/w{i}.txt")), format!("written {i}\n"))
            }
            Kind::Edit => {
                assert_eq!(
                    env.read_string(&format!("root/edit/e{i}.txt")),
                    format!("key = new-{i}\n")
                )
            }
            _ => {}
        }
    }
    assert!(temp_files(&env.path("root/out")).is_empty(), "temp files left in root/out");
    assert!(temp_files(&env.path("root/edit")).is_empty(), "temp files left in root/edit");
}

// ---------------------------------------------------------------------------------------------
// Malformed input and vanishing clients
// ---------------------------------------------------------------------------------------------

/// A 100 MB line that is not JSON: one -32700 that names its size and the 64 MiB cap, memory
/// bounded by the cap, and the next request answered. A thread writes, so the test cannot
/// deadlock on a full pipe whatever the server does.
#[test]
fn a_100_mb_line_gets_a_parse_error_naming_the_cap_and_serving_goes_on() {
    const LINE_BYTES: usize = 100 * 1024 * 1024;
    let env = TestEnv::new(&[], &[]);
    let mut server = Proc::spawn(&env);
    let replies = server.lines();
    let mut stdin = server.take_stdin();
    let writer = thread::spawn(move || -> io::Result<ChildStdin> {
        let chunk = vec![b'x'; 1 << 20];
        for _ in 0..LINE_BYTES / chunk.len() {
            stdin.write_all(&chunk)?;
        }
        stdin.write_all(b"\n")?;
        writeln!(stdin, r#"{{"jsonrpc":"2.0","id":"after","method":"ping"}}"#)?;
        stdin.flush()?;
        Ok(stdin)
    });
    let started = Instant::now();
    let first = next_message(&replies, Duration::from_secs(60), &server);
    assert_eq!(error_code(&first), Some(-32700), "{first}");
    assert_eq!(first["id"], Value::Null, "{first}");
    let message = first.pointer("/error/message").and_then(Value::as_str).unwrap_or_default();
    assert!(
        message.contains(&format!("{LINE_BYTES} bytes")) && message.contains("67108864"),
        "the message should give the line's size and the limit: {message}"
    );
    let second = next_message(&replies, REPLY_TIMEOUT, &server);
    assert_eq!(second["id"], json!("after"), "{second}");
    assert_eq!(second["result"], json!({}), "{second}");
    let elapsed = started.elapsed();
    let stdin = writer.join().expect("writer thread").expect("writing the 100 MB line");
    #[cfg(target_os = "linux")]
    {
        let peak_kib = server.peak_rss_kib();
        report(&format!(
            "100 MB line: answered in {elapsed:.2?}; peak RSS (VmHWM) {peak_kib} KiB ({:.1} MB)",
            peak_kib as f64 / 1024.0
        ));
        assert!(
            peak_kib < PEAK_RSS_LIMIT_KIB,
            "peak RSS {peak_kib} KiB: a skipped line must not be kept beyond the cap"
        );
    }
    #[cfg(not(target_os = "linux"))]
    report(&format!("100 MB line: answered in {elapsed:.2?}"));
    drop(stdin);
    assert!(rest_of_output(&replies, REPLY_TIMEOUT, &server).is_empty());
    server.finish_cleanly();
}

/// JSON nested 100,000 deep (bare, balanced, in objects, in a request's params, in a batch):
/// a parse error or invalid request that says what is wrong, never a stack overflow. Nesting
/// within the parser's limit reaches the schema check and gets -32602.
#[test]
fn deeply_nested_json_gets_a_clear_error_and_no_crash() {
    const DEPTH: usize = 100_000;
    let env = TestEnv::new(&[], &[]);
    let mut server = Server::start(&env);
    let nested = |open: &str, close: &str| format!("{}{}", open.repeat(DEPTH), close.repeat(DEPTH));
    let cases = [
        ("open brackets", "[".repeat(DEPTH)),
        ("balanced arrays", nested("[", "]")),
        ("balanced objects", format!("{}1{}", r#"{"a":"#.repeat(DEPTH), "}".repeat(DEPTH))),
        (
            "arrays in params",
            format!(
                r#"{{"jsonrpc":"2.0","id":"deep","method":"ping","params":{{"x":{}}}}}"#,
                nested("[", "]")
            ),
        ),
        (
            "arrays in a batch",
            format!(r#"[{{"jsonrpc":"2.0","id":"b","method":"ping"}},{}]"#, nested("[", "]")),
        ),
    ];
    for (what, line) in &cases {
        server.send_raw(line);
        let reply = server.next_message();
        let error = reply.error();
        assert!([-32700, -32600].contains(&error.code), "{what}: {}", reply.line);
        let message = error.message.to_lowercase();
        assert!(
            ["recursion", "depth", "nest"].iter().any(|word| message.contains(word)),
            "{what}: the message should say the nesting is too deep: {}",
            error.message
        );
        assert_eq!(server.request("ping", json!({})).result(), &json!({}), "after {what}");
    }
    // 100 levels: parsed, then refused by the schema (content must be a string).
    let hundred = (1..100).fold(json!([]), |inner, _| json!([inner]));
    let args = json!({"path": env.p("root/deep.txt"), "content": hundred});
    server.call("write_file", args).expect_error(-32602);
    assert!(!env.exists("root/deep.txt"));
    let stderr = server.stderr();
    let (rest, status) = server.finish();
    assert!(
        rest.is_empty(),
        "unexpected output: {:?}",
        rest.iter().map(|r| &r.line).collect::<Vec<_>>()
    );
    assert_eq!(status.code(), Some(0), "exit status {status:?}; stderr:\n{stderr}");
    assert!(!stderr.contains("panicked") && !stderr.contains("overflow"), "stderr:\n{stderr}");
}

/// Bytes that are not UTF-8 (bare, in a method name, in a path, an overlong `/`, an encoded
/// surrogate) and a lone surrogate escape: each gets -32700 with a null id and the next
/// request is answered. Real non-ASCII UTF-8 in a path still works.
#[test]
fn invalid_utf8_gets_a_parse_error_and_serving_goes_on() {
    let env = TestEnv::new(&[], &[("root/ünïcödé.txt", "ok")]);
    let mut server = Proc::spawn(&env);
    let replies = server.lines();
    let mut stdin = server.take_stdin();
    let root = env.p("root");
    // A read_file request with `path`'s raw bytes between the quotes.
    let template = tool_call("p", "read_file", json!({"path": "@"}));
    let (head, tail) = template.split_once('@').expect("the placeholder");
    let path_line = |path: &[u8]| [head.as_bytes(), path, tail.as_bytes()].concat();
    let cases: [(&str, Vec<u8>); 6] = [
        ("bare bytes", b"\xff\xfe\xfd".to_vec()),
        ("in a method name", b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\xff\"}".to_vec()),
        ("in a path", path_line(&[root.as_bytes(), b"/\xc3\x28.txt"].concat())),
        (
            "an overlong slash",
            path_line(&[root.as_bytes(), b"/..\xc0\xaf..\xc0\xafetc\xc0\xafpasswd"].concat()),
        ),
        ("an encoded surrogate", path_line(&[root.as_bytes(), b"/\xed\xa0\x80"].concat())),
        ("a lone surrogate escape", path_line(&[root.as_bytes(), b"/\\ud800.txt"].concat())),
    ];
    for (n, (what, line)) in cases.iter().enumerate() {
        stdin.write_all(line).and_then(|()| stdin.write_all(b"\n")).expect("writing");
        writeln!(stdin, "{}", request(format!("ping-{n}"), "ping", json!({}))).expect("writing");
        stdin.flush().expect("flushing");
        let reply = next_message(&replies, REPLY_TIMEOUT, &server);
        assert_eq!(error_code(&reply), Some(-32700), "{what}: {reply}");
        assert_eq!(reply["id"], Value::Null, "{what}: {reply}");
        let ping = next_message(&replies, REPLY_TIMEOUT, &server);
        assert_eq!(ping["id"], json!(format!("ping-{n}")), "after {what}: {ping}");
        assert_eq!(ping["result"], json!({}), "after {what}: {ping}");
    }
    writeln!(stdin, "{}", tool_call("u", "read_file", json!({"path": env.p("root/ünïcödé.txt")})))
        .expect("writing");
    drop(stdin);
    let reply = next_message(&replies, REPLY_TIMEOUT, &server);
    assert_eq!(text_of(&reply), "ok", "{reply}");
    assert!(rest_of_output(&replies, REPLY_TIMEOUT, &server).is_empty());
    server.finish_cleanly();
}

/// A client that stops reading in the middle of a 5 MB reply and closes its end of stdout.
/// Writes to stdout then fail with EPIPE: the server must neither die of SIGPIPE nor panic,
/// and once stdin closes too (the client is gone) it must exit 0 at once.
#[test]
fn a_client_that_closes_stdout_mid_reply_gets_a_clean_exit() {
    let env = TestEnv::new(&[], &[]);
    env.write("root/big.txt", "a".repeat(5 * 1024 * 1024));
    let mut server = Proc::spawn(&env);
    let mut stdout = server.take_stdout();
    let mut stdin = server.take_stdin();
    let read_big = tool_call(1, "read_file", json!({"path": env.p("root/big.txt")}));
    writeln!(stdin, "{read_big}").expect("writing");
    stdin.flush().expect("flushing");
    // Read a part of the reply: the rest is being written when the pipe closes.
    let mut part = vec![0u8; 64 * 1024];
    stdout.read_exact(&mut part).expect("the first 64 KiB of the reply");
    assert!(part.starts_with(b"{"), "{:?}", String::from_utf8_lossy(&part[..80]));
    drop(stdout);
    // More work whose replies cannot be delivered: a big one, small ones, a write.
    let more = [
        tool_call(2, "read_file", json!({"path": env.p("root/big.txt")})),
        request(3, "ping", json!({})),
        tool_call(4, "write_file", json!({"path": env.p("root/after.txt"), "content": "x"})),
        tool_call(5, "list_directory", json!({"path": env.p("root")})),
    ];
    // The server may already be gone, in which case these writes fail.
    let wrote_more =
        more.iter().all(|line| writeln!(stdin, "{line}").is_ok()) && stdin.flush().is_ok();
    // With stdin still open, it must notice on its own: its replies can go nowhere.
    let status = server.exit_within(Duration::from_secs(10)).unwrap_or_else(|| {
        panic!("stdout closed, stdin open: replay still running after 10 s (later requests written: {wrote_more})")
    });
    let stderr = server.stderr();
    report(&format!("stdout closed, stdin open: replay exited by itself, {status:?}"));
    assert_eq!(status.code(), Some(0), "exit status {status:?}; stderr:\n{stderr}");
    assert!(!stderr.contains("panicked"), "replay panicked:\n{stderr}");
    drop(stdin);
}

/// Stdin closed in the middle of a line: the cut line gets a parse error, calls still running
/// are answered (and their writes done), and the process exits 0. A last complete message
/// without its newline is served.
#[test]
fn stdin_closed_mid_line_exits_zero_after_answering() {
    let env = TestEnv::new(&[], &[]);
    let mut server = Proc::spawn(&env);
    let replies = server.lines();
    let mut stdin = server.take_stdin();
    let write =
        tool_call("w", "write_file", json!({"path": env.p("root/w.txt"), "content": "done"}));
    write!(stdin, "{write}\n{{\"jsonrpc\":\"2.0\",\"id\":\"cut\",\"meth").expect("writing");
    drop(stdin);
    let mut got = rest_of_output(&replies, REPLY_TIMEOUT, &server);
    got.sort_by_key(|reply| reply["id"].to_string());
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[0]["id"], json!("w"), "{got:?}");
    assert_eq!(text_of(&got[0]), format!("Successfully wrote {}", env.p("root/w.txt")));
    assert_eq!(error_code(&got[1]), Some(-32700), "the cut line: {got:?}");
    server.finish_cleanly();
    assert_eq!(env.read_string("root/w.txt"), "done");

    let mut server = Proc::spawn(&env);
    let replies = server.lines();
    let mut stdin = server.take_stdin();
    write!(stdin, "{}", request("last", "ping", json!({}))).expect("writing");
    drop(stdin);
    let got = rest_of_output(&replies, REPLY_TIMEOUT, &server);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0]["id"], json!("last"), "{got:?}");
    assert_eq!(got[0]["result"], json!({}), "{got:?}");
    server.finish_cleanly();
}

// ---------------------------------------------------------------------------------------------
// Crash safety
// ---------------------------------------------------------------------------------------------

const CRASH_ROUNDS: usize = 20;
/// Versions each round queues per file, alternating write_file and edit_file.
const CRASH_STEPS: u32 = 6;
/// The files' sizes: each version fills a whole file with one 128-byte tag.
const CRASH_SIZES: [usize; 3] = [2 << 20, 7 << 19, 5 << 20];
const TAG_BYTES: usize = 128;

/// Version `k` of crash file `f`: its tag, `TAG_BYTES` long, repeated to the file's size.
fn crash_content(f: usize, k: u32) -> String {
    let mut tag = format!("<file {f} version {k:06}>");
    tag.extend(std::iter::repeat_n('.', TAG_BYTES - 1 - tag.len()));
    tag.push('\n');
    tag.repeat(CRASH_SIZES[f] / TAG_BYTES)
}

/// The version crash file `f` holds, after checking that it is one whole version.
#[track_caller]
fn crash_version(env: &TestEnv, f: usize) -> u32 {
    let bytes = env.read(&format!("root/crash/f{f}.txt"));
    let head = String::from_utf8_lossy(&bytes[..bytes.len().min(TAG_BYTES)]).into_owned();
    let version = head
        .strip_prefix(&format!("<file {f} version "))
        .and_then(|rest| rest.get(..6))
        .and_then(|digits| digits.parse().ok())
        .unwrap_or_else(|| {
            panic!("f{f}.txt ({} bytes) starts with no version tag: {head:?}", bytes.len())
        });
    let whole = bytes.len() == CRASH_SIZES[f] && bytes == crash_content(f, version).as_bytes();
    assert!(
        whole,
        "f{f}.txt ({} bytes) is not one whole version {version}: torn or truncated",
        bytes.len()
    );
    version
}

/// The request that takes crash file `path` (number `f`) from version `k - 1` to `k`: a
/// write_file when `step` is even, else an edit_file. Built by hand: serde_json in a debug build
/// takes about 100 ms to serialize 5 MB, which would decide when the kill lands.
fn crash_request(id: usize, path: &str, f: usize, k: u32, step: usize) -> String {
    let head = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":"#);
    let path = Value::from(path);
    if step % 2 == 0 {
        // The content's only character that JSON escapes is the newline.
        let content = crash_content(f, k).replace('\n', "\\n");
        format!(
            r#"{head}{{"name":"write_file","arguments":{{"path":{path},"content":"{content}"}}}}}}"#
        )
    } else {
        let edit = json!({"oldText": format!("version {:06}", k - 1),
                          "newText": format!("version {k:06}"), "limit": 0});
        format!(r#"{head}{{"name":"edit_file","arguments":{{"path":{path},"edits":[{edit}]}}}}}}"#)
    }
}

/// xorshift64*: enough randomness for kill delays, with a seed that can be reported.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

/// Rounds of: a server gets write_file and edit_file calls on three 2-5 MB files, pipelined,
/// and is SIGKILLed 2-200 ms after a random one of its first replies (or after none). Each file
/// must then hold exactly one whole version, no older than the last one acknowledged. Then a
/// new server's first write in the directory must leave no temp file of a dead server there
/// (the kills' leftovers plus a planted one). `REPLAY_CRASH_SEED` replays a reported seed.
#[test]
fn sigkill_mid_write_leaves_whole_files_and_the_next_server_sweeps_temp_files() {
    let env = TestEnv::new(&["root/crash"], &[]);
    for f in 0..CRASH_SIZES.len() {
        env.write(&format!("root/crash/f{f}.txt"), crash_content(f, 0));
    }
    let seed =
        std::env::var("REPLAY_CRASH_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
            SystemTime::now().duration_since(UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64) | 1
        });
    let mut rng = Rng(seed);
    let crash_dir = env.path("root/crash");
    let (mut rounds_acked, mut rounds_with_temp, mut acks) = (0, 0, 0);
    for round in 0..CRASH_ROUNDS {
        let before: Vec<u32> = (0..CRASH_SIZES.len()).map(|f| crash_version(&env, f)).collect();
        // Request id -> (file, version it makes, step); ids in sending order.
        let mut plan = Vec::new();
        for step in 1..=CRASH_STEPS {
            for (f, &base) in before.iter().enumerate() {
                plan.push((f, base + step, round + f + step as usize));
            }
        }
        let mut server = Proc::spawn(&env);
        let replies = server.lines();
        let mut stdin = server.take_stdin();
        // The clock starts once the server is up: its start-up is not what is tested.
        writeln!(stdin, "{}", request("ready", "ping", json!({}))).expect("writing");
        let ready = next_message(&replies, REPLY_TIMEOUT, &server);
        assert_eq!(ready["id"], json!("ready"), "{ready}");
        let paths: Vec<String> =
            (0..CRASH_SIZES.len()).map(|f| env.p(&format!("root/crash/f{f}.txt"))).collect();
        let sent = plan.clone();
        let writer = thread::spawn(move || {
            for (id, &(f, k, step)) in sent.iter().enumerate() {
                let line = crash_request(id, &paths[f], f, k, step);
                // Fails with EPIPE once the server is killed.
                if writeln!(stdin, "{line}").and_then(|()| stdin.flush()).is_err() {
                    return;
                }
            }
        });
        // A debug build takes 100-250 ms per call on these files, so a delay counted from
        // the start would mostly kill the server before its first write. Counted from a random
        // reply, it lands anywhere in the next call: parsing, writing the temp file, renaming.
        let (wait_for, delay) = (rng.below(3), Duration::from_millis(2 + rng.below(199)));
        let mut early = Vec::new();
        while early.len() < wait_for as usize {
            early.push(next_message(&replies, REPLY_TIMEOUT, &server));
        }
        thread::sleep(delay);
        server.sigkill();
        let status = server.wait(REPLY_TIMEOUT);
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(9),
            "round {round}: replay ended before the kill: {status:?}; stderr:\n{}",
            server.stderr()
        );
        writer.join().expect("writer thread");
        let mut acked = vec![0; CRASH_SIZES.len()];
        early.extend(rest_of_output(&replies, REPLY_TIMEOUT, &server));
        for reply in early {
            let id =
                reply["id"].as_u64().unwrap_or_else(|| panic!("round {round}: {reply}")) as usize;
            let &(f, k, _) =
                plan.get(id).unwrap_or_else(|| panic!("round {round}: unknown id {reply}"));
            assert!(reply.get("error").is_none(), "round {round}: request {id} failed: {reply}");
            acked[f] = acked[f].max(k);
            acks += 1;
        }
        for (f, &base) in before.iter().enumerate() {
            let version = crash_version(&env, f);
            let newest_sent = base + CRASH_STEPS;
            assert!(
                version >= base.max(acked[f]) && version <= newest_sent,
                "round {round} (kill {delay:?} after reply {wait_for}, seed {seed}): \
                 f{f}.txt holds version {version}; it held {base}, version {} was acknowledged, \
                 {newest_sent} the last sent",
                acked[f]
            );
        }
        rounds_acked += usize::from(acked.iter().any(|&k| k > 0));
        rounds_with_temp += usize::from(!temp_files(&crash_dir).is_empty());
    }
    report(&format!(
        "crash: seed {seed}; {CRASH_ROUNDS} rounds, {acks} writes acknowledged, \
         {rounds_acked} rounds with an acknowledged write, \
         {rounds_with_temp} rounds that left a temp file behind"
    ));

    // Whatever the kills left, plus one left by a server that is surely dead.
    let planted = format!("{TEMP_PREFIX}{}.0", dead_pid());
    env.write(&format!("root/crash/{planted}"), "stale");
    let leftovers = temp_files(&crash_dir);
    let mut server = Server::start(&env);
    server.call_text("write_file", json!({"path": env.p("root/crash/next.txt"), "content": "n"}));
    assert_eq!(
        temp_files(&crash_dir),
        Vec::<String>::new(),
        "stale temp files survived (were: {leftovers:?})"
    );
    for f in 0..CRASH_SIZES.len() {
        crash_version(&env, f);
    }
}

/// What the sweep takes: in the directory written to, the `.replay-tmp.<pid>.<n>` regular
/// files of dead pids, and their directories (a copy_file cut short) with what is in them; not
/// a live process's, not other names, not other directories. It runs once per directory per process: a stale file planted after the first
/// write there stays until another process writes there.
#[test]
fn the_first_write_into_a_directory_sweeps_only_dead_servers_temp_files() {
    let env = TestEnv::new(&["root/d", "root/other"], &[]);
    let dead = dead_pid();
    let live = std::process::id();
    let stale = [format!("{TEMP_PREFIX}{dead}.0"), format!("{TEMP_PREFIX}{dead}.17")];
    let kept = [
        format!("{TEMP_PREFIX}{live}.3"),
        format!("{TEMP_PREFIX}x{dead}.1"),
        format!("{TEMP_PREFIX}{dead}"),
        format!("{TEMP_PREFIX}{dead}.5.bak"),
        format!("{TEMP_PREFIX}0.1"),
    ];
    for name in stale.iter().chain(&kept) {
        env.write(&format!("root/d/{name}"), "t");
    }
    env.write(&format!("root/d/{TEMP_PREFIX}{dead}.4/half-copied/file"), "t");
    env.write(&format!("root/other/{TEMP_PREFIX}{dead}.0"), "t");
    let mut expected: Vec<String> = kept.to_vec();
    expected.sort();

    let mut server = Server::start(&env);
    server.call_text("write_file", json!({"path": env.p("root/d/a.txt"), "content": "a"}));
    assert_eq!(temp_files(&env.path("root/d")), expected);
    assert_eq!(temp_files(&env.path("root/other")), [format!("{TEMP_PREFIX}{dead}.0")]);

    // Swept once: a second write in root/d does not read the directory again.
    let late = format!("{TEMP_PREFIX}{dead}.99");
    env.write(&format!("root/d/{late}"), "t");
    server.call_text(
        "edit_file",
        json!({"path": env.p("root/d/a.txt"), "edits": [{"oldText": "a", "newText": "b"}]}),
    );
    assert!(env.exists(&format!("root/d/{late}")), "root/d was read again on a later write");
    server.call_text("write_file", json!({"path": env.p("root/other/o.txt"), "content": "o"}));
    assert_eq!(temp_files(&env.path("root/other")), Vec::<String>::new());

    // A new process sweeps root/d again.
    drop(server);
    let mut server = Server::start(&env);
    server.call_text("write_file", json!({"path": env.p("root/d/a.txt"), "content": "c"}));
    assert!(!env.exists(&format!("root/d/{late}")), "a new server left {late}");
    assert_eq!(temp_files(&env.path("root/d")), expected);
}

// ---------------------------------------------------------------------------------------------
// A root removed and made again, or replaced by a symlink
// ---------------------------------------------------------------------------------------------

/// The server holds a handle on each allowed directory. One removed and made again at the same
/// place is used again (without Landlock, whose rules follow the old directory); one replaced by
/// a symlink to the outside is not, and nothing outside is touched.
#[test]
fn a_root_made_again_is_used_and_a_root_turned_symlink_is_refused() {
    let env = TestEnv::new(&["outside"], &[("root/a.txt", "first"), ("outside/a.txt", "secret")]);
    let root = env.p("root");
    let allow = format!("{root}:rw");
    let mut server = Server::start_with(["--mcp-server", "--no-sandbox", "--allow", &allow]);
    let a = env.p("root/a.txt");
    assert_eq!(server.call_text("read_file", json!({"path": a})), "first");

    fs::remove_dir_all(env.root()).unwrap();
    env.mkdir("root");
    env.write("root/a.txt", "second");
    assert_eq!(server.call_text("read_file", json!({"path": a})), "second");
    server.call_text("write_file", json!({"path": env.p("root/b.txt"), "content": "new"}));
    assert_eq!(env.read_string("root/b.txt"), "new");

    // Renamed away and replaced: the new directory at the root's path is the one served.
    fs::rename(env.root(), env.path("root.old")).unwrap();
    env.mkdir("root");
    env.write("root/a.txt", "third");
    assert_eq!(server.call_text("read_file", json!({"path": a})), "third");
    server.call_text("write_file", json!({"path": env.p("root/b.txt"), "content": "newer"}));
    assert_eq!(env.read_string("root/b.txt"), "newer");
    assert_eq!(env.read_string("root.old/b.txt"), "new");
    fs::remove_dir_all(env.path("root.old")).unwrap();

    let before = env.snapshot().under("outside");
    fs::remove_dir_all(env.root()).unwrap();
    env.symlink(&env.p("outside"), "root");
    for (tool, args) in [
        ("read_file", json!({"path": a})),
        ("write_file", json!({"path": a, "content": "overwritten"})),
        ("write_file", json!({"path": env.p("root/c.txt"), "content": "new"})),
        ("list_directory", json!({"path": root})),
        ("delete_file", json!({"path": a})),
    ] {
        let reply = server.call(tool, args);
        let line = reply.value.to_string();
        assert!(!line.contains("secret"), "{tool}: {line}");
        assert!(reply.value.get("error").is_some(), "{tool} succeeded: {line}");
    }
    assert_eq!(before.diff(&env.snapshot().under("outside")), "");
}
