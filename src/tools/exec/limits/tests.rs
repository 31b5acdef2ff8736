//! Sizes and counts as the flags take them, and the notes a stopped command gets.

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use super::*;

#[track_caller]
fn check_size(raw: &str, expect: Result<Option<u64>, ()>) {
    assert_eq!(parse_size(raw).map_err(|_| ()), expect, "{raw:?}");
}

#[test]
fn sizes() {
    check_size("0", Ok(None));
    check_size("512", Ok(Some(512)));
    check_size("512M", Ok(Some(512 << 20)));
    check_size("8G", Ok(Some(8 << 30)));
    check_size("8g", Ok(Some(8 << 30)));
    check_size("8GiB", Ok(Some(8 << 30)));
    check_size("16 GB", Ok(Some(16 << 30)));
    check_size("64k", Ok(Some(64 << 10)));
    check_size("1T", Ok(Some(1 << 40)));
    check_size("", Err(()));
    check_size("G", Err(()));
    check_size("-1", Err(()));
    check_size("1.5G", Err(()));
    check_size("8X", Err(()));
    check_size("99999999999T", Err(()));
}

#[test]
fn a_bad_size_says_what_to_give() {
    let message = parse_size("lots").unwrap_err();
    assert_eq!(
        message,
        r#""lots" is not a size: give a number of bytes with K, M, G or T, as 512M or 8G (0: unlimited)"#
    );
}

#[test]
fn counts() {
    assert_eq!(parse_count("0"), Ok(None));
    assert_eq!(parse_count("512"), Ok(Some(512)));
    assert!(parse_count("many").is_err());
}

#[track_caller]
fn check_show(bytes: u64, expect: &str) {
    assert_eq!(show_size(bytes), expect);
}

#[test]
fn shown_sizes() {
    check_show(64 << 20, "64 MiB");
    check_show(8 << 30, "8 GiB");
    check_show(1536 << 20, "1536 MiB");
    check_show(1000, "1000 bytes");
}

/// An exit status from a shell's exit code.
fn code(n: i32) -> ExitStatus {
    ExitStatus::from_raw(n << 8)
}

#[track_caller]
fn check_note(status: ExitStatus, stderr: &str, expect: Option<&str>) {
    let limits =
        CommandLimits { memory: Some(8 << 30), file_size: Some(64 << 20), processes: Some(100) };
    assert_eq!(limits.note(status, stderr.as_bytes()).as_deref(), expect, "{status:?} {stderr:?}");
}

#[test]
fn notes() {
    let file = "[stopped: file size limit 64 MiB per file; raise it with --command-file-size]";
    let memory = "[a memory limit may have stopped it: 8 GiB of data per process; raise it with --command-memory]";
    let processes =
        "[a process limit may have stopped it: 100 processes; raise it with --command-processes]";
    check_note(code(0), "MemoryError", None);
    check_note(code(128 + libc::SIGXFSZ), "", Some(file));
    check_note(ExitStatus::from_raw(libc::SIGXFSZ), "", Some(file));
    check_note(code(1), "Traceback ...\nMemoryError\n", Some(memory));
    check_note(code(1), "tail: memory exhausted\n", Some(memory));
    check_note(code(2), "sh: fork: Resource temporarily unavailable\n", Some(processes));
    check_note(code(2), "/bin/sh: 0: Cannot fork\n", Some(processes));
    check_note(code(1), "ls: cannot access 'x': No such file or directory\n", None);
    let unlimited = CommandLimits { memory: None, file_size: None, processes: None };
    assert_eq!(unlimited.note(code(153), b"MemoryError"), None);
}
