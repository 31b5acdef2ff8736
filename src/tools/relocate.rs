//! move_file: rename without ever overwriting, across filesystems too.

use std::fs;
use std::io;
use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};
use std::path::Path;

use nix::fcntl::{renameat2, RenameFlags, AT_FDCWD};
use serde::Deserialize;

use crate::error::ToolError;
use crate::tools::{Ctx, Output};

#[derive(Deserialize)]
pub struct MoveFileArgs {
    source: String,
    destination: String,
}

pub fn move_file(ctx: &Ctx, args: MoveFileArgs) -> Result<Output, ToolError> {
    let source = ctx.policy.resolve_remove(&args.source)?;
    let destination = ctx.policy.resolve_write(&args.destination)?;
    fs::symlink_metadata(&source.real).map_err(|e| ToolError::io("move", &source.shown, e))?;
    if fs::symlink_metadata(&destination.real).is_ok() {
        return Err(ToolError::AlreadyExists { path: destination.shown });
    }
    if destination.real.starts_with(&source.real) {
        let detail = format!("cannot move {} into itself", source.shown.display());
        return Err(ToolError::invalid_params("destination", detail));
    }
    if let Some(parent) = destination.real.parent() {
        fs::create_dir_all(parent)
            .map_err(|e| ToolError::io("create parent directories", &destination.shown, e))?;
    }
    rename_no_replace(&source.real, &destination.real)
        .map_err(|e| ToolError::io("move", &source.shown, e))?;
    Ok(Output::text(format!("Moved {} -> {}", source.shown.display(), destination.shown.display())))
}

/// `renameat2(RENAME_NOREPLACE)`: the kernel refuses to replace an existing destination, so a
/// file that appears between our check and the rename is not lost either. Across filesystems it
/// copies, then removes the source.
fn rename_no_replace(from: &Path, to: &Path) -> io::Result<()> {
    match renameat2(AT_FDCWD, from, AT_FDCWD, to, RenameFlags::RENAME_NOREPLACE) {
        Ok(()) => Ok(()),
        Err(nix::errno::Errno::EXDEV) => copy_then_remove(from, to),
        // Filesystems without RENAME_NOREPLACE support (some FUSE, older NFS).
        Err(nix::errno::Errno::EINVAL) => {
            if fs::symlink_metadata(to).is_ok() {
                return Err(io::Error::from(io::ErrorKind::AlreadyExists));
            }
            fs::rename(from, to)
        }
        Err(errno) => Err(io::Error::from(errno)),
    }
}

fn copy_then_remove(from: &Path, to: &Path) -> io::Result<()> {
    if let Err(e) = copy_tree(from, to) {
        // Leave the source intact and remove the half-made copy.
        let _ = remove_any(to);
        return Err(e);
    }
    remove_any(from)
}

/// Copies a file, a symlink (as a link) or a directory (recursively), keeping permissions.
fn copy_tree(from: &Path, to: &Path) -> io::Result<()> {
    let meta = fs::symlink_metadata(from)?;
    if meta.file_type().is_symlink() {
        return symlink(fs::read_link(from)?, to);
    }
    if meta.is_dir() {
        fs::create_dir(to)?;
        for entry in fs::read_dir(from)? {
            let entry = entry?;
            copy_tree(&entry.path(), &to.join(entry.file_name()))?;
        }
        return fs::set_permissions(to, fs::Permissions::from_mode(meta.mode() & 0o7777));
    }
    fs::copy(from, to)?;
    fs::File::open(to)?.sync_all()
}

pub fn remove_any(path: &Path) -> io::Result<()> {
    let meta = fs::symlink_metadata(path)?;
    if meta.is_dir() {
        fs::remove_dir_all(path)
    } else {
        fs::remove_file(path)
    }
}
