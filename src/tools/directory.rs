//! create_directory, list_directory and directory_tree.
//!
//! list_directory reads one directory through its handle; sizes and times, when asked for,
//! come from `fstatat` on that handle, never following a link. directory_tree collects the walk
//! (`crate::walk`), keeps the shallowest entries when `maxEntries` cuts it short, and writes
//! the JSON (and, for `format: "text"`, the indented tree) in one pass over the sorted entries.

use std::os::fd::{AsFd, BorrowedFd};

use serde::Deserialize;
use serde_json::json;

use crate::error::ToolError;
use crate::fs::atomic::TEMP_PREFIX;
use crate::policy::confined::{self, Kind};
use crate::policy::ResolvedPath;
use crate::progress::Tally;
use crate::reply_size::{escaped_text_len, Budget, REPLY_NAME};
use crate::tools::format::iso8601_utc;
use crate::tools::{Content, Ctx, Output, Structured};
use crate::walk::{self, Entry, EntryKind, Exclude, WalkOptions};

#[derive(Deserialize)]
pub struct PathArgs {
    path: String,
}

#[derive(Deserialize)]
pub struct ListArgs {
    path: String,
    #[serde(default, rename = "withSizes")]
    with_sizes: bool,
    #[serde(default, rename = "sortBy")]
    sort_by: SortBy,
}

#[derive(Deserialize, Default, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum SortBy {
    #[default]
    Name,
    /// Largest first; directories and symlinks (which have no size shown) after the files.
    Size,
    /// Newest first.
    Modified,
}

#[derive(Deserialize)]
pub struct TreeArgs {
    path: String,
    depth: Option<usize>,
    #[serde(default, rename = "excludeGlobs")]
    exclude_globs: Vec<String>,
    #[serde(default, rename = "respectGitignore")]
    respect_gitignore: bool,
    #[serde(rename = "maxEntries")]
    max_entries: Option<usize>,
    #[serde(default)]
    format: TreeFormat,
}

#[derive(Deserialize, Default, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum TreeFormat {
    #[default]
    Json,
    Text,
}

pub fn create_directory(ctx: &Ctx, args: PathArgs) -> Result<Output, ToolError> {
    let resolved = ctx.policy.resolve_write(&args.path)?;
    resolved.create_dir_all().map_err(|e| {
        if resolved.metadata().is_ok_and(|m| !m.is_dir()) {
            ToolError::AlreadyExists { path: resolved.shown.clone() }
        } else {
            ToolError::io("create directory", &resolved.shown, e)
        }
    })?;
    Ok(Output::text(format!("Created directory {}", resolved.shown.display())))
}

/// One entry of a listed directory; `size` and `modified` are read only when asked for.
struct Listed {
    name: String,
    /// The name as the directory holds it, for `fstatat` (`name` is lossily converted).
    raw_name: std::ffi::OsString,
    kind: Kind,
    /// Bytes, for a file (not a directory or a symlink).
    size: Option<u64>,
    /// Seconds since the epoch.
    modified: Option<i64>,
}

/// The entries of one directory, sorted by name (byte order, as `ls` in the C locale), and the
/// open directory.
fn sorted_entries(dir: &ResolvedPath) -> Result<(std::os::fd::OwnedFd, Vec<Listed>), ToolError> {
    let failed = |e| ToolError::io("list directory", &dir.shown, e);
    let handle = dir.open_dir().map_err(failed)?;
    let mut entries = Vec::new();
    for entry in confined::read_entries(handle.as_fd()).map_err(failed)? {
        let name = entry.name.to_string_lossy().into_owned();
        if name.starts_with(TEMP_PREFIX) {
            // A write in progress (or one a crash left behind): not the user's file.
            continue;
        }
        let (raw_name, kind) = (entry.name, entry.kind);
        entries.push(Listed { name, raw_name, kind, size: None, modified: None });
    }
    entries.sort_unstable_by(|a, b| a.name.cmp(&b.name));
    Ok((handle, entries))
}

/// Fills in sizes and times with `fstatat` on the directory's handle, not following links. An
/// entry gone meanwhile keeps neither.
fn stat_entries(dir: BorrowedFd<'_>, entries: &mut [Listed]) {
    for entry in entries {
        let Ok(stat) = confined::stat_at(dir, &entry.raw_name) else {
            continue;
        };
        entry.modified = Some(stat.mtime);
        let kind = stat.kind();
        if matches!(kind, Kind::File | Kind::Other) {
            entry.size = Some(stat.size);
        }
    }
}

