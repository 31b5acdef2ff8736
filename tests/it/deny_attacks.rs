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
