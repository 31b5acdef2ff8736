//! Issue #8's organising tools: copy_file, list_directory's `withSizes`/`sortBy`, and
//! directory_tree's `excludeGlobs`, `respectGitignore`, `maxEntries` and `format: "text"`.
//!
//! Every parameter is run through the real binary; the filesystem is asserted, not only the
//! reply. The escapes (outside paths, symlinks, read-only roots) of copy_file's two paths are
//! rows of `policy`'s tables; here are the cases particular to copying.

use std::fs::{self, File, FileTimes};
use std::time::{Duration, UNIX_EPOCH};

use serde_json::{json, Value};

use crate::harness::{path_str, Response, Server, TestEnv};

// ---------------------------------------------------------------------------------------------
// copy_file
// ---------------------------------------------------------------------------------------------

/// No `.replay-tmp.*` entry anywhere under `base`: every copy, finished or failed, cleaned up.
#[track_caller]
fn assert_no_temp_left(env: &TestEnv) {
    let temps: Vec<String> = env
        .snapshot()
        .0
        .keys()
        .filter(|path| path.split('/').any(|name| name.starts_with(".replay-tmp.")))
        .cloned()
        .collect();
    assert!(temps.is_empty(), "temp entries left behind: {temps:?}");
}

fn copy(server: &mut Server, source: &str, destination: &str) -> Response {
    server.call("copy_file", json!({"source": source, "destination": destination}))
}

#[test]
fn copy_file_copies_a_file_with_its_mode() {
    let env = TestEnv::new(&[], &[("root/a.txt", "alpha\n")]);
    env.set_mode("root/a.txt", 0o640);
    let mut server = Server::start(&env);
    let reply = copy(&mut server, &env.p("root/a.txt"), &env.p("root/b.txt")).text();
    assert_eq!(reply, format!("Copied {} -> {}", env.p("root/a.txt"), env.p("root/b.txt")));
    assert_eq!(env.read_string("root/b.txt"), "alpha\n");
    assert_eq!(env.mode("root/b.txt"), 0o640);
    assert_eq!(env.read_string("root/a.txt"), "alpha\n", "the source is untouched");
    assert_no_temp_left(&env);
}

#[test]
fn copy_file_copies_a_directory_tree_with_modes_and_links_as_links() {
    let env = TestEnv::new(
        &["root/src/empty", "outside"],
        &[
            ("root/src/a.txt", "a"),
            ("root/src/deep/er/b.bin", "\u{0}\u{1}binary"),
            ("outside/secret.txt", "SECRET"),
        ],
    );
    env.symlink("a.txt", "root/src/rel_link");
    env.symlink(&env.p("outside/secret.txt"), "root/src/out_link");
    env.symlink("nowhere", "root/src/dangling");
    env.set_mode("root/src/deep", 0o750);
    env.set_mode("root/src/deep/er/b.bin", 0o600);
    let before = env.snapshot();
    let mut server = Server::start(&env);
    copy(&mut server, &env.p("root/src"), &env.p("root/dst")).text();
    // The copy is the source again, entry for entry: kinds, bytes, modes, link targets.
    let after = env.snapshot();
    let rebased: Vec<_> = after
        .under("root/dst")
        .0
        .into_iter()
        .map(|(path, node)| (path.replacen("root/dst", "root/src", 1), node))
        .collect();
    let source: Vec<_> = before.under("root/src").0.into_iter().collect();
    assert_eq!(rebased, source);
    // The links were copied, not followed: the outside content was not read into the copy.
    assert_eq!(env.read_link("root/dst/out_link"), env.path("outside/secret.txt"));
    assert_eq!(before.under("root/src"), after.under("root/src"), "the source is untouched");
    assert_eq!(before.under("outside"), after.under("outside"));
    assert_no_temp_left(&env);
}

#[test]
fn copy_file_creates_missing_parents_and_uses_normalized_paths() {
    let env = TestEnv::new(&["root/sub"], &[("root/a.txt", "a")]);
    let mut server = Server::start(&env);
    let reply = copy(&mut server, "sub/../a.txt", "new/deeper/./b.txt").text();
    assert_eq!(
        reply,
        format!("Copied {} -> {}", env.p("root/a.txt"), env.p("root/new/deeper/b.txt"))
    );
    assert_eq!(env.read_string("root/new/deeper/b.txt"), "a");
}

