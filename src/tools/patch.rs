//! apply_patch: a Codex patch envelope applied to several files, all or none, through a crash.
//!
//! The pure cores: the envelope parsed into file operations (`parse`), and an update's hunks
//! matched and applied to a file's text (`apply`). The tool resolves every path through the
//! policy (adds, moves and deletes outside or under `:ro` refused) and computes every file's
//! new text before anything changes; then `fs::journal` commits them through their slots.

pub mod apply;
pub mod parse;

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use crate::encoding::{self, Decoded};
use crate::error::ToolError;
use crate::fs::digest;
use crate::fs::journal::{self, Change};
use crate::fs::read::read_capped;
use crate::policy::{Policy, ResolvedPath};
use crate::tools::{edit, Ctx, Output};

use self::parse::FileOp;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApplyPatchArgs {
    patch: String,
    working_directory: Option<String>,
    #[serde(default)]
    dry_run: bool,
    /// `sha256sum` lines, `HASH  PATH`: the content each file must have.
    #[serde(default)]
    expected_sha256: Vec<String>,
}

/// One file of the patch, resolved and computed, nothing changed yet.
struct Planned {
    /// The reply's line: `A path`, `M path`, `D path` or `R old -> new`.
    line: String,
    /// The text before (`None`: an added file) and after (`None`: a deleted file), for the
    /// dry run's diff.
    old: Option<String>,
    new: Option<String>,
    /// The file's bytes before, for `expectedSha256`, and the new text's bytes in the file's
    /// own encoding, BOM and line endings (`encoding::encode_edit`), made before anything
    /// changes so that text the encoding cannot hold changes nothing.
    old_bytes: Option<Vec<u8>>,
    new_bytes: Option<Vec<u8>>,
    /// Where the file is, and where its new text goes (a move's destination, or itself).
    from: ResolvedPath,
    to: Option<ResolvedPath>,
}

pub fn apply_patch(ctx: &Ctx, args: ApplyPatchArgs) -> Result<Output, ToolError> {
    let patch =
        parse::parse(&args.patch).map_err(|e| ToolError::invalid_params("patch", e.to_string()))?;
    let base = working_directory(ctx, args.working_directory.as_deref());
    let mut expected = expected_hashes(ctx, &base, &args.expected_sha256)?;
    let mut planned = Vec::with_capacity(patch.files.len());
    let mut targets = HashSet::new();
    for op in &patch.files {
        if ctx.cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        let file = plan(ctx, &base, op, args.dry_run)?;
        if let Some(hash) = expected.remove(&file.from.real) {
            let actual = file.old_bytes.as_deref().map(digest::sha256_hex);
            digest::check(&file.from.shown, &hash, actual)?;
        }
        for target in [Some(&file.from), file.to.as_ref()].into_iter().flatten() {
            if !targets.insert(target.real.clone()) {
                let detail = format!(
                    "line {}: {} is named twice in the patch: give each file one header",
                    header_line(op),
                    target.shown.display()
                );
                return Err(ToolError::invalid_params("patch", detail));
            }
        }
        planned.push(file);
    }
    if let Some(path) = expected.into_keys().next() {
        let detail = format!(
            "names {}, which the patch does not change: give hashes of the files it updates or \
             deletes",
            path.display()
        );
        return Err(ToolError::invalid_params("expectedSha256", detail));
    }
    if args.dry_run {
        return dry_run(ctx, &planned);
    }
    commit(ctx, &planned)?;
    let lines: Vec<&str> = planned.iter().map(|file| file.line.as_str()).collect();
    Ok(Output::text(lines.join("\n")))
}

/// The paths a patch in `args` may change, found without parsing it: its write turn's targets
/// (`write_order::Target::Found`). `None` when the arguments do not say.
pub fn targets(policy: &Policy, args: &Value) -> Option<Vec<String>> {
    let base = match args.get("workingDirectory") {
        Some(dir) => PathBuf::from(dir.as_str()?),
        None => policy.working_root()?.to_path_buf(),
    };
    let patch = args.get("patch")?.as_str()?;
    Some(parse::header_paths(patch).into_iter().map(|path| joined(&base, path)).collect())
}

