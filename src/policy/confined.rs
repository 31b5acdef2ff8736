//! Filesystem operations the kernel keeps beneath an allowed root.
//!
//! The policy decides where a path lands; this module makes the operation land there and
//! nowhere else, even when the tree changes between the check and the use. Every file and
//! directory is opened relative to a handle on its root, taken when the policy was built. The
//! policy has already resolved every symlink, so below its root a resolved path holds none: a
//! symlink met now means a component was swapped since the check, and the open fails instead of
//! following it. Two backends do the opening ([`Backend`]):
//!
//! - `openat2`: Linux's `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`, one system call per
//!   open, used where the kernel has it (Linux 5.6 and later, unless a seccomp filter refuses
//!   it);
//! - `components`: `openat(O_NOFOLLOW)` one component at a time, each directory relative to
//!   the one before. Portable: it is what macOS runs, and Linux without `openat2`.
//!   `REPLAY_CONFINE=walk` forces it on Linux, so the test suite runs macOS's code here.
//!
//! A root's handle is re-checked before use by asking the OS where it is (`platform::fd_path`:
//! `/proc/self/fd` on Linux, `F_GETPATH` on macOS). Creating, renaming and removing go through
//! the parent directory's handle (`mkdirat`, `platform::rename_exclusive`, `unlinkat`), so the
//! last component is never looked up by path either. Walks (`crate::walk`) open each directory
//! relative to its parent's handle with `O_NOFOLLOW`, and so do whole-tree removals and copies
//! (`crate::fs::tree`), from the handles this module gave.

use std::ffi::{CStr, OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, OnceLock, RwLock};

use nix::errno::Errno;
use nix::fcntl::{openat, OFlag};
use nix::sys::stat::{fstatat, mkdirat, FileStat, Mode};

use super::ResolvedPath;
use crate::platform::{self, DIR_HANDLE};

mod components;
#[cfg(target_os = "linux")]
mod openat2;

/// A handle on an allowed root (`platform::DIR_HANDLE`), opened when the policy is built: a
/// root renamed or replaced by a symlink later is still the directory the user allowed.
#[derive(Debug)]
pub struct RootDir {
    pub path: PathBuf,
    fd: RwLock<Option<Arc<OwnedFd>>>,
    /// The directory opened at start, kept even when `fd` is opened again: where it went, if
    /// renamed, is still the root the user allowed (`moved_to`).
    first: Option<Arc<OwnedFd>>,
}

impl RootDir {
    pub fn open(path: &Path) -> RootDir {
        let fd = open_root(path)
            .inspect_err(|e| tracing::warn!(root = %path.display(), "cannot open root: {e}"))
            .ok()
            .map(Arc::new);
        RootDir { path: path.to_path_buf(), first: fd.clone(), fd: RwLock::new(fd) }
    }

    /// Where the directory first opened at the root's path is now, if it was renamed (with
    /// its parent, say) and still exists: a read-only root moved inside a read-write one must
    /// stay read-only there.
    pub fn moved_to(&self) -> Option<PathBuf> {
        let fd = self.first.as_ref()?;
        if !fstat(fd.as_fd()).is_ok_and(|stat| stat.nlink > 0) {
            return None;
        }
        platform::fd_path(fd.as_fd()).ok().filter(|now| *now != self.path)
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
    if !fstat(fd.as_fd()).is_ok_and(|stat| stat.nlink > 0) {
        return false;
    }
    // Where the OS cannot say (Linux without /proc) there is nothing to compare: keep it.
    platform::fd_path(fd.as_fd()).map_or(true, |real| real == path)
}

/// Opens a root: a directory, not a symlink, and really at `path` (no symlink on the way).
fn open_root(path: &Path) -> io::Result<OwnedFd> {
    let flags = DIR_HANDLE | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let fd = nix::fcntl::open(path, flags, Mode::empty())?;
    match platform::fd_path(fd.as_fd()) {
        Ok(real) if real != path => Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("its path now leads to {}", real.display()),
        )),
        // Where the OS cannot say, there is nothing to compare: the root's path is the user's.
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

/// A file's status, not following symlinks, in the same types on every OS (macOS's `stat` has
/// a 16-bit mode and link count and a 32-bit device number).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    /// Type and permission bits, as `st_mode`.
    pub mode: u32,
    pub dev: u64,
    pub ino: u64,
    pub nlink: u64,
    pub uid: u32,
    pub gid: u32,
    pub size: u64,
    /// Seconds since the epoch.
    pub mtime: i64,
}

