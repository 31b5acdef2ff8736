//! grep_files: an ECMAScript regex over file contents, with grep-style output.
//!
//! The walk and the search run together (`search`): each walker thread searches the files it
//! finds. Hits are kept in path order, bounded by `maxResults`, so results come out in a stable
//! order, and a cut is exactly the first N matching lines of that order. The exact engine looks
//! at the call's cancel every 1,024 matches of a file.

use std::collections::{BTreeMap, HashSet};
use std::fs::File;
use std::io::Read;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use serde::Deserialize;

use crate::error::ToolError;
use crate::fs::read::MAX_READ_BYTES;
use crate::js_regex::fast::FastRegex;
use crate::js_regex::JsRegex;
use crate::policy::confined::Kind;
use crate::policy::ResolvedPath;
use crate::progress::Tally;
use crate::reply_size::{escaped_text_len, Budget, JsonObject};
use crate::tools::find::NO_MATCHES;
use crate::tools::{resolve_dir, Ctx, Output, Structured};
use crate::walk::glob::{self, Exclude};
use crate::walk::{self, WalkOptions};

/// Files with a NUL byte in their first 4 KB are binary and skipped, as the contract says.
mod render;
mod search;

use render::*;
use search::*;

const BINARY_PROBE: usize = 4096;
/// A search thread's read buffer is dropped after a file larger than this.
const KEPT_BUFFER: usize = 1 << 20;
/// Output lines longer than this are cut: one minified file must not flood the reply.
const MAX_LINE_CHARS: usize = 1000;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GrepArgs {
    regex: String,
    directory: Option<String>,
    #[serde(default)]
    globs: Vec<String>,
    #[serde(default)]
    exclude_globs: Vec<String>,
    #[serde(default)]
    case_insensitive: bool,
    #[serde(default)]
    context_lines: usize,
    #[serde(default = "default_max_results")]
    max_results: usize,
    #[serde(default)]
    respect_gitignore: bool,
    #[serde(default)]
    output_mode: OutputMode,
}

/// What grep_files prints: matching lines (the contract's format), only the files, or a
/// count per file (go-code's Grep modes).
#[derive(Deserialize, Default, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum OutputMode {
    #[default]
    Content,
    FilesWithMatches,
    Count,
}

impl OutputMode {
    /// As `outputMode` spells it.
    fn name(self) -> &'static str {
        match self {
            OutputMode::Content => "content",
            OutputMode::FilesWithMatches => "files_with_matches",
            OutputMode::Count => "count",
        }
    }
}

fn default_max_results() -> usize {
    500
}

/// Where to look: a walk root and the globs (relative to it) that select files; no globs
/// selects every file.
struct SearchRoot {
    root: ResolvedPath,
    globs: Vec<String>,
}

pub fn grep_files(ctx: &Ctx, args: GrepArgs) -> Result<Output, ToolError> {
    if args.directory.is_none() && args.globs.is_empty() {
        return Err(ToolError::invalid_params(
            "directory",
            "or `globs` is required: set directory to the folder to search",
        ));
    }
    let exact = JsRegex::new(&args.regex, args.case_insensitive)
        .map_err(|e| ToolError::InvalidRegex { pattern: e.pattern, detail: e.detail })?;
    let fast = FastRegex::new(&args.regex, args.case_insensitive);
    let regex = Matchers { exact, fast, gave_up: AtomicUsize::new(0), cancel: ctx.cancel };
    let options = WalkOptions {
        respect_gitignore: args.respect_gitignore,
        exclude: Exclude::new(&args.exclude_globs)?,
        cancel: Some(ctx.cancel),
        ..WalkOptions::default()
    };
    let (scopes, skipped) = scopes(ctx, &args)?;
    let mode = args.output_mode;
    let tally = Tally::new(ctx.progress, |n| format!("searched {n} files"));
    let limits = Limits { cap: args.max_results, context: args.context_lines, mode };
    let mut found = search(&regex, &scopes, &options, &tally, &limits)?;
    if ctx.cancel.is_cancelled() {
        return Err(ToolError::Cancelled);
    }
    fit_to_budget(&mut found, mode, ctx.settings.budget());
    let with_context = args.context_lines > 0;
    let mut text = match mode {
        OutputMode::Content => render(&found, args.max_results, with_context, skipped),
        _ => render_per_file(&found, mode, args.max_results, skipped),
    };
    if !found.candidates && !args.globs.is_empty() && text.starts_with(NO_MATCHES) {
        text.replace_range(..NO_MATCHES.len(), NO_FILES);
    }
    if let Some(note) = found.too_long.note() {
        text.push('\n');
        text.push_str(&note);
    }
    let gave_up = regex.gave_up.load(Ordering::Relaxed);
    if gave_up > 0 {
        text.push_str(&format!(
            "\n[{gave_up} file(s) searched only partly: the regex needed too much backtracking there; simplify it (avoid nested quantifiers such as `(a+)+`)]"
        ));
    }
    let mut data = JsonObject::default();
    // replay v2.2's shape; `mode` (for the per-file modes) and `partlySearched` are said only
    // when they are not its defaults, content mode and 0.
    match mode {
        OutputMode::Content => content_data(&mut data, &found),
        _ => {
            per_file_data(&mut data, &found, mode);
            data.field("mode").string(mode.name());
        }
    }
    data.field("truncated").raw(if found.truncated { "true" } else { "false" });
    data.field("skipped").raw(&skipped.to_string());
    if gave_up > 0 {
        data.field("partlySearched").raw(&gave_up.to_string());
    }
    Ok(Output { structured: Some(Structured::Json(data.finish())), ..Output::text(text) })
}

