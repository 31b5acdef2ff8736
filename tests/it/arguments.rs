//! Arguments: validation stops at the first error in bounded memory, and names the field.

use std::time::Duration;

use serde_json::{json, Value};

use crate::harness::{Server, TestEnv};

/// Sends `line` as-is and returns the reply, asserting the server's peak RSS grew by less than
/// `per_byte` times the line over what it was before. The peak is read from `/proc`, so it is
/// measured on Linux only.
#[track_caller]
fn send_measured(server: &mut Server, line: &str, per_byte: u64) -> Value {
    #[cfg(target_os = "linux")]
    let before_kib = server.peak_rss_kib();
    server.send_raw(line);
    // A debug build takes seconds to parse 20 MB of JSON.
    let reply = serde_json::from_str(&server.next_line_within(Duration::from_secs(120)))
        .expect("checked by next_line_within");
    #[cfg(target_os = "linux")]
    {
        let peak_kib = server.peak_rss_kib();
        let line_kib = line.len() as u64 / 1024;
        let grew = peak_kib.saturating_sub(before_kib);
        assert!(
            grew < per_byte * line_kib,
            "a {line_kib} KiB line grew the peak RSS by {grew} KiB ({:.1}x the line)",
            grew as f64 / line_kib as f64
        );
    }
    #[cfg(not(target_os = "linux"))]
    let _ = per_byte;
    reply
}

fn grep_with_globs(env: &TestEnv, id: u32, globs: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"grep_files","arguments":{{"regex":"x","directory":{dir},"globs":[{globs}]}}}}}}"#,
        dir = json!(env.p("root")),
    )
}

/// See: issue #13, item 2. A 20 MB line of `"globs": [0,0,…]` made validation build an error
/// for each element, 190 bytes per byte of line (3.8 GB); validation now stops at the first.
/// 300,000 elements of `edits` (whose length the schema does not bound, where globs stop at
/// 1,000): small enough to be read into values (`jsonrpc::read_cost`), so that the validation
/// is what is measured. Reading costs 32 bytes per `0,` (16x); before, validating added 190x.
#[test]
fn a_huge_invalid_array_is_refused_at_its_first_element_in_bounded_memory() {
    let env = TestEnv::new(&["root"], &[]);
    let mut server = Server::start(&env);
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"edit_file","arguments":{{"path":{path},"edits":[{zeros}]}}}}}}"#,
        path = json!(env.p("root/a.txt")),
        zeros = vec!["0"; 300_000].join(","),
    );
    let reply = send_measured(&mut server, &line, 32);
    assert_eq!(reply["id"], 7, "{reply}");
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    let message = reply["error"]["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("invalid params: `edits[0]` "), "{message}");
    assert!(message.len() < 200, "{message}");
}

/// See: issue #13, item 2 ("a request's memory is bounded by a small multiple of its size").
/// Lines whose values would cost far more than their bytes (20 MB of `0,`; 21 MB of 700,000
/// small edits, 28 bytes per byte once read) are refused before they are read into values,
/// with their id and a message that says to send less; the line itself is all they cost.
#[test]
fn a_line_too_costly_to_read_is_refused_before_it_is_read() {
    let env = TestEnv::new(&["root"], &[("root/a.txt", "hello\n")]);
    let mut server = Server::start(&env);
    let zeros = grep_with_globs(&env, 7, &vec!["0"; 10_000_000].join(","));
    let edits = vec![r#"{"oldText":"zz","newText":""}"#; 700_000].join(",");
    let edits = format!(
        r#"{{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{{"name":"edit_file","arguments":{{"path":{path},"edits":[{edits}]}}}}}}"#,
        path = json!(env.p("root/a.txt")),
    );
    for (id, line) in [(7, zeros), (8, edits)] {
        let reply = send_measured(&mut server, &line, 3);
        assert_eq!(reply["id"], id, "{reply}");
        assert_eq!(reply["error"]["code"], -32600, "{reply}");
        let message = reply["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("send fewer items per call"), "{message}");
    }
    assert_eq!(env.read_string("root/a.txt"), "hello\n");
    assert_eq!(server.request("ping", json!({})).result(), &json!({}));
}

/// Big requests of the ordinary kind are read and served: a 20 MB write_file (its content is
/// one string, read at a byte per byte) and an edit_file of 2,000 edits.
#[test]
fn big_ordinary_requests_are_served() {
    let env = TestEnv::new(&["root"], &[("root/a.txt", "hello\n")]);
    let mut server = Server::start(&env);
    let content = "0123456789abcdef\n".repeat(20 << 20 >> 4);
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"write_file","arguments":{{"path":{path},"content":{content}}}}}}}"#,
        path = json!(env.p("root/big.txt")),
        content = json!(content),
    );
    let reply = send_measured(&mut server, &line, 6);
    assert!(reply["result"].is_object(), "{reply:.300}");
    assert_eq!(env.read("root/big.txt").len(), content.len());
    let edits: Vec<Value> = (0..2000)
        .map(|i| json!({"oldText": format!("<w{i}>"), "newText": format!("W{i}")}))
        .collect();
    let words: String = (0..2000).map(|i| format!("<w{i}>\n")).collect();
    env.write("root/words.txt", &words);
    let reply = server.call("edit_file", json!({"path": env.p("root/words.txt"), "edits": edits}));
    reply.tool_result();
    assert!(env.read_string("root/words.txt").starts_with("W0\nW1\n"));
}

