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
mod fs_ops;
mod hardening;
mod harness;
#[cfg(target_os = "linux")]
mod isolation;
mod oneshot;
mod organise;
#[cfg(target_os = "linux")]
mod orphans;
// server.json against the registry's schema; the release's names and versions agree.
mod packaging;
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
