//! How the process holds memory: glibc's malloc tuned once at start, and freed memory handed
//! back to the kernel once the server has been quiet for a moment.
//!
//! Peak memory is decided by what a call holds (the tools keep only what they report); this
//! module decides what happens to it afterwards. glibc's defaults made every large reply pay
//! for its memory twice: a buffer over its (moving) mmap threshold was mapped fresh and
//! unmapped after, and a heap top over the trim threshold was given back at once, so the next
//! call faulted in and zeroed every page again. For read_file of a 5 MiB file that was a third
//! of the call (17 ms against 11 ms with the memory kept, measured on the 2-core machine with
//! `bench/bench.py --only read-5mib`). So freed memory is kept while calls come, and given
//! back (`malloc_trim`) when the writer has had nothing to write for `QUIET` (1 s).

use std::time::Duration;

/// How long the server must have had nothing to write before freed memory goes back to the
/// kernel: long enough that a client's next call (or the next of a pipelined burst) reuses it,
/// short enough that a session's resting size follows its last call within a second.
pub const QUIET: Duration = Duration::from_secs(1);

/// Tunes malloc for a server whose threads share work and whose replies reach tens of MB.
/// Called first thing in `main`, before any other thread exists.
///
/// - One arena for the whole process. glibc gives each thread that contends its own arena and
///   keeps freed memory in each; with the walker, search and runtime threads that cost ~5 MB of
///   the 31 MB peak while grepping a 600 MB tree (26 MB with one arena, measured with
///   `bench/bench.py`), and the hot loops barely allocate, so the contention it adds is noise.
/// - Buffers up to 32 MiB (the largest reply line) come from the heap, and up to 64 MiB free
///   at its top is kept, instead of glibc's thresholds that move with the last freed mapping;
///   [`give_back`] returns it when the server is quiet.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn configure() {
    const M_TRIM_THRESHOLD: std::ffi::c_int = -1;
    const M_MMAP_THRESHOLD: std::ffi::c_int = -3;
    const M_ARENA_MAX: std::ffi::c_int = -8;
    extern "C" {
        fn mallopt(param: std::ffi::c_int, value: std::ffi::c_int) -> std::ffi::c_int;
    }
    // SAFETY: called before any other thread exists; mallopt only adjusts allocator tuning
    // and has no preconditions. 32 MiB is the largest mmap threshold glibc accepts on 64-bit.
    unsafe {
        mallopt(M_ARENA_MAX, 1);
        mallopt(M_MMAP_THRESHOLD, 32 << 20);
        mallopt(M_TRIM_THRESHOLD, 64 << 20);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn configure() {}

/// Gives the heap's free pages back to the kernel: what the last calls held and freed.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn give_back() {
    extern "C" {
        fn malloc_trim(pad: usize) -> std::ffi::c_int;
    }
    // SAFETY: malloc_trim takes the allocator's own lock and only releases free pages.
    unsafe {
        malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn give_back() {}
