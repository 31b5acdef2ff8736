//! A change to several files that a crash leaves all old or all new: apply_patch's commit.
//!
//! `commit` works in steps, each durable (fsync'd) before the next:
//! 1. the server's journal (`<pid>.journal` in its state directory, opened at start) lists
//!    every target, the temp file its new content goes to and the backup that keeps its old
//!    content, marked `staging`;
//! 2. each new content is written to its temp file beside its target (the target's mode, xattrs
//!    and, where allowed, owner), and each existing target gets a hard link as its backup;
//! 3. the journal's state line is overwritten with `committed` in place: the commit point;
//! 4. each temp file is renamed over its target, each deleted target unlinked;
//! 5. the backups are removed, then the journal emptied.
//!
//! At the next start, `StateDir::recover` replays what a killed server left: a `staging` journal
//! is rolled back (its temp files and backups removed; no target was touched yet), a
//! `committed` one rolled forward (the temp files still there renamed, the deletions not yet
//! made made). Every step of either is idempotent, so a crash during recovery is recovered the
//! same way. A failure in step 4 while the server runs is rolled back from the backups.
//! Recovery trusts no path a journal names: each target is resolved again beneath the deepest
//! allowed root holding it, which must be read-write, through no symlink and under no deny
//! rule, and its temp file and backup must be `.replay-patch.<pid>.*` beside it; otherwise the
//! journal is refused and left in place, and the next one recovered. The state directory must
//! be a directory of this user's that no one else may write, and the tools and commands never
//! reach it (`DenyRules::with_private`).
//!
//! Two servers do not collide: each has its own journal (`<pid>.journal`) and holds an
//! exclusive `flock` on `<pid>.lock` while it runs; recovery takes only the journals whose lock
//! it can take, that is whose server is gone (a reused pid locks the same file, and recovers its
//! predecessor's journals itself, before it writes any).
//!
//! Every target comes resolved through the policy, with its slot (its directory opened beneath
//! its allowed root): while the server runs, each step goes through that handle, no path is
//! looked up again. The temp files and backups are siblings of their targets
//! (`.replay-patch.<pid>.<n>.<i>.new` / `.old`), so every rename stays within a directory and a
//! file system. Commits of one server take turns on its one journal.

use std::ffi::OsStr;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, FileExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use nix::errno::Errno;
use nix::fcntl::{openat, renameat, AtFlags, Flock, FlockArg, OFlag};
use nix::unistd::{linkat, unlinkat, UnlinkatFlags};

use crate::platform;
use crate::policy::confined::{self, Kind, Slot};
use crate::policy::deny::DenyRules;
use crate::policy::{deepest_root, Access, AllowedRoot};

/// The prefix of the temp files and backups a commit puts beside its targets.
pub const PATCH_PREFIX: &str = ".replay-patch.";
const MAGIC: &str = "replay-journal 1";
/// The state line, both spellings one length, so that the commit point is one 9-byte write in
/// place (within the file's first sector, which no file system tears).
const STAGING: &str = "staging  ";
const COMMITTED: &str = "committed";

/// One file's change: the target, resolved through the policy, as an absolute path (for the
/// journal, which recovery reads at the next start) and as its slot (its directory's handle,
/// which every step of this run goes through). A move is a write of the new path and a
/// deletion of the old.
#[derive(Debug)]
pub struct Change {
    pub path: PathBuf,
    pub slot: Slot,
    /// The new content; `None` deletes the target.
    pub content: Option<Vec<u8>>,
    /// The mode (less setuid and setgid) a new file gets, where no file is there to keep one
    /// of: a moved file's. `None`: 0666 less the umask.
    pub new_mode: Option<u32>,
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
    /// The backups are removed; the journal is not yet emptied.
    Cleaned,
}

/// The server's private state directory, locked as this process's for as long as it lives,
/// and this process's journal in it, opened at start: the kernel sandbox, applied after,
/// grants no path outside the allowed directories, but an open file stays writable. Commits
/// take turns on it.
#[derive(Debug)]
pub struct StateDir {
    dir: PathBuf,
    journal: Mutex<File>,
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
    RolledBack {
        journal: PathBuf,
    },
    RolledForward {
        journal: PathBuf,
    },
    /// Cut short while it was first written, before any file was staged: nothing to undo.
    Discarded {
        journal: PathBuf,
    },
    /// Not replayed, and left in place: a path it names lies outside the read-write
    /// directories, under a deny rule or behind a symlink, or is not a sibling this server
    /// would have written; or replaying it failed.
    Refused {
        journal: PathBuf,
        why: String,
    },
}

