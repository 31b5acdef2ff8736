//! Commands die with the server, however it ends: a signal it handles or not (SIGTERM,
//! SIGKILL), a crash, or a normal exit. The same on Linux and macOS.
//!
//! The server makes one pipe, the lifeline, on its first command, and holds both ends (closed at
//! `exec`) for the rest of its life. On macOS, between `fork` and `exec`, each command's process
//! forks a guardian that stays in the command's process group holding only the read end, and blocks
//! reading it. Nothing is ever written, so the read returns only at end of file: when no write end
//! is left open, which is when the server is gone, whatever ended it (the kernel closes a dead
//! process's descriptors). The guardian then kills its process group, and so every process of the
//! command that is still in it, and itself.
//!
//! The guardian is forked twice over, so that its parent is not the command (whose `wait`
//! could otherwise reap a child it never made), and closes every descriptor but the read end:
//! the write end, or it would keep itself alive, and the server's others, such as another
//! command's output pipe. It ignores SIGTERM, SIGINT and SIGHUP: at a deadline the server sends
//! the group SIGTERM, and the guardian must outlive a command that ignores it until the
//! SIGKILL that follows. When the shell exits, the server kills the group, guardian included.
//!
//! Where the commands' mount namespace lets it (Linux, `CommandConfinement::pid_namespace`),
//! the command runs in a PID namespace of its own instead, as bubblewrap's `--unshare-pid
//! --die-with-parent` does, and the guardian is the namespace's init. The process the server
//! started (the supervisor) forks the init, the init forks the shell, and the supervisor waits
//! for the init and ends as the shell ended, so that the server sees the shell's status. The
//! init waits for the shell, reaping the orphans the namespace hands it on the way, and for the
//! end of the lifeline; it exits when either comes, after killing the supervisor's group at the
//! lifeline's end, and when it exits the kernel kills every process left in the namespace,
//! `setsid` and double forks included. It dies with the supervisor too (`PR_SET_PDEATHSIG`),
//! so that the SIGKILL the server sends the group at the deadline, at `kill`, or when the shell
//! exits ends the whole namespace. Nothing the command runs can kill the init: inside the
//! namespace, the kernel delivers to it only signals it handles, and it handles none. The
//! supervisor ignores SIGTERM, SIGINT and SIGHUP, which the group gets for the shell.
//!
//! Without the namespace on Linux (no mount namespace: `--no-sandbox`, the seccomp fallback), the
//! init is the command's subreaper (`PR_SET_CHILD_SUBREAPER`) instead: the processes the command
//! orphans are handed to it, and it kills every process below it when the server or the supervisor
//! goes while the shell runs. What outlives the shell, and every process once a command of the same
//! user has killed the init, is out of its reach. On macOS, a process that leaves the group
//! (`setsid`, `setpgid`) is out of the guardian's reach, as it is out of the deadline's.
//! Alternatives weighed: `PR_SET_PDEATHSIG` is Linux's and covers the shell alone; signal handlers
//! in the server that kill every group miss SIGKILL and crashes; kqueue's `EVFILT_PROC` is macOS's
//! and needs a watcher anyway.

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

/// Has `cmd`'s process fork its guardian just before it runs the program: the init of the PID
/// namespace its confinement made (`pid_namespace`), or else a process in its group. Added
/// after every other `pre_exec` hook, so the guardian is confined as the command is.
#[cfg_attr(not(target_os = "linux"), allow(unused_variables))]
pub fn guard(cmd: &mut Command, pid_namespace: bool) -> io::Result<()> {
    let lifeline = lifeline().ok_or_else(|| io::Error::other("no lifeline for commands"))?;
    let (read, write) = (lifeline.read.as_raw_fd(), lifeline.write.as_raw_fd());
    // SAFETY: the hook runs in the child between fork and exec, where only async-signal-safe
    // calls are allowed: it makes system calls only (fork, waitpid, mmap, and in the guardian
    // close, dup2, sigaction, sigprocmask, signalfd, prctl, chdir, poll, read, kill, _exit),
    // allocating nothing and taking no lock.
    unsafe {
        // Without a PID namespace, the init is a subreaper instead (`init`).
        #[cfg(target_os = "linux")]
        cmd.pre_exec(move || spawn_init(read, write, !pid_namespace));
        #[cfg(not(target_os = "linux"))]
        cmd.pre_exec(move || spawn_guardian(read, write));
    }
    Ok(())
}

