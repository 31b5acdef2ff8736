//! Glob splitting and matching, walk order, exclusion.

use super::glob::*;
use super::*;
use crate::policy::{Access, AllowedRoot, Policy};
use crate::progress::Progress;

/// `root` as the policy hands it to a walk: a directory allowed by a policy of its own.
fn resolved(root: &Path) -> ResolvedPath {
    let root = std::fs::canonicalize(root).unwrap();
    let policy = Policy::new(
        vec![AllowedRoot { path: root.clone(), access: Access::Read }],
        None,
        Default::default(),
    );
    policy.resolve_read(root.to_str().unwrap()).unwrap()
}

#[track_caller]
fn check(pattern: &str, expect: (&str, &str)) {
    let (base, rest) = split_glob(pattern);
    assert_eq!((base.to_str().unwrap(), rest.as_str()), expect, "{pattern}");
}

#[test]
fn splitting() {
    check("/src/app/**/*.rs", ("/src/app", "**/*.rs"));
    check("/src/*.rs", ("/src", "*.rs"));
    check("*.rs", ("", "*.rs"));
    check("src/{a,b}/x.txt", ("src", "{a,b}/x.txt"));
    check("/a/b/c.txt", ("/a/b", "c.txt"));
    check("/*", ("/", "*"));
    check("a/[ab]/**", ("a", "[ab]/**"));
}

#[test]
fn glob_detection() {
    for s in ["*.rs", "a?", "{a,b}", "x[0-9]", "}"] {
        assert!(is_glob(s), "{s}");
    }
    for s in ["/a/b.rs", "plain", "a-b_c.d"] {
        assert!(!is_glob(s), "{s}");
    }
}

#[test]
fn matching() {
    let set = glob_set("globs", &["**/*.rs".to_string(), "*.md".to_string()]).unwrap();
    assert!(set.is_match("a/b/c.rs"));
    assert!(set.is_match("c.rs"));
    assert!(set.is_match("README.md"));
    assert!(!set.is_match("docs/README.md"));
    let err = glob_set("globs", &["a[".to_string()]).unwrap_err();
    assert!(err.to_string().contains("invalid glob"), "{err}");
}

#[test]
fn order_is_depth_first_by_name() {
    let mut paths = vec!["a.txt", "a/b", "a", "a/b/c", "a-b", "B", "a/a"];
    paths.sort_by(|a, b| path_order(Path::new(a), Path::new(b)));
    assert_eq!(paths, ["B", "a", "a/a", "a/b", "a/b/c", "a-b", "a.txt"]);
}

/// The skip over a common prefix changes nothing: every pair of short paths over a few bytes,
/// with prefixes long enough to cross the 32-byte steps, orders as a byte-by-byte comparison
/// with `/` lowest does.
#[test]
fn order_agrees_with_the_byte_by_byte_comparison() {
    let model = |a: &str, b: &str| {
        let key = |byte: u8| if byte == b'/' { 0 } else { u16::from(byte) + 1 };
        a.bytes().map(key).cmp(b.bytes().map(key))
    };
    let mut tails = vec![String::new()];
    for _ in 0..3 {
        let longer: Vec<String> = tails
            .iter()
            .filter(|t| t.len() == tails.last().map_or(0, String::len))
            .flat_map(|t| ["a", "/", "-", "b"].map(|c| format!("{t}{c}")))
            .collect();
        tails.extend(longer);
    }
    for prefix in ["", "x", &"p/".repeat(16), &"q".repeat(63)] {
        for a in &tails {
            for b in &tails {
                let (a, b) = (format!("{prefix}{a}"), format!("{prefix}{b}"));
                assert_eq!(path_order(Path::new(&a), Path::new(&b)), model(&a, &b), "{a} {b}");
            }
        }
    }
}

