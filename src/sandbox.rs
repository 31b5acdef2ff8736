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

use landlock::{
    path_beneath_rules, Access, AccessFs, AccessNet, Ruleset, RulesetAttr, RulesetCreatedAttr,
    RulesetError, RulesetStatus, ABI,
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

/// Restricts this thread and all it starts later. `child_tmp` is the TMPDIR commands get.
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
    let path_dirs: Vec<PathBuf> =
        std::env::var_os("PATH").map(|p| std::env::split_paths(&p).collect()).unwrap_or_default();
    // Git and other tools read their per-user configuration; unreadable, some of them stop.
    let home_config: Vec<PathBuf> = home
        .map(|h| vec![h.join(".gitconfig"), h.join(".config/git"), h.join(".cargo/config.toml")])
        .unwrap_or_default();
    let status = ruleset
        .create()?
        .add_rules(path_beneath_rules(SYSTEM_READ, read))?
        .add_rules(path_beneath_rules(&path_dirs, read))?
        .add_rules(path_beneath_rules(&config.extra_read, read))?
        .add_rules(path_beneath_rules(&home_config, read))?
        .add_rules(path_beneath_rules(DEV_WRITE, read | AccessFs::WriteFile))?
        .add_rules(path_beneath_rules(DEV_DIRS, all))?
        .add_rules(path_beneath_rules(child_tmp, all))?
        .add_rules(path_beneath_rules(read_only.iter().map(|r| &r.path), read))?
        .add_rules(path_beneath_rules(read_write.iter().map(|r| &r.path), all))?
        .restrict_self()?;
    Ok(status.ruleset)
}

/// A private TMPDIR for commands, created before the sandbox so that it can be granted; the
/// only place outside the allowed directories they may write.
pub fn create_child_tmpdir() -> Option<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let dir = std::env::temp_dir().join(format!("replay-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::DirBuilder::new().mode(0o700).create(&dir).ok()?;
    Some(dir)
}
