//! grep_files: an ECMAScript regex over file contents, with grep-style output.
//!
//! The walk and the search run together (`search`): each walker thread searches the files it
//! finds. Hits are kept in path order, bounded by `maxResults`, so results come out in a stable
//! order, and a cut is exactly the first N matching lines of that order.

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
use crate::reply_size::{escaped_text_len, push_json_string, Budget, REPLY_NAME};
use crate::tools::find::NO_MATCHES;
use crate::tools::{resolve_dir, Ctx, Output, Structured};
use crate::walk::glob::{self, Exclude};
use crate::walk::{self, WalkOptions};

/// Files with a NUL byte in their first 4 KB are binary and skipped, as the contract says.
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
    fit_to_budget(&mut found, mode, Budget::default());
    let with_context = args.context_lines > 0;
    let mut text = match mode {
        OutputMode::Content => render(&found, args.max_results, with_context, skipped),
        _ => render_per_file(&found, mode, args.max_results, skipped),
    };
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
    // Written as JSON text, not built as values: 10,000 matches as `Value` objects cost
    // megabytes of peak memory and their drop, for data that is only ever serialized.
    let mut data = JsonObject::new();
    match mode {
        OutputMode::Content => content_data(&mut data, &found, with_context),
        _ => per_file_data(&mut data, &found, mode),
    }
    data.field("mode").string(mode.name());
    data.field("truncated").raw(if found.truncated { "true" } else { "false" });
    data.field("skipped").raw(&skipped.to_string());
    data.field("partlySearched").raw(&gave_up.to_string());
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
    /// Cut to fit the reply's bound (`fit_to_budget`), not by `maxResults`.
    over_budget: bool,
    /// What the walks left out.
    too_long: walk::Summary,
}

/// Keeps the first hits that fit the reply's bound, counted as they will be written: each
/// line (or file) is in the reply twice, in the text and in the structured content. What is cut
/// is cut as `maxResults` cuts: whole matching lines, in path order, with their context before.
fn fit_to_budget(found: &mut Findings, mode: OutputMode, mut budget: Budget) {
    for i in 0..found.files.len() {
        let file = &found.files[i];
        let path = escaped_text_len(file.path.as_bytes());
        let fits = match mode {
            OutputMode::Content => file.lines.iter().position(|line| {
                !budget.take(2 * (path + escaped_text_len(file.text_of(line).as_bytes()) + 48))
            }),
            _ => (!budget.take(2 * (path + 32))).then_some(0),
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
        found.over_budget = true;
        return;
    }
}

/// Walks every scope and searches each candidate file as the walker finds it, on all cores,
/// so reading overlaps walking (as ripgrep does). Hits are kept in path order, bounded: once
/// the kept files hold more than `cap` (matching lines in content mode, files otherwise), the
/// files sorting last are dropped, and a file sorting after all kept ones is not even read.
/// Symlinks are never followed, so nothing outside the allowed set is opened.
fn search(
    regex: &Matchers<'_>,
    scopes: &[SearchRoot],
    options: &WalkOptions<'_>,
    tally: &Tally<'_>,
    limits: &Limits,
) -> Result<Findings, ToolError> {
    let Limits { cap, mode, .. } = *limits;
    let kept = Mutex::new(Kept { cap, mode, files: BTreeMap::new(), total: 0, truncated: false });
    // Scopes can overlap only when there are several of them.
    let seen: Mutex<HashSet<PathBuf>> = Mutex::new(HashSet::new());
    let over_cap = AtomicBool::new(false);
    let mut too_long = walk::Summary::default();
    for scope in scopes {
        if options.cancel.is_some_and(|c| c.is_cancelled()) {
            break;
        }
        let set = if scope.globs.is_empty() {
            None
        } else {
            Some(glob::glob_set("globs", &scope.globs)?)
        };
        let searched = walk::visit(&scope.root, options, || {
            let mut buf = Vec::new();
            let (kept, seen, set, over_cap) = (&kept, &seen, &set, &over_cap);
            move |entry: walk::Entry| {
                if entry.kind != Kind::File
                    || set.as_ref().is_some_and(|s| !s.is_match(entry.rel()))
                {
                    return;
                }
                let key = || ByPath(scope.root.shown.join(entry.rel()));
                // Until the cap is reached no file is skipped: no key to build, no lock to take.
                if over_cap.load(Ordering::Relaxed) && lock(kept).skips(&key()) {
                    return;
                }
                if scopes.len() > 1
                    && !seen.lock().unwrap_or_else(|e| e.into_inner()).insert(key().0)
                {
                    return;
                }
                tally.add_one();
                let found = search_file(regex, scope, &entry, &mut buf, limits);
                // One huge file must not pin its buffer for the rest of the search.
                if buf.capacity() > KEPT_BUFFER {
                    buf = Vec::new();
                }
                if let Some(hits) = found {
                    let mut kept = lock(kept);
                    kept.add(key(), hits);
                    if kept.total > kept.cap {
                        over_cap.store(true, Ordering::Relaxed);
                    }
                }
            }
        });
        let summary = searched.map_err(|e| ToolError::io("search", &scope.root.shown, e))?;
        too_long.too_long += summary.too_long;
    }
    let mut kept = kept.into_inner().unwrap_or_else(|e| e.into_inner());
    let mut truncated = kept.truncated;
    let mut files = Vec::new();
    let mut shown = 0;
    for (_, mut hits) in std::mem::take(&mut kept.files) {
        if shown + kept.weight(&hits) > cap {
            hits = cut(hits, cap - shown);
            truncated = true;
        }
        shown += kept.weight(&hits);
        if hits.n > 0 {
            files.push(hits);
        }
        if shown >= cap {
            break;
        }
    }
    Ok(Findings { files, truncated, over_budget: false, too_long })
}

fn lock(kept: &Mutex<Kept>) -> std::sync::MutexGuard<'_, Kept> {
    kept.lock().unwrap_or_else(|e| e.into_inner())
}

