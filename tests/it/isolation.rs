//! What commands may change besides file contents: modes, owners, times, extended attributes,
//! file capabilities and mounts, outside the allowed directories and under read-only roots; and
//! each server's private TMPDIR. See: issue #13, items 1 and 6.
//!
//! Every row runs through both layers that keep metadata read-only: the mount namespace, and
//! the seccomp fallback that `REPLAY_COMMAND_ISOLATION=seccomp` forces. When the tests run as
//! root, the rows run again with the server started as an unprivileged user (`setpriv`). What a
//! row needs (Landlock, root, `setpriv`, `python3`, user namespaces) must be there under
//! `CI=true`; elsewhere a row without it is skipped, saying so.
//!
//! A refused change is checked from the test process too: mode, owner, times (`ctime` moves on
//! any metadata change) and extended attributes stay as they were.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use crate::harness::{
    path_str, replay_command, require, Content, Response, Server, TestEnv, ToolResult,
};
use crate::roots::{answer_roots, initialize_with_roots};

/// Which layer keeps metadata read-only for commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Layer {
    /// The server's read-only mount namespace: changes inside read-write roots still work.
    Namespace,
    /// The fallback without a namespace: a seccomp filter refuses every metadata change.
    Seccomp,
}

/// Who the server runs as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum User {
    /// The user running the tests.
    Invoker,
    /// An unprivileged user: uid and gid 65534 through `setpriv` when the tests run as root,
    /// else the invoker, who is unprivileged already.
    Unprivileged,
}

const NOBODY: u32 = 65534;

// ---------------------------------------------------------------------------------------------
// What the rows need
// ---------------------------------------------------------------------------------------------

pub(crate) fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// The uid and gid the server runs as.
pub(crate) fn ids(user: User) -> (u32, u32) {
    match user {
        User::Unprivileged if is_root() => (NOBODY, NOBODY),
        _ => (nix::unistd::geteuid().as_raw(), nix::unistd::getegid().as_raw()),
    }
}

/// An executable `name` from the usual system directories: the tests do not rely on `PATH`.
pub(crate) fn system_program(name: &str) -> Option<PathBuf> {
    ["/usr/bin", "/bin", "/usr/sbin", "/sbin"]
        .iter()
        .map(|dir| Path::new(dir).join(name))
        .find(|path| path.exists())
}

pub(crate) fn kernel_has_landlock() -> bool {
    use landlock::{Access, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr, ABI};
    Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(ABI::V1))
        .and_then(|ruleset| ruleset.create())
        .is_ok()
}

/// Whether `user` can make a user and mount namespace here (the namespace layer needs it; as
/// root, a mount namespace alone).
#[expect(clippy::disallowed_methods, reason = "probing the kernel with unshare(1)")]
pub(crate) fn namespaces_work(user: User) -> bool {
    let Some(unshare) = system_program("unshare") else { return false };
    let mut cmd = match privileges(user) {
        Some(mut setpriv) => {
            setpriv.arg(&unshare);
            setpriv
        }
        None => Command::new(&unshare),
    };
    cmd.args(["-U", "-r", "-m", "true"]);
    cmd.status().is_ok_and(|s| s.success())
}

/// `setpriv ... --` when `user` needs another uid than the invoker's, else `None`.
pub(crate) fn privileges(user: User) -> Option<Command> {
    privileges_with_groups(user, "--clear-groups")
}

/// `privileges`, with `groups` as setpriv's supplementary-group option.
#[expect(clippy::disallowed_methods, reason = "starting the server as an unprivileged user")]
fn privileges_with_groups(user: User, groups: &str) -> Option<Command> {
    if user == User::Invoker || !is_root() {
        return None;
    }
    let mut cmd = Command::new(system_program("setpriv")?);
    cmd.args(["--reuid=65534", "--regid=65534", groups, "--"]);
    Some(cmd)
}

/// Whether the rows for `layer` and `user` can run here; see `require`.
fn can_run(layer: Layer, user: User) -> bool {
    if !require("Landlock", kernel_has_landlock()) {
        return false;
    }
    if user == User::Unprivileged
        && is_root()
        && !require("setpriv", system_program("setpriv").is_some())
    {
        return false;
    }
    layer == Layer::Seccomp || require("user namespaces", namespaces_work(user))
}

// ---------------------------------------------------------------------------------------------
// The server
// ---------------------------------------------------------------------------------------------