#[test]
fn copy_file_refuses_an_existing_destination_and_changes_nothing() {
    let env = TestEnv::new(&["root/dir"], &[("root/a.txt", "a"), ("root/b.txt", "b")]);
    let mut server = Server::start(&env);
    for (source, destination) in
        [("root/a.txt", "root/b.txt"), ("root/a.txt", "root/dir"), ("root/dir", "root/b.txt")]
    {
        let before = env.snapshot();
        let error = copy(&mut server, &env.p(source), &env.p(destination)).expect_error(-32603);
        assert!(error.message.contains("already exists"), "{}", error.message);
        assert!(error.message.contains(&env.p(destination)), "{}", error.message);
        assert_eq!(before.diff(&env.snapshot()), "", "{source} -> {destination}");
    }
    // `overwrite: false` said outright is the same.
    let args = json!({"source": env.p("root/a.txt"), "destination": env.p("root/b.txt"), "overwrite": false});
    server.call_err("copy_file", args, -32603);
    assert_eq!(env.read_string("root/b.txt"), "b");
    assert_no_temp_left(&env);
}

#[test]
fn copy_file_overwrite_replaces_a_file_atomically_with_the_source_mode() {
    let env = TestEnv::new(&[], &[("root/new.txt", "new content\n"), ("root/old.txt", "old\n")]);
    env.set_mode("root/new.txt", 0o755);
    env.set_mode("root/old.txt", 0o600);
    let old_inode = inode(&env, "root/old.txt");
    let mut server = Server::start(&env);
    let args = json!({"source": env.p("root/new.txt"), "destination": env.p("root/old.txt"), "overwrite": true});
    let reply = server.call_text("copy_file", args);
    assert_eq!(reply, format!("Copied {} -> {}", env.p("root/new.txt"), env.p("root/old.txt")));
    assert_eq!(env.read_string("root/old.txt"), "new content\n");
    assert_eq!(env.mode("root/old.txt"), 0o755, "the copy has the source's mode");
    // Replaced by a rename, not rewritten in place: a reader saw the old file or the new.
    assert_ne!(inode(&env, "root/old.txt"), old_inode);
    // With nothing there, overwrite just copies.
    let args = json!({"source": env.p("root/new.txt"), "destination": env.p("root/fresh.txt"), "overwrite": true});
    server.call_text("copy_file", args);
    assert_eq!(env.read_string("root/fresh.txt"), "new content\n");
    assert_no_temp_left(&env);
}

fn inode(env: &TestEnv, rel: &str) -> u64 {
    std::os::unix::fs::MetadataExt::ino(&fs::symlink_metadata(env.path(rel)).expect("stat"))
}

#[test]
fn copy_file_overwrite_never_replaces_a_directory_nor_a_file_by_one() {
    let env = TestEnv::new(
        &["root/dir/inner", "root/src"],
        &[("root/a.txt", "a"), ("root/dir/keep.txt", "keep")],
    );
    let mut server = Server::start(&env);
    for (source, destination, says) in [
        ("root/a.txt", "root/dir", "is a directory"),
        ("root/src", "root/dir", "is a directory"),
        ("root/src", "root/a.txt", "a directory does not replace a file"),
    ] {
        let before = env.snapshot();
        let args =
            json!({"source": env.p(source), "destination": env.p(destination), "overwrite": true});
        let error = server.call_err("copy_file", args, -32603);
        assert!(error.message.contains(says), "{source} -> {destination}: {}", error.message);
        assert!(error.message.contains("delete_file"), "{}", error.message);
        assert_eq!(before.diff(&env.snapshot()), "", "{source} -> {destination}");
    }
    assert_no_temp_left(&env);
}

#[test]
fn copy_file_into_itself_is_invalid_params() {
    let env = TestEnv::new(&["root/dir/sub"], &[("root/a.txt", "a")]);
    let before = env.snapshot();
    let mut server = Server::start(&env);
    for (source, destination, says) in [
        ("root/dir", "root/dir/sub/copy", "inside the source"),
        ("root/dir", "root/dir/copy", "inside the source"),
        ("root/dir", "root/dir", "the source itself"),
        ("root/a.txt", "root/a.txt", "the source itself"),
    ] {
        for overwrite in [false, true] {
            let args = json!({"source": env.p(source), "destination": env.p(destination), "overwrite": overwrite});
            let error = server.call_err("copy_file", args, -32602);
            assert!(error.message.contains("`destination`"), "{}", error.message);
            assert!(error.message.contains(says), "{source} -> {destination}: {}", error.message);
        }
    }
    // Through a symlink to the source, too: containment is judged on resolved paths.
    env.symlink("dir", "root/dir_alias");
    let error =
        copy(&mut server, &env.p("root/dir_alias"), &env.p("root/dir/sub/x")).expect_error(-32602);
    assert!(error.message.contains("inside the source"), "{}", error.message);
    let mut after = env.snapshot();
    after.0.remove("root/dir_alias");
    assert_eq!(before.diff(&after), "");
}

