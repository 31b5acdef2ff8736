//! directory_tree: the breadth-first walk that keeps the shallowest entries a reply can show,
//! then one depth-first pass that writes them (`writer`).

use std::sync::atomic::{AtomicU64, Ordering};

use serde::Deserialize;

use crate::error::ToolError;
use crate::policy::confined::Kind;
use crate::policy::ResolvedPath;
use crate::progress::Tally;
use crate::reply_size::{escaped_text_len, shown_escaped_len, Budget};
use crate::tools::{Content, Ctx, Output};
use crate::walk::glob::Exclude;
use crate::walk::{self, levels, WalkOptions};

mod writer;

use writer::{tree_output, Marks, TreeWriter};

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
    let root_name = escaped_text_len(name.as_bytes());
    let mut keep = Keep::new(args.max_entries, text_format, root_name, ctx.settings.budget());
    let levels = levels::breadth_first(&resolved, &options, keep.most(), |offer| keep.take(offer))
        .map_err(|e| ToolError::io("read directory", &resolved.shown, e))?;
    if ctx.cancel.is_cancelled() {
        return Err(ToolError::Cancelled);
    }
    let marks = Marks::new(&levels);
    let mut tree = TreeWriter::new(text_format, depth, &levels);
    write_depth_first(&mut tree, &levels, &marks, &name);
    // A tree cut by the reply's bound says of how many entries. The breadth-first walk stopped
    // at the first entry not shown, so it does not know; a second walk counts them, holding
    // nothing (the million-file tree: about as long as `find`, and no memory). A tree cut by
    // maxEntries is not counted: its cost is to follow the cap, whatever lies below.
    let total = match keep.cut {
        Some(Bound::Reply) => Some(count_entries(ctx, &resolved, &options)?),
        _ => None,
    };
    let mut notes = Vec::new();
    let bound = keep.budget.name();
    notes.extend(keep.cut.map(|cut| cut_note(cut, &bound, args.format, levels.nodes.len(), total)));
    let at_the_limit =
        |node: &levels::Node| node.depth() == MAX_TREE_LEVELS && node.kind == Kind::Dir;
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
    Ok(with_notes(tree_output(json, text), args.format, &notes))
}

/// Writes the kept entries depth-first over the breadth-first levels: each directory's
/// children in name order.
fn write_depth_first(tree: &mut TreeWriter, levels: &levels::Levels, marks: &Marks, root: &str) {
    tree.root(root, marks.root());
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
        if node.kind == Kind::Dir {
            stack.push(levels.children(Some(i)));
        }
    }
}

/// Every entry the walk `options` allows below `root`, counted as the walk goes.
fn count_entries(
    ctx: &Ctx,
    root: &ResolvedPath,
    options: &WalkOptions<'_>,
) -> Result<u64, ToolError> {
    let count = AtomicU64::new(0);
    let count_ref = &count;
    walk::visit(root, options, || {
        move |_| {
            count_ref.fetch_add(1, Ordering::Relaxed);
        }
    })
    .map_err(|e| ToolError::io("read directory", &root.shown, e))?;
    if ctx.cancel.is_cancelled() {
        return Err(ToolError::Cancelled);
    }
    Ok(count.into_inner())
}

/// The note under a tree cut short: `shown` entries of `total` (when counted), and how the
/// format marks the directories with entries not shown.
fn cut_note(
    cut: Bound,
    bound: &str,
    format: TreeFormat,
    shown: usize,
    total: Option<u64>,
) -> String {
    let marks = match format {
        TreeFormat::Json => "directories with \"truncated\": true have entries not shown",
        TreeFormat::Text => "a directory marked ... has entries not shown",
    };
    let n = shown;
    let total = total.unwrap_or_default().max(n as u64);
    match cut {
        Bound::Reply => format!(
            "[truncated: {n} of {total} entries shown (all that fit the reply's {bound} bound), \
             the shallowest first; {marks}; call directory_tree on a subdirectory, or with a \
             smaller depth or maxEntries]"
        ),
        Bound::MaxEntries => {
            format!("[truncated: {n} entries shown (maxEntries), the shallowest first; {marks}]")
        }
    }
}

/// The reply with its notes: after the JSON as an item of their own (the first item stays the
/// JSON alone), or under the text tree.
fn with_notes(mut output: Output, format: TreeFormat, notes: &[String]) -> Output {
    if notes.is_empty() {
        return output;
    }
    let note = notes.join("\n");
    match format {
        TreeFormat::Json => output.content.push(Content::Text(note)),
        TreeFormat::Text => {
            if let Some(Content::Text(text)) = output.content.first_mut() {
                text.push('\n');
                text.push_str(&note);
            }
        }
    }
    output
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
    fn new(
        max_entries: Option<usize>,
        text_format: bool,
        root_name: usize,
        budget: Budget,
    ) -> Keep {
        let mut budget = budget;
        let no_room = !budget.take(3 * root_name + 256);
        Keep { max_entries, text_format, taken: 0, budget, no_room, cut: None }
    }

    fn cost(&self, offer: &levels::Offer<'_>) -> usize {
        // As shown: a name not UTF-8 is shown lossily, each invalid sequence as U+FFFD.
        let name = shown_escaped_len(offer.name);
        // `{"name":"…","type":"directory","children":[…]},`, quotes doubled in the text.
        let json = name + 48;
        if self.budget.tokens().is_some() {
            // A bound in tokens counts the text only; the structured content is the same cut.
            return if self.text_format { name + 2 * offer.depth + 4 } else { 2 * json };
        }
        if self.text_format {
            json + 2 * name + 2 * offer.depth + 4
        } else {
            json + 2 * name + 96
        }
    }

    /// The most that could be shown: every entry costs at least `Capacity::weight` of its name
    /// (`cost` is never less).
    fn most(&self) -> levels::Capacity {
        let bytes = if self.no_room { 0 } else { self.budget.left() };
        let fit = bytes / levels::Capacity::ENTRY_BYTES;
        levels::Capacity { entries: self.max_entries.map_or(fit, |max| max.min(fit)), bytes }
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
