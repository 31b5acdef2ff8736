//! Opening beneath a root, with each backend: the same table for `openat2` (Linux) and the
//! component walk (every OS; what macOS runs).

use std::os::unix::fs::symlink;

use super::*;

/// A scratch tree:
/// ```text
/// base/root/a/b/f.txt
/// base/root/a/in -> b          (a symlink inside the root)
/// base/root/out -> ../outside  (a symlink out)
/// base/outside/secret.txt
/// ```
struct Tree {
    base: PathBuf,
    root: OwnedFd,
}

impl Tree {
    fn new(name: &str) -> Tree {
        let base =
            std::env::temp_dir().join(format!("replay-confined-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(base.join("root/a/b")).unwrap();
        std::fs::create_dir_all(base.join("outside")).unwrap();
        std::fs::write(base.join("root/a/b/f.txt"), "inside").unwrap();
        std::fs::write(base.join("outside/secret.txt"), "secret").unwrap();
        symlink("b", base.join("root/a/in")).unwrap();
        symlink("../outside", base.join("root/out")).unwrap();
        let root = nix::fcntl::open(&base.join("root"), DIR_HANDLE, Mode::empty()).unwrap();
        Tree { base, root }
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

/// `rel` opened for reading with `backend`: `Ok(content)` or `Err(errno)`.
#[track_caller]
fn check(tree: &Tree, backend: Backend, rel: &str, expect: Result<&str, Errno>) {
    let flags = OFlag::O_RDONLY;
    let got =
        open_with(backend, tree.root.as_fd(), Path::new(rel), flags, Mode::empty()).map(|fd| {
            let mut text = String::new();
            io::Read::read_to_string(&mut File::from(fd), &mut text).unwrap();
            text
        });
    let got = got.as_deref().map_err(|e| Errno::from_raw(e.raw_os_error().unwrap_or(0)));
    assert_eq!(got, expect, "{rel}");
}

/// A symlink on the way fails openat2 with ELOOP, the component walk (`O_DIRECTORY |
/// O_NOFOLLOW`) with ENOTDIR.
fn table(backend: Backend, refused: Errno) {
    let tree = Tree::new(&format!("{backend:?}"));
    check(&tree, backend, "a/b/f.txt", Ok("inside"));
    // A symlink anywhere on the way fails the open, even one that stays inside: the policy
    // resolved them all, so meeting one means the tree changed since.
    check(&tree, backend, "a/in/f.txt", Err(refused));
    check(&tree, backend, "out/secret.txt", Err(refused));
    check(&tree, backend, "a/missing.txt", Err(Errno::ENOENT));
    check(&tree, backend, "a/b/f.txt/", Err(Errno::ENOTDIR));
    // Never produced by the policy, refused all the same (an error of replay's own, no errno).
    check(&tree, backend, "../outside/secret.txt", Err(Errno::UnknownErrno));
    check(&tree, backend, "a/../../outside/secret.txt", Err(Errno::UnknownErrno));
    check(&tree, backend, "/etc/hostname", Err(Errno::UnknownErrno));
    // The last component too: a symlink is not followed, and with a bare handle's flags
    // (`O_PATH` on Linux) not opened either.
    std::fs::write(tree.base.join("root/plain"), "x").unwrap();
    symlink("plain", tree.base.join("root/last")).unwrap();
    std::fs::create_dir(tree.base.join("root/dir")).unwrap();
    symlink("dir", tree.base.join("root/dir_link")).unwrap();
    for (rel, flags) in [("last", OFlag::O_RDONLY), ("dir_link", DIR_HANDLE)] {
        let last = open_with(backend, tree.root.as_fd(), Path::new(rel), flags, Mode::empty());
        let errno = last.unwrap_err().raw_os_error().map(Errno::from_raw);
        assert!(matches!(errno, Some(Errno::ELOOP | Errno::ENOTDIR)), "{rel}: {errno:?}");
    }
}

#[cfg(target_os = "linux")]
#[test]
fn opens_beneath_with_openat2() {
    if !crate::capability::require("a kernel with a usable openat2", openat2::usable()) {
        return;
    }
    table(Backend::Openat2, Errno::ELOOP);
}

#[test]
fn opens_beneath_one_component_at_a_time() {
    table(Backend::Components, Errno::ENOTDIR);
}

/// A directory swapped for a symlink to the outside, over and over, while it is opened through:
/// every open either lands inside or fails.
#[test]
fn a_swapped_directory_never_leads_out() {
    let tree = Tree::new("swap");
    let (dir, parked) = (tree.base.join("root/a/b"), tree.base.join("root/a/parked"));
    let stop = std::sync::atomic::AtomicBool::new(false);
    let (mut inside, mut refused) = (0, 0);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = std::fs::rename(&dir, &parked);
                let _ = symlink(tree.base.join("outside"), &dir);
                let _ = std::fs::remove_file(&dir);
                let _ = std::fs::rename(&parked, &dir);
            }
        });
        for i in 0..20_000 {
            let backend = if i % 2 == 0 { backend() } else { Backend::Components };
            let open = |rel: &str| {
                open_with(
                    backend,
                    tree.root.as_fd(),
                    Path::new(rel),
                    OFlag::O_RDONLY,
                    Mode::empty(),
                )
            };
            let opened = open("a/b/secret.txt");
            let other = open("a/b/f.txt");
            assert!(opened.is_err(), "the outside's secret.txt was opened");
            match other {
                Ok(_) => inside += 1,
                Err(_) => refused += 1,
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    assert!(inside > 0, "never opened the file inside");
    let _ = refused;
}
