//! Reply sizes: a small request never makes a reply (or a server) far larger than the bound the tools keep.
//!
//! See: issue #13, item 4. `read_multiple_files` with one 16 MiB file fifty times answered with
//! gigabytes, and control bytes, which JSON writes as `\u00XX`, made any bound on raw bytes six
//! times too large. The tools count the escaped size and stop at 24 MiB of JSON
//! (`reply_size`), with a note that says how to get the rest.

use std::fs;
use std::os::fd::AsFd;
use std::path::Path;

use nix::fcntl::{open, openat, OFlag};
use nix::sys::stat::{mkdirat, Mode};
use serde_json::{json, Value};

#[cfg(target_os = "linux")]
use crate::harness::peak_rss_bytes;
use crate::harness::{Server, TestEnv};

const MIB: usize = 1024 * 1024;
/// The tools' bound on a reply's content (24 MiB of JSON), plus room for the envelope, the
/// notes and the paths that head each item.
const LINE_BOUND: usize = 25 * MIB;

#[track_caller]
fn assert_bounded(tool: &str, line: &str) {
    assert!(line.len() <= LINE_BOUND, "[{tool}] a {} MiB reply", line.len() / MIB);
}

/// Lines of `width - 1` control bytes (U+0001), each JSON-escaped to 6 bytes, up to `size`.
fn control_lines(size: usize, width: usize) -> String {
    let mut line = "\u{1}".repeat(width - 1);
    line.push('\n');
    line.repeat(size / width)
}

#[test]
fn read_multiple_files_of_one_16_mib_file_fifty_times_is_bounded() {
    let env = TestEnv::new(&[], &[]);
    let mut line = "0123456789abcdef".repeat(4);
    line.pop();
    line.push('\n');
    env.write("root/big.txt", line.repeat(16 * MIB / line.len()));
    let mut server = Server::start(&env);
    let path = env.p("root/big.txt");
    let paths: Vec<String> = (0..50).map(|_| path.clone()).collect();
    let reply = server.call("read_multiple_files", json!({ "paths": paths }));
    assert_bounded("read_multiple_files", &reply.line);
    let items = reply.texts();
    assert_eq!(items.len(), 50);
    assert!(items[0].len() > 16 * MIB - 100, "the first file was not read whole");
    let last = &items[49];
    assert!(last.starts_with(&format!("{path}:\n[")), "{last}");
    assert!(last.contains("read_file"), "the note does not say how to get it: {last}");
    #[cfg(target_os = "linux")]
    {
        let peak = (peak_rss_bytes(server.pid()) >> 20) as usize;
        assert!(peak < 256, "the server's peak RSS reached {peak} MiB");
    }
}

#[test]
fn a_16_mib_file_of_control_bytes_is_refused_whole_and_paged_within_the_bound() {
    let env = TestEnv::new(&[], &[]);
    let text = control_lines(16 * MIB, 1024);
    env.write("root/ctl.txt", &text);
    let mut server = Server::start(&env);
    let path = env.p("root/ctl.txt");

    let reply = server.call("read_file", json!({"path": path}));
    assert_bounded("read_file", &reply.line);
    let error = reply.expect_error(-32603);
    assert!(error.message.contains("offset and limit"), "{}", error.message);
    assert!(error.message.contains("escaped"), "{}", error.message);

    for args in [json!({"path": path, "offset": 1}), json!({"path": path, "tail": 1_000_000})] {
        let reply = server.call("read_file", args.clone());
        assert_bounded("read_file", &reply.line);
        let texts = reply.texts();
        assert!(texts[0].len() > MIB, "{args}: a page of only {} bytes", texts[0].len());
        assert!(text.contains(&texts[0]), "{args}: the page is not the file's lines");
        assert!(texts[1].contains("cut at the 24 MiB JSON cap"), "{args}: {}", texts[1]);
    }

    let reply = server.call("read_multiple_files", json!({"paths": [path]}));
    assert_bounded("read_multiple_files", &reply.line);
    let item = &reply.texts()[0];
    assert!(item.contains("offset and limit"), "{item}");
}

/// `count` nested directories, each named with `width` control bytes, made through handles;
/// returns the bottom's path.
fn control_named_dirs(top: &Path, count: usize, width: usize) -> std::path::PathBuf {
    let name = "\u{1}".repeat(width);
    let mut path = top.to_path_buf();
    let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
    let mut dir = open(top, flags, Mode::empty()).expect("open");
    for _ in 0..count {
        mkdirat(dir.as_fd(), name.as_str(), Mode::from_bits_truncate(0o755)).expect("mkdirat");
        dir = openat(dir.as_fd(), name.as_str(), flags, Mode::empty()).expect("openat");
        path.push(&name);
    }
    path
}

