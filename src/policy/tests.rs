//! Policy tables over a real directory tree: which paths resolve where, which are refused, why.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use super::*;

/// A scratch tree:
/// ```text
/// base/rw/            read-write root
///   file.txt
///   sub/inner.txt
///   link_in -> sub            (inside)
///   link_out -> ../outside    (escapes)
///   file_link_out -> ../outside/secret.txt
///   loop_a -> loop_b, loop_b -> loop_a
///   ro_nested/        read-only root inside the read-write one
/// base/ro/            read-only root
/// base/rw_evil/       string-prefix sibling, not allowed
/// base/outside/secret.txt
/// ```
struct Tree {
    base: PathBuf,
    policy: Policy,
}

impl Tree {
    fn new() -> Tree {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let base = std::env::temp_dir().join(format!("replay-policy-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        for dir in ["rw/sub", "rw/ro_nested", "ro", "rw_evil", "outside"] {
            std::fs::create_dir_all(base.join(dir)).unwrap();
        }
        std::fs::write(base.join("rw/file.txt"), "x").unwrap();
        std::fs::write(base.join("rw/sub/inner.txt"), "x").unwrap();
        std::fs::write(base.join("outside/secret.txt"), "x").unwrap();
        symlink("sub", base.join("rw/link_in")).unwrap();
        symlink("../outside", base.join("rw/link_out")).unwrap();
        symlink("../outside/secret.txt", base.join("rw/file_link_out")).unwrap();
        symlink("loop_b", base.join("rw/loop_a")).unwrap();
        symlink("loop_a", base.join("rw/loop_b")).unwrap();
        let base = std::fs::canonicalize(&base).unwrap();
        let roots = vec![
            AllowedRoot { path: base.join("rw"), access: Access::Write },
            AllowedRoot { path: base.join("ro"), access: Access::Read },
            AllowedRoot { path: base.join("rw/ro_nested"), access: Access::Read },
        ];
        let policy = Policy::new(roots, Some(base.join("rw/sub")), Default::default());
        Tree { base, policy }
    }

    /// Replaces `$B` in a row with the base directory.
    fn path(&self, row: &str) -> String {
        row.replace("$B", &self.base.display().to_string())
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

#[derive(Clone, Copy, Debug)]
enum Op {
    Read,
    Write,
    Remove,
}

fn run(tree: &Tree, op: Op, raw: &str) -> Result<ResolvedPath, Denied> {
    match op {
        Op::Read => tree.policy.resolve_read(raw),
        Op::Write => tree.policy.resolve_write(raw),
        Op::Remove => tree.policy.resolve_remove(raw),
    }
}

/// `allowed!(tree, op, path, real)`: the path passes and resolves to `real`.
macro_rules! allowed {
    ($tree:expr, $op:ident, $path:expr, $real:expr) => {{
        let raw = $tree.path($path);
        match run(&$tree, Op::$op, &raw) {
            Ok(r) => assert_eq!(r.real, PathBuf::from($tree.path($real)), "{:?} {raw}", Op::$op),
            Err(e) => panic!("{:?} {raw}: expected allowed, got {e}", Op::$op),
        }
    }};
}

/// `denied!(tree, op, path, reason-pattern)`.
macro_rules! denied {
    ($tree:expr, $op:ident, $path:expr, $reason:pat) => {{
        let raw = $tree.path($path);
        match run(&$tree, Op::$op, &raw) {
            Ok(r) => {
                panic!("{:?} {raw}: expected denied, resolved to {}", Op::$op, r.real.display())
            }
            Err(e) => assert!(
                matches!(e.reason, $reason),
                "{:?} {raw}: wrong reason {:?}",
                Op::$op,
                e.reason
            ),
        }
    }};
}

#[test]
fn reads() {
    let t = Tree::new();
    allowed!(t, Read, "$B/rw/file.txt", "$B/rw/file.txt");
    allowed!(t, Read, "$B/rw/./sub/../file.txt", "$B/rw/file.txt");
    allowed!(t, Read, "$B/rw/missing/new.txt", "$B/rw/missing/new.txt");
    allowed!(t, Read, "$B/rw/link_in/inner.txt", "$B/rw/sub/inner.txt");
    allowed!(t, Read, "$B/rw/link_in/../file.txt", "$B/rw/file.txt");
    allowed!(t, Read, "$B/ro/x", "$B/ro/x");
    allowed!(t, Read, "file.txt", "$B/rw/file.txt");
    allowed!(t, Read, "sub/../file.txt", "$B/rw/file.txt");
    allowed!(t, Read, "~/inner.txt", "$B/rw/sub/inner.txt");
    allowed!(t, Read, "$B/rw/sub/", "$B/rw/sub/");
    allowed!(t, Read, "$B/rw/file.txt/", "$B/rw/file.txt/");
    denied!(t, Read, "$B/outside/secret.txt", DenyReason::Outside { .. });
    denied!(t, Read, "$B/rw/../outside/secret.txt", DenyReason::Outside { .. });
    denied!(t, Read, "../outside/secret.txt", DenyReason::Outside { .. });
    denied!(t, Read, "$B/rw/link_out/secret.txt", DenyReason::Outside { .. });
    denied!(t, Read, "$B/rw/link_out", DenyReason::Outside { .. });
    denied!(t, Read, "$B/rw/file_link_out", DenyReason::Outside { .. });
    denied!(t, Read, "$B/rw_evil/x", DenyReason::Outside { .. });
    denied!(t, Read, "$B/rw_evil", DenyReason::Outside { .. });
    denied!(t, Read, "$B", DenyReason::Outside { .. });
    denied!(t, Read, "/", DenyReason::Outside { .. });
    denied!(t, Read, "/etc/passwd", DenyReason::Outside { .. });
    // A missing directory, then `..` back into a symlink that escapes.
    denied!(t, Read, "$B/rw/missing/../link_out/secret.txt", DenyReason::Outside { .. });
    denied!(t, Read, "$B/rw/loop_a", DenyReason::Invalid { .. });
    denied!(t, Read, "", DenyReason::Invalid { .. });
    denied!(t, Read, "$B/rw/a\0b", DenyReason::Invalid { .. });
    denied!(t, Read, &format!("$B/rw/{}", "a/".repeat(3000)), DenyReason::Invalid { .. });
}

#[test]
fn writes() {
    let t = Tree::new();
    allowed!(t, Write, "$B/rw/file.txt", "$B/rw/file.txt");
    allowed!(t, Write, "$B/rw/link_in/new.txt", "$B/rw/sub/new.txt");
    allowed!(t, Write, "$B/rw/new/deeper/file.txt", "$B/rw/new/deeper/file.txt");
    denied!(t, Write, "$B/rw/link_out/new.txt", DenyReason::Outside { .. });
    denied!(t, Write, "$B/rw/file_link_out", DenyReason::Outside { .. });
    denied!(t, Write, "$B/ro/new.txt", DenyReason::ReadOnly { .. });
    denied!(t, Write, "$B/rw/ro_nested/new.txt", DenyReason::ReadOnly { .. });
    denied!(t, Write, "$B/rw_evil/new.txt", DenyReason::Outside { .. });
}

#[test]
fn removals() {
    let t = Tree::new();
    allowed!(t, Remove, "$B/rw/file.txt", "$B/rw/file.txt");
    allowed!(t, Remove, "$B/rw/sub", "$B/rw/sub");
    // The link itself, not what it points to.
    allowed!(t, Remove, "$B/rw/link_in", "$B/rw/link_in");
    denied!(t, Remove, "$B/rw/link_out", DenyReason::Outside { .. });
    denied!(t, Remove, "$B/rw/file_link_out", DenyReason::Outside { .. });
    denied!(t, Remove, "$B/rw", DenyReason::Root);
    denied!(t, Remove, "$B/rw/sub/..", DenyReason::Root);
    denied!(t, Remove, "$B/ro", DenyReason::ReadOnly { .. });
    denied!(t, Remove, "$B/rw/ro_nested", DenyReason::ReadOnly { .. });
    denied!(t, Remove, "$B/outside/secret.txt", DenyReason::Outside { .. });
}

#[test]
fn most_specific_root_wins() {
    let t = Tree::new();
    let r = t.policy.resolve_read(&t.path("$B/rw/ro_nested/x")).unwrap();
    assert_eq!(r.access, Access::Read);
    let r = t.policy.resolve_read(&t.path("$B/rw/sub")).unwrap();
    assert_eq!(r.access, Access::Write);
}

#[test]
fn a_directory_holding_a_root_cannot_be_removed() {
    let t = Tree::new();
    let roots = vec![
        AllowedRoot { path: t.base.clone(), access: Access::Write },
        AllowedRoot { path: t.base.join("rw/ro_nested"), access: Access::Read },
    ];
    let policy = Policy::new(roots, None, Default::default());
    let e = policy.resolve_remove(&t.path("$B/rw")).unwrap_err();
    assert!(matches!(e.reason, DenyReason::ContainsRoot { .. }), "{e:?}");
}

#[test]
fn no_roots_allow_nothing() {
    let policy = Policy::new(Vec::new(), None, Default::default());
    for raw in ["/", "/tmp", "relative.txt", "."] {
        let e = policy.resolve_read(raw).unwrap_err();
        assert!(matches!(e.reason, DenyReason::Outside { .. }), "{raw}: {e:?}");
    }
}

#[test]
fn messages_name_the_path() {
    let t = Tree::new();
    let e = t.policy.resolve_read("/etc/passwd").unwrap_err();
    assert_eq!(e.to_string(), "path not allowed: /etc/passwd is outside the allowed directories");
    // Where an outside path leads is not said: every outside path answers alike.
    let raw = t.path("$B/rw/link_out/secret.txt");
    let e = t.policy.resolve_read(&raw).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("path not allowed: {raw} is outside the allowed directories")
    );
    let _ = Path::new("");
}

/// A resolution that fails where the walk has left the allowed set (a loop outside, a link it
/// cannot read) is refused as outside, like any outside path; one that fails inside says why.
#[test]
fn failures_outside_are_outside() {
    let t = Tree::new();
    symlink("loop_d", t.base.join("outside/loop_c")).unwrap();
    symlink("loop_c", t.base.join("outside/loop_d")).unwrap();
    symlink("../outside/loop_c", t.base.join("rw/loop_out")).unwrap();
    symlink("../rw/loop_a", t.base.join("outside/back_in")).unwrap();
    symlink("../outside/back_in", t.base.join("rw/loop_via_out")).unwrap();
    denied!(t, Read, "$B/rw/loop_out", DenyReason::Outside { .. });
    denied!(t, Read, "$B/rw/loop_out/x", DenyReason::Outside { .. });
    denied!(t, Write, "$B/rw/loop_out/x", DenyReason::Outside { .. });
    denied!(t, Remove, "$B/rw/loop_out", DenyReason::Outside { .. });
    denied!(t, Read, "$B/outside/loop_c", DenyReason::Outside { .. });
    // Through the outside into an inside loop: the walk strayed on the way.
    denied!(t, Read, "$B/rw/loop_via_out", DenyReason::Outside { .. });
    denied!(t, Read, "/proc/self/cwd", DenyReason::Outside { .. });
    denied!(t, Read, "/proc/4194305/cwd", DenyReason::Outside { .. });
    // Inside the allowed set, the loop is named.
    denied!(t, Read, "$B/rw/loop_a", DenyReason::Invalid { .. });
    denied!(t, Remove, "$B/rw/sub/../loop_a/x", DenyReason::Invalid { .. });
}

/// The kernel's answer and the component walk agree on every path that exists, followed or
/// not, through links, `..` after a link, and loops: Linux's (`open(O_PATH)` + `/proc/self/fd`)
/// and macOS's (the parent opened for search + `fd_path` + `fstatat`), both run here.
#[test]
fn kernel_resolution_equals_the_walk() {
    #[cfg(target_os = "linux")]
    kernel_resolution_equals_the_walk_with("by handle", resolved_by_handle);
    kernel_resolution_equals_the_walk_with("by parent", resolved_by_parent);
}

fn kernel_resolution_equals_the_walk_with(
    name: &str,
    resolved: fn(&Path, bool) -> Option<PathBuf>,
) {
    let t = Tree::new();
    let rows = [
        "$B/rw/file.txt",
        "$B/rw/sub/inner.txt",
        "$B/rw/link_in",
        "$B/rw/link_in/inner.txt",
        "$B/rw/link_in/../file.txt",
        "$B/rw/link_out",
        "$B/rw/link_out/secret.txt",
        "$B/rw/link_out/../rw/file.txt",
        "$B/rw/file_link_out",
        "$B/rw/sub/../link_in/./inner.txt",
        "$B/rw/missing/../file.txt",
        "$B/ro",
        "/",
    ];
    for row in rows {
        let path = PathBuf::from(t.path(row));
        for follow_last in [true, false] {
            let walked = walk_physically(&path, follow_last, &|_| true);
            match resolved(&path, follow_last) {
                Some(kernel) => {
                    assert_eq!(Ok(kernel), walked, "{name}: {row} follow_last={follow_last}")
                }
                // Only a path the kernel cannot open may fall back, and, resolving by the
                // parent, a last component that is a link to follow.
                None => assert!(
                    std::fs::symlink_metadata(&path).is_err()
                        || !follow_last
                        || row == "/"
                        || (name == "by parent" && std::fs::read_link(&path).is_ok()),
                    "{name}: {row}: the kernel should have answered"
                ),
            }
        }
    }
    // A loop is the walk's to report.
    let looped = PathBuf::from(t.path("$B/rw/loop_a"));
    assert_eq!(resolved(&looped, true), None, "{name}");
    assert!(walk_physically(&looped, true, &|_| true).is_err());
}
