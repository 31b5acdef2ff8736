//! The allowed-directories policy, black-box: each escape is a named row run through every path-taking tool.
//!
//! A row passes only if, for every tool, the reply is a -32001 error naming the path and the
//! reason, the outside marker never appears in the reply line, and the whole temp tree (inside
//! and outside the root) is byte-for-byte unchanged.

use serde_json::{json, Value};

use crate::harness::{normalize, path_str, Server, TestEnv};

/// One path-taking tool: how to call it with the path under test in the slot being tested.
struct ToolRow {
    name: &'static str,
    /// Builds `(tool, arguments)` for the path under test.
    args: fn(&TestEnv, &str) -> (&'static str, Value),
    /// Does the call modify the filesystem (so a read-only root must refuse it)?
    writes: bool,
    /// `read_multiple_files` reports errors inline instead of as a JSON-RPC error.
    inline: bool,
}

const TOOLS: &[ToolRow] = &[
    ToolRow {
        name: "read_file",
        args: |_, p| ("read_file", json!({"path": p})),
        writes: false,
        inline: false,
    },
    ToolRow {
        name: "read_multiple_files",
        args: |_, p| ("read_multiple_files", json!({"paths": [p]})),
        writes: false,
        inline: true,
    },
    ToolRow {
        name: "write_file",
        args: |_, p| ("write_file", json!({"path": p, "content": "WRITTEN-BY-ESCAPE"})),
        writes: true,
        inline: false,
    },
    ToolRow {
        name: "create_directory",
        args: |_, p| ("create_directory", json!({"path": p})),
        writes: true,
        inline: false,
    },
    ToolRow {
        name: "list_directory",
        args: |_, p| ("list_directory", json!({"path": p})),
        writes: false,
        inline: false,
    },
    ToolRow {
        name: "directory_tree",
        args: |_, p| ("directory_tree", json!({"path": p})),
        writes: false,
        inline: false,
    },
    ToolRow {
        name: "move_file(source)",
        args: |env, p| ("move_file", json!({"source": p, "destination": env.p("root/moved_here")})),
        writes: true,
        inline: false,
    },
    ToolRow {
        name: "move_file(destination)",
        args: |env, p| ("move_file", json!({"source": env.p("root/inside.txt"), "destination": p})),
        writes: true,
        inline: false,
    },
    ToolRow {
        name: "copy_file(source)",
        // Copying only reads its source: a read-only root is enough for it.
        args: |env, p| {
            ("copy_file", json!({"source": p, "destination": env.p("root/copied_here")}))
        },
        writes: false,
        inline: false,
    },
    ToolRow {
        name: "copy_file(destination)",
        args: |env, p| {
            let args =
                json!({"source": env.p("root/inside.txt"), "destination": p, "overwrite": true});
            ("copy_file", args)
        },
        writes: true,
        inline: false,
    },
    ToolRow {
        name: "delete_file",
        args: |_, p| ("delete_file", json!({"path": p})),
        writes: true,
        inline: false,
    },
    ToolRow {
        name: "get_file_info",
        args: |_, p| ("get_file_info", json!({"path": p})),
        writes: false,
        inline: false,
    },
];

/// The escape fixture, under `base`:
///
/// ```text
/// root/                   allowed read-write
///   inside.txt            "inside"
///   sub/
///   link_file      ->     base/outside/secret.txt
///   link_dir       ->     base/outside
///   rel_link_dir   ->     ../outside
///   link_chain     ->     link_dir              (inside link to an outside link)
///   dangling_out   ->     base/outside/not_yet.txt
/// outside/secret.txt      marker
/// outside/dir/inner.txt   marker
/// root_evil/secret.txt    marker                (string-prefix sibling of root)
/// ```
fn escape_env() -> TestEnv {
    let env =
        TestEnv::new(&["root/sub", "outside/dir", "root_evil"], &[("root/inside.txt", "inside")]);
    let marker = env.marker().to_owned();
    env.write("outside/secret.txt", &marker);
    env.write("outside/dir/inner.txt", &marker);
    env.write("root_evil/secret.txt", &marker);
    env.symlink(&env.p("outside/secret.txt"), "root/link_file");
    env.symlink(&env.p("outside"), "root/link_dir");
    env.symlink("../outside", "root/rel_link_dir");
    env.symlink("link_dir", "root/link_chain");
    env.symlink(&env.p("outside/not_yet.txt"), "root/dangling_out");
    env
}

/// Runs `path` through every tool in `tools` on a fresh fixture and server each, and collects
/// every deviation from a clean -32001 refusal whose message contains `reason`.
fn check_denied(
    row: &str,
    tools: &[&ToolRow],
    make_env: fn() -> TestEnv,
    server_args: fn(&TestEnv) -> Vec<String>,
    path: fn(&TestEnv) -> String,
    reason: &str,
) {
    let mut failures = Vec::new();
    for tool in tools {
        let env = make_env();
        // Layouts may add to the tree (e.g. an alias symlink), so they run before the snapshot.
        let allow = server_args(&env);
        let client_path = path(&env);
        let normalized = normalize(&env.root(), &client_path);
        let (name, args) = (tool.args)(&env, &client_path);
        let before = env.snapshot();
        let mut server = Server::start_with(allow);
        let reply = server.call(name, args.clone());
        let mut problems = Vec::new();
        if reply.line.contains(env.marker()) {
            problems.push("the reply contains the outside file's content".to_owned());
        }
        if tool.inline {
            check_inline_denial(&reply.value, &client_path, &normalized, reason, &mut problems);
        } else {
            check_rpc_denial(&reply.value, &client_path, &normalized, reason, &mut problems);
        }
        let diff = before.diff(&env.snapshot());
        if !diff.is_empty() {
            problems.push(format!("the filesystem changed:\n{diff}"));
        }
        if !problems.is_empty() {
            failures.push(format!(
                "[{row} x {}] {name} {args}\n  reply: {}\n  {}",
                tool.name,
                reply.line.trim_end(),
                problems.join("\n  ")
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} tools failed row {row}:\n\n{}",
        failures.len(),
        tools.len(),
        failures.join("\n\n")
    );
}

fn check_rpc_denial(
    reply: &Value,
    client_path: &str,
    normalized: &str,
    reason: &str,
    problems: &mut Vec<String>,
) {
    let Some(error) = reply.get("error") else {
        problems.push("expected a -32001 error, got a result".to_owned());
        return;
    };
    if error.get("code") != Some(&json!(-32001)) {
        problems.push(format!(
            "expected code -32001, got {}",
            error.get("code").unwrap_or(&Value::Null)
        ));
    }
    let message = error.get("message").and_then(Value::as_str).unwrap_or("");
    if !message.contains(reason) {
        problems.push(format!("message does not say {reason:?}"));
    }
    if !message.contains(client_path) && !message.contains(normalized) {
        problems.push(format!("message names neither {client_path:?} nor {normalized:?}"));
    }
}

fn check_inline_denial(
    reply: &Value,
    client_path: &str,
    normalized: &str,
    reason: &str,
    problems: &mut Vec<String>,
) {
    if reply.get("error").is_some() {
        problems.push(
            "read_multiple_files must report errors inline, not as a JSON-RPC error".to_owned(),
        );
        return;
    }
    let texts: Vec<&str> = reply
        .pointer("/result/content")
        .and_then(Value::as_array)
        .map(|items| {
            items.iter().filter_map(|item| item.get("text").and_then(Value::as_str)).collect()
        })
        .unwrap_or_default();
    let [text] = texts[..] else {
        problems.push(format!("expected exactly one text item, got {}", texts.len()));
        return;
    };
    let prefixed =
        [client_path, normalized].iter().any(|p| text.starts_with(&format!("{p}:\n[error")));
    if !prefixed {
        problems.push("item is not `path:\\n[error...`".to_owned());
    }
    if !text.contains(reason) {
        problems.push(format!("inline error does not say {reason:?}"));
    }
}

fn allow_root_rw(env: &TestEnv) -> Vec<String> {
    vec!["--mcp-server".into(), "--allow".into(), format!("{}:rw", path_str(&env.root()))]
}

const OUTSIDE: &str = "outside the allowed directories";

/// Every escape row runs through every tool, read-only tools included.
macro_rules! escape_rows {
    ($($name:ident => $path:expr;)*) => {$(
        #[test]
        fn $name() {
            let all: Vec<&ToolRow> = TOOLS.iter().collect();
            check_denied(stringify!($name), &all, escape_env, allow_root_rw, $path, OUTSIDE);
        }
    )*};
}

escape_rows! {
    escape_dotdot_to_file => |env| format!("{}/../outside/secret.txt", path_str(&env.root()));
    escape_dotdot_to_missing_file => |env| format!("{}/../outside/missing.txt", path_str(&env.root()));
    escape_dotdot_to_dir => |env| format!("{}/../outside/dir", path_str(&env.root()));
    escape_dotdot_deep => |env| format!("{}/sub/../../outside/secret.txt", path_str(&env.root()));
    escape_dotdot_after_dot => |env| format!("{}/./sub/./../../outside/secret.txt", path_str(&env.root()));
    escape_dotdot_parent_of_root => |env| format!("{}/..", path_str(&env.root()));
    escape_dotdot_relative => |_| "../outside/secret.txt".to_owned();
    escape_dotdot_relative_missing => |_| "../outside/new.txt".to_owned();
    escape_absolute_file => |env| env.p("outside/secret.txt");
    escape_absolute_missing_file => |env| env.p("outside/new.txt");
    escape_absolute_dir => |env| env.p("outside/dir");
    escape_absolute_missing_nested => |env| env.p("outside/newdir/new.txt");
    escape_double_slash => |env| format!("{}//outside//secret.txt", path_str(env.base()));
    escape_symlink_to_file_final => |env| env.p("root/link_file");
    escape_symlink_to_dir_final => |env| env.p("root/link_dir");
    escape_symlink_to_dir_parent => |env| env.p("root/link_dir/secret.txt");
    escape_symlink_to_dir_parent_new_file => |env| env.p("root/link_dir/new.txt");
    escape_symlink_to_dir_parent_new_nested => |env| env.p("root/link_dir/newdir/new.txt");
    escape_symlink_to_dir_parent_subdir => |env| env.p("root/link_dir/dir");
    escape_relative_symlink_parent => |env| env.p("root/rel_link_dir/secret.txt");
    escape_symlink_chain_parent => |env| env.p("root/link_chain/secret.txt");
    escape_symlink_relative_client_path => |_| "link_dir/secret.txt".to_owned();
    escape_dangling_symlink_to_outside => |env| env.p("root/dangling_out");
    escape_prefix_sibling_file => |env| env.p("root_evil/secret.txt");
    escape_prefix_sibling_new_file => |env| env.p("root_evil/new.txt");
    escape_prefix_sibling_dir => |env| env.p("root_evil");
}

/// `root/link_dir/../outside/secret.txt` is `root/outside/secret.txt` lexically (inside, absent)
/// but `base/outside/secret.txt` physically. Whatever the server answers, it must not reach out.
#[test]
fn symlink_then_dotdot_never_reaches_outside() {
    for tool in TOOLS {
        let env = escape_env();
        let client_path = env.p("root/link_dir/../outside/secret.txt");
        let (name, args) = (tool.args)(&env, &client_path);
        let before = env.snapshot();
        let mut server = Server::start(&env);
        let reply = server.call(name, args);
        assert!(
            !reply.line.contains(env.marker()),
            "[{}] leaked the secret: {}",
            tool.name,
            reply.line
        );
        let after = env.snapshot();
        assert_eq!(
            before.under("outside"),
            after.under("outside"),
            "[{}] changed outside/",
            tool.name
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Read-only roots
// ---------------------------------------------------------------------------------------------

/// The read-only fixture, under `base`:
///
/// ```text
/// root/inside.txt, root/sub/          read-write root
/// root/ro_inner/file.txt, dir/x.txt   nested read-only root (in the nested layouts)
/// root/link_ro          ->  base/ro
/// ro/file.txt, ro/dir/x.txt           read-only sibling root
/// ```
fn ro_env() -> TestEnv {
    let env = TestEnv::new(
        &["root/sub", "ro/dir", "root/ro_inner/dir"],
        &[
            ("root/inside.txt", "inside"),
            ("ro/file.txt", "ro file"),
            ("ro/dir/x.txt", "x"),
            ("root/ro_inner/file.txt", "inner file"),
            ("root/ro_inner/dir/x.txt", "x"),
        ],
    );
    env.symlink(&env.p("ro"), "root/link_ro");
    env
}

fn allow_rw_and_ro_sibling(env: &TestEnv) -> Vec<String> {
    vec![
        "--mcp-server".into(),
        "--allow".into(),
        format!("{}:rw", path_str(&env.root())),
        "--allow".into(),
        format!("{}:ro", env.p("ro")),
    ]
}

fn allow_nested_ro_last(env: &TestEnv) -> Vec<String> {
    vec![
        "--mcp-server".into(),
        "--allow".into(),
        format!("{}:rw", path_str(&env.root())),
        "--allow".into(),
        format!("{}:ro", env.p("root/ro_inner")),
    ]
}

fn allow_nested_ro_first(env: &TestEnv) -> Vec<String> {
    vec![
        "--mcp-server".into(),
        "--allow".into(),
        format!("{}:ro", env.p("root/ro_inner")),
        "--allow".into(),
        format!("{}:rw", path_str(&env.root())),
    ]
}

/// The nested read-only root named through a symlink alias: containment must compare canonical paths.
fn allow_nested_ro_via_alias(env: &TestEnv) -> Vec<String> {
    env.symlink(&env.p("root/ro_inner"), "ro_alias");
    vec![
        "--mcp-server".into(),
        "--allow".into(),
        format!("{}:rw", path_str(&env.root())),
        "--allow".into(),
        format!("{}:ro", env.p("ro_alias")),
    ]
}

const READ_ONLY: &str = "read-only";

/// Every read-only row runs through every tool that writes.
macro_rules! read_only_rows {
    ($($name:ident => $layout:expr, $path:expr;)*) => {$(
        #[test]
        fn $name() {
            let writers: Vec<&ToolRow> = TOOLS.iter().filter(|t| t.writes).collect();
            check_denied(stringify!($name), &writers, ro_env, $layout, $path, READ_ONLY);
        }
    )*};
}

read_only_rows! {
    read_only_existing_file => allow_rw_and_ro_sibling, |env| env.p("ro/file.txt");
    read_only_new_file => allow_rw_and_ro_sibling, |env| env.p("ro/new.txt");
    read_only_new_nested => allow_rw_and_ro_sibling, |env| env.p("ro/newdir/new.txt");
    read_only_subdir => allow_rw_and_ro_sibling, |env| env.p("ro/dir");
    read_only_root_itself => allow_rw_and_ro_sibling, |env| env.p("ro");
    read_only_via_dotdot => allow_rw_and_ro_sibling, |env| format!("{}/../ro/file.txt", path_str(&env.root()));
    read_only_via_symlink_parent => allow_rw_and_ro_sibling, |env| env.p("root/link_ro/file.txt");
    read_only_via_symlink_parent_new => allow_rw_and_ro_sibling, |env| env.p("root/link_ro/new.txt");
    read_only_nested_in_rw_file => allow_nested_ro_last, |env| env.p("root/ro_inner/file.txt");
    read_only_nested_in_rw_new_file => allow_nested_ro_last, |env| env.p("root/ro_inner/new.txt");
    read_only_nested_in_rw_subdir => allow_nested_ro_last, |env| env.p("root/ro_inner/dir");
    read_only_nested_in_rw_itself => allow_nested_ro_last, |env| env.p("root/ro_inner");
    read_only_nested_listed_first_file => allow_nested_ro_first, |env| env.p("root/ro_inner/file.txt");
    read_only_nested_listed_first_new_file => allow_nested_ro_first, |env| env.p("root/ro_inner/new.txt");
    read_only_nested_listed_first_itself => allow_nested_ro_first, |env| env.p("root/ro_inner");
    read_only_nested_via_alias_file => allow_nested_ro_via_alias, |env| env.p("root/ro_inner/file.txt");
    read_only_nested_via_alias_new_file => allow_nested_ro_via_alias, |env| env.p("root/ro_inner/new.txt");
}

#[test]
fn write_through_symlink_to_read_only_file_is_refused() {
    let env = ro_env();
    env.symlink(&env.p("ro/file.txt"), "root/link_ro_file");
    let before = env.snapshot();
    let mut server = Server::start_with(allow_rw_and_ro_sibling(&env));
    let error = server.call_err(
        "write_file",
        json!({"path": env.p("root/link_ro_file"), "content": "x"}),
        -32001,
    );
    assert!(error.message.contains(READ_ONLY), "{}", error.message);
    assert_eq!(before.diff(&env.snapshot()), "");
}

#[test]
fn read_only_root_is_readable() {
    let env = ro_env();
    let mut server = Server::start_with(allow_rw_and_ro_sibling(&env));
    assert_eq!(server.call_text("read_file", json!({"path": env.p("ro/file.txt")})), "ro file");
    assert_eq!(
        server.call_text("read_file", json!({"path": env.p("root/link_ro/file.txt")})),
        "ro file"
    );
    let listing = server.call_text("list_directory", json!({"path": env.p("ro")}));
    assert_eq!(listing.lines().collect::<Vec<_>>(), ["[DIR]  dir", "[FILE] file.txt"]);
    let items =
        server.call("read_multiple_files", json!({"paths": [env.p("ro/file.txt")]})).texts();
    assert_eq!(items, [format!("{}:\nro file", env.p("ro/file.txt"))]);
    let tree = server.call_text("directory_tree", json!({"path": env.p("ro")}));
    assert!(tree.contains("\"file.txt\""), "{tree}");
    let info = server.call_text("get_file_info", json!({"path": env.p("ro/file.txt")}));
    assert!(info.contains("type: file"), "{info}");
}

#[test]
fn nested_read_only_root_is_readable_and_rw_parent_still_writable() {
    for layout in [allow_nested_ro_last, allow_nested_ro_first] {
        let env = ro_env();
        let mut server = Server::start_with(layout(&env));
        assert_eq!(
            server.call_text("read_file", json!({"path": env.p("root/ro_inner/file.txt")})),
            "inner file"
        );
        let path = env.p("root/sub/new.txt");
        let reply = server.call_text("write_file", json!({"path": path, "content": "ok"}));
        assert_eq!(reply, format!("Successfully wrote {path}"));
        assert_eq!(env.read_string("root/sub/new.txt"), "ok");
    }
}

#[test]
fn prefix_sibling_of_nested_read_only_root_stays_writable() {
    let env = ro_env();
    env.mkdir("root/ro_inner_evil");
    let mut server = Server::start_with(allow_nested_ro_last(&env));
    let path = env.p("root/ro_inner_evil/new.txt");
    let reply = server.call_text("write_file", json!({"path": path, "content": "fine"}));
    assert_eq!(reply, format!("Successfully wrote {path}"));
    assert_eq!(env.read_string("root/ro_inner_evil/new.txt"), "fine");
}

#[test]
fn move_from_read_only_into_read_write_keeps_source() {
    let env = ro_env();
    let before = env.snapshot();
    let mut server = Server::start_with(allow_rw_and_ro_sibling(&env));
    let args = json!({"source": env.p("ro/file.txt"), "destination": env.p("root/stolen.txt")});
    let error = server.call_err("move_file", args, -32001);
    assert!(error.message.contains(READ_ONLY), "{}", error.message);
    assert_eq!(before.diff(&env.snapshot()), "");
}

#[test]
fn move_from_read_write_into_read_only_keeps_source() {
    let env = ro_env();
    let before = env.snapshot();
    let mut server = Server::start_with(allow_rw_and_ro_sibling(&env));
    let args = json!({"source": env.p("root/inside.txt"), "destination": env.p("ro/planted.txt")});
    let error = server.call_err("move_file", args, -32001);
    assert!(error.message.contains(READ_ONLY), "{}", error.message);
    assert_eq!(before.diff(&env.snapshot()), "");
}

// ---------------------------------------------------------------------------------------------
// Roots themselves, and directories that contain roots
// ---------------------------------------------------------------------------------------------

#[test]
fn delete_allowed_root_is_refused() {
    let env = TestEnv::new(&["root/sub"], &[("root/a.txt", "a")]);
    let root = path_str(&env.root());
    for path in [root.clone(), format!("{root}/"), format!("{root}/."), format!("{root}/sub/..")] {
        let before = env.snapshot();
        let mut server = Server::start(&env);
        server.call_err("delete_file", json!({"path": path}), -32001);
        assert_eq!(before.diff(&env.snapshot()), "", "delete_file {path} changed the tree");
    }
}

#[test]
fn delete_relative_dot_root_is_refused() {
    let env = TestEnv::new(&[], &[("root/a.txt", "a")]);
    let before = env.snapshot();
    let mut server = Server::start(&env);
    server.call_err("delete_file", json!({"path": "."}), -32001);
    assert_eq!(before.diff(&env.snapshot()), "");
}

#[test]
fn move_allowed_root_is_refused() {
    let env = TestEnv::new(&["other"], &[("root/a.txt", "a")]);
    let before = env.snapshot();
    let mut server = Server::start_also(&env, &[("other", "rw")]);
    let args = json!({"source": path_str(&env.root()), "destination": env.p("other/moved_root")});
    server.call_err("move_file", args, -32001);
    assert_eq!(before.diff(&env.snapshot()), "");
}

fn containing_env() -> (TestEnv, Vec<String>) {
    let env = TestEnv::new(
        &["root/a/ro/deep"],
        &[("root/a/ro/keep.txt", "keep"), ("root/a/own.txt", "own")],
    );
    let args = vec![
        "--mcp-server".to_owned(),
        "--allow".to_owned(),
        format!("{}:rw", path_str(&env.root())),
        "--allow".to_owned(),
        format!("{}:ro", env.p("root/a/ro")),
    ];
    (env, args)
}

#[test]
fn delete_directory_containing_read_only_root_is_refused() {
    let (env, args) = containing_env();
    let before = env.snapshot();
    let mut server = Server::start_with(args);
    server.call_err("delete_file", json!({"path": env.p("root/a")}), -32001);
    assert_eq!(before.diff(&env.snapshot()), "");
}

#[test]
fn move_directory_containing_read_only_root_is_refused() {
    let (env, args) = containing_env();
    let before = env.snapshot();
    let mut server = Server::start_with(args);
    server.call_err(
        "move_file",
        json!({"source": env.p("root/a"), "destination": env.p("root/b")}),
        -32001,
    );
    assert_eq!(before.diff(&env.snapshot()), "");
}

// ---------------------------------------------------------------------------------------------
// What stays allowed
// ---------------------------------------------------------------------------------------------

#[test]
fn symlink_inside_pointing_inside_is_usable() {
    let env =
        TestEnv::new(&["root/sub"], &[("root/sub/x.txt", "x"), ("root/target.txt", "target")]);
    env.symlink(&env.p("root/target.txt"), "root/link_in_file");
    env.symlink("sub", "root/link_in_dir");
    let mut server = Server::start(&env);
    assert_eq!(
        server.call_text("read_file", json!({"path": env.p("root/link_in_file")})),
        "target"
    );
    assert_eq!(
        server.call_text("read_file", json!({"path": env.p("root/link_in_dir/x.txt")})),
        "x"
    );
    let listing = server.call_text("list_directory", json!({"path": env.p("root/link_in_dir")}));
    assert_eq!(listing.lines().collect::<Vec<_>>(), ["[FILE] x.txt"]);
    let info = server.call_text("get_file_info", json!({"path": env.p("root/link_in_file")}));
    assert!(info.contains("type: file"), "{info}");
    let path = env.p("root/link_in_dir/new.txt");
    assert_eq!(
        server.call_text("write_file", json!({"path": path, "content": "n"})),
        format!("Successfully wrote {path}")
    );
    assert_eq!(env.read_string("root/sub/new.txt"), "n");
}

#[test]
fn root_given_through_a_symlink_is_usable_by_either_spelling() {
    let env = TestEnv::new(&[], &[("root/a.txt", "a")]);
    env.symlink(&path_str(&env.root()), "root_alias");
    let mut server = Server::start_with([
        "--mcp-server".to_owned(),
        "--allow".to_owned(),
        format!("{}:rw", env.p("root_alias")),
    ]);
    assert_eq!(server.call_text("read_file", json!({"path": env.p("root/a.txt")})), "a");
    assert_eq!(server.call_text("read_file", json!({"path": env.p("root_alias/a.txt")})), "a");
}

#[test]
fn dotdot_that_stays_inside_is_allowed() {
    let env = TestEnv::new(&["root/sub"], &[("root/a.txt", "a")]);
    let mut server = Server::start(&env);
    let path = format!("{}/sub/../a.txt", path_str(&env.root()));
    assert_eq!(server.call_text("read_file", json!({"path": path})), "a");
}

// ---------------------------------------------------------------------------------------------
// Invalid paths
// ---------------------------------------------------------------------------------------------

#[test]
fn nul_byte_in_path_is_invalid_params_for_every_tool() {
    let mut failures = Vec::new();
    for tool in TOOLS {
        let env = TestEnv::new(&[], &[("root/inside.txt", "inside"), ("root/a", "a")]);
        let client_path = format!("{}/a\u{0}b", path_str(&env.root()));
        let (name, args) = (tool.args)(&env, &client_path);
        let before = env.snapshot();
        let mut server = Server::start(&env);
        let reply = server.call(name, args);
        let code = reply.value.pointer("/error/code").cloned();
        // read_multiple_files may report it inline, since that call "never fails".
        let inline_ok = tool.inline
            && reply
                .value
                .pointer("/result/content/0/text")
                .and_then(Value::as_str)
                .is_some_and(|t| t.contains("[error"));
        if code != Some(json!(-32602)) && !inline_ok {
            failures.push(format!(
                "[{}] expected -32602, got {}",
                tool.name,
                reply.line.trim_end()
            ));
        }
        let diff = before.diff(&env.snapshot());
        if !diff.is_empty() {
            failures.push(format!("[{}] changed the tree:\n{diff}", tool.name));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn no_allowed_directories_denies_every_tool() {
    let mut failures = Vec::new();
    for tool in TOOLS {
        let env = escape_env();
        let client_path = env.p("root/inside.txt");
        let (name, args) = (tool.args)(&env, &client_path);
        let before = env.snapshot();
        let mut server = Server::start_with(["--mcp-server"]);
        let reply = server.call(name, args);
        let mut problems = Vec::new();
        if tool.inline {
            check_inline_denial(&reply.value, &client_path, &client_path, OUTSIDE, &mut problems);
        } else {
            check_rpc_denial(&reply.value, &client_path, &client_path, OUTSIDE, &mut problems);
        }
        let diff = before.diff(&env.snapshot());
        if !diff.is_empty() {
            problems.push(format!("changed the tree:\n{diff}"));
        }
        if !problems.is_empty() {
            failures.push(format!(
                "[{}] {}\n  {}",
                tool.name,
                reply.line.trim_end(),
                problems.join("\n  ")
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

// ---------------------------------------------------------------------------------------------
// Every outside path answers alike
// ---------------------------------------------------------------------------------------------

/// Every tool argument that takes a path, the file tools' and the others'.
type ArgsFor = fn(&TestEnv, &str) -> Value;

const PATH_ARGUMENTS: &[(&str, ArgsFor)] = &[
    ("read_file", |_, p| json!({"path": p})),
    ("read_file", |_, p| json!({"path": p, "offset": 2})),
    ("read_multiple_files", |_, p| json!({"paths": [p]})),
    ("write_file", |_, p| json!({"path": p, "content": "x"})),
    ("create_directory", |_, p| json!({"path": p})),
    ("list_directory", |_, p| json!({"path": p})),
    ("directory_tree", |_, p| json!({"path": p})),
    ("move_file", |env, p| json!({"source": p, "destination": env.p("root/moved")})),
    ("move_file", |env, p| json!({"source": env.p("root/inside.txt"), "destination": p})),
    ("copy_file", |env, p| json!({"source": p, "destination": env.p("root/copied")})),
    ("copy_file", |env, p| json!({"source": env.p("root/inside.txt"), "destination": p})),
    ("delete_file", |_, p| json!({"path": p})),
    ("get_file_info", |_, p| json!({"path": p})),
    ("edit_file", |_, p| json!({"path": p, "edits": [{"oldText": "a", "newText": "b"}]})),
    (
        "edit_file",
        |_, p| json!({"path": p, "edits": [{"oldText": "a", "newText": "b"}], "dryRun": true}),
    ),
    ("edit_files", |_, p| json!({"paths": [p], "edits": [{"oldText": "a", "newText": "b"}]})),
    ("search_files", |_, p| json!({"directory": p, "nameContains": "a"})),
    ("glob_search", |_, p| json!({"directory": p, "globs": ["*"]})),
    ("grep_files", |_, p| json!({"directory": p, "regex": "a"})),
    ("execute_command", |_, p| json!({"command": "true", "workingDirectory": p})),
];

/// Outside paths of every kind: existing or not, files, directories, symlinks to them, dangling
/// links, the server's own `/proc` entries, a live and a missing process, a symlink loop and a
/// path too long once resolved. Each must answer exactly as a plain outside path does, so that
/// no answer tells what lies outside: not where a link leads, not whether it exists, and not
/// whether a process does (-32602 against -32001 did).
///
/// See: issue #13, item 7.
#[test]
fn every_outside_path_answers_alike() {
    let env = escape_env();
    env.symlink("/bin/sh", "root/link_system");
    env.symlink(&env.p("outside/loop_a"), "root/loop_out");
    env.symlink("loop_b", "outside/loop_a");
    env.symlink("loop_a", "outside/loop_b");
    let long_target = format!("{}/{}", env.p("outside"), "dd/".repeat(1300));
    env.symlink(&long_target, "root/long_out");
    let cases: Vec<String> = vec![
        env.p("outside/secret.txt"),
        env.p("outside/missing.txt"),
        env.p("outside/dir"),
        env.p("root/link_file"),
        env.p("root/link_dir/secret.txt"),
        env.p("root/dangling_out"),
        env.p("root/link_system"),
        "/proc/self/cwd".to_owned(),
        "/proc/self/exe".to_owned(),
        "/proc/self/root/etc".to_owned(),
        "/proc/thread-self/cwd".to_owned(),
        format!("/proc/{}/cwd", std::process::id()),
        "/proc/1/cwd".to_owned(),
        // Beyond the largest pid_max (2^22): never a process.
        "/proc/4194305/cwd".to_owned(),
        env.p("root/loop_out"),
        env.p("root/loop_out/file.txt"),
        env.p("root/long_out/file.txt"),
        "/etc/passwd".to_owned(),
        "/no/such/dir/file.txt".to_owned(),
    ];
    let before = env.snapshot();
    let mut server = Server::start(&env);
    let mut failures = Vec::new();
    for (tool, args) in PATH_ARGUMENTS {
        let mut answers: Vec<(String, String)> = Vec::new();
        for path in &cases {
            let reply = server.call(tool, args(&env, path));
            let normalized = normalize(&env.root(), path);
            let answer = match reply.value.get("error") {
                Some(error) => format!("{} {}", error["code"], error["message"]),
                None => format!("result {}", reply.value["result"]["content"]),
            };
            // The client's own path is the one thing an answer may name.
            let answer = answer.replace(&normalized, "<path>").replace(path.as_str(), "<path>");
            if answer.contains("resolves") || answer.contains(&path_str(env.base())) {
                failures.push(format!("[{tool} {path}] tells what lies outside: {answer}"));
            }
            answers.push((path.clone(), answer));
        }
        let (first_path, first) = &answers[0];
        let code_ok = first.starts_with("-32001 ") || *tool == "read_multiple_files";
        if !code_ok {
            failures.push(format!("[{tool} {first_path}] not -32001: {first}"));
        }
        for (path, answer) in &answers[1..] {
            if answer != first {
                failures.push(format!(
                    "[{tool}] {path} answers differently from {first_path}:\n    {answer}\n    {first}"
                ));
            }
        }
    }
    assert_eq!(before.diff(&env.snapshot()), "", "the tree changed");
    let shown: Vec<String> =
        failures.iter().take(40).map(|f| f.chars().take(600).collect()).collect();
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), shown.join("\n"));
}
