//! The harness: `TestEnv` declares a file tree in a fresh temp dir, `Server` runs the real `replay --mcp-server`.
//!
//! Every line the server writes to stdout is checked to be JSON-RPC 2.0 as it is read, so each
//! test also checks that stdout carries nothing else. Reads time out after `REPLY_TIMEOUT`: a test
//! waits for a reply, never sleeps in place of one. The few sleeps left poll what sends no
//! event (a process's exit, a kernel counter, a call having started) or let CPU time pass.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Component, Path, PathBuf};
use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::Deserialize;
use serde_json::{json, Value};

/// How long any single reply (or process exit) may take before the test fails.
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(10);

/// The binary under test: the one cargo builds for this integration target, or the one
/// `REPLAY_BIN` names (an absolute path) when the test binary is built, as `.ci/run` does to run
/// the suite against the static release binary.
pub const BIN: &str = match option_env!("REPLAY_BIN") {
    Some(bin) => bin,
    None => env!("CARGO_BIN_EXE_replay"),
};

/// Every tool, in tools/list order (`schemas/`).
pub const ALL_TOOLS: [&str; 19] = [
    "read_file",
    "read_multiple_files",
    "write_file",
    "create_directory",
    "list_directory",
    "directory_tree",
    "move_file",
    "copy_file",
    "delete_file",
    "get_file_info",
    "list_allowed_directories",
    "edit_file",
    "edit_files",
    "apply_patch",
    "search_files",
    "glob_search",
    "grep_files",
    "execute_command",
    "command_session",
];

/// The tools `--read-only` leaves out (`src/selection.rs`'s `WRITERS`).
pub const WRITING_TOOLS: [&str; 10] = [
    "write_file",
    "create_directory",
    "move_file",
    "copy_file",
    "delete_file",
    "edit_file",
    "edit_files",
    "apply_patch",
    "execute_command",
    "command_session",
];

/// A `Command` for the binary under test; with `replay_command_with_kill_hook`, the only
/// places the tests start a process.
#[expect(
    clippy::disallowed_methods,
    reason = "the integration tests exist to spawn the binary under test"
)]
pub fn replay_command() -> Command {
    Command::new(BIN)
}

/// The binary cargo builds for this target, whatever `REPLAY_BIN` names: a debug build, the
/// only one with the journal's kill hook (`REPLAY_JOURNAL_KILL_AT`), for the tests that kill a
/// server mid-commit. The server that recovers after it is `replay_command`'s.
#[expect(
    clippy::disallowed_methods,
    reason = "the crash tests spawn the build that can be killed mid-commit"
)]
pub fn replay_command_with_kill_hook() -> Command {
    Command::new(env!("CARGO_BIN_EXE_replay"))
}

/// Whether a test that needs `capability` can go on: `available` says whether it is here. A
/// test never passes by checking nothing: under `CI=true` a missing capability fails the test;
/// elsewhere the test is skipped, saying `skipped:` and why on stderr. Use as
/// `if !require("Landlock", has_landlock()) { return; }`. `src/capability.rs` is its twin for
/// the unit tests.
#[track_caller]
pub fn require(capability: &str, available: bool) -> bool {
    if available {
        return true;
    }
    let in_ci = std::env::var_os("CI").is_some_and(|v| v == "true");
    assert!(!in_ci, "CI=true, and this test needs {capability}, which this machine lacks");
    // Straight to the stderr handle: libtest captures `eprintln!` and shows it only for a failed
    // test or under `--nocapture`, so a skipped test would pass as `ok` without a word.
    let line = format!("skipped: this test needs {capability}\n");
    let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
    false
}

/// `fixtures/<rel>` in the repository: the sample files and trees tests share. Read it only:
/// `TestEnv::copy_fixture` gives a test its own copy.
pub fn fixture_path(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures").join(rel)
}

/// Copies the file or directory `from` to `to`, parents created, directories recursively.
fn copy_tree(from: &Path, to: &Path) {
    if let Some(parent) = to.parent() {
        fs::create_dir_all(parent).unwrap_or_else(|e| panic!("mkdir {}: {e}", parent.display()));
    }
    if !from.is_dir() {
        fs::copy(from, to).unwrap_or_else(|e| panic!("copy {}: {e}", from.display()));
        return;
    }
    fs::create_dir_all(to).unwrap_or_else(|e| panic!("mkdir {}: {e}", to.display()));
    for entry in fs::read_dir(from).unwrap_or_else(|e| panic!("read {}: {e}", from.display())) {
        let entry = entry.expect("dir entry");
        copy_tree(&entry.path(), &to.join(entry.file_name()));
    }
}

/// A name no other test (in this or a concurrent test process) will pick: pid + counter + nanos.
pub fn unique_name(prefix: &str) -> String {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    format!("{prefix}-{}-{n}-{nanos}", std::process::id())
}

// ---------------------------------------------------------------------------------------------
// TestEnv
// ---------------------------------------------------------------------------------------------

/// A canonicalized temp dir (`base`) holding a declared tree. `base/root` always exists and is
/// what `Server::start` allows read-write. Removed on drop.
pub struct TestEnv {
    base: PathBuf,
    marker: String,
}

