//! A seccomp filter installed in each command's process. Always, it refuses with EPERM what
//! would let a command reach another process of the user's, the server or a sibling command:
//! tracing it (`ptrace`), reading or writing its memory (`process_vm_readv`,
//! `process_vm_writev`), taking its descriptors (`pidfd_getfd`) or comparing them (`kcmp`); and
//! pushing keystrokes into a terminal (`ioctl(TIOCSTI)`, `TIOCLINUX`) or changing its line
//! discipline (`TIOCSETD`).
//!
//! In the fallback where no mount namespace can be made, it also refuses every change of
//! metadata.
//!
//! Landlock does not cover modes, owners, times or extended attributes, and a filter sees
//! only system call numbers and plain arguments, never the path a call names. So this filter
//! refuses them everywhere, inside the read-write roots too: `chmod +x` fails there in this
//! mode (SECURITY.md says so). Refused:
//!
//! - modes, owners and times: the `chmod`, `chown` and `utime` families, `fchmodat2`;
//! - extended attributes, file capabilities (`security.capability`) among them: the
//!   `setxattr` and `removexattr` families, `setxattrat` and `removexattrat` included;
//! - inode flags: `ioctl(FS_IOC_SETFLAGS)`, `FS_IOC_FSSETXATTR`, `FS_IOC_SETVERSION`, and
//!   `file_setattr`;
//! - mounts: `mount`, `umount2`, `pivot_root` and the new mount API;
//! - `io_uring`, whose operations (`IORING_OP_SETXATTR` among them) no filter sees.
//!
//! Another architecture's calls (x86's 32-bit and x32 entry points on x86-64) would bypass a
//! table of numbers: they kill the process. The program is classic BPF, written out here: a
//! crate (`seccompiler`, `libseccomp`) would bring a compiler for a list of forty numbers.
//! The server itself never gets the filter: its atomic writes keep a file's mode with fchmod.

use std::io;

use libc::sock_filter;

/// `struct seccomp_data`: where the fields the filter reads lie.
const NR: u32 = 0;
const ARCH: u32 = 4;
/// The low 32 bits of the second argument (an ioctl's request number).
#[cfg(target_endian = "little")]
const ARG1_LOW: u32 = 24;
#[cfg(target_endian = "big")]
const ARG1_LOW: u32 = 28;

const EPERM: u32 = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7;
#[cfg(target_arch = "riscv64")]
const AUDIT_ARCH: u32 = 0xC000_00F3;

/// x32 system calls reach the x86-64 entry point with this bit set in the number.
#[cfg(target_arch = "x86_64")]
const X32_BIT: u32 = 0x4000_0000;

/// Numbers that are the same on every architecture (the generic table, from 5.1 on), newer
/// than some libc versions name.
mod generic {
    pub const IO_URING_SETUP: i64 = 425;
    pub const IO_URING_ENTER: i64 = 426;
    pub const IO_URING_REGISTER: i64 = 427;
    pub const OPEN_TREE: i64 = 428;
    pub const MOVE_MOUNT: i64 = 429;
    pub const FSOPEN: i64 = 430;
    pub const FSCONFIG: i64 = 431;
    pub const FSMOUNT: i64 = 432;
    pub const FSPICK: i64 = 433;
    pub const MOUNT_SETATTR: i64 = 442;
    pub const FCHMODAT2: i64 = 452;
    pub const SETXATTRAT: i64 = 463;
    pub const REMOVEXATTRAT: i64 = 466;
    pub const OPEN_TREE_ATTR: i64 = 467;
    pub const FILE_SETATTR: i64 = 469;
}

/// The calls refused to every command: each reaches into another process.
const REFUSED_ALWAYS: &[i64] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_pidfd_getfd,
    libc::SYS_kcmp,
];

/// ioctl requests refused to every command: the first two inject input into a terminal; the
/// third changes its line discipline (N_GSM0710, N_HDLC, ...: kernel code few programs reach,
/// with a record of memory-safety bugs), which no command needs.
const REFUSED_TTY_IOCTLS: &[u32] =
    &[libc::TIOCSTI as u32, libc::TIOCLINUX as u32, libc::TIOCSETD as u32];