impl Stat {
    pub fn kind(&self) -> Kind {
        kind_of_mode(self.mode)
    }

    pub fn is_dir(&self) -> bool {
        self.kind() == Kind::Dir
    }

    pub fn is_file(&self) -> bool {
        self.kind() == Kind::File
    }
}

impl From<FileStat> for Stat {
    // The casts widen macOS's narrower fields; on Linux most are the same type already.
    #[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
    fn from(st: FileStat) -> Stat {
        Stat {
            mode: st.st_mode as u32,
            dev: st.st_dev as u64,
            ino: st.st_ino as u64,
            nlink: st.st_nlink as u64,
            uid: st.st_uid,
            gid: st.st_gid,
            size: u64::try_from(st.st_size).unwrap_or(0),
            mtime: st.st_mtime as i64,
        }
    }
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
    /// Opens the resolved path itself (`O_CLOEXEC` and `O_NOCTTY` are added).
    pub fn open(&self, flags: OFlag) -> io::Result<File> {
        let (root, rel) = self.beneath()?;
        Ok(File::from(open_beneath(root.as_fd(), &rel, flags, Mode::empty())?))
    }

    /// Opens the resolved path as a directory, for reading its entries.
    pub fn open_dir(&self) -> io::Result<OwnedFd> {
        let (root, rel) = self.beneath()?;
        open_beneath(root.as_fd(), &rel, OFlag::O_RDONLY | OFlag::O_DIRECTORY, Mode::empty())
    }

    /// The resolved path's status, from its parent's handle (`fstatat`), so that nothing is
    /// opened: not a device, not a FIFO, not a file the user may not read. It is never a
    /// symlink (the policy resolved them all): one met here was put there since (`ELOOP`).
    pub fn metadata(&self) -> io::Result<Stat> {
        let (root, rel) = self.beneath()?;
        let stat = match (rel.parent(), rel.file_name()) {
            (Some(parent), Some(name)) => {
                let parent = if parent.as_os_str().is_empty() { Path::new(".") } else { parent };
                let dir = open_beneath(root.as_fd(), parent, DIR_HANDLE, Mode::empty())?;
                stat_at(dir.as_fd(), name)?
            }
            // The root itself.
            _ => fstat(root.as_fd())?,
        };
        match stat.kind() {
            Kind::Symlink => Err(io::Error::from(Errno::ELOOP)),
            kind if kind != Kind::Dir && self.names_directory() => {
                Err(io::Error::from(Errno::ENOTDIR))
            }
            _ => Ok(stat),
        }
    }

    /// The resolved path's parent, opened beneath the root, and its last name.
    pub fn slot(&self) -> io::Result<Slot> {
        self.slot_in(open_dir_for_update)
    }

