//! Protocol revisions and eras: the modern era's `server/discover` and per-request envelopes,
//! replies shaped for each legacy revision, progress notifications, and `--tool-errors result`.

use serde_json::{json, Value};

use crate::harness::{Server, TestEnv};

const MODERN: &str = "2026-07-28";

fn envelope() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}

fn spawn(env: &TestEnv, extra: &[&str]) -> Server {
    let allow = format!("{}:rw", env.p("root"));
    let mut args = vec!["--mcp-server", "--allow", &allow];
    args.extend_from_slice(extra);
    Server::spawn(args)
}

#[track_caller]
fn assert_modern(result: &Value) {
    assert_eq!(result["resultType"], "complete", "{result}");
    assert_eq!(result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "replay", "{result}");
}

#[test]
fn discover_names_the_modern_revision() {
    let env = TestEnv::new(&[], &[]);
    let mut server = spawn(&env, &[]);
    let reply = server.request("server/discover", json!({"_meta": envelope()}));
    let result = reply.result();
    assert_eq!(result["supportedVersions"], json!([MODERN]));
    assert_eq!(result["capabilities"]["tools"], json!({"listChanged": false}));
    assert!(result["ttlMs"].is_u64(), "{result}");
    assert!(["public", "private"].contains(&result["cacheScope"].as_str().unwrap()));
    assert_modern(result);
    // What the host shows the model before any schema, as initialize gives it.
    let instructions = result["instructions"].as_str().unwrap_or_default();
    assert!(instructions.starts_with("replay serves ") && instructions.contains("edit_file"));
    // Without an envelope (a script asking): the same answer.
    let plain = server.request("server/discover", json!({}));
    assert_eq!(plain.result()["supportedVersions"], json!([MODERN]));
}