#[test]
fn copy_file_missing_source_is_not_found() {
    let env = TestEnv::new(&[], &[]);
    let mut server = Server::start(&env);
    let error = copy(&mut server, &env.p("root/nope"), &env.p("root/b")).expect_error(-32002);
    assert!(error.message.contains(&env.p("root/nope")), "{}", error.message);
    assert!(!env.exists("root/b"));
}

#[test]
fn copy_file_missing_or_mistyped_params_are_invalid_params() {
    let env = TestEnv::new(&[], &[("root/a.txt", "a")]);
    let mut server = Server::start(&env);
    let a = env.p("root/a.txt");
    for (args, field) in [
        (json!({"destination": env.p("root/b")}), "`source`"),
        (json!({"source": a}), "`destination`"),
        (json!({"source": a, "destination": env.p("root/b"), "overwrite": "yes"}), "`overwrite`"),
    ] {
        let error = server.call_err("copy_file", args, -32602);
        assert!(error.message.contains(field), "{}", error.message);
    }
    assert!(!env.exists("root/b"));
}

#[test]
fn copy_file_follows_a_source_symlink_and_copies_its_target() {
    let env =
        TestEnv::new(&["root/dir"], &[("root/target.txt", "target"), ("root/dir/x.txt", "x")]);
    env.symlink("target.txt", "root/link");
    env.symlink("dir", "root/dir_link");
    let mut server = Server::start(&env);
    copy(&mut server, &env.p("root/link"), &env.p("root/copy.txt")).text();
    assert!(!env.is_symlink("root/copy.txt"), "the link's target is copied, not the link");
    assert_eq!(env.read_string("root/copy.txt"), "target");
    copy(&mut server, &env.p("root/dir_link"), &env.p("root/dir_copy")).text();
    assert!(env.is_dir("root/dir_copy") && !env.is_symlink("root/dir_copy"));
    assert_eq!(env.read_string("root/dir_copy/x.txt"), "x");
}

#[test]
fn copy_file_writes_through_a_destination_symlink_inside_the_root() {
    let env = TestEnv::new(&["root/real"], &[("root/a.txt", "a"), ("root/real/old.txt", "old")]);
    env.symlink("real", "root/dir_link");
    env.symlink("real/old.txt", "root/file_link");
    let mut server = Server::start(&env);
    copy(&mut server, &env.p("root/a.txt"), &env.p("root/dir_link/new.txt")).text();
    assert_eq!(env.read_string("root/real/new.txt"), "a");
    // Overwriting through a link replaces its target, as write_file does; the link stays.
    let args = json!({"source": env.p("root/a.txt"), "destination": env.p("root/file_link"), "overwrite": true});
    server.call_text("copy_file", args);
    assert_eq!(env.read_string("root/real/old.txt"), "a");
    assert!(env.is_symlink("root/file_link"));
}

#[test]
fn copy_file_refuses_a_fifo_and_a_tree_holding_one_leaving_nothing() {
    let env =
        TestEnv::new(&["root/tree/sub"], &[("root/tree/a.txt", "a"), ("root/tree/sub/b.txt", "b")]);
    nix::unistd::mkfifo(&env.path("root/fifo"), nix::sys::stat::Mode::from_bits_truncate(0o600))
        .expect("mkfifo");
    nix::unistd::mkfifo(
        &env.path("root/tree/sub/pipe"),
        nix::sys::stat::Mode::from_bits_truncate(0o600),
    )
    .expect("mkfifo");
    let mut server = Server::start(&env);
    let error =
        copy(&mut server, &env.p("root/fifo"), &env.p("root/fifo_copy")).expect_error(-32603);
    assert!(error.message.contains("FIFO"), "{}", error.message);
    let error =
        copy(&mut server, &env.p("root/tree"), &env.p("root/tree_copy")).expect_error(-32603);
    assert!(error.message.contains("FIFO"), "{}", error.message);
    // (Not `assert_no_temp_left`: a snapshot would read the FIFO and wait for a writer.)
    assert_eq!(env.names("root"), ["fifo", "tree"], "no copy and no temp left");
}

