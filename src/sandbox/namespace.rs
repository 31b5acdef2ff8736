//! The commands' mount namespace: every mount read-only but the read-write roots, this
//! server's TMPDIR for commands, the `--sandbox-write` directories, `/dev/pts` and `/dev/shm`;
//! a read-only root inside a read-write one read-only again; and over each cache commands
//! write (`grants`), an overlay whose lower layer is the real cache and whose upper layer is
//! this server's, so the caches the user's own builds trust never change. The places are
//! mounted `nodev` (but those under /dev).
//!
//! A read-only mount refuses every change below it, metadata included (`chmod`, `chown`,
//! `utimes`, extended attributes, inode flags), which Landlock does not cover.
//!
//! Who mounts: Landlock forbids mounting to the processes it confines, and the server and its
//! commands are confined before any command runs. So once the roots are known, before
//! Landlock, a helper process makes the namespace and mounts in it, and the server keeps the
//! namespace by two descriptors (the helper's `/proc/self/ns/{user,mnt}`). Each command joins
//! it with `setns` before it runs anything (Landlock does not restrict `setns`), then gives up
//! every capability. The server itself stays where it was: its file tools see
//! owners, groups and filesystems as before. (Entering the namespace itself, the server would
//! show an ordinary user's other groups as 65534, and `write_file` could no longer keep a
//! file's group.)
//!
//! The helper is a `clone(CLONE_VM | CLONE_VFORK | CLONE_FILES)` child: it shares the server's
//! memory and descriptor table, makes system calls only, and the calling thread waits until it
//! exits. The descriptors it opens are the server's. A forked helper answering over pipes cost
//! 0.4 ms at best and 2.5 ms at the median of a start on a loaded two-core machine (the
//! hand-offs wait for a CPU); this costs one `clone`. Being a process of its own (one thread),
//! it may make a user namespace while the server runs threads.
//!
//! - With `CAP_SYS_ADMIN` and `CAP_SYS_CHROOT` (root), a mount namespace alone. (Root cannot
//!   map the whole id range into a user namespace of its own: the kernel wants that map
//!   written from the parent namespace.)
//! - Without, a user namespace as well, mapping only the user's own uid and gid: files of other
//!   users show as owned by 65534 to commands.
//!
//! Over each path a deny rule hides (`hidden`), an empty read-only place: for a directory a
//! tmpfs of mode 000, for a file a copy of `/dev/null` mounted `nodev` (so opening it fails
//! with `EACCES`). A mount point cannot be removed or renamed (`EBUSY`), and a hard link to it
//! crosses mounts (`EXDEV`), so a command cannot move the secret out from under its cover.
//!
//! Mounts propagate from the host into the namespace, never out (`MS_SLAVE`): a filesystem the
//! host unmounts is released, not pinned while the server runs. The price: one the host mounts
//! later appears with the host's flags.
//!
//! Each place is copied (`open_tree`) before anything changes, with the host's own flags (a
//! root on a read-only filesystem stays read-only); then `/` goes read-only as a whole
//! (`mount_setattr(AT_RECURSIVE)`), and the copies are attached over their places, outermost
//! first, each opened with `RESOLVE_NO_SYMLINKS`.

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::capabilities::{self, Capabilities};
use super::hidden::{Hidden, Hide};

/// A place that keeps its own access inside the namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub path: PathBuf,
    pub writable: bool,
}

/// A cache commands write in a copy of their own: an overlay over `target` whose lower layer
/// is the real directory, read-only, and whose upper and work directories are this server's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overlay {
    pub target: PathBuf,
    pub upper: PathBuf,
    pub work: PathBuf,
}

/// The namespace's own mounts, by descriptor, which Landlock rules on the host's directories do
/// not reach: the caches' overlays (`create`), and the private `/dev/pts` and `/dev/shm`.
#[derive(Debug)]
pub struct Fresh {
    /// Whether each of `hidden` was covered (`uncovered`).
    pub covered: Result<(), String>,
    pub overlays: Vec<OwnedFd>,
    /// For each overlay asked for, in order: mounted, or the error that stopped it (the
    /// cache then stays the real directory, read-only like everything outside the places).
    pub overlaid: Vec<Result<(), String>>,
    /// `/dev/pts` and `/dev/shm` of the namespace's own.
    pub device_dirs: Vec<OwnedFd>,
    /// `/dev/ptmx`: the private `/dev/pts`'s.
    pub device_files: Vec<OwnedFd>,
    /// Both `/dev/pts` and `/dev/ptmx` are the namespace's own: commands reach no path to the
    /// host's terminals.
    pub private_pts: bool,
}

impl Default for Fresh {
    fn default() -> Fresh {
        Fresh {
            covered: Ok(()),
            overlays: Vec::new(),
            overlaid: Vec::new(),
            device_dirs: Vec::new(),
            device_files: Vec::new(),
            private_pts: false,
        }
    }
}

/// What a command joins: the namespaces, by descriptor; and whether it may make a PID
/// namespace of its own there (the helper could).
#[derive(Debug)]
pub struct Namespaces {
    user: Option<OwnedFd>,
    mnt: OwnedFd,
    pub pid: bool,
}

