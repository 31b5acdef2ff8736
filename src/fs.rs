//! Filesystem work below the tools and above the policy's containment: what takes more than one
//! open, such as a whole tree.
//!
//! `policy::confined` decides where an operation may land and opens it there (root handles,
//! `openat2` beneath them, slots); the modules here do the I/O on the handles it gave.

pub mod atomic;
pub mod digest;
pub mod journal;
pub mod read;
pub mod tree;

/// The permission bits a file replay writes keeps of its source's or predecessor's mode (a copy,
/// a rewrite): all but setuid and setgid, which are dropped as `cp` without `-p` drops them and
/// as the kernel drops them when an unprivileged process writes to a file, so new content never
/// runs with another user's (or group's) rights. The sticky bit stays.
pub const KEPT_MODE_BITS: u32 = 0o1777;