/// `replay --mcp-server ARGS` as `user`, with `layer` forced, initialized unless `roots` is set
/// (then the caller runs the handshake).
fn spawn(layer: Layer, user: User, args: &[String]) -> Server {
    let mut cmd = match privileges(user) {
        Some(mut setpriv) => {
            setpriv.arg(crate::harness::BIN);
            setpriv
        }
        None => replay_command(),
    };
    cmd.arg("--mcp-server").args(args);
    if layer == Layer::Seccomp {
        cmd.env("REPLAY_COMMAND_ISOLATION", "seccomp");
    }
    Server::from_command(cmd)
}

fn start(layer: Layer, user: User, args: &[String]) -> Server {
    let mut server = spawn(layer, user, args);
    server.initialize("2025-06-18");
    server
}

/// `--allow` for each `(rel, access)` of `env`.
fn allow(env: &TestEnv, roots: &[(&str, &str)]) -> Vec<String> {
    roots
        .iter()
        .flat_map(|(rel, access)| ["--allow".into(), format!("{}:{access}", env.p(rel))])
        .collect()
}

/// A command's reply: exit status as the footer says it, stdout and stderr.
#[derive(Debug)]
struct Run {
    ok: bool,
    out: String,
    err: String,
}

impl Run {
    fn decode(response: &Response) -> Run {
        let result: ToolResult = serde_json::from_value(response.result().clone())
            .unwrap_or_else(|e| panic!("malformed tools/call result ({e}): {}", response.line));
        let mut texts = result.content.into_iter().map(|item| match item {
            Content::Text { text } => text,
            other => panic!("expected text content, got {other:?}"),
        });
        let out = texts.next().unwrap_or_default();
        let err = texts.next().unwrap_or_default();
        let ok = out.ends_with("[exit code: 0]") && result.is_error.is_none();
        let out = out.trim_end_matches("[exit code: 0]").to_string();
        Run { ok, out, err }
    }
}

fn sh(server: &mut Server, command: &str) -> Run {
    Run::decode(&server.call("execute_command", json!({"command": command})))
}

#[track_caller]
fn sh_ok(server: &mut Server, command: &str) -> String {
    let run = sh(server, command);
    assert!(run.ok, "{command:?} failed: {run:?}\nserver stderr: {}", server.stderr());
    run.out
}

#[track_caller]
fn sh_fails(server: &mut Server, command: &str) -> Run {
    let run = sh(server, command);
    assert!(!run.ok, "{command:?} succeeded: {run:?}");
    run
}

/// Single-quoted for the shell.
fn quoted(path: &Path) -> String {
    format!("'{}'", path_str(path).replace('\'', r"'\''"))
}

// ---------------------------------------------------------------------------------------------
// Metadata, as the test process sees it
// ---------------------------------------------------------------------------------------------

/// Everything a metadata change could move.
#[derive(Debug, PartialEq, Eq)]
struct Meta {
    mode: u32,
    uid: u32,
    gid: u32,
    mtime: (i64, i64),
    ctime: (i64, i64),
    user_xattr: Option<Vec<u8>>,
    capability: Option<Vec<u8>>,
}

