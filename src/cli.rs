//! The command line (clap): the server's flags, the subcommands `call`, `tools`, `schema` and
//! `print-config`, and the `Config` built once from them, with canonical allowed roots.
//!
//! A subcommand is recognized only as the first argument. Anything else is the server's command
//! line, exactly as before the subcommands existed: with `--mcp-server`, every bare word is a
//! directory, so `replay --mcp-server tools` serves the directory `tools`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use clap::{ArgMatches, Args, CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::client_config::{self, Client};
use crate::oneshot;
use crate::policy::{canonical_root, expand_home, Access, AllowedRoot, MAX_ROOTS};
use crate::sandbox::SandboxConfig;
use crate::selection::{self, Selection, UnknownTool, WRITERS};

/// The subcommands whose name, given first, is not a directory. (`print-config` takes the
/// server's flags, `--mcp-server` included, so it is not listed: see `misplaced_mcp_server`.)
const NOT_SERVING: &[&str] = &["call", "tools", "schema"];

const AFTER_HELP: &str = "\
Examples:
  replay --mcp-server --allow ~/project:rw --allow /usr/share/doc:ro
  replay call read_file '{\"path\":\"README.md\"}' --allow .
  replay print-config claude-desktop --allow ~/project

A subcommand counts only as the first argument. With --mcp-server every bare word is a
directory: `replay --mcp-server tools` serves the directory ./tools.";

const CALL_HELP: &str = "\
Exit status: 0 when the tool succeeded; 1 when it failed, with `error CODE: message` on stderr \
(CODE is the contract's: -32001 a refused path, -32002 not found, -32602 arguments that do not \
match the tool's schema or a tool this configuration does not serve, -32603 an I/O error); 2 on \
a usage error (an unknown flag, a name no tool has, JSON-ARGS that is not JSON); 128+N when \
signal N (Ctrl-C: 130) cancelled the call, killing any command it had started.

Directories after JSON-ARGS are allowed read-write, as the server's are; they need JSON-ARGS \
before them (`{}` for none).";

#[derive(Debug, Parser)]
#[command(
    name = "replay",
    version,
    about = "A Model Context Protocol filesystem server over stdio, fenced by allowed directories",
    after_help = AFTER_HELP,
    args_conflicts_with_subcommands = true,
    disable_help_subcommand = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,

    /// Serve MCP (JSON-RPC 2.0, one message per line) on stdin/stdout.
    #[arg(long)]
    mcp_server: bool,

    #[command(flatten)]
    policy: PolicyArgs,

    #[command(flatten)]
    replies: ReplyArgs,

    /// Allowed directories, read-write (or with a `:ro`/`:rw` suffix), as the official
    /// filesystem server takes them.
    #[arg(value_name = "DIR")]
    dirs: Vec<String>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run one tool without an MCP client, through the server's schemas, policy and sandbox,
    /// and print its text result.
    #[command(after_help = CALL_HELP)]
    Call(CallArgs),
    /// List the tools served (with --read-only, --tools, --disable-tool or --no-exec, the ones
    /// those leave), each with the first sentence of its description.
    Tools(SelectionArgs),
    /// Print a tool's input schema (JSON), as schemas/ defines it.
    Schema {
        /// The tool (see `replay tools`).
        #[arg(value_name = "TOOL")]
        tool: String,
    },
    /// Print a client's configuration that starts this binary (by its absolute path) as a
    /// server with the flags given here.
    PrintConfig(PrintConfigArgs),
}

#[derive(Debug, Args)]
struct CallArgs {
    /// The tool to run (see `replay tools`).
    #[arg(value_name = "TOOL")]
    tool: String,

    /// The tool's arguments, one JSON object (`{}` when absent); `-` reads it from stdin.
    #[arg(value_name = "JSON-ARGS")]
    args: Option<String>,

    /// Print the whole MCP result object as JSON (on failure, the `isError` result that
    /// `--tool-errors result` gives) instead of its text.
    #[arg(long)]
    json: bool,

    #[command(flatten)]
    policy: PolicyArgs,

    /// Allowed directories, read-write (or with a `:ro`/`:rw` suffix), after JSON-ARGS.
    #[arg(value_name = "DIR")]
    dirs: Vec<String>,
}

#[derive(Debug, Args)]
struct PrintConfigArgs {
    /// The client whose configuration to print.
    #[arg(value_enum, value_name = "CLIENT")]
    client: Client,

    /// For claude-code, the `.mcp.json` entry instead of the `claude mcp add` command line (the
    /// other clients' configurations are JSON already).
    #[arg(long)]
    json: bool,

    /// Accepted and implied: the configuration starts a server.
    #[arg(long, hide = true)]
    mcp_server: bool,

    #[command(flatten)]
    policy: PolicyArgs,

    #[command(flatten)]
    replies: ReplyArgs,

