//! A session's output: every byte it wrote, at its offset from the start, in a private file
//! used as a ring of the last `SPILL_CAP` bytes. Memory holds only the counts.
//!
//! The file has no name (Linux's `O_TMPFILE`; elsewhere it is unlinked as soon as it is made),
//! in the server's TMPDIR for commands: no command can open it, and it goes with the server.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// Bytes of output a session keeps; past that the oldest are dropped, and replies say how many.
pub const SPILL_CAP: u64 = 64 * 1024 * 1024;

pub struct Spill {
    file: File,
    cap: u64,
    /// Bytes written in all: the offset the next byte gets.
    written: u64,
}

impl Spill {
    pub fn create(dir: &Path) -> io::Result<Spill> {
        Ok(Spill { file: unnamed_file(dir)?, cap: SPILL_CAP, written: 0 })
    }

    pub fn written(&self) -> u64 {
        self.written
    }

    /// Offsets below this were dropped.
    pub fn dropped(&self) -> u64 {
        self.written.saturating_sub(self.cap)
    }

    pub fn append(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        // Only the last `cap` bytes of one huge chunk can stay.
        if bytes.len() as u64 > self.cap {
            let skip = bytes.len() - self.cap as usize;
            self.written += skip as u64;
            bytes = &bytes[skip..];
        }
        let mut at = self.written;
        for (place, len) in segments(at, bytes.len() as u64, self.cap) {
            self.file.write_all_at(&bytes[..len as usize], place)?;
            bytes = &bytes[len as usize..];
            at += len;
        }
        self.written = at;
        Ok(())
    }

    /// The bytes at offsets `from..to`, which must be kept (`dropped() <= from <= to <=
    /// written()`).
    pub fn read(&self, from: u64, to: u64) -> io::Result<Vec<u8>> {
        let mut out = vec![0; (to - from) as usize];
        let mut filled = 0;
        for (place, len) in segments(from, to - from, self.cap) {
            self.file.read_exact_at(&mut out[filled..filled + len as usize], place)?;
            filled += len as usize;
        }
        Ok(out)
    }
}

/// Where `len` bytes at offset `at` lie in a ring file of `cap` bytes: one or two
/// `(file position, length)` pieces, the second from the file's start.
pub fn segments(at: u64, len: u64, cap: u64) -> Vec<(u64, u64)> {
    let place = at % cap;
    let first = len.min(cap - place);
    let mut out = Vec::with_capacity(2);
    if first > 0 {
        out.push((place, first));
    }
    if len > first {
        out.push((0, len - first));
    }
    out
}

/// What a read from `offset` gets of a spill that holds `dropped..written`: the range to read,
/// at most `max` bytes, and how many bytes before it were dropped. `None` for an offset past the
/// end.
pub fn plan(offset: u64, dropped: u64, written: u64, max: u64) -> Option<Plan> {
    if offset > written {
        return None;
    }
    let from = offset.max(dropped);
    Some(Plan { from, to: written.min(from + max), skipped: from - offset })
}

#[derive(Debug, PartialEq, Eq)]
pub struct Plan {
    pub from: u64,
    pub to: u64,
    pub skipped: u64,
}

/// A file with no name in `dir`: Linux's `O_TMPFILE` where the file system has it, else a new
/// file unlinked at once.
fn unnamed_file(dir: &Path) -> io::Result<File> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let made = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .mode(0o600)
            .custom_flags(libc::O_TMPFILE)
            .open(dir);
        // EOPNOTSUPP: a file system without it; EISDIR: a kernel before 3.11.
        match made {
            Err(e) if matches!(e.raw_os_error(), Some(libc::EOPNOTSUPP | libc::EISDIR)) => {}
            made => return made,
        }
    }
    named_then_unlinked(dir)
}

fn named_then_unlinked(dir: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let path = dir.join(format!(".replay-spill-{}-{n}", std::process::id()));
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)?;
    std::fs::remove_file(&path)?;
    Ok(file)
}

#[cfg(test)]
mod tests;
