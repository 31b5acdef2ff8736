//! The table of tools: one row per tool with every fact the server needs about it, so that
//! adding a tool is one row here, one handler file and its schema in `schemas/`.
//!
//! The row says what the schema's annotations say (read-only, a writer, or open-world), and
//! `tests` holds the two equal; the protocol asks the row where a tool runs, whether it waits
//! for a place to hold data, and which arguments its write turn keys on.

use std::path::PathBuf;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::ToolError;
use crate::policy::Policy;
use crate::write_order::{self, Target};

use super::{copy, delete, directory, edit, exec, find, grep, info, patch, read, relocate, write};
use super::{Ctx, Output};

/// Every tool replay has. `Tool::ALL` is `tools/list`'s order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tool {
    ReadFile,
    ReadMultipleFiles,
    WriteFile,
    CreateDirectory,
    ListDirectory,
    DirectoryTree,
    MoveFile,
    CopyFile,
    DeleteFile,
    GetFileInfo,
    ListAllowedDirectories,
    EditFile,
    EditFiles,
    ApplyPatch,
    SearchFiles,
    GlobSearch,
    GrepFiles,
    ExecuteCommand,
    CommandSession,
}

/// One row: what the server knows of a tool.
pub struct Spec {
    pub name: &'static str,
    /// `schemas/<name>.json`, as text.
    pub schema: &'static str,
    /// Runs the tool on arguments its schema has validated.
    pub handler: fn(&Ctx, Value) -> Result<Output, ToolError>,
    pub effect: Effect,
    /// Its memory grows with the data it reads or returns: it waits for one of the protocol's
    /// few places for such calls. Writers of a given content, moves, deletes, info and
    /// execute_command (whose output is capped, and which may run a minute) do not.
    pub holds_data: bool,
    /// It runs a command that holds a thread until it ends (up to a minute): it waits for one
    /// of the protocol's command places (`schedule::COMMAND_CALLS`), as an async task that
    /// holds no thread meanwhile.
    pub command_place: bool,
    pub runs: Runs,
    /// Renames legacy argument names to the schema's, before validation.
    pub aliases: Option<fn(&mut Value)>,
}

/// What a tool may change: its schema's annotations class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Changes nothing (`readOnlyHint: true`).
    ReadOnly,
    /// Changes files, all of them at or under the paths these arguments name: its write turn
    /// keys on them (`readOnlyHint: false`).
    Writes(&'static [Target]),
    /// Changes whatever a shell can reach, which no argument names: it takes no write turn
    /// (`readOnlyHint: false`, `openWorldHint: true`).
    OpenWorld,
}

/// Where the protocol runs a call of the tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runs {
    /// On the reading thread itself, without a hand-off: read-only, quick, and never waiting on
    /// anything but the local filesystem. A small read costs less than the two thread wake-ups
    /// a hand-off takes, and pipelined reads are answered in arrival order.
    Inline,
    /// Inline unless the call gives this argument: read_file's `offset` scans the file up to
    /// it, which far into a big file is not quick.
    InlineWithout(&'static str),
    /// On the runtime's pool.
    Pool,
}

/// Embeds `schemas/<name>.json`.
macro_rules! schema {
    ($name:literal) => {
        include_str!(concat!("../../schemas/", $name, ".json"))
    };
}

const PATH: &[Target] = &[Target::Path("path")];

impl Tool {
    pub const ALL: [Tool; 19] = [
        Tool::ReadFile,
        Tool::ReadMultipleFiles,
        Tool::WriteFile,
        Tool::CreateDirectory,
        Tool::ListDirectory,
        Tool::DirectoryTree,
        Tool::MoveFile,
        Tool::CopyFile,
        Tool::DeleteFile,
        Tool::GetFileInfo,
        Tool::ListAllowedDirectories,
        Tool::EditFile,
        Tool::EditFiles,
        Tool::ApplyPatch,
        Tool::SearchFiles,
        Tool::GlobSearch,
        Tool::GrepFiles,
        Tool::ExecuteCommand,
        Tool::CommandSession,
    ];