pub fn list_directory(ctx: &Ctx, args: ListArgs) -> Result<Output, ToolError> {
    let resolved = ctx.policy.resolve_read(&args.path)?;
    let (handle, mut entries) = sorted_entries(&resolved)?;
    let path = resolved.shown.display().to_string();
    if entries.is_empty() {
        let structured = json!({"path": path, "entries": []});
        return Ok(Output {
            structured: Some(Structured::Value(structured)),
            ..Output::text("(empty directory)")
        });
    }
    let show_sizes = args.with_sizes || args.sort_by == SortBy::Size;
    let show_times = args.sort_by == SortBy::Modified;
    if show_sizes || show_times {
        stat_entries(handle.as_fd(), &mut entries);
    }
    // Stable sorts, so equal keys stay in name order; an entry without the key (a directory
    // has no size) sorts after all that have one.
    match args.sort_by {
        SortBy::Name => {}
        SortBy::Size => entries.sort_by_key(|e| std::cmp::Reverse(e.size)),
        SortBy::Modified => entries.sort_by_key(|e| std::cmp::Reverse(e.modified)),
    }
    // Each entry is in the reply twice, a line of the text and an object of the structured
    // content: as many as fit the reply's bound are shown.
    let mut budget = Budget::default();
    let fit = entries
        .iter()
        .take_while(|entry| budget.take(2 * escaped_text_len(entry.name.as_bytes()) + 96))
        .count();
    let mut text = String::new();
    let mut data = Vec::with_capacity(fit);
    for entry in &entries[..fit] {
        let (tag, kind) = match entry.kind {
            Kind::File | Kind::Other => ("[FILE] ", "file"),
            Kind::Dir => ("[DIR]  ", "directory"),
            Kind::Symlink => ("[LINK] ", "symlink"),
        };
        text.push_str(tag);
        text.push_str(&entry.name);
        let size = entry.size.filter(|_| show_sizes).map(format_size);
        let time = entry.modified.filter(|_| show_times).map(iso8601_utc);
        match (size, time) {
            (Some(size), Some(time)) => text.push_str(&format!(" ({size}, {time})")),
            (Some(detail), None) | (None, Some(detail)) => text.push_str(&format!(" ({detail})")),
            (None, None) => {}
        }
        text.push('\n');
        let mut item = json!({"name": entry.name, "type": kind});
        if let Some(size) = entry.size {
            item["size"] = json!(size);
        }
        if let Some(modified) = entry.modified {
            item["modified"] = json!(iso8601_utc(modified));
        }
        data.push(item);
    }
    if fit < entries.len() {
        text.push_str(&format!(
            "[{} more entries not shown: the reply reached its {REPLY_NAME} bound; find what \
             you need with glob_search or search_files]\n",
            entries.len() - fit
        ));
    }
    if show_sizes {
        text.push_str(&totals(&entries));
    } else {
        text.pop();
    }
    let structured = json!({"path": path, "entries": data});
    Ok(Output { structured: Some(Structured::Value(structured)), ..Output::text(text) })
}

/// The summary under a listing with sizes, after the official server's
/// list_directory_with_sizes: a blank line, `Total: N files, M directories` (here with
/// `, K symlinks` when there are any, and singulars where they belong) and
/// `Combined size: S` (files only).
fn totals(entries: &[Listed]) -> String {
    let count = |kinds: &[Kind]| entries.iter().filter(|e| kinds.contains(&e.kind)).count();
    let noun = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let mut total = format!(
        "{}, {}",
        noun(count(&[Kind::File, Kind::Other]), "file", "files"),
        noun(count(&[Kind::Dir]), "directory", "directories")
    );
    let links = count(&[Kind::Symlink]);
    if links > 0 {
        total.push_str(&format!(", {}", noun(links, "symlink", "symlinks")));
    }
    let bytes: u64 = entries.iter().filter_map(|e| e.size).sum();
    format!("\nTotal: {total}\nCombined size: {}", format_size(bytes))
}

/// Bytes as the official server's `formatSize` writes them: `512 B`, else two decimals of the
/// largest binary unit that fits (`1.50 KB`, `2.00 MB`, up to TB).
fn format_size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KB", "MB", "GB", "TB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut unit = 0;
    let mut scaled = bytes as f64;
    while scaled >= 1024.0 && unit < UNITS.len() - 1 {
        scaled /= 1024.0;
        unit += 1;
    }
    format!("{scaled:.2} {}", UNITS[unit])
}

