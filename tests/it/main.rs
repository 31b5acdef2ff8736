//! Black-box integration tests for `replay --mcp-server`: one binary that starts the real
//! `replay` through `harness` and talks JSON-RPC to it over its pipes.
//!
//! Reading order: `harness` (how a test starts a server and reads its replies), `policy` (the
//! allowed-directories fence every tool keeps), then the tool modules, then the protocol, then
//! what the server promises under load, attack and crash. A new test goes in the module of the
//! behaviour it checks; a module named for an issue or an effort is the wrong place.

// The harness: `TestEnv` (a declared file tree in a temp dir), `Server` (the real binary behind
// JSON-RPC), `Proc` (the binary with raw pipes and its /proc figures), and `require` for tests
// that need a capability.
mod harness;

// The fence. Every escape (`..`, symlinks, symlinked parents, prefix siblings, read-only roots)
// as a named row run through every path-taking tool, the filesystem snapshotted around it.
mod policy;
// No tool follows a directory swapped for a symlink between its check and its use.
mod races;
// Client roots narrowing the command line's directories; a root removed or replaced mid-run.
mod roots;
// Deny rules: secrets hidden from the file tools and the commands.
mod deny;
// The audit log: a JSON line per tool call.
mod audit;
// Attacks on the deny rules, the client roots and the audit log.
mod deny_attacks;

// The file tools, one module per tool or family.
// read_file and read_multiple_files: exact text, binary blobs, limits and errors.
mod read;
// read_file's offset, limit, head, tail and lineNumbers.
mod paging;
// Text in other encodings: UTF-8 with BOM, UTF-16 and legacy ones read, edited and written in
// their own encoding; binary never taken for text.
mod encodings;
// The reply budget (`--max-reply-tokens`): every tool stops within it and says how to get the rest.
mod budget;
// write_file and append: exact bytes, atomic replacement keeping the mode, no temp files left.
mod write;
// edit_file and edit_files: matching modes as `check` rows, all-or-nothing failures, dryRun.
mod edit;
// apply_patch: the Codex envelope's cases, all or nothing across files, a SIGKILL mid-commit.
mod patch;
// apply_patch's journal: forged, in a state directory others control, or behind a symlink.
mod journal_attacks;
// The stale-write guard: the sha256 reads report, and each writer's expectedSha256.
mod stale;
// copy_file: files and trees with modes and links, overwrite, nothing left on failure.
mod copy;
// move_file: files, directories and links moved, parents made, destinations kept.
mod moves;
// list_directory and directory_tree: marks, order, depth, sizes, sorting, filters, cuts, text.
mod listing;
// create_directory, delete_file, get_file_info and list_allowed_directories.
mod fs_ops;
// search_files, glob_search and grep_files: name, glob and content rows, walks inside the root.
mod search;
// Walks on big and tricky trees: the order replies keep, and cut trees that hold what they show.
mod walks;
// Trees deeper than any recursion (20,000 levels) through every tree operation.
mod depth;
// What a short regex may cost: too large once compiled is refused before any search.
mod regex_cost;
// The ten tools with an outputSchema answer with structured content the schema accepts.
mod structured;

// Commands.
// execute_command under the sandbox: reply format, deadlines, cleanup, caps, cancellation.
mod exec;
// What commands may change besides file contents, and each server's private TMPDIR.
#[cfg(target_os = "linux")]
mod isolation;
// What commands must not reach beyond files: the terminal, the server and its siblings.
#[cfg(target_os = "linux")]
mod fence;
// Background commands, command_session, and the foreground head-and-tail note.
mod sessions;
// Sessions under attack: escaped children, out-of-range numbers, the deny list, the spill.
mod session_attacks;
// Commands do not outlive the server, however it ends.
#[cfg(target_os = "linux")]
mod orphans;
// What commands may take: places for concurrent commands, and each command's limits.
#[cfg(target_os = "linux")]
mod command_limits;
// The work the sandbox lets through (renames, toolchains, caches) and what stays out
// (credentials, devices).
#[cfg(target_os = "linux")]
mod gate;
// Attacks on the gate: credentials, caches, grants, terminals and shared memory.
#[cfg(target_os = "linux")]
mod gate_attacks;

// The protocol and the session.
// JSON-RPC and MCP: initialize, notifications, ids, error codes, batches, tools/list, EOF.
mod protocol;
// Protocol revisions: server/discover, legacy reply shapes, progress, --tool-errors result.
mod revisions;
// Replies as written: ids byte for byte, whole batches, the reply cap, backpressure.
mod replies;
// Arguments: validation stops at the first error in bounded memory and names the field.
mod arguments;
// Choosing the tools a server offers: --read-only, --tools, --disable-tool.
mod selection;
// Write turns: writers of the same files go in arrival order; others do not wait.
mod turns;
// CPU-bound calls: bounded where they can be, stopped by a cancel where they cannot.
mod cancel;

// What the server promises under pressure.
// Reply sizes: a small request never makes a reply, or the server, far larger than the bound.
mod bounds;
// 10,000 pipelined requests: one right reply each, in bounded memory.
mod load;
// Clients that misbehave: huge, deep or invalid lines, and vanishing clients.
mod hostile_clients;
// SIGKILL mid-write leaves whole files; the next server sweeps the dead one's temp files.
mod crashes;

// Outside the server.
// The command line: --mcp-server, --allow, positional directories, --help, exit codes.
mod cli;
// replay without an MCP client: call, tools, schema and print-config.
mod oneshot;
// `replay install` and `uninstall` for every client, with a temporary HOME.
mod install;
// server.json against the registry's schema; the release's names and versions agree.
mod packaging;
// The documents against the code: README's tool table and every relative link.
mod docs;