/// Has a helper make the namespace (a mount namespace, and a user namespace unless the
/// process may mount and join mount namespaces already) and make every mount in it read-only
/// but `places` that are writable, and the places that are not but lie inside one that is.
/// Then mounts each of `overlays` over its target, and gives the root of each as it is in the
/// namespace (for the Landlock rules: an overlay's files are no files of the real directory).
/// An overlay that cannot be mounted (a cache on a filesystem overlayfs refuses, such as NFS)
/// is skipped, not the namespace: `Fresh::overlaid` says which. Then `layers` (the overlays'
/// own layers, which only the overlays write) is covered by an empty read-only tmpfs, and last
/// each of `hidden` (what deny rules hide) by an empty, unreadable file or directory.
///
/// Each of `masks` (where servers outside the sandbox keep their Unix sockets: `/tmp`, `/run`)
/// is covered by an empty read-only tmpfs too, unless it is a place itself; the places under
/// it, and the directories of `keep` under it (read-only), are attached again on top.
pub fn create(
    places: &[Place],
    keep: &[PathBuf],
    masks: &[PathBuf],
    overlays: &[Overlay],
    layers: Option<&Path>,
    hide: &Hide,
) -> Result<(Namespaces, Fresh), String> {
    let hidden = &hide.covers[..];
    let caps = Capabilities::current().map_err(|e| format!("capget: {e}"))?;
    let user =
        !(caps.effective(capabilities::SYS_ADMIN) && caps.effective(capabilities::SYS_CHROOT));
    let uid = nix::unistd::geteuid();
    let gid = nix::unistd::getegid();
    let maps = user.then(|| {
        // Only the user's own ids: an unprivileged process may map nothing more.
        [format!("{uid} {uid} 1\n"), "deny\n".to_string(), format!("{gid} {gid} 1\n")]
    });
    let plan = plan(places);
    let masked = mask_plan(places, keep, masks, &plan.binds);
    let c_path = |path: &Path| {
        CString::new(path.as_os_str().as_bytes())
            .map_err(|_| format!("{}: a NUL in the path", path.display()))
    };
    let mut binds = Vec::with_capacity(masked.binds.len());
    for place in &masked.binds {
        let depth = place.path.components().count();
        binds.push(Bind { path: c_path(&place.path)?, writable: place.writable, depth, tree: -1 });
    }
    let mut mask_jobs = Vec::with_capacity(masked.masks.len());
    for mask in &masked.masks {
        let mut dirs = Vec::with_capacity(mask.dirs.len());
        for dir in &mask.dirs {
            dirs.push(c_path(dir)?);
        }
        let depth = mask.path.components().count();
        mask_jobs.push(Mask { path: c_path(&mask.path)?, dirs, depth });
    }
    // The layers must be mounts of the namespace: the helper opens each there, following no
    // symlink, onto a descriptor number reserved here, and names it to the kernel through
    // `/proc/self/fd` (the helper shares this descriptor table), so no path is looked up twice.
    let mut held = Vec::with_capacity(overlays.len() * 3);
    let mut layered = Vec::with_capacity(overlays.len());
    for overlay in overlays {
        let mut layer = |path: &Path| -> Result<Layer, String> {
            let path = CString::new(path.as_os_str().as_bytes())
                .map_err(|_| format!("{}: a NUL in the path", path.display()))?;
            let slot = OwnedFd::from(
                std::fs::File::open("/dev/null").map_err(|e| format!("/dev/null: {e}"))?,
            );
            let name = CString::new(format!("/proc/self/fd/{}", slot.as_raw_fd()))
                .expect("no NUL in a number");
            let layer = Layer { path, slot: slot.as_raw_fd(), name };
            held.push(slot);
            Ok(layer)
        };
        layered.push(Layered {
            lower: layer(&overlay.target)?,
            upper: layer(&overlay.upper)?,
            work: layer(&overlay.work)?,
            root: -1,
            errno: 0,
        });
    }
    let layers = match layers {
        Some(path) => Some(
            CString::new(path.as_os_str().as_bytes())
                .map_err(|_| format!("{}: a NUL in the path", path.display()))?,
        ),
        None => None,
    };
    let mut covers = covers(hidden)?;
    let pins = pins(&hide.pins)?;
    let mut job = Job {
        pins: &pins,
        pinned: Ok(()),
        maps: maps.as_ref(),
        layers: layers.as_deref(),
        covers: &mut covers,
        overlays: &mut layered,
        devices: [-1; 3],
        read_only_root: plan.read_only_root,
        binds: &mut binds,
        masks: &mask_jobs,
        failed_at: None,
        errno: 0,
        user_ns: -1,
        mnt_ns: -1,
        pid_ns: false,
    };
    run(&mut job).map_err(|e| match job.failed_at {
        Some(Step::Copy(i) | Step::Attach(i)) => {
            format!("{e} ({})", masked.binds[i].path.display())
        }
        Some(Step::Mask(i)) => format!("{e} ({})", masked.masks[i].path.display()),
        _ => e,
    })?;
    drop(held);
    let overlaid = job
        .overlays
        .iter()
        .map(|o| match o.errno {
            0 => Ok(()),
            errno => Err(io::Error::from_raw_os_error(errno).to_string()),
        })
        .collect();
    let covered = job
        .pinned
        .map_err(|failed| pin_failure(&pins, failed))
        .and_then(|()| uncovered(job.covers, hidden));
    // SAFETY: the helper opened these in the table it shares with this process, for it.
    let roots = job
        .overlays
        .iter()
        .filter(|o| o.root >= 0)
        .map(|o| unsafe { OwnedFd::from_raw_fd(o.root) })
        .collect();
    // SAFETY: the helper opened these in the table it shares with this process, for it.
    let own = |fd: RawFd| (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) });
    let user = own(job.user_ns);
    let mnt = own(job.mnt_ns).ok_or("the namespace's helper opened no namespace")?;
    let [pts, ptmx, shm] = job.devices;
    let fresh = Fresh {
        covered,
        overlays: roots,
        overlaid,
        device_dirs: [pts, shm].into_iter().filter_map(own).collect(),
        device_files: own(ptmx).into_iter().collect(),
        private_pts: pts >= 0 && ptmx >= 0,
    };
    Ok((Namespaces { user, mnt, pid: job.pid_ns }, fresh))
}

/// The covers for `hidden`, prepared.
fn covers(hidden: &[Hidden]) -> Result<Vec<Cover>, String> {
    let mut covers = Vec::with_capacity(hidden.len());
    for place in hidden {
        let path = CString::new(place.path.as_os_str().as_bytes())
            .map_err(|_| format!("{}: a NUL in the path", place.path.display()))?;
        covers.push(Cover { path, dir: place.dir, errno: 0 });
    }
    Ok(covers)
}

