//! get_file_info and list_allowed_directories.

use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::ToolError;
use crate::policy::Access;
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
    let text = format!(
        "type: {kind}\nsize: {}\nmodified: {modified}\npermissions: {permissions}",
        meta.size
    );
    let structured = json!({
        "path": resolved.shown.to_string_lossy(),
        "type": kind,
        "size": meta.size,
        "modified": modified,
        "permissions": permissions,
    });
    Ok(Output { structured: Some(Structured::Value(structured)), ..Output::text(text) })
}

pub fn list_allowed_directories(ctx: &Ctx) -> Output {
    let roots = ctx.policy.roots();
    let note = ctx.settings.sandbox_note.as_deref();
    let mut structured = json!({
        "directories": roots
            .iter()
            .map(|r| {
                let access = match r.access {
                    Access::Write => "write",
                    Access::Read => "read",
                };
                json!({"path": r.path.to_string_lossy(), "access": access})
            })
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

/// Seconds since the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ` (proleptic Gregorian, UTC).
pub(super) fn iso8601_utc(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// Howard Hinnant's `civil_from_days`: days since 1970-01-01 → (year, month, day).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    #[track_caller]
    fn check(secs: i64, expect: &str) {
        assert_eq!(super::iso8601_utc(secs), expect);
    }

    #[test]
    fn iso8601() {
        check(0, "1970-01-01T00:00:00Z");
        check(951_782_400, "2000-02-29T00:00:00Z");
        check(1_795_316_354, "2026-11-22T02:59:14Z");
        check(-1, "1969-12-31T23:59:59Z");
        check(4_102_444_800, "2100-01-01T00:00:00Z");
    }
}
