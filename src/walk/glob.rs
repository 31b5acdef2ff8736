//! Globs: exclusion globs, telling a pattern from a path, splitting a pattern at its literal
//! base, and compiling patterns matched against paths below a walk's root.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

use crate::error::ToolError;

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

/// Most bytes of globs in one list. The schemas bound each glob (4,096 bytes) and each list
/// (1,000 globs); compiling costs memory and time with the patterns' bytes, so the whole list
/// is bounded too, far above what a search needs.
pub const MAX_GLOB_BYTES: usize = 65_536;

/// Compiles patterns matched against paths relative to a walk root. `*` and `?` stay within
/// one path component; `**` crosses components. Matching is case-sensitive, as Linux names are.
pub fn glob_set(field: &str, patterns: &[String]) -> Result<GlobSet, ToolError> {
    let bytes: usize = patterns.iter().map(String::len).sum();
    if bytes > MAX_GLOB_BYTES {
        let detail = format!(
            "has {bytes} bytes of globs; at most {MAX_GLOB_BYTES} are allowed: use fewer or shorter globs, such as `**/*.rs`"
        );
        return Err(ToolError::invalid_params(field, detail));
    }
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
