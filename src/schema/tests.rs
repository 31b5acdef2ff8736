//! Schemas, tools and the schemas/ directory agree; every schema compiles.

use serde_json::json;

use super::*;

#[test]
fn every_schema_file_is_embedded_and_every_embedded_schema_has_a_file() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/schemas");
    let mut on_disk: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .map(|n| n.trim_end_matches(".json").to_string())
        .collect();
    on_disk.sort();
    let mut embedded: Vec<String> = Tool::ALL.iter().map(|t| t.name().to_string()).collect();
    embedded.sort();
    assert_eq!(on_disk, embedded);
}

#[test]
fn every_schema_compiles_and_names_its_tool() {
    for def in definitions() {
        assert_eq!(def.definition["name"], def.name, "{}: name field", def.name);
        assert!(def.definition["description"].is_string(), "{}: description", def.name);
        assert!(def.definition["title"].is_string(), "{}: title", def.name);
        assert!(def.definition["annotations"].is_object(), "{}: annotations", def.name);
        assert_eq!(def.input_schema()["type"], "object", "{}: inputSchema type", def.name);
        if let Err(e) = def.validator() {
            panic!("{}: schema does not compile: {e}", def.name);
        }
    }
}

#[track_caller]
fn check(tool: &str, args: serde_json::Value, expect: &str) {
    let got = match find(tool).unwrap().validate(&args) {
        Ok(()) => "ok".to_string(),
        Err(e) => e.to_string(),
    };
    assert!(got.starts_with(expect), "got {got:?}, expected it to start with {expect:?}");
}

#[test]
fn validation_names_the_field() {
    check("read_file", json!({"path": "/a"}), "ok");
    check("read_file", json!({}), "invalid params: `path` is required");
    check("read_file", json!({"path": 3}), "invalid params: `path` ");
    check("read_multiple_files", json!({"paths": ["/a", 1]}), "invalid params: `paths[1]` ");
    check("directory_tree", json!({"path": "/a", "depth": -1}), "invalid params: `depth` ");
    check("read_file", json!([]), "invalid params: `arguments` ");
}

#[test]
fn field_names() {
    assert_eq!(field_name(""), "");
    assert_eq!(field_name("/path"), "path");
    assert_eq!(field_name("/edits/0/oldText"), "edits[0].oldText");
}

/// Every tool has a title and its hints; only the command tools reach beyond the allowed
/// directories (openWorldHint), and a tool is read-only exactly when it changes nothing. A
/// read-only tool has no destructiveHint or idempotentHint, which the MCP specification defines
/// only for tools that change something (replay v2.2's classes).
#[test]
fn every_tool_has_a_title_and_honest_hints() {
    for def in definitions() {
        let d = &def.definition;
        assert!(d["title"].as_str().is_some_and(|t| !t.is_empty()), "{}: title", def.name);
        let hints = &d["annotations"];
        let reads_only = hints["readOnlyHint"] == true;
        let names: &[&str] = if reads_only {
            &["readOnlyHint", "openWorldHint"]
        } else {
            &["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"]
        };
        let keys: Vec<&str> =
            hints.as_object().map(|m| m.keys().map(String::as_str).collect()).unwrap_or_default();
        assert_eq!(keys.len(), names.len(), "{}: {hints}", def.name);
        for hint in names {
            assert!(hints[hint].is_boolean(), "{}: {hint}", def.name);
        }
        let open = matches!(def.name, "execute_command" | "command_session");
        assert_eq!(hints["openWorldHint"] == true, open, "{}", def.name);
        let read_only_tool = def.name.starts_with("read_")
            || def.name.starts_with("list_")
            || ["directory_tree", "get_file_info", "search_files", "glob_search", "grep_files"]
                .contains(&def.name);
        assert_eq!(reads_only, read_only_tool, "{}: readOnlyHint", def.name);
        // Writing the same bytes, deleting a deleted path and making a made directory land on
        // the same state.
        let idempotent = ["write_file", "delete_file", "create_directory"].contains(&def.name);
        if !read_only_tool {
            assert_eq!(hints["idempotentHint"] == true, idempotent, "{}", def.name);
        }
    }
}

#[test]
fn unknown_arguments_are_refused_with_the_nearest_name() {
    check(
        "edit_file",
        json!({"path": "/a", "edits": [{"oldText": "x"}], "dry_run": true}),
        "invalid params: `dry_run` is not a known argument; did you mean `dryRun`?",
    );
    check(
        "read_file",
        json!({"path": "/a", "offest": 5}),
        "invalid params: `offest` is not a known argument; did you mean `offset`?",
    );
    check(
        "edit_file",
        json!({"path": "/a", "edits": [{"oldText": "x"}, {"oldText": "y", "new_text": ""}]}),
        "invalid params: `edits[1].new_text` is not a known argument; did you mean `newText`?",
    );
    check(
        "edit_files",
        json!({"paths": ["/a"], "edits": [{"old_text": "x"}]}),
        "invalid params: `edits[0].old_text` is not a known argument; did you mean `oldText`?",
    );
    // Misspelling a required name says so, rather than that the name is missing.
    check(
        "read_file",
        json!({"pth": "/a"}),
        "invalid params: `pth` is not a known argument; did you mean `path`?",
    );
    check(
        "grep_files",
        json!({"regex": "x", "Directory": "/a"}),
        "invalid params: `Directory` is not a known argument; did you mean `directory`?",
    );
    check("read_file", json!({"path": "/a", "recursive": true}),
        "invalid params: `recursive` is not a known argument; known here: head, limit, lineNumbers, offset, path, tail");
    check(
        "list_allowed_directories",
        json!({"x": 1}),
        "invalid params: `x` is not a known argument; this takes none",
    );
    // search_files' legacy names are mapped before validation (`table::Spec::aliases`), so here,
    // alone, they are unknown.
    check("search_files", json!({"directory": "/a", "nameContains": "x"}), "ok");
    check("search_files", json!({"directory": "/a"}), "invalid params: `nameContains` is required");
}

