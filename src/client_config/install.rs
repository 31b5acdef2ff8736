//! `replay install` and `replay uninstall`: read the client's config file, put the entry in (or
//! take it out) with the editor of its format, then show the diff (`--dry-run`), refuse to
//! replace a different entry without `--force`, or write: a backup of the old file beside it,
//! then the new text atomically (temp file in the same directory, fsync, rename, the old
//! file's mode kept). A file that does not parse is never written.

use std::fs::{self, File, OpenOptions, Permissions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::paths::{self, Dirs};
use super::{entry, format, json, toml, yaml_block, Client, Edit, Format, Launch};

/// Which config file: `--config PATH`, a project's (`--project DIR`), or the user-wide one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Config(PathBuf),
    Project(PathBuf),
    User,
}

/// `replay install CLIENT …`, parsed.
#[derive(Debug, Clone)]
pub struct Request {
    pub client: Client,
    pub target: Target,
    pub launch: Launch,
    pub dry_run: bool,
    pub force: bool,
}

/// What to print and the exit status.
#[derive(Debug, Default)]
pub struct Outcome {
    pub stdout: String,
    pub stderr: String,
    pub status: u8,
}

fn fail(message: String) -> Outcome {
    Outcome { stderr: message, status: 1, ..Outcome::default() }
}

fn note(message: String) -> Outcome {
    Outcome { stderr: message, ..Outcome::default() }
}

/// The suffix of the copy of the file as it was before replay last wrote it.
const BACKUP_SUFFIX: &str = ".replay-backup";

pub fn install(request: &Request) -> Outcome {
    let client = request.client;
    let path = match config_path(client, &request.target) {
        Ok(path) => path,
        Err(message) => return fail(message),
    };
    let shown = path.display();
    let old = match read(&path) {
        Ok(old) => old,
        Err(message) => return fail(message),
    };
    let entry = entry(client, &request.launch);
    let text = old.as_deref().unwrap_or("");
    let edit = match format(client) {
        Format::Json(key) => json::put(text, key, &entry),
        Format::Toml => toml::put(text, &entry),
        Format::YamlBlock => Ok(block_put(old.as_deref(), yaml_block(&entry))),
    };
    let (new, replaces) = match edit {
        Err(message) => return fail(format!("replay: {shown} was left as it is: {message}")),
        Ok(Edit::Same) => {
            return note(format!(
                "replay: {shown} already holds this replay entry; nothing to change"
            ))
        }
        Ok(Edit::Write(new)) => (new, false),
        Ok(Edit::Replace(new)) => (new, true),
    };
    let diff = diff(&path, text, &new);
    if replaces && !request.force {
        return Outcome {
            stdout: diff,
            stderr: format!(
                "replay: {shown} already holds a different replay entry (the diff on stdout shows \
                 the change); run again with --force to replace it"
            ),
            status: 1,
        };
    }
    if request.dry_run {
        return Outcome {
            stdout: diff,
            stderr: format!("replay: --dry-run: {shown} was left as it is"),
            status: 0,
        };
    }
    if let Err(message) = write_with_backup(&path, old.as_deref(), Some(&new)) {
        return fail(message);
    }
    let verb = if replaces { "replaced the replay entry in" } else { "added the replay entry to" };
    note(format!("replay: {verb} {shown}{}", backup_note(&path, old.is_some())))
}

pub fn uninstall(client: Client, target: &Target, dry_run: bool) -> Outcome {
    let path = match config_path(client, target) {
        Ok(path) => path,
        Err(message) => return fail(message),
    };
    let shown = path.display();
    let old = match read(&path) {
        Ok(Some(old)) => old,
        Ok(None) => {
            return note(format!("replay: {shown} does not exist; no replay entry to remove"))
        }
        Err(message) => return fail(message),
    };
    let taken = match format(client) {
        Format::Json(key) => json::take(&old, key),
        Format::Toml => toml::take(&old),
        // The block file is replay's own: removing the entry removes the file.
        Format::YamlBlock => Ok(Some(String::new())),
    };
    let new = match taken {
        Err(message) => return fail(format!("replay: {shown} was left as it is: {message}")),
        Ok(None) => {
            return note(format!("replay: {shown} holds no replay entry; nothing to remove"))
        }
        Ok(Some(new)) => new,
    };
    if dry_run {
        let diff = diff(&path, &old, &new);
        return Outcome {
            stdout: diff,
            stderr: format!("replay: --dry-run: {shown} was left as it is"),
            status: 0,
        };
    }
    let kept = (format(client) != Format::YamlBlock).then_some(new.as_str());
    if let Err(message) = write_with_backup(&path, Some(&old), kept) {
        return fail(message);
    }
    let verb = if kept.is_some() { "removed the replay entry from" } else { "removed" };
    note(format!("replay: {verb} {shown}{}", backup_note(&path, true)))
}

