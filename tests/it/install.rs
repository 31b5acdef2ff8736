//! `replay install` and `replay uninstall` through the real binary, for every client: the entry
//! merged into a file that already holds another server (and comments, where the format takes
//! them), parsed back with a real parser; the second run a no-op; `--dry-run`, `--force`,
//! malformed files, backups, modes, symlinks; and `print-config` for the same clients. Every run
//! has a temporary HOME (and no XDG_CONFIG_HOME or CODEX_HOME), so the default paths land in
//! the test's directory, never in the real home.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::harness::{path_str, replay_command, run_cli, CliOutput, TestEnv, BIN};

/// `replay ARGS` with HOME at `home` and the variables that move the default paths unset.
fn run(home: &Path, args: &[&str]) -> CliOutput {
    let mut cmd = replay_command();
    cmd.args(args).env("HOME", home).env_remove("XDG_CONFIG_HOME").env_remove("CODEX_HOME");
    run_cli(cmd, "")
}

#[track_caller]
fn expect_status(out: &CliOutput, status: i32, what: &str) {
    assert_eq!(
        out.status.code(),
        Some(status),
        "{what}: status\nstdout: {}\nstderr: {}",
        out.stdout,
        out.stderr
    );
}

fn canonical_bin() -> String {
    path_str(&fs::canonicalize(BIN).expect("canonical binary path"))
}

/// How a client's file is read back: every format becomes JSON.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Syntax {
    /// JSON or JSONC (comments and trailing commas).
    Json,
    Toml,
    Yaml,
}

fn parse(syntax: Syntax, text: &str) -> Value {
    match syntax {
        Syntax::Json => {
            let options = jsonc_parser::ParseOptions::default();
            let root = jsonc_parser::cst::CstRootNode::parse(text, &options)
                .unwrap_or_else(|e| panic!("not JSONC ({e}):\n{text}"));
            root.value().and_then(|v| v.to_serde_value()).unwrap_or(Value::Null)
        }
        Syntax::Toml => {
            let doc: toml_edit::DocumentMut =
                text.parse().unwrap_or_else(|e| panic!("not TOML ({e}):\n{text}"));
            toml_json(doc.as_item())
        }
        Syntax::Yaml => {
            serde_norway::from_str(text).unwrap_or_else(|e| panic!("not YAML ({e}):\n{text}"))
        }
    }
}

fn toml_json(item: &toml_edit::Item) -> Value {
    match item {
        toml_edit::Item::Table(table) => {
            Value::Object(table.iter().map(|(k, v)| (k.to_string(), toml_json(v))).collect())
        }
        toml_edit::Item::Value(value) => toml_value(value),
        _ => Value::Null,
    }
}

fn toml_value(value: &toml_edit::Value) -> Value {
    match value {
        toml_edit::Value::String(s) => json!(s.value()),
        toml_edit::Value::Boolean(b) => json!(b.value()),
        toml_edit::Value::Integer(n) => json!(n.value()),
        toml_edit::Value::Array(items) => Value::Array(items.iter().map(toml_value).collect()),
        toml_edit::Value::InlineTable(t) => {
            Value::Object(t.iter().map(|(k, v)| (k.to_string(), toml_value(v))).collect())
        }
        _ => Value::Null,
    }
}

/// One client: its default file under HOME, a seed holding another server (and a comment where
/// the format takes one), where the servers sit, and a malformed text with the line its error
/// must name.
struct Case {
    client: &'static str,
    file: String,
    syntax: Syntax,
    key: &'static str,
    seed: &'static str,
    comment: Option<&'static str>,
    malformed: &'static str,
    line: &'static str,
}

/// The Electron apps' appData under HOME.
fn app_data() -> &'static str {
    if cfg!(target_os = "macos") {
        "Library/Application Support"
    } else {
        ".config"
    }
}

const JSON_SEED: &str = "{\n  \"theme\": \"dark\",\n  \"mcpServers\": {\n    \"other\": {\"command\": \"other-server\", \"args\": [\"-v\"]}\n  }\n}\n";
const JSON_BAD: &str = "{\n  \"mcpServers\": {\n    \"other\": {\"command\": \"x\",,}\n  }\n}\n";