#[test]
fn copy_file_from_a_read_only_root_into_a_read_write_one() {
    let env = TestEnv::new(&["ro/dir"], &[("ro/dir/x.txt", "x"), ("ro/f.txt", "f")]);
    let before = env.snapshot().under("ro/");
    let mut server = Server::start_with([
        "--mcp-server".to_owned(),
        "--allow".to_owned(),
        format!("{}:rw", path_str(&env.root())),
        "--allow".to_owned(),
        format!("{}:ro", env.p("ro")),
    ]);
    // Copying only reads the source: a read-only root is enough (move_file needs write).
    copy(&mut server, &env.p("ro/f.txt"), &env.p("root/f.txt")).text();
    copy(&mut server, &env.p("ro/dir"), &env.p("root/dir")).text();
    // The read-only root itself, whole.
    copy(&mut server, &env.p("ro"), &env.p("root/ro_copy")).text();
    assert_eq!(env.read_string("root/f.txt"), "f");
    assert_eq!(env.read_string("root/dir/x.txt"), "x");
    assert_eq!(env.read_string("root/ro_copy/dir/x.txt"), "x");
    // Into the read-only root: refused before anything is made.
    let error =
        copy(&mut server, &env.p("root/f.txt"), &env.p("ro/planted.txt")).expect_error(-32001);
    assert!(error.message.contains("read-only"), "{}", error.message);
    assert_eq!(before.diff(&env.snapshot().under("ro/")), "");
}

#[test]
fn copy_file_onto_an_allowed_directory_itself_is_refused() {
    let env = TestEnv::new(&["other"], &[("root/a.txt", "a")]);
    let mut server = Server::start_with([
        "--mcp-server".to_owned(),
        "--allow".to_owned(),
        format!("{}:rw", path_str(&env.root())),
        "--allow".to_owned(),
        format!("{}:rw", env.p("other")),
    ]);
    let before = env.snapshot();
    let args =
        json!({"source": env.p("root/a.txt"), "destination": env.p("other"), "overwrite": true});
    let error = server.call_err("copy_file", args, -32603);
    assert!(error.message.contains("already exists"), "{}", error.message);
    assert_eq!(before.diff(&env.snapshot()), "");
}

#[test]
fn copy_file_is_listed_as_a_writing_tool() {
    let env = TestEnv::new(&[], &[]);
    let mut server = Server::start(&env);
    let list = server.request("tools/list", json!({}));
    let tools = list.result()["tools"].as_array().expect("tools").clone();
    let tool = tools.iter().find(|t| t["name"] == "copy_file").expect("copy_file listed");
    assert_eq!(tool["annotations"]["readOnlyHint"], false);
    assert_eq!(tool["annotations"]["destructiveHint"], true);
    assert_eq!(tool["inputSchema"]["required"], json!(["source", "destination"]));
}

// ---------------------------------------------------------------------------------------------
// list_directory: withSizes, sortBy
// ---------------------------------------------------------------------------------------------

fn set_mtime(env: &TestEnv, rel: &str, secs: u64) {
    let file = File::open(env.path(rel)).expect("open");
    file.set_times(FileTimes::new().set_modified(UNIX_EPOCH + Duration::from_secs(secs)))
        .expect("set_times");
}

/// A symlink's own modification time (`utimensat(AT_SYMLINK_NOFOLLOW)`).
fn set_link_mtime(env: &TestEnv, rel: &str, secs: i64) {
    let time = nix::sys::time::TimeSpec::new(secs, 0);
    nix::sys::stat::utimensat(
        nix::fcntl::AT_FDCWD,
        &env.path(rel),
        &time,
        &time,
        nix::sys::stat::UtimensatFlags::NoFollowSymlink,
    )
    .expect("utimensat");
}

/// `a.txt` 3 bytes, `b.bin` 1536, `c` empty, `big` 2 MiB + 1, a directory and a symlink to the
/// big file; modification times 1000, 4000, 2000, 3000, 5000 and 6000 seconds after 2001-09-09.
fn sized_env() -> TestEnv {
    let env = TestEnv::new(&["root/d/dir"], &[("root/d/a.txt", "abc"), ("root/d/c", "")]);
    env.write("root/d/b.bin", vec![7u8; 1536]);
    env.write("root/d/big", vec![0u8; 2 * 1024 * 1024 + 1]);
    env.symlink("big", "root/d/link");
    const T: u64 = 1_000_000_000;
    for (rel, t) in [("a.txt", 1000), ("b.bin", 4000), ("c", 2000), ("big", 3000), ("dir", 5000)] {
        set_mtime(&env, &format!("root/d/{rel}"), T + t);
    }
    set_link_mtime(&env, "root/d/link", (T + 6000) as i64);
    env
}

