//! replay's modules, as a library so that the fuzz targets in `fuzz/` can call the pure cores
//! directly. The binary (`src/main.rs`) is the product; this is not a stable API.
//!
//! Every module is private to the crate, so the compiler sees what nothing uses. Public are
//! only `main` (the whole program, which `src/main.rs` calls) and `fuzz`, the few items the fuzz
//! targets drive.

mod audit;
mod base64;
#[cfg(test)]
mod capability;
mod cli;
mod client_config;
mod encoding;
mod error;
mod fs;
mod interrupt;
mod js_regex;
mod memory;
mod oneshot;
mod platform;
mod policy;
mod progress;
mod protocol;
mod reply_size;
mod sandbox;
mod schema;
mod selection;
mod start;
#[cfg(test)]
mod tidy;
mod tools;
mod walk;
mod write_order;

pub use start::main;

/// What the fuzz targets in `fuzz/` drive, by the paths they name: JSON-RPC parsing and reply
/// lines, tool dispatch, argument validation, the policy, edit matching and the regex
/// translation, and the apply_patch parser.
pub mod fuzz {
    pub mod js_regex {
        pub use crate::js_regex::{fast::FastRegex, translate, JsRegex};
    }
    pub mod policy {
        pub use crate::policy::{Access, AllowedRoot, Denied, DenyReason, Policy, ResolvedPath};
    }
    pub mod progress {
        pub use crate::progress::{Cancel, Progress};
    }
    pub mod write_order {
        pub use crate::write_order::WriteTurn;
    }
    pub mod protocol {
        pub mod dispatch {
            pub use crate::protocol::dispatch::call_tool;
        }
        pub mod jsonrpc {
            pub use crate::protocol::jsonrpc::{
                failure_line, parse, success_line, Element, Id, Incoming, Message,
            };
        }
        pub mod reply {
            pub use crate::protocol::reply::{batch_pieces, tool_line, LineAllowance};
        }
        pub mod revision {
            pub use crate::protocol::revision::{envelope, LATEST_LEGACY};
        }
    }
    pub mod schema {
        pub use crate::schema::{definitions, find, of, ToolDef};
    }
    pub mod tools {
        pub use crate::tools::{patch, Settings};
        pub mod table {
            pub use crate::tools::table::{Spec, Tool};
        }
        pub mod edit {
            pub mod matching {
                pub use crate::tools::edit::matching::{
                    apply_edits_within, Edit, EditError, NotFoundKind,
                };
            }
        }
    }
}
