//! The Linux backend: `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)`,
//! which resolves the whole relative path in the kernel, in one system call, refusing any
//! symlink (`ELOOP`) and any step above the root's handle.

use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::path::Path;

use nix::errno::Errno;
use nix::fcntl::{openat2, OFlag, OpenHow, ResolveFlag, AT_FDCWD};
use nix::sys::stat::Mode;

/// Whether the kernel has `openat2` and lets this process use it (a seccomp filter may not).
pub fn usable() -> bool {
    let how = OpenHow::new()
        .flags(OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC)
        .resolve(beneath_flags());
    match openat2(AT_FDCWD, ".", how) {
        Ok(_) => true,
        Err(e) => {
            tracing::info!("openat2 is not usable ({e}): opening paths one component at a time");
            false
        }
    }
}

fn beneath_flags() -> ResolveFlag {
    ResolveFlag::RESOLVE_BENEATH
        | ResolveFlag::RESOLVE_NO_SYMLINKS
        | ResolveFlag::RESOLVE_NO_MAGICLINKS
}

/// Opens `rel` (relative, no `..`: checked by the caller) below `root`.
pub fn open(root: BorrowedFd<'_>, rel: &Path, flags: OFlag, mode: Mode) -> io::Result<OwnedFd> {
    // openat2 refuses O_PATH with any flag but O_DIRECTORY, O_NOFOLLOW and O_CLOEXEC.
    let flags = if flags.contains(OFlag::O_PATH) {
        flags | OFlag::O_CLOEXEC
    } else {
        flags | OFlag::O_CLOEXEC | OFlag::O_NOCTTY
    };
    let how = OpenHow::new().flags(flags).mode(mode).resolve(beneath_flags());
    // EAGAIN: the kernel saw a rename race during the lookup and wants a retry.
    for _ in 0..8 {
        match openat2(root, rel, how) {
            Err(Errno::EAGAIN) => continue,
            other => return other.map_err(io::Error::from),
        }
    }
    Err(io::Error::from(Errno::EAGAIN))
}
