//! Trees deeper than any recursion could take: every tree operation at depth 20,000, and the server lives on.
//!
//! See: issue #13, item 3. A client can build such a tree (create_directory makes 2,000 levels in
//! one call). Done by recursion, copy_file overflows its stack at depth 1,000, a move across
//! filesystems at 1,500 and delete_file at 15,000, and the whole server dies with it. The chains here are built, checked and removed one level at a time
//! through directory handles: their paths are ten times PATH_MAX, and `std::fs::remove_dir_all`
//! recurses.

use std::ffi::OsStr;
use std::fs;
use std::os::fd::{AsFd, OwnedFd};
#[cfg(target_os = "linux")]
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{open, openat, readlinkat, renameat, OFlag};
use nix::sys::stat::{fstatat, mkdirat, Mode, SFlag};
use nix::unistd::{symlinkat, unlinkat, write, UnlinkatFlags};
use serde_json::json;

use crate::harness::{path_str, require, unique_name, Server, WHOLE_REPLIES};

/// Levels below the chain's top directory.
const DEPTH: usize = 20_000;
/// `f.txt` is at the top and every this many levels below it (and at the bottom).
const FILE_EVERY: usize = 1_000;
const FILE_TEXT: &[u8] = b"needle\n";

fn dir_flags() -> OFlag {
    OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC
}

/// Makes `top` and `depth` nested directories `d` below it, one `mkdirat` at a time; `f.txt`
/// at level 0 and every `FILE_EVERY` levels, and at the bottom `f.txt` and a symlink `l -> f.txt`.
fn make_chain(top: &Path, depth: usize) {
    fs::create_dir(top).unwrap_or_else(|e| panic!("creating {}: {e}", top.display()));
    let mut dir = open(top, dir_flags(), Mode::empty()).expect("open top");
    for level in 0..=depth {
        if level % FILE_EVERY == 0 || level == depth {
            let flags = OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_CLOEXEC;
            let file = openat(dir.as_fd(), "f.txt", flags, Mode::from_bits_truncate(0o644))
                .expect("create f.txt");
            write(&file, FILE_TEXT).expect("write f.txt");
        }
        if level == depth {
            symlinkat("f.txt", dir.as_fd(), "l").expect("symlink");
            break;
        }
        mkdirat(dir.as_fd(), "d", Mode::from_bits_truncate(0o755)).expect("mkdirat");
        dir = openat(dir.as_fd(), "d", dir_flags(), Mode::empty()).expect("openat d");
    }
}

/// Checks that `top` holds the chain `make_chain` makes, level by level.
#[track_caller]
fn assert_chain(top: &Path, depth: usize) {
    let mut dir = open(top, dir_flags(), Mode::empty())
        .unwrap_or_else(|e| panic!("opening {}: {e}", top.display()));
    for level in 0..=depth {
        let has_file = level % FILE_EVERY == 0 || level == depth;
        let names = names_in(&dir);
        let mut expected: Vec<&str> = Vec::new();
        if level < depth {
            expected.push("d");
        }
        if has_file {
            expected.push("f.txt");
        }
        if level == depth {
            expected.push("l");
        }
        assert_eq!(names, expected, "level {level} of {}", top.display());
        if has_file {
            let file = openat(dir.as_fd(), "f.txt", OFlag::O_RDONLY, Mode::empty()).expect("f");
            let mut buf = [0u8; 64];
            let n = nix::unistd::read(&file, &mut buf).expect("read f.txt");
            assert_eq!(&buf[..n], FILE_TEXT, "f.txt at level {level}");
        }
        if level == depth {
            let stat = fstatat(dir.as_fd(), "l", nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW)
                .expect("stat l");
            assert_eq!(stat.st_mode & SFlag::S_IFMT.bits(), SFlag::S_IFLNK.bits(), "l is a link");
            let target = readlinkat(dir.as_fd(), "l").expect("readlink l");
            assert_eq!(target, OsStr::new("f.txt"));
            return;
        }
        dir = openat(dir.as_fd(), "d", dir_flags(), Mode::empty())
            .unwrap_or_else(|e| panic!("level {level}: opening d: {e}"));
    }
}