impl TestEnv {
    /// Creates `base/root`, then `dirs` and `files` (paths relative to `base`, parents created).
    pub fn new(dirs: &[&str], files: &[(&str, &str)]) -> TestEnv {
        let tmp = std::env::temp_dir().join(unique_name("replay-it"));
        fs::create_dir_all(&tmp).unwrap_or_else(|e| panic!("creating {}: {e}", tmp.display()));
        // Canonicalize so a symlinked /tmp does not confuse path assertions.
        let base = fs::canonicalize(&tmp)
            .unwrap_or_else(|e| panic!("canonicalize {}: {e}", tmp.display()));
        let env = TestEnv { base, marker: format!("SECRET-{}", unique_name("m")) };
        env.mkdir("root");
        for dir in dirs {
            env.mkdir(dir);
        }
        for (path, content) in files {
            env.write(path, content.as_bytes());
        }
        env
    }

    pub fn base(&self) -> &Path {
        &self.base
    }

    /// The directory `Server::start` allows read-write.
    pub fn root(&self) -> PathBuf {
        self.base.join("root")
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.base.join(rel)
    }

    /// `path(rel)` as the string a client would send.
    pub fn p(&self, rel: &str) -> String {
        path_str(&self.path(rel))
    }

    /// A unique `SECRET-…` string for content that must never leak into a reply.
    pub fn marker(&self) -> &str {
        &self.marker
    }

    pub fn mkdir(&self, rel: &str) {
        let path = self.path(rel);
        fs::create_dir_all(&path).unwrap_or_else(|e| panic!("mkdir {}: {e}", path.display()));
    }

    pub fn write(&self, rel: &str, bytes: impl AsRef<[u8]>) {
        let path = self.path(rel);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent)
                .unwrap_or_else(|e| panic!("mkdir {}: {e}", parent.display()));
        }
        fs::write(&path, bytes).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    }

    /// Copies `fixtures/<fixture>` (a file, or a directory with everything in it) to `rel`, so
    /// that a test works on its own copy and never writes into `fixtures/`.
    pub fn copy_fixture(&self, fixture: &str, rel: &str) {
        copy_tree(&fixture_path(fixture), &self.path(rel));
    }

    pub fn read(&self, rel: &str) -> Vec<u8> {
        let path = self.path(rel);
        fs::read(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
    }

    pub fn read_string(&self, rel: &str) -> String {
        String::from_utf8(self.read(rel)).expect("file is UTF-8")
    }

    /// True if anything (file, dir, possibly dangling symlink) exists at `rel`.
    pub fn exists(&self, rel: &str) -> bool {
        fs::symlink_metadata(self.path(rel)).is_ok()
    }

    pub fn is_symlink(&self, rel: &str) -> bool {
        fs::symlink_metadata(self.path(rel)).map(|m| m.file_type().is_symlink()).unwrap_or(false)
    }

    pub fn is_dir(&self, rel: &str) -> bool {
        fs::symlink_metadata(self.path(rel)).map(|m| m.is_dir()).unwrap_or(false)
    }

    /// Creates the symlink `base/link_rel` whose target is `target`, verbatim (relative or absolute).
    pub fn symlink(&self, target: &str, link_rel: &str) {
        let link = self.path(link_rel);
        symlink(target, &link)
            .unwrap_or_else(|e| panic!("symlink {} -> {target}: {e}", link.display()));
    }

    pub fn read_link(&self, rel: &str) -> PathBuf {
        fs::read_link(self.path(rel)).unwrap_or_else(|e| panic!("readlink {rel}: {e}"))
    }

    pub fn set_mode(&self, rel: &str, mode: u32) {
        let path = self.path(rel);
        fs::set_permissions(&path, fs::Permissions::from_mode(mode))
            .unwrap_or_else(|e| panic!("chmod {}: {e}", path.display()));
    }

    pub fn mode(&self, rel: &str) -> u32 {
        fs::symlink_metadata(self.path(rel)).expect("stat").permissions().mode() & 0o7777
    }

    /// The sorted entry names of the directory `rel`.
    pub fn names(&self, rel: &str) -> Vec<String> {
        let path = self.path(rel);
        let mut names: Vec<String> = fs::read_dir(&path)
            .unwrap_or_else(|e| panic!("read_dir {}: {e}", path.display()))
            .map(|entry| entry.expect("dir entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// Everything under `base`: kinds, bytes, modes and link targets. Symlinks are not followed.
    pub fn snapshot(&self) -> Snapshot {
        let mut nodes = BTreeMap::new();
        walk(&self.base, &self.base, &mut nodes);
        Snapshot(nodes)
    }
}

impl Drop for TestEnv {
    fn drop(&mut self) {
        // remove_dir_all does not follow symlinks, so links pointing anywhere are safe to leave.
        let _ = fs::remove_dir_all(&self.base);
    }
}

pub fn path_str(path: &Path) -> String {
    path.to_str().expect("test paths are UTF-8").to_owned()
}

#[derive(Debug, PartialEq, Eq, Clone)]
pub enum Node {
    Dir { mode: u32 },
    File { bytes: Vec<u8>, mode: u32 },
    Link { target: PathBuf },
}

#[derive(Debug, PartialEq, Eq, Clone)]
pub struct Snapshot(pub BTreeMap<String, Node>);

impl Snapshot {
    /// A readable list of what changed from `self` to `after`; empty when nothing did.
    pub fn diff(&self, after: &Snapshot) -> String {
        let mut out = String::new();
        for (path, node) in &self.0 {
            match after.0.get(path) {
                None => out.push_str(&format!("  removed {path}\n")),
                Some(other) if other != node => out.push_str(&format!(
                    "  changed {path}: {} -> {}\n",
                    describe(node),
                    describe(other)
                )),
                Some(_) => {}
            }
        }
        for (path, node) in &after.0 {
            if !self.0.contains_key(path) {
                out.push_str(&format!("  added {path}: {}\n", describe(node)));
            }
        }
        out
    }

    /// The entries whose relative path starts with `prefix`.
    pub fn under(&self, prefix: &str) -> Snapshot {
        Snapshot(
            self.0
                .iter()
                .filter(|(k, _)| k.starts_with(prefix))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        )
    }
}

fn describe(node: &Node) -> String {
    match node {
        Node::Dir { mode } => format!("dir {mode:o}"),
        Node::File { bytes, mode } => {
            let text = String::from_utf8_lossy(bytes);
            let short: String = text.chars().take(60).collect();
            format!("file {mode:o} {} bytes {short:?}", bytes.len())
        }
        Node::Link { target } => format!("link -> {}", target.display()),
    }
}

fn walk(base: &Path, dir: &Path, nodes: &mut BTreeMap<String, Node>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let entry = entry.expect("dir entry");
        let path = entry.path();
        let rel = path_str(path.strip_prefix(base).expect("under base"));
        let meta = fs::symlink_metadata(&path).expect("lstat");
        let mode = meta.permissions().mode() & 0o7777;
        if meta.file_type().is_symlink() {
            nodes.insert(rel, Node::Link { target: fs::read_link(&path).expect("readlink") });
        } else if meta.is_dir() {
            nodes.insert(rel, Node::Dir { mode });
            walk(base, &path, nodes);
        } else {
            nodes.insert(rel, Node::File { bytes: fs::read(&path).unwrap_or_default(), mode });
        }
    }
}

/// The absolute, lexically normalized form of a client path: relative paths resolve against
/// `first_root`, `.` is dropped and `..` pops a component. This is the form replies must use.
pub fn normalize(first_root: &Path, client: &str) -> String {
    let joined = first_root.join(client);
    let mut out = PathBuf::from("/");
    for component in joined.components() {
        match component {
            Component::RootDir | Component::Prefix(_) | Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => out.push(name),
        }
    }
    path_str(&out)
}

// ---------------------------------------------------------------------------------------------
// Server
// ---------------------------------------------------------------------------------------------

/// A running `replay` child. Stdout is read on a thread into a channel so reads can time out;
/// stderr is collected for failure messages. The child is killed on drop.
pub struct Server {
    child: Option<Child>,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: Arc<Mutex<Vec<u8>>>,
    next_id: i64,
    backlog: Vec<Response>,
}

/// Reads `stdout` line by line on a thread; the channel closes at end of output.
pub fn line_reader(stdout: ChildStdout) -> Receiver<String> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        loop {
            let mut buf = Vec::new();
            match reader.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    if tx.send(String::from_utf8_lossy(&buf).into_owned()).is_err() {
                        break;
                    }
                }
            }
        }
    });
    rx
}