impl StateDir {
    /// Creates the directory (0700) if needed, locks it as this process's and opens its
    /// journal (`<pid>.journal`), leaving what a predecessor of the same pid wrote there for
    /// `recover`.
    pub fn open(dir: &Path) -> io::Result<StateDir> {
        fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
        private_dir(dir)?;
        let pid = std::process::id();
        // Held: another start recovering a dead server of this pid (for a moment), or a live
        // server of the same pid in another PID namespace (two containers with one home), for
        // which a blocking wait would hold this start until it exits. One second, then none.
        let mut lock = None;
        for _ in 0..100 {
            lock = take_lock(dir, pid, FlockArg::LockExclusiveNonblock)?;
            if lock.is_some() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let lock = lock.ok_or_else(|| {
            io::Error::other(format!(
                "{pid}.lock stayed held for a second, by a server with the same pid in another \
                 PID namespace or a start recovering one; give this server a state directory of \
                 its own (XDG_STATE_HOME)"
            ))
        })?;
        let journal = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(dir.join(format!("{pid}.journal")))?;
        Ok(StateDir { dir: dir.to_path_buf(), journal: Mutex::new(journal), _lock: lock })
    }

    /// The directory, as opened.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Recovers the journals of servers that are gone (this process's own pid included: it is a
    /// predecessor's), each rolled back or forward as its state says. Runs at start, before the
    /// sandbox: each path a journal names is resolved again beneath the read-write directories
    /// in `roots`, outside `deny`, through no symlink, or the journal is refused and left. One
    /// journal that cannot be replayed does not keep the others from being.
    pub fn recover(&self, roots: &[AllowedRoot], deny: &DenyRules) -> io::Result<Vec<Recovered>> {
        let own = std::process::id();
        let mut done = Vec::new();
        let all: Vec<_> = fs::read_dir(&self.dir)?
            .filter_map(|entry| entry.ok().map(|e| e.file_name()))
            .collect();
        let mut names: Vec<_> =
            all.iter().filter(|name| name.as_bytes().ends_with(b".journal")).cloned().collect();
        names.sort();
        // A lock without its journal (a server killed between making the two) is removed
        // when no one holds it.
        for pid in all.iter().filter_map(|name| pid_of(name, b".lock")) {
            let journal = self.dir.join(format!("{pid}.journal"));
            if pid != own && !journal.exists() {
                if let Ok(Some(_held)) = take_lock(&self.dir, pid, FlockArg::LockExclusiveNonblock)
                {
                    if !journal.exists() {
                        let _ = fs::remove_file(self.dir.join(format!("{pid}.lock")));
                    }
                }
            }
        }
        for name in names {
            let Some(pid) = pid_of(&name, b".journal") else { continue };
            let path = self.dir.join(&name);
            match self.recover_one(pid, own, &path, roots, deny) {
                Ok(Some(recovered)) => done.push(recovered),
                Ok(None) => {}
                Err(why) => done.push(Recovered::Refused { journal: path, why }),
            }
        }
        Ok(done)
    }

    /// One journal: `None` when its server still runs or it is empty; `Err` says why it was
    /// left in place.
    fn recover_one(
        &self,
        pid: u32,
        own: u32,
        path: &Path,
        roots: &[AllowedRoot],
        deny: &DenyRules,
    ) -> Result<Option<Recovered>, String> {
        // Another server's lock, held while it runs; ours is held already.
        let _held = if pid == own {
            None
        } else {
            match take_lock(&self.dir, pid, FlockArg::LockExclusiveNonblock) {
                Ok(Some(held)) => Some(held),
                Ok(None) => return Ok(None),
                Err(e) => return Err(format!("its lock: {e}")),
            }
        };
        let text = match fs::read(path) {
            Ok(text) => text,
            // Another server recovered it between the listing and the lock; the lock file this
            // one may have made again goes too.
            Err(e) if e.kind() == io::ErrorKind::NotFound && pid != own => {
                let _ = fs::remove_file(self.dir.join(format!("{pid}.lock")));
                return Ok(None);
            }
            Err(e) => return Err(format!("reading it: {e}")),
        };
        let recovered = if text.is_empty() {
            None
        } else {
            let journal = path.to_path_buf();
            Some(match parse_journal(&text) {
                Some(parsed) => {
                    let resolved = parsed
                        .entries
                        .iter()
                        .map(|entry| resolve(entry, pid, roots, deny))
                        .collect::<Result<Vec<_>, String>>()?;
                    if parsed.committed {
                        roll_forward(&resolved).map_err(|e| format!("rolling it forward: {e}"))?;
                        Recovered::RolledForward { journal }
                    } else {
                        roll_back(&resolved);
                        Recovered::RolledBack { journal }
                    }
                }
                None => Recovered::Discarded { journal },
            })
        };
        // An empty journal (a server that ended with no patch under way: every start finds
        // its predecessor's) needs no durable removal: back after a crash, it is empty again.
        // The directory's fsync was most of a start, 5 ms of 13 on this disk.
        let cleared = if pid == own {
            let journal = self.journal.lock().unwrap_or_else(|e| e.into_inner());
            journal.set_len(0).and_then(|()| journal.sync_all())
        } else {
            let removed = fs::remove_file(path);
            let _ = fs::remove_file(self.dir.join(format!("{pid}.lock")));
            if !text.is_empty() {
                sync_dir(&self.dir);
            }
            removed
        };
        cleared.map_err(|e| format!("clearing it: {e}"))?;
        Ok(recovered)
    }
}

/// Refuses a state directory that is not a directory (a symlink included) owned by this user
/// with no group or other write: whoever else may write it could plant a journal that this
/// user's next start replays.
fn private_dir(dir: &Path) -> io::Result<()> {
    let meta = fs::symlink_metadata(dir)?;
    let euid = nix::unistd::geteuid().as_raw();
    let why = if !meta.file_type().is_dir() {
        "is not a directory (a symlink is not followed)".to_string()
    } else if meta.uid() != euid {
        format!("belongs to uid {}, not to this user (uid {euid})", meta.uid())
    } else if meta.mode() & 0o022 != 0 {
        format!("is writable by others (mode {:o}): chmod 700 it", meta.mode() & 0o7777)
    } else {
        return Ok(());
    };
    Err(io::Error::new(io::ErrorKind::PermissionDenied, format!("the state directory {why}")))
}

/// One journal entry, resolved again at recovery: its directory opened beneath the deepest
/// allowed root holding it, through no symlink, and the names in it.
struct Resolved {
    dir: std::os::fd::OwnedFd,
    target: std::ffi::OsString,
    temp: Option<std::ffi::OsString>,
    backup: Option<std::ffi::OsString>,
}

/// `entry` as recovery may replay it, or why not: its target lies in a read-write root, under
/// no deny rule, reached through no symlink, and its temp file and backup are this journal's
/// server's siblings of it (`.replay-patch.<pid>.*` in the target's directory).
fn resolve(
    entry: &Entry,
    pid: u32,
    roots: &[AllowedRoot],
    deny: &DenyRules,
) -> Result<Resolved, String> {
    use std::path::Component;
    let target = &entry.target;
    let shown = target.display();
    let plain = target.is_absolute()
        && target.components().all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
    let (Some(dir), Some(name), true) = (target.parent(), target.file_name(), plain) else {
        return Err(format!("{shown} is not an absolute path to a file"));
    };
    let prefix = format!("{PATCH_PREFIX}{pid}.");
    let sibling = |path: &Option<PathBuf>| -> Result<Option<std::ffi::OsString>, String> {
        let Some(path) = path else { return Ok(None) };
        match (path.parent(), path.file_name()) {
            (Some(parent), Some(file))
                if parent == dir && file.as_bytes().starts_with(prefix.as_bytes()) =>
            {
                Ok(Some(file.to_os_string()))
            }
            _ => Err(format!("{} is not a {prefix}* file beside {shown}", path.display())),
        }
    };
    let (temp, backup) = (sibling(&entry.temp)?, sibling(&entry.backup)?);
    let root = deepest_root(roots, target)
        .map(|i| &roots[i])
        .filter(|root| root.access == Access::Write && root.path != *target)
        .ok_or_else(|| format!("{shown} is in no read-write allowed directory"))?;
    if let Some(rule) = deny.matching(&root.path, target) {
        return Err(format!("{shown} is denied by {rule}"));
    }
    let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
    let opened = nix::fcntl::open(&root.path, flags, nix::sys::stat::Mode::empty())
        .map_err(io::Error::from)
        .and_then(|root_fd| match dir.strip_prefix(&root.path) {
            Ok(rel) if rel.as_os_str().is_empty() => Ok(root_fd),
            Ok(rel) => {
                confined::open_beneath(root_fd.as_fd(), rel, flags, nix::sys::stat::Mode::empty())
            }
            Err(_) => Err(io::Error::from(Errno::EXDEV)),
        });
    let dir =
        opened.map_err(|e| format!("{} cannot be opened without a symlink: {e}", dir.display()))?;
    Ok(Resolved { dir, target: name.to_os_string(), temp, backup })
}

/// Opens `<pid>.lock` in `dir` and locks it as `how` says; `None` when another process holds
/// it (`LockExclusiveNonblock`). The locked file is checked to be the one the name still names:
/// recovery removes a dead server's lock file, and a lock on a removed file guards nothing.
fn take_lock(dir: &Path, pid: u32, how: FlockArg) -> io::Result<Option<Flock<File>>> {
    let path = dir.join(format!("{pid}.lock"));
    // Each round lost means another process removed the file meanwhile: a few at most.
    for _ in 0..100 {
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&path)?;
        let held = match Flock::lock(file, how) {
            Ok(held) => held,
            Err((_, Errno::EWOULDBLOCK)) => return Ok(None),
            Err((_, e)) => return Err(e.into()),
        };
        let locked = held.metadata()?;
        if fs::symlink_metadata(&path)
            .is_ok_and(|named| (named.dev(), named.ino()) == (locked.dev(), locked.ino()))
        {
            return Ok(Some(held));
        }
    }
    Err(io::Error::other(format!("{} keeps being replaced", path.display())))
}

