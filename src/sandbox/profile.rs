//! The Seatbelt profile for macOS, written from the allowed directories: a pure function,
//! compiled on every OS so that its tests run on Linux too (`seatbelt` applies it).
//!
//! The profile is SBPL, Seatbelt's Scheme dialect. It starts closed (`deny default`), takes
//! Apple's `bsd.sb` baseline for what any BSD process needs (the dyld cache, system libraries,
//! a few system services), as replay's original does, and grants:
//!
//! - read and execute: the system directories, the `PATH` directories, `--sandbox-read`, the
//!   user's git and cargo configuration, and every allowed directory;
//! - write, metadata included (`file-write*` covers data, creation, removal, renaming, modes,
//!   owners, times, extended attributes and flags): the read-write directories, less the
//!   read-only ones inside them, and this server's TMPDIR for commands;
//! - the status (`file-read-metadata`) of any path, as Landlock leaves it open on Linux: a
//!   shell's `realpath` and `pwd` need it above the allowed directories;
//! - a few device files, processes of this sandbox only (fork, signals, inspection), a short
//!   list of system services, and the network unless `--deny-network`.
//!
//! Seatbelt matches the path a file really has, so every path given here is canonical:
//! `/private/etc`, never `/etc`. A path is written as an SBPL string, with `\` and `"` escaped;
//! everything else, newlines and non-ASCII included, is taken as it is. A path that is not
//! UTF-8 cannot be written (macOS's filesystems store UTF-8 names), and is an error.

use std::fmt::{self, Write};
use std::path::{Path, PathBuf};

use crate::policy::{Access, AllowedRoot};

/// What the profile grants, besides the system's own places. Every path is canonical.
#[derive(Debug, Clone, Copy)]
pub struct Grants<'a> {
    pub roots: &'a [AllowedRoot],
    /// This server's TMPDIR for commands: read-write.
    pub tmp: Option<&'a Path>,
    /// Read and execute: `--sandbox-read`, the `PATH` directories, the user's configuration.
    pub read: &'a [PathBuf],
    pub deny_network: bool,
}

/// A path the profile cannot express.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotExpressible(pub PathBuf);

impl fmt::Display for NotExpressible {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} is not UTF-8, which a Seatbelt profile cannot name", self.0.display())
    }
}

/// Where a shell and common tools read and run programs from, canonical. `/private/var/select`
/// holds the link `/bin/sh` follows to the real shell; `xcode_select_link` is where the
/// developer tools (`/usr/bin/git` is a shim) are found.
pub const SYSTEM_READ: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/System",
    "/Library",
    "/opt",
    "/Applications/Xcode.app",
    "/private/etc",
    "/private/var/select",
    "/private/var/db/timezone",
    "/private/var/db/xcode_select_link",
    "/dev",
];

/// Device files commands read and write (`> /dev/null`, a terminal, random numbers).
pub const DEV_WRITE: &[&str] =
    &["/dev/null", "/dev/zero", "/dev/tty", "/dev/random", "/dev/urandom", "/dev/dtracehelper"];

/// The system services commands may ask for: user and group names (`id`, git), notifications
/// and preferences, logging, certificate trust (TLS), and, with the network, name resolution.
/// Not among them: LaunchServices, through which `open` would start an app outside the
/// sandbox.
const SERVICES: &[&str] = &[
    "com.apple.system.opendirectoryd.libinfo",
    "com.apple.system.notification_center",
    "com.apple.cfprefsd.daemon",
    "com.apple.cfprefsd.agent",
    "com.apple.logd",
    "com.apple.system.logger",
    "com.apple.trustd",
    "com.apple.trustd.agent",
    "com.apple.SecurityServer",
];
const NETWORK_SERVICES: &[&str] = &["com.apple.dnssd.service", "com.apple.mDNSResponder"];

