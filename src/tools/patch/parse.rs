//! The Codex `apply_patch` envelope, parsed into file operations. The grammar, as Codex's tool
//! instructions give it:
//!
//! ```text
//! patch   := "*** Begin Patch" NL file+ "*** End Patch" NL?
//! file    := add | delete | update
//! add     := "*** Add File: " path NL ("+" line NL)+
//! delete  := "*** Delete File: " path NL
//! update  := "*** Update File: " path NL ("*** Move to: " path NL)? hunk+
//! hunk    := ("@@" | "@@ " anchor)* NL? ((" " | "-" | "+") line NL)+ ("*** End of File" NL)?
//! ```
//!
//! Lenient where Codex's parser is: markers and file headers may carry surrounding whitespace,
//! a `\r` before each `\n` is dropped, blank lines around the envelope are ignored, the envelope
//! may sit in a heredoc (`<<'EOF'` … `EOF`, as models write it for a shell), an empty line inside
//! a hunk is an empty context line, and the first hunk of a file may omit its `@@`. Beyond Codex:
//! several `@@ anchor` lines in a row narrow the search one after the other, as Codex's
//! instructions tell models to write (its parser refuses them); and a unified diff's line range
//! after `@@` (`@@ -3,4 +3,5 @@`), which models used to `git diff` write, is dropped.
//!
//! Refused, with the 1-based line and what was expected there: a missing `*** Begin Patch` or
//! `*** End Patch`, an unknown header, a hunk line without a prefix, an Add with no `+` line, an
//! Update with no hunk, text after `*** End Patch`, a patch that names no file. A patch over
//! `MAX_PATCH_BYTES` or with more than `MAX_PATCH_FILES` file headers is refused before parsing.

use std::fmt;

/// A patch larger than this is refused unread: 16 MiB is far above what a model writes (Codex's
/// own patches are kilobytes) and bounds the parsed copy to about as much again.
pub const MAX_PATCH_BYTES: usize = 16 * 1024 * 1024;
/// A patch naming more files than this is refused before parsing: each file is one staged temp
/// file and one journal entry in the commit.
pub const MAX_PATCH_FILES: usize = 1000;

const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const ADD: &str = "*** Add File: ";
const DELETE: &str = "*** Delete File: ";
const UPDATE: &str = "*** Update File: ";
const MOVE_TO: &str = "*** Move to: ";
const END_OF_FILE: &str = "*** End of File";

/// A parsed patch: its file operations in the order the patch gives them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patch {
    pub files: Vec<FileOp>,
}

/// One file's operation. `line` is the 1-based line of its header in the patch text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileOp {
    /// A new file: `contents` is its `+` lines, each ended by `\n`.
    Add {
        path: String,
        contents: String,
        line: usize,
    },
    Delete {
        path: String,
        line: usize,
    },
    Update {
        path: String,
        move_to: Option<String>,
        hunks: Vec<Hunk>,
        line: usize,
    },
}

impl FileOp {
    /// The path the header names (an update's source, not its `Move to`).
    pub fn path(&self) -> &str {
        match self {
            FileOp::Add { path, .. }
            | FileOp::Delete { path, .. }
            | FileOp::Update { path, .. } => path,
        }
    }
}

/// One `@@` hunk of an update: the lines it replaces (context and `-` lines) and those it
/// writes instead (context and `+` lines), without their prefixes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// The `@@ anchor` texts, in order: each is looked for after the previous, and `old` after
    /// the last.
    pub anchors: Vec<String>,
    pub old: Vec<String>,
    pub new: Vec<String>,
    /// `*** End of File` closed the hunk: `old` is looked for at the end of the file first.
    pub at_eof: bool,
    /// The 1-based line of the hunk's first line in the patch text.
    pub line: usize,
}