/// The `<pid>` of `<pid><suffix>` (`.journal`, `.lock`).
fn pid_of(name: &OsStr, suffix: &[u8]) -> Option<u32> {
    std::str::from_utf8(name.as_bytes().strip_suffix(suffix)?).ok()?.parse().ok()
}

/// One target of a commit and its sibling files, as the journal records them.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    target: PathBuf,
    /// The new content's temp file; `None` for a deletion.
    temp: Option<PathBuf>,
    /// The old content's hard link; `None` where the target did not exist.
    backup: Option<PathBuf>,
}

impl Entry {
    fn temp_name(&self) -> Option<&OsStr> {
        self.temp.as_deref().and_then(Path::file_name)
    }

    fn backup_name(&self) -> Option<&OsStr> {
        self.backup.as_deref().and_then(Path::file_name)
    }
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
    let mut entries = Vec::with_capacity(changes.len());
    for (i, change) in changes.iter().enumerate() {
        let sibling = |kind: &str| {
            let name = format!("{PATCH_PREFIX}{pid}.{n}.{i}.{kind}");
            change.path.parent().map(|dir| dir.join(name))
        };
        let missing = || io::Error::new(io::ErrorKind::InvalidInput, "a target has no parent");
        let exists = change.slot.stat()?.is_some();
        entries.push(Entry {
            target: change.path.clone(),
            temp: match change.content {
                Some(_) => Some(sibling("new").ok_or_else(missing)?),
                None => None,
            },
            backup: if exists { Some(sibling("old").ok_or_else(missing)?) } else { None },
        });
    }