/// Where the init leaves the shell's wait status for the supervisor: a shared page. `NONE`
/// until the shell has ended.
#[cfg(target_os = "linux")]
const NONE: libc::c_int = -1;

/// In the command's process, whose next child starts a PID namespace: forks the init, which
/// forks the shell. Returns in the shell only (which goes on to run the program); the command's
/// process becomes the supervisor. Fails (and so does the command) if a fork fails.
#[cfg(target_os = "linux")]
fn spawn_init(read: RawFd, write: RawFd, subreaper: bool) -> io::Result<()> {
    // SAFETY: an anonymous shared mapping, unmapped by the exit of the processes that hold it.
    let page = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            std::mem::size_of::<libc::c_int>(),
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if page == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    let status = page.cast::<libc::c_int>();
    // SAFETY: the mapping is this process's, readable and writable.
    unsafe { status.write_volatile(NONE) };
    // SAFETY: see `guard`.
    match unsafe { libc::fork() } {
        -1 => Err(io::Error::last_os_error()),
        0 => init(read, write, status, subreaper),
        pid => supervise(pid, status),
    }
}

/// The namespace's init (pid 1): forks the shell, which returns, then stays as the guardian.
/// A failed fork returns its error, which the server's spawn reports.
///
/// Without a PID namespace (`subreaper`), the kernel kills nothing when it exits: it is the
/// command's `PR_SET_CHILD_SUBREAPER`, which the processes the command orphans (`setsid` and double
/// forks included) are handed to, and it kills every process below it before it exits
/// (`end_descendants`) at the end of the lifeline or of the supervisor, while the shell runs; once
/// the shell has ended, it exits as the namespace's init does. The supervisor's death comes as
/// SIGCHLD (`PR_SET_PDEATHSIG`), which it reads beside its children's, not as SIGKILL, which would
/// leave them. A command of the same user can still kill it first.
#[cfg(target_os = "linux")]
fn init(read: RawFd, write: RawFd, status: *mut libc::c_int, subreaper: bool) -> io::Result<()> {
    // SAFETY: async-signal-safe calls only (see `guard`). Set before the shell exists, so that
    // nothing it runs can end the supervisor before the init would follow it.
    let supervisor = unsafe { libc::getppid() };
    let death = if subreaper { libc::SIGCHLD } else { libc::SIGKILL };
    unsafe {
        if subreaper {
            libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        }
        libc::prctl(libc::PR_SET_PDEATHSIG, death, 0, 0, 0);
    }
    let end = || {
        if subreaper {
            end_descendants();
        }
    };
    // SAFETY: see `guard`.
    let shell = match unsafe { libc::fork() } {
        -1 => return Err(io::Error::last_os_error()),
        0 => return Ok(()),
        pid => pid,
    };
    // SAFETY: async-signal-safe calls only (see `guard`), on descriptors this process owns;
    // `status` is the shared page.
    unsafe {
        libc::close(write);
        for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
            libc::signal(signal, libc::SIG_IGN);
        }
        if libc::dup2(read, 0) < 0 {
            end();
            libc::kill(0, libc::SIGKILL);
            libc::_exit(1);
        }
        close_from(1);
        libc::chdir(c"/".as_ptr());
        // SIGCHLD comes by descriptor, beside the lifeline. Blocked before the first look at
        // the children, so none is missed.
        let mut children = std::mem::zeroed::<libc::sigset_t>();
        libc::sigemptyset(&mut children);
        libc::sigaddset(&mut children, libc::SIGCHLD);
        libc::sigprocmask(libc::SIG_BLOCK, &children, std::ptr::null_mut());
        let signals = libc::signalfd(-1, &children, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK);
        loop {
            let mut wait_status = 0;
            loop {
                let pid = libc::waitpid(-1, &mut wait_status, libc::WNOHANG);
                if pid == shell {
                    // Its orphans then go to the server's reaper, as a group's do: `kill`,
                    // a session's output and the deadline deal with what the shell left.
                    status.write_volatile(wait_status);
                    libc::_exit(0);
                }
                if pid <= 0 {
                    break;
                }
            }
            if subreaper && libc::getppid() != supervisor {
                // The supervisor is gone (SIGKILL at a deadline or `kill`): so is the command.
                end();
                libc::kill(0, libc::SIGKILL);
                libc::_exit(0);
            }
            let mut fds = [
                libc::pollfd { fd: 0, events: libc::POLLIN, revents: 0 },
                libc::pollfd { fd: signals, events: libc::POLLIN, revents: 0 },
            ];
            // Without a signalfd, a look at the children every 100 ms.
            let timeout = if signals < 0 { 100 } else { -1 };
            if libc::poll(fds.as_mut_ptr(), 2, timeout) < 0 {
                continue;
            }
            if fds[0].revents != 0 {
                // The server is gone: the supervisor's group, then, by exiting, the namespace.
                end();
                libc::kill(0, libc::SIGKILL);
                libc::_exit(0);
            }
            let mut info = [0u8; 128];
            while libc::read(signals, info.as_mut_ptr().cast(), info.len()) > 0 {}
        }
    }
}

