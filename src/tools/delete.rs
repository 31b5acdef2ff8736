//! delete_file: files, whole directories, and symlinks (the link, never its target).
//!
//! A directory is removed level by level through handles (`fs::tree`), at any depth. A
//! cancelled call stops between two entries: what was removed stays removed, as with an
//! interrupted `rm -r`.

use std::os::fd::AsFd;

use serde::Deserialize;

use crate::error::ToolError;
use crate::fs::tree;
use crate::tools::{Ctx, Output};

#[derive(Deserialize)]
pub struct DeleteArgs {
    path: String,
}

pub fn delete_file(ctx: &Ctx, args: DeleteArgs) -> Result<Output, ToolError> {
    let resolved = ctx.policy.resolve_remove(&args.path)?;
    let failed = |e| ToolError::io("delete", &resolved.shown, e);
    let slot = resolved.slot().map_err(failed)?;
    // Step by step (`write_order::WriteTurn`): its turn holds until it stops.
    let stop = || ctx.cancel.is_cancelled();
    ctx.write_turn
        .keep_while(|| tree::remove_at(slot.dir.as_fd(), &slot.name, &stop))
        .ok_or(ToolError::Cancelled)?
        .map_err(failed)?;
    Ok(Output::text(format!("Deleted {}", resolved.shown.display())))
}
