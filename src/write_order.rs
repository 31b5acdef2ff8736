//! Write ordering, in one place: the turns that order the calls changing files, the keys each
//! call takes its turn on, and the gate a tool's change passes when it becomes visible.
//!
//! A call that changes files waits for the earlier calls still in flight whose
//! targets overlap its own, and for no other, in arrival order. Pipelined edits of one file
//! apply one after another, in the order sent, while a write to another file never waits
//! behind a long edit.
//!
//! A target is keyed twice, so that no spelling of a path escapes its turn: by the client's
//! path made absolute and lexically normalized (`a/../f` is `f`), and by where the policy
//! resolves it, every symlink followed (a symlinked parent, or a link to the file, lands on the
//! file itself). Two keys overlap when one is the other or lies inside it, by path components.
//! A path the policy cannot resolve is keyed as `/`, which overlaps everything: such a call
//! fails anyway, and must not run beside a call that could make the path resolve. A change to
//! the tree between the keying and the call is made by an earlier writer, whose own targets
//! overlap the paths it changes, so the later call waits for it.
//!
//! A call takes a turn when it changes files: a tool whose annotations say `readOnlyHint:
//! false` and not open-world, and not a dryRun. Reads and execute_command never wait. A writer
//! that has begun its change keeps its turn until the change is made, and one cancelled before
//! that never makes it (`progress::WriteTurn`). edit_files refuses a glob match that a symlink
//! leads out of the glob's directory, since its turn covers only that directory. write_file and
//! edit_file end their turn once the new file is renamed into place, before the directory's
//! fsync, so the next writer of the file runs its fsyncs beside that one.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::sync::watch;

use crate::policy::Policy;
use crate::progress::Cancel;
use crate::walk;

/// A poisoned lock is still used: a panic in one call must not stop the others' turns.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// The writers in flight, by arrival.
#[derive(Default)]
pub struct Turns(Mutex<Table>);

#[derive(Default)]
struct Table {
    next: u64,
    writers: HashMap<u64, Writer>,
    /// For each key, the writers in flight on exactly it, oldest first.
    by_key: BTreeMap<PathBuf, Vec<u64>>,
}

struct Writer {
    keys: Vec<PathBuf>,
    /// The call passed its waits and started: a cancel releases it at once.
    running: bool,
    /// The call is making its change visible (`WriteTurn::begin`): a cancel no
    /// longer releases it, until the change is made (`cancelled_meanwhile`).
    committing: bool,
    /// A cancel came while committing: `made` releases the turn.
    cancelled_meanwhile: bool,
    /// Dropped when the writer is released, which wakes those waiting for it.
    done: watch::Sender<()>,
}

/// A file-changing call's place in line: the writers it waits for, taken when its line is
/// read. Dropping it lets the writers behind it go.
pub struct Turn {
    turns: Arc<Turns>,
    seq: u64,
    /// The writers ahead, by arrival.
    ahead: Vec<u64>,
    waits: Vec<watch::Receiver<()>>,
}

impl Turns {
    /// Takes a turn on `keys`, behind every writer in flight on an overlapping key. Each key
    /// needs only the latest writer on it: that one in turn waits for those before it.
    pub fn take(self: &Arc<Self>, keys: Vec<PathBuf>) -> Turn {
        let mut table = lock(&self.0);
        let mut ahead = HashSet::new();
        for key in &keys {
            // The same path, and paths inside it: they sort right after it.
            let inside = table.by_key.range::<Path, _>((
                std::ops::Bound::Included(key.as_path()),
                std::ops::Bound::Unbounded,
            ));
            for (_, seqs) in inside.take_while(|(other, _)| other.starts_with(key)) {
                ahead.extend(seqs.last());
            }
            // Paths it lies inside.
            for outer in key.ancestors().skip(1) {
                ahead.extend(table.by_key.get(outer).and_then(|seqs| seqs.last()));
            }
        }
        let mut ahead: Vec<u64> = ahead.into_iter().collect();
        ahead.sort_unstable();
        let waits = ahead.iter().map(|seq| table.writers[seq].done.subscribe()).collect();
        let seq = table.next;
        table.next += 1;
        for key in &keys {
            table.by_key.entry(key.clone()).or_default().push(seq);
        }
        let (done, _) = watch::channel(());
        table.writers.insert(
            seq,
            Writer { keys, running: false, committing: false, cancelled_meanwhile: false, done },
        );
        Turn { turns: Arc::clone(self), seq, ahead, waits }
    }

