//! JSON-RPC and MCP session behaviour: initialize, notifications, ids, error codes, batches, tools/list and EOF.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use crate::harness::{assert_json, Server, TestEnv};

const CORE_TOOLS: [&str; 10] = [
    "read_file",
    "read_multiple_files",
    "write_file",
    "create_directory",
    "list_directory",
    "directory_tree",
    "move_file",
    "delete_file",
    "get_file_info",
    "list_allowed_directories",
];

fn server(env: &TestEnv) -> Server {
    Server::start(env)
}

fn spawn_uninitialized(env: &TestEnv) -> Server {
    let allow = format!("{}:rw", env.p("root"));
    Server::spawn(["--mcp-server", "--allow", &allow])
}

#[test]
fn initialize_echoes_each_supported_version() {
    for version in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
        let env = TestEnv::new(&[], &[]);
        let mut server = spawn_uninitialized(&env);
        let result = server.initialize(version);
        let expected = format!(
            r#"{{"protocolVersion": "{version}", "serverInfo": {{"name": "replay", "version": "[..]"}}, "capabilities": {{"tools": "{{...}}"}}, "instructions": "replay serves [..]"}}"#
        );
        assert_json(&result, &expected);
        let server_version =
            result.pointer("/serverInfo/version").and_then(Value::as_str).unwrap_or("");
        assert!(!server_version.is_empty(), "empty serverInfo.version");
    }
}

#[test]
fn initialize_unknown_version_gets_the_latest() {
    for version in ["1999-01-01", "2026-01-01", ""] {
        let env = TestEnv::new(&[], &[]);
        let mut server = spawn_uninitialized(&env);
        let result = server.initialize(version);
        assert_eq!(
            result.get("protocolVersion"),
            Some(&json!("2025-11-25")),
            "client sent {version:?}: {result}"
        );
    }
}

/// A handshake that fails drops the server from hosts that probe it at launch: `initialize`
/// with params that are not an object negotiates the latest revision, as replay v2.2 does.
#[test]
fn initialize_with_params_not_an_object_gets_the_latest() {
    for params in [json!("hello"), json!(7), json!(["2025-06-18"])] {
        let env = TestEnv::new(&[], &[]);
        let mut server = spawn_uninitialized(&env);
        let reply = server.request("initialize", params.clone());
        assert_eq!(reply.result()["protocolVersion"], "2025-11-25", "{params}: {}", reply.line);
    }
}

#[test]
fn requests_before_initialize_are_served() {
    let env = TestEnv::new(&[], &[("root/a.txt", "a")]);
    let mut server = spawn_uninitialized(&env);
    assert_eq!(server.request("ping", json!({})).result(), &json!({}));
    assert!(server.request("tools/list", json!({})).result().get("tools").is_some());
    assert_eq!(server.call_text("read_file", json!({"path": env.p("root/a.txt")})), "a");
}

