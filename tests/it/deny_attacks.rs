//! Attacks on the deny rules, the client roots and the audit log: a client root inside a
//! denied directory, decoys that exhaust the commands' covers, the audit log replaced through
//! a tool, an odd roots answer, and what apply_patch's audit line names.

use serde_json::json;

use crate::harness::{Server, TestEnv};
#[cfg(target_os = "linux")]
use crate::{
    harness::require,
    isolation::{kernel_has_landlock, namespaces_work, User},
};

/// A client root inside a denied directory (`file:///…/.aws`) becomes an allowed directory of
/// its own; the rules still count from the command line's directory, so `.aws/` still matches
/// and `credentials` is refused.
#[test]
fn a_client_root_inside_a_denied_directory_does_not_lift_the_rule() {
    let env = TestEnv::new(
        &[],
        &[("root/.aws/credentials", "aws_secret_access_key=AKIASECRET\n"), ("root/a", "a")],
    );
    let allow = format!("{}:rw", env.p("root"));
    let mut server = Server::spawn(["--mcp-server", "--allow", &allow]);
    crate::roots::initialize_with_roots(&mut server);
    crate::roots::answer_roots(&mut server, &[env.p("root/.aws")]);
    server.call_err("read_file", json!({"path": env.p("root/.aws/credentials")}), -32001);
    server.call_err(
        "grep_files",
        json!({"directory": env.p("root/.aws"), "regex": "AKIA"}),
        -32001,
    );
}

