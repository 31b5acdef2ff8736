//! A change to several files that a crash leaves all old or all new: apply_patch's commit.
//!
//! `commit` works in steps, each durable (fsync'd) before the next:
//! 1. a journal in the server's state directory lists every target, the temp file its new
//!    content goes to and the backup that keeps its old content, marked `staging`;
//! 2. each new content is written to its temp file beside its target (the target's mode, xattrs
//!    and, where allowed, owner), and each existing target gets a hard link as its backup;
//! 3. the journal is rewritten as `committed`: the commit point;
//! 4. each temp file is renamed over its target, each deleted target unlinked;
//! 5. the backups are removed, then the journal.
//!
//! At the next start, `StateDir::recover` replays what a killed server left: a `staging` journal
//! is rolled back (its temp files and backups removed; no target was touched yet), a
//! `committed` one rolled forward (the temp files still there renamed, the deletions not yet
//! made made). Every step of either is idempotent, so a crash during recovery is recovered the
//! same way. A failure in step 4 while the server runs is rolled back from the backups.
//!
//! Two servers do not collide: each has its own journals (`<pid>.<n>.journal`) and holds an
//! exclusive `flock` on `<pid>.lock` while it runs; recovery takes only the journals whose lock
//! it can take, that is whose server is gone (a reused pid locks the same file, and recovers its
//! predecessor's journals itself, before it writes any).
//!
//! Paths are absolute and already resolved through the policy; the temp files and backups are
//! siblings of their targets (`.replay-patch.<pid>.<n>.<i>.new` / `.old`), so every rename stays
//! within a directory and a file system.

#![cfg_attr(not(test), expect(dead_code, reason = "apply_patch commits through it once wired"))]

use std::ffi::OsStr;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use nix::fcntl::{Flock, FlockArg};

use crate::platform;

/// The prefix of the temp files and backups a commit puts beside its targets.
pub const PATCH_PREFIX: &str = ".replay-patch.";
const MAGIC: &str = "replay-journal 1";

/// One file's change. A move is a `Write` of the new path and a `Delete` of the old.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// The file gets `content`, whether it exists or not.
    Write {
        path: PathBuf,
        content: Vec<u8>,
    },
    Delete {
        path: PathBuf,
    },
}

/// The steps of a commit, for `commit_until` to stop after (as a kill would).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The `staging` journal is durable.
    Planned,
    /// The `i`th change (0-based) is staged: its temp file written, its backup linked.
    Staged(usize),
    /// The `committed` journal is durable.
    Committed,
    /// The `i`th change is in place.
    Applied(usize),
    /// The backups are removed; the journal is not yet.
    Cleaned,
}

/// The server's private state directory, locked as this process's for as long as it lives.
#[derive(Debug)]
pub struct StateDir {
    dir: PathBuf,
    _lock: Flock<File>,
}

/// Where the state directory goes: `$XDG_STATE_HOME/replay`, else `~/.local/state/replay`,
/// per user as the XDG Base Directory spec places state that outlives a restart.
pub fn default_state_dir() -> Option<PathBuf> {
    state_dir_from(std::env::var_os("XDG_STATE_HOME"), std::env::var_os("HOME"))
}

/// `default_state_dir` from the two variables' values; a relative value is ignored, as the spec
/// says.
fn state_dir_from(
    xdg_state_home: Option<std::ffi::OsString>,
    home: Option<std::ffi::OsString>,
) -> Option<PathBuf> {
    let absolute =
        |value: std::ffi::OsString| Some(PathBuf::from(value)).filter(|p| p.is_absolute());
    if let Some(state) = xdg_state_home.and_then(absolute) {
        return Some(state.join("replay"));
    }
    Some(home.and_then(absolute)?.join(".local/state/replay"))
}

/// What recovery did with one journal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recovered {
    RolledBack { journal: PathBuf },
    RolledForward { journal: PathBuf },
}

