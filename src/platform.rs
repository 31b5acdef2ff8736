//! The system calls that differ between Linux and macOS below the policy, one item per concern,
//! chosen at compile time (`cfg(target_os)`). The rest of the crate is written against these.
//!
//! Larger concerns have their own modules: opening beneath a root (`policy::confined`'s
//! `openat2` and `components` backends), the sandbox (`sandbox`: Landlock and its layers on
//! Linux, Seatbelt on macOS), and a command's process group (`tools::exec::lifeline`).

use std::ffi::OsStr;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::path::PathBuf;

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sys::stat::Mode;

/// Flags for a handle on a directory that is only looked up in (`openat` and the other `*at`
/// calls), never read: Linux's `O_PATH`, which needs no permission on the directory itself, or
/// macOS's `O_SEARCH`, which needs search (execute) permission. Either way the lookups below
/// need search permission, so a directory the user can search but not read (mode 0311) gives a
/// handle on both, and one the user cannot search gives nothing useful on either.
#[cfg(target_os = "linux")]
pub const DIR_HANDLE: OFlag = OFlag::O_PATH.union(OFlag::O_DIRECTORY);
#[cfg(target_os = "macos")]
pub const DIR_HANDLE: OFlag = OFlag::O_SEARCH;

/// Whether names match ignoring case: macOS's filesystems ignore it by default (APFS, HFS+), so
/// a deny rule for `.env` must also refuse `.ENV`, which opens the same file there.
pub const CASE_INSENSITIVE_NAMES: bool = cfg!(target_os = "macos");

/// Added to every open of one name beneath a root: macOS's `O_NOFOLLOW_ANY` (macOS 11) refuses
/// a symlink in any component. For the single names `policy::confined` opens it adds nothing
/// to `O_NOFOLLOW`; it is there so that no later change can make an open follow a link.
#[cfg(target_os = "linux")]
pub const NOFOLLOW_ANY: OFlag = OFlag::empty();
#[cfg(target_os = "macos")]
pub const NOFOLLOW_ANY: OFlag = OFlag::from_bits_retain(libc::O_NOFOLLOW_ANY);

/// Where the open file `fd` is now: Linux reads `/proc/self/fd/N`, macOS asks `F_GETPATH`.
/// Fails where the OS cannot say (no `/proc`).
#[cfg(target_os = "linux")]
pub fn fd_path(fd: BorrowedFd<'_>) -> io::Result<PathBuf> {
    std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

/// Where the open file `fd` is now: Linux reads `/proc/self/fd/N`, macOS asks `F_GETPATH`.
/// Fails where the OS cannot say.
#[cfg(target_os = "macos")]
pub fn fd_path(fd: BorrowedFd<'_>) -> io::Result<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    // Not nix's `F_GETPATH`, which panics on a path that is not UTF-8.
    let mut buf = [0u8; libc::PATH_MAX as usize];
    // SAFETY: F_GETPATH writes at most PATH_MAX bytes, NUL included, into `buf`.
    if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETPATH, buf.as_mut_ptr()) } < 0 {
        return Err(io::Error::last_os_error());
    }
    let len = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    Ok(PathBuf::from(OsStr::from_bytes(&buf[..len])))
}

/// Renames `from` in `from_dir` to `to` in `to_dir` unless `to` exists (`EEXIST`), in one
/// system call, so an entry that appears meanwhile is not replaced: Linux's
/// `renameat2(RENAME_NOREPLACE)`, macOS's `renameatx_np(RENAME_EXCL)`. A filesystem that cannot
/// do it answers `EINVAL` (Linux) or `ENOTSUP` (macOS); see [`cannot_rename_exclusively`].
#[cfg(target_os = "linux")]
pub fn rename_exclusive(
    from_dir: BorrowedFd<'_>,
    from: &OsStr,
    to_dir: BorrowedFd<'_>,
    to: &OsStr,
) -> nix::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let from = std::ffi::CString::new(from.as_bytes()).map_err(|_| Errno::EINVAL)?;
    let to = std::ffi::CString::new(to.as_bytes()).map_err(|_| Errno::EINVAL)?;
    // The system call itself: nix and libc wrap renameat2 for glibc only, and the static
    // release binaries link musl.
    // SAFETY: both names are NUL-terminated and outlive the call; the handles are open.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            from_dir.as_raw_fd(),
            from.as_ptr(),
            to_dir.as_raw_fd(),
            to.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    Errno::result(rc).map(drop)
}