fn structured(reply: &Response) -> Value {
    reply.result()["structuredContent"].clone()
}

#[test]
fn list_directory_without_the_new_parameters_is_unchanged() {
    let env = sized_env();
    let mut server = Server::start(&env);
    let reply = server.call("list_directory", json!({"path": env.p("root/d")}));
    assert_eq!(
        reply.text(),
        "[FILE] a.txt\n[FILE] b.bin\n[FILE] big\n[FILE] c\n[DIR]  dir\n[LINK] link"
    );
    // Nor do the data grow fields.
    for entry in structured(&reply)["entries"].as_array().expect("entries") {
        let keys: Vec<&String> = entry.as_object().expect("object").keys().collect();
        assert_eq!(keys, ["name", "type"], "{entry}");
    }
    // Said outright, the defaults are the same.
    let again = server.call(
        "list_directory",
        json!({"path": env.p("root/d"), "withSizes": false, "sortBy": "name"}),
    );
    assert_eq!(again.text(), reply.text());
}

#[test]
fn list_directory_with_sizes_shows_file_sizes_and_totals() {
    let env = sized_env();
    let mut server = Server::start(&env);
    let reply = server.call("list_directory", json!({"path": env.p("root/d"), "withSizes": true}));
    assert_eq!(
        reply.text(),
        "[FILE] a.txt (3 B)\n\
         [FILE] b.bin (1.50 KB)\n\
         [FILE] big (2.00 MB)\n\
         [FILE] c (0 B)\n\
         [DIR]  dir\n\
         [LINK] link\n\
         \n\
         Total: 4 files, 1 directory, 1 symlink\n\
         Combined size: 2.00 MB"
    );
    let data = structured(&reply);
    let entries = data["entries"].as_array().expect("entries");
    let sizes: Vec<Value> = entries.iter().map(|e| e["size"].clone()).collect();
    assert_eq!(
        sizes,
        [json!(3), json!(1536), json!(2 * 1024 * 1024 + 1), json!(0), Value::Null, Value::Null]
    );
    assert_eq!(entries[0]["modified"], "2001-09-09T02:03:20Z");
    // The link's own time, not its target's: it is never followed.
    assert_eq!(entries[5]["modified"], "2001-09-09T03:26:40Z");
    assert_valid("list_directory", &mut server, &data);
}

#[test]
fn list_directory_sorted_by_size_puts_the_largest_first_and_shows_sizes() {
    let env = sized_env();
    let mut server = Server::start(&env);
    let text =
        server.call_text("list_directory", json!({"path": env.p("root/d"), "sortBy": "size"}));
    assert_eq!(
        text,
        "[FILE] big (2.00 MB)\n\
         [FILE] b.bin (1.50 KB)\n\
         [FILE] a.txt (3 B)\n\
         [FILE] c (0 B)\n\
         [DIR]  dir\n\
         [LINK] link\n\
         \n\
         Total: 4 files, 1 directory, 1 symlink\n\
         Combined size: 2.00 MB"
    );
}

#[test]
fn list_directory_sorted_by_modified_puts_the_newest_first_and_shows_times() {
    let env = sized_env();
    let mut server = Server::start(&env);
    let reply =
        server.call("list_directory", json!({"path": env.p("root/d"), "sortBy": "modified"}));
    assert_eq!(
        reply.text(),
        "[LINK] link (2001-09-09T03:26:40Z)\n\
         [DIR]  dir (2001-09-09T03:10:00Z)\n\
         [FILE] b.bin (2001-09-09T02:53:20Z)\n\
         [FILE] big (2001-09-09T02:36:40Z)\n\
         [FILE] c (2001-09-09T02:20:00Z)\n\
         [FILE] a.txt (2001-09-09T02:03:20Z)"
    );
    let both = server.call_text(
        "list_directory",
        json!({"path": env.p("root/d"), "sortBy": "modified", "withSizes": true}),
    );
    let lines: Vec<&str> = both.lines().collect();
    assert_eq!(lines[3], "[FILE] big (2.00 MB, 2001-09-09T02:36:40Z)");
    assert_eq!(lines[1], "[DIR]  dir (2001-09-09T03:10:00Z)");
    assert_eq!(lines[7], "Total: 4 files, 1 directory, 1 symlink");
    assert_valid("list_directory", &mut server, &structured(&reply));
}

