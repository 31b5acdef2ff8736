//! A stranger's attacks on the gate (`gate.rs`): what a command, or the environment the server
//! starts in, can make of the toolchain grants, the caches, `PATH`, `/dev/pts` and renames.
//! Each test is one attack; it passes when the attack fails.
//!
//! Grants are worked out once, at start-up, by following symlinks: a command that can change
//! a path a grant is worked out from (a `CARGO_HOME` or a `PATH` directory inside a read-write
//! root) chooses what the next server grants. Those attacks take two servers in a row.

use std::ffi::CStr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::Command;

use serde_json::json;

use crate::harness::{path_str, replay_command, require, run_cli, Server, TestEnv};
use crate::isolation::kernel_has_landlock;

const SECRET: &str = "attack-secret-5d02";

fn landlock() -> bool {
    require("Landlock", kernel_has_landlock())
}

/// `root/` (read-write, with `sub/keep`), `ro/` (read-only), `outside/` (not allowed) and a
/// fake home with credentials, caches and a credential `replay` does not list.
fn attack_env() -> TestEnv {
    TestEnv::new(
        &["root/sub", "ro", "outside", "home/.npm", "home/.cargo/registry", "home/.ssh"],
        &[
            ("root/sub/keep", "kept\n"),
            ("ro/keep", "kept\n"),
            ("outside/secret", SECRET),
            ("home/.ssh/id_ed25519", SECRET),
            ("home/.netrc", SECRET),
            ("home/.cargo/credentials.toml", SECRET),
            ("home/.config/composer/auth.json", SECRET),
        ],
    )
}

/// The server over `root` (read-write) and `ro` (read-only) with `HOME` the fake home and
/// `vars` set (`None`: removed); `flags` after.
fn start(env: &TestEnv, vars: &[(&str, Option<String>)], flags: &[&str]) -> Server {
    let mut cmd = server_command(env, vars, flags);
    cmd.env_remove("REPLAY_COMMAND_ISOLATION");
    let mut server = Server::from_command(cmd);
    server.initialize("2025-06-18");
    server
}

fn server_command(env: &TestEnv, vars: &[(&str, Option<String>)], flags: &[&str]) -> Command {
    let mut cmd = replay_command();
    cmd.args(["--mcp-server", "--allow", &format!("{}:rw", path_str(&env.root()))]);
    cmd.args(["--allow", &format!("{}:ro", path_str(&env.path("ro")))]);
    cmd.args(flags);
    cmd.env("HOME", env.path("home")).env_remove("CARGO_HOME");
    for (name, value) in vars {
        match value {
            Some(value) => cmd.env(name, value),
            None => cmd.env_remove(name),
        };
    }
    cmd
}

/// The command's reply, every text item joined.
fn run(server: &mut Server, command: &str) -> String {
    let response = server.call("execute_command", json!({"command": command, "timeout": 60}));
    let content = response.result()["content"].as_array().cloned().unwrap_or_default();
    content.iter().filter_map(|item| item["text"].as_str()).collect::<Vec<_>>().join("\n")
}

/// `PATH` with `dir` first.
fn path_with(dir: &str) -> String {
    format!("{dir}:{}", std::env::var("PATH").unwrap_or_default())
}

// ---------------------------------------------------------------------------------------------
// Grants a command chooses for the next server
// ---------------------------------------------------------------------------------------------

/// `CARGO_HOME` inside the read-write root (CI jobs keep it there): a command swaps
/// `registry` for a symlink to a directory outside; the next server resolves the symlink and
/// grants that directory read-write (`/etc` would do: root code execution outside the
/// sandbox).
#[test]
fn attack_a_cache_symlinked_by_a_command_grants_no_write_to_the_next_server() {
    if !landlock() {
        return;
    }
    let env = attack_env();
    env.mkdir("root/.cargo/registry");
    let cargo = Some(path_str(&env.path("root/.cargo")));
    let outside = path_str(&env.path("outside"));
    let mut server = start(&env, &[("CARGO_HOME", cargo.clone())], &[]);
    let out =
        run(&mut server, &format!("rmdir .cargo/registry && ln -s {outside} .cargo/registry"));
    assert!(out.contains("[exit code: 0]"), "{out}");
    drop(server);
    let mut server = start(&env, &[("CARGO_HOME", cargo)], &[]);
    let out = run(&mut server, &format!("echo planted > {outside}/planted; chmod 777 {outside}"));
    assert!(
        !env.exists("outside/planted"),
        "the second server let a command write {outside}:\n{out}"
    );
    assert_ne!(env.mode("outside") & 0o777, 0o777, "{out}");
}

