//! delete_file: files, whole directories, and symlinks (the link, never its target).

use std::os::fd::AsFd;

use serde::Deserialize;

use crate::error::ToolError;
use crate::policy::confined;
use crate::tools::{Ctx, Output};

#[derive(Deserialize)]
pub struct DeleteArgs {
    path: String,
}

pub fn delete_file(ctx: &Ctx, args: DeleteArgs) -> Result<Output, ToolError> {
    let resolved = ctx.policy.resolve_remove(&args.path)?;
    // std's remove_dir_all does not follow symlinks inside the tree it removes.
    let failed = |e| ToolError::io("delete", &resolved.shown, e);
    let slot = resolved.slot(false).map_err(failed)?;
    confined::remove_at(slot.dir.as_fd(), &slot.name).map_err(failed)?;
    Ok(Output::text(format!("Deleted {}", resolved.shown.display())))
}
