//! Removing and copying trees through handles: links never followed, handles bounded at any depth.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use nix::fcntl::OFlag;

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
        // On tmpfs where there is one: removing thousands of directories from a filesystem
        // mounted with `discard` takes a minute.
        let shm = Path::new("/dev/shm");
        let scratch = if shm.is_dir() { shm.to_path_buf() } else { std::env::temp_dir() };
        let base = scratch.join(format!("replay-tree-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(base.join("root/a/b")).unwrap();
        std::fs::create_dir_all(base.join("outside")).unwrap();
        std::fs::write(base.join("root/a/b/f.txt"), "inside").unwrap();
        std::fs::write(base.join("outside/secret.txt"), "secret").unwrap();
        symlink("b", base.join("root/a/in")).unwrap();
        symlink("../outside", base.join("root/out")).unwrap();
        let root = nix::fcntl::open(&base.join("root"), dir_flags(), Mode::empty()).unwrap();
        Tree { base, root }
    }

    /// `depth` nested directories `d` below `root/<name>`, with a file `f` every 100 levels (a
    /// copied file is synced: thousands would take a minute).
    fn chain(&self, name: &str, depth: usize) {
        mkdirat(self.root.as_fd(), name, Mode::from_bits_truncate(0o755)).unwrap();
        let mut dir = confined::open_subdir(self.root.as_fd(), OsStr::new(name)).unwrap();
        for level in 0..depth {
            let flags = OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_CLOEXEC;
            if level % 100 == 0 {
                drop(openat(dir.as_fd(), "f", flags, Mode::from_bits_truncate(0o644)).unwrap());
            }
            mkdirat(dir.as_fd(), "d", Mode::from_bits_truncate(0o755)).unwrap();
            dir = confined::open_subdir(dir.as_fd(), OsStr::new("d")).unwrap();
        }
    }

    /// How deep the chain `root/<name>` goes (by `d`), checking the files `f`.
    fn chain_depth(&self, name: &str) -> usize {
        let mut dir = confined::open_subdir(self.root.as_fd(), OsStr::new(name)).unwrap();
        let mut depth = 0;
        while let Ok(next) = confined::open_subdir(dir.as_fd(), OsStr::new("d")) {
            let has_file = confined::stat_at(dir.as_fd(), OsStr::new("f")).is_ok();
            assert_eq!(has_file, depth % 100 == 0, "f at level {depth}");
            dir = next;
            depth += 1;
        }
        depth
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        // The deep chains are removed by the tests themselves (std's removal recurses).
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

fn dir_flags() -> OFlag {
    OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC
}

#[test]
fn removes_a_tree_without_following_its_links() {
    let tree = Tree::new("remove");
    symlink(tree.base.join("outside"), tree.base.join("root/a/b/link_out")).unwrap();
    remove_at(tree.root.as_fd(), OsStr::new("a"), &never).unwrap();
    assert!(!tree.base.join("root/a").exists());
    assert_eq!(std::fs::read_to_string(tree.base.join("outside/secret.txt")).unwrap(), "secret");
}

#[test]
fn copies_a_tree_with_links_as_links() {
    let tree = Tree::new("copy");
    std::fs::set_permissions(
        tree.base.join("root/a/b/f.txt"),
        std::os::unix::fs::PermissionsExt::from_mode(0o640),
    )
    .unwrap();
    std::fs::write(tree.base.join("root/a/tool"), "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(
        tree.base.join("root/a/tool"),
        std::os::unix::fs::PermissionsExt::from_mode(0o4755),
    )
    .unwrap();
    copy_at(tree.root.as_fd(), OsStr::new("a"), tree.root.as_fd(), OsStr::new("c"), &never)
        .unwrap();
    let copied = tree.base.join("root/c");
    assert_eq!(std::fs::read_to_string(copied.join("b/f.txt")).unwrap(), "inside");
    assert_eq!(std::fs::read_link(copied.join("in")).unwrap(), Path::new("b"));
    let mode = std::fs::metadata(copied.join("b/f.txt")).unwrap();
    assert_eq!(std::os::unix::fs::PermissionsExt::mode(&mode.permissions()) & 0o777, 0o640);
    // setuid is not copied, as `cp` without `-p` does.
    let tool = std::fs::metadata(copied.join("tool")).unwrap();
    assert_eq!(std::os::unix::fs::PermissionsExt::mode(&tool.permissions()) & 0o7777, 0o755);
    // The destination must not exist.
    let again =
        copy_at(tree.root.as_fd(), OsStr::new("a"), tree.root.as_fd(), OsStr::new("c"), &never);
    assert_eq!(again.unwrap_err().kind(), io::ErrorKind::AlreadyExists);
}

#[test]
fn copies_an_open_file_or_directory() {
    let tree = Tree::new("copy-open");
    let root = tree.base.join("root");
    let file = File::open(root.join("a/b/f.txt")).unwrap();
    copy_open(&file, tree.root.as_fd(), OsStr::new("g.txt"), &never).unwrap();
    assert_eq!(std::fs::read_to_string(root.join("g.txt")).unwrap(), "inside");
    let dir = File::open(root.join("a")).unwrap();
    copy_open(&dir, tree.root.as_fd(), OsStr::new("a2"), &never).unwrap();
    assert_eq!(std::fs::read_to_string(root.join("a2/b/f.txt")).unwrap(), "inside");
    assert_eq!(std::fs::read_link(root.join("a2/in")).unwrap(), Path::new("b"));
    let again = copy_open(&dir, tree.root.as_fd(), OsStr::new("a2"), &never);
    assert_eq!(again.unwrap_err().kind(), io::ErrorKind::AlreadyExists);
}

/// A copy whose destination turns out to lie inside its source (the tree renamed under it)
/// copies what is there once, and not itself: it ends.
#[test]
fn a_copy_inside_its_source_does_not_copy_itself() {
    let tree = Tree::new("copy-into-itself");
    let a = tree.base.join("root/a");
    let source = File::open(&a).unwrap();
    copy_open(&source, source.as_fd(), OsStr::new("inner"), &never).unwrap();
    assert_eq!(std::fs::read_to_string(a.join("inner/b/f.txt")).unwrap(), "inside");
    assert!(!a.join("inner/inner").exists());
}

/// Trees far deeper than a thread's stack could recurse through are removed and copied, with a
/// bounded number of handles.
#[test]
fn deep_chains_are_copied_and_removed() {
    let tree = Tree::new("deep");
    tree.chain("deep", 5_000);
    copy_at(tree.root.as_fd(), OsStr::new("deep"), tree.root.as_fd(), OsStr::new("copy"), &never)
        .unwrap();
    assert_eq!(tree.chain_depth("copy"), 5_000);
    remove_at(tree.root.as_fd(), OsStr::new("deep"), &never).unwrap();
    discard_at(tree.root.as_fd(), OsStr::new("copy")).unwrap();
    assert!(!tree.base.join("root/deep").exists() && !tree.base.join("root/copy").exists());
}

/// Stopped, a removal leaves what it had not reached, and says so.
#[test]
fn a_stopped_removal_stops() {
    let tree = Tree::new("stop");
    tree.chain("deep", 50);
    let steps = std::cell::Cell::new(0);
    let stop = || {
        steps.set(steps.get() + 1);
        steps.get() > 10
    };
    let e = remove_at(tree.root.as_fd(), OsStr::new("deep"), &stop).unwrap_err();
    assert_eq!(e.to_string(), "cancelled");
    assert!(tree.base.join("root/deep").exists());
}

/// A descent down 2,000 levels with room for 4 + 4 handles never holds more than that (plus
/// the top and one being opened), and comes back up through every level, reopening as it goes.
#[test]
fn a_descent_holds_few_handles_at_any_depth() {
    let tree = Tree::new("descent");
    tree.chain("deep", 2_000);
    let limits = Limits { window: 4, anchors: 4 };
    let top = confined::open_subdir(tree.root.as_fd(), OsStr::new("deep")).unwrap();
    let mut descent = Descent::new(top, limits).unwrap();
    let bound = |d: &Descent| limits.window + limits.anchors + 2 >= d.open;
    for level in 0..2_000 {
        let here = descent.current().unwrap();
        let next = confined::open_subdir(here, OsStr::new("d")).unwrap();
        descent.enter(OsStr::new("d"), next).unwrap();
        assert!(bound(&descent), "{} handles at level {level}", descent.open);
    }
    for level in (0..2_000).rev() {
        let here = descent.current().unwrap();
        let has_file = confined::stat_at(here, OsStr::new("f")).is_ok();
        assert_eq!(has_file, (level + 1) % 100 == 0 && level < 1_999, "f at level {}", level + 1);
        assert!(bound(&descent), "{} handles going up at level {level}", descent.open);
        assert_eq!(descent.leave(), "d");
    }
    assert_eq!(descent.levels.len(), 1);
    remove_at(tree.root.as_fd(), OsStr::new("deep"), &never).unwrap();
}

/// A directory replaced while its handle was closed is not mistaken for the one that was there.
#[test]
fn a_descent_notices_a_replaced_directory() {
    let tree = Tree::new("replaced");
    tree.chain("deep", 20);
    let limits = Limits { window: 2, anchors: 2 };
    let top = confined::open_subdir(tree.root.as_fd(), OsStr::new("deep")).unwrap();
    let mut descent = Descent::new(top, limits).unwrap();
    for _ in 0..20 {
        let next = confined::open_subdir(descent.current().unwrap(), OsStr::new("d")).unwrap();
        descent.enter(OsStr::new("d"), next).unwrap();
    }
    // Level 3 (deep/d/d/d) swapped for a fresh directory of the same name.
    let level2 = tree.base.join("root/deep/d/d");
    std::fs::rename(level2.join("d"), tree.base.join("root/moved")).unwrap();
    std::fs::create_dir(level2.join("d")).unwrap();
    let mut failed = false;
    while descent.levels.len() > 1 {
        descent.leave();
        if descent.current().is_err() {
            failed = true;
            break;
        }
    }
    assert!(failed, "the replaced directory was taken for the old one");
}

/// A FIFO where a file was (swapped in after the copy's stat) is refused at once: the open
/// neither waits for a writer nor reads it.
#[test]
fn a_fifo_in_place_of_a_file_is_refused_without_waiting() {
    let tree = Tree::new("fifo");
    nix::unistd::mkfifo(&tree.base.join("root/pipe"), Mode::from_bits_truncate(0o644)).unwrap();
    let root = tree.root.try_clone().unwrap();
    let (sent, got) = std::sync::mpsc::channel();
    // On a thread: a blocking open would hang the test, not fail it.
    std::thread::spawn(move || {
        let _ = sent.send(open_file(root.as_fd(), OsStr::new("pipe")).map(drop));
    });
    let opened = got.recv_timeout(std::time::Duration::from_secs(10)).expect("the open waited");
    assert_eq!(opened.unwrap_err().kind(), io::ErrorKind::Unsupported);
}
