//! Partial reads for read_file: lines from a 1-based line on, streamed from the start and stopped
//! after the last one wanted, or the last lines, found by reading backwards from the end.
//!
//! Neither reads more of the file than its answer needs, with one exception: in a file of at most
//! `Limits::count_up_to` bytes, the lines after the range are counted too, so that the note can
//! say how many lines the file has. Counting a bigger file's lines would mean reading all of it
//! (a 4 GB file is a second of memchr from the page cache, far longer from disk) for every page,
//! so there the note gives what the read saw: `of at least N`, with the file's size.
//!
//! A line ends after its `\n`; a last line without one is a line too, so `a\nb` has 2 lines and
//! `a\n` has 1. `\r` is part of the line: CRLF text comes back byte for byte.
//!
//! A page is held to two caps: its bytes, and the bytes its text takes in the reply once
//! JSON-escaped (`reply_size`), where a control character takes six. A scan towards a line far
//! into a file asks its `stop` between reads, so that a cancelled call ends.

use std::io::{self, Read};

use memchr::{memchr, memchr_iter, memrchr_iter};

use crate::reply_size::{escaped_text_len, Cap};

#[cfg(test)]
mod tests;

/// Which lines a partial read returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Range {
    /// `count` lines (to the end of the file when `None`) from line `first`, 1-based.
    From { first: u64, count: Option<u64> },
    /// The last `n` lines.
    Last(u64),
}

#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The most bytes a page holds (line-number prefixes included).
    pub cap: usize,
    /// The most bytes a page's text may take JSON-escaped.
    pub json_cap: usize,
    /// A file of at most this many bytes has all its lines counted.
    pub count_up_to: u64,
}

/// A page's size so far, raw and JSON-escaped.
#[derive(Debug, Default, Clone, Copy)]
struct Measure {
    bytes: usize,
    json: usize,
}

impl Measure {
    fn add(&mut self, chunk: &[u8]) {
        self.bytes += chunk.len();
        self.json += escaped_text_len(chunk);
    }

    /// The first cap this is over, if any.
    fn over(&self, limits: &Limits) -> Option<Cap> {
        if self.bytes > limits.cap {
            Some(Cap::Bytes(limits.cap))
        } else if self.json > limits.json_cap {
            Some(Cap::Json(limits.json_cap))
        } else {
            None
        }
    }
}

/// How many lines the file has, as far as the read can say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Total {
    Exact(u64),
    /// A big file, read only partly: at least this many lines.
    AtLeast(u64),
    /// The last lines of a big file: their numbers are not known.
    Unknown,
}

/// The lines read, and what the note says about them.
#[derive(Debug, PartialEq, Eq)]
pub struct Page {
    /// The lines, exactly as in the file, each after its `cat -n` number when asked for.
    pub text: Vec<u8>,
    /// The number of the first line in `text`; `None` for the last lines of a big file.
    pub first: Option<u64>,
    pub lines: u64,
    pub total: Total,
    /// Lines were left out to keep the page within this cap.
    pub cut: Option<Cap>,
    /// The file's size in bytes, as the read started.
    pub size: u64,
    /// The first line asked for, when it lies past the end of the file (and is not line 1).
    pub past_end: Option<u64>,
}

#[derive(Debug)]
pub enum PageError {
    Io(io::Error),
    /// One line alone is bigger than the cap: `Some(n)` is its number, `None` the last line of
    /// a file whose lines are not counted.
    LineTooLong {
        line: Option<u64>,
        cap: Cap,
    },
    /// `stop` said so: the call was cancelled.
    Stopped,
}

impl From<io::Error> for PageError {
    fn from(e: io::Error) -> PageError {
        PageError::Io(e)
    }
}

