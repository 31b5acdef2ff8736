//! The atomic write every writer uses (write_file, the edits): temp file beside the target,
//! fsync, rename, the original's permissions kept, all through the target directory's handle.
//! Also the temp names every writer draws from (copy_file's too), and the sweep of the temp files
//! that killed servers left behind.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::fs::{self, File};
use std::io::{self, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::PermissionsExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{LazyLock, Mutex};

use nix::errno::Errno;
use nix::fcntl::{openat, renameat, OFlag};
use nix::unistd::{unlinkat, UnlinkatFlags};

use crate::platform;
use crate::policy::confined::{self, Kind, Slot};

/// The prefix of every temp file replay creates, so that a leftover one (the server killed
/// between create and rename) is recognizably replay's. The full name is
/// `.replay-tmp.<pid>.<n>`: the pid tells whether its writer can still be running.
pub const TEMP_PREFIX: &str = ".replay-tmp.";

/// Replaces the slot's entry with `bytes` so that a reader (or a crash) sees the old content or
/// the new, never a mix. An existing file keeps its permissions (less setuid and setgid: see
/// `kept_mode`), its user xattrs and POSIX ACL (where the file system takes them) and, where
/// allowed, its owner. The temp file is created, and renamed over the entry, in the slot's
/// directory handle: no path is looked up again.
///
/// The rename runs inside `gate`, which the caller's write turn holds
/// (`write_order::WriteTurn::rename_last`): the gate may refuse it (any error, e.g.
/// `ErrorKind::Interrupted` for a cancel, removes the temp file), and what it does after the
/// rename runs before the directory's fsync makes the rename durable.
///
/// The first time this process writes into a directory, it first removes the temp files that
/// killed servers left there (see `sweep_stale_temps`).
pub fn atomic_write(
    slot: &Slot,
    bytes: &[u8],
    gate: impl FnOnce(&mut dyn FnMut() -> io::Result<()>) -> io::Result<()>,
) -> io::Result<()> {
    let existing = match slot.stat()? {
        Some(stat) => match stat.kind() {
            Kind::Dir => return Err(io::Error::from(io::ErrorKind::IsADirectory)),
            // The policy resolved every link: one here was put there since.
            Kind::Symlink => return Err(io::Error::from(Errno::ELOOP)),
            Kind::File | Kind::Other => Some(stat),
        },
        None => None,
    };
    let dir = slot.dir.as_fd();
    sweep_stale_temps(dir);
    let xattrs = match &existing {
        Some(stat) if stat.kind() == Kind::File => old_xattrs(slot),
        _ => Vec::new(),
    };
    // An existing file's temp starts as the owner's alone (0600), so that its xattrs can be
    // set whatever the final mode; the final mode is set last.
    let (tmp_name, mut tmp) = create_temp(dir, existing.map(|_| 0o600))?;
    let result = (|| -> io::Result<()> {
        tmp.write_all(bytes)?;
        if let Some(stat) = &existing {
            platform::set_xattrs(tmp.as_fd(), &xattrs);
            // Only root may give a file away; for anyone else this fails and the owner is theirs.
            let _ = std::os::unix::fs::fchown(&tmp, Some(stat.uid), Some(stat.gid));
            // After the chown, which may clear bits: the kept mode, exactly, umask or not.
            tmp.set_permissions(fs::Permissions::from_mode(kept_mode(stat.mode)))?;
        }
        tmp.sync_all()?;
        gate(&mut || Ok(renameat(dir, tmp_name.as_str(), dir, slot.name.as_os_str())?))
    })();
    if result.is_err() {
        let _ = unlinkat(dir, tmp_name.as_str(), UnlinkatFlags::NoRemoveDir);
    }
    result?;
    // Make the rename itself durable (a bare `O_PATH` handle cannot be synced: best effort).
    let _ = nix::unistd::fsync(dir);
    Ok(())
}

/// The mode a rewritten file keeps: its permission bits and the sticky bit, never setuid or
/// setgid (`fs::KEPT_MODE_BITS`), whoever the server runs as (root too), so the outcome does not
/// depend on it.
fn kept_mode(mode: u32) -> u32 {
    mode & super::KEPT_MODE_BITS
}

/// The xattrs (user attributes, the POSIX ACL) of the file a rewrite replaces, to give the
/// replacement (`platform::kept_xattrs`). Nothing if it cannot be opened for reading: best
/// effort, as the copy is.
fn old_xattrs(slot: &Slot) -> Vec<(std::ffi::CString, Vec<u8>)> {
    let flags = OFlag::O_RDONLY
        | OFlag::O_NOFOLLOW
        | OFlag::O_NONBLOCK
        | OFlag::O_NOCTTY
        | OFlag::O_CLOEXEC;
    match openat(slot.dir.as_fd(), slot.name.as_os_str(), flags, nix::sys::stat::Mode::empty()) {
        Ok(fd) => platform::kept_xattrs(fd.as_fd()),
        Err(_) => Vec::new(),
    }
}

/// Removes the `.replay-tmp.<pid>.<n>` files (and copy_file's directories) in `dir` whose
/// `<pid>` is not a running process: what a server killed between creating its temp file and
/// renaming it left behind. A temp file of a live process (this one included) is never
/// touched, nor is any other name.
///
/// Runs at most once per directory per process: one `readdir` of `dir` alone (never its
/// subdirectories) on the first write there, nothing on later ones, so repeated writes cost a
/// set lookup. A file left by a server killed after that first write stays until the next
/// process writes there.
///
/// A dead pid's temp directory (a copy_file cut short) goes with everything in it.
///
/// "Not running" means `kill(pid, 0)` fails with `ESRCH`; `EPERM` (another user's process, or
/// one outside a Landlock signal scope) counts as running. A server in another pid namespace
/// sharing the directory looks dead from here: its temp file (or copy in progress) would be
/// removed and that one write or copy fail (its rename finds no file), never leaving a mix. A
/// reused pid only keeps a stale file a while longer.
fn sweep_stale_temps(dir: BorrowedFd<'_>) {
    // One directory (device and inode) per directory written to, for the life of the process.
    static SWEPT: LazyLock<Mutex<HashSet<(u64, u64)>>> = LazyLock::new(Mutex::default);
    let Ok(stat) = confined::fstat(dir) else { return };
    let key = (stat.dev, stat.ino);
    let first_time = SWEPT.lock().unwrap_or_else(|e| e.into_inner()).insert(key);
    if !first_time {
        return;
    }
    let Ok(entries) = confined::read_entries(dir) else { return };
    let own_pid = nix::unistd::getpid();
    for entry in entries {
        let Some(pid) = entry.name.to_str().and_then(temp_file_pid) else { continue };
        // create_temp makes regular files, copy_file files and directories (never a link).
        if pid == own_pid || !matches!(entry.kind, Kind::File | Kind::Dir) {
            continue;
        }
        if nix::sys::signal::kill(pid, None) != Err(Errno::ESRCH) {
            continue;
        }
        let name = entry.name.to_string_lossy();
        match crate::fs::tree::remove_at(dir, &entry.name, &crate::fs::tree::never) {
            Ok(()) => tracing::info!(%name, "removed a stale temp file"),
            Err(e) => tracing::debug!(%name, "stale temp file: {e}"),
        }
    }
}

/// The `<pid>` of a temp file name `.replay-tmp.<pid>.<n>`, both parts decimal; `None` for any
/// other name.
fn temp_file_pid(name: &str) -> Option<nix::unistd::Pid> {
    let (pid, n) = name.strip_prefix(TEMP_PREFIX)?.split_once('.')?;
    let decimal = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !decimal(pid) || !decimal(n) {
        return None;
    }
    let pid: i32 = pid.parse().ok().filter(|&pid| pid > 0)?;
    Some(nix::unistd::Pid::from_raw(pid))
}

/// A temp name this process has not used yet: `.replay-tmp.<pid>.<n>`, one counter for every
/// writer (write_file, the edits, copy_file), so two calls never pick the same name.
pub fn temp_name() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{TEMP_PREFIX}{}.{n}", std::process::id())
}

