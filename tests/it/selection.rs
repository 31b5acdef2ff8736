//! Choosing the tools a server offers: `--read-only`, `--tools` and `--disable-tool`, with
//! tools/list and tools/call agreeing, and unknown names refused as usage errors.

use serde_json::{json, Value};

use crate::harness::{
    path_str, replay_command, run_cli, Server, TestEnv, ALL_TOOLS as ALL, WRITING_TOOLS as WRITERS,
};

fn start(env: &TestEnv, flags: &[&str]) -> Server {
    let allow = format!("{}:rw", path_str(&env.root()));
    let mut args = vec!["--mcp-server", "--allow", &allow];
    args.extend_from_slice(flags);
    Server::start_with(args)
}

fn listed(server: &mut Server, params: Value) -> Vec<String> {
    let result = server.request("tools/list", params).result().clone();
    result["tools"]
        .as_array()
        .expect("tools array")
        .iter()
        .map(|t| t["name"].as_str().expect("name").to_string())
        .collect()
}

/// The arguments that make each tool do something harmless but real in `env`'s root.
fn sample_args(env: &TestEnv, tool: &str) -> Value {
    let p = |rel: &str| env.p(&format!("root/{rel}"));
    match tool {
        "read_file" | "get_file_info" => json!({"path": p("a.txt")}),
        "read_multiple_files" => json!({"paths": [p("a.txt")]}),
        "write_file" => json!({"path": p("new.txt"), "content": "new"}),
        "create_directory" => json!({"path": p("newdir")}),
        "list_directory" | "directory_tree" => json!({"path": p("")}),
        "move_file" => json!({"source": p("b.txt"), "destination": p("moved.txt")}),
        "copy_file" => json!({"source": p("a.txt"), "destination": p("copied.txt")}),
        "delete_file" => json!({"path": p("c.txt")}),
        "list_allowed_directories" => json!({}),
        "edit_file" => json!({"path": p("a.txt"), "edits": [{"oldText": "a", "newText": "A"}]}),
        "edit_files" => json!({"paths": [p("a.txt")], "edits": [{"oldText": "a", "newText": "A"}]}),
        "apply_patch" => {
            json!({"patch": format!("*** Begin Patch\n*** Add File: {}\n+p\n*** End Patch", p("p.txt"))})
        }
        "search_files" => json!({"directory": p(""), "nameContains": "a"}),
        "glob_search" => json!({"directory": p(""), "globs": ["*.txt"]}),
        "grep_files" => json!({"directory": p(""), "regex": "a"}),
        "execute_command" => json!({"command": "touch ran"}),
        "command_session" => json!({}),
        other => panic!("no sample arguments for {other}"),
    }
}

fn tree() -> TestEnv {
    TestEnv::new(&[], &[("root/a.txt", "a"), ("root/b.txt", "b"), ("root/c.txt", "c")])
}

/// The message a tool this server does not serve gets, with the name cut out.
fn refusal(server: &mut Server, tool: &str, args: Value) -> String {
    let error = server.call_err(tool, args, -32602);
    assert!(error.message.contains("names no tool of this server"), "{tool}: {}", error.message);
    error.message.replace(&format!("{tool:?}"), "NAME")
}

