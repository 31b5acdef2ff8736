//! Structured output: the eight tools with an `outputSchema` (replay v2.2's eight) answer with
//! `structuredContent` that the schema served by `tools/list` accepts, and that says what the
//! text says. read_file and command_session send `structuredContent` without declaring one, as
//! v2.2's suite wants exactly those eight declared.
//!
//! Each test reads the text as the contract spells it and checks the data against it: the same
//! paths, counts, lines and exit codes. `Data::call` validates every result it returns.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::harness::{key_values, path_str, Response, Server, TestEnv};

/// The tools that declare an `outputSchema`; the others declare none.
const TOOLS: [&str; 8] = [
    "get_file_info",
    "list_directory",
    "directory_tree",
    "list_allowed_directories",
    "search_files",
    "glob_search",
    "grep_files",
    "execute_command",
];

/// A server and the output schemas its `tools/list` serves.
struct Data {
    server: Server,
    schemas: BTreeMap<String, Value>,
}

/// One call's reply: its text items, `isError`, and `structuredContent`.
struct Reply {
    texts: Vec<String>,
    is_error: bool,
    data: Value,
}

impl Reply {
    fn text(&self) -> &str {
        assert_eq!(self.texts.len(), 1, "expected one text item: {:?}", self.texts);
        &self.texts[0]
    }
}

impl Data {
    fn start(env: &TestEnv) -> Data {
        Data::with(Server::start(env))
    }

    fn with(mut server: Server) -> Data {
        let list = server.request("tools/list", json!({}));
        let tools = list.result()["tools"].as_array().expect("tools array").clone();
        let schemas = tools
            .iter()
            .filter_map(|tool| {
                let schema = tool.get("outputSchema")?;
                Some((tool["name"].as_str().expect("name").to_owned(), schema.clone()))
            })
            .collect();
        Data { server, schemas }
    }

    /// Calls `tool`; the result must carry `structuredContent` that its output schema, if it
    /// declares one, accepts.
    #[track_caller]
    fn call(&mut self, tool: &str, args: Value) -> Reply {
        let response = self.server.call(tool, args.clone());
        let schema = self.schemas.get(tool).cloned().unwrap_or_else(|| json!({}));
        reply_of(&response, tool, &schema, &args)
    }
}

#[track_caller]
fn reply_of(response: &Response, tool: &str, schema: &Value, args: &Value) -> Reply {
    let result = response.result();
    let data = match result.get("structuredContent") {
        Some(data) => data.clone(),
        None => panic!("{tool} {args}: no structuredContent in {}", response.line),
    };
    assert_valid(schema, &data, &format!("{tool} {args}"));
    let is_error = result.get("isError") == Some(&json!(true));
    // A search's resource_link items read as the contract's text (`Response::texts`, which
    // takes successful results only).
    let texts = if is_error {
        let items = result["content"].as_array().expect("content array");
        items.iter().map(|item| item["text"].as_str().expect("text content").to_owned()).collect()
    } else {
        response.texts()
    };
    Reply { texts, is_error, data }
}

#[track_caller]
fn assert_valid(schema: &Value, data: &Value, what: &str) {
    let validator = jsonschema::validator_for(schema)
        .unwrap_or_else(|e| panic!("{what}: the output schema does not compile: {e}"));
    let errors: Vec<String> = validator
        .iter_errors(data)
        .map(|e| format!("{e} (at {})", e.instance_path().as_str()))
        .collect();
    assert!(errors.is_empty(), "{what}: structuredContent {data} breaks the schema: {errors:#?}");
}

const A_TXT: &str = "alpha\nneedle one\nbeta\ngamma\ndelta\nneedle two\n";

/// The tree the tests look at: two matching files, a symlink, an empty directory.
fn env() -> TestEnv {
    let env = TestEnv::new(
        &["root/empty"],
        &[
            ("root/a.txt", A_TXT),
            ("root/sub/b.txt", "needle three\nzeta\n"),
            ("root/sub/c.md", "nothing here\n"),
        ],
    );
    env.symlink("a.txt", "root/link");
    env
}

