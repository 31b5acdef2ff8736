//! Whole directory trees, removed or copied level by level through handles, never by recursion.
//!
//! A client can build a tree deeper than any stack: create_directory makes thousands of levels a
//! call, and calls add up. So these loops keep their own stack, per level the entries still to
//! do, and the tree's depth costs heap, not stack: 20,000 levels take a few megabytes.
//!
//! Handles are kept on the last `Limits::window` (128) levels and on every `spacing`-th one above
//! ([`Descent`]), so a tree 20,000 levels deep holds about 200 handles instead of 20,000 (the
//! soft `RLIMIT_NOFILE` is often 1,024). A level whose handle was closed is opened again from the
//! nearest kept level above it, one name at a time with `O_NOFOLLOW | O_DIRECTORY`, and must
//! still be the directory it was (device and inode): a reopen follows no link, stays within the
//! tree, and fails if the tree was rearranged meanwhile. Nothing is followed: links are removed
//! or copied as links.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use nix::errno::Errno;
use nix::fcntl::{openat, readlinkat, OFlag};
use nix::sys::stat::{fchmod, mkdirat, Mode};
use nix::unistd::{symlinkat, unlinkat, UnlinkatFlags};

use crate::platform;
use crate::policy::confined::{self, DirEntry, Kind};

#[cfg(test)]
mod tests;

/// Asked between steps of a long operation: true once it should stop (the call was cancelled).
pub type ShouldStop<'a> = &'a dyn Fn() -> bool;

/// How many entries a directory's emptying removes, and how many bytes a file's copy copies,
/// between two questions to `ShouldStop`.
const STEP_ENTRIES: usize = 1024;
const STEP_BYTES: u64 = 64 << 20;

/// Never stops: for work that must finish once begun.
pub fn never() -> bool {
    false
}

/// The error of an operation that stopped because `ShouldStop` said so. Not `ErrorKind::Interrupted`,
/// which std's I/O helpers retry.
pub fn stopped() -> io::Error {
    io::Error::other("cancelled")
}

/// Removes `name` from `dir`: a file or a symlink (the link itself), or a directory with
/// everything in it, never through a symlink. Once `stop` says so it returns [`stopped`], and
/// what was removed stays removed, as with an interrupted `rm -r`.
pub fn remove_at(dir: BorrowedFd<'_>, name: &OsStr, stop: ShouldStop<'_>) -> io::Result<()> {
    remove(dir, name, stop, Origin::Found)
}

/// [`remove_at`] for a tree this process made itself (a copy cut short), whose directories may
/// already have the read-only modes of their source: each is made writable before it is
/// emptied.
pub fn discard_at(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<()> {
    remove(dir, name, &never, Origin::OwnCopy)
}

/// Whose tree a removal empties: one found as it is, or this process's own copy, whose
/// directories are made writable before they are emptied.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Origin {
    Found,
    OwnCopy,
}

fn remove(
    dir: BorrowedFd<'_>,
    name: &OsStr,
    stop: ShouldStop<'_>,
    origin: Origin,
) -> io::Result<()> {
    match unlinkat(dir, name, UnlinkatFlags::NoRemoveDir) {
        Ok(()) => return Ok(()),
        Err(e) if names_a_directory(dir, name, e) => {}
        Err(e) => return Err(e.into()),
    }
    let top = confined::open_subdir(dir, name)?;
    let first = empty_out(top.as_fd(), origin, stop)?;
    let mut descent = Descent::new(top, LIMITS)?;
    // Per level, from the top down: the subdirectories still to remove.
    let mut todo: Vec<Vec<OsString>> = vec![first];
    while let Some(subdirs) = todo.last_mut() {
        if stop() {
            return Err(stopped());
        }
        if let Some(sub) = subdirs.pop() {
            let parent = descent.current()?;
            let fd = match confined::open_subdir(parent, &sub) {
                Ok(fd) => fd,
                // No longer a directory (a link or a file put there meanwhile): that goes too.
                Err(e) if matches!(errno_of(&e), Some(Errno::ENOTDIR | Errno::ELOOP)) => {
                    unlinkat(parent, sub.as_os_str(), UnlinkatFlags::NoRemoveDir)?;
                    continue;
                }
                Err(e) => return Err(e),
            };
            let more = empty_out(fd.as_fd(), origin, stop)?;
            descent.enter(&sub, fd)?;
            todo.push(more);
            continue;
        }
        todo.pop();
        if todo.is_empty() {
            break;
        }
        let done = descent.leave();
        unlinkat(descent.current()?, done.as_os_str(), UnlinkatFlags::RemoveDir)?;
    }
    drop(descent);
    Ok(unlinkat(dir, name, UnlinkatFlags::RemoveDir)?)
}

