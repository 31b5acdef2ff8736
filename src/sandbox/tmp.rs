//! The commands' TMPDIR: one private directory per server process.
//!
//! `$TMPDIR/replay-cmd-tmp-<uid>/` is the user's (mode 0700, checked to be the user's own, kept
//! across runs), and inside it each server has `<pid>-<start>/` (`<start>`: when the process
//! started, in clock ticks since boot; Linux only, else `<pid>/`). The start time keeps a
//! server that got a dead one's pid apart from it: by pid alone, a start that found the pid
//! dead went on removing its directories after a new server of that pid had made its own
//! there (pids wrap at 32,768 on many systems; a test run reuses them).
//!
//! Beside it, `<name>.lock`, locked (`flock`) for the server's life and taken before the
//! directory is made: a start removes a server's directories only when it can take that lock,
//! whatever the pid says. A server in another PID namespace sharing the temporary directory (a
//! container) has pids that mean nothing here, and may even have this server's name: a name
//! whose lock is held gets a `-<n>` suffix. The sandbox grants a server its own
//! `<pid>/` only: a command of one server can neither read nor plant anything in another's.
//!
//! So a sandboxed server cannot remove its directory from the parent. It is made at start-up,
//! before the sandbox, when the directories of servers that are gone are removed too; at exit
//! the server empties its own, and the next server to start removes the empty directory. The
//! same goes for `<pid>.caches` (`layers`), the caches' copies, which the server's Landlock
//! domain lets it list and remove in, nothing more. A server that was killed leaves both whole
//! until the next server starts.

use std::path::{Path, PathBuf};

#[derive(Debug)]
pub struct CommandTmp {
    dir: PathBuf,
    /// `<name>.lock`, held while the server lives.
    _lock: nix::fcntl::Flock<std::fs::File>,
}

impl CommandTmp {
    /// Finds or creates the per-user parent, removes what servers that are gone left there, and
    /// makes this server's directory. `None` if that cannot be done safely (then commands keep
    /// the TMPDIR they inherit).
    pub fn create() -> Option<CommandTmp> {
        use std::os::unix::fs::{DirBuilderExt, MetadataExt};
        let uid = nix::unistd::geteuid().as_raw();
        let parent = self::parent(&std::env::temp_dir());
        match std::fs::DirBuilder::new().mode(0o700).create(&parent) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => {
                tracing::warn!(path = %parent.display(), "cannot create the commands' TMPDIR: {e}");
                return None;
            }
        }
        // Someone else's directory, or a symlink planted under a shared /tmp, is not used.
        let meta = std::fs::symlink_metadata(&parent).ok()?;
        if !meta.is_dir() || meta.uid() != uid || meta.mode() & 0o077 != 0 {
            tracing::warn!(path = %parent.display(), "not using the commands' TMPDIR: not a private directory of this user");
            return None;
        }
        // The sandbox names it by a path without symlinks (a symlinked TMPDIR is common).
        let parent = std::fs::canonicalize(&parent).ok()?;
        sweep(&parent);
        let own = own_name();
        let (name, lock) = (0..64).find_map(|n| {
            let name = if n == 0 { own.clone() } else { format!("{own}-{n}") };
            lock(&parent, &name).map(|lock| (name, lock))
        })?;
        let dir = parent.join(name);
        // Left by an earlier process of this name whose lock is free. Never a gone server's
        // directory reused: a process its commands left behind (`setsid`) may still hold it. A
        // new directory costs 0.03 ms to 0.6 ms on ext4, as its allocator finds room.
        let _ = std::fs::remove_dir_all(&dir);
        let _ = std::fs::remove_dir_all(layers(&dir));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => Some(CommandTmp { dir, _lock: lock }),
            Err(e) => {
                tracing::warn!(path = %dir.display(), "cannot create the commands' TMPDIR: {e}");
                None
            }
        }
    }

    /// This server's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Empties this server's directory, and removes it where the sandbox lets the server (it
    /// does not: the next server to start removes it).
    pub fn remove(&self) {
        let layers = layers(&self.dir);
        open_overlay_work(&layers);
        let _ = std::fs::remove_dir_all(&layers);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Beside a server's TMPDIR `dir` (`<pid>`), `<pid>.caches`: the upper and work directories of
/// the caches' overlays (`sandbox::cache_overlays`), out of its commands' reach.
pub fn layers(dir: &Path) -> PathBuf {
    let mut name = dir.file_name().unwrap_or_default().to_os_string();
    name.push(".caches");
    dir.with_file_name(name)
}

/// The overlays' work directories in a caches' directory `layers` (`<pid>.caches/<copy>/work/`)
/// hold a directory of mode 0 that its owner could not list, and so not remove, without root.
/// Each level is opened from the one above, following no symlink (a gone server's commands may
/// have planted one anywhere they could write), and the mode set is that of the directory
/// opened: nothing outside `layers` changes.
#[cfg(target_os = "linux")]
fn open_overlay_work(layers: &Path) {
    use nix::fcntl::{openat, OFlag};
    use nix::sys::stat::Mode;
    use std::os::fd::{AsRawFd, OwnedFd};
    let (Some(parent), Some(name)) = (layers.parent(), layers.file_name()) else { return };
    let flags = OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let at = |dir: &OwnedFd, name: &std::ffi::CStr, mode: OFlag| {
        openat(dir, name, flags | mode, Mode::empty()).ok()
    };
    let Ok(parent) = nix::fcntl::open(parent, flags | OFlag::O_RDONLY, Mode::empty()) else {
        return;
    };
    let Ok(name) = std::ffi::CString::new(name.as_encoded_bytes()) else { return };
    let Some(layers) = at(&parent, &name, OFlag::O_RDONLY) else { return };
    for copy in entries(&layers) {
        let Some(copy) = at(&layers, &copy, OFlag::O_RDONLY) else { continue };
        let Some(work) = at(&copy, c"work", OFlag::O_RDONLY) else { continue };
        for inner in entries(&work) {
            // Mode 0: only a path descriptor opens. Its /proc/self/fd link names the very
            // directory opened, whatever its path becomes.
            let Some(inner) = at(&work, &inner, OFlag::O_PATH) else { continue };
            let opened = format!("/proc/self/fd/{}", inner.as_raw_fd());
            let _ = nix::sys::stat::fchmodat(
                nix::fcntl::AT_FDCWD,
                opened.as_str(),
                Mode::from_bits_truncate(0o700),
                nix::sys::stat::FchmodatFlags::FollowSymlink,
            );
        }
    }
}

/// The names in the open directory `dir`, but `.` and `..`.
#[cfg(target_os = "linux")]
fn entries(dir: &std::os::fd::OwnedFd) -> Vec<std::ffi::CString> {
    let Ok(mut listed) =
        dir.try_clone().map_err(drop).and_then(|fd| nix::dir::Dir::from_fd(fd).map_err(drop))
    else {
        return Vec::new();
    };
    listed
        .iter()
        .flatten()
        .map(|e| e.file_name().to_owned())
        .filter(|n| n.as_bytes() != b"." && n.as_bytes() != b"..")
        .collect()
}

/// The caches' overlays are Linux's: elsewhere their layers hold nothing of mode 0.
#[cfg(not(target_os = "linux"))]
fn open_overlay_work(_layers: &Path) {}

/// The user's directory of every server's TMPDIR for commands, in the temporary directory
/// `temp`.
pub fn parent(temp: &Path) -> PathBuf {
    temp.join(format!("replay-cmd-tmp-{}", nix::unistd::geteuid().as_raw()))
}

/// This process's directory's name: `<pid>-<start>`, or `<pid>` where the start time is unknown.
fn own_name() -> String {
    let pid = std::process::id();
    match start_time(pid as i32) {
        Some(start) => format!("{pid}-{start}"),
        None => pid.to_string(),
    }
}

/// When process `pid` started, in clock ticks since boot (`/proc/<pid>/stat`'s 22nd field).
#[cfg(target_os = "linux")]
fn start_time(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command name, which may hold spaces and parentheses: field 3 on.
    stat.rsplit_once(')')?.1.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(not(target_os = "linux"))]
fn start_time(_pid: i32) -> Option<u64> {
    None
}

/// Whether the server a directory's name (`<pid>-<start>` or `<pid>`, without `.caches`) names
/// has ended: no process has its pid, or the one that has started at another time. `None` for a
/// name no server gives.
fn ended(name: &str) -> Option<bool> {
    let (pid, start) = match name.split_once('-') {
        Some((pid, start)) => (pid, Some(start.parse::<u64>().ok()?)),
        None => (name, None),
    };
    let pid = pid.parse::<i32>().ok().filter(|&pid| pid > 0)?;
    let gone = matches!(
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None),
        Err(nix::errno::Errno::ESRCH)
    );
    Some(gone || start.is_some_and(|start| start_time(pid).is_some_and(|now| now != start)))
}