/// A `PATH` directory inside the read-write root (an activated virtualenv's `bin`): a command
/// swaps it for a symlink to the home; the next server grants the home, credentials and all
/// (`PATH` directories get no credential check).
#[test]
fn attack_a_path_directory_symlinked_by_a_command_reads_no_credentials_next_time() {
    if !landlock() {
        return;
    }
    let env = attack_env();
    env.mkdir("root/.venv/bin");
    let path = Some(path_with(&path_str(&env.path("root/.venv/bin"))));
    let mut server = start(&env, &[("PATH", path.clone())], &[]);
    let home = path_str(&env.path("home"));
    let out = run(&mut server, &format!("rm -r .venv/bin && ln -s {home} .venv/bin"));
    assert!(out.contains("[exit code: 0]"), "{out}");
    drop(server);
    let mut server = start(&env, &[("PATH", path)], &[]);
    let out = run(&mut server, "cat ~/.ssh/id_ed25519 ~/.netrc ~/.cargo/credentials.toml");
    assert!(!out.contains(SECRET), "credentials read through a retargeted PATH entry:\n{out}");
}

/// The home itself on `PATH` (`PATH=$PATH:$HOME` is a common line): every credential in it.
#[test]
fn attack_the_home_on_path_reads_no_credentials() {
    if !landlock() {
        return;
    }
    let env = attack_env();
    let path = Some(path_with(&path_str(&env.path("home"))));
    let mut server = start(&env, &[("PATH", path)], &[]);
    let out = run(&mut server, "cat ~/.ssh/id_ed25519");
    assert!(!out.contains(SECRET), "{out}");
}

// ---------------------------------------------------------------------------------------------
// Credentials through variables
// ---------------------------------------------------------------------------------------------

/// `COMPOSER_HOME=~/.config/composer` (composer's own default place): a `*_HOME` variable the
/// grants take, holding `auth.json` with a GitHub token, which `CREDENTIALS` does not list.
/// `HF_HOME` (`token`), `CODEX_HOME` (`auth.json`), `VAGRANT_HOME` (`insecure_private_key`),
/// `HELM_CONFIG_HOME` and `GRADLE_USER_HOME` outside the home are the same.
#[test]
fn attack_a_named_home_holding_an_unlisted_credential_is_not_read() {
    if !landlock() {
        return;
    }
    let env = attack_env();
    let composer = Some(path_str(&env.path("home/.config/composer")));
    let mut server = start(&env, &[("COMPOSER_HOME", composer)], &[]);
    let out = run(&mut server, "cat ~/.config/composer/auth.json");
    assert!(!out.contains(SECRET), "{out}");
}

/// No `HOME` (a client that starts servers with a bare environment): no credential check is
/// made at all, and any `*_ROOT` variable grants a whole home.
#[test]
fn attack_without_home_a_variable_grants_no_credentials() {
    if !landlock() {
        return;
    }
    let env = attack_env();
    let home = Some(path_str(&env.path("home")));
    let vars = [("HOME", None), ("PROJECT_ROOT", home)];
    let mut server = start(&env, &vars, &[]);
    let home = path_str(&env.path("home"));
    let out = run(&mut server, &format!("cat {home}/.ssh/id_ed25519 {home}/.netrc"));
    assert!(!out.contains(SECRET), "{out}");
}

