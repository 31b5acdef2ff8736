//! What the binary does from start to exit: parse the command line (`cli`), answer a
//! subcommand (`oneshot`, `client_config`: print-config, install, uninstall), or start logging, confine the process (`sandbox`)
//! before any thread exists, and serve the session (`protocol::session::serve`).

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use tracing_subscriber::EnvFilter;

use crate::cli::{self, Config, Invocation, OneShot};
use crate::fs::journal::{self, StateDir};
use crate::policy::Policy;
use crate::progress::Cancel;
use crate::protocol::transport;
use crate::tools::limits;
use crate::tools::table::Tool;
use crate::tools::Settings;
use crate::{client_config, interrupt, oneshot, protocol, sandbox};

/// The whole program: `src/main.rs` calls it.
pub fn main() -> ExitCode {
    crate::memory::configure();
    match cli::parse() {
        Invocation::Serve(config) => serve(config),
        Invocation::Call(call) => call_once(call),
        Invocation::Tools(served) => answer(&oneshot::tools_summary(&served), "", 0),
        Invocation::Schema(tool) => match oneshot::schema_text(&tool) {
            Some(text) => answer(&text, "", 0),
            None => answer("", &format!("replay: no schema for {tool:?}"), 2),
        },
        Invocation::PrintConfig(print) => match client_config::current_exe() {
            Ok(exe) => {
                let launch = client_config::Launch::binary(&exe, &print.server_args);
                let text = client_config::render(print.client, print.json, &launch);
                let note = client_config::file_note(print.client, print.json);
                answer(&text, note.as_deref().unwrap_or(""), 0)
            }
            Err(message) => answer("", &message, 1),
        },
        Invocation::Sandbox(config) => answer(
            &sandbox::describe(&config.roots, &config.sandbox, config.home.as_deref()),
            "",
            0,
        ),
        Invocation::Install(install) => install_entry(install),
        Invocation::Uninstall { client, target, dry_run } => {
            let outcome = client_config::uninstall(client, &target, dry_run);
            answer(&outcome.stdout, &outcome.stderr, outcome.status)
        }
        Invocation::Help(text) => answer(&text, "", 0),
        Invocation::Exit(cli::Exit { message, status }) => answer("", &message, status as u8),
    }
}

/// `replay install`: the entry names this binary, or npx with `--npx`.
fn install_entry(install: cli::Install) -> ExitCode {
    let launch = if install.npx {
        client_config::Launch::npx(&install.server_args)
    } else {
        match client_config::current_exe() {
            Ok(exe) => client_config::Launch::binary(&exe, &install.server_args),
            Err(message) => return answer("", &message, 1),
        }
    };
    let request = client_config::Request {
        client: install.client,
        target: install.target,
        launch,
        dry_run: install.dry_run,
        force: install.force,
    };
    let outcome = client_config::install(&request);
    answer(&outcome.stdout, &outcome.stderr, outcome.status)
}

/// Writes a subcommand's answer and gives its status. A reader that went away (`| head`) ends
/// the output quietly.
fn answer(stdout: &str, stderr: &str, status: u8) -> ExitCode {
    if !stderr.is_empty() {
        let _ = writeln!(std::io::stderr(), "{}", stderr.trim_end());
    }
    if let Err(e) = transport::write_stdout(stdout) {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            let _ = writeln!(std::io::stderr(), "replay: writing stdout: {e}");
        }
        return ExitCode::from(status.max(1));
    }
    ExitCode::from(status)
}

fn serve(mut config: Config) -> ExitCode {
    init_logging(config.log_filter.as_deref());
    for root in &config.roots {
        tracing::info!(path = %root.path.display(), access = ?root.access, "allowed directory");
    }
    if config.roots.is_empty() {
        tracing::warn!("no allowed directories: every path will be refused");
    }
    if config.disabled_tools.len() == Tool::ALL.len() {
        tracing::warn!("no tools are served: --tools, --disable-tool and --read-only left none");
    }
    // Without directories the sandbox waits for the client's roots: applied now, it would
    // confine the server to nothing for good.
    let commands = !config.disabled_tools.contains(&Tool::ExecuteCommand);
    if commands {
        limits::make_pids_cgroup(config.command_limits.processes);
    }
    let state = open_state(&mut config);
    let mut confined = if config.roots.is_empty() && config.sandbox.enabled {
        confine_later(&config, commands)
    } else {
        confine(&config, commands)
    };
    if let Some(audit) = &config.audit {
        if config.roots.iter().any(|root| audit.path.starts_with(&root.path)) {
            tracing::warn!(
                path = %audit.path.display(),
                "the audit log is inside an allowed directory: the tools refuse it and commands find it covered, but with no sandbox (or without the commands' namespace) commands can change it: keep it outside them"
            );
        }
    }
    let options = protocol::session::Options {
        tool_errors: config.tool_errors,
        deferred_sandbox: confined.deferred.take(),
        read_only: config.read_only,
        audit: config.audit.clone(),
    };
    let (policy, settings) = scope(config, &confined, state);
    protocol::session::serve(policy, Arc::new(settings), options);
    if let Some(tmp) = &confined.command_tmp {
        tmp.remove();
    }
    ExitCode::SUCCESS
}