#[test]
fn list_directory_ties_keep_name_order_and_an_empty_directory_stays_empty() {
    let env =
        TestEnv::new(&["root/empty"], &[("root/d/b", "xx"), ("root/d/a", "yy"), ("root/d/c", "z")]);
    for rel in ["a", "b", "c"] {
        set_mtime(&env, &format!("root/d/{rel}"), 1_000_000_000);
    }
    let mut server = Server::start(&env);
    let text =
        server.call_text("list_directory", json!({"path": env.p("root/d"), "sortBy": "size"}));
    assert_eq!(
        text.lines().take(3).collect::<Vec<_>>(),
        ["[FILE] a (2 B)", "[FILE] b (2 B)", "[FILE] c (1 B)"]
    );
    let text =
        server.call_text("list_directory", json!({"path": env.p("root/d"), "sortBy": "modified"}));
    assert_eq!(text.lines().next(), Some("[FILE] a (2001-09-09T01:46:40Z)"));
    for args in
        [json!({"withSizes": true}), json!({"sortBy": "size"}), json!({"sortBy": "modified"})]
    {
        let mut args = args;
        args["path"] = json!(env.p("root/empty"));
        assert_eq!(server.call_text("list_directory", args), "(empty directory)");
    }
}

#[test]
fn list_directory_bad_new_parameters_are_invalid_params() {
    let env = TestEnv::new(&[], &[]);
    let mut server = Server::start(&env);
    let root = path_str(&env.root());
    for (args, field) in [
        (json!({"path": root, "sortBy": "date"}), "`sortBy`"),
        (json!({"path": root, "sortBy": 1}), "`sortBy`"),
        (json!({"path": root, "withSizes": "true"}), "`withSizes`"),
    ] {
        let error = server.call_err("list_directory", args, -32602);
        assert!(error.message.contains(field), "{}", error.message);
    }
}

/// `data` against `tool`'s output schema as `tools/list` serves it.
#[track_caller]
fn assert_valid(tool: &str, server: &mut Server, data: &Value) {
    let list = server.request("tools/list", json!({}));
    let tools = list.result()["tools"].as_array().expect("tools").clone();
    let schema = &tools.iter().find(|t| t["name"] == tool).expect("listed")["outputSchema"];
    let validator = jsonschema::validator_for(schema).expect("schema compiles");
    let errors: Vec<String> = validator.iter_errors(data).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{tool}: {data} breaks the schema: {errors:?}");
}

// ---------------------------------------------------------------------------------------------
// directory_tree: excludeGlobs, respectGitignore, maxEntries, format
// ---------------------------------------------------------------------------------------------

/// ```text
/// root/t/
///   a/ b/ c.txt          a/b holds d.txt and e/f.txt
///   empty/
///   link -> a
///   z.txt
/// ```
fn tree_env() -> TestEnv {
    let env = TestEnv::new(
        &["root/t/empty"],
        &[
            ("root/t/a/b/d.txt", "d"),
            ("root/t/a/b/e/f.txt", "f"),
            ("root/t/a/c.txt", "c"),
            ("root/t/z.txt", "z"),
        ],
    );
    env.symlink("a", "root/t/link");
    env
}

/// The tree's texts and its structured content, which must be the JSON tree whatever the format.
fn tree_call(server: &mut Server, args: Value) -> (Vec<String>, Value) {
    let reply = server.call("directory_tree", args);
    (reply.texts(), structured(&reply)["tree"].clone())
}

#[test]
fn directory_tree_without_the_new_parameters_is_unchanged() {
    let env = tree_env();
    let mut server = Server::start(&env);
    let expected = concat!(
        r#"{"name":"t","type":"directory","children":["#,
        r#"{"name":"a","type":"directory","children":["#,
        r#"{"name":"b","type":"directory","children":["#,
        r#"{"name":"d.txt","type":"file"},"#,
        r#"{"name":"e","type":"directory","children":[{"name":"f.txt","type":"file"}]}]},"#,
        r#"{"name":"c.txt","type":"file"}]},"#,
        r#"{"name":"empty","type":"directory","children":[]},"#,
        r#"{"name":"link","type":"symlink"},"#,
        r#"{"name":"z.txt","type":"file"}]}"#
    );
    let (texts, data) = tree_call(&mut server, json!({"path": env.p("root/t")}));
    assert_eq!(texts, [expected]);
    assert_eq!(data, serde_json::from_str::<Value>(expected).expect("JSON"));
    // The defaults said outright, and a maxEntries the tree fits in, change nothing.
    for extra in [
        json!({"excludeGlobs": [], "respectGitignore": false, "format": "json"}),
        json!({"maxEntries": 9}),
        json!({"maxEntries": 1000}),
    ] {
        let mut args = extra;
        args["path"] = json!(env.p("root/t"));
        let (texts, _) = tree_call(&mut server, args.clone());
        assert_eq!(texts, [expected], "{args}");
    }
}

