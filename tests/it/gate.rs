//! The work gets through the gate: renames and hard links between directories, toolchains
//! under the home with default flags, the caches builds write; and what stays out: renames and
//! links into a read-only root or outside, credentials under a granted home, block devices.
//! `replay sandbox`, `--sandbox-strict`, `--sandbox-write`, and the refusal hint.
//! See: issue #23, items 1 and 3.
//!
//! Tests that need a fake home start the server with `HOME` (and `CARGO_HOME`) pointing into
//! the test's directory; the toolchains themselves stay where the machine has them.

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;

use crate::harness::{path_str, replay_command, require, run_cli, Server, TestEnv};
use crate::isolation::{is_root, kernel_has_landlock, system_program};

const SECRET: &str = "gate-secret-7c41";
const READ_HINT: &str = "[sandbox: a path outside the command's grants was refused; `--sandbox-read PATH` (or `--allow PATH`) lets commands read it]";
const WRITE_HINT: &str = "[sandbox: a write outside the read-write directories was refused; `--sandbox-write PATH` (or `--allow PATH:rw`) lets commands write there]";

/// The command's reply, every text item joined.
fn run(server: &mut Server, command: &str) -> String {
    let response = server.call("execute_command", json!({"command": command, "timeout": 60}));
    let content = response.result()["content"].as_array().cloned().unwrap_or_default();
    content.iter().filter_map(|item| item["text"].as_str()).collect::<Vec<_>>().join("\n")
}

fn landlock() -> bool {
    require("Landlock", kernel_has_landlock())
}

/// A test directory with `root/` (allowed read-write), `ro/` (allowed read-only), `outside/`
/// (not allowed, holding a secret) and a fake home `home/` holding credentials and caches.
fn gate_env() -> TestEnv {
    TestEnv::new(
        &["root/a", "root/b", "ro", "outside", "home/.npm", "home/.cargo/registry", "home/.ssh"],
        &[
            ("root/a/f", "moved\n"),
            ("root/a/g", "linked\n"),
            ("ro/keep", "kept\n"),
            ("outside/secret", SECRET),
            ("home/.ssh/id_ed25519", SECRET),
            ("home/.netrc", SECRET),
            ("home/.cargo/credentials.toml", SECRET),
        ],
    )
}

/// The server over `env`'s `root` (read-write) and `ro` (read-only), with the fake home, the
/// seccomp fallback when `seccomp`, and `flags`.
fn start(env: &TestEnv, seccomp: bool, flags: &[&str]) -> Server {
    let mut cmd = replay_command();
    cmd.args(["--mcp-server", "--allow", &format!("{}:rw", path_str(&env.root()))]);
    cmd.args(["--allow", &format!("{}:ro", path_str(&env.path("ro")))]);
    cmd.args(flags);
    let home = env.path("home");
    cmd.env("HOME", &home).env("CARGO_HOME", home.join(".cargo"));
    // The toolchains stay the machine's: rustup's by its home, not the fake one.
    if let Some(rustup) = real_home_dir("RUSTUP_HOME", ".rustup") {
        cmd.env("RUSTUP_HOME", rustup);
    }
    if seccomp {
        cmd.env("REPLAY_COMMAND_ISOLATION", "seccomp");
    }
    let mut server = Server::from_command(cmd);
    server.initialize("2025-06-18");
    server
}

// ---------------------------------------------------------------------------------------------
// A cache that cannot be overlaid, and the host's /dev/shm
// ---------------------------------------------------------------------------------------------

/// A file in the host's `/dev/shm`, removed on drop: what other programs share there.
struct HostShm(PathBuf);

impl HostShm {
    fn plant() -> Option<HostShm> {
        let path = Path::new("/dev/shm").join(format!("replay-gate-{}", std::process::id()));
        std::fs::write(&path, SECRET).ok()?;
        Some(HostShm(path))
    }
}

