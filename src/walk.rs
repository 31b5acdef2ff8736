//! Finding files under a directory: the recursive walk every multi-file tool shares, and globs.
//!
//! The walk runs on all cores, then sorts, so results are stable: depth-first, siblings by
//! name. It never follows a symlink: a link is reported as a link and never descended, so a walk
//! cannot leave its directory or loop. Every directory is opened relative to its parent's
//! handle with `O_NOFOLLOW` (`policy::confined`), starting from the root's handle, so a
//! directory swapped for a symlink while the walk runs fails to open instead of leading out;
//! a visitor opens a file the same way, through [`Entry::open`].
//!
//! Replay's own temp files are skipped. With `respect_gitignore`, `.gitignore` files and
//! `.git/info/exclude` inside the walked directory apply (never one above it: that could be
//! outside the allowed set), and `.git` itself is skipped. A walk given the call's `Cancel`
//! stops soon after it is set; one given a `Tally` counts the entries it reports.
//!
//! An entry a deny rule of the policy matches (`policy::deny`) is neither reported nor
//! entered, only counted ([`Summary`]), so no tool that walks ever sees a hidden secret.
//!
//! An entry whose path is longer than 4096 bytes is neither reported nor entered, only counted
//! ([`Summary`]): no tool argument can name it (the policy refuses longer paths), and a tree
//! 20,000 levels deep would otherwise cost its depth squared in path bytes (400 MB).

pub mod filter;
pub mod first;
mod gitignore;
pub mod glob;
pub mod levels;
mod peek;

#[cfg(test)]
mod tests;

use std::cmp::Ordering;
use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::sync::{Arc, Condvar, Mutex};

use crate::fs::atomic::TEMP_PREFIX;
use crate::policy::confined::{self, Kind};
use crate::policy::deny::DenyRules;
use crate::policy::{ResolvedPath, MAX_PATH_BYTES};
use crate::progress::{Cancel, Tally};

use gitignore::Ignores;
use glob::Exclude;

/// One entry below the walk's root.
#[derive(Debug)]
pub struct Entry {
    /// The walker's own path (the root joined with `rel`), kept whole: one allocation per entry,
    /// and a file can be named without joining again.
    path: PathBuf,
    /// Where `rel` starts in `path`.
    rel_start: usize,
    /// What the entry is, without following symlinks. The walk reports a device, FIFO or
    /// socket as `File`, never `Other`, so the searches list them with the files.
    pub kind: Kind,
    /// The directory holding the entry, while the walk runs: what [`Entry::open`] opens it in.
    /// Collected entries drop it, so a big tree does not hold a handle per directory.
    dir: Option<Arc<OwnedFd>>,
}

impl Entry {
    /// Relative to the walk's root; never empty (the root itself is not reported).
    pub fn rel(&self) -> &Path {
        Path::new(std::ffi::OsStr::from_bytes(&self.path.as_os_str().as_bytes()[self.rel_start..]))
    }

    pub fn into_rel(self) -> PathBuf {
        self.rel().to_path_buf()
    }

    /// Opens the file for reading through its directory's handle, never through a symlink and
    /// never blocking on a FIFO. Only while the walk runs (in a visitor).
    pub fn open(&self) -> io::Result<File> {
        let (Some(dir), Some(name)) = (&self.dir, self.path.file_name()) else {
            return Err(io::Error::other("the walk that found this entry is over"));
        };
        confined::open_file_at(dir.as_fd(), name)
    }
}

#[derive(Default, Clone)]
pub struct WalkOptions<'a> {
    pub respect_gitignore: bool,
    /// Deepest level reported (1 = the root's children only); `None` for all.
    pub max_depth: Option<usize>,
    /// Entries to leave out (and not descend into); see [`Exclude`].
    pub exclude: Exclude,
    /// The call's cancellation: once set, every walker thread quits at its next entry, and the
    /// walk returns what it has (a cancelled call's reply is never sent).
    pub cancel: Option<&'a Cancel>,
    /// Counts every entry reported, as progress.
    pub tally: Option<&'a Tally<'a>>,
}

/// What a walk left out, for the note a tool adds.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Summary {
    /// Entries not reported (nor entered) because their paths are over 4096 bytes.
    pub too_long: u64,
    /// Entries not reported (nor entered) because a deny rule matches them.
    pub denied: u64,
    /// Directories below the root that could not be opened or read to the end: what they hold
    /// is not reported. Counted by `visit` (for the move and copy check), not by the tree's
    /// breadth-first walk.
    pub unreadable: u64,
}

