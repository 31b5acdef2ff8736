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
    if !covers_testable(User::Invoker) {
        return;
    }
    let env = TestEnv::new(&["root/a", "root/b"], &[]);
    let (secret, mut server) = secret_walked_last(&env, 4100, ".pem");
    let command = json!({"command": format!("cat {secret}/.env")});
    let error = server.call_err("execute_command", command, -32603);
    assert!(error.message.contains("deny rules could not be applied to commands"), "{error:?}");
    assert!(error.message.contains("--no-default-deny"), "{error:?}");
    assert!(!error.message.contains("hunter2"), "{error:?}");
    let note = server.call_text("list_allowed_directories", json!({}));
    assert!(note.contains("execute_command is refused"), "{note}");
}

/// In `root`'s two directories: `n` files named `<i><suffix>` in the one the walk enters first
/// (directory order), `.env` in the other; then a server over `root`, started. Gives the
/// secret's directory's name and the server.
#[cfg(target_os = "linux")]
fn secret_walked_last(env: &TestEnv, n: usize, suffix: &str) -> (String, Server) {
    let order: Vec<String> = std::fs::read_dir(env.path("root"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let (first, secret) = (&order[0], &order[1]);
    for i in 0..n {
        env.write(&format!("root/{first}/{i}{suffix}"), "");
    }
    env.write(&format!("root/{secret}/.env"), "SECRET=hunter2\n");
    let allow = format!("{}:rw", env.p("root"));
    (secret.clone(), Server::start_with(["--mcp-server", "--allow", &allow]))
}

/// The covers are made beside the start, by a walk that takes a while over a big tree: a
/// command sent at once waits for them, and so cannot read a secret the walk reaches last.
#[cfg(target_os = "linux")]
#[test]
fn a_command_at_start_waits_for_the_covers_of_a_big_tree() {
    if !covers_testable(User::Invoker) {
        return;
    }
    let env = TestEnv::new(&["root/a", "root/b"], &[]);
    let (secret, mut server) = secret_walked_last(&env, 40_000, "");
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

/// Whether the commands' namespace and its covers can be tested here.
#[cfg(target_os = "linux")]
fn covers_testable(user: User) -> bool {
    require("Landlock", kernel_has_landlock())
        && require("user namespaces", namespaces_work(user))
        && (user == User::Invoker
            || !crate::isolation::is_root()
            || require("setpriv", crate::isolation::privileges(user).is_some()))
}

/// A secret whose absolute path is longer than 4096 bytes (17 levels of 250-byte names): no
/// path names the directories holding it, but a command reaches it step by step (`cd -P`).
/// The start walk must cover it, or refuse commands.
#[cfg(target_os = "linux")]
#[test]
fn a_secret_below_a_path_longer_than_path_max_is_covered_from_commands() {
    use nix::fcntl::{openat, OFlag};
    use nix::sys::stat::{mkdirat, Mode};
    if !covers_testable(User::Invoker) {
        return;
    }
    let env = TestEnv::new(&[], &[]);
    let name = "d".repeat(250);
    let levels = 17;
    let flags = OFlag::O_DIRECTORY | OFlag::O_RDONLY | OFlag::O_CLOEXEC;
    let mut dir = std::fs::File::open(env.path("root")).unwrap().into();
    for _ in 0..levels {
        mkdirat(&dir, name.as_str(), Mode::from_bits_truncate(0o755)).unwrap();
        dir = openat(&dir, name.as_str(), flags, Mode::empty()).unwrap();
    }
    let create = OFlag::O_CREAT | OFlag::O_WRONLY | OFlag::O_CLOEXEC;
    let secret = openat(&dir, ".env", create, Mode::from_bits_truncate(0o600)).unwrap();
    std::io::Write::write_all(&mut std::fs::File::from(secret), b"SECRET=hunter2\n").unwrap();
    let allow = format!("{}:rw", env.p("root"));
    let mut server = Server::start_with(["--mcp-server", "--allow", &allow]);
    let command = format!("for i in $(seq {levels}); do cd -P {name} || exit 9; done; cat .env");
    let reply = server.call("execute_command", json!({"command": command}));
    assert!(!reply.line.contains("hunter2"), "{}", reply.line);
    assert!(reply.line.contains("name too long"), "{}", reply.line);
    // Without rules that need a walk (replay's own files are exact paths), nothing is walked
    // and nothing refused.
    let mut server = Server::start_with(["--mcp-server", "--allow", &allow, "--no-default-deny"]);
    let reply = server.call("execute_command", json!({"command": "echo ran"}));
    assert!(reply.line.contains("ran"), "{}", reply.line);
}

/// A secret 1,100 directories down (a 2,200-byte path) in a server whose soft limit on open
/// files is 1,024, a common default: a walk that holds a handle per level runs out of them
/// before it reaches the secret. The start walk must cover it, or refuse commands.
#[cfg(target_os = "linux")]
#[test]
fn a_secret_deeper_than_the_open_file_limit_is_covered_from_commands() {
    use std::os::unix::process::CommandExt;
    if !covers_testable(User::Invoker) {
        return;
    }
    let env = TestEnv::new(&[], &[]);
    let rel = vec!["d"; 1100].join("/");
    env.write(&format!("root/{rel}/.env"), "SECRET=hunter2\n");
    let allow = format!("{}:rw", env.p("root"));
    let mut cmd = crate::harness::replay_command();
    cmd.args(["--mcp-server", "--allow", &allow]);
    // SAFETY: setrlimit only, between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let limit = libc::rlimit { rlim_cur: 1024, rlim_max: 1024 };
            match libc::setrlimit(libc::RLIMIT_NOFILE, &limit) {
                0 => Ok(()),
                _ => Err(std::io::Error::last_os_error()),
            }
        });
    }
    let mut server = Server::from_command(cmd);
    server.initialize("2025-06-18");
    let reply = server.call("execute_command", json!({"command": format!("cat {rel}/.env")}));
    assert!(!reply.line.contains("hunter2"), "{}", reply.line);
}