    /// The tool named `name`, if replay has one.
    pub fn from_name(name: &str) -> Option<Tool> {
        Tool::ALL.into_iter().find(|tool| tool.name() == name)
    }

    pub fn name(self) -> &'static str {
        self.spec().name
    }

    /// Whether it runs or drives commands (`--no-exec` leaves these out).
    pub fn runs_commands(self) -> bool {
        self.spec().effect == Effect::OpenWorld
    }

    /// Whether the tool changes anything: files, or whatever a shell can reach.
    pub fn writes(self) -> bool {
        self.spec().effect != Effect::ReadOnly
    }

    /// The keys a call of this tool with `args` takes its write turn on
    /// (`write_order::keys`), or `None` when it takes none: it changes no file, or no argument
    /// names what it changes (execute_command).
    pub fn write_keys(self, policy: &Policy, args: &Value) -> Option<Vec<PathBuf>> {
        match self.spec().effect {
            Effect::Writes(targets) => write_order::keys(policy, targets, args),
            Effect::ReadOnly | Effect::OpenWorld => None,
        }
    }

    /// The table.
    pub fn spec(self) -> Spec {
        use Effect::{OpenWorld, ReadOnly, Writes};
        use Runs::{Inline, InlineWithout, Pool};
        match self {
            Tool::ReadFile => Spec {
                name: "read_file",
                schema: schema!("read_file"),
                handler: |ctx, args| read::read_file(ctx, parse(args)?),
                effect: ReadOnly,
                holds_data: true,
                command_place: false,
                runs: InlineWithout("offset"),
                aliases: None,
            },
            Tool::ReadMultipleFiles => Spec {
                name: "read_multiple_files",
                schema: schema!("read_multiple_files"),
                handler: |ctx, args| read::read_multiple_files(ctx, parse(args)?),
                effect: ReadOnly,
                holds_data: true,
                command_place: false,
                runs: Pool,
                aliases: None,
            },
            Tool::WriteFile => Spec {
                name: "write_file",
                schema: schema!("write_file"),
                handler: |ctx, args| write::write_file(ctx, parse(args)?),
                effect: Writes(PATH),
                holds_data: false,
                command_place: false,
                runs: Pool,
                aliases: None,
            },
            Tool::CreateDirectory => Spec {
                name: "create_directory",
                schema: schema!("create_directory"),
                handler: |ctx, args| directory::create_directory(ctx, parse(args)?),
                effect: Writes(PATH),
                holds_data: false,
                command_place: false,
                runs: Pool,
                aliases: None,
            },
            Tool::ListDirectory => Spec {
                name: "list_directory",
                schema: schema!("list_directory"),
                handler: |ctx, args| directory::list_directory(ctx, parse(args)?),
                effect: ReadOnly,
                holds_data: true,
                command_place: false,
                runs: Pool,
                aliases: None,
            },
            Tool::DirectoryTree => Spec {
                name: "directory_tree",
                schema: schema!("directory_tree"),
                handler: |ctx, args| directory::tree::directory_tree(ctx, parse(args)?),
                effect: ReadOnly,
                holds_data: true,
                command_place: false,
                runs: Pool,
                aliases: None,
            },
            Tool::MoveFile => Spec {
                name: "move_file",
                schema: schema!("move_file"),
                handler: |ctx, args| relocate::move_file(ctx, parse(args)?),
                effect: Writes(&[Target::Path("source"), Target::Path("destination")]),
                holds_data: false,
                command_place: false,
                runs: Pool,
                aliases: None,
            },
            Tool::CopyFile => Spec {
                name: "copy_file",
                schema: schema!("copy_file"),
                handler: |ctx, args| copy::copy_file(ctx, parse(args)?),
                effect: Writes(&[Target::Path("source"), Target::Path("destination")]),
                holds_data: false,
                command_place: false,
                runs: Pool,
                aliases: None,
            },
            Tool::DeleteFile => Spec {
                name: "delete_file",
                schema: schema!("delete_file"),
                handler: |ctx, args| delete::delete_file(ctx, parse(args)?),
                effect: Writes(PATH),
                holds_data: false,
                command_place: false,
                runs: Pool,
                aliases: None,
            },
            Tool::GetFileInfo => Spec {
                name: "get_file_info",
                schema: schema!("get_file_info"),
                handler: |ctx, args| info::get_file_info(ctx, parse(args)?),
                effect: ReadOnly,
                holds_data: false,
                command_place: false,
                runs: Pool,
                aliases: None,
            },
            Tool::ListAllowedDirectories => Spec {
                name: "list_allowed_directories",
                schema: schema!("list_allowed_directories"),
                handler: |ctx, _| Ok(info::list_allowed_directories(ctx)),
                effect: ReadOnly,
                holds_data: false,
                command_place: false,
                runs: Inline,
                aliases: None,
            },
            Tool::EditFile => Spec {
                name: "edit_file",
                schema: schema!("edit_file"),
                handler: |ctx, args| edit::edit_file(ctx, parse(args)?),
                effect: Writes(PATH),
                holds_data: true,
                command_place: false,
                runs: Pool,
                aliases: None,
            },
            Tool::EditFiles => Spec {
                name: "edit_files",
                schema: schema!("edit_files"),
                handler: |ctx, args| edit::edit_files(ctx, parse(args)?),
                effect: Writes(&[Target::GlobBases("paths")]),
                holds_data: true,
                command_place: false,
                runs: Pool,
                aliases: None,
            },
            Tool::ApplyPatch => Spec {
                name: "apply_patch",
                schema: schema!("apply_patch"),
                handler: |ctx, args| patch::apply_patch(ctx, parse(args)?),
                effect: Writes(&[Target::Found(patch::targets)]),
                holds_data: true,
                command_place: false,
                runs: Pool,
                aliases: None,
            },
            Tool::SearchFiles => Spec {
                name: "search_files",
                schema: schema!("search_files"),
                handler: |ctx, args| find::search_files(ctx, parse(args)?),
                effect: ReadOnly,
                holds_data: true,
                command_place: false,
                runs: Pool,
                aliases: Some(find::map_search_aliases),
            },
            Tool::GlobSearch => Spec {
                name: "glob_search",
                schema: schema!("glob_search"),
                handler: |ctx, args| find::glob_search(ctx, parse(args)?),
                effect: ReadOnly,
                holds_data: true,
                command_place: false,
                runs: Pool,
                aliases: None,
            },
            Tool::GrepFiles => Spec {
                name: "grep_files",
                schema: schema!("grep_files"),
                handler: |ctx, args| grep::grep_files(ctx, parse(args)?),
                effect: ReadOnly,
                holds_data: true,
                command_place: false,
                runs: Pool,
                aliases: None,
            },
            Tool::ExecuteCommand => Spec {
                name: "execute_command",
                schema: schema!("execute_command"),
                handler: |ctx, args| exec::execute_command(ctx, parse(args)?),
                effect: OpenWorld,
                holds_data: false,
                command_place: true,
                runs: Pool,
                aliases: None,
            },
            Tool::CommandSession => Spec {
                name: "command_session",
                schema: schema!("command_session"),
                handler: |ctx, args| exec::command_session::command_session(ctx, parse(args)?),
                effect: OpenWorld,
                holds_data: false,
                command_place: false,
                runs: Pool,
                aliases: None,
            },
        }
    }
}

/// Deserializes validated arguments. Failing here means a schema is looser than its struct.
fn parse<T: DeserializeOwned>(args: Value) -> Result<T, ToolError> {
    serde_json::from_value(args).map_err(|e| ToolError::invalid_params("arguments", e.to_string()))
}

#[cfg(test)]
mod tests;
