//! Reply-bounded filtering: a walk that keeps only the first entries a filter accepts, as many
//! as a reply can show, so a search holds what it reports rather than the tree.

use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::sync::Mutex;

use super::{path_order, visit, Entry, Summary, WalkOptions};
use crate::policy::ResolvedPath;

/// How much of what a filter accepts [`filtered`] keeps: the first entries in path order, at
/// most `count` of them, and no more than fit in `weight` as `weigh` counts each one.
pub struct Limit<'w> {
    pub count: usize,
    pub weight: usize,
    /// An entry's weight from its path below the root. It must never count more than the
    /// caller's own cut does, so that no entry the caller would keep is dropped.
    pub weigh: &'w (dyn Fn(&Path) -> usize + Sync),
}

/// What a filtered walk found.
pub struct Filtered {
    /// The first of the accepted entries (see [`Limit`]), depth-first with siblings by name.
    pub entries: Vec<Accepted>,
    /// Every entry accepted, kept or not.
    pub total: u64,
    pub summary: Summary,
}

/// An entry a filter accepted: its path below the root, in one allocation of its own size.
pub struct Accepted {
    rel: Box<Path>,
}

impl Accepted {
    /// Relative to the walk's root.
    pub fn rel(&self) -> &Path {
        &self.rel
    }
}

/// The entries below `root` that `accept` takes, sorted depth-first with siblings by name, as
/// [`entries`](super::entries) would give them, but holding only what `limit` lets through: the filter runs as
/// the walk finds each entry, and each walker thread, once it holds twice what `limit` allows,
/// sorts what it holds and drops all but the first. That drops nothing a caller cutting at
/// `limit` would keep: an entry among the first overall is among the first of its own thread.
/// So a search holds what it reports, not the tree (the million-file tree's 1,000 matches:
/// 4 MB instead of 170 MB).
pub fn filtered<A>(
    root: &ResolvedPath,
    options: &WalkOptions<'_>,
    limit: &Limit<'_>,
    accept: A,
) -> io::Result<Filtered>
where
    A: Fn(&Entry) -> bool + Sync,
{
    let total = AtomicU64::new(0);
    let held: Mutex<Vec<Accepted>> = Mutex::new(Vec::new());
    let summary = visit(root, options, || {
        let mut firsts = Firsts { found: Vec::new(), weight: 0, limit, sink: &held };
        let (accept, total) = (&accept, &total);
        move |entry: Entry| {
            if accept(&entry) {
                total.fetch_add(1, AtomicOrdering::Relaxed);
                firsts.push(Accepted { rel: entry.rel().into() });
            }
        }
    })?;
    let mut entries = held.into_inner().unwrap_or_else(|e| e.into_inner());
    keep_firsts(&mut entries, limit);
    Ok(Filtered { entries, total: total.into_inner(), summary })
}

/// A walker thread's accepted entries, handed over when its visitor is dropped.
struct Firsts<'l, 'w> {
    found: Vec<Accepted>,
    /// The weight of `found`.
    weight: usize,
    limit: &'l Limit<'w>,
    sink: &'l Mutex<Vec<Accepted>>,
}

impl Firsts<'_, '_> {
    fn push(&mut self, found: Accepted) {
        self.weight = self.weight.saturating_add((self.limit.weigh)(found.rel()));
        self.found.push(found);
        if self.found.len() / 2 > self.limit.count || self.weight / 2 > self.limit.weight {
            self.weight = keep_firsts(&mut self.found, self.limit);
        }
    }
}

impl Drop for Firsts<'_, '_> {
    fn drop(&mut self) {
        let found = std::mem::take(&mut self.found);
        self.sink.lock().unwrap_or_else(|e| e.into_inner()).extend(found);
    }
}

/// Sorts `found` and keeps the first `limit` allows; gives their weight.
fn keep_firsts(found: &mut Vec<Accepted>, limit: &Limit<'_>) -> usize {
    found.sort_unstable_by(|a, b| path_order(a.rel(), b.rel()));
    let mut weight = 0usize;
    let mut keep = 0;
    for entry in found.iter().take(limit.count) {
        let next = weight.saturating_add((limit.weigh)(entry.rel()));
        if next > limit.weight {
            break;
        }
        weight = next;
        keep += 1;
    }
    found.truncate(keep);
    found.shrink_to(keep.max(16) * 2);
    weight
}
