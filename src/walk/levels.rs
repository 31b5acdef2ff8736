//! A breadth-first walk that stops where its caller says: the root's entries in name order,
//! then each of those directories' entries in turn, level by level, which is the order
//! directory_tree keeps entries in when it cannot show them all. It reads no directory past
//! the point where the caller stopped taking entries, except to ask whether the directories it
//! took hold anything (`peek`), so what it costs follows what is taken, not the tree: the first
//! 1,000 entries of a million-file tree read 11 directories whole and peek into 990.
//!
//! The same entries are left out as in every walk (`Admission`), and directories are opened
//! beneath the root's handle by their path below it, following no symlink.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, MutexGuard};

use nix::fcntl::OFlag;
use nix::sys::stat::Mode;

use super::first::{self, First};
use super::gitignore::Ignores;
use super::{peek, Admission, Hiding, Summary, WalkOptions};
use crate::policy::confined;
use crate::policy::confined::Kind;
use crate::policy::ResolvedPath;

/// The entries a breadth-first walk took, in the order it took them.
#[derive(Default)]
pub struct Levels {
    /// Breadth-first: each node's children follow all nodes before it, in name order.
    pub nodes: Vec<Node>,
    /// The names, one after another.
    names: Vec<u8>,
    /// The root's children.
    pub root: Children,
    pub summary: Summary,
}

/// One entry taken: 28 bytes and its name, so that the hundreds of thousands a reply can hold
/// cost less than their share of the reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Node {
    pub kind: Kind,
    /// 1 for the root's children.
    depth: u32,
    /// The parent's index in `nodes`; `NO_PARENT` for the root's children.
    parent: u32,
    name: (u32, u32),
    /// A directory's entries that were taken, and whether it has more. A directory at the
    /// depth limit is not read: no children, none more.
    pub children: Children,
}

const NO_PARENT: u32 = u32::MAX;

impl Node {
    pub fn depth(&self) -> usize {
        self.depth as usize
    }

    /// The parent's index in `Levels::nodes`; `None` for the root's children.
    pub fn parent(&self) -> Option<usize> {
        (self.parent != NO_PARENT).then_some(self.parent as usize)
    }
}

/// Where a directory's entries taken are in `Levels::nodes`, and whether there are others.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Children {
    first: u32,
    taken: u32,
    /// Entries not taken: the walk stopped before them, or it only peeked into the directory.
    pub more: bool,
}

impl Children {
    pub fn taken(&self) -> usize {
        self.taken as usize
    }
}

impl Levels {
    pub fn name(&self, node: &Node) -> &[u8] {
        &self.names[node.name.0 as usize..node.name.1 as usize]
    }

    /// The indices of a directory's children taken (the root's with `None`).
    pub fn children(&self, of: Option<usize>) -> std::ops::Range<usize> {
        let children = of.map_or(self.root, |i| self.nodes[i].children);
        children.first as usize..(children.first + children.taken) as usize
    }

    /// The bytes of all names taken.
    pub fn names_len(&self) -> usize {
        self.names.len()
    }
}

/// What the walk offers its caller, in breadth-first order.
pub struct Offer<'a> {
    pub name: &'a [u8],
    pub depth: usize,
}

/// What `take` could take at most: entries, and bytes where each entry weighs at least
/// `Capacity::weight` (its name three times, as a reply shows a name in its text and its
/// structured form, plus `ENTRY_BYTES`).
#[derive(Clone, Copy, Debug)]
pub struct Capacity {
    pub entries: usize,
    pub bytes: usize,
}

impl Capacity {
    /// The least an entry named `name` can cost its caller.
    pub const ENTRY_BYTES: usize = 48;

    pub fn weight(name: &[u8]) -> usize {
        3 * name.len() + Capacity::ENTRY_BYTES
    }
}

