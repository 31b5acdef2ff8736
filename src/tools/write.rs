//! write_file, and the atomic write every writer uses: temp file beside the target, fsync,
//! rename, the original's permissions kept.

use std::collections::HashSet;
use std::fs::{self, File};
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{LazyLock, Mutex};

use serde::Deserialize;

use crate::error::ToolError;
use crate::tools::{Ctx, Output};

#[derive(Deserialize)]
pub struct WriteFileArgs {
    path: String,
    content: String,
}

pub fn write_file(ctx: &Ctx, args: WriteFileArgs) -> Result<Output, ToolError> {
    let resolved = ctx.policy.resolve_write(&args.path)?;
    if let Some(parent) = resolved.real.parent() {
        fs::create_dir_all(parent)
            .map_err(|e| ToolError::io("create parent directories", &resolved.shown, e))?;
    }
    atomic_write(&resolved.real, args.content.as_bytes())
        .map_err(|e| ToolError::io("write", &resolved.shown, e))?;
    Ok(Output::text(format!("Successfully wrote {}", resolved.shown.display())))
}

/// The prefix of every temp file replay creates, so that a leftover one (the server killed
/// between create and rename) is recognizably replay's. The full name is
/// `.replay-tmp.<pid>.<n>`: the pid tells whether its writer can still be running.
pub const TEMP_PREFIX: &str = ".replay-tmp.";

/// Replaces `path` with `bytes` so that a reader (or a crash) sees the old content or the new,
/// never a mix. An existing file keeps its permissions and, where allowed, its owner.
///
/// The first time this process writes into a directory, it first removes the temp files that
/// killed servers left there (see `sweep_stale_temps`).
pub fn atomic_write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let existing = match fs::metadata(path) {
        Ok(meta) if meta.is_dir() => return Err(io::Error::from(io::ErrorKind::IsADirectory)),
        Ok(meta) => Some(meta),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    let dir = path.parent().unwrap_or(Path::new("/"));
    sweep_stale_temps(dir);
    let (tmp_path, mut tmp) = create_temp(dir, existing.as_ref().map(|m| m.mode() & 0o7777))?;
    let result = (|| {
        tmp.write_all(bytes)?;
        if let Some(meta) = &existing {
            // The create mode was filtered by the umask; restore the original bits exactly.
            tmp.set_permissions(fs::Permissions::from_mode(meta.mode() & 0o7777))?;
            // Only root may give a file away; for anyone else this fails and the owner is theirs.
            let _ = std::os::unix::fs::fchown(&tmp, Some(meta.uid()), Some(meta.gid()));
        }
        tmp.sync_all()?;
        fs::rename(&tmp_path, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp_path);
    }
    result?;
    // Make the rename itself durable.
    if let Ok(dir) = File::open(dir) {
        let _ = dir.sync_all();
    }
    Ok(())
}

/// Removes the `.replay-tmp.<pid>.<n>` files in `dir` whose `<pid>` is not a running process:
/// what a server killed between creating its temp file and renaming it left behind. A temp
/// file of a live process (this one included) is never touched, nor is any other name.
///
/// Runs at most once per directory per process: one `readdir` of `dir` alone (never its
/// subdirectories) on the first write there, nothing on later ones, so repeated writes cost a
/// set lookup. A file left by a server killed after that first write stays until the next
/// process writes there.
///
/// "Not running" means `kill(pid, 0)` fails with `ESRCH`; `EPERM` (another user's process, or
/// one outside a Landlock signal scope) counts as running. A server in another pid namespace
/// sharing the directory looks dead from here: its temp file would be removed and that one
/// write fail (its rename finds no file), never leaving a mix. A reused pid only keeps a stale
/// file a while longer.
fn sweep_stale_temps(dir: &Path) {
    // One path per directory written to, for the life of the process.
    static SWEPT: LazyLock<Mutex<HashSet<PathBuf>>> = LazyLock::new(Mutex::default);
    let first_time = SWEPT.lock().unwrap_or_else(|e| e.into_inner()).insert(dir.to_path_buf());
    if !first_time {
        return;
    }
    let Ok(entries) = fs::read_dir(dir) else { return };
    let own_pid = nix::unistd::getpid();
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(temp_file_pid) else { continue };
        // create_temp makes regular files only (O_NOFOLLOW, create_new).
        let is_file = entry.file_type().is_ok_and(|t| t.is_file());
        if pid == own_pid || !is_file {
            continue;
        }
        if nix::sys::signal::kill(pid, None) != Err(nix::errno::Errno::ESRCH) {
            continue;
        }
        match fs::remove_file(entry.path()) {
            Ok(()) => tracing::info!(path = %entry.path().display(), "removed a stale temp file"),
            Err(e) => tracing::debug!(path = %entry.path().display(), "stale temp file: {e}"),
        }
    }
}

/// The `<pid>` of a temp file name `.replay-tmp.<pid>.<n>`, both parts decimal; `None` for any
/// other name.
fn temp_file_pid(name: &str) -> Option<nix::unistd::Pid> {
    let (pid, n) = name.strip_prefix(TEMP_PREFIX)?.split_once('.')?;
    let decimal = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !decimal(pid) || !decimal(n) {
        return None;
    }
    let pid: i32 = pid.parse().ok().filter(|&pid| pid > 0)?;
    Some(nix::unistd::Pid::from_raw(pid))
}

fn create_temp(dir: &Path, mode: Option<u32>) -> io::Result<(PathBuf, File)> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let tmp_path = dir.join(format!("{TEMP_PREFIX}{}.{n}", std::process::id()));
        let opened = File::options()
            .write(true)
            .create_new(true)
            .mode(mode.unwrap_or(0o666))
            .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
            .open(&tmp_path);
        match opened {
            Ok(file) => return Ok((tmp_path, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}