/// The profile for `grants`.
pub fn render(grants: &Grants<'_>) -> Result<String, NotExpressible> {
    let mut out = String::with_capacity(4096);
    out.push_str(PREAMBLE);
    let services = SERVICES
        .iter()
        .chain(if grants.deny_network { &[][..] } else { NETWORK_SERVICES })
        .map(|name| format!("(global-name {})", literal(name)));
    form(&mut out, "allow mach-lookup", services);

    out.push_str(
        "\n; The status of any path, as on Linux (realpath, pwd).\n(allow file-read-metadata)\n",
    );

    out.push_str("\n; Read and run programs: the system, PATH, --sandbox-read, the user's configuration, the allowed directories.\n");
    let system = SYSTEM_READ.iter().map(Path::new);
    let roots = grants.roots.iter().map(|root| root.path.as_path());
    let readable = system.chain(grants.read.iter().map(PathBuf::as_path)).chain(roots);
    form(&mut out, "allow file-read* process-exec*", subpaths(readable)?);

    out.push_str("\n; Write, metadata included: the read-write directories, less the read-only ones inside them, and the commands' TMPDIR.\n");
    let mut writable = Vec::new();
    for root in grants.roots.iter().filter(|r| r.access == Access::Write) {
        writable.push(writable_root(root, grants.roots)?);
    }
    if let Some(tmp) = grants.tmp {
        writable.push(format!("(subpath {})", quoted(tmp)?));
    }
    form(&mut out, "allow file-write*", writable.into_iter());

    out.push_str("\n; Device files.\n");
    let devices = DEV_WRITE.iter().map(|dev| format!("(literal {})", literal(dev)));
    form(&mut out, "allow file-read* file-write-data file-ioctl", devices);
    out.push_str(TERMINALS);

    out.push_str("\n; The network.\n");
    out.push_str(if grants.deny_network { "(deny network*)\n" } else { "(allow network*)\n" });
    Ok(out)
}

/// Closed by default; Apple's baseline; processes of this sandbox only.
const PREAMBLE: &str = r#"(version 1)
(deny default)
(import "bsd.sb")

; Processes: commands fork, and signal and inspect only the processes of this sandbox.
(allow process-fork)
(allow signal (target same-sandbox))
(allow process-info* (target same-sandbox))
(allow sysctl-read)
(allow mach-host*)
(allow user-preference-read)
(allow ipc-posix-sem)
(allow ipc-posix-shm)
(allow pseudo-tty)

; System services.
"#;

/// Pseudo-terminals (`script`, `expect`).
const TERMINALS: &str = r#"(allow file-read* file-write* file-ioctl
  (literal "/dev/ptmx")
  (regex #"^/dev/ttys[0-9]+$"))
"#;

/// A read-write root's write grant: the root, less each read-only root inside it. A read-write
/// root inside one of those has its own grant, so the innermost root decides, as the policy
/// does.
fn writable_root(root: &AllowedRoot, roots: &[AllowedRoot]) -> Result<String, NotExpressible> {
    let inner_read_only: Vec<&AllowedRoot> = roots
        .iter()
        .filter(|r| {
            r.access == Access::Read && r.path != root.path && r.path.starts_with(&root.path)
        })
        .collect();
    if inner_read_only.is_empty() {
        return Ok(format!("(subpath {})", quoted(&root.path)?));
    }
    let mut text = format!("(require-all (subpath {})", quoted(&root.path)?);
    for inner in inner_read_only {
        let _ = write!(text, " (require-not (subpath {}))", quoted(&inner.path)?);
    }
    text.push(')');
    Ok(text)
}

fn subpaths<'a>(
    paths: impl Iterator<Item = &'a Path>,
) -> Result<impl Iterator<Item = String>, NotExpressible> {
    let mut filters: Vec<String> = Vec::new();
    for path in paths {
        let filter = format!("(subpath {})", quoted(path)?);
        if !filters.contains(&filter) {
            filters.push(filter);
        }
    }
    Ok(filters.into_iter())
}

/// `(head filter filter ...)`, one filter a line; nothing when there is no filter (a rule
/// without filters would apply to everything).
fn form(out: &mut String, head: &str, filters: impl Iterator<Item = String>) {
    let mut filters = filters.peekable();
    if filters.peek().is_none() {
        return;
    }
    out.push('(');
    out.push_str(head);
    for filter in filters {
        out.push_str("\n  ");
        out.push_str(&filter);
    }
    out.push_str(")\n");
}

/// `path` as an SBPL string literal ([`literal`]); an error if it is not UTF-8.
pub fn quoted(path: &Path) -> Result<String, NotExpressible> {
    path.to_str().map(literal).ok_or_else(|| NotExpressible(path.to_path_buf()))
}

/// `text` as an SBPL string literal: in double quotes, `\` and `"` escaped with `\`.
pub fn literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests;
