//! edit_file and edit_files: apply a sequence of edits in memory, then write once, atomically,
//! only if every edit succeeded; or, with dryRun, show the unified diff and write nothing.
//!
//! A cancelled call stops its edits at the next regex match (or within a few thousand steps of
//! any other search), and its diff within `DIFF_DEADLINE` (500 ms). Diffs share the reply's bound
//! (`reply_size`): what does not fit is left out, with a note.

pub mod matching;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::encoding::{self, Decoded};
use crate::error::{shortened, ToolError};
use crate::fs::atomic::atomic_write;
use crate::fs::digest;
use crate::fs::read::read_capped;
use crate::policy::ResolvedPath;
use crate::reply_size::{escaped_text_len, Budget};
use crate::tools::{Content, Ctx, Output};
use crate::walk;

use self::matching::{apply_edits_until, Edit, EditError, MAX_EDITED_BYTES};

/// How long the diff of one file may search for the shortest edit script (Myers' algorithm,
/// whose time grows with the file's length times the number of changed lines: 100,000 changed
/// lines took 51 s). Past it, the rest of the file is diffed coarsely (removed, then added as a
/// block), which is still a correct diff. Typical dry runs (a few hunks in a big file) take
/// milliseconds.
const DIFF_DEADLINE: Duration = Duration::from_millis(500);

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EditArgs {
    old_text: String,
    #[serde(default)]
    new_text: String,
    #[serde(default = "one")]
    limit: usize,
    #[serde(default)]
    is_regex: bool,
    #[serde(default)]
    case_insensitive: bool,
}

