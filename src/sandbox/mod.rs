//! The kernel sandbox around the server and the commands it runs. On Linux it is in layers
//! (docs/security.md has the table of what each blocks):
//!
//! - `landlock`: the server and its commands may open only the allowed directories and the
//!   system paths a shell needs;
//! - `namespace`: a mount namespace where everything is read-only but the read-write roots,
//!   so a command changes no metadata (modes, owners, times, extended attributes) outside
//!   them, nor anything under a read-only root; and a PID namespace per command, whose init
//!   (the exec module's lifeline) ends every process in it with the command or the server;
//! - `seccomp`: a filter in each command refusing what reaches into other processes (`ptrace`
//!   and the like) and, where no namespace can be made, every metadata change, inside the
//!   read-write roots too;
//! - `capabilities`: commands hold none, even as root;
//! - `grants`: what commands reach besides the roots and the system (toolchains, their
//!   caches, `--sandbox-read`/`--sandbox-write`), never a credential; and the refusal hint.
//!
//! `prepare` runs at start-up: it makes the commands' TMPDIR (`tmp`). `Sandbox::apply` has a
//! helper process make the namespace and mount in it, then applies Landlock; a server started
//! without directories calls it when the client's first roots arrive. Each command joins the namespace, drops its capabilities, enters
//! a Landlock domain of its own and installs the filter (`CommandConfinement`). These modules are Linux-only.
//!
//! On macOS it is one layer, `seatbelt`: the server applies to itself a Seatbelt profile made
//! from the allowed directories (`profile`, a pure function compiled on every OS so that its
//! tests run on Linux too), and every command inherits it. It covers what Landlock and the
//! namespace cover together, metadata included.

#[cfg(target_os = "linux")]
mod capabilities;
// On macOS commands inherit the server's Seatbelt profile and no cover is made: the field that
// holds one stays `None` there.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
mod covering;
pub mod grants;
#[cfg(target_os = "linux")]
mod hidden;
#[cfg(target_os = "linux")]
mod landlock;
#[cfg(target_os = "linux")]
mod namespace;
// Compiled on every OS so that its tests run on Linux; only macOS applies it (`seatbelt`).
#[cfg_attr(not(target_os = "macos"), allow(dead_code))]
pub mod profile;
#[cfg(target_os = "macos")]
mod seatbelt;
#[cfg(target_os = "linux")]
mod seccomp;
pub mod tmp;

use std::path::PathBuf;
use std::sync::Arc;

use crate::policy::deny::DenyRules;
use crate::policy::AllowedRoot;
pub use covering::NotCovered;
#[cfg(target_os = "linux")]
use covering::{Covering, Forked};
use tmp::CommandTmp;

#[derive(Debug, Clone, Default)]
pub struct SandboxConfig {
    pub enabled: bool,
    pub deny_network: bool,
    /// `--sandbox-read`: more directories commands may read and execute from.
    pub extra_read: Vec<PathBuf>,
    /// `--sandbox-write`: directories commands may write (the file tools may not).
    pub extra_write: Vec<PathBuf>,
    /// `--sandbox-strict`: no toolchain grants (`grants::toolchains`).
    pub strict: bool,
    /// `--deny` and the default rules: what existed of them at start is hidden from commands.
    pub deny: Arc<DenyRules>,
}

impl SandboxConfig {
    /// What commands may reach besides the roots and the system, on this machine now.
    /// `roots`: commands write in those allowed read-write.
    pub fn grants(
        &self,
        home: Option<&std::path::Path>,
        roots: &[AllowedRoot],
    ) -> Vec<grants::Grant> {
        use crate::policy::Access;
        let writable = roots.iter().filter(|r| r.access == Access::Write);
        let writable = writable.map(|r| r.path.clone()).collect();
        let env = grants::Environment::current(home, writable);
        // Most paths asked about do not exist (each credential name under each candidate):
        // one `stat` says so, where `canonicalize` reads every link on the way first. With
        // rustup and pyenv in the home, 1,100 lookups made 4,600 `readlink` calls, 11 ms of a
        // 16 ms start.
        let resolve = |path: &std::path::Path| {
            std::fs::metadata(path).ok()?;
            std::fs::canonicalize(path).ok()
        };
        grants::toolchains(&env, self.strict, &self.extra_read, &self.extra_write, &resolve)
    }
}

