//! The allowed-directories policy: the only place a client's path string becomes a filesystem path.
//!
//! Every tool argument that names a path goes through [`Policy::resolve_read`],
//! [`Policy::resolve_write`] or [`Policy::resolve_remove`]. Resolution is physical, like the
//! kernel's: the path is made absolute (relative paths against the project directory, `~` against
//! `$HOME`), then walked one component at a time, with every symlink of the existing part read and
//! spliced in, and `..` applied to the already-resolved prefix. Only then is the result compared
//! with the allowed roots, component by component (`Path::starts_with`, never a string prefix), so
//! `/x/allowed_evil` is not inside `/x/allowed`. Tools never act on the client's string, nor open
//! [`ResolvedPath::real`] (the resolved path, for comparing and naming) by path: they reach the
//! filesystem through a [`ResolvedPath`]'s methods, below.
//!
//! Inside the allowed directories, [`deny`] rules hide secrets (`.env`, keys): a path that one
//! matches, as the client named it or where it resolves to, is refused like an outside one,
//! with the rule named.
//!
//! The check runs before the filesystem is touched for the operation itself, so a path outside the
//! allowed set is refused whether or not it exists. The window between this check and the use of
//! the path (a component swapped for a symlink in between) is closed by [`confined`]: tools open,
//! create, rename and remove through a [`ResolvedPath`]'s methods, which the kernel keeps beneath
//! the root's handle, never by the path string.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::fmt;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

pub mod confined;
pub mod deny;

use crate::platform;
use confined::RootDir;
use deny::{DenyRule, DenyRules};

/// What a root lets a client do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
}

/// One directory the server may touch; `path` is canonical (absolute, no symlinks).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowedRoot {
    pub path: PathBuf,
    pub access: Access,
}

/// The index of the deepest of `roots` holding `path`, the one whose access counts: a read-only
/// folder inside a read-write root stays read-only, and a read-write folder inside a read-only
/// root is writable. The policy and the narrowing of client roots both choose this way.
pub fn deepest_root(roots: &[AllowedRoot], path: &Path) -> Option<usize> {
    roots
        .iter()
        .enumerate()
        .filter(|(_, r)| path.starts_with(&r.path))
        .max_by_key(|(_, r)| r.path.components().count())
        .map(|(i, _)| i)
}

/// `~` or `~/rest` as `home` or `home/rest`, when the home directory is known; any other path
/// as it is. The command line's directories and the clients' paths expand alike.
pub fn expand_home(raw: &str, home: Option<&Path>) -> PathBuf {
    match (home, Path::new(raw).strip_prefix("~")) {
        (Some(home), Ok(rest)) => home.join(rest),
        _ => PathBuf::from(raw),
    }
}

/// Why a path was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DenyReason {
    /// The resolved path lies in no allowed root; `real` is where it resolves to (or where its
    /// resolution had gone when it failed). For the tables only: the message never shows it, so
    /// that a refusal says nothing about what lies outside.
    Outside { real: PathBuf },
    /// A write under a root the user granted read access only.
    ReadOnly { root: PathBuf },
    /// Deleting or moving an allowed root itself.
    Root,
    /// Deleting or moving a directory that holds another allowed root.
    ContainsRoot { root: PathBuf },
    /// The string is not a usable path at all (empty, a NUL byte, too long).
    Invalid { detail: &'static str },
    /// A deny rule matches the path (as named, or where it resolves to) or a directory above
    /// it inside its root.
    Hidden { rule: DenyRule },
    /// A directory to move or copy that holds `n` entries a deny rule hides: under another
    /// name they could fall out from under a path rule, and a copy is a new file that the
    /// commands' namespace does not cover.
    HoldsHidden { n: u64 },
    /// A directory to move or copy holding `n` entries the check for hidden ones could not see
    /// (unreadable, or past the longest path): one of them might hold what a rule hides.
    HoldsUnseen { n: u64 },
}

/// A refused path: the client's path (absolute, lexically normalized) and the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denied {
    pub path: PathBuf,
    pub reason: DenyReason,
}