/// `count` lines from line `first` (1-based) of what `reader` yields, numbered when `numbers`.
/// `size` is the file's size: it decides whether the rest of the file is counted. `stop` is
/// asked between reads while skipping to line `first`.
pub fn from_start(
    reader: impl Read,
    first: u64,
    count: Option<u64>,
    numbers: bool,
    size: u64,
    limits: Limits,
    stop: &dyn Fn() -> bool,
) -> Result<Page, PageError> {
    let mut scan = Scan::new(reader);
    let mut page = Page::empty(first, size);
    if !skip_lines(&mut scan, first.saturating_sub(1), stop)? {
        page.total = Total::Exact(scan.lines_so_far());
        page.past_end = (first > 1).then_some(first);
        return Ok(page);
    }
    let eof = read_page(&mut scan, &mut page, first, count, numbers, &limits)?;
    page.total = if eof {
        Total::Exact(scan.lines_so_far())
    } else if size <= limits.count_up_to {
        scan.count_to_end(limits.count_up_to)?
    } else if page.cut.is_some() || scan.fill()? {
        // Bytes follow the last line returned: at least one more line.
        Total::AtLeast(first + page.lines)
    } else {
        Total::Exact(scan.lines_so_far())
    };
    if page.lines == 0 && first > 1 {
        page.past_end = Some(first);
    }
    Ok(page)
}

/// Skips past the first `skip` newlines; false when the text ends before them. Whole buffers
/// are counted (memchr's count is vectorized); only the last one is searched for the position.
fn skip_lines(
    scan: &mut Scan<impl Read>,
    skip: u64,
    stop: &dyn Fn() -> bool,
) -> Result<bool, PageError> {
    while scan.newlines < skip {
        if stop() {
            return Err(PageError::Stopped);
        }
        if !scan.fill()? {
            return Ok(false);
        }
        let data = scan.data();
        let len = data.len();
        let need = skip - scan.newlines;
        let in_data = memchr_iter(b'\n', data).count() as u64;
        if in_data < need {
            scan.consume(len, in_data);
            continue;
        }
        let at = memchr_iter(b'\n', data).nth((need - 1) as usize).unwrap_or(data.len() - 1);
        scan.consume(at + 1, need);
    }
    Ok(true)
}

/// Reads `count` lines (all, for `None`) into `page`, the first of them line `first`,
/// numbered when `numbers`, stopping before the line that would cross the limits; true at the
/// end of the text.
fn read_page(
    scan: &mut Scan<impl Read>,
    page: &mut Page,
    first: u64,
    count: Option<u64>,
    numbers: bool,
    limits: &Limits,
) -> Result<bool, PageError> {
    let mut out = Vec::new();
    let mut measure = Measure::default();
    let mut in_line = false;
    let mut line_start = 0;
    let mut eof = false;
    loop {
        if !in_line {
            if count.is_some_and(|c| page.lines == c) {
                break;
            }
            if !scan.fill()? {
                eof = true;
                break;
            }
            line_start = out.len();
            if numbers {
                let prefix = number_prefix(first + page.lines);
                out.extend_from_slice(prefix.as_bytes());
                measure.add(prefix.as_bytes());
            }
            in_line = true;
        }
        if !scan.fill()? {
            // The last line has no newline.
            page.lines += 1;
            eof = true;
            break;
        }
        let data = scan.data();
        match memchr(b'\n', data) {
            Some(i) => {
                out.extend_from_slice(&data[..=i]);
                measure.add(&data[..=i]);
                scan.consume(i + 1, 1);
                page.lines += 1;
                in_line = false;
            }
            None => {
                out.extend_from_slice(data);
                measure.add(data);
                let n = data.len();
                scan.consume(n, 0);
            }
        }
        if let Some(cap) = measure.over(limits) {
            // The line that crossed the cap is left out, whole.
            if !in_line {
                page.lines -= 1;
            }
            if page.lines == 0 {
                return Err(PageError::LineTooLong { line: Some(first), cap });
            }
            out.truncate(line_start);
            page.cut = Some(cap);
            break;
        }
    }
    page.text = out;
    Ok(eof)
}