/// A directory of the user's own that the user may search but not list (mode 0300), holding
/// `.env`: the server cannot read the directory, but a command opens `d/.env` by its name. The
/// start walk must cover what it cannot list, or refuse commands.
#[cfg(target_os = "linux")]
#[test]
fn a_secret_in_a_directory_the_server_cannot_list_is_covered_from_commands() {
    use crate::isolation::{give, ids};
    if !covers_testable(User::Unprivileged) {
        return;
    }
    let env = TestEnv::new(&["root/d"], &[("root/d/.env", "SECRET=hunter2\n")]);
    give(&env, ids(User::Unprivileged));
    env.set_mode("root/d", 0o300);
    let allow = format!("{}:rw", env.p("root"));
    let mut server = unprivileged_server(&allow);
    server.initialize("2025-06-18");
    let reply = server.call("execute_command", json!({"command": "cat d/.env"}));
    env.set_mode("root/d", 0o700);
    assert!(!reply.line.contains("hunter2"), "{}", reply.line);
}

/// The process making the covers, held up as a hung filesystem in an allowed directory would
/// hold its walk (here stopped with SIGSTOP): a command waits for the covers no longer than its
/// timeout, a cancelled one no longer than the client keeps it; once the walk goes on, commands
/// run with the covers on.
#[cfg(target_os = "linux")]
#[test]
fn a_command_waits_for_held_up_covers_no_longer_than_its_timeout() {
    use std::time::{Duration, Instant};
    if !covers_testable(User::Invoker) {
        return;
    }
    let env = TestEnv::new(&["root/many"], &[("root/.env", "SECRET=hunter2\n")]);
    crowd(&env);
    let allow = format!("{}:rw", env.p("root"));
    let (mut server, coverer) =
        with_covers_held(|| Server::spawn(["--mcp-server", "--allow", &allow]));

    let asked = Instant::now();
    let command = json!({"command": "cat .env", "timeout": 2});
    let error = server.call_err("execute_command", command, -32603);
    assert!(error.message.contains("waited 2 s"), "{error:?}");
    assert!(asked.elapsed() < Duration::from_secs(10), "{:?}", asked.elapsed());

    let call = json!({"name": "execute_command", "arguments": {"command": "cat .env"}});
    server.send(&json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": call}));
    server.notify("notifications/cancelled", json!({"requestId": 7}));
    let asked = Instant::now();
    let _ = server.call_text("list_allowed_directories", json!({}));
    // SAFETY: a signal to the server's own child.
    assert_eq!(unsafe { libc::kill(coverer, libc::SIGCONT) }, 0);
    let reply = server.call("execute_command", json!({"command": "cat .env; echo done"}));
    assert!(reply.line.contains("done") && !reply.line.contains("hunter2"), "{}", reply.line);
    assert!(asked.elapsed() < Duration::from_secs(10), "{:?}", asked.elapsed());
}

/// A server over `allow` run as the unprivileged test user (through `setpriv` when the tests
/// run as root), not yet initialized.
#[cfg(target_os = "linux")]
fn unprivileged_server(allow: &str) -> Server {
    let mut cmd = match crate::isolation::privileges(User::Unprivileged) {
        Some(mut setpriv) => {
            setpriv.arg(crate::harness::BIN);
            setpriv
        }
        None => crate::harness::replay_command(),
    };
    cmd.args(["--mcp-server", "--allow", allow]);
    Server::from_command(cmd)
}

/// 10,000 files in `root/many`: enough that the walk for the covers is likely still on when a
/// test stops it (`with_covers_held` tries again when it was too late).
#[cfg(target_os = "linux")]
fn crowd(env: &TestEnv) {
    for i in 0..10_000 {
        std::fs::write(env.path(&format!("root/many/{i}")), "").unwrap();
    }
}

/// A server `start` spawns, initialized, whose process making the covers is stopped (SIGSTOP),
/// and that process's pid; up to twenty servers are tried.
#[cfg(target_os = "linux")]
fn with_covers_held(start: impl Fn() -> Server) -> (Server, i32) {
    let (mut server, coverer) = (0..20)
        .find_map(|_| {
            let server = start();
            let coverer = stop_the_covers_process(server.pid())?;
            Some((server, coverer))
        })
        .expect("twenty servers covered the secrets before the test could stop one");
    server.initialize("2025-06-18");
    (server, coverer)
}

/// Stops the process the server at `pid` forked to make the covers, and gives its pid; `None`
/// when it had finished already. The thread waiting for its verdict starts once it is forked
/// and the namespace's helper (a child that holds the server until it exits) is gone: the
/// server's only child is then the one making the covers.
#[cfg(target_os = "linux")]
fn stop_the_covers_process(pid: u32) -> Option<i32> {
    use std::time::{Duration, Instant};
    let started = Instant::now();
    let watching = || {
        let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).into_iter().flatten();
        tasks.flatten().any(|task| {
            std::fs::read_to_string(task.path().join("comm"))
                .is_ok_and(|comm| comm.trim() == "deny-covers")
        })
    };
    while !watching() {
        assert!(started.elapsed() < Duration::from_secs(10), "no thread waits for the covers");
    }
    let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).ok()?;
    let coverer: i32 = children.split_whitespace().next()?.parse().ok()?;
    // SAFETY: a signal to the server's own child.
    if unsafe { libc::kill(coverer, libc::SIGSTOP) } != 0 {
        return None;
    }
    // Stopped, or a zombie that had sent its verdict.
    loop {
        let stat = std::fs::read_to_string(format!("/proc/{coverer}/stat")).ok()?;
        match stat.rsplit(')').next()?.split_whitespace().next()? {
            "T" => return Some(coverer),
            "Z" | "X" => return None,
            _ => std::thread::yield_now(),
        }
    }
}