    /// [`Self::slot`], with missing parent directories made first, each beneath the one
    /// before.
    pub fn slot_making_parents(&self) -> io::Result<Slot> {
        self.slot_in(|root, parent| match open_dir_for_update(root, parent) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => make_dirs(root, parent),
            other => other,
        })
    }

    /// The slot, its parent opened by `open_parent` beneath the root.
    fn slot_in(
        &self,
        open_parent: impl FnOnce(BorrowedFd<'_>, &Path) -> io::Result<OwnedFd>,
    ) -> io::Result<Slot> {
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
        let dir = open_parent(root, parent)?;
        if self.names_directory() {
            // `dir/`: only a directory will do.
            match stat_at(dir.as_fd(), &name) {
                Ok(stat) if stat.is_dir() => {}
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
    /// The entry's status, not following a symlink; `None` when there is no such entry.
    pub fn stat(&self) -> io::Result<Option<Stat>> {
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

/// How opens beneath a root are made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)`: one system
    /// call per open, Linux 5.6 and later.
    #[cfg(target_os = "linux")]
    Openat2,
    /// `openat(O_NOFOLLOW)` one component at a time: every Unix, and all macOS has.
    Components,
}

/// The environment variable that forces the portable backend on Linux (`walk`): a testing
/// knob, so that the suite runs the code macOS runs.
pub const BACKEND_KNOB: &str = "REPLAY_CONFINE";

/// The backend this process uses, chosen once: `openat2` where the kernel has it and
/// `REPLAY_CONFINE=walk` is not set, else `components`.
pub fn backend() -> Backend {
    static BACKEND: OnceLock<Backend> = OnceLock::new();
    *BACKEND.get_or_init(|| {
        if std::env::var_os(BACKEND_KNOB).is_some_and(|v| v == "walk") {
            tracing::info!("{BACKEND_KNOB}=walk: opening paths one component at a time");
            return Backend::Components;
        }
        #[cfg(target_os = "linux")]
        if openat2::usable() {
            return Backend::Openat2;
        }
        Backend::Components
    })
}

/// Opens `rel` below the directory `root`, following no symlink and never leaving `root`, with
/// the process's backend. `rel` must be relative and hold no `..` (a resolved path never
/// does). `O_CLOEXEC` and `O_NOCTTY` are added.
pub fn open_beneath(
    root: BorrowedFd<'_>,
    rel: &Path,
    flags: OFlag,
    mode: Mode,
) -> io::Result<OwnedFd> {
    open_with(backend(), root, rel, flags, mode)
}

/// [`open_beneath`] with a chosen backend, for the tests that run both.
pub fn open_with(
    backend: Backend,
    root: BorrowedFd<'_>,
    rel: &Path,
    flags: OFlag,
    mode: Mode,
) -> io::Result<OwnedFd> {
    stays_beneath(rel)?;
    match backend {
        #[cfg(target_os = "linux")]
        Backend::Openat2 => openat2::open(root, rel, flags, mode),
        Backend::Components => components::open(root, rel, flags, mode),
    }
}

/// A directory to create, replace or remove entries in: readable if it can be (to sweep stale
/// temp files and to fsync), else a bare handle, which `*at` calls accept just as well.
fn open_dir_for_update(root: BorrowedFd<'_>, rel: &Path) -> io::Result<OwnedFd> {
    match open_beneath(root, rel, OFlag::O_RDONLY | OFlag::O_DIRECTORY, Mode::empty()) {
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
            open_beneath(root, rel, DIR_HANDLE, Mode::empty())
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
            Err(Errno::EACCES) => openat(at, part, DIR_HANDLE | dir_flags(), Mode::empty()),
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
pub fn stat_at(dir: BorrowedFd<'_>, name: &OsStr) -> nix::Result<Stat> {
    fstatat(dir, name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW).map(Stat::from)
}

/// `fstat`.
pub fn fstat(fd: BorrowedFd<'_>) -> nix::Result<Stat> {
    nix::sys::stat::fstat(fd).map(Stat::from)
}

pub fn kind_of_mode(mode: u32) -> Kind {
    // The type bits have these values on every Unix (the tar and cpio formats carry them).
    match mode & 0o170_000 {
        0o100_000 => Kind::File,
        0o040_000 => Kind::Dir,
        0o120_000 => Kind::Symlink,
        _ => Kind::Other,
    }
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
                Ok(stat) => stat.kind(),
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
