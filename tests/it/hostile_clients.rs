//! Clients that misbehave: a 100 MB line, JSON nested past any parser's stack, invalid UTF-8,
//! a client that closes stdout mid-reply and stdin closed mid-line. Each gets a clear error or
//! a clean exit, never a crash, and serving goes on where it can.

use std::io::{self, Read, Write};
use std::process::ChildStdin;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

#[cfg(target_os = "linux")]
use crate::harness::PEAK_RSS_LIMIT_KIB;
use crate::harness::{
    error_code, raw_call, raw_request, report, text_of, Proc, Server, TestEnv, REPLY_TIMEOUT,
};

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
    let first = server.next_message(&replies, Duration::from_secs(60));
    assert_eq!(error_code(&first), Some(-32700), "{first}");
    assert_eq!(first["id"], Value::Null, "{first}");
    let message = first.pointer("/error/message").and_then(Value::as_str).unwrap_or_default();
    assert!(
        message.contains(&format!("{LINE_BYTES} bytes")) && message.contains("67108864"),
        "the message should give the line's size and the limit: {message}"
    );
    let second = server.next_message(&replies, REPLY_TIMEOUT);
    assert_eq!(second["id"], json!("after"), "{second}");
    assert_eq!(second["result"], json!({}), "{second}");
    let elapsed = started.elapsed();
    let stdin = writer.join().expect("writer thread").expect("writing the 100 MB line");
    #[cfg(target_os = "linux")]
    {
        let peak_kib = server.peak_rss_kib();
        report(
            "hostile input",
            &format!(
            "100 MB line: answered in {elapsed:.2?}; peak RSS (VmHWM) {peak_kib} KiB ({:.1} MB)",
            peak_kib as f64 / 1024.0
        ),
        );
        assert!(
            peak_kib < PEAK_RSS_LIMIT_KIB,
            "peak RSS {peak_kib} KiB: a skipped line must not be kept beyond the cap"
        );
    }
    #[cfg(not(target_os = "linux"))]
    report("hostile input", &format!("100 MB line: answered in {elapsed:.2?}"));
    drop(stdin);
    assert!(server.rest_of_output(&replies, REPLY_TIMEOUT).is_empty());
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
    let template = raw_call("p", "read_file", json!({"path": "@"}));
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
        writeln!(stdin, "{}", raw_request(format!("ping-{n}"), "ping", json!({})))
            .expect("writing");
        stdin.flush().expect("flushing");
        let reply = server.next_message(&replies, REPLY_TIMEOUT);
        assert_eq!(error_code(&reply), Some(-32700), "{what}: {reply}");
        assert_eq!(reply["id"], Value::Null, "{what}: {reply}");
        let ping = server.next_message(&replies, REPLY_TIMEOUT);
        assert_eq!(ping["id"], json!(format!("ping-{n}")), "after {what}: {ping}");
        assert_eq!(ping["result"], json!({}), "after {what}: {ping}");
    }
    writeln!(stdin, "{}", raw_call("u", "read_file", json!({"path": env.p("root/ünïcödé.txt")})))
        .expect("writing");
    drop(stdin);
    let reply = server.next_message(&replies, REPLY_TIMEOUT);
    assert_eq!(text_of(&reply), "ok", "{reply}");
    assert!(server.rest_of_output(&replies, REPLY_TIMEOUT).is_empty());
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
    let read_big = raw_call(1, "read_file", json!({"path": env.p("root/big.txt")}));
    writeln!(stdin, "{read_big}").expect("writing");
    stdin.flush().expect("flushing");
    // Read a part of the reply: the rest is being written when the pipe closes.
    let mut part = vec![0u8; 64 * 1024];
    stdout.read_exact(&mut part).expect("the first 64 KiB of the reply");
    assert!(part.starts_with(b"{"), "{:?}", String::from_utf8_lossy(&part[..80]));
    drop(stdout);
    // More work whose replies cannot be delivered: a big one, small ones, a write.
    let more = [
        raw_call(2, "read_file", json!({"path": env.p("root/big.txt")})),
        raw_request(3, "ping", json!({})),
        raw_call(4, "write_file", json!({"path": env.p("root/after.txt"), "content": "x"})),
        raw_call(5, "list_directory", json!({"path": env.p("root")})),
    ];
    // The server may already be gone, in which case these writes fail.
    let wrote_more =
        more.iter().all(|line| writeln!(stdin, "{line}").is_ok()) && stdin.flush().is_ok();
    // With stdin still open, it must notice on its own: its replies can go nowhere.
    let status = server.exit_within(Duration::from_secs(10)).unwrap_or_else(|| {
        panic!("stdout closed, stdin open: replay still running after 10 s (later requests written: {wrote_more})")
    });
    let stderr = server.stderr();
    report(
        "hostile input",
        &format!("stdout closed, stdin open: replay exited by itself, {status:?}"),
    );
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
        raw_call("w", "write_file", json!({"path": env.p("root/w.txt"), "content": "done"}));
    write!(stdin, "{write}\n{{\"jsonrpc\":\"2.0\",\"id\":\"cut\",\"meth").expect("writing");
    drop(stdin);
    let mut got = server.rest_of_output(&replies, REPLY_TIMEOUT);
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
    write!(stdin, "{}", raw_request("last", "ping", json!({}))).expect("writing");
    drop(stdin);
    let got = server.rest_of_output(&replies, REPLY_TIMEOUT);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0]["id"], json!("last"), "{got:?}");
    assert_eq!(got[0]["result"], json!({}), "{got:?}");
    server.finish_cleanly();
}