impl Drop for HostShm {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The server with `GOCACHE` (a cache the rules grant write to) on /proc: overlayfs refuses
/// a lower layer there (its dentries revalidate, as NFS's do).
fn start_with_unoverlayable_cache(env: &TestEnv, seccomp: bool) -> Server {
    let mut cmd = replay_command();
    cmd.args(["--mcp-server", "--allow", &format!("{}:rw", path_str(&env.root()))]);
    cmd.env("HOME", env.path("home")).env("GOCACHE", "/proc/sys/kernel");
    if seccomp {
        cmd.env("REPLAY_COMMAND_ISOLATION", "seccomp");
    }
    let mut server = Server::from_command(cmd);
    server.initialize("2025-06-18");
    server
}

/// One cache that cannot be overlaid costs that cache its copy, not the commands their mount
/// namespace; and the host's /dev/shm is never theirs, with the namespace or without.
/// See: issue #23 (the namespace was dropped whole, and the seccomp fallback granted the
/// host's /dev/shm).
#[test]
fn a_cache_that_cannot_be_overlaid_keeps_the_namespace_and_shm_private() {
    if !landlock() || !require("a host /dev/shm", Path::new("/dev/shm").is_dir()) {
        return;
    }
    let Some(planted) = HostShm::plant() else {
        require("a writable /dev/shm", false);
        return;
    };
    let name = planted.0.file_name().expect("a name").to_string_lossy().into_owned();
    let env = gate_env();
    let mut server = start_with_unoverlayable_cache(&env, false);
    let listed = server.call("list_allowed_directories", json!({}));
    assert!(!listed.line.contains("no mount namespace"), "{}", listed.line);
    let out = run(&mut server, "ls /dev/shm; cat /proc/sys/kernel/ostype; echo x > /dev/shm/own && cat /dev/shm/own; echo END");
    assert!(out.contains("END") && !out.contains(&name), "the host's /dev/shm:\n{out}");
    assert!(out.contains("Linux") && out.contains("x\n"), "{out}");
    drop(server);
    let mut server = start_with_unoverlayable_cache(&env, true);
    // /dev lists (Landlock's ReadDir holds beneath it), but nothing in the host's /dev/shm
    // opens.
    let out =
        run(&mut server, &format!("cat /dev/shm/{name}; echo x > /dev/shm/{name}-own; echo END"));
    assert!(out.contains("END") && !out.contains(SECRET), "{out}");
    assert!(!Path::new(&format!("/dev/shm/{name}-own")).exists(), "{out}");
}

/// The caches' copies (`<TMPDIR>.caches`) go with the server: emptied when it exits.
/// See: issue #23 (they outlived it, and the next server removed only those of dead pids).
#[test]
fn the_caches_copies_are_removed_when_the_server_exits() {
    if !landlock() {
        return;
    }
    let env = gate_env();
    let mut server = start(&env, false, &[]);
    let out = run(
        &mut server,
        "mkdir -p ~/.npm/d/e && echo cached > ~/.npm/d/e/entry && echo \"$TMPDIR\"",
    );
    assert!(out.contains("[exit code: 0]"), "{out}");
    let tmp = out.lines().next().expect("the TMPDIR").to_string();
    let layers = PathBuf::from(format!("{tmp}.caches"));
    // Commands reach the copies through the overlays only, never their layers.
    let out = run(
        &mut server,
        "ls -R \"$TMPDIR.caches\"; rm -rf \"$TMPDIR.caches\"/*; cat ~/.npm/d/e/entry; echo END",
    );
    assert!(out.contains("cached\nEND") && !out.contains("upper"), "{out}");
    let (_, status) = server.finish();
    assert!(status.success(), "{status:?}");
    let left: Vec<_> =
        std::fs::read_dir(&layers).map(|d| d.flatten().collect()).unwrap_or_default();
    assert!(left.is_empty(), "{} holds {left:?}", layers.display());
    assert!(!env.exists("home/.npm/d"), "the real cache changed");
}

/// `$NAME`, or `~/REL` in the test process's own home, when it exists.
fn real_home_dir(name: &str, rel: &str) -> Option<PathBuf> {
    let dir = std::env::var_os(name)
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(rel)))?;
    dir.is_dir().then_some(dir)
}

fn program(name: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(name).is_file()))
}

// ---------------------------------------------------------------------------------------------
// Renames and hard links
// ---------------------------------------------------------------------------------------------

#[test]
fn git_init_add_commit_mv_in_a_read_write_root() {
    if !landlock() || !require("git", program("git")) {
        return;
    }
    let env = gate_env();
    let mut server = start(&env, false, &[]);
    let out = run(
        &mut server,
        "git init -q . && git add -A && git -c user.name=t -c user.email=t@t commit -qm one \
         && mkdir d && git mv a/f d/f && git -c user.name=t -c user.email=t@t commit -qm two \
         && git status --short && echo DONE",
    );
    assert!(out.contains("DONE") && out.contains("[exit code: 0]"), "{out}");
    assert_eq!(env.read_string("root/d/f"), "moved\n");
    assert!(!env.exists("root/a/f"));
}

