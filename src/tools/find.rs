//! search_files (basename substring) and glob_search (path globs): finding files by name.

use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::ToolError;
use std::path::Path;

use crate::policy::confined::Kind;
use crate::progress::Tally;
use crate::reply_size::{escaped_text_len, Budget};
use crate::tools::{resolve_dir, Content, Ctx, Output, Structured};
use crate::walk::filter::{self, Limit};
use crate::walk::glob::{self, Exclude};
use crate::walk::{self, WalkOptions};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchFilesArgs {
    directory: String,
    name_contains: String,
    #[serde(default)]
    exclude_globs: Vec<String>,
    #[serde(default)]
    respect_gitignore: bool,
}

/// The whole text of a search that found nothing (search_files, glob_search, grep_files).
pub const NO_MATCHES: &str = "(no matches found)";

/// search_files' legacy names, `(legacy, canonical)`: the official server's, which agents
/// trained on it send. The contract accepts them without advertising them.
const SEARCH_ALIASES: [(&str, &str); 3] =
    [("path", "directory"), ("pattern", "nameContains"), ("excludePatterns", "excludeGlobs")];

/// Renames search_files' legacy arguments to the canonical ones, before validation (so the
/// schema can say what is required, and refuse names it does not know). The canonical name
/// wins when both come.
pub fn map_search_aliases(args: &mut Value) {
    let Value::Object(map) = args else { return };
    for (legacy, canonical) in SEARCH_ALIASES {
        if let Some(value) = map.remove(legacy) {
            map.entry(canonical).or_insert(value);
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GlobSearchArgs {
    directory: String,
    globs: Vec<String>,
    #[serde(default)]
    exclude_globs: Vec<String>,
    #[serde(default = "default_max")]
    max: usize,
    #[serde(default)]
    respect_gitignore: bool,
}

fn default_max() -> usize {
    1000
}

/// Every file or directory below `directory` whose basename contains `nameContains`,
/// case-insensitively; a literal substring, never a pattern.
pub fn search_files(ctx: &Ctx, args: SearchFilesArgs) -> Result<Output, ToolError> {
    let dir = resolve_dir(ctx, &args.directory, "search")?;
    let tally = Tally::new(ctx.progress, walked);
    let options = walk_options(ctx, &tally, args.respect_gitignore, &args.exclude_globs)?;
    let needle = args.name_contains.to_lowercase();
    let ascii = needle.is_ascii();
    let accept = |entry: &walk::Entry| {
        let Some(name) = entry.rel().file_name() else { return false };
        let name = name.as_encoded_bytes();
        // ASCII needles (nearly all) compare without allocating a lowercased copy per name.
        if ascii {
            contains_ascii_case_insensitive(name, needle.as_bytes())
        } else {
            String::from_utf8_lossy(name).to_lowercase().contains(&needle)
        }
    };
    let mut hits = Hits::new(ctx.settings.budget());
    let weigh = |rel: &Path| hits.weight(&dir.shown, rel);
    let limit = Limit { count: usize::MAX, weight: hits.budget.left(), weigh: &weigh };
    let found = filter::filtered(&dir, &options, &limit, accept)
        .map_err(|e| ToolError::io("search", &dir.shown, e))?;
    if ctx.cancel.is_cancelled() {
        return Err(ToolError::Cancelled);
    }
    for entry in &found.entries {
        hits.push(dir.shown.join(entry.rel()).to_string_lossy().into_owned());
    }
    // The matches `filtered` did not keep would not have fit.
    hits.left_out += total_usize(found.total) - found.entries.len();
    let summary = found.summary;
    let mut notes = String::new();
    if hits.paths.is_empty() && args.name_contains.contains(['*', '?', '[']) {
        // The contract's first line stays; the next says why a pattern found nothing.
        notes.push_str(
            "\n[nameContains is a literal substring, not a glob: for a pattern use glob_search]",
        );
    }
    if hits.left_out > 0 {
        notes.push_str(&format!(
            "\n[{} more matches not shown: the reply reached its {} bound; narrow \
             nameContains or directory, or add excludeGlobs]",
            hits.left_out,
            hits.budget.name()
        ));
    }
    push_note(&mut notes, summary.note());
    let structured = json!({ "matches": hits.paths, "count": hits.paths.len() });
    Ok(hits.output(notes, structured))
}

/// The paths a search found, as many as fit the reply's bound (`reply_size`): each is in
/// the reply as a line of the text, a `resource_link` where the revision has them, and a
/// string of the structured content.
struct Hits {
    paths: Vec<String>,
    /// Found, but over the bound.
    left_out: usize,
    budget: Budget,
}

/// What a path costs in the reply besides its bytes in its copies: a link's JSON
/// (`{"type":"resource_link","uri":"file://","name":"","mimeType":"text/x-c++"},` is 73 bytes),
/// the text's newline and the structured array's quotes and comma.
const HIT_BYTES: usize = 80;

impl Hits {
    fn new(budget: Budget) -> Hits {
        Hits { paths: Vec::new(), left_out: 0, budget }
    }

    fn push(&mut self, path: String) {
        // A line of the text, a link (its URI, and its name at most as long), and a string of
        // the structured array. A link's URI escapes a byte in up to 3 (`%0A`), which JSON
        // leaves as they are, where it escapes a control byte in 6.
        let cost = 4 * escaped_text_len(path.as_bytes()) + HIT_BYTES;
        if self.left_out > 0 || !self.budget.take(cost) {
            self.left_out += 1;
            return;
        }
        self.paths.push(path);
    }

    /// What a path costs in the reply at least (`push` counts it exactly): the directory as
    /// shown and the path below it, each byte at least once. Lossy conversion, escaping and
    /// the slash between them only add bytes.
    fn weight(&self, shown: &Path, rel: &Path) -> usize {
        let bytes = shown.as_os_str().len() + escaped_text_len(rel.as_os_str().as_encoded_bytes());
        4 * bytes + HIT_BYTES
    }

    fn len(&self) -> usize {
        self.paths.len() + self.left_out
    }

    /// The reply: the paths (`Content::Found`, links too where the revision has them), then
    /// `notes`.
    fn output(self, notes: String, structured: Value) -> Output {
        Output {
            content: vec![Content::Found { paths: self.paths, notes }],
            is_error: false,
            structured: Some(Structured::Value(structured)),
        }
    }
}

/// Appends a note on a line of its own, when there is one.
fn push_note(text: &mut String, note: Option<String>) {
    if let Some(note) = note {
        text.push('\n');
        text.push_str(&note);
    }
}

/// The progress message of a walk.
fn walked(n: u64) -> String {
    format!("walked {n} entries")
}

fn total_usize(total: u64) -> usize {
    usize::try_from(total).unwrap_or(usize::MAX)
}

/// How both searches walk: every level, with the call's excludes, gitignore choice, cancel and
/// progress.
fn walk_options<'a>(
    ctx: &Ctx<'a>,
    tally: &'a Tally<'a>,
    respect_gitignore: bool,
    exclude_globs: &[String],
) -> Result<WalkOptions<'a>, ToolError> {
    Ok(WalkOptions {
        respect_gitignore,
        exclude: Exclude::new(exclude_globs)?,
        cancel: Some(ctx.cancel),
        tally: Some(tally),
        ..WalkOptions::default()
    })
}

fn contains_ascii_case_insensitive(haystack: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || haystack.windows(needle.len()).any(|w| w.eq_ignore_ascii_case(needle))
}

/// Regular files below `directory` matching any glob (relative to it); not directories, and
/// not symlinks, which are never followed.
pub fn glob_search(ctx: &Ctx, args: GlobSearchArgs) -> Result<Output, ToolError> {
    let dir = resolve_dir(ctx, &args.directory, "search")?;
    let globs: Vec<String> =
        args.globs.iter().map(|g| g.trim_start_matches("./").to_string()).collect();
    let set = glob::glob_set("globs", &globs)?;
    let tally = Tally::new(ctx.progress, walked);
    let options = walk_options(ctx, &tally, args.respect_gitignore, &args.exclude_globs)?;
    let accept = |entry: &walk::Entry| entry.kind == Kind::File && set.is_match(entry.rel());
    let mut hits = Hits::new(ctx.settings.budget());
    let weigh = |rel: &Path| hits.weight(&dir.shown, rel);
    let count = if args.max == 0 { usize::MAX } else { args.max };
    let limit = Limit { count, weight: hits.budget.left(), weigh: &weigh };
    let found = filter::filtered(&dir, &options, &limit, accept)
        .map_err(|e| ToolError::io("search", &dir.shown, e))?;
    if ctx.cancel.is_cancelled() {
        return Err(ToolError::Cancelled);
    }
    for entry in found.entries.iter().take(count) {
        hits.push(dir.shown.join(entry.rel()).to_string_lossy().into_owned());
    }
    // Past `max` the list is cut; before it, the files `filtered` did not keep would not have
    // fit the reply.
    let total = total_usize(found.total);
    let mut truncated = total > count;
    hits.left_out += total.min(count) - hits.len();
    let summary = found.summary;
    let mut notes = String::new();
    if truncated {
        notes.push_str(&format!(
            "\n[results truncated at max={}: narrow the globs, or raise max (0 = unlimited)]",
            args.max
        ));
    }
    if hits.left_out > 0 {
        truncated = true;
        notes.push_str(&format!(
            "\n[{} more files not shown: the reply reached its {} bound; narrow the globs or \
             the directory, or lower max]",
            hits.left_out,
            hits.budget.name()
        ));
    }
    push_note(&mut notes, summary.note());
    let structured =
        json!({ "matches": hits.paths, "count": hits.paths.len(), "truncated": truncated });
    Ok(hits.output(notes, structured))
}