/// Collects everything `stderr` says, on a thread.
pub fn stderr_collector(mut stderr: ChildStderr) -> Arc<Mutex<Vec<u8>>> {
    let sink = Arc::new(Mutex::new(Vec::new()));
    let collected = Arc::clone(&sink);
    thread::spawn(move || {
        let mut chunk = [0u8; 4096];
        while let Ok(n @ 1..) = stderr.read(&mut chunk) {
            sink.lock().expect("stderr lock").extend_from_slice(&chunk[..n]);
        }
    });
    collected
}

/// The flag for whole replies, without the default token budget: what `Server::start`,
/// `Server::start_also` and `Proc::spawn` serve, so that the tests of the contract's replies
/// (and of the 24 MiB bound on one) see them whole. `budget` tests the budget under the
/// defaults, and replay's v2.1 and v2.2 suites run on them.
pub const WHOLE_REPLIES: [&str; 2] = ["--max-reply-tokens", "0"];

impl Server {
    /// `replay --mcp-server --allow <root>:rw` with whole replies (`WHOLE_REPLIES`), initialized.
    pub fn start(env: &TestEnv) -> Server {
        let allow = format!("{}:rw", path_str(&env.root()));
        Server::start_with(["--mcp-server", "--allow", &allow, WHOLE_REPLIES[0], WHOLE_REPLIES[1]])
    }

    /// `replay --mcp-server --allow <root>:rw`, then `--allow <rel>:<mode>` for each of `also`
    /// (`rel` under the test's base directory, `mode` `rw` or `ro`), with whole replies,
    /// initialized.
    pub fn start_also(env: &TestEnv, also: &[(&str, &str)]) -> Server {
        let mut args = vec!["--mcp-server".to_owned(), "--allow".to_owned()];
        args.push(format!("{}:rw", path_str(&env.root())));
        args.extend(WHOLE_REPLIES.map(str::to_owned));
        for (rel, mode) in also {
            args.extend(["--allow".to_owned(), format!("{}:{mode}", env.p(rel))]);
        }
        Server::start_with(args)
    }