#[test]
fn ping_returns_an_empty_object() {
    let env = TestEnv::new(&[], &[]);
    let mut server = server(&env);
    assert_eq!(server.request("ping", json!({})).result(), &json!({}));
    // params omitted altogether
    server.send_raw(r#"{"jsonrpc":"2.0","id":"p","method":"ping"}"#);
    assert_eq!(server.reply_to(&json!("p")).result(), &json!({}));
}

#[test]
fn notifications_get_no_reply() {
    let env = TestEnv::new(&[], &[]);
    let mut server = server(&env);
    server.send_raw(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    server.send_raw(r#"{"jsonrpc":"2.0","method":"initialized"}"#);
    server.send_raw(r#"{"jsonrpc":"2.0","method":"notifications/unknown_thing","params":{"x":1}}"#);
    server.send_raw(
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":12345}}"#,
    );
    server.send_raw(r#"{"jsonrpc":"2.0","method":"no/such/method"}"#);
    // If any notification were answered, that answer would arrive before the ping's reply.
    server.send_raw(r#"{"jsonrpc":"2.0","id":"after","method":"ping"}"#);
    let next = server.next_message();
    assert_eq!(
        next.value.get("id"),
        Some(&json!("after")),
        "a notification got a reply: {}",
        next.line
    );
}

#[test]
fn ids_are_echoed_verbatim() {
    let env = TestEnv::new(&[], &[]);
    let mut server = server(&env);
    for id in [json!("abc"), json!(0), json!(-7), json!(9_007_199_254_740_991_i64), json!("")] {
        server.send(&json!({"jsonrpc": "2.0", "id": id, "method": "ping"}));
        let reply = server.next_message();
        assert_eq!(reply.value.get("id"), Some(&id), "{}", reply.line);
        assert_eq!(reply.result(), &json!({}));
    }
}

#[test]
fn null_id_gets_a_reply_with_null_id() {
    let env = TestEnv::new(&[], &[]);
    let mut server = server(&env);
    server.send_raw(r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#);
    let reply = server.next_message();
    assert_eq!(reply.value.get("id"), Some(&Value::Null), "{}", reply.line);
    assert_eq!(reply.result(), &json!({}));
}

#[test]
fn parse_error_then_keeps_serving() {
    let env = TestEnv::new(&[], &[]);
    let mut server = server(&env);
    for garbage in ["{not json", "]", r#"{"jsonrpc":"2.0","id":1,"method":"ping""#, "\u{0}\u{1}"] {
        server.send_raw(garbage);
        let reply = server.next_message();
        assert_eq!(reply.expect_error(-32700).code, -32700);
        assert_eq!(reply.value.get("id"), Some(&Value::Null), "{}", reply.line);
    }
    assert_eq!(server.request("ping", json!({})).result(), &json!({}));
}

#[test]
fn parse_error_on_the_very_first_line() {
    let env = TestEnv::new(&[], &[]);
    let mut server = spawn_uninitialized(&env);
    server.send_raw("this is not json");
    server.next_message().expect_error(-32700);
    let result = server.initialize("2025-06-18");
    assert_eq!(result.get("protocolVersion"), Some(&json!("2025-06-18")));
}

#[test]
fn blank_lines_are_ignored_or_rejected_but_never_fatal() {
    let env = TestEnv::new(&[], &[]);
    let mut server = server(&env);
    server.send_raw("");
    server.send_raw("   ");
    assert_eq!(server.request("ping", json!({})).result(), &json!({}));
}

#[test]
fn malformed_envelopes_are_invalid_request() {
    let env = TestEnv::new(&[], &[]);
    let mut server = server(&env);
    let cases = [
        (r#"{"id":"e1","method":"ping"}"#, "missing jsonrpc"),
        (r#"{"jsonrpc":"1.0","id":"e2","method":"ping"}"#, "wrong jsonrpc version"),
        (r#"{"jsonrpc":"2.0","id":"e3","method":5}"#, "method not a string"),
        (r#"{"jsonrpc":"2.0","id":"e4"}"#, "method missing"),
        (r#"{"jsonrpc":"2.0","id":{"nested":true},"method":"ping"}"#, "id is an object"),
        ("42", "not an object"),
        (r#""ping""#, "a bare string"),
    ];
    for (line, what) in cases {
        server.send_raw(line);
        let reply = server.next_message();
        let error = reply.error();
        assert_eq!(error.code, -32600, "{what}: {}", reply.line);
    }
    assert_eq!(server.request("ping", json!({})).result(), &json!({}));
}

#[test]
fn malformed_envelope_echoes_a_usable_id() {
    let env = TestEnv::new(&[], &[]);
    let mut server = server(&env);
    server.send_raw(r#"{"id":"keep-me","method":"ping"}"#);
    let reply = server.next_message();
    reply.expect_error(-32600);
    let id = reply.value.get("id");
    assert!(id == Some(&json!("keep-me")) || id == Some(&Value::Null), "{}", reply.line);
}

#[test]
fn unknown_method_is_method_not_found() {
    let env = TestEnv::new(&[], &[]);
    let mut server = server(&env);
    let reply = server.request("no/such/method", json!({}));
    reply.expect_error(-32601);
    assert_eq!(reply.value.get("id"), Some(&json!(2)), "{}", reply.line);
}

#[test]
fn tools_call_without_a_tool_name_is_invalid_params() {
    let env = TestEnv::new(&[], &[]);
    let mut server = server(&env);
    server.request("tools/call", json!({"arguments": {}})).expect_error(-32602);
    server.request("tools/call", json!({"name": 5, "arguments": {}})).expect_error(-32602);
}

#[test]
fn tools_call_of_an_unknown_tool_is_an_error_naming_it() {
    let env = TestEnv::new(&[], &[]);
    let mut server = server(&env);
    let error = server.call("no_such_tool", json!({})).error();
    assert!([-32601, -32602].contains(&error.code), "code {}", error.code);
    assert!(error.message.contains("no_such_tool"), "{}", error.message);
}

#[test]
fn batch_gets_an_array_of_responses() {
    let env = TestEnv::new(&[], &[("root/a.txt", "A")]);
    let mut server = server(&env);
    let batch = json!([
        {"jsonrpc": "2.0", "id": "b1", "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": "b2", "method": "tools/call", "params": {"name": "read_file", "arguments": {"path": env.p("root/a.txt")}}},
        {"jsonrpc": "2.0", "id": "b3", "method": "no/such/method"}
    ]);
    server.send(&batch);
    let reply = server.next_message();
    let Value::Array(items) = &reply.value else {
        panic!("batch reply is not an array: {}", reply.line)
    };
    let ids: BTreeSet<String> = items.iter().map(|item| item["id"].to_string()).collect();
    assert_eq!(
        ids,
        BTreeSet::from([r#""b1""#.to_owned(), r#""b2""#.to_owned(), r#""b3""#.to_owned()]),
        "{}",
        reply.line
    );
    for item in items {
        match item["id"].as_str() {
            Some("b1") => assert_eq!(item["result"], json!({})),
            Some("b2") => assert_eq!(item.pointer("/result/content/0/text"), Some(&json!("A"))),
            _ => assert_eq!(item.pointer("/error/code"), Some(&json!(-32601))),
        }
    }
}

#[test]
fn batch_with_an_invalid_member_answers_it_with_invalid_request() {
    let env = TestEnv::new(&[], &[]);
    let mut server = server(&env);
    server.send_raw(r#"[{"jsonrpc":"2.0","id":"ok","method":"ping"}, 5]"#);
    let reply = server.next_message();
    let Value::Array(items) = &reply.value else {
        panic!("batch reply is not an array: {}", reply.line)
    };
    assert_eq!(items.len(), 2, "{}", reply.line);
    assert!(
        items.iter().any(|i| i["id"] == json!("ok") && i["result"] == json!({})),
        "{}",
        reply.line
    );
    assert!(
        items.iter().any(|i| i.pointer("/error/code") == Some(&json!(-32600))),
        "{}",
        reply.line
    );
}

#[test]
fn empty_batch_is_invalid_request() {
    let env = TestEnv::new(&[], &[]);
    let mut server = server(&env);
    server.send_raw("[]");
    let reply = server.next_message();
    reply.expect_error(-32600);
    assert_eq!(reply.value.get("id"), Some(&Value::Null), "{}", reply.line);
}

#[test]
fn tools_call_without_arguments_names_the_missing_field() {
    let env = TestEnv::new(&[], &[]);
    let mut server = server(&env);
    let error = server.request("tools/call", json!({"name": "read_file"})).expect_error(-32602);
    assert!(error.message.contains("path"), "{}", error.message);
}

#[test]
fn tools_list_describes_every_core_tool() {
    let env = TestEnv::new(&[], &[]);
    let mut server = server(&env);
    let result = server.request("tools/list", json!({})).result().clone();
    let tools = result.get("tools").and_then(Value::as_array).expect("tools array");
    let names: BTreeSet<&str> =
        tools.iter().filter_map(|t| t.get("name").and_then(Value::as_str)).collect();
    for name in CORE_TOOLS {
        assert!(names.contains(name), "tools/list lacks {name}: {names:?}");
    }
    assert_eq!(names.len(), tools.len(), "duplicate or unnamed tools");
    for tool in tools {
        let name = tool["name"].as_str().unwrap_or("?");
        assert!(
            tool.get("title").and_then(Value::as_str).is_some_and(|t| !t.is_empty()),
            "{name}: title"
        );
        assert!(
            tool.get("description").and_then(Value::as_str).is_some_and(|t| !t.is_empty()),
            "{name}: description"
        );
        assert_eq!(
            tool.pointer("/inputSchema/type"),
            Some(&json!("object")),
            "{name}: inputSchema"
        );
        assert!(tool.get("annotations").is_some_and(Value::is_object), "{name}: annotations");
    }
}

#[test]
fn tools_list_schemas_require_the_contract_parameters() {
    let env = TestEnv::new(&[], &[]);
    let mut server = server(&env);
    let result = server.request("tools/list", json!({})).result().clone();
    let tools = result["tools"].as_array().expect("tools array");
    let required = |name: &str| -> BTreeSet<String> {
        let tool =
            tools.iter().find(|t| t["name"] == json!(name)).unwrap_or_else(|| panic!("no {name}"));
        tool.pointer("/inputSchema/required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).map(str::to_owned).collect())
            .unwrap_or_default()
    };
    let set = |names: &[&str]| names.iter().map(|s| (*s).to_owned()).collect::<BTreeSet<_>>();
    assert_eq!(required("read_file"), set(&["path"]));
    assert_eq!(required("read_multiple_files"), set(&["paths"]));
    assert_eq!(required("write_file"), set(&["path", "content"]));
    assert_eq!(required("create_directory"), set(&["path"]));
    assert_eq!(required("list_directory"), set(&["path"]));
    assert_eq!(required("directory_tree"), set(&["path"]));
    assert_eq!(required("move_file"), set(&["source", "destination"]));
    assert_eq!(required("delete_file"), set(&["path"]));
    assert_eq!(required("get_file_info"), set(&["path"]));
    assert_eq!(required("list_allowed_directories"), set(&[]));
}

#[test]
fn tool_results_have_text_content_and_no_error_flag() {
    let env = TestEnv::new(&[], &[("root/a.txt", "a")]);
    let mut server = server(&env);
    let reply = server.call("read_file", json!({"path": env.p("root/a.txt")}));
    assert_json(reply.result(), r#"{"content": [{"type": "text", "text": "a"}]}"#);
    assert_ne!(reply.result().get("isError"), Some(&json!(true)));
}

#[test]
fn eof_after_many_requests_still_answers_all_and_exits_zero() {
    let env = TestEnv::new(&[], &[("root/a.txt", "A")]);
    let mut server = server(&env);
    let n = 40;
    for i in 0..n {
        let message = match i % 4 {
            0 => json!({"jsonrpc": "2.0", "id": format!("q{i}"), "method": "ping"}),
            1 => json!({"jsonrpc": "2.0", "id": format!("q{i}"), "method": "tools/list"}),
            2 => json!({"jsonrpc": "2.0", "id": format!("q{i}"), "method": "tools/call",
                        "params": {"name": "read_file", "arguments": {"path": env.p("root/a.txt")}}}),
            _ => json!({"jsonrpc": "2.0", "id": format!("q{i}"), "method": "tools/call",
                        "params": {"name": "write_file", "arguments": {"path": env.p(&format!("root/w{i}.txt")), "content": format!("{i}")}}}),
        };
        server.send(&message);
    }
    let (messages, status) = server.finish();
    let ids: Vec<String> = messages
        .iter()
        .filter_map(|m| m.value.get("id").and_then(Value::as_str).map(str::to_owned))
        .collect();
    let unique: BTreeSet<&String> = ids.iter().collect();
    assert_eq!(ids.len(), n, "replies: {ids:?}");
    assert_eq!(unique.len(), n, "duplicate replies: {ids:?}");
    for message in &messages {
        assert!(message.value.get("error").is_none(), "{}", message.line);
    }
    assert_eq!(status.code(), Some(0), "exit status {status:?}");
    for i in (3..n).step_by(4) {
        assert_eq!(env.read_string(&format!("root/w{i}.txt")), i.to_string());
    }
}

#[test]
fn eof_right_after_initialize_exits_zero() {
    let env = TestEnv::new(&[], &[]);
    let server = server(&env);
    let (messages, status) = server.finish();
    assert!(
        messages.is_empty(),
        "unexpected output: {:?}",
        messages.iter().map(|m| &m.line).collect::<Vec<_>>()
    );
    assert_eq!(status.code(), Some(0));
}

/// A client that writes all its requests before it reads a single reply (a naive script) must
/// not deadlock against a full stdout pipe: replies queue inside the server while it keeps
/// reading. 3,000 requests (about 600 KB in, 5 MB out) are far beyond both pipes' buffers.
#[test]
fn a_client_that_writes_everything_before_reading_does_not_deadlock() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;
    let big = "x".repeat(3000);
    let env = TestEnv::new(&[], &[("root/big.txt", &big), ("root/small.txt", "s")]);
    let allow = format!("{}:rw", env.p("root"));
    let mut child = crate::harness::replay_command()
        .args(["--mcp-server", "--allow", &allow])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawning replay");
    let mut stdin = child.stdin.take().expect("stdin");
    let n = 3000;
    let (big_path, small_path) = (env.p("root/big.txt"), env.p("root/small.txt"));
    let writer = std::thread::spawn(move || {
        for i in 0..n {
            let path = if i % 2 == 0 { &big_path } else { &small_path };
            let request = json!({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                "params": {"name": "read_file", "arguments": {"path": path}}});
            if writeln!(stdin, "{request}").is_err() {
                return false;
            }
        }
        true
    });
    let start = std::time::Instant::now();
    while !writer.is_finished() {
        if start.elapsed() > std::time::Duration::from_secs(60) {
            let _ = child.kill();
            panic!("replay stopped reading its input: deadlocked on a full stdout pipe");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(writer.join().unwrap(), "writing the requests failed");
    let mut ids = BTreeSet::new();
    for line in BufReader::new(child.stdout.take().expect("stdout")).lines() {
        let value: Value = serde_json::from_str(&line.unwrap()).expect("a JSON line");
        assert!(value.get("result").is_some(), "{value}");
        assert!(ids.insert(value["id"].as_i64().expect("numeric id")), "duplicate {value}");
    }
    assert_eq!(ids.len(), n as usize);
    assert!(child.wait().unwrap().success());
}
