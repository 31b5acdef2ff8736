//! command_session, and execute_command's `background` and `tty`: start a session, read its
//! output by offset, feed it input, kill it, list the sessions.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use super::session::{self, exit_code, Reading};
use super::spill::Spill;
use super::{spawn, working_directory, ExecArgs, Streams, FOREGROUND_TIMEOUT};
use crate::error::ToolError;
use crate::tools::{Content, Ctx, Output, Structured};

/// The most output one reply reads: what the reply's budget holds (the rest is read from the
/// next offset the reply names).
fn read_cap(ctx: &Ctx) -> u64 {
    ctx.settings.budget().left() as u64
}

/// How long a session's first call waits for the command to end, unless `waitSeconds` says.
const FIRST_WAIT: u64 = 10;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionArgs {
    session: Option<u64>,
    input: Option<String>,
    #[serde(default)]
    close_input: bool,
    #[serde(default)]
    wait_seconds: u64,
    offset: Option<u64>,
    #[serde(default)]
    kill: bool,
}

/// execute_command with `background` or `tty`: starts a session and waits up to `waitSeconds`
/// for it to end; the reply has its output so far and its id.
pub fn start(ctx: &Ctx, args: &ExecArgs) -> Result<Output, ToolError> {
    let cwd = working_directory(ctx, args.working_directory.as_deref())?;
    let slot = session::make_room()?;
    let mut plumbing = if args.tty {
        session::terminal().map_err(|e| {
            let op = "open a pseudo-terminal for tty: true (run without tty: this system or its sandbox has none)";
            ToolError::io(op, Path::new("/dev/ptmx"), e)
        })?
    } else {
        session::pipes()
            .map_err(|e| ToolError::io("make the session's pipes", Path::new("/"), e))?
    };
    let dir = spill_dir(ctx);
    let spill = Spill::create(&dir).map_err(|e| ToolError::io("make a spill file in", &dir, e))?;
    let io = Streams {
        stdin: std::mem::replace(&mut plumbing.stdin, Stdio::null()),
        stdout: std::mem::replace(&mut plumbing.stdout, Stdio::null()),
        stderr: std::mem::replace(&mut plumbing.stderr, Stdio::null()),
        tty: plumbing.tty,
    };
    let wait =
        Duration::from_secs(args.timeout.unwrap_or(FOREGROUND_TIMEOUT).min(FOREGROUND_TIMEOUT));
    let asked = std::time::Instant::now();
    let child = spawn(ctx, &args.command, &cwd, io, wait)?;
    // The wait for the deny rules' covers counts against the session's timeout.
    let timeout = args.timeout.map(|t| t.saturating_sub(asked.elapsed().as_secs()).max(1));
    let session = session::start(slot, &args.command, child, plumbing, spill, timeout)?;
    let wait = args.wait_seconds.unwrap_or(FIRST_WAIT);
    // An offset no output reaches: only the end (or cancellation) stops the wait.
    session.wait(ctx, u64::MAX, Some(Duration::from_secs(wait)));
    if ctx.cancel.is_cancelled() {
        session.abandon();
        return Ok(Output::text("(cancelled)"));
    }
    let reading = session.read(0, read_cap(ctx))?;
    let structured = json!({
        "exitCode": reading.exit.and_then(|s| s.code()),
        "signal": reading.exit.and_then(|s| s.signal()),
        "timedOut": reading.timed_out,
        "stdout": reading.output,
        "stderr": "",
        "stdoutBytes": reading.next + reading.more,
        "stderrBytes": 0,
        "stdoutTruncated": reading.more > 0,
        "stderrTruncated": false,
        "session": reading.session,
    });
    Ok(reply(&reading, structured))
}

/// The server's TMPDIR for commands, where spill files go (unnamed, so no command reaches
/// them), else the system's.
fn spill_dir(ctx: &Ctx) -> PathBuf {
    match &ctx.settings.command_tmp {
        Some(tmp) => tmp.dir().to_path_buf(),
        None => std::env::temp_dir(),
    }
}

pub fn command_session(ctx: &Ctx, args: SessionArgs) -> Result<Output, ToolError> {
    let Some(id) = args.session else {
        if args.input.is_some() || args.close_input || args.kill || args.offset.is_some() {
            return Err(ToolError::invalid_params(
                "session",
                "is required with input, closeInput, kill and offset; call with no arguments to list the sessions",
            ));
        }
        return Ok(list());
    };
    let session = session::find(id)?;
    let offset = args.offset.unwrap_or_else(|| session.cursor());
    // Checked before any input is sent: a bad call changes nothing.
    session.check_offset(offset)?;
    if let Some(input) = &args.input {
        session.write_input(ctx, input)?;
    }
    if args.close_input {
        session.close_input(ctx)?;
    }
    if args.kill {
        session.kill(ctx)?;
    }
    let wait = (args.wait_seconds > 0).then(|| Duration::from_secs(args.wait_seconds));
    session.wait(ctx, offset, wait);
    if ctx.cancel.is_cancelled() {
        return Ok(Output::text("(cancelled)"));
    }
    let reading = session.read(offset, read_cap(ctx))?;
    let structured = json!({
        "session": reading.session,
        "output": reading.output,
        "exitCode": reading.exit.map(exit_code),
        "nextOffset": reading.next,
        "dropped": reading.dropped,
    });
    Ok(reply(&reading, structured))
}

fn reply(reading: &Reading, structured: serde_json::Value) -> Output {
    let is_error = reading.exit.is_some_and(|status| exit_code(status) != 0);
    Output {
        content: vec![Content::Text(reading.text())],
        is_error,
        structured: Some(Structured::Value(structured)),
    }
}

/// Every session kept: id, state, running time, output size, command.
fn list() -> Output {
    let summaries: Vec<_> = session::all().iter().map(|s| s.summary()).collect();
    let mut text = String::new();
    for s in &summaries {
        let state = match s.exit {
            None => "running".to_string(),
            Some(status) => format!("exit code: {}", exit_code(status)),
        };
        text.push_str(&format!(
            "{}\t[{state}]\t{} s\t{} bytes\t{}\n",
            s.session, s.seconds, s.bytes, s.command
        ));
    }
    if summaries.is_empty() {
        text.push_str("(no sessions)");
    }
    let sessions: Vec<_> = summaries
        .iter()
        .map(|s| {
            json!({
                "session": s.session,
                "command": s.command,
                "exitCode": s.exit.map(exit_code),
                "seconds": s.seconds,
                "bytes": s.bytes,
            })
        })
        .collect();
    Output {
        content: vec![Content::Text(text.trim_end().to_string())],
        is_error: false,
        structured: Some(Structured::Value(json!({ "sessions": sessions }))),
    }
}
