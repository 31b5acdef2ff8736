//! `replay print-config`, `replay install` and `replay uninstall`: the server entry that starts
//! this binary, in each client's own shape, printed or merged into the client's config file.
//!
//! Each client's file and shape, from its documentation (read through the project's search
//! tool, docs corpus, 2026-11-28):
//! - claude-desktop: `claude_desktop_config.json`, `mcpServers.NAME {command, args}`
//!   (modelcontextprotocol.io "Connect to local MCP servers").
//! - claude-code: `~/.claude.json` (user scope) or a project's `.mcp.json`, `mcpServers.NAME
//!   {type: "stdio", command, args}` (docs.anthropic.com Claude Code "MCP").
//! - cursor: `~/.cursor/mcp.json` or `.cursor/mcp.json`, `mcpServers` (docs.cursor.com "MCP").
//! - vscode: the user or workspace `mcp.json`, JSONC, `servers.NAME {type: "stdio", command,
//!   args}` (code.visualstudio.com "MCP servers").
//! - windsurf: `~/.codeium/windsurf/mcp_config.json`, `mcpServers` (docs.windsurf.com
//!   "Cascade MCP").
//! - cline: `~/.cline/data/settings/cline_mcp_settings.json`, which the extension, the CLI
//!   and the SDK share, `mcpServers` (docs.cline.bot "CLI configuration").
//! - zed: `settings.json`, JSONC, `context_servers.NAME {command, args}` (zed.dev/docs
//!   "Model Context Protocol").
//! - codex: `~/.codex/config.toml`, `[mcp_servers.NAME]` with `command` and `args`
//!   (developers.openai.com Codex "MCP").
//! - gemini: `~/.gemini/settings.json`, `mcpServers` (Gemini CLI docs "MCP servers").
//! - continue: a YAML block file in `~/.continue/mcpServers/`: `name`, `version`, `schema: v1`
//!   and an `mcpServers` list of `{name, command, args}` (docs.continue.dev "MCP").
//! - opencode: `~/.config/opencode/opencode.json`, `mcp.NAME {type: "local", command: [one
//!   array], enabled: true}` (opencode.ai/docs "MCP servers").
//!
//! Continue gets a block file that replay owns whole, `~/.continue/mcpServers/replay.yaml`,
//! rather than an entry merged into `config.yaml`: rewriting the user's YAML would drop its
//! comments and layout (no YAML editor keeps them), while a file of replay's own is written
//! and removed without touching anything else.
//!
//! The JSON is written by hand, not through serde_json's map (which sorts keys), so that
//! `command` comes before `args` as in every client's documentation; each string goes through
//! serde_json for its escaping, and a test parses the result.

mod install;
mod json;
mod paths;
mod toml;

use std::path::Path;

pub use install::{install, uninstall, Request, Target};

/// What an editor makes of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Edit {
    /// The file already holds this very entry.
    Same,
    /// The new text, adding the entry.
    Write(String),
    /// The new text, replacing a different `replay` entry (written only with `--force`).
    Replace(String),
}

/// The clients `print-config`, `install` and `uninstall` know.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Client {
    /// `claude_desktop_config.json`'s `mcpServers` entry.
    ClaudeDesktop,
    /// The `claude mcp add` command line (with `--json`, the `.mcp.json` entry).
    ClaudeCode,
    /// `.vscode/mcp.json`'s `servers` entry.
    Vscode,
    /// `.cursor/mcp.json`'s `mcpServers` entry.
    Cursor,
    /// `~/.codeium/windsurf/mcp_config.json`'s `mcpServers` entry.
    Windsurf,
    /// `~/.cline/data/settings/cline_mcp_settings.json`'s `mcpServers` entry.
    Cline,
    /// Zed `settings.json`'s `context_servers` entry.
    Zed,
    /// `~/.codex/config.toml`'s `[mcp_servers.replay]` table.
    Codex,
    /// `~/.gemini/settings.json`'s `mcpServers` entry.
    Gemini,
    /// The block file `~/.continue/mcpServers/replay.yaml`.
    Continue,
    /// `opencode.json`'s `mcp` entry (the command and its arguments in one array).
    Opencode,
}

