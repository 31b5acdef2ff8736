//! What the commands' namespace hides: replay's private files (`DenyRules::with_private`)
//! inside the allowed directories, then each path under them that a deny rule matches when the
//! sandbox is applied, found by one walk of the roots.
//!
//! The walk follows no symlink and does not enter a hidden directory. A symlink that a rule
//! matches hides what it leads to, when that lies in an allowed directory (`.env ->
//! config/prod.env` hides `config/prod.env`). The cost is bounded: past `MAX_HIDDEN` matches,
//! or `MAX_WALKED` entries, the walk gives up and says why; the server then refuses every
//! command rather than let commands see what the rules hide (4,100 decoy `*.pem` files would
//! otherwise uncover a `.env` the walk had not reached). The walk is sequential and runs once,
//! beside the start (`covering`): over the benchmark corpus (48,000 entries) it takes 80 ms,
//! and its cost grows with the entries, so 2,000,000 entries would cost seconds.

use std::path::{Path, PathBuf};

use crate::policy::deny::{DenyRule, DenyRules};
use crate::policy::AllowedRoot;

/// Most paths hidden: each is a mount in the namespace, made at start.
pub const MAX_HIDDEN: usize = 4096;
/// Most entries the walk looks at, all roots together.
pub const MAX_WALKED: usize = 2_000_000;

/// A path to hide, and whether it is a directory (hidden by an empty one) or not (by an empty
/// file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hidden {
    pub path: PathBuf,
    pub dir: bool,
}

/// What to do in the commands' namespace for the deny rules.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Hide {
    /// The paths to cover, sorted, outermost first.
    pub covers: Vec<Hidden>,
    /// The directories between an allowed directory and a match that only its path makes (a
    /// path rule such as `config/prod.yaml`, an absolute rule, replay's own files), sorted:
    /// each is made a mount point, which a command cannot rename (EBUSY). Renamed, `config`
    /// would carry `prod.yaml` to a path no rule names, where the file tools would serve it.
    pub pins: Vec<PathBuf>,
}

/// What `deny` hides under `roots`; `Err` says why the walk gave up, when it did.
pub fn find(roots: &[AllowedRoot], deny: &DenyRules) -> Result<Hide, String> {
    let mut found = Found { hidden: Vec::new(), pins: Vec::new(), walked: 0, gave_up: None };
    // replay's own files first: no number of other matches uncovers them.
    for path in deny.private() {
        let root = roots.iter().find(|r| path.starts_with(&r.path));
        if let (Some(root), Ok(meta)) = (root, std::fs::symlink_metadata(path)) {
            found.hidden.push(Hidden { path: path.to_path_buf(), dir: meta.is_dir() });
            pin(&mut found, &root.path, path, None);
        }
    }
    if needs_walk(deny) {
        for root in roots {
            walk(roots, deny, &root.path, &root.path, &mut found);
        }
    }
    found.hidden.sort_by(|a, b| a.path.cmp(&b.path));
    found.hidden.dedup_by(|b, a| b.path.starts_with(&a.path));
    found.pins.sort();
    found.pins.dedup();
    if found.pins.len() > MAX_HIDDEN && found.gave_up.is_none() {
        found.gave_up = Some(format!("more than {MAX_HIDDEN} directories hold what they match"));
    }
    match found.gave_up {
        Some(why) => Err(why),
        None => Ok(Hide { covers: found.hidden, pins: found.pins }),
    }
}

/// Pins the directories between `root` and `path` (both excluded: the root is a mount point
/// already, and `path` gets a cover), the `levels` nearest `path` when given, else all.
fn pin(found: &mut Found, root: &Path, path: &Path, levels: Option<usize>) {
    let mut dir = path.parent();
    let mut left = levels.unwrap_or(usize::MAX);
    while let Some(d) = dir.filter(|d| d.starts_with(root) && *d != root && left > 0) {
        found.pins.push(d.to_path_buf());
        dir = d.parent();
        left -= 1;
    }
}

