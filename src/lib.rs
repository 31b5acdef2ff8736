//! replay's modules, as a library so that the fuzz targets in `fuzz/` can call the pure cores
//! directly. The binary (`src/main.rs`) is the product; this is not a stable API.
//!
//! Public are the modules `main` starts the server or a subcommand with (`cli`, `sandbox`,
//! `policy`, `protocol`, `tools`, `oneshot`, `client_config`, `selection`, `interrupt`) and the
//! ones the fuzz targets drive (`protocol::jsonrpc`, `protocol::reply`, `schema`, `policy`,
//! `tools::edit::matching`, `js_regex`). The rest stays private to the crate.

mod base64;
pub mod cli;
pub mod client_config;
mod error;
mod fs;
pub mod interrupt;
pub mod js_regex;
pub mod oneshot;
mod platform;
pub mod policy;
pub mod progress;
pub mod protocol;
mod reply_size;
pub mod sandbox;
pub mod schema;
pub mod selection;
#[cfg(test)]
mod tidy;
pub mod tools;
mod walk;
