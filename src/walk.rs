//! Finding files under a directory: the recursive walk every multi-file tool shares, and globs.
//!
//! The walk runs on all cores (ripgrep's `ignore` crate with its filters off), then sorts, so
//! results are stable: depth-first, siblings by name. It never follows a symlink: a link is
//! reported as a link and never descended, so a walk cannot leave its directory or loop.
//! Replay's own temp files are skipped. With `respect_gitignore`, `.gitignore` files and
//! `.git/info/exclude` inside the walked directory apply (never one above it: that could be
//! outside the allowed set), and `.git` itself is skipped. A walk given the call's `Cancel`
//! stops soon after it is set; one given a `Tally` counts the entries it reports.

use std::cmp::Ordering;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::sync::{Arc, Mutex};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use ignore::WalkState;

use crate::error::ToolError;
use crate::tools::write::TEMP_PREFIX;
use crate::tools::{Cancel, Progress};

/// What a walked entry is, without following symlinks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    File,
    Dir,
    Symlink,
}

/// One entry below the walk's root.
#[derive(Debug)]
pub struct Entry {
    /// The walker's own path (the root joined with `rel`), kept whole: one allocation per entry,
    /// and a file can be opened without joining again.
    path: PathBuf,
    /// Where `rel` starts in `path`.
    rel_start: usize,
    pub kind: EntryKind,
    /// 1 for the root's children.
    pub depth: usize,
}

impl Entry {
    /// Relative to the walk's root; never empty (the root itself is not reported).
    pub fn rel(&self) -> &Path {
        use std::os::unix::ffi::OsStrExt;
        Path::new(std::ffi::OsStr::from_bytes(&self.path.as_os_str().as_bytes()[self.rel_start..]))
    }

    /// The root joined with `rel`.
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn into_rel(self) -> PathBuf {
        self.rel().to_path_buf()
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

/// Work counted on several threads at once (entries walked, files searched) and reported as
/// progress. Counting is one atomic add, and `Progress`'s lock is taken only every
/// `Tally::STRIDE` units, so walker threads do not queue on it; when no one listens, nothing is
/// counted at all.
pub struct Tally<'a> {
    progress: &'a Progress,
    done: AtomicU64,
    /// The report's text for a count, e.g. "searched 1200 files".
    message: fn(u64) -> String,
}

impl<'a> Tally<'a> {
    const STRIDE: u64 = 32;