/// Why a patch was refused, and where: `line` is 1-based, 0 for the patch as a whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub line: usize,
    pub kind: ParseErrorKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseErrorKind {
    TooLarge {
        bytes: usize,
    },
    TooManyFiles {
        files: usize,
    },
    /// The first non-blank line, quoted (cut).
    MissingBegin {
        found: String,
    },
    MissingEnd,
    TextAfterEnd {
        found: String,
    },
    UnknownHeader {
        found: String,
    },
    MissingPath {
        header: &'static str,
    },
    EmptyAdd {
        path: String,
    },
    EmptyUpdate {
        path: String,
    },
    EmptyHunk,
    NoPrefix {
        found: String,
    },
    NoFiles,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line > 0 {
            write!(f, "line {}: ", self.line)?;
        }
        match &self.kind {
            ParseErrorKind::TooLarge { bytes } => write!(
                f,
                "the patch is {bytes} bytes, over the {MAX_PATCH_BYTES}-byte limit: split it into \
                 several patches"
            ),
            ParseErrorKind::TooManyFiles { files } => write!(
                f,
                "the patch names {files} files, over the limit of {MAX_PATCH_FILES}: split it \
                 into several patches"
            ),
            ParseErrorKind::MissingBegin { found } => {
                write!(f, "expected '{BEGIN}' as the first line, found '{found}'")
            }
            ParseErrorKind::MissingEnd => {
                write!(f, "expected '{END}' as the last line: the patch may have been cut off")
            }
            ParseErrorKind::TextAfterEnd { found } => {
                write!(f, "expected nothing after '{END}', found '{found}'")
            }
            ParseErrorKind::UnknownHeader { found } => write!(
                f,
                "expected a file header ('{ADD}PATH', '{DELETE}PATH' or '{UPDATE}PATH') or \
                 '{END}', found '{found}'"
            ),
            ParseErrorKind::MissingPath { header } => {
                write!(f, "expected a path after '{header}'")
            }
            ParseErrorKind::EmptyAdd { path } => {
                write!(f, "'{ADD}{path}' has no lines: expected lines starting with '+' after it")
            }
            ParseErrorKind::EmptyUpdate { path } => write!(
                f,
                "'{UPDATE}{path}' has no hunk: expected '@@' and lines starting with ' ', '-' or \
                 '+' after it"
            ),
            ParseErrorKind::EmptyHunk => {
                write!(f, "the hunk has no lines: expected lines starting with ' ', '-' or '+'")
            }
            ParseErrorKind::NoPrefix { found } => write!(
                f,
                "expected a hunk line starting with ' ' (context), '-' (removed) or '+' (added), \
                 '@@', '{END_OF_FILE}' or a file header, found '{found}'"
            ),
            ParseErrorKind::NoFiles => {
                write!(f, "the patch names no file: expected a file header after '{BEGIN}'")
            }
        }
    }
}

/// Parses a patch. Pure: paths are returned as written, for the caller to resolve.
pub fn parse(text: &str) -> Result<Patch, ParseError> {
    if text.len() > MAX_PATCH_BYTES {
        return Err(ParseError { line: 0, kind: ParseErrorKind::TooLarge { bytes: text.len() } });
    }
    let files = count_headers(text);
    if files > MAX_PATCH_FILES {
        return Err(ParseError { line: 0, kind: ParseErrorKind::TooManyFiles { files } });
    }
    let lines: Vec<&str> =
        text.split('\n').map(|line| line.strip_suffix('\r').unwrap_or(line)).collect();
    Parser { lines, at: 0 }.patch()
}

/// The paths of the lines that read as file headers or `Move to` lines, found without parsing:
/// what a patch may change, for its write turn (`write_order`).
pub fn header_paths(text: &str) -> Vec<&str> {
    text.split('\n')
        .map(str::trim)
        .filter_map(|line| {
            [ADD, DELETE, UPDATE, MOVE_TO].iter().find_map(|h| line.strip_prefix(h.trim_end()))
        })
        .map(str::trim)
        .filter(|path| !path.is_empty())
        .collect()
}

/// The number of lines that read as file headers, counted without parsing.
fn count_headers(text: &str) -> usize {
    text.split('\n')
        .map(str::trim_start)
        .filter(|line| {
            line.starts_with(ADD) || line.starts_with(DELETE) || line.starts_with(UPDATE)
        })
        .count()
}

struct Parser<'a> {
    lines: Vec<&'a str>,
    /// The index of the next line to read (its 1-based number is `at + 1`).
    at: usize,
}

