//! copy_file: a file, or a whole tree with its modes and its links as links, copied to a new
//! place; parents made, an existing destination refused unless `overwrite`, and nothing left
//! behind when a copy fails.
//!
//! The filesystem is asserted, not only the reply. The escapes (outside paths, symlinks,
//! read-only roots) of copy_file's two paths are rows of `policy`'s tables; here are the cases
//! particular to copying. Copies of trees deeper than any recursion are in `depth`.

use std::fs;

use serde_json::json;

use crate::harness::{Response, Server, TestEnv};

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
    let mut server = Server::start_also(&env, &[("ro", "ro")]);
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
    let mut server = Server::start_also(&env, &[("other", "rw")]);
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
