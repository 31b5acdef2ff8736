//! The command line (clap): the server's flags, the subcommands `call`, `tools`, `schema`,
//! `print-config`, `install` and `uninstall`, and the `Config` built once from them, with canonical allowed roots.
//!
//! A subcommand is recognized only as the first argument. Anything else is the server's command
//! line, exactly as before the subcommands existed: with `--mcp-server`, every bare word is a
//! directory, so `replay --mcp-server tools` serves the directory `tools`.

use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::{ArgMatches, Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use serde_json::{json, Value};

use crate::audit::{self, AuditLog};
use crate::client_config::{self, Client};
use crate::policy::deny::DenyRules;
use crate::policy::{canonical_root, expand_home, Access, AllowedRoot, MAX_ROOTS};
use crate::protocol::ToolErrors;
use crate::reply_size::REPLY_TOKENS;
use crate::sandbox::SandboxConfig;
use crate::selection::{self, Selection, UnknownTool};
use crate::tools::limits::{self, CommandLimits};
use crate::tools::table::Tool;

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

    #[command(flatten)]
    audit: AuditArgs,

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
    /// Add the server entry that starts this binary (with the flags given here) to a client's
    /// config file, keeping everything else in it; a backup of the old file is kept beside it.
    Install(InstallArgs),
    /// Remove the server entry from a client's config file, keeping everything else in it.
    Uninstall(UninstallArgs),
    /// Print what execute_command's commands may read, execute and write on this machine
    /// under the flags given here, and why; and what stays out.
    Sandbox(SandboxArgs),
}

#[derive(Debug, Args)]
struct SandboxArgs {
    #[command(flatten)]
    policy: PolicyArgs,

    /// Allowed directories, read-write (or with a `:ro`/`:rw` suffix).
    #[arg(value_name = "DIR")]
    dirs: Vec<String>,
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

    #[command(flatten)]
    audit: AuditArgs,

    /// Allowed directories, read-write (or with a `:ro`/`:rw` suffix).
    #[arg(value_name = "DIR")]
    dirs: Vec<String>,
}

#[derive(Debug, Args)]
struct InstallArgs {
    /// The client whose config file to edit.
    #[arg(value_enum, value_name = "CLIENT")]
    client: Client,

    #[command(flatten)]
    target: TargetArgs,

    /// Start the server through `npx -y replay-mcp` instead of this binary's absolute path.
    #[arg(long)]
    npx: bool,

    /// Replace a `replay` entry that differs from the one to write.
    #[arg(long)]
    force: bool,

    /// Accepted and implied: the entry starts a server.
    #[arg(long, hide = true)]
    mcp_server: bool,

    #[command(flatten)]
    policy: PolicyArgs,

    #[command(flatten)]
    replies: ReplyArgs,

    #[command(flatten)]
    audit: AuditArgs,

    /// Allowed directories, read-write (or with a `:ro`/`:rw` suffix).
    #[arg(value_name = "DIR")]
    dirs: Vec<String>,
}

#[derive(Debug, Args)]
struct UninstallArgs {
    /// The client whose config file to edit.
    #[arg(value_enum, value_name = "CLIENT")]
    client: Client,

    #[command(flatten)]
    target: TargetArgs,
}

/// Which config file `install` and `uninstall` edit, and whether they only show the diff.
#[derive(Debug, Args)]
struct TargetArgs {
    /// Edit this file instead of the client's user-wide config file.
    #[arg(long, value_name = "PATH", conflicts_with = "project")]
    config: Option<PathBuf>,

    /// Edit the config file of the project in DIR (`.mcp.json` for claude-code,
    /// `.vscode/mcp.json` for vscode, …) instead of the user-wide one.
    #[arg(long, value_name = "DIR")]
    project: Option<PathBuf>,

    /// Print the diff of the change on stdout and leave the file as it is.
    #[arg(long)]
    dry_run: bool,
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

    /// Hide paths matching GLOB inside the allowed directories from every tool and command: a
    /// glob without `/` matches a name at any depth (`.env`), a relative one a path at any
    /// depth (`secrets/**`), an absolute one is anchored. Repeatable; added to the default
    /// rules, which `replay sandbox` lists.
    #[arg(long = "deny", value_name = "GLOB")]
    deny: Vec<String>,

    /// Drop the default deny rules (.env, .env.*, *.pem, *.key, id_rsa*, .ssh/, .aws/, .netrc,
    /// credentials.json and more: see `replay sandbox`).
    #[arg(long)]
    no_default_deny: bool,

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