/// The name the server is registered under.
const NAME: &str = "replay";

/// The npm launcher package (`npx -y replay-mcp …`).
const NPM_PACKAGE: &str = "replay-mcp";

/// The program a client starts and its arguments: this binary, or npx running the npm package.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    pub command: String,
    pub args: Vec<String>,
}

impl Launch {
    /// This binary (`exe`, absolute) with the server's `args` (`--mcp-server` first).
    pub fn binary(exe: &str, args: &[String]) -> Launch {
        Launch { command: exe.to_string(), args: args.to_vec() }
    }

    /// `npx -y replay-mcp ARGS`: works wherever Node is, without a path to this binary.
    pub fn npx(args: &[String]) -> Launch {
        let mut all = vec!["-y".to_string(), NPM_PACKAGE.to_string()];
        all.extend_from_slice(args);
        Launch { command: "npx".to_string(), args: all }
    }
}

/// One value of a server entry.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Field {
    Text(String),
    Bool(bool),
    List(Vec<String>),
}

/// A server entry: its fields in the order the client's documentation shows them.
type Entry = Vec<(&'static str, Field)>;

/// How a client's config file holds the entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    /// A JSON (or JSONC) object under this top-level key.
    Json(&'static str),
    /// Codex's TOML `[mcp_servers.replay]`.
    Toml,
    /// Continue's block file, replay's own.
    YamlBlock,
}

fn format(client: Client) -> Format {
    match client {
        Client::Vscode => Format::Json("servers"),
        Client::Zed => Format::Json("context_servers"),
        Client::Opencode => Format::Json("mcp"),
        Client::Codex => Format::Toml,
        Client::Continue => Format::YamlBlock,
        Client::ClaudeDesktop
        | Client::ClaudeCode
        | Client::Cursor
        | Client::Windsurf
        | Client::Cline
        | Client::Gemini => Format::Json("mcpServers"),
    }
}

/// The client's entry for `launch`.
fn entry(client: Client, launch: &Launch) -> Entry {
    let command = Field::Text(launch.command.clone());
    let args = Field::List(launch.args.clone());
    let kind = |kind: &str| ("type", Field::Text(kind.to_string()));
    match client {
        Client::ClaudeCode | Client::Vscode => {
            vec![kind("stdio"), ("command", command), ("args", args)]
        }
        Client::Opencode => {
            let mut line = vec![launch.command.clone()];
            line.extend(launch.args.iter().cloned());
            vec![kind("local"), ("command", Field::List(line)), ("enabled", Field::Bool(true))]
        }
        Client::Continue => {
            vec![("name", Field::Text(NAME.to_string())), ("command", command), ("args", args)]
        }
        _ => vec![("command", command), ("args", args)],
    }
}

/// The configuration text `print-config` shows, ending in a newline: for the JSON clients a
/// whole file holding only this entry, for codex the TOML table, for continue the block file,
/// for claude-code without `json` the `claude mcp add` line.
pub fn render(client: Client, json: bool, launch: &Launch) -> String {
    if client == Client::ClaudeCode && !json {
        return claude_mcp_add(launch);
    }
    let entry = entry(client, launch);
    match format(client) {
        Format::Json(key) => json_file(key, &entry),
        Format::Toml => toml::render(&entry),
        Format::YamlBlock => yaml_block(&entry),
    }
}

/// `{"<key>": {"replay": {fields}}}`, laid out as README shows: one field a line, lists on one.
fn json_file(key: &str, entry: &Entry) -> String {
    let fields: Vec<String> = entry
        .iter()
        .map(|(name, field)| format!("      {}: {}", quote_json(name), json_field(field)))
        .collect();
    format!(
        "{{\n  {}: {{\n    {}: {{\n{}\n    }}\n  }}\n}}\n",
        quote_json(key),
        quote_json(NAME),
        fields.join(",\n")
    )
}

fn json_field(field: &Field) -> String {
    match field {
        Field::Text(text) => quote_json(text),
        Field::Bool(flag) => flag.to_string(),
        Field::List(items) => {
            let quoted: Vec<String> = items.iter().map(|a| quote_json(a)).collect();
            format!("[{}]", quoted.join(", "))
        }
    }
}

fn quote_json(text: &str) -> String {
    serde_json::Value::from(text).to_string()
}

/// The entry as serde_json sees it, to compare with one a file holds.
fn json_value(entry: &Entry) -> serde_json::Value {
    let object = entry.iter().map(|(name, field)| {
        let value = match field {
            Field::Text(text) => serde_json::Value::from(text.as_str()),
            Field::Bool(flag) => serde_json::Value::from(*flag),
            Field::List(items) => serde_json::Value::from(items.clone()),
        };
        (name.to_string(), value)
    });
    serde_json::Value::Object(object.collect())
}

/// Continue's block file. Strings are JSON-quoted: a double-quoted JSON string is a valid YAML
/// double-quoted scalar with the same escapes, so no path needs YAML's own quoting rules.
fn yaml_block(entry: &Entry) -> String {
    let mut out = format!(
        "# Written by `replay install continue`; `replay uninstall continue` removes it.\nname: {}\nversion: 0.0.1\nschema: v1\nmcpServers:\n",
        quote_json(NAME)
    );
    for (n, (name, field)) in entry.iter().enumerate() {
        let lead = if n == 0 { "  - " } else { "    " };
        match field {
            Field::Text(text) => out.push_str(&format!("{lead}{name}: {}\n", quote_json(text))),
            Field::Bool(flag) => out.push_str(&format!("{lead}{name}: {flag}\n")),
            Field::List(items) => {
                out.push_str(&format!("{lead}{name}:\n"));
                for item in items {
                    out.push_str(&format!("      - {}\n", quote_json(item)));
                }
            }
        }
    }
    out
}

/// `claude mcp add --transport stdio --scope project replay -- COMMAND ARGS…`, quoted for a
/// POSIX shell.
fn claude_mcp_add(launch: &Launch) -> String {
    let mut words: Vec<String> = ["claude", "mcp", "add", "--transport", "stdio", "--scope"]
        .iter()
        .map(|w| w.to_string())
        .collect();
    words.extend(["project".to_string(), NAME.to_string(), "--".to_string()]);
    words.push(quote_shell(&launch.command));
    words.extend(launch.args.iter().map(|a| quote_shell(a)));
    format!("{}\n", words.join(" "))
}

/// `word` as one shell word: as it is when it has no character a shell treats specially, else
/// in single quotes (a single quote inside becomes `'\''`).
fn quote_shell(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-./:=,+@%".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        return word.to_string();
    }
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// print-config's note for stderr: which file the text goes in, and that `replay install`
/// writes it there. `None` for the `claude mcp add` line, and without HOME.
pub fn file_note(client: Client, json: bool) -> Option<String> {
    if client == Client::ClaudeCode && !json {
        return None;
    }
    let dirs = paths::Dirs::from_env(|name| std::env::var_os(name)).ok()?;
    let name = clap::ValueEnum::to_possible_value(&client)?.get_name().to_string();
    Some(format!(
        "replay: this goes in {}; `replay install {name}` with the same flags writes it there",
        paths::user_file(client, &dirs).display()
    ))
}

/// This binary's absolute path with symlinks resolved, as a configuration must name it.
pub fn current_exe() -> Result<String, String> {
    let exe = std::env::current_exe()
        .and_then(|p| p.canonicalize())
        .map_err(|e| format!("replay: cannot find this binary's path: {e}"))?;
    path_text(&exe).map(String::from)
}

/// A configuration is JSON (or a shell line): a path must be text to be written there.
pub fn path_text(path: &Path) -> Result<&str, String> {
    path.to_str().ok_or_else(|| {
        format!("replay: {path:?} is not valid UTF-8, which a client's configuration cannot hold")
    })
}

#[cfg(test)]
mod tests;
