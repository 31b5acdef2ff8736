//! Fuzz target: the allowed-directories policy. Arbitrary path strings are resolved for
//! reading, writing and removal against a fixed tree with escaping, looping and inward
//! symlinks (built once per process in the temp directory). `$B` in the input stands for the
//! tree's base directory, so absolute paths into it are easy to reach.
//!
//! Must never panic. For every path the policy accepts, its `real` lies in an allowed root, and
//! an independent oracle agrees: the kernel's own resolution (`canonicalize`) of the part of
//! `real` that exists also lies in an allowed root. Where the whole path exists, the policy and
//! the kernel resolve it to the same place, and a path the kernel puts inside a root is not
//! refused for reading.

#![no_main]

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use replay::fuzz::policy::{Access, AllowedRoot, DenyReason, Policy, ResolvedPath};

/// ```text
/// base/rw/                    read-write root (the project directory)
///   file.txt
///   sub/inner.txt             sub is also $HOME
///   ro_nested/f.txt           read-only root inside the read-write one
///   link_in -> sub            link_out -> ../outside      abs_out -> base/outside
///   chain -> link_out         to_ro -> ../ro              to_root -> /
///   dot -> .                  up -> ..                    dangling -> ../outside/nope
///   loop_a -> loop_b          loop_b -> loop_a            file_out -> ../outside/secret.txt
///   self_loop -> self_loop    evil -> ../rw_evil          deep -> sub/../link_out/..
/// base/ro/f.txt               read-only root
///   back -> ../rw/sub         out -> ../../
/// base/rw_evil/secret.txt     string-prefix sibling, not allowed
/// base/outside/secret.txt
/// ```
struct Tree {
    base: PathBuf,
    policy: Policy,
}

fn tree() -> &'static Tree {
    static TREE: OnceLock<Tree> = OnceLock::new();
    TREE.get_or_init(|| {
        let base = std::env::temp_dir().join(format!("replay-fuzz-policy-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        for dir in ["rw/sub", "rw/ro_nested", "ro", "rw_evil", "outside"] {
            std::fs::create_dir_all(base.join(dir)).unwrap();
        }
        for file in [
            "rw/file.txt",
            "rw/sub/inner.txt",
            "rw/ro_nested/f.txt",
            "ro/f.txt",
            "rw_evil/secret.txt",
            "outside/secret.txt",
        ] {
            std::fs::write(base.join(file), "x").unwrap();
        }
        let base = std::fs::canonicalize(&base).unwrap();
        let links: &[(&str, String)] = &[
            ("rw/link_in", "sub".into()),
            ("rw/link_out", "../outside".into()),
            ("rw/abs_out", base.join("outside").display().to_string()),
            ("rw/chain", "link_out".into()),
            ("rw/to_ro", "../ro".into()),
            ("rw/to_root", "/".into()),
            ("rw/dot", ".".into()),
            ("rw/up", "..".into()),
            ("rw/dangling", "../outside/nope".into()),
            ("rw/loop_a", "loop_b".into()),
            ("rw/loop_b", "loop_a".into()),
            ("rw/file_out", "../outside/secret.txt".into()),
            ("rw/self_loop", "self_loop".into()),
            ("rw/evil", "../rw_evil".into()),
            ("rw/deep", "sub/../link_out/..".into()),
            ("ro/back", "../rw/sub".into()),
            ("ro/out", "../../".into()),
        ];
        for (at, target) in links {
            symlink(target, base.join(at)).unwrap();
        }
        remove_at_exit(base.clone());
        let roots = vec![
            AllowedRoot { path: base.join("rw"), access: Access::Write },
            AllowedRoot { path: base.join("ro"), access: Access::Read },
            AllowedRoot { path: base.join("rw/ro_nested"), access: Access::Read },
        ];
        let policy = Policy::new(roots, Some(base.join("rw/sub")), Default::default());
        Tree { base, policy }
    })
}