/// Renames `from` in `from_dir` to `to` in `to_dir` unless `to` exists (`EEXIST`), in one
/// system call: Linux's `renameat2(RENAME_NOREPLACE)`, macOS's `renameatx_np(RENAME_EXCL)`.
#[cfg(target_os = "macos")]
pub fn rename_exclusive(
    from_dir: BorrowedFd<'_>,
    from: &OsStr,
    to_dir: BorrowedFd<'_>,
    to: &OsStr,
) -> nix::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let from = std::ffi::CString::new(from.as_bytes()).map_err(|_| Errno::EINVAL)?;
    let to = std::ffi::CString::new(to.as_bytes()).map_err(|_| Errno::EINVAL)?;
    // SAFETY: both names are NUL-terminated and outlive the call; the handles are open.
    let rc = unsafe {
        libc::renameatx_np(
            from_dir.as_raw_fd(),
            from.as_ptr(),
            to_dir.as_raw_fd(),
            to.as_ptr(),
            libc::RENAME_EXCL,
        )
    };
    Errno::result(rc).map(drop)
}

/// Whether `errno` from [`rename_exclusive`] means the filesystem cannot rename exclusively
/// (some FUSE filesystems, older NFS), so the caller checks and renames plainly instead.
pub fn cannot_rename_exclusively(errno: Errno) -> bool {
    matches!(errno, Errno::EINVAL | Errno::ENOTSUP)
}

/// A pipe whose ends are closed at `exec`. Linux makes it so in one call (`pipe2`); macOS has
/// no `pipe2`, so there a process another thread forks at that instant could inherit the ends
/// until its `exec` (replay makes these pipes before it starts any command).
#[cfg(target_os = "linux")]
pub fn pipe_cloexec() -> nix::Result<(OwnedFd, OwnedFd)> {
    nix::unistd::pipe2(OFlag::O_CLOEXEC)
}

/// A pipe whose ends are closed at `exec`.
#[cfg(target_os = "macos")]
pub fn pipe_cloexec() -> nix::Result<(OwnedFd, OwnedFd)> {
    use nix::fcntl::{fcntl, FcntlArg, FdFlag};
    let (read, write) = nix::unistd::pipe()?;
    for fd in [&read, &write] {
        fcntl(fd, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC))?;
    }
    Ok((read, write))
}

/// Permission bits as `Mode`, whose width is the OS's `mode_t` (32 bits on Linux, 16 on macOS).
pub fn mode(bits: u32) -> Mode {
    Mode::from_bits_truncate(bits as libc::mode_t)
}

/// The extended attributes of the open file `from`, as `(name, value)` pairs, that a file
/// rewritten in its place keeps: on Linux the user's own (`user.*`) and the POSIX access ACL
/// (`system.posix_acl_access`), never `security.*` (file capabilities, like setuid, must not
/// pass to new content) nor `trusted.*`; on macOS all of them. Best effort: what cannot be read
/// is left out.
pub fn kept_xattrs(from: BorrowedFd<'_>) -> Vec<(std::ffi::CString, Vec<u8>)> {
    let fd = from.as_raw_fd();
    let names = xattr_buffer(|buf, len| {
        // SAFETY: `buf` is writable for `len` bytes (or null with a length of 0).
        unsafe { sys_flistxattr(fd, buf.cast(), len) }
    });
    let Some(names) = names else { return Vec::new() };
    names
        .split(|&b| b == 0)
        .filter(|name| !name.is_empty() && keeps_xattr(name))
        .filter_map(|name| {
            let name = std::ffi::CString::new(name).ok()?;
            let value = xattr_buffer(|buf, len| {
                // SAFETY: `name` is NUL-terminated; `buf` as above.
                unsafe { sys_fgetxattr(fd, name.as_ptr(), buf.cast(), len) }
            })?;
            Some((name, value))
        })
        .collect()
}

