//! list_directory and directory_tree: entries marked and sorted, depth limits, symlinks never
//! followed; list_directory's `withSizes` and `sortBy`; directory_tree's `excludeGlobs`,
//! `respectGitignore`, `maxEntries` and `format: "text"`.
//!
//! Every parameter is run through the real binary. How cut trees and walks hold up on big and
//! tricky trees is in `walks`.

use std::fs::{File, FileTimes};
use std::time::{Duration, UNIX_EPOCH};

use serde_json::{json, Value};

use crate::harness::{path_str, Response, Server, TestEnv};

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
fn small_tree_env() -> TestEnv {
    TestEnv::new(
        &["root/t/empty", "root/t/d1/d2"],
        &[("root/t/a.txt", "a"), ("root/t/d1/b.txt", "b"), ("root/t/d1/d2/c.txt", "c")],
    )
}

fn tree_json(server: &mut Server, args: Value) -> Value {
    let text = server.call_text("directory_tree", args);
    assert!(!text.contains('\n'), "tree JSON is not compact: {text}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("tree is not JSON ({e}): {text}"))
}

#[test]
fn directory_tree_unlimited_by_default() {
    let env = small_tree_env();
    let mut server = Server::start(&env);
    let expected = json!({"name": "t", "type": "directory", "children": [
        {"name": "a.txt", "type": "file"},
        {"name": "d1", "type": "directory", "children": [
            {"name": "b.txt", "type": "file"},
            {"name": "d2", "type": "directory", "children": [{"name": "c.txt", "type": "file"}]}
        ]},
        {"name": "empty", "type": "directory", "children": []}
    ]});
    assert_eq!(tree_json(&mut server, json!({"path": env.p("root/t")})), expected);
}

/// Every directory node has `children`: `[]` when the depth limit cut it off, marked
/// `"truncated": true` so that it still differs from an empty directory. See: issue #15.
#[test]
fn directory_tree_depth_zero_is_root_only() {
    let env = small_tree_env();
    let mut server = Server::start(&env);
    assert_eq!(
        tree_json(&mut server, json!({"path": env.p("root/t"), "depth": 0})),
        json!({"name": "t", "type": "directory", "children": [], "truncated": true})
    );
}

#[test]
fn directory_tree_depth_one_is_immediate_children() {
    let env = small_tree_env();
    let mut server = Server::start(&env);
    let expected = json!({"name": "t", "type": "directory", "children": [
        {"name": "a.txt", "type": "file"},
        {"name": "d1", "type": "directory", "children": [], "truncated": true},
        {"name": "empty", "type": "directory", "children": [], "truncated": true}
    ]});
    assert_eq!(tree_json(&mut server, json!({"path": env.p("root/t"), "depth": 1})), expected);
}

#[test]
fn directory_tree_depth_two() {
    let env = small_tree_env();
    let mut server = Server::start(&env);
    let expected = json!({"name": "t", "type": "directory", "children": [
        {"name": "a.txt", "type": "file"},
        {"name": "d1", "type": "directory", "children": [
            {"name": "b.txt", "type": "file"},
            {"name": "d2", "type": "directory", "children": [], "truncated": true}
        ]},
        {"name": "empty", "type": "directory", "children": []}
    ]});
    assert_eq!(tree_json(&mut server, json!({"path": env.p("root/t"), "depth": 2})), expected);
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
    assert_eq!(tree_json(&mut server, json!({"path": env.p("root/t")})), expected);
}

#[test]
fn directory_tree_missing_is_not_found() {
    let env = TestEnv::new(&[], &[]);
    let mut server = Server::start(&env);
    server.call_err("directory_tree", json!({"path": env.p("root/nope")}), -32002);
}

#[test]
fn directory_tree_depth_must_be_a_non_negative_integer() {
    let env = small_tree_env();
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
