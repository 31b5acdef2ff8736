//! Attacks on apply_patch's journal: a journal forged through the tools, a state directory
//! someone else controls, a symlink planted in a journaled directory after a crash.

use std::os::unix::fs::{MetadataExt, PermissionsExt};

use serde_json::json;

use crate::harness::{replay_command, require, Server, TestEnv};

fn server(allow: &[String], state: &str, kill_at: Option<&str>) -> Server {
    let mut cmd = replay_command();
    cmd.arg("--mcp-server");
    for a in allow {
        cmd.args(["--allow", a]);
    }
    cmd.env("XDG_STATE_HOME", state);
    if let Some(step) = kill_at {
        cmd.env("REPLAY_JOURNAL_KILL_AT", step);
    }
    let mut server = Server::from_command(cmd);
    server.initialize("2025-06-18");
    server
}

fn patch_refused_with(state: &str, root: &str) -> String {
    let allow = vec![format!("{root}:rw")];
    let mut server = server(&allow, state, None);
    let body = "*** Begin Patch\n*** Add File: new\n+x\n*** End Patch";
    let error =
        server.call_err("apply_patch", json!({"patch": body, "workingDirectory": root}), -32603);
    error.message
}

/// A state directory that others may write is not used: apply_patch is refused, saying why.
#[test]
fn a_state_directory_others_may_write_is_not_used() {
    let env = TestEnv::new(&["root", "state/replay"], &[]);
    std::fs::set_permissions(env.path("state/replay"), std::fs::Permissions::from_mode(0o777))
        .unwrap();
    let message = patch_refused_with(&env.p("state"), &env.p("root"));
    assert!(message.contains("state directory"), "{message}");
    assert!(!env.exists("root/new"));
    assert_eq!(std::fs::metadata(env.path("state/replay")).unwrap().mode() & 0o777, 0o777);
}

/// A state directory another user owns (as `/tmp/replay-state-<uid>` may be, made by someone
/// else first) is not used.
#[test]
fn a_state_directory_of_another_user_is_not_used() {
    if !require("root (to give a directory away)", nix::unistd::geteuid().is_root()) {
        return;
    }
    let env = TestEnv::new(&["root", "state/replay"], &[]);
    std::fs::set_permissions(env.path("state/replay"), std::fs::Permissions::from_mode(0o700))
        .unwrap();
    std::os::unix::fs::chown(env.path("state/replay"), Some(4242), Some(4242)).unwrap();
    let message = patch_refused_with(&env.p("state"), &env.p("root"));
    assert!(message.contains("state directory"), "{message}");
    assert!(!env.exists("root/new"));
}

/// A symlink where the state directory should be is not followed.
#[test]
fn a_symlinked_state_directory_is_not_used() {
    let env = TestEnv::new(&["root", "state", "elsewhere"], &[]);
    std::os::unix::fs::symlink(env.path("elsewhere"), env.path("state/replay")).unwrap();
    let message = patch_refused_with(&env.p("state"), &env.p("root"));
    assert!(message.contains("state directory"), "{message}");
    assert_eq!(std::fs::read_dir(env.path("elsewhere")).unwrap().count(), 0);
}