/// `expectedSha256`'s `HASH  PATH` lines (as `sha256sum` prints them), by the path each
/// resolves to.
fn expected_hashes(
    ctx: &Ctx,
    base: &Path,
    lines: &[String],
) -> Result<HashMap<PathBuf, String>, ToolError> {
    let mut hashes = HashMap::with_capacity(lines.len());
    for line in lines {
        let parsed = line.trim().split_once(char::is_whitespace).and_then(|(hash, path)| {
            // `sha256sum -b` marks a path with `*`.
            let path = path.trim_start().trim_start_matches('*');
            let hex = hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit());
            (hex && !path.is_empty()).then_some((hash, path))
        });
        let Some((hash, path)) = parsed else {
            let detail =
                format!("has {line:?}: expected '<64 hex digits>  <path>', as sha256sum prints");
            return Err(ToolError::invalid_params("expectedSha256", detail));
        };
        let resolved = ctx.policy.resolve_read(&joined(base, path))?;
        hashes.insert(resolved.real, hash.to_string());
    }
    Ok(hashes)
}

/// Relative paths in the patch are relative to `workingDirectory`, by default the first
/// read-write root (else the first root), as for execute_command.
pub fn working_directory(ctx: &Ctx, raw: Option<&str>) -> PathBuf {
    match raw {
        Some(raw) => PathBuf::from(raw),
        None => ctx.policy.working_root().map_or_else(|| PathBuf::from("/"), Path::to_path_buf),
    }
}

/// A patch path as the policy is to see it: joined to the working directory unless absolute
/// (or `~`).
pub fn joined(base: &Path, path: &str) -> String {
    if path.starts_with('/') || path.starts_with('~') {
        return path.to_string();
    }
    base.join(path).to_string_lossy().into_owned()
}

fn header_line(op: &FileOp) -> usize {
    match op {
        FileOp::Add { line, .. } | FileOp::Delete { line, .. } | FileOp::Update { line, .. } => {
            *line
        }
    }
}

/// Resolves one file operation's paths and computes its new text; changes nothing. A dry run
/// needs read access only.
fn plan(ctx: &Ctx, base: &Path, op: &FileOp, dry_run: bool) -> Result<Planned, ToolError> {
    let write = |raw: &str| -> Result<ResolvedPath, ToolError> {
        let raw = joined(base, raw);
        Ok(if dry_run { ctx.policy.resolve_read(&raw)? } else { ctx.policy.resolve_write(&raw)? })
    };
    let line = header_line(op);
    let refuse =
        |detail: String| ToolError::invalid_params("patch", format!("line {line}: {detail}"));
    match op {
        FileOp::Add { path, contents, .. } => {
            let to = write(path)?;
            if exists(&to)? {
                return Err(refuse(format!(
                    "'*** Add File: {path}' names a file that exists: use '*** Update File: \
                     {path}', or delete it first"
                )));
            }
            Ok(Planned {
                line: format!("A {}", to.shown.display()),
                old: None,
                new: Some(contents.clone()),
                old_bytes: None,
                new_bytes: Some(contents.clone().into_bytes()),
                from: to,
                to: None,
            })
        }
        FileOp::Delete { path, .. } => {
            let raw = joined(base, path);
            let from = if dry_run {
                ctx.policy.resolve_read(&raw)?
            } else {
                ctx.policy.resolve_remove(&raw)?
            };
            let (old, old_bytes) = read_existing(&from, path, "Delete", line)?;
            Ok(Planned {
                line: format!("D {}", from.shown.display()),
                old: Some(old.text),
                new: None,
                old_bytes: Some(old_bytes),
                new_bytes: None,
                from,
                to: None,
            })
        }
        FileOp::Update { path, move_to, hunks, .. } => {
            let from = match move_to {
                Some(_) if !dry_run => ctx.policy.resolve_remove(&joined(base, path))?,
                _ => write(path)?,
            };
            let (decoded, old_bytes) = read_existing(&from, path, "Update", line)?;
            let new = apply::apply_hunks(&decoded.text, hunks).map_err(|e| {
                let hunk = &hunks[e.hunk - 1];
                ToolError::EditNotApplied {
                    detail: format!(
                        "{} (patch line {}): {e}; nothing was changed",
                        from.shown.display(),
                        hunk.line
                    ),
                }
            })?;
            let new_bytes = encoding::encode_edit(&decoded, &old_bytes, &new).map_err(|what| {
                ToolError::Unrepresentable { op: "patch", path: from.shown.clone(), what }
            })?;
            let (old, old_bytes, new_bytes) = (decoded.text, Some(old_bytes), Some(new_bytes));
            let Some(dest) = move_to else {
                return Ok(Planned {
                    line: format!("M {}", from.shown.display()),
                    old: Some(old),
                    new: Some(new),
                    old_bytes,
                    new_bytes,
                    from,
                    to: None,
                });
            };
            let to = write(dest)?;
            if to.real == from.real {
                return Ok(Planned {
                    line: format!("M {}", from.shown.display()),
                    old: Some(old),
                    new: Some(new),
                    old_bytes,
                    new_bytes,
                    from,
                    to: None,
                });
            }
            if exists(&to)? {
                return Err(refuse(format!(
                    "'*** Move to: {dest}' names a file that exists: move to a new path, or \
                     delete it first"
                )));
            }
            Ok(Planned {
                line: format!("R {} -> {}", from.shown.display(), to.shown.display()),
                old: Some(old),
                new: Some(new),
                old_bytes,
                new_bytes,
                from,
                to: Some(to),
            })
        }
    }
}