/// The kernel's access control: Landlock on Linux, Seatbelt on macOS.
#[cfg(target_os = "linux")]
const MECHANISM: &str = "Landlock";
#[cfg(not(target_os = "linux"))]
const MECHANISM: &str = "Seatbelt";

/// What came of the kernel's access control ([`MECHANISM`]).
#[derive(Debug, Clone, PartialEq, Eq)]
// `Partial` and `Unsupported` are Landlock's.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub enum Kernel {
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

/// How commands are kept from changing metadata outside the read-write roots.
#[derive(Debug, Clone, PartialEq, Eq)]
// Each OS constructs its own variants: Linux all but `Seatbelt`, macOS `Seatbelt` and `Off`.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
#[cfg_attr(not(target_os = "macos"), allow(dead_code))]
pub enum Isolation {
    /// The read-only mount namespace.
    Namespace,
    /// No namespace (the reason): a seccomp filter refuses every metadata change.
    Seccomp(String),
    /// No namespace (the reason), and no seccomp table for this architecture.
    Unavailable(String),
    /// No commands are served: nothing to isolate.
    NoCommands,
    /// macOS: the Seatbelt profile refuses every change outside the read-write directories,
    /// metadata included (`file-write*`).
    Seatbelt,
    /// `--no-sandbox`, or not applied yet.
    Off,
}

/// What came of the sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    pub kernel: Kernel,
    pub isolation: Isolation,
}

impl Status {
    /// A server waiting for the client's roots.
    pub fn deferred() -> Status {
        Status { kernel: Kernel::Deferred, isolation: Isolation::Off }
    }

    fn disabled() -> Status {
        Status { kernel: Kernel::Disabled, isolation: Isolation::Off }
    }

    /// The line list_allowed_directories adds (and stderr shows) when the sandbox is not fully
    /// in force; `None` when it is.
    pub fn note(&self) -> Option<String> {
        let reads = match &self.kernel {
            Kernel::Enforced => None,
            Kernel::Disabled => {
                return Some("[sandbox: off (--no-sandbox): commands run by execute_command can reach anything the user can]".into())
            }
            Kernel::Deferred => {
                return Some("[sandbox: waiting for the client's roots: no directory is allowed yet]".into())
            }
            Kernel::Partial => Some(format!("{MECHANISM} partly enforced: this kernel's {MECHANISM} is older than replay asks for")),
            Kernel::Unsupported => Some(format!("this kernel has no {MECHANISM}")),
            Kernel::Failed(e) => Some(format!("{MECHANISM} could not be applied ({e})")),
        };
        let without_landlock = !matches!(self.kernel, Kernel::Enforced | Kernel::Partial);
        let reads = reads.map(|text| match (&self.isolation, without_landlock) {
            (Isolation::Namespace, true) => format!("{text}: commands can read anything the user can, and write only in the read-write directories"),
            (_, true) => format!("{text}: commands can reach anything the user can"),
            (_, false) => text,
        });
        let metadata = match &self.isolation {
            Isolation::Namespace | Isolation::NoCommands | Isolation::Seatbelt | Isolation::Off => {
                None
            }
            Isolation::Seccomp(why) => Some(format!("no mount namespace ({why}): commands may not change modes, owners, times or extended attributes (chmod, chown, touch), even in read-write directories")),
            Isolation::Unavailable(why) => Some(format!("no mount namespace ({why}) and no seccomp filter for this architecture: commands can change the modes, owners and times of anything the user owns")),
        };
        let parts: Vec<String> = reads.into_iter().chain(metadata).collect();
        (!parts.is_empty()).then(|| format!("[sandbox: {}]", parts.join("; ")))
    }
}

/// The sandbox between start-up and the roots: the commands' TMPDIR made, the way commands
/// will be isolated chosen.
#[derive(Debug)]
pub struct Sandbox {
    config: SandboxConfig,
    home: Option<PathBuf>,
    command_tmp: Option<Arc<CommandTmp>>,
    #[cfg(target_os = "linux")]
    pending: Pending,
}

/// Where commands' isolation stands before the roots are known.
#[cfg(target_os = "linux")]
#[derive(Debug)]
enum Pending {
    /// Try the namespace.
    Namespace,
    Decided(Isolation),
}