    /// One more directory commands may write (never the file tools): a cache of a build tool
    /// the toolchain grants do not know, say. Repeatable. See `replay sandbox`.
    #[arg(long = "sandbox-write", value_name = "PATH")]
    sandbox_write: Vec<String>,

    /// No toolchain grants: commands reach only the allowed directories, the system, the
    /// PATH directories and --sandbox-read/--sandbox-write ones. See `replay sandbox`.
    #[arg(long = "sandbox-strict")]
    sandbox_strict: bool,

    /// The data each process of a command may map, as 512M or 8G; 0 is unlimited. A larger
    /// allocation fails (default 8G).
    #[arg(long = "command-memory", value_name = "SIZE")]
    command_memory: Option<String>,

    /// The largest file each process of a command may write, as 64M or 16G; 0 is unlimited.
    /// A write past it ends the process (default 16G).
    #[arg(long = "command-file-size", value_name = "SIZE")]
    command_file_size: Option<String>,

    /// How many processes and threads the commands' user may run, counting all of them; 0 is
    /// unlimited. For root, this server's commands together, in a pids cgroup (default 4096).
    #[arg(long = "command-processes", value_name = "N")]
    command_processes: Option<String>,

    /// The most o200k tokens a tool reply's text may take; a longer reply stops with a note
    /// that says how to get the rest. 0 is no bound: whole replies (default 20000).
    #[arg(long = "max-reply-tokens", value_name = "N", allow_negative_numbers = true)]
    max_reply_tokens: Option<String>,

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

/// The audit log; a server's flags, not `replay call`'s.
#[derive(Debug, Args)]
struct AuditArgs {
    /// Append one JSON line per tool call to FILE (created 0600): time, client, tool, the
    /// paths it named, the command text, the outcome, bytes in and out, duration. Never file
    /// contents or command output. Keep it outside the allowed directories.
    #[arg(long = "audit-log", value_name = "FILE")]
    audit_log: Option<PathBuf>,

    /// The audit log's size past which its lines move to FILE.1 (the one old file kept), as
    /// 64M or 1G; 0 never rotates (default 64M).
    #[arg(long = "audit-log-size", value_name = "SIZE", requires = "audit_log")]
    audit_log_size: Option<String>,
}

/// How tool failures are answered; a server's flag, not `replay call`'s.
#[derive(Debug, Args)]
struct ReplyArgs {
    /// How a failing tool call is answered: `rpc`, a JSON-RPC error with the contract's code
    /// (the default); or `result`, an `isError: true` result whose text carries the code and
    /// message, for hosts that hide JSON-RPC errors from the model.
    #[arg(long, value_enum, value_name = "rpc|result", default_value = "rpc")]
    tool_errors: ToolErrors,
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
    pub disabled_tools: Vec<Tool>,
    pub deny_commands: Vec<String>,
    /// What each command may take (`--command-memory` and the like).
    pub command_limits: CommandLimits,
    /// `--max-reply-tokens` (`Settings::reply_tokens`).
    pub reply_tokens: u32,
    pub sandbox: SandboxConfig,
    pub tool_errors: ToolErrors,
    /// `--deny` and the default rules: what no tool or command sees.
    pub deny: Arc<DenyRules>,
    /// `--audit-log`, opened.
    pub audit: Option<Arc<AuditLog>>,
}

/// `replay call`: one tool call under `config`.
#[derive(Debug)]
pub struct OneShot {
    pub config: Config,
    pub tool: String,
    pub args: Arguments,
    pub json: bool,
}

/// `replay print-config`: the client and the server's command line, paths made absolute.
#[derive(Debug)]
pub struct PrintConfig {
    pub client: Client,
    pub json: bool,
    pub server_args: Vec<String>,
}

/// `replay install`: the client's file and the server's command line, paths made absolute.
#[derive(Debug)]
pub struct Install {
    pub client: Client,
    pub target: client_config::Target,
    pub npx: bool,
    pub dry_run: bool,
    pub force: bool,
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
    /// `replay sandbox`: what commands may reach under this configuration.
    Sandbox(Config),
    Install(Install),
    /// `replay uninstall`: remove the entry from this client's file (or show the diff).
    Uninstall {
        client: Client,
        target: client_config::Target,
        dry_run: bool,
    },
    /// `--help` or `--version`: print this to stdout and exit 0.
    Help(String),
    Exit(Exit),
}

/// Print `message` to stderr and exit with `status`.
#[derive(Debug)]
pub struct Exit {
    pub message: String,
    pub status: i32,
}

fn usage_error(message: impl Into<String>) -> Invocation {
    Invocation::Exit(usage(message))
}

fn usage(message: impl Into<String>) -> Exit {
    Exit { message: message.into(), status: 2 }
}

pub fn parse() -> Invocation {
    parse_from(std::env::args_os().collect())
}

/// The command with the help texts only code can write.
fn command() -> clap::Command {
    with_generated_help(Cli::command())
}

/// `--read-only`'s help names the tools it leaves out, from `selection::writers`.
fn with_generated_help(command: clap::Command) -> clap::Command {
    let help = format!(
        "Every allowed directory read-only (even `:rw` ones, and a client's roots), and the tools \
         that change files or run commands left out: {}",
        selection::writers().join(", ")
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
            return Invocation::Exit(Exit { message, status });
        }
    };
    let mut cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => return usage_error(e.render().to_string()),
    };
    let sub_matches = matches.subcommand().map(|(_, m)| m);
    match (cli.command.take(), sub_matches) {
        (Some(Command::Call(call)), Some(m)) => call_invocation(call, m),
        (Some(Command::Tools(args)), _) => {
            let selection = selection_of(&args);
            match selection.check() {
                Ok(()) => Invocation::Tools(selection.served()),
                Err(unknown) => usage_error(unknown.to_string()),
            }
        }
        (Some(Command::Schema { tool }), _) if selection::is_tool(&tool) => {
            Invocation::Schema(tool)
        }
        (Some(Command::Schema { tool }), _) => {
            usage_error(UnknownTool { flag: "schema", name: tool }.to_string())
        }
        (Some(Command::PrintConfig(print)), Some(m)) => print_config_invocation(print, m),
        (Some(Command::Sandbox(args)), Some(m)) => {
            match config(&args.policy, ToolErrors::Rpc, &args.dirs, m) {
                Ok(config) => Invocation::Sandbox(config),
                Err(exit) => Invocation::Exit(exit),
            }
        }
        (Some(Command::Install(install)), Some(m)) => install_invocation(install, m),
        (Some(Command::Uninstall(args)), _) => Invocation::Uninstall {
            client: args.client,
            target: target_of(&args.target),
            dry_run: args.target.dry_run,
        },
        (Some(_), None) => usage_error("replay: a subcommand without its arguments"),
        (None, _) => serve_invocation(&cli, &matches),
    }
}