/// Links and renames from one directory to another inside a read-write root work; into a
/// read-only root, and to or from outside, they are refused and nothing changes.
fn rename_rows(seccomp: bool) {
    if !landlock() || !require("python3", system_program("python3").is_some()) {
        return;
    }
    let env = gate_env();
    let mut server = start(&env, seccomp, &[]);
    let rename =
        |from: &str, to: &str| format!("python3 -c 'import os; os.rename(\"{from}\", \"{to}\")'");
    let out = run(&mut server, &format!("ln a/g b/g && {} && echo DONE", rename("a/f", "b/f")));
    assert!(out.contains("DONE"), "{out}");
    assert_eq!(env.read_string("root/b/g"), "linked\n");
    assert_eq!(env.read_string("root/b/f"), "moved\n");

    let ro = path_str(&env.path("ro"));
    let outside = path_str(&env.path("outside"));
    for command in [
        rename("b/f", &format!("{ro}/f")),
        rename("b/f", &format!("{outside}/f")),
        format!("ln b/g {ro}/g"),
        format!("ln b/g {outside}/g"),
        // A hard link to a file outside, made inside the root.
        format!("ln {outside}/secret b/secret"),
        rename(&format!("{outside}/secret"), "b/secret"),
        rename(&format!("{ro}/keep"), "b/keep"),
    ] {
        let out = run(&mut server, &format!("{command} && echo DONE"));
        assert!(!out.contains("DONE"), "{command} was let through:\n{out}");
        assert!(!out.contains(SECRET), "{command}:\n{out}");
    }
    assert_eq!(env.names("ro"), ["keep"]);
    assert_eq!(env.names("outside"), ["secret"]);
    assert_eq!(env.read_string("root/b/f"), "moved\n");
    assert!(!env.exists("root/b/secret") && !env.exists("root/b/keep"));
}

#[test]
fn links_and_renames_between_directories() {
    rename_rows(false);
}

#[test]
fn links_and_renames_between_directories_seccomp() {
    rename_rows(true);
}

// ---------------------------------------------------------------------------------------------
// Toolchains with default flags, credentials out
// ---------------------------------------------------------------------------------------------

/// The credentials the fake home holds, read by `cat` in the same command as the toolchain.
const CAT_SECRETS: &str = "; cat ~/.ssh/id_ed25519 ~/.netrc ~/.cargo/credentials.toml";

#[track_caller]
fn assert_no_secret(out: &str) {
    assert!(!out.contains(SECRET), "a credential reached a command:\n{out}");
    assert_eq!(out.matches("Permission denied").count(), 3, "{out}");
}

#[test]
fn cargo_builds_a_crate_with_default_flags() {
    if !landlock() || !require("cargo", program("cargo")) {
        return;
    }
    let env = gate_env();
    let mut server = start(&env, false, &[]);
    let out = run(
        &mut server,
        &format!(
            "cargo new -q --vcs none hello && cd hello && CARGO_TARGET_DIR=$PWD/target cargo build \
             -q --offline && ./target/debug/hello{CAT_SECRETS}"
        ),
    );
    assert!(out.contains("Hello, world!"), "{out}");
    assert_no_secret(&out);
}

#[test]
fn python_through_the_pyenv_shim() {
    let Some(pyenv) = real_home_dir("PYENV_ROOT", ".pyenv") else {
        require("pyenv", false);
        return;
    };
    if !landlock() {
        return;
    }
    let env = gate_env();
    env.write("root/hello.py", "import sys\nprint('python', sys.version_info[0])\n");
    let mut server = start(&env, false, &[]);
    let shim = path_str(&pyenv.join("shims/python3"));
    let out = run(&mut server, &format!("{shim} hello.py{CAT_SECRETS}"));
    assert!(out.contains("python 3"), "{out}");
    assert_no_secret(&out);
}

#[test]
fn npm_test_of_a_tiny_package() {
    if !landlock() || !require("node and npm", program("node") && program("npm")) {
        return;
    }
    let env = gate_env();
    env.write(
        "root/package.json",
        r#"{"name": "tiny", "version": "1.0.0", "scripts": {"test": "node test.js"}}"#,
    );
    env.write("root/test.js", "console.log('tiny ' + (1 + 1));\n");
    let mut server = start(&env, false, &[]);
    let out = run(&mut server, &format!("NPM_CONFIG_UPDATE_NOTIFIER=false npm test{CAT_SECRETS}"));
    assert!(out.contains("tiny 2"), "{out}");
    assert_no_secret(&out);
}