    let journal = state.journal.lock().unwrap_or_else(|e| e.into_inner());
    write_journal(&journal, &entries)?;
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
        for change in changes {
            let _ = nix::unistd::fsync(change.slot.dir.as_fd());
        }
        mark_committed(&journal)?;
        Ok(stop(Step::Committed))
    })();
    match staged {
        Ok(true) => return Ok(()),
        Ok(false) => {}
        Err(e) => {
            discard(&entries, changes);
            let _ = clear(&journal);
            return Err(e);
        }
    }

    for (i, (entry, change)) in entries.iter().zip(changes).enumerate() {
        if let Err(e) = apply_at(entry, change) {
            undo(&entries[..i + 1], &changes[..i + 1]);
            discard(&entries, changes);
            let _ = clear(&journal);
            return Err(e);
        }
        if stop(Step::Applied(i)) {
            return Ok(());
        }
    }
    for change in changes {
        let _ = nix::unistd::fsync(change.slot.dir.as_fd());
    }
    for (entry, change) in entries.iter().zip(changes) {
        if let Some(backup) = entry.backup_name() {
            let _ = unlinkat(change.slot.dir.as_fd(), backup, UnlinkatFlags::NoRemoveDir);
        }
    }
    if stop(Step::Cleaned) {
        return Ok(());
    }
    clear(&journal)
}