    /// Spawns with `args` and runs the `initialize` handshake.
    pub fn start_with<I, S>(args: I) -> Server
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut server = Server::spawn(args);
        server.initialize("2025-06-18");
        server
    }

    /// Spawns with `args`; no handshake.
    pub fn spawn<I, S>(args: I) -> Server
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut cmd = replay_command();
        cmd.args(args);
        Server::from_command(cmd)
    }

    /// Spawns a prepared command (for custom env vars or working directory); no handshake.
    pub fn from_command(mut cmd: Command) -> Server {
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap_or_else(|e| panic!("spawning {BIN}: {e}"));
        let lines = line_reader(child.stdout.take().expect("piped stdout"));
        let stderr = stderr_collector(child.stderr.take().expect("piped stderr"));
        let stdin = child.stdin.take();
        Server { child: Some(child), stdin, lines, stderr, next_id: 1, backlog: Vec::new() }
    }

    /// Sends `initialize` with `version` and then `notifications/initialized`; returns the result.
    pub fn initialize(&mut self, version: &str) -> Value {
        let params = json!({
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "replay-it", "version": "0"}
        });
        let result = self.request("initialize", params).result().clone();
        self.notify("notifications/initialized", json!({}));
        result
    }

    /// The server's peak resident set so far (`VmHWM` in `/proc/<pid>/status`), in KiB.
    #[cfg(target_os = "linux")]
    pub fn peak_rss_kib(&self) -> u64 {
        peak_rss_bytes(self.pid()) >> 10
    }

    /// The server's process id (for `/proc/<pid>/status`).
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("the child runs").id()
    }

    /// What the server wrote to stderr so far.
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().expect("stderr lock")).into_owned()
    }

    /// Writes `line` plus a newline to the server's stdin.
    /// The server's stdin, for a test that writes from a thread of its own (the server may stop
    /// reading it: backpressure). Later sends panic.
    #[cfg(target_os = "linux")]
    pub fn take_stdin(&mut self) -> ChildStdin {
        self.stdin.take().expect("stdin already taken or closed")
    }

    pub fn send_raw(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin already closed");
        let res = stdin
            .write_all(line.as_bytes())
            .and_then(|()| stdin.write_all(b"\n"))
            .and_then(|()| stdin.flush());
        if let Err(e) = res {
            panic!("writing to replay's stdin failed ({e}); stderr:\n{}", self.stderr());
        }
    }

    pub fn send(&mut self, message: &Value) {
        self.send_raw(&message.to_string());
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Closes stdin; the server should then answer what it has and exit.
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// The next stdout line, checked to be JSON-RPC 2.0 (an object, or a batch array of them).
    pub fn next_line(&mut self) -> String {
        self.next_line_within(REPLY_TIMEOUT)
    }

    /// `next_line`, waiting up to `limit` (for a request whose size makes it slow to serve).
    pub fn next_line_within(&mut self, limit: Duration) -> String {
        match self.lines.recv_timeout(limit) {
            Ok(line) => {
                check_jsonrpc_line(&line);
                line
            }
            Err(RecvTimeoutError::Timeout) => {
                panic!("no line from replay within {limit:?}; stderr:\n{}", self.stderr())
            }
            Err(RecvTimeoutError::Disconnected) => {
                panic!("replay closed stdout (exited?); stderr:\n{}", self.stderr())
            }
        }
    }

    /// The next stdout line as it is, unchecked: for replies nested deeper than serde_json
    /// parses (128 levels).
    pub fn next_raw_line(&mut self) -> String {
        match self.lines.recv_timeout(REPLY_TIMEOUT) {
            Ok(line) => line,
            Err(e) => panic!(
                "no line from replay within {REPLY_TIMEOUT:?} ({e}); stderr:\n{}",
                self.stderr()
            ),
        }
    }

    /// The next stdout message, parsed.
    pub fn next_message(&mut self) -> Response {
        let line = self.next_line();
        let value = serde_json::from_str(&line).expect("checked by next_line");
        Response { line, value }
    }

    /// Sends a request with a fresh numeric id and returns the reply with that id. Server
    /// notifications are skipped; replies to other ids are kept for `reply_to`.
    pub fn request(&mut self, method: &str, params: Value) -> Response {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.reply_to(&json!(id))
    }

    /// The reply whose `id` equals `id`, waiting for it if needed.
    pub fn reply_to(&mut self, id: &Value) -> Response {
        if let Some(pos) = self.backlog.iter().position(|r| r.value.get("id") == Some(id)) {
            return self.backlog.remove(pos);
        }
        loop {
            let msg = self.next_message();
            if msg.value.get("id") == Some(id) {
                return msg;
            }
            let is_notification =
                msg.value.get("method").is_some() && msg.value.get("id").is_none();
            if !is_notification {
                self.backlog.push(msg);
            }
        }
    }

    /// `tools/call` with `name` and `arguments`.
    pub fn call(&mut self, tool: &str, args: Value) -> Response {
        self.request("tools/call", json!({"name": tool, "arguments": args}))
    }

    /// `call`, expecting a successful result with exactly one text item; returns its text.
    #[track_caller]
    pub fn call_text(&mut self, tool: &str, args: Value) -> String {
        self.call(tool, args).text()
    }

    /// `call`, expecting a JSON-RPC error with `code`; returns the error.
    #[track_caller]
    pub fn call_err(&mut self, tool: &str, args: Value, code: i64) -> RpcError {
        self.call(tool, args).expect_error(code)
    }

    /// Closes stdin, collects every remaining stdout message until EOF and waits for the exit.
    pub fn finish(mut self) -> (Vec<Response>, ExitStatus) {
        self.close_stdin();
        let mut messages = std::mem::take(&mut self.backlog);
        loop {
            match self.lines.recv_timeout(REPLY_TIMEOUT) {
                Ok(line) => {
                    check_jsonrpc_line(&line);
                    let value = serde_json::from_str(&line).expect("checked");
                    messages.push(Response { line, value });
                }
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {
                    panic!(
                        "replay kept stdout open {REPLY_TIMEOUT:?} after stdin closed; stderr:\n{}",
                        self.stderr()
                    )
                }
            }
        }
        // Stdout is closed, so the process is exiting; if it is not, the child stays owned by
        // `self` until here and `Drop` would kill it, but a blocking wait is what we want.
        let mut child = self.child.take().expect("child");
        let status = child.wait().unwrap_or_else(|e| panic!("waiting for replay: {e}"));
        (messages, status)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stdin = None;
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[track_caller]
fn check_jsonrpc_line(line: &str) {
    let value: Value = serde_json::from_str(line)
        .unwrap_or_else(|e| panic!("replay wrote a non-JSON line to stdout ({e}): {line:?}"));
    let messages = match &value {
        Value::Array(items) => items.iter().collect(),
        _ => vec![&value],
    };
    for message in messages {
        assert_eq!(
            message.get("jsonrpc"),
            Some(&json!("2.0")),
            "stdout line is not JSON-RPC 2.0: {line}"
        );
    }
}

/// Output of a short-lived `replay` run (command-line tests).
pub struct CliOutput {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `cmd` to completion with `stdin` as input; fails (and kills it) after `REPLY_TIMEOUT`.
pub fn run_cli(mut cmd: Command, stdin: &str) -> CliOutput {
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("spawning {BIN}: {e}"));
    let mut pipe = child.stdin.take().expect("piped stdin");
    // A process that exits early closes its stdin; a failed write is then expected.
    let _ = pipe.write_all(stdin.as_bytes());
    drop(pipe);
    let (tx, rx) = mpsc::channel();
    for (stream, mut reader) in [
        (0, Box::new(child.stdout.take().expect("piped stdout")) as Box<dyn Read + Send>),
        (1, Box::new(child.stderr.take().expect("piped stderr"))),
    ] {
        let tx = tx.clone();
        thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = reader.read_to_end(&mut buf);
            let _ = tx.send((stream, String::from_utf8_lossy(&buf).into_owned()));
        });
    }
    let mut outputs = [String::new(), String::new()];
    for _ in 0..2 {
        match rx.recv_timeout(REPLY_TIMEOUT) {
            Ok((stream, text)) => outputs[stream] = text,
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("replay did not close its output within {REPLY_TIMEOUT:?}");
            }
        }
    }
    let status = child.wait().unwrap_or_else(|e| panic!("waiting for replay: {e}"));
    let [stdout, stderr] = outputs;
    CliOutput { status, stdout, stderr }
}