/// `HOME` is not the only home: a variable naming another home's `.ssh` (the real home's,
/// when `HOME` points elsewhere; another user's, for a root server) passes every check,
/// which looks under `HOME` only.
#[test]
fn attack_a_variable_naming_another_homes_ssh_is_not_granted() {
    if !landlock() {
        return;
    }
    let env = attack_env();
    env.write("other/.ssh/id_rsa", SECRET);
    let ssh = Some(path_str(&env.path("other/.ssh")));
    let mut server = start(&env, &[("BACKUP_HOME", ssh)], &[]);
    let out = run(&mut server, &format!("cat {}/id_rsa", path_str(&env.path("other/.ssh"))));
    assert!(!out.contains(SECRET), "{out}");
}

// ---------------------------------------------------------------------------------------------
// Read-only roots and caches
// ---------------------------------------------------------------------------------------------

/// A read-only root inside a cache: its parent is no mount point, so a command renames the
/// parent away and puts a directory of its own at the root's path; the file tools then serve
/// the command's file as the read-only root's. (Inside a read-write root the directories
/// between are mount points, EBUSY.)
#[test]
fn attack_a_read_only_root_inside_a_cache_cannot_be_replaced() {
    if !landlock() {
        return;
    }
    let env = attack_env();
    env.write("home/.npm/sub/ro/keep", "kept\n");
    let ro = format!("{}:ro", path_str(&env.path("home/.npm/sub/ro")));
    let mut server = start(&env, &[], &["--allow", &ro]);
    let out = run(
        &mut server,
        "mv ~/.npm/sub ~/.npm/moved; mkdir -p ~/.npm/sub/ro && echo changed > ~/.npm/sub/ro/keep",
    );
    let kept = path_str(&env.path("home/.npm/sub/ro/keep"));
    let read = server.call_text("read_file", json!({"path": kept}));
    assert!(!read.contains("changed"), "{out}\n{read}");
}

/// A command refused a credential gets the hint that `--sandbox-read PATH` lets it read it, and
/// `--sandbox-read` is taken as given: the agent relays the line, the user adds `~/.ssh`. A
/// refusal under a credential place is no missing grant.
#[test]
fn attack_the_hint_does_not_offer_a_credential_place() {
    if !landlock() {
        return;
    }
    let env = attack_env();
    let mut server = start(&env, &[], &[]);
    let out = run(&mut server, "cat ~/.ssh/id_ed25519");
    assert!(out.contains("Permission denied"), "{out}");
    assert!(!out.contains("--sandbox-read PATH"), "{out}");
}

/// The home allowed read-only (`--allow ~:ro`, to let the agent read dotfiles): the caches in
/// it stay writable to commands, so a read-only root changes under the user, with no word in
/// the reply or in `replay sandbox`. A cache inside a read-only root must be read-only.
#[test]
fn attack_a_cache_inside_a_read_only_root_is_not_written() {
    if !landlock() {
        return;
    }
    let env = attack_env();
    let home = format!("{}:ro", path_str(&env.path("home")));
    let mut server = start(&env, &[], &["--allow", &home]);
    let out = run(&mut server, "echo planted > ~/.npm/planted");
    assert!(!env.exists("home/.npm/planted"), "a command wrote in a read-only root:\n{out}");
}

// ---------------------------------------------------------------------------------------------
// Terminals
// ---------------------------------------------------------------------------------------------

