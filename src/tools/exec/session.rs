//! Sessions: commands that run on after their call (`background`, `tty`), read, fed input and
//! killed through `command_session`.
//!
//! A session's output is one stream of bytes with offsets from its start: the terminal's with
//! `tty`, else stdout and stderr on one pipe, interleaved as written (`2>&1`). One thread copies
//! it into the session's spill file, another waits for the shell and then kills what it left
//! in its process group, as a foreground command does. Each process starts with the same
//! lifeline guardian as a foreground command, so sessions end with the server however it
//! ends; the server's drain waits for requests, never for sessions.
//!
//! At most `LIVE` sessions run at once: a session runs until its shell exits. A session that has
//! ended stays readable until `LIVE` newer sessions have started; one whose output a process
//! outside its group (`setsid`) still holds is then no longer followed.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

use super::output::{char_end, HELD_DRAIN, HELD_NOTE};
use super::spill::{plan, Spill, SPILL_CAP};
use crate::error::ToolError;
use crate::tools::Ctx;

/// Sessions running at once, per server.
pub const LIVE: usize = 16;
/// Bytes of output one reply carries at most; the next offset says where to go on.
pub const READ_CAP: u64 = 512 * 1024;
/// How long input may wait for a command that does not read it.
const INPUT_WAIT: Duration = Duration::from_secs(5);
/// How often a waiting call looks at cancellation.
const TICK: Duration = Duration::from_millis(50);
/// Stack of a session's two threads: they make a few system calls and hold one buffer on the
/// heap, so an idle session costs little memory (the 2 MiB default is reserved, not used, but
/// 64 KiB bounds it).
const STACK: usize = 64 * 1024;

pub struct Session {
    pub id: u64,
    pub command: String,
    started: Instant,
    pgid: Pid,
    tty: bool,
    state: Mutex<State>,
    changed: Condvar,
    /// Where input goes: the stdin pipe, or the terminal. Non-blocking.
    input: Mutex<Option<File>>,
}

struct State {
    spill: Spill,
    /// Where the last read ended: the default offset.
    cursor: u64,
    /// The shell's status, once it exited and its process group was killed.
    exit: Option<ExitStatus>,
    ended: Option<Instant>,
    timed_out: bool,
    /// The output was read to its end (every writer gone), or `stop` ended the reading.
    drained: bool,
    /// The copier is to stop: the shell exited, but a process outside its group holds the
    /// output.
    stop: bool,
    /// `stop` ended the reading before the output's end.
    held: bool,
    /// The spill file failed: output after this offset is lost, and replies say so.
    spill_error: Option<(u64, String)>,
}

impl State {
    fn finished(&self) -> bool {
        self.exit.is_some() && self.drained
    }
}

fn table() -> &'static Mutex<Vec<Arc<Session>>> {
    static TABLE: OnceLock<Mutex<Vec<Arc<Session>>>> = OnceLock::new();
    TABLE.get_or_init(Mutex::default)
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The session `id`, or an error that says which there are.
pub fn find(id: u64) -> Result<Arc<Session>, ToolError> {
    let sessions = lock(table());
    if let Some(session) = sessions.iter().find(|s| s.id == id) {
        return Ok(Arc::clone(session));
    }
    let ids: Vec<String> = sessions.iter().map(|s| s.id.to_string()).collect();
    let known = if ids.is_empty() { "there are none".to_string() } else { ids.join(", ") };
    Err(ToolError::invalid_params(
        "session",
        format!(
            "no session {id} (ended ones are kept until {LIVE} newer start); sessions: {known}"
        ),
    ))
}

/// Every session kept, oldest first.
pub fn all() -> Vec<Arc<Session>> {
    lock(table()).clone()
}

/// The streams a session's process gets, and the server's ends of them.
pub struct Plumbing {
    pub stdin: Stdio,
    pub stdout: Stdio,
    pub stderr: Stdio,
    pub tty: bool,
    output: OwnedFd,
    input: OwnedFd,
}

