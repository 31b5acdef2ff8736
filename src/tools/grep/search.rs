//! The streaming search: files read on the walker threads, matched by the exact or the
//! byte-level regex, and the first hits in path order kept (`Kept`).

use super::*;

/// Walks every scope and searches each candidate file as the walker finds it, on all cores,
/// so reading overlaps walking (as ripgrep does). Hits are kept in path order, bounded: once
/// the kept files hold more than `cap` (matching lines in content mode, files otherwise), the
/// files sorting last are dropped, and a file sorting after all kept ones is not even read.
/// Symlinks are never followed, so nothing outside the allowed set is opened.
pub(super) fn search(
    regex: &Matchers<'_>,
    scopes: &[SearchRoot],
    options: &WalkOptions<'_>,
    tally: &Tally<'_>,
    limits: &Limits,
) -> Result<Findings, ToolError> {
    let Limits { cap, mode, .. } = *limits;
    let kept = Mutex::new(Kept { cap, mode, files: BTreeMap::new(), total: 0, truncated: false });
    // Scopes can overlap only when there are several of them.
    let seen: Mutex<HashSet<PathBuf>> = Mutex::new(HashSet::new());
    let over_cap = AtomicBool::new(false);
    let candidates = AtomicBool::new(false);
    let mut too_long = walk::Summary::default();
    for scope in scopes {
        if options.cancel.is_some_and(|c| c.is_cancelled()) {
            break;
        }
        let set = if scope.globs.is_empty() {
            None
        } else {
            Some(glob::glob_set("globs", &scope.globs)?)
        };
        let searched = walk::visit(&scope.root, options, || {
            let mut buf = Vec::new();
            let (kept, seen, set, over_cap) = (&kept, &seen, &set, &over_cap);
            let candidates = &candidates;
            move |entry: walk::Entry| {
                if entry.kind != Kind::File
                    || set.as_ref().is_some_and(|s| !s.is_match(entry.rel()))
                {
                    return;
                }
                candidates.store(true, Ordering::Relaxed);
                let key = || ByPath(scope.root.shown.join(entry.rel()));
                // Until the cap is reached no file is skipped: no key to build, no lock to take.
                if over_cap.load(Ordering::Relaxed) && lock(kept).skips(&key()) {
                    return;
                }
                if scopes.len() > 1
                    && !seen.lock().unwrap_or_else(|e| e.into_inner()).insert(key().0)
                {
                    return;
                }
                tally.add_one();
                let found = search_file(regex, scope, &entry, &mut buf, limits);
                // One huge file must not pin its buffer for the rest of the search.
                if buf.capacity() > KEPT_BUFFER {
                    buf = Vec::new();
                }
                if let Some(hits) = found {
                    let mut kept = lock(kept);
                    kept.add(key(), hits);
                    if kept.total > kept.cap {
                        over_cap.store(true, Ordering::Relaxed);
                    }
                }
            }
        });
        let summary = searched.map_err(|e| ToolError::io("search", &scope.root.shown, e))?;
        too_long.add(summary);
    }
    let mut kept = kept.into_inner().unwrap_or_else(|e| e.into_inner());
    let mut truncated = kept.truncated;
    let mut files = Vec::new();
    let mut shown = 0;
    for (_, mut hits) in std::mem::take(&mut kept.files) {
        if shown + kept.weight(&hits) > cap {
            hits = cut(hits, cap - shown);
            truncated = true;
        }
        shown += kept.weight(&hits);
        if hits.n > 0 {
            files.push(hits);
        }
        if shown >= cap {
            break;
        }
    }
    let candidates = candidates.into_inner();
    Ok(Findings { files, truncated, over_budget: None, too_long, candidates })
}

pub(super) fn lock(kept: &Mutex<Kept>) -> std::sync::MutexGuard<'_, Kept> {
    kept.lock().unwrap_or_else(|e| e.into_inner())
}

/// A path ordered depth-first with siblings by name, like every listing replay returns.
#[derive(PartialEq, Eq)]
pub(super) struct ByPath(PathBuf);

impl Ord for ByPath {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        walk::path_order(&self.0, &other.0)
    }
}

