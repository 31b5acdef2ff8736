//! Client roots: asked for after `initialized` and on `list_changed`, narrowing the command
//! line's directories and never widening them; the first roots of a server started without
//! directories. And an allowed directory removed and made again, or replaced by a symlink,
//! while the server runs.

use std::fs;

use serde_json::{json, Value};

use crate::harness::{Server, TestEnv};

/// `initialize` declaring roots, then `initialized`.
pub(crate) fn initialize_with_roots(server: &mut Server) {
    let params = json!({
        "protocolVersion": "2025-06-18",
        "capabilities": {"roots": {"listChanged": true}},
        "clientInfo": {"name": "roots-test", "version": "0"},
    });
    server.request("initialize", params).result();
    server.notify("notifications/initialized", json!({}));
}

/// Waits for the server's `roots/list` request and answers it with `dirs`.
pub(crate) fn answer_roots(server: &mut Server, dirs: &[String]) {
    let uris: Vec<String> =
        dirs.iter().map(|d| format!("file://{}", d.replace(' ', "%20"))).collect();
    answer_root_uris(server, &uris);
}

/// Waits for the server's `roots/list` request and answers it with `uris`.
fn answer_root_uris(server: &mut Server, uris: &[String]) {
    let request = loop {
        let message = server.next_message();
        if message.value["method"] == "roots/list" {
            break message;
        }
    };
    let id = request.value["id"].clone();
    assert!(id.is_string() || id.is_number(), "{}", request.line);
    let roots: Vec<Value> = uris.iter().map(|uri| json!({"uri": uri, "name": "r"})).collect();
    server.send(&json!({"jsonrpc": "2.0", "id": id, "result": {"roots": roots}}));
}

fn allowed(server: &mut Server) -> String {
    server.call_text("list_allowed_directories", json!({}))
}

#[test]
fn client_roots_narrow_the_command_line_and_never_widen_it() {
    let env = TestEnv::new(
        &["root/app dir", "root/other", "outside"],
        &[("root/app dir/a.txt", "in"), ("root/other/b.txt", "b"), ("outside/s.txt", "s")],
    );
    let allow = format!("{}:rw", env.p("root"));
    let mut server = Server::spawn(["--mcp-server", "--allow", &allow]);
    initialize_with_roots(&mut server);
    answer_roots(&mut server, &[env.p("root/app dir"), env.p("outside")]);
    // Roots take effect for the calls read after the answer.
    let listed = allowed(&mut server);
    assert!(listed.contains("app dir"), "{listed}");
    assert!(!listed.contains("outside"), "{listed}");
    assert_eq!(server.call_text("read_file", json!({"path": env.p("root/app dir/a.txt")})), "in");
    server.call_err("read_file", json!({"path": env.p("root/other/b.txt")}), -32001);
    server.call_err("read_file", json!({"path": env.p("outside/s.txt")}), -32001);

    // list_changed: asked again; a root above the command line allows just the command line.
    server.notify("notifications/roots/list_changed", json!({}));
    answer_roots(&mut server, &[env.base().display().to_string()]);
    assert_eq!(server.call_text("read_file", json!({"path": env.p("root/other/b.txt")})), "b");
    server.call_err("read_file", json!({"path": env.p("outside/s.txt")}), -32001);
}

#[test]
fn a_client_without_roots_is_not_asked() {
    let env = TestEnv::new(&[], &[]);
    let allow = format!("{}:rw", env.p("root"));
    let mut server = Server::spawn(["--mcp-server", "--allow", &allow]);
    server.initialize("2025-06-18");
    let (messages, _) = server.finish();
    assert!(messages.iter().all(|m| m.value["method"] != "roots/list"));
}

#[test]
fn without_directories_the_first_roots_become_the_allowed_set() {
    let env = TestEnv::new(&["root/w"], &[("root/w/a.txt", "A")]);
    let mut server = Server::spawn(["--mcp-server"]);
    initialize_with_roots(&mut server);
    answer_roots(&mut server, &[env.p("root/w")]);
    let listed = allowed(&mut server);
    assert!(listed.contains(&env.p("root/w")), "{listed}");
    assert!(!listed.contains("waiting for the client's roots"), "{listed}");
    assert_eq!(server.call_text("read_file", json!({"path": env.p("root/w/a.txt")})), "A");
    server.call_text("write_file", json!({"path": env.p("root/w/new.txt"), "content": "n"}));
    assert_eq!(env.read_string("root/w/new.txt"), "n");
    server.call_err("read_file", json!({"path": "/etc/hostname"}), -32001);
    // The first roots are now the ceiling: later ones cannot go beyond them.
    server.notify("notifications/roots/list_changed", json!({}));
    answer_roots(&mut server, &[env.p("")]);
    server.call_err("read_file", json!({"path": env.p("root/other.txt")}), -32001);
    assert_eq!(server.call_text("read_file", json!({"path": env.p("root/w/a.txt")})), "A");
}

