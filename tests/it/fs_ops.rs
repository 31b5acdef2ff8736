//! Filesystem tools other than read/write: create_directory, list_directory, directory_tree, move_file, delete_file, get_file_info, list_allowed_directories.

use std::fs::{File, FileTimes};
use std::path::PathBuf;
use std::time::{Duration, UNIX_EPOCH};

use serde_json::{json, Value};

use crate::harness::{iso8601_utc, key_values, path_str, Server, TestEnv};

// ---------------------------------------------------------------------------------------------
// create_directory
// ---------------------------------------------------------------------------------------------

#[test]
fn create_directory_is_mkdir_p() {
    let env = TestEnv::new(&[], &[]);
    let mut server = Server::start(&env);
    let path = env.p("root/a/b/c");
    assert_eq!(
        server.call_text("create_directory", json!({"path": path})),
        format!("Created directory {path}")
    );
    assert!(env.is_dir("root/a/b/c"));
}

#[test]
fn create_directory_existing_directory_is_fine() {
    let env = TestEnv::new(&["root/d"], &[("root/d/keep.txt", "k")]);
    let mut server = Server::start(&env);
    let path = env.p("root/d");
    assert_eq!(
        server.call_text("create_directory", json!({"path": path})),
        format!("Created directory {path}")
    );
    assert_eq!(env.read_string("root/d/keep.txt"), "k");
}

#[test]
fn create_directory_over_a_file_is_internal_error() {
    let env = TestEnv::new(&[], &[("root/f", "file")]);
    let before = env.snapshot();
    let mut server = Server::start(&env);
    server.call_err("create_directory", json!({"path": env.p("root/f")}), -32603);
    server.call_err("create_directory", json!({"path": env.p("root/f/sub")}), -32603);
    assert_eq!(before.diff(&env.snapshot()), "");
}

#[test]
fn create_directory_reply_uses_the_normalized_path() {
    let env = TestEnv::new(&[], &[]);
    let mut server = Server::start(&env);
    assert_eq!(
        server.call_text("create_directory", json!({"path": "x/./y/../z"})),
        format!("Created directory {}", env.p("root/x/z"))
    );
    assert!(env.is_dir("root/x/z"));
    assert!(!env.exists("root/x/y"));
}

// ---------------------------------------------------------------------------------------------
// list_directory
// ---------------------------------------------------------------------------------------------

#[test]
fn list_directory_marks_files_dirs_and_links_sorted_by_name() {
    let env = TestEnv::new(&["root/d/b_dir"], &[("root/d/c.txt", "c"), ("root/d/a.txt", "a")]);
    env.symlink("a.txt", "root/d/e_link");
    env.symlink("b_dir", "root/d/d_dirlink");
    let mut server = Server::start(&env);
    let text = server.call_text("list_directory", json!({"path": env.p("root/d")}));
    assert_eq!(
        text.lines().collect::<Vec<_>>(),
        ["[FILE] a.txt", "[DIR]  b_dir", "[FILE] c.txt", "[LINK] d_dirlink", "[LINK] e_link"]
    );
    assert_eq!(text.trim_end(), text.trim_end_matches('\n'), "no trailing blanks");
}

#[test]
fn list_directory_empty_directory() {
    let env = TestEnv::new(&["root/empty"], &[]);
    let mut server = Server::start(&env);
    assert_eq!(
        server.call_text("list_directory", json!({"path": env.p("root/empty")})).trim_end(),
        "(empty directory)"
    );
}

#[test]
fn list_directory_of_a_file_is_internal_error() {
    let env = TestEnv::new(&[], &[("root/f.txt", "f")]);
    let mut server = Server::start(&env);
    server.call_err("list_directory", json!({"path": env.p("root/f.txt")}), -32603);
}

#[test]
fn list_directory_missing_is_not_found() {
    let env = TestEnv::new(&[], &[]);
    let mut server = Server::start(&env);
    let path = env.p("root/nope");
    let error = server.call_err("list_directory", json!({"path": path}), -32002);
    assert!(error.message.contains(&path), "{}", error.message);
}

#[test]
fn list_directory_of_the_root_and_relative_dot() {
    let env = TestEnv::new(&["root/d"], &[("root/f.txt", "f")]);
    let mut server = Server::start(&env);
    let expected = ["[DIR]  d", "[FILE] f.txt"];
    assert_eq!(
        server
            .call_text("list_directory", json!({"path": path_str(&env.root())}))
            .lines()
            .collect::<Vec<_>>(),
        expected
    );
    assert_eq!(
        server.call_text("list_directory", json!({"path": "."})).lines().collect::<Vec<_>>(),
        expected
    );
}

