//! One directory's entries as list_directory shows them: in the order asked for, only as many
//! held as the reply can show (`walk::first`), the rest counted (and their sizes summed) as
//! they are read, then dropped.

use std::cmp::Ordering;

use crate::policy::confined::Kind;
use crate::reply_size::{escaped_text_len, shown_escaped_len};
use crate::walk::first::{First, Held, Room};

use super::SortBy;

/// What the listing keeps of an entry besides its name; `size` and `modified` are read only
/// when asked for. 24 bytes, where plain `Option`s took 40: a listing may hold 300,000.
#[derive(Clone, Copy, Debug)]
pub(super) struct Listed {
    /// Bytes, for a file (not a directory or a symlink), with `SIZE`.
    size: u64,
    /// Seconds since the epoch, with `MODIFIED`.
    modified: i64,
    pub kind: Kind,
    /// `UTF8` (the name is shown as it is), `SIZE`, `MODIFIED`.
    flags: u8,
}

const UTF8: u8 = 1;
const SIZE: u8 = 2;
const MODIFIED: u8 = 4;

impl Listed {
    pub fn size(&self) -> Option<u64> {
        (self.flags & SIZE != 0).then_some(self.size)
    }

    pub fn modified(&self) -> Option<i64> {
        (self.flags & MODIFIED != 0).then_some(self.modified)
    }

    fn utf8(&self) -> bool {
        self.flags & UTF8 != 0
    }
}

/// What the entries left out add to the totals.
#[derive(Default, Debug, PartialEq, Eq)]
pub(super) struct LeftOut {
    pub count: usize,
    pub files: usize,
    pub dirs: usize,
    pub links: usize,
    pub bytes: u64,
}

impl LeftOut {
    fn add(&mut self, entry: &Listed) {
        self.count += 1;
        match entry.kind {
            Kind::File | Kind::Other => self.files += 1,
            Kind::Dir => self.dirs += 1,
            Kind::Symlink => self.links += 1,
        }
        // Sparse files can claim any size: four of 9e18 bytes passed u64.
        self.bytes = self.bytes.saturating_add(entry.size().unwrap_or(0));
    }
}

/// The name as shown: lossily converted when it is not UTF-8. (`from_utf8_lossy` alone took a
/// sixth of a listing of long names: it walks a name in chunks even when it is all UTF-8.)
fn shown<'a>(entry: &Listed, raw: &'a [u8]) -> std::borrow::Cow<'a, str> {
    match std::str::from_utf8(raw) {
        Ok(name) if entry.utf8() => std::borrow::Cow::Borrowed(name),
        _ => String::from_utf8_lossy(raw),
    }
}

/// `a` and `b` as shown (`from_utf8_lossy`: one U+FFFD for each invalid sequence) in byte
/// order, compared part by part without building either. A trim sorts every name held:
/// listing 1,000,000 names not UTF-8 handed out last first (as tmpfs hands out names made in
/// order) takes 4.2 s this way, against 8.9 s building two names per comparison (byte by byte
/// through iterators: 4.0 s).
fn cmp_shown(a: &[u8], b: &[u8]) -> Ordering {
    let (mut a_parts, mut b_parts) = (shown_parts(a), shown_parts(b));
    let (mut a, mut b): (&[u8], &[u8]) = (&[], &[]);
    loop {
        while a.is_empty() {
            match a_parts.next() {
                Some(part) => a = part,
                None => break,
            }
        }
        while b.is_empty() {
            match b_parts.next() {
                Some(part) => b = part,
                None => break,
            }
        }
        if a.is_empty() || b.is_empty() {
            return a.len().cmp(&b.len());
        }
        let n = a.len().min(b.len());
        match a[..n].cmp(&b[..n]) {
            Ordering::Equal => (a, b) = (&a[n..], &b[n..]),
            unequal => return unequal,
        }
    }
}

/// The parts of `raw` as shown: its valid runs, and U+FFFD for each invalid sequence.
fn shown_parts(raw: &[u8]) -> impl Iterator<Item = &[u8]> {
    raw.utf8_chunks().flat_map(|c| [c.valid().as_bytes(), lossy(c.invalid()).as_bytes()])
}

/// What stands for an invalid sequence when a name is shown: U+FFFD, or nothing after the
/// last valid part.
fn lossy(invalid: &[u8]) -> &'static str {
    if invalid.is_empty() {
        ""
    } else {
        "\u{fffd}"
    }
}

/// A listing's order, and the reply's room.
struct Reply {
    order: SortBy,
    room: usize,
}