/// Roots none of which is usable allow nothing, never the whole command line: a missing
/// directory, a regular file, a URI that is not `file://`, and a root that was usable, was
/// deleted (by a command, say) and is sent again.
#[test]
fn unusable_client_roots_allow_nothing() {
    let env = TestEnv::new(&["root/sub"], &[("root/a.txt", "A"), ("root/sub/b.txt", "B")]);
    let allow = format!("{}:rw", env.p("root"));
    let file_uri = |rel: &str| format!("file://{}", env.p(rel));
    for (case, uri) in [
        ("missing directory", file_uri("root/gone")),
        ("regular file", file_uri("root/a.txt")),
        ("non-file URI", "https://example.com/root".to_string()),
    ] {
        let mut server = Server::spawn(["--mcp-server", "--allow", &allow]);
        initialize_with_roots(&mut server);
        answer_root_uris(&mut server, &[uri]);
        let error = server.call_err("read_file", json!({"path": env.p("root/a.txt")}), -32001);
        assert!(error.message.contains("outside the allowed directories"), "{case}: {error:?}");
        let listed = allowed(&mut server);
        assert!(!listed.contains(&env.p("root")), "{case}: {listed}");
        let stderr = server.stderr();
        assert!(
            stderr.contains("nothing is allowed until the client sends one"),
            "{case}: {stderr}"
        );
    }

    let mut server = Server::spawn(["--mcp-server", "--allow", &allow]);
    initialize_with_roots(&mut server);
    answer_roots(&mut server, &[env.p("root/sub")]);
    assert_eq!(server.call_text("read_file", json!({"path": env.p("root/sub/b.txt")})), "B");
    server.call_err("read_file", json!({"path": env.p("root/a.txt")}), -32001);
    fs::remove_dir_all(env.path("root/sub")).unwrap();
    server.notify("notifications/roots/list_changed", json!({}));
    answer_roots(&mut server, &[env.p("root/sub")]);
    server.call_err("read_file", json!({"path": env.p("root/a.txt")}), -32001);
    server.call_err("write_file", json!({"path": env.p("root/c.txt"), "content": "c"}), -32001);
    assert!(!env.path("root/c.txt").exists());
}

/// `initialized` inside a batch (answered off the reading thread) still gets roots asked for at
/// once, without waiting for more input.
#[test]
fn roots_are_asked_for_after_an_initialized_sent_in_a_batch() {
    let env = TestEnv::new(&["root/w"], &[("root/w/a.txt", "A")]);
    let allow = format!("{}:rw", env.p("root"));
    let mut server = Server::spawn(["--mcp-server", "--allow", &allow]);
    let params = json!({
        "protocolVersion": "2025-03-26",
        "capabilities": {"roots": {}},
        "clientInfo": {"name": "roots-test", "version": "0"},
    });
    server.request("initialize", params).result();
    server.send_raw(r#"[{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":"p","method":"ping"}]"#);
    answer_roots(&mut server, &[env.p("root/w")]);
    let listed = allowed(&mut server);
    assert!(listed.contains(&env.p("root/w")), "{listed}");
}

// ---------------------------------------------------------------------------------------------
// A root removed and made again, or replaced by a symlink
// ---------------------------------------------------------------------------------------------

/// The server holds a handle on each allowed directory. One removed and made again at the same
/// place is used again (without Landlock, whose rules follow the old directory); one replaced by
/// a symlink to the outside is not, and nothing outside is touched.
#[test]
fn a_root_made_again_is_used_and_a_root_turned_symlink_is_refused() {
    let env = TestEnv::new(&["outside"], &[("root/a.txt", "first"), ("outside/a.txt", "secret")]);
    let root = env.p("root");
    let allow = format!("{root}:rw");
    let mut server = Server::start_with(["--mcp-server", "--no-sandbox", "--allow", &allow]);
    let a = env.p("root/a.txt");
    assert_eq!(server.call_text("read_file", json!({"path": a})), "first");

    fs::remove_dir_all(env.root()).unwrap();
    env.mkdir("root");
    env.write("root/a.txt", "second");
    assert_eq!(server.call_text("read_file", json!({"path": a})), "second");
    server.call_text("write_file", json!({"path": env.p("root/b.txt"), "content": "new"}));
    assert_eq!(env.read_string("root/b.txt"), "new");

    // Renamed away and replaced: the new directory at the root's path is the one served.
    fs::rename(env.root(), env.path("root.old")).unwrap();
    env.mkdir("root");
    env.write("root/a.txt", "third");
    assert_eq!(server.call_text("read_file", json!({"path": a})), "third");
    server.call_text("write_file", json!({"path": env.p("root/b.txt"), "content": "newer"}));
    assert_eq!(env.read_string("root/b.txt"), "newer");
    assert_eq!(env.read_string("root.old/b.txt"), "new");
    fs::remove_dir_all(env.path("root.old")).unwrap();

    let before = env.snapshot().under("outside");
    fs::remove_dir_all(env.root()).unwrap();
    env.symlink(&env.p("outside"), "root");
    for (tool, args) in [
        ("read_file", json!({"path": a})),
        ("write_file", json!({"path": a, "content": "overwritten"})),
        ("write_file", json!({"path": env.p("root/c.txt"), "content": "new"})),
        ("list_directory", json!({"path": root})),
        ("delete_file", json!({"path": a})),
    ] {
        let reply = server.call(tool, args);
        let line = reply.value.to_string();
        assert!(!line.contains("secret"), "{tool}: {line}");
        assert!(reply.value.get("error").is_some(), "{tool} succeeded: {line}");
    }
    assert_eq!(before.diff(&env.snapshot().under("outside")), "");
}

/// A client that declares roots and sends an empty list before naming any (the MCP Inspector
/// does) keeps the command line's directories, which it never narrowed.
#[test]
fn an_empty_first_roots_list_keeps_the_command_line() {
    let env = TestEnv::new(&[], &[("root/a.txt", "in")]);
    let allow = format!("{}:rw", env.p("root"));
    let mut server = Server::spawn(["--mcp-server", "--allow", &allow]);
    initialize_with_roots(&mut server);
    answer_roots(&mut server, &[]);
    let text = server.call_text("read_file", json!({"path": env.p("root/a.txt")}));
    assert_eq!(text, "in");
}
