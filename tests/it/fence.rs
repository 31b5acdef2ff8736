//! What a command must not reach beyond files: the user's terminal, the server's process and
//! its siblings. See: issue #13 ("the fence").
//!
//! Each row starts the real server, runs an attacking command through `execute_command`, and
//! checks the effect from the test process as well as the command's own report. What a row
//! needs (`python3`, Landlock) must be there under `CI=true`; elsewhere it is skipped, saying so.

use std::ffi::CStr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;

use serde_json::json;

use crate::harness::{path_str, replay_command, Server, TestEnv};
use crate::isolation::{available, is_root, system_program};

/// The command's output: every text item of the reply, joined.
fn run(server: &mut Server, command: &str) -> String {
    let response = server.call("execute_command", json!({"command": command}));
    let content = response.result()["content"].as_array().cloned().unwrap_or_default();
    content.iter().filter_map(|item| item["text"].as_str()).collect::<Vec<_>>().join("\n")
}

fn python() -> Option<String> {
    let found = system_program("python3").map(|p| path_str(&p));
    available("python3", found.is_some()).then(|| found.unwrap_or_default())
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
fn r13_commands_cannot_push_keystrokes_into_a_terminal() {
    keystrokes_rows(false);
}

#[test]
fn r13_commands_cannot_push_keystrokes_into_a_terminal_seccomp() {
    keystrokes_rows(true);
}