impl Summary {
    /// The note that says what was left out, when something was.
    pub fn note(&self) -> Option<String> {
        let long = (self.too_long > 0).then(|| {
            format!(
                "[{} entries left out, with everything below them: their paths are longer than \
                 {MAX_PATH_BYTES} bytes, longer than any path a tool takes]",
                self.too_long
            )
        });
        let denied = hidden_note(self.denied);
        match (long, denied) {
            (Some(long), Some(denied)) => Some(format!("{long}\n{denied}")),
            (long, denied) => long.or(denied),
        }
    }

    /// Adds what another walk left out.
    pub fn add(&mut self, other: Summary) {
        self.too_long += other.too_long;
        self.unreadable += other.unreadable;
        self.denied += other.denied;
    }
}

/// The note for `n` entries a deny rule left out, when there were any.
pub fn hidden_note(n: u64) -> Option<String> {
    (n > 0).then(|| {
        format!("[{n} entries left out by deny rules (secrets such as .env); see `replay sandbox`]")
    })
}

/// What a walk below `root` leaves out for the policy's deny rules: the rules, where the path
/// below the allowed directory starts in an entry's path, and the count.
pub(crate) struct Hiding<'a> {
    rules: &'a DenyRules,
    rel_start: usize,
    pub denied: AtomicU64,
}

impl Hiding<'_> {
    pub(crate) fn new(root: &ResolvedPath) -> Hiding<'_> {
        let (rules, allowed) = root.deny_rules();
        let bytes = allowed.as_os_str().as_bytes();
        Hiding {
            rules,
            rel_start: bytes.len() + usize::from(!bytes.ends_with(b"/")),
            denied: AtomicU64::new(0),
        }
    }

    /// Whether the entry at `path` (absolute, below the allowed directory) is left out;
    /// counted if it is and `count`.
    pub(crate) fn hides(&self, path: &Path, count: bool) -> bool {
        if self.rules.is_empty() {
            return false;
        }
        let bytes = path.as_os_str().as_bytes();
        let rel =
            Path::new(std::ffi::OsStr::from_bytes(bytes.get(self.rel_start..).unwrap_or(b"")));
        let hidden = self.rules.denies_entry(path, rel);
        if hidden && count {
            self.denied.fetch_add(1, AtomicOrdering::Relaxed);
        }
        hidden
    }
}

/// Every entry below `root`, sorted depth-first with siblings by name. Fails only when `root`
/// itself cannot be opened as a directory; unreadable directories below it are skipped, since
/// one bad folder should not fail a search of a whole tree.
pub fn entries(
    root: &ResolvedPath,
    options: &WalkOptions<'_>,
) -> io::Result<(Vec<Entry>, Summary)> {
    let collected: Arc<Mutex<Vec<Vec<Entry>>>> = Arc::default();
    let summary = visit(root, options, || {
        let mut batch = Batch { entries: Vec::new(), sink: Arc::clone(&collected) };
        move |mut entry: Entry| {
            entry.dir = None;
            batch.entries.push(entry)
        }
    })?;
    let batches = std::mem::take(&mut *collected.lock().unwrap_or_else(|e| e.into_inner()));
    // Batch by batch, each freed once copied: a big tree's entries are never held twice.
    let mut all: Vec<Entry> = Vec::with_capacity(batches.iter().map(Vec::len).sum());
    for batch in batches {
        all.extend(batch);
    }
    all.sort_unstable_by(|a, b| path_order(a.rel(), b.rel()));
    Ok((all, summary))
}

/// Calls a visitor for every entry below `root`, on all cores, in no particular order: one
/// visitor per walker thread, made by `make`, so each can keep its own buffers. Fails only when
/// `root` itself cannot be opened as a directory.
pub fn visit<'s, M, V>(
    root: &ResolvedPath,
    options: &WalkOptions<'s>,
    mut make: M,
) -> io::Result<Summary>
where
    M: FnMut() -> V,
    V: FnMut(Entry) + Send + 's,
{
    let handle = root.open_dir()?;
    let ignores = options.respect_gitignore.then(|| Ignores::for_root(&handle, &root.real));
    let root_path = root.real.as_os_str().as_bytes();
    let walker = Walker {
        options,
        rel_start: root_path.len() + usize::from(!root_path.ends_with(b"/")),
        queue: Mutex::new(Queue { jobs: Vec::new(), busy: 0, idle: 0 }),
        changed: Condvar::new(),
        too_long: AtomicU64::new(0),
        unreadable: AtomicU64::new(0),
        hiding: Hiding::new(root),
    };
    walker.push(Job { dir: DirToOpen::Open(handle), path: root.real.clone(), depth: 0, ignores });
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut visitors: Vec<V> = (0..threads).map(|_| make()).collect();
    let mine = visitors.pop();
    std::thread::scope(|scope| {
        for mut visitor in visitors {
            let walker = &walker;
            scope.spawn(move || walker.work(&mut visitor));
        }
        if let Some(mut visitor) = mine {
            walker.work(&mut visitor);
        }
    });
    Ok(Summary {
        too_long: walker.too_long.into_inner(),
        denied: walker.hiding.denied.into_inner(),
        unreadable: walker.unreadable.into_inner(),
    })
}

