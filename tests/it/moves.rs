//! move_file: files, directories and symlinks (the link, not its target) moved or renamed,
//! parents made, an existing destination refused with both kept, and normalized paths in the
//! reply. Moves across file systems of trees deeper than any recursion are in `depth`; a
//! cancelled move across file systems is in `turns`.

use std::path::PathBuf;

use serde_json::json;

use crate::harness::{Server, TestEnv};

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