impl<'a> Parser<'a> {
    fn patch(mut self) -> Result<Patch, ParseError> {
        let mut last = self.lines.len();
        while self.at < last && self.lines[self.at].trim().is_empty() {
            self.at += 1;
        }
        while last > self.at && self.lines[last - 1].trim().is_empty() {
            last -= 1;
        }
        if self.at == last {
            self.at = 0;
            return Err(self.error(ParseErrorKind::MissingBegin { found: String::new() }));
        }
        // A heredoc wrapper, as a model writes `apply_patch <<'EOF'` for a shell: the lines
        // between its opener and the closing `EOF` are the patch.
        if is_heredoc_opener(self.lines[self.at]) && self.lines[last - 1].trim() == "EOF" {
            self.at += 1;
            last -= 1;
        }
        self.lines.truncate(last);
        if self.peek().map(str::trim) != Some(BEGIN) {
            let found = cut(self.peek().unwrap_or(""));
            return Err(self.error(ParseErrorKind::MissingBegin { found }));
        }
        self.at += 1;
        let mut files = Vec::new();
        loop {
            let Some(line) = self.peek() else {
                return Err(self.error(ParseErrorKind::MissingEnd));
            };
            let header = line.trim();
            if header == END {
                break;
            }
            if header.is_empty() {
                self.at += 1;
                continue;
            }
            files.push(self.file(header)?);
        }
        self.at += 1;
        if let Some(rest) = self.lines[self.at..].iter().position(|line| !line.trim().is_empty()) {
            self.at += rest;
            let found = cut(self.lines[self.at]);
            return Err(self.error(ParseErrorKind::TextAfterEnd { found }));
        }
        if files.is_empty() {
            self.at -= 1;
            return Err(self.error(ParseErrorKind::NoFiles));
        }
        Ok(Patch { files })
    }

    /// One file's header and body; `header` is the trimmed line at `self.at`.
    fn file(&mut self, header: &'a str) -> Result<FileOp, ParseError> {
        let line = self.at + 1;
        if let Some(path) = header.strip_prefix(ADD.trim_end()) {
            let path = self.path(path, ADD)?;
            self.at += 1;
            let mut contents = String::new();
            while let Some(added) = self.peek().and_then(|line| line.strip_prefix('+')) {
                contents.push_str(added);
                contents.push('\n');
                self.at += 1;
            }
            if contents.is_empty() {
                self.at = line - 1;
                return Err(self.error(ParseErrorKind::EmptyAdd { path }));
            }
            return Ok(FileOp::Add { path, contents, line });
        }
        if let Some(path) = header.strip_prefix(DELETE.trim_end()) {
            let path = self.path(path, DELETE)?;
            self.at += 1;
            return Ok(FileOp::Delete { path, line });
        }
        if let Some(path) = header.strip_prefix(UPDATE.trim_end()) {
            let path = self.path(path, UPDATE)?;
            self.at += 1;
            let mut move_to = None;
            if let Some(to) =
                self.peek().map(str::trim).and_then(|l| l.strip_prefix(MOVE_TO.trim_end()))
            {
                move_to = Some(self.path(to, MOVE_TO)?);
                self.at += 1;
            }
            let mut hunks = Vec::new();
            while let Some(hunk) = self.hunk(hunks.is_empty())? {
                hunks.push(hunk);
            }
            if hunks.is_empty() {
                self.at = line - 1;
                return Err(self.error(ParseErrorKind::EmptyUpdate { path }));
            }
            return Ok(FileOp::Update { path, move_to, hunks, line });
        }
        let found = cut(header);
        Err(self.error(ParseErrorKind::UnknownHeader { found }))
    }

    /// The path after a header's marker (which may have lost its trailing space to a trim).
    fn path(&self, rest: &str, header: &'static str) -> Result<String, ParseError> {
        let path = rest.trim();
        if path.is_empty() || !rest.starts_with(|c: char| c.is_whitespace()) {
            return Err(self.error(ParseErrorKind::MissingPath { header }));
        }
        Ok(path.to_string())
    }

