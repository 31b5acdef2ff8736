//! create_directory and list_directory; directory_tree is in `tree`.
//!
//! list_directory reads one directory through its handle; sizes and times, when asked for,
//! come from `fstatat` on that handle, never following a link. directory_tree collects the walk
//! (`crate::walk`), keeps the shallowest entries when `maxEntries` cuts it short, goes at most
//! `MAX_TREE_LEVELS` (50) levels deep, since common JSON parsers refuse deeper nesting, and writes
//! the JSON (and, for `format: "text"`, the indented tree) in one pass over the sorted entries.

use std::os::fd::AsFd;

use serde::Deserialize;

use crate::error::ToolError;
use crate::fs::atomic::TEMP_PREFIX;
use crate::policy::confined::{self, Kind};
use crate::policy::ResolvedPath;
use crate::reply_size::{escaped_len, Budget, JsonObject};
use crate::tools::time::iso8601_utc;
use crate::tools::{Ctx, Output, Structured};
use crate::walk::{self, Hiding};

mod listing;
pub mod tree;

#[cfg(test)]
mod tests;

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
fn read_listing(
    dir: &ResolvedPath,
    order: SortBy,
    stat: bool,
    budget: Budget,
) -> Result<(Listing, u64), ToolError> {
    let failed = |e| ToolError::io("list directory", &dir.shown, e);
    let handle = dir.open_dir().map_err(failed)?;
    let mut listing = Listing::new(order, budget.left());
    let hiding = Hiding::new(dir);
    confined::for_each_entry(handle.as_fd(), |name, kind| {
        let bytes = name.as_encoded_bytes();
        if bytes.starts_with(TEMP_PREFIX.as_bytes()) {
            // A write in progress (or one a crash left behind): not the user's file.
            return;
        }
        if hiding.hides(&dir.real.join(name), true) {
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
    Ok((listing.finish(), hiding.denied.into_inner()))
}

pub fn list_directory(ctx: &Ctx, args: ListArgs) -> Result<Output, ToolError> {
    let resolved = ctx.policy.resolve_read(&args.path)?;
    let show_sizes = args.with_sizes || args.sort_by == SortBy::Size;
    let show_times = args.sort_by == SortBy::Modified;
    let budget = ctx.settings.budget();
    let (listing, denied) =
        read_listing(&resolved, args.sort_by, show_sizes || show_times, budget)?;
    let path = resolved.shown.display().to_string();
    if listing.len() == 0 && listing.left_out.count == 0 {
        let mut data = JsonObject::default();
        data.field("entries").raw("[]");
        data.field("path").string(&path);
        let text = match walk::hidden_note(denied) {
            Some(note) => format!("(empty directory)\n{note}"),
            None => "(empty directory)".to_string(),
        };
        return Ok(Output {
            structured: Some(Structured::Json(data.finish())),
            ..Output::text(text)
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
    let mut data =
        JsonObject::with_capacity(escaped + 48 * fit + 2 * details + escaped_len(&path) + 64);
    let shown = Shown { sizes: show_sizes, times: show_times };
    data.field("entries");
    data.array(listing.entries(), |data, held| {
        write_entry(&mut text, data, &held.key, &listing.name(held), shown);
    });
    data.field("path").string(&path);
    if listing.left_out.count > 0 {
        text.push_str(&format!(
            "[{} more entries not shown: the reply reached its {} bound; find what you need \
             with glob_search or search_files]\n",
            listing.left_out.count,
            budget.name()
        ));
    }
    if let Some(note) = walk::hidden_note(denied) {
        text.push_str(&note);
        text.push('\n');
    }
    if show_sizes {
        text.push_str(&totals(&listing));
    } else {
        text.pop();
    }
    // Names are lossily converted: only UTF-8 went in.
    Ok(Output { structured: Some(Structured::Json(data.finish())), ..Output::text(text) })
}

/// What a listing's text shows of each entry besides its name.
#[derive(Clone, Copy)]
struct Shown {
    sizes: bool,
    times: bool,
}

/// One entry of a listing: its line of the text, and its object of the structured content
/// (what `Listing` costs it at, at most).
fn write_entry(text: &mut String, data: &mut JsonObject, entry: &Listed, name: &str, shown: Shown) {
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
    data.raw("{");
    if let Some(modified) = entry.modified() {
        data.raw("\"modified\":").string(&iso8601_utc(modified)).raw(",");
    }
    data.raw("\"name\":").string(name);
    if let Some(size) = entry.size() {
        data.raw(&format!(",\"size\":{size}"));
    }
    data.raw(",\"type\":\"").raw(kind).raw("\"}");
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
