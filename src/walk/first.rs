//! The first entries of one directory in an order, as many as the caller has room for, taken
//! from the entries as the directory hands them out (in no order): what list_directory and a
//! breadth-first tree show of a directory too big for their reply.
//!
//! Nothing past the room is held. `First` keeps a `cut`: the first entry in order it has left
//! out. An entry after the cut is left out as it arrives, with one comparison; one before it
//! is held, and when those held reach the caller's `Room::full`, they are sorted and trimmed to
//! what fits, which moves the cut forward in order (never back). The names held are one buffer,
//! sized once for the most that can be held, and compacted in place: a buffer grown by doubling
//! leaves each old one resident as a hole in the heap. Listing 300,000 names of 250 bytes (a
//! 22.7 MB reply) peaks at 54 MB this way, against 134 MB holding every name to the end; the
//! cut matters as much, since sorting all held names at every trim takes such a tree 1.4 s,
//! twice `find`.

use std::cmp::Ordering;

/// The caller's order and room.
pub trait Room {
    /// What the caller keeps of an entry besides its name: its kind, size or time.
    type Key: Copy;

    fn order(&self, a: (&Self::Key, &[u8]), b: (&Self::Key, &[u8])) -> Ordering;

    /// What an entry costs the caller's room.
    fn cost(&self, key: &Self::Key, name: &[u8]) -> usize;

    /// Whether, `taken` entries costing `used` being taken, the next one (costing `cost`) is
    /// taken too. Once it says no, every entry after is left out.
    fn fits(&self, taken: usize, used: usize, cost: usize) -> bool;

    /// Whether `held` entries costing `used` are enough to trim: a bound above what `fits`
    /// takes, far enough that each trim drops a good part of what is held.
    fn full(&self, held: usize, used: usize) -> bool;

    /// The most entries, and the most bytes of their names, held before a trim: the buffers
    /// are sized for them at once when a directory turns out big.
    fn most_held(&self) -> (usize, usize);
}

/// An entry held: the caller's key and where its name is.
#[derive(Clone, Copy, Debug)]
pub struct Held<K> {
    pub key: K,
    start: u32,
    len: u16,
}

impl<K> Held<K> {
    fn span(&self) -> std::ops::Range<usize> {
        let start = self.start as usize;
        start..start + self.len as usize
    }
}

/// The bytes held (names, or entries) before the buffers are sized for the most that can be
/// held.
const GROWN: usize = 1 << 20;

pub struct First<R: Room> {
    room: R,
    names: Vec<u8>,
    held: Vec<Held<R::Key>>,
    /// What the entries held cost.
    used: usize,
    /// The first entry in order left out, with its name: every entry after it is left out.
    cut: Option<(R::Key, Box<[u8]>)>,
}

impl<R: Room> First<R> {
    pub fn new(room: R) -> First<R> {
        First { room, names: Vec::new(), held: Vec::new(), used: 0, cut: None }
    }

    /// Takes one entry as the directory hands it out; `left_out` is told of each entry that
    /// cannot be among the first (this one, or ones held before).
    pub fn add(&mut self, name: &[u8], key: R::Key, mut left_out: impl FnMut(&R::Key)) {
        if let Some((cut, cut_name)) = &self.cut {
            if self.room.order((&key, name), (cut, cut_name)) == Ordering::Greater {
                left_out(&key);
                return;
            }
        }
        let (Ok(len), Ok(start)) = (u16::try_from(name.len()), u32::try_from(self.names.len()))
        else {
            // Neither happens: names are at most 1,020 bytes (255 characters), and what is held
            // is bounded by the room, far below 4 GiB.
            left_out(&key);
            return;
        };
        self.grow(name.len());
        self.names.extend_from_slice(name);
        self.held.push(Held { key, start, len });
        self.used += self.room.cost(&key, name);
        if self.room.full(self.held.len(), self.used) {
            self.trim(left_out);
        }
    }

    /// Makes room for one more entry. Past `GROWN`, room for the most that can be held, at once.
    fn grow(&mut self, name: usize) {
        let full = self.names.capacity() - self.names.len() < name
            || self.held.capacity() == self.held.len();
        let big = self.names.len() >= GROWN
            || self.held.len() * std::mem::size_of::<Held<R::Key>>() >= GROWN;
        if full && big {
            let (entries, bytes) = self.room.most_held();
            let bytes = bytes.max(self.names.len() + name);
            self.names.reserve_exact(bytes - self.names.len());
            let entries = entries.max(self.held.len() + 1);
            self.held.reserve_exact(entries - self.held.len());
        }
    }

    /// Every entry taken: the first ones, in order.
    pub fn finish(mut self, left_out: impl FnMut(&R::Key)) -> First<R> {
        self.trim(left_out);
        self
    }

    /// The entries held: after `finish`, the first ones, in order.
    pub fn held(&self) -> &[Held<R::Key>] {
        &self.held
    }

    #[cfg(test)]
    pub fn room(&self) -> &R {
        &self.room
    }

    pub fn name(&self, held: &Held<R::Key>) -> &[u8] {
        &self.names[held.span()]
    }

    /// Sorts what is held and keeps the first entries that fit; the first one that does not
    /// becomes the cut, and it and the rest are left out. The names kept move down to the
    /// front of the buffer.
    fn trim(&mut self, mut left_out: impl FnMut(&R::Key)) {
        let mut held = std::mem::take(&mut self.held);
        let (names, room) = (&self.names, &self.room);
        // A stable sort (the order is total, so it sorts alike) finds the run a trim left and
        // the run of arrivals since, and merges them: listing 1,000,000 names handed out last
        // first (tmpfs, made in order) takes 0.6 s, as one sort of them all does, against 1.3 s
        // sorting all held anew at each trim (names not UTF-8: 1.15 s against 4.2 s); peak
        // memory the same.
        held.sort_by(|a, b| room.order((&a.key, &names[a.span()]), (&b.key, &names[b.span()])));
        let mut used = 0;
        let mut fit = 0;
        for entry in &held {
            let cost = room.cost(&entry.key, &names[entry.span()]);
            if !room.fits(fit, used, cost) {
                break;
            }
            used += cost;
            fit += 1;
        }
        self.used = used;
        if fit < held.len() {
            let first = &held[fit];
            self.cut = Some((first.key, names[first.span()].into()));
            for entry in &held[fit..] {
                left_out(&entry.key);
            }
            held.truncate(fit);
            // In the order they are in the buffer, so that none is overwritten before it has
            // moved.
            let mut by_place: Vec<u32> = (0..fit as u32).collect();
            by_place.sort_unstable_by_key(|&i| held[i as usize].start);
            let mut end = 0u32;
            for i in by_place {
                let entry = &mut held[i as usize];
                self.names.copy_within(entry.span(), end as usize);
                entry.start = end;
                end += u32::from(entry.len);
            }
            self.names.truncate(end as usize);
        }
        self.held = held;
    }
}

#[cfg(test)]
mod tests;
