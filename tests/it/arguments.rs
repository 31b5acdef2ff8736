//! Arguments: validation stops at the first error in bounded memory, and names the field.

use std::time::Duration;

use serde_json::{json, Value};

use crate::harness::{Server, TestEnv};

/// The most a request's line may cost above the server's resident set before it, as a multiple
/// of the line's length. Parsing dominates: a `serde_json::Value` is 32 bytes for every `0,`
/// (2 bytes of line, so 16x), and an object with two short fields takes a B-tree node and its
/// strings, about 740 bytes for 30 bytes of line (25x). Validating and deserializing must add
/// nothing in proportion: before validation stopped at its first error, it cost 190x.
const PEAK_PER_LINE_BYTE: u64 = 32;

/// Sends `line` as-is and returns the reply, asserting the server's peak RSS stayed within
/// `PEAK_PER_LINE_BYTE` times the line of what it was before.
#[track_caller]
fn send_measured(server: &mut Server, line: &str) -> Value {
    let before_kib = server.peak_rss_kib();
    server.send_raw(line);
    // A debug build takes seconds to parse 20 MB of JSON.
    let reply = serde_json::from_str(&server.next_line_within(Duration::from_secs(120)))
        .expect("checked by next_line_within");
    let peak_kib = server.peak_rss_kib();
    let line_kib = line.len() as u64 / 1024;
    let grew = peak_kib.saturating_sub(before_kib);
    assert!(
        grew < PEAK_PER_LINE_BYTE * line_kib,
        "a {line_kib} KiB line grew the peak RSS by {grew} KiB ({:.1}x the line)",
        grew as f64 / line_kib as f64
    );
    reply
}

/// See: issue #13, item 2. A 20 MB line of `"globs": [0,0,…]` made validation build an error
/// for each element, 190 bytes per byte of line (3.8 GB); validation now stops at the first.
#[test]
fn r13_a_huge_invalid_array_is_refused_at_its_first_element_in_bounded_memory() {
    let env = TestEnv::new(&["root"], &[]);
    let mut server = Server::start(&env);
    let zeros = vec!["0"; 10_000_000].join(",");
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"grep_files","arguments":{{"regex":"x","directory":{dir},"globs":[{zeros}]}}}}}}"#,
        dir = json!(env.p("root")),
    );
    let reply = send_measured(&mut server, &line);
    assert_eq!(reply["id"], 7, "{reply}");
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    let message = reply["error"]["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("invalid params: `globs[0]` "), "{message}");
    assert!(message.len() < 200, "{message}");
}

/// A valid request as big (a million edits, the first of which misses) costs what parsing it
/// costs, and gets the tool's answer.
#[test]
fn r13_a_huge_valid_request_is_served_in_bounded_memory() {
    let env = TestEnv::new(&["root"], &[("root/a.txt", "hello\n")]);
    let mut server = Server::start(&env);
    let edits = vec![r#"{"oldText":"zz","newText":""}"#; 700_000].join(",");
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{{"name":"edit_file","arguments":{{"path":{path},"edits":[{edits}]}}}}}}"#,
        path = json!(env.p("root/a.txt")),
    );
    let reply = send_measured(&mut server, &line);
    assert_eq!(reply["error"]["code"], -32603, "{reply}");
    assert_eq!(env.read_string("root/a.txt"), "hello\n");
}

/// Issue #15: every tool refuses an argument its schema does not name, with -32602, naming the
/// argument and the nearest known name, at any depth, before anything is read or written.
/// `dry_run` on edit_file used to be dropped, and the edit written.
#[test]
fn r15_a_misspelled_argument_is_refused_with_a_suggestion_and_nothing_changes() {
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
fn r15_an_unknown_argument_with_no_near_name_lists_the_known_ones() {
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
fn r15_search_files_requires_directory_and_name_contains_and_maps_the_legacy_names() {
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
