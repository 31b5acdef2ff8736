//! replay's modules, as a library so that the fuzz targets in `fuzz/` can call the pure cores
//! directly. The binary (`src/main.rs`) is the product; this is not a stable API.
//!
//! Public are the modules `main` starts the server with (`cli`, `sandbox`, `policy`, `protocol`,
//! `tools`) and the ones the fuzz targets drive (`protocol::jsonrpc`, `schema`, `policy`,
//! `tools::edit::matching`, `js_regex`). The rest stays private to the crate.

mod base64;
pub mod cli;
mod error;
pub mod js_regex;
pub mod policy;
pub mod protocol;
pub mod sandbox;
pub mod schema;
#[cfg(test)]
mod tidy;
pub mod tools;
mod walk;