impl PartialOrd for ByPath {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// The files with hits that can still be among the first `cap` results.
pub(super) struct Kept {
    cap: usize,
    mode: OutputMode,
    files: BTreeMap<ByPath, FileHits>,
    /// The weight of `files`.
    total: usize,
    /// More than `cap` were found in all: the output is cut.
    truncated: bool,
}

impl Kept {
    pub(super) fn weight(&self, hits: &FileHits) -> usize {
        if self.mode == OutputMode::Content {
            hits.n
        } else {
            1
        }
    }

    pub(super) fn add(&mut self, key: ByPath, hits: FileHits) {
        self.total += self.weight(&hits);
        self.files.insert(key, hits);
        if self.total > self.cap {
            self.truncated = true;
        }
        // Drop the last file while the others still hold more than `cap`: it can no longer
        // be among the first `cap`, and one past the cap is enough to know the output is cut.
        while let Some((_, last)) = self.files.last_key_value() {
            let weight = self.weight(last);
            if self.total - weight <= self.cap {
                break;
            }
            self.total -= weight;
            self.files.pop_last();
        }
    }

    /// A file sorting after every kept one, once they hold more than `cap`, cannot show.
    pub(super) fn skips(&self, key: &ByPath) -> bool {
        self.total > self.cap && self.files.last_key_value().is_some_and(|(last, _)| key > last)
    }
}

/// Keeps the first `keep` matching lines of a file's hits, with the context before them and
/// the context after the last one, but not the context that leads into the next.
pub(super) fn cut(mut hits: FileHits, keep: usize) -> FileHits {
    let mut n = 0;
    let mut last_kept: Option<usize> = None;
    let mut end = hits.lines.len();
    for (idx, line) in hits.lines.iter().enumerate() {
        if let Some(last) = last_kept.filter(|_| n == keep) {
            if line.matched || line.number > last + hits.context {
                end = idx;
                break;
            }
        }
        if line.matched {
            n += 1;
            last_kept = Some(line.number);
        }
    }
    hits.lines.truncate(end);
    hits.text.truncate(hits.lines.last().map_or(0, |line| line.end));
    FileHits { n, ..hits }
}

pub(super) fn search_file(
    regex: &Matchers<'_>,
    scope: &SearchRoot,
    entry: &walk::Entry,
    buf: &mut Vec<u8>,
    limits: &Limits,
) -> Option<FileHits> {
    let Limits { cap, context, mode } = *limits;
    buf.clear();
    let mut handle = entry.open().ok()?;
    let mut probe = [0u8; BINARY_PROBE];
    let n = read_full(&mut handle, &mut probe).ok()?;
    let utf16 = probe[..n].starts_with(b"\xFF\xFE") || probe[..n].starts_with(b"\xFE\xFF");
    if !utf16 && memchr::memchr(0, &probe[..n]).is_some() {
        return None;
    }
    buf.extend_from_slice(&probe[..n]);
    if n == BINARY_PROBE {
        handle.take(MAX_READ_BYTES).read_to_end(buf).ok()?;
    }
    // UTF-16 with a BOM is searched as its text, in UTF-8; binary after all if it does not
    // decode (`encoding::decode`).
    if utf16 {
        let text = crate::encoding::decode(buf)?.text;
        buf.clear();
        buf.extend_from_slice(text.as_bytes());
    }
    let lines = matching_lines(regex, buf);
    if lines.is_empty() {
        return None;
    }
    let path = scope.root.shown.join(entry.rel()).to_string_lossy().into_owned();
    let mut hits =
        FileHits { path, lines: Vec::new(), text: String::new(), n: lines.len(), context };
    if mode == OutputMode::Content {
        // No more than `cap` matching lines of one file can show.
        add_hit_lines(&mut hits, buf, &lines, cap);
    }
    Some(hits)
}

pub(super) fn read_full(file: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// 0-based numbers of the lines a match touches, ascending. A match spanning lines marks each
/// of them; the empty match after a final newline is not a line.
pub(super) fn matching_lines(regex: &Matchers<'_>, bytes: &[u8]) -> Vec<usize> {
    // CRLF lines are matched as if they ended in `\n` (ripgrep's --crlf): JS's multiline
    // `^`/`$` also meet between a `\r` and its `\n`, so `^\s*$` would start there and mark
    // the line before a blank one. Line numbers are unchanged, and the fast engine applies.
    if memchr::memmem::find(bytes, b"\r\n").is_some() {
        let lf = crlf_to_lf(bytes);
        return matching_lines_of(regex, &lf);
    }
    matching_lines_of(regex, bytes)
}

pub(super) fn crlf_to_lf(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut last = 0;
    for at in memchr::memmem::find_iter(bytes, b"\r\n") {
        out.extend_from_slice(&bytes[last..at]);
        last = at + 1;
    }
    out.extend_from_slice(&bytes[last..]);
    out
}

pub(super) fn matching_lines_of(regex: &Matchers<'_>, bytes: &[u8]) -> Vec<usize> {
    let mut spans: Vec<(usize, usize)> = Vec::new();
    match &regex.fast {
        // Same expectations as the exact engine, far cheaper: see `FastRegex`.
        Some(fast) if fast.applies_to(bytes) => {
            spans.extend(fast.regex().find_iter(bytes).map(|m| (m.start(), m.end())));
        }
        _ => {
            let text = String::from_utf8_lossy(bytes);
            for (i, m) in regex.exact.regex().find_iter(&text).enumerate() {
                if i % 1024 == 1023 && regex.cancel.is_cancelled() {
                    break;
                }
                match m {
                    Ok(m) => spans.push((m.start(), m.end())),
                    Err(_) => {
                        regex.gave_up.fetch_add(1, Ordering::Relaxed);
                        break;
                    }
                }
            }
            // Lossy decoding changes byte offsets only after invalid UTF-8; line numbers are
            // counted on the decoded text, where every `\n` is where it was.
            if let std::borrow::Cow::Owned(decoded) = text {
                return lines_of(decoded.as_bytes(), &spans);
            }
        }
    }
    lines_of(bytes, &spans)
}

/// Turns match byte spans into the sorted, distinct line numbers they touch.
pub(super) fn lines_of(bytes: &[u8], spans: &[(usize, usize)]) -> Vec<usize> {
    let mut lines: Vec<usize> = Vec::new();
    let mut line = 0;
    let mut pos = 0;
    for &(start, end) in spans {
        if start == bytes.len() && start > 0 && bytes.ends_with(b"\n") {
            break;
        }
        line += count_newlines(&bytes[pos..start]);
        pos = start;
        let last_byte = if end > start { end - 1 } else { start };
        let end_line = line + count_newlines(&bytes[start..last_byte]);
        let from = match lines.last() {
            Some(&prev) if prev >= line => prev + 1,
            _ => line,
        };
        lines.extend(from..=end_line);
    }
    lines
}

pub(super) fn count_newlines(bytes: &[u8]) -> usize {
    memchr::memchr_iter(b'\n', bytes).count()
}

/// The lines grep -C shows of one file: its first `limit` matching lines (0-based numbers in
/// `lines`) and up to `context` lines either side of each, each line once.
pub(super) fn add_hit_lines(hits: &mut FileHits, bytes: &[u8], lines: &[usize], limit: usize) {
    let context = hits.context;
    let mut starts: Vec<usize> = vec![0];
    starts.extend(memchr::memchr_iter(b'\n', bytes).map(|i| i + 1));
    if bytes.ends_with(b"\n") {
        starts.pop();
    }
    let last_line = starts.len() - 1;
    // The last line ends before the final newline, if there is one.
    let text_end = if bytes.ends_with(b"\n") { bytes.len() - 1 } else { bytes.len() };
    let line_bytes = |n: usize| {
        let end = starts.get(n + 1).map_or(text_end, |&next| next - 1);
        &bytes[starts[n]..end.max(starts[n])]
    };
    let matched: HashSet<usize> = lines.iter().copied().collect();
    let mut printed_until: Option<usize> = None;
    for &line in lines.iter().take(limit) {
        let from = line.saturating_sub(context);
        let to = (line + context).min(last_line);
        for n in from..=to {
            if printed_until.is_some_and(|done| n <= done) {
                continue;
            }
            let start = hits.text.len();
            push_shown_line(&mut hits.text, &String::from_utf8_lossy(line_bytes(n)));
            let end = hits.text.len();
            hits.lines.push(HitLine { number: n + 1, matched: matched.contains(&n), start, end });
        }
        printed_until = Some(to.max(printed_until.unwrap_or(0)));
    }
}
