//! Walks on big and tricky trees: searches, trees and listings hold in memory what they report,
//! not the tree, and answer what a whole-tree walk would. Each test computes the expected answer
//! from the filesystem itself (depth-first, siblings by name; breadth-first for a cut tree) and
//! holds the server's reply to it, on trees with names that sort in tricky ways.

use std::fs;
use std::path::Path;

use serde_json::{json, Value};

use crate::harness::{path_str, Server, TestEnv};

/// Names whose order trips a comparison that is not byte order with `/` first: `a-b` and
/// `a.b` sort between `a` and `a/x` only if `/` sorts first, uppercase before lowercase,
/// multi-byte UTF-8 after ASCII, a space and a tab early.
const TRICKY: [&str; 11] = ["a", "a-b", "a.b", "a b", "a\tb", "B", "b", "Ä", "é", "z", "0"];

/// A tree of directories named `TRICKY`, `width` files in each, some nested two and three
/// deep, an empty directory and a symlink, under `root/t`.
fn tricky_tree(width: usize) -> TestEnv {
    let env = TestEnv::new(&["root/t/empty"], &[]);
    for (i, dir) in TRICKY.iter().enumerate() {
        for f in 0..width {
            env.write(&format!("root/t/{dir}/{}f{f:03}.txt", TRICKY[f % TRICKY.len()]), "x");
        }
        if i % 3 == 0 {
            env.write(&format!("root/t/{dir}/{dir}/deep/{dir}.txt"), "y");
        }
        env.write(&format!("root/t/{dir}.txt"), "z");
    }
    env.symlink("a", "root/t/link");
    env
}

/// The sort key of depth-first order with siblings by name: bytes, `/` before any other.
fn depth_first_key(path: &str) -> Vec<u16> {
    path.bytes().map(|b| if b == b'/' { 0 } else { u16::from(b) + 1 }).collect()
}

/// Every entry below `dir` (not following links), as paths below it, and whether each is a
/// regular file.
fn walk(dir: &Path) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in fs::read_dir(&at).expect("read_dir") {
            let entry = entry.expect("entry");
            let kind = entry.file_type().expect("file type");
            let rel = entry.path().strip_prefix(dir).expect("below").to_str().unwrap().to_owned();
            if kind.is_dir() {
                stack.push(entry.path());
            }
            out.push((rel, kind.is_file()));
        }
    }
    out
}

fn listed(text: &str) -> Vec<&str> {
    text.lines().filter(|line| line.starts_with('/')).collect()
}

#[test]
fn search_and_glob_keep_depth_first_order_on_tricky_names() {
    let env = tricky_tree(25);
    let mut server = Server::start(&env);
    let root = env.p("root/t");
    let mut entries = walk(&env.path("root/t"));
    entries.sort_by_key(|(rel, _)| depth_first_key(rel));
    let full = |rel: &str| format!("{root}/{rel}");
    for needle in ["a", "B", "é", ".TXT", "f00", "deep"] {
        let lower = needle.to_lowercase();
        let expected: Vec<String> = entries
            .iter()
            .filter(|(rel, _)| {
                let name = rel.rsplit('/').next().unwrap();
                name.to_lowercase().contains(&lower)
            })
            .map(|(rel, _)| full(rel))
            .collect();
        let text =
            server.call_text("search_files", json!({"directory": root, "nameContains": needle}));
        assert_eq!(listed(&text), expected, "nameContains {needle:?}");
        assert!(!expected.is_empty(), "{needle:?} matches nothing: not a test");
    }
    let files: Vec<String> =
        entries.iter().filter(|(_, file)| *file).map(|(rel, _)| full(rel)).collect();
    let text =
        server.call_text("glob_search", json!({"directory": root, "globs": ["**"], "max": 0}));
    assert_eq!(listed(&text), files);
    // A small max: each walker thread cuts its matches to the first few as it goes, and the
    // first overall must survive that, whichever thread found them.
    for max in [1, 7, 40, 200] {
        let reply = server.call_text(
            "glob_search",
            json!({"directory": root, "globs": ["**/*.txt"], "max": max}),
        );
        assert_eq!(listed(&reply), files[..max], "max {max}");
        assert!(reply.ends_with("or raise max (0 = unlimited)]"), "max {max}: {reply}");
    }
}