impl fmt::Display for Denied {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = self.path.display();
        match &self.reason {
            // Every outside path answers alike: where it leads, and whether it exists, is
            // outside information.
            DenyReason::Outside { .. } => {
                write!(f, "path not allowed: {path} is outside the allowed directories")
            }
            DenyReason::ReadOnly { root } => write!(
                f,
                "path not allowed: {path} is in the read-only directory {}; it can be read but not changed",
                root.display()
            ),
            DenyReason::Root => write!(
                f,
                "path not allowed: {path} is an allowed directory itself and cannot be deleted or moved"
            ),
            DenyReason::ContainsRoot { root } => write!(
                f,
                "path not allowed: {path} contains the allowed directory {}, which cannot be deleted or moved",
                root.display()
            ),
            DenyReason::Invalid { detail } => write!(f, "invalid path {path:?}: {detail}"),
            // The path lies inside the fence, so naming the rule tells nothing new.
            DenyReason::Hidden { rule } => write!(f, "path not allowed: {path} matches {rule}"),
            DenyReason::HoldsHidden { n } => write!(
                f,
                "path not allowed: {path} holds {n} entries that deny rules hide, which a move \
                 or copy could carry out from under their rules; move or copy the entries you \
                 need one by one"
            ),
            DenyReason::HoldsUnseen { n } => write!(
                f,
                "path not allowed: {path} holds {n} entries that cannot be read or whose paths \
                 are too long, so it cannot be checked for what deny rules hide, which a move or \
                 copy could carry out from under their rules; move or copy the entries you need \
                 one by one"
            ),
        }
    }
}

/// What a resolution does with a symlink as the path's last component: follow it (reads,
/// writes), or keep it, so that the link itself is what is named (removals, moves).
#[derive(Clone, Copy, PartialEq, Eq)]
enum LastLink {
    Follow,
    Keep,
}

/// A path that passed the policy. Tools reach it only through its methods (in `policy::confined`),
/// which open it beneath `root`'s handle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedPath {
    /// Where the path lands: absolute, every existing symlink resolved (for
    /// [`Policy::resolve_remove`], all but the last component). For comparing and naming, not
    /// for opening: the tree may change after the check.
    pub real: PathBuf,
    /// What responses show: the client's path made absolute and lexically normalized.
    pub shown: PathBuf,
    /// The access of the most specific root that holds `real`.
    pub access: Access,
    /// That root, with its handle.
    root: Arc<RootDir>,
    /// The policy's deny rules, which a walk below this path applies to what it finds.
    deny: Arc<DenyRules>,
    /// The command-line directory that holds `real`, which the deny rules count from.
    deny_root: PathBuf,
}

impl ResolvedPath {
    /// The deny rules, and the directory their paths are relative to.
    pub fn deny_rules(&self) -> (&DenyRules, &Path) {
        (&self.deny, &self.deny_root)
    }
}

/// Symlinks followed while resolving one path before giving up, as Linux's `MAXSYMLINKS`.
const MAX_SYMLINK_HOPS: usize = 40;
/// Longest path string accepted, as Linux's `PATH_MAX`.
pub const MAX_PATH_BYTES: usize = 4096;
/// Most allowed directories, from the command line or a client's roots. Each holds an open
/// handle and a Landlock rule, and every path is compared with each: thousands of them would
/// cost descriptors and time on every call, for no use a common parent would not serve.
pub const MAX_ROOTS: usize = 256;

#[derive(Debug, Clone, Default)]
pub struct Policy {
    roots: Vec<AllowedRoot>,
    /// A handle on each root, in the same order.
    handles: Vec<Arc<RootDir>>,
    home: Option<PathBuf>,
    deny: Arc<DenyRules>,
    /// The directories the deny rules count from: the ceiling's (the command line's, or the
    /// client's first roots when it had none). A client root inside a denied directory
    /// (`~/.aws`) narrows what is allowed but keeps `.aws/` matching above it.
    deny_roots: Arc<Vec<PathBuf>>,
}