/// Files named `<width control bytes>N.f` in `dir`.
fn control_named_files(dir: &Path, count: usize, width: usize) {
    let name = "\u{1}".repeat(width);
    for i in 0..count {
        fs::write(dir.join(format!("{name}{i}.f")), "x").expect("write");
    }
}

#[test]
fn listings_and_searches_are_bounded() {
    let env = TestEnv::new(&["root/deep", "root/flat"], &[]);
    // 2,000 files whose paths (3,900 bytes, nearly all control bytes) escape to 23 KB each.
    let bottom = control_named_dirs(&env.path("root/deep"), 17, 220);
    control_named_files(&bottom, 2000, 200);
    // 20,000 names escaping to 1.5 KB each.
    control_named_files(&env.path("root/flat"), 20_000, 240);
    let mut server = Server::start(&env);
    let calls = [
        ("search_files", json!({"directory": env.p("root/deep"), "nameContains": ".f"})),
        ("glob_search", json!({"directory": env.p("root/deep"), "globs": ["**/*.f"], "max": 0})),
        ("list_directory", json!({"path": env.p("root/flat")})),
        ("list_directory", json!({"path": env.p("root/flat"), "withSizes": true})),
        ("directory_tree", json!({"path": env.p("root/flat")})),
        ("directory_tree", json!({"path": env.p("root/flat"), "format": "text"})),
        (
            "grep_files",
            json!({"directory": env.p("root/deep"), "regex": "x", "outputMode": "files_with_matches", "maxResults": 10000}),
        ),
    ];
    for (tool, args) in calls {
        let reply = server.call(tool, args.clone());
        assert_bounded(tool, &reply.line);
        let texts = reply.texts();
        let all = texts.join("\n");
        assert!(all.contains("24 MiB"), "[{tool} {args}] no note on the cut");
        if tool == "directory_tree" {
            // Cut by the bound, not by maxEntries: the note still says of how many.
            assert!(all.contains(" of 20000 entries shown"), "[{tool} {args}] {all}");
        }
    }
}

#[test]
fn grep_output_is_bounded() {
    let env = TestEnv::new(&[], &[]);
    // 10,000 matching lines of 999 control bytes: 6 KB each once escaped, twice over (the text
    // and the structured matches).
    let mut line = "\u{1}".repeat(999);
    line.push_str("x\n");
    env.write("root/ctl.txt", line.repeat(10_000));
    let mut server = Server::start(&env);
    for args in [
        json!({"directory": env.p("root"), "regex": "x", "maxResults": 10000}),
        json!({"directory": env.p("root"), "regex": "x$", "maxResults": 10000, "contextLines": 50}),
    ] {
        let reply = server.call("grep_files", args.clone());
        assert_bounded("grep_files", &reply.line);
        let text = reply.text();
        assert!(text.contains("24 MiB"), "{args}: no note on the cut");
        let shown = text.lines().filter(|l| l.ends_with('x')).count();
        assert!(shown > 100, "{args}: only {shown} lines shown");
        let structured = &reply.value["result"]["structuredContent"];
        assert_eq!(structured["truncated"], Value::Bool(true), "{args}");
    }
}

#[test]
fn dry_run_diffs_are_bounded() {
    let env = TestEnv::new(&[], &[]);
    // Every line changes: the diff holds the file twice, 8 MiB of control bytes, 48 MiB escaped.
    env.write("root/ctl.txt", control_lines(4 * MIB, 100));
    env.write("root/ctl2.txt", control_lines(4 * MIB, 100));
    let mut server = Server::start(&env);
    let edits = json!([{"oldText": "^", "newText": "a", "isRegex": true, "limit": 0}]);
    let reply = server
        .call("edit_file", json!({"path": env.p("root/ctl.txt"), "edits": edits, "dryRun": true}));
    assert_bounded("edit_file", &reply.line);
    let text = reply.text();
    assert!(text.starts_with("--- "), "{}", &text[..100.min(text.len())]);
    assert!(text.contains("24 MiB"), "no note on the cut");

    let paths = [env.p("root/ctl.txt"), env.p("root/ctl2.txt")];
    let reply = server.call("edit_files", json!({"paths": paths, "edits": edits, "dryRun": true}));
    assert_bounded("edit_files", &reply.line);
    let texts = reply.texts();
    assert!(texts.join("\n").contains("24 MiB"), "no note on the cut");
}
