//! create_directory, list_directory and directory_tree.
//!
//! list_directory reads one directory through its handle; sizes and times, when asked for,
//! come from `fstatat` on that handle, never following a link. directory_tree collects the walk
//! (`crate::walk`), keeps the shallowest entries when `maxEntries` cuts it short, and writes
//! the JSON (and, for `format: "text"`, the indented tree) in one pass over the sorted entries.

use std::os::fd::AsFd;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Deserialize;

use crate::error::ToolError;
use crate::fs::atomic::TEMP_PREFIX;
use crate::policy::confined::{self, Kind};
use crate::policy::ResolvedPath;
use crate::progress::Tally;
use crate::reply_size::{
    escaped_len, escaped_text_len, push_json_string, shown_escaped_len, Budget, REPLY_NAME,
};
use crate::tools::format::iso8601_utc;
use crate::tools::{Content, Ctx, Output, Structured};
use crate::walk::glob::Exclude;
use crate::walk::{self, levels, EntryKind, WalkOptions};

mod listing;

use listing::{Listed, Listing};

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

#[derive(Deserialize, Default, Clone, Copy, PartialEq, Eq, Debug)]
#[serde(rename_all = "lowercase")]
enum SortBy {
    #[default]
    Name,
    /// Largest first; directories and symlinks (which have no size shown) after the files.
    /// Ties, here and for `Modified`, are in name order.
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

/// The entries of one directory in `order`: those the reply can show, and what the rest add
/// to the totals. Sizes and times, when asked for, come from `fstatat` on the directory's
/// handle, not following links; an entry gone meanwhile has neither.
fn read_listing(dir: &ResolvedPath, order: SortBy, stat: bool) -> Result<Listing, ToolError> {
    let failed = |e| ToolError::io("list directory", &dir.shown, e);
    let handle = dir.open_dir().map_err(failed)?;
    let mut listing = Listing::new(order, Budget::default().left());
    confined::for_each_entry(handle.as_fd(), |name, kind| {
        let bytes = name.as_encoded_bytes();
        if bytes.starts_with(TEMP_PREFIX.as_bytes()) {
            // A write in progress (or one a crash left behind): not the user's file.
            return;
        }
        let (mut size, mut modified) = (None, None);
        if stat {
            if let Ok(stat) = confined::stat_at(handle.as_fd(), name) {
                modified = Some(stat.mtime);
                if matches!(stat.kind(), Kind::File | Kind::Other) {
                    size = Some(stat.size);
                }
            }
        }
        listing.add(bytes, kind, size, modified);
    })
    .map_err(failed)?;
    Ok(listing.finish())
}

pub fn list_directory(ctx: &Ctx, args: ListArgs) -> Result<Output, ToolError> {
    let resolved = ctx.policy.resolve_read(&args.path)?;
    let show_sizes = args.with_sizes || args.sort_by == SortBy::Size;
    let show_times = args.sort_by == SortBy::Modified;
    let listing = read_listing(&resolved, args.sort_by, show_sizes || show_times)?;
    let path = resolved.shown.display().to_string();
    if listing.len() == 0 && listing.left_out.count == 0 {
        let mut data = b"{\"entries\":[],\"path\":".to_vec();
        push_json_string(&mut data, &path);
        data.push(b'}');
        return Ok(Output {
            structured: Some(Structured::Json(String::from_utf8_lossy(&data).into_owned())),
            ..Output::text("(empty directory)")
        });
    }
    // Each entry is in the reply twice, a line of the text and an object of the structured
    // content: the listing holds as many as fit the reply's bound.
    let fit = listing.len();
    // Written once, at their final sizes: the names as shown (as text, and escaped), and per
    // entry its tag and its JSON object's keys and type (48 bytes), plus the details. Sized
    // from the raw names, 60,000 names of 250 bytes not UTF-8 (750 shown) grew both by
    // doubling, and the old buffers stayed resident: 80 MB at peak for a 24 MB reply.
    let (names, escaped) = listing.shown_bytes();
    let details = if show_sizes || show_times { 64 * fit } else { 0 };
    let mut text = String::with_capacity(names + 9 * fit + details + 256);
    let mut data: Vec<u8> =
        Vec::with_capacity(escaped + 48 * fit + 2 * details + escaped_len(&path) + 64);
    data.extend_from_slice(b"{\"entries\":[");
    let shown = Shown { sizes: show_sizes, times: show_times };
    for (i, held) in listing.entries().enumerate() {
        if i > 0 {
            data.push(b',');
        }
        write_entry(&mut text, &mut data, &held.key, &listing.name(held), shown);
    }
    data.extend_from_slice(b"],\"path\":");
    push_json_string(&mut data, &path);
    data.push(b'}');
    if listing.left_out.count > 0 {
        text.push_str(&format!(
            "[{} more entries not shown: the reply reached its {REPLY_NAME} bound; find what \
             you need with glob_search or search_files]\n",
            listing.left_out.count
        ));
    }
    if show_sizes {
        text.push_str(&totals(&listing));
    } else {
        text.pop();
    }
    // Only UTF-8 went in: names lossily converted, escaped by `push_json_string`.
    let data = String::from_utf8(data).unwrap_or_default();
    Ok(Output { structured: Some(Structured::Json(data)), ..Output::text(text) })
}

/// What a listing's text shows of each entry besides its name.
#[derive(Clone, Copy)]
struct Shown {
    sizes: bool,
    times: bool,
}

/// One entry of a listing: its line of the text, and its object of the structured content
/// (what `Listing` costs it at, at most).
fn write_entry(text: &mut String, data: &mut Vec<u8>, entry: &Listed, name: &str, shown: Shown) {
    let (tag, kind) = match entry.kind {
        Kind::File | Kind::Other => ("[FILE] ", "file"),
        Kind::Dir => ("[DIR]  ", "directory"),
        Kind::Symlink => ("[LINK] ", "symlink"),
    };
    text.push_str(tag);
    text.push_str(name);
    let size = entry.size().filter(|_| shown.sizes).map(format_size);
    let time = entry.modified().filter(|_| shown.times).map(iso8601_utc);
    match (size, time) {
        (Some(size), Some(time)) => text.push_str(&format!(" ({size}, {time})")),
        (Some(detail), None) | (None, Some(detail)) => text.push_str(&format!(" ({detail})")),
        (None, None) => {}
    }
    text.push('\n');
    // Keys in serde_json's order (sorted), as the listing's `Value`s were written.
    data.push(b'{');
    if let Some(modified) = entry.modified() {
        data.extend_from_slice(b"\"modified\":");
        push_json_string(data, &iso8601_utc(modified));
        data.push(b',');
    }
    data.extend_from_slice(b"\"name\":");
    push_json_string(data, name);
    if let Some(size) = entry.size() {
        data.extend_from_slice(format!(",\"size\":{size}").as_bytes());
    }
    data.extend_from_slice(b",\"type\":\"");
    data.extend_from_slice(kind.as_bytes());
    data.extend_from_slice(b"\"}");
}

/// The summary under a listing with sizes, after the official server's
/// list_directory_with_sizes: a blank line, `Total: N files, M directories` (here with
/// `, K symlinks` when there are any, and singulars where they belong) and
/// `Combined size: S` (files only).
fn totals(listing: &Listing) -> String {
    let count = |kinds: &[Kind]| listing.entries().filter(|e| kinds.contains(&e.key.kind)).count();
    let out = &listing.left_out;
    let noun = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let mut total = format!(
        "{}, {}",
        noun(count(&[Kind::File, Kind::Other]) + out.files, "file", "files"),
        noun(count(&[Kind::Dir]) + out.dirs, "directory", "directories")
    );
    let links = count(&[Kind::Symlink]) + out.links;
    if links > 0 {
        total.push_str(&format!(", {}", noun(links, "symlink", "symlinks")));
    }
    let bytes = listing.entries().filter_map(|e| e.key.size()).fold(out.bytes, u64::saturating_add);
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
/// At most `MAX_TREE_LEVELS` levels are rendered, and only as many entries as `maxEntries`
/// asks for and fit the reply's bound (`reply_size`), the shallowest first: the walk is
/// breadth-first (`walk::levels`) and stops at the first entry that is not shown, so a capped
/// tree costs what it shows, whatever the size of the tree below.
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
    let text_format = args.format == TreeFormat::Text;
    let mut keep = Keep::new(args.max_entries, text_format, escaped_text_len(name.as_bytes()));
    let levels = levels::breadth_first(&resolved, &options, keep.most(), |offer| keep.take(offer))
        .map_err(|e| ToolError::io("read directory", &resolved.shown, e))?;
    if ctx.cancel.is_cancelled() {
        return Err(ToolError::Cancelled);
    }
    let marks = Marks::new(&levels);
    let mut tree = TreeWriter::new(text_format, depth, &levels);
    tree.root(&name, marks.root());
    // Depth-first over the breadth-first levels: each directory's children in name order.
    let mut stack: Vec<std::ops::Range<usize>> = vec![levels.children(None)];
    while let Some(siblings) = stack.last_mut() {
        let Some(i) = siblings.next() else {
            stack.pop();
            continue;
        };
        let node = &levels.nodes[i];
        tree.entry(
            &String::from_utf8_lossy(levels.name(node)),
            node.kind,
            node.depth(),
            marks.of(i),
        );
        if node.kind == EntryKind::Dir {
            stack.push(levels.children(Some(i)));
        }
    }
    // A tree cut by the reply's bound says of how many entries, as it did when the whole tree
    // was held: a second walk counts them, holding nothing (the million-file tree: about as
    // long as `find`, and no memory). A tree cut by maxEntries is not counted: its cost is to
    // follow the cap, whatever lies below.
    let total = match keep.cut {
        Some(Bound::Reply) => {
            let count = AtomicU64::new(0);
            let count_ref = &count;
            walk::visit(&resolved, &options, || {
                move |_| {
                    count_ref.fetch_add(1, Ordering::Relaxed);
                }
            })
            .map_err(|e| ToolError::io("read directory", &resolved.shown, e))?;
            if ctx.cancel.is_cancelled() {
                return Err(ToolError::Cancelled);
            }
            Some(count.into_inner())
        }
        _ => None,
    };
    let mut notes = Vec::new();
    if let Some(cut) = keep.cut {
        let marks = match args.format {
            TreeFormat::Json => "directories with \"truncated\": true have entries not shown",
            TreeFormat::Text => "a directory marked ... has entries not shown",
        };
        let n = levels.nodes.len();
        let total = total.unwrap_or_default().max(n as u64);
        notes.push(match cut {
            Bound::Reply => format!(
                "[truncated: {n} of {total} entries shown (all that fit the reply's {REPLY_NAME} bound), \
                 the shallowest first; {marks}; call directory_tree on a subdirectory for more]"
            ),
            Bound::MaxEntries => format!(
                "[truncated: {n} entries shown (maxEntries), the shallowest first; {marks}]"
            ),
        });
    }
    let at_the_limit =
        |node: &levels::Node| node.depth() == MAX_TREE_LEVELS && node.kind == EntryKind::Dir;
    if levels_cut && levels.nodes.iter().any(at_the_limit) {
        notes.push(format!(
            "[directories {MAX_TREE_LEVELS} levels down are shown without their entries: \
             directory_tree renders at most {MAX_TREE_LEVELS} levels; call it on such a \
             directory to go deeper]"
        ));
    }
    notes.extend(levels.summary.note());
    // The walk's entries go before the reply is made: it holds the tree twice already.
    drop((levels, marks));
    let (json, text) = tree.finish();
    let mut output = tree_output(json, text);
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

/// Which entries directory_tree shows: breadth-first, as many as `maxEntries` asks for and
/// fit the reply's bound, and which of the two stopped it. Each entry is counted as it will be
/// written, escaped: in the JSON, which the reply holds twice (the text of the json format is
/// that JSON as a string, where every quote takes two bytes, and the structured content is the
/// JSON itself), or in the text tree (indented, names escaped) and the JSON once.
struct Keep {
    max_entries: Option<usize>,
    text_format: bool,
    taken: usize,
    budget: Budget,
    /// Nothing fits, not even the root.
    no_room: bool,
    /// Set at the first entry not shown.
    cut: Option<Bound>,
}

/// What cut the tree short.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Bound {
    MaxEntries,
    Reply,
}

impl Keep {
    fn new(max_entries: Option<usize>, text_format: bool, root_name: usize) -> Keep {
        let mut budget = Budget::default();
        let no_room = !budget.take(3 * root_name + 256);
        Keep { max_entries, text_format, taken: 0, budget, no_room, cut: None }
    }

