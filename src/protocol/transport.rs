//! stdin and stdout: the only code that writes stdout. One thread reads lines, one writes them.
//!
//! Plain threads rather than tokio's stdio: tokio's `Stdin`/`Stdout` hop to the blocking pool on
//! every read and write, which costs more per message than the small tool calls themselves.

use std::io::{BufRead, BufReader, Write};
use std::sync::mpsc;
use std::thread::JoinHandle;

/// A line from stdin, without its newline, or the sign that it was cut off at the cap.
pub enum Line {
    Complete(Vec<u8>),
    TooLong { len: usize },
}

/// The longest line accepted. A longer one is answered with a parse error and skipped, so a
/// runaway client costs this much memory at most.
pub const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// Reads stdin line by line into a channel; the channel closes at end of input.
pub fn spawn_reader() -> tokio::sync::mpsc::Receiver<Line> {
    let (tx, rx) = tokio::sync::mpsc::channel(1024);
    std::thread::Builder::new()
        .name("stdin".into())
        .spawn(move || {
            let stdin = std::io::stdin();
            let mut reader = BufReader::with_capacity(1 << 16, stdin.lock());
            while let Some(line) = read_line(&mut reader) {
                if tx.blocking_send(line).is_err() {
                    break;
                }
            }
        })
        .expect("spawning the stdin thread");
    rx
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

/// Where responses and notifications go: one whole line each, written by one thread.
#[derive(Clone)]
pub struct Outbox(mpsc::Sender<String>);

impl Outbox {
    pub fn send(&self, message: &serde_json::Value) {
        // serde_json escapes control characters, so a message is always exactly one line.
        let _ = self.0.send(message.to_string());
    }
}

/// Starts the writer thread; it ends when every `Outbox` clone is dropped.
pub fn spawn_writer() -> (Outbox, JoinHandle<()>) {
    let (tx, rx) = mpsc::channel::<String>();
    let handle = std::thread::Builder::new()
        .name("stdout".into())
        .spawn(move || write_lines(rx, stdout()))
        .expect("spawning the stdout thread");
    (Outbox(tx), handle)
}

#[expect(clippy::disallowed_methods, reason = "the transport is the only writer of stdout")]
fn stdout() -> std::io::Stdout {
    std::io::stdout()
}

/// Flushes only when no more lines are queued, so pipelined replies leave in few writes.
fn write_lines(rx: mpsc::Receiver<String>, stdout: std::io::Stdout) {
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    while let Ok(mut line) = rx.recv() {
        loop {
            line.push('\n');
            if out.write_all(line.as_bytes()).is_err() {
                // The client closed its end: nothing more can be delivered.
                return;
            }
            match rx.try_recv() {
                Ok(next) => line = next,
                Err(_) => break,
            }
        }
        if out.flush().is_err() {
            return;
        }
    }
    let _ = out.flush();
}
