//! MCP over stdio: JSON-RPC framing, the session (initialize, ping, tools/list) and dispatch of
//! `tools/call` to the tools. Nothing below this module knows about request ids or framing.

pub mod dispatch;
pub mod jsonrpc;
pub mod revision;
pub mod roots;
pub mod session;
pub mod transport;