/// The most levels directory_tree renders below its root. Its JSON nests two levels per tree
/// level, and common parsers refuse deep nesting (serde_json at 128 levels, which a reply's
/// envelope already takes 4 of): at 50 the deepest node sits at level 104. A directory at the
/// limit is shown as one at the `depth` limit is, without its entries, and a note says so.
pub const MAX_TREE_LEVELS: usize = 50;

/// Compact JSON `{name, type, children}`. Symlinks are leaves of type `symlink`, never followed,
/// so the walk cannot leave the allowed set or loop. A directory at the depth limit has
/// `"children": [], "truncated": true`; `children: []` alone means it is empty. With `format: "text"`, the text is an
/// indented tree instead, and the structured content is the same JSON.
///
/// At most `MAX_TREE_LEVELS` levels are rendered, and only as many entries as fit the reply's
/// bound (`reply_size`), the shallowest first, as `maxEntries` keeps them.
pub fn directory_tree(ctx: &Ctx, args: TreeArgs) -> Result<Output, ToolError> {
    let resolved = ctx.policy.resolve_read(&args.path)?;
    let exclude = Exclude::new(&args.exclude_globs)?;
    // Fails for a missing, unreadable or non-directory root; below it, the walk skips what it
    // cannot read.
    let name = match resolved.shown.file_name() {
        Some(name) => name.to_string_lossy().into_owned(),
        None => resolved.shown.display().to_string(),
    };
    let levels_cut = args.depth.is_none_or(|depth| depth > MAX_TREE_LEVELS);
    let depth = Some(args.depth.map_or(MAX_TREE_LEVELS, |depth| depth.min(MAX_TREE_LEVELS)));
    let tally = Tally::new(ctx.progress, |n| format!("walked {n} entries"));
    let options = WalkOptions {
        max_depth: depth,
        exclude,
        respect_gitignore: args.respect_gitignore,
        cancel: Some(ctx.cancel),
        tally: Some(&tally),
    };
    let (entries, summary) = walk::entries(&resolved, &options)
        .map_err(|e| ToolError::io("read directory", &resolved.shown, e))?;
    if ctx.cancel.is_cancelled() {
        return Err(ToolError::Cancelled);
    }
    let text_format = args.format == TreeFormat::Text;
    let fitting = entries_that_fit(&entries, text_format, escaped_text_len(name.as_bytes()));
    let max = match (args.max_entries, fitting) {
        (Some(asked), Some(fit)) => Some(asked.min(fit)),
        (asked, fit) => asked.or(fit),
    };
    let cut = max.and_then(|max| Cut::new(&entries, max));
    let mut tree = TreeWriter::new(text_format, depth, cut.as_ref());
    tree.root(&name);
    for (i, entry) in entries.iter().enumerate() {
        tree.entry(i, entry);
    }
    let (json, text) = tree.finish();
    let mut output = tree_output(json, text);
    let mut notes = Vec::new();
    if let Some(cut) = &cut {
        let marks = match args.format {
            TreeFormat::Json => "directories with \"truncated\": true have entries not shown",
            TreeFormat::Text => "a directory marked ... has entries not shown",
        };
        let (n, all) = (cut.n_shown, entries.len());
        notes.push(if fitting.is_some_and(|fit| fit == n) {
            format!(
                "[truncated: {n} of {all} entries shown (all that fit the reply's {REPLY_NAME} \
                 bound), the shallowest first; {marks}; call directory_tree on a subdirectory \
                 for more]"
            )
        } else {
            format!("[truncated: {n} of {all} entries shown (maxEntries), the shallowest first; {marks}]")
        });
    }
    let at_the_limit = |e: &Entry| e.depth == MAX_TREE_LEVELS && e.kind == EntryKind::Dir;
    if levels_cut && entries.iter().any(at_the_limit) {
        notes.push(format!(
            "[directories {MAX_TREE_LEVELS} levels down are shown without their entries: \
             directory_tree renders at most {MAX_TREE_LEVELS} levels; call it on such a \
             directory to go deeper]"
        ));
    }
    notes.extend(summary.note());
    if !notes.is_empty() {
        let note = notes.join("\n");
        match args.format {
            // The first item stays the JSON alone.
            TreeFormat::Json => output.content.push(Content::Text(note)),
            TreeFormat::Text => {
                if let Some(Content::Text(text)) = output.content.first_mut() {
                    text.push('\n');
                    text.push_str(&note);
                }
            }
        }
    }
    Ok(output)
}