/// Continue's block file: replay's whole, so its text is the entry.
pub(super) fn block_put(old: Option<&str>, new: String) -> Edit {
    match old {
        Some(old) if old == new => Edit::Same,
        Some(old) if !old.trim().is_empty() => Edit::Replace(new),
        _ => Edit::Write(new),
    }
}

/// The file the target names; a symlink is followed, so that the file it points to is edited
/// and the link stays.
fn config_path(client: Client, target: &Target) -> Result<PathBuf, String> {
    let path = match target {
        Target::Config(path) => path.clone(),
        Target::Project(dir) if !dir.is_dir() => {
            return Err(format!(
                "replay: --project {}: not a directory; give the project's directory",
                dir.display()
            ))
        }
        Target::Project(dir) => {
            let file = paths::project_file(client, dir).ok_or_else(|| {
                let name = clap::ValueEnum::to_possible_value(&client)
                    .map(|v| v.get_name().to_string())
                    .unwrap_or_default();
                format!(
                    "replay: {name} reads one user-wide config file and no project's; drop \
                     --project (or give the file with --config PATH)"
                )
            })?;
            return inside_project(dir, &file);
        }
        Target::User => paths::user_file(client, &Dirs::from_env(|n| std::env::var_os(n))?),
    };
    Ok(fs::canonicalize(&path).unwrap_or(path))
}

/// The project's file with its links resolved, refused when a link on the way leads out of the
/// canonical project directory: a cloned repository's `.cursor -> ~/.ssh` or
/// `.vscode/mcp.json -> ~/.bashrc` would otherwise steer the write to the user's other files.
fn inside_project(dir: &Path, file: &Path) -> Result<PathBuf, String> {
    let root = fs::canonicalize(dir).map_err(|e| {
        format!("replay: --project {}: {e}; give the project's directory", dir.display())
    })?;
    let resolved = resolve(file);
    if resolved.starts_with(&root) {
        return Ok(resolved);
    }
    let link = first_link(dir, file).unwrap_or_else(|| file.to_path_buf());
    Err(format!(
        "replay: --project {}: {} is a symlink that leads out of the project (to {}); nothing \
         was written; remove the link, or give the file to edit with --config PATH",
        dir.display(),
        link.display(),
        resolved.display()
    ))
}

/// `path` with every symlink resolved; the trailing parts that do not exist yet are kept as
/// they are, under their resolved parent.
fn resolve(path: &Path) -> PathBuf {
    if let Ok(real) = fs::canonicalize(path) {
        return real;
    }
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) if !parent.as_os_str().is_empty() => resolve(parent).join(name),
        _ => path.to_path_buf(),
    }
}

/// The first symlink on the way from `dir` down to `file`, to name in the refusal.
fn first_link(dir: &Path, file: &Path) -> Option<PathBuf> {
    let mut at = dir.to_path_buf();
    for part in file.strip_prefix(dir).ok()?.components() {
        at.push(part);
        if fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink()) {
            return Some(at);
        }
    }
    None
}

/// The most of a config file replay reads: client configs are kilobytes, and the text is held
/// about four times over (old, new, the diff, the backup), so 16 MiB bounds install at ~64 MiB.
const MAX_CONFIG_BYTES: u64 = 16 << 20;