/// The last `n` lines of a file of `size` bytes, read backwards in blocks through `read_at`
/// (which fills its buffer from the given offset, or fails). Line numbers (and with them
/// `numbers`) are known only in a file whose lines are counted.
pub fn last_lines(
    read_at: impl FnMut(&mut [u8], u64) -> io::Result<()>,
    n: u64,
    numbers: bool,
    size: u64,
    limits: Limits,
) -> Result<Page, PageError> {
    last_lines_in_blocks(read_at, n, numbers, size, limits, 64 * 1024)
}

/// `last_lines`, reading `block` bytes at a time (the tests use tiny blocks).
fn last_lines_in_blocks(
    mut read_at: impl FnMut(&mut [u8], u64) -> io::Result<()>,
    n: u64,
    numbers: bool,
    size: u64,
    limits: Limits,
    block_size: u64,
) -> Result<Page, PageError> {
    let mut page = Page::empty(1, size);
    if size == 0 || n == 0 {
        return Ok(page);
    }
    let (blocks, accepted) = read_back(&mut read_at, n, size, &limits, block_size, &mut page.cut)?;
    let Some((start, lines)) = accepted else {
        // The last line alone is over the cap; its number is known where lines are counted.
        let line = if size <= limits.count_up_to {
            Some(count_newlines(&mut read_at, size - 1)? + 1)
        } else {
            None
        };
        let cap = page.cut.unwrap_or(Cap::Bytes(limits.cap));
        return Err(PageError::LineTooLong { line, cap });
    };
    let text = join_from(&blocks, start, size);
    page.lines = lines;
    if size > limits.count_up_to && start > 0 {
        page.first = None;
        page.total = Total::Unknown;
        page.text = text;
        return Ok(page);
    }
    let first = count_newlines(&mut read_at, start)? + 1;
    page.first = Some(first);
    page.total = Total::Exact(first + lines - 1);
    page.text = if numbers { number_within_cap(&mut page, &text, &limits)? } else { text };
    Ok(page)
}

/// Reads back from the end of a file of `size` bytes, `block_size` bytes at a time, until `n`
/// whole lines are found or the limits are reached (then `cut` says which). Gives the blocks
/// read, last first, and the longest span of whole lines within the limits as
/// `(start, lines)`, if any.
#[expect(clippy::type_complexity, reason = "a private step's two results")]
fn read_back(
    read_at: &mut impl FnMut(&mut [u8], u64) -> io::Result<()>,
    n: u64,
    size: u64,
    limits: &Limits,
    block_size: u64,
    cut: &mut Option<Cap>,
) -> Result<(Vec<(u64, Vec<u8>)>, Option<(u64, u64)>), PageError> {
    // The blocks read, last first. `[pos, size)` has been read; a newline at `p < size - 1`
    // starts a span `[p + 1, size)` of whole lines, one more than the newline before it.
    let mut blocks: Vec<(u64, Vec<u8>)> = Vec::new();
    let mut pos = size;
    let mut accepted: Option<(u64, u64)> = None; // (start, lines) of the longest span kept
    let mut found = 0u64;
    // The size of what was read back from the end up to the last newline seen (at the top of
    // the loop: of `[pos, size)`).
    let mut tail = Measure::default();
    'scan: loop {
        if pos == 0 {
            // The file holds fewer than `n` lines after the ones found: all of it.
            match tail.over(limits) {
                None => accepted = Some((0, found + 1)),
                Some(cap) => *cut = Some(cap),
            }
            break;
        }
        if let Some(cap) = tail.over(limits) {
            // Any span reaching further back is over the cap.
            *cut = Some(cap);
            break;
        }
        let start = pos.saturating_sub(block_size);
        let mut block = vec![0; (pos - start) as usize];
        read_at(&mut block, start)?;
        let mut measured_from = block.len();
        for i in memrchr_iter(b'\n', &block) {
            tail.add(&block[i + 1..measured_from]);
            measured_from = i + 1;
            let p = start + i as u64;
            if p == size - 1 {
                continue; // the last line's own newline
            }
            found += 1;
            if let Some(cap) = tail.over(limits) {
                *cut = Some(cap);
                blocks.push((start, block));
                break 'scan;
            }
            accepted = Some((p + 1, found));
            if found == n {
                blocks.push((start, block));
                break 'scan;
            }
        }
        tail.add(&block[..measured_from]);
        blocks.push((start, block));
        pos = start;
    }
    Ok((blocks, accepted))
}