/// Issue #15: every tool refuses an argument its schema does not name, with -32602, naming the
/// argument and the nearest known name, at any depth, before anything is read or written.
/// `dry_run` on edit_file used to be dropped, and the edit written.
#[test]
fn a_misspelled_argument_is_refused_with_a_suggestion_and_nothing_changes() {
    let env = TestEnv::new(&["root/d"], &[("root/a.txt", "alpha\n"), ("root/d/b.txt", "beta\n")]);
    let a = env.p("root/a.txt");
    let d = env.p("root/d");
    let new = env.p("root/new");
    let edit = json!([{"oldText": "alpha", "newText": "omega"}]);
    let cases = [
        ("read_file", json!({"path": a, "offest": 5}), "offest", "offset"),
        ("read_multiple_files", json!({"path": [a]}), "path", "paths"),
        ("write_file", json!({"path": a, "content": "x", "apend": true}), "apend", "append"),
        ("create_directory", json!({"Path": new}), "Path", "path"),
        ("list_directory", json!({"path": d, "with_sizes": true}), "with_sizes", "withSizes"),
        ("directory_tree", json!({"path": d, "dpeth": 1}), "dpeth", "depth"),
        ("move_file", json!({"source": a, "destnation": new}), "destnation", "destination"),
        (
            "copy_file",
            json!({"source": a, "destination": new, "over_write": true}),
            "over_write",
            "overwrite",
        ),
        ("delete_file", json!({"paht": a}), "paht", "path"),
        ("get_file_info", json!({"PATH": a}), "PATH", "path"),
        ("edit_file", json!({"path": a, "edits": edit, "dry_run": true}), "dry_run", "dryRun"),
        (
            "edit_files",
            json!({"paths": [a], "edits": [{"oldText": "alpha", "new_text": "omega"}]}),
            "edits[0].new_text",
            "newText",
        ),
        (
            "apply_patch",
            json!({"patch": "*** Begin Patch\n*** Delete File: a\n*** End Patch", "dry_run": true}),
            "dry_run",
            "dryRun",
        ),
        (
            "search_files",
            json!({"directory": d, "nameContains": "b", "exclude_globs": []}),
            "exclude_globs",
            "excludeGlobs",
        ),
        ("glob_search", json!({"directory": d, "glob": ["*"]}), "glob", "globs"),
        (
            "grep_files",
            json!({"regex": "a", "directory": d, "context_lines": 2}),
            "context_lines",
            "contextLines",
        ),
        (
            "execute_command",
            json!({"command": "touch made", "working_directory": d}),
            "working_directory",
            "workingDirectory",
        ),
        (
            "command_session",
            json!({"session": 1, "close_input": true}),
            "close_input",
            "closeInput",
        ),
    ];
    let mut server = Server::start(&env);
    let before = env.snapshot();
    let mut tools: Vec<&str> = cases.iter().map(|(tool, ..)| *tool).collect();
    for (tool, args, field, suggestion) in cases {
        let error = server.call_err(tool, args, -32602);
        let expect = format!(
            "invalid params: `{field}` is not a known argument; did you mean `{suggestion}`?"
        );
        assert_eq!(error.message, expect, "{tool}");
        assert_eq!(before.diff(&env.snapshot()), "", "{tool} changed files");
    }
    let error = server.call_err("list_allowed_directories", json!({"verbose": true}), -32602);
    assert_eq!(error.message, "invalid params: `verbose` is not a known argument; this takes none");
    tools.push("list_allowed_directories");
    tools.sort();
    let mut all = crate::harness::ALL_TOOLS.to_vec();
    all.sort();
    assert_eq!(tools, all, "every tool has a row");
}

/// With nothing near, the error lists the names that are known there.
#[test]
fn an_unknown_argument_with_no_near_name_lists_the_known_ones() {
    let env = TestEnv::new(&[], &[("root/a.txt", "alpha\n")]);
    let mut server = Server::start(&env);
    let error = server.call_err(
        "delete_file",
        json!({"path": env.p("root/a.txt"), "recursive": true}),
        -32602,
    );
    assert_eq!(
        error.message,
        "invalid params: `recursive` is not a known argument; known here: path"
    );
    assert!(env.exists("root/a.txt"));
}

/// search_files advertises `directory` and `nameContains` as required, as the contract says,
/// and still takes the official server's names for them without advertising them.
#[test]
fn search_files_requires_directory_and_name_contains_and_maps_the_legacy_names() {
    let env = TestEnv::new(&["root/d"], &[("root/d/needle.txt", "")]);
    let mut server = Server::start(&env);
    let tools = server.request("tools/list", json!({})).result()["tools"].clone();
    let search = tools.as_array().unwrap().iter().find(|t| t["name"] == "search_files").unwrap();
    assert_eq!(search["inputSchema"]["required"], json!(["directory", "nameContains"]));
    let d = env.p("root/d");
    let error = server.call_err("search_files", json!({"directory": d}), -32602);
    assert_eq!(error.message, "invalid params: `nameContains` is required");
    let error = server.call_err("search_files", json!({"nameContains": "x"}), -32602);
    assert_eq!(error.message, "invalid params: `directory` is required");
    let found = server.call_text("search_files", json!({"path": d, "pattern": "NEEDLE"}));
    assert_eq!(found, env.p("root/d/needle.txt"));
}
