//! Which tools a server offers: `--read-only`, `--tools`, `--disable-tool` and `--no-exec`,
//! checked against the names in `schemas/`.
//!
//! A tool is served when every flag allows it. A tool left out is missing from `tools/list` and
//! refused by `tools/call` exactly as a name no tool has (`Settings::serves`).

use std::fmt;

use crate::schema;

/// The tools that change anything: files, or (execute_command) whatever a shell can reach.
/// `--read-only` leaves them out. Adding a writing tool is one line here; a test holds this list
/// equal to the schemas whose `readOnlyHint` is false.
pub const WRITERS: &[&str] = &[
    "write_file",
    "edit_file",
    "edit_files",
    "create_directory",
    "delete_file",
    "move_file",
    "copy_file",
    "execute_command",
    "command_session",
];

/// The tool flags as given on the command line.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Selection {
    /// `--read-only`: no writing tool (and every root read-only, which `cli` sees to).
    pub read_only: bool,
    /// `--tools a,b,c`: only these; `None` when the flag is absent.
    pub only: Option<Vec<String>>,
    /// `--disable-tool NAME`, plus execute_command for `--no-exec`.
    pub disabled: Vec<String>,
}

/// A tool flag named a tool that no schema defines.
#[derive(Debug, PartialEq, Eq)]
pub struct UnknownTool {
    pub flag: &'static str,
    pub name: String,
}

impl fmt::Display for UnknownTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "replay: {} names no tool: {:?}; the tools are: {}",
            self.flag,
            self.name,
            tool_names().join(", ")
        )
    }
}

/// Every tool replay has, in `tools/list` order.
pub fn tool_names() -> Vec<&'static str> {
    schema::FILES.iter().map(|(name, _)| *name).collect()
}

/// Whether some schema defines `name`.
pub fn is_tool(name: &str) -> bool {
    schema::FILES.iter().any(|(n, _)| *n == name)
}

impl Selection {
    /// Checks every name the flags give.
    pub fn check(&self) -> Result<(), UnknownTool> {
        let named = self.only.iter().flatten().map(|n| ("--tools", n));
        let disabled = self.disabled.iter().map(|n| ("--disable-tool", n));
        match named.chain(disabled).find(|(_, name)| !is_tool(name)) {
            Some((flag, name)) => Err(UnknownTool { flag, name: name.clone() }),
            None => Ok(()),
        }
    }

    /// Whether the flags let `name` be served.
    pub fn serves(&self, name: &str) -> bool {
        let named = self.only.as_ref().is_none_or(|only| only.iter().any(|n| n == name));
        let writer = self.read_only && WRITERS.contains(&name);
        named && !writer && !self.disabled.iter().any(|n| n == name)
    }

    /// The tools served, in `tools/list` order.
    pub fn served(&self) -> Vec<&'static str> {
        tool_names().into_iter().filter(|name| self.serves(name)).collect()
    }

    /// The tools left out, for `Settings::disabled_tools`.
    pub fn left_out(&self) -> Vec<String> {
        tool_names().into_iter().filter(|name| !self.serves(name)).map(String::from).collect()
    }
}

#[cfg(test)]
mod tests;