/// A path ordered depth-first with siblings by name, like every listing replay returns.
#[derive(PartialEq, Eq)]
struct ByPath(PathBuf);

impl Ord for ByPath {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        walk::path_order(&self.0, &other.0)
    }
}

impl PartialOrd for ByPath {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// The files with hits that can still be among the first `cap` results.
struct Kept {
    cap: usize,
    mode: OutputMode,
    files: BTreeMap<ByPath, FileHits>,
    /// The weight of `files`.
    total: usize,
    /// More than `cap` were found in all: the output is cut.
    truncated: bool,
}

impl Kept {
    fn weight(&self, hits: &FileHits) -> usize {
        if self.mode == OutputMode::Content {
            hits.n
        } else {
            1
        }
    }

    fn add(&mut self, key: ByPath, hits: FileHits) {
        self.total += self.weight(&hits);
        self.files.insert(key, hits);
        if self.total > self.cap {
            self.truncated = true;
        }
        // Drop the last file while the others still hold more than `cap`: it can no longer
        // be among the first `cap`, and one past the cap is enough to know the output is cut.
        while let Some((_, last)) = self.files.last_key_value() {
            let weight = self.weight(last);
            if self.total - weight <= self.cap {
                break;
            }
            self.total -= weight;
            self.files.pop_last();
        }
    }

