//! What a command must not reach beyond files: the user's terminal, the server's process and
//! its siblings. See: issue #13 ("the fence").
//!
//! Each row starts the real server, runs an attacking command through `execute_command`, and
//! checks the effect from the test process as well as the command's own report. What a row
//! needs (`python3`, Landlock) must be there under `CI=true`; elsewhere it is skipped, saying so.

use std::ffi::CStr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;

use serde_json::json;

use crate::harness::{path_str, replay_command, require, Server, TestEnv};
use crate::isolation::{give, ids, is_root, kernel_has_landlock, privileges, system_program, User};

/// The command's output: every text item of the reply, joined.
fn run(server: &mut Server, command: &str) -> String {
    let response = server.call("execute_command", json!({"command": command}));
    let content = response.result()["content"].as_array().cloned().unwrap_or_default();
    content.iter().filter_map(|item| item["text"].as_str()).collect::<Vec<_>>().join("\n")
}

fn python() -> Option<String> {
    let found = system_program("python3").map(|p| path_str(&p));
    require("python3", found.is_some()).then(|| found.unwrap_or_default())
}

// ---------------------------------------------------------------------------------------------
// E1: keystrokes pushed into the user's terminal (TIOCSTI)
// ---------------------------------------------------------------------------------------------

/// A pseudo-terminal the test owns: the master, the slave, and the slave's path.
struct Pty {
    _master: OwnedFd,
    slave: OwnedFd,
    path: String,
}

fn open_pty() -> Pty {
    // SAFETY: plain libc calls; every descriptor returned is owned at once.
    unsafe {
        let master = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
        assert!(master >= 0, "posix_openpt: {}", std::io::Error::last_os_error());
        let master = OwnedFd::from_raw_fd(master);
        assert_eq!(libc::grantpt(master.as_raw_fd()), 0, "grantpt");
        assert_eq!(libc::unlockpt(master.as_raw_fd()), 0, "unlockpt");
        let mut name = [0 as libc::c_char; 128];
        assert_eq!(libc::ptsname_r(master.as_raw_fd(), name.as_mut_ptr(), name.len()), 0);
        let path = CStr::from_ptr(name.as_ptr()).to_string_lossy().into_owned();
        let c_path = std::ffi::CString::new(path.clone()).expect("no NUL");
        let slave = libc::open(c_path.as_ptr(), libc::O_RDWR | libc::O_NOCTTY | libc::O_NONBLOCK);
        assert!(slave >= 0, "open {path}: {}", std::io::Error::last_os_error());
        Pty { _master: master, slave: OwnedFd::from_raw_fd(slave), path }
    }
}

/// `dev.tty.legacy_tiocsti` set to 1 for the row (root only), restored on drop, so that the
/// row means the same on a kernel that turned TIOCSTI off by default.
struct LegacyTiocsti(Option<String>);

const LEGACY_TIOCSTI: &str = "/proc/sys/dev/tty/legacy_tiocsti";

impl LegacyTiocsti {
    fn enable() -> LegacyTiocsti {
        match std::fs::read_to_string(LEGACY_TIOCSTI) {
            Ok(was) if was.trim() == "0" && is_root() => {
                std::fs::write(LEGACY_TIOCSTI, "1").expect("enabling legacy_tiocsti");
                LegacyTiocsti(Some(was))
            }
            _ => LegacyTiocsti(None),
        }
    }
}

impl Drop for LegacyTiocsti {
    fn drop(&mut self) {
        if let Some(was) = &self.0 {
            let _ = std::fs::write(LEGACY_TIOCSTI, was);
        }
    }
}

/// Tries TIOCSTI on the controlling terminal and on the test's own pty, and says what came of
/// each; and the command's session.
const INJECT: &str = r#"
import errno, fcntl, os, sys, termios
for path in ["/dev/tty", sys.argv[1]]:
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOCTTY)
    except OSError as e:
        print(path, "open", errno.errorcode[e.errno]); continue
    try:
        for c in b"echo pwned\n":
            fcntl.ioctl(fd, termios.TIOCSTI, bytes([c]))
        print(path, "INJECTED")
    except OSError as e:
        print(path, "ioctl", errno.errorcode[e.errno])
