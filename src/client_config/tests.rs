//! The pure cores: print-config's renderings (shell quoting, JSON that parses with `command`
//! first), the JSON, TOML and block-file edits install and uninstall make, and the default
//! paths.

use std::path::{Path, PathBuf};

use super::paths::{project_file, user_file, Dirs};
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

const JSON_CLIENTS: [(Client, &str); 9] = [
    (Client::ClaudeDesktop, "mcpServers"),
    (Client::Cursor, "mcpServers"),
    (Client::Vscode, "servers"),
    (Client::ClaudeCode, "mcpServers"),
    (Client::Windsurf, "mcpServers"),
    (Client::Cline, "mcpServers"),
    (Client::Gemini, "mcpServers"),
    (Client::Zed, "context_servers"),
    (Client::Opencode, "mcp"),
];

#[test]
fn json_entries_parse_and_keep_command_first() {
    let args = vec!["--mcp-server".to_string(), "--allow".into(), "/p \"q\":rw".into()];
    let launch = Launch::binary("/bin/re play", &args);
    for (client, key) in JSON_CLIENTS {
        let text = render(client, true, &launch);
        let value: serde_json::Value = serde_json::from_str(&text).expect(&text);
        let entry = &value[key][NAME];
        if client == Client::Opencode {
            let mut line = vec!["/bin/re play".to_string()];
            line.extend(args.iter().cloned());
            assert_eq!(entry["command"], serde_json::json!(line), "{text}");
            assert_eq!(entry["type"], "local", "{text}");
            assert_eq!(entry["enabled"], true, "{text}");
            continue;
        }
        assert_eq!(entry["command"], "/bin/re play", "{text}");
        assert_eq!(entry["args"], serde_json::json!(args), "{text}");
        assert!(text.find("\"command\"") < text.find("\"args\""), "{text}");
    }
}

#[test]
fn claude_code_line() {
    let args = vec!["--mcp-server".to_string(), "--allow".into(), "/my p:ro".into()];
    assert_eq!(
        render(Client::ClaudeCode, false, &Launch::binary("/bin/replay", &args)),
        "claude mcp add --transport stdio --scope project replay -- /bin/replay --mcp-server --allow '/my p:ro'\n"
    );
}

#[test]
fn npx_form() {
    let launch = Launch::npx(&["--mcp-server".to_string(), "/p:rw".into()]);
    assert_eq!(
        render(Client::Codex, false, &launch),
        "[mcp_servers.replay]\ncommand = \"npx\"\nargs = [\"-y\", \"replay-mcp\", \"--mcp-server\", \"/p:rw\"]\n"
    );
}

#[test]
fn continue_block_file() {
    let launch = Launch::binary("/bin/re\"play", &["--mcp-server".to_string(), "/a: b".into()]);
    assert_eq!(
        render(Client::Continue, false, &launch),
        "# Written by `replay install continue`; `replay uninstall continue` removes it.\n\
         name: \"replay\"\nversion: 0.0.1\nschema: v1\nmcpServers:\n  - name: \"replay\"\n    \
         command: \"/bin/re\\\"play\"\n    args:\n      - \"--mcp-server\"\n      - \"/a: b\"\n"
    );
}

// ---------------------------------------------------------------------------------------------
// The edits
// ---------------------------------------------------------------------------------------------

/// The entry the edit tables put in: `{"command": "/r", "args": ["-s"]}`.
fn small() -> Entry {
    entry(Client::Cursor, &Launch::binary("/r", &["-s".to_string()]))
}

/// What an edit gave, in a word and the text: `same`, `write: TEXT`, `replace: TEXT`,
/// `error: MESSAGE`.
fn shown(edit: Result<Edit, String>) -> String {
    match edit {
        Ok(Edit::Same) => "same".to_string(),
        Ok(Edit::Write(text)) => format!("write: {text}"),
        Ok(Edit::Replace(text)) => format!("replace: {text}"),
        Err(message) => format!("error: {message}"),
    }
}

#[track_caller]
fn check_json_put(input: &str, expect: &str) {
    assert_eq!(shown(json::put(input, "mcpServers", &small())), expect, "input: {input}");
}