#[test]
fn every_input_object_is_closed() {
    fn walk(tool: &str, at: &str, schema: &Value) {
        if schema.get("type") == Some(&json!("object")) {
            assert_eq!(schema["additionalProperties"], false, "{tool}{at}: additionalProperties");
        }
        if let Some(props) = schema.get("properties").and_then(Value::as_object) {
            for (name, sub) in props {
                walk(tool, &format!("{at}.{name}"), sub);
            }
        }
        if let Some(items) = schema.get("items") {
            walk(tool, &format!("{at}[]"), items);
        }
    }
    for def in definitions() {
        walk(def.name, "", def.input_schema());
    }
}

#[test]
fn nearest_names() {
    let known = ["path", "offset", "limit", "head", "tail", "lineNumbers"];
    let cases = [
        ("offest", Some("offset")),
        ("ofset", Some("offset")),
        ("line_numbers", Some("lineNumbers")),
        ("LINENUMBERS", Some("lineNumbers")),
        ("lines", None),
        ("paths", Some("path")),
        ("x", None),
        ("heads", Some("head")),
        ("recursive", None),
        ("", None),
        ("numbers", Some("lineNumbers")),
        ("line", Some("lineNumbers")),
        ("lin", None),
    ];
    for (key, expect) in cases {
        assert_eq!(nearest(key, &known), expect, "{key}");
    }
    let edit = ["oldText", "newText", "limit", "isRegex", "caseInsensitive"];
    assert_eq!(nearest("regex", &edit), Some("isRegex"));
    assert_eq!(nearest("insensitive", &edit), Some("caseInsensitive"));
    assert_eq!(nearest("text", &edit), None, "ends two names: no one suggestion");
}

#[test]
fn schema_errors_do_not_quote_the_value() {
    let big = "x".repeat(100_000);
    check(
        "read_multiple_files",
        json!({"paths": {"a": big}}),
        "invalid params: `paths` must be an array, not an object",
    );
    check(
        "read_file",
        json!({"path": "/a", "offset": 0}),
        "invalid params: `offset` must be at least 1",
    );
    check(
        "read_file",
        json!({"path": "/a", "offset": "3"}),
        "invalid params: `offset` must be an integer, not a string",
    );
    let paths: Vec<String> = (0..51).map(|i| format!("/{i}")).collect();
    check(
        "read_multiple_files",
        json!({ "paths": paths }),
        "invalid params: `paths` takes at most 50 items",
    );
    check(
        "directory_tree",
        json!({"path": "/a", "format": "xml"}),
        "invalid params: `format` must be one of [\"json\",\"text\"]",
    );
}

/// The most the default tool list may cost a model, in o200k_base tokens. See: issue #15
/// (7,268 tokens before; the official filesystem server's 14 tools take 1,665).
const TOKEN_BUDGET: usize = 2_800;

/// What a host puts in the model's context for each tool, as `../shared/tools/count-tokens`
/// counts it: the JSON of `{name, description, input_schema}` in that key order.
fn visible(def: &ToolDef) -> String {
    let field = |v: &Value| serde_json::to_string(v).expect("JSON");
    format!(
        r#"{{"name":{},"description":{},"input_schema":{}}}"#,
        field(&def.definition["name"]),
        field(&def.definition["description"]),
        field(def.input_schema())
    )
}

/// Every agent session pays for the tool list before its first call. Counted as count-tokens
/// counts it (the list as one JSON array), with the same tokenizer: tiktoken-rs ships the o200k
/// ranks, and counted 7,371 on the list count-tokens counted 7,371 (b7b9d93's schemas).
#[test]
fn the_tool_list_fits_the_token_budget() {
    let bpe = tiktoken_rs::o200k_base().expect("o200k_base ships with tiktoken-rs");
    let tools: Vec<String> = definitions().iter().map(visible).collect();
    let total = bpe.encode_ordinary(&format!("[{}]", tools.join(","))).len();
    let table: Vec<String> = definitions()
        .iter()
        .zip(&tools)
        .map(|(def, text)| format!("{:<26}{:>5}", def.name, bpe.encode_ordinary(text).len()))
        .collect();
    assert!(
        total <= TOKEN_BUDGET,
        "the tool list costs {total} tokens, over the budget of {TOKEN_BUDGET}:\n{}",
        table.join("\n")
    );
}