/// Makes `root/<top>/` and, below it, directories of 200-byte names until the path of the
/// deepest is 4,094 bytes, with `sub/.env` in it (past 4,096 bytes); gives the deepest's path.
#[cfg(target_os = "linux")]
fn secret_past_path_max(env: &TestEnv, top: &str) -> String {
    use nix::fcntl::{openat, OFlag};
    use nix::sys::stat::{mkdirat, Mode};
    let flags = OFlag::O_DIRECTORY | OFlag::O_RDONLY | OFlag::O_CLOEXEC;
    let mode = Mode::from_bits_truncate(0o755);
    let mut path = env.p(&format!("root/{top}"));
    std::fs::create_dir_all(&path).unwrap();
    let mut dir = std::fs::File::open(&path).unwrap().into();
    loop {
        let left = 4094 - path.len() - 1;
        let name = "d".repeat(left.min(200));
        mkdirat(&dir, name.as_str(), mode).unwrap();
        dir = openat(&dir, name.as_str(), flags, Mode::empty()).unwrap();
        path = format!("{path}/{name}");
        if left <= 200 {
            break;
        }
    }
    mkdirat(&dir, "sub", mode).unwrap();
    let sub = openat(&dir, "sub", flags, Mode::empty()).unwrap();
    let create = OFlag::O_CREAT | OFlag::O_WRONLY | OFlag::O_CLOEXEC;
    let secret = openat(&sub, ".env", create, Mode::from_bits_truncate(0o600)).unwrap();
    std::io::Write::write_all(&mut std::fs::File::from(secret), b"SECRET=hunter2\n").unwrap();
    path
}