/// The subreaper's last act: kills its children, reaps them, and so on with the orphans they
/// leave it, until it has no child. Its children are listed in `/proc/thread-self/children`
/// (read into a buffer on the stack: nothing is allocated). At most 10 s of 1 ms rounds, for a
/// process the kernel cannot end at once (in uninterruptible sleep).
#[cfg(target_os = "linux")]
fn end_descendants() {
    let nap = libc::timespec { tv_sec: 0, tv_nsec: 1_000_000 };
    for _ in 0..10_000 {
        // SAFETY: async-signal-safe calls only (see `guard`), on a descriptor of its own and
        // a buffer on the stack.
        unsafe {
            let list = libc::open(
                c"/proc/thread-self/children".as_ptr(),
                libc::O_RDONLY | libc::O_CLOEXEC,
            );
            if list >= 0 {
                let mut buf = [0u8; 512];
                let mut pid: libc::pid_t = 0;
                loop {
                    let n = libc::read(list, buf.as_mut_ptr().cast(), buf.len());
                    if n <= 0 {
                        break;
                    }
                    for &byte in &buf[..n as usize] {
                        if byte.is_ascii_digit() {
                            pid = pid
                                .saturating_mul(10)
                                .saturating_add(libc::pid_t::from(byte - b'0'));
                        } else if pid > 0 {
                            libc::kill(pid, libc::SIGKILL);
                            pid = 0;
                        }
                    }
                }
                if pid > 0 {
                    libc::kill(pid, libc::SIGKILL);
                }
                libc::close(list);
            }
            loop {
                let pid = libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG);
                if pid < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::ECHILD) {
                    return;
                }
                if pid <= 0 {
                    break;
                }
            }
            libc::nanosleep(&nap, std::ptr::null_mut());
        }
    }
}

/// Waits for the init, then ends as the shell did: its exit code, or its signal. SIGKILL when
/// the init left no status (it was killed, or the lifeline ended).
#[cfg(target_os = "linux")]
fn supervise(init: libc::pid_t, status: *const libc::c_int) -> ! {
    // SAFETY: async-signal-safe calls only (see `guard`); `status` is the shared page.
    unsafe {
        // Every descriptor closed: the output pipes, the terminal, and the spawn's own error
        // pipe, which the server reads until the shell's `exec` closes the last copy.
        close_from(0);
        for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT] {
            libc::signal(signal, libc::SIG_IGN);
        }
        let mut init_status = 0;
        while libc::waitpid(init, &mut init_status, 0) < 0
            && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
        {}
        let shell = status.read_volatile();
        if shell != NONE && libc::WIFEXITED(shell) {
            libc::_exit(libc::WEXITSTATUS(shell));
        }
        let signal = if shell != NONE && libc::WIFSIGNALED(shell) {
            libc::WTERMSIG(shell)
        } else {
            libc::SIGKILL
        };
        libc::signal(signal, libc::SIG_DFL);
        let mut all = std::mem::zeroed::<libc::sigset_t>();
        libc::sigfillset(&mut all);
        libc::sigprocmask(libc::SIG_UNBLOCK, &all, std::ptr::null_mut());
        libc::kill(libc::getpid(), signal);
        libc::_exit(128 + signal)
    }
}

/// In the command's process: forks a process that forks the guardian and exits at once, and
/// reaps it. Fails (and so does the command) if either fork fails.
#[cfg(not(target_os = "linux"))]
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
#[cfg(not(target_os = "linux"))]
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
#[cfg(not(target_os = "linux"))]
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