fn strings(value: &Value) -> Vec<&str> {
    value.as_array().expect("array").iter().map(|v| v.as_str().expect("string")).collect()
}

#[test]
fn output_schemas_are_served_as_the_files_declare_them() {
    let env = TestEnv::new(&[], &[]);
    let data = Data::start(&env);
    let served: Vec<&str> = data.schemas.keys().map(String::as_str).collect();
    let mut expected = TOOLS.to_vec();
    expected.sort_unstable();
    assert_eq!(served, expected, "the tools with an outputSchema");
    for (name, schema) in &data.schemas {
        let file = format!("{}/schemas/{name}.json", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{file}: {e}"));
        let definition: Value = serde_json::from_str(&text).expect("schema file parses");
        assert_eq!(schema, &definition["outputSchema"], "{name}: served as in {file}");
        assert_eq!(schema["type"], "object", "{name}: root type");
        assert!(schema["properties"].is_object(), "{name}: properties");
        assert!(schema["required"].is_array(), "{name}: required");
        jsonschema::validator_for(schema)
            .unwrap_or_else(|e| panic!("{name}: outputSchema does not compile: {e}"));
    }
}

/// read_file's data names the encoding its text came in, as its note does (plain UTF-8 has no
/// note), and a whole file's sha256.
#[test]
fn read_file_data_is_the_encoding() {
    let env = env();
    env.write("root/w.txt", b"\xFF\xFEh\x00i\x00");
    let mut data = Data::start(&env);
    let plain = data.call("read_file", json!({"path": env.p("root/a.txt")}));
    assert_eq!(plain.text(), A_TXT);
    assert_eq!(plain.data["encoding"], "UTF-8");
    assert_eq!(plain.data["sha256"].as_str().map(str::len), Some(64));
    let page = data.call("read_file", json!({"path": env.p("root/a.txt"), "head": 1}));
    assert_eq!(page.data, json!({"encoding": "UTF-8"}));
    let wide = data.call("read_file", json!({"path": env.p("root/w.txt")}));
    assert_eq!(wide.texts, ["hi", "[encoding: UTF-16LE with BOM; edits keep it]"]);
    assert_eq!((&wide.data["encoding"], &wide.data["bom"]), (&json!("UTF-16LE"), &json!(true)));
    assert_eq!(wide.data["sha256"].as_str().map(str::len), Some(64));
}

#[test]
fn get_file_info_data_is_the_text_lines() {
    let env = env();
    env.set_mode("root/a.txt", 0o640);
    let mut data = Data::start(&env);
    for (rel, kind) in [("root/a.txt", "file"), ("root/sub", "directory"), ("root/link", "file")] {
        let reply = data.call("get_file_info", json!({"path": env.p(rel)}));
        let lines = key_values(reply.text());
        let d = &reply.data;
        assert_eq!(d["path"], env.p(rel), "{rel}");
        assert_eq!(d["type"], kind, "{rel}");
        assert_eq!(d["type"], lines["type"].as_str(), "{rel}");
        assert_eq!(d["size"].to_string(), lines["size"], "{rel}");
        assert_eq!(d["modified"], lines["modified"].as_str(), "{rel}");
        assert_eq!(d["permissions"], lines["permissions"].as_str(), "{rel}");
    }
    let reply = data.call("get_file_info", json!({"path": env.p("root/a.txt")}));
    assert_eq!(reply.data["size"], A_TXT.len());
    assert_eq!(reply.data["permissions"], "640");
}

#[test]
fn list_directory_data_is_the_text_entries() {
    let env = env();
    let mut data = Data::start(&env);
    let reply = data.call("list_directory", json!({"path": env.p("root")}));
    assert_eq!(
        reply.text(),
        "[FILE] a.txt\n[DIR]  empty\n[LINK] link\n[DIR]  sub",
        "the text is the contract's"
    );
    assert_eq!(
        reply.data,
        json!({"path": env.p("root"), "entries": [
            {"name": "a.txt", "type": "file"},
            {"name": "empty", "type": "directory"},
            {"name": "link", "type": "symlink"},
            {"name": "sub", "type": "directory"},
        ]})
    );
    // Every text line is its entry, tag and name.
    let tags = |kind: &str| match kind {
        "file" => "[FILE] ",
        "directory" => "[DIR]  ",
        _ => "[LINK] ",
    };
    let rebuilt: Vec<String> = reply.data["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| format!("{}{}", tags(e["type"].as_str().unwrap()), e["name"].as_str().unwrap()))
        .collect();
    assert_eq!(rebuilt.join("\n"), reply.text());

    let empty = data.call("list_directory", json!({"path": env.p("root/empty")}));
    assert_eq!(empty.text(), "(empty directory)");
    assert_eq!(empty.data, json!({"path": env.p("root/empty"), "entries": []}));
}

#[test]
fn directory_tree_data_is_the_text_json() {
    let env = env();
    let mut data = Data::start(&env);
    for depth in [None, Some(0), Some(1), Some(2)] {
        let mut args = json!({"path": env.p("root")});
        if let Some(depth) = depth {
            args["depth"] = json!(depth);
        }
        let reply = data.call("directory_tree", args);
        let text: Value = serde_json::from_str(reply.text()).expect("the text is JSON");
        assert_eq!(reply.data, json!({ "tree": text }), "depth {depth:?}");
    }
    let reply = data.call("directory_tree", json!({"path": env.p("root"), "depth": 1}));
    assert_eq!(
        reply.data["tree"],
        json!({"name": "root", "type": "directory", "children": [
            {"name": "a.txt", "type": "file"},
            {"name": "empty", "type": "directory", "children": [], "truncated": true},
            {"name": "link", "type": "symlink"},
            {"name": "sub", "type": "directory", "children": [], "truncated": true},
        ]})
    );
}

#[test]
fn list_allowed_directories_data_is_the_text_lines() {
    let env = TestEnv::new(&["ro"], &[]);
    let rw = format!("{}:rw", env.p("root"));
    let ro = format!("{}:ro", env.p("ro"));
    let mut data = Data::with(Server::start_with(["--mcp-server", "--allow", &rw, "--allow", &ro]));
    let reply = data.call("list_allowed_directories", json!({}));
    assert_eq!(
        reply.data["directories"],
        json!([{"path": env.p("root"), "writable": true}, {"path": env.p("ro"), "writable": false}])
    );
    // The text: a line per directory, then the sandbox note when there is one.
    let text = reply.text();
    let mut lines = text.lines();
    for dir in reply.data["directories"].as_array().unwrap() {
        let access = if dir["writable"] == true { "read-write" } else { "read-only" };
        let line = format!("{} ({access})", dir["path"].as_str().unwrap());
        assert_eq!(lines.next(), Some(line.as_str()), "{text}");
    }
    assert_eq!(lines.next(), reply.data["sandboxNote"].as_str(), "{text}");
    assert_eq!(lines.next(), None, "{text}");

    let mut data = Data::with(Server::start_with(["--mcp-server", "--no-sandbox"]));
    let reply = data.call("list_allowed_directories", json!({}));
    assert_eq!(reply.data["directories"], json!([]));
    let note = reply.data["sandboxNote"].as_str().expect("a note without the sandbox");
    assert_eq!(reply.text(), format!("(no allowed directories)\n{note}"));
}

#[test]
fn search_files_data_is_the_text_paths() {
    let env = env();
    let mut data = Data::start(&env);
    let reply = data.call("search_files", json!({"directory": env.p("root"), "nameContains": "B"}));
    assert_eq!(strings(&reply.data["matches"]), [env.p("root/sub"), env.p("root/sub/b.txt")]);
    assert_eq!(strings(&reply.data["matches"]).join("\n"), reply.text());

    let none = data.call("search_files", json!({"directory": env.p("root"), "nameContains": "zz"}));
    assert_eq!(none.text(), "(no matches found)");
    assert_eq!(none.data, json!({"matches": [], "count": 0}));
}

#[test]
fn glob_search_data_is_the_text_paths() {
    let env = env();
    let mut data = Data::start(&env);
    let args = json!({"directory": env.p("root"), "globs": ["**/*.txt", "**/*.md"]});
    let reply = data.call("glob_search", args);
    let files = [env.p("root/a.txt"), env.p("root/sub/b.txt"), env.p("root/sub/c.md")];
    assert_eq!(reply.data, json!({"matches": files, "count": 3, "truncated": false}));
    assert_eq!(files.join("\n"), reply.text());

    let args = json!({"directory": env.p("root"), "globs": ["**/*.txt"], "max": 1});
    let cut = data.call("glob_search", args);
    assert_eq!(cut.data, json!({"matches": [env.p("root/a.txt")], "count": 1, "truncated": true}));
    assert!(cut.text().starts_with(&format!("{}\n[results truncated", env.p("root/a.txt"))));

    let args = json!({"directory": env.p("root"), "globs": ["*.rs"]});
    let none = data.call("glob_search", args);
    assert_eq!(none.text(), "(no matches found)");
    assert_eq!(none.data, json!({"matches": [], "count": 0, "truncated": false}));
}

/// The text's match and context lines, rebuilt from the data in file order, line order.
fn grep_lines(data: &Value) -> Vec<String> {
    let mut lines: Vec<(String, u64, String)> = Vec::new();
    {
        for item in data.get("matches").and_then(Value::as_array).into_iter().flatten() {
            let sep = if item["isMatch"] == true { ':' } else { '-' };
            let path = item["path"].as_str().unwrap().to_owned();
            let n = item["line"].as_u64().unwrap();
            lines.push((
                path.clone(),
                n,
                format!("{path}{sep}{n}{sep}{}", item["text"].as_str().unwrap()),
            ));
        }
    }
    // The test paths sort the same in depth-first and in string order.
    lines.sort();
    lines.into_iter().map(|(_, _, line)| line).collect()
}

#[test]
fn grep_content_data_is_the_text_lines() {
    let env = env();
    let (a, b) = (env.p("root/a.txt"), env.p("root/sub/b.txt"));
    let mut data = Data::start(&env);

    let reply = data.call("grep_files", json!({"regex": "needle", "directory": env.p("root")}));
    assert_eq!(
        reply.text(),
        format!("{a}:2:needle one\n{a}:6:needle two\n{b}:1:needle three\n[3 matches]")
    );
    assert_eq!(
        reply.data,
        json!({
            "matches": [
                {"path": a, "line": 2, "text": "needle one", "isMatch": true},
                {"path": a, "line": 6, "text": "needle two", "isMatch": true},
                {"path": b, "line": 1, "text": "needle three", "isMatch": true},
            ],
            "count": 3,
            "truncated": false,
            "skipped": 0,
        })
    );

    let args = json!({"regex": "needle", "directory": env.p("root"), "contextLines": 1});
    let reply = data.call("grep_files", args);
    let text_lines: Vec<&str> =
        reply.text().lines().filter(|l| *l != "--" && !l.starts_with('[')).collect();
    assert_eq!(grep_lines(&reply.data), text_lines);
    let lines = reply.data["matches"].as_array().unwrap();
    let context: Vec<&str> = lines
        .iter()
        .filter(|line| line["isMatch"] == false)
        .map(|line| line["text"].as_str().unwrap())
        .collect();
    assert_eq!(context, ["alpha", "beta", "delta", "zeta"]);
    assert_eq!(reply.data["count"], 3);
    assert!(reply.text().ends_with("\n[3 matches]"));

    let args =
        json!({"regex": "needle", "directory": env.p("root"), "maxResults": 2, "contextLines": 1});
    let cut = data.call("grep_files", args);
    assert!(cut.text().starts_with("[results truncated"), "{}", cut.text());
    assert!(cut.text().ends_with("\n[2 matches]"), "{}", cut.text());
    assert_eq!(cut.data["truncated"], true);
    assert_eq!(cut.data["count"], 2);
    let text_lines: Vec<&str> =
        cut.text().lines().filter(|l| *l != "--" && !l.starts_with('[')).collect();
    assert_eq!(grep_lines(&cut.data), text_lines);

    let none = data.call("grep_files", json!({"regex": "absent", "directory": env.p("root")}));
    assert_eq!(none.text(), "(no matches found)");
    assert_eq!(none.data["matches"], json!([]));
    assert_eq!(none.data, json!({"matches": [], "count": 0, "truncated": false, "skipped": 0}));
}

#[test]
fn grep_per_file_data_is_the_text_lines() {
    let env = env();
    let (a, b) = (env.p("root/a.txt"), env.p("root/sub/b.txt"));
    let mut data = Data::start(&env);

    let args =
        json!({"regex": "needle", "directory": env.p("root"), "outputMode": "files_with_matches"});
    let reply = data.call("grep_files", args);
    assert_eq!(reply.text(), format!("{a}\n{b}\n[2 files]"));
    assert_eq!(
        reply.data,
        json!({"mode": "files_with_matches", "files": [a, b], "count": 2, "truncated": false, "skipped": 0})
    );

    let args = json!({"regex": "needle", "directory": env.p("root"), "outputMode": "count"});
    let reply = data.call("grep_files", args);
    assert_eq!(reply.text(), format!("{a}:2\n{b}:1\n[3 matches in 2 files]"));
    assert_eq!(
        reply.data,
        json!({
            "mode": "count",
            "counts": [{"path": a, "count": 2}, {"path": b, "count": 1}],
            "count": 3,
            "truncated": false,
            "skipped": 0,
        })
    );

    let args = json!({"regex": "needle", "directory": env.p("root"), "outputMode": "count", "maxResults": 1});
    let cut = data.call("grep_files", args);
    assert!(cut.text().starts_with("[results truncated"), "{}", cut.text());
    assert_eq!(cut.data["counts"], json!([{"path": a, "count": 2}]));
    assert_eq!(cut.data["truncated"], true);
}

#[test]
fn grep_data_counts_skipped_globs() {
    let env = env();
    let mut data = Data::start(&env);
    let outside = format!("{}/*.txt", path_str(env.base()));
    let args =
        json!({"regex": "needle", "directory": env.p("root"), "globs": ["sub/*.txt", outside]});
    let reply = data.call("grep_files", args);
    assert!(
        reply.text().ends_with("\n[1 path(s) skipped: outside the allowed directories]"),
        "{}",
        reply.text()
    );
    assert_eq!(reply.data["skipped"], 1);
    assert_eq!(reply.data["matches"][0]["path"], env.p("root/sub/b.txt"));
}

/// The exit code the text's `[exit code: N]` shows: the data's, or 128 + its signal.
fn shown_code(data: &Value) -> i64 {
    match data["exitCode"].as_i64() {
        Some(code) => code,
        None => 128 + data["signal"].as_i64().expect("a signal when there is no exit code"),
    }
}

/// The text and the data of one execute_command reply say the same.
#[track_caller]
fn check_exec(reply: &Reply) {
    let d = &reply.data;
    let out = &reply.texts[0];
    assert!(out.ends_with(&format!("[exit code: {}]", shown_code(d))), "{out}");
    let stdout = d["stdout"].as_str().unwrap();
    if stdout.is_empty() {
        assert!(out.starts_with("(no output)\n"), "{out}");
    } else {
        assert!(out.starts_with(stdout), "{out}");
    }
    assert_eq!(
        d["stdoutBytes"].as_u64().unwrap() > 0,
        !stdout.is_empty() || d["stdoutTruncated"] == true
    );
    let stderr = d["stderr"].as_str().unwrap();
    if stderr.is_empty() {
        assert_eq!(reply.texts.len(), 1, "{:?}", reply.texts);
    } else {
        assert!(reply.texts[1].starts_with(&format!("[stderr]\n{stderr}")), "{:?}", reply.texts);
    }
    assert_eq!(reply.is_error, shown_code(d) != 0 || d["timedOut"] == true);
}

#[test]
fn execute_command_data_is_the_text() {
    let env = TestEnv::new(&[], &[]);
    let mut data = Data::start(&env);
    let mut run = |command: &str| {
        let reply = data.call("execute_command", json!({"command": command}));
        check_exec(&reply);
        reply
    };

    let ok = run("echo out; echo err >&2");
    assert_eq!(ok.texts, ["out\n[exit code: 0]", "[stderr]\nerr\n"]);
    assert!(!ok.is_error);
    assert_eq!(
        ok.data,
        json!({
            "exitCode": 0, "signal": null, "timedOut": false,
            "stdout": "out\n", "stderr": "err\n",
            "stdoutBytes": 4, "stderrBytes": 4,
            "stdoutTruncated": false, "stderrTruncated": false,
        })
    );

    let silent = run("true");
    assert_eq!(silent.texts, ["(no output)\n[exit code: 0]"]);
    assert_eq!(silent.data["stdout"], "");

    let failed = run("echo bad; exit 3");
    assert!(failed.is_error);
    assert_eq!(failed.texts, ["bad\n[exit code: 3]"]);
    assert_eq!(failed.data["exitCode"], 3);
    assert_eq!(failed.data["signal"], Value::Null);

    let killed = run("kill -9 $$");
    assert!(killed.is_error);
    assert_eq!(killed.texts, ["(no output)\n[exit code: 137]"]);
    assert_eq!(killed.data["exitCode"], Value::Null);
    assert_eq!(killed.data["signal"], 9);

    let long = run("yes x | head -c 600000");
    assert_eq!(long.data["stdoutBytes"], 600_000);
    assert_eq!(long.data["stdoutTruncated"], true);
    // The first 128 KB and the last 384 KB, with the note between them, as in the text.
    let note = "\n[stdout: 75712 bytes cut here, between the first 128 KB and the last 384 KB of 600000 bytes]\n";
    let stdout = long.data["stdout"].as_str().unwrap();
    assert_eq!(stdout.len(), 512 * 1024 + note.len());
    assert_eq!(stdout.find(note), Some(128 * 1024));
}

#[test]
fn execute_command_data_says_when_it_timed_out() {
    let env = TestEnv::new(&[], &[]);
    let mut data = Data::start(&env);
    let reply =
        data.call("execute_command", json!({"command": "echo started; sleep 10", "timeout": 1}));
    check_exec(&reply);
    assert!(reply.is_error);
    assert_eq!(reply.data["timedOut"], true);
    assert_eq!(reply.data["stdout"], "started\n");
    assert!(reply.texts[0].contains("[timed out after 1 s"), "{}", reply.texts[0]);
}

/// `tools/call` with a progress token: the `notifications/progress` params that came before
/// the response, and the response.
fn call_with_progress(server: &mut Server, tool: &str, args: Value) -> (Vec<Value>, Response) {
    let id = json!(format!("progress-{tool}"));
    server.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "_meta": {"progressToken": tool},
        "name": tool,
        "arguments": args,
    }}));
    let mut reports = Vec::new();
    loop {
        let message = server.next_message();
        if message.value.get("id") == Some(&id) {
            return (reports, message);
        }
        assert_eq!(message.value["method"], "notifications/progress", "{}", message.line);
        assert_eq!(message.value["params"]["progressToken"], tool, "{}", message.line);
        reports.push(message.value["params"].clone());
    }
}