/// directory_tree's answer for a cut, computed from the filesystem: the entries within
/// `depth` levels breadth-first (each level in depth-first order), the first `max` of them
/// shown, each directory marked as the server marks it.
struct Expected {
    /// (path below the root, its JSON type, its level), breadth-first.
    order: Vec<(String, &'static str, usize)>,
    depth: usize,
}

impl Expected {
    fn new(dir: &Path, depth: usize) -> Expected {
        let mut order: Vec<(String, &'static str, usize)> = walk(dir)
            .into_iter()
            .map(|(rel, _)| {
                let meta = dir.join(&rel).symlink_metadata().expect("meta");
                let kind = if meta.is_dir() {
                    "directory"
                } else if meta.file_type().is_symlink() {
                    "symlink"
                } else {
                    "file"
                };
                let level = rel.matches('/').count() + 1;
                (rel, kind, level)
            })
            .filter(|(_, _, level)| *level <= depth)
            .collect();
        order.sort_by(|a, b| {
            a.2.cmp(&b.2).then_with(|| depth_first_key(&a.0).cmp(&depth_first_key(&b.0)))
        });
        Expected { order, depth }
    }

    /// The JSON tree with the first `max` entries shown.
    fn tree(&self, name: &str, max: usize) -> Value {
        self.node(name, "", 0, max.min(self.order.len()))
    }

    fn node(&self, name: &str, rel: &str, level: usize, max: usize) -> Value {
        let below = |path: &str| rel.is_empty() || path.starts_with(&format!("{rel}/"));
        let is_child =
            |(path, _, l): &&(String, &str, usize)| *l == level + 1 && parent(path) == rel;
        let mut shown: Vec<&(String, &str, usize)> =
            self.order[..max].iter().filter(is_child).collect();
        shown.sort_by_key(|(path, _, _)| depth_first_key(path));
        let partial = self.order[max..].iter().any(|entry| is_child(&entry));
        if level == self.depth || (partial && shown.is_empty()) {
            return json!({"name": name, "type": "directory", "children": [], "truncated": true});
        }
        let children: Vec<Value> = shown
            .iter()
            .map(|(path, kind, _)| {
                let leaf = path.rsplit('/').next().unwrap();
                match *kind {
                    "directory" => self.node(leaf, path, level + 1, max),
                    kind => json!({"name": leaf, "type": kind}),
                }
            })
            .collect();
        let mut node = json!({"name": name, "type": "directory", "children": children});
        if self.order[max..].iter().any(|(path, _, _)| below(path)) {
            node["truncated"] = json!(true);
        }
        node
    }
}

fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(p, _)| p)
}

#[test]
fn directory_tree_cut_anywhere_shows_the_first_entries_breadth_first() {
    let env = tricky_tree(6);
    let mut server = Server::start(&env);
    let root = env.path("root/t");
    for depth in [1, 2, 3, 50] {
        let expected = Expected::new(&root, depth);
        let n = expected.order.len();
        for max in [0, 1, 2, 11, 12, 13, 30, n / 2, n - 1, n, n + 1] {
            let args = json!({"path": path_str(&root), "depth": depth, "maxEntries": max});
            let reply = server.call("directory_tree", args.clone());
            let texts = reply.texts();
            let got: Value = serde_json::from_str(&texts[0]).expect("JSON");
            assert_eq!(got, expected.tree("t", max), "{args}");
            if max < n {
                let note =
                    format!("[truncated: {max} entries shown (maxEntries), the shallowest first");
                assert!(texts[1].starts_with(&note), "{args}: {}", texts[1]);
            } else {
                assert_eq!(texts.len(), 1, "{args}: {texts:?}");
            }
        }
    }
}