// ---------------------------------------------------------------------------------------------
// Caches: written by commands, never by the file tools; nothing through them
// ---------------------------------------------------------------------------------------------

#[test]
fn caches_are_commands_only_and_lead_nowhere_else() {
    if !landlock() {
        return;
    }
    let env = gate_env();
    let mut server = start(&env, false, &[]);
    let out = run(&mut server, "echo cached > ~/.npm/entry && cat ~/.npm/entry");
    assert!(out.contains("cached"), "{out}");
    let npm = path_str(&env.path("home/.npm"));
    server.call_err("write_file", json!({"path": format!("{npm}/tool"), "content": "x"}), -32001);
    assert!(!env.exists("home/.npm/tool"));
    // A symlink planted in the cache leads nowhere the command could not go already.
    let outside = path_str(&env.path("outside"));
    let out = run(
        &mut server,
        &format!(
            "ln -s ~/.ssh/id_ed25519 ~/.npm/key; ln -s {outside} ~/.npm/out; cat ~/.npm/key; \
             cat ~/.npm/out/secret; echo x > ~/.npm/out/planted; ln ~/.ssh/id_ed25519 ~/.npm/hard; \
             mv ~/.npm/entry a/entry; echo END"
        ),
    );
    assert!(out.contains("END") && !out.contains(SECRET), "{out}");
    assert!(!env.exists("outside/planted") && !env.exists("home/.npm/hard"), "{out}");
}

#[test]
fn strict_drops_the_grants_and_sandbox_write_adds_one() {
    if !landlock() {
        return;
    }
    let env = gate_env();
    let mut server = start(&env, false, &["--sandbox-strict"]);
    let out = run(&mut server, "echo x > ~/.npm/entry && echo DONE");
    assert!(!out.contains("DONE") && !env.exists("home/.npm/entry"), "{out}");
    drop(server);
    let outside = path_str(&env.path("outside"));
    let mut server = start(&env, false, &["--sandbox-write", &outside]);
    let out = run(&mut server, &format!("echo x > {outside}/written && echo DONE"));
    assert!(out.contains("DONE") && env.exists("outside/written"), "{out}");
    // Commands only: the file tools still refuse it.
    server.call_err("read_file", json!({"path": format!("{outside}/secret")}), -32001);
}

#[test]
fn replay_sandbox_prints_the_grants() {
    let env = gate_env();
    env.mkdir("home/.cargo/bin");
    let sandbox = |flags: &[&str]| {
        let mut cmd = replay_command();
        cmd.arg("sandbox").args(flags).arg(env.root());
        cmd.env("HOME", env.path("home")).env_remove("CARGO_HOME");
        let out = run_cli(cmd, "");
        assert!(out.status.success(), "{}", out.stderr);
        out.stdout
    };
    let home = path_str(&env.path("home"));
    let out = sandbox(&[]);
    let root = path_str(&env.root());
    assert!(out.contains(&format!("read-write  {root}  (--allow, read-write)")), "{out}");
    assert!(out.contains(&format!("read+exec   {home}/.cargo/bin  (cargo's programs")), "{out}");
    assert!(out.contains(&format!("read-write  {home}/.npm  (npm's cache)")), "{out}");
    assert!(out.contains("read-write  /dev/null  (the minimal /dev)"), "{out}");
    assert!(out.contains("stays out") && out.contains("~/.ssh"), "{out}");
    for line in out.lines().filter(|l| l.contains(&home)) {
        assert!(!line.contains("/.ssh") && !line.contains("credentials.toml"), "{line}");
    }
    let out = sandbox(&["--sandbox-strict"]);
    assert!(!out.contains(&format!("{home}/.cargo/bin")), "{out}");
    let outside = path_str(&env.path("outside"));
    let out = sandbox(&["--sandbox-write", &outside]);
    assert!(out.contains(&format!("read-write  {outside}  (--sandbox-write)")), "{out}");
}

// ---------------------------------------------------------------------------------------------
// The refusal hint
// ---------------------------------------------------------------------------------------------

