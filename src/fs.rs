//! Filesystem work below the tools and above the policy's containment: what takes more than one
//! open, such as a whole tree.
//!
//! `policy::confined` decides where an operation may land and opens it there (root handles,
//! `openat2` beneath them, slots); the modules here do the I/O on the handles it gave.

pub mod atomic;
pub mod read;
pub mod tree;
