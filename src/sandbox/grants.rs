//! What commands may reach besides the allowed directories and the system: the toolchains'
//! install roots (read and execute), the user's tool configuration (read), the caches builds
//! write, the `--sandbox-read`/`--sandbox-write` directories; and the credentials that stay out.
//!
//! Landlock only adds rights along a path: it cannot take a file back out of a granted
//! directory. So nothing that holds a credential is granted whole: `~/.cargo` gives `bin`,
//! `registry` and `git`, never `credentials.toml`; `~/.m2` gives `repository`, never
//! `settings.xml`. A directory named by a variable is granted only when it neither is nor holds
//! nor lies in a credential place (`CREDENTIALS`), nor holds the home directory.
//!
//! A pure function of the home, the environment and which directories exist, so that
//! `replay sandbox` prints exactly what the sandbox applies and the tables in `tests.rs` hold
//! the rule. No directory is created: a server that makes `~/.npm` or `~/go/pkg/mod` at
//! start-up would change the home of a user who never runs that toolchain; a missing cache
//! shows in the refusal hint (`hint`), and `mkdir` once fixes it.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// What a grant lets commands do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Reach {
    /// Read and execute.
    Run,
    /// Read only: configuration files and directories.
    Read,
    /// Read, write, create, remove, rename within.
    Write,
}

/// One grant and the rule or variable behind it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub path: PathBuf,
    pub reach: Reach,
    pub why: String,
    /// Given by the user's own flag (`--sandbox-read`, `--sandbox-write`): taken as given. A
    /// cache the rules grant is written in a copy of the commands' own (`sandbox::places`).
    pub user: bool,
}

/// Places under the home that hold credentials: never granted, nor anything that holds them.
pub const CREDENTIALS: &[&str] = &[
    ".ssh",
    ".aws",
    ".azure",
    ".gnupg",
    ".netrc",
    ".git-credentials",
    ".config/git/credentials",
    ".config/gh",
    ".config/hub",
    ".config/gcloud",
    ".config/op",
    ".config/rclone",
    ".docker",
    ".kube",
    ".npmrc",
    ".yarnrc",
    ".pypirc",
    ".pgpass",
    ".my.cnf",
    ".vault-token",
    ".password-store",
    ".terraform.d",
    ".gem/credentials",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".m2/settings.xml",
    ".m2/settings-security.xml",
    ".gradle/gradle.properties",
    ".local/share/keyrings",
    ".mozilla",
    ".config/google-chrome",
    ".config/chromium",
    ".config/BraveSoftware",
    ".config/microsoft-edge",
    ".cache/mozilla",
    ".cache/google-chrome",
    ".cache/chromium",
    "snap",
];

/// The variables naming a toolchain's install root (read and execute), besides those with a
/// rule of their own (`CARGO_HOME`, `RUSTUP_HOME`, `PYENV_ROOT`, `NVM_DIR`, `GOPATH`). Only
/// these: any `*_HOME` is also `COMPOSER_HOME` (`auth.json`), `HF_HOME` (a token),
/// `GNUPGHOME`, `VAGRANT_HOME` (a private key)...
const TOOLCHAIN_VARS: &[&str] = &[
    "JAVA_HOME",
    "JDK_HOME",
    "GOROOT",
    "DENO_DIR",
    "BUN_INSTALL",
    "SDKMAN_DIR",
    "ASDF_DIR",
    "ASDF_DATA_DIR",
    "MISE_DATA_DIR",
    "VOLTA_HOME",
    "PNPM_HOME",
    "RBENV_ROOT",
    "NODENV_ROOT",
    "GRADLE_HOME",
    "MAVEN_HOME",
    "M2_HOME",
    "ANDROID_HOME",
    "ANDROID_SDK_ROOT",
    "ANDROID_NDK_HOME",
    "FLUTTER_ROOT",
    "DOTNET_ROOT",
];

/// Files that hold a credential wherever they are: a directory holding one is not granted.
const CREDENTIAL_FILES: &[&str] = &[
    "auth.json",
    "credentials",
    "credentials.toml",
    "credentials.json",
    ".credentials.json",
    "token",
    "hosts.yml",
    "id_rsa",
    "id_ed25519",
    "id_ecdsa",
    "insecure_private_key",
    "gradle.properties",
    "settings.xml",
];