#[test]
fn json_put() {
    let whole = "{\n  \"mcpServers\": {\n    \"replay\": {\n      \"command\": \"/r\",\n      \"args\": [\"-s\"]\n    }\n  }\n}\n";
    check_json_put("", &format!("write: {whole}"));
    check_json_put(" \n", &format!("write: {whole}"));
    check_json_put(
        "{}\n",
        "write: {\n  \"mcpServers\": {\n    \"replay\": {\n      \"command\": \"/r\",\n      \"args\": [\"-s\"]\n    }\n  }\n}\n",
    );
    check_json_put(
        "{\n  // keep\n  \"theme\": 1, /* and this */\n}\n",
        "write: {\n  // keep\n  \"theme\": 1, /* and this */\n  \"mcpServers\": {\n    \"replay\": {\n      \"command\": \"/r\",\n      \"args\": [\"-s\"],\n    },\n  },\n}\n",
    );
    check_json_put(
        "{\n  \"mcpServers\": {\n    // other\n    \"o\": {\"command\": \"x\"}\n  }\n}\n",
        "write: {\n  \"mcpServers\": {\n    // other\n    \"o\": {\"command\": \"x\"},\n    \"replay\": {\n      \"command\": \"/r\",\n      \"args\": [\"-s\"]\n    }\n  }\n}\n",
    );
    check_json_put(whole, "same");
    // The same entry in another layout and key order is the same entry.
    check_json_put(
        "{\"mcpServers\": {\"replay\": {\"args\": [\"-s\"], \"command\": \"/r\"}}}",
        "same",
    );
    check_json_put(
        "{\"mcpServers\": {\"replay\": {\"command\": \"/old\"}, \"o\": {}}}",
        "replace: {\"mcpServers\": {\"replay\": {\n      \"command\": \"/r\",\n      \"args\": [\"-s\"]\n    }, \"o\": {}}}",
    );
    check_json_put("[]", "error: its top level is not a JSON object");
    check_json_put(
        "{\"mcpServers\": []}",
        "error: its \"mcpServers\" is not an object; fix or remove it, then run again",
    );
    check_json_put(
        "{\n  \"a\": 1\n  \"b\": 2\n}",
        "error: it is not valid JSON: Expected comma on line 2 column 9",
    );
}

/// What a removal gave, in a word and the text: `none`, `write: TEXT`, `error: MESSAGE`.
fn taken(result: Result<Option<String>, String>) -> String {
    match result {
        Ok(None) => "none".to_string(),
        Ok(Some(text)) => format!("write: {text}"),
        Err(message) => format!("error: {message}"),
    }
}

#[track_caller]
fn check_json_take(input: &str, expect: &str) {
    assert_eq!(taken(json::take(input, "mcpServers")), expect, "input: {input}");
}

#[test]
fn json_take() {
    check_json_take("", "none");
    check_json_take("{}", "none");
    check_json_take("{\"mcpServers\": {\"o\": {}}}", "none");
    check_json_take(
        "{\n  // keep\n  \"mcpServers\": {\n    \"o\": {},\n    \"replay\": {\"command\": \"/r\"}\n  }\n}\n",
        "write: {\n  // keep\n  \"mcpServers\": {\n    \"o\": {}\n  }\n}\n",
    );
    check_json_take("{\"mcpServers\": {\"replay\": {}}}", "write: {\"mcpServers\": {}}");
    check_json_take(
        "{\"mcpServers\": 1}",
        "error: its \"mcpServers\" is not an object; fix or remove it, then run again",
    );
    check_json_take("{", "error: it is not valid JSON: Unterminated object on line 1 column 1");
}

#[track_caller]
fn check_toml_put(input: &str, expect: &str) {
    assert_eq!(shown(toml::put(input, &small())), expect, "input: {input}");
}

#[test]
fn toml_put() {
    let table = "[mcp_servers.replay]\ncommand = \"/r\"\nargs = [\"-s\"]\n";
    check_toml_put("", &format!("write: {table}"));
    check_toml_put(
        "# mine\nmodel = \"o3\" # keep\n\n[mcp_servers.o]\ncommand = \"x\"\n",
        "write: # mine\nmodel = \"o3\" # keep\n\n[mcp_servers.o]\ncommand = \"x\"\n\n[mcp_servers.replay]\ncommand = \"/r\"\nargs = [\"-s\"]\n",
    );
    check_toml_put(table, "same");
    check_toml_put("[mcp_servers]\nreplay = { command = \"/r\", args = [\"-s\"] }\n", "same");
    check_toml_put(
        "[mcp_servers.replay]\ncommand = \"/old\"\n\n[other]\nx = 1\n",
        "replace: [mcp_servers.replay]\ncommand = \"/r\"\nargs = [\"-s\"]\n\n[other]\nx = 1\n",
    );
    check_toml_put(
        "mcp_servers = 1\n",
        "error: its \"mcp_servers\" is not a table; fix or remove it, then run again",
    );
    assert!(shown(toml::put("a = [\n", &small())).contains("at line 1, column 6"));
}

#[track_caller]
fn check_toml_take(input: &str, expect: &str) {
    assert_eq!(taken(toml::take(input)), expect, "input: {input}");
}