impl StateDir {
    /// Creates the directory (0700) if needed and locks it as this process's.
    pub fn open(dir: &Path) -> io::Result<StateDir> {
        fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
        let lock = lock_file(dir, std::process::id())?;
        let lock =
            Flock::lock(lock, FlockArg::LockExclusive).map_err(|(_, e)| io::Error::from(e))?;
        Ok(StateDir { dir: dir.to_path_buf(), _lock: lock })
    }

    /// Recovers the journals of servers that are gone (this process's own pid included: they
    /// are a predecessor's), each rolled back or forward as its state says. A journal that
    /// cannot be read is left where it is and named in the error.
    pub fn recover(&self) -> io::Result<Vec<Recovered>> {
        let own = std::process::id();
        let mut done = Vec::new();
        let mut names: Vec<_> = fs::read_dir(&self.dir)?
            .filter_map(|entry| entry.ok().map(|e| e.file_name()))
            .filter(|name| name.as_bytes().ends_with(b".journal"))
            .collect();
        names.sort();
        for name in names {
            let Some(pid) = journal_pid(&name) else { continue };
            // Another server's lock, held while it runs; ours is held already.
            let _held = if pid == own {
                None
            } else {
                let lock = lock_file(&self.dir, pid)?;
                match Flock::lock(lock, FlockArg::LockExclusiveNonblock) {
                    Ok(held) => Some(held),
                    Err((_, nix::errno::Errno::EWOULDBLOCK)) => continue,
                    Err((_, e)) => return Err(e.into()),
                }
            };
            let path = self.dir.join(&name);
            let journal = read_journal(&path)?;
            if journal.committed {
                roll_forward(&journal.entries)?;
                done.push(Recovered::RolledForward { journal: path.clone() });
            } else {
                roll_back(&journal.entries);
                done.push(Recovered::RolledBack { journal: path.clone() });
            }
            fs::remove_file(&path)?;
            sync_dir(&self.dir);
        }
        Ok(done)
    }
}

fn lock_file(dir: &Path, pid: u32) -> io::Result<File> {
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(dir.join(format!("{pid}.lock")))
}

/// The `<pid>` of `<pid>.<n>.journal`.
fn journal_pid(name: &OsStr) -> Option<u32> {
    let name = name.to_str()?.strip_suffix(".journal")?;
    let (pid, n) = name.split_once('.')?;
    n.parse::<u64>().ok()?;
    pid.parse().ok()
}

/// One target of a commit and its sibling files.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    target: PathBuf,
    /// The new content's temp file; `None` for a deletion.
    temp: Option<PathBuf>,
    /// The old content's hard link; `None` where the target did not exist.
    backup: Option<PathBuf>,
}

struct Journal {
    committed: bool,
    entries: Vec<Entry>,
}

/// Makes every change, all or none, durably; see the module's doc.
pub fn commit(state: &StateDir, changes: &[Change]) -> io::Result<()> {
    commit_until(state, changes, |step| {
        kill_at(step);
        false
    })
}

/// For black-box crash tests: a debug build whose `REPLAY_JOURNAL_KILL_AT` names a step
/// (`planned`, `staged`, `committed`, `applied`, `cleaned`: the first of its kind) kills itself
/// with SIGKILL right after it, as a crash there would.
fn kill_at(step: Step) {
    if !cfg!(debug_assertions) {
        return;
    }
    let Some(wanted) = std::env::var_os("REPLAY_JOURNAL_KILL_AT") else { return };
    let name = match step {
        Step::Planned => "planned",
        Step::Staged(_) => "staged",
        Step::Committed => "committed",
        Step::Applied(_) => "applied",
        Step::Cleaned => "cleaned",
    };
    if wanted == name {
        let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGKILL);
    }
}

