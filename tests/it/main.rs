//! Black-box integration tests for `replay --mcp-server`; start reading at `harness`, then `policy`.

mod arguments;
mod bounds;
mod cancel;
mod cli;
mod deep;
mod docs;
mod edit;
mod exec;
#[cfg(target_os = "linux")]
mod fence;
// Renames, toolchains, caches, credentials and /dev through commands' sandbox (issue #23).
mod fs_ops;
#[cfg(target_os = "linux")]
mod gate;
mod hardening;
mod harness;
#[cfg(target_os = "linux")]
mod isolation;
mod oneshot;
mod organise;
#[cfg(target_os = "linux")]
mod orphans;
mod paging;
mod policy;
mod protocol;
mod race;
mod read;
mod regex_cost;
mod replies;
mod revisions;
mod roots;
mod scale;
mod search;
mod selection;
mod structured;
mod turns;
mod write;
