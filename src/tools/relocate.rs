//! move_file: rename without ever overwriting, across filesystems too, through directory
//! handles (`fs::atomic::rename_no_replace`), so neither end is looked up by path again.

use std::io;
use std::os::fd::AsFd;

use nix::errno::Errno;
use serde::Deserialize;

use crate::error::ToolError;
use crate::fs::atomic;
use crate::fs::tree;
use crate::policy::confined::Slot;
use crate::tools::{into_itself, refuse_carrying_hidden, Ctx, Output};

#[derive(Deserialize)]
pub struct MoveFileArgs {
    source: String,
    destination: String,
}

pub fn move_file(ctx: &Ctx, args: MoveFileArgs) -> Result<Output, ToolError> {
    let source = ctx.policy.resolve_remove(&args.source)?;
    let destination = ctx.policy.resolve_write(&args.destination)?;
    refuse_carrying_hidden(ctx, &source)?;
    let failed = |e| ToolError::io("move", &source.shown, e);
    let from = source.slot().map_err(failed)?;
    if from.stat().map_err(failed)?.is_none() {
        return Err(failed(io::Error::from(io::ErrorKind::NotFound)));
    }
    if into_itself(&source, &destination) {
        let detail = format!("cannot move {} into itself", source.shown.display());
        return Err(ToolError::invalid_params("destination", detail));
    }
    let to = destination
        .slot_making_parents()
        .map_err(|e| ToolError::io("create parent directories", &destination.shown, e))?;
    if to.stat().map_err(|e| ToolError::io("move", &destination.shown, e))?.is_some() {
        return Err(ToolError::AlreadyExists { path: destination.shown });
    }
    // Step by step across file systems (`write_order::WriteTurn`): its turn holds until it stops.
    let stop = || ctx.cancel.is_cancelled();
    let moved = ctx.write_turn.keep_while(|| rename_no_replace(&from, &to, &stop));
    moved.ok_or(ToolError::Cancelled)?.map_err(|e| match e.kind() {
        io::ErrorKind::AlreadyExists => {
            ToolError::AlreadyExists { path: destination.shown.clone() }
        }
        _ => failed(e),
    })?;
    Ok(Output::text(format!("Moved {} -> {}", source.shown.display(), destination.shown.display())))
}

/// `fs::atomic::rename_no_replace`: the kernel refuses to replace an existing destination, so a
/// file that appears between our check and the rename is not lost either. Across filesystems
/// it copies, then removes the source; `stop` can end the copy, never the removal after it.
fn rename_no_replace(from: &Slot, to: &Slot, stop: tree::ShouldStop<'_>) -> io::Result<()> {
    let (from_dir, to_dir) = (from.dir.as_fd(), to.dir.as_fd());
    match atomic::rename_no_replace(from_dir, &from.name, to_dir, &to.name) {
        Err(e) if e.raw_os_error() == Some(Errno::EXDEV as i32) => copy_then_remove(from, to, stop),
        result => result,
    }
}

/// Both through handles, level by level (`fs::tree`), at any depth. Once the copy is whole, the
/// source is removed even if the call is cancelled meanwhile: stopping there would leave two
/// halves.
fn copy_then_remove(from: &Slot, to: &Slot, stop: tree::ShouldStop<'_>) -> io::Result<()> {
    if let Err(e) = tree::copy_at(from.dir.as_fd(), &from.name, to.dir.as_fd(), &to.name, stop) {
        // Leave the source intact and remove the half-made copy: unless the destination
        // appeared meanwhile, in which case nothing was made and it is someone else's.
        if e.kind() != io::ErrorKind::AlreadyExists {
            let _ = tree::discard_at(to.dir.as_fd(), &to.name);
        }
        return Err(e);
    }
    tree::remove_at(from.dir.as_fd(), &from.name, &tree::never)
}