fn one() -> usize {
    1
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EditFileArgs {
    path: String,
    edits: Vec<EditArgs>,
    #[serde(default)]
    dry_run: bool,
    expected_sha256: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EditFilesArgs {
    paths: Vec<String>,
    edits: Vec<EditArgs>,
    #[serde(default)]
    dry_run: bool,
}

pub fn edit_file(ctx: &Ctx, args: EditFileArgs) -> Result<Output, ToolError> {
    let edits = to_edits(args.edits);
    let resolved = resolve(ctx, &args.path, args.dry_run)?;
    let mut budget = ctx.settings.budget();
    let ends = TurnEnds::WithThisFile;
    let expected = args.expected_sha256.as_deref();
    Ok(Output::text(edit_one(ctx, &resolved, &edits, args.dry_run, &mut budget, ends, expected)?))
}

/// Every path and glob is resolved before any file is touched: a glob that matches nothing
/// (-32002) or any path outside the allowed set (-32001) fails the whole call. After that,
/// each file succeeds or fails on its own, reported inline. A cancelled call stops before its
/// next file: the files already written stay written.
pub fn edit_files(ctx: &Ctx, args: EditFilesArgs) -> Result<Output, ToolError> {
    let edits = to_edits(args.edits);
    let mut files: Vec<ResolvedPath> = Vec::new();
    let mut too_long = walk::Summary::default();
    for entry in &args.paths {
        if ctx.cancel.is_cancelled() {
            break;
        }
        if walk::glob::is_glob(entry) {
            let (matched, summary) = expand_glob(ctx, entry, args.dry_run)?;
            files.extend(matched);
            too_long.add(summary);
        } else {
            files.push(resolve(ctx, entry, args.dry_run)?);
        }
    }
    let long_paths = too_long.note();
    if ctx.cancel.is_cancelled() {
        return Err(ToolError::Cancelled);
    }
    let mut seen = std::collections::HashSet::new();
    files.retain(|f| seen.insert(f.real.clone()));
    let total = files.len() as u64;
    let mut content = Vec::with_capacity(files.len());
    let mut budget = ctx.settings.budget();
    for (done, file) in (1..).zip(&files) {
        if ctx.cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        let ends = TurnEnds::WithTheCall;
        content.push(match edit_one(ctx, file, &edits, args.dry_run, &mut budget, ends, None) {
            Ok(text) => Content::Text(text),
            Err(ToolError::Cancelled) => return Err(ToolError::Cancelled),
            Err(e) => Content::Text(e.as_line(&file.shown)),
        });
        ctx.progress.report(done, Some(total), || format!("processed {done} of {total} files"));
    }
    if let Some(note) = long_paths {
        content.push(Content::Text(note));
    }
    Ok(Output { content, is_error: false, structured: None })
}

/// A dry run only reads, so read access suffices for it.
fn resolve(ctx: &Ctx, path: &str, dry_run: bool) -> Result<ResolvedPath, ToolError> {
    let resolved =
        if dry_run { ctx.policy.resolve_read(path) } else { ctx.policy.resolve_write(path) };
    Ok(resolved?)
}

/// The files a glob matches, sorted, and what the walk left out. Relative globs are anchored to
/// the project directory. Each match passes the policy on its own, so a symlink that leads out
/// is refused, and so is one that leads out of the glob's directory (-32602).
fn expand_glob(
    ctx: &Ctx,
    pattern: &str,
    dry_run: bool,
) -> Result<(Vec<ResolvedPath>, walk::Summary), ToolError> {
    let (base, rest) = walk::glob::split_glob(pattern);
    let base_str =
        if base.as_os_str().is_empty() { ".".to_string() } else { base.display().to_string() };
    let base = ctx.policy.resolve_read(&base_str)?;
    // The walk lists `base.real`, and each match is resolved from there. It is shown under
    // the client's spelling of the base when that names the same directory (a symlinked
    // base), else as resolved: `shown` is lexically normalized, and a `..` after a symlink
    // (`s/../dir`) names another directory lexically than physically. (Joined to the
    // spelling, such a glob edited a file it never matched.)
    let spelled = ctx
        .policy
        .resolve_read(&base.shown.to_string_lossy())
        .is_ok_and(|spelled| spelled.real == base.real);
    let set = walk::glob::glob_set("paths", &[rest])?;
    let options = walk::WalkOptions { cancel: Some(ctx.cancel), ..walk::WalkOptions::default() };
    let (entries, summary) =
        walk::entries(&base, &options).map_err(|e| ToolError::io("search", &base.shown, e))?;
    let matches: Vec<PathBuf> = entries
        .into_iter()
        .filter(|entry| {
            entry.kind != crate::policy::confined::Kind::Dir && set.is_match(entry.rel())
        })
        .map(walk::Entry::into_rel)
        .collect();
    if matches.is_empty() {
        return Err(ToolError::NoGlobMatch { pattern: pattern.to_string() });
    }
    let files = matches
        .into_iter()
        .map(|rel| {
            // A path reaches the policy as text: a name that is not UTF-8, shown lossily,
            // would name another file (`\xff.txt` shown as `\u{fffd}.txt`), or none.
            let Some(real) = base.real.join(&rel).to_str().map(str::to_owned) else {
                let detail = format!(
                    "{pattern:?} matches {}, a name that is not UTF-8, which no path can give; \
                     rename it or narrow the glob",
                    rel.display()
                );
                return Err(ToolError::invalid_params("paths", detail));
            };
            let mut file = resolve(ctx, &real, dry_run)?;
            if spelled {
                file.shown = base.shown.join(&rel);
            }
            // The call's write turn is keyed by the glob's directory (`write_order::keys`): a
            // match that a symlink leads out of it would be edited outside its turn, beside a
            // write of that file, and could undo a write that had answered.
            if !file.real.starts_with(&base.real) {
                let detail = format!(
                    "{pattern:?} matches {}, a symlink that leads outside {}; edit that file \
                     by its own path",
                    rel.display(),
                    base.shown.display()
                );
                return Err(ToolError::invalid_params("paths", detail));
            }
            Ok(file)
        })
        .collect::<Result<_, ToolError>>()?;
    Ok((files, summary))
}

fn to_edits(args: Vec<EditArgs>) -> Vec<Edit> {
    args.into_iter()
        .map(|a| Edit {
            old_text: a.old_text,
            new_text: a.new_text,
            limit: a.limit,
            is_regex: a.is_regex,
            case_insensitive: a.case_insensitive,
        })
        .collect()
}

/// When the call's write turn ends (`write_order::WriteTurn`).
#[derive(Clone, Copy)]
enum TurnEnds {
    /// Once the edited file is in place: edit_file.
    WithThisFile,
    /// With the call, whose turn covers every file: edit_files.
    WithTheCall,
}

/// Edits one file; returns the reply text. A dry run's diff takes from `budget`. With
/// `expected` (edit_file's `expectedSha256`), the text read must have that sha256.
fn edit_one(
    ctx: &Ctx,
    file: &ResolvedPath,
    edits: &[Edit],
    dry_run: bool,
    budget: &mut Budget,
    ends: TurnEnds,
    expected: Option<&str>,
) -> Result<String, ToolError> {
    let shown = &file.shown;
    let (decoded, raw) = match read_text(file) {
        Ok(read) => read,
        Err(ToolError::NotFound { .. }) if dry_run => return Ok(intended_edits(shown, edits)),
        Err(e) => return Err(e),
    };
    let original = decoded.text.as_str();
    if let Some(expected) = expected {
        // The hash is of the file's bytes, whatever its encoding.
        let bytes = raw.as_deref().unwrap_or(original.as_bytes());
        digest::check(shown, expected, Some(digest::sha256_hex(bytes)))?;
    }
    let stop = || ctx.cancel.is_cancelled();
    // The edits see a BOM as the engine expects it (`matching`'s file-format handling: one
    // copied into oldText still matches), and the encoder writes it back.
    let edited = if decoded.bom {
        let with_bom = format!("\u{feff}{original}");
        let edited = apply_edits_until(&with_bom, edits, MAX_EDITED_BYTES, &stop);
        let edited = edited.map_err(ToolError::from)?;
        edited.strip_prefix('\u{feff}').map(str::to_owned).unwrap_or(edited)
    } else {
        apply_edits_until(original, edits, MAX_EDITED_BYTES, &stop).map_err(ToolError::from)?
    };
    if dry_run {
        return unified_diff(shown, original, &edited, &stop, budget);
    }
    if edited != original {
        // Encoded before the slot is taken: text the encoding cannot hold writes nothing.
        let bytes = match raw {
            None => edited.into_bytes(),
            Some(raw) => encoding::encode_edit(&decoded, &raw, &edited).map_err(|what| {
                ToolError::Unrepresentable { op: "edit", path: shown.clone(), what }
            })?,
        };
        let slot = file.slot().map_err(|e| ToolError::io("write", shown, e))?;
        let turn = ctx.write_turn;
        let written = match ends {
            TurnEnds::WithThisFile => {
                atomic_write(&slot, &bytes, |rename| turn.rename_last(rename))
            }
            TurnEnds::WithTheCall => {
                atomic_write(&slot, &bytes, |rename| turn.rename_one_of_many(rename))
            }
        };
        written.map_err(|e| ToolError::io("write", shown, e))?;
    }
    Ok(format!("Successfully edited {}", shown.display()))
}

/// The file as text, and its bytes unless it is plain UTF-8, whose text is its bytes (not
/// copied; a NUL byte in it is edited as before): the edit is encoded back like them
/// (`encoding::encode_edit`).
fn read_text(file: &ResolvedPath) -> Result<(Decoded, Option<Vec<u8>>), ToolError> {
    let shown = &file.shown;
    let mut bytes = read_capped(file)?;
    if !bytes.starts_with(b"\xEF\xBB\xBF") {
        match String::from_utf8(bytes) {
            Ok(text) => return Ok((encoding::plain_utf8(text), None)),
            Err(e) => bytes = e.into_bytes(),
        }
    }
    let decoded =
        encoding::decode(&bytes).ok_or(ToolError::Binary { path: shown.to_path_buf() })?;
    Ok((decoded, Some(bytes)))
}

/// The `--- path` / `+++ path` / `@@ … @@` diff, or `(no changes)`, within `budget`: the lines
/// that do not fit are left out, and a note says so. Written line by line, as similar's
/// `UnifiedDiff` writes it, asking `stop` every thousand lines.
pub(crate) fn unified_diff(
    shown: &Path,
    original: &str,
    edited: &str,
    stop: &dyn Fn() -> bool,
    budget: &mut Budget,
) -> Result<String, ToolError> {
    if original == edited {
        return Ok("(no changes)".to_string());
    }
    let path = shown.display().to_string();
    let mut out = format!("--- {path}\n+++ {path}\n");
    if !budget.take(escaped_text_len(out.as_bytes())) {
        return Ok(format!(
            "{path}: [diff not shown: the reply reached its {} bound; dry-run this file \
             alone]",
            budget.name()
        ));
    }
    let diff = similar::TextDiff::configure()
        .algorithm(similar::Algorithm::Myers)
        .timeout(DIFF_DEADLINE)
        .diff_lines(original, edited);
    if stop() {
        return Err(ToolError::Cancelled);
    }
    let mut unified = diff.unified_diff();
    unified.context_radius(3);
    let newline_terminated = diff.newline_terminated();
    let hunks: Vec<_> = unified.iter_hunks().collect();
    let mut line = String::new();
    for (shown_hunks, hunk) in hunks.iter().enumerate() {
        for (idx, change) in hunk.iter_changes().enumerate() {
            if idx % 1024 == 0 && stop() {
                return Err(ToolError::Cancelled);
            }
            line.clear();
            if idx == 0 {
                line.push_str(&format!("{}\n", hunk.header()));
            }
            line.push_str(&change.tag().to_string());
            line.push_str(change.value());
            if !newline_terminated {
                line.push('\n');
            }
            if newline_terminated && change.missing_newline() {
                line.push_str("\n\\ No newline at end of file\n");
            }
            if !budget.take(escaped_text_len(line.as_bytes())) {
                out.push_str(&format!(
                    "[diff cut at the reply's {} bound: {shown_hunks} of {} hunks shown \
                     whole; dry-run fewer edits, or fewer files, at a time]",
                    budget.name(),
                    hunks.len()
                ));
                *budget = budget.spent();
                return Ok(out);
            }
            out.push_str(&line);
        }
    }
    Ok(out)
}

/// What a dry run shows for a file that does not exist yet: the edits it would apply.
fn intended_edits(shown: &Path, edits: &[Edit]) -> String {
    let mut text = format!("{} does not exist; the edits that would be applied:", shown.display());
    for (idx, edit) in edits.iter().enumerate() {
        let mode = match (edit.is_regex, edit.case_insensitive) {
            (true, true) => "regex, case-insensitive",
            (true, false) => "regex",
            (false, true) => "literal, case-insensitive",
            (false, false) => "literal",
        };
        let limit = if edit.limit == 0 { "all".to_string() } else { edit.limit.to_string() };
        text.push_str(&format!(
            "\nedit #{}: replace {:?} with {:?} ({mode}, limit {limit})",
            idx + 1,
            shortened(&edit.old_text),
            shortened(&edit.new_text)
        ));
    }
    text
}

impl From<EditError> for ToolError {
    fn from(e: EditError) -> ToolError {
        match e {
            EditError::Stopped => ToolError::Cancelled,
            e => ToolError::EditNotApplied { detail: e.to_string() },
        }
    }
}
