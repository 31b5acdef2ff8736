//! What a short regex may cost: a pattern too large once compiled is refused with a clear
//! error before any search, in grep_files and edit_file alike.
//!
//! See: attack evidence 2. On a 1 MB file (200 lines of 5,000 `a`), `[\s\S]{0,4000}x` ran for
//! 168 s and `(\w{100}){100}` for 48 s in one uninterruptible search each, and went on burning
//! CPU after `notifications/cancelled`.

use serde_json::json;

use crate::harness::{Server, TestEnv};

/// 200 lines of 5,000 `a`: one megabyte.
fn megabyte_of_a() -> String {
    format!("{}\n", "a".repeat(5000)).repeat(200)
}

#[test]
fn regex_too_large_once_compiled_is_refused_before_searching() {
    let env = TestEnv::new(&[], &[]);
    env.write("root/t.txt", megabyte_of_a());
    let mut server = Server::start(&env);
    for pattern in [r"[\s\S]{0,4000}x", r"(\w{100}){100}", r"\w{9000}"] {
        let grep = json!({"regex": pattern, "directory": env.p("root")});
        let error = server.call_err("grep_files", grep, -32603);
        assert!(
            error.message.starts_with(&format!("invalid regex `{pattern}`: the pattern is too large once compiled (over 256 KiB); use smaller repetition counts")),
            "grep_files {pattern}: {}",
            error.message
        );
        let edits = json!([{"oldText": pattern, "newText": "z", "isRegex": true, "limit": 0}]);
        let edit = json!({"path": env.p("root/t.txt"), "edits": edits, "dryRun": true});
        let error = server.call_err("edit_file", edit, -32603);
        assert!(
            error.message.starts_with(&format!(
                "edit #1: invalid regex `{pattern}`: the pattern is too large once compiled"
            )),
            "edit_file {pattern}: {}",
            error.message
        );
    }
    // Patterns of ordinary size still run, on the same file.
    let text =
        server.call_text("grep_files", json!({"regex": r"^a{0,150}$", "directory": env.p("root")}));
    assert_eq!(text, "(no matches found)");
    assert_eq!(env.read_string("root/t.txt"), megabyte_of_a());
}