    /// The next hunk of an update, or `None` where the update ends (at a line starting with
    /// `*`, other than `*** End of File`, or at the end of the lines). The first hunk may omit
    /// its `@@`.
    fn hunk(&mut self, first: bool) -> Result<Option<Hunk>, ParseError> {
        // Blank lines between hunks separate them.
        while self.peek().is_some_and(|line| line.trim().is_empty()) {
            self.at += 1;
        }
        match self.peek() {
            None => return Ok(None),
            Some(line) if line.starts_with('*') => return Ok(None),
            Some(_) => {}
        }
        let start = self.at + 1;
        let mut anchors = Vec::new();
        while let Some(line) = self.peek() {
            let Some(rest) = line.strip_prefix("@@") else { break };
            // `@@ fn main() {` anchors on the line's text, without the space after `@@`.
            let anchor = rest.strip_prefix(' ').unwrap_or(rest);
            let anchor = after_unified_range(anchor).unwrap_or(anchor);
            if !anchor.trim().is_empty() {
                anchors.push(anchor.to_string());
            }
            self.at += 1;
        }
        if self.at + 1 == start && !first {
            let found = cut(self.peek().unwrap_or(""));
            return Err(self.error(ParseErrorKind::NoPrefix { found }));
        }
        let mut hunk =
            Hunk { anchors, old: Vec::new(), new: Vec::new(), at_eof: false, line: start };
        let mut n_lines = 0;
        while let Some(line) = self.peek() {
            if line.trim() == END_OF_FILE {
                if n_lines == 0 {
                    return Err(self.error(ParseErrorKind::EmptyHunk));
                }
                hunk.at_eof = true;
                self.at += 1;
                break;
            }
            if line.starts_with("@@") || line.starts_with('*') {
                break;
            }
            match line.as_bytes().first() {
                None => {
                    hunk.old.push(String::new());
                    hunk.new.push(String::new());
                }
                Some(b' ') => {
                    hunk.old.push(line[1..].to_string());
                    hunk.new.push(line[1..].to_string());
                }
                Some(b'-') => hunk.old.push(line[1..].to_string()),
                Some(b'+') => hunk.new.push(line[1..].to_string()),
                Some(_) => {
                    let found = cut(line);
                    return Err(self.error(ParseErrorKind::NoPrefix { found }));
                }
            }
            n_lines += 1;
            self.at += 1;
        }
        if n_lines == 0 {
            return Err(self.error(ParseErrorKind::EmptyHunk));
        }
        Ok(Some(hunk))
    }

    fn peek(&self) -> Option<&'a str> {
        self.lines.get(self.at).copied()
    }

    fn error(&self, kind: ParseErrorKind) -> ParseError {
        ParseError { line: self.at + 1, kind }
    }
}

/// What follows a unified diff's line range (`-12,3 +12,4 @@ fn main() {` gives `fn main() {`),
/// which models trained on `git diff` write after `@@`: the range is dropped, as line numbers
/// are not how this format places hunks, and git's function header, if any, anchors.
fn after_unified_range(anchor: &str) -> Option<&str> {
    let range = |s: &str, sign: char| -> Option<()> {
        let s = s.strip_prefix(sign)?;
        let mut parts = s.splitn(2, ',');
        let digits = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
        (parts.all(digits)).then_some(())
    };
    let (old, rest) = anchor.split_once(' ')?;
    let (new, rest) = rest.split_once(' ')?;
    range(old, '-')?;
    range(new, '+')?;
    let rest = rest.strip_prefix("@@")?;
    Some(rest.strip_prefix(' ').unwrap_or(rest))
}

fn is_heredoc_opener(line: &str) -> bool {
    matches!(line.trim(), "<<EOF" | "<<'EOF'" | "<<\"EOF\"")
}

/// A patch line quoted in an error: at most 80 characters.
fn cut(line: &str) -> String {
    const MAX_QUOTED_CHARS: usize = 80;
    match line.char_indices().nth(MAX_QUOTED_CHARS) {
        Some((end, _)) => format!("{}…", &line[..end]),
        None => line.to_string(),
    }
}

#[cfg(test)]
mod tests;
