//! Capabilities: read to choose how the namespace is made, and all of them dropped in a
//! command's process before it runs anything.
//!
//! Plain `capget`/`capset` and `prctl` system calls: a crate would add more than these few
//! calls, and the dropping runs between `fork` and `exec`, where nothing may allocate.

use std::io;

/// `_LINUX_CAPABILITY_VERSION_3`: two 32-bit words per set.
const VERSION_3: u32 = 0x2008_0522;
/// `CAP_SYS_CHROOT` and `CAP_SYS_ADMIN`: joining a mount namespace takes both, mounting the
/// second.
pub const SYS_CHROOT: u32 = 18;
pub const SYS_ADMIN: u32 = 21;

#[repr(C)]
struct Header {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Sets {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// The calling thread's effective, permitted and inheritable sets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Capabilities([Sets; 2]);

impl Capabilities {
    pub fn current() -> io::Result<Capabilities> {
        let mut header = Header { version: VERSION_3, pid: 0 };
        let mut sets = [Sets::default(); 2];
        // SAFETY: `header` and the two-element `sets` are what capget writes for version 3.
        let rc = unsafe { libc::syscall(libc::SYS_capget, &mut header, sets.as_mut_ptr()) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Capabilities(sets))
    }

    /// Makes these the calling thread's sets: only ever fewer than it has.
    fn set(&self) -> io::Result<()> {
        let mut header = Header { version: VERSION_3, pid: 0 };
        // SAFETY: `header` and the two-element array are what capset reads for version 3.
        let rc = unsafe { libc::syscall(libc::SYS_capset, &mut header, self.0.as_ptr()) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    pub fn effective(&self, cap: u32) -> bool {
        let word = &self.0[(cap / 32) as usize];
        word.effective & (1 << (cap % 32)) != 0
    }
}

/// Empties the calling thread's bounding set, where it may (`CAP_SETPCAP`, which an ordinary
/// user outside a namespace of its own lacks; then `no_new_privs` is what keeps `exec` from
/// granting anything). Async-signal-safe: no allocation.
fn drop_bounding_set() {
    for cap in 0..64 {
        // SAFETY: prctl with integer arguments only.
        if unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) } != 0 {
            // EINVAL past the kernel's last capability; EPERM without CAP_SETPCAP.
            break;
        }
    }
}

/// Leaves the calling thread no capability, and no way to gain one: the bounding set emptied
/// where it may be, root's privileges at `exec` turned off and locked (`SECBIT_NOROOT`) where
/// they may be, the ambient set cleared, the effective, permitted and inheritable sets emptied,
/// and `no_new_privs` set (so neither a setuid program nor file capabilities grant anything).
/// For a command's process between `fork` and `exec`: no allocation, system calls only.
pub fn drop_all() -> io::Result<()> {
    drop_bounding_set();
    let bits = libc::SECBIT_NOROOT
        | libc::SECBIT_NOROOT_LOCKED
        | libc::SECBIT_NO_SETUID_FIXUP
        | libc::SECBIT_NO_SETUID_FIXUP_LOCKED
        | libc::SECBIT_KEEP_CAPS_LOCKED
        | libc::SECBIT_NO_CAP_AMBIENT_RAISE
        | libc::SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
    // SAFETY: prctl with integer arguments only. Refused without CAP_SETPCAP: then there is no
    // capability to keep anyway, and no_new_privs below does the rest.
    unsafe {
        libc::prctl(libc::PR_SET_SECUREBITS, bits as libc::c_ulong, 0, 0, 0);
        libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong, 0, 0, 0);
    }
    Capabilities::default().set()?;
    // SAFETY: prctl with integer arguments only.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