/// A directory a cut tree shows without reading it through is marked by what it holds as the
/// walk sees it: one whose entries are all left out (excluded, or replay's temp files) is
/// empty, and one whose only entry comes after hundreds left out is not.
#[test]
fn a_cut_tree_tells_empty_directories_from_cut_ones_as_the_walk_sees_them() {
    let env = TestEnv::new(&[], &[("root/t/a/a1.txt", "1"), ("root/t/e.txt", "e")]);
    for i in 0..300 {
        env.write(&format!("root/t/b/{i:03}-a-name-long-enough-to-fill-a-read.log"), "x");
        env.write(&format!("root/t/d/{i:03}-a-name-long-enough-to-fill-a-read.log"), "x");
    }
    env.write("root/t/c/.replay-tmp.999999999.1", "x");
    env.write("root/t/d/zz.txt", "kept");
    let mut server = Server::start(&env);
    let args = json!({"path": env.p("root/t"), "maxEntries": 5, "excludeGlobs": ["*.log"]});
    let reply = server.call("directory_tree", args);
    let got: Value = serde_json::from_str(&reply.texts()[0]).expect("JSON");
    let cut =
        |name: &str| json!({"name": name, "type": "directory", "children": [], "truncated": true});
    let empty = |name: &str| json!({"name": name, "type": "directory", "children": []});
    let expected = json!({"name": "t", "type": "directory", "children": [
        cut("a"), empty("b"), empty("c"), cut("d"), {"name": "e.txt", "type": "file"}
    ], "truncated": true});
    assert_eq!(got, expected);
}

/// A cut tree reads no more of the tree than it shows: with `maxEntries` 3 over a root of four
/// directories, no directory two levels down is opened, however much lies there (inotify sees
/// every open and read of a directory). The same watch sees them opened by the whole tree,
/// so it is not blind.
#[cfg(target_os = "linux")]
#[test]
fn a_cut_tree_opens_no_directory_below_what_it_shows() {
    let env = TestEnv::new(&[], &[]);
    let mut deep = Vec::new();
    for d in 0..4 {
        for s in 0..4 {
            let rel = format!("root/t/d{d}/s{s}");
            for f in 0..5 {
                env.write(&format!("{rel}/f{f}.txt"), "x");
            }
            deep.push(env.path(&rel));
        }
    }
    // Watched once the walk for the deny rules' covers (`sandbox::covering`, beside the
    // start) is done, which is not the tree's doing: a command waits for it.
    let mut server = Server::start(&env);
    server.call("execute_command", json!({"command": "true"}));
    let watch = DirWatch::new(&deep);
    let cut = server.call("directory_tree", json!({"path": env.p("root/t"), "maxEntries": 3}));
    let got: Value = serde_json::from_str(&cut.texts()[0]).expect("JSON");
    assert_eq!(got["children"].as_array().map(Vec::len), Some(3), "{got}");
    assert_eq!(watch.touched(), Vec::<String>::new(), "directories below the cut were read");
    server.call("directory_tree", json!({"path": env.p("root/t")}));
    assert_eq!(watch.touched().len(), deep.len(), "the whole tree reads every directory");
}

/// An inotify watch for opens and reads of some directories.
#[cfg(target_os = "linux")]
struct DirWatch {
    fd: std::os::fd::OwnedFd,
    names: std::collections::HashMap<i32, String>,
}

#[cfg(target_os = "linux")]
impl DirWatch {
    fn new(dirs: &[std::path::PathBuf]) -> DirWatch {
        use std::os::fd::FromRawFd;
        use std::os::unix::ffi::OsStrExt;
        // SAFETY: plain syscalls; the descriptor is owned from here on.
        let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        assert!(fd >= 0, "inotify_init1: {}", std::io::Error::last_os_error());
        let fd = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
        let mut names = std::collections::HashMap::new();
        for dir in dirs {
            let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).expect("no NUL");
            // SAFETY: `c` is a NUL-terminated path that lives across the call.
            let wd = unsafe {
                libc::inotify_add_watch(
                    std::os::fd::AsRawFd::as_raw_fd(&fd),
                    c.as_ptr(),
                    libc::IN_OPEN | libc::IN_ACCESS,
                )
            };
            assert!(wd >= 0, "inotify_add_watch: {}", std::io::Error::last_os_error());
            names.insert(wd, path_str(dir));
        }
        DirWatch { fd, names }
    }

    /// The watched directories opened or read since the last call, each once, sorted.
    fn touched(&self) -> Vec<String> {
        let mut seen = std::collections::BTreeSet::new();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            // SAFETY: the kernel writes at most `buf.len()` bytes into `buf`.
            let n = unsafe {
                libc::read(
                    std::os::fd::AsRawFd::as_raw_fd(&self.fd),
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                )
            };
            let Ok(n) = usize::try_from(n) else { break };
            if n == 0 {
                break;
            }
            let mut at = 0;
            while at + 16 <= n {
                // struct inotify_event: wd (i32), mask, cookie, len (u32), then len name bytes.
                let wd = i32::from_ne_bytes(buf[at..at + 4].try_into().expect("4 bytes"));
                let len = u32::from_ne_bytes(buf[at + 12..at + 16].try_into().expect("4 bytes"));
                if let Some(name) = self.names.get(&wd) {
                    seen.insert(name.clone());
                }
                at += 16 + len as usize;
            }
        }
        seen.into_iter().collect()
    }
}