/// `/dev/pts` is the host's, read-write: a command opens another session's terminal by name,
/// reads what is typed there (a password at a `sudo` prompt) and writes into it. Commands
/// cannot set a pseudo-terminal up anyway (no device ioctls), so nothing needs it.
#[test]
fn attack_commands_cannot_read_or_write_another_terminal() {
    if !landlock() {
        return;
    }
    // SAFETY: plain libc calls; every descriptor returned is owned at once.
    let (master, path) = unsafe {
        let master = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
        assert!(master >= 0, "posix_openpt: {}", std::io::Error::last_os_error());
        let master = OwnedFd::from_raw_fd(master);
        assert_eq!(libc::grantpt(master.as_raw_fd()), 0, "grantpt");
        assert_eq!(libc::unlockpt(master.as_raw_fd()), 0, "unlockpt");
        let mut name = [0 as libc::c_char; 128];
        assert_eq!(libc::ptsname_r(master.as_raw_fd(), name.as_mut_ptr(), name.len()), 0);
        (master, CStr::from_ptr(name.as_ptr()).to_string_lossy().into_owned())
    };
    let typed = b"typed-password-3e9\n";
    // SAFETY: writing a buffer of the length given to an open descriptor.
    let n = unsafe { libc::write(master.as_raw_fd(), typed.as_ptr().cast(), typed.len()) };
    assert_eq!(n, typed.len() as isize);
    let env = attack_env();
    let mut server = start(&env, &[], &[]);
    let out = run(&mut server, &format!("head -c 18 < {path}; echo; echo INJECTED > {path}"));
    assert!(!out.contains("typed-password-3e9"), "a command read another terminal:\n{out}");
    assert!(!out.contains("[exit code: 0]"), "a command wrote into another terminal:\n{out}");
}

/// `/dev/shm` is the host's, read-write: a command reads and changes any shared memory of the
/// user's other programs (PostgreSQL's segments, Python's `multiprocessing`, a browser's), of
/// every user's for a root server. A tmpfs of the namespace's own would serve POSIX shared
/// memory in commands as well.
#[test]
fn attack_commands_cannot_reach_the_hosts_shared_memory() {
    if !landlock() || !require("/dev/shm", std::path::Path::new("/dev/shm").is_dir()) {
        return;
    }
    let env = attack_env();
    let name = format!("/dev/shm/{}", crate::harness::unique_name("attack-shm"));
    std::fs::write(&name, SECRET).expect("writing the segment");
    let mut server = start(&env, &[], &[]);
    let out = run(&mut server, &format!("cat {name}; echo changed > {name}"));
    let after = std::fs::read_to_string(&name).unwrap_or_default();
    let _ = std::fs::remove_file(&name);
    assert!(!out.contains(SECRET), "a command read the host's {name}:\n{out}");
    assert_eq!(after, SECRET, "a command changed the host's {name}:\n{out}");
}

// ---------------------------------------------------------------------------------------------
// Caches the user's own builds trust
// ---------------------------------------------------------------------------------------------

/// The caches are shared with the user's builds outside the sandbox, which trust them: cargo
/// never checks an extracted crate in `registry/src` again (Maven the jars in
/// `~/.m2/repository`, Gradle the distributions in `~/.gradle/wrapper`, Go `pkg/mod`). A
/// command adds a build script to a crate there, and the user's next `cargo build` of any
/// project using it runs that script outside the sandbox, as the user: shown by hand with
/// cfg-if 1.0.4 and an offline `CARGO_HOME` (`build = "build.rs"` in its Cargo.toml, `build =
/// false` dropped). A command may add to a cache, never change what is there.
#[test]
fn attack_a_command_cannot_change_a_crate_the_users_builds_run() {
    if !landlock() {
        return;
    }
    let env = attack_env();
    let krate = "home/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/cfg-if-1.0.4";
    env.write(&format!("{krate}/Cargo.toml"), "[package]\nname = \"cfg-if\"\nbuild = false\n");
    env.write(&format!("{krate}/.cargo-ok"), "{\"v\":1}");
    let mut server = start(&env, &[], &[]);
    let dir = path_str(&env.path(krate));
    let out = run(
        &mut server,
        &format!(
            "cd {dir} && echo 'fn main() {{ /* runs outside */ }}' > build.rs && \
             sed -i 's/^build = false/build = \"build.rs\"/' Cargo.toml"
        ),
    );
    assert!(!env.exists(&format!("{krate}/build.rs")), "{out}");
    assert!(env.read_string(&format!("{krate}/Cargo.toml")).contains("build = false"), "{out}");
}

// ---------------------------------------------------------------------------------------------
// Start-up cost
// ---------------------------------------------------------------------------------------------