    /// Allowed directories, read-write (or with a `:ro`/`:rw` suffix).
    #[arg(value_name = "DIR")]
    dirs: Vec<String>,
}

/// The flags that shape what a server (or one `replay call`) may do.
#[derive(Debug, Args)]
struct PolicyArgs {
    /// An allowed directory; `:ro` makes it read-only, `:rw` (the default) read-write.
    #[arg(long = "allow", value_name = "PATH[:rw|:ro]")]
    allow: Vec<String>,

    /// A read-only allowed directory (the same as `--allow PATH:ro`).
    #[arg(long = "allow-read", value_name = "PATH")]
    allow_read: Vec<String>,

    /// A read-write allowed directory (the same as `--allow PATH:rw`).
    #[arg(long = "allow-write", value_name = "PATH")]
    allow_write: Vec<String>,

    #[command(flatten)]
    selection: SelectionArgs,

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

    /// Log filter for stderr (error, warn, info, debug, trace, or a tracing directive);
    /// `RUST_LOG` is used when this is absent.
    #[arg(long, value_name = "LEVEL")]
    log_level: Option<String>,
}

/// Which tools are served. A tool left out is missing from tools/list and refused by
/// tools/call as a name no tool has; a tool is served when every flag allows it.
#[derive(Debug, Args)]
struct SelectionArgs {
    /// Every allowed directory read-only (even `:rw` ones, and a client's roots), and the
    /// writing tools left out (their list is filled in by `with_generated_help`).
    #[arg(long)]
    read_only: bool,

    /// Serve only these tools (comma-separated, or the flag repeated). An unknown name is a
    /// usage error.
    #[arg(long = "tools", value_name = "NAME,...", value_delimiter = ',')]
    tools: Option<Vec<String>>,

    /// Do not serve this tool. Repeatable. An unknown name is a usage error.
    #[arg(long = "disable-tool", value_name = "NAME")]
    disable_tool: Vec<String>,

    /// Leave execute_command and command_session out: no shell for this client (the same as
    /// `--disable-tool execute_command --disable-tool command_session`).
    #[arg(long)]
    no_exec: bool,
}

/// How tool failures are answered; a server's flag, not `replay call`'s.
#[derive(Debug, Args)]
struct ReplyArgs {
    /// How a failing tool call is answered: `rpc`, a JSON-RPC error with the contract's code
    /// (the default); or `result`, an `isError: true` result whose text carries the code and
    /// message, for hosts that hide JSON-RPC errors from the model.
    #[arg(long, value_name = "rpc|result", default_value = "rpc", value_parser = ["rpc", "result"])]
    tool_errors: String,
}

/// The server's configuration, valid by construction: every root exists, is a directory and is
/// canonical. The first root is the project directory.
#[derive(Debug)]
pub struct Config {
    /// With `--read-only`, every one is read-only.
    pub roots: Vec<AllowedRoot>,
    /// `--read-only`: a client's roots become read-only too.
    pub read_only: bool,
    pub home: Option<PathBuf>,
    pub log_filter: Option<String>,
    /// The tools the selection flags leave out (`Settings::disabled_tools`).
    pub disabled_tools: Vec<String>,
    pub deny_commands: Vec<String>,
    pub sandbox: SandboxConfig,
    pub tool_errors: ToolErrors,
}

/// `replay call`: one tool call under `config`.
#[derive(Debug)]
pub struct OneShot {
    pub config: Config,
    pub tool: String,
    pub args: oneshot::Arguments,
    pub json: bool,
}

/// `replay print-config`: the client and the server's command line, paths made absolute.
#[derive(Debug)]
pub struct PrintConfig {
    pub client: Client,
    pub json: bool,
    pub server_args: Vec<String>,
}