// ---------------------------------------------------------------------------------------------
// Proc: the binary with raw pipes, and what /proc says of it
// ---------------------------------------------------------------------------------------------

/// The prefix of replay's temp files (`src/tools/write.rs`, `TEMP_PREFIX`).
pub const TEMP_PREFIX: &str = ".replay-tmp.";

/// The most resident memory the server may reach while serving `load`'s 10,000 requests, and
/// while skipping a 100 MB line.
#[cfg(target_os = "linux")]
pub const PEAK_RSS_LIMIT_KIB: u64 = 100 * 1024;

/// Prints a test's measurement as `[topic] line`; libtest shows it under `--nocapture`.
#[expect(clippy::print_stderr, reason = "the measurements are reported on the test output")]
pub fn report(topic: &str, line: &str) {
    eprintln!("[{topic}] {line}");
}

/// The peak resident set of process `pid` so far (`VmHWM` in `/proc/<pid>/status`), in bytes.
#[cfg(target_os = "linux")]
pub fn peak_rss_bytes(pid: u32) -> u64 {
    let status = fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_else(|e| panic!("reading /proc/{pid}/status: {e}"));
    let kib: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .unwrap_or_else(|| panic!("no VmHWM in /proc/{pid}/status:\n{status}"))
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .expect("VmHWM is a number of kB");
    kib << 10
}

/// Whether some thread of process `pid` is running or runnable (state `R` in
/// `/proc/<pid>/task/*/stat`); a thread that ended meanwhile counts as asleep.
#[cfg(target_os = "linux")]
pub fn any_thread_running(pid: u32) -> bool {
    let tasks = fs::read_dir(format!("/proc/{pid}/task")).expect("/proc/<pid>/task");
    tasks.filter_map(Result::ok).any(|task| {
        let stat = fs::read_to_string(task.path().join("stat")).unwrap_or_default();
        // The state follows the command name in parentheses.
        stat.rsplit_once(") ").is_some_and(|(_, rest)| rest.starts_with('R'))
    })
}

/// Makes `pipe` non-blocking, for `write_some` and `gets_room`.
#[cfg(target_os = "linux")]
pub fn set_nonblocking(pipe: &ChildStdin) {
    use nix::fcntl::{fcntl, FcntlArg, OFlag};
    use std::os::fd::AsFd;
    fcntl(pipe.as_fd(), FcntlArg::F_SETFL(OFlag::O_NONBLOCK)).expect("O_NONBLOCK");
}

/// Writes `bytes` to the non-blocking `pipe` as far as it takes them; how many it took.
#[cfg(target_os = "linux")]
pub fn write_some(pipe: &mut ChildStdin, bytes: &[u8]) -> usize {
    match pipe.write(bytes) {
        Ok(n) => n,
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => 0,
        Err(e) => panic!("writing to replay's stdin: {e}"),
    }
}

/// Whether `pipe` has room for a write within `wait`: the server read some of it.
#[cfg(target_os = "linux")]
pub fn gets_room(pipe: &ChildStdin, wait: Duration) -> bool {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    use std::os::fd::AsFd;
    let mut fds = [PollFd::new(pipe.as_fd(), PollFlags::POLLOUT)];
    let timeout = PollTimeout::try_from(wait).expect("a short wait");
    poll(&mut fds, timeout).expect("poll") == 1
}