/// A pipe for stdin and one for stdout and stderr together.
pub fn pipes() -> io::Result<Plumbing> {
    let (stdin, input) = crate::platform::pipe_cloexec()?;
    let (output, out) = crate::platform::pipe_cloexec()?;
    let err = out.try_clone()?;
    set_nonblocking(&input)?;
    Ok(Plumbing {
        stdin: stdin.into(),
        stdout: out.into(),
        stderr: err.into(),
        tty: false,
        output,
        input,
    })
}

/// A pseudo-terminal: the process gets its replica as stdin, stdout, stderr and controlling
/// terminal; the server keeps the controller for output and input.
pub fn terminal() -> io::Result<Plumbing> {
    let pty = nix::pty::openpty(None, None)?;
    let controller = pty.master;
    set_cloexec(&controller)?;
    set_cloexec(&pty.slave)?;
    let input = controller.try_clone()?;
    // Shared with `controller` (one open file): the output thread polls before it reads.
    set_nonblocking(&input)?;
    Ok(Plumbing {
        stdin: pty.slave.try_clone()?.into(),
        stdout: pty.slave.try_clone()?.into(),
        stderr: pty.slave.into(),
        tty: true,
        output: controller,
        input,
    })
}

fn set_nonblocking(fd: &OwnedFd) -> io::Result<()> {
    use nix::fcntl::{fcntl, FcntlArg, OFlag};
    let flags = OFlag::from_bits_truncate(fcntl(fd, FcntlArg::F_GETFL)?);
    fcntl(fd, FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK))?;
    Ok(())
}

fn set_cloexec(fd: &OwnedFd) -> io::Result<()> {
    use nix::fcntl::{fcntl, FcntlArg, FdFlag};
    fcntl(fd, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC))?;
    Ok(())
}

/// A place for a session being started, counted as running until it is in the table.
pub struct Slot(());

/// Sessions being started (each holds a `Slot`).
static STARTING: AtomicUsize = AtomicUsize::new(0);

