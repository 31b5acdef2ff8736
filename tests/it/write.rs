//! `write_file`: exact bytes on disk, parent creation, atomic replacement that keeps the mode and leaves no temp files.

use serde_json::json;

use crate::harness::{path_str, Server, TestEnv};

#[test]
fn write_file_creates_a_new_file() {
    let env = TestEnv::new(&[], &[]);
    let mut server = Server::start(&env);
    let path = env.p("root/new.txt");
    let content = "h\u{e9}llo\r\nworld \u{1f980}\n";
    assert_eq!(
        server.call_text("write_file", json!({"path": path, "content": content})),
        format!("Successfully wrote {path}")
    );
    assert_eq!(env.read_string("root/new.txt"), content);
    assert_eq!(env.names("root"), ["new.txt"]);
}

#[test]
fn write_file_replaces_an_existing_file_completely() {
    let env = TestEnv::new(&[], &[("root/f.txt", "a much longer original content\n")]);
    let mut server = Server::start(&env);
    server.call_text("write_file", json!({"path": env.p("root/f.txt"), "content": "short"}));
    assert_eq!(env.read_string("root/f.txt"), "short");
}

#[test]
fn write_file_empty_content() {
    let env = TestEnv::new(&[], &[("root/f.txt", "something")]);
    let mut server = Server::start(&env);
    server.call_text("write_file", json!({"path": env.p("root/f.txt"), "content": ""}));
    assert_eq!(env.read("root/f.txt"), b"");
}

#[test]
fn write_file_large_content_round_trips() {
    let env = TestEnv::new(&[], &[]);
    let content: String = (0..100_000).map(|i| format!("{i}\n")).collect();
    let mut server = Server::start(&env);
    server.call_text("write_file", json!({"path": env.p("root/big.txt"), "content": content}));
    assert!(env.read_string("root/big.txt") == content, "content differs");
    assert_eq!(
        server.call_text("read_file", json!({"path": env.p("root/big.txt")})).len(),
        content.len()
    );
}

#[test]
fn write_file_creates_parent_directories() {
    let env = TestEnv::new(&[], &[]);
    let mut server = Server::start(&env);
    let path = env.p("root/a/b/c/deep.txt");
    assert_eq!(
        server.call_text("write_file", json!({"path": path, "content": "deep"})),
        format!("Successfully wrote {path}")
    );
    assert_eq!(env.read_string("root/a/b/c/deep.txt"), "deep");
    assert!(env.is_dir("root/a/b"));
}

#[test]
fn write_file_keeps_the_existing_mode() {
    for mode in [0o600, 0o755, 0o640] {
        let env = TestEnv::new(&[], &[("root/f.sh", "#!/bin/sh\n")]);
        env.set_mode("root/f.sh", mode);
        let mut server = Server::start(&env);
        server.call_text(
            "write_file",
            json!({"path": env.p("root/f.sh"), "content": "#!/bin/sh\necho hi\n"}),
        );
        assert_eq!(env.read_string("root/f.sh"), "#!/bin/sh\necho hi\n");
        assert_eq!(env.mode("root/f.sh"), mode, "mode {mode:o} not kept");
    }
}

#[test]
fn write_file_leaves_no_temp_files() {
    let env = TestEnv::new(&[], &[("root/keep.txt", "k"), ("root/f.txt", "old")]);
    let mut server = Server::start(&env);
    for i in 0..5 {
        server.call_text(
            "write_file",
            json!({"path": env.p("root/f.txt"), "content": format!("v{i}")}),
        );
        server.call_text(
            "write_file",
            json!({"path": env.p(&format!("root/n{i}.txt")), "content": "n"}),
        );
    }
    assert_eq!(
        env.names("root"),
        ["f.txt", "keep.txt", "n0.txt", "n1.txt", "n2.txt", "n3.txt", "n4.txt"]
    );
    assert_eq!(env.read_string("root/f.txt"), "v4");
}

#[test]
fn write_file_failure_leaves_no_temp_files() {
    let env = TestEnv::new(&["root/dir"], &[("root/plain.txt", "p")]);
    let before = env.snapshot();
    let mut server = Server::start(&env);
    // The target is a directory.
    server.call_err("write_file", json!({"path": env.p("root/dir"), "content": "x"}), -32603);
    // A parent is a regular file.
    server.call_err(
        "write_file",
        json!({"path": env.p("root/plain.txt/child.txt"), "content": "x"}),
        -32603,
    );
    assert_eq!(before.diff(&env.snapshot()), "");
}