#[test]
fn directory_tree_exclude_globs_leave_out_entries_and_what_is_below_them() {
    let env = tree_env();
    let mut server = Server::start(&env);
    let (texts, _) = tree_call(
        &mut server,
        json!({"path": env.p("root/t"), "excludeGlobs": ["b", "*.txt"], "format": "text"}),
    );
    assert_eq!(texts, ["t/\n  a/\n  empty/\n  link@"]);
    // A path relative to the tree's root.
    let (texts, _) = tree_call(
        &mut server,
        json!({"path": env.p("root/t"), "excludeGlobs": ["a/b/**"], "format": "text"}),
    );
    assert_eq!(texts, ["t/\n  a/\n    b/\n    c.txt\n  empty/\n  link@\n  z.txt"]);
    let error = server.call_err(
        "directory_tree",
        json!({"path": env.p("root/t"), "excludeGlobs": ["a["]}),
        -32602,
    );
    assert!(
        error.message.contains("excludeGlobs") && error.message.contains("a["),
        "{}",
        error.message
    );
}

#[test]
fn directory_tree_respect_gitignore_leaves_out_ignored_entries_and_git() {
    let env = tree_env();
    env.write("root/t/.gitignore", "*.txt\n!z.txt\nempty/\n");
    env.write("root/t/a/b/.gitignore", "e\n");
    env.write("root/t/.git/HEAD", "ref: refs/heads/main\n");
    let mut server = Server::start(&env);
    let (texts, _) = tree_call(
        &mut server,
        json!({"path": env.p("root/t"), "respectGitignore": true, "format": "text"}),
    );
    assert_eq!(texts, ["t/\n  .gitignore\n  a/\n    b/\n      .gitignore\n  link@\n  z.txt"]);
    // Off (the default), everything is there.
    let (texts, _) = tree_call(&mut server, json!({"path": env.p("root/t"), "format": "text"}));
    assert!(
        texts[0].contains("\n  .git/\n    HEAD\n") && texts[0].contains("f.txt"),
        "{}",
        texts[0]
    );
}

