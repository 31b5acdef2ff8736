//! create_directory, list_directory and directory_tree.

use std::os::fd::AsFd;

use serde::Deserialize;
use serde_json::json;

use crate::error::ToolError;
use crate::policy::confined::{self, Kind};
use crate::policy::ResolvedPath;
use crate::tools::write::TEMP_PREFIX;
use crate::tools::{Ctx, Output};
use crate::walk::{self, EntryKind, Tally, WalkOptions};

#[derive(Deserialize)]
pub struct PathArgs {
    path: String,
}

#[derive(Deserialize)]
pub struct TreeArgs {
    path: String,
    depth: Option<usize>,
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

/// The entries of one directory, sorted by name (byte order, as `ls` in the C locale).
fn sorted_entries(dir: &ResolvedPath) -> Result<Vec<(String, Kind)>, ToolError> {
    let failed = |e| ToolError::io("list directory", &dir.shown, e);
    let handle = dir.open_dir().map_err(failed)?;
    let mut entries = Vec::new();
    for entry in confined::read_entries(handle.as_fd()).map_err(failed)? {
        let name = entry.name.to_string_lossy().into_owned();
        if name.starts_with(TEMP_PREFIX) {
            // A write in progress (or one a crash left behind): not the user's file.
            continue;
        }
        entries.push((name, entry.kind));
    }
    entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    Ok(entries)
}

pub fn list_directory(ctx: &Ctx, args: PathArgs) -> Result<Output, ToolError> {
    let resolved = ctx.policy.resolve_read(&args.path)?;
    let entries = sorted_entries(&resolved)?;
    let path = resolved.shown.display().to_string();
    if entries.is_empty() {
        let structured = json!({"path": path, "entries": []});
        return Ok(Output { structured: Some(structured), ..Output::text("(empty directory)") });
    }
    let mut text = String::new();
    let mut data = Vec::with_capacity(entries.len());
    for (name, kind) in entries {
        let (tag, kind) = match kind {
            Kind::File | Kind::Other => ("[FILE] ", "file"),
            Kind::Dir => ("[DIR]  ", "directory"),
            Kind::Symlink => ("[LINK] ", "symlink"),
        };
        text.push_str(tag);
        text.push_str(&name);
        text.push('\n');
        data.push(json!({"name": name, "type": kind}));
    }
    text.pop();
    let structured = json!({"path": path, "entries": data});
    Ok(Output { structured: Some(structured), ..Output::text(text) })
}

/// Compact JSON `{name, type, children}`. Symlinks are leaves of type `symlink`, never followed,
/// so the walk cannot leave the allowed set or loop. A directory at the depth limit has no
/// `children` key; `children: []` means it is empty.
pub fn directory_tree(ctx: &Ctx, args: TreeArgs) -> Result<Output, ToolError> {
    let resolved = ctx.policy.resolve_read(&args.path)?;
    // Fails for a missing, unreadable or non-directory root; below it, the walk skips what it
    // cannot read.
    let name = match resolved.shown.file_name() {
        Some(name) => name.to_string_lossy().into_owned(),
        None => resolved.shown.display().to_string(),
    };
    let tally = Tally::new(ctx.progress, |n| format!("walked {n} entries"));
    let options = WalkOptions {
        max_depth: args.depth,
        cancel: Some(ctx.cancel),
        tally: Some(&tally),
        ..WalkOptions::default()
    };
    let entries = walk::entries(&resolved, &options)
        .map_err(|e| ToolError::io("read directory", &resolved.shown, e))?;
    let mut out = Vec::with_capacity(4096);
    out.extend_from_slice(b"{\"name\":");
    write_json_string(&mut out, &name);
    out.extend_from_slice(b",\"type\":\"directory\"");
    if args.depth == Some(0) {
        out.push(b'}');
        return Ok(tree_output(out));
    }
    out.extend_from_slice(b",\"children\":[");
    // The entries come depth-first with siblings sorted, so the tree is written in one pass:
    // `open` holds, per open directory, whether it has a child written yet.
    let mut open: Vec<bool> = vec![false];
    for entry in entries {
        while open.len() > entry.depth {
            open.pop();
            out.extend_from_slice(b"]}");
        }
        if let Some(has_child) = open.last_mut() {
            if *has_child {
                out.push(b',');
            }
            *has_child = true;
        }
        out.extend_from_slice(b"{\"name\":");
        let name = entry.rel().file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
        write_json_string(&mut out, &name);
        match entry.kind {
            EntryKind::Dir if args.depth == Some(entry.depth) => {
                out.extend_from_slice(b",\"type\":\"directory\"}")
            }
            EntryKind::Dir => {
                out.extend_from_slice(b",\"type\":\"directory\",\"children\":[");
                open.push(false);
            }
            EntryKind::File => out.extend_from_slice(b",\"type\":\"file\"}"),
            EntryKind::Symlink => out.extend_from_slice(b",\"type\":\"symlink\"}"),
        }
    }
    for _ in 0..open.len() {
        out.extend_from_slice(b"]}");
    }
    Ok(tree_output(out))
}

/// The tree's JSON as the text, and `{"tree": <the same JSON>}` as the structured content,
/// spliced into the reply unparsed: parsing a 45,000-node tree back into values and writing it
/// again doubled the call's time.
fn tree_output(json: Vec<u8>) -> Output {
    // Names are lossily converted and JSON-escaped: the bytes are UTF-8.
    let text = String::from_utf8(json)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    let structured_json = format!("{{\"tree\":{text}}}");
    Output { structured_json: Some(structured_json), ..Output::text(text) }
}

fn write_json_string(out: &mut Vec<u8>, s: &str) {
    // serde_json's escaping, without building a Value per node.
    let _ = serde_json::to_writer(&mut *out, s);
}