/// The walk's shared state: a stack of directories to read (depth-first, so few handles are
/// open at once) and how many threads are reading one.
struct Walker<'o, 's> {
    options: &'o WalkOptions<'s>,
    rel_start: usize,
    queue: Mutex<Queue>,
    changed: Condvar,
    /// Entries left out for their paths' length.
    too_long: AtomicU64,
    /// Directories that could not be opened or read to the end.
    unreadable: AtomicU64,
    hiding: Hiding<'o>,
}

struct Queue {
    jobs: Vec<Job>,
    /// Threads reading a directory (and so perhaps about to push more).
    busy: usize,
    /// Threads waiting for a job: only then is a push worth a wake-up, which costs a system
    /// call and, on another CPU, tens of microseconds.
    idle: usize,
}

/// A directory to read.
struct Job {
    dir: DirToOpen,
    /// Its path: the root's, joined with the names on the way.
    path: PathBuf,
    /// 0 for the root.
    depth: usize,
    ignores: Option<Arc<Ignores>>,
}

/// A directory is opened when its turn comes, not when it is found, so a wide directory does
/// not hold a handle for each of its subdirectories.
enum DirToOpen {
    Open(OwnedFd),
    In(Arc<OwnedFd>, OsString),
}

impl Walker<'_, '_> {
    fn push(&self, job: Job) {
        let mut queue = self.lock();
        queue.jobs.push(job);
        let wake = queue.idle > 0;
        drop(queue);
        if wake {
            self.changed.notify_one();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The next directory; `None` once the stack is empty and no thread can add to it.
    fn next(&self) -> Option<Job> {
        let mut queue = self.lock();
        loop {
            if let Some(job) = queue.jobs.pop() {
                queue.busy += 1;
                return Some(job);
            }
            if queue.busy == 0 {
                self.changed.notify_all();
                return None;
            }
            queue.idle += 1;
            queue = self.changed.wait(queue).unwrap_or_else(|e| e.into_inner());
            queue.idle -= 1;
        }
    }

    fn done(&self) {
        let mut queue = self.lock();
        queue.busy -= 1;
        if queue.busy == 0 && queue.jobs.is_empty() && queue.idle > 0 {
            self.changed.notify_all();
        }
    }

    fn cancelled(&self) -> bool {
        self.options.cancel.is_some_and(Cancel::is_cancelled)
    }

    fn work<V: FnMut(Entry)>(&self, visitor: &mut V) {
        while let Some(job) = self.next() {
            // Marks the job done even if the visitor panics, so the other threads do not wait
            // for it for ever and the panic reaches the call's `catch_unwind`.
            let _done = JobDone(self);
            if !self.cancelled() {
                self.read(job, visitor);
            }
        }
    }

    /// Reports a directory's entries and queues its subdirectories.
    fn read<V: FnMut(Entry)>(&self, job: Job, visitor: &mut V) {
        let options = self.options;
        let depth = job.depth + 1;
        if options.max_depth.is_some_and(|max| depth > max) {
            return;
        }
        let dir = match job.dir {
            DirToOpen::Open(fd) => fd,
            DirToOpen::In(parent, name) => match confined::open_subdir(parent.as_fd(), &name) {
                Ok(fd) => fd,
                // Gone, or no longer a directory: nothing to report.
                Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR)) => return,
                // Unreadable: skipped, and counted.
                Err(_) => {
                    self.unreadable.fetch_add(1, AtomicOrdering::Relaxed);
                    return;
                }
            },
        };
        let dir = Arc::new(dir);
        let ignores = match job.ignores {
            Some(parent) if job.depth > 0 => Some(Ignores::for_dir(&dir, &job.path, parent)),
            other => other,
        };
        let admission = Admission {
            options,
            ignores: ignores.as_deref(),
            dir: &job.path,
            rel_start: self.rel_start,
            too_long: &self.too_long,
            hiding: &self.hiding,
            count_hidden: true,
        };
        // Unreadable: what was read is reported, the rest skipped, and counted.
        let listed = confined::for_each_entry(dir.as_fd(), |name, kind| {
            if self.cancelled() {
                return;
            }
            let Some((path, kind)) = admission.admit(name, kind) else { return };
            let entry = Entry { path, rel_start: self.rel_start, kind, dir: None };
            if kind == Kind::Dir && options.max_depth.is_none_or(|max| depth < max) {
                self.push(Job {
                    dir: DirToOpen::In(Arc::clone(&dir), name.to_os_string()),
                    path: entry.path.clone(),
                    depth,
                    ignores: ignores.clone(),
                });
            }
            if let Some(tally) = options.tally {
                tally.add_one();
            }
            visitor(Entry { dir: Some(Arc::clone(&dir)), ..entry });
        });
        if listed.is_err() {
            self.unreadable.fetch_add(1, AtomicOrdering::Relaxed);
        }
    }
}

