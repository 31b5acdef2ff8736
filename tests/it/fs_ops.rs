//! The other file tools: create_directory, delete_file, get_file_info and
//! list_allowed_directories.

use std::fs::{File, FileTimes};
use std::time::{Duration, UNIX_EPOCH};

use serde_json::json;

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