/// Writes `pending`, then whatever `more` gives, into the non-blocking `stdin` of process `pid`
/// until the pipe is full and stays full for 500 ms while every thread of `pid` sleeps: the
/// server has stopped reading, and not because it is busy. `false` if `more` runs dry or
/// `limit` passes first. What was not written stays in `pending`.
#[cfg(target_os = "linux")]
pub fn feed_until_reading_stops(
    stdin: &mut ChildStdin,
    pid: u32,
    pending: &mut Vec<u8>,
    mut more: impl FnMut() -> Option<Vec<u8>>,
    limit: Duration,
) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if pending.is_empty() {
            let Some(bytes) = more() else { return false };
            *pending = bytes;
        }
        let n = write_some(stdin, pending);
        pending.drain(..n);
        if n > 0 || gets_room(stdin, Duration::from_millis(10)) {
            continue;
        }
        if !any_thread_running(pid)
            && !gets_room(stdin, Duration::from_millis(500))
            && !any_thread_running(pid)
        {
            return true;
        }
    }
    false
}

/// The names in `dir` that look like replay temp files, sorted.
pub fn temp_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read_dir {}: {e}", dir.display()))
        .map(|entry| entry.expect("dir entry").file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(TEMP_PREFIX))
        .collect();
    names.sort();
    names
}

/// One JSON-RPC request as a line, for `Proc`'s raw stdin.
pub fn raw_request(id: impl Into<Value>, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id.into(), "method": method, "params": params}).to_string()
}

/// One `tools/call` request as a line, for `Proc`'s raw stdin.
pub fn raw_call(id: impl Into<Value>, tool: &str, arguments: Value) -> String {
    raw_request(id, "tools/call", json!({"name": tool, "arguments": arguments}))
}

/// A message's JSON-RPC error code, if it is an error.
pub fn error_code(message: &Value) -> Option<i64> {
    message.pointer("/error/code").and_then(Value::as_i64)
}

/// The first text of a tool result; fails on anything else.
#[track_caller]
pub fn text_of(message: &Value) -> &str {
    message.pointer("/result/content/0/text").and_then(Value::as_str).unwrap_or_else(|| {
        panic!("expected a tool result with text, got: {message}");
    })
}

/// `replay --mcp-server --allow <root>:rw` with its pipes in the test's hands, for what
/// `Server` keeps to itself: the pid for SIGKILL, raw bytes on stdin, stdout unread or dropped.
/// No handshake: requests before `initialize` are served. Stderr is collected; the child is
/// killed on drop.
pub struct Proc {
    child: Option<Child>,
    pid: u32,
    stdin: Option<ChildStdin>,
    stdout: Option<ChildStdout>,
    stderr: Arc<Mutex<Vec<u8>>>,
}

impl Proc {
    pub fn spawn(env: &TestEnv) -> Proc {
        let allow = format!("{}:rw", env.p("root"));
        let mut cmd = replay_command();
        cmd.args(["--mcp-server", "--allow", &allow]).args(WHOLE_REPLIES);
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap_or_else(|e| panic!("spawning replay: {e}"));
        let pid = child.id();
        let stderr = stderr_collector(child.stderr.take().expect("piped stderr"));
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        Proc { child: Some(child), pid, stdin, stdout, stderr }
    }

    /// The process id, for `/proc/<pid>`.
    #[cfg(target_os = "linux")]
    pub fn pid(&self) -> u32 {
        self.pid
    }

    pub fn take_stdin(&mut self) -> ChildStdin {
        self.stdin.take().expect("stdin already taken")
    }

    pub fn take_stdout(&mut self) -> ChildStdout {
        self.stdout.take().expect("stdout already taken")
    }

