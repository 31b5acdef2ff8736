//! The kernel sandbox: Landlock confines the server, and so every command it runs, to the
//! allowed directories and the system paths a shell needs.
//!
//! The policy module still refuses every tool path outside the allowed set; this is the
//! backstop the kernel enforces, which also holds execute_command to the same read-only and
//! read-write lines as the file tools. Applied once, in `main`, before any thread starts:
//! Landlock restricts the calling thread and everything it creates afterwards.
//!
//! What Landlock cannot express: a read-only root nested inside a read-write one stays
//! writable to commands (access rights only add up along a path). The file tools still
//! honor it; README says so.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use landlock::{
    path_beneath_rules, Access, AccessFs, AccessNet, BitFlags, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr, RulesetError, RulesetStatus, ABI,
};

use crate::policy::{Access as RootAccess, AllowedRoot};

#[derive(Debug, Clone, Default)]
pub struct SandboxConfig {
    pub enabled: bool,
    pub deny_network: bool,
    /// `--sandbox-read`: more directories commands may read and execute from.
    pub extra_read: Vec<PathBuf>,
}

/// What came of applying the sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    Enforced,
    /// The kernel knows an older Landlock: some rights (e.g. network) are not enforced.
    Partial,
    /// No Landlock in this kernel (or it is disabled).
    Unsupported,
    /// `--no-sandbox`.
    Disabled,
    /// Started without directories: applied when the client's first roots arrive.
    Deferred,
    Failed(String),
}

impl Status {
    /// The line list_allowed_directories adds when the sandbox is not (fully) in force.
    pub fn note(&self) -> Option<String> {
        match self {
            Status::Enforced => None,
            Status::Partial => Some("[sandbox: Landlock partly enforced: this kernel's Landlock is older than replay asks for]".into()),
            Status::Unsupported => Some("[sandbox: off: this kernel has no Landlock; execute_command is limited to its working directory by the policy only, not by the kernel]".into()),
            Status::Disabled => Some("[sandbox: off (--no-sandbox): commands run by execute_command can reach anything the user can]".into()),
            Status::Deferred => Some("[sandbox: waiting for the client's roots: no directory is allowed yet]".into()),
            Status::Failed(e) => Some(format!("[sandbox: off: Landlock could not be applied: {e}]")),
        }
    }
}

/// The Landlock ABI whose rights replay asks for; older kernels get what they support.
const ABI_WANTED: ABI = ABI::V6;

/// System directories a shell and common tools need to read and execute from.
const SYSTEM_READ: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/proc",
    "/sys", "/dev", "/var/lib", "/run",
];
/// Device files commands write to (`> /dev/null`, a terminal, random numbers).
const DEV_WRITE: &[&str] =
    &["/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/random", "/dev/urandom"];
/// Directories under /dev that commands write in.
const DEV_DIRS: &[&str] = &["/dev/pts", "/dev/shm"];

/// Restricts this thread and all it starts later. `child_tmp` is where commands get their
/// TMPDIR (`CommandTmp::parent`).
pub fn apply(
    roots: &[AllowedRoot],
    child_tmp: Option<&Path>,
    home: Option<&Path>,
    config: &SandboxConfig,
) -> Status {
    if !config.enabled {
        return Status::Disabled;
    }
    match restrict(roots, child_tmp, home, config) {
        Ok(RulesetStatus::FullyEnforced) => Status::Enforced,
        Ok(RulesetStatus::PartiallyEnforced) => Status::Partial,
        Ok(RulesetStatus::NotEnforced) => Status::Unsupported,
        Err(e) => Status::Failed(e.to_string()),
    }
}

fn restrict(
    roots: &[AllowedRoot],
    child_tmp: Option<&Path>,
    home: Option<&Path>,
    config: &SandboxConfig,
) -> Result<RulesetStatus, RulesetError> {
    let all = AccessFs::from_all(ABI_WANTED);
    let read = AccessFs::from_read(ABI_WANTED);
    let mut ruleset = Ruleset::default().handle_access(all)?;
    if config.deny_network {
        // Handled and never granted: no TCP connect or bind at all.
        ruleset = ruleset.handle_access(AccessNet::from_all(ABI_WANTED))?;
    }
    let (read_write, read_only): (Vec<&AllowedRoot>, Vec<&AllowedRoot>) =
        roots.iter().partition(|r| r.access == RootAccess::Write);
    let path_dirs = path_dirs_to_grant();
    // Git and other tools read their per-user configuration; unreadable, some of them stop.
    let home_config: Vec<PathBuf> = home
        .map(|h| vec![h.join(".gitconfig"), h.join(".config/git"), h.join(".cargo/config.toml")])
        .unwrap_or_default();
    let status = ruleset
        .create()?
        .add_rules(rules(SYSTEM_READ, read))?
        .add_rules(rules(&path_dirs, read))?
        .add_rules(rules(&config.extra_read, read))?
        // Files or directories: the crate's helper looks which.
        .add_rules(path_beneath_rules(&home_config, read))?
        .add_rules(rules(
            DEV_WRITE,
            (read | AccessFs::WriteFile) & AccessFs::from_file(ABI_WANTED),
        ))?
        .add_rules(rules(DEV_DIRS, all))?
        .add_rules(rules(child_tmp, all))?
        .add_rules(rules(read_only.iter().map(|r| &r.path), read))?
        .add_rules(rules(read_write.iter().map(|r| &r.path), all))?
        .restrict_self()?;
    Ok(status.ruleset)
}