/// Many directories shown but not read (peeked into on several threads): each is marked by
/// what it holds, whichever thread looked, and the order stays the walk's.
#[test]
fn a_cut_tree_marks_each_of_hundreds_of_peeked_directories() {
    let env = TestEnv::new(&[], &[]);
    let mut expected = Vec::new();
    for i in 0..300 {
        let name = format!("d{i:03}");
        match i % 3 {
            0 => env.mkdir(&format!("root/t/{name}")),
            1 => env.write(&format!("root/t/{name}/x.log"), "left out"),
            _ => env.write(&format!("root/t/{name}/x.txt"), "shown"),
        }
        let node = if i % 3 == 2 {
            json!({"name": name, "type": "directory", "children": [], "truncated": true})
        } else {
            json!({"name": name, "type": "directory", "children": []})
        };
        expected.push(node);
    }
    let mut server = Server::start(&env);
    let args = json!({"path": env.p("root/t"), "maxEntries": 300, "excludeGlobs": ["*.log"]});
    let reply = server.call("directory_tree", args);
    let got: Value = serde_json::from_str(&reply.texts()[0]).expect("JSON");
    let expected =
        json!({"name": "t", "type": "directory", "children": expected, "truncated": true});
    assert_eq!(got, expected);
}

/// `tools/call` of a directory of 300,000 long names: seconds in an unoptimized build on a
/// busy 2-core machine (10 s, the harness's usual wait, ran out once in CI's load).
#[cfg(target_os = "linux")]
fn slow_call(server: &mut Server, tool: &str, args: Value) -> crate::harness::Response {
    server.send(&json!({"jsonrpc": "2.0", "id": "slow", "method": "tools/call",
        "params": {"name": tool, "arguments": args}}));
    let line = server.next_line_within(std::time::Duration::from_secs(120));
    let value: Value = serde_json::from_str(&line).expect("JSON");
    assert_eq!(value["id"], "slow", "{line:.300}");
    crate::harness::Response { line, value }
}

