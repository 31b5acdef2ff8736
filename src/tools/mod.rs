//! The tools: `table` has one row per tool (its name, schema, function and what the server must
//! know of it). That table is the feature codemap.
//!
//! Each tool is a plain function `(&Ctx, Args) -> Result<Output, ToolError>`. Its arguments have
//! already been validated against `schemas/<name>.json`; every path in them still has to go
//! through `ctx.policy` before the filesystem sees it.

mod copy;
mod delete;
mod directory;
pub mod edit;
mod exec;
pub use exec::limits;
mod find;
mod grep;
mod info;
pub mod patch;
pub mod read;
mod relocate;
pub mod table;
mod time;
mod write;

use serde_json::Value;

use crate::error::ToolError;
use crate::policy::{Denied, DenyReason, Policy, ResolvedPath};
use crate::progress::{Cancel, Progress};
use crate::reply_size::Budget;
use crate::walk::{Summary, WalkOptions};
use crate::write_order::WriteTurn;

use self::table::Tool;

/// What a tool call can see of the server.
pub struct Ctx<'a> {
    pub policy: &'a Policy,
    pub settings: &'a Settings,
    pub cancel: &'a Cancel,
    pub progress: &'a Progress,
    /// The call's write turn, which the rename that makes a change visible waits on.
    pub write_turn: &'a WriteTurn,
}

/// The server's configuration as the tools need it: fixed at start-up, but for the sandbox
/// note of a server whose sandbox waited for the client's roots.
#[derive(Debug, Default, Clone)]
pub struct Settings {
    /// execute_command refuses commands whose simple-command names are listed (`--deny-command`).
    pub deny_commands: Vec<String>,
    /// What each command may take: memory, file size, processes (`--command-*`).
    pub command_limits: limits::CommandLimits,
    /// TMPDIR for child processes: a private directory the sandbox lets them write.
    pub command_tmp: Option<std::sync::Arc<crate::sandbox::tmp::CommandTmp>>,
    /// What a command's process does to itself before it runs: join the commands' namespace,
    /// drop its capabilities, install the seccomp fallback.
    pub confinement: crate::sandbox::CommandConfinement,
    /// Said in list_allowed_directories when the kernel sandbox is not in force.
    pub sandbox_note: Option<String>,
    /// The server's private state: apply_patch's journal, opened (and what a killed server left
    /// recovered) at start.
    pub state: Option<std::sync::Arc<crate::fs::journal::StateDir>>,
    /// Tools left out of tools/list and refused (`--read-only`, `--tools`, `--disable-tool`,
    /// `--no-exec`; see `selection`).
    pub disabled_tools: Vec<Tool>,
    /// The bound on a reply's text in o200k tokens (`--max-reply-tokens`); 0 is none.
    pub reply_tokens: u32,
}

impl Settings {
    /// What one reply may hold: `reply_tokens`, and `REPLY_BYTES` in any case.
    pub fn budget(&self) -> Budget {
        Budget::of_tokens(self.reply_tokens)
    }

    /// Whether this server offers the tool.
    pub fn serves(&self, tool: Tool) -> bool {
        !self.disabled_tools.contains(&tool)
    }
}

/// One MCP content item. Binary data is already base64.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    Text(String),
    Image {
        data: String,
        mime_type: &'static str,
    },
    Audio {
        data: String,
        mime_type: &'static str,
    },
    /// An embedded resource whose `blob` holds the bytes.
    Blob {
        uri: String,
        data: String,
        mime_type: &'static str,
    },
    /// Paths a search found: a text of the paths one per line (or `NO_MATCHES`), then the
    /// notes, each on a line of its own. Where the revision has structured output (2025-06-18
    /// on), the text also counts them (`[2 matches]`, after the paths) and one `resource_link`
    /// per path follows it, as replay v2.2 answers.
    Found {
        paths: Vec<String>,
        notes: String,
    },
}