/// `REPLAY_COMMAND_ISOLATION=seccomp` skips the namespace, so that the tests exercise the
/// fallback on a machine that has namespaces. A testing knob, not a setting.
#[cfg(target_os = "linux")]
const ISOLATION_KNOB: &str = "REPLAY_COMMAND_ISOLATION";

/// Start-up, before the sandbox: makes the commands' TMPDIR when `commands` are served, and
/// chooses how commands will be isolated.
pub fn prepare(config: &SandboxConfig, home: Option<PathBuf>, commands: bool) -> Sandbox {
    let command_tmp = if commands { CommandTmp::create().map(Arc::new) } else { None };
    Sandbox {
        config: config.clone(),
        home,
        command_tmp,
        #[cfg(target_os = "linux")]
        pending: choose_isolation(config, commands),
    }
}

#[cfg(target_os = "linux")]
fn choose_isolation(config: &SandboxConfig, commands: bool) -> Pending {
    if !config.enabled {
        return Pending::Decided(Isolation::Off);
    }
    // The namespace is for commands only: the server stays out of it.
    if !commands {
        return Pending::Decided(Isolation::NoCommands);
    }
    if std::env::var_os(ISOLATION_KNOB).is_some_and(|v| v == "seccomp") {
        return Pending::Decided(without_namespace(format!("{ISOLATION_KNOB}=seccomp")));
    }
    Pending::Namespace
}

#[cfg(target_os = "linux")]
fn without_namespace(why: String) -> Isolation {
    match seccomp::filter(true) {
        Some(_) => Isolation::Seccomp(why),
        None => Isolation::Unavailable(why),
    }
}

/// What applying the sandbox gives the tools.
#[derive(Debug)]
pub struct Applied {
    pub status: Status,
    pub confinement: CommandConfinement,
}

impl Sandbox {
    /// This server's TMPDIR for commands.
    pub fn command_tmp(&self) -> Option<Arc<CommandTmp>> {
        self.command_tmp.clone()
    }

    /// The namespace, then Landlock (which would forbid the helper's mounting): this thread and
    /// those it starts later are confined, and so are the commands they run.
    pub fn apply(self, roots: &[AllowedRoot]) -> Applied {
        if !self.config.enabled {
            return Applied { status: Status::disabled(), confinement: CommandConfinement::none() };
        }
        self.apply_layers(roots)
    }

