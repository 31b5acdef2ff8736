//! write_file, and the atomic write every writer uses: temp file beside the target, fsync,
//! rename, the original's permissions kept.

use std::fs::{self, File};
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

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
/// between create and rename) is recognizably replay's.
pub const TEMP_PREFIX: &str = ".replay-tmp.";

/// Replaces `path` with `bytes` so that a reader (or a crash) sees the old content or the new,
/// never a mix. An existing file keeps its permissions and, where allowed, its owner.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let existing = match fs::metadata(path) {
        Ok(meta) if meta.is_dir() => return Err(io::Error::from(io::ErrorKind::IsADirectory)),
        Ok(meta) => Some(meta),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    let dir = path.parent().unwrap_or(Path::new("/"));
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