/// While the start's walk runs, move_file refuses a directory holding an entry a rule hides,
/// lest it carry the entry from where the walk has yet to look to where it has looked. An entry
/// whose path passes 4,096 bytes (sub/.env below a 4,094-byte directory), which no walk sees,
/// counts too: moved up, it has a short path again. (Once the walk is done, it has refused
/// commands for that path, and the move is allowed.)
#[cfg(target_os = "linux")]
#[test]
fn move_file_refuses_a_directory_whose_secret_lies_past_path_max() {
    if !covers_testable(User::Invoker) {
        return;
    }
    let env = TestEnv::new(&["root/up", "root/many"], &[]);
    crowd(&env);
    let deep = secret_past_path_max(&env, "deep");
    let allow = format!("{}:rw", env.p("root"));
    let (mut server, coverer) =
        with_covers_held(|| Server::spawn(["--mcp-server", "--allow", &allow]));
    let moved = json!({"source": deep, "destination": env.p("root/up/moved")});
    server.call_err("move_file", moved.clone(), -32001);
    assert!(std::path::Path::new(&deep).exists(), "the refused move left the directory in place");
    // SAFETY: a signal to the server's own child.
    assert_eq!(unsafe { libc::kill(coverer, libc::SIGCONT) }, 0);
    let error = server.call_err("execute_command", json!({"command": "true"}), -32603);
    assert!(error.message.contains("name too long"), "{error:?}");
    server.call_text("move_file", moved);
}

/// The wait for held-up covers counts against a command's timeout: covers made 3 s into a
/// call with a 4 s timeout leave the command 1 s, not 4 more.
#[cfg(target_os = "linux")]
#[test]
fn the_wait_for_covers_counts_against_the_timeout() {
    use std::time::{Duration, Instant};
    if !covers_testable(User::Invoker) {
        return;
    }
    let env = TestEnv::new(&["root/many"], &[("root/.env", "SECRET=hunter2\n")]);
    crowd(&env);
    let allow = format!("{}:rw", env.p("root"));
    let (mut server, coverer) =
        with_covers_held(|| Server::spawn(["--mcp-server", "--allow", &allow]));
    let asked = Instant::now();
    // A filesystem that answers after 3 s, as the held-up walk's stand-in.
    let resume = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(3));
        // SAFETY: a signal to the server's own child.
        unsafe { libc::kill(coverer, libc::SIGCONT) }
    });
    let reply = server.call("execute_command", json!({"command": "sleep 30", "timeout": 4}));
    let took = asked.elapsed();
    assert_eq!(resume.join().unwrap(), 0);
    assert!(took < Duration::from_secs(6), "{took:?} for a 4 s timeout: {}", reply.line);
}