/// The pins, prepared.
fn pins(pins: &[PathBuf]) -> Result<Vec<CString>, String> {
    pins.iter()
        .map(|p| {
            CString::new(p.as_os_str().as_bytes())
                .map_err(|_| format!("{}: a NUL in the path", p.display()))
        })
        .collect()
}

/// Pins `pins` (outermost first), each a mount point of its own: a recursive copy of itself,
/// with the access it had. One gone since the walk is skipped; any other failure is `Err`.
fn pin_all(pins: &[CString]) -> Result<(), (usize, i32)> {
    for (i, path) in pins.iter().enumerate() {
        let pinned = copy(path, true).and_then(|tree| {
            let attached = attach(tree, path);
            // SAFETY: `tree` is this function's own descriptor.
            unsafe { libc::close(tree) };
            attached
        });
        match pinned.map_err(|e| e.raw_os_error().unwrap_or(libc::EIO)) {
            Ok(()) | Err(libc::ENOENT) => {}
            Err(errno) => return Err((i, errno)),
        }
    }
    Ok(())
}

/// `pin_all`'s failure, for a message.
fn pin_failure(pins: &[CString], (i, errno): (usize, i32)) -> String {
    let path = pins[i].to_string_lossy();
    format!("{path} could not be pinned: {}", io::Error::from_raw_os_error(errno))
}

/// Pins and covers what `hide` says from a process in the namespace (`Namespaces::enter`), as
/// `create` does last; `Err` as `uncovered` says, or naming a pin that failed.
pub fn cover_all(hide: &Hide) -> Result<(), String> {
    let hidden = &hide.covers[..];
    let pins = pins(&hide.pins)?;
    pin_all(&pins).map_err(|failed| pin_failure(&pins, failed))?;
    let mut covers = covers(hidden)?;
    for one in covers.iter_mut() {
        if let Err(e) = cover(one) {
            one.errno = e.raw_os_error().unwrap_or(libc::EIO);
        }
    }
    uncovered(&covers, hidden)
}

/// `Err` naming the paths of `hidden` whose `covers` failed, but for those gone since the walk
/// (`ENOENT`): any other failure (a symlink put in the place, a filesystem that refuses the
/// mount) leaves a secret in sight, so commands are refused.
fn uncovered(covers: &[Cover], hidden: &[Hidden]) -> Result<(), String> {
    let failed: Vec<String> = covers
        .iter()
        .zip(hidden)
        .filter(|(c, _)| c.errno != 0 && c.errno != libc::ENOENT)
        .map(|(c, h)| format!("{}: {}", h.path.display(), io::Error::from_raw_os_error(c.errno)))
        .collect();
    match failed.len() {
        0 => Ok(()),
        n => Err(format!("{n} could not be covered, such as {}", failed[0])),
    }
}

impl Namespaces {
    /// The descriptors this value holds, for a forked process that closes every other.
    pub fn fds(&self) -> impl Iterator<Item = RawFd> + '_ {
        self.user.iter().chain([&self.mnt]).map(|fd| fd.as_raw_fd())
    }

    /// Joins the namespaces, holding every capability in the user namespace after: for a
    /// single-threaded process (a multi-threaded one may not join a user namespace).
    pub fn enter(&self) -> io::Result<()> {
        if let Some(user) = &self.user {
            // SAFETY: plain system calls on descriptors this value owns.
            check(unsafe { libc::setns(user.as_raw_fd(), libc::CLONE_NEWUSER) })?;
        }
        // Also moves the working directory to the namespace's root.
        check(unsafe { libc::setns(self.mnt.as_raw_fd(), libc::CLONE_NEWNS) })
    }

    /// Joins the namespace and enters the working directory again in it: `cwd` by its path,
    /// following no symlink, checked to be the directory `handle` is (the one the policy
    /// approved); then, where the helper could, makes the PID namespace the process's next
    /// child starts (`pid`: the exec module's lifeline makes that child its init). For a
    /// command's process between `fork` and `exec`: system calls only, no allocation. The
    /// process holds every capability in a user namespace after this; the caller drops them.
    pub fn join(&self, cwd: &CStr, handle: RawFd) -> io::Result<()> {
        self.enter()?;
        let dir = open_dir(cwd)?;
        let same = identity(dir)? == identity(handle)?;
        // SAFETY: `dir` is this function's own descriptor.
        let entered = if same { check(unsafe { libc::fchdir(dir) }) } else { Err(enoent()) };
        unsafe { libc::close(dir) };
        entered?;
        if self.pid {
            // SAFETY: a plain system call; it changes only where this process's children go.
            check(unsafe { libc::unshare(libc::CLONE_NEWPID) })?;
        }
        Ok(())
    }
}

fn enoent() -> io::Error {
    io::Error::from_raw_os_error(libc::ENOENT)
}

/// Device and inode of an open descriptor.
fn identity(fd: RawFd) -> io::Result<(u64, u64)> {
    let mut stat = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: fstat writes a whole `stat` on success, which is only then read.
    check(unsafe { libc::fstat(fd, stat.as_mut_ptr()) })?;
    let stat = unsafe { stat.assume_init() };
    Ok((stat.st_dev, stat.st_ino))
}

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The helper
// ---------------------------------------------------------------------------------------------

/// What the helper is to do, and what came of it. It lives in the frame of the thread that
/// waits for the helper, which reads and writes it (they share memory).
struct Job<'a> {
    /// The id maps to write (uid map, setgroups, gid map): with a user namespace.
    maps: Option<&'a [String; 3]>,
    /// A directory to cover with an empty read-only tmpfs once the overlays are mounted.
    layers: Option<&'a CStr>,
    /// The paths deny rules hide, each covered after the places and overlays.
    covers: &'a mut [Cover],
    /// The directories to pin before the covers go on (`Hide::pins`), and how that went.
    pins: &'a [CString],
    pinned: Result<(), (usize, i32)>,
    read_only_root: bool,
    binds: &'a mut [Bind],
    /// Empty read-only tmpfs to mount, in order of depth.
    masks: &'a [Mask],
    overlays: &'a mut [Layered],
    /// The private `/dev/pts`, its `ptmx`, and `/dev/shm`, opened by the helper; -1 if not.
    devices: [RawFd; 3],
    /// Where it failed, and the error number.
    failed_at: Option<Step>,
    errno: i32,
    /// The new namespaces, opened in the shared descriptor table; -1 if not.
    user_ns: RawFd,
    mnt_ns: RawFd,
    /// Whether a PID namespace could be made in them (the helper makes one for its children,
    /// of which it has none: a probe).
    pid_ns: bool,
}

