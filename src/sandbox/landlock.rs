//! Landlock: the server, and so every command it runs, may open only the allowed directories
//! and the system paths a shell needs.
//!
//! The policy module still refuses every tool path outside the allowed set; this is the
//! backstop the kernel enforces, which also holds execute_command to the same read-only and
//! read-write lines as the file tools. Landlock restricts the calling thread and what it
//! creates afterwards, so it is applied before any thread that does file work exists.
//!
//! What Landlock cannot express: a read-only root nested inside a read-write one stays
//! writable (access rights only add up along a path), and metadata (modes, owners, times,
//! extended attributes) is not covered at all. The mount namespace holds both (`namespace`).

use std::path::{Path, PathBuf};

use std::os::fd::OwnedFd;

use landlock::{
    path_beneath_rules, Access, AccessFs, AccessNet, BitFlags, PathBeneath, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetError, RulesetStatus, Scope, ABI,
};

use super::grants::{Grant, Reach};
use super::namespace::Fresh;
use super::{Kernel, SandboxConfig, DEV_NODES, SYSTEM_READ};
use crate::policy::{Access as RootAccess, AllowedRoot};

/// The Landlock ABI whose rights replay asks for; older kernels get what they support.
const ABI_WANTED: ABI = ABI::V6;

/// Restricts this thread and all it starts later. `child_tmp` is this server's own TMPDIR for
/// commands (`CommandTmp::dir`); `overlays` the roots of the caches' copies in the commands'
/// namespace, which commands write (an overlay's files are not the real directory's: a rule
/// on the real one does not reach them).
pub fn apply(
    roots: &[AllowedRoot],
    child_tmp: Option<&Path>,
    grants: &[Grant],
    fresh: &Fresh,
    host_pts: bool,
    config: &SandboxConfig,
) -> Kernel {
    match restrict(roots, child_tmp, grants, fresh, host_pts, config) {
        Ok(RulesetStatus::FullyEnforced) => Kernel::Enforced,
        Ok(RulesetStatus::PartiallyEnforced) => Kernel::Partial,
        Ok(RulesetStatus::NotEnforced) => Kernel::Unsupported,
        Err(e) => Kernel::Failed(e.to_string()),
    }
}

fn restrict(
    roots: &[AllowedRoot],
    child_tmp: Option<&Path>,
    grants: &[Grant],
    fresh: &Fresh,
    host_pts: bool,
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
    let granted = |reach: Reach| grants.iter().filter(move |g| g.reach == reach).map(|g| &g.path);
    // Configuration is read, never run.
    let config_files: Vec<&PathBuf> = granted(Reach::Read).collect();
    let no_ioctl = all & !BitFlags::from(AccessFs::IoctlDev);
    let remove = AccessFs::ReadDir | AccessFs::RemoveDir | AccessFs::RemoveFile;
    let device_file = (read | AccessFs::WriteFile)
        & AccessFs::from_file(ABI_WANTED)
        & !(AccessFs::Execute | AccessFs::IoctlDev);
    // The server opens the pseudo-terminals of `tty` sessions: the host's `/dev/ptmx` and a
    // replica under the host's `/dev/pts`, with the ioctls that set one up (unlock, number,
    // window size). Only where commands cannot reach either path: in the namespace both lie
    // under its own devpts. The replica's rights are fixed when the server opens it, so the
    // command that inherits it can set its modes. Nothing else under /dev gets ioctls.
    let host_pty: &[&str] = if host_pts { &["/dev/pts"] } else { &[] };
    let host_ptmx: &[&str] = if host_pts { &["/dev/ptmx"] } else { &[] };
    let status = ruleset
        .create()?
        .add_rules(rules(SYSTEM_READ, read))?
        .add_rules(grant_rules(granted(Reach::Run), read))?
        // Files or directories: the crate's helper looks which.
        .add_rules(path_beneath_rules(config_files, read & !BitFlags::from(AccessFs::Execute)))?
        .add_rules(grant_rules(granted(Reach::Write), all))?
        .add_rules(fd_rules(&fresh.overlays, all))?
        // /dev lists, but only these nodes open (`DEV_NODES`).
        .add_rules(rules(["/dev"], BitFlags::from(AccessFs::ReadDir)))?
        .add_rules(rules(
            DEV_NODES,
            (read | AccessFs::WriteFile)
                & AccessFs::from_file(ABI_WANTED)
                & !BitFlags::from(AccessFs::Execute),
        ))?
        // No device ioctls on terminals: with them a command could push keystrokes into the
        // user's terminal (TIOCSTI) or change its settings. Opening, reading and writing stay.
        .add_rules(rules(host_pty, all))?
        .add_rules(rules(host_ptmx, device_file | AccessFs::IoctlDev))?
        // `/dev/shm` only as the namespace's own tmpfs (by descriptor): the host's holds other
        // programs' shared memory. Without the namespace, none.
        .add_rules(fd_rules(&fresh.device_dirs, no_ioctl))?
        .add_rules(fd_rules(&fresh.device_files, device_file))?
        .add_rules(rules(child_tmp, all))?
        // The caches' copies (`tmp::layers`), which the server empties at exit: to list and
        // remove only. Commands write them through the overlays, whose rules are by
        // descriptor; in the namespace an empty tmpfs covers this path.
        .add_rules(rules(child_tmp.map(super::tmp::layers), remove))?
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
) -> impl Iterator<Item = Result<PathBeneath<OwnedFd>, RulesetError>>
where
    I: IntoIterator<Item = P>,
    P: AsRef<Path>,
{
    paths.into_iter().filter_map(move |p| Some(Ok(PathBeneath::new(path_fd(p)?, access))))
}

