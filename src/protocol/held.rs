//! Replies made on the reading thread, held until it has read all the input there is, so that
//! pipelined requests get their replies in one hand-off to the writer, not one each, up to
//! `HOLD_LIMIT` (64 KiB) at a time. Replies
//! made on other threads go at once: the reading thread may be waiting for input that never
//! comes.

use std::sync::Mutex;
use std::thread::ThreadId;

use crate::protocol::lock;
use crate::protocol::transport::Outbox;

/// Replies held on the reading thread are handed over at this size even if more input waits.
const HOLD_LIMIT: usize = 64 * 1024;

pub struct Held {
    outbox: Outbox,
    reader: ThreadId,
    lines: Mutex<String>,
}

impl Held {
    /// Holds the replies that `reader` (the thread that reads stdin) makes.
    pub fn new(outbox: Outbox, reader: ThreadId) -> Held {
        Held { outbox, reader, lines: Mutex::new(String::new()) }
    }

    /// Sends `line` (one message, without its newline), or holds it when made on the reading
    /// thread.
    pub fn send_line(&self, mut line: String) {
        line.push('\n');
        if std::thread::current().id() != self.reader {
            self.outbox.send_lines(line);
            return;
        }
        let mut held = lock(&self.lines);
        if line.len() >= HOLD_LIMIT {
            // A big reply goes as it is, after what is held, without another copy.
            self.outbox.send_lines(std::mem::take(&mut held));
            self.outbox.send_lines(line);
            return;
        }
        held.push_str(&line);
        // A client that never pauses still gets its replies as it goes.
        if held.len() >= HOLD_LIMIT {
            self.outbox.send_lines(std::mem::take(&mut held));
        }
    }

    /// Sends one line made of `pieces` (a batch's replies, without copying them into one
    /// string), after what is held.
    pub fn send_pieces(&self, mut pieces: Vec<String>) {
        if let Some(last) = pieces.last_mut() {
            last.push('\n');
        }
        if std::thread::current().id() == self.reader {
            self.release();
        }
        self.outbox.send_pieces(pieces);
    }

    /// Hands what is held to the writer: the reading thread has read all there is.
    pub fn release(&self) {
        let held = std::mem::take(&mut *lock(&self.lines));
        self.outbox.send_lines(held);
    }
}