/// 6000 `*_HOME` variables naming distinct directories: each grant is compared with every
/// earlier one, so `replay sandbox` (and every server start) takes quadratic time: 20 000
/// took 331 s here. It must finish within the harness's reply time.
#[test]
fn attack_many_named_homes_do_not_stall_the_start() {
    let env = attack_env();
    let mut cmd = replay_command();
    cmd.arg("sandbox").arg(env.root()).env("HOME", env.path("home"));
    for i in 0..6000 {
        let dir = format!("many/d{i}");
        env.mkdir(&dir);
        cmd.env(format!("MANY{i}_HOME"), env.path(&dir));
    }
    let out = run_cli(cmd, "");
    assert!(out.status.success(), "{}", out.stderr);
}

// ---------------------------------------------------------------------------------------------
// What held
// ---------------------------------------------------------------------------------------------

/// Hard links and renames of a credential, an outside file or a read-only root's file into a
/// cache, in the namespace and in the seccomp fallback: all refused (EXDEV across the
/// namespace's mounts; Landlock's Refer rule where there is none).
fn links_into_a_cache(seccomp: bool) {
    if !landlock() || !require("python3", crate::isolation::system_program("python3").is_some()) {
        return;
    }
    let env = attack_env();
    let mut cmd = server_command(&env, &[], &[]);
    if seccomp {
        cmd.env("REPLAY_COMMAND_ISOLATION", "seccomp");
    }
    let mut server = Server::from_command(cmd);
    server.initialize("2025-06-18");
    let outside = path_str(&env.path("outside"));
    let ro = path_str(&env.path("ro"));
    let rename =
        |from: &str, to: &str| format!("python3 -c 'import os; os.rename(\"{from}\", \"{to}\")'");
    for command in [
        "ln ~/.ssh/id_ed25519 ~/.npm/k".to_string(),
        format!("ln {outside}/secret ~/.npm/s"),
        format!("ln {outside}/secret s"),
        rename(&format!("{outside}/secret"), &path_str(&env.path("home/.npm/s"))),
        rename(&format!("{ro}/keep"), &path_str(&env.path("home/.npm/keep"))),
        rename(&path_str(&env.path("home/.ssh/id_ed25519")), &path_str(&env.path("home/.npm/k"))),
    ] {
        let out = run(&mut server, &format!("{command} && cat ~/.npm/* s 2>&1; echo END"));
        assert!(out.contains("END") && !out.contains(SECRET), "{command}:\n{out}");
    }
    assert_eq!(env.names("home/.npm"), Vec::<String>::new());
    assert_eq!(env.names("outside"), ["secret"]);
    assert_eq!(env.names("ro"), ["keep"]);
}

#[test]
fn held_links_and_renames_into_a_cache() {
    links_into_a_cache(false);
}

#[test]
fn held_links_and_renames_into_a_cache_seccomp() {
    links_into_a_cache(true);
}

/// The server's environment (tokens the client passed it), init's root and cwd, through
/// `/proc`: refused (the server is not dumpable; the command's Landlock domain is apart).
#[test]
fn held_proc_gives_nothing_of_the_server_or_init() {
    if !landlock() {
        return;
    }
    let env = attack_env();
    let token = Some(SECRET.to_string());
    let mut server = start(&env, &[("SOME_API_TOKEN", token)], &[]);
    // The server's pid as the host's /proc shows it: a command's $PPID is its PID namespace's
    // init.
    let server_pid = server.pid();
    let out = run(
        &mut server,
        &format!(
            "cat /proc/{server_pid}/environ /proc/1/environ; ls /proc/1/root/ /proc/1/cwd/ \
             /proc/{server_pid}/cwd/; head -c 16 /proc/{server_pid}/mem; echo END"
        ),
    );
    assert!(out.contains("END") && !out.contains(SECRET), "{out}");
    assert!(!out.contains("bin\n"), "{out}");
}

