//! The stale-write guard: get_file_info and a whole-file read_file report a file's sha256, and
//! write_file, edit_file and apply_patch refuse (-32603, nothing changed) to change a file whose
//! content no longer has the `expectedSha256` the call gives. See: issue #25.

use serde_json::{json, Value};

use crate::harness::{Server, TestEnv};

const OLD: &str = "old text\n";
/// `printf 'old text\n' | sha256sum`
const OLD_SHA: &str = "761ca39634e5caa7a20a8ff174b8c1adcb31b16f22a78fa58c4d501ff932b051";

#[test]
fn get_file_info_and_read_file_report_the_sha256() {
    let env = TestEnv::new(&[], &[("root/f.txt", OLD)]);
    let mut server = Server::start(&env);
    let actual = OLD_SHA;
    let info = server.call("get_file_info", json!({"path": env.p("root/f.txt")}));
    assert!(info.text().ends_with(&format!("\nsha256: {actual}")), "{}", info.line);
    assert_eq!(info.value["result"]["structuredContent"]["sha256"], json!(actual));
    let read = server.call("read_file", json!({"path": env.p("root/f.txt")}));
    let data = json!({"encoding": "UTF-8", "sha256": actual});
    assert_eq!(read.value["result"]["structuredContent"], data);
    // A directory has none.
    let info = server.call_text("get_file_info", json!({"path": env.p("root")}));
    assert!(!info.contains("sha256"), "{info}");
}

/// A writer's arguments from the file's path, the root and the hash to expect.
type Arguments = fn(&str, &str, &str) -> Value;

/// Each writer, with the current hash (it writes) and with a stale one (-32603 giving the
/// current hash, the file byte-identical).
#[test]
fn each_writer_checks_expected_sha256() {
    let env = TestEnv::new(&[], &[]);
    let mut server = Server::start(&env);
    let path = env.p("root/f.txt");
    let root = env.p("root");
    let writers: [(&str, Arguments); 4] = [
        (
            "write_file",
            |path, _, sha| json!({"path": path, "content": "new\n", "expectedSha256": sha}),
        ),
        (
            "write_file",
            |path, _, sha| json!({"path": path, "content": "new\n", "append": true, "expectedSha256": sha}),
        ),
        (
            "edit_file",
            |path, _, sha| json!({"path": path, "edits": [{"oldText": "old", "newText": "new"}], "expectedSha256": sha}),
        ),
        ("apply_patch", |_, root, sha| {
            json!({
                "patch": "*** Begin Patch\n*** Update File: f.txt\n-old text\n+new text\n*** End Patch",
                "workingDirectory": root,
                "expectedSha256": [format!("{sha}  f.txt")],
            })
        }),
    ];
    let current = OLD_SHA;
    for (tool, args) in writers {
        env.write("root/f.txt", OLD);
        let stale = "0".repeat(64);
        let error = server.call_err(tool, args(&path, &root, &stale), -32603);
        assert!(
            error.message.contains(&format!("its sha256 is {current}, not {stale}")),
            "{tool}: {}",
            error.message
        );
        assert_eq!(env.read_string("root/f.txt"), OLD, "{tool} wrote over a stale hash");
        server.call_text(tool, args(&path, &root, &current.to_uppercase()));
        assert_ne!(env.read_string("root/f.txt"), OLD, "{tool} did not write");
    }
}

#[test]
fn apply_patch_refuses_a_hash_line_it_cannot_use() {
    let env = TestEnv::new(&[], &[("root/f.txt", OLD), ("root/g.txt", OLD)]);
    let mut server = Server::start(&env);
    let patch = "*** Begin Patch\n*** Delete File: f.txt\n*** End Patch";
    for (lines, expect) in [
        (json!(["nothex  f.txt"]), "expected '<64 hex digits>  <path>'"),
        (json!([format!("{OLD_SHA}  g.txt")]), "which the patch does not change"),
    ] {
        let args =
            json!({"patch": patch, "workingDirectory": env.p("root"), "expectedSha256": lines});
        let error = server.call_err("apply_patch", args, -32602);
        assert!(error.message.contains(expect), "{}", error.message);
    }
    assert!(env.exists("root/f.txt"));
}
