//! get_file_info and list_allowed_directories.

use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::ToolError;
use crate::fs::digest::sha256_of;
use crate::fs::read::open_regular;
use crate::policy::Access;
use crate::tools::time::iso8601_utc;
use crate::tools::{Ctx, Output, Structured};

#[derive(Deserialize)]
pub struct InfoArgs {
    path: String,
}

pub fn get_file_info(ctx: &Ctx, args: InfoArgs) -> Result<Output, ToolError> {
    let resolved = ctx.policy.resolve_read(&args.path)?;
    let meta = resolved.metadata().map_err(|e| ToolError::io("stat", &resolved.shown, e))?;
    let kind = if meta.is_dir() {
        "directory"
    } else if meta.is_file() {
        "file"
    } else {
        "other"
    };
    let modified = iso8601_utc(meta.mtime);
    let permissions = format!("{:03o}", meta.mode & 0o7777);
    let mut text = format!(
        "type: {kind}\nsize: {}\nmodified: {modified}\npermissions: {permissions}",
        meta.size
    );
    let mut structured = json!({
        "path": resolved.shown.to_string_lossy(),
        "type": kind,
        "size": meta.size,
        "modified": modified,
        "permissions": permissions,
    });
    // A regular file's sha256, for a writer's `expectedSha256`: read as a stream, so a big
    // file costs time (about 2 s a GiB) but no memory.
    if meta.is_file() {
        let (file, _) = open_regular(&resolved)?;
        let sha256 = sha256_of(file).map_err(|e| ToolError::io("hash", &resolved.shown, e))?;
        text.push_str(&format!("\nsha256: {sha256}"));
        structured["sha256"] = json!(sha256);
    }
    Ok(Output { structured: Some(Structured::Value(structured)), ..Output::text(text) })
}

pub fn list_allowed_directories(ctx: &Ctx) -> Output {
    let roots = ctx.policy.roots();
    let note = ctx.settings.confinement.note(ctx.settings.sandbox_note.as_deref());
    let note = note.as_deref();
    let mut structured = json!({
        "directories": roots
            .iter()
            .map(|r| json!({"path": r.path.to_string_lossy(), "writable": r.access == Access::Write}))
            .collect::<Vec<Value>>(),
    });
    if let Some(note) = note {
        structured["sandboxNote"] = json!(note);
    }
    let structured = Some(Structured::Value(structured));
    if roots.is_empty() {
        let text = match note {
            Some(note) => format!("(no allowed directories)\n{note}"),
            None => "(no allowed directories)".to_string(),
        };
        return Output { structured, ..Output::text(text) };
    }
    let lines: Vec<String> = roots
        .iter()
        .map(|r| {
            let access = match r.access {
                Access::Write => "read-write",
                Access::Read => "read-only",
            };
            format!("{} ({access})", r.path.display())
        })
        .collect();
    let mut text = lines.join("\n");
    if let Some(note) = note {
        text.push('\n');
        text.push_str(note);
    }
    Output { structured, ..Output::text(text) }
}
