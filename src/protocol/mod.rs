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
mod turns;

/// A poisoned lock is still used: a panic elsewhere must not stop the session.
fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