/// `<name>.lock` in `parent`, locked; `None` when another process holds it (or it cannot be
/// made). The locked file is checked to be the one the name still names: a sweep removes a
/// free lock file, and a lock on a removed file keeps nothing.
fn lock(parent: &Path, name: &str) -> Option<nix::fcntl::Flock<std::fs::File>> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let path = parent.join(format!("{name}.lock"));
    // Each round lost means a sweep removed the file meanwhile: a few at most.
    for _ in 0..16 {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&path)
            .ok()?;
        let held =
            nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock).ok()?;
        let locked = held.metadata().ok()?;
        let named = std::fs::symlink_metadata(&path).ok();
        if named.is_some_and(|n| (n.dev(), n.ino()) == (locked.dev(), locked.ino())) {
            return Some(held);
        }
    }
    None
}

/// Removes the directories of servers that are no longer running: those whose lock this start
/// can take, or, without a lock file, whose pid says so (`ended`).
fn sweep(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(text) = name.to_str() else { continue };
        if let Some(server) = text.strip_suffix(".lock") {
            // A lock whose directories are gone, and no one holds.
            let gone = !parent.join(server).exists() && !layers(&parent.join(server)).exists();
            if gone {
                // Removed while held, so a server that opened it meanwhile sees its lock was
                // on a removed file and takes a new one (`lock`).
                if let Some(_held) = lock(parent, server) {
                    let _ = std::fs::remove_file(entry.path());
                }
            }
            continue;
        }
        let server = text.strip_suffix(".caches").unwrap_or(text);
        let held = match parent.join(format!("{server}.lock")).exists() {
            true => lock(parent, server),
            false => None,
        };
        let ended = match &held {
            Some(_) => true,
            None if parent.join(format!("{server}.lock")).exists() => false,
            None => ended(server) == Some(true),
        };
        if ended {
            let path = entry.path();
            // Only a caches' directory holds overlays' work directories; a command's TMPDIR
            // holds what its commands made.
            if name.to_str().is_some_and(|n| n.ends_with(".caches")) {
                open_overlay_work(&path);
            }
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            let _ =
                if is_dir { std::fs::remove_dir_all(&path) } else { std::fs::remove_file(&path) };
        }
    }
}

#[cfg(test)]
mod tests;
