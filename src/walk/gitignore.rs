//! The `.gitignore` rules a walk with `respect_gitignore` applies: each directory's own file,
//! its parents' up to the walk's root, and the root's `.git/info/exclude`.

use std::fs::File;
use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;
use std::sync::Arc;

use ignore::gitignore::{Gitignore, GitignoreBuilder};

use crate::policy::confined;

/// The `.gitignore` rules that apply in a directory: its own file's, then its parents' up to the
/// walk's root, then the root's `.git/info/exclude`. The nearest rule that matches decides.
pub(super) struct Ignores {
    rules: Gitignore,
    parent: Option<Arc<Ignores>>,
}

impl Drop for Ignores {
    /// Drops the chain of parents in a loop: a `.gitignore` on each of thousands of levels
    /// would otherwise be dropped by as many nested calls.
    fn drop(&mut self) {
        let mut next = self.parent.take();
        while let Some(parent) = next {
            next = match Arc::try_unwrap(parent) {
                Ok(mut only) => only.parent.take(),
                Err(_) => None,
            };
        }
    }
}

impl Ignores {
    pub(super) fn for_root(root: &OwnedFd, path: &Path) -> Arc<Ignores> {
        let exclude = rules_in(root, Path::new(".git/info/exclude"), path);
        let base =
            Arc::new(Ignores { rules: exclude.unwrap_or_else(Gitignore::empty), parent: None });
        Ignores::for_dir(root, path, base)
    }

    pub(super) fn for_dir(dir: &OwnedFd, path: &Path, parent: Arc<Ignores>) -> Arc<Ignores> {
        match rules_in(dir, Path::new(".gitignore"), path) {
            Some(rules) => Arc::new(Ignores { rules, parent: Some(parent) }),
            None => parent,
        }
    }

    pub(super) fn ignores(&self, path: &Path, is_dir: bool) -> bool {
        let mut level = Some(self);
        while let Some(ignores) = level {
            let matched = ignores.rules.matched(path, is_dir);
            if matched.is_ignore() {
                return true;
            }
            if matched.is_whitelist() {
                return false;
            }
            level = ignores.parent.as_deref();
        }
        false
    }
}

/// The rules of the ignore file `file` below `dir` (whose path is `base`), read beneath `dir`;
/// `None` when there is none or it has no rules.
fn rules_in(dir: &OwnedFd, file: &Path, base: &Path) -> Option<Gitignore> {
    let flags = nix::fcntl::OFlag::O_RDONLY | nix::fcntl::OFlag::O_NONBLOCK;
    let handle = confined::open_beneath(dir.as_fd(), file, flags, nix::sys::stat::Mode::empty());
    let mut text = String::new();
    File::from(handle.ok()?).take(1 << 20).read_to_string(&mut text).ok()?;
    let mut builder = GitignoreBuilder::new(base);
    for line in text.lines() {
        // A bad line is skipped, as git does.
        let _ = builder.add_line(None, line);
    }
    builder.build().ok().filter(|rules| !rules.is_empty())
}