/// The bytes from `start` to `size`, joined from `blocks` (read last first).
fn join_from(blocks: &[(u64, Vec<u8>)], start: u64, size: u64) -> Vec<u8> {
    let mut text = Vec::with_capacity((size - start) as usize);
    for (at, block) in blocks.iter().rev() {
        let end = at + block.len() as u64;
        if end > start {
            text.extend_from_slice(&block[start.saturating_sub(*at) as usize..]);
        }
    }
    text
}

/// `text` (whole lines from line `page.first` on), each line numbered, dropping lines from the
/// front until the numbered text fits the caps.
fn number_within_cap(page: &mut Page, text: &[u8], limits: &Limits) -> Result<Vec<u8>, PageError> {
    let first = page.first.unwrap_or(1);
    let lines: Vec<&[u8]> = text.split_inclusive(|&b| b == b'\n').collect();
    let mut measure = Measure::default();
    let mut keep_from = lines.len();
    let mut cut = None;
    for (k, line) in lines.iter().enumerate().rev() {
        let mut with = measure;
        with.add(number_prefix(first + k as u64).as_bytes());
        with.add(line);
        if let Some(cap) = with.over(limits) {
            cut = Some(cap);
            break;
        }
        measure = with;
        keep_from = k;
    }
    if keep_from == lines.len() {
        let last = first + lines.len() as u64 - 1;
        let cap = cut.unwrap_or(Cap::Bytes(limits.cap));
        return Err(PageError::LineTooLong { line: Some(last), cap });
    }
    let mut out = Vec::with_capacity(measure.bytes);
    for (k, line) in lines.iter().enumerate().skip(keep_from) {
        out.extend_from_slice(number_prefix(first + k as u64).as_bytes());
        out.extend_from_slice(line);
    }
    if keep_from > 0 {
        page.cut = page.cut.or(cut);
    }
    page.first = Some(first + keep_from as u64);
    page.lines -= keep_from as u64;
    Ok(out)
}

/// The newlines in the file's first `end` bytes.
fn count_newlines(
    read_at: &mut impl FnMut(&mut [u8], u64) -> io::Result<()>,
    end: u64,
) -> io::Result<u64> {
    let mut buf = vec![0; end.min(256 * 1024) as usize];
    let mut at = 0;
    let mut newlines = 0;
    while at < end {
        let n = (end - at).min(buf.len() as u64) as usize;
        read_at(&mut buf[..n], at)?;
        newlines += memchr_iter(b'\n', &buf[..n]).count() as u64;
        at += n as u64;
    }
    Ok(newlines)
}

/// `cat -n`'s prefix: the number right-aligned in six columns, then a tab.
pub fn number_prefix(line: u64) -> String {
    format!("{line:>6}\t")
}

impl Page {
    /// No lines yet, starting at line `first`, of a file of `size` bytes.
    fn empty(first: u64, size: u64) -> Page {
        Page {
            text: Vec::new(),
            first: Some(first),
            lines: 0,
            total: Total::Exact(0),
            cut: None,
            size,
            past_end: None,
        }
    }