/// One rule per directory that exists. Unlike `landlock::path_beneath_rules`, no `fstat` of its own:
/// the crate checks the file type once more when the rule is added (narrowing a file's rights to
/// those a file can have), and the sandbox is part of every start-up.
/// Directories only: a file given directory rights would make the kernel refuse the rule.
fn rules<I, P>(
    paths: I,
    access: BitFlags<AccessFs>,
) -> impl Iterator<Item = Result<PathBeneath<PathFd>, RulesetError>>
where
    I: IntoIterator<Item = P>,
    P: AsRef<Path>,
{
    paths.into_iter().filter_map(move |p| Some(Ok(PathBeneath::new(PathFd::new(p).ok()?, access))))
}

/// The `PATH` directories commands may run programs from, less those already granted: a
/// duplicate, or a directory inside a system directory with no symlink on the way down (which
/// would lead elsewhere and still need its own rule).
fn path_dirs_to_grant() -> Vec<PathBuf> {
    let Some(path) = std::env::var_os("PATH") else { return Vec::new() };
    let mut dirs: Vec<PathBuf> = Vec::new();
    for dir in std::env::split_paths(&path) {
        if !dir.is_absolute() || dirs.contains(&dir) {
            continue;
        }
        let covered = SYSTEM_READ.iter().map(Path::new).any(|sys| {
            dir.strip_prefix(sys).is_ok_and(|rest| {
                let mut below = sys.to_path_buf();
                rest.components().all(|c| {
                    below.push(c);
                    std::fs::symlink_metadata(&below).is_ok_and(|m| !m.file_type().is_symlink())
                })
            })
        });
        if !covered {
            dirs.push(dir);
        }
    }
    dirs
}

/// Where commands get a private TMPDIR: one directory per user, `$TMPDIR/replay-cmd-tmp-<uid>`
/// (mode 0700, checked to be the user's own), kept across runs, and inside it one directory per
/// server process, created at the first command and removed at exit.
///
/// The parent is granted to the sandbox (a sandboxed process cannot create or remove entries in
/// `/tmp` itself), which is what lets a confined server clean up after itself. A server killed
/// before its exit leaves its directory; the next one to run a command removes those of
/// processes that are gone.
#[derive(Debug)]
pub struct CommandTmp {
    parent: PathBuf,
    mine: OnceLock<Option<PathBuf>>,
}

impl CommandTmp {
    /// Finds or creates the per-user parent; `None` if it cannot be made safely (then commands
    /// keep the TMPDIR they inherit).
    pub fn prepare() -> Option<CommandTmp> {
        use std::os::unix::fs::{DirBuilderExt, MetadataExt};
        let uid = nix::unistd::geteuid().as_raw();
        let parent = std::env::temp_dir().join(format!("replay-cmd-tmp-{uid}"));
        match std::fs::DirBuilder::new().mode(0o700).create(&parent) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => {
                tracing::warn!(path = %parent.display(), "cannot create the commands' TMPDIR: {e}");
                return None;
            }
        }
        // Someone else's directory, or a symlink planted under a shared /tmp, is not used.
        let meta = std::fs::symlink_metadata(&parent).ok()?;
        if !meta.is_dir() || meta.uid() != uid || meta.mode() & 0o077 != 0 {
            tracing::warn!(path = %parent.display(), "not using the commands' TMPDIR: not a private directory of this user");
            return None;
        }
        Some(CommandTmp { parent, mine: OnceLock::new() })
    }

    /// This process's directory, created on first use.
    pub fn dir(&self) -> Option<&Path> {
        self.mine
            .get_or_init(|| {
                use std::os::unix::fs::DirBuilderExt;
                self.sweep();
                let dir = self.parent.join(std::process::id().to_string());
                let _ = std::fs::remove_dir_all(&dir);
                std::fs::DirBuilder::new().mode(0o700).create(&dir).ok()?;
                Some(dir)
            })
            .as_deref()
    }

    /// Removes this process's directory, if it was made.
    pub fn remove(&self) {
        if let Some(Some(dir)) = self.mine.get() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }

    /// Removes the directories of servers that are no longer running.
    fn sweep(&self) {
        let Ok(entries) = std::fs::read_dir(&self.parent) else { return };
        for entry in entries.flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
                continue;
            };
            let gone = matches!(
                nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None),
                Err(nix::errno::Errno::ESRCH)
            );
            if gone && pid > 0 {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }

    pub fn parent(&self) -> &Path {
        &self.parent
    }
}
