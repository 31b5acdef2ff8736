//! What one command may take, as rlimits its process sets on itself before `exec`: the data it
//! maps (memory), the size of a file it writes, the processes its user runs, and no core dumps.
//! Every process the command starts inherits them; each process counts on its own, so they
//! bound a runaway program, not a command's total (which needs a cgroup).
//!
//! Memory is `RLIMIT_DATA`, not `RLIMIT_AS`: a JVM reserves a quarter of the RAM for its heap
//! up front and V8 reserves address space for WebAssembly it never touches, so an address-space
//! limit stops them on a big host while the data they really map is small. `RLIMIT_DATA`
//! counts private writable mappings (Linux 4.7 and later), where a 50 GB allocation lands.
//!
//! `RLIMIT_NPROC` counts every process and thread of the command's real user, not the
//! command's own, and the kernel does not enforce it for root. A server that can make a pids
//! cgroup (root, with the v1 `pids` controller at `/sys/fs/cgroup/pids`) makes one at start,
//! before its sandbox, limited to the same count, and every command of the server joins it
//! (`make_pids_cgroup`): for root, the count bounds this server's commands together.
//!
//! macOS takes the same limits but enforces only some (`RLIMIT_FSIZE`, `RLIMIT_NPROC`,
//! `RLIMIT_CORE`); it has no cgroups.

use std::io;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, ExitStatus};

/// The limits of each command, `None` meaning unlimited (`--command-memory`,
/// `--command-file-size`, `--command-processes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandLimits {
    /// Bytes of data each process may map.
    pub memory: Option<u64>,
    /// The largest file each process may write, in bytes.
    pub file_size: Option<u64>,
    /// The processes and threads the command's user may run.
    pub processes: Option<u64>,
}

/// 8 GiB: far above what a build, a test run or a toolchain maps (rustc on this repository
/// peaks near 1.5 GiB), and far below what ends a host with 16 GiB and more.
pub const DEFAULT_MEMORY: u64 = 8 << 30;
/// 16 GiB: above any build artifact or database a command writes, far below a full disk.
pub const DEFAULT_FILE_SIZE: u64 = 16 << 30;
/// 4,096 processes and threads of the command's user, all of them: above what a desktop
/// session and a parallel build run together (about 1,500 on a developer's machine), and it
/// stops a fork bomb within a second.
pub const DEFAULT_PROCESSES: u64 = 4096;

impl Default for CommandLimits {
    fn default() -> CommandLimits {
        CommandLimits {
            memory: Some(DEFAULT_MEMORY),
            file_size: Some(DEFAULT_FILE_SIZE),
            processes: Some(DEFAULT_PROCESSES),
        }
    }
}

/// `setrlimit`'s resource type, which glibc names apart.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
type Resource = libc::__rlimit_resource_t;
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
type Resource = libc::c_int;

impl CommandLimits {
    /// Has `cmd`'s process set the limits on itself before it runs the program.
    pub fn apply_to(self, cmd: &mut Command) {
        #[cfg(target_os = "linux")]
        let cgroup = pids_cgroup();
        // SAFETY: the hook makes system calls only (write, getrlimit, setrlimit): no
        // allocation, no lock, as between fork and exec it must.
        unsafe {
            cmd.pre_exec(move || {
                #[cfg(target_os = "linux")]
                if let Some(procs) = cgroup {
                    // "0": the writing process itself, moved with its threads.
                    if libc::write(procs, c"0".as_ptr().cast(), 1) < 0 {
                        return Err(io::Error::last_os_error());
                    }
                }
                self.set()
            });
        }
    }

    fn set(self) -> io::Result<()> {
        set(libc::RLIMIT_CORE, Some(0))?;
        set(libc::RLIMIT_DATA, self.memory)?;
        set(libc::RLIMIT_FSIZE, self.file_size)?;
        set(libc::RLIMIT_NPROC, self.processes)
    }

    /// The line that ends the reply of a command a limit stopped, from how it ended and the
    /// end of its stderr; `None` when nothing says a limit did.
    pub fn note(self, status: ExitStatus, stderr_tail: &[u8]) -> Option<String> {
        if status.success() {
            return None;
        }
        let said = |needle: &str| memchr_find(stderr_tail, needle.as_bytes());
        // A process killed by SIGXFSZ, or a shell saying one of its children was (128 + N).
        let xfsz = libc::SIGXFSZ;
        if let Some(limit) = self.file_size {
            if status.signal() == Some(xfsz) || status.code() == Some(128 + xfsz) {
                return Some(format!(
                    "[stopped: file size limit {} per file; raise it with --command-file-size]",
                    show_size(limit)
                ));
            }
        }
        if let Some(limit) = self.memory {
            const OUT_OF_MEMORY: &[&str] = &[
                "Cannot allocate memory",
                "MemoryError",
                "memory exhausted",
                "out of memory",
                "Out of memory",
                "bad_alloc",
                "memory allocation of",
            ];
            if OUT_OF_MEMORY.iter().any(|needle| said(needle)) {
                return Some(format!(
                    "[a memory limit may have stopped it: {} of data per process; raise it with --command-memory]",
                    show_size(limit)
                ));
            }
        }
        if let Some(limit) = self.processes {
            // bash says "fork: retry: Resource temporarily unavailable", dash "Cannot fork".
            let fork_failed =
                said("Cannot fork") || (said("fork") && said("Resource temporarily unavailable"));
            if fork_failed {
                return Some(format!(
                    "[a process limit may have stopped it: {limit} processes; raise it with --command-processes]"
                ));
            }
        }
        None
    }
}