fn json_case(client: &'static str, file: String) -> Case {
    Case {
        client,
        file,
        syntax: Syntax::Json,
        key: "mcpServers",
        seed: JSON_SEED,
        comment: None,
        malformed: JSON_BAD,
        line: "line 3",
    }
}

fn cases() -> Vec<Case> {
    let app = app_data();
    vec![
        json_case("claude-desktop", format!("{app}/Claude/claude_desktop_config.json")),
        json_case("claude-code", ".claude.json".into()),
        json_case("cursor", ".cursor/mcp.json".into()),
        json_case("windsurf", ".codeium/windsurf/mcp_config.json".into()),
        json_case("cline", ".cline/data/settings/cline_mcp_settings.json".into()),
        json_case("gemini", ".gemini/settings.json".into()),
        Case {
            client: "vscode",
            file: format!("{app}/Code/User/mcp.json"),
            syntax: Syntax::Json,
            key: "servers",
            seed: "{\n  // my servers\n  \"servers\": {\n    \"other\": {\"type\": \"stdio\", \"command\": \"other-server\", \"args\": [\"-v\"],},\n  },\n  /* inputs later */\n  \"inputs\": [],\n}\n",
            comment: Some("/* inputs later */"),
            malformed: "{\n  \"servers\": {\n    \"other\": {\"command\": 'x'}\n  }\n}\n",
            line: "line 3",
        },
        Case {
            client: "zed",
            file: ".config/zed/settings.json".into(),
            syntax: Syntax::Json,
            key: "context_servers",
            seed: "// Zed settings\n{\n  \"theme\": \"One Dark\", // my theme\n  \"context_servers\": {\n    \"other\": {\"command\": \"other-server\", \"args\": [\"-v\"]},\n  },\n}\n",
            comment: Some("// my theme"),
            malformed: "{\n  \"theme\": \"One Dark\"\n  \"context_servers\": {}\n}\n",
            line: "line 2",
        },
        Case {
            client: "opencode",
            file: ".config/opencode/opencode.json".into(),
            syntax: Syntax::Json,
            key: "mcp",
            seed: "{\n  \"$schema\": \"https://opencode.ai/config.json\",\n  // local tools\n  \"mcp\": {\n    \"other\": {\"type\": \"local\", \"command\": [\"other-server\", \"-v\"], \"enabled\": true}\n  }\n}\n",
            comment: Some("// local tools"),
            malformed: "{\n  \"mcp\": {\n    \"other\": [1 2]\n  }\n}\n",
            line: "line 3",
        },
        Case {
            client: "codex",
            file: ".codex/config.toml".into(),
            syntax: Syntax::Toml,
            key: "mcp_servers",
            seed: "# Codex settings\nmodel = \"o3\" # the model\n\n[mcp_servers.other]\ncommand = \"other-server\"\nargs = [\"-v\"]\n",
            comment: Some("# the model"),
            malformed: "model = \"o3\"\n[mcp_servers.other\ncommand = \"x\"\n",
            line: "line 2",
        },
    ]
}

/// The servers a parsed file holds under the case's key.
fn servers<'a>(case: &Case, value: &'a Value) -> &'a Value {
    &value[case.key]
}

/// The program and arguments an entry starts, whatever the client's shape.
fn command_line(entry: &Value) -> Vec<String> {
    let strings = |v: &Value| -> Vec<String> {
        v.as_array().expect("an array").iter().map(|s| s.as_str().unwrap().to_string()).collect()
    };
    match &entry["command"] {
        Value::Array(_) => strings(&entry["command"]),
        Value::String(command) => {
            let mut line = vec![command.clone()];
            line.extend(strings(&entry["args"]));
            line
        }
        other => panic!("no command in {entry} ({other})"),
    }
}