/// Under each selection, tools/list names exactly the tools that tools/call runs, and a tool
/// left out is refused exactly as a name no tool has, before it touches anything.
#[test]
fn tools_list_agrees_with_tools_call() {
    let rows: &[(&[&str], &[&str])] = &[
        (&[], &ALL),
        (
            &["--read-only"],
            &[
                "read_file",
                "read_multiple_files",
                "list_directory",
                "directory_tree",
                "get_file_info",
                "list_allowed_directories",
                "search_files",
                "glob_search",
                "grep_files",
            ],
        ),
        (&["--tools", "grep_files,read_file"], &["read_file", "grep_files"]),
        (&["--tools", "read_file", "--tools", "write_file"], &["read_file", "write_file"]),
        (&["--tools", "read_file,write_file", "--read-only"], &["read_file"]),
        (
            &["--disable-tool", "grep_files", "--disable-tool", "delete_file"],
            &[
                "read_file",
                "read_multiple_files",
                "write_file",
                "create_directory",
                "list_directory",
                "directory_tree",
                "move_file",
                "copy_file",
                "get_file_info",
                "list_allowed_directories",
                "edit_file",
                "edit_files",
                "apply_patch",
                "search_files",
                "glob_search",
                "execute_command",
                "command_session",
            ],
        ),
        (&["--tools", "execute_command,read_file", "--no-exec"], &["read_file"]),
    ];
    for (flags, served) in rows {
        let env = tree();
        let mut server = start(&env, flags);
        assert_eq!(listed(&mut server, json!({})), *served, "{flags:?}: tools/list");
        let unknown = refusal(&mut server, "no_such_tool", json!({}));
        for tool in ALL.iter().filter(|t| !served.contains(t)) {
            let before = env.snapshot();
            let message = refusal(&mut server, tool, sample_args(&env, tool));
            assert_eq!(message, unknown, "{flags:?}: {tool} is refused as an unknown name");
            assert_eq!(before.diff(&env.snapshot()), "", "{flags:?}: refused {tool} changed files");
        }
        // A served tool runs (edit_files may then find its text edited away: that error comes
        // from the tool, not from the selection).
        for tool in served.iter() {
            let reply = server.call(tool, sample_args(&env, tool));
            assert!(!reply.line.contains("names no tool"), "{flags:?}: {tool}: {}", reply.line);
        }
        assert_eq!(env.exists("root/new.txt"), served.contains(&"write_file"), "{flags:?}");
    }
}

#[test]
fn read_only_makes_rw_roots_read_only() {
    let env = TestEnv::new(&["second"], &[("root/a.txt", "a")]);
    let second = format!("{}:rw", env.p("second"));
    let mut server = start(&env, &["--read-only", "--allow", &second]);
    let text = server.call_text("list_allowed_directories", json!({}));
    let expected =
        [format!("{} (read-only)", env.p("root")), format!("{} (read-only)", env.p("second"))];
    assert_eq!(text.lines().collect::<Vec<_>>(), expected);
    assert_eq!(server.call_text("read_file", json!({"path": "a.txt"})), "a");
}

/// The modern era's tools/list is the same selection.
#[test]
fn read_only_in_the_modern_era() {
    let env = tree();
    let mut server = start(&env, &["--read-only"]);
    let meta = json!({"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }});
    let names = listed(&mut server, meta);
    assert_eq!(names.len(), 9, "{names:?}");
    assert!(WRITERS.iter().all(|w| !names.iter().any(|n| n == w)), "{names:?}");
}

/// Started without directories, a `--read-only` server takes the client's first roots as
/// read-only directories.
#[test]
fn read_only_applies_to_client_roots() {
    let env = tree();
    let mut server = Server::spawn(["--mcp-server", "--read-only"]);
    let params = json!({
        "protocolVersion": "2025-06-18",
        "capabilities": {"roots": {"listChanged": true}},
        "clientInfo": {"name": "selection-test", "version": "0"},
    });
    server.request("initialize", params).result();
    server.notify("notifications/initialized", json!({}));
    let request = loop {
        let message = server.next_message();
        if message.value["method"] == "roots/list" {
            break message;
        }
    };
    let roots = json!({"roots": [{"uri": format!("file://{}", env.p("root")), "name": "r"}]});
    server.send(&json!({"jsonrpc": "2.0", "id": request.value["id"], "result": roots}));
    let text = server.call_text("list_allowed_directories", json!({}));
    assert_eq!(text.lines().next(), Some(format!("{} (read-only)", env.p("root")).as_str()));
    assert_eq!(server.call_text("read_file", json!({"path": env.p("root/a.txt")})), "a");
}

#[test]
fn unknown_tool_names_are_usage_errors() {
    let env = TestEnv::new(&[], &[]);
    let root = path_str(&env.root());
    for flags in [
        vec!["--tools", "read_file,cat"],
        vec!["--disable-tool", "cat"],
        vec!["--tools", "cat", "--read-only"],
    ] {
        let mut cmd = replay_command();
        cmd.args(["--mcp-server", "--allow", &root]).args(&flags);
        let out = run_cli(cmd, "");
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {}", out.stderr);
        assert_eq!(out.stdout, "", "{flags:?}");
        assert!(out.stderr.contains(r#"names no tool: "cat""#), "{flags:?}: {}", out.stderr);
        assert!(out.stderr.contains(&ALL.join(", ")), "{flags:?}: lists the tools: {}", out.stderr);
    }
}