/// Removes every entry of the open directory `dir` but its subdirectories, and returns their
/// names. For `Origin::OwnCopy`, makes the directory writable first. `stop` is asked every
/// `STEP_ENTRIES` entries: a directory of a million files is many steps.
fn empty_out(
    dir: BorrowedFd<'_>,
    origin: Origin,
    stop: ShouldStop<'_>,
) -> io::Result<Vec<OsString>> {
    if origin == Origin::OwnCopy {
        // Best effort: should it fail, the removals below say why.
        let _ = fchmod(dir, Mode::from_bits_truncate(0o700));
    }
    let mut subdirs = Vec::new();
    for (i, DirEntry { name, kind }) in confined::read_entries(dir)?.into_iter().enumerate() {
        if i % STEP_ENTRIES == STEP_ENTRIES - 1 && stop() {
            return Err(stopped());
        }
        if kind == Kind::Dir {
            subdirs.push(name);
            continue;
        }
        match unlinkat(dir, name.as_os_str(), UnlinkatFlags::NoRemoveDir) {
            Ok(()) | Err(Errno::ENOENT) => {}
            // A directory now.
            Err(e) if names_a_directory(dir, &name, e) => subdirs.push(name),
            Err(e) => return Err(e.into()),
        }
    }
    Ok(subdirs)
}

/// Copies `from_name` in `from` to `to_name` in `to`, which must not exist: a file (contents and
/// permission bits, then fsync), a symlink (as a link, its target unread), or a directory with
/// everything in it. Nothing is followed, so a copy cannot read outside what it was given.
/// Once `stop` says so it returns [`stopped`], leaving what it made for the caller to discard.
pub fn copy_at(
    from: BorrowedFd<'_>,
    from_name: &OsStr,
    to: BorrowedFd<'_>,
    to_name: &OsStr,
    stop: ShouldStop<'_>,
) -> io::Result<()> {
    let stat = confined::stat_at(from, from_name)?;
    match stat.kind() {
        Kind::Symlink => copy_link(from, from_name, to, to_name),
        Kind::Dir => {
            let source = confined::open_subdir(from, from_name)?;
            copy_tree(source, stat.mode, to, to_name, stop)
        }
        Kind::File => copy_file(&open_file(from, from_name)?, stat.mode, to, to_name, stop),
        Kind::Other => Err(not_copyable()),
    }
}

/// Copies an open file or directory (a handle `ResolvedPath::open` gave) to `to_name` in `to`,
/// which must not exist, as [`copy_at`] copies an entry: for a source that has no parent
/// beneath its root (the root itself), or whose handle is already held.
pub fn copy_open(
    source: &File,
    to: BorrowedFd<'_>,
    to_name: &OsStr,
    stop: ShouldStop<'_>,
) -> io::Result<()> {
    let stat = confined::fstat(source.as_fd())?;
    match stat.kind() {
        Kind::Dir => copy_tree(source.as_fd().try_clone_to_owned()?, stat.mode, to, to_name, stop),
        Kind::File => copy_file(source, stat.mode, to, to_name, stop),
        // A handle is never a symlink: the open refused one.
        Kind::Symlink | Kind::Other => Err(not_copyable()),
    }
}

/// The permission bits a copy keeps: setuid and setgid are dropped, as `cp` without `-p` does,
/// so a copy never makes a privileged program (the sticky bit stays).
const COPIED_MODE_BITS: u32 = super::KEPT_MODE_BITS;