/// This server's pids cgroup, where the processes of every command it runs count together:
/// its `cgroup.procs`, opened before the sandbox (which refuses writes under `/sys`) and kept
/// open for the server's life, as a raw descriptor for the commands' `pre_exec`.
#[cfg(target_os = "linux")]
static PIDS_CGROUP: std::sync::OnceLock<std::os::fd::OwnedFd> = std::sync::OnceLock::new();

#[cfg(target_os = "linux")]
fn pids_cgroup() -> Option<std::os::fd::RawFd> {
    use std::os::fd::AsRawFd;
    PIDS_CGROUP.get().map(AsRawFd::as_raw_fd)
}

/// Where the server's pids cgroups go: one directory per server (`replay/<pid>`) under the v1
/// `pids` controller's root.
#[cfg(target_os = "linux")]
const PIDS_ROOT: &str = "/sys/fs/cgroup/pids/replay";

/// Makes this server's pids cgroup, limited to `limit` processes and threads, where the
/// controller is there and the server may (root): called at start, before the sandbox. Also
/// removes the empty cgroups of servers that have ended (a server's sandbox keeps it from
/// removing its own). Nothing when there is no limit or no controller: the rlimit alone holds.
#[cfg(target_os = "linux")]
pub fn make_pids_cgroup(limit: Option<u64>) {
    use std::fs;
    let Some(limit) = limit else { return };
    if let Ok(entries) = fs::read_dir(PIDS_ROOT) {
        for entry in entries.flatten() {
            // A live server's cgroup stays even while it runs no command; rmdir fails anyway on
            // one that holds processes.
            let name = entry.file_name();
            let alive = std::path::Path::new("/proc").join(&name).exists();
            if !alive {
                let _ = fs::remove_dir(entry.path());
            }
        }
    }
    let dir = format!("{PIDS_ROOT}/{}", std::process::id());
    let made = fs::create_dir_all(&dir)
        .and_then(|()| fs::write(format!("{dir}/pids.max"), limit.to_string()))
        .and_then(|()| fs::OpenOptions::new().write(true).open(format!("{dir}/cgroup.procs")));
    match made {
        Ok(procs) => {
            let _ = PIDS_CGROUP.set(procs.into());
            tracing::info!(%dir, limit, "commands' pids cgroup");
        }
        Err(e) => {
            let _ = fs::remove_dir(&dir);
            tracing::debug!("no pids cgroup for commands ({dir}: {e}); RLIMIT_NPROC alone");
        }
    }
}

#[cfg(not(target_os = "linux"))]
pub fn make_pids_cgroup(_limit: Option<u64>) {}

/// Sets both the soft and the hard limit of `resource` to `value`, or to the hard limit
/// already in force if that is lower (only root may raise it); nothing for `None`.
fn set(resource: Resource, value: Option<u64>) -> io::Result<()> {
    let Some(value) = value else { return Ok(()) };
    let mut now = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit and setrlimit read and write the struct they are given.
    unsafe {
        if libc::getrlimit(resource, &mut now) < 0 {
            return Err(io::Error::last_os_error());
        }
        let value = (value as libc::rlim_t).min(now.rlim_max);
        let limit = libc::rlimit { rlim_cur: value, rlim_max: value };
        if libc::setrlimit(resource, &limit) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

fn memchr_find(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|window| window == needle)
}

/// `--command-memory` and `--command-file-size`: a number of bytes with an optional binary
/// suffix, `K`, `M`, `G` or `T` (`KiB`, `KB`... alike), case-insensitive; `0` is unlimited.
pub fn parse_size(raw: &str) -> Result<Option<u64>, String> {
    let text = raw.trim();
    let digits_end = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (digits, suffix) = text.split_at(digits_end);
    let bad = || {
        format!("{raw:?} is not a size: give a number of bytes with K, M, G or T, as 512M or 8G (0: unlimited)")
    };
    let number: u64 = digits.parse().map_err(|_| bad())?;
    let shift = match suffix.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return Err(bad()),
    };
    let bytes = number.checked_mul(1 << shift).ok_or_else(bad)?;
    Ok((bytes != 0).then_some(bytes))
}

/// `--command-processes`: a count; `0` is unlimited.
pub fn parse_count(raw: &str) -> Result<Option<u64>, String> {
    let count: u64 = raw.trim().parse().map_err(|_| {
        format!("{raw:?} is not a number of processes: give one, as 512 (0: unlimited)")
    })?;
    Ok((count != 0).then_some(count))
}

/// A size as the flags take it: `64 MiB`, `8 GiB`, or bytes when it is no whole unit.
pub fn show_size(bytes: u64) -> String {
    for (shift, unit) in [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")] {
        if bytes >= 1 << shift && bytes % (1 << shift) == 0 {
            return format!("{} {unit}", bytes >> shift);
        }
    }
    format!("{bytes} bytes")
}

#[cfg(test)]
mod tests;