print("session", os.getsid(0))
"#;

fn keystrokes_rows(seccomp: bool) {
    let Some(python) = python() else { return };
    let _legacy = LegacyTiocsti::enable();
    let env = TestEnv::new(&[], &[("root/inject.py", INJECT)]);
    let pty = open_pty();
    let mut cmd = replay_command();
    cmd.args(["--mcp-server", "--allow", &format!("{}:rw", path_str(&env.root()))]);
    if seccomp {
        cmd.env("REPLAY_COMMAND_ISOLATION", "seccomp");
    }
    let slave = pty.slave.as_raw_fd();
    // SAFETY: setsid and ioctl are async-signal-safe: the server starts with the pty as its
    // controlling terminal, as it does when an editor runs it from a terminal.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setsid() < 0 || libc::ioctl(slave, libc::TIOCSCTTY, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut server = Server::from_command(cmd);
    server.initialize("2025-06-18");
    let script = path_str(&env.path("root/inject.py"));
    let out = run(&mut server, &format!("{python} {script} {}", pty.path));
    assert!(!out.contains("INJECTED"), "a command pushed keystrokes into a terminal:\n{out}");
    assert!(out.contains("/dev/tty open ENXIO"), "a command has a controlling terminal:\n{out}");
    let shared = format!("session {}\n", server.pid());
    assert!(!out.contains(&shared), "a command shares the server's session:\n{out}");
    // Nothing waits in the terminal's input queue.
    let mut byte = [0u8; 64];
    // SAFETY: reading into a local buffer from a descriptor this test owns (non-blocking).
    let n = unsafe { libc::read(pty.slave.as_raw_fd(), byte.as_mut_ptr().cast(), byte.len()) };
    assert!(n <= 0, "the terminal holds injected input: {:?}", &byte[..n as usize]);
    assert!(run(&mut server, "echo alive").contains("alive"), "the server stopped answering");
}

#[test]
fn commands_cannot_push_keystrokes_into_a_terminal() {
    keystrokes_rows(false);
}

#[test]
fn commands_cannot_push_keystrokes_into_a_terminal_seccomp() {
    keystrokes_rows(true);
}

/// Sets the terminal's line discipline to N_TTY, the one it has: a change the kernel makes
/// without loading anything, which says whether TIOCSETD reaches it.
const LINE_DISCIPLINE: &str = r#"
import errno, fcntl, struct, termios
try:
    fcntl.ioctl(0, termios.TIOCSETD, struct.pack("i", 0))
    print("TIOCSETD", "SET")
except OSError as e:
    print("TIOCSETD", errno.errorcode[e.errno])
"#;

/// Line disciplines (N_GSM0710, N_HDLC, ...) are kernel code few programs reach, with a record
/// of memory-safety bugs: a command's terminal keeps N_TTY. (The fallback without a namespace
/// opens no terminal for commands: its filter, the same, is checked in `sandbox::seccomp`.)
#[test]
fn commands_cannot_change_a_terminals_line_discipline() {
    let Some(python) = python() else { return };
    let env = TestEnv::new(&[], &[("root/ldisc.py", LINE_DISCIPLINE)]);
    let mut server = Server::start(&env);
    let script = path_str(&env.path("root/ldisc.py"));
    let args = json!({"command": format!("{python} {script}"), "tty": true});
    let response = server.call("execute_command", args);
    let content = response.result()["content"].as_array().cloned().unwrap_or_default();
    let out: String = content.iter().filter_map(|item| item["text"].as_str()).collect();
    assert!(
        out.contains("TIOCSETD EPERM"),
        "a command changed its terminal's line discipline:\n{out}"
    );
}

// ---------------------------------------------------------------------------------------------
// E2/D4: commands tracing, reading or signalling the server
// ---------------------------------------------------------------------------------------------