/// `replay tools --mcp-server`: `tools` first is the subcommand, not a directory to serve; a
/// user who meant the directory is told how to serve it.
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
            "{usage}\n\nreplay serves MCP only with --mcp-server, e.g.\n  replay --mcp-server --allow DIR[:rw|:ro]\nOr give a subcommand first: call, tools, schema, print-config, install, uninstall.\nSee replay --help."
        );
        return usage_error(message);
    }
    let mut config = match config(&cli.policy, cli.replies.tool_errors, &cli.dirs, matches) {
        Ok(config) => config,
        Err(exit) => return Invocation::Exit(exit),
    };
    match audit_log(&cli.audit) {
        Ok(audit) => config.audit = audit,
        Err(exit) => return Invocation::Exit(exit),
    }
    if let Some(path) = config.audit.as_ref().map(|audit| audit.path.clone()) {
        deny_audit_log(&mut config, &path);
    }
    Invocation::Serve(config)
}

/// The audit log and its `.1` join the deny rules, for the file tools and the commands: inside
/// a read-write directory, write_file would replace the log (the server then writing to the
/// unlinked old file) and a command could rewrite its lines.
fn deny_audit_log(config: &mut Config, path: &Path) {
    let private = Arc::new(config.deny.with_private(&[path.to_path_buf(), audit::old_path(path)]));
    config.deny = Arc::clone(&private);
    config.sandbox.deny = private;
}

/// `--audit-log`, opened now: a file that cannot be opened is a usage error at start.
fn audit_log(args: &AuditArgs) -> Result<Option<Arc<AuditLog>>, Exit> {
    let Some(path) = &args.audit_log else { return Ok(None) };
    let max_bytes = match &args.audit_log_size {
        Some(raw) => limits::parse_size(raw)
            .map_err(|m| usage(format!("replay: --audit-log-size: {m}")))?
            .unwrap_or(0),
        None => audit::DEFAULT_MAX_BYTES,
    };
    AuditLog::open(path, max_bytes).map(Some).map_err(usage)
}

