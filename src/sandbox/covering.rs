//! The deny rules' covers in the commands' namespace, made beside the server's start rather than
//! in it: the walk that finds what the rules hide (`hidden::find`) costs a start 80 ms over the
//! benchmark corpus (48,000 entries) and seconds over millions, which a client pays before its
//! first reply; this way it costs a fork (under 1 ms).
//!
//! Mounting is forbidden under Landlock, so the work goes to a process forked before the server
//! applies it: a copy of the server, single-threaded like the server at that moment, which
//! closes every descriptor but the namespace's and its pipe, walks the allowed directories,
//! joins the namespace (`Namespaces::enter`), mounts the covers, writes one line to the pipe
//! and exits. It dies with the server (`PR_SET_PDEATHSIG`). A thread of the server reads the
//! line; until then every command waits (`Covering::wait`), at most as long as its own timeout
//! and no longer than the client keeps the call, then runs only if the covers are in place, so
//! no command sees what the rules hide. The file tools need not wait: none can carry a secret
//! out from under a cover the walk is about to make (a move or copy of a directory holding a
//! denied entry, or one it cannot look into whole, is refused: `tools::refuse_carrying_hidden`;
//! and no tool makes links).
//!
//! A server that already runs threads (one that took its directories from the client's roots)
//! cannot fork safely, and walks at once, as the namespace's helper mounts (`Covering::done`).
//! So does one whose only rules are replay's own files: exact paths, found without a walk.

use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// Where the covers stand.
#[derive(Debug)]
pub struct Covering {
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    Walking,
    /// Every match is covered, or there is nothing to cover (or no namespace to cover it in).
    Covered,
    /// Why commands may not run: the walk gave up, a cover failed, or the process making them
    /// died.
    Refused(String),
}

/// Why a command may not run yet, or at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotCovered {
    Refused(String),
    /// The walk had not finished within the wait.
    Pending(Duration),
    Cancelled,
}

/// How often a waiting command looks at its cancellation.
const POLL: Duration = Duration::from_millis(50);

impl Covering {
    /// Covers made already (or refused, with why).
    pub fn done(result: Result<(), String>) -> Covering {
        Covering { state: Mutex::new(state_of(result)), changed: Condvar::new() }
    }

    fn finish(&self, result: Result<(), String>) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        *state = state_of(result);
        self.changed.notify_all();
    }

    /// Waits until the covers are made, at most `limit`, and while `cancelled` says no.
    pub fn wait(&self, limit: Duration, cancelled: &dyn Fn() -> bool) -> Result<(), NotCovered> {
        let end = Instant::now() + limit;
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        while *state == State::Walking {
            if cancelled() {
                return Err(NotCovered::Cancelled);
            }
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(NotCovered::Pending(limit));
            }
            state = match self.changed.wait_timeout(state, left.min(POLL)) {
                Ok((state, _)) => state,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
        match &*state {
            State::Refused(why) => Err(NotCovered::Refused(why.clone())),
            _ => Ok(()),
        }
    }

    /// Whether the walk still runs.
    pub fn pending(&self) -> bool {
        *self.state.lock().unwrap_or_else(|e| e.into_inner()) == State::Walking
    }

    /// Why commands are refused, once known: `None` while the walk runs and once it covered.
    pub fn refused(&self) -> Option<String> {
        match &*self.state.lock().unwrap_or_else(|e| e.into_inner()) {
            State::Refused(why) => Some(why.clone()),
            _ => None,
        }
    }
}

/// The state `result` gives, logged when it refuses commands.
fn state_of(result: Result<(), String>) -> State {
    match result {
        Ok(()) => State::Covered,
        Err(why) => {
            tracing::warn!(
                "deny rules: {why}; execute_command is refused: allow a narrower directory, or use --no-default-deny or fewer --deny rules"
            );
            State::Refused(why)
        }
    }
}

#[cfg(target_os = "linux")]
pub use linux::{single_threaded, Forked};

#[cfg(target_os = "linux")]
mod linux {
    use std::io::{Read, Write};
    use std::os::fd::{AsRawFd, OwnedFd, RawFd};
    use std::sync::Arc;

    use super::{Covering, State};
    use crate::policy::deny::DenyRules;
    use crate::policy::AllowedRoot;
    use crate::sandbox::hidden;
    use crate::sandbox::namespace::{self, Namespaces};

    /// Whether this process runs one thread: only then may it fork and go on in the child.
    /// `false` when it cannot tell.
    pub fn single_threaded() -> bool {
        let Ok(status) = std::fs::read_to_string("/proc/self/status") else { return false };
        status
            .lines()
            .any(|line| line.strip_prefix("Threads:").is_some_and(|n| n.trim().parse() == Ok(1u32)))
    }

    /// The process making the covers, and the pipe its verdict comes by.
    #[derive(Debug)]
    pub struct Forked {
        pid: libc::pid_t,
        verdict: OwnedFd,
    }