/// libFuzzer ends with `exit()` (at `-max_total_time`, `-runs`), which runs `atexit` handlers;
/// a crash leaves the tree for inspection.
fn remove_at_exit(base: PathBuf) {
    static BASE: OnceLock<PathBuf> = OnceLock::new();
    extern "C" fn remove() {
        if let Some(base) = BASE.get() {
            let _ = std::fs::remove_dir_all(base);
        }
    }
    extern "C" {
        fn atexit(callback: extern "C" fn()) -> std::ffi::c_int;
    }
    if BASE.set(base).is_ok() {
        // SAFETY: registers a function that takes nothing and touches only `BASE`.
        unsafe {
            atexit(remove);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&op, rest)) = data.split_first() else { return };
    let Ok(raw) = std::str::from_utf8(rest) else { return };
    let tree = tree();
    let raw = raw.replace("$B", &tree.base.display().to_string());
    let policy = &tree.policy;
    match op % 3 {
        0 => {
            let got = policy.resolve_read(&raw);
            if let Ok(resolved) = &got {
                check_inside(policy, resolved, true, &raw);
            }
            check_against_kernel(tree, &raw, &got);
        }
        1 => {
            if let Ok(resolved) = policy.resolve_write(&raw) {
                assert_eq!(resolved.access, Access::Write, "write to a read-only root: {raw:?}");
                check_inside(policy, &resolved, true, &raw);
            }
        }
        _ => {
            if let Ok(resolved) = policy.resolve_remove(&raw) {
                assert_eq!(resolved.access, Access::Write, "removal in a read-only root: {raw:?}");
                assert!(
                    policy.roots().iter().all(|r| !r.path.starts_with(&resolved.real)),
                    "removal of a root or of a directory holding one: {raw:?} -> {resolved:?}"
                );
                check_inside(policy, &resolved, false, &raw);
            }
        }
    }
});

/// The invariant: an accepted path lies in an allowed root, both as the policy resolved it and
/// as the kernel resolves the part of it that exists.
fn check_inside(policy: &Policy, resolved: &ResolvedPath, follow_last: bool, raw: &str) {
    let inside = |p: &Path| policy.roots().iter().any(|r| p.starts_with(&r.path));
    assert!(inside(&resolved.real), "accepted {raw:?} resolves outside: {resolved:?}");
    // The last component of a removal is the entry itself, not where a link leads.
    let checked =
        if follow_last { resolved.real.as_path() } else { resolved.real.parent().unwrap() };
    let existing = checked.ancestors().find(|p| std::fs::symlink_metadata(p).is_ok()).unwrap();
    if let Ok(real) = std::fs::canonicalize(existing) {
        assert!(
            inside(&real),
            "accepted {raw:?}: its existing part {existing:?} is really {real:?}, outside"
        );
    }
    // What the tools open: the kernel's open beneath the root lands where the policy said.
    if follow_last {
        if let Ok(file) = resolved.open(nix::fcntl::OFlag::O_PATH) {
            let fd = std::os::fd::AsRawFd::as_raw_fd(&file);
            let opened = std::fs::read_link(format!("/proc/self/fd/{fd}")).unwrap();
            assert!(inside(&opened), "accepted {raw:?}: opened {opened:?}, outside");
            assert_eq!(opened, resolved.real.components().collect::<PathBuf>(), "{raw:?}");
        }
    }
}

/// Where the kernel can resolve the whole path, the policy agrees with it.
fn check_against_kernel(
    tree: &Tree,
    raw: &str,
    got: &Result<ResolvedPath, replay::fuzz::policy::Denied>,
) {
    if raw.is_empty() || raw.contains('\0') || raw.len() > 4096 {
        return;
    }
    let path = Path::new(raw);
    let absolute = match path.strip_prefix("~") {
        Ok(rest) => tree.base.join("rw/sub").join(rest),
        Err(_) => tree.base.join("rw").join(path),
    };
    let Ok(kernel) = std::fs::canonicalize(&absolute) else { return };
    let inside = tree.policy.roots().iter().any(|r| kernel.starts_with(&r.path));
    match got {
        Ok(resolved) => assert_eq!(resolved.real, kernel, "policy and kernel disagree on {raw:?}"),
        Err(denied) => assert!(
            !inside || matches!(denied.reason, DenyReason::Invalid { .. }),
            "{raw:?} is inside ({kernel:?}) but was refused: {denied:?}"
        ),
    }
}
