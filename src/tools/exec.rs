//! execute_command: `/bin/sh -c` in its own session and process group, with a deadline, capped
//! output, and cancellation (looked at every `POLL`, 5 ms). The only place replay starts a
//! process.
//!
//! The child's stdin is `/dev/null`: it must never read the server's protocol stream. Both
//! output pipes are drained at once by their own threads, so a chatty child never blocks on a
//! full pipe, and each keeps its first 128 KB and last 384 KB (`output`), so memory stays
//! bounded. When the shell exits, whatever it left running in its process group
//! (`sleep 1000 &`) is killed too: those processes hold the pipes open, and a command's effects
//! should end with the command. When the server ends first, however it ends, the group's
//! guardian kills it (`lifeline`). Where the sandbox gives each command a PID namespace, the
//! guardian is its init, and processes that left the group (`setsid`) end with it too.
//!
//! `background` and `tty` run the command as a session instead (`session`, `command_session`).

use std::io::Read;
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use serde::Deserialize;
use serde_json::json;

use crate::error::ToolError;
use crate::policy::{Access, ResolvedPath};
use crate::reply_size::{self, Budget};
use crate::sandbox::NotCovered;
use crate::tools::{resolve_dir, Content, Ctx, Output, Structured};
use output::Captured;

pub mod command_session;
mod lifeline;
pub mod limits;
mod output;
mod session;
mod spill;

/// A foreground command's longest timeout, in seconds (the contract's).
const FOREGROUND_TIMEOUT: u64 = 60;
/// Between SIGTERM and SIGKILL at the deadline.
const GRACE: Duration = Duration::from_secs(3);
/// How often the waiting loop looks at the child, the deadline and cancellation.
const POLL: Duration = Duration::from_millis(5);

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecArgs {
    command: String,
    working_directory: Option<String>,
    /// Seconds; 30 for a foreground command, none for a session.
    timeout: Option<u64>,
    #[serde(default)]
    background: bool,
    #[serde(default)]
    tty: bool,
    /// How long a session's first call waits for the command to end.
    wait_seconds: Option<u64>,
}

/// How the command ended.
enum Ending {
    Exited(ExitStatus),
    TimedOut(ExitStatus),
    Cancelled,
}

pub fn execute_command(ctx: &Ctx, args: ExecArgs) -> Result<Output, ToolError> {
    if let Some(name) = denied_name(&args.command, &ctx.settings.deny_commands) {
        return Err(ToolError::CommandDenied { name });
    }
    if args.background || args.tty {
        return command_session::start(ctx, &args);
    }
    let timeout = args.timeout.unwrap_or(30);
    if timeout > FOREGROUND_TIMEOUT {
        return Err(ToolError::invalid_params(
            "timeout",
            format!(
                "{timeout} s is over {FOREGROUND_TIMEOUT} s; give background: true to run longer"
            ),
        ));
    }
    let cwd = working_directory(ctx, args.working_directory.as_deref())?;
    // The wait for the deny rules' covers counts against the timeout, as the run does.
    let started = Instant::now();
    let mut child =
        spawn(ctx, &args.command, &cwd, Streams::piped(), Duration::from_secs(timeout))?;
    let pgid = Pid::from_raw(child.id() as i32);
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let clock = Clock { started, timeout };
    // Output bytes so far, for progress reports.
    let produced = AtomicU64::new(0);
    // Set once the group is killed: when the readers stop (`drain`).
    let stop = OnceLock::new();
    let (ending, out, err) = std::thread::scope(|s| {
        let out = s.spawn(|| drain(stdout, &produced, &stop));
        let err = s.spawn(|| drain(stderr, &produced, &stop));
        let ending = wait(&mut child, pgid, &clock, &produced, ctx);
        // The shell is gone; so must be what it started, or the pipes never close.
        let _ = killpg(pgid, Signal::SIGKILL);
        let _ = stop.set(Instant::now() + output::HELD_DRAIN);
        (ending, out.join().unwrap_or_default(), err.join().unwrap_or_default())
    });
    let held = out.held || err.held;
    let (status, timed_out) = match ending {
        Ending::Exited(status) => (status, false),
        Ending::TimedOut(status) => (status, true),
        Ending::Cancelled => return Ok(Output::text("(cancelled)")),
    };
    // A failure the sandbox caused says so, and which flag would allow it (`grants::hint`).
    let (hint, stopped) = match status.success() {
        true => (None, None),
        false => {
            let tail = err.last_bytes(4096);
            let limits = ctx.settings.command_limits;
            (ctx.settings.confinement.refusal_hint(&tail), limits.note(status, &tail))
        }
    };
    let budget = ctx.settings.budget();
    let mut output = render(out, err, status, timed_out.then_some(timeout), budget);
    if held {
        note_held(&mut output);
    }
    if let (Some(hint), Some(Content::Text(last))) = (hint, output.content.last_mut()) {
        if !last.ends_with('\n') {
            last.push('\n');
        }
        last.push_str(hint);
    }
    // A limit that stopped the command says which, and the flag that raises it.
    if let (Some(note), Some(Content::Text(first))) = (stopped, output.content.first_mut()) {
        first.push('\n');
        first.push_str(&note);
    }
    Ok(output)
}