fn call_invocation(call: CallArgs, matches: &ArgMatches) -> Invocation {
    if !selection::is_tool(&call.tool) {
        return usage_error(UnknownTool { flag: "call", name: call.tool }.to_string());
    }
    let args = match arguments(call.args.as_deref()) {
        Ok(args) => args,
        Err(message) => return usage_error(message),
    };
    match config(&call.policy, ToolErrors::Rpc, &call.dirs, matches) {
        Ok(config) => Invocation::Call(OneShot { config, tool: call.tool, args, json: call.json }),
        Err(exit) => Invocation::Exit(exit),
    }
}

fn print_config_invocation(print: PrintConfigArgs, matches: &ArgMatches) -> Invocation {
    match client_server_args(&print.policy, &print.replies, &print.audit, &print.dirs, matches) {
        Ok(server_args) => Invocation::PrintConfig(PrintConfig {
            client: print.client,
            json: print.json,
            server_args,
        }),
        Err(exit) => Invocation::Exit(exit),
    }
}

fn install_invocation(install: InstallArgs, matches: &ArgMatches) -> Invocation {
    match client_server_args(
        &install.policy,
        &install.replies,
        &install.audit,
        &install.dirs,
        matches,
    ) {
        Ok(server_args) => Invocation::Install(Install {
            client: install.client,
            target: target_of(&install.target),
            npx: install.npx,
            dry_run: install.target.dry_run,
            force: install.force,
            server_args,
        }),
        Err(exit) => Invocation::Exit(exit),
    }
}

fn target_of(args: &TargetArgs) -> client_config::Target {
    match (&args.config, &args.project) {
        (Some(path), _) => client_config::Target::Config(path.clone()),
        (None, Some(dir)) => client_config::Target::Project(dir.clone()),
        (None, None) => client_config::Target::User,
    }
}

/// The server's arguments a client's configuration holds (`server_args`); a usage error (2)
/// for an unknown tool, exit 1 for a directory that cannot be used.
fn client_server_args(
    policy: &PolicyArgs,
    replies: &ReplyArgs,
    audit: &AuditArgs,
    dirs: &[String],
    matches: &ArgMatches,
) -> Result<Vec<String>, Exit> {
    selection_of(&policy.selection).check().map_err(|unknown| usage(unknown.to_string()))?;
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let requested = requested_roots(policy, dirs, matches);
    let roots = canonical_roots(requested, home.as_deref())
        .map_err(|message| Exit { message, status: 1 })?;
    let mut args = server_args(policy, &roots, replies.tool_errors, home.as_deref())
        .map_err(|message| Exit { message, status: 1 })?;
    if let Some(path) = &audit.audit_log {
        let path = std::path::absolute(path)
            .map_err(|e| Exit { message: format!("replay: --audit-log: {e}"), status: 1 })?;
        let text =
            client_config::path_text(&path).map_err(|message| Exit { message, status: 1 })?;
        args.extend(["--audit-log".to_string(), text.to_string()]);
    }
    if let Some(size) = &audit.audit_log_size {
        args.extend(["--audit-log-size".to_string(), size.clone()]);
    }
    Ok(args)
}

fn selection_of(args: &SelectionArgs) -> Selection {
    let mut disabled = args.disable_tool.clone();
    if args.no_exec {
        // Commands, and the sessions they leave: every tool whose effects no path names.
        disabled.extend(
            Tool::ALL.into_iter().filter(|t| t.runs_commands()).map(|t| t.name().to_string()),
        );
    }
    Selection { read_only: args.read_only, only: args.tools.clone(), disabled }
}

/// The configuration the flags describe: a usage error (exit 2) for an unknown tool name, exit
/// 1 for a directory that cannot be used.
fn config(
    policy: &PolicyArgs,
    tool_errors: ToolErrors,
    dirs: &[String],
    matches: &ArgMatches,
) -> Result<Config, Exit> {
    let selection = selection_of(&policy.selection);
    selection.check().map_err(|unknown| usage(unknown.to_string()))?;
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let requested = requested_roots(policy, dirs, matches);
    let mut roots = canonical_roots(requested, home.as_deref())
        .map_err(|message| Exit { message, status: 1 })?;
    if selection.read_only {
        for root in &mut roots {
            root.access = Access::Read;
        }
    }
    let deny = DenyRules::new(&policy.deny, policy.no_default_deny)
        .map(Arc::new)
        .map_err(|message| usage(format!("replay: {message}")))?;
    let extra_read = policy.sandbox_read.iter().map(|p| expand_home(p, home.as_deref())).collect();
    let extra_write =
        policy.sandbox_write.iter().map(|p| expand_home(p, home.as_deref())).collect();
    let sandbox = SandboxConfig {
        enabled: !policy.no_sandbox,
        deny_network: policy.deny_network,
        extra_read,
        extra_write,
        strict: policy.sandbox_strict,
        deny: Arc::clone(&deny),
    };
    Ok(Config {
        roots,
        read_only: selection.read_only,
        home,
        log_filter: policy.log_level.clone(),
        disabled_tools: selection.left_out(),
        deny_commands: policy.deny_command.clone(),
        command_limits: command_limits(policy)?,
        reply_tokens: reply_tokens(policy)?,
        sandbox,
        tool_errors,
        deny,
        audit: None,
    })
}

