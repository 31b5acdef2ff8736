//! Rendering a search's findings: the grep -C text, the per-file lists, and the structured
//! content's JSON.

use super::*;

/// A line as the output shows it: no `\r`, and cut after `MAX_LINE_CHARS` characters.
pub(super) fn push_shown_line(out: &mut String, line: &str) {
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
pub(super) fn truncation_header(
    found: &Findings,
    unit: &str,
    shown: usize,
    cap: usize,
    also: &str,
) -> String {
    if let Some(bound) = &found.over_budget {
        format!(
            "[results truncated: showing the first {shown} {unit}, as many as fit the reply's {bound} bound; narrow the regex, directory or globs, or lower maxResults{also}]\n"
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
pub(super) fn render(found: &Findings, cap: usize, with_context: bool, skipped: usize) -> String {
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

/// `{"path": …, "line": …, "text": …, "isMatch": …}`.
pub(super) fn write_line(data: &mut JsonObject, path: &str, number: usize, text: &str, is: bool) {
    data.raw("{\"path\":").string(path);
    data.raw(",\"line\":").raw(&number.to_string());
    data.raw(",\"text\":").string(text);
    data.raw(",\"isMatch\":").raw(if is { "true}" } else { "false}" });
}

/// Content mode's `structuredContent` fields, as replay v2.2 names them: the text's lines in
/// its order as `matches` (context lines with `isMatch` false), and the footer's count of
/// matching lines as `count`.
pub(super) fn content_data(data: &mut JsonObject, found: &Findings) {
    let lines = found.files.iter().flat_map(|file| file.lines.iter().map(move |hit| (file, hit)));
    data.field("matches");
    data.array(lines, |data, (file, hit)| {
        write_line(data, &file.path, hit.number, file.text_of(hit), hit.matched);
    });
    let total: usize = found.files.iter().map(|f| f.n).sum();
    data.field("count").raw(&total.to_string());
}

/// The per-file modes' `structuredContent` fields: `files` and their number as `count`, or
/// `counts` and the matches in all as `count`.
pub(super) fn per_file_data(data: &mut JsonObject, found: &Findings, mode: OutputMode) {
    if mode == OutputMode::FilesWithMatches {
        data.field("files");
        data.array(&found.files, |data, f| {
            data.string(&f.path);
        });
        data.field("count").raw(&found.files.len().to_string());
        return;
    }
    data.field("counts");
    data.array(&found.files, |data, f| {
        data.raw("{\"path\":").string(&f.path).raw(",\"count\":").raw(&f.n.to_string()).raw("}");
    });
    let total: usize = found.files.iter().map(|f| f.n).sum();
    data.field("count").raw(&total.to_string());
}

/// files_with_matches: one path per line; count: `path:N` per file. `[N files]` or
/// `[N matches in M files]` closes the list.
pub(super) fn render_per_file(
    found: &Findings,
    mode: OutputMode,
    cap: usize,
    skipped: usize,
) -> String {
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
