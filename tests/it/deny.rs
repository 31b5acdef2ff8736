//! Deny rules: secrets inside an allowed directory (`.env`, `.ssh/`, `--deny GLOB`) that every
//! file tool refuses or leaves out, and that commands find empty and unreadable.
//! See: issue #26.

use serde_json::{json, Value};

use crate::harness::{replay_command, run_cli, Server, TestEnv};
#[cfg(target_os = "linux")]
use crate::{
    harness::require,
    isolation::{kernel_has_landlock, namespaces_work, User},
};

/// A project with a secret file, a secret directory, a template that is no secret, and
/// ordinary files that mention the secret's name.
fn project() -> TestEnv {
    TestEnv::new(
        &["root/src", "root/.ssh", "root/secrets"],
        &[
            ("root/.env", "SECRET=hunter2\n"),
            ("root/.env.example", "SECRET=\n"),
            ("root/.ssh/id_ed25519", "SECRET key\n"),
            ("root/src/main.rs", "// reads SECRET from the environment\n"),
            ("root/src/.env.local", "SECRET=local\n"),
            ("root/secrets/db.txt", "SECRET=db\n"),
            ("root/config.yaml", "db: SECRET\n"),
        ],
    )
}

fn start(env: &TestEnv, extra: &[&str]) -> Server {
    let allow = format!("{}:rw", env.p("root"));
    let mut args = vec!["--mcp-server", "--allow", &allow];
    args.extend_from_slice(extra);
    Server::start_with(args)
}

/// Every text item of a reply, joined: the notes come in items of their own.
#[track_caller]
fn all_text(server: &mut Server, tool: &str, args: Value) -> String {
    server.call(tool, args).texts().join("\n")
}

#[track_caller]
fn refused(server: &mut Server, tool: &str, args: Value, rule: &str) {
    let error = server.call_err(tool, args.clone(), -32001);
    assert!(error.message.contains(&format!("{rule:?}")), "{tool} {args}: {error:?}");
    assert!(error.message.contains("--no-default-deny"), "{tool} {args}: {error:?}");
}

#[test]
fn every_file_tool_refuses_a_denied_file_and_directory() {
    let env = project();
    let mut server = start(&env, &[]);
    let before = env.snapshot();
    let (dotenv, key, ssh) =
        (env.p("root/.env"), env.p("root/.ssh/id_ed25519"), env.p("root/.ssh"));
    let edits = json!([{"oldText": "SECRET", "newText": "x"}]);
    for (tool, args, rule) in [
        ("read_file", json!({"path": dotenv}), ".env"),
        ("read_file", json!({"path": key}), ".ssh/"),
        // A case trick names another file on Linux; a relative path with `..` resolves first.
        ("read_file", json!({"path": "src/../.env"}), ".env"),
        ("read_file", json!({"path": env.p("root/src/.env.local")}), ".env.*"),
        ("get_file_info", json!({"path": dotenv}), ".env"),
        ("write_file", json!({"path": dotenv, "content": "x"}), ".env"),
        ("write_file", json!({"path": env.p("root/.ssh/new"), "content": "x"}), ".ssh/"),
        ("edit_file", json!({"path": dotenv, "edits": edits}), ".env"),
        ("create_directory", json!({"path": env.p("root/.ssh/d")}), ".ssh/"),
        ("delete_file", json!({"path": dotenv}), ".env"),
        ("delete_file", json!({"path": ssh}), ".ssh/"),
        ("list_directory", json!({"path": ssh}), ".ssh/"),
        ("directory_tree", json!({"path": ssh}), ".ssh/"),
        ("grep_files", json!({"regex": "SECRET", "directory": ssh}), ".ssh/"),
        // Out of a denied path, or onto one.
        ("move_file", json!({"source": dotenv, "destination": env.p("root/notes")}), ".env"),
        ("move_file", json!({"source": ssh, "destination": env.p("root/keys")}), ".ssh/"),
        ("copy_file", json!({"source": dotenv, "destination": env.p("root/notes")}), ".env"),
        ("copy_file", json!({"source": ssh, "destination": env.p("root/keys")}), ".ssh/"),
        ("move_file", json!({"source": env.p("root/config.yaml"), "destination": dotenv}), ".env"),
        (
            "copy_file",
            json!({"source": env.p("root/config.yaml"), "destination": env.p("root/.ssh/c")}),
            ".ssh/",
        ),
    ] {
        refused(&mut server, tool, args, rule);
    }
    // A directory holding a secret is not copied (a copy would be a new file, which commands
    // could read); it may be moved (its secret keeps its name, and its cover).
    let args = json!({"source": env.p("root/src"), "destination": env.p("root/src2")});
    let error = server.call_err("copy_file", args, -32001);
    assert!(error.message.contains("holds 1 entries"), "{error:?}");
    let many =
        all_text(&mut server, "read_multiple_files", json!({"paths": [dotenv, "config.yaml"]}));
    assert!(many.contains("path not allowed") && many.contains("db: SECRET"), "{many}");
    assert!(!many.contains("hunter2"), "{many}");
    // A symlink to a secret, and a secret that is a symlink.
    env.symlink(&dotenv, "root/notes.txt");
    refused(&mut server, "read_file", json!({"path": env.p("root/notes.txt")}), ".env");
    env.symlink(&env.p("root/config.yaml"), "root/src/.env");
    refused(&mut server, "read_file", json!({"path": env.p("root/src/.env")}), ".env");
    std::fs::remove_file(env.path("root/notes.txt")).unwrap();
    std::fs::remove_file(env.path("root/src/.env")).unwrap();
    assert_eq!(before.diff(&env.snapshot()), "");
    // The template is no secret.
    let template = server.call_text("read_file", json!({"path": env.p("root/.env.example")}));
    assert_eq!(template, "SECRET=\n");
}

