//! The deny rules' covers in the commands' namespace, made beside the server's start rather than
//! in it: the walk that finds what the rules hide (`hidden::find`) costs a start 80 ms over the
//! benchmark corpus (48,000 entries) and seconds over millions, which a client pays before its
//! first reply; this way it costs a fork (under 1 ms).
//!
//! Mounting is forbidden under Landlock, so the work goes to a process forked before the server
//! applies it: a copy of the server, single-threaded like the server at that moment, which
//! walks the roots, joins the namespace (`Namespaces::enter`), mounts the covers, writes one
//! line to a pipe and exits. It dies with the server (`PR_SET_PDEATHSIG`), and holds neither
//! stdin nor stdout. A thread of the server reads the line; until then every command waits
//! (`Covering::wait`), then runs only if the covers are in place, so no command sees what the
//! rules hide, as before. The file tools need not wait: none can carry a secret out from under
//! a cover the walk is about to make (a move or copy of a directory holding a denied entry is
//! refused, `tools::refuse_moving_hidden`, and no tool makes links).
//!
//! A server that already runs threads (one that took its directories from the client's roots)
//! cannot fork safely, and walks at once, as the namespace's helper mounts (`Covering::done`).

use std::sync::{Condvar, Mutex};

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
    /// Why commands may not run: the walk gave up, or the process making the covers failed.
    Refused(String),
}

impl Covering {
    /// Covers made already (or refused, with why).
    pub fn done(result: Result<(), String>) -> Covering {
        let state = match result {
            Ok(()) => State::Covered,
            Err(why) => State::Refused(why),
        };
        Covering { state: Mutex::new(state), changed: Condvar::new() }
    }

    fn finish(&self, result: Result<(), String>) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        *state = match result {
            Ok(()) => State::Covered,
            Err(why) => State::Refused(why),
        };
        self.changed.notify_all();
    }

    /// Waits until the covers are made; `Err` says why commands may not run.
    pub fn wait(&self) -> Result<(), String> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        while *state == State::Walking {
            state = self.changed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        match &*state {
            State::Refused(why) => Err(why.clone()),
            _ => Ok(()),
        }
    }

    /// Why commands are refused, once known: `None` while the walk runs and once it covered.
    pub fn refused(&self) -> Option<String> {
        match &*self.state.lock().unwrap_or_else(|e| e.into_inner()) {
            State::Refused(why) => Some(why.clone()),
            _ => None,
        }
    }
}

#[cfg(target_os = "linux")]
pub use linux::{single_threaded, Forked};

#[cfg(target_os = "linux")]
mod linux {
    use std::io::{Read, Write};
    use std::os::fd::OwnedFd;
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
                _ => Err(format!("the process covering them ended early (wait status {status})")),
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
        // SAFETY: plain system calls on this process. Dies with the server; not dumpable, as
        // the server is once confined; and stdin and stdout are the client's, not its.
        unsafe {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
            let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
            if null >= 0 {
                libc::dup2(null, 0);
                libc::dup2(null, 1);
            }
        }
        let result = hidden::find(roots, deny).and_then(|hidden| {
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
}
