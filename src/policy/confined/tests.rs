//! Opening beneath a root, with and without `openat2`.

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
        let root = nix::fcntl::open(&base.join("root"), OFlag::O_PATH, Mode::empty()).unwrap();
        Tree { base, root }
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

type Opener = fn(BorrowedFd<'_>, &Path, OFlag, Mode) -> io::Result<OwnedFd>;

/// `rel` opened for reading with `open`: `Ok(content)` or `Err(errno)`.
#[track_caller]
fn check(tree: &Tree, open: Opener, rel: &str, expect: Result<&str, Errno>) {
    let got = open(tree.root.as_fd(), Path::new(rel), OFlag::O_RDONLY, Mode::empty()).map(|fd| {
        let mut text = String::new();
        io::Read::read_to_string(&mut File::from(fd), &mut text).unwrap();
        text
    });
    let got = got.as_deref().map_err(|e| Errno::from_raw(e.raw_os_error().unwrap_or(0)));
    assert_eq!(got, expect, "{rel}");
}

/// `name` says which way `open` goes; a symlink on the way fails openat2 with ELOOP, the
/// component walk (`O_DIRECTORY | O_NOFOLLOW`) with ENOTDIR.
fn table(name: &str, open: Opener, refused: Errno) {
    let tree = Tree::new(name);
    check(&tree, open, "a/b/f.txt", Ok("inside"));
    // A symlink anywhere on the way fails the open, even one that stays inside: the policy
    // resolved them all, so meeting one means the tree changed since.
    check(&tree, open, "a/in/f.txt", Err(refused));
    check(&tree, open, "out/secret.txt", Err(refused));
    check(&tree, open, "a/missing.txt", Err(Errno::ENOENT));
    check(&tree, open, "a/b/f.txt/", Err(Errno::ENOTDIR));
    // Never produced by the policy, refused all the same (an error of replay's own, no errno).
    check(&tree, open, "../outside/secret.txt", Err(Errno::UnknownErrno));
    check(&tree, open, "a/../../outside/secret.txt", Err(Errno::UnknownErrno));
    check(&tree, open, "/etc/hostname", Err(Errno::UnknownErrno));
    // The last component too: a symlink is not followed, and with O_PATH not opened either.
    std::fs::write(tree.base.join("root/plain"), "x").unwrap();
    symlink("plain", tree.base.join("root/last")).unwrap();
    let last = open(tree.root.as_fd(), Path::new("last"), OFlag::O_PATH, Mode::empty());
    assert_eq!(last.unwrap_err().raw_os_error(), Some(Errno::ELOOP as i32), "last, O_PATH");
}

#[test]
fn opens_beneath_with_openat2() {
    if openat2_usable() {
        table("openat2", open_beneath, Errno::ELOOP);
    }
}

#[test]
fn opens_beneath_one_component_at_a_time() {
    table("walk", open_by_components, Errno::ENOTDIR);
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
            let open: Opener = if i % 2 == 0 { open_beneath } else { open_by_components };
            let rel = Path::new("a/b/secret.txt");
            let opened = open(tree.root.as_fd(), rel, OFlag::O_RDONLY, Mode::empty());
            let other =
                open(tree.root.as_fd(), Path::new("a/b/f.txt"), OFlag::O_RDONLY, Mode::empty());
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