/// One directory of 300,000 names of 250 bytes, listed and walked as a tree: each reply is cut
/// by the 24 MiB bound, and the server holds little more than the reply.
/// - The listing held every name it read until the end: 134 MB at peak (release build) for a
///   22.7 MB reply. Now it holds only what could still be shown and counts the rest, and shows
///   the same: the first names in the order asked for, the count of the others, and totals
///   over all of them.
/// - The tree kept up to 1,048,000 names whatever their length (the bound counted entries at
///   48 bytes each): 106 MB for a 16 MB reply.
///
/// See: issue #16 (big listings and whole trees: memory follows the reply), the third
/// attacker's finding 1.
#[cfg(target_os = "linux")]
#[test]
fn a_directory_of_long_names_costs_what_its_replies_show() {
    let env = TestEnv::new(&["root/d"], &[]);
    let dir = env.path("root/d");
    let stem = "n".repeat(240);
    let mut names = Vec::new();
    let (mut files, mut bytes) = (0, 0);
    for i in 0..300_000u32 {
        let name = format!("{stem}{i:010}");
        if i % 100 == 7 {
            // Files among the symlinks, of 0 to 96 bytes: sortBy size puts them first.
            fs::write(dir.join(&name), vec![b'x'; (i % 97) as usize]).expect("write");
            files += 1;
            bytes += i % 97;
        } else {
            std::os::unix::fs::symlink("t", dir.join(&name)).expect("symlink");
        }
        names.push(name);
    }
    names.sort();
    let mut server = Server::start(&env);
    let shown = |text: &str| -> Vec<String> {
        text.lines()
            .filter_map(|l| l.get(7..))
            .filter(|n| n.starts_with('n'))
            .map(|n| n.split(' ').next().unwrap_or_default().to_owned())
            .collect()
    };
    let more = |text: &str| -> usize {
        let line = text.lines().find(|l| l.contains("more entries not shown")).expect("a note");
        line[1..].split(' ').next().and_then(|n| n.parse().ok()).expect("a count")
    };

    let text = slow_call(&mut server, "list_directory", json!({"path": env.p("root/d")})).text();
    let listed = shown(&text);
    assert!(listed.len() > 10_000, "{} shown", listed.len());
    assert_eq!(listed, names[..listed.len()], "the first names, in name order");
    assert_eq!(more(&text), 300_000 - listed.len());

    let args = json!({"path": env.p("root/d"), "sortBy": "size"});
    let text = slow_call(&mut server, "list_directory", args).text();
    let listed = shown(&text);
    let mut expect: Vec<(u32, &String)> = names
        .iter()
        .map(|n| (n[240..].parse::<u32>().expect("number"), n))
        .filter(|(i, _)| i % 100 == 7)
        .collect();
    // Largest first, ties in name order, then the symlinks (no size) in name order.
    expect.sort_by_key(|(i, n)| (std::cmp::Reverse(i % 97), *n));
    let expect: Vec<&String> = expect
        .into_iter()
        .map(|(_, n)| n)
        .chain(names.iter().filter(|n| n[240..].parse::<u32>().is_ok_and(|i| i % 100 != 7)))
        .take(listed.len())
        .collect();
    assert_eq!(listed.iter().collect::<Vec<_>>(), expect, "largest first, then by name");
    assert_eq!(more(&text), 300_000 - listed.len());
    let total = format!("Total: {files} files, 0 directories, {} symlinks\n", 300_000 - files);
    assert!(text.contains(&total), "{}", &text[text.len().saturating_sub(400)..]);
    // The files' bytes, all of them (about 141 KB), shown or not.
    let size = format!("Combined size: {:.2} KB", f64::from(bytes) / 1024.0);
    assert!(text.ends_with(&size), "{size}: {}", &text[text.len().saturating_sub(400)..]);

    let peak = server.peak_rss_kib() << 10;
    // Names that could be shown, the reply's text, its structured copy and its line, with
    // room for an unoptimized build; before, 134 MB.
    assert!(peak < 80 << 20, "listing: peak RSS {} MiB", peak >> 20);
    drop(server);

    let mut server = Server::start(&env);
    let response = slow_call(&mut server, "directory_tree", json!({"path": env.p("root")}));
    let text = response.result()["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("truncated"), "{text:.300}");
    let peak = server.peak_rss_kib() << 10;
    // Before, 106 MB.
    assert!(peak < 80 << 20, "tree: peak RSS {} MiB", peak >> 20);
}

/// directory_tree costs a name as it is shown: a byte that is not UTF-8 is shown as U+FFFD,
/// three bytes. Costed by their raw bytes, 30,000 names of 255 such bytes took the reply to
/// 44 MB, refused whole by the line's 32 MiB cap (no tree at all), and with `maxEntries: 19000`
/// to 30 MB, past the tool's 24 MiB bound. (A reviewer's find.)
#[cfg(target_os = "linux")]
#[test]
fn a_tree_of_names_not_utf8_stays_within_its_bound() {
    use std::os::unix::ffi::OsStrExt;
    let env = TestEnv::new(&["root/d"], &[]);
    let dir = env.path("root/d");
    for i in 0..30_000u32 {
        // Lone continuation bytes (0x80..=0xBF): each one is shown as U+FFFD.
        let name: Vec<u8> = (0..255u32)
            .map(|k| 0x80 + ((i.wrapping_mul(2_654_435_761).rotate_left(k % 32) ^ k) % 64) as u8)
            .collect();
        let name: Vec<u8> = [0u32, 6, 12]
            .iter()
            .map(|s| 0x80 + ((i >> s) & 63) as u8)
            .chain(name[3..].iter().copied())
            .collect();
        fs::write(dir.join(std::ffi::OsStr::from_bytes(&name)), b"").expect("write");
    }
    let mut server = Server::start(&env);
    for format in ["json", "text"] {
        let args = json!({"path": env.p("root"), "format": format});
        let response = slow_call(&mut server, "directory_tree", args);
        assert!(response.value.get("error").is_none(), "{format}: {:.400}", response.line);
        let text = response.result()["content"][0]["text"].as_str().unwrap_or_default();
        assert!(text.contains("truncated"), "{format}: {text:.300}");
    }
    let args = json!({"path": env.p("root"), "maxEntries": 19_000});
    let response = slow_call(&mut server, "directory_tree", args);
    assert!(response.line.len() <= 25 << 20, "a reply of {} bytes", response.line.len());
}