/// What decides whether a walk reports an entry of one directory: replay's temp files,
/// `.git` under `respectGitignore`, paths over 4096 bytes (counted), deny rules (counted),
/// `excludeGlobs` and the `.gitignore` rules are left out, with everything below them.
struct Admission<'a, 's> {
    options: &'a WalkOptions<'s>,
    ignores: Option<&'a Ignores>,
    /// The directory's path: the walk's root's, joined with the names on the way.
    dir: &'a Path,
    /// Where the path below the walk's root starts in `dir`'s children's paths.
    rel_start: usize,
    too_long: &'a AtomicU64,
    hiding: &'a Hiding<'a>,
    /// Whether a hidden entry counts (not when only peeking into a directory).
    count_hidden: bool,
}

impl Admission<'_, '_> {
    /// The entry's path and kind, when the walk reports it.
    fn admit(&self, name: &std::ffi::OsStr, kind: Kind) -> Option<(PathBuf, Kind)> {
        let bytes = name.as_bytes();
        if bytes.starts_with(TEMP_PREFIX.as_bytes())
            || (self.options.respect_gitignore && bytes == b".git")
        {
            return None;
        }
        let kind = match kind {
            Kind::Dir => Kind::Dir,
            Kind::Symlink => Kind::Symlink,
            Kind::File | Kind::Other => Kind::File,
        };
        let path = self.dir.join(name);
        if path.as_os_str().len() > MAX_PATH_BYTES {
            self.too_long.fetch_add(1, AtomicOrdering::Relaxed);
            return None;
        }
        if self.hiding.hides(&path, self.count_hidden) {
            return None;
        }
        let rel =
            Path::new(std::ffi::OsStr::from_bytes(&path.as_os_str().as_bytes()[self.rel_start..]));
        if self.options.exclude.excludes(rel) {
            return None;
        }
        if self.ignores.is_some_and(|i| i.ignores(&path, kind == Kind::Dir)) {
            return None;
        }
        Some((path, kind))
    }
}

struct JobDone<'w, 'o, 's>(&'w Walker<'o, 's>);

impl Drop for JobDone<'_, '_, '_> {
    fn drop(&mut self) {
        self.0.done();
    }
}

/// A walker thread's entries; handed over when the thread's visitor is dropped.
struct Batch {
    entries: Vec<Entry>,
    sink: Arc<Mutex<Vec<Vec<Entry>>>>,
}

impl Drop for Batch {
    fn drop(&mut self) {
        let entries = std::mem::take(&mut self.entries);
        self.sink.lock().unwrap_or_else(|e| e.into_inner()).push(entries);
    }
}

/// Depth-first order with siblings by name: byte order where `/` sorts before every other
/// byte, which is the same as comparing component by component, only cheaper.
pub fn path_order(a: &Path, b: &Path) -> Ordering {
    use std::os::unix::ffi::OsStrExt;
    let key = |byte: u8| if byte == b'/' { 0 } else { u16::from(byte) + 1 };
    let (a, b) = (a.as_os_str().as_bytes(), b.as_os_str().as_bytes());
    // Only the first byte that differs decides: the common prefix is skipped 32 bytes at a
    // time, each step one `memcmp`. Paths in one tree share long prefixes (thousands of bytes
    // deep down), and a byte-by-byte comparison made sorting them the bulk of a search.
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 32 <= n && a[i..i + 32] == b[i..i + 32] {
        i += 32;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    match (a.get(i), b.get(i)) {
        (Some(&x), Some(&y)) => key(x).cmp(&key(y)),
        _ => a.len().cmp(&b.len()),
    }
}