/// What `main` should do.
#[derive(Debug)]
pub enum Invocation {
    Serve(Config),
    Call(OneShot),
    /// `replay tools`: the tools served, in tools/list order.
    Tools(Vec<&'static str>),
    /// `replay schema`: a tool that exists.
    Schema(String),
    PrintConfig(PrintConfig),
    /// `--help` or `--version`: print this to stdout and exit 0.
    Help(String),
    /// Print this to stderr and exit with this status.
    Exit {
        message: String,
        status: i32,
    },
}

/// Why a configuration could not be built, and the exit status that says so.
struct Stop {
    message: String,
    status: i32,
}

fn usage_error(message: impl Into<String>) -> Invocation {
    Invocation::Exit { message: message.into(), status: 2 }
}

pub fn parse() -> Invocation {
    parse_from(std::env::args_os().collect())
}

/// The command with the help texts only code can write.
fn command() -> clap::Command {
    with_generated_help(Cli::command())
}

/// `--read-only`'s help names the tools it leaves out, from `selection::WRITERS`.
fn with_generated_help(command: clap::Command) -> clap::Command {
    let help = format!(
        "Every allowed directory read-only (even `:rw` ones, and a client's roots), and the tools \
         that change files or run commands left out: {}",
        WRITERS.join(", ")
    );
    let has_read_only = command.get_arguments().any(|a| a.get_id() == "read_only");
    let command =
        if has_read_only { command.mut_arg("read_only", |a| a.help(help)) } else { command };
    let names: Vec<String> = command.get_subcommands().map(|s| s.get_name().to_string()).collect();
    names.iter().fold(command, |command, name| command.mut_subcommand(name, with_generated_help))
}

pub fn parse_from(args: Vec<OsString>) -> Invocation {
    if let Some(exit) = misplaced_mcp_server(&args) {
        return exit;
    }
    let matches = match command().try_get_matches_from(args) {
        Ok(m) => m,
        Err(e) => {
            let status = if e.use_stderr() { 2 } else { 0 };
            let message = e.render().to_string();
            // --help and --version go to stdout by convention, through the transport like
            // every other byte there.
            if !e.use_stderr() {
                return Invocation::Help(message);
            }
            return Invocation::Exit { message, status };
        }
    };
    let mut cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => return usage_error(e.render().to_string()),
    };
    let sub_matches = matches.subcommand().map(|(_, m)| m);
    match (cli.command.take(), sub_matches) {
        (Some(Command::Call(call)), Some(m)) => call_invocation(call, m),
        (Some(Command::Tools(selection)), _) => match selection_of(&selection).check() {
            Ok(()) => Invocation::Tools(selection_of(&selection).served()),
            Err(unknown) => usage_error(unknown.to_string()),
        },
        (Some(Command::Schema { tool }), _) if selection::is_tool(&tool) => {
            Invocation::Schema(tool)
        }
        (Some(Command::Schema { tool }), _) => {
            usage_error(UnknownTool { flag: "schema", name: tool }.to_string())
        }
        (Some(Command::PrintConfig(print)), Some(m)) => print_config_invocation(print, m),
        (Some(_), None) => usage_error("replay: a subcommand without its arguments"),
        (None, _) => serve_invocation(&cli, &matches),
    }
}

/// `replay tools --mcp-server`: once, that served a directory named `tools`; now `tools` is a
/// subcommand there, and the message says how to serve the directory.
fn misplaced_mcp_server(args: &[OsString]) -> Option<Invocation> {
    let first = args.get(1)?.to_str()?;
    if !NOT_SERVING.contains(&first) || !args.iter().any(|a| a == "--mcp-server") {
        return None;
    }
    Some(usage_error(format!(
        "replay: `{first}` is a subcommand when it comes first, and --mcp-server does not go \
         with it. To serve a directory named {first}, write it as a path after the flag:\n  \
         replay --mcp-server ./{first}"
    )))
}

fn serve_invocation(cli: &Cli, matches: &ArgMatches) -> Invocation {
    if !cli.mcp_server {
        let usage = Cli::command().render_usage().to_string();
        let message = format!(
            "{usage}\n\nreplay serves MCP only with --mcp-server, e.g.\n  replay --mcp-server --allow DIR[:rw|:ro]\nOr give a subcommand first: call, tools, schema, print-config.\nSee replay --help."
        );
        return usage_error(message);
    }
    match config(&cli.policy, &cli.replies.tool_errors, &cli.dirs, matches) {
        Ok(config) => Invocation::Serve(config),
        Err(Stop { message, status }) => Invocation::Exit { message, status },
    }
}

fn call_invocation(call: CallArgs, matches: &ArgMatches) -> Invocation {
    if !selection::is_tool(&call.tool) {
        return usage_error(UnknownTool { flag: "call", name: call.tool }.to_string());
    }
    let args = match oneshot::arguments(call.args.as_deref()) {
        Ok(args) => args,
        Err(message) => return usage_error(message),
    };
    match config(&call.policy, "rpc", &call.dirs, matches) {
        Ok(config) => Invocation::Call(OneShot { config, tool: call.tool, args, json: call.json }),
        Err(Stop { message, status }) => Invocation::Exit { message, status },
    }
}