/// `path` opened with `O_PATH`, as a rule's parent. Not `landlock::PathFd`: it opens through
/// std's `custom_flags`, which on musl (the static release binaries) masks `O_PATH` out, as
/// musl's `O_ACCMODE` includes it. Opened for reading instead, `/dev/tty` fails without a
/// terminal, and `/` is refused once the server's own domain is in force.
fn path_fd(path: impl AsRef<Path>) -> Option<OwnedFd> {
    use nix::fcntl::OFlag;
    nix::fcntl::open(path.as_ref(), OFlag::O_PATH | OFlag::O_CLOEXEC, nix::sys::stat::Mode::empty())
        .ok()
}

/// One rule per descriptor: the namespace's own mounts (`namespace::Fresh`).
fn fd_rules(
    fds: &[OwnedFd],
    access: BitFlags<AccessFs>,
) -> impl Iterator<Item = Result<PathBeneath<&OwnedFd>, RulesetError>> {
    fds.iter().map(move |fd| Ok(PathBeneath::new(fd, access)))
}

/// One rule per granted directory, opened following no symlink: a grant is a path without
/// symlinks (`grants::toolchains`), so one met now was planted since, and leads where a
/// command chose.
fn grant_rules<'a>(
    paths: impl Iterator<Item = &'a PathBuf> + 'a,
    access: BitFlags<AccessFs>,
) -> impl Iterator<Item = Result<PathBeneath<OwnedFd>, RulesetError>> + 'a {
    use std::os::fd::FromRawFd;
    use std::os::unix::ffi::OsStrExt;
    paths.filter_map(move |path| {
        let path = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
        let fd = super::namespace::open_dir(&path).ok()?;
        // SAFETY: `open_dir` returned a descriptor owned from here on.
        Some(Ok(PathBeneath::new(unsafe { OwnedFd::from_raw_fd(fd) }, access)))
    })
}

/// A ruleset for each command's own domain, nested in the server's: built once, entered by
/// every command (`enter`). It takes away no file access: it handles `Execute` and `Refer`,
/// both granted beneath `/`, where the server's domain still decides. (A layer that does not
/// grant `Refer` refuses every rename or hard link into another directory with EXDEV, whether
/// it handles the right or not; the server's domain grants it in the read-write roots and the
/// commands' TMPDIR only.) Being a domain apart:
///
/// - a command cannot trace the server or a sibling command (Landlock lets a domain trace only
///   its own and nested ones), which also keeps it from their memory through `/proc`;
/// - with ABI 6 or newer, it cannot signal a process outside its domain (the server, a
///   sibling) nor connect to an abstract Unix socket made outside it (`Scope`).
///
/// `None` where the kernel has no Landlock.
pub fn command_domain() -> Option<OwnedFd> {
    let root = path_fd("/")?;
    let built = Ruleset::default()
        .handle_access(AccessFs::Execute | AccessFs::Refer)
        .and_then(|r| r.scope(Scope::Signal | Scope::AbstractUnixSocket))
        .and_then(|r| r.create())
        .and_then(|r| r.add_rule(PathBeneath::new(root, AccessFs::Execute | AccessFs::Refer)));
    match built {
        Ok(created) => created.into(),
        Err(e) => {
            tracing::warn!("cannot build the commands' Landlock domain: {e}");
            None
        }
    }
}

/// Enters the domain of `ruleset` (`command_domain`). For a command's process between `fork`
/// and `exec`, after `no_new_privs`: one system call, no allocation.
pub fn enter(ruleset: std::os::fd::RawFd) -> std::io::Result<()> {
    // SAFETY: a plain system call on a descriptor the caller holds open.
    if unsafe { libc::syscall(libc::SYS_landlock_restrict_self, ruleset, 0) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