    /// A file sorting after every kept one, once they hold more than `cap`, cannot show.
    fn skips(&self, key: &ByPath) -> bool {
        self.total > self.cap && self.files.last_key_value().is_some_and(|(last, _)| key > last)
    }
}

/// Keeps the first `keep` matching lines of a file's hits, with the context before them and
/// the context after the last one, but not the context that leads into the next.
fn cut(mut hits: FileHits, keep: usize) -> FileHits {
    let mut n = 0;
    let mut last_kept: Option<usize> = None;
    let mut end = hits.lines.len();
    for (idx, line) in hits.lines.iter().enumerate() {
        if let Some(last) = last_kept.filter(|_| n == keep) {
            if line.matched || line.number > last + hits.context {
                end = idx;
                break;
            }
        }
        if line.matched {
            n += 1;
            last_kept = Some(line.number);
        }
    }
    hits.lines.truncate(end);
    hits.text.truncate(hits.lines.last().map_or(0, |line| line.end));
    FileHits { n, ..hits }
}

fn search_file(
    regex: &Matchers<'_>,
    scope: &SearchRoot,
    entry: &walk::Entry,
    buf: &mut Vec<u8>,
    limits: &Limits,
) -> Option<FileHits> {
    let Limits { cap, context, mode } = *limits;
    buf.clear();
    let mut handle = entry.open().ok()?;
    let mut probe = [0u8; BINARY_PROBE];
    let n = read_full(&mut handle, &mut probe).ok()?;
    if memchr::memchr(0, &probe[..n]).is_some() {
        return None;
    }
    buf.extend_from_slice(&probe[..n]);
    if n == BINARY_PROBE {
        handle.take(MAX_READ_BYTES).read_to_end(buf).ok()?;
    }
    let lines = matching_lines(regex, buf);
    if lines.is_empty() {
        return None;
    }
    let path = scope.root.shown.join(entry.rel()).to_string_lossy().into_owned();
    let mut hits =
        FileHits { path, lines: Vec::new(), text: String::new(), n: lines.len(), context };
    if mode == OutputMode::Content {
        // No more than `cap` matching lines of one file can show.
        add_hit_lines(&mut hits, buf, &lines, cap);
    }
    Some(hits)
}

fn read_full(file: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

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

/// 0-based numbers of the lines a match touches, ascending. A match spanning lines marks each
/// of them; the empty match after a final newline is not a line.
fn matching_lines(regex: &Matchers<'_>, bytes: &[u8]) -> Vec<usize> {
    // CRLF lines are matched as if they ended in `\n` (ripgrep's --crlf): JS's multiline
    // `^`/`$` also meet between a `\r` and its `\n`, so `^\s*$` would start there and mark
    // the line before a blank one. Line numbers are unchanged, and the fast engine applies.
    if memchr::memmem::find(bytes, b"\r\n").is_some() {
        let lf = crlf_to_lf(bytes);
        return matching_lines_of(regex, &lf);
    }
    matching_lines_of(regex, bytes)
}

fn crlf_to_lf(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut last = 0;
    for at in memchr::memmem::find_iter(bytes, b"\r\n") {
        out.extend_from_slice(&bytes[last..at]);
        last = at + 1;
    }
    out.extend_from_slice(&bytes[last..]);
    out
}

fn matching_lines_of(regex: &Matchers<'_>, bytes: &[u8]) -> Vec<usize> {
    let mut spans: Vec<(usize, usize)> = Vec::new();
    match &regex.fast {
        // Same expectations as the exact engine, far cheaper: see `FastRegex`.
        Some(fast) if fast.applies_to(bytes) => {
            spans.extend(fast.regex().find_iter(bytes).map(|m| (m.start(), m.end())));
        }
        _ => {
            let text = String::from_utf8_lossy(bytes);
            for (i, m) in regex.exact.regex().find_iter(&text).enumerate() {
                if i % 1024 == 1023 && regex.cancel.is_cancelled() {
                    break;
                }
                match m {
                    Ok(m) => spans.push((m.start(), m.end())),
                    Err(_) => {
                        regex.gave_up.fetch_add(1, Ordering::Relaxed);
                        break;
                    }
                }
            }
            // Lossy decoding changes byte offsets only after invalid UTF-8; line numbers are
            // counted on the decoded text, where every `\n` is where it was.
            if let std::borrow::Cow::Owned(decoded) = text {
                return lines_of(decoded.as_bytes(), &spans);
            }
        }
    }
    lines_of(bytes, &spans)
}

/// Turns match byte spans into the sorted, distinct line numbers they touch.
fn lines_of(bytes: &[u8], spans: &[(usize, usize)]) -> Vec<usize> {
    let mut lines: Vec<usize> = Vec::new();
    let mut line = 0;
    let mut pos = 0;
    for &(start, end) in spans {
        if start == bytes.len() && start > 0 && bytes.ends_with(b"\n") {
            break;
        }
        line += count_newlines(&bytes[pos..start]);
        pos = start;
        let last_byte = if end > start { end - 1 } else { start };
        let end_line = line + count_newlines(&bytes[start..last_byte]);
        let from = match lines.last() {
            Some(&prev) if prev >= line => prev + 1,
            _ => line,
        };
        lines.extend(from..=end_line);
    }
    lines
}

fn count_newlines(bytes: &[u8]) -> usize {
    memchr::memchr_iter(b'\n', bytes).count()
}

/// The lines grep -C shows of one file: its first `limit` matching lines (0-based numbers in
/// `lines`) and up to `context` lines either side of each, each line once.
fn add_hit_lines(hits: &mut FileHits, bytes: &[u8], lines: &[usize], limit: usize) {
    let context = hits.context;
    let mut starts: Vec<usize> = vec![0];
    starts.extend(memchr::memchr_iter(b'\n', bytes).map(|i| i + 1));
    if bytes.ends_with(b"\n") {
        starts.pop();
    }
    let last_line = starts.len() - 1;
    // The last line ends before the final newline, if there is one.
    let text_end = if bytes.ends_with(b"\n") { bytes.len() - 1 } else { bytes.len() };
    let line_bytes = |n: usize| {
        let end = starts.get(n + 1).map_or(text_end, |&next| next - 1);
        &bytes[starts[n]..end.max(starts[n])]
    };
    let matched: HashSet<usize> = lines.iter().copied().collect();
    let mut printed_until: Option<usize> = None;
    for &line in lines.iter().take(limit) {
        let from = line.saturating_sub(context);
        let to = (line + context).min(last_line);
        for n in from..=to {
            if printed_until.is_some_and(|done| n <= done) {
                continue;
            }
            let start = hits.text.len();
            push_shown_line(&mut hits.text, &String::from_utf8_lossy(line_bytes(n)));
            let end = hits.text.len();
            hits.lines.push(HitLine { number: n + 1, matched: matched.contains(&n), start, end });
        }
        printed_until = Some(to.max(printed_until.unwrap_or(0)));
    }
}

/// A line as the output shows it: no `\r`, and cut after `MAX_LINE_CHARS` characters.
fn push_shown_line(out: &mut String, line: &str) {
    let line = line.strip_suffix('\r').unwrap_or(line);
    match line.char_indices().nth(MAX_LINE_CHARS) {
        Some((cut_at, _)) => {
            out.push_str(&line[..cut_at]);
            out.push_str(&format!(" … [line cut: {} bytes in all]", line.len()));
        }
        None => out.push_str(line),
    }
}

/// The line that heads a cut result, or nothing: cut by the reply's bound (`shown` of the
/// `unit` fit; `also` ends the advice) or by maxResults (`cap`).
fn truncation_header(found: &Findings, unit: &str, shown: usize, cap: usize, also: &str) -> String {
    if found.over_budget {
        format!(
            "[results truncated: showing the first {shown} {unit}, as many as fit the reply's {REPLY_NAME} bound; narrow the regex, directory or globs{also}]\n"
        )
    } else if found.truncated {
        format!(
            "[results truncated: showing the first {cap} {unit}; narrow the regex, directory or globs, or raise maxResults (max 10000)]\n"
        )
    } else {
        String::new()
    }
}

/// The contract's grep -C format: `path:N:text` for matches, `path-N-text` for context, and
/// `--` between groups (with context only), then `[N matches]`.
fn render(found: &Findings, cap: usize, with_context: bool, skipped: usize) -> String {
    let n: usize = found.files.iter().map(|f| f.n).sum();
    let mut out = truncation_header(found, "matching lines", n, cap, ", or lower contextLines");
    for (i, file) in found.files.iter().enumerate() {
        if i > 0 && with_context {
            out.push_str("--\n");
        }
        let mut previous: Option<usize> = None;
        for line in &file.lines {
            if with_context && previous.is_some_and(|p| p + 1 < line.number) {
                out.push_str("--\n");
            }
            previous = Some(line.number);
            let sep = if line.matched { ':' } else { '-' };
            out.push_str(&file.path);
            out.push(sep);
            out.push_str(&line.number.to_string());
            out.push(sep);
            out.push_str(file.text_of(line));
            out.push('\n');
        }
    }
    if n == 0 {
        out = NO_MATCHES.to_string();
    } else {
        out.push_str(&format!("[{n} matches]"));
    }
    if skipped > 0 {
        out.push_str(&format!("\n[{skipped} path(s) skipped: outside the allowed directories]"));
    }
    out
}

/// A JSON object written field by field.
struct JsonObject {
    out: Vec<u8>,
}

impl JsonObject {
    fn new() -> JsonObject {
        JsonObject { out: b"{".to_vec() }
    }

    /// Starts the next field; its value follows.
    fn field(&mut self, name: &str) -> &mut Self {
        if self.out.len() > 1 {
            self.out.push(b',');
        }
        self.string(name);
        self.out.push(b':');
        self
    }

    fn string(&mut self, s: &str) -> &mut Self {
        push_json_string(&mut self.out, s);
        self
    }

    fn raw(&mut self, json: &str) -> &mut Self {
        self.out.extend_from_slice(json.as_bytes());
        self
    }

    /// `[item, item, …]`, each written by `write`.
    fn array<T>(
        &mut self,
        items: impl IntoIterator<Item = T>,
        mut write: impl FnMut(&mut Self, T),
    ) {
        self.out.push(b'[');
        for (i, item) in items.into_iter().enumerate() {
            if i > 0 {
                self.out.push(b',');
            }
            write(self, item);
        }
        self.out.push(b']');
    }

    fn finish(mut self) -> String {
        self.out.push(b'}');
        // Only serde_json's UTF-8 and ASCII punctuation went in.
        String::from_utf8(self.out).unwrap_or_default()
    }
}

/// `{"path": …, "line": …, "text": …}`.
fn write_line(data: &mut JsonObject, path: &str, number: usize, text: &str) {
    data.raw("{\"path\":").string(path);
    data.raw(",\"line\":").raw(&number.to_string());
    data.raw(",\"text\":").string(text).raw("}");
}

/// Content mode's `structuredContent` fields: the text's match lines as `matches`, its context
/// lines (with `contextLines` only) as `context`, and the footer's count as `totalMatches`.
fn content_data(data: &mut JsonObject, found: &Findings, with_context: bool) {
    let lines = |matched: bool| {
        found.files.iter().flat_map(move |file| {
            file.lines.iter().filter(move |hit| hit.matched == matched).map(move |hit| (file, hit))
        })
    };
    data.field("matches");
    data.array(lines(true), |data, (file, hit)| {
        write_line(data, &file.path, hit.number, file.text_of(hit));
    });
    let total: usize = found.files.iter().map(|f| f.n).sum();
    data.field("totalMatches").raw(&total.to_string());
    if with_context {
        data.field("context");
        data.array(lines(false), |data, (file, hit)| {
            write_line(data, &file.path, hit.number, file.text_of(hit));
        });
    }
}

/// The per-file modes' `structuredContent` fields: `files`, or `counts` and `totalMatches`.
fn per_file_data(data: &mut JsonObject, found: &Findings, mode: OutputMode) {
    if mode == OutputMode::FilesWithMatches {
        data.field("files");
        data.array(&found.files, |data, f| {
            data.string(&f.path);
        });
        return;
    }
    data.field("counts");
    data.array(&found.files, |data, f| {
        data.raw("{\"path\":").string(&f.path).raw(",\"count\":").raw(&f.n.to_string()).raw("}");
    });
    let total: usize = found.files.iter().map(|f| f.n).sum();
    data.field("totalMatches").raw(&total.to_string());
}

/// files_with_matches: one path per line; count: `path:N` per file. `[N files]` or
/// `[N matches in M files]` closes the list.
fn render_per_file(found: &Findings, mode: OutputMode, cap: usize, skipped: usize) -> String {
    let n_files = found.files.len();
    let mut out = truncation_header(found, "files", n_files, cap, "");
    let n_matches: usize = found.files.iter().map(|f| f.n).sum();
    for file in &found.files {
        out.push_str(&file.path);
        if mode == OutputMode::Count {
            out.push_str(&format!(":{}", file.n));
        }
        out.push('\n');
    }
    if n_files == 0 {
        out = NO_MATCHES.to_string();
    } else if mode == OutputMode::Count {
        out.push_str(&format!("[{n_matches} matches in {n_files} files]"));
    } else {
        out.push_str(&format!("[{n_files} files]"));
    }
    if skipped > 0 {
        out.push_str(&format!("\n[{skipped} path(s) skipped: outside the allowed directories]"));
    }
    out
}
