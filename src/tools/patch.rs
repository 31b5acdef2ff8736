//! apply_patch's pure cores: the Codex patch envelope parsed into file operations (`parse`), and
//! an update's hunks matched and applied to a file's text (`apply`). Neither touches the
//! filesystem; the tool resolves the paths through the policy and commits the results through
//! `fs::journal`.

pub mod apply;
pub mod parse;