fn meta(path: &Path) -> Meta {
    let m = std::fs::symlink_metadata(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Meta {
        mode: m.mode(),
        uid: m.uid(),
        gid: m.gid(),
        mtime: (m.mtime(), m.mtime_nsec()),
        ctime: (m.ctime(), m.ctime_nsec()),
        user_xattr: xattr(path, "user.replay"),
        capability: xattr(path, "security.capability"),
    }
}

/// The value of the extended attribute `name` of `path` (not following a symlink), if set.
fn xattr(path: &Path, name: &str) -> Option<Vec<u8>> {
    let c_path = CString::new(path.as_os_str().as_bytes()).expect("no NUL in test paths");
    let c_name = CString::new(name).expect("no NUL in the name");
    let mut buf = vec![0u8; 1024];
    // SAFETY: both strings are NUL-terminated and live across the call; `buf` is writable for
    // `buf.len()` bytes, which is what the kernel is told.
    let n = unsafe {
        libc::lgetxattr(c_path.as_ptr(), c_name.as_ptr(), buf.as_mut_ptr().cast(), buf.len())
    };
    let n = usize::try_from(n).ok()?;
    buf.truncate(n);
    Some(buf)
}

/// Hands the tree to `uid` and `gid`, so that without a sandbox the server's user could change
/// everything in it, outside files included.
pub(crate) fn give(env: &TestEnv, (uid, gid): (u32, u32)) {
    fn walk(path: &Path, uid: u32, gid: u32) {
        std::os::unix::fs::lchown(path, Some(uid), Some(gid))
            .unwrap_or_else(|e| panic!("chown {}: {e}", path.display()));
        if path.is_dir() && !path.is_symlink() {
            for entry in std::fs::read_dir(path).expect("read_dir") {
                walk(&entry.expect("entry").path(), uid, gid);
            }
        }
    }
    walk(env.base(), uid, gid);
}

// ---------------------------------------------------------------------------------------------
// Item 1: metadata outside and under read-only roots
// ---------------------------------------------------------------------------------------------

/// `root` (read-write) with a file and a directory, `ro` (read-only) with a file, and outside
/// both a file and a directory.
fn metadata_env(user: User) -> TestEnv {
    let env = TestEnv::new(
        &["root/dir", "ro", "outside/dir"],
        &[("root/file.txt", "rw\n"), ("ro/file.txt", "ro\n"), ("outside/file.txt", "secret\n")],
    );
    give(&env, ids(user));
    env
}

/// The metadata changes each row tries, as shell commands on `{}`.
fn changes(user: User) -> Vec<(&'static str, String)> {
    let (uid, gid) = ids(user);
    let python = system_program("python3").map(|p| path_str(&p)).unwrap_or("python3".into());
    vec![
        ("chmod", "chmod 700 {}".into()),
        ("chown", format!("chown {uid}:{gid} {{}}")),
        ("touch -d", "touch -d 2000-01-01 {}".into()),
        ("touch", "touch {}".into()),
        (
            "setxattr",
            format!("{python} -c 'import os, sys; os.setxattr(sys.argv[1], \"user.replay\", b\"1\")' {{}}"),
        ),
        // Inode flags, through an ioctl (`noatime` needs no capability).
        ("chattr", "chattr +A {}".into()),
        // A user namespace of the command's own brings it no capability over these files.
        ("unshare -Ur chmod", "unshare -U -r chmod 700 {}".into()),
    ]
}

/// What the layer's refusal says.
fn refusal(layer: Layer) -> &'static str {
    match layer {
        Layer::Namespace => "Read-only file system",
        Layer::Seccomp => "Operation not permitted",
    }
}