/// How many entries, the shallowest first (the order `Cut` keeps them in), fit the reply's
/// bound; `None` when all do. Each entry is counted as it will be written, escaped: in the
/// JSON, which the reply holds twice (the text of the json format is that JSON as a string,
/// where every quote takes two bytes, and the structured content is the JSON itself), or in
/// the text tree (indented, names escaped) and the JSON once.
fn entries_that_fit(entries: &[Entry], text_format: bool, root_name: usize) -> Option<usize> {
    let cost = |entry: &Entry| {
        let name = entry.rel().file_name().map_or(0, |n| escaped_text_len(n.as_encoded_bytes()));
        // `{"name":"…","type":"directory","children":[…]},`, quotes doubled in the text.
        let json = name + 48;
        if text_format {
            json + 2 * name + 2 * entry.depth + 4
        } else {
            json + 2 * name + 96
        }
    };
    let total: usize = entries.iter().map(cost).sum();
    let mut budget = Budget::default();
    if !budget.take(3 * root_name + 256) {
        return Some(0);
    }
    if total <= budget.left() {
        return None;
    }
    let mut order: Vec<usize> = (0..entries.len()).collect();
    order.sort_by_key(|&i| entries[i].depth);
    Some(order.iter().take_while(|&&i| budget.take(cost(&entries[i]))).count())
}

/// What `maxEntries` leaves of a walk that found more. Entries are kept breadth-first (all of
/// depth 1, then of depth 2, …, each level in path order), so every shown entry's parent is
/// shown and the levels above the cut are whole. Indexed like the entries, plus the root last.
struct Cut {
    shown: Vec<bool>,
    /// Some child is shown.
    has_shown_child: Vec<bool>,
    /// Some child is not.
    partial: Vec<bool>,
    /// Something at or below is not shown.
    incomplete: Vec<bool>,
    n_shown: usize,
}

impl Cut {
    /// `None` when everything fits.
    fn new(entries: &[Entry], max: usize) -> Option<Cut> {
        let n = entries.len();
        if n <= max {
            return None;
        }
        // Each entry's parent: the last directory before it one level up (the root is `n`).
        // The entries are depth-first, and every entry's parent was walked.
        let mut parent = vec![n; n];
        let mut open: Vec<usize> = Vec::new();
        for (i, entry) in entries.iter().enumerate() {
            open.truncate(entry.depth - 1);
            parent[i] = open.last().copied().unwrap_or(n);
            if entry.kind == EntryKind::Dir {
                open.push(i);
            }
        }
        let mut order: Vec<usize> = (0..n).collect();
        // Stable: within a level, path order.
        order.sort_by_key(|&i| entries[i].depth);
        let mut shown = vec![false; n];
        for &i in &order[..max] {
            shown[i] = true;
        }
        let mut has_shown_child = vec![false; n + 1];
        let mut partial = vec![false; n + 1];
        for i in 0..n {
            if shown[i] {
                has_shown_child[parent[i]] = true;
            } else {
                partial[parent[i]] = true;
            }
        }
        // Children come after their parents: one backward pass carries the flag up.
        let mut incomplete = partial.clone();
        for i in (0..n).rev() {
            if incomplete[i] {
                incomplete[parent[i]] = true;
            }
        }
        Some(Cut { shown, has_shown_child, partial, incomplete, n_shown: max })
    }
}

/// The end of a directory node none of whose entries are shown: the depth limit kept it from
/// being read, or maxEntries left them all out. Every directory node has `children` (clients
/// such as replay v2.1's own tests expect it), and `truncated` tells this one from an empty one.
const CUT_OFF: &[u8] = b",\"children\":[],\"truncated\":true}";

/// Writes the tree in one pass over the depth-first entries: always the JSON (the text of the
/// json format, and the structured content of both), and the indented text when asked for.
struct TreeWriter<'a> {
    json: Vec<u8>,
    text: Option<String>,
    depth: Option<usize>,
    cut: Option<&'a Cut>,
    /// Per directory whose children array is open (the root first): whether a child has been
    /// written yet, and whether the directory gets `"truncated": true` when it closes.
    open: Vec<(bool, bool)>,
}

