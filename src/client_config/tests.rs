//! print-config's renderings: shell quoting, and JSON that parses with `command` first.

use super::*;

#[track_caller]
fn check(word: &str, expect: &str) {
    assert_eq!(quote_shell(word), expect);
}

#[test]
fn shell_words() {
    check("/usr/bin/replay", "/usr/bin/replay");
    check("/p:rw", "/p:rw");
    check("read_file,grep_files", "read_file,grep_files");
    check("", "''");
    check("/my project:rw", "'/my project:rw'");
    check("it's", r"'it'\''s'");
    check("$HOME", "'$HOME'");
    check("a;b", "'a;b'");
}

#[test]
fn json_entries_parse_and_keep_command_first() {
    let args = vec!["--mcp-server".to_string(), "--allow".into(), "/p \"q\":rw".into()];
    for client in [Client::ClaudeDesktop, Client::Cursor, Client::Vscode, Client::ClaudeCode] {
        let text = render(client, true, "/bin/re play", &args);
        let value: serde_json::Value = serde_json::from_str(&text).expect(&text);
        let key = if client == Client::Vscode { "servers" } else { "mcpServers" };
        let entry = &value[key][NAME];
        assert_eq!(entry["command"], "/bin/re play", "{text}");
        assert_eq!(entry["args"], serde_json::json!(args), "{text}");
        assert!(text.find("\"command\"") < text.find("\"args\""), "{text}");
    }
}

#[test]
fn claude_code_line() {
    let args = vec!["--mcp-server".to_string(), "--allow".into(), "/my p:ro".into()];
    assert_eq!(
        render(Client::ClaudeCode, false, "/bin/replay", &args),
        "claude mcp add --transport stdio --scope project replay -- /bin/replay --mcp-server --allow '/my p:ro'\n"
    );
}
