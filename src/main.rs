//! replay: an MCP filesystem server over stdio, fenced by an allowed-directories policy.
//!
//! Reading order: `cli` (command line → `Config`), `protocol::session` (the read loop,
//! initialize, tools/list), `protocol::dispatch` (tools/call → validation → tool), `schema`
//! (schemas/*.json), `policy` (client string → `ResolvedPath`, the security boundary), `tools`
//! (one function per tool), `error` (`ToolError` and the contract's codes). The modules are
//! declared in `lib.rs`, a library so that the fuzz targets in `fuzz/` can reach them.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use tracing_subscriber::EnvFilter;

use replay::cli::{self, Invocation};
use replay::policy::Policy;
use replay::tools::Settings;
use replay::{protocol, sandbox};

fn main() -> ExitCode {
    limit_malloc_arenas();
    let config = match cli::parse() {
        Invocation::Serve(config) => config,
        Invocation::Exit { message, status } => {
            if !message.is_empty() {
                let _ = writeln!(std::io::stderr(), "{}", message.trim_end());
            }
            return ExitCode::from(status as u8);
        }
    };
    init_logging(config.log_filter.as_deref());
    for root in &config.roots {
        tracing::info!(path = %root.path.display(), access = ?root.access, "allowed directory");
    }
    if config.roots.is_empty() {
        tracing::warn!("no allowed directories: every path will be refused");
    }
    let command_tmp = sandbox::CommandTmp::prepare().map(Arc::new);
    let tmp_parent = command_tmp.as_ref().map(|t| t.parent().to_path_buf());
    // Without directories the sandbox waits for the client's roots: applied now, it would
    // confine the server to nothing for good.
    let defer = config.roots.is_empty() && config.sandbox.enabled;
    let status = if defer {
        sandbox::Status::Deferred
    } else {
        sandbox::apply(
            &config.roots,
            tmp_parent.as_deref(),
            config.home.as_deref(),
            &config.sandbox,
        )
    };
    match &status {
        sandbox::Status::Enforced => tracing::info!("Landlock sandbox enforced"),
        other => tracing::warn!("{}", other.note().unwrap_or_default()),
    }
    let settings = Arc::new(Settings {
        deny_commands: config.deny_commands,
        command_tmp: command_tmp.clone(),
        sandbox_note: status.note(),
        disabled_tools: if config.no_exec {
            vec!["execute_command".to_string()]
        } else {
            Vec::new()
        },
    });
    let deferred_sandbox = defer.then(|| protocol::session::DeferredSandbox {
        config: config.sandbox.clone(),
        home: config.home.clone(),
        command_tmp_parent: tmp_parent,
    });
    let options = protocol::session::Options { tool_errors: config.tool_errors, deferred_sandbox };
    let policy = Policy::new(config.roots, config.home);
    protocol::session::serve(policy, settings, options);
    if let Some(tmp) = &command_tmp {
        tmp.remove();
    }
    ExitCode::SUCCESS
}

/// One malloc arena for the whole process. glibc gives each thread that contends its own arena
/// and keeps freed memory in each; with the walker, search and runtime threads that cost ~5 MB
/// of the 31 MB peak while grepping a 600 MB tree (26 MB with one arena, measured with
/// `bench/bench.py`), and the hot loops barely allocate, so the contention it adds is noise.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn limit_malloc_arenas() {
    const M_ARENA_MAX: std::ffi::c_int = -8;
    extern "C" {
        fn mallopt(param: std::ffi::c_int, value: std::ffi::c_int) -> std::ffi::c_int;
    }
    // SAFETY: called first thing in `main`, before any other thread exists; mallopt only
    // adjusts allocator tuning and has no preconditions.
    unsafe {
        mallopt(M_ARENA_MAX, 1);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn limit_malloc_arenas() {}

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