#[test]
fn install_and_uninstall_every_client() {
    for case in cases() {
        let client = case.client;
        let env = TestEnv::new(&["home", "proj"], &[]);
        let home = env.path("home");
        let proj = env.p("proj");
        let rel = format!("home/{}", case.file);
        env.write(&rel, case.seed);
        let file = env.path(&rel);

        // --dry-run: the diff on stdout, the file as it was.
        let out = run(&home, &["install", client, "--dry-run", &proj]);
        expect_status(&out, 0, client);
        assert!(
            out.stdout.contains("+++") && out.stdout.contains(&proj),
            "{client}: {}",
            out.stdout
        );
        assert_eq!(env.read_string(&rel), case.seed, "{client}: --dry-run wrote");

        let out = run(&home, &["install", client, &proj]);
        expect_status(&out, 0, client);
        let text = env.read_string(&rel);
        let value = parse(case.syntax, &text);
        let entry = &servers(&case, &value)["replay"];
        assert_eq!(
            command_line(entry),
            [canonical_bin(), "--mcp-server".into(), "--allow".into(), format!("{proj}:rw")],
            "{client}: {text}"
        );
        assert_eq!(
            command_line(&servers(&case, &value)["other"]),
            ["other-server", "-v"],
            "{client}: {text}"
        );
        if let Some(comment) = case.comment {
            assert!(text.contains(comment), "{client}: the comment went: {text}");
        }
        let backup = PathBuf::from(format!("{}.replay-backup", file.display()));
        assert_eq!(fs::read_to_string(&backup).unwrap(), case.seed, "{client}: backup");

        // The second run is a no-op.
        let out = run(&home, &["install", client, &proj]);
        expect_status(&out, 0, client);
        assert!(out.stderr.contains("nothing to change"), "{client}: {}", out.stderr);
        assert_eq!(env.read_string(&rel), text, "{client}: the second run changed the file");

        // A different entry: the diff and exit 1, unless --force.
        let read_only = format!("{proj}:ro");
        let out = run(&home, &["install", client, &read_only]);
        expect_status(&out, 1, client);
        assert!(out.stderr.contains("--force"), "{client}: {}", out.stderr);
        assert!(out.stdout.contains("\n+") && out.stdout.contains(":ro"), "{client}");
        assert_eq!(env.read_string(&rel), text, "{client}: replaced without --force");
        let out = run(&home, &["install", client, "--force", &read_only]);
        expect_status(&out, 0, client);
        let value = parse(case.syntax, &env.read_string(&rel));
        assert_eq!(command_line(&servers(&case, &value)["replay"])[3], read_only, "{client}");

        // uninstall: the other server (and the comment) stay.
        let out = run(&home, &["uninstall", client, "--dry-run"]);
        expect_status(&out, 0, client);
        assert!(out.stdout.contains("-"), "{client}: {}", out.stdout);
        let out = run(&home, &["uninstall", client]);
        expect_status(&out, 0, client);
        let text = env.read_string(&rel);
        let value = parse(case.syntax, &text);
        assert_eq!(servers(&case, &value).get("replay"), None, "{client}: {text}");
        assert_eq!(command_line(&servers(&case, &value)["other"]), ["other-server", "-v"]);
        if let Some(comment) = case.comment {
            assert!(text.contains(comment), "{client}: the comment went: {text}");
        }
        let out = run(&home, &["uninstall", client]);
        expect_status(&out, 0, client);
        assert!(out.stderr.contains("no replay entry"), "{client}: {}", out.stderr);

        // A file that does not parse is left as it is; the error names the line.
        env.write(&rel, case.malformed);
        for line in [vec!["install", client, &proj], vec!["uninstall", client]] {
            let out = run(&home, &line);
            expect_status(&out, 1, client);
            assert!(out.stderr.contains(case.line), "{client}: {}", out.stderr);
            assert!(out.stderr.contains("left as it is"), "{client}: {}", out.stderr);
            assert_eq!(env.read_string(&rel), case.malformed, "{client}: malformed file changed");
        }
    }
}

