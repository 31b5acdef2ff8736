//! Client roots (`roots/list`): turning the client's `file://` URIs into allowed directories.
//!
//! The command line is the ceiling. Client roots narrow the allowed set to what lies inside it
//! and never widen it: a root outside every command-line directory is ignored, and a root that
//! holds command-line directories allows just those. A list of roots none of which is usable (a
//! missing directory, a regular file, a URI that is not `file://`), an empty list or an answer
//! without a list allows nothing until a usable list arrives: the client asked for less, so it never gets the whole ceiling back. With no
//! directories on the command line, the first roots a client sends become the ceiling (and the
//! sandbox is applied then).

use std::path::PathBuf;

use serde_json::Value;

use crate::policy::{canonical_root, deepest_root, Access, AllowedRoot, MAX_ROOTS};

/// The directories a `roots/list` result names: `file://` URIs of existing directories,
/// canonical, in the client's order, at most `MAX_ROOTS` of them. Anything else is skipped
/// with a warning. A result with no roots array, or an empty one, names none: a client that
/// answers asked for less than the command line, and an answer that cannot be read is no
/// reason to give it everything (only a client without the roots capability, or one that has
/// not answered yet, keeps the command line).
pub fn parse(result: &Value) -> Vec<PathBuf> {
    let Some(roots) = result.get("roots").and_then(Value::as_array) else {
        tracing::warn!(%result, "roots/list result without a roots array: nothing is allowed until the client sends usable roots");
        return Vec::new();
    };
    if roots.is_empty() {
        tracing::warn!(
            "the client sent no roots after narrowing: nothing is allowed until it sends one"
        );
        return Vec::new();
    }
    let mut dirs: Vec<PathBuf> = Vec::new();
    if roots.len() > MAX_ROOTS {
        tracing::warn!(
            "the client sent {} roots; at most {MAX_ROOTS} are used, the first ones: open a common parent folder instead",
            roots.len()
        );
    }
    for root in roots {
        if dirs.len() == MAX_ROOTS {
            break;
        }
        let uri = root.get("uri").and_then(Value::as_str).unwrap_or_default();
        let Some(path) = file_uri_path(uri) else {
            tracing::warn!(uri, "client root is not a file:// URI; ignored");
            continue;
        };
        match canonical_root(&path) {
            Ok(dir) if !dirs.contains(&dir) => dirs.push(dir),
            Ok(_) => {}
            Err(e) => tracing::warn!(path = %path.display(), "client root cannot be used: {e}"),
        }
    }
    if dirs.is_empty() {
        tracing::warn!(
            "none of the client's {} roots is a usable directory: nothing is allowed until the client sends one",
            roots.len()
        );
    }
    dirs
}

/// The allowed set for the client's directories `client` under `ceiling`; none allows nothing.
pub fn narrow(ceiling: &[AllowedRoot], client: &[PathBuf]) -> Vec<AllowedRoot> {
    let mut out: Vec<AllowedRoot> = Vec::new();
    let mut add = |root: AllowedRoot| {
        if !out.iter().any(|r| r.path == root.path) {
            out.push(root);
        }
    };
    for dir in client {
        match deepest_root(ceiling, dir).map(|i| &ceiling[i]) {
            Some(r) => add(AllowedRoot { path: dir.clone(), access: r.access }),
            None => {
                tracing::info!(path = %dir.display(), "client root outside the allowed directories; only what lies inside them counts")
            }
        }
        // Command-line directories inside a client root stay, with their own access: a
        // read-only directory nested in the client's root stays read-only.
        for inner in ceiling.iter().filter(|r| r.path.starts_with(dir)) {
            add(inner.clone());
        }
    }
    out
}

/// The first roots of a server started without directories: read-write, as the client asks.
pub fn as_ceiling(client: &[PathBuf]) -> Vec<AllowedRoot> {
    client.iter().map(|p| AllowedRoot { path: p.clone(), access: Access::Write }).collect()
}

/// `file:///a/b%20c` → `/a/b c`; `file://localhost/a` → `/a`. Other hosts are not local paths.
fn file_uri_path(uri: &str) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStringExt;
    let rest = uri.strip_prefix("file://")?;
    let path = rest.strip_prefix("localhost").unwrap_or(rest);
    if !path.starts_with('/') {
        return None;
    }
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    if out.contains(&0) {
        return None;
    }
    Some(PathBuf::from(std::ffi::OsString::from_vec(out)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris() {
        let check = |uri: &str, expect: Option<&str>| {
            assert_eq!(file_uri_path(uri), expect.map(PathBuf::from), "{uri}");
        };
        check("file:///home/u/p", Some("/home/u/p"));
        check("file:///home/u/My%20Project", Some("/home/u/My Project"));
        check("file://localhost/srv", Some("/srv"));
        check("file://server/share", None);
        check("https://x/y", None);
        check("file:///a%2", None);
        check("file:///a%00b", None);
    }

    fn root(path: &str, access: Access) -> AllowedRoot {
        AllowedRoot { path: PathBuf::from(path), access }
    }

    #[track_caller]
    fn check(ceiling: &[AllowedRoot], client: &[&str], expect: &[(&str, Access)]) {
        let client: Vec<PathBuf> = client.iter().map(PathBuf::from).collect();
        let got = narrow(ceiling, &client);
        let expect: Vec<AllowedRoot> = expect.iter().map(|(p, a)| root(p, *a)).collect();
        assert_eq!(got, expect);
    }

    #[test]
    fn roots_narrow_and_never_widen() {
        use Access::{Read, Write};
        let ceiling = [root("/p", Write), root("/p/vendor", Read), root("/docs", Read)];
        // Inside: narrowed to the client's directory, with the access of the root holding it.
        check(&ceiling, &["/p/src"], &[("/p/src", Write)]);
        check(&ceiling, &["/docs/api"], &[("/docs/api", Read)]);
        check(&ceiling, &["/p/vendor/x"], &[("/p/vendor/x", Read)]);
        // The same directory: nested command-line roots keep their own access.
        check(&ceiling, &["/p"], &[("/p", Write), ("/p/vendor", Read)]);
        // Outside: ignored; a client root above command-line ones allows just those.
        check(&ceiling, &["/etc"], &[]);
        check(&ceiling, &["/"], &[("/p", Write), ("/p/vendor", Read), ("/docs", Read)]);
        check(&ceiling, &["/pp"], &[]);
        // No usable roots: nothing.
        check(&ceiling, &[], &[]);
    }

    /// An answer with no roots array, or an empty one, names no directory.
    #[test]
    fn odd_answers_name_nothing() {
        for odd in [
            serde_json::json!({"roots": "odd"}),
            serde_json::json!({"roots": []}),
            serde_json::json!({}),
            serde_json::json!(null),
        ] {
            assert_eq!(parse(&odd), Vec::<PathBuf>::new(), "{odd}");
        }
    }
}