/// Writes the entry's temp file (mode, xattrs and owner of the target it replaces) and links
/// its backup, all in the target's directory handle.
fn stage(entry: &Entry, change: &Change) -> io::Result<()> {
    let dir = change.slot.dir.as_fd();
    let name = change.slot.name.as_os_str();
    let old = change.slot.stat()?;
    if let Some(old) = &old {
        if old.kind() != Kind::File {
            // The tool checked for a regular file: anything else was put there since.
            return Err(io::Error::from(Errno::ELOOP));
        }
    }
    if let (Some(temp), Some(content)) = (entry.temp_name(), &change.content) {
        let flags =
            OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let mode = if old.is_some() { 0o600 } else { 0o666 };
        let mut file = File::from(openat(dir, temp, flags, platform::mode(mode))?);
        if let Some(old) = &old {
            platform::set_xattrs(file.as_fd(), &old_xattrs(dir, name));
            // Only root may give a file away; for anyone else this fails and the owner is theirs.
            let _ = std::os::unix::fs::fchown(&file, Some(old.uid), Some(old.gid));
            file.set_permissions(fs::Permissions::from_mode(old.mode & super::KEPT_MODE_BITS))?;
        } else if let Some(mode) = change.new_mode {
            file.set_permissions(fs::Permissions::from_mode(mode & super::KEPT_MODE_BITS))?;
        }
        file.write_all(content)?;
        file.sync_all()?;
    }
    if let Some(backup) = entry.backup_name() {
        linkat(dir, name, dir, backup, AtFlags::empty())?;
    }
    Ok(())
}

/// The xattrs of the file a rewrite replaces: best effort, as `fs::atomic` keeps them.
fn old_xattrs(dir: BorrowedFd<'_>, name: &OsStr) -> Vec<(std::ffi::CString, Vec<u8>)> {
    let flags = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC;
    match openat(dir, name, flags, nix::sys::stat::Mode::empty()) {
        Ok(fd) => platform::kept_xattrs(fd.as_fd()),
        Err(_) => Vec::new(),
    }
}

/// Puts one entry's change in place through its directory handle.
fn apply_at(entry: &Entry, change: &Change) -> io::Result<()> {
    let dir = change.slot.dir.as_fd();
    let name = change.slot.name.as_os_str();
    match entry.temp_name() {
        Some(temp) => Ok(renameat(dir, temp, dir, name)?),
        None => Ok(unlinkat(dir, name, UnlinkatFlags::NoRemoveDir)?),
    }
}

/// Puts back the old state of entries already applied, from their backups, while the server
/// runs (a rename refused in step 4).
fn undo(entries: &[Entry], changes: &[Change]) {
    for (entry, change) in entries.iter().zip(changes) {
        let dir = change.slot.dir.as_fd();
        let name = change.slot.name.as_os_str();
        match entry.backup_name() {
            Some(backup) => {
                let _ = renameat(dir, backup, dir, name);
            }
            None => {
                let placed = entry
                    .temp_name()
                    .is_some_and(|temp| confined::stat_at(dir, temp) == Err(Errno::ENOENT));
                if placed {
                    let _ = unlinkat(dir, name, UnlinkatFlags::NoRemoveDir);
                }
            }
        }
    }
}