/// The names in an open directory, sorted, without `.` and `..`.
fn names_in(dir: &OwnedFd) -> Vec<String> {
    let mut stream = nix::dir::Dir::from_fd(dir.try_clone().expect("dup")).expect("readdir");
    let mut names: Vec<String> = stream
        .iter()
        .map(|e| String::from_utf8_lossy(e.expect("entry").file_name().to_bytes()).into_owned())
        .filter(|n| n != "." && n != "..")
        .collect();
    names.sort();
    names
}

/// Removes a chain (or what is left of one) a level at a time: the level's files go, its `d` is
/// renamed up in its place, and the emptied level is removed. No recursion, two handles.
fn remove_chain(top: &Path) {
    let (Some(parent), Some(name)) = (top.parent(), top.file_name()) else { return };
    let Ok(parent) = open(parent, dir_flags(), Mode::empty()) else { return };
    let spare = OsStr::new(".chain-spare");
    loop {
        let Ok(dir) = openat(parent.as_fd(), name, dir_flags(), Mode::empty()) else { return };
        for entry in names_in(&dir).into_iter().filter(|n| n != "d") {
            if unlinkat(dir.as_fd(), entry.as_str(), UnlinkatFlags::NoRemoveDir).is_err() {
                let _ = unlinkat(dir.as_fd(), entry.as_str(), UnlinkatFlags::RemoveDir);
            }
        }
        match renameat(dir.as_fd(), "d", parent.as_fd(), spare) {
            Ok(()) => {
                drop(dir);
                let _ = unlinkat(parent.as_fd(), name, UnlinkatFlags::RemoveDir);
                if renameat(parent.as_fd(), spare, parent.as_fd(), name).is_err() {
                    return;
                }
            }
            Err(Errno::ENOENT) => {
                let _ = unlinkat(parent.as_fd(), name, UnlinkatFlags::RemoveDir);
                return;
            }
            Err(_) => return,
        }
    }
}

/// A scratch directory for the deep trees, on tmpfs (`/dev/shm`): there, removing 20,000
/// directories takes a fraction of a second, where this machine's ext4 (mounted with
/// `discard`) takes a minute. Removed when dropped, deep chains first (`std::fs::remove_dir_all`
/// recurses, and would overflow the test's stack).
struct Scratch {
    dir: PathBuf,
    chains: Vec<PathBuf>,
}

