//! Write turns: a call that changes files waits for the earlier calls still in flight whose
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

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::sync::watch;

use crate::policy::Policy;
use crate::progress::{Cancel, TurnLink};
use crate::protocol::lock;
use crate::schema;
use crate::walk;

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
    /// The call is making its change visible (`progress::WriteTurn::begin`): a cancel no
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

    /// The running call's link to this turn (`progress::WriteTurn`).
    pub fn link(&self) -> Link {
        Link { turns: Arc::clone(&self.turns), seq: self.seq }
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

/// A turn as the tool that holds it sees it (`progress::WriteTurn`).
pub struct Link {
    turns: Arc<Turns>,
    seq: u64,
}

impl TurnLink for Link {
    /// False when a cancel already released the turn.
    fn begin(&self) -> bool {
        let mut table = lock(&self.turns.0);
        let Some(writer) = table.writers.get_mut(&self.seq) else { return false };
        writer.committing = true;
        true
    }

    /// Ends the turn before it is dropped (ending it again, or dropping it after, changes
    /// nothing), or lets a cancel end it again: at once, if one came meanwhile.
    fn made(&self, end: bool) {
        let mut table = lock(&self.turns.0);
        let Some(writer) = table.writers.get_mut(&self.seq) else { return };
        writer.committing = false;
        if end || writer.cancelled_meanwhile {
            table.release(self.seq);
        }
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        lock(&self.turns.0).release(self.seq);
    }
}

/// The keys a `tools/call` with `params` takes its turn on, or `None` when it takes none: it
/// changes no file (reads, `execute_command`, whose effects no path names, and dryRuns).
pub fn keys(policy: &Policy, params: &Value) -> Option<Vec<PathBuf>> {
    let name = params.get("name").and_then(Value::as_str)?;
    if !schema::find(name).is_some_and(|def| def.changes_files()) {
        return None;
    }
    let args = params.get("arguments").unwrap_or(&Value::Null);
    if args.get("dryRun") == Some(&Value::Bool(true)) {
        return None;
    }
    let targets = targets(name, args).unwrap_or_else(|| vec![String::from("/")]);
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

/// The paths a file-changing call names, as the client wrote them: for edit_files, the
/// directory each glob expands under. `None` when the arguments do not say (they will fail
/// validation), or for a writer this list does not know: the caller keys those coarsely.
fn targets(name: &str, args: &Value) -> Option<Vec<String>> {
    let field = |key: &str| args.get(key).and_then(Value::as_str).map(str::to_owned);
    match name {
        "write_file" | "create_directory" | "delete_file" | "edit_file" => {
            Some(vec![field("path")?])
        }
        "move_file" | "copy_file" => Some(vec![field("source")?, field("destination")?]),
        "edit_files" => {
            args.get("paths")?.as_array()?.iter().map(|path| path.as_str().map(glob_base)).collect()
        }
        _ => None,
    }
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

#[cfg(test)]
mod tests;
