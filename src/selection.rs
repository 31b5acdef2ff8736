//! Which tools a server offers: `--read-only`, `--tools`, `--disable-tool` and `--no-exec`,
//! checked against the table of tools.
//!
//! A tool is served when every flag allows it. A tool left out is missing from `tools/list` and
//! refused by `tools/call` exactly as a name no tool has (`Settings::serves`).

use std::fmt;

use crate::tools::table::Tool;

/// The tools that change anything: files, or (execute_command) whatever a shell can reach.
/// `--read-only` leaves them out. The table says which (`Spec::effect`).
pub fn writers() -> Vec<&'static str> {
    Tool::ALL.into_iter().filter(|tool| tool.writes()).map(Tool::name).collect()
}

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
    Tool::ALL.into_iter().map(Tool::name).collect()
}

/// Whether replay has a tool named `name`.
pub fn is_tool(name: &str) -> bool {
    Tool::from_name(name).is_some()
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

    /// Whether the flags let `tool` be served.
    pub fn serves(&self, tool: Tool) -> bool {
        let name = tool.name();
        let named = self.only.as_ref().is_none_or(|only| only.iter().any(|n| n == name));
        let writer = self.read_only && tool.writes();
        named && !writer && !self.disabled.iter().any(|n| n == name)
    }

    /// The tools served, in `tools/list` order.
    pub fn served(&self) -> Vec<&'static str> {
        Tool::ALL.into_iter().filter(|&tool| self.serves(tool)).map(Tool::name).collect()
    }

    /// The tools left out, for `Settings::disabled_tools`.
    pub fn left_out(&self) -> Vec<Tool> {
        Tool::ALL.into_iter().filter(|&tool| !self.serves(tool)).collect()
    }
}

#[cfg(test)]
mod tests;