impl Scratch {
    /// A scratch directory on tmpfs (`/dev/shm`) on Linux, where removing the chains from ext4
    /// takes a minute; in the temp directory elsewhere (macOS has no tmpfs there). `None` when
    /// it cannot be made; see `require`.
    fn new(name: &str) -> Option<Scratch> {
        let base = if cfg!(target_os = "linux") {
            PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        let scratch = Scratch::on(&base, name);
        let why = format!("a writable {} for trees 20,000 levels deep", base.display());
        if !require(&why, scratch.is_some()) {
            return None;
        }
        scratch
    }

    /// A scratch directory in `base`, if one can be made there.
    fn on(base: &Path, name: &str) -> Option<Scratch> {
        let dir = base.join(unique_name(&format!("replay-deep-{name}")));
        fs::create_dir(&dir).ok()?;
        let dir = fs::canonicalize(&dir).ok()?;
        Some(Scratch { dir, chains: Vec::new() })
    }

    #[cfg(target_os = "linux")]
    fn dev(&self) -> Option<u64> {
        fs::metadata(&self.dir).map(|m| m.dev()).ok()
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.join(rel)
    }

    fn p(&self, rel: &str) -> String {
        path_str(&self.path(rel))
    }

    /// A chain `DEPTH` levels deep at `path` (anywhere), removed with the scratch directory.
    fn chain(&mut self, path: PathBuf) {
        make_chain(&path, DEPTH);
        self.chains.push(path);
    }

    /// Removes `path` like a chain when the scratch directory goes.
    fn remove_later(&mut self, path: PathBuf) {
        self.chains.push(path);
    }

    /// `replay --mcp-server --no-sandbox` allowing the scratch directory (and `more`)
    /// read-write. Without the sandbox: Landlock checks each access by walking up from the
    /// directory to its rule, so every step 20,000 levels down costs 20,000 steps in the kernel
    /// (deleting this tree took 168 s under Landlock, 0.9 s without). `sandboxed_server` is
    /// for the shallower trees that test the same under the sandbox.
    fn server(&self, more: &[&Path]) -> Server {
        let mut args = vec![
            "--mcp-server".to_owned(),
            "--no-sandbox".to_owned(),
            "--allow".to_owned(),
            format!("{}:rw", path_str(&self.dir)),
        ];
        for dir in more {
            args.push("--allow".to_owned());
            args.push(format!("{}:rw", path_str(dir)));
        }
        // Paths of 4,096 bytes: a few fill the default token budget before the walks' notes.
        args.extend(WHOLE_REPLIES.map(str::to_owned));
        Server::start_with(args)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        for top in &self.chains {
            remove_chain(top);
        }
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// The server answers a ping: it survived the call before.
#[track_caller]
fn assert_alive(server: &mut Server) {
    assert_eq!(server.request("ping", json!({})).result(), &json!({}), "{}", server.stderr());
}

#[test]
fn delete_file_removes_a_20000_deep_tree() {
    let Some(mut scratch) = Scratch::new("delete") else { return };
    scratch.chain(scratch.path("deep"));
    let mut server = scratch.server(&[]);
    let text = server.call_text("delete_file", json!({"path": scratch.p("deep")}));
    assert_eq!(text, format!("Deleted {}", scratch.p("deep")));
    assert!(fs::read_dir(&scratch.dir).expect("read_dir").next().is_none(), "something is left");
    assert_alive(&mut server);
}

#[test]
fn copy_file_copies_a_20000_deep_tree() {
    let Some(mut scratch) = Scratch::new("copy") else { return };
    scratch.chain(scratch.path("deep"));
    scratch.remove_later(scratch.path("copy"));
    let mut server = scratch.server(&[]);
    let args = json!({"source": scratch.p("deep"), "destination": scratch.p("copy")});
    let text = server.call_text("copy_file", args);
    assert_eq!(text, format!("Copied {} -> {}", scratch.p("deep"), scratch.p("copy")));
    assert_chain(&scratch.path("copy"), DEPTH);
    assert_chain(&scratch.path("deep"), DEPTH);
    let mut names: Vec<String> = fs::read_dir(&scratch.dir)
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["copy", "deep"], "a temp copy was left behind");
    assert_alive(&mut server);
}

/// From tmpfs to another filesystem: the move copies, then removes the source. The other one
/// is devtmpfs (`/dev`) where the tests may write there (as root, in CI), else the temp
/// directory: on this machine's ext4, mounted with `discard`, removing the moved tree afterwards
/// takes a minute. Both are Linux's, so this test is built there only.
#[test]
#[cfg(target_os = "linux")]
fn move_file_across_filesystems_moves_a_20000_deep_tree() {
    let Some(mut scratch) = Scratch::new("move") else { return };
    let other = [Path::new("/dev"), &std::env::temp_dir()]
        .into_iter()
        .filter_map(|base| Scratch::on(base, "move-to"))
        .find(|other| other.dev() != scratch.dev());
    let Some(mut other) = other else {
        require("a writable directory on another filesystem than /dev/shm", false);
        return;
    };
    scratch.chain(scratch.path("deep"));
    other.remove_later(other.path("deep"));
    let mut server = scratch.server(&[&other.dir]);
    let args = json!({"source": scratch.p("deep"), "destination": other.p("deep")});
    let text = server.call_text("move_file", args);
    assert_eq!(text, format!("Moved {} -> {}", scratch.p("deep"), other.p("deep")));
    assert!(!scratch.path("deep").exists(), "the source is still there");
    assert_chain(&other.path("deep"), DEPTH);
    assert_alive(&mut server);
}

/// directory_tree renders the first levels of a deep tree and says where it stopped: JSON
/// nested deeper than about a hundred levels is refused by common parsers (serde_json stops at
/// 128), this test's harness included.
#[test]
fn directory_tree_of_a_20000_deep_tree_is_cut_with_a_note() {
    let Some(mut scratch) = Scratch::new("tree") else { return };
    scratch.chain(scratch.path("deep"));
    let mut server = scratch.server(&[]);
    for format in ["json", "text"] {
        let args = json!({"path": scratch.p("deep"), "format": format});
        let reply = server.call("directory_tree", args);
        let texts = reply.texts();
        let note = texts.last().expect("a note");
        assert!(note.contains("levels"), "[{format}] no note on the cut: {note}");
        assert!(reply.line.len() < 1 << 20, "[{format}] a {} byte reply", reply.line.len());
    }
    assert_alive(&mut server);
}

/// The walks (search_files, glob_search, grep_files, edit_files' globs) go as deep as a path a
/// client could name (4096 bytes), say so, and answer.
#[test]
fn walks_over_a_20000_deep_tree_answer() {
    let Some(mut scratch) = Scratch::new("walks") else { return };
    scratch.chain(scratch.path("deep"));
    let mut server = scratch.server(&[]);
    let top_file = scratch.p("deep/f.txt");
    let deep = scratch.p("deep");
    let calls = [
        ("search_files", json!({"directory": deep, "nameContains": "f.txt"})),
        ("glob_search", json!({"directory": deep, "globs": ["**/f.txt"], "max": 0})),
        ("grep_files", json!({"directory": deep, "regex": "needle"})),
        (
            "edit_files",
            json!({"paths": [format!("{deep}/**/f.txt")],
                   "edits": [{"oldText": "needle", "newText": "pin"}], "dryRun": true}),
        ),
    ];
    for (tool, args) in calls {
        let reply = server.call(tool, args);
        let all = reply.texts().join("\n");
        let start = &all[..all.len().min(2000)];
        assert!(all.contains(&top_file), "[{tool}] the top's file is missing: {start}");
        assert!(all.contains("4096"), "[{tool}] no note on the paths left out: {start}");
        assert!(reply.line.len() < 8 << 20, "[{tool}] a {} byte reply", reply.line.len());
    }
    assert_alive(&mut server);
}

/// Under the Landlock sandbox, deeper than copy_file's recursion used to reach (it died at
/// 1,000 levels), but shallow enough for the kernel's checks, which cost time in proportion to
/// the depth (1,200 levels: about a second here).
#[test]
fn deep_trees_under_the_sandbox() {
    const SANDBOXED_DEPTH: usize = 1_200;
    let Some(mut scratch) = Scratch::new("sandboxed") else { return };
    make_chain(&scratch.path("deep"), SANDBOXED_DEPTH);
    scratch.remove_later(scratch.path("deep"));
    scratch.remove_later(scratch.path("copy"));
    let mut server = Server::start_with([
        "--mcp-server".to_owned(),
        "--allow".to_owned(),
        format!("{}:rw", path_str(&scratch.dir)),
    ]);
    let args = json!({"source": scratch.p("deep"), "destination": scratch.p("copy")});
    server.call_text("copy_file", args);
    assert_chain(&scratch.path("copy"), SANDBOXED_DEPTH);
    let text = server.call_text("delete_file", json!({"path": scratch.p("deep")}));
    assert_eq!(text, format!("Deleted {}", scratch.p("deep")));
    assert!(!scratch.path("deep").exists());
    assert_alive(&mut server);
}