/// Walks `root` breadth-first, offering each entry to `take` until it refuses one: that entry
/// and all after it are left out. `room` is what `take` could take at most, so that a directory
/// of millions (or of long names) is never held whole when only its first names can be taken;
/// the walk stops at `u32::MAX - 1` entries whatever `take` says.
pub fn breadth_first(
    root: &ResolvedPath,
    options: &WalkOptions<'_>,
    room: Capacity,
    mut take: impl FnMut(&Offer<'_>) -> bool,
) -> io::Result<Levels> {
    let handle = root.open_dir()?;
    let root_bytes = root.real.as_os_str().as_bytes();
    let walk = Walk {
        options,
        rel_start: root_bytes.len() + usize::from(!root_bytes.ends_with(b"/")),
        too_long: AtomicU64::new(0),
        hiding: Hiding::new(root),
    };
    let mut levels = Levels::default();
    // Per node, the `.gitignore` rules of the directory holding it, until it is read.
    let mut ignores: Vec<Option<Arc<Ignores>>> = Vec::new();
    let mut stopped = false;
    let max_depth = options.max_depth.unwrap_or(usize::MAX);
    if max_depth > 0 {
        let rules = options.respect_gitignore.then(|| Ignores::for_root(&handle, &root.real));
        let read = walk.read(&handle, &root.real, rules.as_deref(), room);
        let mut offered =
            Offered { levels: &mut levels, ignores: &mut ignores, stopped: &mut stopped };
        levels.root = offered.offer(None, read, rules.as_ref(), &mut take);
    }
    let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW;
    let mut i = 0;
    while i < levels.nodes.len() && !stopped && !walk.cancelled() {
        let node = levels.nodes[i];
        i += 1;
        if node.kind != Kind::Dir || node.depth() >= max_depth {
            continue;
        }
        let rel = rel_path(&levels, i - 1);
        let parent_rules = ignores.get_mut(i - 1).and_then(Option::take);
        let Ok(dir) = confined::open_beneath(handle.as_fd(), &rel, flags, Mode::empty()) else {
            // Unreadable, or no longer a directory: shown without entries, as the walk does.
            continue;
        };
        let path = root.real.join(&rel);
        let rules = parent_rules.map(|parent| Ignores::for_dir(&dir, &path, parent));
        let used = 3 * levels.names_len() + Capacity::ENTRY_BYTES * levels.nodes.len();
        let left = Capacity {
            entries: room.entries.saturating_sub(levels.nodes.len()),
            bytes: room.bytes.saturating_sub(used),
        };
        let read = walk.read(&dir, &path, rules.as_deref(), left);
        let mut offered =
            Offered { levels: &mut levels, ignores: &mut ignores, stopped: &mut stopped };
        let children = offered.offer(Some(i - 1), read, rules.as_ref(), &mut take);
        levels.nodes[i - 1].children = children;
    }
    // The directories taken after the stop are only peeked into: nearly all of a cut tree's
    // cost (990 of the 1,001 directories opened for the first 1,000 entries of the million
    // tree), so on every core.
    let peeks: Vec<(usize, PathBuf, Option<Arc<Ignores>>)> = (i..levels.nodes.len())
        .filter(|&j| levels.nodes[j].kind == Kind::Dir && levels.nodes[j].depth() < max_depth)
        .map(|j| (j, rel_path(&levels, j), ignores.get_mut(j).and_then(Option::take)))
        .collect();
    for (j, more) in walk.peek_all(&handle, &root.real, peeks) {
        levels.nodes[j].children.more = more;
    }
    levels.summary = Summary {
        too_long: walk.too_long.into_inner(),
        denied: walk.hiding.denied.into_inner(),
        unreadable: 0,
    };
    Ok(levels)
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// An index or length the walk keeps in 32 bits: the walk stops before `u32::MAX` entries,
/// and a name is at most 255 bytes.
fn index(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The path of node `i` below the root.
fn rel_path(levels: &Levels, i: usize) -> PathBuf {
    let mut names = Vec::new();
    let mut at = Some(i);
    while let Some(j) = at {
        names.push(std::ffi::OsStr::from_bytes(levels.name(&levels.nodes[j])));
        at = levels.nodes[j].parent();
    }
    names.iter().rev().collect()
}

struct Walk<'a, 's> {
    options: &'a WalkOptions<'s>,
    rel_start: usize,
    too_long: AtomicU64,
    hiding: Hiding<'a>,
}

/// A directory's entries as the walk reports them, sorted by name, the first its room could
/// take, and whether there were more.
struct Read {
    entries: First<ByName>,
    more: bool,
}

impl<'s> Walk<'_, 's> {
    fn cancelled(&self) -> bool {
        self.options.cancel.is_some_and(crate::progress::Cancel::is_cancelled)
    }

    fn admission<'b>(&'b self, path: &'b Path, ignores: Option<&'b Ignores>) -> Admission<'b, 's> {
        Admission {
            options: self.options,
            ignores,
            dir: path,
            rel_start: self.rel_start,
            too_long: &self.too_long,
            hiding: &self.hiding,
            count_hidden: true,
        }
    }

    /// Whether each directory (a node's index, its path below the root, its parent's
    /// `.gitignore` rules) holds an entry the walk would report, read no further than that
    /// takes (`peek`), on as many threads as there are cores.
    fn peek_all(
        &self,
        root: &OwnedFd,
        root_path: &Path,
        dirs: Vec<(usize, PathBuf, Option<Arc<Ignores>>)>,
    ) -> Vec<(usize, bool)> {
        let peek_one = |(j, rel, parent_rules): (usize, PathBuf, Option<Arc<Ignores>>)| {
            if self.cancelled() {
                return (j, false);
            }
            let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW;
            let Ok(dir) = confined::open_beneath(root.as_fd(), &rel, flags, Mode::empty()) else {
                // Unreadable, or no longer a directory: shown without entries, as the walk does.
                return (j, false);
            };
            let path = root_path.join(&rel);
            let rules = parent_rules.map(|parent| Ignores::for_dir(&dir, &path, parent));
            // Left-out entries met here are not counted: nothing near them is shown.
            let uncounted = AtomicU64::new(0);
            let admission = Admission {
                too_long: &uncounted,
                count_hidden: false,
                ..self.admission(&path, rules.as_deref())
            };
            let more =
                peek::has_entry(dir.as_fd(), |name, kind| admission.admit(name, kind).is_some());
            (j, more.unwrap_or(false))
        };
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
        // A thread is worth its start (tens of microseconds) only for a few dozen peeks.
        if threads < 2 || dirs.len() < 64 {
            return dirs.into_iter().map(peek_one).collect();
        }
        let jobs = Mutex::new(dirs.into_iter());
        let next = || lock(&jobs).next();
        let mut found = Vec::new();
        std::thread::scope(|scope| {
            let helpers: Vec<_> = (1..threads)
                .map(|_| scope.spawn(|| std::iter::from_fn(next).map(peek_one).collect::<Vec<_>>()))
                .collect();
            found.extend(std::iter::from_fn(next).map(peek_one));
            for helper in helpers {
                found
                    .extend(helper.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)));
            }
        });
        found
    }

    /// Reads the directory open as `dir`, at `path`, whose `.gitignore` rules are `rules`.
    fn read(&self, dir: &OwnedFd, path: &Path, rules: Option<&Ignores>, room: Capacity) -> Read {
        let admission = self.admission(path, rules);
        // Only the first names that fit the room can be offered: a huge directory, or one of
        // long names, is not held whole.
        let mut entries = First::new(ByName { room });
        let mut more = false;
        // Unreadable: what was read is reported, the rest skipped.
        let _ = confined::for_each_entry(dir.as_fd(), |name, kind| {
            if self.cancelled() {
                return;
            }
            let Some((_, kind)) = admission.admit(name, kind) else { return };
            if let Some(tally) = self.options.tally {
                tally.add_one();
            }
            entries.add(name.as_bytes(), kind, |_| more = true);
        });
        let entries = entries.finish(|_| more = true);
        Read { entries, more }
    }
}