#[test]
fn directory_tree_max_entries_keeps_the_shallowest_and_marks_what_is_missing() {
    let env = tree_env();
    let mut server = Server::start(&env);
    // Depth 1 holds a, empty, link and z.txt; depth 2 a/b and a/c.txt: six fit, the rest go.
    let (texts, data) = tree_call(&mut server, json!({"path": env.p("root/t"), "maxEntries": 6}));
    let expected = concat!(
        r#"{"name":"t","type":"directory","children":["#,
        r#"{"name":"a","type":"directory","children":["#,
        r#"{"name":"b","type":"directory","children":[],"truncated":true},"#,
        r#"{"name":"c.txt","type":"file"}],"truncated":true},"#,
        r#"{"name":"empty","type":"directory","children":[]},"#,
        r#"{"name":"link","type":"symlink"},"#,
        r#"{"name":"z.txt","type":"file"}],"truncated":true}"#
    );
    assert_eq!(
        texts,
        [
            expected,
            "[truncated: 6 entries shown (maxEntries), the shallowest first; directories \
             with \"truncated\": true have entries not shown]"
        ]
    );
    assert_eq!(data, serde_json::from_str::<Value>(expected).expect("JSON"));
    assert_valid("directory_tree", &mut server, &json!({"tree": data}));
    // Cut inside a level: that level's first entries in name order.
    let (texts, _) = tree_call(&mut server, json!({"path": env.p("root/t"), "maxEntries": 2}));
    assert_eq!(
        texts[0],
        r#"{"name":"t","type":"directory","children":[{"name":"a","type":"directory","children":[],"truncated":true},{"name":"empty","type":"directory","children":[]}],"truncated":true}"#
    );
    assert!(texts[1].starts_with("[truncated: 2 entries shown"), "{}", texts[1]);
    // None at all: the root alone.
    let (texts, data) = tree_call(&mut server, json!({"path": env.p("root/t"), "maxEntries": 0}));
    assert_eq!(texts[0], r#"{"name":"t","type":"directory","children":[],"truncated":true}"#);
    assert_valid("directory_tree", &mut server, &json!({"tree": data}));
}

#[test]
fn directory_tree_max_entries_is_breadth_first_however_deep_the_first_branch() {
    let env = TestEnv::new(
        &[],
        &[("root/t/a/1/2/3/4/5/deep.txt", "x"), ("root/t/b.txt", "b"), ("root/t/c.txt", "c")],
    );
    let mut server = Server::start(&env);
    let (texts, _) =
        tree_call(&mut server, json!({"path": env.p("root/t"), "maxEntries": 4, "format": "text"}));
    assert_eq!(
        texts,
        ["t/\n  a/\n    1/ ...\n  b.txt\n  c.txt\n[truncated: 4 entries shown \
          (maxEntries), the shallowest first; a directory marked ... has entries not shown]"]
    );
}

#[test]
fn directory_tree_text_format_is_an_indented_tree_with_the_json_as_data() {
    let env = tree_env();
    let mut server = Server::start(&env);
    let (json_texts, json_data) = tree_call(&mut server, json!({"path": env.p("root/t")}));
    let (texts, data) = tree_call(&mut server, json!({"path": env.p("root/t"), "format": "text"}));
    assert_eq!(
        texts,
        ["t/\n  a/\n    b/\n      d.txt\n      e/\n        f.txt\n    c.txt\n  empty/\n  link@\n  z.txt"]
    );
    assert_eq!(data, json_data, "the structured content is the JSON tree either way");
    assert!(
        texts[0].len() * 2 < json_texts[0].len(),
        "{} vs {} bytes",
        texts[0].len(),
        json_texts[0].len()
    );
    // Depth-cut directories are marked, as their entries were not read.
    let (texts, _) =
        tree_call(&mut server, json!({"path": env.p("root/t"), "format": "text", "depth": 1}));
    assert_eq!(texts, ["t/\n  a/ ...\n  empty/ ...\n  link@\n  z.txt"]);
    let (texts, _) =
        tree_call(&mut server, json!({"path": env.p("root/t"), "format": "text", "depth": 0}));
    assert_eq!(texts, ["t/ ..."]);
    // Depth and maxEntries together: the cut counts what depth left.
    let (texts, _) = tree_call(
        &mut server,
        json!({"path": env.p("root/t"), "format": "text", "depth": 2, "maxEntries": 5}),
    );
    assert_eq!(
        texts,
        ["t/\n  a/ ...\n    b/ ...\n  empty/\n  link@\n  z.txt\n[truncated: 5 entries shown \
          (maxEntries), the shallowest first; a directory marked ... has entries not shown]"]
    );
}

#[test]
fn directory_tree_text_escapes_control_characters_in_names() {
    let env = TestEnv::new(&[], &[("root/t/two\nlines.txt", "x"), ("root/t/tab\there", "y")]);
    let mut server = Server::start(&env);
    let (texts, data) = tree_call(&mut server, json!({"path": env.p("root/t"), "format": "text"}));
    assert_eq!(texts, ["t/\n  tab\\there\n  two\\nlines.txt"]);
    assert_eq!(data["children"][1]["name"], "two\nlines.txt");
}

#[test]
fn directory_tree_bad_new_parameters_are_invalid_params() {
    let env = TestEnv::new(&[], &[]);
    let mut server = Server::start(&env);
    let root = path_str(&env.root());
    for (args, field) in [
        (json!({"path": root, "format": "yaml"}), "`format`"),
        (json!({"path": root, "maxEntries": -1}), "`maxEntries`"),
        (json!({"path": root, "maxEntries": 1.5}), "`maxEntries`"),
        (json!({"path": root, "excludeGlobs": "*.txt"}), "`excludeGlobs`"),
        (json!({"path": root, "respectGitignore": 1}), "`respectGitignore`"),
    ] {
        let error = server.call_err("directory_tree", args, -32602);
        assert!(error.message.contains(field), "{}", error.message);
    }
}

#[test]
fn directory_tree_never_follows_symlinks_whatever_the_options() {
    let env =
        TestEnv::new(&["outside/dir"], &[("root/t/a.txt", "a"), ("outside/dir/secret.txt", "s")]);
    env.symlink(&env.p("outside"), "root/t/out");
    let mut server = Server::start(&env);
    for args in [
        json!({"format": "text"}),
        json!({"maxEntries": 1}),
        json!({"respectGitignore": true, "excludeGlobs": ["*.md"]}),
    ] {
        let mut args = args;
        args["path"] = json!(env.p("root/t"));
        let reply = server.call("directory_tree", args.clone());
        assert!(!reply.line.contains("secret"), "{args}: {}", reply.line);
    }
}