/// Sets the attributes `kept_xattrs` read on the open file `to`. Best effort: a file system that
/// refuses one (no ACL support, no user xattrs) leaves the file without it.
pub fn set_xattrs(to: BorrowedFd<'_>, xattrs: &[(std::ffi::CString, Vec<u8>)]) {
    for (name, value) in xattrs {
        // SAFETY: `name` is NUL-terminated and `value` readable for its length.
        let rc = unsafe {
            sys_fsetxattr(to.as_raw_fd(), name.as_ptr(), value.as_ptr().cast(), value.len())
        };
        if rc != 0 {
            tracing::debug!(?name, "xattr not kept: {}", io::Error::last_os_error());
        }
    }
}

#[cfg(target_os = "linux")]
fn keeps_xattr(name: &[u8]) -> bool {
    name.starts_with(b"user.") || name == b"system.posix_acl_access"
}

#[cfg(target_os = "macos")]
fn keeps_xattr(_name: &[u8]) -> bool {
    true
}

/// Calls a list/get xattr function twice: for the size, then for the bytes (again if the value
/// grew in between). `None` if it fails.
fn xattr_buffer(call: impl Fn(*mut u8, usize) -> isize) -> Option<Vec<u8>> {
    for _ in 0..3 {
        let len = call(std::ptr::null_mut(), 0);
        if len < 0 {
            return None;
        }
        let mut buf = vec![0u8; len as usize];
        let got = call(buf.as_mut_ptr(), buf.len());
        if got >= 0 {
            buf.truncate(got as usize);
            return Some(buf);
        }
        if Errno::last() != Errno::ERANGE {
            return None;
        }
    }
    None
}

#[cfg(target_os = "linux")]
unsafe fn sys_flistxattr(fd: i32, buf: *mut libc::c_char, len: usize) -> isize {
    libc::flistxattr(fd, buf, len)
}

#[cfg(target_os = "linux")]
unsafe fn sys_fgetxattr(
    fd: i32,
    name: *const libc::c_char,
    buf: *mut libc::c_void,
    len: usize,
) -> isize {
    libc::fgetxattr(fd, name, buf, len)
}

#[cfg(target_os = "linux")]
unsafe fn sys_fsetxattr(
    fd: i32,
    name: *const libc::c_char,
    value: *const libc::c_void,
    len: usize,
) -> i32 {
    libc::fsetxattr(fd, name, value, len, 0)
}

#[cfg(target_os = "macos")]
unsafe fn sys_flistxattr(fd: i32, buf: *mut libc::c_char, len: usize) -> isize {
    libc::flistxattr(fd, buf, len, 0)
}

#[cfg(target_os = "macos")]
unsafe fn sys_fgetxattr(
    fd: i32,
    name: *const libc::c_char,
    buf: *mut libc::c_void,
    len: usize,
) -> isize {
    libc::fgetxattr(fd, name, buf, len, 0, 0)
}

#[cfg(target_os = "macos")]
unsafe fn sys_fsetxattr(
    fd: i32,
    name: *const libc::c_char,
    value: *const libc::c_void,
    len: usize,
) -> i32 {
    libc::fsetxattr(fd, name, value, len, 0, 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn fd_path_names_an_open_directory() {
        let dir = std::env::temp_dir().canonicalize().unwrap();
        let fd = nix::fcntl::open(&dir, DIR_HANDLE | OFlag::O_CLOEXEC, Mode::empty()).unwrap();
        assert_eq!(fd_path(fd.as_fd()).unwrap(), dir);
    }

    #[test]
    fn mode_keeps_permission_bits() {
        assert_eq!(mode(0o100_755).bits() & 0o7777, 0o755);
        assert_eq!(mode(0o4711).bits(), 0o4711);
    }
}
