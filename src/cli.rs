//! The command line (clap) and the `Config` built from it once, with canonical allowed roots.

use std::path::{Path, PathBuf};

use clap::{CommandFactory, FromArgMatches, Parser};

use crate::policy::{canonical_root, Access, AllowedRoot};
use crate::protocol::session::ToolErrors;
use crate::sandbox::SandboxConfig;

#[derive(Debug, Parser)]
#[command(
    name = "replay",
    version,
    about = "A Model Context Protocol filesystem server over stdio, fenced by allowed directories",
    after_help = "Example:\n  replay --mcp-server --allow ~/project:rw --allow /usr/share/doc:ro"
)]
struct Cli {
    /// Serve MCP (JSON-RPC 2.0, one message per line) on stdin/stdout.
    #[arg(long)]
    mcp_server: bool,

    /// An allowed directory; `:ro` makes it read-only, `:rw` (the default) read-write.
    #[arg(long = "allow", value_name = "PATH[:rw|:ro]")]
    allow: Vec<String>,

    /// A read-only allowed directory (the same as `--allow PATH:ro`).
    #[arg(long = "allow-read", value_name = "PATH")]
    allow_read: Vec<String>,

    /// A read-write allowed directory (the same as `--allow PATH:rw`).
    #[arg(long = "allow-write", value_name = "PATH")]
    allow_write: Vec<String>,

    /// Log filter for stderr (error, warn, info, debug, trace, or a tracing directive);
    /// `RUST_LOG` is used when this is absent.
    #[arg(long, value_name = "LEVEL")]
    log_level: Option<String>,

    /// Leave execute_command out: no shell for this client.
    #[arg(long)]
    no_exec: bool,

    /// Refuse execute_command commands that run NAME (a convenience, not a security boundary:
    /// `sh -c`, `eval` or a variable get around it). Repeatable.
    #[arg(long = "deny-command", value_name = "NAME")]
    deny_command: Vec<String>,

    /// Do not confine the server with Landlock (it is on by default where the kernel has it).
    #[arg(long)]
    no_sandbox: bool,

    /// Deny TCP connect and bind to the server and every command it runs (Landlock ABI 4+).
    #[arg(long)]
    deny_network: bool,

    /// One more directory the sandbox lets commands read and execute (a toolchain under your
    /// home directory, say). Repeatable.
    #[arg(long = "sandbox-read", value_name = "PATH")]
    sandbox_read: Vec<String>,

    /// How a failing tool call is answered: `rpc`, a JSON-RPC error with the contract's code
    /// (the default); or `result`, an `isError: true` result whose text carries the code and
    /// message, for hosts that hide JSON-RPC errors from the model.
    #[arg(long, value_name = "rpc|result", default_value = "rpc", value_parser = ["rpc", "result"])]
    tool_errors: String,

    /// Allowed directories, read-write, as the official filesystem server takes them.
    #[arg(value_name = "DIR")]
    dirs: Vec<String>,
}

/// The server's configuration, valid by construction: every root exists, is a directory and is
/// canonical. The first root is the project directory.
#[derive(Debug)]
pub struct Config {
    pub roots: Vec<AllowedRoot>,
    pub home: Option<PathBuf>,
    pub log_filter: Option<String>,
    pub no_exec: bool,
    pub deny_commands: Vec<String>,
    pub sandbox: SandboxConfig,
    pub tool_errors: ToolErrors,
}

/// What `main` should do.
pub enum Invocation {
    Serve(Config),
    /// Print this to stderr and exit with this status.
    Exit {
        message: String,
        status: i32,
    },
}