#[test]
fn write_file_reply_uses_the_normalized_path() {
    let env = TestEnv::new(&["root/sub"], &[]);
    let mut server = Server::start(&env);
    let client = format!("{}/sub/./../b.txt", path_str(&env.root()));
    assert_eq!(
        server.call_text("write_file", json!({"path": client, "content": "b"})),
        format!("Successfully wrote {}", env.p("root/b.txt"))
    );
    assert_eq!(env.read_string("root/b.txt"), "b");
}

#[test]
fn write_file_relative_path_lands_in_first_root() {
    let env = TestEnv::new(&["second"], &[]);
    let mut server = Server::start_with([
        "--mcp-server".to_owned(),
        "--allow".to_owned(),
        format!("{}:rw", path_str(&env.root())),
        "--allow".to_owned(),
        format!("{}:rw", env.p("second")),
    ]);
    let reply = server.call_text("write_file", json!({"path": "rel/r.txt", "content": "r"}));
    assert_eq!(reply, format!("Successfully wrote {}", env.p("root/rel/r.txt")));
    assert_eq!(env.read_string("root/rel/r.txt"), "r");
    assert!(!env.exists("second/rel"));
}

#[test]
fn write_file_missing_params_are_invalid_params() {
    let env = TestEnv::new(&[], &[]);
    let mut server = Server::start(&env);
    let error = server.call_err("write_file", json!({"path": env.p("root/x.txt")}), -32602);
    assert!(error.message.contains("content"), "{}", error.message);
    let error = server.call_err("write_file", json!({"content": "x"}), -32602);
    assert!(error.message.contains("path"), "{}", error.message);
    let error =
        server.call_err("write_file", json!({"path": env.p("root/x.txt"), "content": 7}), -32602);
    assert!(error.message.contains("content"), "{}", error.message);
    assert!(!env.exists("root/x.txt"));
}

#[test]
fn write_file_through_an_inside_symlink_updates_the_target_and_keeps_the_link() {
    let env = TestEnv::new(&[], &[("root/target.txt", "old")]);
    env.symlink("target.txt", "root/link");
    let mut server = Server::start(&env);
    let path = env.p("root/link");
    assert_eq!(
        server.call_text("write_file", json!({"path": path, "content": "new"})),
        format!("Successfully wrote {path}")
    );
    assert!(env.is_symlink("root/link"), "the link was replaced by a file");
    assert_eq!(env.read_string("root/target.txt"), "new");
    assert_eq!(env.names("root"), ["link", "target.txt"]);
}

/// Replies may arrive out of order, so requests run concurrently: concurrent writes to one file
/// must each replace it whole, and reads in between must see one complete version.
#[test]
fn concurrent_writes_and_reads_never_see_a_partial_file() {
    let env = TestEnv::new(&[], &[]);
    let size = 256 * 1024;
    let versions: Vec<String> = ["A", "B", "C", "D"].iter().map(|c| c.repeat(size)).collect();
    env.write("root/f.txt", &versions[0]);
    let mut server = Server::start(&env);
    let n = 24;
    for i in 0..n {
        let params = if i % 2 == 0 {
            json!({"name": "write_file", "arguments": {"path": env.p("root/f.txt"), "content": versions[i % versions.len()]}})
        } else {
            json!({"name": "read_file", "arguments": {"path": env.p("root/f.txt")}})
        };
        server.send(&json!({"jsonrpc": "2.0", "id": format!("c{i}"), "method": "tools/call", "params": params}));
    }
    for i in 0..n {
        let reply = server.reply_to(&json!(format!("c{i}")));
        let text = reply.text();
        if i % 2 == 1 {
            assert!(
                versions.contains(&text),
                "read c{i} saw a partial file ({} bytes)",
                text.len()
            );
        }
    }
    assert!(
        versions.contains(&env.read_string("root/f.txt")),
        "final content is not one whole version"
    );
    assert_eq!(env.names("root"), ["f.txt"], "temp files left behind");
}