/// `commit`, stopping right after the step for which `stop` says true, with nothing cleaned up,
/// as if the process were killed there: what `recover` is tested on.
pub fn commit_until(
    state: &StateDir,
    changes: &[Change],
    mut stop: impl FnMut(Step) -> bool,
) -> io::Result<()> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let pid = std::process::id();
    let journal_path = state.dir.join(format!("{pid}.{n}.journal"));
    let mut entries = Vec::with_capacity(changes.len());
    for (i, change) in changes.iter().enumerate() {
        let target = match change {
            Change::Write { path, .. } | Change::Delete { path } => path,
        };
        let sibling = |kind: &str| {
            let name = format!("{PATCH_PREFIX}{pid}.{n}.{i}.{kind}");
            target.parent().map(|dir| dir.join(name))
        };
        let missing = || io::Error::new(io::ErrorKind::InvalidInput, "a target has no parent");
        let exists = fs::symlink_metadata(target).is_ok();
        entries.push(Entry {
            target: target.clone(),
            temp: match change {
                Change::Write { .. } => Some(sibling("new").ok_or_else(missing)?),
                Change::Delete { .. } => None,
            },
            backup: if exists { Some(sibling("old").ok_or_else(missing)?) } else { None },
        });
    }

    write_journal(&journal_path, false, &entries)?;
    if stop(Step::Planned) {
        return Ok(());
    }
    let staged = (|| -> io::Result<bool> {
        for (i, (entry, change)) in entries.iter().zip(changes).enumerate() {
            stage(entry, change)?;
            if stop(Step::Staged(i)) {
                return Ok(true);
            }
        }
        for dir in parents(&entries) {
            sync_dir(dir);
        }
        write_journal(&journal_path, true, &entries)?;
        Ok(stop(Step::Committed))
    })();
    match staged {
        Ok(true) => return Ok(()),
        Ok(false) => {}
        Err(e) => {
            roll_back(&entries);
            let _ = fs::remove_file(&journal_path);
            return Err(e);
        }
    }

    for (i, entry) in entries.iter().enumerate() {
        if let Err(e) = apply(entry) {
            undo(&entries[..i + 1]);
            roll_back(&entries);
            let _ = fs::remove_file(&journal_path);
            return Err(e);
        }
        if stop(Step::Applied(i)) {
            return Ok(());
        }
    }
    for dir in parents(&entries) {
        sync_dir(dir);
    }
    remove_backups(&entries);
    if stop(Step::Cleaned) {
        return Ok(());
    }
    fs::remove_file(&journal_path)?;
    sync_dir(&state.dir);
    Ok(())
}

/// Writes the entry's temp file (mode, xattrs and owner of the target it replaces) and links
/// its backup.
fn stage(entry: &Entry, change: &Change) -> io::Result<()> {
    let old = fs::symlink_metadata(&entry.target).ok();
    if let (Some(temp), Change::Write { content, .. }) = (&entry.temp, change) {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(if old.is_some() { 0o600 } else { 0o666 })
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(temp)?;
        if let Some(old) = &old {
            if let Ok(source) = File::open(&entry.target) {
                platform::set_xattrs(file.as_fd(), &platform::kept_xattrs(source.as_fd()));
            }
            // Only root may give a file away; for anyone else this fails and the owner is theirs.
            let _ = std::os::unix::fs::fchown(&file, Some(old.uid()), Some(old.gid()));
            file.set_permissions(fs::Permissions::from_mode(old.mode() & super::KEPT_MODE_BITS))?;
        }
        file.write_all(content)?;
        file.sync_all()?;
    }
    if let Some(backup) = &entry.backup {
        fs::hard_link(&entry.target, backup)?;
    }
    Ok(())
}

/// Puts one entry's change in place: idempotent, for recovery to repeat.
fn apply(entry: &Entry) -> io::Result<()> {
    match &entry.temp {
        Some(temp) => match fs::rename(temp, &entry.target) {
            Err(e) if e.kind() == io::ErrorKind::NotFound && !temp.exists() => Ok(()),
            other => other,
        },
        None => match fs::remove_file(&entry.target) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other,
        },
    }
}

