//! MCP over stdio: JSON-RPC framing, the session (initialize, ping, tools/list) and dispatch of
//! `tools/call` to the tools. Nothing below this module knows about request ids or framing.

mod calls;
pub mod dispatch;
mod held;
pub mod jsonrpc;
pub mod reply;
pub mod revision;
pub mod roots;
mod schedule;
pub mod scope;
pub mod session;
mod tools_list;
pub mod transport;

/// A poisoned lock is still used: a panic elsewhere must not stop the session.
fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// How a failing tool call is answered (`--tool-errors`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ToolErrors {
    // A JSON-RPC error with the contract's code (the default). These are `//` comments: clap
    // would show `///` ones in `--help`, whose text the flag's own help already gives.
    #[default]
    Rpc,
    // A result with `isError: true` whose text carries the code and the message (and, with
    // structured output, `structuredContent: {error: {code, message}}`), so that a host that
    // hides JSON-RPC errors still shows the model what went wrong.
    Result,
}
