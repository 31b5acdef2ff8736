//! delete_file: files, whole directories, and symlinks (the link, never its target).

use serde::Deserialize;

use crate::error::ToolError;
use crate::tools::relocate::remove_any;
use crate::tools::{Ctx, Output};

#[derive(Deserialize)]
pub struct DeleteArgs {
    path: String,
}

pub fn delete_file(ctx: &Ctx, args: DeleteArgs) -> Result<Output, ToolError> {
    let resolved = ctx.policy.resolve_remove(&args.path)?;
    // std's remove_dir_all does not follow symlinks inside the tree it removes.
    remove_any(&resolved.real).map_err(|e| ToolError::io("delete", &resolved.shown, e))?;
    Ok(Output::text(format!("Deleted {}", resolved.shown.display())))
}
