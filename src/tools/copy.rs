//! copy_file: a file or a directory tree copied under a temp name in the destination's
//! directory, then renamed into place, so the destination shows nothing or the whole copy.
//!
//! The source is resolved for reading and followed if it is a symlink (its target is copied,
//! as `cp` does with a link it is given); symlinks inside a copied directory are copied as
//! links, never followed. Without `overwrite` the rename is exclusive (`renameat2(RENAME_NOREPLACE)`), so
//! an entry that appears meanwhile is not lost either. With it, an existing file is replaced
//! atomically, as write_file replaces one; a directory is never replaced, nor replaces a file.

use std::ffi::OsStr;
use std::io;
use std::os::fd::{AsFd, BorrowedFd};

use nix::errno::Errno;
use nix::fcntl::{renameat, OFlag};
use serde::Deserialize;

use crate::error::ToolError;
use crate::fs::atomic::{rename_no_replace, temp_name};
use crate::fs::tree;
use crate::policy::confined::{Kind, Slot};
use crate::tools::{into_itself, refuse_carrying_hidden, Ctx, Output};

#[derive(Deserialize)]
pub struct CopyFileArgs {
    source: String,
    destination: String,
    #[serde(default)]
    overwrite: bool,
}

pub fn copy_file(ctx: &Ctx, args: CopyFileArgs) -> Result<Output, ToolError> {
    let source = ctx.policy.resolve_read(&args.source)?;
    let destination = ctx.policy.resolve_write(&args.destination)?;
    refuse_carrying_hidden(ctx, &source)?;
    let failed = |e| ToolError::io("copy", &source.shown, e);
    // A device, FIFO or socket is refused before it is opened (opening some devices acts).
    let meta = source.metadata().map_err(failed)?;
    if !meta.is_file() && !meta.is_dir() {
        return Err(ToolError::NotRegularFile { path: source.shown });
    }
    // Non-blocking all the same: should a FIFO take the file's place meanwhile, the copy fails
    // instead of waiting for a writer.
    let from = source.open(OFlag::O_RDONLY | OFlag::O_NONBLOCK).map_err(failed)?;
    let source_kind = if meta.is_dir() { Kind::Dir } else { Kind::File };
    if into_itself(&source, &destination) {
        let detail = if destination.real == source.real {
            format!("is the source itself ({})", source.shown.display())
        } else {
            format!(
                "lies inside the source {}: a directory cannot be copied into itself",
                source.shown.display()
            )
        };
        return Err(ToolError::invalid_params("destination", detail));
    }
    let to = match destination.slot_making_parents() {
        Ok(slot) => slot,
        // An allowed directory itself, which has no parent beneath its root: it exists.
        Err(e) if e.raw_os_error() == Some(Errno::EISDIR as i32) => {
            return Err(ToolError::AlreadyExists { path: destination.shown })
        }
        Err(e) => return Err(ToolError::io("create parent directories", &destination.shown, e)),
    };
    let replace = match to.stat().map_err(|e| ToolError::io("copy", &destination.shown, e))? {
        None => false,
        Some(_) if !args.overwrite => {
            return Err(ToolError::AlreadyExists { path: destination.shown.clone() })
        }
        Some(stat) => match stat.kind() {
            Kind::Dir => return Err(ToolError::DirectoryInTheWay { path: destination.shown }),
            _ if source_kind == Kind::Dir => {
                return Err(ToolError::FileInTheWay { path: destination.shown })
            }
            // The policy resolved every link: one here was put there since.
            Kind::Symlink => return Err(failed(io::Error::from(Errno::ELOOP))),
            Kind::File | Kind::Other => true,
        },
    };
    let stop = || ctx.cancel.is_cancelled();
    let temp = copy_to_temp(&from, &to, &stop).map_err(failed)?;
    // Not after a cancel gave the turn up: a later writer of the destination may have gone.
    let Some(renamed) = ctx.write_turn.keep_while(|| rename_into_place(&to, &temp, replace)) else {
        discard(to.dir.as_fd(), OsStr::new(&temp));
        return Err(ToolError::Cancelled);
    };
    if let Err(e) = renamed {
        discard(to.dir.as_fd(), OsStr::new(&temp));
        return Err(match e.kind() {
            io::ErrorKind::AlreadyExists => ToolError::AlreadyExists { path: destination.shown },
            _ => ToolError::io("copy", &destination.shown, e),
        });
    }
    // Make the rename itself durable (a bare `O_PATH` handle cannot be synced: best effort).
    let _ = nix::unistd::fsync(to.dir.as_fd());
    Ok(Output::text(format!(
        "Copied {} -> {}",
        source.shown.display(),
        destination.shown.display()
    )))
}

/// Copies the open source into a fresh temp name in the slot's directory; returns the name.
/// Listings and walks skip temp names, so a copy in progress is never seen; a failed one is
/// removed.
fn copy_to_temp(from: &std::fs::File, to: &Slot, stop: tree::ShouldStop<'_>) -> io::Result<String> {
    let dir = to.dir.as_fd();
    loop {
        // write_file's temp names, from the same counter, so a copy left by a killed server is
        // swept like their files, and no call of this process picks a name another holds.
        let temp = temp_name();
        match tree::copy_open(from, dir, OsStr::new(&temp), stop) {
            Ok(()) => return Ok(temp),
            // The name is taken (a server in another pid namespace sharing the directory):
            // the create failed at the top, so nothing of ours is there. Try the next.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                discard(dir, OsStr::new(&temp));
                return Err(e);
            }
        }
    }
}

/// Renames the finished copy to the slot's name: replacing the file there with `replace`,
/// else only if the name is still free.
fn rename_into_place(to: &Slot, temp: &str, replace: bool) -> io::Result<()> {
    let dir = to.dir.as_fd();
    let name = to.name.as_os_str();
    if replace {
        // Over a directory (one that appeared since the check) this fails with EISDIR or
        // ENOTDIR: a directory is never replaced.
        return Ok(renameat(dir, temp, dir, name)?);
    }
    rename_no_replace(dir, OsStr::new(temp), dir, name)
}

/// Removes a half-made copy (replay's own temp name), whose directories may already have been
/// given read-only modes.
fn discard(dir: BorrowedFd<'_>, name: &OsStr) {
    let _ = tree::discard_at(dir, name);
}