/// The limits the `--command-*` flags set, the defaults for the others; a usage error for a
/// value that is not a size or a count.
fn command_limits(policy: &PolicyArgs) -> Result<CommandLimits, Exit> {
    let mut limits = CommandLimits::default();
    let flag = |name: &str, message: String| usage(format!("replay: --{name}: {message}"));
    if let Some(raw) = &policy.command_memory {
        limits.memory = limits::parse_size(raw).map_err(|m| flag("command-memory", m))?;
    }
    if let Some(raw) = &policy.command_file_size {
        limits.file_size = limits::parse_size(raw).map_err(|m| flag("command-file-size", m))?;
    }
    if let Some(raw) = &policy.command_processes {
        limits.processes = limits::parse_count(raw).map_err(|m| flag("command-processes", m))?;
    }
    Ok(limits)
}

/// `--max-reply-tokens`, or the default bound; a usage error for anything but a whole number.
fn reply_tokens(policy: &PolicyArgs) -> Result<u32, Exit> {
    let Some(raw) = &policy.max_reply_tokens else {
        return Ok(REPLY_TOKENS);
    };
    raw.trim().parse().map_err(|_| {
        usage(format!(
            "replay: --max-reply-tokens: {raw:?} is not a whole number of tokens; give one \
             such as 20000, or 0 for no bound"
        ))
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
    tool_errors: ToolErrors,
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
    for glob in &policy.deny {
        push("--deny", Some(glob.clone()));
    }
    if policy.no_default_deny {
        push("--no-default-deny", None);
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
    for raw in &policy.sandbox_write {
        let path = std::path::absolute(expand_home(raw, home))
            .map_err(|e| format!("replay: --sandbox-write {raw:?}: {e}"))?;
        push("--sandbox-write", Some(client_config::path_text(&path)?.to_string()));
    }
    if policy.sandbox_strict {
        push("--sandbox-strict", None);
    }
    for (flag, value) in [
        ("--command-memory", &policy.command_memory),
        ("--command-file-size", &policy.command_file_size),
        ("--command-processes", &policy.command_processes),
    ] {
        if let Some(value) = value {
            push(flag, Some(value.clone()));
        }
    }
    if let Some(value) = &policy.max_reply_tokens {
        push("--max-reply-tokens", Some(value.clone()));
    }
    if tool_errors == ToolErrors::Result {
        push("--tool-errors", Some("result".to_string()));
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

/// `replay call`'s JSON-ARGS as the command line gives them: parsed, or still on stdin, which is
/// read when the command runs (`Arguments::read`), never while the arguments are parsed.
#[derive(Debug, PartialEq)]
pub enum Arguments {
    Given(Value),
    Stdin,
}

impl Arguments {
    /// The arguments, read from stdin if they are there. `Err` is a usage error.
    pub fn read(self) -> Result<Value, String> {
        match self {
            Arguments::Given(args) => Ok(args),
            Arguments::Stdin => {
                let mut text = String::new();
                std::io::stdin()
                    .read_to_string(&mut text)
                    .map_err(|e| format!("replay call: cannot read JSON-ARGS from stdin: {e}"))?;
                parse_arguments(&text)
            }
        }
    }
}

/// `replay call`'s JSON-ARGS: absent means `{}`, `-` means stdin. `Err` is a usage error.
pub fn arguments(raw: Option<&str>) -> Result<Arguments, String> {
    match raw {
        None => Ok(Arguments::Given(json!({}))),
        Some("-") => Ok(Arguments::Stdin),
        Some(text) => parse_arguments(text).map(Arguments::Given),
    }
}

fn parse_arguments(text: &str) -> Result<Value, String> {
    serde_json::from_str(text).map_err(|e| {
        let shown: String = text.chars().take(60).collect();
        format!(
            "replay call: JSON-ARGS is not JSON ({e}): {shown:?}\nGive the tool's arguments as \
             one JSON object, e.g. '{{\"path\":\"a.txt\"}}'; directories go after it."
        )
    })
}

#[cfg(test)]
mod tests;