/// The file's text, `None` when it does not exist. `path` is resolved already, so its last
/// component is opened with O_NOFOLLOW (a link swapped in since is refused, not followed) and
/// O_NONBLOCK (opening a FIFO does not wait for a writer); the handle's type is checked before
/// a byte is read, so a device or a FIFO is refused and never replaced by the write.
fn read(path: &Path) -> Result<Option<String>, String> {
    let shown = path.display();
    let opened =
        OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW).open(path);
    let mut file = match opened {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("replay: cannot read {shown}: {e}")),
    };
    let meta = file.metadata().map_err(|e| format!("replay: cannot read {shown}: {e}"))?;
    if let Some(kind) = not_regular(meta.file_type()) {
        return Err(refuse_kind(path, kind));
    }
    let too_big = || {
        format!(
            "replay: {shown} was left as it is: it is larger than {} MiB, more than a client's \
             config file holds; check the path, or give the config file with --config",
            MAX_CONFIG_BYTES >> 20
        )
    };
    if meta.len() > MAX_CONFIG_BYTES {
        return Err(too_big());
    }
    // One byte past the limit read at most, so a file that grew since the fstat is caught too.
    let mut bytes = Vec::new();
    (&mut file)
        .take(MAX_CONFIG_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("replay: cannot read {shown}: {e}"))?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(too_big());
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| format!("replay: {shown} was left as it is: it is not UTF-8 text"))
}

/// What a file that is not a regular file is, for the message refusing it; `None` for a
/// regular file.
fn not_regular(kind: fs::FileType) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_file() {
        None
    } else if kind.is_dir() {
        Some("a directory")
    } else if kind.is_char_device() {
        Some("a character device")
    } else if kind.is_block_device() {
        Some("a block device")
    } else if kind.is_fifo() {
        Some("a FIFO")
    } else if kind.is_socket() {
        Some("a socket")
    } else if kind.is_symlink() {
        Some("a symbolic link")
    } else {
        Some("not a regular file")
    }
}

fn refuse_kind(path: &Path, kind: &str) -> String {
    format!(
        "replay: {} was left as it is: it is {kind}; give a regular file with --config",
        path.display()
    )
}

/// A unified diff from `old` to `new`, headed by the file's path.
fn diff(path: &Path, old: &str, new: &str) -> String {
    let shown = path.display().to_string();
    similar::TextDiff::from_lines(old, new).unified_diff().header(&shown, &shown).to_string()
}

fn backup_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(BACKUP_SUFFIX);
    path.with_file_name(name)
}

fn backup_note(path: &Path, backed_up: bool) -> String {
    if !backed_up {
        return String::new();
    }
    format!(" (the old file is kept as {})", backup_path(path).display())
}

/// Keeps `old` as the backup, then writes `new` (or removes the file when `new` is `None`). The
/// backup is made first: when it fails, the file is not touched. Only a regular file is
/// replaced: renaming over a device or a FIFO would swap it for a file.
fn write_with_backup(path: &Path, old: Option<&str>, new: Option<&str>) -> Result<(), String> {
    if let Ok(meta) = fs::symlink_metadata(path) {
        if let Some(kind) = not_regular(meta.file_type()) {
            return Err(refuse_kind(path, kind));
        }
    }
    let mode = fs::metadata(path).ok().map(|m| m.permissions().mode() & 0o7777);
    if let Some(old) = old {
        let backup = backup_path(path);
        atomic_write(&backup, old.as_bytes(), mode).map_err(|e| {
            format!(
                "replay: cannot write the backup {}: {e}; {} was left as it is",
                backup.display(),
                path.display()
            )
        })?;
    }
    let result = match new {
        Some(new) => atomic_write(path, new.as_bytes(), mode),
        None => fs::remove_file(path),
    };
    result
        .map_err(|e| format!("replay: cannot write {}: {e}; it was left as it is", path.display()))
}

/// Writes `bytes` to `path` so that a reader (or a crash) sees the old file or the new, never a
/// mix: a temp file in the same directory (created 0600, so the text is never readable by more
/// than the final mode allows), fsync, the final mode (`mode`, or 0644 less the umask for a
/// new file), rename, fsync of the directory. Missing parent directories are created.
fn atomic_write(path: &Path, bytes: &[u8], mode: Option<u32>) -> io::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    fs::create_dir_all(dir)?;
    let mut name = std::ffi::OsString::from(".");
    name.push(path.file_name().unwrap_or_default());
    name.push(format!(".replay-tmp.{}", std::process::id()));
    let tmp = dir.join(name);
    let create_mode = if mode.is_some() { 0o600 } else { 0o644 };
    let mut file = OpenOptions::new().write(true).create_new(true).mode(create_mode).open(&tmp)?;
    let result = (|| {
        file.write_all(bytes)?;
        if let Some(mode) = mode {
            file.set_permissions(Permissions::from_mode(mode))?;
        }
        file.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result?;
    File::open(dir)?.sync_all()
}