/// How many directories above a match `rule` names, which a rename would take the match out
/// from under: a relative rule matches at any depth, so only the directories in its pattern
/// (`config` of `config/prod.yaml`; `git mv services svc` above it stays free); `None` (all of
/// them) for an absolute rule, replay's own files, and a pattern with `**` inside.
fn named_levels(rule: &DenyRule) -> Option<usize> {
    let glob = rule.glob.strip_suffix("/**").unwrap_or(&rule.glob).trim_end_matches('/');
    if rule.private || glob.starts_with('/') || glob.contains("**") {
        return None;
    }
    Some(glob.split('/').count().saturating_sub(1))
}

/// Whether finding what `deny` hides takes a walk: replay's own files alone are exact paths.
pub fn needs_walk(deny: &DenyRules) -> bool {
    deny.rules().iter().any(|rule| !rule.private)
}

struct Found {
    hidden: Vec<Hidden>,
    pins: Vec<PathBuf>,
    walked: usize,
    gave_up: Option<String>,
}

/// Walks `dir`, failing closed: a directory that cannot be listed is hidden whole when the
/// user may not read it (a command could still open a secret in it by name), and any other
/// failure gives up. The directory's entries are read whole before the walk goes down, so it
/// holds one handle at a time whatever the depth (one per level ran out of descriptors 1,024
/// levels down).
fn walk(roots: &[AllowedRoot], deny: &DenyRules, root: &Path, dir: &Path, found: &mut Found) {
    let listed = std::fs::read_dir(dir).and_then(|entries| entries.collect::<Result<Vec<_>, _>>());
    let entries = match listed {
        Ok(entries) => entries,
        // Gone since its parent was read.
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR)) => return,
        Err(e) if matches!(e.raw_os_error(), Some(libc::EACCES | libc::EPERM)) => {
            return hide(found, Hidden { path: dir.to_path_buf(), dir: true });
        }
        Err(e) => {
            found.gave_up = Some(format!("{} cannot be read: {e}", shown(dir)));
            return;
        }
    };
    for entry in entries {
        if found.gave_up.is_some() {
            return;
        }
        found.walked += 1;
        if found.walked > MAX_WALKED {
            found.gave_up =
                Some(format!("the allowed directories hold more than {MAX_WALKED} entries"));
            return;
        }
        let path = entry.path();
        let kind = match entry.file_type() {
            Ok(kind) => kind,
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => continue,
            Err(e) => {
                found.gave_up = Some(format!("{} cannot be read: {e}", shown(&path)));
                return;
            }
        };
        let rel = path.strip_prefix(root).unwrap_or(&path);
        if deny.denies_entry(&path, rel) {
            if !deny.denies_name(&entry.file_name()) {
                let levels = deny.matching(root, &path).and_then(named_levels);
                pin(found, root, &path, levels);
            }
            let hidden = if kind.is_symlink() {
                link_target(roots, &path)
            } else {
                Some(Hidden { path, dir: kind.is_dir() })
            };
            if let Some(hidden) = hidden {
                hide(found, hidden);
            }
            continue;
        }
        if kind.is_dir() {
            walk(roots, deny, root, &path, found);
        }
    }
}

/// `path` for a message: its first 160 bytes when it is longer (a path past 4,096 bytes would
/// fill the reply), which name where it lies.
fn shown(path: &Path) -> String {
    let text = path.display().to_string();
    match text.char_indices().nth(160) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

/// Adds `hidden`, or gives up past `MAX_HIDDEN`.
fn hide(found: &mut Found, hidden: Hidden) {
    if found.hidden.len() == MAX_HIDDEN {
        found.gave_up = Some(format!("more than {MAX_HIDDEN} paths match them"));
    } else {
        found.hidden.push(hidden);
    }
}

/// What a matching symlink leads to, when that is in an allowed directory.
fn link_target(roots: &[AllowedRoot], link: &Path) -> Option<Hidden> {
    let target = std::fs::canonicalize(link).ok()?;
    // A link to a whole allowed directory is left alone: hiding a root from commands would
    // make it differ from what the file tools serve for no secret's sake.
    if !roots.iter().any(|r| target.starts_with(&r.path) && target != r.path) {
        return None;
    }
    let dir = std::fs::metadata(&target).ok()?.is_dir();
    Some(Hidden { path: target, dir })
}
