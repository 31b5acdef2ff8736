//! Filesystem operations the kernel keeps beneath an allowed root.
//!
//! The policy decides where a path lands; this module makes the operation land there and
//! nowhere else, even when the tree changes between the check and the use. Every file and
//! directory is opened relative to a handle on its root, taken when the policy was built, with
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`. The policy has already resolved every
//! symlink, so below its root a resolved path holds none: a symlink met now means a component
//! was swapped since the check, and the open fails (`ELOOP`) instead of following it. Where the
//! kernel has no `openat2` (Linux before 5.6, or a seccomp filter that refuses it), the same is
//! done one component at a time with `openat(O_NOFOLLOW)`; `REPLAY_CONFINE=walk` forces that
//! way, for the tests.
//!
//! Creating, renaming and removing go through the parent directory's handle (`mkdirat`,
//! `renameat2`, `unlinkat`), so the last component is never looked up by path either. Walks
//! (`crate::walk`) open each directory relative to its parent's handle with `O_NOFOLLOW`, and
//! so do whole-tree removals and copies (`crate::fs::tree`), from the handles this module gave.

use std::ffi::{CStr, OsStr, OsString};
use std::fs::{File, Metadata};
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, OnceLock, RwLock};

use nix::errno::Errno;
use nix::fcntl::{openat, openat2, OFlag, OpenHow, ResolveFlag, AT_FDCWD};
use nix::sys::stat::{fstatat, mkdirat, FileStat, Mode, SFlag};

use super::ResolvedPath;

/// A handle on an allowed root (`O_PATH | O_DIRECTORY`), opened when the policy is built: a
/// root renamed or replaced by a symlink later is still the directory the user allowed.
#[derive(Debug)]
pub struct RootDir {
    pub path: PathBuf,
    fd: RwLock<Option<Arc<OwnedFd>>>,
}

impl RootDir {
    pub fn open(path: &Path) -> RootDir {
        let fd = open_root(path)
            .inspect_err(|e| tracing::warn!(root = %path.display(), "cannot open root: {e}"))
            .ok()
            .map(Arc::new);
        RootDir { path: path.to_path_buf(), fd: RwLock::new(fd) }
    }

    /// The root's handle. A root that was removed and made again (`rm -rf out && mkdir out`), or
    /// renamed away and replaced, is opened again, but only if its path now names a real
    /// directory at exactly that place.
    fn handle(&self) -> io::Result<Arc<OwnedFd>> {
        let current = self.fd.read().unwrap_or_else(|e| e.into_inner()).clone();
        if let Some(fd) = current {
            if still_at(&fd, &self.path) {
                return Ok(fd);
            }
        }
        let fresh = Arc::new(open_root(&self.path).map_err(|e| {
            let detail = format!("the allowed directory {} is gone ({e})", self.path.display());
            io::Error::new(io::ErrorKind::NotFound, detail)
        })?);
        *self.fd.write().unwrap_or_else(|e| e.into_inner()) = Some(Arc::clone(&fresh));
        Ok(fresh)
    }
}

/// Whether a root's handle is still the directory at `path`: not removed (a removed directory
/// has no links left) and not renamed away (`mv proj proj.old && mv proj.new proj`).
fn still_at(fd: &OwnedFd, path: &Path) -> bool {
    if !nix::sys::stat::fstat(fd.as_fd()).is_ok_and(|stat| stat.st_nlink > 0) {
        return false;
    }
    let fd_path = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(fd));
    // Without /proc there is nothing to compare: keep the handle.
    std::fs::read_link(fd_path).map_or(true, |real| real == path)
}

/// Opens a root: a directory, not a symlink, and really at `path` (no symlink on the way).
fn open_root(path: &Path) -> io::Result<OwnedFd> {
    let flags = OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let fd = nix::fcntl::open(path, flags, Mode::empty())?;
    let fd_path = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&fd));
    match std::fs::read_link(fd_path) {
        Ok(real) if real != path => Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("its path now leads to {}", real.display()),
        )),
        // Without /proc there is nothing to compare: the root's path is the user's own.
        _ => Ok(fd),
    }
}

impl PartialEq for RootDir {
    fn eq(&self, other: &RootDir) -> bool {
        self.path == other.path
    }
}

impl Eq for RootDir {}

/// What a directory entry is, not following symlinks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    Symlink,
    /// A device, FIFO or socket.
    Other,
}

/// One name in a directory, as `readdir` gives it.
#[derive(Debug)]
pub struct DirEntry {
    pub name: OsString,
    pub kind: Kind,
}

/// The directory holding a resolved path, opened beneath its root, and the path's last name:
/// where that entry is created, replaced, renamed or removed.
#[derive(Debug)]
pub struct Slot {
    pub dir: OwnedFd,
    pub name: OsString,
}

impl ResolvedPath {
    /// Opens the resolved path itself (`O_CLOEXEC`, and `O_NOCTTY` unless `O_PATH`, are added).
    pub fn open(&self, flags: OFlag) -> io::Result<File> {
        let (root, rel) = self.beneath()?;
        Ok(File::from(open_beneath(root.as_fd(), &rel, flags, Mode::empty())?))
    }

    /// Opens the resolved path as a directory, for reading its entries.
    pub fn open_dir(&self) -> io::Result<OwnedFd> {
        let (root, rel) = self.beneath()?;
        open_beneath(root.as_fd(), &rel, OFlag::O_RDONLY | OFlag::O_DIRECTORY, Mode::empty())
    }

    /// The resolved path's metadata (it is never a symlink: the policy resolved them all).
    pub fn metadata(&self) -> io::Result<Metadata> {
        self.open(OFlag::O_PATH)?.metadata()
    }

    /// The resolved path's parent, opened beneath the root, and its last name. With `create`,
    /// missing parent directories are made first, each beneath the one before.
    pub fn slot(&self, create: bool) -> io::Result<Slot> {
        let (root, rel) = self.beneath()?;
        let Some(name) = rel.file_name() else {
            // The root itself: it has no parent beneath it.
            return Err(io::Error::from(Errno::EISDIR));
        };
        let name = name.to_os_string();
        let parent = match rel.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let root = root.as_fd();
        let dir = match open_dir_for_update(root, parent) {
            Err(e) if create && e.kind() == io::ErrorKind::NotFound => make_dirs(root, parent)?,
            other => other?,
        };
        if self.names_directory() {
            // `dir/`: only a directory will do.
            match stat_at(dir.as_fd(), &name) {
                Ok(stat) if kind_of_mode(stat.st_mode) == Kind::Dir => {}
                Ok(_) | Err(Errno::ENOENT) => return Err(io::Error::from(Errno::ENOTDIR)),
                Err(e) => return Err(e.into()),
            }
        }
        Ok(Slot { dir, name })
    }

    /// Creates the resolved path as a directory, and its missing parents.
    pub fn create_dir_all(&self) -> io::Result<()> {
        let (root, rel) = self.beneath()?;
        make_dirs(root.as_fd(), &rel).map(drop)
    }

    /// The root's handle and the path below it (`.` for the root itself).
    fn beneath(&self) -> io::Result<(Arc<OwnedFd>, PathBuf)> {
        let fd = self.root.handle()?;
        let rel = self.real.strip_prefix(&self.root.path).map_err(|_| escaped())?;
        let mut rel = if rel.as_os_str().is_empty() { PathBuf::from(".") } else { rel.into() };
        if self.names_directory() {
            rel.push("");
        }
        Ok((fd, rel))
    }

    /// The client wrote `name/`.
    fn names_directory(&self) -> bool {
        let bytes = self.real.as_os_str().as_bytes();
        bytes.len() > 1 && bytes.ends_with(b"/")
    }
}

impl Slot {
    /// The entry's metadata, not following a symlink; `None` when there is no such entry.
    pub fn stat(&self) -> io::Result<Option<FileStat>> {
        match stat_at(self.dir.as_fd(), &self.name) {
            Ok(stat) => Ok(Some(stat)),
            Err(Errno::ENOENT) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
}

/// The error for a path the policy approved that is no longer below its root.
fn escaped() -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, "the path left its allowed directory")
}

/// A relative path without `..`: what a resolved path below its root always is. Anything else
/// is refused before the kernel sees it.
fn stays_beneath(rel: &Path) -> io::Result<()> {
    if rel.is_absolute() || rel.components().any(|c| c == Component::ParentDir) {
        return Err(escaped());
    }
    Ok(())
}

/// Whether `openat2` is used: the kernel has it, and `REPLAY_CONFINE=walk` is not set.
fn openat2_usable() -> bool {
    static USABLE: OnceLock<bool> = OnceLock::new();
    *USABLE.get_or_init(|| {
        if std::env::var_os("REPLAY_CONFINE").is_some_and(|v| v == "walk") {
            tracing::info!("REPLAY_CONFINE=walk: opening paths one component at a time");
            return false;
        }
        let how = OpenHow::new()
            .flags(OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC)
            .resolve(beneath_flags());
        match openat2(AT_FDCWD, ".", how) {
            Ok(_) => true,
            Err(e) => {
                tracing::info!(
                    "openat2 is not usable ({e}): opening paths one component at a time"
                );
                false
            }
        }
    })
}

fn beneath_flags() -> ResolveFlag {
    ResolveFlag::RESOLVE_BENEATH
        | ResolveFlag::RESOLVE_NO_SYMLINKS
        | ResolveFlag::RESOLVE_NO_MAGICLINKS
}

/// Opens `rel` below the directory `root`, following no symlink and never leaving `root`.
/// `rel` must be relative and hold no `..` (a resolved path never does).
pub fn open_beneath(
    root: BorrowedFd<'_>,
    rel: &Path,
    flags: OFlag,
    mode: Mode,
) -> io::Result<OwnedFd> {
    // openat2 refuses O_PATH with any flag but O_DIRECTORY, O_NOFOLLOW and O_CLOEXEC.
    let flags = if flags.contains(OFlag::O_PATH) {
        flags | OFlag::O_CLOEXEC
    } else {
        flags | OFlag::O_CLOEXEC | OFlag::O_NOCTTY
    };
    stays_beneath(rel)?;
    if openat2_usable() {
        let how = OpenHow::new().flags(flags).mode(mode).resolve(beneath_flags());
        // EAGAIN: the kernel saw a rename race during the lookup and wants a retry.
        for _ in 0..8 {
            match openat2(root, rel, how) {
                Err(Errno::EAGAIN) => continue,
                other => return other.map_err(io::Error::from),
            }
        }
        return Err(io::Error::from(Errno::EAGAIN));
    }
    open_by_components(root, rel, flags, mode)
}

/// `open_beneath` without `openat2`: each directory on the way is opened relative to the one
/// before with `O_NOFOLLOW | O_DIRECTORY`, so a symlink anywhere fails the open.
pub fn open_by_components(
    root: BorrowedFd<'_>,
    rel: &Path,
    flags: OFlag,
    mode: Mode,
) -> io::Result<OwnedFd> {
    stays_beneath(rel)?;
    let parts: Vec<&OsStr> = rel
        .components()
        .filter_map(|c| match c {
            Component::Normal(name) => Some(name),
            _ => None,
        })
        .collect();
    let trailing_slash = rel.as_os_str().as_bytes().ends_with(b"/");
    let flags = flags | OFlag::O_CLOEXEC | OFlag::O_NOCTTY | OFlag::O_NOFOLLOW;
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
    // With O_PATH, O_NOFOLLOW opens a symlink itself instead of failing.
    if flags.contains(OFlag::O_PATH) && kind_of_fd(fd.as_fd())? == Kind::Symlink {
        return Err(io::Error::from(Errno::ELOOP));
    }
    Ok(fd)
}

/// How a directory on the way is opened: never through a symlink.
fn walk_flags() -> OFlag {
    OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC
}

/// A directory to create, replace or remove entries in: readable if it can be (to sweep stale
/// temp files and to fsync), else a bare handle, which `*at` calls accept just as well.
fn open_dir_for_update(root: BorrowedFd<'_>, rel: &Path) -> io::Result<OwnedFd> {
    match open_beneath(root, rel, OFlag::O_RDONLY | OFlag::O_DIRECTORY, Mode::empty()) {
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
            open_beneath(root, rel, OFlag::O_PATH | OFlag::O_DIRECTORY, Mode::empty())
        }
        other => other,
    }
}

/// `mkdir -p rel` below `root`, one component at a time; returns the last directory.
fn make_dirs(root: BorrowedFd<'_>, rel: &Path) -> io::Result<OwnedFd> {
    let mut dir: Option<OwnedFd> = None;
    for c in rel.components() {
        let Component::Normal(part) = c else { continue };
        let at = dir.as_ref().map_or(root, |d| d.as_fd());
        match mkdirat(at, part, Mode::from_bits_truncate(0o777)) {
            Ok(()) | Err(Errno::EEXIST) => {}
            Err(e) => return Err(e.into()),
        }
        let next = match openat(at, part, OFlag::O_RDONLY | dir_flags(), Mode::empty()) {
            Err(Errno::EACCES) => openat(at, part, OFlag::O_PATH | dir_flags(), Mode::empty()),
            other => other,
        };
        // A file (or a symlink) where a directory should be: ENOTDIR.
        dir = Some(next?);
    }
    match dir {
        Some(dir) => Ok(dir),
        None => Ok(openat(root, ".", OFlag::O_RDONLY | dir_flags(), Mode::empty())?),
    }
}

fn dir_flags() -> OFlag {
    OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC
}

/// `fstatat(AT_SYMLINK_NOFOLLOW)`.
pub fn stat_at(dir: BorrowedFd<'_>, name: &OsStr) -> nix::Result<FileStat> {
    fstatat(dir, name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW)
}

pub fn kind_of_mode(mode: u32) -> Kind {
    match SFlag::from_bits_truncate(mode & SFlag::S_IFMT.bits()) {
        SFlag::S_IFREG => Kind::File,
        SFlag::S_IFDIR => Kind::Dir,
        SFlag::S_IFLNK => Kind::Symlink,
        _ => Kind::Other,
    }
}

fn kind_of_fd(fd: BorrowedFd<'_>) -> io::Result<Kind> {
    Ok(kind_of_mode(nix::sys::stat::fstat(fd)?.st_mode))
}

/// The entries of an open directory (not `.` and `..`), in the order `readdir` gives them.
pub fn read_entries(dir: BorrowedFd<'_>) -> io::Result<Vec<DirEntry>> {
    let mut out = Vec::new();
    for_each_entry(dir, |name, kind| out.push(DirEntry { name: name.to_os_string(), kind }))?;
    Ok(out)
}

/// Calls `f` with each entry of an open directory (not `.` and `..`), without collecting them.
/// Reads through its own duplicate of the handle, so `dir` stays usable for opening what it
/// lists, from `f` too.
pub fn for_each_entry(dir: BorrowedFd<'_>, mut f: impl FnMut(&OsStr, Kind)) -> io::Result<()> {
    let mut stream = nix::dir::Dir::from_fd(dir.try_clone_to_owned()?)?;
    for entry in stream.iter() {
        let entry = entry?;
        let name: &CStr = entry.file_name();
        let name = name.to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        let name = OsStr::from_bytes(name);
        use nix::dir::Type;
        let kind = match entry.file_type() {
            Some(Type::File) => Kind::File,
            Some(Type::Directory) => Kind::Dir,
            Some(Type::Symlink) => Kind::Symlink,
            Some(_) => Kind::Other,
            // The filesystem does not say (DT_UNKNOWN): ask.
            None => match stat_at(dir, name) {
                Ok(stat) => kind_of_mode(stat.st_mode),
                Err(_) => continue,
            },
        };
        f(name, kind);
    }
    Ok(())
}

/// Opens the directory `name` in `dir`, for reading, never through a symlink.
pub fn open_subdir(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<OwnedFd> {
    Ok(openat(dir, name, OFlag::O_RDONLY | dir_flags(), Mode::empty())?)
}

/// Opens the file `name` in `dir` for reading, never through a symlink, never blocking on a
/// FIFO.
pub fn open_file_at(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<File> {
    let flags = OFlag::O_RDONLY
        | OFlag::O_NOFOLLOW
        | OFlag::O_NONBLOCK
        | OFlag::O_CLOEXEC
        | OFlag::O_NOCTTY;
    Ok(File::from(openat(dir, name, flags, Mode::empty())?))
}

#[cfg(test)]
mod tests;