    fn cost(&self, offer: &levels::Offer<'_>) -> usize {
        // As shown: a name not UTF-8 is shown lossily, each invalid sequence as U+FFFD.
        let name = shown_escaped_len(offer.name);
        // `{"name":"…","type":"directory","children":[…]},`, quotes doubled in the text.
        let json = name + 48;
        if self.text_format {
            json + 2 * name + 2 * offer.depth + 4
        } else {
            json + 2 * name + 96
        }
    }

    /// The most that could be shown: every entry costs at least `Room::weight` of its name
    /// (`cost` is never less).
    fn most(&self) -> levels::Room {
        let bytes = if self.no_room { 0 } else { self.budget.left() };
        let fit = bytes / levels::Room::ENTRY_BYTES;
        levels::Room { entries: self.max_entries.map_or(fit, |max| max.min(fit)), bytes }
    }

    fn take(&mut self, offer: &levels::Offer<'_>) -> bool {
        let cost = self.cost(offer);
        let fits = !self.no_room && cost <= self.budget.left();
        if self.max_entries.is_some_and(|max| self.taken == max) {
            // maxEntries is reached; the reply's bound is named when this entry would not
            // have fit either.
            self.cut = Some(if fits { Bound::MaxEntries } else { Bound::Reply });
            return false;
        }
        if !fits {
            self.cut = Some(Bound::Reply);
            return false;
        }
        self.budget.take(cost);
        self.taken += 1;
        true
    }
}

/// How each shown directory is marked: whether some of its entries are not shown (`partial`),
/// none of them are (`none_shown`), or something at or below it is not (`incomplete`).
struct Marks {
    /// Per node, then the root last.
    incomplete: Vec<bool>,
    partial: Vec<bool>,
    none_shown: Vec<bool>,
}

#[derive(Clone, Copy, Default)]
struct Mark {
    partial: bool,
    none_shown: bool,
    incomplete: bool,
}

impl Marks {
    fn new(levels: &levels::Levels) -> Marks {
        let n = levels.nodes.len();
        let children = |i: usize| if i == n { levels.root } else { levels.nodes[i].children };
        let partial: Vec<bool> = (0..=n).map(|i| children(i).more).collect();
        let none_shown: Vec<bool> = (0..=n).map(|i| children(i).taken() == 0).collect();
        // Children come after their parents: one backward pass carries the mark up.
        let mut incomplete = partial.clone();
        for i in (0..n).rev() {
            if incomplete[i] {
                incomplete[levels.nodes[i].parent().unwrap_or(n)] = true;
            }
        }
        Marks { incomplete, partial, none_shown }
    }