#[track_caller]
fn assert_rising(reports: &[Value]) {
    let values: Vec<f64> = reports.iter().map(|r| r["progress"].as_f64().unwrap()).collect();
    assert!(values.windows(2).all(|w| w[0] < w[1]), "progress must rise: {values:?}");
}

#[test]
fn long_calls_report_progress() {
    let env = TestEnv::new(&[], &[]);
    for i in 0..40 {
        env.write(&format!("root/d{}/f{i}.txt", i % 4), "old\n");
    }
    let mut data = Data::start(&env);

    let args = json!({"command": "sleep 2.3; echo done", "timeout": 10});
    let (reports, response) = call_with_progress(&mut data.server, "execute_command", args.clone());
    let reply = reply_of(&response, "execute_command", &data.schemas["execute_command"], &args);
    assert_eq!(reply.data["stdout"], "done\n");
    assert!(reports.len() >= 2, "a report each second: {reports:?}");
    assert_rising(&reports);
    assert_eq!(reports[0]["progress"], 1);
    assert!(reports.iter().all(|r| r["total"] == 10), "{reports:?}");
    assert!(reports[0]["message"].as_str().unwrap().starts_with("running for 1 s"), "{reports:?}");

    let args = json!({"paths": [format!("{}/**/*.txt", env.p("root"))], "edits": [{"oldText": "old", "newText": "new"}]});
    let (reports, response) = call_with_progress(&mut data.server, "edit_files", args);
    assert_eq!(response.texts().len(), 40);
    assert!(!reports.is_empty(), "no progress from edit_files");
    assert_rising(&reports);
    assert!(reports.iter().all(|r| r["total"] == 40), "{reports:?}");
    assert_eq!(reports[0]["message"], "processed 1 of 40 files");
    assert_eq!(env.read_string("root/d0/f0.txt"), "new\n");

    let args = json!({"path": env.p("root")});
    let (reports, response) = call_with_progress(&mut data.server, "directory_tree", args.clone());
    reply_of(&response, "directory_tree", &data.schemas["directory_tree"], &args);
    assert!(!reports.is_empty(), "no progress from directory_tree");
    assert_eq!(reports[0]["message"], "walked 32 entries");
}