pub fn parse() -> Invocation {
    let command = Cli::command();
    let matches = match command.try_get_matches() {
        Ok(m) => m,
        Err(e) => {
            let status = if e.use_stderr() { 2 } else { 0 };
            let message = e.render().to_string();
            // --help and --version go to stdout by convention; they run before any server does.
            if !e.use_stderr() {
                let _ = e.print();
                return Invocation::Exit { message: String::new(), status };
            }
            return Invocation::Exit { message, status };
        }
    };
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => return Invocation::Exit { message: e.render().to_string(), status: 2 },
    };
    if !cli.mcp_server {
        let usage = Cli::command().render_usage().to_string();
        let message = format!(
            "{usage}\n\nreplay serves MCP only with --mcp-server, e.g.\n  replay --mcp-server --allow DIR[:rw|:ro]\nSee replay --help."
        );
        return Invocation::Exit { message, status: 2 };
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let requested = requested_roots(&cli, &matches);
    match canonical_roots(requested, home.as_deref()) {
        Ok(roots) => {
            let extra_read =
                cli.sandbox_read.iter().map(|p| expand_home(p, home.as_deref())).collect();
            let sandbox = SandboxConfig {
                enabled: !cli.no_sandbox,
                deny_network: cli.deny_network,
                extra_read,
            };
            Invocation::Serve(Config {
                roots,
                home,
                log_filter: cli.log_level,
                no_exec: cli.no_exec,
                deny_commands: cli.deny_command,
                sandbox,
                tool_errors: if cli.tool_errors == "result" {
                    ToolErrors::Result
                } else {
                    ToolErrors::Rpc
                },
            })
        }
        Err(message) => Invocation::Exit { message, status: 1 },
    }
}

/// The roots in command-line order, whichever flag named them.
fn requested_roots(cli: &Cli, matches: &clap::ArgMatches) -> Vec<(String, Access)> {
    let mut indexed: Vec<(usize, String, Access)> = Vec::new();
    let mut add = |id: &str, values: &[String], fixed: Option<Access>| {
        let indices = matches.indices_of(id).into_iter().flatten();
        for (idx, value) in indices.zip(values) {
            let (path, access) = match fixed {
                Some(access) => (value.clone(), access),
                None => split_access(value),
            };
            indexed.push((idx, path, access));
        }
    };
    add("allow", &cli.allow, None);
    add("allow_read", &cli.allow_read, Some(Access::Read));
    add("allow_write", &cli.allow_write, Some(Access::Write));
    add("dirs", &cli.dirs, None);
    indexed.sort_by_key(|(idx, ..)| *idx);
    indexed.into_iter().map(|(_, path, access)| (path, access)).collect()
}

/// `PATH:ro` → read-only, `PATH:rw` or a bare `PATH` → read-write. Only a trailing suffix counts,
/// so paths that contain a colon elsewhere still work.
fn split_access(value: &str) -> (String, Access) {
    if let Some(path) = value.strip_suffix(":ro") {
        return (path.to_string(), Access::Read);
    }
    if let Some(path) = value.strip_suffix(":rw") {
        return (path.to_string(), Access::Write);
    }
    (value.to_string(), Access::Write)
}

/// Canonicalizes each root; a directory named twice is listed once, read-write winning.
fn canonical_roots(
    requested: Vec<(String, Access)>,
    home: Option<&Path>,
) -> Result<Vec<AllowedRoot>, String> {
    let mut roots: Vec<AllowedRoot> = Vec::new();
    for (raw, access) in requested {
        let expanded = expand_home(&raw, home);
        let path = canonical_root(&expanded)
            .map_err(|e| format!("replay: allowed directory {raw:?} cannot be used: {e}"))?;
        match roots.iter_mut().find(|r| r.path == path) {
            Some(existing) if access == Access::Write => existing.access = Access::Write,
            Some(_) => {}
            None => roots.push(AllowedRoot { path, access }),
        }
    }
    Ok(roots)
}

fn expand_home(raw: &str, home: Option<&Path>) -> PathBuf {
    match (home, Path::new(raw).strip_prefix("~")) {
        (Some(home), Ok(rest)) => home.join(rest),
        _ => PathBuf::from(raw),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(input: &str, expect: (&str, Access)) {
        let (path, access) = split_access(input);
        assert_eq!((path.as_str(), access), expect);
    }

    #[test]
    fn access_suffixes() {
        check("/a", ("/a", Access::Write));
        check("/a:rw", ("/a", Access::Write));
        check("/a:ro", ("/a", Access::Read));
        check("/a:b", ("/a:b", Access::Write));
        check("/a:b:ro", ("/a:b", Access::Read));
    }
}