impl<'a> TreeWriter<'a> {
    fn new(text: bool, depth: Option<usize>, cut: Option<&'a Cut>) -> TreeWriter<'a> {
        TreeWriter {
            json: Vec::with_capacity(4096),
            text: text.then(String::new),
            depth,
            cut,
            open: Vec::new(),
        }
    }

    fn root(&mut self, name: &str) {
        self.json.extend_from_slice(b"{\"name\":");
        write_json_string(&mut self.json, name);
        self.json.extend_from_slice(b",\"type\":\"directory\"");
        let root = self.cut.map(|cut| cut.shown.len());
        let unlisted = self.depth == Some(0);
        let none_shown = match (self.cut, root) {
            (Some(cut), Some(r)) => !cut.has_shown_child[r],
            _ => false,
        };
        if let Some(text) = &mut self.text {
            push_text_name(text, name);
            text.push('/');
            if unlisted || self.cut.is_some_and(|cut| root.is_some_and(|r| cut.partial[r])) {
                text.push_str(" ...");
            }
        }
        if unlisted || none_shown {
            self.json.extend_from_slice(CUT_OFF);
        } else {
            self.json.extend_from_slice(b",\"children\":[");
            let incomplete = matches!((self.cut, root), (Some(cut), Some(r)) if cut.incomplete[r]);
            self.open.push((false, incomplete));
        }
    }

    fn entry(&mut self, i: usize, entry: &Entry) {
        if self.cut.is_some_and(|cut| !cut.shown[i]) {
            return;
        }
        while self.open.len() > entry.depth {
            self.close();
        }
        if let Some((has_child, _)) = self.open.last_mut() {
            if *has_child {
                self.json.push(b',');
            }
            *has_child = true;
        }
        let name = entry.rel().file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
        self.json.extend_from_slice(b"{\"name\":");
        write_json_string(&mut self.json, &name);
        let at_limit = self.depth == Some(entry.depth);
        let (partial, none_shown, incomplete) = match self.cut {
            Some(cut) => (cut.partial[i], !cut.has_shown_child[i], cut.incomplete[i]),
            None => (false, false, false),
        };
        let json = &mut self.json;
        match entry.kind {
            EntryKind::Dir if at_limit || (partial && none_shown) => {
                json.extend_from_slice(b",\"type\":\"directory\"");
                json.extend_from_slice(CUT_OFF);
            }
            EntryKind::Dir => {
                json.extend_from_slice(b",\"type\":\"directory\",\"children\":[");
                self.open.push((false, incomplete));
            }
            EntryKind::File | EntryKind::Other => json.extend_from_slice(b",\"type\":\"file\"}"),
            EntryKind::Symlink => json.extend_from_slice(b",\"type\":\"symlink\"}"),
        }
        if let Some(text) = &mut self.text {
            text.push('\n');
            for _ in 0..entry.depth {
                text.push_str("  ");
            }
            push_text_name(text, &name);
            match entry.kind {
                EntryKind::Dir if at_limit || partial => text.push_str("/ ..."),
                EntryKind::Dir => text.push('/'),
                EntryKind::Symlink => text.push('@'),
                EntryKind::File | EntryKind::Other => {}
            }
        }
    }

    fn close(&mut self) {
        if let Some((_, incomplete)) = self.open.pop() {
            self.json.push(b']');
            if incomplete {
                self.json.extend_from_slice(b",\"truncated\":true");
            }
            self.json.push(b'}');
        }
    }

    fn finish(mut self) -> (Vec<u8>, Option<String>) {
        while !self.open.is_empty() {
            self.close();
        }
        (self.json, self.text)
    }
}

/// A name on its own line of the text tree: control characters (a newline in a name) escaped,
/// so one line stays one entry.
fn push_text_name(text: &mut String, name: &str) {
    if !name.chars().any(char::is_control) {
        text.push_str(name);
        return;
    }
    for c in name.chars() {
        if c.is_control() {
            text.extend(c.escape_debug());
        } else {
            text.push(c);
        }
    }
}

/// The tree's JSON (or, for the text format, the indented tree) as the text, and
/// `{"tree": <the JSON>}` as the structured content, spliced into the reply unparsed: parsing
/// a 45,000-node tree back into values and writing it again doubled the call's time.
fn tree_output(json: Vec<u8>, text: Option<String>) -> Output {
    // Names are lossily converted and JSON-escaped: the bytes are UTF-8.
    let json = String::from_utf8(json)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    let structured_json = format!("{{\"tree\":{json}}}");
    Output {
        structured: Some(Structured::Json(structured_json)),
        ..Output::text(text.unwrap_or(json))
    }
}

fn write_json_string(out: &mut Vec<u8>, s: &str) {
    // serde_json's escaping, without building a Value per node.
    let _ = serde_json::to_writer(&mut *out, s);
}

#[cfg(test)]
mod tests;