/// Every change on every place outside the read-write root is refused and leaves the metadata
/// as it was; inside the read-write root they work (namespace) or are refused too (seccomp).
fn metadata_rows(layer: Layer, user: User) {
    if !can_run(layer, user)
        || !require("python3", system_program("python3").is_some())
        || !require("unshare", system_program("unshare").is_some())
        || !require("chattr", system_program("chattr").is_some())
    {
        return;
    }
    let env = metadata_env(user);
    let mut server = start(layer, user, &allow(&env, &[("root", "rw"), ("ro", "ro")]));
    let s = &mut server;
    let fenced = ["outside/file.txt", "outside/dir", "ro/file.txt", "ro"];
    for (name, template) in changes(user) {
        for rel in fenced {
            let path = env.path(rel);
            let before = meta(&path);
            let command = template.replace("{}", &quoted(&path));
            let run = sh(s, &command);
            assert!(!run.ok, "{layer:?}/{user:?}: {name} on {rel} succeeded: {run:?}");
            if name == "chmod" {
                assert!(run.err.contains(refusal(layer)), "{layer:?}: {name} on {rel}: {run:?}");
            }
            assert_eq!(meta(&path), before, "{layer:?}/{user:?}: {name} on {rel} changed it");
        }
    }
    let inside = ["root/file.txt", "root/dir"];
    for (name, template) in changes(user) {
        if name.starts_with("unshare") {
            continue;
        }
        for rel in inside {
            let path = env.path(rel);
            let command = template.replace("{}", &quoted(&path));
            let run = sh(s, &command);
            match layer {
                Layer::Namespace => assert!(run.ok, "{user:?}: {name} on {rel} failed: {run:?}"),
                Layer::Seccomp => {
                    assert!(!run.ok, "{user:?}: {name} on {rel} succeeded under seccomp: {run:?}")
                }
            }
        }
    }
    let file = env.path("root/file.txt");
    match layer {
        Layer::Namespace => {
            let after = meta(&file);
            assert_eq!(after.mode & 0o7777, 0o700, "chmod in the rw root");
            assert_eq!(after.user_xattr.as_deref(), Some(&b"1"[..]), "setxattr in the rw root");
            assert_eq!(
                sh_ok(s, "printf '#!/bin/sh\\necho ran\\n' > script.sh && chmod +x script.sh && ./script.sh"),
                "ran\n"
            );
        }
        Layer::Seccomp => {
            let run =
                sh_fails(s, "printf '#!/bin/sh\\necho ran\\n' > script.sh && chmod +x script.sh");
            assert!(run.err.contains("Operation not permitted"), "{run:?}");
            assert!(env.exists("root/script.sh"), "writing files still works under seccomp");
        }
    }
    // Mounts: no remount makes a read-only place writable, no bind mount carries a root out.
    let outside = quoted(&env.path("outside"));
    let root = quoted(&env.path("root"));
    let before = env.snapshot();
    let meta_before = meta(&env.path("outside/file.txt"));
    for command in [
        "mount -o remount,rw /".to_string(),
        format!("mount -o remount,rw,bind {outside}"),
        format!("mount --bind {root} {outside}/dir"),
        format!(
            "unshare -U -r -m sh -c 'mount --bind {root} {outside}/dir && touch {outside}/dir/x'"
        ),
    ] {
        sh_fails(s, &command);
        sh_fails(s, &format!("touch {outside}/new"));
        sh_fails(s, &format!("chmod 600 {outside}/file.txt"));
    }
    assert_eq!(before.diff(&env.snapshot()), "", "{layer:?}/{user:?}: mounts changed files");
    assert_eq!(meta(&env.path("outside/file.txt")), meta_before);
    // No device node, no file given to another user, no hard link from outside into the
    // read-write root.
    let ro = quoted(&env.path("ro"));
    let python = system_program("python3").map(|p| path_str(&p)).unwrap_or("python3".into());
    let rename = format!("{python} -c 'import os, sys; os.rename(sys.argv[1], sys.argv[2])'");
    let before = env.snapshot();
    for command in [
        format!("mknod {root}/disk b 7 0"),
        format!("chown 1234:1234 {root}/file.txt"),
        format!("ln {ro}/file.txt {root}/link"),
        format!("ln {outside}/file.txt {root}/link"),
        format!("{rename} {ro}/file.txt {root}/moved"),
        format!("{rename} {outside}/file.txt {root}/moved"),
    ] {
        sh_fails(s, &command);
    }
    assert_eq!(before.diff(&env.snapshot()), "", "{layer:?}/{user:?}: {root} changed");
    // No capability at all, and no way to gain one by running a program. An ordinary user
    // cannot empty its bounding set without a namespace of its own; no_new_privs is what keeps
    // exec from granting anything then.
    let bounded = ids(user).0 == 0 || layer == Layer::Namespace;
    let status = sh_ok(s, "grep -E '^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs):' /proc/self/status");
    let fields: Vec<(&str, &str)> = status
        .lines()
        .filter_map(|line| line.split_once(':'))
        .map(|(k, v)| (k, v.trim()))
        .collect();
    for (key, value) in &fields {
        if *key == "CapBnd" && !bounded {
            continue;
        }
        let expect = if *key == "NoNewPrivs" { "1" } else { "0000000000000000" };
        assert_eq!(*value, expect, "{layer:?}/{user:?}: {key} of a command\n{status}");
    }
    assert_eq!(fields.len(), 6, "{status}");
}

/// The namespace's mounts stay in it, even where the server's own mounts propagate to their
/// peers (as / does under systemd): the server's mount table never shows them.
#[test]
fn the_namespaces_mounts_never_propagate_out() {
    if !require("root (for a mount namespace with shared propagation)", is_root())
        || !can_run(Layer::Namespace, User::Invoker)
    {
        return;
    }
    let Some(unshare) = system_program("unshare") else {
        require("unshare", false);
        return;
    };
    let env = metadata_env(User::Invoker);
    #[expect(
        clippy::disallowed_methods,
        reason = "the server under test, in a namespace of its own"
    )]
    let mut cmd = Command::new(unshare);
    cmd.args(["--mount", "--propagation", "shared", crate::harness::BIN, "--mcp-server"]);
    cmd.args(allow(&env, &[("root", "rw"), ("ro", "ro")]));
    let mut server = Server::from_command(cmd);
    server.initialize("2025-06-18");
    let mounts =
        std::fs::read_to_string(format!("/proc/{}/mountinfo", server.pid())).expect("mountinfo");
    assert!(mounts.contains(" shared:"), "the server's mounts are not shared:\n{mounts}");
    assert!(!mounts.contains(&path_str(env.base())), "mounts leaked to the server:\n{mounts}");
    let run =
        sh_fails(&mut server, &format!("chmod 600 {}", quoted(&env.path("outside/file.txt"))));
    assert!(run.err.contains("Read-only file system"), "{run:?}");
}