    #[cfg(target_os = "linux")]
    fn apply_layers(self, roots: &[AllowedRoot]) -> Applied {
        let tmp = self.command_tmp.as_ref().map(|t| t.dir());
        let mut grants = self.config.grants(self.home.as_deref(), roots);
        let (mut covering, mut forked) = (None, None);
        let (isolation, namespace, overlays, fresh) = match self.pending {
            Pending::Namespace => {
                let overlays = tmp.map(|t| cache_overlays(roots, t, &grants)).unwrap_or_default();
                let layers = tmp.map(tmp::layers);
                let places = places(roots, tmp, &grants);
                // What the rules let commands reach stays in sight under a mask.
                let keep: Vec<_> = grants
                    .iter()
                    .map(|g| g.path.clone())
                    .chain(overlays.iter().map(|o| o.target.clone()))
                    .collect();
                let masks = socket_dirs();
                // The walk for the deny rules' covers runs beside the start where this process
                // may fork (`covering`); else now, and the helper mounts the covers.
                let deny = &self.config.deny;
                let beside = hidden::needs_walk(deny) && covering::single_threaded();
                let found =
                    if beside { Ok(hidden::Hide::default()) } else { hidden::find(roots, deny) };
                let nothing = hidden::Hide::default();
                let hidden = found.as_ref().unwrap_or(&nothing);
                let made =
                    namespace::create(&places, &keep, &masks, &overlays, layers.as_deref(), hidden);
                match made {
                    Ok((entry, fresh)) => {
                        let done = match beside.then(|| Forked::start(roots, deny, &entry)) {
                            Some(Ok(started)) => {
                                forked = Some(started);
                                None
                            }
                            Some(Err(e)) => Some(Err(format!("cannot fork to cover them: {e}"))),
                            None => Some(found.map(drop).and(fresh.covered.clone())),
                        };
                        covering = done.map(|done| Arc::new(Covering::done(done)));
                        let overlays = mounted_overlays(overlays, &fresh.overlaid);
                        (Isolation::Namespace, Some(Arc::new(entry)), overlays, fresh)
                    }
                    Err(why) => (without_namespace(why), None, Vec::new(), Default::default()),
                }
            }
            Pending::Decided(isolation) => (isolation, None, Vec::new(), Default::default()),
        };
        // A cache the rules grant and no overlay covers is read-only: written in place, it
        // would change what the user's own builds outside the sandbox run. One inside a
        // read-write root is the root's.
        for grant in grants.iter_mut().filter(|g| g.reach == grants::Reach::Write && !g.user) {
            let overlaid = overlays.iter().any(|o| o.target == grant.path);
            if !overlaid && !in_read_write_root(roots, &grant.path) {
                grant.reach = grants::Reach::Run;
            }
        }
        // Without the namespace the host's /dev/pts is all there is: every terminal of the
        // machine. Commands get none (they cannot set one up anyway: no device ioctls), and
        // the server opens none (no `tty` sessions). With it, and a devpts of its own, the
        // host's is the server's only.
        let host_pts = namespace.is_some() && fresh.private_pts;
        let kernel = landlock::apply(roots, tmp, &grants, &fresh, host_pts, &self.config);
        drop(fresh);
        // Every command gets the filter: the fallback's refuses metadata changes as well.
        let filter = seccomp::filter(matches!(isolation, Isolation::Seccomp(_))).map(Arc::new);
        let domain = landlock::command_domain().map(Arc::new);
        // Processes of the same user may trace this one and read or write its memory (through
        // `ptrace` or `/proc/<pid>/mem`) unless it is not dumpable. Set only now: the
        // namespace's helper, sharing this memory, writes its own `/proc/self/uid_map`, which
        // a process that is not dumpable may not.
        // SAFETY: a plain prctl on this process.
        if unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) } != 0 {
            tracing::warn!(
                "cannot make the server undumpable: {}",
                std::io::Error::last_os_error()
            );
        }
        let reach = Some(Arc::new(Reach::new(roots, tmp, grants)));
        // After Landlock: the thread waiting for the covers is confined.
        let covering = forked.map(Forked::watch).or(covering);
        let confinement =
            CommandConfinement { confine: true, namespace, filter, domain, reach, covering };
        Applied { status: Status { kernel, isolation }, confinement }
    }

    /// The Seatbelt profile, applied to this process and so inherited by every command.
    #[cfg(target_os = "macos")]
    fn apply_layers(self, roots: &[AllowedRoot]) -> Applied {
        let tmp = self.command_tmp.as_ref().map(|t| t.dir());
        let kernel = seatbelt::apply(roots, tmp, self.home.as_deref(), &self.config);
        let isolation = match kernel {
            Kernel::Enforced => Isolation::Seatbelt,
            _ => Isolation::Off,
        };
        let status = Status { kernel, isolation };
        Applied { status, confinement: CommandConfinement::none() }
    }
}

/// The overlays that were mounted; each that was not is said on stderr, and its cache stays
/// read-only to commands (`apply_layers`).
#[cfg(target_os = "linux")]
fn mounted_overlays(
    overlays: Vec<namespace::Overlay>,
    overlaid: &[Result<(), String>],
) -> Vec<namespace::Overlay> {
    let outcomes = overlays.into_iter().zip(overlaid);
    outcomes
        .filter_map(|(overlay, outcome)| match outcome {
            Ok(()) => Some(overlay),
            Err(e) => {
                let path = overlay.target.display();
                tracing::warn!(%path, "cannot give commands a copy of this cache ({e}): they only read it");
                None
            }
        })
        .collect()
}

#[cfg(target_os = "linux")]
fn in_read_write_root(roots: &[AllowedRoot], path: &std::path::Path) -> bool {
    use crate::policy::Access;
    roots.iter().any(|r| r.access == Access::Write && path.starts_with(&r.path))
}