impl Policy {
    /// `roots` must already be canonical; the first is the project directory. Each is opened
    /// here, once.
    pub fn new(roots: Vec<AllowedRoot>, home: Option<PathBuf>, deny: Arc<DenyRules>) -> Policy {
        let handles = roots.iter().map(|r| Arc::new(RootDir::open(&r.path))).collect();
        let deny_roots = Arc::new(roots.iter().map(|r| r.path.clone()).collect());
        Policy { roots, handles, home, deny, deny_roots }
    }

    /// The same policy over other roots (client roots narrowing the command line's). The deny
    /// rules keep counting from the ceiling; a policy without roots has none yet, and `roots`
    /// (a client's first) become it.
    pub fn with_roots(&self, roots: Vec<AllowedRoot>) -> Policy {
        let mut policy = Policy::new(roots, self.home.clone(), Arc::clone(&self.deny));
        if !self.deny_roots.is_empty() {
            policy.deny_roots = Arc::clone(&self.deny_roots);
        }
        policy
    }

    pub fn deny_rules(&self) -> &DenyRules {
        &self.deny
    }

    pub fn roots(&self) -> &[AllowedRoot] {
        &self.roots
    }

    /// The directory relative paths are resolved against: the first allowed root.
    pub fn project_dir(&self) -> Option<&Path> {
        self.roots.first().map(|r| r.path.as_path())
    }

    /// Where a command runs, and what a patch's relative paths are relative to, by default: the
    /// first read-write root, else the first root.
    pub fn working_root(&self) -> Option<&Path> {
        let root = self.roots.iter().find(|r| r.access == Access::Write).or(self.roots.first());
        root.map(|r| r.path.as_path())
    }

    /// A path to read, list or search: any allowed root will do.
    pub fn resolve_read(&self, raw: &str) -> Result<ResolvedPath, Denied> {
        let (shown, real) = self.resolve(raw, LastLink::Follow)?;
        self.contain(shown, real)
    }

    /// A path to create or overwrite: its root must be read-write.
    pub fn resolve_write(&self, raw: &str) -> Result<ResolvedPath, Denied> {
        let resolved = self.resolve_read(raw)?;
        self.require_write(resolved)
    }

    /// A directory entry to delete or move away. The last component is not followed, so a
    /// symlink names the link itself; the link must still point inside the allowed set. Roots,
    /// and directories that hold a root (a read-only one above all), are refused.
    pub fn resolve_remove(&self, raw: &str) -> Result<ResolvedPath, Denied> {
        let (shown, real) = self.resolve(raw, LastLink::Keep)?;
        let resolved = self.require_write(self.contain(shown.clone(), real)?)?;
        // Where a link points matters even though only the link is touched: a link to the
        // outside is refused by every tool, so that no tool treats it as usable.
        let (_, target) = self.resolve(raw, LastLink::Follow)?;
        if target != resolved.real {
            self.contain(shown.clone(), target)?;
        }
        if self.roots.iter().any(|r| r.path == resolved.real) {
            return Err(Denied { path: shown, reason: DenyReason::Root });
        }
        if let Some(inner) = self.roots.iter().find(|r| r.path.starts_with(&resolved.real)) {
            let reason = DenyReason::ContainsRoot { root: inner.path.clone() };
            return Err(Denied { path: shown, reason });
        }
        let moved = self.moved_read_only_roots().find(|(_, now)| now.starts_with(&resolved.real));
        if let Some((root, _)) = moved {
            let reason = DenyReason::ContainsRoot { root: root.clone() };
            return Err(Denied { path: shown, reason });
        }
        Ok(resolved)
    }

    fn require_write(&self, resolved: ResolvedPath) -> Result<ResolvedPath, Denied> {
        if resolved.access == Access::Write {
            let moved =
                self.moved_read_only_roots().find(|(_, now)| resolved.real.starts_with(now));
            let Some((root, _)) = moved else { return Ok(resolved) };
            let reason = DenyReason::ReadOnly { root: root.clone() };
            return Err(Denied { path: resolved.shown, reason });
        }
        let reason = DenyReason::ReadOnly { root: resolved.root.path.clone() };
        Err(Denied { path: resolved.shown, reason })
    }