/// Makes the directory `to_name` in `to` and copies the open directory `source` into it, level
/// by level. Each directory made stays private (0700) until it is filled, then gets its
/// source's permission bits. The copy's own top directory is skipped should it turn up inside
/// its source (the tree renamed under the copy), so that a copy never copies itself without end.
fn copy_tree(
    source: OwnedFd,
    mode: u32,
    to: BorrowedFd<'_>,
    to_name: &OsStr,
    stop: ShouldStop<'_>,
) -> io::Result<()> {
    mkdirat(to, to_name, Mode::from_bits_truncate(0o700))?;
    let target = confined::open_subdir(to, to_name)?;
    let made = id_of(target.as_fd())?;
    let first = confined::read_entries(source.as_fd())?;
    let mut from = Descent::new(source, LIMITS)?;
    let mut into = Descent::new(target, LIMITS)?;
    // Per level, from the top down: the entries still to copy, and the mode its copy gets.
    let mut todo: Vec<(Vec<DirEntry>, u32)> = vec![(first, mode)];
    while let Some((entries, mode)) = todo.last_mut() {
        if stop() {
            return Err(stopped());
        }
        let Some(DirEntry { name, .. }) = entries.pop() else {
            let bits = platform::mode(*mode & COPIED_MODE_BITS);
            todo.pop();
            fchmod(into.current()?, bits)?;
            if todo.is_empty() {
                break;
            }
            from.leave();
            into.leave();
            continue;
        };
        let source_dir = from.current()?;
        let stat = confined::stat_at(source_dir, &name)?;
        let kind = stat.kind();
        if kind != Kind::Dir {
            let target_dir = into.current()?;
            match kind {
                Kind::Symlink => copy_link(source_dir, &name, target_dir, &name)?,
                Kind::File => {
                    let file = open_file(source_dir, &name)?;
                    copy_file(&file, stat.mode, target_dir, &name, stop)?;
                }
                Kind::Dir | Kind::Other => return Err(not_copyable()),
            }
            continue;
        }
        if (stat.dev, stat.ino) == made {
            continue;
        }
        let sub = confined::open_subdir(source_dir, &name)?;
        let entries = confined::read_entries(sub.as_fd())?;
        let target_dir = into.current()?;
        mkdirat(target_dir, name.as_os_str(), Mode::from_bits_truncate(0o700))?;
        let target_sub = confined::open_subdir(target_dir, &name)?;
        from.enter(&name, sub)?;
        into.enter(&name, target_sub)?;
        todo.push((entries, stat.mode));
    }
    Ok(())
}

/// Opens the regular file `name` in `dir` for reading, never through a symlink. Non-blocking,
/// and checked on the handle: a FIFO swapped in after the caller's stat would block a
/// blocking open for good, waiting for a writer, where neither cancel nor the server's exit
/// can reach it.
fn open_file(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<File> {
    let flags = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC;
    let file = File::from(openat(dir, name, flags, Mode::empty())?);
    if confined::fstat(file.as_fd())?.kind() != Kind::File {
        return Err(not_copyable());
    }
    Ok(file)
}

/// Makes `to_name` in `to` a symlink with the same target as `from_name` in `from`.
fn copy_link(
    from: BorrowedFd<'_>,
    from_name: &OsStr,
    to: BorrowedFd<'_>,
    to_name: &OsStr,
) -> io::Result<()> {
    let target = readlinkat(from, from_name)?;
    Ok(symlinkat(target.as_os_str(), to, to_name)?)
}

/// Creates `to_name` in `to` (it must not exist) with the contents of `source` and `mode`'s
/// permission bits, and syncs it. `stop` is asked every `STEP_BYTES`: a move of a 768 MiB file
/// across file systems, cancelled, went on to its end.
fn copy_file(
    source: &File,
    mode: u32,
    to: BorrowedFd<'_>,
    to_name: &OsStr,
    stop: ShouldStop<'_>,
) -> io::Result<()> {
    let flags =
        OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let mut target = File::from(openat(to, to_name, flags, Mode::from_bits_truncate(0o600))?);
    // `io::copy` between two files uses copy_file_range: no copy through user space.
    loop {
        if stop() {
            return Err(stopped());
        }
        if io::copy(&mut Read::take(source, STEP_BYTES), &mut target)? == 0 {
            break;
        }
    }
    fchmod(target.as_fd(), platform::mode(mode & COPIED_MODE_BITS))?;
    target.sync_all()
}

fn not_copyable() -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        "not a regular file, directory or symlink (a device, FIFO or socket)",
    )
}

/// Whether `unlinkat` (without `AT_REMOVEDIR`) failed with `errno` because `name` is a
/// directory: Linux says `EISDIR`, macOS `EPERM`, which can also mean an immutable file.
fn names_a_directory(dir: BorrowedFd<'_>, name: &OsStr, errno: Errno) -> bool {
    match errno {
        Errno::EISDIR => true,
        Errno::EPERM => confined::stat_at(dir, name).is_ok_and(|stat| stat.is_dir()),
        _ => false,
    }
}

fn errno_of(e: &io::Error) -> Option<Errno> {
    e.raw_os_error().map(Errno::from_raw)
}

