//! Where each client keeps its configuration: the user-wide file by default, or a project's
//! with `--project DIR`. The only platform difference is the application-data directory of
//! the Electron apps (Claude Desktop, VS Code): `~/Library/Application Support` on macOS, the
//! XDG config directory on Linux. Zed and opencode use `~/.config` on both.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::Client;

/// The base directories the default paths hang from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dirs {
    pub home: PathBuf,
    /// `$XDG_CONFIG_HOME`, else `~/.config`.
    pub xdg_config: PathBuf,
    /// The Electron apps' `appData`.
    pub app_data: PathBuf,
    /// `$CODEX_HOME`, else `~/.codex`.
    pub codex_home: PathBuf,
}

impl Dirs {
    /// From `HOME` and the variables that move them (`var` reads the environment).
    pub fn from_env(var: impl Fn(&str) -> Option<OsString>) -> Result<Dirs, String> {
        let set = |name: &str| var(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        let home = set("HOME").ok_or_else(|| {
            "replay: HOME is not set, so the client's config file cannot be found; give its \
             path with --config PATH"
                .to_string()
        })?;
        let xdg_config = set("XDG_CONFIG_HOME")
            .filter(|p| p.is_absolute())
            .unwrap_or_else(|| home.join(".config"));
        let codex_home = set("CODEX_HOME").unwrap_or_else(|| home.join(".codex"));
        let app_data = app_data(&home, &xdg_config);
        Ok(Dirs { home, xdg_config, app_data, codex_home })
    }
}

#[cfg(target_os = "macos")]
fn app_data(home: &Path, _xdg_config: &Path) -> PathBuf {
    home.join("Library/Application Support")
}

#[cfg(not(target_os = "macos"))]
fn app_data(_home: &Path, xdg_config: &Path) -> PathBuf {
    xdg_config.to_path_buf()
}

/// The client's user-wide config file.
pub fn user_file(client: Client, dirs: &Dirs) -> PathBuf {
    match client {
        Client::ClaudeDesktop => dirs.app_data.join("Claude/claude_desktop_config.json"),
        Client::ClaudeCode => dirs.home.join(".claude.json"),
        Client::Cursor => dirs.home.join(".cursor/mcp.json"),
        Client::Vscode => dirs.app_data.join("Code/User/mcp.json"),
        Client::Windsurf => dirs.home.join(".codeium/windsurf/mcp_config.json"),
        // Shared by the extension, the CLI and the SDK (docs.cline.bot "CLI configuration").
        Client::Cline => dirs.home.join(".cline/data/settings/cline_mcp_settings.json"),
        Client::Zed => dirs.xdg_config.join("zed/settings.json"),
        Client::Codex => dirs.codex_home.join("config.toml"),
        Client::Gemini => dirs.home.join(".gemini/settings.json"),
        Client::Continue => dirs.home.join(".continue/mcpServers/replay.yaml"),
        Client::Opencode => dirs.xdg_config.join("opencode/opencode.json"),
    }
}

/// The client's config file inside project `dir`, or `None` for the clients that read one
/// user-wide file only.
pub fn project_file(client: Client, dir: &Path) -> Option<PathBuf> {
    let rel = match client {
        Client::ClaudeDesktop | Client::Windsurf | Client::Cline => return None,
        Client::ClaudeCode => ".mcp.json",
        Client::Cursor => ".cursor/mcp.json",
        Client::Vscode => ".vscode/mcp.json",
        Client::Zed => ".zed/settings.json",
        Client::Codex => ".codex/config.toml",
        Client::Gemini => ".gemini/settings.json",
        Client::Continue => ".continue/mcpServers/replay.yaml",
        Client::Opencode => "opencode.json",
    };
    Some(dir.join(rel))
}