/// replay v2.2's answer to a search: from 2025-06-18 on, the paths and their count, then one
/// `resource_link` per path (its URI percent-encoded, its name the basename, a media type where
/// the name says one) in the order of `structuredContent.matches`; before, the paths one per
/// line, as the contract has them.
#[test]
fn searches_answer_with_a_resource_link_per_path_from_2025_06_18() {
    let env = TestEnv::new(&[], &[("root/a b#.swift", "x"), ("root/c.zzz", "x")]);
    let (ab, c) = (env.p("root/a b#.swift"), env.p("root/c.zzz"));
    let mut server = Server::start(&env);
    let args = json!({"directory": env.p("root"), "globs": ["*"]});
    let reply = server.call("glob_search", args.clone());
    let root = env.p("root");
    assert_eq!(
        reply.result()["content"],
        json!([
            {"type": "text", "text": format!("{ab}\n{c}\n[2 matches]")},
            {"type": "resource_link", "uri": format!("file://{root}/a%20b%23.swift"),
             "name": "a b#.swift", "mimeType": "text/x-swift"},
            {"type": "resource_link", "uri": format!("file://{root}/c.zzz"), "name": "c.zzz"},
        ])
    );
    assert_eq!(reply.result()["structuredContent"]["matches"], json!([ab, c]));
    let one = server.call("search_files", json!({"directory": env.p("root"), "nameContains": "C"}));
    assert_eq!(one.result()["content"][0]["text"], format!("{c}\n[1 match]"));
    assert_eq!(one.result()["content"][1]["name"], "c.zzz");

    let mut legacy = Server::spawn(["--mcp-server", "--allow", &root]);
    legacy.initialize("2024-11-05");
    let reply = legacy.call("glob_search", args);
    assert_eq!(reply.result()["content"], json!([{"type": "text", "text": format!("{ab}\n{c}")}]));
    assert!(reply.result().get("structuredContent").is_none(), "{}", reply.line);
}

/// A grep whose globs match no file says so, where one that searched files says it found no
/// match (replay v2.2's words); the data is the same empty result.
#[test]
fn a_grep_whose_globs_match_no_file_says_there_are_no_files_to_search() {
    let env = env();
    let mut data = Data::start(&env);
    let args = json!({"regex": "needle", "directory": env.p("root"), "globs": ["**/*.nosuch"]});
    let reply = data.call("grep_files", args);
    assert!(reply.text().starts_with("(no files to search: "), "{}", reply.text());
    assert_eq!(reply.data, json!({"matches": [], "count": 0, "truncated": false, "skipped": 0}));
    let args = json!({"regex": "absent", "directory": env.p("root"), "globs": ["**/*.txt"]});
    assert_eq!(data.call("grep_files", args).text(), "(no matches found)");
}