    impl Forked {
        /// Forks the process that walks `roots` and covers what `deny` hides in `namespaces`.
        /// Only from a single-threaded process (`single_threaded`), before Landlock.
        pub fn start(
            roots: &[AllowedRoot],
            deny: &DenyRules,
            namespaces: &Namespaces,
        ) -> std::io::Result<Forked> {
            let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
            let parent = std::process::id() as libc::pid_t;
            // SAFETY: the caller runs one thread, so the child may allocate and take locks:
            // nothing was held by a thread that does not exist in it.
            match unsafe { libc::fork() } {
                -1 => Err(std::io::Error::last_os_error()),
                0 => {
                    drop(read);
                    cover(roots, deny, namespaces, parent, write)
                }
                pid => Ok(Forked { pid, verdict: read }),
            }
        }

        /// Starts the thread that waits for the verdict (after Landlock: the thread is
        /// confined), and gives what the server asks.
        pub fn watch(self) -> Arc<Covering> {
            let covering = Arc::new(Covering {
                state: std::sync::Mutex::new(State::Walking),
                changed: std::sync::Condvar::new(),
            });
            let shared = Arc::clone(&covering);
            let watcher = std::thread::Builder::new()
                .name("deny-covers".into())
                .spawn(move || shared.finish(self.verdict()));
            if let Err(e) = watcher {
                covering.finish(Err(format!("no thread to wait for the covers: {e}")));
            }
            covering
        }

        /// Reads the child's line to its end, and reaps the child.
        fn verdict(self) -> Result<(), String> {
            let mut line = String::new();
            let read = std::fs::File::from(self.verdict).read_to_string(&mut line);
            let mut status = 0;
            // SAFETY: waits for this process's own child.
            while unsafe { libc::waitpid(self.pid, &mut status, 0) } < 0
                && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
            {
            }
            match (read, line.strip_suffix('\n')) {
                (Ok(_), Some("covered")) => Ok(()),
                (Ok(_), Some(why)) if !why.is_empty() => Err(why.to_string()),
                _ => Err(format!(
                    "the process covering them ended early (wait status {status}): restart replay"
                )),
            }
        }
    }

    /// The child: walks, joins the namespace, covers, says how it went, exits. Never returns.
    fn cover(
        roots: &[AllowedRoot],
        deny: &DenyRules,
        namespaces: &Namespaces,
        parent: libc::pid_t,
        verdict: OwnedFd,
    ) -> ! {
        // SAFETY: plain system calls on this process. It dies with the server, and is not
        // dumpable, as the server is once confined.
        unsafe {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
        }
        let keep: Vec<RawFd> = namespaces.fds().chain([verdict.as_raw_fd()]).collect();
        let result = only(&keep).and_then(|()| {
            let hidden = hidden::find(roots, deny)?;
            namespaces.enter().map_err(|e| format!("joining the commands' namespace: {e}"))?;
            namespace::cover_all(&hidden)
        });
        let line = match result {
            Ok(()) => "covered\n".to_string(),
            Err(why) => format!("{}\n", why.replace('\n', " ")),
        };
        let mut verdict = std::fs::File::from(verdict);
        let status = i32::from(verdict.write_all(line.as_bytes()).is_err());
        // SAFETY: ends this process without running the server's exit handlers, which are not
        // its own; the exit closes `verdict`.
        unsafe { libc::_exit(status) }
    }

    /// Leaves the process only `keep` and /dev/null as stdin, stdout and stderr: a walk stuck
    /// on a hung filesystem, which even SIGKILL does not end, holds nothing of the server's
    /// (the client's pipes, the journal's lock, the audit log).
    fn only(keep: &[RawFd]) -> Result<(), String> {
        // SAFETY: plain system calls on this process's own descriptors; nothing else in it
        // uses those it closes (it is single-threaded and calls none of the server's code).
        unsafe {
            let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
            if null < 0 {
                return Err(format!("/dev/null: {}", std::io::Error::last_os_error()));
            }
            for fd in 0..3 {
                libc::dup2(null, fd);
            }
            let mut first = 3;
            let mut keep = keep.to_vec();
            keep.push(null.max(2));
            keep.sort_unstable();
            for &fd in &keep {
                if fd > first {
                    close_range(first, fd - 1);
                }
                first = first.max(fd + 1);
            }
            close_range(first, libc::c_int::MAX);
            if null > 2 {
                libc::close(null);
            }
        }
        Ok(())
    }

    /// Closes `first..=last`; one by one where the kernel has no `close_range` (before 5.9).
    unsafe fn close_range(first: RawFd, last: RawFd) {
        // SAFETY: the caller's.
        let rc = unsafe { libc::syscall(libc::SYS_close_range, first, last, 0) };
        if rc < 0 {
            let open: Vec<RawFd> = std::fs::read_dir("/proc/self/fd")
                .into_iter()
                .flatten()
                .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .filter(|fd| (first..=last).contains(fd))
                .collect();
            for fd in open {
                // SAFETY: the caller's.
                unsafe { libc::close(fd) };
            }
        }
    }
}
