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

use crate::policy::deny::DenyRules;
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

/// The paths under `roots` that `deny` hides, sorted, outermost first; `Err` says why the walk
/// gave up, when it did.
pub fn find(roots: &[AllowedRoot], deny: &DenyRules) -> Result<Vec<Hidden>, String> {
    let mut found = Found { hidden: Vec::new(), walked: 0, gave_up: None };
    if deny.is_empty() {
        return Ok(found.hidden);
    }
    // replay's own files first: no number of other matches uncovers them.
    for path in deny.private() {
        let inside = roots.iter().any(|r| path.starts_with(&r.path));
        if let (true, Ok(meta)) = (inside, std::fs::symlink_metadata(path)) {
            found.hidden.push(Hidden { path: path.to_path_buf(), dir: meta.is_dir() });
        }
    }
    for root in roots {
        walk(roots, deny, &root.path, &root.path, &mut found);
    }
    found.hidden.sort_by(|a, b| a.path.cmp(&b.path));
    found.hidden.dedup_by(|b, a| b.path.starts_with(&a.path));
    match found.gave_up {
        Some(why) => {
            tracing::warn!(
                hidden = found.hidden.len(),
                "deny rules: {why}; execute_command is refused: allow a narrower directory, or use --no-default-deny or fewer --deny rules"
            );
            Err(why)
        }
        None => Ok(found.hidden),
    }
}

struct Found {
    hidden: Vec<Hidden>,
    walked: usize,
    gave_up: Option<String>,
}

fn walk(roots: &[AllowedRoot], deny: &DenyRules, root: &Path, dir: &Path, found: &mut Found) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        if found.gave_up.is_some() {
            return;
        }
        found.walked += 1;
        if found.walked > MAX_WALKED {
            found.gave_up =
                Some(format!("the allowed directories hold more than {MAX_WALKED} entries"));
            return;
        }
        let Ok(kind) = entry.file_type() else { continue };
        let path = entry.path();
        let rel = path.strip_prefix(root).unwrap_or(&path);
        if deny.denies_entry(&path, rel) {
            let hidden = if kind.is_symlink() {
                link_target(roots, &path)
            } else {
                Some(Hidden { path, dir: kind.is_dir() })
            };
            if let Some(hidden) = hidden {
                if found.hidden.len() == MAX_HIDDEN {
                    found.gave_up = Some(format!("more than {MAX_HIDDEN} paths match them"));
                    return;
                }
                found.hidden.push(hidden);
            }
            continue;
        }
        if kind.is_dir() {
            walk(roots, deny, root, &path, found);
        }
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
