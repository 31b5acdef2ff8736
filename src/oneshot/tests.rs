//! The one-shot renderings: first sentences, a result's text, and the answer for each outcome.

use serde_json::json;

use super::*;

#[track_caller]
fn check_sentence(text: &str, expect: &str) {
    assert_eq!(first_sentence(text), expect);
}

#[test]
fn first_sentences() {
    check_sentence("One. Two.", "One.");
    check_sentence("Only one.", "Only one.");
    check_sentence("No period", "No period");
    check_sentence(
        "Create it (mkdir -p semantics). If it exists",
        "Create it (mkdir -p semantics).",
    );
    check_sentence("Read a.txt or b.md. Then", "Read a.txt or b.md.");
    check_sentence("Ends.\nNext line", "Ends.");
    check_sentence("", "");
}

#[test]
fn every_tool_has_a_one_line_summary() {
    let names = crate::selection::tool_names();
    let summary = tools_summary(&names);
    assert_eq!(summary.lines().count(), names.len(), "{summary}");
    for (line, name) in summary.lines().zip(&names) {
        assert!(line.starts_with(name), "{line}");
        assert!(line.ends_with('.'), "not a sentence: {line}");
        assert!(line.len() < 260, "too long for one line: {line}");
    }
}

#[track_caller]
fn check_text(content: Vec<Content>, expect: &str) {
    assert_eq!(text_of(&content), expect);
}

fn text(text: &str) -> Content {
    Content::Text(text.to_string())
}

#[test]
fn result_texts() {
    check_text(vec![text("a")], "a\n");
    check_text(vec![text("a\n")], "a\n");
    check_text(vec![text("out"), text("[stderr]\nerr")], "out\n[stderr]\nerr\n");
    check_text(
        vec![Content::Image { data: "aGk=".to_string(), mime_type: "image/png" }],
        "[image image/png, 2 bytes: --json gives its data as base64]\n",
    );
    check_text(
        vec![Content::Blob {
            uri: "file:///x".to_string(),
            data: "AAAA".to_string(),
            mime_type: "application/zip",
        }],
        "[resource application/zip, 3 bytes: --json gives its data as base64]\n",
    );
    check_text(vec![], "");
}

#[test]
fn schema_text_is_the_input_schema() {
    for name in crate::selection::tool_names() {
        let text = schema_text(name).unwrap();
        let parsed: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(&parsed, schema::find(name).unwrap().input_schema(), "{name}");
    }
    assert_eq!(schema_text("cat"), None);
}

fn request(tool: &str, args: serde_json::Value, json: bool) -> Request {
    Request { tool: tool.to_string(), args, json }
}

#[test]
fn answers() {
    let policy = Policy::default();
    let settings = Settings::default();
    // No directory is allowed: every path is refused, before the filesystem is asked.
    let denied = call(
        &policy,
        &settings,
        &Cancel::default(),
        request("read_file", json!({"path": "/etc/hostname"}), false),
    );
    assert_eq!(denied.status, 1);
    assert_eq!(denied.stdout, "");
    assert!(denied.stderr.starts_with("replay: error -32001: "), "{}", denied.stderr);
    let denied = call(
        &policy,
        &settings,
        &Cancel::default(),
        request("read_file", json!({"path": "/etc/hostname"}), true),
    );
    let result: serde_json::Value = serde_json::from_str(&denied.stdout).unwrap();
    assert_eq!(result["isError"], true);
    assert_eq!(result["structuredContent"]["error"]["code"], -32001);
    let invalid = call(
        &policy,
        &settings,
        &Cancel::default(),
        request("read_file", json!({"path": 3}), false),
    );
    assert_eq!(invalid.status, 1);
    assert!(
        invalid.stderr.starts_with("replay: error -32602: invalid params: `path`"),
        "{}",
        invalid.stderr
    );
    let listed = call(
        &policy,
        &settings,
        &Cancel::default(),
        request("list_allowed_directories", json!({}), true),
    );
    assert_eq!(listed.status, 0, "{listed:?}");
    let result: serde_json::Value = serde_json::from_str(&listed.stdout).unwrap();
    assert!(result["structuredContent"].is_object(), "{result}");
}