    /// The call behind turn `seq` was cancelled: if it is running, its turn ends now, not
    /// when its work does, unless it is making its change visible (`WriteTurn::begin`), which
    /// it then does at once. (One still waiting ends its turn when its own waits are over.)
    pub fn cancelled(&self, seq: u64) {
        let mut table = lock(&self.0);
        let Some(writer) = table.writers.get_mut(&seq) else { return };
        if writer.committing {
            writer.cancelled_meanwhile = true;
        } else if writer.running {
            table.release(seq);
        }
    }
}

impl Table {
    fn release(&mut self, seq: u64) {
        let Some(writer) = self.writers.remove(&seq) else { return };
        for key in &writer.keys {
            if let Some(seqs) = self.by_key.get_mut(key) {
                seqs.retain(|&s| s != seq);
                if seqs.is_empty() {
                    self.by_key.remove(key);
                }
            }
        }
    }
}

impl Turn {
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// The running call's gate on this turn (`WriteTurn`).
    pub fn gate(&self) -> WriteTurn {
        WriteTurn(Some(Link { turns: Arc::clone(&self.turns), seq: self.seq }))
    }

    /// Whether the turn comes at once: no writer ahead.
    pub fn is_free(&self) -> bool {
        self.ahead.is_empty()
    }

    /// Waits until every writer ahead is done.
    pub async fn wait(&mut self) {
        for wait in &mut self.waits {
            // Nothing is ever sent: this returns when the writer is released.
            let _ = wait.changed().await;
        }
        self.waits.clear();
    }

    /// The call starts: from now on a cancel ends the turn at once. False, with the turn
    /// ended, if the call was cancelled while it waited.
    pub fn start(&self, cancel: &Cancel) -> bool {
        let mut table = lock(&self.turns.0);
        // Checked under the table's lock, as `Turns::cancelled` sets nothing without it: a
        // cancel comes either before this (and is seen) or after (and finds it running).
        if cancel.is_cancelled() {
            table.release(self.seq);
            return false;
        }
        if let Some(writer) = table.writers.get_mut(&self.seq) {
            writer.running = true;
        }
        true
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        lock(&self.turns.0).release(self.seq);
    }
}