/// The caches the rules grant write to, each as an overlay whose upper and work directories
/// are made now in `tmp::layers(tmp)/N`, beside it, removed with it: commands see a writable cache,
/// the real one never changes. Not a cache inside a read-write root (the root's own), nor one
/// that holds a root or `tmp` (the overlay would hide them), nor one that is not a directory.
#[cfg(target_os = "linux")]
fn cache_overlays(
    roots: &[AllowedRoot],
    tmp: &std::path::Path,
    grants: &[grants::Grant],
) -> Vec<namespace::Overlay> {
    use std::os::unix::fs::DirBuilderExt;
    let caches = grants.iter().filter(|g| g.reach == grants::Reach::Write && !g.user);
    let mut overlays = Vec::new();
    for grant in caches {
        let path = &grant.path;
        let holds = roots.iter().any(|r| r.path.starts_with(path)) || tmp.starts_with(path);
        let dir = std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir());
        if !dir || holds || in_read_write_root(roots, path) {
            continue;
        }
        let layers = tmp::layers(tmp).join(overlays.len().to_string());
        let (upper, work) = (layers.join("upper"), layers.join("work"));
        let mut builder = std::fs::DirBuilder::new();
        builder.mode(0o700).recursive(true);
        if let Err(e) = builder.create(&upper).and_then(|()| builder.create(&work)) {
            tracing::warn!(path = %layers.display(), "cannot make a cache's copy: {e}");
            continue;
        }
        overlays.push(namespace::Overlay { target: path.clone(), upper, work });
    }
    overlays
}

/// The places that keep their own access in the namespace: the roots, this server's TMPDIR,
/// and the directories under /dev commands write in; and the directories between a read-only
/// root and the read-write root around it, writable, so that each is a mount point a command
/// cannot rename (EBUSY): renamed, a parent would carry the read-only root to a path the
/// policy does not know as read-only.
#[cfg(target_os = "linux")]
fn places(
    roots: &[AllowedRoot],
    tmp: Option<&std::path::Path>,
    grants: &[grants::Grant],
) -> Vec<namespace::Place> {
    use crate::policy::Access;
    let own = roots.iter().map(|root| namespace::Place {
        path: root.path.clone(),
        writable: root.access == Access::Write,
    });
    let between = roots.iter().filter(|r| r.access == Access::Read).flat_map(|inner| {
        let around = roots
            .iter()
            .filter(|r| r.path != inner.path && inner.path.starts_with(&r.path))
            .max_by_key(|r| r.path.components().count())
            .filter(|r| r.access == Access::Write);
        let ancestors = inner.path.ancestors().skip(1);
        let inside = move |dir: &&std::path::Path| around.is_some_and(|r| *dir != r.path);
        ancestors
            .take_while(move |dir| around.is_some_and(|r| dir.starts_with(&r.path)))
            .filter(inside)
            .map(|dir| namespace::Place { path: dir.to_path_buf(), writable: true })
    });
    // The caches the rules grant are overlays (`cache_overlays`), not places. A write grant
    // that is not a directory gets no mount: it would cost the whole namespace.
    let caches = grants
        .iter()
        .filter(|g| g.reach == grants::Reach::Write && g.user)
        .filter(|g| std::fs::symlink_metadata(&g.path).is_ok_and(|m| m.is_dir()))
        .map(|g| g.path.as_path());
    // The overlays' upper layers are written through this mount; Landlock keeps commands out.
    let layers = tmp.map(tmp::layers);
    let writable = tmp
        .into_iter()
        .chain(layers.as_deref())
        .chain(caches)
        .chain(DEV_DIRS.iter().map(std::path::Path::new))
        .map(|path| namespace::Place { path: path.to_path_buf(), writable: true });
    own.chain(between).chain(writable).collect()
}

