//! stdin and stdout: the only code that writes stdout. The session's thread reads lines; replies
//! are written by the thread that made them or, when that could block, by a writer thread. The
//! one-shot subcommands write their answer through `write_stdout`.
//!
//! Plain blocking I/O rather than tokio's stdio: tokio's `Stdin`/`Stdout` hop to the blocking
//! pool on every read and write, which costs more per message than the small tool calls
//! themselves. Replies queue for the writer thread, so a client that writes many requests
//! before it reads any reply does not deadlock against a full stdout pipe, up to
//! `QUEUE_BOUND` (16 MiB) of replies; past that the server stops reading requests until the
//! client reads (backpressure: nothing is dropped, and memory stays bounded). A line over
//! `MAX_LINE_BYTES` (64 MiB) is refused with a parse error; on Linux stdout's pipe is widened
//! to 1 MiB, so a large reply crosses in few hand-offs.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::mem::ManuallyDrop;
use std::os::fd::{AsFd, FromRawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

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
///
/// The queue is bounded by backpressure, not by dropping: past `QUEUE_BOUND` bytes waiting,
/// the reading thread stops reading requests (`wait_for_room`) until half of it is written.
#[derive(Clone)]
pub struct Outbox {
    shared: Arc<Shared>,
}

/// How many bytes of replies may wait for a client that does not read before the server
/// stops reading its requests. Far more than a client reading as it goes ever leaves (2,000
/// pipelined small reads make 2 MB of replies), and small against a machine's memory; a
/// larger queue would make no client faster, since it can only read so fast.
pub const QUEUE_BOUND: usize = 16 << 20;

struct Shared {
    stdout: Mutex<ManuallyDrop<File>>,
    queue: Mutex<Queue>,
    /// The writer thread waits here for lines.
    ready: Condvar,
    /// `wait_for_room` waits here for the queue to drain.
    drained: Condvar,
    /// Called once, on a thread of its own, when a write fails: the client closed its end.
    on_gone: Box<dyn Fn() + Send + Sync>,
    gone: AtomicBool,
    /// Something was written since the writer thread last looked (`write_queued`).
    wrote: AtomicBool,
    /// What to do when the writer has been idle after writing (`write_queued`).
    quiet: Quiet,
}

/// What the writer thread does once it has had nothing to write for `after`, following some
/// writing: `then` runs once per such quiet spell, on the writer thread, with no lock held.
pub struct Quiet {
    pub after: Duration,
    pub then: Box<dyn Fn() + Send + Sync>,
}

#[derive(Default)]
struct Queue {
    /// Lines handed to the writer thread, in order.
    items: VecDeque<Item>,
    /// The bytes of the items queued and of those being written: what the queue holds in
    /// memory. A direct write must not overtake them.
    bytes: usize,
    /// Threads in `wait_for_room`.
    waiting: usize,
    /// `close` was called, or the client is gone: later sends are dropped.
    closed: bool,
}

/// One hand-off: whole lines, or the pieces of one line written one after another (a batch's
/// replies, without copying them into one string).
enum Item {
    Lines(String),
    Pieces(Vec<String>),
}

impl Item {
    fn pieces(&self) -> &[String] {
        match self {
            Item::Lines(lines) => std::slice::from_ref(lines),
            Item::Pieces(pieces) => pieces,
        }
    }

    fn len(&self) -> usize {
        self.pieces().iter().map(String::len).sum()
    }
}

/// The largest write a pipe takes whole and at once when it has any room at all.
const PIPE_BUF: usize = 4096;

/// Queued lines are gathered into writes of about this size.
const GATHER: usize = 1 << 16;

impl Outbox {
    /// Sends lines already serialized, each ending in a newline.
    pub fn send_lines(&self, lines: String) {
        if lines.is_empty() || self.try_write_now(&lines) {
            return;
        }
        self.enqueue(Item::Lines(lines));
    }

    /// Sends one line made of `pieces`, in order; the last ends in the newline.
    pub fn send_pieces(&self, pieces: Vec<String>) {
        self.enqueue(Item::Pieces(pieces));
    }

    fn enqueue(&self, item: Item) {
        let mut queue = lock(&self.shared.queue);
        if queue.closed {
            return;
        }
        queue.bytes += item.len();
        queue.items.push_back(item);
        drop(queue);
        self.shared.ready.notify_one();
    }

    fn try_write_now(&self, lines: &str) -> bool {
        if lines.len() > PIPE_BUF {
            return false;
        }
        let Ok(mut stdout) = self.shared.stdout.try_lock() else { return false };
        // Checked under the stdout lock: the writer thread counts what it writes until it
        // has written it, so nothing queued before this line can come after it.
        if lock(&self.shared.queue).bytes != 0 || !writable_now(&stdout) {
            return false;
        }
        let written = stdout.write_all(lines.as_bytes()).is_ok();
        drop(stdout);
        self.shared.wrote.store(true, Ordering::Relaxed);
        if !written {
            self.shared.client_gone();
        }
        true
    }

    /// Whether `wait_for_room` would wait.
    pub fn must_wait(&self) -> bool {
        let queue = lock(&self.shared.queue);
        queue.bytes > QUEUE_BOUND && !queue.closed
    }

    /// Blocks while more than `QUEUE_BOUND` bytes of replies wait, until half of them are
    /// written: the reading thread calls this before it reads the next request, and a call
    /// about to start on the blocking pool before it runs. Returns at once when the client
    /// is gone or the outbox closed.
    pub fn wait_for_room(&self) {
        let mut queue = lock(&self.shared.queue);
        if queue.bytes <= QUEUE_BOUND || queue.closed {
            return;
        }
        tracing::debug!(bytes = queue.bytes, "replies wait unread; pausing until they drain");
        queue.waiting += 1;
        while queue.bytes > QUEUE_BOUND / 2 && !queue.closed {
            queue = self.shared.drained.wait(queue).unwrap_or_else(|e| e.into_inner());
        }
        queue.waiting -= 1;
    }

    /// Tells the writer to write what is queued and stop; later sends are dropped. (Waiting for
    /// every clone to be dropped could wait forever on a tool call that never returns.)
    pub fn close(&self) {
        lock(&self.shared.queue).closed = true;
        self.shared.ready.notify_one();
        self.shared.drained.notify_all();
    }
}

/// Whether stdout takes a write now without blocking.
fn writable_now(stdout: &File) -> bool {
    let mut fds = [PollFd::new(stdout.as_fd(), PollFlags::POLLOUT)];
    matches!(poll(&mut fds, PollTimeout::ZERO), Ok(1))
        && fds[0].revents().is_some_and(|r| r.contains(PollFlags::POLLOUT))
}

impl Shared {
    /// A write failed: the client closed its end, and nothing more can be delivered. The queue
    /// is dropped, and anyone waiting for it to drain goes on.
    fn client_gone(self: &Arc<Self>) {
        {
            let mut queue = lock(&self.queue);
            queue.closed = true;
            queue.items.clear();
            queue.bytes = 0;
        }
        self.drained.notify_all();
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

/// Starts the writer thread; it ends at `Outbox::close` (having written what was queued) or
/// when stdout fails. `on_gone` runs once when stdout fails (the client closed it): a client
/// that closes stdout but not stdin must not leave the server running on, its replies going
/// nowhere. `quiet` says what runs when the server has gone quiet after writing.
pub fn spawn_writer(
    on_gone: impl Fn() + Send + Sync + 'static,
    quiet: Quiet,
) -> (Outbox, JoinHandle<()>) {
    widen_stdout();
    let shared = Arc::new(Shared {
        stdout: Mutex::new(stdout()),
        queue: Mutex::new(Queue::default()),
        ready: Condvar::new(),
        drained: Condvar::new(),
        on_gone: Box::new(on_gone),
        gone: AtomicBool::new(false),
        wrote: AtomicBool::new(false),
        quiet,
    });
    let writer_shared = Arc::clone(&shared);
    let handle = std::thread::Builder::new()
        .name("stdout".into())
        .spawn(move || write_queued(&writer_shared))
        .expect("spawning the stdout thread");
    (Outbox { shared }, handle)
}

/// Asks for a 1 MiB pipe buffer when stdout is a pipe (the most an unprivileged process gets by
/// default): a 5 MiB reply then crosses in 5 hand-offs between us and the client, not 80.
/// Best effort: a refusal leaves the pipe as it was. Linux only: macOS has no call to widen a
/// pipe (its pipes grow by themselves, to 64 KiB).
#[cfg(target_os = "linux")]
fn widen_stdout() {
    // SAFETY: fd 1 is open for the life of the process; the borrow does not outlive this call.
    let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(1) };
    let is_pipe = nix::sys::stat::fstat(fd)
        .is_ok_and(|st| st.st_mode & nix::libc::S_IFMT == nix::libc::S_IFIFO);
    if is_pipe {
        let _ = nix::fcntl::fcntl(fd, nix::fcntl::FcntlArg::F_SETPIPE_SZ(1 << 20));
    }
}

#[cfg(not(target_os = "linux"))]
fn widen_stdout() {}

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

/// Writes queued lines, gathering what is queued into writes of about `GATHER` bytes. Waiting
/// for lines, it looks every `Quiet::after` whether anything was written meanwhile (here or
/// directly by another thread); after a quiet spell that followed some writing, it runs
/// `Quiet::then`, once.
fn write_queued(shared: &Arc<Shared>) {
    // Written since `Quiet::then` last ran.
    let mut dirty = false;
    loop {
        let items = {
            let mut queue = lock(&shared.queue);
            while queue.items.is_empty() && !queue.closed {
                let (next, waited) = shared
                    .ready
                    .wait_timeout(queue, shared.quiet.after)
                    .unwrap_or_else(|e| e.into_inner());
                queue = next;
                if !waited.timed_out() || !queue.items.is_empty() {
                    continue;
                }
                if shared.wrote.swap(false, Ordering::Relaxed) {
                    dirty = true;
                } else if dirty {
                    dirty = false;
                    // Not under the queue's lock: senders go on meanwhile.
                    drop(queue);
                    (shared.quiet.then)();
                    queue = lock(&shared.queue);
                }
            }
            if queue.items.is_empty() {
                return;
            }
            let mut items = Vec::new();
            let mut len = 0;
            while let Some(item) = queue.items.pop_front() {
                len += item.len();
                items.push(item);
                if len >= GATHER {
                    break;
                }
            }
            items
        };
        shared.wrote.store(true, Ordering::Relaxed);
        let len: usize = items.iter().map(Item::len).sum();
        let written = {
            let mut stdout = lock(&shared.stdout);
            write_items(&mut **stdout, &items)
        };
        // Freed before it is counted out: the count is what the queue holds in memory.
        drop(items);
        if written.is_err() {
            shared.client_gone();
            return;
        }
        let mut queue = lock(&shared.queue);
        queue.bytes -= len;
        if queue.waiting > 0 && queue.bytes <= QUEUE_BOUND / 2 {
            shared.drained.notify_all();
        }
    }
}

/// Writes the pieces of `items` in order: small ones gathered into one write, large ones as
/// they are (copying a 96 MiB reply to gather it would cost more than the write).
fn write_items(out: &mut impl Write, items: &[Item]) -> std::io::Result<()> {
    let mut gathered = String::new();
    for piece in items.iter().flat_map(Item::pieces) {
        if piece.len() >= GATHER {
            out.write_all(gathered.as_bytes())?;
            gathered.clear();
            out.write_all(piece.as_bytes())?;
        } else {
            gathered.push_str(piece);
        }
    }
    out.write_all(gathered.as_bytes())
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
