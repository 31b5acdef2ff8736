//! Seatbelt, macOS's sandbox: the server applies the profile `profile::render` writes for the
//! allowed directories to itself, with `sandbox_init`, and every command it starts inherits it
//! (Seatbelt binds a process and its descendants, all threads at once, for good).
//!
//! `sandbox_init` is deprecated in the SDK's header but present in every macOS since 10.5 and
//! used by Chromium and replay's original alike; with flags 0 it takes the profile's text.
//! The alternative, re-executing the server under `/usr/bin/sandbox-exec`, costs a process
//! image and a start-up, and that tool is deprecated the same way.

use std::ffi::{c_char, c_int, CStr, CString};
use std::path::{Path, PathBuf};

use super::profile::{self, Grants};
use super::{Kernel, SandboxConfig};
use crate::policy::AllowedRoot;

extern "C" {
    /// `<sandbox.h>`: applies `profile` (SBPL text, with `flags` 0) to the calling process.
    fn sandbox_init(profile: *const c_char, flags: u64, errorbuf: *mut *mut c_char) -> c_int;
    /// Frees the message `sandbox_init` gave.
    fn sandbox_free_error(errorbuf: *mut c_char);
}

/// Confines this process and every process it starts afterwards. `child_tmp` is this server's
/// own TMPDIR for commands (`CommandTmp::dir`).
pub fn apply(
    roots: &[AllowedRoot],
    child_tmp: Option<&Path>,
    home: Option<&Path>,
    config: &SandboxConfig,
) -> Kernel {
    let read = readable(home, config);
    let grants = Grants { roots, tmp: child_tmp, read: &read, deny_network: config.deny_network };
    let text = match profile::render(&grants) {
        Ok(text) => text,
        Err(e) => return Kernel::Failed(e.to_string()),
    };
    tracing::debug!("Seatbelt profile:\n{text}");
    let Ok(text) = CString::new(text) else {
        return Kernel::Failed("a NUL byte in the profile".to_string());
    };
    let mut error: *mut c_char = std::ptr::null_mut();
    // SAFETY: `text` is NUL-terminated and outlives the call; `error` is set to a C string
    // that `sandbox_free_error` releases, or left null.
    let rc = unsafe { sandbox_init(text.as_ptr(), 0, &mut error) };
    if rc == 0 {
        return Kernel::Enforced;
    }
    let detail = if error.is_null() {
        format!("sandbox_init returned {rc}")
    } else {
        // SAFETY: a NUL-terminated message from sandbox_init, released right after.
        let detail = unsafe { CStr::from_ptr(error) }.to_string_lossy().into_owned();
        unsafe { sandbox_free_error(error) };
        detail
    };
    Kernel::Failed(detail)
}

/// What commands read and run besides the system and the roots, each by its real path (Seatbelt
/// matches real paths): the `PATH` directories, `--sandbox-read`, and the user's git and cargo
/// configuration. Paths that do not exist are left out.
fn readable(home: Option<&Path>, config: &SandboxConfig) -> Vec<PathBuf> {
    let path_dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).filter(|d| d.is_absolute()).collect())
        .unwrap_or_default();
    let home_config: Vec<PathBuf> = home
        .map(|h| vec![h.join(".gitconfig"), h.join(".config/git"), h.join(".cargo/config.toml")])
        .unwrap_or_default();
    let mut out: Vec<PathBuf> = Vec::new();
    for path in path_dirs.iter().chain(&config.extra_read).chain(&home_config) {
        if let Ok(real) = std::fs::canonicalize(path) {
            if !out.contains(&real) {
                out.push(real);
            }
        }
    }
    out
}
