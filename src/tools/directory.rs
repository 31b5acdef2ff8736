//! create_directory, list_directory and directory_tree.

use std::fs;
use std::io::Write;
use std::path::Path;

use serde::Deserialize;

use crate::error::ToolError;
use crate::tools::write::TEMP_PREFIX;
use crate::tools::{Ctx, Output};

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
    fs::create_dir_all(&resolved.real).map_err(|e| {
        if resolved.real.exists() && !resolved.real.is_dir() {
            ToolError::AlreadyExists {
                path: resolved.shown.clone(),
            }
        } else {
            ToolError::io("create directory", &resolved.shown, e)
        }
    })?;
    Ok(Output::text(format!(
        "Created directory {}",
        resolved.shown.display()
    )))
}

/// What an entry is, without following symlinks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    File,
    Dir,
    Link,
}

impl Kind {
    fn of(file_type: fs::FileType) -> Kind {
        if file_type.is_symlink() {
            Kind::Link
        } else if file_type.is_dir() {
            Kind::Dir
        } else {
            Kind::File
        }
    }
}

/// The entries of one directory, sorted by name (byte order, as `ls` in the C locale).
fn sorted_entries(dir: &Path, shown: &Path) -> Result<Vec<(String, Kind)>, ToolError> {
    let read = fs::read_dir(dir).map_err(|e| ToolError::io("list directory", shown, e))?;
    let mut entries = Vec::new();
    for entry in read {
        let entry = entry.map_err(|e| ToolError::io("list directory", shown, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with(TEMP_PREFIX) {
            // A write in progress (or one a crash left behind): not the user's file.
            continue;
        }
        let kind = match entry.file_type() {
            Ok(t) => Kind::of(t),
            Err(_) => Kind::File,
        };
        entries.push((name, kind));
    }
    entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    Ok(entries)
}

pub fn list_directory(ctx: &Ctx, args: PathArgs) -> Result<Output, ToolError> {
    let resolved = ctx.policy.resolve_read(&args.path)?;
    let entries = sorted_entries(&resolved.real, &resolved.shown)?;
    if entries.is_empty() {
        return Ok(Output::text("(empty directory)"));
    }
    let mut text = String::new();
    for (name, kind) in entries {
        let tag = match kind {
            Kind::File => "[FILE] ",
            Kind::Dir => "[DIR]  ",
            Kind::Link => "[LINK] ",
        };
        text.push_str(tag);
        text.push_str(&name);
        text.push('\n');
    }
    text.pop();
    Ok(Output::text(text))
}

/// Compact JSON `{name, type, children}`. Symlinks are leaves of type `symlink`, never followed,
/// so the walk cannot leave the allowed set or loop. A directory at the depth limit has no
/// `children` key; `children: []` means it is empty.
pub fn directory_tree(ctx: &Ctx, args: TreeArgs) -> Result<Output, ToolError> {
    let resolved = ctx.policy.resolve_read(&args.path)?;
    let meta = fs::metadata(&resolved.real)
        .map_err(|e| ToolError::io("read directory", &resolved.shown, e))?;
    if !meta.is_dir() {
        return Err(ToolError::NotADirectory {
            path: resolved.shown,
        });
    }
    let name = match resolved.shown.file_name() {
        Some(name) => name.to_string_lossy().into_owned(),
        None => resolved.shown.display().to_string(),
    };
    let mut out = Vec::with_capacity(4096);
    write_dir(&mut out, &name, &resolved.real, &resolved.shown, args.depth)?;
    // The writer only ever produces UTF-8: names are lossily converted and JSON-escaped.
    Ok(Output::text(String::from_utf8_lossy(&out).into_owned()))
}

/// Writes one directory node. `depth` is how many more levels may be listed (`None`: all).
fn write_dir(
    out: &mut Vec<u8>,
    name: &str,
    real: &Path,
    shown: &Path,
    depth: Option<usize>,
) -> Result<(), ToolError> {
    out.extend_from_slice(b"{\"name\":");
    write_json_string(out, name);
    out.extend_from_slice(b",\"type\":\"directory\"");
    if depth == Some(0) {
        out.push(b'}');
        return Ok(());
    }
    out.extend_from_slice(b",\"children\":[");
    let entries = match sorted_entries(real, shown) {
        Ok(entries) => entries,
        // Below the root, an unreadable directory is shown empty rather than failing the tree.
        Err(_) if real != shown => Vec::new(),
        Err(e) => return Err(e),
    };
    for (i, (child, kind)) in entries.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        match kind {
            Kind::Dir => {
                let next = depth.map(|d| d - 1);
                write_dir(out, child, &real.join(child), &real.join(child), next)?;
            }
            Kind::File | Kind::Link => {
                out.extend_from_slice(b"{\"name\":");
                write_json_string(out, child);
                let tag: &[u8] = if *kind == Kind::Link {
                    b",\"type\":\"symlink\"}"
                } else {
                    b",\"type\":\"file\"}"
                };
                out.extend_from_slice(tag);
            }
        }
    }
    out.extend_from_slice(b"]}");
    Ok(())
}

fn write_json_string(out: &mut Vec<u8>, s: &str) {
    // serde_json's escaping, without building a Value per node.
    let _ = serde_json::to_writer(&mut *out, s);
    let _ = out.flush();
}