/// `workingDirectory`, which read access suffices for; by default the first read-write root,
/// else the first root.
fn working_directory(ctx: &Ctx, raw: Option<&str>) -> Result<ResolvedPath, ToolError> {
    let raw = match raw {
        Some(raw) => raw.to_string(),
        None => {
            let roots = ctx.policy.roots();
            let root = roots.iter().find(|r| r.access == Access::Write).or(roots.first());
            match root {
                Some(root) => root.path.display().to_string(),
                None => "/".to_string(),
            }
        }
    };
    resolve_dir(ctx, &raw, "use working directory")
}

/// A command's stdin, stdout and stderr, and whether they are a terminal that is to be its
/// controlling terminal.
struct Streams {
    stdin: Stdio,
    stdout: Stdio,
    stderr: Stdio,
    tty: bool,
}

impl Streams {
    /// A foreground command's: no input, two pipes.
    fn piped() -> Streams {
        Streams { stdin: Stdio::null(), stdout: Stdio::piped(), stderr: Stdio::piped(), tty: false }
    }
}

#[expect(clippy::disallowed_methods, reason = "exec is where replay starts processes")]
fn spawn(
    ctx: &Ctx,
    command: &str,
    cwd: &ResolvedPath,
    io: Streams,
    covers_wait: Duration,
) -> Result<Child, ToolError> {
    let cancelled = || ctx.cancel.is_cancelled();
    ctx.settings.confinement.covered(covers_wait, &cancelled).map_err(|why| match why {
        NotCovered::Refused(why) => ToolError::DenyUncovered { why },
        NotCovered::Pending(waited) => ToolError::CoversPending { seconds: waited.as_secs() },
        NotCovered::Cancelled => ToolError::Cancelled,
    })?;
    // The working directory is entered through a handle opened beneath its root, as the file
    // tools open theirs: the child changes into it with `fchdir` on its inherited copy of the
    // handle, so a directory swapped for a symlink after the check is not followed. Joining
    // the commands' namespace (Linux) moves it to the namespace's root, so there it enters the
    // path again, following no symlink, and checks it is the handle's directory. (The command
    // itself may then go anywhere its sandbox lets it.)
    let dir = cwd.open_dir().map_err(|e| ToolError::io("use working directory", &cwd.shown, e))?;
    let handle = dir.as_raw_fd();
    let mut cmd = std::process::Command::new("/bin/sh");
    cmd.arg("-c").arg(command).stdin(io.stdin).stdout(io.stdout).stderr(io.stderr);
    let tty = io.tty;
    if let Some(tmp) = &ctx.settings.command_tmp {
        cmd.env("TMPDIR", tmp.dir());
    }
    // SAFETY: setsid and fchdir are async-signal-safe; `handle` stays open in the parent until
    // the spawn returns, so the child's copy is open.
    unsafe {
        cmd.pre_exec(move || {
            // A session of its own, and so a process group of its own (its id is the shell's),
            // so that a deadline or a cancellation reaches every process the command started,
            // not just the shell. The session has no controlling terminal: the command cannot
            // open the user's terminal as `/dev/tty` and push keystrokes into it (TIOCSTI),
            // which the shell reading them would run outside the sandbox.
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            // A session's own terminal becomes its controlling terminal, for job control and
            // `/dev/tty`; input typed into it comes from command_session only.
            if tty && libc::ioctl(0, libc::TIOCSCTTY as _, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::fchdir(handle) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    ctx.settings.command_limits.apply_to(&mut cmd);
    let failed = |e| ToolError::io("start /bin/sh", &cwd.shown, e);
    ctx.settings.confinement.apply_to(&mut cmd, &cwd.real, dir.as_fd()).map_err(failed)?;
    lifeline::guard(&mut cmd, ctx.settings.confinement.pid_namespace()).map_err(failed)?;
    cmd.spawn().map_err(failed)
}

/// When the command started, and its timeout in seconds.
struct Clock {
    started: Instant,
    timeout: u64,
}

fn wait(child: &mut Child, pgid: Pid, clock: &Clock, produced: &AtomicU64, ctx: &Ctx) -> Ending {
    let deadline = clock.started + Duration::from_secs(clock.timeout);
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Ending::Exited(status),
            Ok(None) => {}
            Err(_) => return Ending::Exited(ExitStatus::from_raw(255 << 8)),
        }
        if ctx.cancel.is_cancelled() {
            let _ = killpg(pgid, Signal::SIGKILL);
            let _ = child.wait();
            return Ending::Cancelled;
        }
        if Instant::now() >= deadline {
            return Ending::TimedOut(stop(child, pgid));
        }
        if ctx.progress.wanted() {
            report_progress(ctx, clock, produced);
        }
        std::thread::sleep(POLL);
    }
}

/// Whole seconds run so far, of the timeout: a report each second the command keeps running
/// (`Progress` sends only increasing values), none for a command done within the first.
fn report_progress(ctx: &Ctx, clock: &Clock, produced: &AtomicU64) {
    let seconds = clock.started.elapsed().as_secs();
    if seconds == 0 {
        return;
    }
    ctx.progress.report(seconds, Some(clock.timeout), || {
        let bytes = produced.load(Ordering::Relaxed);
        format!("running for {seconds} s of {} s; {bytes} bytes of output so far", clock.timeout)
    });
}

/// SIGTERM to the group, SIGKILL after the grace period if the shell is still there.
fn stop(child: &mut Child, pgid: Pid) -> ExitStatus {
    let _ = killpg(pgid, Signal::SIGTERM);
    let until = Instant::now() + GRACE;
    while Instant::now() < until {
        if let Ok(Some(status)) = child.try_wait() {
            return status;
        }
        std::thread::sleep(POLL);
    }
    let _ = killpg(pgid, Signal::SIGKILL);
    // A raw wait status of N means "killed by signal N".
    child.wait().unwrap_or(ExitStatus::from_raw(Signal::SIGKILL as i32))
}

/// Reads `stream` to its end, or until the instant `stop` gets (the group's kill plus
/// `HELD_DRAIN`): a process outside the group (`setsid`) may hold it open for good, and the
/// reply must not wait for it. Polls every `READ_TICK` to see `stop`.
fn drain(
    stream: Option<impl Read + AsFd>,
    produced: &AtomicU64,
    stop: &OnceLock<Instant>,
) -> Captured {
    /// How often a reader looks at `stop`: a tenth of `HELD_DRAIN`.
    const READ_TICK: Duration = Duration::from_millis(50);
    let mut captured = Captured::default();
    let Some(mut stream) = stream else { return captured };
    let mut buf = [0u8; 64 * 1024];
    loop {
        let tick = match stop.get() {
            None => READ_TICK,
            Some(&until) => match until.checked_duration_since(Instant::now()) {
                Some(left) if !left.is_zero() => left.min(READ_TICK),
                _ => {
                    captured.held = true;
                    break;
                }
            },
        };
        let mut fds = [PollFd::new(stream.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, PollTimeout::from(tick.as_millis().max(1) as u16)) {
            Ok(0) | Err(Errno::EINTR) => continue,
            Ok(_) => {}
            Err(_) => break,
        }
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                captured.push(&buf[..n]);
                produced.fetch_add(n as u64, Ordering::Relaxed);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    captured
}

/// `HELD_NOTE` in the text, before the exit code.
fn note_held(output: &mut Output) {
    let Some(Content::Text(text)) = output.content.first_mut() else { return };
    let at = text.rfind("[exit code:").unwrap_or(text.len());
    text.insert_str(at, &format!("{}\n", output::HELD_NOTE));
}

fn render(
    out: Captured,
    err: Captured,
    status: ExitStatus,
    timed_out: Option<u64>,
    budget: Budget,
) -> Output {
    let (stdout, stderr) = match budget.tokens() {
        None => (
            out.render(|cut| cut_note("stdout", cut, out.total)),
            err.render(|cut| cut_note("stderr", cut, err.total)),
        ),
        Some(_) => {
            // The two streams share the bound; the budget keeps room for the notes.
            let shares = reply_size::fair_shares(&[out.total, err.total], budget.left());
            let bound = budget.name();
            (
                out.render_within(shares[0], |cut| budget_note("stdout", cut, out.total, &bound)),
                err.render_within(shares[1], |cut| budget_note("stderr", cut, err.total, &bound)),
            )
        }
    };
    // The data, as the text says it: the shell's exit code, or the signal that ended it (which
    // the text shows as the shell's 128 + N).
    let structured = json!({
        "exitCode": status.code(),
        "signal": status.signal(),
        "timedOut": timed_out.is_some(),
        "stdout": stdout,
        "stderr": stderr,
        "stdoutBytes": out.total,
        "stderrBytes": err.total,
        "stdoutTruncated": out.cut(),
        "stderrTruncated": err.cut(),
    });
    let code = status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0));
    let mut text = if out.total == 0 { "(no output)".to_string() } else { stdout };
    if !text.ends_with('\n') {
        text.push('\n');
    }
    if let Some(seconds) = timed_out {
        text.push_str(&format!(
            "[timed out after {seconds} s: the command's process group got SIGTERM, then SIGKILL after {} s; output above is what it wrote until then]\n",
            GRACE.as_secs()
        ));
    }
    text.push_str(&format!("[exit code: {code}]"));
    let mut content = vec![Content::Text(text)];
    if err.total > 0 {
        content.push(Content::Text(format!("[stderr]\n{stderr}")));
    }
    let is_error = code != 0 || timed_out.is_some();
    Output { content, is_error, structured: Some(Structured::Value(structured)) }
}

/// Said where a stream's middle was cut to fit the reply's token bound, and how to see it all.
fn budget_note(stream: &str, cut: usize, total: usize, bound: &str) -> String {
    format!(
        "\n[{stream}: {cut} bytes of {total} cut here to fit the reply's {bound} bound; to see \
         them, redirect the output to a file and read it with read_file or grep_files]\n"
    )
}

/// Said where a stream's middle was cut: exactly how many bytes are not shown.
fn cut_note(stream: &str, cut: usize, total: usize) -> String {
    format!(
        "\n[{stream}: {cut} bytes cut here, between the first {} KB and the last {} KB of {total} bytes]\n",
        output::HEAD / 1024,
        output::TAIL / 1024
    )
}

/// The first `--deny-command` name that a simple command in `command` starts with. A plain
/// reading of the shell syntax, enough to stop an agent's habits: `sh -c`, `eval` or a variable
/// holding the name get around it, which is why it is a convenience and not a boundary.
fn denied_name(command: &str, denied: &[String]) -> Option<String> {
    if denied.is_empty() {
        return None;
    }
    command_names(command).into_iter().find(|name| denied.iter().any(|d| d == name))
}

/// The names of the simple commands in a shell command line: the first word of each segment
/// between `;`, `&`, `|`, newlines, parentheses, backquotes and `$(`, after any `VAR=value`
/// assignments and a few prefix words (`sudo`, `env`, `exec`, ...), as a basename.
pub fn command_names(command: &str) -> Vec<String> {
    const PREFIXES: &[&str] = &[
        "!", "{", "then", "do", "else", "elif", "if", "while", "until", "time", "exec", "command",
        "builtin", "env", "nohup", "sudo", "nice", "xargs",
    ];
    command
        .replace("$(", "(")
        .split([';', '&', '|', '\n', '(', ')', '`'])
        .filter_map(|segment| {
            segment
                .split_whitespace()
                .map(|word| word.trim_matches(|c| c == '"' || c == '\''))
                .find(|word| {
                    !word.is_empty()
                        && !PREFIXES.contains(word)
                        && !word.starts_with('-')
                        && !is_assignment(word)
                })
                .map(|word| word.rsplit('/').next().unwrap_or(word).to_string())
        })
        .collect()
}

fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(command: &str, expect: &[&str]) {
        assert_eq!(command_names(command), expect, "{command}");
    }

    #[test]
    fn simple_command_names() {
        check("ls -la", &["ls"]);
        check("FOO=1 BAR=2 /usr/bin/rm -rf x", &["rm"]);
        check("cd a && rm b; echo c | grep d", &["cd", "rm", "echo", "grep"]);
        check("sudo rm -rf /", &["rm"]);
        check("echo $(curl x) `wget y`", &["echo", "curl", "wget"]);
        check("if true; then git push; fi", &["true", "git", "fi"]);
        check("(cd x; make) &", &["cd", "make"]);
        check("'rm' x", &["rm"]);
        check("echo $HOME/bin", &["echo"]);
    }
}