impl Drop for Slot {
    fn drop(&mut self) {
        STARTING.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Takes a place for a new session, refused while `LIVE` run, and forgets ended sessions that
/// `LIVE` newer ones have pushed out.
pub fn make_room() -> Result<Slot, ToolError> {
    let mut sessions = lock(table());
    // Counted by their shells: a process that left the group may hold the output for good.
    let running: Vec<u64> =
        sessions.iter().filter(|s| lock(&s.state).exit.is_none()).map(|s| s.id).collect();
    if running.len() + STARTING.load(Ordering::Relaxed) >= LIVE {
        return Err(ToolError::invalid_params(
            "background",
            format!(
                "{LIVE} sessions are running, the most a server keeps: end one with command_session {{\"session\": {}, \"kill\": true}} (running: {})",
                running.first().copied().unwrap_or(1),
                running.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")
            ),
        ));
    }
    // The session about to start is `next`: it is the LIVE-th newer one for `next - LIVE`.
    let next = NEXT_ID.load(Ordering::Relaxed);
    sessions.retain(|s| s.id + LIVE as u64 > next || !s.forget());
    STARTING.fetch_add(1, Ordering::Relaxed);
    Ok(Slot(()))
}

/// The next session's id; ids are never reused.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Starts following `child`, spawned with `plumbing`, as a new session. `timeout` is its
/// deadline in seconds, if it has one.
pub fn start(
    slot: Slot,
    command: &str,
    child: Child,
    plumbing: Plumbing,
    spill: Spill,
    timeout: Option<u64>,
) -> Result<Arc<Session>, ToolError> {
    let pgid = Pid::from_raw(child.id() as i32);
    let Plumbing { output, input, tty, .. } = plumbing;
    let session = Arc::new(Session {
        id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        command: command.to_string(),
        started: Instant::now(),
        pgid,
        tty,
        state: Mutex::new(State {
            spill,
            cursor: 0,
            exit: None,
            ended: None,
            timed_out: false,
            drained: false,
            stop: false,
            held: false,
            spill_error: None,
        }),
        changed: Condvar::new(),
        input: Mutex::new(Some(File::from(input))),
    });
    let failed = |e| ToolError::io("start a session thread", std::path::Path::new("/"), e);
    let copier = Arc::clone(&session);
    if let Err(e) = std::thread::Builder::new()
        .name(format!("session-{}-output", session.id))
        .stack_size(STACK)
        .spawn(move || copier.copy_output(File::from(output)))
    {
        let _ = killpg(pgid, Signal::SIGKILL);
        return Err(failed(e));
    }
    let waiter = Arc::clone(&session);
    if let Err(e) = std::thread::Builder::new()
        .name(format!("session-{}-wait", session.id))
        .stack_size(STACK)
        .spawn(move || waiter.wait_for(child, timeout))
    {
        let _ = killpg(pgid, Signal::SIGKILL);
        return Err(failed(e));
    }
    lock(table()).push(Arc::clone(&session));
    drop(slot);
    Ok(session)
}

impl Session {
    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// Whether the table may drop this session, pushed out by `LIVE` newer ones: its shell has
    /// exited. A process outside its group may still hold its output: it is no longer followed,
    /// so that such sessions cost no thread once dropped.
    fn forget(&self) -> bool {
        let mut state = self.state();
        if state.exit.is_none() {
            return false;
        }
        if !state.drained {
            state.stop = true;
        }
        true
    }

    /// Copies the output into the spill file until every writer is gone, or until `stop`
    /// (looked at every `TICK`).
    fn copy_output(&self, mut output: File) {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            if self.state().stop {
                self.state().held = true;
                break;
            }
            // The terminal's controller is non-blocking (its input side shares the flag).
            let mut fds = [PollFd::new(output.as_fd(), PollFlags::POLLIN)];
            match poll(&mut fds, PollTimeout::from(TICK.as_millis() as u16)) {
                Ok(0) | Err(nix::errno::Errno::EINTR) => continue,
                Ok(_) => {}
                Err(_) => break,
            }
            match output.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    let mut state = self.state();
                    if state.spill_error.is_none() {
                        let at = state.spill.written();
                        if let Err(e) = state.spill.append(&buf[..n]) {
                            tracing::warn!(session = self.id, "session output lost: {e}");
                            state.spill_error = Some((at, e.to_string()));
                        }
                    }
                    drop(state);
                    self.changed.notify_all();
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock
                    ) => {}
                // EIO: a terminal whose replica every process has closed.
                Err(_) => break,
            }
        }
        self.state().drained = true;
        self.changed.notify_all();
    }

    /// Waits for the shell (and its deadline), then kills what it left in its process group:
    /// those processes hold the output open, and a command's effects end with the command.
    fn wait_for(&self, mut child: Child, timeout: Option<u64>) {
        let status = match timeout {
            None => child.wait().unwrap_or(ExitStatus::from_raw(255 << 8)),
            Some(seconds) => {
                let deadline = self.started + Duration::from_secs(seconds);
                loop {
                    match child.try_wait() {
                        Ok(Some(status)) => break status,
                        Ok(None) if Instant::now() < deadline => std::thread::sleep(TICK),
                        Ok(None) => {
                            self.state().timed_out = true;
                            break super::stop(&mut child, self.pgid);
                        }
                        Err(_) => break ExitStatus::from_raw(255 << 8),
                    }
                }
            }
        };
        let _ = killpg(self.pgid, Signal::SIGKILL);
        let mut state = self.state();
        state.exit = Some(status);
        state.ended = Some(Instant::now());
        drop(state);
        self.changed.notify_all();
    }

    /// Writes `text` to the session's input, waiting up to `INPUT_WAIT` for a command that
    /// reads it slowly.
    pub fn write_input(&self, ctx: &Ctx, text: &str) -> Result<(), ToolError> {
        self.check_open("input")?;
        let mut input = lock(&self.input);
        let Some(file) = input.as_mut() else {
            return Err(closed_input(self.id));
        };
        let bytes = text.as_bytes();
        let mut done = 0;
        let until = Instant::now() + INPUT_WAIT;
        while done < bytes.len() {
            match file.write(&bytes[done..]) {
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if ctx.cancel.is_cancelled() || Instant::now() >= until {
                        return Err(ToolError::invalid_params(
                            "input",
                            format!(
                                "session {} took {done} of {} bytes in {} s and reads no more: read its output (it may wait on it), then send the rest",
                                self.id,
                                bytes.len(),
                                INPUT_WAIT.as_secs()
                            ),
                        ));
                    }
                    let mut fds = [PollFd::new(file.as_fd(), PollFlags::POLLOUT)];
                    let _ = poll(&mut fds, PollTimeout::from(TICK.as_millis() as u16));
                }
                Err(e) => {
                    return Err(ToolError::invalid_params(
                        "input",
                        format!("session {} does not take input: {e}", self.id),
                    ))
                }
            }
        }
        Ok(())
    }

    /// End of input: the pipe closed, or on a terminal the EOF character (^D) a REPL reads as
    /// end of input at the start of a line.
    pub fn close_input(&self, ctx: &Ctx) -> Result<(), ToolError> {
        self.check_open("closeInput")?;
        if lock(&self.input).is_none() {
            return Err(closed_input(self.id));
        }
        if self.tty {
            self.write_input(ctx, "\u{4}")?;
        }
        *lock(&self.input) = None;
        Ok(())
    }

    /// SIGKILL to the session's process group; waits (a few milliseconds) until it is gone.
    /// Output a process outside the group still holds `HELD_DRAIN` after the shell exited is
    /// no longer followed, and the reply says so.
    pub fn kill(&self, ctx: &Ctx) -> Result<(), ToolError> {
        let state = self.state();
        if let (true, Some(status)) = (state.finished(), state.exit) {
            return Err(self.ended("kill", status));
        }
        let running = state.exit.is_none();
        drop(state);
        if running {
            let _ = killpg(self.pgid, Signal::SIGKILL);
        }
        self.wait_until(ctx, Duration::from_secs(5), |s| s.exit.is_some());
        self.wait_until(ctx, HELD_DRAIN, State::finished);
        let mut state = self.state();
        if state.exit.is_some() && !state.drained {
            state.stop = true;
            drop(state);
            // The copier sees `stop` within a `TICK`.
            self.wait_until(ctx, Duration::from_secs(1), |s| s.drained);
        }
        Ok(())
    }

    /// An error for `field` when the session has ended: there is nothing left to feed or kill.
    fn check_open(&self, field: &str) -> Result<(), ToolError> {
        let state = self.state();
        let Some(status) = state.exit else { return Ok(()) };
        Err(self.ended(field, status))
    }

    fn ended(&self, field: &str, status: ExitStatus) -> ToolError {
        ToolError::invalid_params(
            field,
            format!(
                "session {} has ended ([exit code: {}]); its output stays readable: call command_session with only session",
                self.id,
                exit_code(status)
            ),
        )
    }

    /// Waits until output past `offset` arrives or the session ends, for at most `limit`, or
    /// until the call is cancelled.
    pub fn wait(&self, ctx: &Ctx, offset: u64, limit: Option<Duration>) {
        let Some(limit) = limit else { return };
        self.wait_until(ctx, limit, |s| s.finished() || s.spill.written() > offset);
    }

    /// Waits until `done` holds of the state, for at most `limit`, or until the call is
    /// cancelled.
    fn wait_until(&self, ctx: &Ctx, limit: Duration, done: impl Fn(&State) -> bool) {
        let until = Instant::now() + limit;
        let mut state = self.state();
        loop {
            if done(&state) || ctx.cancel.is_cancelled() {
                return;
            }
            let now = Instant::now();
            if now >= until {
                return;
            }
            let slice = (until - now).min(TICK);
            state = self.changed.wait_timeout(state, slice).map(|(s, _)| s).unwrap_or_else(|p| {
                let (s, _) = p.into_inner();
                s
            });
        }
    }

    /// The cursor: where the last read ended.
    pub fn cursor(&self) -> u64 {
        self.state().cursor
    }

    /// An error for an offset past the output's end.
    pub fn check_offset(&self, offset: u64) -> Result<(), ToolError> {
        let written = self.state().spill.written();
        if offset <= written {
            return Ok(());
        }
        Err(past_end(self.id, offset, written))
    }

    /// Reads from `offset` (at most `cap` bytes, and `READ_CAP`) and moves the cursor past what
    /// it read.
    pub fn read(&self, offset: u64, cap: u64) -> Result<Reading, ToolError> {
        let mut state = self.state();
        let (dropped, written) = (state.spill.dropped(), state.spill.written());
        let Some(plan) = plan(offset, dropped, written, cap.min(READ_CAP)) else {
            return Err(past_end(self.id, offset, written));
        };
        let finished = state.finished();
        let bytes = state
            .spill
            .read(plan.from, plan.to)
            .map_err(|e| ToolError::io("read session output", std::path::Path::new("/"), e))?;
        // A character the read's end splits waits for the next read, unless nothing more comes.
        let kept = if plan.to < written || !finished { char_end(&bytes) } else { bytes.len() };
        let next = plan.from + kept as u64;
        state.cursor = next;
        Ok(Reading {
            session: self.id,
            output: String::from_utf8_lossy(&bytes[..kept]).into_owned(),
            dropped: plan.skipped,
            dropped_at: plan.from,
            next,
            more: written - next,
            exit: if finished { state.exit } else { None },
            timed_out: state.timed_out,
            held: finished && state.held,
            spill_error: state.spill_error.clone(),
        })
    }

    /// One line for the list: id, state, running time, output size, command.
    pub fn summary(&self) -> Summary {
        let state = self.state();
        let ended = if state.finished() { state.ended } else { None };
        Summary {
            session: self.id,
            command: self.command.clone(),
            exit: ended.and(state.exit),
            seconds: ended.unwrap_or_else(Instant::now).duration_since(self.started).as_secs(),
            bytes: state.spill.written(),
        }
    }

    /// Kills the session when the call that started it was cancelled.
    pub fn abandon(&self) {
        if self.state().exit.is_none() {
            let _ = killpg(self.pgid, Signal::SIGKILL);
        }
    }
}

