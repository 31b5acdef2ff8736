//! `replay print-config`: a client's configuration that starts this binary as a server, in the
//! shapes README's "Configuring clients" section shows.
//!
//! The JSON is written by hand, not through serde_json's map (which sorts keys), so that
//! `command` comes before `args` as in every client's documentation; each string goes through
//! serde_json for its escaping, and a test parses the result.

use std::path::Path;

/// The clients `print-config` knows.
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
}

/// The name the server is registered under.
const NAME: &str = "replay";

/// The configuration text, ending in a newline. `exe` is the binary's absolute path; `args` its
/// arguments (`--mcp-server` first).
pub fn render(client: Client, json: bool, exe: &str, args: &[String]) -> String {
    match client {
        Client::ClaudeDesktop | Client::Cursor => json_entry("mcpServers", None, exe, args),
        Client::ClaudeCode if json => json_entry("mcpServers", Some("stdio"), exe, args),
        Client::ClaudeCode => claude_mcp_add(exe, args),
        Client::Vscode => json_entry("servers", Some("stdio"), exe, args),
    }
}

/// `{"<key>": {"replay": {"type": …, "command": …, "args": […]}}}`, laid out as README shows.
fn json_entry(key: &str, kind: Option<&str>, exe: &str, args: &[String]) -> String {
    let quoted: Vec<String> = args.iter().map(|a| quote_json(a)).collect();
    let mut out = format!("{{\n  {}: {{\n    {}: {{\n", quote_json(key), quote_json(NAME));
    if let Some(kind) = kind {
        out.push_str(&format!("      \"type\": {},\n", quote_json(kind)));
    }
    out.push_str(&format!("      \"command\": {},\n", quote_json(exe)));
    out.push_str(&format!("      \"args\": [{}]\n", quoted.join(", ")));
    out.push_str("    }\n  }\n}\n");
    out
}

fn quote_json(text: &str) -> String {
    serde_json::Value::from(text).to_string()
}

/// `claude mcp add --transport stdio --scope project replay -- EXE ARGS…`, quoted for a POSIX
/// shell.
fn claude_mcp_add(exe: &str, args: &[String]) -> String {
    let mut words: Vec<String> = ["claude", "mcp", "add", "--transport", "stdio", "--scope"]
        .iter()
        .map(|w| w.to_string())
        .collect();
    words.extend(["project".to_string(), NAME.to_string(), "--".to_string()]);
    words.push(quote_shell(exe));
    words.extend(args.iter().map(|a| quote_shell(a)));
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