/// Read-only configuration, under the home: files, or directories without credentials.
const CONFIG: &[&str] = &[
    ".gitconfig",
    ".config/git/config",
    ".config/git/ignore",
    ".config/git/attributes",
    ".cargo/config.toml",
    ".cargo/config",
];

/// The toolchains' install roots under the home, and the caches their builds write.
const HOME_RUN: &[(&str, &str)] = &[
    (".rustup", "rustup (~/.rustup, without RUSTUP_HOME)"),
    (".pyenv", "pyenv (~/.pyenv, without PYENV_ROOT)"),
    (".nvm", "nvm (~/.nvm, without NVM_DIR)"),
    (".local/bin", "~/.local: programs"),
    (".local/lib", "~/.local: libraries"),
    (".local/share/mise", "mise"),
    (".asdf", "asdf"),
    (".deno", "deno"),
    (".bun", "bun"),
    (".sdkman", "SDKMAN!"),
];
const HOME_WRITE: &[(&str, &str)] = &[
    (".npm", "npm's cache"),
    (".cache/pip", "pip's cache"),
    (".cache/go-build", "Go's build cache (without GOCACHE)"),
    (".cache/deno", "deno's cache"),
    (".bun/install/cache", "bun's cache"),
    (".m2/repository", "Maven's repository"),
    (".gradle/caches", "Gradle's caches"),
    (".gradle/wrapper", "Gradle's wrappers"),
];

/// What the environment gives: the home, and the variables (name, value).
#[derive(Debug, Clone, Default)]
pub struct Environment {
    pub home: Option<PathBuf>,
    pub vars: Vec<(String, OsString)>,
    /// The temporary directory, which holds every server's TMPDIR for commands.
    pub temp: Option<PathBuf>,
    /// The places commands write (the read-write roots, every server's TMPDIR for commands),
    /// without symlinks: no rule grants what lies in one, where a command chooses what is
    /// there.
    pub writable: Vec<PathBuf>,
    /// The `PATH` directories.
    pub path: Vec<PathBuf>,
}

impl Environment {
    /// This process's.
    pub fn current(home: Option<&Path>, mut writable: Vec<PathBuf>) -> Environment {
        let vars = std::env::vars_os()
            .filter_map(|(name, value)| Some((name.into_string().ok()?, value)))
            .collect();
        let temp = std::fs::canonicalize(std::env::temp_dir()).ok();
        writable.extend(temp.as_deref().map(super::tmp::parent));
        let path = std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).collect())
            .unwrap_or_default();
        Environment { home: home.map(Path::to_path_buf), vars, temp, writable, path }
    }

    /// The variable's directory: absolute, at least two levels down (not `/`, `/home`,
    /// `/tmp`).
    fn var(&self, name: &str) -> Option<PathBuf> {
        let (_, value) = self.vars.iter().find(|(n, _)| n == name)?;
        let path = PathBuf::from(value);
        (path.is_absolute() && path.components().count() > 2).then_some(path)
    }
}

/// Whether the home holds credentials at `path` or `path` holds or lies in one.
pub fn touches_credentials(home: &Path, path: &Path) -> bool {
    CREDENTIALS
        .iter()
        .map(|rel| home.join(rel))
        .any(|secret| secret.starts_with(path) || path.starts_with(&secret))
}

/// Whether `path` lies in a credential place by its name, in any directory (another home's
/// `.ssh`, `.config/gh`), or holds one (`CREDENTIALS` or `CREDENTIAL_FILES`, by `exists`).
fn names_credentials(path: &Path, exists: &dyn Fn(&Path) -> bool) -> bool {
    lies_in_credentials(path)
        || credential_names().chain(CREDENTIAL_FILES).any(|name| exists(&path.join(name)))
}

/// The credential places known by name alone: `snap` is one only in a home.
fn credential_names() -> impl Iterator<Item = &'static &'static str> {
    CREDENTIALS.iter().filter(|rel| rel.starts_with('.'))
}

/// Whether `path` is or lies in a credential place by its name, in any directory.
fn lies_in_credentials(path: &Path) -> bool {
    path.ancestors().any(|dir| credential_names().any(|rel| dir.ends_with(rel)))
}