#[test]
fn metadata_is_read_only_outside_rw_roots_namespace() {
    metadata_rows(Layer::Namespace, User::Invoker);
}

#[test]
fn metadata_is_read_only_outside_rw_roots_namespace_unprivileged() {
    metadata_rows(Layer::Namespace, User::Unprivileged);
}

#[test]
fn metadata_is_read_only_everywhere_seccomp() {
    metadata_rows(Layer::Seccomp, User::Invoker);
}

#[test]
fn metadata_is_read_only_everywhere_seccomp_unprivileged() {
    metadata_rows(Layer::Seccomp, User::Unprivileged);
}

/// As root, `setcap` on a binary outside (or inside) is refused: commands hold no capability.
fn setcap_rows(layer: Layer) {
    if !require("root", is_root()) || !can_run(layer, User::Invoker) {
        return;
    }
    let Some(setcap) = system_program("setcap") else {
        require("setcap", false);
        return;
    };
    let env = metadata_env(User::Invoker);
    for rel in ["outside/true", "root/true"] {
        std::fs::copy("/bin/true", env.path(rel)).expect("copy /bin/true");
    }
    let mut server = start(layer, User::Invoker, &allow(&env, &[("root", "rw"), ("ro", "ro")]));
    for rel in ["outside/true", "root/true"] {
        let path = env.path(rel);
        let before = meta(&path);
        sh_fails(&mut server, &format!("{} cap_net_raw+ep {}", path_str(&setcap), quoted(&path)));
        assert_eq!(meta(&path), before, "{layer:?}: setcap on {rel}");
    }
}

#[test]
fn setcap_is_refused_to_commands_namespace() {
    setcap_rows(Layer::Namespace);
}

#[test]
fn setcap_is_refused_to_commands_seccomp() {
    setcap_rows(Layer::Seccomp);
}

/// A read-only root inside a read-write one is read-only to commands too: the namespace binds
/// it read-only over the read-write root (Landlock alone could not: its rights add up).
fn nested_rows(user: User) {
    if !can_run(Layer::Namespace, user) {
        return;
    }
    let env = TestEnv::new(&["root/inner"], &[("root/inner/file.txt", "inner\n")]);
    give(&env, ids(user));
    let args = allow(&env, &[("root", "rw"), ("root/inner", "ro")]);
    let mut server = start(Layer::Namespace, user, &args);
    let s = &mut server;
    let inner = quoted(&env.path("root/inner"));
    let before = env.snapshot();
    let meta_before = meta(&env.path("root/inner/file.txt"));
    for command in [
        format!("echo more >> {inner}/file.txt"),
        format!("touch {inner}/new"),
        format!("rm {inner}/file.txt"),
        format!("chmod 600 {inner}/file.txt"),
        format!("touch -d 2000-01-01 {inner}/file.txt"),
    ] {
        let run = sh_fails(s, &command);
        assert!(run.err.contains("Read-only file system"), "{command}: {run:?}");
    }
    assert_eq!(before.diff(&env.snapshot()), "", "{user:?}: the nested read-only root changed");
    assert_eq!(meta(&env.path("root/inner/file.txt")), meta_before);
    assert_eq!(sh_ok(s, "echo fine > outer.txt && cat outer.txt"), "fine\n");
}

#[test]
fn a_ro_root_nested_in_a_rw_root_is_read_only_to_commands() {
    nested_rows(User::Invoker);
}

#[test]
fn a_ro_root_nested_in_a_rw_root_is_read_only_to_commands_unprivileged() {
    nested_rows(User::Unprivileged);
}