/// Puts back the old state of entries already applied, from their backups, while the server
/// runs (a rename refused in step 4).
fn undo(entries: &[Entry]) {
    for entry in entries {
        match &entry.backup {
            Some(backup) => {
                let _ = fs::rename(backup, &entry.target);
            }
            None => {
                if entry.temp.as_ref().is_some_and(|temp| !temp.exists()) {
                    let _ = fs::remove_file(&entry.target);
                }
            }
        }
    }
}

fn roll_forward(entries: &[Entry]) -> io::Result<()> {
    for entry in entries {
        apply(entry)?;
    }
    for dir in parents(entries) {
        sync_dir(dir);
    }
    remove_backups(entries);
    Ok(())
}

/// Removes the temp files and backups: no target has changed yet.
fn roll_back(entries: &[Entry]) {
    for entry in entries {
        for sibling in [&entry.temp, &entry.backup].into_iter().flatten() {
            let _ = fs::remove_file(sibling);
        }
    }
}

fn remove_backups(entries: &[Entry]) {
    for backup in entries.iter().filter_map(|entry| entry.backup.as_ref()) {
        let _ = fs::remove_file(backup);
    }
}

/// The targets' directories, once each.
fn parents(entries: &[Entry]) -> Vec<&Path> {
    let mut dirs: Vec<&Path> = entries.iter().filter_map(|e| e.target.parent()).collect();
    dirs.sort();
    dirs.dedup();
    dirs
}

/// Makes a directory's entries (a rename, a new file) durable: best effort, as a directory
/// some file systems cannot fsync still renames atomically.
fn sync_dir(dir: &Path) {
    if let Ok(dir) = File::open(dir) {
        let _ = dir.sync_all();
    }
}

/// Writes the journal whole, through a temp file renamed over it, so it is never read torn:
/// `replay-journal 1`, `staging` or `committed`, then one line per entry
/// (`<target> <temp|-> <backup|->`, each path's bytes in hex), then `end`.
fn write_journal(path: &Path, committed: bool, entries: &[Entry]) -> io::Result<()> {
    let mut text = format!("{MAGIC}\n{}\n", if committed { "committed" } else { "staging" });
    for entry in entries {
        let field = |p: &Option<PathBuf>| p.as_deref().map_or("-".to_string(), hex);
        text.push_str(&format!(
            "{} {} {}\n",
            hex(&entry.target),
            field(&entry.temp),
            field(&entry.backup)
        ));
    }
    text.push_str("end\n");
    let temp = path.with_extension("journal-new");
    let mut file =
        OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&temp)?;
    file.write_all(text.as_bytes())?;
    file.sync_all()?;
    fs::rename(&temp, path)?;
    sync_dir(path.parent().unwrap_or(Path::new("/")));
    Ok(())
}

fn read_journal(path: &Path) -> io::Result<Journal> {
    let bad = || {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} is not a journal replay can read: left as it is", path.display()),
        )
    };
    let text = fs::read_to_string(path)?;
    let mut lines = text.lines();
    if lines.next() != Some(MAGIC) {
        return Err(bad());
    }
    let committed = match lines.next() {
        Some("committed") => true,
        Some("staging") => false,
        _ => return Err(bad()),
    };
    let mut entries = Vec::new();
    for line in lines.by_ref() {
        if line == "end" {
            return Ok(Journal { committed, entries });
        }
        let fields: Vec<&str> = line.split(' ').collect();
        let [target, temp, backup] = fields[..] else { return Err(bad()) };
        let field = |f: &str| if f == "-" { Ok(None) } else { unhex(f).map(Some).ok_or_else(bad) };
        entries.push(Entry {
            target: unhex(target).ok_or_else(bad)?,
            temp: field(temp)?,
            backup: field(backup)?,
        });
    }
    Err(bad())
}

fn hex(path: &Path) -> String {
    path.as_os_str().as_bytes().iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<PathBuf> {
    if text.len() % 2 != 0 || text.is_empty() {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect();
    Some(PathBuf::from(OsStr::from_bytes(&bytes?)))
}

#[cfg(test)]
mod tests;