    /// Stdout, read line by line on a thread.
    pub fn lines(&mut self) -> Receiver<String> {
        line_reader(self.take_stdout())
    }

    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().expect("stderr lock")).into_owned()
    }

    /// The process's peak resident set so far, in KiB.
    #[cfg(target_os = "linux")]
    pub fn peak_rss_kib(&self) -> u64 {
        peak_rss_bytes(self.pid) >> 10
    }

    pub fn sigkill(&self) {
        let pid = nix::unistd::Pid::from_raw(i32::try_from(self.pid).expect("pid fits i32"));
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL)
            .unwrap_or_else(|e| panic!("SIGKILL {pid}: {e}"));
    }

    /// Whether the process has exited (and is reaped) within `limit`, with its status.
    pub fn exit_within(&mut self, limit: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + limit;
        let child = self.child.as_mut().expect("child already reaped");
        loop {
            if let Some(status) = child.try_wait().expect("try_wait") {
                self.child = None;
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            // Polling, not synchronizing: nothing to wait on but the exit itself.
            thread::sleep(Duration::from_millis(5));
        }
    }

    /// The exit status; fails (after killing it) if the process runs past `limit`.
    #[track_caller]
    pub fn wait(&mut self, limit: Duration) -> ExitStatus {
        match self.exit_within(limit) {
            Some(status) => status,
            None => panic!("replay did not exit within {limit:?}; stderr:\n{}", self.stderr()),
        }
    }

    /// Closes stdin and expects exit status 0 soon, with no panic reported on stderr.
    #[track_caller]
    pub fn finish_cleanly(&mut self) {
        self.stdin = None;
        let status = self.wait(REPLY_TIMEOUT);
        let stderr = self.stderr();
        assert_eq!(status.code(), Some(0), "exit status {status:?}; stderr:\n{stderr}");
        assert!(!stderr.contains("panicked"), "replay panicked:\n{stderr}");
    }

    /// The next message on `rx` (this process's stdout), checked to be one JSON-RPC 2.0
    /// object; fails after `limit`.
    #[track_caller]
    pub fn next_message(&self, rx: &Receiver<String>, limit: Duration) -> Value {
        match rx.recv_timeout(limit) {
            Ok(line) => parse_message(&line),
            Err(RecvTimeoutError::Timeout) => {
                panic!("no reply from replay within {limit:?}; stderr:\n{}", self.stderr())
            }
            Err(RecvTimeoutError::Disconnected) => {
                panic!("replay closed stdout (exited?); stderr:\n{}", self.stderr())
            }
        }
    }

    /// Stdout must close (the process is done writing) within `limit`; returns what came first.
    #[track_caller]
    pub fn rest_of_output(&self, rx: &Receiver<String>, limit: Duration) -> Vec<Value> {
        let deadline = Instant::now() + limit;
        let mut rest = Vec::new();
        loop {
            match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(line) => rest.push(parse_message(&line)),
                Err(RecvTimeoutError::Disconnected) => return rest,
                Err(RecvTimeoutError::Timeout) => {
                    panic!("replay kept stdout open past {limit:?}; stderr:\n{}", self.stderr())
                }
            }
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.stdin = None;
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[track_caller]
fn parse_message(line: &str) -> Value {
    let value: Value = serde_json::from_str(line).unwrap_or_else(|e| {
        let short: String = line.chars().take(200).collect();
        panic!("replay wrote a non-JSON line to stdout ({e}): {short:?}")
    });
    assert_eq!(value.get("jsonrpc"), Some(&json!("2.0")), "not JSON-RPC 2.0: {line}");
    value
}

// ---------------------------------------------------------------------------------------------
// Replies, decoded into test-local types
// ---------------------------------------------------------------------------------------------

/// One message from the server: the raw line (for leak checks) and its parsed value.
#[derive(Debug, Clone)]
pub struct Response {
    pub line: String,
    pub value: Value,
}

#[derive(Debug, Deserialize, Clone)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
}

#[derive(Debug, Deserialize)]
pub struct ToolResult {
    pub content: Vec<Content>,
    #[serde(rename = "isError", default)]
    pub is_error: Option<bool>,
}

#[derive(Debug, Deserialize, PartialEq)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Content {
    Text {
        text: String,
    },
    Image {
        data: String,
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    Audio {
        data: String,
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    Resource {
        resource: Resource,
    },
    /// A path a search found (search_files and glob_search, 2025-06-18 on).
    #[serde(rename = "resource_link")]
    ResourceLink {
        uri: String,
        name: String,
        #[serde(rename = "mimeType")]
        mime_type: Option<String>,
    },
}

/// The path a `file://` URI names, its `%XX` escapes decoded.
pub fn uri_path(uri: &str) -> String {
    let rest = uri.strip_prefix("file://").unwrap_or_else(|| panic!("not a file:// URI: {uri}"));
    let mut bytes = Vec::with_capacity(rest.len());
    let mut it = rest.bytes();
    while let Some(b) = it.next() {
        if b != b'%' {
            bytes.push(b);
            continue;
        }
        let hex: String = it.by_ref().take(2).map(char::from).collect();
        bytes.push(u8::from_str_radix(&hex, 16).unwrap_or_else(|e| panic!("{uri}: {e}")));
    }
    String::from_utf8(bytes).unwrap_or_else(|e| panic!("{uri}: {e}"))
}

#[derive(Debug, Deserialize, PartialEq)]
pub struct Resource {
    pub uri: String,
    #[serde(rename = "mimeType")]
    pub mime_type: Option<String>,
    pub blob: Option<String>,
    pub text: Option<String>,
}

impl Response {
    /// The `result`; panics (quoting the line) on an error reply.
    #[track_caller]
    pub fn result(&self) -> &Value {
        match self.value.get("result") {
            Some(result) if self.value.get("error").is_none() => result,
            _ => panic!("expected a result, got: {}", self.line),
        }
    }

    /// The `error`; panics (quoting the line) on a result reply.
    #[track_caller]
    pub fn error(&self) -> RpcError {
        match self.value.get("error") {
            Some(error) if self.value.get("result").is_none() => {
                serde_json::from_value(error.clone())
                    .unwrap_or_else(|e| panic!("malformed error object ({e}): {}", self.line))
            }
            _ => panic!("expected an error, got: {}", self.line),
        }
    }

    /// The error, asserting its code.
    #[track_caller]
    pub fn expect_error(&self, code: i64) -> RpcError {
        let error = self.error();
        assert_eq!(error.code, code, "wrong error code in: {}", self.line);
        error
    }

    /// The `tools/call` result, decoded; panics if it is an error or has `isError: true`.
    #[track_caller]
    pub fn tool_result(&self) -> ToolResult {
        let result: ToolResult = serde_json::from_value(self.result().clone())
            .unwrap_or_else(|e| panic!("malformed tools/call result ({e}): {}", self.line));
        assert_ne!(result.is_error, Some(true), "tool reported isError: {}", self.line);
        result
    }

    /// The texts of a successful tool result; panics on non-text items. A search's text is
    /// read as the contract's, as a 2024-11-05 client gets it: without the `[N matches]` line
    /// that 2025-06-18 adds after the paths, which must be the paths of its `resource_link`
    /// items, in order.
    #[track_caller]
    pub fn texts(&self) -> Vec<String> {
        let mut texts = Vec::new();
        let mut paths = Vec::new();
        for item in self.tool_result().content {
            match item {
                Content::Text { text } => texts.push(text),
                Content::ResourceLink { uri, .. } => paths.push(uri_path(&uri)),
                other => panic!("expected text content, got {other:?} in {}", self.line),
            }
        }
        if !paths.is_empty() {
            assert_eq!(texts.len(), 1, "links after more than one text: {}", self.line);
            let n = paths.len();
            let count = if n == 1 { "[1 match]".to_owned() } else { format!("[{n} matches]") };
            let listed = format!("{}\n{count}", paths.join("\n"));
            let notes = texts[0].strip_prefix(&listed).unwrap_or_else(|| {
                panic!("the text does not list the links' paths, then {count}: {}", self.line)
            });
            texts[0] = format!("{}{notes}", paths.join("\n"));
        }
        texts
    }

    /// The single text item of a successful tool result.
    #[track_caller]
    pub fn text(&self) -> String {
        let mut texts = self.texts();
        assert_eq!(texts.len(), 1, "expected exactly one content item: {}", self.line);
        texts.remove(0)
    }
}

/// Parses `key: value` lines (as `get_file_info` returns) into a map.
pub fn key_values(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|line| line.split_once(": "))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Matching and encoding helpers
// ---------------------------------------------------------------------------------------------

/// Checks `actual` against `expected` JSON text with wildcards: the string `"{...}"` matches any
/// value, `[..]` inside a string matches any run of characters, and objects may carry extra keys.
#[track_caller]
pub fn assert_json(actual: &Value, expected: &str) {
    let expected: Value = serde_json::from_str(expected).expect("expected JSON parses");
    if let Err(path) = json_matches(actual, &expected, String::from("$")) {
        panic!("JSON mismatch at {path}\nexpected: {expected}\nactual:   {actual}");
    }
}

fn json_matches(actual: &Value, expected: &Value, at: String) -> Result<(), String> {
    match (expected, actual) {
        (Value::String(e), _) if e == "{...}" => Ok(()),
        (Value::String(e), Value::String(a)) if e.contains("[..]") => {
            if wildcard_matches(e, a) {
                Ok(())
            } else {
                Err(at)
            }
        }
        (Value::Object(e), Value::Object(a)) => {
            for (key, value) in e {
                let Some(actual_value) = a.get(key) else {
                    return Err(format!("{at}.{key} (missing)"));
                };
                json_matches(actual_value, value, format!("{at}.{key}"))?;
            }
            Ok(())
        }
        (Value::Array(e), Value::Array(a)) => {
            if e.len() != a.len() {
                return Err(format!("{at} (length {} != {})", a.len(), e.len()));
            }
            for (i, (a, e)) in a.iter().zip(e).enumerate() {
                json_matches(a, e, format!("{at}[{i}]"))?;
            }
            Ok(())
        }
        _ if expected == actual => Ok(()),
        _ => Err(at),
    }
}

fn wildcard_matches(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split("[..]").collect();
    let (first, rest) = parts.split_first().expect("split yields one part");
    let Some(mut remaining) = text.strip_prefix(first) else {
        return false;
    };
    for (i, part) in rest.iter().enumerate() {
        let is_last = i == rest.len() - 1;
        if is_last {
            return remaining.ends_with(part);
        }
        match remaining.find(part) {
            Some(pos) => remaining = &remaining[pos + part.len()..],
            None => return false,
        }
    }
    remaining.is_empty()
}

/// Standard base64 (with padding) decoding; panics on malformed input.
#[track_caller]
pub fn base64_decode(text: &str) -> Vec<u8> {
    fn value(c: u8) -> u32 {
        match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not a base64 character: {:?}", char::from(c)),
        }
    }
    let bytes = text.trim_end_matches('=').as_bytes();
    let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
    for chunk in bytes.chunks(4) {
        let mut acc = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            acc |= value(c) << (18 - 6 * i);
        }
        let n_bytes = match chunk.len() {
            4 => 3,
            3 => 2,
            2 => 1,
            _ => panic!("truncated base64"),
        };
        for i in 0..n_bytes {
            out.push((acc >> (16 - 8 * i)) as u8);
        }
    }
    out
}

/// `YYYY-MM-DDTHH:MM:SSZ` for seconds since the Unix epoch (UTC), to check `get_file_info`.
pub fn iso8601_utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[test]
fn harness_helpers_self_check() {
    assert_eq!(base64_decode("aGVsbG8="), b"hello");
    assert_eq!(base64_decode("aGk="), b"hi");
    assert_eq!(base64_decode("AAEC/w=="), [0, 1, 2, 255]);
    assert_eq!(iso8601_utc(1_700_000_000), "2023-11-14T22:13:20Z");
    assert_eq!(iso8601_utc(0), "1970-01-01T00:00:00Z");
    assert_eq!(normalize(Path::new("/r"), "a/../b/./c"), "/r/b/c");
    assert_eq!(normalize(Path::new("/r"), "/x/../../y"), "/y");
    assert!(wildcard_matches("a[..]c", "abbc"));
    assert!(!wildcard_matches("a[..]c", "abbd"));
    assert_json(&json!({"a": 1, "b": "v1.2", "c": [1]}), r#"{"a": 1, "b": "v[..]", "c": "{...}"}"#);
}
