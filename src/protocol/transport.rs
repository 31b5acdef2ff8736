//! stdin and stdout: the only code that writes stdout. The session's thread reads lines; replies
//! are written by the thread that made them or, when that could block, by a writer thread. The
//! one-shot subcommands write their answer through `write_stdout`.
//!
//! Plain blocking I/O rather than tokio's stdio: tokio's `Stdin`/`Stdout` hop to the blocking
//! pool on every read and write, which costs more per message than the small tool calls
//! themselves. Replies queue without bound for the writer thread, so a client that writes many
//! requests before it reads any reply never deadlocks against a full stdout pipe.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::mem::ManuallyDrop;
use std::os::fd::{AsFd, FromRawFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

/// A line from stdin, without its newline, or the sign that it was cut off at the cap.
pub enum Line {
    Complete(Vec<u8>),
    TooLong { len: usize },
}

/// The longest line accepted. A longer one is answered with a parse error and skipped, so a
/// runaway client costs this much memory at most.
pub const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// Reads stdin line by line on the calling thread, handing each line to `each`, until end of
/// input (or a read error, which ends input the same way). `idle` runs whenever every line
/// received so far has been handed over, just before the read that may wait for more.
pub fn read_lines(mut each: impl FnMut(Line), mut idle: impl FnMut()) {
    let stdin = std::io::stdin();
    let mut reader = BufReader::with_capacity(1 << 16, stdin.lock());
    loop {
        if reader.buffer().is_empty() {
            idle();
        }
        match read_line(&mut reader) {
            Some(line) => each(line),
            None => break,
        }
    }
    idle();
}

/// Reads up to the next newline, keeping at most `MAX_LINE_BYTES`. `None` at end of input.
fn read_line(reader: &mut impl BufRead) -> Option<Line> {
    let mut line = Vec::new();
    let mut len = 0usize;
    loop {
        let buf = match reader.fill_buf() {
            Ok(buf) => buf,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => &[],
        };
        if buf.is_empty() {
            return if len == 0 { None } else { Some(finish(line, len)) };
        }
        let (chunk, found) = match memchr_newline(buf) {
            Some(i) => (&buf[..i], true),
            None => (buf, false),
        };
        len += chunk.len();
        if len <= MAX_LINE_BYTES {
            line.extend_from_slice(chunk);
        } else {
            line = Vec::new();
        }
        let consumed = chunk.len() + usize::from(found);
        reader.consume(consumed);
        if found {
            return Some(finish(line, len));
        }
    }
}

fn finish(line: Vec<u8>, len: usize) -> Line {
    if len > MAX_LINE_BYTES {
        Line::TooLong { len }
    } else {
        Line::Complete(line)
    }
}

fn memchr_newline(buf: &[u8]) -> Option<usize> {
    buf.iter().position(|&b| b == b'\n')
}

/// Where responses and notifications go: whole lines, written to stdout under one lock.
///
/// A short message is written by the thread that made it, when nothing is queued and the pipe
/// has room (so the write cannot block): one thread wake-up fewer per reply, which on a VM is
/// most of a small call's cost. Anything else is queued for the writer thread, which may block
/// on a full pipe without stopping anyone.
#[derive(Clone)]
pub struct Outbox {
    queue: mpsc::Sender<Option<String>>,
    shared: Arc<Shared>,
}

struct Shared {
    stdout: Mutex<ManuallyDrop<File>>,
    /// Called once, on a thread of its own, when a write fails: the client closed its end.
    on_gone: Box<dyn Fn() + Send + Sync>,
    gone: std::sync::atomic::AtomicBool,
    /// Messages handed to the writer thread and not yet written; a direct write must not
    /// overtake them.
    queued: AtomicUsize,
}

/// The largest write a pipe takes whole and at once when it has any room at all.
const PIPE_BUF: usize = 4096;

impl Outbox {
    pub fn send(&self, message: &serde_json::Value) {
        // serde_json escapes control characters, so a message is always exactly one line.
        self.send_lines(line_of(message));
    }

    /// Sends lines already serialized, each ending in a newline.
    pub fn send_lines(&self, lines: String) {
        if lines.is_empty() || self.try_write_now(&lines) {
            return;
        }
        self.shared.queued.fetch_add(1, Ordering::SeqCst);
        if self.queue.send(Some(lines)).is_err() {
            self.shared.queued.fetch_sub(1, Ordering::SeqCst);
        }
    }

    fn try_write_now(&self, lines: &str) -> bool {
        if lines.len() > PIPE_BUF || self.shared.queued.load(Ordering::SeqCst) != 0 {
            return false;
        }
        let Ok(mut stdout) = self.shared.stdout.try_lock() else { return false };
        if self.shared.queued.load(Ordering::SeqCst) != 0 || !writable_now(&stdout) {
            return false;
        }
        let written = stdout.write_all(lines.as_bytes()).is_ok();
        drop(stdout);
        if !written {
            self.shared.client_gone();
        }
        true
    }

    /// Tells the writer to write what is queued and stop; later sends are dropped. (Waiting for
    /// every clone to be dropped could wait forever on a tool call that never returns.)
    pub fn close(&self) {
        let _ = self.queue.send(None);
    }
}

/// `message` as one line with its newline. serde_json escapes control characters, so a message
/// is always exactly one line. (`to_writer` on bytes: `Value::to_string` goes through
/// `fmt::Write`, measurably slower on a 5 MiB file's text.)
pub fn line_of(message: &serde_json::Value) -> String {
    // Sized up front: growing a multi-megabyte line by doubling copies it twice over.
    let mut bytes = Vec::with_capacity(estimated_len(message) + 64);
    if serde_json::to_writer(&mut bytes, message).is_err() {
        return String::new();
    }
    bytes.push(b'\n');
    // serde_json writes UTF-8 only.
    String::from_utf8(bytes).unwrap_or_default()
}

/// A little more than `value`'s serialized length, unless its strings need much escaping.
fn estimated_len(value: &serde_json::Value) -> usize {
    use serde_json::Value;
    match value {
        Value::Null | Value::Bool(_) | Value::Number(_) => 24,
        Value::String(s) => s.len() + s.len() / 32 + 2,
        Value::Array(items) => items.iter().map(estimated_len).sum::<usize>() + items.len() + 2,
        Value::Object(map) => {
            map.iter().map(|(k, v)| k.len() + 4 + estimated_len(v)).sum::<usize>() + 2
        }
    }
}

/// Whether stdout takes a write now without blocking.
fn writable_now(stdout: &File) -> bool {
    let mut fds = [PollFd::new(stdout.as_fd(), PollFlags::POLLOUT)];
    matches!(poll(&mut fds, PollTimeout::ZERO), Ok(1))
        && fds[0].revents().is_some_and(|r| r.contains(PollFlags::POLLOUT))
}

impl Shared {
    /// A write failed: the client closed its end, and nothing more can be delivered.
    fn client_gone(self: &Arc<Self>) {
        if self.gone.swap(true, Ordering::SeqCst) {
            return;
        }
        // Not on this thread: it may hold what the hook waits for.
        let shared = Arc::clone(self);
        let spawned = std::thread::Builder::new()
            .name("stdout-gone".into())
            .spawn(move || (shared.on_gone)());
        if spawned.is_err() {
            (self.on_gone)();
        }
    }
}

/// Starts the writer thread; it ends at `Outbox::close` or when every `Outbox` is dropped.
/// `on_gone` runs once when stdout fails (the client closed it): a client that closes stdout
/// but not stdin must not leave the server running on, its replies going nowhere.
pub fn spawn_writer(on_gone: impl Fn() + Send + Sync + 'static) -> (Outbox, JoinHandle<()>) {
    widen_pipe(1);
    let (queue, rx) = mpsc::channel::<Option<String>>();
    let shared = Arc::new(Shared {
        stdout: Mutex::new(stdout()),
        on_gone: Box::new(on_gone),
        gone: std::sync::atomic::AtomicBool::new(false),
        queued: AtomicUsize::new(0),
    });
    let writer_shared = Arc::clone(&shared);
    let handle = std::thread::Builder::new()
        .name("stdout".into())
        .spawn(move || write_queued(&rx, &writer_shared))
        .expect("spawning the stdout thread");
    (Outbox { queue, shared }, handle)
}

/// Asks for a 1 MiB pipe buffer when `fd` is a pipe (the most an unprivileged process gets by
/// default): a 5 MiB reply then crosses in 5 hand-offs between us and the client, not 80.
/// Best effort: a refusal leaves the pipe as it was.
pub fn widen_pipe(fd: std::os::fd::RawFd) {
    // SAFETY: fd 0 and 1 are open for the life of the process; the borrow does not outlive
    // this call.
    let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
    let is_pipe = nix::sys::stat::fstat(fd)
        .is_ok_and(|st| st.st_mode & nix::libc::S_IFMT == nix::libc::S_IFIFO);
    if is_pipe {
        let _ = nix::fcntl::fcntl(fd, nix::fcntl::FcntlArg::F_SETPIPE_SZ(1 << 20));
    }
}

/// Writes `text` to stdout whole: the one-shot subcommands' answer (`replay call`, `tools`,
/// `schema`, `print-config`), written once, with no server running.
pub fn write_stdout(text: &str) -> std::io::Result<()> {
    let mut stdout = stdout();
    stdout.write_all(text.as_bytes())?;
    stdout.flush()
}

/// File descriptor 1, never closed by us.
fn stdout() -> ManuallyDrop<File> {
    // SAFETY: fd 1 is open for the life of the process (the transport is its only writer), and
    // ManuallyDrop keeps this `File` from closing it.
    ManuallyDrop::new(unsafe { File::from_raw_fd(1) })
}

/// Writes queued lines, gathering what is queued into one write.
fn write_queued(rx: &mpsc::Receiver<Option<String>>, shared: &Arc<Shared>) {
    while let Ok(Some(mut batch)) = rx.recv() {
        let mut count = 1;
        let mut closing = false;
        while batch.len() < 1 << 16 {
            match rx.try_recv() {
                Ok(Some(next)) => {
                    batch.push_str(&next);
                    count += 1;
                }
                Ok(None) => {
                    closing = true;
                    break;
                }
                Err(_) => break,
            }
        }
        let written = shared
            .stdout
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .write_all(batch.as_bytes())
            .is_ok();
        shared.queued.fetch_sub(count, Ordering::SeqCst);
        if !written {
            shared.client_gone();
            return;
        }
        if closing {
            return;
        }
    }
}