/// An argument that names a path a writer changes: its write turn is keyed on it.
#[derive(Debug, Clone, Copy)]
pub enum Target {
    /// A string argument holding one path (`path`, `source`, `destination`).
    Path(&'static str),
    /// An array of globs: each keyed on the directory it expands under (edit_files' `paths`).
    GlobBases(&'static str),
    /// Paths a tool finds in its arguments itself (apply_patch: the patch's file headers).
    Found(fn(&Policy, &Value) -> Option<Vec<String>>),
}

/// Two `Found` targets are equal when they are the same function.
impl PartialEq for Target {
    fn eq(&self, other: &Target) -> bool {
        match (self, other) {
            (Target::Path(a), Target::Path(b)) | (Target::GlobBases(a), Target::GlobBases(b)) => {
                a == b
            }
            (Target::Found(a), Target::Found(b)) => std::ptr::fn_addr_eq(*a, *b),
            _ => false,
        }
    }
}

impl Eq for Target {}

/// The keys a call of a writer whose paths are in `targets` takes its turn on, from its
/// arguments `args`, or `None` when it takes none (a dryRun changes nothing). A target the
/// arguments do not give (they will fail validation) is keyed as `/`.
pub fn keys(policy: &Policy, targets: &[Target], args: &Value) -> Option<Vec<PathBuf>> {
    if args.get("dryRun") == Some(&Value::Bool(true)) {
        return None;
    }
    let targets = paths(policy, targets, args).unwrap_or_else(|| vec![String::from("/")]);
    let mut keys = Vec::with_capacity(2 * targets.len());
    for target in &targets {
        match policy.resolve_read(target) {
            Ok(resolved) => {
                keys.push(resolved.shown);
                keys.push(resolved.real);
            }
            Err(_) => keys.push(PathBuf::from("/")),
        }
    }
    keys.dedup();
    Some(keys)
}

/// The paths `targets` name in `args`, as the client wrote them: for globs, the directory each
/// expands under. `None` when the arguments do not say.
fn paths(policy: &Policy, targets: &[Target], args: &Value) -> Option<Vec<String>> {
    let mut paths = Vec::new();
    for target in targets {
        match *target {
            Target::Path(key) => paths.push(args.get(key)?.as_str()?.to_owned()),
            Target::GlobBases(key) => {
                for glob in args.get(key)?.as_array()? {
                    paths.push(glob_base(glob.as_str()?));
                }
            }
            Target::Found(find) => paths.extend(find(policy, args)?),
        }
    }
    Some(paths)
}

/// The directory a glob expands under (the pattern itself when it has no metacharacter).
fn glob_base(pattern: &str) -> String {
    if !walk::glob::is_glob(pattern) {
        return pattern.to_owned();
    }
    let (base, _) = walk::glob::split_glob(pattern);
    match base.to_str() {
        Some("") | None => ".".to_owned(),
        Some(base) => base.to_owned(),
    }
}

/// A file-changing call's gate on its write turn, for the moment its change becomes visible:
/// a rename over the target.
///
/// `begin` comes just before it: false when a cancel already gave the turn up, and the writer
/// behind may have gone, so the change must not be made (made after the writer behind, whose
/// reply had said it was done, it would undo that write). Once it said true, a cancel no
/// longer gives the turn up until the change is made: the rename follows at once.
///
/// `made_and_end` comes after a one-file writer's rename, before the directory's fsync, and
/// ends its turn: the calls behind it may go, and their fsyncs run beside its own, which the
/// disk's journal commits together; its reply still waits for its own. `made_and_hold` keeps
/// the turn (edit_files, with files to go, or a rename that failed), and a cancel may give it
/// up again (one that came meanwhile, at once).
///
/// A writer whose change is made step by step (move_file, delete_file, an append) runs it in
/// `keep_while`: a cancel then stops it at its next step, and its turn ends when it has, not
/// while it still changes files (a move across file systems must not remove its source after
/// a later write of the destination answered).
///
/// For a call that takes no turn, `begin` is true and the rest does nothing.
#[derive(Default)]
pub struct WriteTurn(Option<Link>);

struct Link {
    turns: Arc<Turns>,
    seq: u64,
}

impl WriteTurn {
    /// False when a cancel already released the turn.
    pub fn begin(&self) -> bool {
        let Some(link) = &self.0 else { return true };
        let mut table = lock(&link.turns.0);
        let Some(writer) = table.writers.get_mut(&link.seq) else { return false };
        writer.committing = true;
        true
    }

    /// Ends the turn before it is dropped (ending it again, or dropping it after, changes
    /// nothing).
    pub fn made_and_end(&self) {
        self.made(true);
    }

    /// Keeps the turn, or lets a cancel end it again: at once, if one came meanwhile.
    pub fn made_and_hold(&self) {
        self.made(false);
    }

    fn made(&self, end: bool) {
        let Some(link) = &self.0 else { return };
        let mut table = lock(&link.turns.0);
        let Some(writer) = table.writers.get_mut(&link.seq) else { return };
        writer.committing = false;
        if end || writer.cancelled_meanwhile {
            table.release(link.seq);
        }
    }

    /// `change` between `begin` and `made_and_hold`: `None`, and `change` not run, when a
    /// cancel already gave the turn up.
    pub fn keep_while<T>(&self, change: impl FnOnce() -> T) -> Option<T> {
        if !self.begin() {
            return None;
        }
        let made = change();
        self.made_and_hold();
        Some(made)
    }

    /// A one-file writer's rename (`fs::atomic::atomic_write`): run between `begin` and
    /// `made_and_end` when it succeeds (`made_and_hold` when it fails); `Interrupted`, and the
    /// rename not run, when a cancel already gave the turn up.
    pub fn rename_last(&self, rename: impl FnOnce() -> io::Result<()>) -> io::Result<()> {
        self.rename(rename, true)
    }

    /// The rename of one file of several (edit_files): the turn holds after it.
    pub fn rename_one_of_many(&self, rename: impl FnOnce() -> io::Result<()>) -> io::Result<()> {
        self.rename(rename, false)
    }

    fn rename(&self, rename: impl FnOnce() -> io::Result<()>, last: bool) -> io::Result<()> {
        if !self.begin() {
            return Err(io::Error::new(io::ErrorKind::Interrupted, "cancelled"));
        }
        let renamed = rename();
        self.made(last && renamed.is_ok());
        renamed
    }
}

#[cfg(test)]
mod tests;