/// Continue's block file is replay's own: the other block files beside it are never touched.
#[test]
fn install_and_uninstall_continue() {
    let other = "name: other\nversion: 0.0.1\nschema: v1\nmcpServers:\n  - name: other\n    command: other-server\n";
    let env = TestEnv::new(&["home", "proj"], &[("home/.continue/mcpServers/other.yaml", other)]);
    let home = env.path("home");
    let proj = env.p("proj");
    let rel = "home/.continue/mcpServers/replay.yaml";

    let out = run(&home, &["install", "continue", "--dry-run", &proj]);
    expect_status(&out, 0, "dry run");
    assert!(out.stdout.contains("+mcpServers:"), "{}", out.stdout);
    assert!(!env.path(rel).exists());

    let out = run(&home, &["install", "continue", &proj]);
    expect_status(&out, 0, "install");
    let text = env.read_string(rel);
    let value = parse(Syntax::Yaml, &text);
    assert_eq!((&value["name"], &value["schema"]), (&json!("replay"), &json!("v1")), "{text}");
    let entry = &value["mcpServers"][0];
    assert_eq!(entry["name"], "replay");
    assert_eq!(
        command_line(entry),
        [canonical_bin(), "--mcp-server".into(), "--allow".into(), format!("{proj}:rw")]
    );

    let out = run(&home, &["install", "continue", &proj]);
    expect_status(&out, 0, "second run");
    assert_eq!(env.read_string(rel), text);

    let out = run(&home, &["install", "continue", "--allow-read", &proj]);
    expect_status(&out, 1, "different entry");
    assert_eq!(env.read_string(rel), text);
    let out = run(&home, &["install", "continue", "--force", "--allow-read", &proj]);
    expect_status(&out, 0, "--force");
    assert!(env.read_string(rel).contains(":ro\""));

    let out = run(&home, &["uninstall", "continue"]);
    expect_status(&out, 0, "uninstall");
    assert!(!env.path(rel).exists(), "the block file stays");
    assert!(env.path(&format!("{rel}.replay-backup")).exists());
    assert_eq!(env.read_string("home/.continue/mcpServers/other.yaml"), other);
    let out = run(&home, &["uninstall", "continue"]);
    expect_status(&out, 0, "uninstall again");
    assert!(out.stderr.contains("no replay entry"), "{}", out.stderr);
}

/// `--config PATH` names a file (created with its directory when missing) instead of the
/// default; `--project DIR` the project's file; `--npx` the npm launcher.
#[test]
fn config_project_and_npx() {
    let env = TestEnv::new(&["home", "proj"], &[]);
    let home = env.path("home");
    let proj = env.p("proj");
    let config = env.p("elsewhere/new/mcp.json");
    let out = run(&home, &["install", "cursor", "--config", &config, "--npx", &proj]);
    expect_status(&out, 0, "--config");
    let value = parse(Syntax::Json, &env.read_string("elsewhere/new/mcp.json"));
    assert_eq!(
        command_line(&value["mcpServers"]["replay"]),
        ["npx", "-y", "replay-mcp", "--mcp-server", "--allow", &format!("{proj}:rw")]
    );
    assert!(!env.path("elsewhere/new/mcp.json.replay-backup").exists(), "a backup of nothing");
    assert!(!env.path("home/.cursor").exists(), "--config wrote the default file too");

    let out = run(&home, &["install", "claude-code", "--project", &proj, &proj]);
    expect_status(&out, 0, "--project");
    let value = parse(Syntax::Json, &env.read_string("proj/.mcp.json"));
    assert_eq!(value["mcpServers"]["replay"]["type"], "stdio");
    assert!(!env.path("home/.claude.json").exists());

    let out = run(&home, &["install", "cursor", "--project", &env.p("missing")]);
    expect_status(&out, 1, "missing project");
    assert!(out.stderr.contains("not a directory"), "{}", out.stderr);
    assert!(!env.path("missing").exists(), "--project created the directory");

    let out = run(&home, &["install", "claude-desktop", "--project", &proj]);
    expect_status(&out, 1, "no project file");
    assert!(out.stderr.contains("drop --project"), "{}", out.stderr);
}

