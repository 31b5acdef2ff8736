//! The portable backend: each directory on the way opened relative to the one before with
//! `O_NOFOLLOW | O_DIRECTORY`, and the last component with `O_NOFOLLOW`, so a symlink anywhere
//! fails the open. One system call per component, and only calls every Unix has: this is what
//! macOS runs, and what Linux runs without `openat2` or with `REPLAY_CONFINE=walk`.
//!
//! macOS adds `O_NOFOLLOW_ANY` to every open (`platform::NOFOLLOW_ANY`), which for one name at
//! a time is the same as `O_NOFOLLOW`. Where a handle on a directory is only searched, Linux
//! uses `O_PATH` and macOS `O_SEARCH` (`platform::DIR_HANDLE`); that flag is the one difference
//! between the two in this file.

use std::ffi::OsStr;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};

use nix::errno::Errno;
use nix::fcntl::{openat, OFlag};
use nix::sys::stat::Mode;

use super::{fstat, Kind};
use crate::platform::{DIR_HANDLE, NOFOLLOW_ANY};

/// Opens `rel` (relative, no `..`: checked by the caller) below `root`.
pub fn open(root: BorrowedFd<'_>, rel: &Path, flags: OFlag, mode: Mode) -> io::Result<OwnedFd> {
    let parts: Vec<&OsStr> = rel
        .components()
        .filter_map(|c| match c {
            Component::Normal(name) => Some(name),
            _ => None,
        })
        .collect();
    let trailing_slash = rel.as_os_str().as_bytes().ends_with(b"/");
    let flags = flags | OFlag::O_CLOEXEC | OFlag::O_NOCTTY | OFlag::O_NOFOLLOW | NOFOLLOW_ANY;
    let Some((last, dirs)) = parts.split_last() else {
        return Ok(openat(root, ".", flags, mode)?);
    };
    let mut dir: Option<OwnedFd> = None;
    for part in dirs {
        let at = dir.as_ref().map_or(root, |d| d.as_fd());
        dir = Some(openat(at, *part, walk_flags(), Mode::empty())?);
    }
    let at = dir.as_ref().map_or(root, |d| d.as_fd());
    let flags = if trailing_slash { flags | OFlag::O_DIRECTORY } else { flags };
    let fd = openat(at, *last, flags, mode)?;
    // With Linux's O_PATH, O_NOFOLLOW opens a symlink itself instead of failing.
    if flags.contains(DIR_HANDLE) && fstat(fd.as_fd())?.kind() == Kind::Symlink {
        return Err(io::Error::from(Errno::ELOOP));
    }
    Ok(fd)
}

/// How a directory on the way is opened: searched only, never through a symlink.
fn walk_flags() -> OFlag {
    DIR_HANDLE | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | NOFOLLOW_ANY
}