fn past_end(id: u64, offset: u64, written: u64) -> ToolError {
    ToolError::invalid_params(
        "offset",
        format!(
            "{offset} is past the end of session {id}'s output ({written} bytes); omit offset to read on from the last read"
        ),
    )
}

fn closed_input(id: u64) -> ToolError {
    ToolError::invalid_params(
        "input",
        format!("session {id}'s input was closed (closeInput); it takes no more"),
    )
}

/// The shell's exit code, or 128 + the signal that ended it.
pub fn exit_code(status: ExitStatus) -> i32 {
    status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
}

/// What one read got.
pub struct Reading {
    pub session: u64,
    pub output: String,
    /// Bytes dropped (over `SPILL_CAP`) between the offset asked for and `dropped_at`.
    pub dropped: u64,
    pub dropped_at: u64,
    pub next: u64,
    /// Bytes after `next` already written (past `READ_CAP`).
    pub more: u64,
    /// The status, once the session ended and all its output was read into the spill.
    pub exit: Option<ExitStatus>,
    pub timed_out: bool,
    /// Reading stopped while a process outside the group held the output.
    pub held: bool,
    pub spill_error: Option<(u64, String)>,
}

impl Reading {
    /// The reply text: notes, the output, `[running]` or `[exit code: N]`, and the next offset.
    pub fn text(&self) -> String {
        let mut text = String::new();
        if self.dropped > 0 {
            text.push_str(&format!(
                "[{} bytes dropped before offset {}: a session keeps its last {} MiB]\n",
                self.dropped,
                self.dropped_at,
                SPILL_CAP >> 20
            ));
        }
        text.push_str(&self.output);
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        if let Some((at, e)) = &self.spill_error {
            text.push_str(&format!(
                "[output after offset {at} lost: the spill file failed: {e}]\n"
            ));
        }
        if self.held {
            text.push_str(HELD_NOTE);
            text.push('\n');
        }
        match self.exit {
            None => text.push_str("[running]\n"),
            Some(status) => {
                if self.timed_out {
                    text.push_str("[timed out: the process group got SIGTERM, then SIGKILL]\n");
                }
                text.push_str(&format!("[exit code: {}]\n", exit_code(status)));
            }
        }
        text.push_str(&format!("[session {}, next offset: {}", self.session, self.next));
        if self.more > 0 {
            text.push_str(&format!(", {} more bytes", self.more));
        }
        text.push(']');
        text
    }
}

/// A session as the list shows it.
pub struct Summary {
    pub session: u64,
    pub command: String,
    pub exit: Option<ExitStatus>,
    pub seconds: u64,
    pub bytes: u64,
}
