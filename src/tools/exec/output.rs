//! What a foreground command's stream keeps: its first `HEAD` bytes and its last `TAIL`, so a
//! test run's verdict at the end survives as well as the error at the start, within the
//! contract's 512 KB per stream. The middle is counted, not kept.

/// Bytes kept from the start of a stream.
pub const HEAD: usize = 128 * 1024;
/// Bytes kept from the end of a stream: `HEAD + TAIL` is the contract's 512 KB.
pub const TAIL: usize = 384 * 1024;

/// How long output is read on after the shell exited and its process group got SIGKILL. The
/// group's processes are gone within milliseconds of the signal, and what they left in a pipe
/// (64 KiB on Linux) is read in well under a millisecond; 500 ms leaves room for a loaded
/// machine. Output still open after that is held by a process outside the group (`setsid`),
/// which may hold it for good, so reading stops there and the reply says so (`HELD_NOTE`).
pub const HELD_DRAIN: std::time::Duration = std::time::Duration::from_millis(500);
/// Said where output stopped being read because a process outside the group still held it.
pub const HELD_NOTE: &str =
    "[a process outside the command's group still holds its output; stopped reading]";

/// One stream's head, the ring of its latest bytes, and how many there were in all. Holds at
/// most `HEAD + TAIL` bytes however much the command writes.
#[derive(Default)]
pub struct Captured {
    head: Vec<u8>,
    /// The latest bytes past the head, as a ring of `TAIL` bytes once full; `start` is where
    /// its oldest byte is.
    tail: Vec<u8>,
    start: usize,
    pub total: usize,
    /// Reading stopped before the end: a process outside the group held the stream open.
    pub held: bool,
}

impl Captured {
    pub fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len();
        let room = HEAD - self.head.len();
        if room > 0 {
            let n = bytes.len().min(room);
            self.head.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
        }
        if bytes.len() >= TAIL {
            self.tail.clear();
            self.tail.extend_from_slice(&bytes[bytes.len() - TAIL..]);
            self.start = 0;
            return;
        }
        for &b in bytes {
            if self.tail.len() < TAIL {
                self.tail.push(b);
            } else {
                self.tail[self.start] = b;
                self.start = (self.start + 1) % TAIL;
            }
        }
    }

    /// The last `n` bytes kept, in order: what a scan of the stream's end reads.
    pub fn last_bytes(&self, n: usize) -> Vec<u8> {
        let mut kept = self.head.clone();
        kept.extend_from_slice(&self.tail[self.start..]);
        kept.extend_from_slice(&self.tail[..self.start]);
        kept.split_off(kept.len().saturating_sub(n))
    }

    /// Whether bytes were cut from the middle.
    pub fn cut(&self) -> bool {
        self.total > self.head.len() + self.tail.len()
    }

    /// The stream within `max` bytes: as `render` when what was kept fits, else its first
    /// quarter and its last three quarters (as `HEAD` and `TAIL` share the stream), with
    /// `note(cut)` between them.
    pub fn render_within(&self, max: usize, note: impl Fn(usize) -> String) -> String {
        let kept = self.head.len() + self.tail.len();
        if kept <= max {
            return self.render(note);
        }
        let mut bytes = self.head.clone();
        bytes.extend_from_slice(&self.tail[self.start..]);
        bytes.extend_from_slice(&self.tail[..self.start]);
        let head = &bytes[..char_end(&bytes[..max / 4])];
        let tail = &bytes[kept - (max - max / 4)..];
        let tail = &tail[char_start(tail)..];
        let cut = self.total - head.len() - tail.len();
        format!("{}{}{}", String::from_utf8_lossy(head), note(cut), String::from_utf8_lossy(tail))
    }

    /// The stream as kept: whole when nothing was cut, else head, `note(cut)`, tail, each cut at
    /// a character boundary so no character is shown broken (the bytes of a character split by
    /// the cut count as cut).
    pub fn render(&self, note: impl Fn(usize) -> String) -> String {
        let mut tail = self.tail[self.start..].to_vec();
        tail.extend_from_slice(&self.tail[..self.start]);
        if !self.cut() {
            let mut whole = self.head.clone();
            whole.extend_from_slice(&tail);
            return String::from_utf8_lossy(&whole).into_owned();
        }
        let head = &self.head[..char_end(&self.head)];
        let tail = &tail[char_start(&tail)..];
        let cut = self.total - head.len() - tail.len();
        format!("{}{}{}", String::from_utf8_lossy(head), note(cut), String::from_utf8_lossy(tail))
    }
}

/// The length of `bytes` without a UTF-8 character its end splits (at most 3 bytes dropped).
pub fn char_end(bytes: &[u8]) -> usize {
    let len = bytes.len();
    for back in 1..=3.min(len) {
        let b = bytes[len - back];
        if b & 0xC0 == 0x80 {
            continue;
        }
        // A lead byte: keep it if its character is whole.
        let need = match b {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => 1,
        };
        return if need > back { len - back } else { len };
    }
    len
}

/// Where the first character starts in `bytes` that begins inside one (at most 3 bytes
/// skipped).
pub fn char_start(bytes: &[u8]) -> usize {
    bytes.iter().take(3).take_while(|&&b| b & 0xC0 == 0x80).count()
}

#[cfg(test)]
mod tests;