/// Splits the request into walk scopes. Relative globs hang off `directory`, or off the
/// project directory when there is none; absolute globs stand alone. An absolute glob whose
/// base is outside the allowed set is skipped and counted, not fatal.
fn scopes(ctx: &Ctx, args: &GrepArgs) -> Result<(Vec<SearchRoot>, usize), ToolError> {
    let mut scopes: Vec<SearchRoot> = Vec::new();
    let mut skipped = 0;
    let relative: Vec<String> = args
        .globs
        .iter()
        .filter(|g| !g.starts_with('/'))
        .map(|g| g.trim_start_matches("./").to_string())
        .collect();
    match &args.directory {
        Some(dir) => {
            let dir = resolve_dir(ctx, dir, "search")?;
            // With only absolute globs, `directory` adds nothing of its own.
            if args.globs.is_empty() || !relative.is_empty() {
                scopes.push(SearchRoot { root: dir, globs: relative });
            }
        }
        None if !relative.is_empty() => {
            let dir = resolve_dir(ctx, ".", "search")?;
            scopes.push(SearchRoot { root: dir, globs: relative });
        }
        None => {}
    }
    for glob in args.globs.iter().filter(|g| g.starts_with('/')) {
        let (base, rest) = glob::split_glob(glob);
        match resolve_dir(ctx, &base.to_string_lossy(), "search") {
            Ok(dir) => scopes.push(SearchRoot { root: dir, globs: vec![rest] }),
            Err(ToolError::NotAllowed(_) | ToolError::InvalidPath(_)) => skipped += 1,
            Err(ToolError::NotFound { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok((scopes, skipped))
}

/// One file's matching lines, with their context, and how many matching lines it holds.
struct FileHits {
    /// The file as the output shows it.
    path: String,
    /// Matching and context lines in file order, none twice (content mode only).
    lines: Vec<HitLine>,
    /// The texts of `lines`, one after another: one buffer per file, not one per line.
    text: String,
    n: usize,
    context: usize,
}

impl FileHits {
    fn text_of(&self, line: &HitLine) -> &str {
        &self.text[line.start..line.end]
    }
}

/// A line of content-mode output: `path:N:text` when it matches, `path-N-text` around a match.
struct HitLine {
    /// 1-based.
    number: usize,
    matched: bool,
    /// Where the line's text is in `FileHits::text`: as shown, without its line terminator and
    /// cut after `MAX_LINE_CHARS` with a note.
    start: usize,
    end: usize,
}

/// What bounds a search and shapes its hits.
struct Limits {
    /// `maxResults`: matching lines in content mode, files otherwise.
    cap: usize,
    /// `contextLines`.
    context: usize,
    mode: OutputMode,
}

struct Findings {
    /// Per file, in path order, only files with hits.
    files: Vec<FileHits>,
    truncated: bool,
    /// Cut to fit the reply's bound (`fit_to_budget`), not by `maxResults`: the bound's name.
    over_budget: Option<String>,
    /// What the walks left out.
    too_long: walk::Summary,
    /// Some file was a candidate: of the globs' files, when there are globs.
    candidates: bool,
}

/// Keeps the first hits that fit the reply's bound, counted as they will be written: each
/// line (or file) is in the reply twice, in the text and in the structured content. A bound in
/// tokens counts the text only, which is what a host shows the model; the structured content is
/// the same cut. What is cut is cut as `maxResults` cuts: whole matching lines, in path order,
/// with their context before.
fn fit_to_budget(found: &mut Findings, mode: OutputMode, mut budget: Budget) {
    let copies = if budget.tokens().is_some() { 1 } else { 2 };
    for i in 0..found.files.len() {
        let file = &found.files[i];
        let path = escaped_text_len(file.path.as_bytes());
        let fits = match mode {
            OutputMode::Content => file.lines.iter().position(|line| {
                !budget.take(copies * (path + escaped_text_len(file.text_of(line).as_bytes()) + 48))
            }),
            _ => (!budget.take(copies * (path + 32))).then_some(0),
        };
        let Some(fit) = fits else { continue };
        let keep = file.lines[..fit].iter().filter(|line| line.matched).count();
        found.files.truncate(i + 1);
        if let Some(last) = found.files.pop() {
            if keep > 0 && mode == OutputMode::Content {
                found.files.push(cut(last, keep));
            }
        }
        found.truncated = true;
        found.over_budget = Some(budget.name());
        return;
    }
}

/// Said instead of `NO_MATCHES` when the globs match no file at all (replay v2.2's words).
const NO_FILES: &str =
    "(no files to search: no file matches the globs; check them, or leave them out to search \
     every file)";

/// The exact engine, and its fast twin where the pattern has one.
struct Matchers<'c> {
    exact: JsRegex,
    fast: Option<FastRegex>,
    /// Files the exact engine gave up on (backtracking limit): searched only partly.
    gave_up: AtomicUsize,
    /// The exact engine's search of a file (up to 16 MiB, each match up to its backtracking
    /// limit) stops when the call is cancelled.
    cancel: &'c crate::progress::Cancel,
}