/// While the start's walk runs, move_file refuses a directory holding one it cannot list
/// (mode 0300, holding `.env`): what it cannot read may hold what a rule hides, and the move
/// could carry it from where the walk has yet to look to where it has looked, out of every
/// cover. Once the walk is done (it covered the directory whole), the move is allowed.
#[cfg(target_os = "linux")]
#[test]
fn move_file_refuses_a_directory_holding_one_it_cannot_list() {
    use crate::isolation::{give, ids};
    if !covers_testable(User::Unprivileged) {
        return;
    }
    let env = TestEnv::new(&["root/up", "root/p/d", "root/many"], &[("root/p/d/.env", "S=1\n")]);
    crowd(&env);
    give(&env, ids(User::Unprivileged));
    env.set_mode("root/p/d", 0o300);
    let allow = format!("{}:rw", env.p("root"));
    let (mut server, coverer) = with_covers_held(|| unprivileged_server(&allow));
    let moved = json!({"source": env.p("root/p"), "destination": env.p("root/up/p")});
    let refused = server.call("move_file", moved.clone());
    // SAFETY: a signal to the server's own child.
    assert_eq!(unsafe { libc::kill(coverer, libc::SIGCONT) }, 0);
    let command = server.call("execute_command", json!({"command": "cat p/d/.env; echo ran"}));
    let after = server.call("move_file", moved);
    // Readable again for the clean-up, wherever it is now.
    let left = if env.path("root/p").exists() { "root/p/d" } else { "root/up/p/d" };
    env.set_mode(left, 0o700);
    assert!(refused.line.contains("\"error\""), "{}", refused.line);
    assert!(command.line.contains("ran") && !command.line.contains("S=1"), "{}", command.line);
    assert!(!after.line.contains("\"error\""), "{}", after.line);
}

/// A path rule binds the file tools by path: move_file refuses to move `config/` out from
/// under `config/prod.yaml`, and a command must not do it for them (`mv config cfg` renames
/// the parent of the cover's mount, which the kernel allows), or read_file serves
/// `cfg/prod.yaml`, which no rule names.
#[cfg(target_os = "linux")]
#[test]
fn a_command_cannot_move_a_path_rules_file_out_from_under_it() {
    if !covers_testable(User::Invoker) {
        return;
    }
    let env = TestEnv::new(&[], &[("root/config/prod.yaml", "password: hunter2\n")]);
    let allow = format!("{}:rw", env.p("root"));
    let mut server =
        Server::spawn(["--mcp-server", "--allow", &allow, "--deny", "config/prod.yaml"]);
    server.initialize("2025-06-18");
    let command = json!({"command": "mv config cfg", "workingDirectory": env.p("root")});
    let _ = server.call("execute_command", command);
    let read = server.call("read_file", json!({"path": env.p("root/cfg/prod.yaml")}));
    assert!(!read.line.contains("hunter2"), "{}", read.line);
}

/// A path rule counts from every command-line directory: a read-only `--allow root/config`
/// inside `--allow root` narrows what commands may write there; it must not lift
/// `config/prod.yaml` for the file tools, which commands still find covered.
#[test]
fn a_nested_allowed_directory_does_not_lift_a_path_rule() {
    let env = TestEnv::new(&[], &[("root/config/prod.yaml", "password: hunter2\n")]);
    let (outer, inner) = (format!("{}:rw", env.p("root")), format!("{}:ro", env.p("root/config")));
    let mut server = Server::spawn([
        "--mcp-server",
        "--allow",
        &outer,
        "--allow",
        &inner,
        "--deny",
        "config/prod.yaml",
    ]);
    server.initialize("2025-06-18");
    server.call_err("read_file", json!({"path": env.p("root/config/prod.yaml")}), -32001);
}

/// `config/prod.yaml` matches at any depth, so renaming `services` (far above `config`) never
/// carries the match out from under its rule: only `config` needs a pin. Pinning every
/// directory up to the allowed one makes `git mv services svc` fail with EBUSY in an ordinary
/// project.
#[cfg(target_os = "linux")]
#[test]
fn a_path_rule_pins_only_the_directories_its_pattern_names() {
    if !covers_testable(User::Invoker) {
        return;
    }
    let env = TestEnv::new(&[], &[("root/services/api/config/prod.yaml", "password: x\n")]);
    let allow = format!("{}:rw", env.p("root"));
    let mut server =
        Server::spawn(["--mcp-server", "--allow", &allow, "--deny", "config/prod.yaml"]);
    server.initialize("2025-06-18");
    let command =
        json!({"command": "mv services svc && echo moved", "workingDirectory": env.p("root")});
    let command = server.call("execute_command", command);
    assert!(command.line.contains("moved"), "{}", command.line);
    let command =
        json!({"command": "mv svc/api/config c2; echo rc=$?", "workingDirectory": env.p("root")});
    let command = server.call("execute_command", command);
    assert!(command.line.contains("rc=1"), "{}", command.line);
}