    /// The read-only roots whose directory was renamed since the policy was built (a parent
    /// moved by a command or another process), with where each is now. A root is known by its
    /// path, so without this a read-only root carried into a read-write one by its parent's
    /// rename would take that root's access. One `fstat` and one path lookup per read-only
    /// root, for writes only.
    fn moved_read_only_roots(&self) -> impl Iterator<Item = (&PathBuf, PathBuf)> {
        self.roots
            .iter()
            .zip(&self.handles)
            .filter(|(root, _)| root.access == Access::Read)
            .filter_map(|(root, handle)| Some((&root.path, handle.moved_to()?)))
    }

    fn contain(&self, shown: PathBuf, real: PathBuf) -> Result<ResolvedPath, Denied> {
        let Some(i) = deepest_root(&self.roots, &real) else {
            return Err(Denied { path: shown, reason: DenyReason::Outside { real } });
        };
        // Both names count: a link `notes -> .env` resolves to a denied path, and a link
        // `.env -> config/prod` is named by one.
        let deny_root = self.deny_root(&real).unwrap_or(&self.roots[i].path).clone();
        let shown_root = self.deny_root(&shown);
        let hidden = self
            .deny
            .matching(&deny_root, &real)
            .or_else(|| shown_root.and_then(|root| self.deny.matching(root, &shown)));
        if let Some(rule) = hidden {
            let reason = DenyReason::Hidden { rule: rule.clone() };
            return Err(Denied { path: shown, reason });
        }
        let (access, root) = (self.roots[i].access, Arc::clone(&self.handles[i]));
        let deny = Arc::clone(&self.deny);
        Ok(ResolvedPath { access, real, shown, root, deny, deny_root })
    }

    /// The directory the deny rules count from for `path`: the outermost command-line
    /// directory that holds it, so that neither a client root nor a nested `--allow` starts
    /// the count below a denied directory (`--allow r --allow r/config:ro` keeps
    /// `config/prod.yaml` denied); else the outermost allowed root that holds it. Rules match
    /// at any depth, so counting from further out loses no match.
    fn deny_root(&self, path: &Path) -> Option<&PathBuf> {
        let depth = |r: &&PathBuf| r.components().count();
        let holding = self.deny_roots.iter().filter(|r| path.starts_with(r));
        holding.min_by_key(depth).or_else(|| {
            let roots = self.roots.iter().map(|r| &r.path).filter(|r| path.starts_with(r));
            roots.min_by_key(depth)
        })
    }

    /// Returns `(shown, real)`.
    fn resolve(&self, raw: &str, last: LastLink) -> Result<(PathBuf, PathBuf), Denied> {
        let invalid =
            |detail| Denied { path: PathBuf::from(raw), reason: DenyReason::Invalid { detail } };
        if raw.is_empty() {
            return Err(invalid("the path is empty"));
        }
        if raw.contains('\0') {
            return Err(invalid("the path contains a NUL byte"));
        }
        if raw.len() > MAX_PATH_BYTES {
            return Err(invalid("the path is longer than 4096 bytes"));
        }
        let absolute = self.absolute(raw);
        let shown = normalize_lexically(&absolute);
        if !absolute.is_absolute() {
            // Relative, and there is no project directory to anchor it: nothing is allowed.
            return Err(Denied {
                path: shown.clone(),
                reason: DenyReason::Outside { real: shown },
            });
        }
        let stays = |path: &Path| self.holds_or_leads_to_a_root(path);
        let follow_last = last == LastLink::Follow;
        let real = resolve_physically(&absolute, follow_last, &stays).map_err(|e| {
            // A resolution that failed outside (a symlink loop there, an unreadable link of
            // another user's process in /proc) is refused as any outside path is: its failure
            // would tell what lies there.
            let reason = match e.strayed {
                Some(real) => DenyReason::Outside { real },
                None => DenyReason::Invalid { detail: e.detail },
            };
            Denied { path: shown.clone(), reason }
        })?;
        // `file.txt/` names a directory: keep the slash so the OS answers "not a directory"
        // instead of quietly using the file.
        let real = if raw.ends_with('/') && real.parent().is_some() { real.join("") } else { real };
        Ok((shown, real))
    }