/// The file keeps its mode, and a symlinked config file stays a symlink to the edited file.
#[test]
fn mode_and_symlink_kept() {
    let env = TestEnv::new(&["home", "dotfiles"], &[("dotfiles/gemini.json", JSON_SEED)]);
    let home = env.path("home");
    let real = env.path("dotfiles/gemini.json");
    fs::set_permissions(&real, fs::Permissions::from_mode(0o600)).unwrap();
    env.mkdir("home/.gemini");
    std::os::unix::fs::symlink(&real, env.path("home/.gemini/settings.json")).unwrap();

    let out = run(&home, &["install", "gemini", &env.p("root")]);
    expect_status(&out, 0, "install");
    let link = fs::symlink_metadata(env.path("home/.gemini/settings.json")).unwrap();
    assert!(link.file_type().is_symlink(), "the symlink was replaced by a file");
    let value = parse(Syntax::Json, &env.read_string("dotfiles/gemini.json"));
    assert!(value["mcpServers"]["replay"].is_object());
    assert_eq!(fs::metadata(&real).unwrap().permissions().mode() & 0o777, 0o600);
    let names: Vec<String> = fs::read_dir(env.path("dotfiles"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!names.iter().any(|n| n.contains("replay-tmp")), "a temp file stayed: {names:?}");
}

#[test]
fn bad_input() {
    let env = TestEnv::new(&["home"], &[("home/.claude.json", "[1, 2]")]);
    let home = env.path("home");
    let out = run(&home, &["install", "emacs"]);
    expect_status(&out, 2, "unknown client");
    for name in ["claude-desktop", "codex", "continue", "opencode", "zed"] {
        assert!(out.stderr.contains(name), "{}", out.stderr);
    }
    let out = run(&home, &["uninstall", "emacs"]);
    expect_status(&out, 2, "unknown client");

    let out = run(&home, &["install", "claude-code"]);
    expect_status(&out, 1, "not an object");
    assert!(out.stderr.contains("not a JSON object"), "{}", out.stderr);
    assert_eq!(env.read_string("home/.claude.json"), "[1, 2]");

    let out = run(&home, &["uninstall", "cursor"]);
    expect_status(&out, 0, "missing file");
    assert!(out.stderr.contains("does not exist"), "{}", out.stderr);
    assert!(!env.path("home/.cursor").exists(), "uninstall created a file");
}

/// print-config's rendering for the clients whose shape differs, parsed with a real parser.
#[test]
fn print_config_every_client() {
    let env = TestEnv::new(&[], &[]);
    let root = env.p("root");
    let home = env.path("root");
    let bin = canonical_bin();
    let expected = [bin.clone(), "--mcp-server".into(), "--allow".into(), format!("{root}:rw")];
    let rows = [
        ("windsurf", Syntax::Json, "/mcpServers/replay"),
        ("cline", Syntax::Json, "/mcpServers/replay"),
        ("gemini", Syntax::Json, "/mcpServers/replay"),
        ("zed", Syntax::Json, "/context_servers/replay"),
        ("opencode", Syntax::Json, "/mcp/replay"),
        ("codex", Syntax::Toml, "/mcp_servers/replay"),
        ("continue", Syntax::Yaml, "/mcpServers/0"),
    ];
    for (client, syntax, pointer) in rows {
        let out = run(&home, &["print-config", client, &root]);
        expect_status(&out, 0, client);
        let value = parse(syntax, &out.stdout);
        let entry = value.pointer(pointer).unwrap_or_else(|| panic!("{client}: {}", out.stdout));
        assert_eq!(command_line(entry), expected, "{client}");
    }
    // stderr says which file the text goes in.
    let out = run(&home, &["print-config", "zed", &root]);
    let file = env.path("root/.config/zed/settings.json");
    assert!(out.stderr.contains(&path_str(&file)), "{}", out.stderr);
    assert!(out.stderr.contains("replay install zed"), "{}", out.stderr);
    let out = run(&home, &["print-config", "opencode", &root]);
    let value = parse(Syntax::Json, &out.stdout);
    assert_eq!(
        (&value["mcp"]["replay"]["type"], &value["mcp"]["replay"]["enabled"]),
        (&json!("local"), &json!(true))
    );
}