/// Where servers outside the sandbox keep the Unix sockets they listen on by path (tmux's
/// `/tmp/tmux-<uid>`, the session bus in `/run/user/<uid>`, `/run/docker.sock`, X's
/// `/tmp/.X11-unix`): connecting needs no write access, so neither Landlock (before its ABI 9)
/// nor a read-only mount stops a command from asking such a server to run a process outside
/// the sandbox. The namespace covers them (`namespace::create`). `/tmp` itself stays: the
/// places commands are refused there are refused by Landlock, with the error that says so.
/// Canonical directories only, those there when the server starts.
#[cfg(target_os = "linux")]
fn socket_dirs() -> Vec<std::path::PathBuf> {
    use std::path::PathBuf;
    let uid = nix::unistd::geteuid().as_raw();
    let tmux = format!("tmux-{uid}");
    let tmux_dir =
        std::env::var_os("TMUX_TMPDIR").map_or_else(|| PathBuf::from("/tmp"), PathBuf::from);
    let fixed = ["/run", "/var/run", "/tmp/.X11-unix", "/tmp/.ICE-unix", "/tmp/.XIM-unix"]
        .map(PathBuf::from);
    let named = [
        std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from),
        Some(tmux_dir.join(&tmux)),
        Some(PathBuf::from("/tmp").join(&tmux)),
        // An agent's or a session bus's socket, by its directory (`/tmp/ssh-XXXX/agent.N`).
        std::env::var_os("SSH_AUTH_SOCK")
            .and_then(|s| PathBuf::from(s).parent().map(PathBuf::from)),
        std::env::var("DBUS_SESSION_BUS_ADDRESS").ok().and_then(|a| {
            let path = a.strip_prefix("unix:path=")?.split(',').next()?.to_owned();
            PathBuf::from(path).parent().map(PathBuf::from)
        }),
    ];
    let mut dirs: Vec<PathBuf> = Vec::new();
    for dir in fixed.into_iter().chain(named.into_iter().flatten()) {
        // `/var/run` is mostly a link to `/run`: the canonical path is the one covered.
        let Ok(dir) = std::fs::canonicalize(&dir) else { continue };
        let shared = ["/", "/tmp", "/var/tmp"].iter().any(|s| dir == std::path::Path::new(s));
        if dir.is_dir() && !shared && !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    dirs
}

/// What a command's process does to itself between `fork` and `exec`. Nothing on macOS, where
/// a command inherits the server's Seatbelt profile.
#[derive(Debug, Clone)]
pub struct CommandConfinement {
    /// Drop every capability and set `no_new_privs`.
    #[cfg(target_os = "linux")]
    confine: bool,
    /// The namespace to join.
    #[cfg(target_os = "linux")]
    namespace: Option<Arc<namespace::Namespaces>>,
    /// The seccomp filter: the one every command gets, or the fallback's.
    #[cfg(target_os = "linux")]
    filter: Option<Arc<seccomp::Filter>>,
    /// A Landlock ruleset for a domain of the command's own, nested in the server's.
    #[cfg(target_os = "linux")]
    domain: Option<Arc<std::os::fd::OwnedFd>>,
    /// What commands may reach: for the refusal hint (`refusal_hint`).
    reach: Option<Arc<Reach>>,
    /// The deny rules' covers in the namespace: commands and writers wait for them, and every
    /// command is refused when they could not be made.
    covering: Option<Arc<covering::Covering>>,
}

impl Default for CommandConfinement {
    /// Capabilities dropped: a command started before the sandbox was applied (none is: there
    /// is no working directory yet) holds none either.
    fn default() -> CommandConfinement {
        CommandConfinement {
            #[cfg(target_os = "linux")]
            confine: true,
            #[cfg(target_os = "linux")]
            namespace: None,
            #[cfg(target_os = "linux")]
            filter: None,
            #[cfg(target_os = "linux")]
            domain: None,
            reach: None,
            covering: None,
        }
    }
}

impl CommandConfinement {
    /// `--no-sandbox`: commands run as the server would.
    #[cfg(target_os = "linux")]
    pub fn none() -> CommandConfinement {
        CommandConfinement { confine: false, ..CommandConfinement::default() }
    }

    /// `--no-sandbox`: commands run as the server would.
    #[cfg(not(target_os = "linux"))]
    pub fn none() -> CommandConfinement {
        CommandConfinement::default()
    }

    /// Whether each command's process, once confined (`apply_to`), starts its next child in a
    /// PID namespace of its own: in the commands' namespace, where the kernel allows one.
    #[cfg(target_os = "linux")]
    pub fn pid_namespace(&self) -> bool {
        self.confine && self.namespace.as_ref().is_some_and(|n| n.pid)
    }

    /// Whether each command's process starts its next child in a PID namespace: never here.
    #[cfg(not(target_os = "linux"))]
    pub fn pid_namespace(&self) -> bool {
        false
    }

    /// Waits until the deny rules' covers are made (by the walk beside the start,
    /// `covering`), at most `limit` and while `cancelled` says no; `Err` says why a command
    /// may not run.
    pub fn covered(
        &self,
        limit: std::time::Duration,
        cancelled: &dyn Fn() -> bool,
    ) -> Result<(), NotCovered> {
        self.covering.as_ref().map_or(Ok(()), |c| c.wait(limit, cancelled))
    }