/// Removes this run's temp files and backups, through the directory handles.
fn discard(entries: &[Entry], changes: &[Change]) {
    for (entry, change) in entries.iter().zip(changes) {
        for sibling in [entry.temp_name(), entry.backup_name()].into_iter().flatten() {
            let _ = unlinkat(change.slot.dir.as_fd(), sibling, UnlinkatFlags::NoRemoveDir);
        }
    }
}

/// Puts one entry's change in place through its directory's handle, at recovery: idempotent,
/// for a crash during recovery to be recovered the same way.
fn apply(entry: &Resolved) -> io::Result<()> {
    let dir = entry.dir.as_fd();
    match &entry.temp {
        Some(temp) => match renameat(dir, temp.as_os_str(), dir, entry.target.as_os_str()) {
            Err(Errno::ENOENT) if confined::stat_at(dir, temp) == Err(Errno::ENOENT) => Ok(()),
            other => Ok(other?),
        },
        None => match unlinkat(dir, entry.target.as_os_str(), UnlinkatFlags::NoRemoveDir) {
            Err(Errno::ENOENT) => Ok(()),
            other => Ok(other?),
        },
    }
}

fn roll_forward(entries: &[Resolved]) -> io::Result<()> {
    for entry in entries {
        apply(entry)?;
    }
    for entry in entries {
        let _ = nix::unistd::fsync(entry.dir.as_fd());
    }
    for entry in entries {
        if let Some(backup) = &entry.backup {
            let _ = unlinkat(entry.dir.as_fd(), backup.as_os_str(), UnlinkatFlags::NoRemoveDir);
        }
    }
    Ok(())
}

/// Removes the temp files and backups: no target has changed yet.
fn roll_back(entries: &[Resolved]) {
    for entry in entries {
        for sibling in [&entry.temp, &entry.backup].into_iter().flatten() {
            let _ = unlinkat(entry.dir.as_fd(), sibling.as_os_str(), UnlinkatFlags::NoRemoveDir);
        }
    }
}

/// Makes a directory's entries durable: best effort, as a directory some file systems cannot
/// fsync still renames atomically.
fn sync_dir(dir: &Path) {
    if let Ok(dir) = File::open(dir) {
        let _ = dir.sync_all();
    }
}

/// The journal's text: `replay-journal 1`, the state line, then one line per entry
/// (`<target> <temp|-> <backup|->`, each path's bytes in hex), then `end`.
fn journal_text(committed: bool, entries: &[Entry]) -> String {
    let mut text = format!("{MAGIC}\n{}\n", if committed { COMMITTED } else { STAGING });
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
    text
}

/// Writes the `staging` journal into the (empty) journal file, durably. A crash while it is
/// written leaves a text without its `end` line, which recovery discards: nothing is staged
/// before this returns.
fn write_journal(file: &File, entries: &[Entry]) -> io::Result<()> {
    let text = journal_text(false, entries);
    file.set_len(0)?;
    file.write_all_at(text.as_bytes(), 0)?;
    file.sync_all()
}

/// The commit point: the state line overwritten in place, durably.
fn mark_committed(file: &File) -> io::Result<()> {
    file.write_all_at(COMMITTED.as_bytes(), MAGIC.len() as u64 + 1)?;
    file.sync_data()
}

/// Empties the journal: the commit is over.
fn clear(file: &File) -> io::Result<()> {
    file.set_len(0)?;
    file.sync_data()
}

/// The journal in `text`, or `None` for one cut short (or not replay's).
fn parse_journal(text: &[u8]) -> Option<Journal> {
    let text = std::str::from_utf8(text).ok()?;
    let mut lines = text.lines();
    if lines.next() != Some(MAGIC) {
        return None;
    }
    let committed = match lines.next() {
        Some(COMMITTED) => true,
        Some(STAGING) => false,
        _ => return None,
    };
    let mut entries = Vec::new();
    for line in lines.by_ref() {
        if line == "end" {
            return Some(Journal { committed, entries });
        }
        let fields: Vec<&str> = line.split(' ').collect();
        let [target, temp, backup] = fields[..] else { return None };
        let field = |f: &str| if f == "-" { Some(None) } else { unhex(f).map(Some) };
        entries.push(Entry { target: unhex(target)?, temp: field(temp)?, backup: field(backup)? });
    }
    None
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