/// A directory's first names (byte order: a name has no `/`, so this is `path_order`) as many
/// as `room` could take, and one more, to know that more exist.
struct ByName {
    room: Capacity,
}

impl ByName {
    /// Past this weight, what is held is trimmed.
    fn most(&self) -> usize {
        self.room.bytes.saturating_add(self.room.bytes / 4).max(1 << 20)
    }

    fn keep(&self) -> usize {
        self.room.entries.saturating_add(1)
    }
}

impl first::Room for ByName {
    type Key = Kind;

    fn order(&self, a: (&Kind, &[u8]), b: (&Kind, &[u8])) -> std::cmp::Ordering {
        a.1.cmp(b.1)
    }

    fn cost(&self, _: &Kind, name: &[u8]) -> usize {
        Capacity::weight(name)
    }

    fn fits(&self, taken: usize, used: usize, _: usize) -> bool {
        taken < self.keep() && used <= self.room.bytes
    }

    fn full(&self, held: usize, used: usize) -> bool {
        held >= self.keep().saturating_mul(2) || used >= self.most()
    }

    fn most_held(&self) -> (usize, usize) {
        let entries = self.keep().saturating_mul(2).min(self.most() / Capacity::ENTRY_BYTES);
        (entries + 1, self.most() / 3 + 1024)
    }
}

/// What `offer` adds to.
struct Offered<'l> {
    levels: &'l mut Levels,
    ignores: &'l mut Vec<Option<Arc<Ignores>>>,
    stopped: &'l mut bool,
}

impl Offered<'_> {
    /// Offers a directory's entries in order until one is refused, adding those taken; `rules`
    /// are the directory's `.gitignore` rules, which its subdirectories' entries answer to too.
    fn offer(
        &mut self,
        parent: Option<usize>,
        read: Read,
        rules: Option<&Arc<Ignores>>,
        take: &mut impl FnMut(&Offer<'_>) -> bool,
    ) -> Children {
        let levels = &mut *self.levels;
        let depth = parent.map_or(1, |p| levels.nodes[p].depth() + 1);
        let first = index(levels.nodes.len());
        let mut children = Children { first, taken: 0, more: read.more };
        for held in read.entries.held() {
            let (name, kind) = (read.entries.name(held), held.key);
            let full = levels.nodes.len() >= NO_PARENT as usize - 1;
            if *self.stopped || full || !take(&Offer { name, depth }) {
                *self.stopped = true;
                children.more = true;
                break;
            }
            let start = index(levels.names.len());
            levels.names.extend_from_slice(name);
            levels.nodes.push(Node {
                kind,
                depth: index(depth),
                parent: parent.map_or(NO_PARENT, index),
                name: (start, index(levels.names.len())),
                children: Children::default(),
            });
            if let Some(rules) = rules.filter(|_| kind == Kind::Dir) {
                self.ignores.resize(levels.nodes.len(), None);
                self.ignores[levels.nodes.len() - 1] = Some(Arc::clone(rules));
            }
            children.taken += 1;
        }
        children
    }
}
