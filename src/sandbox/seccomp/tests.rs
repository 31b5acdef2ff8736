//! The filter run through a small interpreter of the classic-BPF instructions it uses.

use super::*;

/// What the filter answers for a call of `nr` from `arch` with `arg1` as its second argument.
fn run(filter: &Filter, arch: u32, nr: i64, arg1: u64) -> u32 {
    let mut data = [0u8; 64];
    data[0..4].copy_from_slice(&(nr as u32).to_ne_bytes());
    data[4..8].copy_from_slice(&arch.to_ne_bytes());
    data[24..32].copy_from_slice(&arg1.to_ne_bytes());
    let (mut acc, mut pc) = (0u32, 0usize);
    loop {
        let insn = filter.0[pc];
        let code = u32::from(insn.code);
        pc += 1;
        if code == libc::BPF_LD | libc::BPF_W | libc::BPF_ABS {
            let at = insn.k as usize;
            acc = u32::from_ne_bytes(data[at..at + 4].try_into().unwrap());
        } else if code == libc::BPF_RET | libc::BPF_K {
            return insn.k;
        } else {
            let taken = match code {
                c if c == libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K => acc == insn.k,
                c if c == libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K => acc >= insn.k,
                other => panic!("unexpected instruction {other:#x}"),
            };
            pc += usize::from(if taken { insn.jt } else { insn.jf });
        }
    }
}

#[track_caller]
fn check(nr: i64, arg1: u64, expect: u32) {
    let filter = filter(true).expect("a filter for this architecture");
    assert_eq!(run(&filter, AUDIT_ARCH, nr, arg1), expect, "call {nr}, arg {arg1:#x}");
}

/// `check` for the filter every command gets, outside the fallback.
#[track_caller]
fn check_always(nr: i64, arg1: u64, expect: u32) {
    let filter = filter(false).expect("a filter for this architecture");
    assert_eq!(run(&filter, AUDIT_ARCH, nr, arg1), expect, "call {nr}, arg {arg1:#x}");
}

const ALLOW: u32 = libc::SECCOMP_RET_ALLOW;
const KILL: u32 = libc::SECCOMP_RET_KILL_PROCESS;

#[test]
fn metadata_changes_are_refused() {
    for &nr in REFUSED.iter().chain(REFUSED_LEGACY) {
        check(nr, 0, EPERM);
    }
    for request in [0x4008_6602, 0x401c_5820, 0x4004_6602] {
        check(libc::SYS_ioctl, request, EPERM);
    }
}

#[test]
fn everything_else_is_allowed() {
    check(libc::SYS_openat, 0, ALLOW);
    check(libc::SYS_write, 0x4008_6602, ALLOW);
    check(libc::SYS_execve, 0, ALLOW);
    check(libc::SYS_fstat, 0, ALLOW);
    check(libc::SYS_capset, 0, ALLOW);
    // Reading flags (FS_IOC_GETFLAGS) and a terminal's ioctls.
    check(libc::SYS_ioctl, 0x8008_6601, ALLOW);
    check(libc::SYS_ioctl, u64::from(libc::TCGETS as u32), ALLOW);
    // Only the low 32 bits of the request count, as the kernel reads it.
    check(libc::SYS_ioctl, 0x1_4008_6602, EPERM);
}

#[test]
fn reaching_into_other_processes_and_terminals_is_always_refused() {
    for &nr in REFUSED_ALWAYS {
        check(nr, 0, EPERM);
        check_always(nr, 0, EPERM);
    }
    for request in [libc::TIOCSTI, libc::TIOCLINUX, libc::TIOCSETD] {
        check(libc::SYS_ioctl, u64::from(request as u32), EPERM);
        check_always(libc::SYS_ioctl, u64::from(request as u32), EPERM);
    }
}

#[test]
fn outside_the_fallback_metadata_changes_are_allowed() {
    check_always(libc::SYS_fchmodat, 0, ALLOW);
    check_always(libc::SYS_setxattr, 0, ALLOW);
    check_always(libc::SYS_ioctl, 0x4008_6602, ALLOW);
    check_always(libc::SYS_ioctl, u64::from(libc::TCGETS as u32), ALLOW);
    check_always(libc::SYS_openat, 0, ALLOW);
}

#[test]
fn another_architecture_is_killed() {
    let filter = filter(true).expect("a filter for this architecture");
    assert_eq!(run(&filter, 0x4000_0003, libc::SYS_openat, 0), KILL, "i386");
    #[cfg(target_arch = "x86_64")]
    assert_eq!(run(&filter, AUDIT_ARCH, 0x4000_0000 | libc::SYS_openat, 0), KILL, "x32");
}