#[test]
fn listings_and_searches_leave_denied_entries_out_and_count_them() {
    let env = project();
    let mut server = start(&env, &[]);
    let root = env.p("root");
    let list = all_text(&mut server, "list_directory", json!({"path": root}));
    assert!(!list.contains(".env\n") && !list.contains(".ssh"), "{list}");
    assert!(list.contains(".env.example"), "{list}");
    assert!(list.contains("[2 entries left out by deny rules"), "{list}");

    let tree = all_text(&mut server, "directory_tree", json!({"path": root}));
    assert!(!tree.contains("id_ed25519") && !tree.contains(".env.local"), "{tree}");
    assert!(tree.contains("[3 entries left out by deny rules"), "{tree}");

    let grep = all_text(&mut server, "grep_files", json!({"regex": "SECRET", "directory": root}));
    assert!(
        !grep.contains("hunter2") && !grep.contains("local") && !grep.contains("key"),
        "{grep}"
    );
    assert!(grep.contains("main.rs") && grep.contains("config.yaml"), "{grep}");
    assert!(grep.contains("[3 entries left out by deny rules"), "{grep}");

    let found =
        all_text(&mut server, "search_files", json!({"directory": root, "nameContains": "env"}));
    assert!(found.contains(".env.example") && !found.contains(".env.local"), "{found}");
    assert!(found.contains("[3 entries left out by deny rules"), "{found}");

    let globbed =
        all_text(&mut server, "glob_search", json!({"directory": root, "globs": ["**/*"]}));
    assert!(!globbed.contains("id_ed25519") && !globbed.contains(".env\n"), "{globbed}");
    assert!(globbed.contains("[3 entries left out by deny rules"), "{globbed}");

    // edit_files globs never match a denied file.
    let before = env.snapshot();
    let edits = json!([{"oldText": "SECRET", "newText": "PUBLIC"}]);
    let reply =
        server.call("edit_files", json!({"paths": [format!("{root}/**/.env*")], "edits": edits}));
    let text = reply.value.to_string();
    assert!(!text.contains(".env.local") && !text.contains("root/.env\\\""), "{text}");
    let after = env.snapshot();
    let changed = before.diff(&after);
    assert!(!changed.contains(".env.local") && !changed.contains("root/.env "), "{changed}");
}

