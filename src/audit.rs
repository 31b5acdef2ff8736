//! The audit log (`--audit-log FILE`): one JSON line per `tools/call`, saying who called which
//! tool on what, and how it went; never file contents or command output.
//!
//! Each line is one `write(2)` to a file opened with `O_APPEND`, so a server killed at any
//! moment leaves whole lines (the kernel appends a regular file's write whole, or not at all
//! short of a full disk). A timer thread `fdatasync`s the file once a second when lines were
//! written since, not after each line: a sync costs milliseconds, and a burst of calls would
//! wait for each.
//!
//! Past the size bound the log rotates: its lines are copied over `FILE.1` (the one old file
//! kept) and `FILE` is emptied. Both files are opened at start, before the sandbox, and
//! rotation works on the open descriptors only, since Landlock lets the server create and
//! rename nothing outside the allowed directories. A crash between the copy and the emptying
//! leaves the last lines in both files, never in neither.

use std::fs::{File, OpenOptions};
use std::io::{self, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::time::{Duration, SystemTime};

use serde_json::{json, Value};

/// The default size bound: 64 MiB, about 200,000 calls.
pub const DEFAULT_MAX_BYTES: u64 = 64 << 20;

/// How often written lines are made durable.
const SYNC_EVERY: Duration = Duration::from_secs(1);

#[derive(Debug)]
pub struct AuditLog {
    /// Where it is, canonical.
    pub path: PathBuf,
    files: Mutex<Files>,
    /// Lines were written since the last sync.
    dirty: AtomicBool,
    /// `FILE`'s size that sets off rotation; 0 never rotates.
    max_bytes: u64,
    /// The client's name and version, from `initialize`.
    client: Mutex<(String, String)>,
    syncer: Once,
}

#[derive(Debug)]
struct Files {
    current: File,
    old: File,
    size: u64,
}

/// What one call did, as the log records it.
#[derive(Debug)]
pub struct Record<'a> {
    pub tool: &'a str,
    /// The paths the call named, resolved where the policy allowed them.
    pub paths: Vec<String>,
    /// `execute_command`'s (or a session's) command text.
    pub command: Option<&'a str>,
    /// `Ok` or the error code; `None` when the client cancelled the call.
    pub outcome: Option<Result<(), i32>>,
    pub bytes_in: usize,
    pub bytes_out: usize,
    pub duration: Duration,
}

impl AuditLog {
    /// Opens (or creates, mode 0600) `path` and `path.1`. `Err` says why, for a usage error.
    pub fn open(path: &Path, max_bytes: u64) -> Result<Arc<AuditLog>, String> {
        let failed = |path: &Path, e: io::Error| {
            format!(
                "replay: --audit-log {}: cannot open it ({e}); give a file in a directory you \
                 can write",
                path.display()
            )
        };
        let current = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .mode(0o600)
            .open(path)
            .map_err(|e| failed(path, e))?;
        let old_path = old_path(path);
        let old = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&old_path)
            .map_err(|e| failed(&old_path, e))?;
        let size = current.metadata().map_err(|e| failed(path, e))?.len();
        let canonical = std::fs::canonicalize(path).map_err(|e| failed(path, e))?;
        Ok(Arc::new(AuditLog {
            path: canonical,
            files: Mutex::new(Files { current, old, size }),
            dirty: AtomicBool::new(false),
            max_bytes,
            client: Mutex::new((String::new(), String::new())),
            syncer: Once::new(),
        }))
    }

    /// The client named in `initialize`.
    pub fn set_client(&self, name: &str, version: &str) {
        *self.client.lock().unwrap_or_else(|e| e.into_inner()) =
            (name.to_string(), version.to_string());
    }

    /// Appends one line for `record`. A failure is logged, never the call's.
    pub fn record(self: &Arc<Self>, record: &Record<'_>) {
        // Started by the first line, after the sandbox: a thread started before it would not
        // be confined.
        self.syncer.call_once(|| self.start_syncer());
        let mut line = self.line(record).to_string();
        line.push('\n');
        let mut files = self.files.lock().unwrap_or_else(|e| e.into_inner());
        if self.max_bytes > 0 && files.size > 0 && files.size + line.len() as u64 > self.max_bytes {
            if let Err(e) = files.rotate() {
                tracing::warn!("audit log: cannot rotate: {e}");
            }
        }
        match (&files.current).write(line.as_bytes()) {
            Ok(n) => {
                files.size += n as u64;
                if n < line.len() {
                    tracing::warn!("audit log: a line was cut short ({n} of {} bytes)", line.len());
                }
                self.dirty.store(true, Ordering::Release);
            }
            Err(e) => tracing::warn!("audit log: cannot write: {e}"),
        }
    }

    fn line(&self, record: &Record<'_>) -> Value {
        let (name, version) = self.client.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let outcome = match record.outcome {
            Some(Ok(())) => json!("ok"),
            Some(Err(code)) => json!(code),
            None => json!("cancelled"),
        };
        let mut line = json!({
            "time": rfc3339_utc(SystemTime::now()),
            "client": {"name": name, "version": version},
            "tool": record.tool,
            "paths": record.paths,
            "outcome": outcome,
            "bytesIn": record.bytes_in,
            "bytesOut": record.bytes_out,
            "durationMs": record.duration.as_secs_f64() * 1000.0,
        });
        if let Some(command) = record.command {
            line["command"] = json!(command);
        }
        line
    }

    fn start_syncer(self: &Arc<Self>) {
        let log = Arc::downgrade(self);
        let started = std::thread::Builder::new().name("audit-sync".into()).spawn(move || loop {
            std::thread::sleep(SYNC_EVERY);
            let Some(log) = log.upgrade() else { return };
            if log.dirty.swap(false, Ordering::AcqRel) {
                let files = log.files.lock().unwrap_or_else(|e| e.into_inner());
                if let Err(e) = files.current.sync_data() {
                    tracing::warn!("audit log: cannot sync: {e}");
                }
            }
        });
        if let Err(e) = started {
            tracing::warn!("audit log: no sync thread ({e}); lines are synced by the OS only");
        }
    }
}

impl Drop for AuditLog {
    fn drop(&mut self) {
        let files = self.files.lock().unwrap_or_else(|e| e.into_inner());
        let _ = files.current.sync_data();
    }
}

impl Files {
    /// `FILE`'s lines over `FILE.1`, then `FILE` emptied.
    fn rotate(&mut self) -> io::Result<()> {
        self.old.set_len(0)?;
        (&self.old).seek(SeekFrom::Start(0))?;
        (&self.current).seek(SeekFrom::Start(0))?;
        io::copy(&mut &self.current, &mut &self.old)?;
        self.old.sync_data()?;
        self.current.set_len(0)?;
        self.size = 0;
        Ok(())
    }
}

/// `FILE.1`.
pub fn old_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".1");
    PathBuf::from(name)
}

/// `2026-11-28T17:45:03.123Z`.
fn rfc3339_utc(time: SystemTime) -> String {
    let since = time.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (hour, minute, second) = (rest / 3600, rest % 3600 / 60, rest % 60);
    // Days to a civil date (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}.{:03}Z",
        since.subsec_millis()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339() {
        let check = |secs: u64, expect: &str| {
            let time = SystemTime::UNIX_EPOCH + Duration::from_millis(secs);
            assert_eq!(rfc3339_utc(time), expect);
        };
        check(0, "1970-01-01T00:00:00.000Z");
        check(951_782_400_000, "2000-02-29T00:00:00.000Z");
        check(1_795_887_903_123, "2026-11-28T17:45:03.123Z");
    }
}