impl Content {
    /// A `Found` item's text: the paths one per line, or `NO_MATCHES`; `[N matches]` after
    /// them when `counted`; then the notes.
    pub fn found_text(paths: &[String], notes: &str, counted: bool) -> String {
        let mut text = match paths.len() {
            0 => find::NO_MATCHES.to_owned(),
            1 if counted => format!("{}\n[1 match]", paths[0]),
            n if counted => format!("{}\n[{n} matches]", paths.join("\n")),
            _ => paths.join("\n"),
        };
        text.push_str(notes);
        text
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Output {
    pub content: Vec<Content>,
    pub is_error: bool,
    /// The result as data, for tools whose schema file declares an `outputSchema`: sent as
    /// `structuredContent` to clients on 2025-06-18 or later, and must match that schema.
    pub structured: Option<Structured>,
}

/// A tool's structured data, in the one form the tool made it. The reply writer writes either
/// into the reply line; neither is parsed back.
#[derive(Debug, Clone, PartialEq)]
pub enum Structured {
    /// Built as values.
    Value(Value),
    /// Already serialized (a JSON object), for a tool that writes its data as JSON text anyway:
    /// spliced into the reply as it is.
    Json(String),
}

impl Output {
    pub fn text(text: impl Into<String>) -> Output {
        Output { content: vec![Content::Text(text.into())], is_error: false, structured: None }
    }
}

/// Runs `tool` on arguments its schema has validated.
pub fn call(tool: Tool, ctx: &Ctx, args: Value) -> Result<Output, ToolError> {
    (tool.spec().handler)(ctx, args)
}

/// A directory to read in (search, walk, run a command in): allowed for reading, existing, and
/// a directory. `op` names the operation in an I/O error.
pub fn resolve_dir(ctx: &Ctx, raw: &str, op: &'static str) -> Result<ResolvedPath, ToolError> {
    let dir = ctx.policy.resolve_read(raw)?;
    let meta = dir.metadata().map_err(|e| ToolError::io(op, &dir.shown, e))?;
    if !meta.is_dir() {
        return Err(ToolError::NotADirectory { path: dir.shown });
    }
    Ok(dir)
}

/// Refuses to move or copy a directory that holds entries a deny rule hides, or that it cannot
/// look into whole. Copies would be new files, which the commands' covers (made for what
/// existed at start) do not cover; a move could take an entry out from under a path rule
/// (`config/prod.yaml` once `config` is `cfg`), or, while the start's walk runs, from where it
/// has yet to look to where it has looked.
pub fn refuse_carrying_hidden(ctx: &Ctx, source: &ResolvedPath) -> Result<(), ToolError> {
    if ctx.policy.deny_rules().is_empty() || !source.metadata().is_ok_and(|m| m.is_dir()) {
        return Ok(());
    }
    let options = WalkOptions { cancel: Some(ctx.cancel), ..WalkOptions::default() };
    // What cannot be looked into might hold what a rule hides (a command opens a name in a
    // directory it may not list): refused, as what is too long to look at. One that is gone
    // gets the tool's own error.
    let summary = match crate::walk::visit(source, &options, || |_: crate::walk::Entry| {}) {
        Ok(summary) => summary,
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR)) => return Ok(()),
        Err(_) => Summary { unreadable: 1, ..Summary::default() },
    };
    // Past 4,096 bytes, or in a directory that cannot be read, nothing is seen; but only while
    // the start's walk runs could a move carry a secret there out of the covers' sight. Once it
    // is done, a walk that met a path too long refused commands, one it could not read is
    // covered whole and the cover moves with it, and a copy keeps the depth or cannot read it.
    let unseen = match ctx.settings.confinement.covers_pending() {
        true => summary.too_long + summary.unreadable,
        false => 0,
    };
    let reason = match summary.denied {
        0 if unseen == 0 => return Ok(()),
        0 => DenyReason::HoldsUnseen { n: unseen },
        denied => DenyReason::HoldsHidden { n: denied },
    };
    Err(ToolError::from(Denied { path: source.shown.clone(), reason }))
}

/// Whether `destination` is `source` itself or lies inside it, where copy_file and move_file
/// would go into themselves. Compared as resolved paths, component by component (`/a/bc` is
/// not inside `/a/b`).
pub fn into_itself(source: &ResolvedPath, destination: &ResolvedPath) -> bool {
    destination.real.starts_with(&source.real)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every row's function runs: called with no arguments it fails on its arguments (or
    /// succeeds), never with a panic.
    #[test]
    fn every_row_reaches_its_function() {
        let policy = Policy::default();
        let settings = Settings::default();
        let cancel = Cancel::default();
        let progress = Progress::default();
        let write_turn = WriteTurn::default();
        let ctx = Ctx {
            policy: &policy,
            settings: &settings,
            cancel: &cancel,
            progress: &progress,
            write_turn: &write_turn,
        };
        for tool in Tool::ALL {
            if let Err(e) = call(tool, &ctx, serde_json::json!({})) {
                assert!(!e.to_string().contains("names no tool"), "{tool:?}: {e}");
            }
        }
    }
}