#[test]
fn a_sandbox_refusal_ends_with_the_flag_and_an_ordinary_failure_does_not() {
    if !landlock() {
        return;
    }
    let env = gate_env();
    let mut server = start(&env, false, &[]);
    let outside = path_str(&env.path("outside"));
    let out = run(&mut server, &format!("cat {outside}/secret"));
    assert!(out.ends_with(READ_HINT), "{out}");
    assert!(!out.contains(SECRET));
    let out = run(&mut server, &format!("echo x > {}/new", path_str(&env.path("ro"))));
    assert!(out.ends_with(WRITE_HINT), "{out}");
    for ordinary in ["ls no-such-file", "exit 3", "chmod 000 a/g && cat a/g; false"] {
        let out = run(&mut server, ordinary);
        assert!(!out.contains("[sandbox:"), "{ordinary}:\n{out}");
    }
}

// ---------------------------------------------------------------------------------------------
// The minimal /dev
// ---------------------------------------------------------------------------------------------

/// A loop device attached to a file; detached on drop.
struct Loop(String);

impl Loop {
    #[expect(clippy::disallowed_methods, reason = "attaching a loop device for the test")]
    fn attach(file: &Path) -> Option<Loop> {
        let losetup = system_program("losetup")?;
        let out = Command::new(losetup).args(["-f", "--show"]).arg(file).output().ok()?;
        let name = String::from_utf8_lossy(&out.stdout).trim().to_string();
        (out.status.success() && name.starts_with("/dev/loop")).then_some(Loop(name))
    }
}

impl Drop for Loop {
    #[expect(clippy::disallowed_methods, reason = "detaching the test's loop device")]
    fn drop(&mut self) {
        if let Some(losetup) = system_program("losetup") {
            let _ = Command::new(losetup).args(["-d", &self.0]).status();
        }
    }
}

fn device_rows(seccomp: bool) {
    if !landlock() || !require("root and losetup", is_root() && system_program("losetup").is_some())
    {
        return;
    }
    let env = gate_env();
    env.write("outside/disk", SECRET.repeat(512));
    let attached = Loop::attach(&env.path("outside/disk"));
    if !require("a free loop device", attached.is_some()) {
        return;
    }
    let device = attached.as_ref().map(|l| l.0.clone()).unwrap_or_default();
    let mut server = start(&env, seccomp, &[]);
    let out = run(
        &mut server,
        &format!(
            "head -c 64 {device}; for d in /dev/loop* /dev/sd* /dev/vd* /dev/nvme* /dev/input/* \
             /dev/snd/* /dev/video* /dev/mem /dev/tty0; do [ -e $d ] && head -c 1 $d >/dev/null \
             2>&1 && echo OPENED $d; done; echo END"
        ),
    );
    assert!(out.contains("END") && !out.contains(SECRET), "{out}");
    assert!(!out.contains("OPENED"), "{out}");
    // A node made by number, inside the read-write root, opens nothing either.
    let (major, minor) = {
        use std::os::unix::fs::MetadataExt;
        let rdev = std::fs::metadata(&device).map(|m| m.rdev()).unwrap_or(0);
        (libc::major(rdev), libc::minor(rdev))
    };
    let out =
        run(&mut server, &format!("mknod b/disk b {major} {minor}; head -c 64 b/disk; echo END"));
    assert!(out.contains("END") && !out.contains(SECRET), "{out}");
    // One put in the root from outside (by root) stays a file: the namespace's mounts are
    // nodev. The seccomp fallback has no namespace (docs/guide.md: its limit).
    if !seccomp {
        let node = CString::new(path_str(&env.path("root/b/placed"))).unwrap_or_default();
        let dev = libc::makedev(major, minor);
        // SAFETY: mknod with a NUL-terminated path.
        let made = unsafe { libc::mknod(node.as_ptr(), libc::S_IFBLK | 0o644, dev) };
        assert_eq!(made, 0, "mknod: {}", std::io::Error::last_os_error());
        let out = run(&mut server, "head -c 64 b/placed; echo END");
        assert!(out.contains("END") && !out.contains(SECRET), "{out}");
    }
    // The nodes commands use still work.
    let out = run(
        &mut server,
        "echo x > /dev/null && head -c 5 /dev/zero | wc -c && head -c 5 /dev/urandom | wc -c \
         && ls /dev/fd/ > /dev/null && echo err > /dev/stderr && echo OK",
    );
    assert!(out.contains("OK") && out.contains("5\n5\n"), "{out}");
}

#[test]
fn block_devices_are_unreadable_and_dev_null_works() {
    device_rows(false);
}

#[test]
fn block_devices_are_unreadable_and_dev_null_works_seccomp() {
    device_rows(true);
}