/// Tries, against the process `argv[1]`: ptrace attach, reading and writing its memory, taking
/// its descriptor 0 (the protocol stream), and signals 0 and SIGSTOP. Prints one line each:
/// `ALLOWED`, or the errno name.
const TRACE: &str = r#"
import ctypes, errno, os, signal, sys
pid = int(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def report(name, ok):
    print(name, "ALLOWED" if ok else errno.errorcode.get(ctypes.get_errno(), "?"))
rc = libc.ptrace(16, pid, None, None)  # PTRACE_ATTACH
report("ptrace", rc == 0)
if rc == 0:
    os.waitpid(pid, 0x40000000)
    libc.ptrace(17, pid, None, None)  # PTRACE_DETACH
class iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
buf = ctypes.create_string_buffer(8)
local = iovec(ctypes.cast(buf, ctypes.c_void_p), 8)
remote = iovec(8, 8)  # an unmapped address: EFAULT once the access itself is allowed
for name, nr in [("process_vm_readv", 310), ("process_vm_writev", 311)]:
    if os.uname().machine != "x86_64":
        nr = {"process_vm_readv": 270, "process_vm_writev": 271}[name]
    rc = libc.syscall(nr, pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
    report(name, rc >= 0 or ctypes.get_errno() == errno.EFAULT)
pidfd = libc.syscall(434, pid, 0)  # pidfd_open
report("pidfd_open", pidfd >= 0)
if pidfd >= 0:
    report("pidfd_getfd", libc.syscall(438, pidfd, 0, 0) >= 0)  # pidfd_getfd
for name, sig in [("kill0", 0), ("sigstop", signal.SIGSTOP)]:
    try:
        os.kill(pid, sig); print(name, "ALLOWED")
        os.kill(pid, signal.SIGCONT)
    except OSError as e:
        print(name, errno.errorcode[e.errno])
"#;

fn tracing_rows(seccomp: bool) {
    let Some(python) = python() else { return };
    if !require("Landlock", kernel_has_landlock())
        || (is_root() && !require("setpriv", system_program("setpriv").is_some()))
    {
        return;
    }
    let env = TestEnv::new(&[], &[("root/trace.py", TRACE)]);
    // As root, the server's capabilities alone keep a command (which holds none) from tracing
    // it: the row means something only for an ordinary user, so root runs it as one.
    give(&env, ids(User::Unprivileged));
    let mut cmd = match privileges(User::Unprivileged) {
        Some(mut setpriv) => {
            setpriv.arg(crate::harness::BIN);
            setpriv
        }
        None => replay_command(),
    };
    cmd.args(["--mcp-server", "--allow", &format!("{}:rw", path_str(&env.root()))]);
    if seccomp {
        cmd.env("REPLAY_COMMAND_ISOLATION", "seccomp");
    }
    let mut server = Server::from_command(cmd);
    server.initialize("2025-06-18");
    let script = path_str(&env.path("root/trace.py"));
    let pid = server.pid();
    let out = run(&mut server, &format!("{python} {script} {pid}"));
    // Whatever happened, a stopped server must not hang the rest of the suite.
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGCONT,
    );
    for what in ["ptrace", "process_vm_readv", "process_vm_writev", "kill0", "sigstop"] {
        let line = out.lines().find(|l| l.starts_with(&format!("{what} "))).unwrap_or("");
        // ESRCH: in the command's PID namespace the server's pid names no process.
        assert!(
            line.ends_with(" EPERM") || line.ends_with(" EACCES") || line.ends_with(" ESRCH"),
            "a command reached the server with {what}:\n{out}"
        );
    }
    assert!(!out.contains("pidfd_getfd ALLOWED"), "a command took the server's stdin:\n{out}");
    assert!(run(&mut server, "echo alive").contains("alive"), "the server stopped answering");
}

#[test]
fn commands_cannot_trace_or_signal_the_server() {
    tracing_rows(false);
}

#[test]
fn commands_cannot_trace_or_signal_the_server_seccomp() {
    tracing_rows(true);
}

// ---------------------------------------------------------------------------------------------
// E3: a read-only root nested in a read-write one, carried off by renaming its parent
// ---------------------------------------------------------------------------------------------

/// `d` read-write, with the read-only roots `d/sub/ro` and `d/a/b/ro` inside.
fn nested_env() -> (TestEnv, Vec<String>) {
    let env = TestEnv::new(
        &["root/d/sub/ro", "root/d/a/b/ro"],
        &[("root/d/sub/ro/file.txt", "ro\n"), ("root/d/a/b/ro/file.txt", "ro\n")],
    );
    let args = vec![
        "--mcp-server".into(),
        "--allow".into(),
        format!("{}:rw", env.p("root/d")),
        "--allow".into(),
        format!("{}:ro", env.p("root/d/sub/ro")),
        "--allow".into(),
        format!("{}:ro", env.p("root/d/a/b/ro")),
    ];
    (env, args)
}

#[test]
fn a_renamed_read_only_root_stays_read_only_to_the_tools() {
    let (env, args) = nested_env();
    let mut server = Server::start_with(&args);
    let err = server.call_err(
        "move_file",
        json!({"source": env.p("root/d/sub"), "destination": env.p("root/d/sub2")}),
        -32001,
    );
    assert!(err.message.contains("contains the allowed directory"), "{}", err.message);
    // Another process (or a command without the namespace) renames the parent.
    std::fs::rename(env.path("root/d/sub"), env.path("root/d/sub2")).expect("rename");
    let moved = |rel: &str| env.p(&format!("root/d/sub2/ro/{rel}"));
    let write = json!({"path": moved("new.txt"), "content": "x"});
    server.call_err("write_file", write.clone(), -32001);
    let edit = json!({"path": moved("file.txt"), "edits": [{"oldText": "ro", "newText": "rw"}]});
    server.call_err("edit_file", edit, -32001);
    server.call_err("delete_file", json!({"path": moved("file.txt")}), -32001);
    // Deleting or moving what now holds it is refused as before the rename.
    server.call_err("delete_file", json!({"path": env.p("root/d/sub2")}), -32001);
    let away = json!({"source": env.p("root/d/sub2"), "destination": env.p("root/d/sub3")});
    server.call_err("move_file", away, -32001);
    // A new directory at the old place does not release the moved one.
    std::fs::create_dir_all(env.path("root/d/sub/ro")).expect("mkdir");
    server.call_text("list_directory", json!({"path": env.p("root/d/sub/ro")}));
    server.call_err("write_file", write, -32001);
    assert_eq!(env.read_string("root/d/sub2/ro/file.txt"), "ro\n");
    assert!(!env.exists("root/d/sub2/ro/new.txt"));
    assert!(env.exists("root/d/sub2"));
}

#[test]
fn commands_cannot_rename_the_parents_of_a_nested_read_only_root() {
    if !require("Landlock", kernel_has_landlock()) {
        return;
    }
    let (env, args) = nested_env();
    let mut server = Server::start_with(&args);
    let ino = |rel: &str| std::fs::metadata(env.path(rel)).map(|m| m.ino()).ok();
    let read_only = ["root/d/sub/ro", "root/d/a/b/ro"];
    let before: Vec<_> = read_only.iter().map(|rel| ino(rel)).collect();
    for (from, to) in
        [("d/sub", "d/sub2"), ("d/a", "d/a2"), ("d/a/b", "d/a/b2"), ("d/sub/ro", "d/x")]
    {
        let command =
            format!("mv {} {}", env.p(&format!("root/{from}")), env.p(&format!("root/{to}")));
        let out = run(&mut server, &command);
        // `mv` may copy when the rename is refused (EXDEV): a copy is no root. The read-only
        // roots must still be the same directories, at their places.
        let after: Vec<_> = read_only.iter().map(|rel| ino(rel)).collect();
        assert_eq!(before, after, "{command} moved a read-only root:\n{out}");
        assert_eq!(env.read_string("root/d/sub/ro/file.txt"), "ro\n");
    }
    // The rest of the read-write root works as before.
    let out = run(
        &mut server,
        &format!("mkdir {0}/new && mv {0}/new {0}/sub/new2 && echo moved", env.p("root/d")),
    );
    assert!(out.contains("moved"), "{out}");
}

// ---------------------------------------------------------------------------------------------
// D5: the number of roots
// ---------------------------------------------------------------------------------------------

/// `root/d0` .. `root/d{n-1}`.
fn many_dirs(n: usize) -> TestEnv {
    let dirs: Vec<String> = (0..n).map(|i| format!("root/d{i}")).collect();
    let dirs: Vec<&str> = dirs.iter().map(String::as_str).collect();
    TestEnv::new(&dirs, &[])
}

#[test]
fn a_client_sending_ten_thousand_roots_gets_at_most_256() {
    let env = many_dirs(300);
    let mut server = Server::spawn(["--mcp-server", "--allow", &format!("{}:rw", env.p("root"))]);
    crate::roots::initialize_with_roots(&mut server);
    let roots: Vec<String> = (0..10_000).map(|i| env.p(&format!("root/d{}", i % 300))).collect();
    crate::roots::answer_roots(&mut server, &roots);
    let listed = server.call_text("list_allowed_directories", json!({}));
    let n = listed.lines().filter(|l| l.contains(&env.p("root/d"))).count();
    assert_eq!(n, 256, "{listed}");
    // The ones beyond are not allowed, and the server says what to do.
    let beyond = json!({"path": env.p("root/d299/x.txt"), "content": "x"});
    server.call_err("write_file", beyond, -32001);
    server.call_text("write_file", json!({"path": env.p("root/d0/x.txt"), "content": "x"}));
    let stderr = server.stderr();
    assert!(stderr.contains("at most 256"), "no word on stderr:\n{stderr}");
}

#[test]
fn more_than_256_allowed_directories_are_refused_at_start() {
    let env = many_dirs(257);
    let mut cmd = replay_command();
    cmd.arg("--mcp-server");
    for i in 0..257 {
        cmd.args(["--allow", &env.p(&format!("root/d{i}"))]);
    }
    let out = crate::harness::run_cli(cmd, "");
    assert_eq!(out.status.code(), Some(1), "{}", out.stderr);
    assert!(out.stderr.contains("at most 256"), "{}", out.stderr);
    assert!(out.stdout.is_empty());
}

// ---------------------------------------------------------------------------------------------
// D3: the bytes of a request's globs
// ---------------------------------------------------------------------------------------------

#[test]
fn globs_are_bounded_in_bytes() {
    let env = TestEnv::new(&[], &[("root/a.txt", "a\n")]);
    let mut server = Server::start(&env);
    let dir = env.p("root");
    // Each under the schema's bound, together over the total's.
    let long: Vec<String> = (0..20).map(|i| format!("{i}{}", "*a".repeat(2000))).collect();
    for (tool, field) in [
        ("glob_search", "globs"),
        ("glob_search", "excludeGlobs"),
        ("grep_files", "globs"),
        ("directory_tree", "excludeGlobs"),
    ] {
        let mut args = match tool {
            "glob_search" => json!({"directory": dir, "globs": ["*.txt"]}),
            "grep_files" => json!({"regex": "a", "directory": dir}),
            _ => json!({"path": dir}),
        };
        args[field] = json!(long);
        let err = server.call_err(tool, args, -32602);
        assert!(err.message.contains("65536"), "{tool} {field}: {}", err.message);
    }
    // One glob over the schema's bound.
    let one = json!({"directory": dir, "globs": ["*".repeat(5000)]});
    let err = server.call_err("glob_search", one, -32602);
    assert!(err.message.contains("4096"), "{}", err.message);
    let fine = server.call_text("glob_search", json!({"directory": dir, "globs": ["*.txt"]}));
    assert!(fine.contains("a.txt"), "{fine}");
}

// ---------------------------------------------------------------------------------------------
// search_files with a glob for nameContains
// ---------------------------------------------------------------------------------------------

#[test]
fn search_files_with_glob_characters_and_no_match_points_to_glob_search() {
    let env = TestEnv::new(&[], &[("root/main.rs", "fn main() {}\n")]);
    let mut server = Server::start(&env);
    for needle in ["*.rs", "ma?n", "[m]ain"] {
        let args = json!({"directory": env.p("root"), "nameContains": needle});
        let text = server.call_text("search_files", args);
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some("(no matches found)"), "{needle}: {text}");
        let hint = lines.next().unwrap_or("");
        assert!(hint.contains("glob_search"), "{needle}: no hint in {text:?}");
    }
    // A plain substring that finds nothing gets the contract's line alone.
    let args = json!({"directory": env.p("root"), "nameContains": "nothing"});
    assert_eq!(server.call_text("search_files", args), "(no matches found)");
}