#[test]
fn modern_requests_are_served_without_a_handshake() {
    let env = TestEnv::new(&[], &[("root/a.txt", "alpha")]);
    let mut server = spawn(&env, &[]);
    let list = server.request("tools/list", json!({"_meta": envelope()}));
    let list = list.result();
    assert_modern(list);
    assert!(list["ttlMs"].is_u64() && list["cacheScope"].is_string(), "{list}");
    let tools = list["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 19);
    for tool in tools {
        assert!(tool["title"].is_string() && tool["annotations"].is_object(), "{tool}");
    }
    let call = server.request(
        "tools/call",
        json!({"_meta": envelope(), "name": "read_file", "arguments": {"path": env.p("root/a.txt")}}),
    );
    assert_modern(call.result());
    assert_eq!(call.text(), "alpha");
    // The legacy era still works in the same process.
    server.initialize("2025-06-18");
    let legacy = server.request("tools/list", json!({}));
    assert!(legacy.result().get("resultType").is_none(), "{}", legacy.line);
    assert!(legacy.result().get("ttlMs").is_none(), "{}", legacy.line);
}

#[test]
fn an_unsupported_or_malformed_envelope_is_refused() {
    let env = TestEnv::new(&[], &[]);
    let mut server = spawn(&env, &[]);
    let mut meta = envelope();
    meta["io.modelcontextprotocol/protocolVersion"] = json!("1999-01-01");
    let reply = server.request("tools/list", json!({"_meta": meta}));
    let error = &reply.value["error"];
    assert_eq!(error["code"], -32022, "{}", reply.line);
    assert_eq!(error["data"]["supported"], json!([MODERN]), "{}", reply.line);
    assert_eq!(error["data"]["requested"], "1999-01-01", "{}", reply.line);
    let no_caps = json!({"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN}});
    server.request("tools/list", no_caps).expect_error(-32602);
}

#[test]
fn initialize_never_settles_on_the_modern_revision() {
    let env = TestEnv::new(&[], &[]);
    let mut server = spawn(&env, &[]);
    let result = server.initialize(MODERN);
    assert_eq!(result["protocolVersion"], "2025-11-25");
}

#[test]
fn each_legacy_revision_sees_only_the_fields_it_knows() {
    let env = TestEnv::new(&[], &[]);
    for (revision, annotations, titles) in
        [("2024-11-05", false, false), ("2025-03-26", true, false), ("2025-06-18", true, true)]
    {
        let mut server = spawn(&env, &[]);
        server.initialize(revision);
        let list = server.request("tools/list", json!({}));
        for tool in list.result()["tools"].as_array().unwrap() {
            assert_eq!(tool.get("annotations").is_some(), annotations, "{revision}: {tool}");
            assert_eq!(tool.get("title").is_some(), titles, "{revision}: {tool}");
            if !titles {
                assert!(tool.get("outputSchema").is_none(), "{revision}: {tool}");
            }
        }
        let declared =
            list.result()["tools"].as_array().unwrap().iter().any(|t| {
                t["name"] == "list_allowed_directories" && t.get("outputSchema").is_some()
            });
        let call = server.call("list_allowed_directories", json!({}));
        assert_eq!(
            call.result().get("structuredContent").is_some(),
            titles && declared,
            "{revision}: {}",
            call.line
        );
    }
}

/// A call with a progress token gets `notifications/progress` with that token, rising values
/// and a message, all before its response and none after it.
#[test]
fn progress_notifications_come_before_the_response_only() {
    let env = TestEnv::new(&[], &[]);
    for i in 0..300 {
        env.write(&format!("root/d{}/f{i}.txt", i % 30), "needle\n");
    }
    let mut server = spawn(&env, &[]);
    server.initialize("2025-06-18");
    let token = "tok-1";
    server.send(&json!({"jsonrpc": "2.0", "id": 77, "method": "tools/call", "params": {
        "_meta": {"progressToken": token},
        "name": "grep_files",
        "arguments": {"regex": "needle", "directory": env.p("root")},
    }}));
    let mut values: Vec<f64> = Vec::new();
    loop {
        let message = server.next_message();
        if message.value.get("id") == Some(&json!(77)) {
            assert!(message.value.get("result").is_some(), "{}", message.line);
            break;
        }
        let params = &message.value["params"];
        assert_eq!(message.value["method"], "notifications/progress", "{}", message.line);
        assert_eq!(params["progressToken"], token);
        assert!(params["message"].is_string(), "{}", message.line);
        values.push(params["progress"].as_f64().unwrap());
    }
    assert!(!values.is_empty(), "no progress notification");
    assert!(values.windows(2).all(|w| w[0] < w[1]), "progress must rise: {values:?}");
    // Nothing more about call 77: the next line answers the ping.
    let ping = server.request("ping", json!({}));
    assert!(ping.value.get("result").is_some());
    let (rest, _) = server.finish();
    assert!(rest.iter().all(|m| m.value["method"] != "notifications/progress"), "late progress");
}

#[test]
fn tool_errors_as_results_carry_the_code_and_message() {
    let env = TestEnv::new(&[], &[]);
    let mut server = spawn(&env, &["--tool-errors", "result"]);
    server.initialize("2025-06-18");
    let reply = server.call("read_file", json!({"path": "/etc/passwd"}));
    let result = reply.result();
    assert_eq!(result["isError"], true, "{}", reply.line);
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("error -32001: path not allowed"), "{text}");
    assert_eq!(result["structuredContent"]["error"]["code"], -32001);
    // A declared output schema admits the error shape.
    let list = server.request("tools/list", json!({}));
    let tools = list.result()["tools"].as_array().unwrap();
    for tool in tools.iter().filter(|t| t.get("outputSchema").is_some()) {
        let schema = &tool["outputSchema"];
        let validator = jsonschema::validator_for(schema).unwrap();
        let error = json!({"error": {"code": -32001, "message": "m"}});
        assert!(validator.is_valid(&error), "{}: {schema}", tool["name"]);
    }
    // The default stays the contract's JSON-RPC error.
    let mut plain = spawn(&env, &[]);
    plain.initialize("2025-06-18");
    plain.call_err("read_file", json!({"path": "/etc/passwd"}), -32001);
}