    /// Whether `path` lies in a root, or on the way to one (`/`, `/home` for `/home/me/proj`):
    /// the places a resolution passes through without having left the allowed set.
    fn holds_or_leads_to_a_root(&self, path: &Path) -> bool {
        self.roots.iter().any(|r| path.starts_with(&r.path) || r.path.starts_with(path))
    }

    fn absolute(&self, raw: &str) -> PathBuf {
        let path = expand_home(raw, self.home.as_deref());
        if path.is_absolute() {
            return path;
        }
        match self.project_dir() {
            Some(dir) => dir.join(path),
            None => path.to_path_buf(),
        }
    }
}

/// Removes `.` and applies `..` textually. Used for display only: it is not proof of containment,
/// since `..` after a symlink means the link target's parent.
pub fn normalize_lexically(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// A path that could not be resolved: why, and, when the walk had left the allowed set by then
/// (`stays` said no for a place it reached), the first such place.
#[derive(Debug, PartialEq, Eq)]
struct Unresolved {
    detail: &'static str,
    strayed: Option<PathBuf>,
}

/// Resolves `absolute` the way the kernel would: every symlink followed (the last one only when
/// `follow_last`), `..` applied to what the path really is at that point. `stays` tells the
/// places inside (or on the way to) the allowed set, for the error of a walk that fails.
fn resolve_physically(
    absolute: &Path,
    follow_last: bool,
    stays: &dyn Fn(&Path) -> bool,
) -> Result<PathBuf, Unresolved> {
    kernel_resolved(absolute, follow_last)
        .map_or_else(|| walk_physically(absolute, follow_last, stays), Ok)
}

/// The fast way, for a path that exists: the kernel resolves it, and says where it landed, in
/// a few system calls at any depth, where the walk takes one per component. `None` when that
/// cannot answer; the walk then decides.
#[cfg(target_os = "linux")]
fn kernel_resolved(absolute: &Path, follow_last: bool) -> Option<PathBuf> {
    resolved_by_handle(absolute, follow_last)
}

#[cfg(not(target_os = "linux"))]
fn kernel_resolved(absolute: &Path, follow_last: bool) -> Option<PathBuf> {
    resolved_by_parent(absolute, follow_last)
}

/// Linux: the whole path opened with `O_PATH` (which opens nothing for I/O and has no side
/// effect on devices or FIFOs), and `/proc/self/fd` says where it landed: three system calls.
/// `None` when the path (or its parent) does not exist, `/proc` is not there, or the last
/// component is `.` or `..`.
#[cfg(target_os = "linux")]
fn resolved_by_handle(absolute: &Path, follow_last: bool) -> Option<PathBuf> {
    let (target, last) = if follow_last {
        (absolute, None)
    } else {
        let last = match absolute.components().next_back()? {
            Component::Normal(name) => name,
            _ => return None,
        };
        (absolute.parent()?, Some(last))
    };
    // nix, not std's `custom_flags`: on musl std masks `O_PATH` out (musl's `O_ACCMODE`
    // includes it), and the open would then block on a FIFO.
    let flags = nix::fcntl::OFlag::O_PATH | nix::fcntl::OFlag::O_CLOEXEC;
    let handle = nix::fcntl::open(target, flags, nix::sys::stat::Mode::empty()).ok()?;
    let real = platform::fd_path(std::os::fd::AsFd::as_fd(&handle)).ok()?;
    // Anything but an absolute path (a pipe, a deleted file) is for the walk to judge.
    if !real.is_absolute() || real.as_os_str().as_encoded_bytes().ends_with(b" (deleted)") {
        return None;
    }
    Some(match last {
        Some(last) => real.join(last),
        None => real,
    })
}

/// Without `O_PATH` (macOS), a file cannot be opened without acting on it (a device, a FIFO)
/// or without permission to read it, but a directory can be opened for search only. So the
/// parent is opened (`platform::DIR_HANDLE`), `platform::fd_path` (`F_GETPATH`) says where it
/// landed, and the last name is looked at with `fstatat`: four system calls. `None` when the
/// parent does not exist, the last component is not a plain name, or, when it is to be
/// followed, it is a symlink or missing. Compiled on Linux too, for its tests.
#[cfg(any(test, not(target_os = "linux")))]
fn resolved_by_parent(absolute: &Path, follow_last: bool) -> Option<PathBuf> {
    use std::os::fd::AsFd;
    let Component::Normal(last) = absolute.components().next_back()? else { return None };
    let flags = platform::DIR_HANDLE | nix::fcntl::OFlag::O_CLOEXEC;
    let dir = nix::fcntl::open(absolute.parent()?, flags, nix::sys::stat::Mode::empty()).ok()?;
    let real = platform::fd_path(dir.as_fd()).ok()?;
    if !real.is_absolute() {
        return None;
    }
    if follow_last {
        let stat = confined::stat_at(dir.as_fd(), last).ok()?;
        if stat.kind() == confined::Kind::Symlink {
            return None;
        }
    }
    Some(real.join(last))
}

/// Walks `absolute` from `/`, resolving each existing symlink the way the kernel would. The
/// part that does not exist yet is appended as it is (with `..` still applied), so a new file is
/// judged by where its existing parent really is.
fn walk_physically(
    absolute: &Path,
    follow_last: bool,
    stays: &dyn Fn(&Path) -> bool,
) -> Result<PathBuf, Unresolved> {
    let mut pending: VecDeque<OsString> = VecDeque::new();
    push_components(&mut pending, absolute, false);
    let mut out = PathBuf::from("/");
    let mut hops = 0;
    let mut strayed: Option<PathBuf> = None;
    let fail = |detail, strayed: &Option<PathBuf>| Unresolved { detail, strayed: strayed.clone() };
    while let Some(c) = pending.pop_front() {
        if c == ".." {
            out.pop();
            continue;
        }
        out.push(&c);
        if strayed.is_none() && !stays(&out) {
            strayed = Some(out.clone());
        }
        if pending.is_empty() && !follow_last {
            break;
        }
        let Ok(meta) = std::fs::symlink_metadata(&out) else {
            // Missing (or unreadable): the rest is judged as written. An operation on it will
            // fail with the OS's own error, after the policy has approved where it would land.
            continue;
        };
        if !meta.file_type().is_symlink() {
            continue;
        }
        hops += 1;
        if hops > MAX_SYMLINK_HOPS {
            return Err(fail("too many levels of symbolic links", &strayed));
        }
        let target = std::fs::read_link(&out)
            .map_err(|_| fail("a symbolic link could not be read", &strayed))?;
        out.pop();
        if target.is_absolute() {
            out = PathBuf::from("/");
        }
        push_components(&mut pending, &target, true);
    }
    Ok(out)
}

/// Puts `path`'s components at the back of `pending`, or at the front (in order) when `front`.
fn push_components(pending: &mut VecDeque<OsString>, path: &Path, front: bool) {
    let parts: Vec<OsString> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(s) => Some(s.to_os_string()),
            Component::ParentDir => Some(OsString::from("..")),
            Component::CurDir | Component::RootDir | Component::Prefix(_) => None,
        })
        .collect();
    if front {
        for p in parts.into_iter().rev() {
            pending.push_front(p);
        }
    } else {
        pending.extend(parts);
    }
}

/// Canonicalizes a root given on the command line: it must exist and be a directory.
pub fn canonical_root(path: &Path) -> io::Result<PathBuf> {
    let real = std::fs::canonicalize(path)?;
    if !real.is_dir() {
        return Err(io::Error::new(io::ErrorKind::NotADirectory, "not a directory"));
    }
    Ok(real)
}

#[cfg(test)]
mod tests;