/// A directory's device and inode.
fn id_of(fd: BorrowedFd<'_>) -> io::Result<(u64, u64)> {
    let stat = confined::fstat(fd)?;
    Ok((stat.dev, stat.ino))
}

/// How many handles a [`Descent`] keeps: on the last `window` levels, and on at most about
/// `anchors` levels above them, evenly spaced.
#[derive(Debug, Clone, Copy)]
struct Limits {
    window: usize,
    anchors: usize,
}

/// 128 + 128: at most about 260 handles per descent at any depth (a copy holds two), and going
/// back up 20,000 levels reopens about 40,000 directories in all.
const LIMITS: Limits = Limits { window: 128, anchors: 128 };

/// The directories from a tree's top down to the one being worked on, each by name and
/// identity, with handles on some of them (see the module docs).
struct Descent {
    levels: Vec<Level>,
    limits: Limits,
    /// Every `spacing`-th level keeps its handle; doubled whenever the anchors would pass
    /// `limits.anchors`.
    spacing: usize,
    /// Handles open now.
    open: usize,
}

struct Level {
    /// The name in the level above (empty for the top).
    name: OsString,
    /// Device and inode, checked when the level is opened again.
    id: (u64, u64),
    fd: Option<OwnedFd>,
}

impl Descent {
    /// A descent standing at `top`.
    fn new(top: OwnedFd, limits: Limits) -> io::Result<Descent> {
        let id = id_of(top.as_fd())?;
        let top = Level { name: OsString::new(), id, fd: Some(top) };
        Ok(Descent { levels: vec![top], limits, spacing: limits.window.max(1), open: 1 })
    }

    /// Whether level `i` keeps its handle while `len` levels are held. The top always does, so
    /// a reopen always has somewhere to start.
    fn keeps(&self, i: usize, len: usize) -> bool {
        i == 0 || i % self.spacing == 0 || i + self.limits.window >= len
    }

    fn close(&mut self, i: usize) {
        if self.levels[i].fd.take().is_some() {
            self.open -= 1;
        }
    }

    /// Goes down into `name`, a directory of the current level that the caller opened as `fd`.
    fn enter(&mut self, name: &OsStr, fd: OwnedFd) -> io::Result<()> {
        let id = id_of(fd.as_fd())?;
        self.levels.push(Level { name: name.to_os_string(), id, fd: Some(fd) });
        self.open += 1;
        let len = self.levels.len();
        if len > self.limits.window {
            // The level that just left the window.
            let i = len - 1 - self.limits.window;
            if !self.keeps(i, len) {
                self.close(i);
            }
        }
        if len / self.spacing > self.limits.anchors {
            self.spacing *= 2;
            for i in 0..len {
                if !self.keeps(i, len) {
                    self.close(i);
                }
            }
        }
        Ok(())
    }

    /// Goes back up: the current level is done. Returns its name. The top is never left.
    fn leave(&mut self) -> OsString {
        if self.levels.len() == 1 {
            return OsString::new();
        }
        let last = self.levels.len() - 1;
        self.close(last);
        self.levels.pop().map(|level| level.name).unwrap_or_default()
    }

    /// The handle on the current level, opened again if it was closed.
    fn current(&mut self) -> io::Result<BorrowedFd<'_>> {
        let last = self.levels.len() - 1;
        if self.levels[last].fd.is_none() {
            self.reopen(last)?;
        }
        match &self.levels[last].fd {
            Some(fd) => Ok(fd.as_fd()),
            None => Err(io::Error::other("a directory handle was lost")),
        }
    }

    /// Opens the levels from the nearest kept one above `last` down to `last`, by name, each
    /// beneath the one before, and checks that each is still the directory it was.
    fn reopen(&mut self, last: usize) -> io::Result<()> {
        let len = self.levels.len();
        let above = (0..last).rev().find(|&i| self.levels[i].fd.is_some()).unwrap_or(0);
        for i in above + 1..=last {
            let fd = match &self.levels[i - 1].fd {
                Some(parent) => confined::open_subdir(parent.as_fd(), &self.levels[i].name)?,
                None => return Err(io::Error::other("a directory handle was lost")),
            };
            if id_of(fd.as_fd())? != self.levels[i].id {
                return Err(io::Error::other(
                    "a directory in the tree was moved or replaced while the tree was worked on",
                ));
            }
            self.levels[i].fd = Some(fd);
            self.open += 1;
            if !self.keeps(i - 1, len) {
                self.close(i - 1);
            }
        }
        Ok(())
    }
}
