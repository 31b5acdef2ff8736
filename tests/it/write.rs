//! `write_file`: exact bytes on disk, parent creation, atomic replacement that keeps the mode and leaves no temp files; `append`, which adds to the same file and keeps to the policy.

use std::os::unix::fs::MetadataExt;

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
    let mut server = Server::start_also(&env, &[("second", "rw")]);
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

#[test]
fn append_adds_to_the_end() {
    let env = TestEnv::new(&[], &[("root/log.txt", "one\r\n")]);
    env.set_mode("root/log.txt", 0o640);
    let mut server = Server::start(&env);
    let p = env.p("root/log.txt");
    assert_eq!(
        server.call_text("write_file", json!({"path": p, "content": "two\r\n", "append": true})),
        format!("Successfully appended to {p}")
    );
    // The bytes are added as they are: no newline is added or taken.
    server.call_text("write_file", json!({"path": p, "content": "three", "append": true}));
    server.call_text("write_file", json!({"path": p, "content": "", "append": true}));
    server.call_text("write_file", json!({"path": p, "content": " and \u{1f980}", "append": true}));
    assert_eq!(env.read_string("root/log.txt"), "one\r\ntwo\r\nthree and \u{1f980}");
    assert_eq!(env.mode("root/log.txt"), 0o640);
    assert_eq!(env.names("root"), ["log.txt"], "temp files left behind");
}

#[test]
fn append_creates_a_missing_file_and_its_parents() {
    let env = TestEnv::new(&[], &[]);
    let mut server = Server::start(&env);
    let p = env.p("root/a/b/new.log");
    assert_eq!(
        server.call_text("write_file", json!({"path": p, "content": "first\n", "append": true})),
        format!("Successfully appended to {p}")
    );
    assert_eq!(env.read_string("root/a/b/new.log"), "first\n");
    let empty = env.p("root/empty.log");
    server.call_text("write_file", json!({"path": empty, "content": "", "append": true}));
    assert_eq!(env.read("root/empty.log"), b"");
    // Relative paths land in the first root, as for a replacing write.
    let reply =
        server.call_text("write_file", json!({"path": "rel.log", "content": "r", "append": true}));
    assert_eq!(reply, format!("Successfully appended to {}", env.p("root/rel.log")));
    assert_eq!(env.read_string("root/rel.log"), "r");
}

/// An append writes at the end of the same file (same inode); a replacing write renames a new
/// file over it. So a big file is not rewritten.
#[test]
fn append_never_rewrites_the_file() {
    let big = "x".repeat(4 * 1024 * 1024);
    let env = TestEnv::new(&[], &[("root/big.txt", &big)]);
    let inode = |env: &TestEnv| std::fs::metadata(env.path("root/big.txt")).expect("stat").ino();
    let before = inode(&env);
    let mut server = Server::start(&env);
    let p = env.p("root/big.txt");
    server.call_text("write_file", json!({"path": p, "content": "tail\n", "append": true}));
    assert_eq!(inode(&env), before, "the append replaced the file");
    let on_disk = env.read("root/big.txt");
    assert_eq!(on_disk.len(), big.len() + 5);
    assert!(on_disk.ends_with(b"xtail\n"));
    // append: false is the default: the whole file is replaced, atomically.
    server.call_text("write_file", json!({"path": p, "content": "new", "append": false}));
    assert_eq!(env.read_string("root/big.txt"), "new");
    assert_ne!(inode(&env), before);
}

#[test]
fn pipelined_appends_land_in_order() {
    let env = TestEnv::new(&[], &[]);
    let mut server = Server::start(&env);
    let p = env.p("root/order.log");
    for i in 0..20 {
        let params = json!({"name": "write_file", "arguments": {"path": p, "content": format!("{i}\n"), "append": true}});
        server.send(&json!({"jsonrpc": "2.0", "id": format!("a{i}"), "method": "tools/call", "params": params}));
    }
    for i in 0..20 {
        server.reply_to(&json!(format!("a{i}"))).text();
    }
    let expect: String = (0..20).map(|i| format!("{i}\n")).collect();
    assert_eq!(env.read_string("root/order.log"), expect);
}

#[test]
fn append_through_an_inside_symlink_appends_to_the_target() {
    let env = TestEnv::new(&[], &[("root/target.txt", "a\n")]);
    env.symlink("target.txt", "root/link");
    let mut server = Server::start(&env);
    server.call_text(
        "write_file",
        json!({"path": env.p("root/link"), "content": "b\n", "append": true}),
    );
    assert!(env.is_symlink("root/link"));
    assert_eq!(env.read_string("root/target.txt"), "a\nb\n");
}