#[test]
fn toml_take() {
    check_toml_take("", "none");
    check_toml_take("[mcp_servers.o]\ncommand = \"x\"\n", "none");
    check_toml_take(
        "# mine\n[mcp_servers.o]\ncommand = \"x\" # keep\n\n[mcp_servers.replay]\ncommand = \"/r\"\n",
        "write: # mine\n[mcp_servers.o]\ncommand = \"x\" # keep\n",
    );
    check_toml_take("[mcp_servers]\nreplay = { command = \"/r\" }\n", "write: [mcp_servers]\n");
}

#[test]
fn block_file() {
    use super::install::block_put;
    let new = || "name: replay\n".to_string();
    assert_eq!(block_put(None, new()), Edit::Write(new()));
    assert_eq!(block_put(Some(""), new()), Edit::Write(new()));
    assert_eq!(block_put(Some("name: replay\n"), new()), Edit::Same);
    assert_eq!(block_put(Some("name: mine\n"), new()), Edit::Replace(new()));
}

// ---------------------------------------------------------------------------------------------
// Paths
// ---------------------------------------------------------------------------------------------

fn dirs(vars: &[(&str, &str)]) -> Result<Dirs, String> {
    Dirs::from_env(|name| vars.iter().find(|(n, _)| *n == name).map(|(_, v)| v.into()))
}

#[test]
fn base_directories() {
    let got = dirs(&[("HOME", "/h")]).unwrap();
    assert_eq!(got.xdg_config, Path::new("/h/.config"));
    assert_eq!(got.codex_home, Path::new("/h/.codex"));
    let got = dirs(&[("HOME", "/h"), ("XDG_CONFIG_HOME", "/x"), ("CODEX_HOME", "/c")]).unwrap();
    assert_eq!(
        (got.xdg_config.as_path(), got.codex_home.as_path()),
        (Path::new("/x"), Path::new("/c"))
    );
    // The XDG specification ignores a relative path.
    let got = dirs(&[("HOME", "/h"), ("XDG_CONFIG_HOME", "rel")]).unwrap();
    assert_eq!(got.xdg_config, Path::new("/h/.config"));
    assert!(dirs(&[]).unwrap_err().contains("--config PATH"));
    assert!(dirs(&[("HOME", "")]).is_err());
}

#[test]
fn user_files() {
    let dirs = Dirs {
        home: "/h".into(),
        xdg_config: "/x".into(),
        app_data: "/a".into(),
        codex_home: "/c".into(),
    };
    let rows = [
        (Client::ClaudeDesktop, "/a/Claude/claude_desktop_config.json"),
        (Client::ClaudeCode, "/h/.claude.json"),
        (Client::Cursor, "/h/.cursor/mcp.json"),
        (Client::Vscode, "/a/Code/User/mcp.json"),
        (Client::Windsurf, "/h/.codeium/windsurf/mcp_config.json"),
        (Client::Cline, "/h/.cline/data/settings/cline_mcp_settings.json"),
        (Client::Zed, "/x/zed/settings.json"),
        (Client::Codex, "/c/config.toml"),
        (Client::Gemini, "/h/.gemini/settings.json"),
        (Client::Continue, "/h/.continue/mcpServers/replay.yaml"),
        (Client::Opencode, "/x/opencode/opencode.json"),
    ];
    for (client, expect) in rows {
        assert_eq!(user_file(client, &dirs), PathBuf::from(expect), "{client:?}");
    }
}

#[test]
fn app_data_is_the_platforms() {
    let got = dirs(&[("HOME", "/h"), ("XDG_CONFIG_HOME", "/x")]).unwrap();
    let expect = if cfg!(target_os = "macos") { "/h/Library/Application Support" } else { "/x" };
    assert_eq!(got.app_data, Path::new(expect));
}

#[test]
fn project_files() {
    let rows = [
        (Client::ClaudeDesktop, None),
        (Client::Windsurf, None),
        (Client::Cline, None),
        (Client::ClaudeCode, Some("/p/.mcp.json")),
        (Client::Cursor, Some("/p/.cursor/mcp.json")),
        (Client::Vscode, Some("/p/.vscode/mcp.json")),
        (Client::Zed, Some("/p/.zed/settings.json")),
        (Client::Codex, Some("/p/.codex/config.toml")),
        (Client::Gemini, Some("/p/.gemini/settings.json")),
        (Client::Continue, Some("/p/.continue/mcpServers/replay.yaml")),
        (Client::Opencode, Some("/p/opencode.json")),
    ];
    for (client, expect) in rows {
        assert_eq!(project_file(client, Path::new("/p")), expect.map(PathBuf::from), "{client:?}");
    }
}