/// A named home that is a FIFO or a regular file, and a cache that is a symlink loop: the
/// server starts, Landlock holds, nothing blocks.
#[test]
fn held_odd_named_homes_and_a_symlink_loop_keep_landlock() {
    if !landlock() {
        return;
    }
    let env = attack_env();
    let fifo = env.path("fifo");
    let c_fifo = std::ffi::CString::new(path_str(&fifo)).expect("no NUL");
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c_fifo.as_ptr(), 0o600) }, 0, "mkfifo");
    env.write("plain", "x");
    std::fs::remove_dir(env.path("home/.npm")).expect("rmdir .npm");
    env.symlink(&path_str(&env.path("home/.npm")), "home/.npm");
    let vars =
        [("FIFO_HOME", Some(path_str(&fifo))), ("PLAIN_ROOT", Some(path_str(&env.path("plain"))))];
    let mut server = start(&env, &vars, &[]);
    let outside = path_str(&env.path("outside"));
    let out = run(&mut server, &format!("cat {outside}/secret ~/.ssh/id_ed25519; echo END"));
    assert!(out.contains("END") && !out.contains(SECRET), "{out}");
}

/// A command makes a regular file where the next server's cache grant is. Outside the roots a
/// file there would cost the namespace (`open_tree`: not a directory; the seccomp fallback,
/// where a read-only root nested in a read-write one is writable); inside a read-write root
/// the cache needs no mount of its own, so the namespace stays.
#[test]
fn held_a_file_planted_at_a_cache_path_in_a_root_keeps_the_namespace() {
    if !landlock() {
        return;
    }
    let env = attack_env();
    env.mkdir("root/.cargo/registry");
    let cargo = Some(path_str(&env.path("root/.cargo")));
    let mut server = start(&env, &[("CARGO_HOME", cargo.clone())], &[]);
    let out = run(&mut server, "rmdir .cargo/registry && touch .cargo/registry");
    assert!(out.contains("[exit code: 0]"), "{out}");
    drop(server);
    let nested = format!("{}:ro", path_str(&env.path("root/sub")));
    let mut server = start(&env, &[("CARGO_HOME", cargo)], &["--allow", &nested]);
    let out = run(&mut server, "echo changed > sub/keep");
    assert_eq!(env.read_string("root/sub/keep"), "kept\n", "{out}\n{}", server.stderr());
}

/// A named home spelled with `..` into a credential place: resolved before the check, refused.
#[test]
fn held_a_named_home_with_dots_into_ssh_is_refused() {
    if !landlock() {
        return;
    }
    let env = attack_env();
    env.mkdir("home/.config/composer");
    let dotted = format!("{}/../../.ssh", path_str(&env.path("home/.config/composer")));
    let mut server = start(&env, &[("TOOL_HOME", Some(dotted))], &[]);
    let out = run(&mut server, "cat ~/.ssh/id_ed25519; echo END");
    assert!(out.contains("END") && !out.contains(SECRET), "{out}");
}

/// A command plants `$TMPDIR/copy/work`, a symlink to a directory outside every grant, and its
/// server dies before emptying its TMPDIR. The next server's start-up sweep takes the dead
/// server's TMPDIR for a caches' copy (`<pid>.caches`) and opens the work directories in it
/// (chmod 0700) through the symlink: a directory the command could not change (mode 0555,
/// outside the roots) must keep its mode.
#[test]
fn a_planted_work_link_in_tmpdir_changes_no_mode_outside_at_the_next_start() {
    let env = attack_env();
    env.mkdir("outside/locked");
    env.set_mode("outside/locked", 0o555);
    let target = env.p("outside");
    let mut server = Server::start_also(&env, &[("ro", "ro")]);
    let plant = format!(r#"mkdir -p "$TMPDIR/copy" && ln -s '{target}' "$TMPDIR/copy/work""#);
    let planted = server.call_text("execute_command", json!({"command": plant}));
    assert!(planted.contains("[exit code: 0]"), "{planted}");
    let pid = nix::unistd::Pid::from_raw(server.pid() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL).expect("signalling replay");
    drop(server);
    // The next server sweeps the dead one's directories at start-up.
    let next = Server::start_also(&env, &[("ro", "ro")]);
    drop(next);
    let mode = env.mode("outside/locked") & 0o7777;
    env.set_mode("outside/locked", 0o755);
    assert_eq!(mode, 0o555, "the sweep changed a mode outside the sandbox through a link");
}