impl Room for Reply {
    type Key = Listed;

    /// Ties (a size or a time shared) in name order: byte order, as `ls` in the C locale, of
    /// the names as shown, and two names shown alike (both not UTF-8) in their bytes' order.
    fn order(&self, a: (&Listed, &[u8]), b: (&Listed, &[u8])) -> Ordering {
        let key = match self.order {
            SortBy::Name => Ordering::Equal,
            // `None` is less than any `Some`: reversed, it comes last.
            SortBy::Size => b.0.size().cmp(&a.0.size()),
            SortBy::Modified => b.0.modified().cmp(&a.0.modified()),
        };
        key.then_with(|| {
            if a.0.utf8() && b.0.utf8() {
                return a.1.cmp(b.1);
            }
            cmp_shown(a.1, b.1).then_with(|| a.1.cmp(b.1))
        })
    }

    /// What showing an entry takes of the reply: its name as shown twice (the text's line and
    /// the structured object), escaped; its tag, keys and type, at most 48 (37); a size, at
    /// most 48 (its digits in the object, `16777216.00 TB` in the text); a time, at most 96
    /// (ISO 8601 twice, 28 bytes for the year 292277026596). A flat 96 for all of it let a
    /// listing by time with sizes of 250,000 short names take 33.5 MB, past the line's cap.
    fn cost(&self, entry: &Listed, name: &[u8]) -> usize {
        let name = if entry.utf8() { escaped_text_len(name) } else { shown_escaped_len(name) };
        let size = if entry.size().is_some() { 48 } else { 0 };
        let time = if entry.modified().is_some() { 96 } else { 0 };
        2 * name + 48 + size + time
    }

    fn fits(&self, _: usize, used: usize, cost: usize) -> bool {
        used + cost <= self.room
    }

    /// A quarter more than the room: each trim drops at least a quarter of a room's worth.
    fn full(&self, _: usize, used: usize) -> bool {
        used > self.most()
    }

    /// Each entry costs at least 48, and twice its name.
    fn most_held(&self) -> (usize, usize) {
        (self.most() / 48 + 1, self.most() / 2 + 1024)
    }
}

impl Reply {
    fn most(&self) -> usize {
        self.room + self.room / 4
    }
}

pub(super) struct Listing {
    first: First<Reply>,
    pub left_out: LeftOut,
}

impl Listing {
    /// An empty listing in `order` for a reply of `room` bytes (at most 1 GiB).
    pub fn new(order: SortBy, room: usize) -> Listing {
        let reply = Reply { order, room: room.min(1 << 30) };
        Listing { first: First::new(reply), left_out: LeftOut::default() }
    }

    /// Takes one entry as the directory hands it out.
    pub fn add(&mut self, raw: &[u8], kind: Kind, size: Option<u64>, modified: Option<i64>) {
        let mut flags = 0;
        for (flag, set) in [
            (UTF8, std::str::from_utf8(raw).is_ok()),
            (SIZE, size.is_some()),
            (MODIFIED, modified.is_some()),
        ] {
            if set {
                flags |= flag;
            }
        }
        let (size, modified) = (size.unwrap_or(0), modified.unwrap_or(0));
        let left_out = &mut self.left_out;
        self.first.add(raw, Listed { size, modified, kind, flags }, |e| left_out.add(e));
    }

    /// Every entry taken: the ones shown, in order.
    pub fn finish(self) -> Listing {
        let Listing { first, mut left_out } = self;
        let first = first.finish(|e| left_out.add(e));
        Listing { first, left_out }
    }

    pub fn entries(&self) -> impl Iterator<Item = &Held<Listed>> {
        self.first.held().iter()
    }

    pub fn len(&self) -> usize {
        self.first.held().len()
    }

    /// The bytes of the names held as shown, as text and escaped inside JSON strings: after
    /// `finish`, of the entries shown.
    pub fn shown_bytes(&self) -> (usize, usize) {
        self.entries().fold((0, 0), |(text, json), held| {
            let name = self.name(held);
            (text + name.len(), json + escaped_text_len(name.as_bytes()))
        })
    }

    /// What the listing costs a held entry at (`Room::cost`).
    #[cfg(test)]
    pub fn cost(&self, held: &Held<Listed>) -> usize {
        self.first.room().cost(&held.key, self.first.name(held))
    }

    /// The name as shown: lossily converted when it is not UTF-8.
    pub fn name(&self, held: &Held<Listed>) -> std::borrow::Cow<'_, str> {
        shown(&held.key, self.first.name(held))
    }
}

#[cfg(test)]
mod tests;
