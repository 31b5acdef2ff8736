//! Load: 10,000 requests pipelined without waiting for a reply, mixed with notifications and
//! garbage lines, get one right reply each, and the server's memory stays bounded. Run with
//! `--nocapture` to see the time taken and the peak RSS.

use std::io::{self, BufWriter, Write};
use std::process::ChildStdin;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

#[cfg(target_os = "linux")]
use crate::harness::PEAK_RSS_LIMIT_KIB;
use crate::harness::{
    error_code, raw_call, raw_request, report, temp_files, text_of, Proc, TestEnv, REPLY_TIMEOUT,
};

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
        Kind::Ping => raw_request(i, "ping", json!({})),
        Kind::ToolsList => raw_request(i, "tools/list", json!({})),
        Kind::Read => raw_call(i, "read_file", json!({"path": read})),
        Kind::Info => raw_call(i, "get_file_info", json!({"path": read})),
        Kind::List => raw_call(i, "list_directory", json!({"path": env.p("root/tree")})),
        Kind::Grep => raw_call(
            i,
            "grep_files",
            json!({"regex": "needle \\d+", "directory": env.p("root/tree")}),
        ),
        Kind::Write => raw_call(
            i,
            "write_file",
            json!({"path": env.p(&format!("root/out/w{i}.txt")),
                   "content": format!("written {i}\n")}),
        ),
        Kind::Edit => raw_call(
            i,
            "edit_file",
            json!({"path": env.p(&format!("root/edit/e{i}.txt")),
                   "edits": [{"oldText": format!("old-{i}"), "newText": format!("new-{i}")}]}),
        ),
        Kind::NotFound => raw_call(i, "read_file", json!({"path": env.p("root/missing.txt")})),
        Kind::Outside => raw_call(i, "read_file", json!({"path": env.p("secret.txt")})),
        Kind::MissingParam => raw_call(i, "read_file", json!({})),
        Kind::NoMethod => raw_request(i, "no/such/method", json!({})),
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
            assert_eq!(tools.map(Vec::len), Some(19), "request {i}: {reply}");
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
    let garbage = (0..LOAD_REQUESTS).filter(|&i| is_garbage_after(i)).count();
    let writer = thread::spawn(move || pipeline(&mut stdin, &lines).map(|()| stdin));

    let deadline = Instant::now() + Duration::from_secs(120);
    let mut tally =
        LoadTally { answered: vec![false; LOAD_REQUESTS], n_answered: 0, parse_errors: 0 };
    while tally.n_answered < LOAD_REQUESTS || tally.parse_errors < garbage {
        let left = deadline.saturating_duration_since(Instant::now());
        let reply = server.next_message(&replies, left.min(REPLY_TIMEOUT));
        tally.take(&env, &reply, &needles);
    }
    let stdin = writer.join().expect("writer thread").expect("writing the requests");
    let elapsed = started.elapsed();
    #[cfg(target_os = "linux")]
    {
        let peak_kib = server.peak_rss_kib();
        report(
            "load",
            &format!(
                "{LOAD_REQUESTS} requests answered in {elapsed:.2?}; \
             peak RSS (VmHWM) {peak_kib} KiB ({:.1} MB)",
                peak_kib as f64 / 1024.0
            ),
        );
        assert!(
            peak_kib < PEAK_RSS_LIMIT_KIB,
            "peak RSS {peak_kib} KiB exceeds {PEAK_RSS_LIMIT_KIB} KiB"
        );
    }
    #[cfg(not(target_os = "linux"))]
    report("load", &format!("{LOAD_REQUESTS} requests answered in {elapsed:.2?}"));
    drop(stdin);
    let extra = server.rest_of_output(&replies, REPLY_TIMEOUT);
    assert!(extra.is_empty(), "replies beyond one per request: {extra:?}");
    server.finish_cleanly();
    assert_written(&env);
    assert!(temp_files(&env.path("root/out")).is_empty(), "temp files left in root/out");
    assert!(temp_files(&env.path("root/edit")).is_empty(), "temp files left in root/edit");
}

/// Notifications and unparseable lines go between the load test's requests; only the latter
/// are answered (with a null id), so a reply to a notification shows up as one null id too many.
fn is_garbage_after(i: usize) -> bool {
    i % 1999 == 0
}

/// Writes every line of `lines` to `stdin` without waiting for a reply, with notifications
/// after every 997th and a garbage line after each `is_garbage_after`.
fn pipeline(stdin: &mut ChildStdin, lines: &[String]) -> io::Result<()> {
    let mut out = BufWriter::new(stdin);
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
    out.flush()
}

/// Every write and edit of the load test is on disk.
#[track_caller]
fn assert_written(env: &TestEnv) {
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
}