fn create_temp(dir: BorrowedFd<'_>, mode: Option<u32>) -> io::Result<(String, File)> {
    let flags =
        OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    loop {
        let name = temp_name();
        let mode = crate::platform::mode(mode.unwrap_or(0o666));
        match openat(dir, name.as_str(), flags, mode) {
            Ok(fd) => return Ok((name, File::from(fd))),
            Err(Errno::EEXIST) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Renames `from` in `from_dir` to `to` in `to_dir` without ever replacing what is there
/// (`AlreadyExists`): the kernel's exclusive rename (`platform::rename_exclusive`), so an entry
/// that appears meanwhile is not lost either. Where the file system cannot rename exclusively
/// (some FUSE file systems, older NFS), it checks that `to` is free, then renames plainly: a
/// narrow window, on those file systems only. Other errors come back as the kernel gave them
/// (`EXDEV` across file systems, for move_file to copy instead).
pub fn rename_no_replace(
    from_dir: BorrowedFd<'_>,
    from: &OsStr,
    to_dir: BorrowedFd<'_>,
    to: &OsStr,
) -> io::Result<()> {
    match platform::rename_exclusive(from_dir, from, to_dir, to) {
        Ok(()) => Ok(()),
        Err(errno) if platform::cannot_rename_exclusively(errno) => {
            match confined::stat_at(to_dir, to) {
                Ok(_) => return Err(io::Error::from(io::ErrorKind::AlreadyExists)),
                Err(Errno::ENOENT) => {}
                Err(e) => return Err(e.into()),
            }
            Ok(renameat(from_dir, from, to_dir, to)?)
        }
        Err(errno) => Err(io::Error::from(errno)),
    }
}