// ---------------------------------------------------------------------------------------------
// directory_tree
// ---------------------------------------------------------------------------------------------

/// `root/t/{a.txt, d1/{b.txt, d2/{c.txt}}, empty/}`
fn tree_env() -> TestEnv {
    TestEnv::new(
        &["root/t/empty", "root/t/d1/d2"],
        &[("root/t/a.txt", "a"), ("root/t/d1/b.txt", "b"), ("root/t/d1/d2/c.txt", "c")],
    )
}

fn tree(server: &mut Server, args: Value) -> Value {
    let text = server.call_text("directory_tree", args);
    assert!(!text.contains('\n'), "tree JSON is not compact: {text}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("tree is not JSON ({e}): {text}"))
}

#[test]
fn directory_tree_unlimited_by_default() {
    let env = tree_env();
    let mut server = Server::start(&env);
    let expected = json!({"name": "t", "type": "directory", "children": [
        {"name": "a.txt", "type": "file"},
        {"name": "d1", "type": "directory", "children": [
            {"name": "b.txt", "type": "file"},
            {"name": "d2", "type": "directory", "children": [{"name": "c.txt", "type": "file"}]}
        ]},
        {"name": "empty", "type": "directory", "children": []}
    ]});
    assert_eq!(tree(&mut server, json!({"path": env.p("root/t")})), expected);
}

/// Every directory node has `children`: `[]` when the depth limit cut it off, marked
/// `"truncated": true` so that it still differs from an empty directory. See: issue #15.
#[test]
fn directory_tree_depth_zero_is_root_only() {
    let env = tree_env();
    let mut server = Server::start(&env);
    assert_eq!(
        tree(&mut server, json!({"path": env.p("root/t"), "depth": 0})),
        json!({"name": "t", "type": "directory", "children": [], "truncated": true})
    );
}

#[test]
fn directory_tree_depth_one_is_immediate_children() {
    let env = tree_env();
    let mut server = Server::start(&env);
    let expected = json!({"name": "t", "type": "directory", "children": [
        {"name": "a.txt", "type": "file"},
        {"name": "d1", "type": "directory", "children": [], "truncated": true},
        {"name": "empty", "type": "directory", "children": [], "truncated": true}
    ]});
    assert_eq!(tree(&mut server, json!({"path": env.p("root/t"), "depth": 1})), expected);
}

#[test]
fn directory_tree_depth_two() {
    let env = tree_env();
    let mut server = Server::start(&env);
    let expected = json!({"name": "t", "type": "directory", "children": [
        {"name": "a.txt", "type": "file"},
        {"name": "d1", "type": "directory", "children": [
            {"name": "b.txt", "type": "file"},
            {"name": "d2", "type": "directory", "children": [], "truncated": true}
        ]},
        {"name": "empty", "type": "directory", "children": []}
    ]});
    assert_eq!(tree(&mut server, json!({"path": env.p("root/t"), "depth": 2})), expected);
}

#[test]
fn directory_tree_does_not_follow_symlinks_and_survives_loops() {
    let env = TestEnv::new(&["root/t/d"], &[("root/t/d/f.txt", "f")]);
    env.symlink(&env.p("root/t"), "root/t/d/up");
    env.symlink("loop_b", "root/t/loop_a");
    env.symlink("loop_a", "root/t/loop_b");
    env.symlink("d", "root/t/to_d");
    let mut server = Server::start(&env);
    let expected = json!({"name": "t", "type": "directory", "children": [
        {"name": "d", "type": "directory", "children": [
            {"name": "f.txt", "type": "file"},
            {"name": "up", "type": "symlink"}
        ]},
        {"name": "loop_a", "type": "symlink"},
        {"name": "loop_b", "type": "symlink"},
        {"name": "to_d", "type": "symlink"}
    ]});
    assert_eq!(tree(&mut server, json!({"path": env.p("root/t")})), expected);
}

#[test]
fn directory_tree_missing_is_not_found() {
    let env = TestEnv::new(&[], &[]);
    let mut server = Server::start(&env);
    server.call_err("directory_tree", json!({"path": env.p("root/nope")}), -32002);
}

#[test]
fn directory_tree_depth_must_be_a_non_negative_integer() {
    let env = tree_env();
    let mut server = Server::start(&env);
    for depth in [json!("two"), json!(-1), json!(1.5)] {
        let error = server.call_err(
            "directory_tree",
            json!({"path": env.p("root/t"), "depth": depth}),
            -32602,
        );
        assert!(error.message.contains("depth"), "{depth}: {}", error.message);
    }
}

#[test]
fn directory_tree_of_a_file_is_internal_error() {
    let env = TestEnv::new(&[], &[("root/f.txt", "f")]);
    let mut server = Server::start(&env);
    server.call_err("directory_tree", json!({"path": env.p("root/f.txt")}), -32603);
}

// ---------------------------------------------------------------------------------------------
// move_file
// ---------------------------------------------------------------------------------------------

#[test]
fn move_file_renames_a_file() {
    let env = TestEnv::new(&[], &[("root/a.txt", "content")]);
    let mut server = Server::start(&env);
    let (from, to) = (env.p("root/a.txt"), env.p("root/b.txt"));
    assert_eq!(
        server.call_text("move_file", json!({"source": from, "destination": to})),
        format!("Moved {from} -> {to}")
    );
    assert!(!env.exists("root/a.txt"));
    assert_eq!(env.read_string("root/b.txt"), "content");
}

#[test]
fn move_file_creates_destination_parents() {
    let env = TestEnv::new(&[], &[("root/a.txt", "content")]);
    let mut server = Server::start(&env);
    let (from, to) = (env.p("root/a.txt"), env.p("root/x/y/a.txt"));
    assert_eq!(
        server.call_text("move_file", json!({"source": from, "destination": to})),
        format!("Moved {from} -> {to}")
    );
    assert_eq!(env.read_string("root/x/y/a.txt"), "content");
    assert!(!env.exists("root/a.txt"));
}

#[test]
fn move_file_moves_a_directory_with_contents() {
    let env = TestEnv::new(&["root/d/e"], &[("root/d/e/f.txt", "f")]);
    let mut server = Server::start(&env);
    server.call_text(
        "move_file",
        json!({"source": env.p("root/d"), "destination": env.p("root/moved")}),
    );
    assert_eq!(env.read_string("root/moved/e/f.txt"), "f");
    assert!(!env.exists("root/d"));
}

#[test]
fn move_file_existing_destination_is_refused_and_both_kept() {
    let env = TestEnv::new(&["root/dir"], &[("root/a.txt", "A"), ("root/b.txt", "B")]);
    let before = env.snapshot();
    let mut server = Server::start(&env);
    server.call_err(
        "move_file",
        json!({"source": env.p("root/a.txt"), "destination": env.p("root/b.txt")}),
        -32603,
    );
    server.call_err(
        "move_file",
        json!({"source": env.p("root/a.txt"), "destination": env.p("root/dir")}),
        -32603,
    );
    assert_eq!(before.diff(&env.snapshot()), "");
}

#[test]
fn move_file_missing_source_is_not_found() {
    let env = TestEnv::new(&[], &[]);
    let before = env.snapshot();
    let mut server = Server::start(&env);
    let source = env.p("root/nope.txt");
    let error = server.call_err(
        "move_file",
        json!({"source": source, "destination": env.p("root/x/b.txt")}),
        -32002,
    );
    assert!(error.message.contains(&source), "{}", error.message);
    assert_eq!(
        before.diff(&env.snapshot()),
        "",
        "nothing (not even destination parents) is created"
    );
}

#[test]
fn move_file_moves_the_link_not_the_target() {
    let env = TestEnv::new(&["root/target_dir"], &[("root/target_dir/t.txt", "t")]);
    env.symlink(&env.p("root/target_dir"), "root/link");
    let mut server = Server::start(&env);
    server.call_text(
        "move_file",
        json!({"source": env.p("root/link"), "destination": env.p("root/link2")}),
    );
    assert!(!env.exists("root/link"));
    assert!(env.is_symlink("root/link2"));
    assert_eq!(env.read_link("root/link2"), PathBuf::from(env.p("root/target_dir")));
    assert_eq!(env.read_string("root/target_dir/t.txt"), "t");
}

#[test]
fn move_file_reply_uses_normalized_paths() {
    let env = TestEnv::new(&["root/sub"], &[("root/a.txt", "a")]);
    let mut server = Server::start(&env);
    let reply = server
        .call_text("move_file", json!({"source": "sub/../a.txt", "destination": "./sub/b.txt"}));
    assert_eq!(reply, format!("Moved {} -> {}", env.p("root/a.txt"), env.p("root/sub/b.txt")));
    assert_eq!(env.read_string("root/sub/b.txt"), "a");
}

#[test]
fn move_file_missing_params_are_invalid_params() {
    let env = TestEnv::new(&[], &[("root/a.txt", "a")]);
    let mut server = Server::start(&env);
    let error = server.call_err("move_file", json!({"source": env.p("root/a.txt")}), -32602);
    assert!(error.message.contains("destination"), "{}", error.message);
    let error = server.call_err("move_file", json!({"destination": env.p("root/b.txt")}), -32602);
    assert!(error.message.contains("source"), "{}", error.message);
    assert!(env.exists("root/a.txt"));
}

// ---------------------------------------------------------------------------------------------
// delete_file
// ---------------------------------------------------------------------------------------------

#[test]
fn delete_file_removes_a_file() {
    let env = TestEnv::new(&[], &[("root/a.txt", "a"), ("root/keep.txt", "k")]);
    let mut server = Server::start(&env);
    let path = env.p("root/a.txt");
    assert_eq!(server.call_text("delete_file", json!({"path": path})), format!("Deleted {path}"));
    assert_eq!(env.names("root"), ["keep.txt"]);
}

#[test]
fn delete_file_removes_a_directory_recursively() {
    let env = TestEnv::new(
        &["root/d/e/f"],
        &[("root/d/x.txt", "x"), ("root/d/e/f/y.txt", "y"), ("root/keep.txt", "k")],
    );
    let mut server = Server::start(&env);
    let path = env.p("root/d");
    assert_eq!(server.call_text("delete_file", json!({"path": path})), format!("Deleted {path}"));
    assert_eq!(env.names("root"), ["keep.txt"]);
}

#[test]
fn delete_file_on_a_symlink_removes_only_the_link() {
    let env = TestEnv::new(
        &["root/target_dir"],
        &[("root/target_dir/t.txt", "t"), ("root/target.txt", "T")],
    );
    env.symlink(&env.p("root/target_dir"), "root/dir_link");
    env.symlink("target.txt", "root/file_link");
    let mut server = Server::start(&env);
    server.call_text("delete_file", json!({"path": env.p("root/dir_link")}));
    server.call_text("delete_file", json!({"path": env.p("root/file_link")}));
    assert_eq!(env.names("root"), ["target.txt", "target_dir"]);
    assert_eq!(env.read_string("root/target_dir/t.txt"), "t");
    assert_eq!(env.read_string("root/target.txt"), "T");
}

#[test]
fn delete_file_does_not_follow_symlinks_inside_a_deleted_directory() {
    let env = TestEnv::new(&["root/d", "root/keep"], &[("root/keep/k.txt", "k")]);
    env.symlink(&env.p("root/keep"), "root/d/link_to_keep");
    let mut server = Server::start(&env);
    server.call_text("delete_file", json!({"path": env.p("root/d")}));
    assert!(!env.exists("root/d"));
    assert_eq!(env.read_string("root/keep/k.txt"), "k");
}

#[test]
fn delete_file_missing_is_not_found() {
    let env = TestEnv::new(&[], &[]);
    let mut server = Server::start(&env);
    let path = env.p("root/nope");
    let error = server.call_err("delete_file", json!({"path": path}), -32002);
    assert!(error.message.contains(&path), "{}", error.message);
}

// ---------------------------------------------------------------------------------------------
// get_file_info
// ---------------------------------------------------------------------------------------------

/// 2023-11-14T22:13:20Z
const FIXED_MTIME: u64 = 1_700_000_000;

fn set_mtime(env: &TestEnv, rel: &str, secs: u64) {
    let file = File::open(env.path(rel)).expect("open");
    file.set_times(FileTimes::new().set_modified(UNIX_EPOCH + Duration::from_secs(secs)))
        .expect("set_times");
}

#[test]
fn get_file_info_of_a_file() {
    let env = TestEnv::new(&[], &[("root/f.txt", "12345")]);
    env.set_mode("root/f.txt", 0o644);
    set_mtime(&env, "root/f.txt", FIXED_MTIME);
    let mut server = Server::start(&env);
    let info = key_values(&server.call_text("get_file_info", json!({"path": env.p("root/f.txt")})));
    assert_eq!(info.get("type").map(String::as_str), Some("file"), "{info:?}");
    assert_eq!(info.get("size").map(String::as_str), Some("5"), "{info:?}");
    assert_eq!(info.get("modified").map(String::as_str), Some("2023-11-14T22:13:20Z"), "{info:?}");
    assert_eq!(info.get("permissions").map(String::as_str), Some("644"), "{info:?}");
    assert_eq!(iso8601_utc(FIXED_MTIME), "2023-11-14T22:13:20Z");
}

#[test]
fn get_file_info_of_a_directory() {
    let env = TestEnv::new(&["root/d"], &[]);
    env.set_mode("root/d", 0o750);
    set_mtime(&env, "root/d", FIXED_MTIME + 61);
    let mut server = Server::start(&env);
    let info = key_values(&server.call_text("get_file_info", json!({"path": env.p("root/d")})));
    assert_eq!(info.get("type").map(String::as_str), Some("directory"), "{info:?}");
    assert!(info.get("size").is_some_and(|s| s.parse::<u64>().is_ok()), "{info:?}");
    assert_eq!(info.get("modified").map(String::as_str), Some("2023-11-14T22:14:21Z"), "{info:?}");
    assert_eq!(info.get("permissions").map(String::as_str), Some("750"), "{info:?}");
}

#[test]
fn get_file_info_permissions_are_octal_with_at_least_three_digits() {
    for (mode, expected) in [(0o7, "007"), (0o600, "600"), (0o4755, "4755"), (0o1777, "1777")] {
        let env = TestEnv::new(&[], &[("root/f", "x")]);
        env.set_mode("root/f", mode);
        let mut server = Server::start(&env);
        let info = key_values(&server.call_text("get_file_info", json!({"path": env.p("root/f")})));
        assert_eq!(
            info.get("permissions").map(String::as_str),
            Some(expected),
            "mode {mode:o}: {info:?}"
        );
    }
}

#[test]
fn get_file_info_missing_is_not_found() {
    let env = TestEnv::new(&[], &[]);
    let mut server = Server::start(&env);
    server.call_err("get_file_info", json!({"path": env.p("root/nope")}), -32002);
}

// ---------------------------------------------------------------------------------------------
// list_allowed_directories
// ---------------------------------------------------------------------------------------------

#[test]
fn list_allowed_directories_in_command_line_order_with_access() {
    let env = TestEnv::new(&["b", "a"], &[]);
    let mut server = Server::start_with([
        "--mcp-server".to_owned(),
        "--allow".to_owned(),
        format!("{}:ro", env.p("b")),
        "--allow".to_owned(),
        format!("{}:rw", path_str(&env.root())),
        "--allow".to_owned(),
        format!("{}:ro", env.p("a")),
    ]);
    let text = server.call_text("list_allowed_directories", json!({}));
    let expected = [
        format!("{} (read-only)", env.p("b")),
        format!("{} (read-write)", env.p("root")),
        format!("{} (read-only)", env.p("a")),
    ];
    assert_eq!(text.lines().collect::<Vec<_>>(), expected);
}

#[test]
fn list_allowed_directories_shows_canonical_paths() {
    let env = TestEnv::new(&["real/x", "other"], &[]);
    env.symlink(&env.p("other"), "alias");
    let mut server = Server::start_with([
        "--mcp-server".to_owned(),
        "--allow".to_owned(),
        format!("{}/x/..:rw", env.p("real")),
        "--allow".to_owned(),
        format!("{}:ro", env.p("alias")),
        "--allow".to_owned(),
        format!("{}/:rw", path_str(&env.root())),
    ]);
    let text = server.call_text("list_allowed_directories", json!({}));
    let expected = [
        format!("{} (read-write)", env.p("real")),
        format!("{} (read-only)", env.p("other")),
        format!("{} (read-write)", env.p("root")),
    ];
    assert_eq!(text.lines().collect::<Vec<_>>(), expected);
}

#[test]
fn list_allowed_directories_with_arguments_omitted() {
    let env = TestEnv::new(&[], &[]);
    let mut server = Server::start(&env);
    let text = server.call_text("list_allowed_directories", json!({}));
    assert_eq!(text.trim_end(), format!("{} (read-write)", path_str(&env.root())));
    let reply = server.request("tools/call", json!({"name": "list_allowed_directories"}));
    assert_eq!(reply.text().trim_end(), text.trim_end(), "arguments omitted altogether");
}