/// More than 4096 files that a default rule matches (`*.pem`), where the start walk meets them
/// before the real secret, make the walk give up: commands are then refused, not run with
/// `.env` in sight, and list_allowed_directories says why and what to do.
#[cfg(target_os = "linux")]
#[test]
fn decoys_do_not_uncover_a_secret_from_commands() {
    if !require("Landlock", kernel_has_landlock())
        || !require("user namespaces", namespaces_work(User::Invoker))
    {
        return;
    }
    let env = TestEnv::new(&["root/a", "root/b"], &[]);
    // The walk goes in directory order: the decoys go in the directory it enters first.
    let order: Vec<String> = std::fs::read_dir(env.path("root"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let (decoys, secret) = (&order[0], &order[1]);
    for i in 0..4100 {
        env.write(&format!("root/{decoys}/{i}.pem"), "");
    }
    env.write(&format!("root/{secret}/.env"), "SECRET=hunter2\n");
    let allow = format!("{}:rw", env.p("root"));
    let mut server = Server::start_with(["--mcp-server", "--allow", &allow]);
    let command = json!({"command": format!("cat {secret}/.env")});
    let error = server.call_err("execute_command", command, -32603);
    assert!(error.message.contains("deny rules could not be applied to commands"), "{error:?}");
    assert!(error.message.contains("--no-default-deny"), "{error:?}");
    assert!(!error.message.contains("hunter2"), "{error:?}");
    let note = server.call_text("list_allowed_directories", json!({}));
    assert!(note.contains("execute_command is refused"), "{note}");
}

/// The covers are made beside the start, by a walk that takes a while over a big tree: a
/// command sent at once waits for them, and so cannot read a secret the walk reaches last.
#[cfg(target_os = "linux")]
#[test]
fn a_command_at_start_waits_for_the_covers_of_a_big_tree() {
    if !require("Landlock", kernel_has_landlock())
        || !require("user namespaces", namespaces_work(User::Invoker))
    {
        return;
    }
    let env = TestEnv::new(&["root/a", "root/b"], &[]);
    let order: Vec<String> = std::fs::read_dir(env.path("root"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    // 40,000 entries to walk first, then the secret.
    let (crowd, secret) = (&order[0], &order[1]);
    for i in 0..40_000 {
        env.write(&format!("root/{crowd}/{i}"), "");
    }
    env.write(&format!("root/{secret}/.env"), "SECRET=hunter2\n");
    let allow = format!("{}:rw", env.p("root"));
    let mut server = Server::start_with(["--mcp-server", "--allow", &allow]);
    let command = json!({"command": format!("cat {secret}/.env; ls -a {secret}")});
    let text = server.call("execute_command", command).result().to_string();
    assert!(!text.contains("hunter2"), "{text}");
    assert!(text.contains(".env"), "the cover hides the file's content, not its name: {text}");
}

/// An audit log inside a read-write root: write_file would replace it (temp and rename), and the
/// server would go on writing to the unlinked old file. The tools refuse the log and its `.1`
/// as a deny rule does, so later calls still land in it.
#[test]
fn the_tools_cannot_replace_the_audit_log() {
    let env = TestEnv::new(&[], &[("root/a.txt", "a\n")]);
    let log = env.p("root/audit.jsonl");
    let allow = format!("{}:rw", env.p("root"));
    let mut server = Server::start_with(["--mcp-server", "--allow", &allow, "--audit-log", &log]);
    let forged = json!({"path": log, "content": "{\"forged\":true}\n"});
    server.call_err("write_file", forged, -32001);
    let old = json!({"path": format!("{log}.1"), "content": "x"});
    server.call_err("write_file", old, -32001);
    server.call_err("read_file", json!({"path": log}), -32001);
    server.call_text("get_file_info", json!({"path": env.p("root/a.txt")}));
    let _ = server.finish();
    let text = env.read_string("root/audit.jsonl");
    assert!(!text.contains("forged"), "{text}");
    assert!(text.contains("get_file_info"), "the call after the write is in no file: {text}");
}

/// Commands find the audit log covered, as they find a denied file.
#[cfg(target_os = "linux")]
#[test]
fn commands_cannot_read_or_change_the_audit_log() {
    if !require("Landlock", kernel_has_landlock())
        || !require("user namespaces", namespaces_work(User::Invoker))
    {
        return;
    }
    let env = TestEnv::new(&[], &[("root/a.txt", "a\n")]);
    let log = env.p("root/audit.jsonl");
    let allow = format!("{}:rw", env.p("root"));
    let mut server = Server::start_with(["--mcp-server", "--allow", &allow, "--audit-log", &log]);
    server.call_text("get_file_info", json!({"path": env.p("root/a.txt")}));
    let command = "cat audit.jsonl; echo forged > audit.jsonl; echo forged > audit.jsonl.1";
    let reply = server.call("execute_command", json!({"command": command}));
    let stdout = reply.result()["structuredContent"]["stdout"].as_str().unwrap_or_default();
    assert!(!stdout.contains("get_file_info"), "{stdout}");
    let _ = server.finish();
    let text = env.read_string("root/audit.jsonl");
    // The command's own audit line quotes `forged`; a line that is just `forged` is its write.
    assert!(!text.lines().any(|l| l == "forged") && text.contains("get_file_info"), "{text}");
    assert!(!env.read_string("root/audit.jsonl.1").lines().any(|l| l == "forged"));
}

/// After the client narrowed to one directory, a `roots/list` answer whose `roots` is not an
/// array, is empty or is missing gives nothing usable: nothing is allowed, as for a list of
/// unusable roots, rather than the whole command line again.
#[test]
fn an_odd_roots_answer_after_narrowing_does_not_widen() {
    for odd in [json!({"roots": "odd"}), json!({"roots": []}), json!({})] {
        let env = TestEnv::new(&[], &[("root/app/a.txt", "in"), ("root/other/b.txt", "b")]);
        let allow = format!("{}:rw", env.p("root"));
        let mut server = Server::spawn(["--mcp-server", "--allow", &allow]);
        crate::roots::initialize_with_roots(&mut server);
        crate::roots::answer_roots(&mut server, &[env.p("root/app")]);
        server.call_err("read_file", json!({"path": env.p("root/other/b.txt")}), -32001);
        server.notify("notifications/roots/list_changed", json!({}));
        let request = loop {
            let message = server.next_message();
            if message.value["method"] == "roots/list" {
                break message;
            }
        };
        let id = request.value["id"].clone();
        server.send(&json!({"jsonrpc": "2.0", "id": id, "result": odd}));
        server.call_err("read_file", json!({"path": env.p("root/other/b.txt")}), -32001);
        server.call_err("read_file", json!({"path": env.p("root/app/a.txt")}), -32001);
    }
}

/// apply_patch names its files in the patch, not in `path`: the audit line records each file a
/// move, an add and a delete touch, besides the working directory.
#[test]
fn the_audit_line_of_apply_patch_names_its_files() {
    let env = TestEnv::new(&[], &[("root/a.txt", "a\n"), ("root/gone.txt", "g\n")]);
    let log = env.p("audit.jsonl");
    let allow = format!("{}:rw", env.p("root"));
    let mut server = Server::start_with(["--mcp-server", "--allow", &allow, "--audit-log", &log]);
    let body = "*** Begin Patch\n*** Update File: a.txt\n*** Move to: moved.txt\n@@\n-a\n+b\n\
                *** Add File: new.txt\n+n\n*** Delete File: gone.txt\n*** End Patch";
    server.call_text("apply_patch", json!({"patch": body, "workingDirectory": env.p("root")}));
    let _ = server.finish();
    let text = std::fs::read_to_string(&log).unwrap();
    let line: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    let paths: Vec<&str> =
        line["paths"].as_array().unwrap().iter().filter_map(|p| p.as_str()).collect();
    for name in ["a.txt", "moved.txt", "new.txt", "gone.txt"] {
        assert!(paths.contains(&env.p(&format!("root/{name}")).as_str()), "{name}: {paths:?}");
    }
}