/// The toolchain grants (`strict`: none), then the `--sandbox-read` and `--sandbox-write`
/// directories. `resolve` gives a path's canonical form if it exists: only those are granted,
/// since a rule needs a file to open.
pub fn toolchains(
    env: &Environment,
    strict: bool,
    extra_read: &[PathBuf],
    extra_write: &[PathBuf],
    resolve: &dyn Fn(&Path) -> Option<PathBuf>,
) -> Vec<Grant> {
    let home = env.home.as_deref().filter(|h| h.is_absolute() && *h != Path::new("/"));
    let real_home = home.and_then(resolve);
    let mut grants: Vec<Grant> = Vec::new();
    // Each path's place in `grants`: thousands of variables cost no quadratic time.
    let mut index: HashMap<PathBuf, usize> = HashMap::new();
    // What commands write: a grant that lies there is one a command chose (a symlink planted
    // there leads anywhere), and the place grants commands all of it anyway.
    let writable: Vec<&Path> =
        env.writable.iter().chain(extra_write).map(PathBuf::as_path).collect();
    // Every grant by its path without symlinks (the namespace mounts by it), and none that
    // gives a credential, whatever rule made it, or wherever a symlink leads.
    let mut add = |path: PathBuf, reach: Reach, why: String, checked: bool| {
        let Some(real) = resolve(&path) else { return };
        let secret = |home: Option<&Path>| {
            home.is_some_and(|h| touches_credentials(h, &path) || touches_credentials(h, &real))
        };
        // Nor one that holds the temporary directory: other servers' TMPDIRs are there.
        let holds_temp = env.temp.as_deref().is_some_and(|t| t.starts_with(&real));
        let chosen = writable.iter().any(|w| real.starts_with(w) || path.starts_with(w));
        let named = |p: &Path| names_credentials(p, &|f| resolve(f).is_some());
        let secret_name = || named(&path) || named(&real);
        if checked
            && (secret(home)
                || secret(real_home.as_deref())
                || holds_temp
                || chosen
                || secret_name())
        {
            return;
        }
        // The user's own flag names what it names, but not through a symlink a command could
        // have planted.
        let planted = real != path && writable.iter().any(|w| path.starts_with(w));
        if !checked && planted {
            return;
        }
        match index.get(&real) {
            Some(&i) if grants[i].reach >= reach => {}
            Some(&i) => grants[i] = Grant { path: real, reach, why, user: !checked },
            None => {
                index.insert(real.clone(), grants.len());
                grants.push(Grant { path: real, reach, why, user: !checked });
            }
        }
    };
    if !strict {
        let in_home = |rel: &str| home.map(|h| h.join(rel));
        let var_or_home = |name: &str, rel: &str| env.var(name).or_else(|| in_home(rel));
        for rel in CONFIG {
            if let Some(path) = in_home(rel) {
                add(path, Reach::Read, "your tool configuration".into(), true);
            }
        }
        if let Some(cargo) = var_or_home("CARGO_HOME", ".cargo") {
            let why = |part: &str| {
                format!("cargo's {part} (CARGO_HOME or ~/.cargo; not its credentials)")
            };
            add(cargo.join("bin"), Reach::Run, why("programs"), true);
            add(cargo.join("registry"), Reach::Write, why("registry cache"), true);
            add(cargo.join("git"), Reach::Write, why("git cache"), true);
            add(cargo.join("config.toml"), Reach::Read, why("configuration"), true);
        }
        if let Some(rustup) = env.var("RUSTUP_HOME") {
            add(rustup, Reach::Run, "RUSTUP_HOME".into(), true);
        }
        for (name, rel) in [("PYENV_ROOT", ".pyenv"), ("NVM_DIR", ".nvm"), ("GOPATH", "go")] {
            if let Some(path) = env.var(name) {
                add(path, Reach::Run, name.into(), true);
            } else if let Some(path) = in_home(rel) {
                add(path, Reach::Run, format!("{name} unset: ~/{rel}"), true);
            }
        }
        let gopath = var_or_home("GOPATH", "go");
        let modcache = env.var("GOMODCACHE").or_else(|| gopath.map(|p| p.join("pkg/mod")));
        if let Some(path) = modcache {
            add(
                path,
                Reach::Write,
                "Go's module cache (GOMODCACHE or GOPATH/pkg/mod)".into(),
                true,
            );
        }
        if let Some(path) = env.var("GOCACHE") {
            add(path, Reach::Write, "GOCACHE".into(), true);
        }
        for (rel, why) in HOME_RUN {
            if let Some(path) = in_home(rel) {
                add(path, Reach::Run, (*why).into(), true);
            }
        }
        for (rel, why) in HOME_WRITE {
            if let Some(path) = in_home(rel) {
                add(path, Reach::Write, (*why).into(), true);
            }
        }
        for (name, path) in named_homes(env) {
            add(path, Reach::Run, name, true);
        }
    }
    // The `PATH` directories, checked like any other: the home on `PATH` grants no credential.
    // One inside a system directory needs no rule of its own.
    for dir in &env.path {
        let system = resolve(dir).is_some_and(|real| {
            super::SYSTEM_READ.iter().any(|sys| {
                real.starts_with(sys) && resolve(Path::new(sys)).as_deref() == Some(Path::new(sys))
            })
        });
        if dir.is_absolute() && !system {
            add(dir.clone(), Reach::Run, "on PATH".into(), true);
        }
    }
    // The user's own flags are taken as given.
    for path in extra_read {
        add(path.clone(), Reach::Run, "--sandbox-read".into(), false);
    }
    for path in extra_write {
        add(path.clone(), Reach::Write, "--sandbox-write".into(), false);
    }
    grants
}