    /// Whether the walk for the deny rules' covers still runs.
    pub fn covers_pending(&self) -> bool {
        self.covering.as_ref().is_some_and(|c| c.pending())
    }

    /// `status_note` (`Status::note`), saying also that every command is refused when the deny
    /// rules' covers could not be made. It does not wait for them.
    pub fn note(&self, status_note: Option<&str>) -> Option<String> {
        let Some(why) = self.covering.as_ref().and_then(|c| c.refused()) else {
            return status_note.map(str::to_string);
        };
        let refused = format!(
            "deny rules could not be applied to commands ({why}), so execute_command is \
             refused: allow a narrower directory, or start replay with --no-default-deny or \
             fewer --deny rules"
        );
        Some(match status_note.and_then(|note| note.strip_suffix(']')) {
            Some(open) => format!("{open}; {refused}]"),
            None => format!("[sandbox: {refused}]"),
        })
    }

    /// The line a failed command's reply ends with when its `stderr` shows the sandbox
    /// refused a path outside its grants (`grants::hint`); `None` without a sandbox.
    pub fn refusal_hint(&self, stderr: &[u8]) -> Option<&'static str> {
        let reach = self.reach.as_ref()?;
        grants::hint(stderr, &|path, write| reach.allows(path, write))
    }

    /// Has `cmd`'s process confine itself before it runs the program: join the namespace
    /// (entering `cwd` again there, checked to be the directory `cwd_handle` is), drop every
    /// capability, enter a Landlock domain of its own, install the filter.
    #[cfg(target_os = "linux")]
    pub fn apply_to(
        &self,
        cmd: &mut std::process::Command,
        cwd: &std::path::Path,
        cwd_handle: std::os::fd::BorrowedFd<'_>,
    ) -> std::io::Result<()> {
        use std::os::fd::AsRawFd;
        use std::os::unix::ffi::OsStrExt;
        use std::os::unix::process::CommandExt;
        if !self.confine {
            return Ok(());
        }
        // Everything the child uses is made here, before the fork: it only reads them.
        let namespace = self.namespace.clone();
        let filter = self.filter.clone();
        let domain = self.domain.clone();
        let cwd = std::ffi::CString::new(cwd.as_os_str().as_bytes())?;
        let handle = cwd_handle.as_raw_fd();
        // SAFETY: the hook runs in the child between fork and exec, where only async-signal-
        // safe calls are allowed; it makes system calls only, allocating nothing and taking no
        // lock. `handle` stays open in the parent until the spawn returns.
        unsafe {
            cmd.pre_exec(move || {
                if let Some(namespace) = &namespace {
                    namespace.join(&cwd, handle)?;
                }
                capabilities::drop_all()?;
                if let Some(domain) = &domain {
                    landlock::enter(domain.as_raw_fd())?;
                }
                if let Some(filter) = &filter {
                    filter.install()?;
                }
                Ok(())
            });
        }
        Ok(())
    }

    #[cfg(not(target_os = "linux"))]
    pub fn apply_to(
        &self,
        _cmd: &mut std::process::Command,
        _cwd: &std::path::Path,
        _cwd_handle: std::os::fd::BorrowedFd<'_>,
    ) -> std::io::Result<()> {
        Ok(())
    }
}