    /// The note that follows the lines: which lines these are, of how many, and where the next
    /// page starts. Its grammar is in `schemas/read_file.json`; `tests` hold the two together.
    pub fn note(&self) -> String {
        let mut note = String::from("[");
        match (self.first, self.lines) {
            (_, 0) => note.push_str("lines none"),
            (Some(first), n) => note.push_str(&format!("lines {first}-{}", first + n - 1)),
            (None, n) => note.push_str(&format!("last {n} lines")),
        }
        match self.total {
            Total::Exact(total) => note.push_str(&format!(" of {total}")),
            Total::AtLeast(total) => {
                note.push_str(&format!(" of at least {total} in {} bytes", self.size));
            }
            Total::Unknown => note.push_str(&format!(" of {} bytes", self.size)),
        }
        if let Some(offset) = self.past_end {
            note.push_str(&format!("; offset={offset} is past the end"));
        }
        if let Some(cap) = self.cut {
            note.push_str(&format!("; cut at the {} cap", cap.name()));
        }
        if let Some(next) = self.next() {
            note.push_str(&format!("; next: offset={next}"));
        }
        note.push(']');
        note
    }

    /// The first line after the page, when there is one.
    pub fn next(&self) -> Option<u64> {
        let next = self.first? + self.lines;
        match self.total {
            Total::Exact(total) => (self.lines > 0 && next <= total).then_some(next),
            Total::AtLeast(_) => Some(next),
            Total::Unknown => None,
        }
    }
}

/// A forward scan over a reader: a buffer, and what has been consumed of the stream so far.
struct Scan<R> {
    reader: R,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// Newlines consumed.
    newlines: u64,
    /// The last byte consumed.
    last: Option<u8>,
    consumed: u64,
}

impl<R: Read> Scan<R> {
    /// The first read is small, for a page near the start; reads double from there, for
    /// skipping far or counting, up to a size that stays in a core's L2 cache: memchr then
    /// counts what `read` just copied without going back to memory.
    const FIRST_READ: usize = 16 * 1024;
    const MAX_READ: usize = 256 * 1024;

    fn new(reader: R) -> Scan<R> {
        Scan { reader, buf: Vec::new(), start: 0, end: 0, newlines: 0, last: None, consumed: 0 }
    }

    fn data(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    /// Makes sure unconsumed data is buffered; false at the end of the stream.
    fn fill(&mut self) -> io::Result<bool> {
        if self.start < self.end {
            return Ok(true);
        }
        // Grow only after a read that filled the buffer: a reader that gives less gains nothing.
        let want = if self.end == self.buf.len() { self.buf.len() * 2 } else { self.buf.len() };
        let want = want.clamp(Self::FIRST_READ, Self::MAX_READ);
        if want != self.buf.len() {
            // Everything buffered was consumed: nothing to keep.
            self.buf = vec![0; want];
        }
        self.start = 0;
        self.end = loop {
            match self.reader.read(&mut self.buf) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => break other?,
            }
        };
        Ok(self.end > 0)
    }

    /// Consumes the next `n` buffered bytes, which hold `newlines` newlines.
    fn consume(&mut self, n: usize, newlines: u64) {
        if n == 0 {
            return;
        }
        self.last = Some(self.buf[self.start + n - 1]);
        self.newlines += newlines;
        self.consumed += n as u64;
        self.start += n;
    }

    /// The lines that have begun in what was consumed.
    fn lines_so_far(&self) -> u64 {
        self.newlines + u64::from(self.last.is_some_and(|b| b != b'\n'))
    }

    /// Consumes the rest of the stream, counting its lines, unless it runs past `up_to` bytes
    /// (the file grew): then at least the lines seen.
    fn count_to_end(&mut self, up_to: u64) -> io::Result<Total> {
        while self.fill()? {
            if self.consumed > up_to {
                return Ok(Total::AtLeast(self.lines_so_far()));
            }
            let data = self.data();
            let n = data.len();
            let newlines = memchr_iter(b'\n', data).count() as u64;
            self.consume(n, newlines);
        }
        Ok(Total::Exact(self.lines_so_far()))
    }
}