#[test]
fn append_is_refused_under_a_read_only_root_and_outside() {
    let env = TestEnv::new(&["ro", "outside"], &[("ro/log.txt", "ro\n")]);
    let marker = env.marker().to_owned();
    env.write("outside/secret.txt", &marker);
    env.symlink(&env.p("outside/secret.txt"), "root/escape.txt");
    env.symlink(&env.p("outside"), "root/escape_dir");
    let before = env.snapshot();
    let mut server = Server::start_also(&env, &[("ro", "ro")]);
    for (path, why) in [
        (env.p("ro/log.txt"), "read-only"),
        (env.p("ro/new.txt"), "read-only"),
        (env.p("outside/secret.txt"), "outside the allowed directories"),
        (env.p("root/../outside/new.txt"), "outside the allowed directories"),
        (env.p("root/escape.txt"), "outside the allowed directories"),
        (env.p("root/escape_dir/new.txt"), "outside the allowed directories"),
    ] {
        let args = json!({"path": path, "content": "x", "append": true});
        let error = server.call_err("write_file", args, -32001);
        assert!(error.message.contains(why), "{path}: {}", error.message);
        assert!(!error.message.contains(&marker), "{}", error.message);
    }
    assert_eq!(before.diff(&env.snapshot()), "");
}

#[test]
fn append_to_a_directory_or_a_fifo_fails_and_changes_nothing() {
    let env = TestEnv::new(&["root/dir"], &[("root/plain.txt", "p")]);
    let before = env.snapshot();
    let mut server = Server::start(&env);
    for rel in ["root/dir", "root/plain.txt/child.txt"] {
        let args = json!({"path": env.p(rel), "content": "x", "append": true});
        server.call_err("write_file", args, -32603);
    }
    assert_eq!(before.diff(&env.snapshot()), "");
    // A FIFO (kept out of the snapshot, which would block reading it) is refused at once, not
    // waited on for a reader.
    let fifo = env.path("root/fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o644)).expect("mkfifo");
    let args = json!({"path": env.p("root/fifo"), "content": "x", "append": true});
    let error = server.call_err("write_file", args, -32603);
    assert!(error.message.contains("not a regular file"), "{}", error.message);
    let kind = std::fs::symlink_metadata(&fifo).expect("stat").file_type();
    assert!(std::os::unix::fs::FileTypeExt::is_fifo(&kind));
}

#[test]
fn append_must_be_a_boolean() {
    let env = TestEnv::new(&[], &[]);
    let mut server = Server::start(&env);
    let args = json!({"path": env.p("root/x.txt"), "content": "x", "append": "yes"});
    let error = server.call_err("write_file", args, -32602);
    assert!(error.message.contains("`append`"), "{}", error.message);
    assert!(!env.exists("root/x.txt"));
}

/// A file with another hard link (perhaps outside the allowed directories) is never changed
/// through this name: every other write replaces the entry, and an append in place would write
/// the other name's file too, so it is refused.
#[test]
fn append_is_refused_for_a_hard_linked_file() {
    let env = TestEnv::new(&["outside"], &[("outside/keys", "key one\n")]);
    std::fs::hard_link(env.path("outside/keys"), env.path("root/notes.txt")).unwrap();
    let mut server = Server::start(&env);
    let args = json!({"path": env.p("root/notes.txt"), "content": "key two\n", "append": true});
    let err = server.call_err("write_file", args, -32603);
    assert!(err.message.contains("hard links"), "{}", err.message);
    assert_eq!(env.read_string("outside/keys"), "key one\n");
    // Writing the whole content replaces the entry, and leaves the other name alone.
    let args = json!({"path": env.p("root/notes.txt"), "content": "mine\n"});
    server.call_text("write_file", args);
    assert_eq!(env.read_string("root/notes.txt"), "mine\n");
    assert_eq!(env.read_string("outside/keys"), "key one\n");
}

/// Whether a capability a test needs is missing: under `CI=true` that fails the test; elsewhere
/// the test is skipped, saying so on stderr.
#[cfg(target_os = "linux")]
fn missing(why: &str) -> bool {
    assert!(std::env::var_os("CI").is_none_or(|v| v != "true"), "CI: {why}");
    let _ = std::io::Write::write_fmt(&mut std::io::stderr(), format_args!("skipped: {why}\n"));
    true
}

#[cfg(target_os = "linux")]
fn set_xattr(path: &std::path::Path, name: &str, value: &[u8]) -> std::io::Result<()> {
    let path = std::ffi::CString::new(path_str(path)).expect("path");
    let name = std::ffi::CString::new(name).expect("name");
    // SAFETY: both strings are NUL-terminated and live across the call; `value` is a slice.
    let rc = unsafe {
        libc::setxattr(path.as_ptr(), name.as_ptr(), value.as_ptr().cast(), value.len(), 0)
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(target_os = "linux")]
fn get_xattr(path: &std::path::Path, name: &str) -> Option<Vec<u8>> {
    let path = std::ffi::CString::new(path_str(path)).expect("path");
    let name = std::ffi::CString::new(name).expect("name");
    let mut buf = vec![0u8; 4096];
    // SAFETY: as in `set_xattr`; `buf` is writable for its length.
    let n =
        unsafe { libc::getxattr(path.as_ptr(), name.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    (n >= 0).then(|| {
        buf.truncate(n as usize);
        buf
    })
}

/// A POSIX access ACL as the kernel stores it (`system.posix_acl_access`): version 2, then
/// (tag, permissions, id) entries. This one also lets uid 4242 read and write.
#[cfg(target_os = "linux")]
fn acl_granting_a_user() -> Vec<u8> {
    let mut acl = 2u32.to_le_bytes().to_vec();
    let undefined = u32::MAX;
    for (tag, perm, id) in [
        (0x01u16, 6u16, undefined), // the owner: rw
        (0x02, 6, 4242),            // user 4242: rw
        (0x04, 4, undefined),       // the group: r
        (0x10, 6, undefined),       // the mask: rw
        (0x20, 4, undefined),       // others: r
    ] {
        acl.extend(tag.to_le_bytes());
        acl.extend(perm.to_le_bytes());
        acl.extend(id.to_le_bytes());
    }
    acl
}

/// A file rewritten by write_file or edit_file keeps its extended attributes and its POSIX
/// ACL: the temp file that replaces it gets them before the rename. See: #17 (C1).
#[cfg(target_os = "linux")]
#[test]
fn rewriting_a_file_keeps_its_xattrs_and_acl() {
    let env = TestEnv::new(&["root"], &[("root/w.txt", "old w\n"), ("root/e.txt", "old e\n")]);
    let acl = acl_granting_a_user();
    for rel in ["root/w.txt", "root/e.txt"] {
        if let Err(e) = set_xattr(&env.path(rel), "user.replay.test", b"kept") {
            if missing(&format!("the test's filesystem refuses user xattrs: {e}")) {
                return;
            }
        }
        if let Err(e) = set_xattr(&env.path(rel), "system.posix_acl_access", &acl) {
            if missing(&format!("the test's filesystem refuses POSIX ACLs: {e}")) {
                return;
            }
        }
    }
    let mut server = Server::start(&env);
    server.call("write_file", json!({"path": env.p("root/w.txt"), "content": "new w\n"}));
    let edit = json!([{"oldText": "old", "newText": "new"}]);
    server.call("edit_file", json!({"path": env.p("root/e.txt"), "edits": edit}));
    for (rel, text) in [("root/w.txt", "new w\n"), ("root/e.txt", "new e\n")] {
        assert_eq!(std::fs::read_to_string(env.path(rel)).expect("read"), text, "{rel}");
        let xattr = get_xattr(&env.path(rel), "user.replay.test");
        assert_eq!(xattr.as_deref(), Some(&b"kept"[..]), "{rel}: user xattr lost");
        let kept = get_xattr(&env.path(rel), "system.posix_acl_access");
        assert_eq!(kept.as_deref(), Some(&acl[..]), "{rel}: ACL lost");
    }
}

/// A file rewritten by write_file or edit_file keeps its mode, but for the setuid and setgid
/// bits, which are dropped as the kernel drops them when a file is written: new content must
/// not run with another user's rights. See: #17 (C2), SECURITY.md.
#[test]
fn rewriting_a_file_drops_setuid_and_setgid_keeps_the_rest() {
    let modes =
        [(0o4755, 0o755), (0o2755, 0o755), (0o6775, 0o775), (0o2644, 0o644), (0o1777, 0o1777)];
    for (mode, kept) in modes {
        let env = TestEnv::new(&["root"], &[("root/w", "old w\n"), ("root/e", "old e\n")]);
        env.set_mode("root/w", mode);
        env.set_mode("root/e", mode);
        let mut server = Server::start(&env);
        server.call("write_file", json!({"path": env.p("root/w"), "content": "new w\n"}));
        let edit = json!([{"oldText": "old", "newText": "new"}]);
        server.call("edit_file", json!({"path": env.p("root/e"), "edits": edit}));
        for rel in ["root/w", "root/e"] {
            assert!(std::fs::read_to_string(env.path(rel)).expect("read").starts_with("new"));
            assert_eq!(env.mode(rel), kept, "{rel}: mode {mode:o} became {:o}", env.mode(rel));
        }
    }
}