#[test]
fn no_default_deny_drops_the_defaults_and_deny_adds_rules() {
    let env = project();
    let mut server = start(&env, &["--no-default-deny"]);
    let text = server.call_text("read_file", json!({"path": env.p("root/.env")}));
    assert_eq!(text, "SECRET=hunter2\n");
    let list = server.call_text("list_directory", json!({"path": env.p("root")}));
    assert!(list.contains(".ssh") && !list.contains("left out"), "{list}");

    let mut server = start(&env, &["--no-default-deny", "--deny", "app/secrets/**"]);
    env.mkdir("root/app");
    std::fs::rename(env.path("root/secrets"), env.path("root/app/secrets")).unwrap();
    let error =
        server.call_err("read_file", json!({"path": env.p("root/app/secrets/db.txt")}), -32001);
    assert!(error.message.contains("\"app/secrets/**\""), "{error:?}");
    assert!(error.message.contains("without --deny"), "{error:?}");
    assert_eq!(server.call_text("read_file", json!({"path": env.p("root/.env")})).len(), 15);
    // A directory that holds what a path rule hides is neither moved nor copied: under its
    // new name the rule would no longer match.
    let before = env.snapshot();
    for tool in ["move_file", "copy_file"] {
        let args = json!({"source": env.p("root/app"), "destination": env.p("root/other")});
        let error = server.call_err(tool, args, -32001);
        assert!(error.message.contains("holds 1 entries"), "{tool}: {error:?}");
    }
    assert_eq!(before.diff(&env.snapshot()), "");
}

#[test]
fn a_bad_deny_glob_is_a_usage_error_naming_it() {
    let env = TestEnv::new(&["root"], &[]);
    let mut cmd = replay_command();
    cmd.args(["--mcp-server", "--allow", &env.p("root"), "--deny", "a[b"]);
    let out = run_cli(cmd, "");
    assert_eq!(out.status.code(), Some(2), "{}", out.stderr);
    assert!(out.stderr.contains("\"a[b\" is not a valid glob"), "{}", out.stderr);
}

#[test]
fn replay_sandbox_lists_the_rules() {
    let env = TestEnv::new(&["root"], &[]);
    let mut cmd = replay_command();
    cmd.args(["sandbox", "--allow", &env.p("root"), "--deny", "secrets/**"]);
    let out = run_cli(cmd, "");
    assert!(out.stdout.contains(".env "), "{}", out.stdout);
    assert!(out.stdout.contains("secrets/**") && out.stdout.contains("(--deny)"), "{}", out.stdout);
    let mut cmd = replay_command();
    cmd.args(["sandbox", "--allow", &env.p("root"), "--no-default-deny"]);
    let out = run_cli(cmd, "");
    assert!(out.stdout.contains("No deny rules"), "{}", out.stdout);
}

/// `cat .env`, `grep -r SECRET .` and `cp .env x` in a command: the secret is covered by an
/// empty, unreadable file in the commands' namespace, and a command cannot rename or remove
/// the cover to get at it. Linux only: the cover is a mount in the commands' namespace.
#[cfg(target_os = "linux")]
#[test]
fn commands_find_denied_files_empty_and_unreadable() {
    if !require("Landlock", kernel_has_landlock())
        || !require("user namespaces", namespaces_work(User::Invoker))
    {
        return;
    }
    let env = project();
    let mut server = start(&env, &[]);
    // Some of these fail on purpose: the reply is read whatever its `isError`.
    let run = |server: &mut Server, command: &str| {
        let reply = server.call("execute_command", json!({"command": command}));
        let content = reply.result()["content"].as_array().cloned().unwrap_or_default();
        content.iter().filter_map(|c| c["text"].as_str()).collect::<Vec<_>>().join("\n")
    };
    let cat = run(&mut server, "cat .env; cat .ssh/id_ed25519; ls -a .ssh");
    assert!(!cat.contains("hunter2") && !cat.contains("SECRET key"), "{cat}");
    let grep = run(&mut server, "grep -r SECRET . || true");
    assert!(grep.contains("main.rs") && grep.contains("config.yaml"), "{grep}");
    assert!(
        !grep.contains("hunter2") && !grep.contains("SECRET=local") && !grep.contains("SECRET key"),
        "{grep}"
    );
    let cp =
        run(&mut server, "cp .env x; cat x; mv .env y; rm -f .env; ln .env z; cat .env.example");
    assert!(!cp.contains("hunter2"), "{cp}");
    assert!(cp.contains("SECRET="), "{cp}");
    assert_eq!(env.read_string("root/.env"), "SECRET=hunter2\n");
    assert!(!env.exists("root/y") && !env.exists("root/z"), "{cp}");
}