#[test]
fn walks_sorted_without_following_links_and_honors_excludes() {
    let root = std::env::temp_dir().join(format!("replay-walk-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    for dir in ["x/y", "skip/deep", ".git", "z"] {
        std::fs::create_dir_all(root.join(dir)).unwrap();
    }
    for file in
        ["x/y/f.rs", "skip/deep/g.rs", ".git/HEAD", "z/ignored.log", "top.txt", ".replay-tmp.1.2"]
    {
        std::fs::write(root.join(file), "x").unwrap();
    }
    std::fs::write(root.join(".gitignore"), "*.log\n").unwrap();
    std::os::unix::fs::symlink("/", root.join("x/out")).unwrap();
    let names = |options: &WalkOptions| -> Vec<String> {
        let (walked, _) = entries(&resolved(&root), options).unwrap();
        walked.iter().map(|e| e.rel().display().to_string()).collect()
    };
    let all = names(&WalkOptions::default());
    assert_eq!(
        all,
        [
            ".git",
            ".git/HEAD",
            ".gitignore",
            "skip",
            "skip/deep",
            "skip/deep/g.rs",
            "top.txt",
            "x",
            "x/out",
            "x/y",
            "x/y/f.rs",
            "z",
            "z/ignored.log"
        ]
    );
    let exclude = Exclude::new(&["skip".to_string()]).unwrap();
    let excluded = names(&WalkOptions { exclude, ..Default::default() });
    assert!(!excluded.iter().any(|n| n.starts_with("skip")), "{excluded:?}");
    let ignored = names(&WalkOptions { respect_gitignore: true, ..Default::default() });
    assert!(!ignored.iter().any(|n| n.starts_with(".git/") || n.ends_with(".log")), "{ignored:?}");
    assert!(ignored.contains(&".gitignore".to_string()));
    let shallow = names(&WalkOptions { max_depth: Some(1), ..Default::default() });
    assert_eq!(shallow, [".git", ".gitignore", "skip", "top.txt", "x", "z"]);
    std::fs::remove_dir_all(&root).unwrap();
}

/// A visitor that panics ends the walk with that panic (for the call's `catch_unwind`), on
/// whichever thread it ran, instead of leaving the other walker threads waiting for it.
#[test]
fn a_panicking_visitor_does_not_hang_the_walk() {
    let root = std::env::temp_dir().join(format!("replay-walk-panic-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    for i in 0..50 {
        std::fs::create_dir_all(root.join(format!("d{i}/e"))).unwrap();
    }
    let resolved = resolved(&root);
    let walked = std::panic::catch_unwind(|| {
        visit(&resolved, &WalkOptions::default(), || {
            |entry: Entry| {
                if entry.rel().components().count() == 2 {
                    panic!("visitor failed");
                }
            }
        })
    });
    assert!(walked.is_err());
    std::fs::remove_dir_all(&root).unwrap();
}

/// A walk given a `Tally` counts what it reports as progress; one given a `Cancel` stops at
/// once when it is set before, and soon after when it is set mid-walk (by a visitor here, as a
/// client's cancel would arrive).
#[test]
fn walks_report_progress_and_stop_when_cancelled() {
    use std::sync::atomic::AtomicUsize;

    let root = std::env::temp_dir().join(format!("replay-walk-cancel-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    for i in 0..200 {
        let dir = root.join(format!("d{}", i % 10));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("f{i}")), "x").unwrap();
    }
    let sent: Arc<Mutex<Vec<(u64, String)>>> = Arc::default();
    let sink = Arc::clone(&sent);
    let progress = Progress::new(move |done, _total, message| {
        sink.lock().unwrap().push((done, message));
    });
    let tally = Tally::new(&progress, |n| format!("walked {n} entries"));
    let (all, _) =
        entries(&resolved(&root), &WalkOptions { tally: Some(&tally), ..Default::default() })
            .unwrap();
    assert_eq!(all.len(), 210);
    let sent = sent.lock().unwrap().clone();
    assert_eq!(sent.first(), Some(&(32, "walked 32 entries".to_string())), "{sent:?}");
    assert!(sent.windows(2).all(|w| w[0].0 < w[1].0), "{sent:?}");

    let cancel = Cancel::default();
    cancel.cancel();
    let options = WalkOptions { cancel: Some(&cancel), ..Default::default() };
    assert!(entries(&resolved(&root), &options).unwrap().0.is_empty());

    let cancel = Cancel::default();
    let seen = AtomicUsize::new(0);
    let options = WalkOptions { cancel: Some(&cancel), ..Default::default() };
    visit(&resolved(&root), &options, || {
        |_entry| {
            if seen.fetch_add(1, AtomicOrdering::Relaxed) + 1 == 10 {
                cancel.cancel();
            }
        }
    })
    .unwrap();
    // Each walker thread may finish the entry it holds, no more.
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let seen = seen.load(AtomicOrdering::Relaxed);
    assert!(seen < 10 + threads, "{seen} entries visited after a cancel at 10");
    std::fs::remove_dir_all(&root).unwrap();
}

/// Entries whose paths pass 4096 bytes are counted, not reported nor entered: no tool could
/// name them, and a deep tree's paths would cost its depth squared.
#[test]
fn paths_over_4096_bytes_are_left_out_and_counted() {
    let root = std::env::temp_dir().join(format!("replay-walk-long-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let name = "n".repeat(200);
    std::fs::create_dir_all(&root).unwrap();
    // Made through handles: the whole path is too long for mkdir.
    let flags = nix::fcntl::OFlag::O_RDONLY | nix::fcntl::OFlag::O_DIRECTORY;
    let mode = nix::sys::stat::Mode::from_bits_truncate(0o755);
    let mut dir = nix::fcntl::open(&root, flags, nix::sys::stat::Mode::empty()).unwrap();
    for _ in 0..30 {
        nix::sys::stat::mkdirat(dir.as_fd(), name.as_str(), mode).unwrap();
        dir = nix::fcntl::openat(dir.as_fd(), name.as_str(), flags, mode).unwrap();
    }
    let (walked, summary) = entries(&resolved(&root), &WalkOptions::default()).unwrap();
    let root_len = root.as_os_str().len();
    let fitting = (4096 - root_len) / 201;
    assert_eq!(walked.len(), fitting);
    assert!(walked.iter().all(|e| root.join(e.rel()).as_os_str().len() <= 4096));
    assert_eq!(summary, Summary { too_long: 1, denied: 0, unreadable: 0 });
    assert!(summary.note().unwrap().contains("4096 bytes"));
    let top = nix::fcntl::open(&root, flags, nix::sys::stat::Mode::empty()).unwrap();
    crate::fs::tree::remove_at(top.as_fd(), std::ffi::OsStr::new(&name), &crate::fs::tree::never)
        .unwrap();
    std::fs::remove_dir_all(&root).unwrap();
}