    pub fn new(progress: &'a Progress, message: fn(u64) -> String) -> Tally<'a> {
        Tally { progress, done: AtomicU64::new(0), message }
    }

    /// One more unit done.
    pub fn add_one(&self) {
        if !self.progress.wanted() {
            return;
        }
        let done = self.done.fetch_add(1, AtomicOrdering::Relaxed) + 1;
        if done % Self::STRIDE == 0 {
            self.progress.report(done, None, || (self.message)(done));
        }
    }
}

/// Every entry below `root`, sorted depth-first with siblings by name. Unreadable
/// directories are skipped, since one bad folder should not fail a search of a whole tree.
pub fn entries(root: &Path, options: &WalkOptions<'_>) -> Vec<Entry> {
    let collected: Arc<Mutex<Vec<Vec<Entry>>>> = Arc::default();
    visit(root, options, || {
        let mut batch = Batch { entries: Vec::new(), sink: Arc::clone(&collected) };
        move |entry| batch.entries.push(entry)
    });
    let batches = std::mem::take(&mut *collected.lock().unwrap_or_else(|e| e.into_inner()));
    // Batch by batch, each freed once copied: a big tree's entries are never held twice.
    let mut all: Vec<Entry> = Vec::with_capacity(batches.iter().map(Vec::len).sum());
    for batch in batches {
        all.extend(batch);
    }
    all.sort_unstable_by(|a, b| path_order(a.rel(), b.rel()));
    all
}

/// Calls a visitor for every entry below `root`, on all cores, in no particular order: one
/// visitor per walker thread, made by `make`, so each can keep its own buffers.
pub fn visit<'s, M, V>(root: &'s Path, options: &WalkOptions<'s>, mut make: M)
where
    M: FnMut() -> V,
    V: FnMut(Entry) + Send + 's,
{
    let (cancel, tally) = (options.cancel, options.tally);
    let mut builder = ignore::WalkBuilder::new(root);
    builder
        .standard_filters(false)
        .follow_links(false)
        .max_depth(options.max_depth)
        .threads(std::thread::available_parallelism().map_or(2, |n| n.get()));
    if options.respect_gitignore {
        builder.git_ignore(true).git_exclude(true).require_git(false).parents(false);
    }
    let filter_root = root.to_path_buf();
    let exclude = options.exclude.clone();
    let skip_git = options.respect_gitignore;
    builder.filter_entry(move |entry| {
        use std::os::unix::ffi::OsStrExt;
        let name = entry.file_name().as_bytes();
        if name.starts_with(TEMP_PREFIX.as_bytes()) || (skip_git && name == b".git") {
            return false;
        }
        if exclude.set.is_none() {
            return true;
        }
        match entry.path().strip_prefix(&filter_root) {
            Ok(rel) if !rel.as_os_str().is_empty() => !exclude.excludes(rel),
            _ => true,
        }
    });
    let rel_start = {
        use std::os::unix::ffi::OsStrExt;
        let root = root.as_os_str().as_bytes();
        root.len() + usize::from(!root.ends_with(b"/"))
    };
    builder.build_parallel().run(|| {
        let mut visitor = make();
        Box::new(move |result| {
            if cancel.is_some_and(Cancel::is_cancelled) {
                return WalkState::Quit;
            }
            let Ok(entry) = result else { return WalkState::Continue };
            if entry.depth() == 0 {
                return WalkState::Continue;
            }
            let Some(file_type) = entry.file_type() else { return WalkState::Continue };
            let kind = if file_type.is_symlink() {
                EntryKind::Symlink
            } else if file_type.is_dir() {
                EntryKind::Dir
            } else {
                EntryKind::File
            };
            let depth = entry.depth();
            let path = entry.into_path();
            // The walker builds every path by joining names onto the root as given.
            debug_assert!(path.starts_with(root));
            if let Some(tally) = tally {
                tally.add_one();
            }
            visitor(Entry { path, rel_start, kind, depth });
            WalkState::Continue
        })
    });
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
    a.iter().map(|&x| key(x)).cmp(b.iter().map(|&x| key(x)))
}

/// Exclusion globs. A glob excludes an entry when it matches the entry's path relative to the
/// walked directory or its basename, so both `target` and `**/*.log` work as users expect; an
/// excluded directory is not descended into.
#[derive(Default, Clone)]
pub struct Exclude {
    set: Option<Arc<GlobSet>>,
}

impl Exclude {
    pub fn new(globs: &[String]) -> Result<Exclude, ToolError> {
        if globs.is_empty() {
            return Ok(Exclude { set: None });
        }
        Ok(Exclude { set: Some(Arc::new(glob_set("excludeGlobs", globs)?)) })
    }

    pub fn excludes(&self, rel: &Path) -> bool {
        let Some(set) = &self.set else { return false };
        set.is_match(rel) || rel.file_name().is_some_and(|name| set.is_match(name))
    }
}

/// Glob metacharacters, as the contract lists them: a path with one of them is a pattern.
pub fn is_glob(s: &str) -> bool {
    s.contains(['*', '?', '{', '}', '['])
}

/// Splits a glob into the literal directory it starts with and the pattern below it:
/// `/src/app/**/*.rs` → (`/src/app`, `**/*.rs`). The base is empty for a pattern whose first
/// component is already a pattern (`*.rs`).
pub fn split_glob(pattern: &str) -> (PathBuf, String) {
    let mut base = PathBuf::new();
    let mut rest: Vec<String> = Vec::new();
    for c in Path::new(pattern).components() {
        let part = c.as_os_str().to_string_lossy().into_owned();
        if rest.is_empty() && !is_glob(&part) {
            match c {
                Component::RootDir => base.push("/"),
                _ => base.push(&part),
            }
        } else {
            rest.push(part);
        }
    }
    if rest.is_empty() {
        // No metacharacter at all: the whole thing is a literal path.
        let name = base.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        base.pop();
        return (base, name);
    }
    (base, rest.join("/"))
}

/// Compiles patterns matched against paths relative to a walk root. `*` and `?` stay within
/// one path component; `**` crosses components. Matching is case-sensitive, as Linux names are.
pub fn glob_set(field: &str, patterns: &[String]) -> Result<GlobSet, ToolError> {
    let mut set = GlobSetBuilder::new();
    for pattern in patterns {
        let glob = GlobBuilder::new(pattern)
            .literal_separator(true)
            .backslash_escape(true)
            .empty_alternates(true)
            .build()
            .map_err(|e| {
                ToolError::invalid_params(field, format!("has an invalid glob {pattern:?}: {e}"))
            })?;
        set.add(glob);
    }
    set.build().map_err(|e| ToolError::invalid_params(field, e.to_string()))
}

#[cfg(test)]
mod tests;