fn exists(resolved: &ResolvedPath) -> Result<bool, ToolError> {
    match resolved.metadata() {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(ToolError::io("stat", &resolved.shown, e)),
    }
}

/// The text of a file an Update or a Delete names, in whatever encoding it has, and its bytes;
/// a missing one is the patch's error.
fn read_existing(
    from: &ResolvedPath,
    path: &str,
    header: &str,
    line: usize,
) -> Result<(Decoded, Vec<u8>), ToolError> {
    let bytes = match read_capped(from) {
        Ok(bytes) => bytes,
        Err(ToolError::NotFound { .. }) => {
            let hint = if header == "Update" { ": use '*** Add File:' for a new file" } else { "" };
            let detail = format!("line {line}: '*** {header} File: {path}' names no file{hint}");
            return Err(ToolError::invalid_params("patch", detail));
        }
        Err(e) => return Err(e),
    };
    let decoded = encoding::decode(&bytes).ok_or(ToolError::Binary { path: from.shown.clone() })?;
    Ok((decoded, bytes))
}

/// The unified diff of every file, within the reply's bound.
fn dry_run(ctx: &Ctx, planned: &[Planned]) -> Result<Output, ToolError> {
    let stop = || ctx.cancel.is_cancelled();
    let mut budget = ctx.settings.budget();
    let mut out = String::new();
    for file in planned {
        let shown = file.to.as_ref().unwrap_or(&file.from).shown.as_path();
        let old = file.old.as_deref().unwrap_or("");
        let new = file.new.as_deref().unwrap_or("");
        let _ = writeln!(out, "{}", file.line);
        let diff = edit::unified_diff(shown, old, new, &stop, &mut budget)?;
        out.push_str(&diff);
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    Ok(Output::text(out.trim_end().to_string()))
}

/// The changes, in the patch's order, committed through the journal in the call's write turn.
fn commit(ctx: &Ctx, planned: &[Planned]) -> Result<(), ToolError> {
    let Some(state) = ctx.settings.state.as_deref() else {
        return Err(ToolError::Io {
            op: "open the journal for",
            path: PathBuf::from("apply_patch"),
            source: std::io::Error::other(
                "the server has no state directory: set XDG_STATE_HOME or HOME to a writable \
                 directory and restart it",
            ),
        });
    };
    let mut changes = Vec::with_capacity(planned.len() + 1);
    for file in planned {
        match (&file.to, &file.new) {
            (Some(to), Some(_)) => {
                let mode = file.from.metadata().ok().map(|stat| stat.mode);
                let slot =
                    to.slot_making_parents().map_err(|e| ToolError::io("write", &to.shown, e))?;
                changes.push(Change {
                    path: to.real.clone(),
                    slot,
                    content: file.new_bytes.clone(),
                    new_mode: mode,
                });
                let slot =
                    file.from.slot().map_err(|e| ToolError::io("write", &file.from.shown, e))?;
                changes.push(Change {
                    path: file.from.real.clone(),
                    slot,
                    content: None,
                    new_mode: None,
                });
            }
            (_, Some(_)) => {
                let slot = file
                    .from
                    .slot_making_parents()
                    .map_err(|e| ToolError::io("write", &file.from.shown, e))?;
                let content = file.new_bytes.clone();
                changes.push(Change {
                    path: file.from.real.clone(),
                    slot,
                    content,
                    new_mode: None,
                });
            }
            (_, None) => {
                let slot =
                    file.from.slot().map_err(|e| ToolError::io("write", &file.from.shown, e))?;
                changes.push(Change {
                    path: file.from.real.clone(),
                    slot,
                    content: None,
                    new_mode: None,
                });
            }
        }
    }
    let committed = ctx.write_turn.keep_while(|| journal::commit(state, &changes));
    committed.ok_or(ToolError::Cancelled)?.map_err(|e| {
        let first = &planned[0].from.shown;
        ToolError::io("apply the patch to", first, e)
    })
}
