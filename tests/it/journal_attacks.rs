//! Attacks on apply_patch's journal: a journal forged through the tools, a state directory
//! someone else controls, a symlink planted in a journaled directory after a crash.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::ExitStatusExt;

use serde_json::json;

use crate::harness::{replay_command, replay_command_with_kill_hook, require, Server, TestEnv};

fn hex(text: &str) -> String {
    text.bytes().map(|b| format!("{b:02x}")).collect()
}

fn server(allow: &[String], state: &str, kill_at: Option<&str>) -> Server {
    let mut cmd = match kill_at {
        Some(_) => replay_command_with_kill_hook(),
        None => replay_command(),
    };
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

/// The state directory lies inside a read-write root (as it does when the user allows
/// `$HOME`): a client tries to write a forged `committed` journal there with write_file, and
/// the next server's start must not rename a file over one of a read-only root or a denied
/// one, nor delete a file outside every root.
#[test]
fn a_journal_written_through_a_tool_does_not_reach_outside_the_policy() {
    let env = TestEnv::new(
        &["root/.ssh", "outside"],
        &[
            ("root/evil", "attacker\n"),
            ("root/evil2", "ssh-ed25519 AAAA attacker\n"),
            ("ro/victim", "read-only\n"),
            ("outside/victim", "outside\n"),
        ],
    );
    let state = env.p("root/state");
    let allow = vec![format!("{}:rw", env.p("root")), format!("{}:ro", env.p("ro"))];
    let mut first = server(&allow, &state, None);
    let journal = format!(
        "replay-journal 1\ncommitted\n{} {} -\n{} {} -\n{} - -\nend\n",
        hex(&env.p("ro/victim")),
        hex(&env.p("root/evil")),
        hex(&env.p("root/.ssh/authorized_keys")),
        hex(&env.p("root/evil2")),
        hex(&env.p("outside/victim")),
    );
    let args = json!({"path": env.p("root/state/replay/999999.journal"), "content": journal});
    first.call_err("write_file", args, -32001);
    first.call_err("list_directory", json!({"path": env.p("root/state/replay")}), -32001);
    drop(first);
    // A journal planted by other means (not through this server) is refused too.
    std::fs::write(env.path("root/state/replay/999998.journal"), &journal).unwrap();

    let mut next = server(&allow, &state, None);
    let _ = next.call_text("list_allowed_directories", json!({}));
    assert_eq!(env.read_string("ro/victim"), "read-only\n", "a :ro file was replaced");
    assert!(!env.exists("root/.ssh/authorized_keys"), "a denied path was written");
    assert!(env.exists("outside/victim"), "a file outside every root was deleted");
    assert!(env.exists("root/state/replay/999998.journal"), "a refused journal is left");
}

/// A server is killed between the commit point and a deletion; before the next start the
/// journaled directory is replaced by a symlink to the outside. Recovery must not delete the
/// file of the same name there.
#[test]
fn recovery_follows_no_symlink_planted_in_a_journaled_directory() {
    if !cfg!(debug_assertions) {
        return;
    }
    let env = TestEnv::new(
        &[],
        &[("root/sub/victim", "in the project\n"), ("outside/victim", "outside\n")],
    );
    let state = env.p("state");
    let allow = vec![format!("{}:rw", env.p("root"))];
    let mut first = server(&allow, &state, Some("committed"));
    let body = "*** Begin Patch\n*** Delete File: sub/victim\n*** End Patch";
    let args = json!({"patch": body, "workingDirectory": env.p("root")});
    first.send(&json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": {"name": "apply_patch", "arguments": args}}));
    let (_, status) = first.finish();
    assert_eq!(status.signal(), Some(9));
    std::fs::rename(env.path("root/sub"), env.path("root/sub.moved")).unwrap();
    std::os::unix::fs::symlink(env.path("outside"), env.path("root/sub")).unwrap();

    let mut next = server(&allow, &state, None);
    let _ = next.call_text("list_allowed_directories", json!({}));
    assert!(env.exists("outside/victim"), "recovery deleted a file outside every root");
}

/// A journal recovery cannot read (here a directory, `1.journal`, which sorts before every
/// other pid's) does not keep the next one from being recovered.
#[test]
fn a_stuck_journal_does_not_block_the_next() {
    if !cfg!(debug_assertions) {
        return;
    }
    let env = TestEnv::new(&["state/replay/1.journal"], &[("root/f", "old\n")]);
    let state = env.p("state");
    let allow = vec![format!("{}:rw", env.p("root"))];
    let mut first = server(&allow, &state, Some("committed"));
    let body = "*** Begin Patch\n*** Update File: f\n@@\n-old\n+new\n*** End Patch";
    let args = json!({"patch": body, "workingDirectory": env.p("root")});
    first.send(&json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": {"name": "apply_patch", "arguments": args}}));
    let (_, status) = first.finish();
    assert_eq!(status.signal(), Some(9));
    assert_eq!(env.read_string("root/f"), "old\n");

    let mut next = server(&allow, &state, None);
    let _ = next.call_text("list_allowed_directories", json!({}));
    assert_eq!(env.read_string("root/f"), "new\n", "the journal after the stuck one was left");
}

/// The state directory holds only the files of servers that run or were killed: a start
/// removes the lock files whose journal is gone and that no process holds, and keeps one a
/// live process holds.
#[test]
fn a_start_removes_lock_files_no_server_holds() {
    let env = TestEnv::new(&["root", "state/replay"], &[]);
    std::fs::set_permissions(env.path("state/replay"), std::fs::Permissions::from_mode(0o700))
        .unwrap();
    for pid in [4_000_001, 4_000_002, 4_000_003] {
        env.write(&format!("state/replay/{pid}.lock"), "");
    }
    env.write("state/replay/4000004.lock", "");
    let held = std::fs::File::open(env.path("state/replay/4000004.lock")).unwrap();
    // SAFETY: a plain flock on a file this test opened.
    assert_eq!(unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&held), libc::LOCK_EX) }, 0);
    let allow = vec![format!("{}:rw", env.p("root"))];
    let mut server = server(&allow, &env.p("state"), None);
    let _ = server.call_text("list_allowed_directories", json!({}));
    let mut left: Vec<String> = std::fs::read_dir(env.path("state/replay"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("4000"))
        .collect();
    left.sort();
    assert_eq!(left, ["4000004.lock"]);
}

/// Servers that start together each recover the others' leftovers; no race between them leaves
/// a lock file behind (each made one again when it lost the race to a journal another had
/// just removed). After they exit, one more start leaves only its own two files.
#[test]
fn servers_starting_together_leave_no_lock_files() {
    let env = TestEnv::new(&["root"], &[]);
    let state = env.p("state");
    let allow = vec![format!("{}:rw", env.p("root"))];
    for _ in 0..10 {
        // Spawned at once: each recovers at its start, before it reads a request.
        let servers: Vec<Server> = (0..6)
            .map(|_| {
                let mut cmd = replay_command();
                cmd.args(["--mcp-server", "--allow", &allow[0]]).env("XDG_STATE_HOME", &state);
                Server::from_command(cmd)
            })
            .collect();
        for mut server in servers {
            server.initialize("2025-06-18");
            let (_, status) = server.finish();
            assert!(status.success(), "{status:?}");
        }
    }
    let mut last = server(&allow, &state, None);
    let _ = last.call_text("list_allowed_directories", json!({}));
    let left = std::fs::read_dir(env.path("state/replay")).unwrap().count();
    assert_eq!(left, 2, "the state directory holds more than the last server's journal and lock");
}

/// A command cannot write a journal into a state directory inside a read-write root either:
/// the commands' namespace hides it.
#[cfg(target_os = "linux")]
#[test]
fn a_command_cannot_reach_the_state_directory() {
    if !commands_namespaced() {
        return;
    }
    let env = TestEnv::new(&["root"], &[]);
    let allow = vec![format!("{}:rw", env.p("root"))];
    let mut server = server(&allow, &env.p("root/state"), None);
    let command = "echo forged > state/replay/999999.journal; ls -A state/replay";
    let reply = server.call("execute_command", json!({"command": command}));
    let content = reply.result()["content"].as_array().cloned().unwrap_or_default();
    let text: Vec<&str> = content.iter().filter_map(|c| c["text"].as_str()).collect();
    // A listing would show the server's own `<pid>.lock`.
    assert!(!text.join("\n").contains(".lock"), "{text:?}");
    assert!(!env.exists("root/state/replay/999999.journal"), "a command wrote a journal");
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

/// Two servers that share a state directory from two PID namespaces (two containers with one
/// home) can run with the same pid, here 1 each: the second must start and answer, not wait
/// on the first's `1.lock` until the first exits.
#[cfg(target_os = "linux")]
#[test]
fn a_server_whose_pid_another_pid_namespace_uses_starts() {
    if !require("root, for unshare --pid", crate::isolation::is_root()) {
        return;
    }
    let env = TestEnv::new(&["root"], &[]);
    let allow = format!("{}:rw", env.p("root"));
    let pid_one = || {
        #[expect(clippy::disallowed_methods, reason = "the server runs as pid 1 of its own")]
        let mut cmd = std::process::Command::new("unshare");
        cmd.args(["--pid", "--fork", "--kill-child"])
            .arg(replay_command().get_program())
            .args(["--mcp-server", "--allow", &allow])
            .env("XDG_STATE_HOME", env.p("state"));
        Server::from_command(cmd)
    };
    let mut first = pid_one();
    first.initialize("2025-06-18");
    assert!(env.path("state/replay/1.lock").exists(), "the first server is not pid 1");
    let mut second = pid_one();
    second.initialize("2025-06-18");
    let _ = second.call_text("list_allowed_directories", json!({}));
}

/// The state directory inside an allowed directory is denied to the tools by its path; a
/// command that renames its parent (`mv state moved`: the cover's mount moves along) must not
/// bring it within the tools' reach under the new name.
#[cfg(target_os = "linux")]
#[test]
fn a_command_cannot_move_the_state_directory_within_the_tools_reach() {
    if !commands_namespaced() {
        return;
    }
    let env = TestEnv::new(&["root/state"], &[]);
    let allow = vec![format!("{}:rw", env.p("root"))];
    let mut server = server(&allow, &env.p("root/state"), None);
    let _ = server.call("execute_command", json!({"command": "mv state moved"}));
    assert!(!env.exists("root/moved") && env.exists("root/state/replay"), "the command moved it");
    let listed = server.call("list_directory", json!({"path": env.p("root/moved/replay")}));
    assert!(!listed.line.contains(".lock"), "{}", listed.line);
}

/// Another start recovering the journal a gone server of the same pid left holds that
/// `<pid>.lock` while it works (`recover_one`), in the same PID namespace. A new server that
/// got the pid and starts meanwhile must still get its state directory once the recovery is
/// done, not go without apply_patch for its whole life. (Here the server is pid 1 of a PID
/// namespace of its own, to know its pid; the test holds the lock for 300 ms, as a recovery.)
#[cfg(target_os = "linux")]
#[test]
fn a_start_during_another_starts_recovery_of_its_pid_keeps_apply_patch() {
    use nix::fcntl::{Flock, FlockArg};
    if !require("root, for unshare --pid", crate::isolation::is_root()) {
        return;
    }
    let env = TestEnv::new(&["root", "state/replay"], &[("state/replay/1.journal", "")]);
    std::fs::set_permissions(env.path("state/replay"), std::fs::Permissions::from_mode(0o700))
        .unwrap();
    let lock = std::fs::File::create(env.path("state/replay/1.lock")).unwrap();
    let held = Flock::lock(lock, FlockArg::LockExclusive).map_err(|(_, e)| e).unwrap();
    let allow = format!("{}:rw", env.p("root"));
    #[expect(clippy::disallowed_methods, reason = "the server runs as pid 1 of its own")]
    let mut cmd = std::process::Command::new("unshare");
    cmd.args(["--pid", "--fork", "--kill-child"])
        .arg(replay_command().get_program())
        .args(["--mcp-server", "--allow", &allow])
        .env("XDG_STATE_HOME", env.p("state"));
    let mut server = Server::from_command(cmd);
    let release = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(300));
        drop(held);
    });
    server.initialize("2025-06-18");
    release.join().unwrap();
    let body = "*** Begin Patch\n*** Add File: new\n+x\n*** End Patch";
    let reply =
        server.call("apply_patch", json!({"patch": body, "workingDirectory": env.p("root")}));
    assert!(!reply.line.contains("\"error\""), "{}", reply.line);
    assert!(env.exists("root/new"));
}

/// Whether commands run in the namespace that hides the state directory (Landlock and user
/// namespaces here); `require` says why not.
#[cfg(target_os = "linux")]
fn commands_namespaced() -> bool {
    use crate::isolation::{kernel_has_landlock, namespaces_work, User};
    require("Landlock", kernel_has_landlock())
        && require("user namespaces", namespaces_work(User::Invoker))
}