    fn of(&self, i: usize) -> Mark {
        Mark {
            partial: self.partial[i],
            none_shown: self.none_shown[i] && self.partial[i],
            incomplete: self.incomplete[i],
        }
    }

    fn root(&self) -> Mark {
        self.of(self.partial.len() - 1)
    }
}

/// The end of a directory node none of whose entries are shown: the depth limit kept it from
/// being read, or maxEntries left them all out. Every directory node has `children` (clients
/// such as replay v2.1's own tests expect it), and `truncated` tells this one from an empty one.
const CUT_OFF: &[u8] = b",\"children\":[],\"truncated\":true}";

/// Writes the tree in one pass over the entries, depth-first: always the JSON (the text of
/// the json format, and the structured content of both), and the indented text when asked for.
struct TreeWriter {
    json: Vec<u8>,
    text: Option<String>,
    depth: Option<usize>,
    /// Per directory whose children array is open (the root first): whether a child has been
    /// written yet, and whether the directory gets `"truncated": true` when it closes.
    open: Vec<(bool, bool)>,
}

impl TreeWriter {
    /// A writer sized for the entries `levels` took, so that its buffers are not copied as
    /// they grow. The JSON is written inside `{"tree":…}`, the structured content, from the
    /// start.
    fn new(text: bool, depth: Option<usize>, levels: &levels::Levels) -> TreeWriter {
        let n = levels.nodes.len();
        let names = levels.names_len();
        // `{"name":…,"type":"directory","children":[…]},` at most, plus a 32nd for escapes.
        let json = 4096 + names + 44 * n;
        let indent: usize = levels.nodes.iter().map(|node| 2 * node.depth()).sum();
        let text_len = 4096 + names + indent + 6 * n;
        let mut writer = TreeWriter {
            json: Vec::with_capacity(json + json / 32),
            text: text.then(|| String::with_capacity(text_len + text_len / 32)),
            depth,
            open: Vec::new(),
        };
        writer.json.extend_from_slice(TREE_OPEN);
        writer
    }