/// A server started without directories makes its namespace at start and its binds when the
/// client's roots arrive: the same refusals, the same work inside.
fn deferred_rows(user: User) {
    if !can_run(Layer::Namespace, user) {
        return;
    }
    let env = metadata_env(user);
    let mut server = spawn(Layer::Namespace, user, &[]);
    initialize_with_roots(&mut server);
    answer_roots(&mut server, &[env.p("root")]);
    let s = &mut server;
    let listed = s.call_text("list_allowed_directories", json!({}));
    assert!(listed.contains(&env.p("root")) && !listed.contains("[sandbox:"), "{listed}");
    let outside = env.path("outside/file.txt");
    let before = meta(&outside);
    let run = sh_fails(s, &format!("chmod 600 {}", quoted(&outside)));
    assert!(run.err.contains("Read-only file system"), "{run:?}");
    sh_fails(s, &format!("touch -d 2000-01-01 {}", quoted(&outside)));
    assert_eq!(meta(&outside), before);
    assert_eq!(
        sh_ok(s, "printf '#!/bin/sh\\necho ran\\n' > s.sh && chmod +x s.sh && ./s.sh"),
        "ran\n"
    );
    assert_eq!(
        sh_ok(s, "echo t > \"$TMPDIR/t\" && chmod 600 \"$TMPDIR/t\" && cat \"$TMPDIR/t\""),
        "t\n"
    );
    let caps = sh_ok(s, "grep -E '^Cap(Prm|Eff|Bnd):' /proc/self/status");
    assert!(caps.lines().all(|l| l.ends_with("0000000000000000")), "{caps}");
}

#[test]
fn roots_that_arrive_later_get_the_same_isolation() {
    deferred_rows(User::Invoker);
}

#[test]
fn roots_that_arrive_later_get_the_same_isolation_unprivileged() {
    deferred_rows(User::Unprivileged);
}

/// `replay call` confines its command as the server does.
#[test]
fn replay_call_isolates_its_command() {
    if !can_run(Layer::Namespace, User::Invoker) {
        return;
    }
    let env = metadata_env(User::Invoker);
    let outside = env.path("outside/file.txt");
    let before = meta(&outside);
    let args = json!({"command": format!("chmod 600 {}", quoted(&outside))}).to_string();
    let allow = format!("{}:rw", env.p("root"));
    let mut cmd = replay_command();
    cmd.args(["call", "execute_command", &args, "--allow", &allow]);
    let out = crate::harness::run_cli(cmd, "");
    let shown = format!("stdout: {}\nstderr: {}", out.stdout, out.stderr);
    assert_ne!(out.status.code(), Some(0), "{shown}");
    assert!(shown.contains("Read-only file system"), "{shown}");
    assert_eq!(meta(&outside), before);
}

/// Runs `argv` as uid 65534 inside a user namespace where no further user namespace may be
/// made (`max_user_namespaces` 0, set in that namespace only): a kernel that refuses ordinary
/// users namespaces, without changing the machine's setting.
const WITHOUT_USER_NAMESPACES: &str = r#"
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
r, w = os.pipe(); r2, w2 = os.pipe()
pid = os.fork()
if pid == 0:
    if libc.unshare(0x10000000) != 0:
        sys.exit("unshare: " + os.strerror(ctypes.get_errno()))
    os.write(w, b"x"); os.read(r2, 1)
    with open("/proc/sys/user/max_user_namespaces", "w") as f: f.write("0")
    os.setgroups([]); os.setgid(65534); os.setuid(65534)
    os.execv(sys.argv[1], sys.argv[1:])
os.read(r, 1)
for name in ("uid_map", "gid_map"):
    with open(f"/proc/{pid}/{name}", "w") as f: f.write("0 0 65536\n")
os.write(w2, b"x")
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"#;