/// The `TOOLCHAIN_VARS` set, naming a directory at least two levels down (`Environment::var`),
/// not the home or a directory above it, nor a credential place.
fn named_homes(env: &Environment) -> Vec<(String, PathBuf)> {
    let home = env.home.as_deref();
    TOOLCHAIN_VARS
        .iter()
        .filter_map(|name| Some((name.to_string(), env.var(name)?)))
        .filter(|(_, path)| {
            home.is_none_or(|h| !h.starts_with(path) && !touches_credentials(h, path))
        })
        .collect()
}

/// The line a command's failure ends with when the sandbox refused it, or `None`: the tail of
/// `stderr` names an absolute path on a line that says "Permission denied", "Operation not
/// permitted", "Read-only file system" or "Invalid cross-device link", and that path lies
/// outside what commands may reach that way (`reachable(path, write)`). Only the last 4 KiB
/// are read: a tool prints the error that stopped it last. The line names the flag, never the
/// path or anything about it.
pub fn hint(stderr: &[u8], reachable: &dyn Fn(&Path, bool) -> bool) -> Option<&'static str> {
    const TAIL: usize = 4096;
    let tail = &stderr[stderr.len().saturating_sub(TAIL)..];
    let text = String::from_utf8_lossy(tail);
    let mut flag = None;
    for line in text.lines() {
        let write = if line.contains("Read-only file system")
            || line.contains("Invalid cross-device link")
        {
            true
        } else if line.contains("Permission denied") || line.contains("Operation not permitted") {
            false
        } else {
            continue;
        };
        // No flag grants a device: /dev is what it is.
        for path in absolute_paths(line).map(Path::new).filter(|p| !p.starts_with("/dev")) {
            // The last refusal in the output is the one that stopped the command. No flag is
            // offered for a credential: the user would add `~/.ssh` on the agent's word.
            if lies_in_credentials(path) && !reachable(path, write) {
                flag = Some(CREDENTIAL_HINT);
            } else if write && !reachable(path, true) {
                flag = Some(WRITE_HINT);
            } else if !write && !reachable(path, false) {
                flag = Some(READ_HINT);
            }
        }
    }
    flag
}

pub const CREDENTIAL_HINT: &str =
    "[sandbox: a credential place was refused; credentials stay out of commands' reach]";
pub const READ_HINT: &str = "[sandbox: a path outside the command's grants was refused; `--sandbox-read PATH` (or `--allow PATH`) lets commands read it]";
pub const WRITE_HINT: &str = "[sandbox: a write outside the read-write directories was refused; `--sandbox-write PATH` (or `--allow PATH:rw`) lets commands write there]";

/// The absolute paths a line names: words starting with `/`, less the quotes and punctuation
/// tools put around them.
fn absolute_paths(line: &str) -> impl Iterator<Item = &str> {
    line.split(|c: char| c.is_whitespace() || matches!(c, '\'' | '"' | '`' | '(' | ')' | ','))
        .map(|word| word.trim_end_matches([':', '.', ';']))
        .filter(|word| word.starts_with('/') && word.len() > 1)
}

#[cfg(test)]
mod tests;