    fn root(&mut self, name: &str, mark: Mark) {
        self.json.extend_from_slice(b"{\"name\":");
        push_json_string(&mut self.json, name);
        self.json.extend_from_slice(b",\"type\":\"directory\"");
        let unlisted = self.depth == Some(0);
        if let Some(text) = &mut self.text {
            push_text_name(text, name);
            text.push('/');
            if unlisted || mark.partial {
                text.push_str(" ...");
            }
        }
        if unlisted || mark.none_shown {
            self.json.extend_from_slice(CUT_OFF);
        } else {
            self.json.extend_from_slice(b",\"children\":[");
            self.open.push((false, mark.incomplete));
        }
    }

    fn entry(&mut self, name: &str, kind: EntryKind, depth: usize, mark: Mark) {
        while self.open.len() > depth {
            self.close();
        }
        if let Some((has_child, _)) = self.open.last_mut() {
            if *has_child {
                self.json.push(b',');
            }
            *has_child = true;
        }
        self.json.extend_from_slice(b"{\"name\":");
        push_json_string(&mut self.json, name);
        let at_limit = self.depth == Some(depth);
        let json = &mut self.json;
        match kind {
            EntryKind::Dir if at_limit || mark.none_shown => {
                json.extend_from_slice(b",\"type\":\"directory\"");
                json.extend_from_slice(CUT_OFF);
            }
            EntryKind::Dir => {
                json.extend_from_slice(b",\"type\":\"directory\",\"children\":[");
                self.open.push((false, mark.incomplete));
            }
            EntryKind::File | EntryKind::Other => json.extend_from_slice(b",\"type\":\"file\"}"),
            EntryKind::Symlink => json.extend_from_slice(b",\"type\":\"symlink\"}"),
        }
        if let Some(text) = &mut self.text {
            text.push('\n');
            for _ in 0..depth {
                text.push_str("  ");
            }
            push_text_name(text, name);
            match kind {
                EntryKind::Dir if at_limit || mark.partial => text.push_str("/ ..."),
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

    /// `{"tree":…}` and the text tree, if asked for.
    fn finish(mut self) -> (Vec<u8>, Option<String>) {
        while !self.open.is_empty() {
            self.close();
        }
        self.json.push(b'}');
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

/// What the structured content's JSON starts with; the tree's own JSON follows, then `}`.
const TREE_OPEN: &[u8] = b"{\"tree\":";

/// The tree's JSON (or, for the text format, the indented tree) as the text, and
/// `{"tree": <the JSON>}` as the structured content, spliced into the reply unparsed: parsing
/// a 45,000-node tree back into values and writing it again doubled the call's time.
fn tree_output(structured: Vec<u8>, text: Option<String>) -> Output {
    // Names are lossily converted and JSON-escaped: the bytes are UTF-8.
    let structured = String::from_utf8(structured)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    let text = text.unwrap_or_else(|| structured[TREE_OPEN.len()..structured.len() - 1].to_owned());
    Output { structured: Some(Structured::Json(structured)), ..Output::text(text) }
}

#[cfg(test)]
mod tests;