/// Where the kernel lets no namespace be made, the seccomp filter takes over by itself.
#[test]
fn without_user_namespaces_commands_fall_back_to_seccomp() {
    if !require("root (to limit user namespaces in a namespace of the test's own)", is_root())
        || !require("Landlock", kernel_has_landlock())
    {
        return;
    }
    let Some(python) = system_program("python3") else {
        require("python3", false);
        return;
    };
    let env = metadata_env(User::Unprivileged);
    #[expect(clippy::disallowed_methods, reason = "the server under test, behind a wrapper")]
    let mut cmd = Command::new(python);
    cmd.args(["-c", WITHOUT_USER_NAMESPACES, crate::harness::BIN, "--mcp-server"]);
    cmd.args(allow(&env, &[("root", "rw"), ("ro", "ro")]));
    let mut server = Server::from_command(cmd);
    server.initialize("2025-06-18");
    let s = &mut server;
    let listed = s.call_text("list_allowed_directories", json!({}));
    assert!(listed.contains("[sandbox: no mount namespace (unshare: "), "{listed}");
    for rel in ["outside/file.txt", "ro/file.txt", "root/file.txt"] {
        let path = env.path(rel);
        let before = meta(&path);
        let run = sh_fails(s, &format!("chmod 700 {}", quoted(&path)));
        assert!(run.err.contains("Operation not permitted"), "chmod {rel}: {run:?}");
        sh_fails(s, &format!("touch -d 2000-01-01 {}", quoted(&path)));
        assert_eq!(meta(&path), before, "{rel} changed");
    }
    assert_eq!(sh_ok(s, "echo written > new.txt && cat new.txt"), "written\n");
}

/// The fallback says what it costs, in list_allowed_directories and on stderr.
#[test]
fn the_seccomp_fallback_says_so() {
    if !can_run(Layer::Seccomp, User::Invoker) {
        return;
    }
    let env = TestEnv::new(&[], &[]);
    let mut server = start(Layer::Seccomp, User::Invoker, &allow(&env, &[("root", "rw")]));
    let listed = server.call_text("list_allowed_directories", json!({}));
    let note = listed.lines().find(|l| l.starts_with("[sandbox:")).unwrap_or_default();
    assert!(note.contains("chmod") && note.contains("even in read-write directories"), "{listed}");
    let structured: Value = server.call("list_allowed_directories", json!({})).result().clone();
    assert_eq!(structured["structuredContent"]["sandboxNote"], json!(note), "{structured}");
    let (_, status) = server.finish();
    assert_eq!(status.code(), Some(0));
}

/// The server itself stays out of the commands' namespace: for an ordinary user, whose
/// namespace maps only its own ids, `write_file` still keeps a file's group when it is one of
/// the user's other groups (inside the namespace that group would be 65534, which no chown
/// can give back).
#[test]
fn the_server_stays_out_of_the_commands_namespace() {
    if !require("root (to start the server as another user)", is_root())
        || !can_run(Layer::Namespace, User::Unprivileged)
    {
        return;
    }
    const GROUP: u32 = 100;
    let env = TestEnv::new(&[], &[("root/shared.txt", "old\n")]);
    give(&env, (NOBODY, NOBODY));
    std::os::unix::fs::lchown(env.path("root/shared.txt"), None, Some(GROUP)).expect("chgrp");
    let Some(mut cmd) = privileges_with_groups(User::Unprivileged, &format!("--groups={GROUP}"))
    else {
        require("setpriv", false);
        return;
    };
    cmd.arg(crate::harness::BIN).args([
        "--mcp-server",
        "--allow",
        &format!("{}:rw", env.p("root")),
    ]);
    let mut server = Server::from_command(cmd);
    server.initialize("2025-06-18");
    // The namespace is there: commands see the group as 65534.
    let shown = sh_ok(&mut server, "stat -c %g shared.txt");
    assert_eq!(shown.trim(), NOBODY.to_string(), "the command's view");
    server.call_text("write_file", json!({"path": env.p("root/shared.txt"), "content": "new\n"}));
    assert_eq!(env.read_string("root/shared.txt"), "new\n");
    assert_eq!(meta(&env.path("root/shared.txt")).gid, GROUP, "write_file lost the file's group");
}

// ---------------------------------------------------------------------------------------------
// Item 6: one TMPDIR per server
// ---------------------------------------------------------------------------------------------

/// The TMPDIR a command of `server` gets.
fn tmpdir(server: &mut Server) -> PathBuf {
    PathBuf::from(sh_ok(server, "printf %s \"$TMPDIR\"").trim_end())
}

