//! Ctrl-C for `replay call`: SIGINT, SIGTERM and SIGHUP cancel the call, as
//! `notifications/cancelled` cancels a server's. A command it started is then killed with its
//! process group instead of running on, orphaned and past its deadline.
//!
//! A handler writes the signal's number to a pipe (write(2) is async-signal-safe) and a thread
//! turns it into `Cancel::cancel`. A handler, not a blocked signal mask, because child processes
//! inherit the mask: a command would then ignore the deadline's SIGTERM. Handlers reset to the
//! default at exec, so commands see ordinary signals. A second signal ends replay at once.

use std::io::Read;
use std::os::fd::IntoRawFd;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;

use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};

use crate::progress::Cancel;

const SIGNALS: [Signal; 3] = [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP];

/// The pipe's write end, for the handler; -1 until `watch` sets it.
static PIPE: AtomicI32 = AtomicI32::new(-1);

extern "C" fn on_signal(signo: nix::libc::c_int) {
    let fd = PIPE.load(Ordering::Relaxed);
    if fd >= 0 {
        let byte = signo as u8;
        // SAFETY: write(2) is async-signal-safe; `fd` is the pipe's write end, which stays open
        // for the life of the process, and `byte` outlives the call.
        unsafe { nix::libc::write(fd, std::ptr::addr_of!(byte).cast(), 1) };
    }
}

/// The signal that cancelled the call, once one has.
#[derive(Default)]
pub struct Interrupt(Arc<AtomicI32>);

impl Interrupt {
    pub fn signal(&self) -> Option<i32> {
        Some(self.0.load(Ordering::SeqCst)).filter(|&signo| signo > 0)
    }
}

/// Cancels `cancel` at the first SIGINT, SIGTERM or SIGHUP. Best effort: if the pipe or the
/// thread cannot be made, signals keep their default action (they end replay).
pub fn watch(cancel: Arc<Cancel>) -> Interrupt {
    let interrupt = Interrupt::default();
    // CLOEXEC: a command the call runs must not inherit either end.
    let Ok((read_end, write_end)) = crate::platform::pipe_cloexec() else {
        return interrupt;
    };
    let seen = Arc::clone(&interrupt.0);
    let mut read_end = std::fs::File::from(read_end);
    let spawned = std::thread::Builder::new().name("interrupt".into()).spawn(move || {
        let mut byte = [0u8; 1];
        if read_end.read_exact(&mut byte).is_ok() {
            seen.store(i32::from(byte[0]), Ordering::SeqCst);
            cancel.cancel();
            // The next signal takes its default action: a tool that does not look at its
            // cancellation flag can still be stopped.
            for signal in SIGNALS {
                // SAFETY: restoring the default action installs no handler.
                let _ = unsafe {
                    sigaction(
                        signal,
                        &SigAction::new(SigHandler::SigDfl, SaFlags::empty(), SigSet::empty()),
                    )
                };
            }
        }
    });
    if spawned.is_err() {
        return interrupt;
    }
    PIPE.store(write_end.into_raw_fd(), Ordering::SeqCst);
    let action =
        SigAction::new(SigHandler::Handler(on_signal), SaFlags::SA_RESTART, SigSet::empty());
    for signal in SIGNALS {
        // SAFETY: `on_signal` only loads an atomic and calls write(2), both async-signal-safe.
        let _ = unsafe { sigaction(signal, &action) };
    }
    interrupt
}