/// The metadata calls the fallback refuses, on every architecture the filter knows.
const REFUSED: &[i64] = &[
    libc::SYS_fchmod,
    libc::SYS_fchmodat,
    generic::FCHMODAT2,
    libc::SYS_fchown,
    libc::SYS_fchownat,
    libc::SYS_utimensat,
    libc::SYS_setxattr,
    libc::SYS_lsetxattr,
    libc::SYS_fsetxattr,
    generic::SETXATTRAT,
    libc::SYS_removexattr,
    libc::SYS_lremovexattr,
    libc::SYS_fremovexattr,
    generic::REMOVEXATTRAT,
    generic::FILE_SETATTR,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    generic::OPEN_TREE,
    generic::OPEN_TREE_ATTR,
    generic::MOVE_MOUNT,
    generic::FSOPEN,
    generic::FSCONFIG,
    generic::FSMOUNT,
    generic::FSPICK,
    generic::MOUNT_SETATTR,
    generic::IO_URING_SETUP,
    generic::IO_URING_ENTER,
    generic::IO_URING_REGISTER,
];

/// The older calls only some architectures have.
#[cfg(target_arch = "x86_64")]
const REFUSED_LEGACY: &[i64] = &[
    libc::SYS_chmod,
    libc::SYS_chown,
    libc::SYS_lchown,
    libc::SYS_utime,
    libc::SYS_utimes,
    libc::SYS_futimesat,
];
#[cfg(not(target_arch = "x86_64"))]
const REFUSED_LEGACY: &[i64] = &[];

/// ioctl requests that change an inode's flags or attributes (`chattr`).
const REFUSED_IOCTLS: &[u32] = &[
    0x4008_6602, // FS_IOC_SETFLAGS
    0x4004_6602, // FS_IOC32_SETFLAGS
    0x401c_5820, // FS_IOC_FSSETXATTR
    0x4008_7602, // FS_IOC_SETVERSION
    0x4004_7602, // FS_IOC32_SETVERSION
];

/// A compiled filter, built before the fork that installs it.
#[derive(Debug)]
pub struct Filter(Vec<sock_filter>);

fn stmt(code: u32, k: u32) -> sock_filter {
    sock_filter { code: code as u16, jt: 0, jf: 0, k }
}

fn jump_eq(k: u32, jt: u8, jf: u8) -> sock_filter {
    sock_filter { code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16, jt, jf, k }
}

fn load(offset: u32) -> sock_filter {
    stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, offset)
}

fn ret(value: u32) -> sock_filter {
    stmt(libc::BPF_RET | libc::BPF_K, value)
}

/// The filter for this architecture, refusing metadata changes too when `metadata` (the
/// fallback); `None` where replay has no table for it.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64", target_arch = "riscv64"))]
pub fn filter(metadata: bool) -> Option<Filter> {
    let mut program =
        vec![load(ARCH), jump_eq(AUDIT_ARCH, 1, 0), ret(libc::SECCOMP_RET_KILL_PROCESS), load(NR)];
    #[cfg(target_arch = "x86_64")]
    program.extend([
        sock_filter {
            code: (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16,
            jt: 0,
            jf: 1,
            k: X32_BIT,
        },
        ret(libc::SECCOMP_RET_KILL_PROCESS),
    ]);
    let (calls, metadata_ioctls): (&[&[i64]], &[u32]) =
        if metadata { (&[REFUSED, REFUSED_LEGACY], REFUSED_IOCTLS) } else { (&[], &[]) };
    let ioctls: Vec<u32> = REFUSED_TTY_IOCTLS.iter().chain(metadata_ioctls).copied().collect();
    for &nr in REFUSED_ALWAYS.iter().chain(calls.iter().copied().flatten()) {
        program.extend([jump_eq(nr as u32, 0, 1), ret(EPERM)]);
    }
    // ioctl: the request number decides.
    program.extend([jump_eq(libc::SYS_ioctl as u32, 0, 1 + 2 * ioctls.len() as u8)]);
    program.push(load(ARG1_LOW));
    for &request in &ioctls {
        program.extend([jump_eq(request, 0, 1), ret(EPERM)]);
    }
    program.push(ret(libc::SECCOMP_RET_ALLOW));
    Some(Filter(program))
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64", target_arch = "riscv64")))]
pub fn filter(_metadata: bool) -> Option<Filter> {
    None
}

impl Filter {
    /// Installs the filter on the calling thread, for good. Needs `no_new_privs` (or
    /// CAP_SYS_ADMIN). For a command's process between `fork` and `exec`: no allocation.
    pub fn install(&self) -> io::Result<()> {
        let program = libc::sock_fprog {
            len: self.0.len() as libc::c_ushort,
            filter: self.0.as_ptr().cast_mut(),
        };
        // SAFETY: `program` points at `self.0`, which outlives the call; the kernel copies it.
        let rc = unsafe {
            libc::prctl(
                libc::PR_SET_SECCOMP,
                libc::SECCOMP_MODE_FILTER as libc::c_ulong,
                &program as *const libc::sock_fprog,
                0,
                0,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
