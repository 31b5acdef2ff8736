//! The commands' TMPDIR: one private directory per server process.
//!
//! `$TMPDIR/replay-cmd-tmp-<uid>/` is the user's (mode 0700, checked to be the user's own, kept
//! across runs), and inside it each server has `<pid>/`. The sandbox grants a server its own
//! `<pid>/` only: a command of one server can neither read nor plant anything in another's.
//!
//! So a sandboxed server cannot remove its directory from the parent. It is made at start-up,
//! before the sandbox, when the directories of servers that are gone are removed too (one of
//! them is reused); at exit the server empties its own, and the next server to start removes
//! or reuses the empty directory.

use std::path::{Path, PathBuf};

#[derive(Debug)]
pub struct CommandTmp {
    dir: PathBuf,
}

impl CommandTmp {
    /// Finds or creates the per-user parent, removes what servers that are gone left there, and
    /// makes this server's directory. `None` if that cannot be done safely (then commands keep
    /// the TMPDIR they inherit).
    pub fn create() -> Option<CommandTmp> {
        use std::os::unix::fs::{DirBuilderExt, MetadataExt};
        let uid = nix::unistd::geteuid().as_raw();
        let parent = std::env::temp_dir().join(format!("replay-cmd-tmp-{uid}"));
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
        let dir = parent.join(std::process::id().to_string());
        // A directory a server that is gone left behind is renamed to this one's: making a
        // directory anew cost 0.3-0.6 ms of a 5 ms start on ext4 (its allocator looks for a
        // place for each new directory), a rename 0.02 ms.
        let reused = sweep(&parent, &dir);
        if !reused {
            if let Err(e) = std::fs::DirBuilder::new().mode(0o700).create(&dir) {
                tracing::warn!(path = %dir.display(), "cannot create the commands' TMPDIR: {e}");
                return None;
            }
        }
        Some(CommandTmp { dir })
    }

    /// This server's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Empties this server's directory, and removes it where the sandbox lets the server (it
    /// does not: the next server to start removes it).
    pub fn remove(&self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Removes the directories of servers that are no longer running, but the first, which
/// becomes `mine` (emptied). Whether one did.
fn sweep(parent: &Path, mine: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(parent) else { return false };
    let mut reused = false;
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        // This process's own pid: an earlier process that had it is gone.
        let gone = path == mine
            || matches!(
                nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None),
                Err(nix::errno::Errno::ESRCH)
            );
        if !gone || pid <= 0 {
            continue;
        }
        // Claimed first, then emptied: another server starting now may be sweeping it too.
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if !reused && is_dir && (path == mine || std::fs::rename(&path, mine).is_ok()) {
            // A command may have opened up its own TMPDIR's mode.
            use std::os::unix::fs::PermissionsExt;
            let private = std::fs::set_permissions(mine, std::fs::Permissions::from_mode(0o700));
            reused = private.is_ok() && empty(mine).is_ok();
            continue;
        }
        let _ = if is_dir { std::fs::remove_dir_all(&path) } else { std::fs::remove_file(&path) };
    }
    reused
}

/// Removes everything inside `dir`.
fn empty(dir: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            std::fs::remove_dir_all(entry.path())?;
        } else {
            std::fs::remove_file(entry.path())?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