/// A command of server A can neither read, list, create in nor change server B's TMPDIR; each
/// server's own works.
fn tmpdir_rows(layer: Layer) {
    if !can_run(layer, User::Invoker) {
        return;
    }
    let env = TestEnv::new(&[], &[]);
    let args = allow(&env, &[("root", "rw")]);
    let mut a = start(layer, User::Invoker, &args);
    let mut b = start(layer, User::Invoker, &args);
    let (a_tmp, b_tmp) = (tmpdir(&mut a), tmpdir(&mut b));
    assert_ne!(a_tmp, b_tmp);
    assert_eq!(a_tmp.parent(), b_tmp.parent(), "one per-user parent");
    sh_ok(&mut b, &format!("printf %s {} > \"$TMPDIR/secret\"", env.marker()));
    let secret = b_tmp.join("secret");
    let (dir_before, secret_before) = (meta(&b_tmp), meta(&secret));
    let b_dir = quoted(&b_tmp);
    for command in [
        format!("cat {b_dir}/secret"),
        format!("ls {b_dir}"),
        format!("touch {b_dir}/planted"),
        format!("printf 'echo gotcha' > {b_dir}/planted.sh"),
        format!("chmod 777 {b_dir}"),
        format!("chmod 666 {b_dir}/secret"),
        format!("touch -d 2000-01-01 {b_dir}/secret"),
        format!("rm -f {b_dir}/secret"),
    ] {
        let run = sh_fails(&mut a, &command);
        assert!(!run.out.contains(env.marker()), "{layer:?}: {command} leaked: {run:?}");
    }
    let names: Vec<String> = std::fs::read_dir(&b_tmp)
        .expect("B's TMPDIR")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["secret"], "{layer:?}: something was planted in B's TMPDIR");
    assert_eq!(std::fs::read_to_string(&secret).expect("secret"), env.marker());
    assert_eq!((meta(&b_tmp), meta(&secret)), (dir_before, secret_before));
    // Each server's own TMPDIR works.
    for server in [&mut a, &mut b] {
        assert_eq!(sh_ok(server, "echo mine > \"$TMPDIR/mine\" && cat \"$TMPDIR/mine\""), "mine\n");
    }
    assert_eq!(sh_ok(&mut b, "cat \"$TMPDIR/secret\""), format!("{}\n", env.marker()));
}

#[test]
fn servers_do_not_share_a_tmpdir_namespace() {
    tmpdir_rows(Layer::Namespace);
}

#[test]
fn servers_do_not_share_a_tmpdir_seccomp() {
    tmpdir_rows(Layer::Seccomp);
}

/// A process the test made, killed when the test ends, however it ends.
struct KillOnDrop(i32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ =
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.0), nix::sys::signal::SIGKILL);
    }
}

/// Waits up to 5 s for `done`, polling.
#[track_caller]
fn poll_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !done() {
        assert!(std::time::Instant::now() < deadline, "still not so after 5 s: {what}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// A process that a killed server's command left running (`setsid` leaves the command's
/// process group; without the PID namespace, in the seccomp fallback, nothing ends it) keeps
/// its own TMPDIR open, and keeps writing there: the next server's TMPDIR
/// is a new directory, never that one reused.
#[test]
fn a_dead_servers_leftover_process_never_reaches_the_next_servers_tmpdir() {
    if !can_run(Layer::Seccomp, User::Invoker) {
        return;
    }
    let env = TestEnv::new(&[], &[]);
    let args = allow(&env, &[("root", "rw")]);
    let mut a = start(Layer::Seccomp, User::Invoker, &args);
    // It works from inside the directory, as a build in $TMPDIR would: renaming it would
    // not stop it.
    let ticks_file = quoted(&env.path("root/ticks"));
    let script = format!(
        "echo $$ > pid; cd \"$TMPDIR\" || exit; \
         while :; do date > planted; echo >> {ticks_file}; sleep 0.05; done"
    );
    sh_ok(
        &mut a,
        &format!(
            "setsid sh -c '{}' < /dev/null > /dev/null 2>&1 & while [ ! -s pid ]; do sleep 0.01; done",
            script.replace('\'', r"'\''")
        ),
    );
    let pid: i32 = env.read_string("root/pid").trim().parse().expect("a pid");
    let _leftover = KillOnDrop(pid);
    drop(a);
    let mut b = start(Layer::Seccomp, User::Invoker, &args);
    let b_tmp = tmpdir(&mut b);
    let ticks = || env.read_string("root/ticks").len();
    let after_b = ticks();
    poll_until("the leftover process wrote on", || ticks() >= after_b + 3);
    let names: Vec<_> = std::fs::read_dir(&b_tmp).expect("B's TMPDIR").flatten().collect();
    assert!(names.is_empty(), "B's TMPDIR {b_tmp:?} holds {names:?}");
}
