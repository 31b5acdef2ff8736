//! Commands die with the server, however it ends: a signal it handles or not (SIGTERM,
//! SIGKILL), a crash, or a normal exit. The same on Linux and macOS.
//!
//! The server makes one pipe, the lifeline, on its first command, and holds both ends (closed
//! at `exec`) for the rest of its life. Between `fork` and `exec`, each command's process forks
//! a guardian that stays in the command's process group holding only the read end, and blocks
//! reading it. Nothing is ever written, so the read returns only at end of file: when no write
//! end is left open, which is when the server is gone, whatever ended it (the kernel closes a
//! dead process's descriptors). The guardian then kills its process group, and so every process
//! of the command that is still in it, and itself.
//!
//! The guardian is forked twice over, so that its parent is not the command (whose `wait`
//! could otherwise reap a child it never made), and closes every descriptor but the read end:
//! the write end, or it would keep itself alive, and the server's others, such as another
//! command's output pipe. It ignores SIGTERM, SIGINT and SIGHUP: at a deadline the server sends
//! the group SIGTERM, and the guardian must outlive a command that ignores it until the
//! SIGKILL that follows. When the shell exits, the server kills the group, guardian included.
//!
//! A process that leaves the group (`setsid`, `setpgid`) is out of the guardian's reach, as it
//! is out of the deadline's. Alternatives weighed: `PR_SET_PDEATHSIG` is Linux's and covers the
//! shell alone; signal handlers in the server that kill every group miss SIGKILL and crashes;
//! kqueue's `EVFILT_PROC` is macOS's and needs a watcher anyway.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::OnceLock;

use crate::platform;

/// The lifeline's two ends, held by the server for its whole life.
struct Lifeline {
    read: OwnedFd,
    write: OwnedFd,
}

/// Made on the first command, so that no process the server starts earlier (the Linux sandbox's
/// helper) inherits it. `None` if the pipe could not be made; commands then fail to start.
fn lifeline() -> Option<&'static Lifeline> {
    static LIFELINE: OnceLock<Option<Lifeline>> = OnceLock::new();
    LIFELINE
        .get_or_init(|| {
            let made = platform::pipe_cloexec()
                .map_err(io::Error::from)
                .and_then(|(r, w)| Ok(Lifeline { read: above_stdio(r)?, write: above_stdio(w)? }));
            made.inspect_err(|e| tracing::warn!("cannot make the commands' lifeline: {e}")).ok()
        })
        .as_ref()
}

/// `fd` moved to a number above 2: a server started with stdin closed gets a pipe end as
/// descriptor 0, which a command's `/dev/null` stdin would replace before the guardian reads.
fn above_stdio(fd: OwnedFd) -> io::Result<OwnedFd> {
    use nix::fcntl::{fcntl, FcntlArg};
    use std::os::fd::FromRawFd;
    if fd.as_raw_fd() > 2 {
        return Ok(fd);
    }
    let moved = fcntl(&fd, FcntlArg::F_DUPFD_CLOEXEC(3))?;
    // SAFETY: F_DUPFD_CLOEXEC returned a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(moved) })
}

/// Has `cmd`'s process fork its guardian just before it runs the program. Added after every
/// other `pre_exec` hook, so the guardian is confined as the command is.
pub fn guard(cmd: &mut Command) -> io::Result<()> {
    let lifeline = lifeline().ok_or_else(|| io::Error::other("no lifeline for commands"))?;
    let (read, write) = (lifeline.read.as_raw_fd(), lifeline.write.as_raw_fd());
    // SAFETY: the hook runs in the child between fork and exec, where only async-signal-safe
    // calls are allowed: it makes system calls only (fork, waitpid, and in the guardian close,
    // dup2, sigaction, chdir, read, kill, _exit), allocating nothing and taking no lock.
    unsafe {
        cmd.pre_exec(move || spawn_guardian(read, write));
    }
    Ok(())
}

/// In the command's process: forks a process that forks the guardian and exits at once, and
/// reaps it. Fails (and so does the command) if either fork fails.
fn spawn_guardian(read: RawFd, write: RawFd) -> io::Result<()> {
    // SAFETY: see `guard`. The children run only `intermediate`, which never returns.
    match unsafe { libc::fork() } {
        -1 => Err(io::Error::last_os_error()),
        0 => intermediate(read, write),
        pid => {
            let mut status = 0;
            // SAFETY: waits for the child just forked.
            while unsafe { libc::waitpid(pid, &mut status, 0) } < 0 {
                if io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                    return Err(io::Error::last_os_error());
                }
            }
            if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
                Ok(())
            } else {
                Err(io::Error::other("could not start the command's guardian"))
            }
        }
    }
}

/// Forks the guardian and exits: 0 if it was forked.
fn intermediate(read: RawFd, write: RawFd) -> ! {
    // SAFETY: async-signal-safe calls only (see `guard`).
    unsafe {
        match libc::fork() {
            -1 => libc::_exit(1),
            0 => guardian(read, write),
            _ => libc::_exit(0),
        }
    }
}

/// Waits for the end of the lifeline, then kills its own process group, itself included.
fn guardian(read: RawFd, write: RawFd) -> ! {
    // SAFETY: async-signal-safe calls only (see `guard`), on descriptors this process owns.
    unsafe {
        libc::close(write);
        for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
            libc::signal(signal, libc::SIG_IGN);
        }
        if libc::dup2(read, 0) < 0 {
            libc::kill(0, libc::SIGKILL);
            libc::_exit(1);
        }
        close_from(1);
        // Not holding the command's directory busy.
        libc::chdir(c"/".as_ptr());
        let mut byte = 0u8;
        loop {
            let n = libc::read(0, std::ptr::addr_of_mut!(byte).cast(), 1);
            if n == 0 || (n < 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EINTR)) {
                break;
            }
        }
        libc::kill(0, libc::SIGKILL);
        libc::_exit(0)
    }
}

/// Closes every descriptor from `first` up: Linux's `close_range` (5.9 and later), else one
/// `close` per possible descriptor, up to the soft `RLIMIT_NOFILE` (macOS, older Linux).
fn close_from(first: RawFd) {
    #[cfg(target_os = "linux")]
    // SAFETY: closes descriptors of this process only.
    if unsafe { libc::syscall(libc::SYS_close_range, first as libc::c_uint, libc::c_uint::MAX, 0) }
        == 0
    {
        return;
    }
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes the struct it is given.
    let end = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
        // RLIM_INFINITY and other huge limits: a descriptor number is an int.
        limit.rlim_cur.min(1 << 20) as RawFd
    } else {
        1 << 16
    };
    for fd in first..end {
        // SAFETY: closing a descriptor that is not open fails harmlessly (EBADF).
        unsafe { libc::close(fd) };
    }
}
