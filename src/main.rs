//! replay: an MCP filesystem server over stdio, fenced by an allowed-directories policy.
//!
//! Reading order: `cli` (command line → `Config`, or a subcommand), `protocol::session` (the
//! read loop, initialize, tools/list), `protocol::dispatch` (tools/call → validation → tool),
//! `schema` (schemas/*.json), `policy` (client string → `ResolvedPath`, the security boundary),
//! `tools` (one function per tool), `error` (`ToolError` and the contract's codes). The
//! subcommands: `oneshot` (`call`, `tools`, `schema`) and `client_config` (`print-config`);
//! `selection` decides which tools are served. The modules are declared in `lib.rs`, a library
//! so that the fuzz targets in `fuzz/` can reach what they drive (`replay::fuzz`); the start-up
//! itself is `start`.

fn main() -> std::process::ExitCode {
    replay::main()
}