/// `replay sandbox`: what commands may read, execute and write under `config` on this
/// machine, each with the rule that grants it, and what stays out.
pub fn describe(
    roots: &[AllowedRoot],
    config: &SandboxConfig,
    home: Option<&std::path::Path>,
) -> String {
    use crate::policy::Access;
    use std::fmt::Write;
    let mut out = String::new();
    if !config.enabled {
        out.push_str("--no-sandbox: commands may reach anything the user can.\n");
        return out;
    }
    let mut line = |reach: &str, path: &std::path::Path, why: &str| {
        let _ = writeln!(out, "{reach:<11} {}  ({why})", path.display());
    };
    for root in roots {
        match root.access {
            Access::Write => line("read-write", &root.path, "--allow, read-write"),
            Access::Read => line("read", &root.path, "--allow, read-only"),
        }
    }
    line(
        "read-write",
        std::path::Path::new("$TMPDIR/replay-cmd-tmp-UID/PID-START"),
        "the commands' own TMPDIR",
    );
    for dir in SYSTEM_READ {
        line("read+exec", std::path::Path::new(dir), "system");
    }
    for dev in DEV_NODES.iter().chain(DEV_DIRS) {
        line("read-write", std::path::Path::new(dev), "the minimal /dev");
    }
    let mut caches = false;
    for grant in config.grants(home, roots) {
        let reach = match grant.reach {
            grants::Reach::Run => "read+exec",
            grants::Reach::Read => "read",
            grants::Reach::Write => "read-write",
        };
        line(reach, &grant.path, &grant.why);
        caches |= grant.reach == grants::Reach::Write && !grant.user;
    }
    if caches {
        out.push_str("The caches are written in a copy of the commands' own, dropped when the server exits: the real ones never change (without a mount namespace, commands only read them).\n");
    }
    if config.strict {
        out.push_str("--sandbox-strict: no toolchain grants.\n");
    }
    out.push_str("Everything else stays out, credentials under a granted home included:");
    for rel in grants::CREDENTIALS {
        let _ = write!(out, " ~/{rel}");
    }
    out.push_str(".\nThe file tools reach only the allowed directories.\n");
    describe_deny(&mut out, &config.deny);
    out
}

/// The deny rules, for `replay sandbox`.
fn describe_deny(out: &mut String, deny: &DenyRules) {
    use std::fmt::Write;
    if deny.is_empty() {
        out.push_str("No deny rules (--no-default-deny): secrets in the allowed directories are reachable.\n");
        return;
    }
    out.push_str(
        "Hidden inside the allowed directories, from the file tools and from commands (deny \
         rules: --deny adds one, --no-default-deny drops the defaults):\n",
    );
    for rule in deny.rules() {
        let origin = if rule.default { "default" } else { "--deny" };
        let _ = writeln!(out, "  {:<20} ({origin})", rule.glob);
    }
    out.push_str(
        "Commands see an empty, unreadable file or directory over each match that exists when \
         the server starts (at most 4096 of them, else commands are refused); what a command \
         creates later is not hidden.\n",
    );
}

/// What commands may reach, by path: the roots, their TMPDIR, the system and the grants.
#[derive(Debug)]
struct Reach {
    read: Vec<PathBuf>,
    write: Vec<PathBuf>,
}

impl Reach {
    // macOS applies no grants yet (`seatbelt`), so it makes none.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    fn new(
        roots: &[AllowedRoot],
        tmp: Option<&std::path::Path>,
        grants: Vec<grants::Grant>,
    ) -> Reach {
        use crate::policy::Access;
        let mut read: Vec<PathBuf> = SYSTEM_READ.iter().map(PathBuf::from).collect();
        let mut write: Vec<PathBuf> = tmp.into_iter().map(PathBuf::from).collect();
        write.extend(DEV_NODES.iter().chain(DEV_DIRS).map(PathBuf::from));
        read.extend(DEV_NODES.iter().chain(DEV_DIRS).map(PathBuf::from));
        for root in roots {
            read.push(root.path.clone());
            if root.access == Access::Write {
                write.push(root.path.clone());
            }
        }
        for grant in grants {
            if grant.reach == grants::Reach::Write {
                write.push(grant.path.clone());
            }
            read.push(grant.path);
        }
        Reach { read, write }
    }

    fn allows(&self, path: &std::path::Path, write: bool) -> bool {
        let list = if write { &self.write } else { &self.read };
        list.iter().any(|dir| path.starts_with(dir))
    }
}

/// The system directories commands may read and execute from (Landlock's rules, and what
/// `replay sandbox` prints). Not /dev: only `DEV_NODES` and `DEV_DIRS` there.
pub const SYSTEM_READ: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/proc",
    "/sys", "/var/lib", "/run",
];
/// The device files commands may open, to read and write (`> /dev/null`, a terminal, random
/// numbers, a new pseudo-terminal). No other node under /dev opens: no block device (a loop
/// device would give the file behind it, a disk the whole disk), no input, sound or video.
/// `/dev/fd` and `/dev/std{in,out,err}` are symlinks into `/proc/self/fd`, which is granted.
pub const DEV_NODES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
];
/// Directories under /dev that commands write in.
pub const DEV_DIRS: &[&str] = &["/dev/pts", "/dev/shm"];

#[cfg(test)]
mod tests;