/// A place to mount, prepared before the helper runs.
struct Bind {
    path: CString,
    writable: bool,
    /// The number of the path's components: a mask goes on before the places deeper than it.
    depth: usize,
    /// Its detached copy; -1 until made.
    tree: RawFd,
}

/// A path to cover with an empty place, prepared before the helper runs.
struct Cover {
    path: CString,
    dir: bool,
    /// The error number covering it failed with; 0 if it did not.
    errno: i32,
}

/// An empty read-only tmpfs to mount over `path`, with the directories `dirs` (relative, each
/// after its parent) made in it as mount points for the places under it.
struct Mask {
    path: CString,
    dirs: Vec<CString>,
    depth: usize,
}

/// An overlay to mount over its lower layer's path, prepared before the helper runs.
struct Layered {
    lower: Layer,
    upper: Layer,
    work: Layer,
    /// The mounted overlay's root, opened by the helper; -1 until then.
    root: RawFd,
    /// Why it could not be mounted; 0 if it was.
    errno: i32,
}

/// A directory the helper opens onto the descriptor `slot`, which `name` names.
struct Layer {
    path: CString,
    slot: RawFd,
    name: CString,
}

impl Layer {
    fn open(&self) -> io::Result<()> {
        let fd = open_dir(&self.path)?;
        // SAFETY: `fd` is the helper's own; `slot` is held open by the thread waiting for it.
        let rc = unsafe { libc::dup3(fd, self.slot, libc::O_CLOEXEC) };
        unsafe { libc::close(fd) };
        check(rc)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Clone,
    Unshare,
    Map(usize),
    Propagation,
    OpenNamespace,
    Copy(usize),
    ReadOnlyRoot,
    Attach(usize),
    Mask(usize),
}

impl Step {
    fn describe(self) -> String {
        match self {
            Step::Clone => "clone".into(),
            Step::Unshare => "unshare".into(),
            Step::Map(0) => "writing /proc/self/uid_map".into(),
            Step::Map(1) => "writing /proc/self/setgroups".into(),
            Step::Map(_) => "writing /proc/self/gid_map".into(),
            Step::Propagation => "mount(MS_SLAVE)".into(),
            Step::OpenNamespace => "opening /proc/self/ns".into(),
            Step::Copy(_) => "open_tree".into(),
            Step::ReadOnlyRoot => "mount_setattr(/)".into(),
            Step::Attach(_) => "move_mount".into(),
            Step::Mask(_) => "mounting an empty tmpfs".into(),
        }
    }
}

/// Runs `job` in the helper, waiting until it exits.
fn run(job: &mut Job<'_>) -> Result<(), String> {
    // The helper's own stack: its calls are shallow, this leaves a wide margin. Untouched
    // pages cost nothing.
    const STACK: usize = 256 * 1024;
    let mut stack = vec![0u8; STACK];
    // SAFETY: one past the end of the allocation, which the stack grows down from.
    let top = unsafe { stack.as_mut_ptr().add(STACK) };
    let top = (top as usize & !15) as *mut libc::c_void;
    let flags = libc::CLONE_VM | libc::CLONE_VFORK | libc::CLONE_FILES | libc::SIGCHLD;
    // SAFETY: `helper` runs on `stack` with `job`, both alive until it has exited: CLONE_VFORK
    // holds this thread until then. It makes system calls only (see `Job::work`).
    let pid = unsafe { libc::clone(helper, top, flags, (job as *mut Job<'_>).cast()) };
    if pid < 0 {
        job.failed_at = Some(Step::Clone);
        job.errno = io::Error::last_os_error().raw_os_error().unwrap_or(0);
    } else {
        // It has exited already (CLONE_VFORK): this only reaps it.
        let pid = nix::unistd::Pid::from_raw(pid);
        while let Err(nix::errno::Errno::EINTR) = nix::sys::wait::waitpid(pid, None) {}
    }
    drop(stack);
    match job.failed_at {
        None => Ok(()),
        Some(step) => {
            Err(format!("{}: {}", step.describe(), io::Error::from_raw_os_error(job.errno)))
        }
    }
}

/// The helper's entry point.
extern "C" fn helper(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the `Job` in the frame of the thread that waits for this process.
    let job = unsafe { &mut *arg.cast::<Job<'_>>() };
    if let Err((step, errno)) = job.work() {
        job.failed_at = Some(step);
        job.errno = errno;
    }
    0
}

impl Job<'_> {
    /// The helper's work: system calls only, on data prepared before it started. It allocates
    /// nothing and takes no lock: it shares memory with the server, whose other threads run
    /// on.
    fn work(&mut self) -> Result<(), (Step, i32)> {
        let flags = match self.maps {
            Some(_) => libc::CLONE_NEWUSER | libc::CLONE_NEWNS,
            None => libc::CLONE_NEWNS,
        };
        // SAFETY (here and below): plain system calls; every string is NUL-terminated or sized.
        or(check(unsafe { libc::unshare(flags) }), Step::Unshare)?;
        if let Some(maps) = self.maps {
            let files = [c"/proc/self/uid_map", c"/proc/self/setgroups", c"/proc/self/gid_map"];
            for (i, (file, text)) in files.iter().zip(maps).enumerate() {
                or(write_file(file, text.as_bytes()), Step::Map(i))?;
            }
        }
        // The first mount operation: where a user namespace is made but gives no right to
        // mount (Ubuntu's AppArmor restriction), this is where it shows. Mounts propagate in
        // from the host, never out.
        let (none, slave) = (std::ptr::null(), libc::MS_REC | libc::MS_SLAVE);
        let rc = unsafe { libc::mount(none, c"/".as_ptr(), none, slave, std::ptr::null()) };
        or(check(rc), Step::Propagation)?;
        let fenced = fence(self.read_only_root, self.binds, self.masks);
        for bind in self.binds.iter_mut().filter(|b| b.tree >= 0) {
            unsafe { libc::close(bind.tree) };
            bind.tree = -1;
        }
        fenced?;
        for overlay in self.overlays.iter_mut() {
            if let Err(e) = mount_overlay(overlay) {
                overlay.errno = e.raw_os_error().unwrap_or(libc::EIO);
            }
        }
        if let Some(path) = self.layers {
            // The overlays keep their layers by reference; only the path is covered. Failing,
            // it stays as Landlock leaves it (list and remove).
            let flags = libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
            unsafe {
                libc::mount(
                    c"tmpfs".as_ptr(),
                    path.as_ptr(),
                    c"tmpfs".as_ptr(),
                    flags,
                    c"mode=0500,size=4k".as_ptr().cast(),
                )
            };
        }
        // A pin or a cover that fails is reported (`uncovered`): commands are then refused.
        self.pinned = pin_all(self.pins);
        for cover_one in self.covers.iter_mut() {
            if let Err(e) = cover(cover_one) {
                cover_one.errno = e.raw_os_error().unwrap_or(libc::EIO);
            }
        }
        private_devices(&mut self.devices);
        // SAFETY: a plain system call; the helper starts no process, so it changes nothing.
        self.pid_ns = unsafe { libc::unshare(libc::CLONE_NEWPID) } == 0;
        if self.maps.is_some() {
            self.user_ns = or(open_file(c"/proc/self/ns/user"), Step::OpenNamespace)?;
        }
        match open_file(c"/proc/self/ns/mnt") {
            Ok(fd) => self.mnt_ns = fd,
            Err(e) => {
                // Nothing is handed over on failure.
                if self.user_ns >= 0 {
                    unsafe { libc::close(self.user_ns) };
                    self.user_ns = -1;
                }
                return or(Err(e), Step::OpenNamespace);
            }
        }
        Ok(())
    }
}

/// What the helper mounts.
#[derive(Debug, PartialEq, Eq)]
struct Plan<'a> {
    /// Whether `/` goes read-only: unless it is itself a writable place.
    read_only_root: bool,
    /// The places whose access differs from the place around them, outermost first.
    binds: Vec<&'a Place>,
}

/// Which places need a mount of their own. A place inherits the access of the innermost place
/// around it (or of `/`); only one that differs needs a mount. The same path given twice is
/// writable if either is.
fn plan(places: &[Place]) -> Plan<'_> {
    let writable = |path: &Path| places.iter().any(|p| p.path == path && p.writable);
    let root = Path::new("/");
    let read_only_root = !writable(root);
    let mut binds: Vec<&Place> = Vec::new();
    for place in places {
        let own = writable(&place.path);
        let seen = binds.iter().any(|b| b.path == place.path);
        if place.path == root || place.writable != own || seen {
            continue;
        }
        let around = places
            .iter()
            .filter(|p| p.path != place.path && place.path.starts_with(&p.path))
            .max_by_key(|p| p.path.components().count())
            .map_or(!read_only_root, |p| writable(&p.path));
        // A writable place that holds a read-only one is a mount point of its own even where
        // it would inherit its access: a mount point cannot be renamed (`places`).
        let holds_read_only = places
            .iter()
            .any(|p| p.path != place.path && p.path.starts_with(&place.path) && !writable(&p.path));
        if own != around || (own && holds_read_only) {
            binds.push(place);
        }
    }
    binds.sort_by_key(|p| p.path.components().count());
    Plan { read_only_root, binds }
}

/// The places to attach (`Plan::binds` and those under a mask) and the masks to mount.
#[derive(Debug, PartialEq, Eq)]
struct Masked {
    /// Outermost first.
    binds: Vec<Place>,
    masks: Vec<MaskPlan>,
}

#[derive(Debug, PartialEq, Eq)]
struct MaskPlan {
    path: PathBuf,
    /// Relative to `path`, each after its parent.
    dirs: Vec<PathBuf>,
}

/// Which masks apply (not one that is a place or a kept directory: granted whole), and what is
/// attached again over them: every place under one (a copy keeps the places inside it), and
/// each directory of `keep` under one that no place holds, read-only.
fn mask_plan(places: &[Place], keep: &[PathBuf], masks: &[PathBuf], binds: &[&Place]) -> Masked {
    let granted =
        |path: &Path| places.iter().any(|p| p.path == path) || keep.iter().any(|k| k == path);
    let mut applied: Vec<&PathBuf> = masks.iter().filter(|m| !granted(m)).collect();
    applied.sort_by_key(|m| m.components().count());
    applied.dedup();
    let under_mask =
        |path: &Path| applied.iter().any(|m| path != m.as_path() && path.starts_with(m));
    let mut all: Vec<Place> = binds.iter().map(|p| (*p).clone()).collect();
    let writable = |path: &Path| places.iter().any(|p| p.path == path && p.writable);
    for place in places.iter().filter(|p| under_mask(&p.path)) {
        if !all.iter().any(|b| b.path == place.path) {
            all.push(Place { path: place.path.clone(), writable: writable(&place.path) });
        }
    }
    for path in keep.iter().filter(|k| under_mask(k)) {
        let held = places.iter().any(|p| path.starts_with(&p.path));
        if !held && !all.iter().any(|b| &b.path == path) {
            all.push(Place { path: path.clone(), writable: false });
        }
    }
    all.sort_by_key(|p| p.path.components().count());
    let masks = applied
        .iter()
        .map(|mask| {
            let mut dirs: Vec<PathBuf> = Vec::new();
            for place in all.iter().filter(|p| p.path.starts_with(mask) && p.path != **mask) {
                let Ok(rel) = place.path.strip_prefix(mask) else { continue };
                for dir in rel.ancestors().filter(|d| !d.as_os_str().is_empty()) {
                    if !dirs.iter().any(|d| d == dir) {
                        dirs.push(dir.to_path_buf());
                    }
                }
            }
            dirs.sort_by_key(|d| d.components().count());
            MaskPlan { path: (*mask).clone(), dirs }
        })
        .collect();
    Masked { binds: all, masks }
}

/// The failure of a step, with its error number taken at once (a later call may change it).
fn or<T>(result: io::Result<T>, step: Step) -> Result<T, (Step, i32)> {
    result.map_err(|e| (step, e.raw_os_error().unwrap_or(0)))
}

/// The helper's mounting: copies each place (read-only if it is), makes `/` read-only, and
/// attaches the copies over their places, outermost first, each mask before the places deeper
/// than it.
fn fence(read_only_root: bool, binds: &mut [Bind], masks: &[Mask]) -> Result<(), (Step, i32)> {
    for (i, bind) in binds.iter_mut().enumerate() {
        match copy(&bind.path, bind.writable) {
            Ok(tree) => bind.tree = tree,
            // A place that is not there (no /dev/shm) needs no mount.
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
            Err(e) => return or(Err(e), Step::Copy(i)),
        }
    }
    if read_only_root {
        or(set_attr(libc::AT_FDCWD, c"/", 0, libc::MOUNT_ATTR_RDONLY), Step::ReadOnlyRoot)?;
    }
    let mut masked = 0;
    for (i, bind) in binds.iter().enumerate() {
        while masked < masks.len() && masks[masked].depth < bind.depth {
            or(mask(&masks[masked]), Step::Mask(masked))?;
            masked += 1;
        }
        if bind.tree >= 0 {
            or(attach(bind.tree, &bind.path), Step::Attach(i))?;
        }
    }
    for (i, rest) in masks.iter().enumerate().skip(masked) {
        or(mask(rest), Step::Mask(i))?;
    }
    Ok(())
}

/// Covers `mask.path` with an empty tmpfs, read-only once its mount points are made. A path
/// that is not there needs none.
fn mask(mask: &Mask) -> io::Result<()> {
    // SAFETY (here and below): plain system calls on NUL-terminated strings and descriptors
    // this function owns.
    let fs = unsafe { libc::syscall(libc::SYS_fsopen, c"tmpfs".as_ptr(), FSOPEN_CLOEXEC) };
    if fs < 0 {
        return Err(io::Error::last_os_error());
    }
    let fs = fs as RawFd;
    let set = |key: &CStr, value: Option<&CStr>| {
        let (cmd, value) = match value {
            Some(v) => (FSCONFIG_SET_STRING, v.as_ptr()),
            None => (FSCONFIG_CMD_CREATE, std::ptr::null()),
        };
        let key = if value.is_null() { std::ptr::null() } else { key.as_ptr() };
        check(unsafe { libc::syscall(libc::SYS_fsconfig, fs, cmd, key, value, 0) } as libc::c_int)
    };
    // Mount points take inodes, not blocks: 4 KiB is room enough.
    let made = set(c"mode", Some(c"0755"))
        .and_then(|()| set(c"size", Some(c"4k")))
        .and_then(|()| set(c"", None))
        .and_then(|()| {
            let attr = (libc::MOUNT_ATTR_NODEV | libc::MOUNT_ATTR_NOSUID | libc::MOUNT_ATTR_NOEXEC)
                as libc::c_uint;
            let mnt = unsafe { libc::syscall(libc::SYS_fsmount, fs, FSMOUNT_CLOEXEC, attr) };
            if mnt < 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(mnt as RawFd)
        });
    unsafe { libc::close(fs) };
    let mnt = made?;
    let mut result = Ok(());
    for dir in &mask.dirs {
        let rc = unsafe { libc::mkdirat(mnt, dir.as_ptr(), 0o755) };
        if rc < 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EEXIST) {
            result = Err(io::Error::last_os_error());
            break;
        }
    }
    let result = result
        .and_then(|()| set_attr(mnt, c"", libc::AT_EMPTY_PATH, libc::MOUNT_ATTR_RDONLY))
        .and_then(|()| match attach(mnt, &mask.path) {
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(()),
            attached => attached,
        });
    unsafe { libc::close(mnt) };
    result
}

/// A detached copy of the mounts at and below `path`, read-only unless `writable`; otherwise
/// with the host's own flags (a root on a read-only filesystem stays read-only).
fn copy(path: &CStr, writable: bool) -> io::Result<RawFd> {
    let dir = open_dir(path)?;
    let flags = libc::OPEN_TREE_CLONE
        | libc::OPEN_TREE_CLOEXEC
        | libc::AT_RECURSIVE as libc::c_uint
        | libc::AT_EMPTY_PATH as libc::c_uint;
    // SAFETY: `dir` is open and the path is an empty NUL-terminated string.
    let tree = unsafe { libc::syscall(libc::SYS_open_tree, dir, c"".as_ptr(), flags) } as RawFd;
    let copied = if tree < 0 { Err(io::Error::last_os_error()) } else { Ok(tree) };
    unsafe { libc::close(dir) };
    let tree = copied?;
    // No device opens through a place but /dev's own: a node that sits in a root (put there
    // from outside: commands cannot make one) stays a file.
    let devices = path.to_bytes().starts_with(b"/dev/");
    let attr = match (writable, devices) {
        (true, true) => 0,
        (true, false) => libc::MOUNT_ATTR_NODEV,
        (false, true) => libc::MOUNT_ATTR_RDONLY,
        (false, false) => libc::MOUNT_ATTR_RDONLY | libc::MOUNT_ATTR_NODEV,
    };
    if attr != 0 {
        if let Err(e) = set_attr(tree, c"", libc::AT_EMPTY_PATH, attr) {
            unsafe { libc::close(tree) };
            return Err(e);
        }
    }
    Ok(tree)
}

/// A `devpts` instance of the namespace's own on `/dev/pts` (the host's shows every terminal of
/// the machine: a command could read what is typed in another session and write into it),
/// with `/dev/ptmx` its `ptmx`; where the kernel refuses one, an empty read-only tmpfs there.
/// A tmpfs of 64 MiB (Docker's default) on `/dev/shm`, for the host's holds other programs'
/// shared memory. Neither failing costs the namespace: the host's directory then stays
/// hidden or, with no mount at all, left as it is. A pseudo-terminal the server opened before
/// the command started is inherited by descriptor and keeps working.
fn private_devices(opened: &mut [RawFd; 3]) {
    let none = std::ptr::null::<libc::c_void>();
    let mount = |source: &CStr, target: &CStr, fs: &CStr, flags: libc::c_ulong, data: &CStr| {
        // SAFETY: NUL-terminated strings.
        let rc = unsafe {
            libc::mount(source.as_ptr(), target.as_ptr(), fs.as_ptr(), flags, data.as_ptr().cast())
        };
        rc == 0
    };
    let hidden = libc::MS_NOSUID | libc::MS_NOEXEC;
    if open_dir(c"/dev/pts").map(|fd| unsafe { libc::close(fd) }).is_ok() {
        let pts = c"newinstance,ptmxmode=0666,mode=0620";
        if mount(c"devpts", c"/dev/pts", c"devpts", hidden, pts) {
            // SAFETY: NUL-terminated paths; a bind mount takes no data.
            let rc = unsafe {
                libc::mount(
                    c"/dev/pts/ptmx".as_ptr(),
                    c"/dev/ptmx".as_ptr(),
                    std::ptr::null(),
                    libc::MS_BIND,
                    none,
                )
            };
            if rc == 0 {
                // SAFETY: a NUL-terminated path.
                let fd = unsafe {
                    libc::open(
                        c"/dev/ptmx".as_ptr(),
                        libc::O_PATH | libc::O_CLOEXEC | libc::O_NOFOLLOW,
                    )
                };
                opened[1] = fd.max(-1);
            }
            opened[0] = open_dir(c"/dev/pts").unwrap_or(-1);
        } else {
            let empty = hidden | libc::MS_NODEV | libc::MS_RDONLY;
            mount(c"tmpfs", c"/dev/pts", c"tmpfs", empty, c"mode=0755,size=4k");
        }
    }
    if open_dir(c"/dev/shm").map(|fd| unsafe { libc::close(fd) }).is_ok() {
        let shm = libc::MS_NOSUID | libc::MS_NODEV;
        if mount(c"tmpfs", c"/dev/shm", c"tmpfs", shm, c"mode=1777,size=64m") {
            opened[2] = open_dir(c"/dev/shm").unwrap_or(-1);
        }
    }
}

/// `fsconfig`'s commands and the flags of `fsopen` and `fsmount` (linux/mount.h), which the
/// libc crate does not define.
const FSOPEN_CLOEXEC: libc::c_uint = 1;
const FSCONFIG_SET_STRING: libc::c_uint = 1;
const FSCONFIG_CMD_CREATE: libc::c_uint = 6;
const FSMOUNT_CLOEXEC: libc::c_uint = 1;

/// Mounts an overlay of `overlay`'s layers over its target (looked up now, through the mounts
/// attached before it), `nodev` and `nosuid`.
fn mount_overlay(overlay: &mut Layered) -> io::Result<()> {
    overlay.lower.open()?;
    overlay.upper.open()?;
    overlay.work.open()?;
    // SAFETY (here and below): plain system calls on NUL-terminated strings and descriptors
    // this function owns.
    let fs = unsafe { libc::syscall(libc::SYS_fsopen, c"overlay".as_ptr(), FSOPEN_CLOEXEC) };
    if fs < 0 {
        return Err(io::Error::last_os_error());
    }
    let fs = fs as RawFd;
    let set = |key: &CStr, value: &CStr| {
        let rc = unsafe {
            libc::syscall(
                libc::SYS_fsconfig,
                fs,
                FSCONFIG_SET_STRING,
                key.as_ptr(),
                value.as_ptr(),
                0,
            )
        };
        check(rc as libc::c_int)
    };
    let made = set(c"lowerdir", &overlay.lower.name)
        .and_then(|()| set(c"upperdir", &overlay.upper.name))
        .and_then(|()| set(c"workdir", &overlay.work.name))
        .and_then(|()| {
            let rc = unsafe {
                libc::syscall(
                    libc::SYS_fsconfig,
                    fs,
                    FSCONFIG_CMD_CREATE,
                    std::ptr::null::<libc::c_char>(),
                    std::ptr::null::<libc::c_void>(),
                    0,
                )
            };
            check(rc as libc::c_int)
        })
        .and_then(|()| {
            let attr = (libc::MOUNT_ATTR_NODEV | libc::MOUNT_ATTR_NOSUID) as libc::c_uint;
            let mnt = unsafe { libc::syscall(libc::SYS_fsmount, fs, FSMOUNT_CLOEXEC, attr) };
            if mnt < 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(mnt as RawFd)
        });
    unsafe { libc::close(fs) };
    let mnt = made?;
    let attached = attach(mnt, &overlay.lower.path);
    unsafe { libc::close(mnt) };
    attached?;
    overlay.root = open_dir(&overlay.lower.path)?;
    Ok(())
}

/// Covers one hidden path: an empty tmpfs of mode 000 over a directory, a `nodev` copy of
/// `/dev/null` over anything else; read-only, `noexec`, `nosuid`. The target is opened following
/// no symlink, so a link put in its place since the walk is not followed out.
fn cover(cover: &Cover) -> io::Result<()> {
    let attr = libc::MOUNT_ATTR_RDONLY
        | libc::MOUNT_ATTR_NODEV
        | libc::MOUNT_ATTR_NOEXEC
        | libc::MOUNT_ATTR_NOSUID;
    let tree = if cover.dir {
        // SAFETY (here and below): plain system calls on NUL-terminated strings and
        // descriptors this function owns.
        let fs = unsafe { libc::syscall(libc::SYS_fsopen, c"tmpfs".as_ptr(), FSOPEN_CLOEXEC) };
        if fs < 0 {
            return Err(io::Error::last_os_error());
        }
        let fs = fs as RawFd;
        let made = check(unsafe {
            libc::syscall(
                libc::SYS_fsconfig,
                fs,
                FSCONFIG_SET_STRING,
                c"mode".as_ptr(),
                c"0".as_ptr(),
                0,
            )
        } as libc::c_int)
        .and_then(|()| {
            check(unsafe {
                libc::syscall(
                    libc::SYS_fsconfig,
                    fs,
                    FSCONFIG_CMD_CREATE,
                    std::ptr::null::<libc::c_char>(),
                    std::ptr::null::<libc::c_void>(),
                    0,
                )
            } as libc::c_int)
        })
        .and_then(|()| {
            let mnt = unsafe {
                libc::syscall(libc::SYS_fsmount, fs, FSMOUNT_CLOEXEC, attr as libc::c_uint)
            };
            if mnt < 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(mnt as RawFd)
        });
        unsafe { libc::close(fs) };
        made?
    } else {
        let flags = libc::OPEN_TREE_CLONE | libc::OPEN_TREE_CLOEXEC;
        let tree = unsafe {
            libc::syscall(libc::SYS_open_tree, libc::AT_FDCWD, c"/dev/null".as_ptr(), flags)
        };
        if tree < 0 {
            return Err(io::Error::last_os_error());
        }
        let tree = tree as RawFd;
        if let Err(e) = set_attr(tree, c"", libc::AT_EMPTY_PATH, attr) {
            unsafe { libc::close(tree) };
            return Err(e);
        }
        tree
    };
    let target = match open_no_symlinks(&cover.path, cover.dir) {
        Ok(fd) => fd,
        Err(e) => {
            unsafe { libc::close(tree) };
            return Err(e);
        }
    };
    let flags = libc::MOVE_MOUNT_F_EMPTY_PATH | libc::MOVE_MOUNT_T_EMPTY_PATH;
    let rc = unsafe {
        libc::syscall(libc::SYS_move_mount, tree, c"".as_ptr(), target, c"".as_ptr(), flags)
    };
    let attached = check(rc as libc::c_int);
    unsafe {
        libc::close(target);
        libc::close(tree);
    }
    attached
}

/// Attaches the detached `tree` over the directory at `path`, looked up now (through the
/// mounts attached before it).
fn attach(tree: RawFd, path: &CStr) -> io::Result<()> {
    let target = open_dir(path)?;
    let flags = libc::MOVE_MOUNT_F_EMPTY_PATH | libc::MOVE_MOUNT_T_EMPTY_PATH;
    // SAFETY: both descriptors are open, both paths are empty NUL-terminated strings.
    let rc = unsafe {
        libc::syscall(libc::SYS_move_mount, tree, c"".as_ptr(), target, c"".as_ptr(), flags)
    };
    let attached = check(rc as libc::c_int);
    unsafe { libc::close(target) };
    attached
}

/// `struct open_how` (libc's is non-exhaustive, so not built by hand).
#[repr(C)]
struct RawOpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

/// The directory at `path` (`O_PATH`), following no symlink: the places are canonical paths,
/// so one met means the tree changed since they were checked.
pub(super) fn open_dir(path: &CStr) -> io::Result<RawFd> {
    open_no_symlinks(path, true)
}

/// The directory (or, unless `dir`, the file) at `path`, as [`open_dir`] opens it.
fn open_no_symlinks(path: &CStr, dir: bool) -> io::Result<RawFd> {
    let only_dir = if dir { libc::O_DIRECTORY } else { libc::O_NOFOLLOW };
    let how = RawOpenHow {
        flags: (libc::O_PATH | only_dir | libc::O_CLOEXEC) as u64,
        mode: 0,
        resolve: libc::RESOLVE_NO_SYMLINKS,
    };
    // SAFETY: `path` is NUL-terminated and `how` is an open_how of the size given.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            libc::AT_FDCWD,
            path.as_ptr(),
            &how as *const RawOpenHow,
            std::mem::size_of::<RawOpenHow>(),
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(fd as RawFd)
}

fn open_file(path: &CStr) -> io::Result<RawFd> {
    // SAFETY: `path` is NUL-terminated.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    check(fd)?;
    Ok(fd)
}

/// Writes `text` to the file at `path` in one `write`, as /proc's id maps want.
fn write_file(path: &CStr, text: &[u8]) -> io::Result<()> {
    // SAFETY: `path` is NUL-terminated, `text` is readable for its length.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
    check(fd)?;
    let written = unsafe { libc::write(fd, text.as_ptr().cast(), text.len()) };
    let result = match written {
        n if n < 0 => Err(io::Error::last_os_error()),
        n if n as usize != text.len() => Err(io::Error::from_raw_os_error(libc::EIO)),
        _ => Ok(()),
    };
    unsafe { libc::close(fd) };
    result
}

/// Sets `set` (`MOUNT_ATTR_*`) on the mount at `path` relative to `dir` and every mount below
/// it.
fn set_attr(dir: RawFd, path: &CStr, flags: libc::c_int, set: u64) -> io::Result<()> {
    let attr = libc::mount_attr { attr_set: set, attr_clr: 0, propagation: 0, userns_fd: 0 };
    // SAFETY: `path` is NUL-terminated and `attr` is a mount_attr of the size given.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            dir,
            path.as_ptr(),
            (flags | libc::AT_RECURSIVE) as libc::c_uint,
            &attr as *const libc::mount_attr,
            std::mem::size_of::<libc::mount_attr>(),
        )
    };
    check(rc as libc::c_int)
}

#[cfg(test)]
mod tests;