/// `replay call`: the server's start-up (sandbox included) and one tool call, then exit.
/// SIGINT, SIGTERM or SIGHUP cancel the call (killing a command it started) and exit 128+N.
fn call_once(call: OneShot) -> ExitCode {
    let OneShot { mut config, tool, args, json } = call;
    let args = match args.read() {
        Ok(args) => args,
        Err(message) => return answer("", &message, 2),
    };
    init_logging(config.log_filter.as_deref());
    let commands = Tool::from_name(&tool) == Some(Tool::ExecuteCommand);
    if commands {
        limits::make_pids_cgroup(config.command_limits.processes);
    }
    let state = open_state(&mut config);
    let confined = confine(&config, commands);
    let (policy, settings) = scope(config, &confined, state);
    // After `confine`: the sandbox binds the threads started later, this one included.
    let cancel = Arc::new(Cancel::default());
    let interrupt = interrupt::watch(Arc::clone(&cancel));
    let request = oneshot::Request { tool, args, json };
    let result = oneshot::call(&policy, &settings, &cancel, request);
    if let Some(tmp) = &confined.command_tmp {
        tmp.remove();
    }
    if let Some(signo) = interrupt.signal() {
        let message = format!("replay: interrupted by signal {signo}; the call was cancelled");
        return answer("", &message, 128u8.saturating_add(signo as u8));
    }
    answer(&result.stdout, &result.stderr, result.status)
}

/// The commands' TMPDIR and the sandbox's outcome.
struct Confined {
    command_tmp: Option<Arc<sandbox::tmp::CommandTmp>>,
    status: sandbox::Status,
    confinement: sandbox::CommandConfinement,
    /// Started without directories: what the session applies when the roots arrive.
    deferred: Option<sandbox::Sandbox>,
}

/// Makes the commands' TMPDIR (when `commands` are served) and prepares the sandbox, to apply
/// when the client's roots arrive: applied without directories, it would confine the server to
/// nothing for good.
fn confine_later(config: &Config, commands: bool) -> Confined {
    let sandbox = sandbox::prepare(&config.sandbox, config.home.clone(), commands);
    let command_tmp = sandbox.command_tmp();
    let status = sandbox::Status::deferred();
    tracing::warn!("{}", status.note().unwrap_or_default());
    let confinement = sandbox::CommandConfinement::default();
    Confined { command_tmp, status, confinement, deferred: Some(sandbox) }
}

/// Makes the commands' TMPDIR (when `commands` are served) and applies the sandbox, the
/// commands' namespace and Landlock. Called before any thread exists: Landlock binds the
/// calling thread and those it starts afterwards.
fn confine(config: &Config, commands: bool) -> Confined {
    let sandbox = sandbox::prepare(&config.sandbox, config.home.clone(), commands);
    let command_tmp = sandbox.command_tmp();
    let applied = sandbox.apply(&config.roots);
    match applied.status.note() {
        None => tracing::info!(isolation = ?applied.status.isolation, "sandbox enforced"),
        Some(note) => tracing::warn!("{note}"),
    }
    Confined {
        command_tmp,
        status: applied.status,
        confinement: applied.confinement,
        deferred: None,
    }
}

/// The policy and the tools' settings the configuration describes.
fn scope(config: Config, confined: &Confined, state: Option<Arc<StateDir>>) -> (Policy, Settings) {
    let settings = Settings {
        deny_commands: config.deny_commands,
        command_limits: config.command_limits,
        command_tmp: confined.command_tmp.clone(),
        confinement: confined.confinement.clone(),
        sandbox_note: confined.status.note(),
        disabled_tools: config.disabled_tools,
        state,
        reply_tokens: config.reply_tokens,
    };
    (Policy::new(config.roots, config.home, config.deny), settings)
}

/// Opens the server's state directory and recovers the patches a killed server left half
/// applied, before the sandbox (which grants no path outside the allowed directories): each
/// file all old or all new again, each path resolved beneath `config`'s read-write directories.
/// Without `$XDG_STATE_HOME` or `$HOME`, a per-user directory in the system's temp directory
/// serves. `None`, and apply_patch refused, when it cannot be opened, or is not a directory of
/// this user's that no one else may write. The directory is added to `config`'s deny rules, for
/// the file tools and the commands: a journal written through them would be replayed at the
/// next start.
fn open_state(config: &mut Config) -> Option<Arc<StateDir>> {
    let dir = journal::default_state_dir().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("replay-state-{}", nix::unistd::geteuid()))
    });
    let opened = StateDir::open(&dir);
    let real = std::fs::canonicalize(&dir).unwrap_or_else(|_| dir.clone());
    let private = Arc::new(config.deny.with_private(&[real]));
    config.deny = Arc::clone(&private);
    config.sandbox.deny = private;
    let state = match opened {
        Ok(state) => state,
        Err(e) => {
            tracing::warn!(dir = %dir.display(), "no state directory, so no apply_patch: {e}");
            return None;
        }
    };
    match state.recover(&config.roots, &config.deny) {
        Ok(recovered) => {
            for done in recovered {
                match done {
                    journal::Recovered::Refused { journal, why } => tracing::warn!(
                        journal = %journal.display(),
                        "a journal a killed server left was not replayed, and is left in place: {why}"
                    ),
                    done => tracing::warn!("recovered a patch a killed server left: {done:?}"),
                }
            }
        }
        Err(e) => tracing::warn!(dir = %dir.display(), "recovering the journals: {e}"),
    }
    Some(Arc::new(state))
}

/// Logs go to stderr only: stdout carries JSON-RPC.
fn init_logging(level: Option<&str>) {
    let filter = match level {
        Some(level) => EnvFilter::try_new(level).ok(),
        None => EnvFilter::try_from_default_env().ok(),
    }
    .unwrap_or_else(|| EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();
}