fn print_config_invocation(print: PrintConfigArgs, matches: &ArgMatches) -> Invocation {
    let policy = &print.policy;
    if let Err(unknown) = selection_of(&policy.selection).check() {
        return usage_error(unknown.to_string());
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let requested = requested_roots(policy, &print.dirs, matches);
    let roots = match canonical_roots(requested, home.as_deref()) {
        Ok(roots) => roots,
        Err(message) => return Invocation::Exit { message, status: 1 },
    };
    match server_args(policy, &roots, &print.replies.tool_errors, home.as_deref()) {
        Ok(server_args) => Invocation::PrintConfig(PrintConfig {
            client: print.client,
            json: print.json,
            server_args,
        }),
        Err(message) => Invocation::Exit { message, status: 1 },
    }
}

fn selection_of(args: &SelectionArgs) -> Selection {
    let mut disabled = args.disable_tool.clone();
    if args.no_exec {
        disabled.extend(["execute_command".to_string(), "command_session".to_string()]);
    }
    Selection { read_only: args.read_only, only: args.tools.clone(), disabled }
}

/// The configuration the flags describe: a usage error (exit 2) for an unknown tool name, exit
/// 1 for a directory that cannot be used.
fn config(
    policy: &PolicyArgs,
    tool_errors: &str,
    dirs: &[String],
    matches: &ArgMatches,
) -> Result<Config, Stop> {
    let selection = selection_of(&policy.selection);
    selection.check().map_err(|unknown| Stop { message: unknown.to_string(), status: 2 })?;
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let requested = requested_roots(policy, dirs, matches);
    let mut roots = canonical_roots(requested, home.as_deref())
        .map_err(|message| Stop { message, status: 1 })?;
    if selection.read_only {
        for root in &mut roots {
            root.access = Access::Read;
        }
    }
    let extra_read = policy.sandbox_read.iter().map(|p| expand_home(p, home.as_deref())).collect();
    let sandbox = SandboxConfig {
        enabled: !policy.no_sandbox,
        deny_network: policy.deny_network,
        extra_read,
    };
    Ok(Config {
        roots,
        read_only: selection.read_only,
        home,
        log_filter: policy.log_level.clone(),
        disabled_tools: selection.left_out(),
        deny_commands: policy.deny_command.clone(),
        sandbox,
        tool_errors: if tool_errors == "result" { ToolErrors::Result } else { ToolErrors::Rpc },
    })
}

/// The roots in command-line order, whichever flag named them.
fn requested_roots(
    policy: &PolicyArgs,
    dirs: &[String],
    matches: &ArgMatches,
) -> Vec<(String, Access)> {
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
    add("allow", &policy.allow, None);
    add("allow_read", &policy.allow_read, Some(Access::Read));
    add("allow_write", &policy.allow_write, Some(Access::Write));
    add("dirs", dirs, None);
    indexed.sort_by_key(|(idx, ..)| *idx);
    indexed.into_iter().map(|(_, path, access)| (path, access)).collect()
}

/// The server's arguments for a client's configuration: the flags given to `print-config`,
/// with every path absolute (a client starts the server from a directory of its own).
fn server_args(
    policy: &PolicyArgs,
    roots: &[AllowedRoot],
    tool_errors: &str,
    home: Option<&Path>,
) -> Result<Vec<String>, String> {
    let mut args = vec!["--mcp-server".to_string()];
    let mut push = |flag: &str, value: Option<String>| {
        args.push(flag.to_string());
        args.extend(value);
    };
    for root in roots {
        let suffix = if root.access == Access::Write { "rw" } else { "ro" };
        push("--allow", Some(format!("{}:{suffix}", client_config::path_text(&root.path)?)));
    }
    let selection = &policy.selection;
    if selection.read_only {
        push("--read-only", None);
    }
    if let Some(tools) = &selection.tools {
        push("--tools", Some(tools.join(",")));
    }
    for name in &selection.disable_tool {
        push("--disable-tool", Some(name.clone()));
    }
    if selection.no_exec {
        push("--no-exec", None);
    }
    for name in &policy.deny_command {
        push("--deny-command", Some(name.clone()));
    }
    if policy.no_sandbox {
        push("--no-sandbox", None);
    }
    if policy.deny_network {
        push("--deny-network", None);
    }
    for raw in &policy.sandbox_read {
        let path = std::path::absolute(expand_home(raw, home))
            .map_err(|e| format!("replay: --sandbox-read {raw:?}: {e}"))?;
        push("--sandbox-read", Some(client_config::path_text(&path)?.to_string()));
    }
    if tool_errors != "rpc" {
        push("--tool-errors", Some(tool_errors.to_string()));
    }
    if let Some(level) = &policy.log_level {
        push("--log-level", Some(level.clone()));
    }
    Ok(args)
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
        if roots.len() > MAX_ROOTS {
            return Err(format!(
                "replay: more than {MAX_ROOTS} allowed directories; at most {MAX_ROOTS} are allowed: allow a common parent directory instead"
            ));
        }
    }
    Ok(roots)
}

#[cfg(test)]
mod tests;

/// How a failing tool call is answered (`--tool-errors`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolErrors {
    /// A JSON-RPC error with the contract's code (the default).
    #[default]
    Rpc,
    /// A result with `isError: true` whose text carries the code and the message (and, with
    /// structured output, `structuredContent: {error: {code, message}}`), so that a host that
    /// hides JSON-RPC errors still shows the model what went wrong.
    Result,
}
