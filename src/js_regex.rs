//! JavaScript (ECMAScript) regular expressions, compiled to `fancy_regex::Regex` with JS semantics.
//!
//! Clients of this server write patterns for JavaScript's `RegExp`, so a pattern must match here
//! exactly where node's `new RegExp(pattern, "gm")` (or `"gmi"`) matches, in non-unicode mode
//! (no `u` flag). The regex crate that fancy-regex delegates to disagrees with JS in many small
//! ways: `\d`, `\w`, `\b` and `\s` are Unicode-aware, `.` and `(?m)` only know `\n` as a line
//! terminator, a stray `{` or `[` is a syntax error, `&&`/`--`/`~~` are class set operators, and
//! a backreference to a group that did not participate fails instead of matching the empty string.
//!
//! [`translate`] therefore walks the JS pattern once with a hand-written recursive-descent parser
//! (after a pre-scan that counts capture groups, as V8 does, because whether `\N` is a
//! backreference depends on the number of groups in the whole pattern) and emits every construct
//! in an explicit form whose meaning does not depend on regex-crate defaults. All JS syntax errors
//! are reported by the translator itself; fancy-regex only rejects what it cannot run.
//!
//! The legacy syntax of Annex B, which node accepts without the `u` flag, is translated the way
//! V8 reads it: `\N` beyond the number of groups is an octal escape (`\12` is `\n`) or, for 8
//! and 9, the digit; unknown escapes (`\a`, `\-`) are the character itself; a `{` or `]` that
//! starts no quantifier or class is literal; `\c` without a control letter is a backslash;
//! lookaheads may be quantified.
//!
//! Patterns without `^`, `$`, `\b`, `\B`, lookarounds or backreferences translate to plain regex
//! crate syntax, which fancy-regex hands whole to the regex crate's linear-time engines; the
//! lookarounds that JS line anchors and ASCII word boundaries need make the rest run on
//! fancy-regex's backtracking VM, bounded by [`BACKTRACK_LIMIT`].
//!
//! Known divergences from node, all deliberate (the differential test keeps a row for each):
//! - Characters outside the BMP are one character here but two UTF-16 code units in JS: `.` or
//!   `[^a]` matches a whole emoji where JS matches half of it, an empty match never splits one,
//!   a surrogate-pair escape inside a class (`[\uD83D\uDE00]`) is one character, and `😀?`
//!   means the whole character where JS makes only its low surrogate optional. Lone surrogates
//!   cannot occur in a Rust string, so `\uD800` alone never matches.
//! - Case-insensitive matching uses Unicode simple case folding, not JS's non-unicode
//!   `Canonicalize` (which upper-cases and never maps non-ASCII to ASCII): with `i`, `k` also
//!   matches U+212A KELVIN SIGN, `s` U+017F LONG S, `ß` U+1E9E, `å` U+212B, `ω` U+2126; `\w`
//!   picks up the first two as well (`\b` and `\B` stay ASCII, as in JS).
//! - Backreferences compare case-sensitively even with `i` (fancy-regex limitation).
//! - Lookbehind needs a fixed length per top-level alternative (`(?<=a|bc)` works, `(?<=a+)` is
//!   an error), and may not contain backreferences.
//! - JS resets the captures inside a quantified group at every iteration; fancy-regex keeps
//!   captures from earlier iterations, so `(?:(a)|b)+` on "ab" reports group 1 as "a" where JS
//!   reports it unset. JS also refuses an optional iteration that matches the empty string:
//!   repeating a group that can only match the empty string is translated specially, and an
//!   unbounded repeat of one that can match it among other things (`(|a)*`) runs on
//!   fancy-regex's VM, which repeats the JS way (the regex crate would stop at the empty
//!   match); both agree with JS. A bounded repeat of such a group (`(|a)?`, `(|a){0,2}`) takes
//!   the empty branch, as Perl does: "" where JS matches "a".
//! - Group names are checked against `$`, `_`, ZWNJ, ZWJ and `char::is_alphabetic` /
//!   `is_alphanumeric` (std has no ID_Start/ID_Continue), and `\u` escapes in names are rejected.
//!   Names that the regex crate cannot spell (such as `$x`) become unnamed groups there; use
//!   [`JsRegex::group_index`] to look names up.
//! - Inline modifiers `(?i:…)` are an error, as in node 20 (newer engines accept them).
//! - Large repetition counts (`[\s\S]{0,4000}`, `(\w{100}){100}`) exceed
//!   [`COMPILED_SIZE_LIMIT`] and are errors; a minimum above `u32::MAX` is rejected by the
//!   translator.

pub mod fast;

use std::fmt::{self, Write as _};

use fancy_regex::{Regex, RegexBuilder};

/// Bound on fancy-regex's backtracking steps for one search, so that a pathological pattern such
/// as `(a+)+$` (which runs on the VM, because `$` becomes a lookahead) returns an error instead of
/// hanging the server. fancy-regex also counts a step for every start position its unanchored
/// scan gives up on, so the bound caps the input size as well: patterns with `^`, `$` or `\b`
/// take one or two steps per byte, backreferences about ten. fancy-regex's default of one million
/// made `^fn` fail on a 6 MB file; fifty million allows tens of megabytes and bounds a hopeless
/// search to about two seconds.
pub const BACKTRACK_LIMIT: usize = 50_000_000;

/// Bound on the compiled size of each part of a pattern that runs on the regex crate (its NFA,
/// in bytes, as the regex crate counts it), and of a [`FastRegex`](fast::FastRegex). A search costs up to the
/// text's length times the NFA's size when the regex crate's lazy DFA gives up, so a short
/// pattern with large repetition counts made one search run for minutes: `[\s\S]{0,4000}x`
/// (4.0 MB compiled) took 168 s on a 1 MB file, `(\w{100}){100}` (0.97 MB) 48 s. The regex
/// crate's default bound is 10 MiB. 256 KiB still admits `.{0,150}` (210 KiB: the `.` of JS is
/// a large UTF-8 class) and every pattern of the test suite.
pub const COMPILED_SIZE_LIMIT: usize = 256 * 1024;

/// Deepest group nesting accepted. Keeps the recursive translator's stack bounded; fancy-regex
/// has a lower limit of its own, so real patterns never get near this.
const MAX_NESTING: usize = 250;

/// `^` with the `m` flag: at the start of the input or just after \n, \r, U+2028 or U+2029, which
/// includes between the \r and \n of CRLF. "Not preceded by a non-terminator" covers both.
const LINE_START: &str = r"(?<![^\n\r\x{2028}\x{2029}])";
/// `$` with the `m` flag: at the end of the input or just before a line terminator.
const LINE_END: &str = r"(?![^\n\r\x{2028}\x{2029}])";
/// `.` without the `s` flag.
const DOT: &str = r"[^\n\r\x{2028}\x{2029}]";
/// `[^]`: any character.
const ANY_CHAR: &str = r"[\x{0}-\x{10FFFF}]";
/// `[]`: no character (also stands in for lone surrogates, which no Rust string contains).
const NO_CHAR: &str = r"[^\x{0}-\x{10FFFF}]";
/// `\b`: JS word characters are ASCII only, unlike the regex crate's Unicode `\b`, and
/// fancy-regex rejects `(?-u:\b)`, so spell out both sides. Case-sensitive even under `i` (as
/// in JS, and as `FastRegex`'s `(?-u:\b)`): folded, `[0-9A-Z_a-z]` would take U+017F LONG S and
/// U+212A KELVIN SIGN as word characters.
const WORD_BOUNDARY: &str =
    r"(?-i:(?<=[0-9A-Z_a-z])(?![0-9A-Z_a-z])|(?<![0-9A-Z_a-z])(?=[0-9A-Z_a-z]))";
/// `\B`: both sides word characters or both sides not.
const NOT_WORD_BOUNDARY: &str =
    r"(?-i:(?<=[0-9A-Z_a-z])(?=[0-9A-Z_a-z])|(?<![0-9A-Z_a-z])(?![0-9A-Z_a-z]))";

/// A JavaScript regular expression compiled for fancy-regex.
#[derive(Debug, Clone)]
pub struct JsRegex {
    regex: Regex,
    group_count: usize,
    /// Named groups as (name, group index), in pattern order.
    names: Vec<(String, usize)>,
}

impl JsRegex {
    /// Compile `pattern` (JS source text, without slashes) with JS semantics: the whole subject is
    /// one string in which ^ and $ match at every line boundary (JS flag `m`), `.` does not match
    /// line terminators, case_insensitive = JS flag `i`.
    pub fn new(pattern: &str, case_insensitive: bool) -> Result<JsRegex, JsRegexError> {
        let translation =
            Translator::new(pattern).run().map_err(|detail| JsRegexError::new(pattern, detail))?;
        // Spelled as an inline flag: fancy-regex 0.14's `RegexBuilder::case_insensitive` does not
        // reach the literals of patterns that run on its own VM.
        let source = if case_insensitive {
            format!("(?i){}", translation.source)
        } else {
            translation.source
        };
        let regex = RegexBuilder::new(&source)
            .backtrack_limit(BACKTRACK_LIMIT)
            .delegate_size_limit(COMPILED_SIZE_LIMIT)
            .build()
            .map_err(|err| JsRegexError::new(pattern, compile_error_detail(&err)))?;
        Ok(JsRegex { regex, group_count: translation.group_count, names: translation.names })
    }

    /// The compiled regex. Group numbers are the JS ones. A search can fail with
    /// `BacktrackLimitExceeded`; note that fancy-regex's `find_iter` and `captures_iter` then yield
    /// that error again forever (they do not advance), so stop at the first `Err`.
    pub fn regex(&self) -> &Regex {
        &self.regex
    }

    /// Number of capture groups, not counting group 0.
    pub fn group_count(&self) -> usize {
        self.group_count
    }

    /// Index of the group called `name`. Unlike `regex().capture_names()`, this also knows names
    /// the regex crate cannot spell, such as `$x`.
    pub fn group_index(&self, name: &str) -> Option<usize> {
        self.names.iter().find(|(candidate, _)| candidate == name).map(|&(_, index)| index)
    }
}

/// What to tell the client about a pattern fancy-regex refused: for one over
/// [`COMPILED_SIZE_LIMIT`], what to do instead of the regex crate's "error building NFA".
fn compile_error_detail(err: &fancy_regex::Error) -> String {
    match err {
        fancy_regex::Error::CompileError(fancy_regex::CompileError::InnerError(inner))
            if inner.size_limit().is_some() =>
        {
            format!(
                "the pattern is too large once compiled (over {} KiB); use smaller repetition \
                 counts (such as `{{0,100}}` instead of `{{0,4000}}`, and no nested counted \
                 repetitions such as `(\\w{{100}}){{100}}`), or `+`/`*` where any length will do",
                COMPILED_SIZE_LIMIT / 1024
            )
        }
        _ => err.to_string(),
    }
}

/// A pattern that is not valid JavaScript, or that fancy-regex cannot run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsRegexError {
    pub pattern: String,
    pub detail: String,
}

impl JsRegexError {
    fn new(pattern: &str, detail: String) -> JsRegexError {
        JsRegexError { pattern: pattern.to_string(), detail }
    }
}

impl fmt::Display for JsRegexError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid regex `{}`: {}", self.pattern, self.detail)
    }
}

impl std::error::Error for JsRegexError {}

/// Translate a JS pattern to fancy-regex syntax (case-sensitive; [`JsRegex::new`] prefixes `(?i)`
/// for the `i` flag).
pub fn translate(pattern: &str) -> Result<String, JsRegexError> {
    Translator::new(pattern)
        .run()
        .map(|translation| translation.source)
        .map_err(|detail| JsRegexError::new(pattern, detail))
}

struct Translation {
    source: String,
    group_count: usize,
    names: Vec<(String, usize)>,
}

/// Capture groups found by the pre-scan.
struct CaptureScan {
    count: usize,
    /// Raw text between `(?<` and `>`, with the group index; validated when the group is parsed.
    names: Vec<(String, usize)>,
}

impl CaptureScan {
    /// Count capture groups the way V8's `ScanForCaptures` does: skip escapes and classes, count
    /// `(` not followed by `?`, and `(?<` not followed by `=` or `!`.
    fn new(pattern: &str) -> CaptureScan {
        let mut scan = CaptureScan { count: 0, names: Vec::new() };
        let mut in_class = false;
        let mut chars = pattern.char_indices();
        while let Some((at, c)) = chars.next() {
            match c {
                '\\' => {
                    chars.next();
                }
                '[' => in_class = true,
                ']' => in_class = false,
                '(' if !in_class => scan.group_at(&pattern[at + 1..]),
                _ => {}
            }
        }
        scan
    }

    /// `rest` follows a `(` outside a class.
    fn group_at(&mut self, rest: &str) {
        let Some(after_question) = rest.strip_prefix('?') else {
            self.count += 1;
            return;
        };
        let Some(name_start) = after_question.strip_prefix('<') else {
            return;
        };
        if name_start.starts_with(['=', '!']) {
            return;
        }
        self.count += 1;
        if let Some(end) = name_start.find('>') {
            self.names.push((name_start[..end].to_string(), self.count));
        }
    }

    fn has_names(&self) -> bool {
        !self.names.is_empty()
    }
}

/// What an atom is, as far as a following quantifier cares.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Atom {
    /// `^`, `$`, `\b`, `\B`: JS forbids quantifying them.
    Assertion,
    /// JS forbids quantifying lookbehinds, but allows lookaheads (Annex B).
    LookBehind,
    /// Always matches the empty string (lookahead, or a group of zero-width terms).
    ZeroWidth,
    /// Consumes at least one character.
    Consuming,
    /// A group that may consume characters or match the empty string (`(|a)`, `(a*)`).
    Nullable,
    /// A character outside the BMP, which JS sees as two code units.
    Astral,
}

/// What a disjunction, alternative or term can match, as far as a quantifier around it cares.
#[derive(Clone, Copy)]
struct Width {
    /// Only ever the empty string.
    zero: bool,
    /// The empty string among others.
    empty: bool,
}

#[derive(Clone, Copy)]
struct Quantifier {
    min: u32,
    /// `None` is unbounded.
    max: Option<u32>,
    lazy: bool,
}

impl Quantifier {
    fn write(self, out: &mut String) {
        // Writing to a String cannot fail.
        let _ = match (self.min, self.max) {
            (0, None) => write!(out, "*"),
            (1, None) => write!(out, "+"),
            (0, Some(1)) => write!(out, "?"),
            (min, None) => write!(out, "{{{min},}}"),
            (min, Some(max)) if min == max => write!(out, "{{{min}}}"),
            (min, Some(max)) => write!(out, "{{{min},{max}}}"),
        };
        if self.lazy {
            out.push('?');
        }
    }
}

/// The built-in classes `\d \D \w \W \s \S`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum ClassEscape {
    Digit,
    NotDigit,
    Word,
    NotWord,
    Space,
    NotSpace,
}

impl ClassEscape {
    fn from_letter(letter: char) -> Option<ClassEscape> {
        Some(match letter {
            'd' => ClassEscape::Digit,
            'D' => ClassEscape::NotDigit,
            'w' => ClassEscape::Word,
            'W' => ClassEscape::NotWord,
            's' => ClassEscape::Space,
            'S' => ClassEscape::NotSpace,
            _ => return None,
        })
    }

    /// Members of the positive form, as regex class items. JS `\s` is WhiteSpace plus
    /// LineTerminator: it has U+FEFF but, unlike Unicode White_Space, not U+0085.
    fn items(self) -> &'static str {
        match self {
            ClassEscape::Digit | ClassEscape::NotDigit => "0-9",
            ClassEscape::Word | ClassEscape::NotWord => "0-9A-Z_a-z",
            ClassEscape::Space | ClassEscape::NotSpace => {
                r"\t\n\v\f\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}"
            }
        }
    }

    fn negated(self) -> bool {
        matches!(self, ClassEscape::NotDigit | ClassEscape::NotWord | ClassEscape::NotSpace)
    }

    /// Write as a standalone class, or nested inside one (the regex crate allows `[a[^0-9]]`).
    fn write_class(self, out: &mut String) {
        out.push('[');
        if self.negated() {
            out.push('^');
        }
        out.push_str(self.items());
        out.push(']');
    }

    fn write_in_class(self, out: &mut String) {
        if self.negated() {
            self.write_class(out);
        } else {
            out.push_str(self.items());
        }
    }
}

/// One member of a JS character class. Characters are code points held as `u32` because a JS
/// escape can denote a lone surrogate, which `char` cannot hold.
#[derive(Clone, Copy)]
enum ClassItem {
    Char(u32),
    Range(u32, u32),
    Escape(ClassEscape),
}

/// Translation result; the error is a detail message for [`JsRegexError`].
type Parsed<T> = Result<T, String>;

struct Translator<'p> {
    pattern: &'p str,
    /// Byte offset of the next unread character.
    pos: usize,
    out: String,
    scan: CaptureScan,
    groups_opened: usize,
    /// `closed[i]` is whether group `i + 1` has been closed at the current position.
    closed: Vec<bool>,
    names: Vec<(String, usize)>,
    depth: usize,
    lookbehind_depth: usize,
    /// Alternations and lazy quantifiers read so far: where a group can prefer the empty
    /// string to a longer match (see `repeat_nullable`).
    choices: usize,
}

impl<'p> Translator<'p> {
    fn new(pattern: &'p str) -> Translator<'p> {
        let scan = CaptureScan::new(pattern);
        Translator {
            pattern,
            pos: 0,
            out: String::with_capacity(pattern.len() * 2),
            closed: vec![false; scan.count],
            scan,
            groups_opened: 0,
            names: Vec::new(),
            depth: 0,
            lookbehind_depth: 0,
            choices: 0,
        }
    }

    fn run(mut self) -> Parsed<Translation> {
        self.disjunction()?;
        if self.pos < self.pattern.len() {
            // A top-level disjunction only stops early at a `)`.
            return self.error_at(self.pos, "unmatched `)`");
        }
        debug_assert_eq!(self.groups_opened, self.scan.count);
        Ok(Translation { source: self.out, group_count: self.scan.count, names: self.names })
    }

    // ---- reading ----

    fn rest(&self) -> &'p str {
        &self.pattern[self.pos..]
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn eat(&mut self, c: char) -> bool {
        self.eat_str(c.encode_utf8(&mut [0; 4]))
    }

    fn eat_str(&mut self, s: &str) -> bool {
        let found = self.rest().starts_with(s);
        if found {
            self.pos += s.len();
        }
        found
    }

    /// Consume `n` hex digits if they are all there.
    fn eat_hex(&mut self, n: usize) -> Option<u32> {
        let digits = self.rest().get(..n)?;
        if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let value = u32::from_str_radix(digits, 16).ok()?;
        self.pos += n;
        Some(value)
    }

    fn error_at<T>(&self, at: usize, message: &str) -> Parsed<T> {
        Err(format!("{message} at offset {at}"))
    }

    // ---- structure ----

    /// Alternatives separated by `|`.
    fn disjunction(&mut self) -> Parsed<Width> {
        let mut width = self.alternative()?;
        while self.eat('|') {
            self.out.push('|');
            self.choices += 1;
            let next = self.alternative()?;
            width = Width { zero: width.zero && next.zero, empty: width.empty || next.empty };
        }
        Ok(width)
    }

    /// Terms up to `|`, `)` or the end.
    fn alternative(&mut self) -> Parsed<Width> {
        let mut width = Width { zero: true, empty: true };
        while let Some(c) = self.peek() {
            if c == '|' || c == ')' {
                break;
            }
            let term = self.term()?;
            width = Width { zero: width.zero && term.zero, empty: width.empty && term.empty };
        }
        Ok(width)
    }

    /// An atom and its optional quantifier.
    fn term(&mut self) -> Parsed<Width> {
        let out_start = self.out.len();
        let choices = self.choices;
        let atom = self.atom()?;
        let has_choice = self.choices > choices;
        let quantifier_at = self.pos;
        let Some(quantifier) = self.quantifier()? else {
            let zero = matches!(atom, Atom::Assertion | Atom::LookBehind | Atom::ZeroWidth);
            return Ok(Width { zero, empty: zero || atom == Atom::Nullable });
        };
        let empty = quantifier.min == 0;
        match atom {
            Atom::Assertion => self.error_at(quantifier_at, "nothing to repeat"),
            Atom::LookBehind => self.error_at(quantifier_at, "invalid quantifier"),
            Atom::ZeroWidth => {
                self.repeat_zero_width(out_start, quantifier);
                Ok(Width { zero: true, empty: true })
            }
            Atom::Consuming => {
                quantifier.write(&mut self.out);
                Ok(Width { zero: false, empty })
            }
            Atom::Nullable => {
                self.repeat_nullable(out_start, quantifier, has_choice);
                Ok(Width { zero: false, empty: true })
            }
            Atom::Astral => {
                self.repeat_astral(out_start, quantifier);
                Ok(Width { zero: false, empty: quantifier.max == Some(0) })
            }
        }
    }

    /// JS refuses an iteration beyond the minimum that matches the empty string and backtracks
    /// into the group instead, so `(|a)*` on "a" matches "a". The regex crate takes the empty
    /// branch and stops: "". fancy-regex's own VM repeats the JS way when the repeat is
    /// unbounded, so such a repeat is made to run there, by a lookahead that matches everywhere:
    /// `(?:(?=)(|a))*`. The regex crate cannot compile that, so [`FastRegex`](fast::FastRegex) leaves these
    /// patterns to the exact engine. A bounded one (`(|a)?`, `(|a){1,3}`) still takes the empty
    /// branch: a known divergence.
    ///
    /// Only a group with a choice in it (an alternation or a lazy quantifier) can prefer the
    /// empty string while a longer match is there; one without (`(\s*)*`) always takes the
    /// longer match first, in both engines, and stays on the regex crate's linear engines: on
    /// the VM such a group backtracks exponentially when the rest fails.
    fn repeat_nullable(&mut self, out_start: usize, quantifier: Quantifier, has_choice: bool) {
        if quantifier.max.is_none() && has_choice {
            self.out.insert_str(out_start, "(?:(?=)");
            self.out.push(')');
        }
        quantifier.write(&mut self.out);
    }

    /// In JS `😀*` repeats only the low surrogate of the emoji. In a well-formed string a low
    /// surrogate cannot follow another one, so the only difference from "exactly once" is that JS
    /// may match the high surrogate alone (half of a character), which a Rust match cannot do:
    /// keep the character and drop the quantifier, except `{0}`, which leaves only that half.
    fn repeat_astral(&mut self, out_start: usize, quantifier: Quantifier) {
        if quantifier.max == Some(0) {
            self.out.truncate(out_start);
            self.out.push_str(NO_CHAR);
        }
    }

    /// fancy-regex refuses to repeat lookarounds and empty groups. JS never lets an optional
    /// iteration match the empty string, so repeating a zero-width atom means "once" when the
    /// minimum is at least one and "preferably not at all" when it is zero: `(?:|X)` keeps X's
    /// groups (and their numbers) while trying the empty branch first.
    fn repeat_zero_width(&mut self, out_start: usize, quantifier: Quantifier) {
        if quantifier.min == 0 {
            self.out.insert_str(out_start, "(?:|");
            self.out.push(')');
        }
    }

    /// `*`, `+`, `?` or a valid `{n}`, `{n,}`, `{n,m}`, each optionally followed by `?`.
    fn quantifier(&mut self) -> Parsed<Option<Quantifier>> {
        let start = self.pos;
        let (min, max) = match self.peek() {
            Some('*') => (0, None),
            Some('+') => (1, None),
            Some('?') => (0, Some(1)),
            Some('{') => match parse_braces(self.rest()) {
                Some((min, max, len)) => {
                    self.pos += len - 1;
                    (min, max)
                }
                // Not a quantifier: Annex B makes the `{` a literal, read as the next atom.
                None => return Ok(None),
            },
            _ => return Ok(None),
        };
        self.pos += 1;
        if max.is_some_and(|max| max < min) {
            return self.error_at(start, "numbers out of order in {} quantifier");
        }
        // JS strings are shorter than 2^32 code units, so any larger maximum means unbounded.
        let max = max.and_then(|max| u32::try_from(max).ok());
        let Ok(min) = u32::try_from(min) else {
            return self.error_at(start, "repetition count too large");
        };
        let lazy = self.eat('?');
        if lazy {
            self.choices += 1;
        }
        Ok(Some(Quantifier { min, max, lazy }))
    }

    fn atom(&mut self) -> Parsed<Atom> {
        let at = self.pos;
        let Some(c) = self.bump() else {
            return self.error_at(at, "unexpected end of pattern");
        };
        match c {
            '^' => self.emit(LINE_START, Atom::Assertion),
            '$' => self.emit(LINE_END, Atom::Assertion),
            '.' => self.emit(DOT, Atom::Consuming),
            '(' => self.group(at),
            '[' => self.class(),
            '\\' => self.atom_escape(at),
            '*' | '+' | '?' => self.error_at(at, "nothing to repeat"),
            '{' if parse_braces(&self.pattern[at..]).is_some() => {
                self.error_at(at, "nothing to repeat")
            }
            ')' => self.error_at(at, "unmatched `)`"),
            // Everything else, including a stray `{`, `}` or `]`, is a literal in Annex B.
            c => Ok(self.literal(u32::from(c))),
        }
    }

    fn emit(&mut self, translation: &str, atom: Atom) -> Parsed<Atom> {
        self.out.push_str(translation);
        Ok(atom)
    }

    // ---- groups ----

    /// After a `(` at byte offset `open`.
    fn group(&mut self, open: usize) -> Parsed<Atom> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return self.error_at(open, "groups nested too deeply");
        }
        let atom = if self.eat_str("?:") {
            self.plain_group("(?:", open)?
        } else if self.eat_str("?=") {
            self.plain_group("(?=", open)?;
            Atom::ZeroWidth
        } else if self.eat_str("?!") {
            self.plain_group("(?!", open)?;
            Atom::ZeroWidth
        } else if self.eat_str("?<=") {
            self.lookbehind("(?<=", open)?
        } else if self.eat_str("?<!") {
            self.lookbehind("(?<!", open)?
        } else if self.eat_str("?<") {
            let name = self.group_name(open)?;
            self.capture_group(Some(name), open)?
        } else if self.peek() == Some('?') {
            return self.error_at(open, "invalid group");
        } else {
            self.capture_group(None, open)?
        };
        self.depth -= 1;
        Ok(atom)
    }

    fn plain_group(&mut self, prefix: &str, open: usize) -> Parsed<Atom> {
        self.out.push_str(prefix);
        let width = self.disjunction()?;
        self.close_group(open)?;
        Ok(match width {
            Width { zero: true, .. } => Atom::ZeroWidth,
            Width { empty: true, .. } => Atom::Nullable,
            Width { .. } => Atom::Consuming,
        })
    }

    fn capture_group(&mut self, name: Option<String>, open: usize) -> Parsed<Atom> {
        self.groups_opened += 1;
        let index = self.groups_opened;
        match &name {
            Some(name) if is_rust_group_name(name) => {
                let _ = write!(self.out, "(?P<{name}>");
            }
            _ => self.out.push('('),
        }
        if let Some(name) = name {
            self.names.push((name, index));
        }
        let atom = self.plain_group("", open)?;
        if let Some(closed) = self.closed.get_mut(index - 1) {
            *closed = true;
        }
        Ok(atom)
    }

    /// fancy-regex needs a fixed length per top-level alternative of a lookbehind (it splits
    /// `(?<=^|,)` into one lookbehind per alternative itself), and cannot run backreferences there.
    fn lookbehind(&mut self, prefix: &str, open: usize) -> Parsed<Atom> {
        self.lookbehind_depth += 1;
        self.plain_group(prefix, open)?;
        self.lookbehind_depth -= 1;
        Ok(Atom::LookBehind)
    }

    fn close_group(&mut self, open: usize) -> Parsed<()> {
        if !self.eat(')') {
            return self.error_at(open, "unterminated group");
        }
        self.out.push(')');
        Ok(())
    }

    /// After `(?<`: the name and its `>`.
    fn group_name(&mut self, open: usize) -> Parsed<String> {
        let name = self.bracketed_name(open)?;
        if self.names.iter().any(|(seen, _)| *seen == name) {
            return self.error_at(open, "duplicate capture group name");
        }
        Ok(name)
    }

    /// Read `name>`, requiring a JS identifier.
    fn bracketed_name(&mut self, at: usize) -> Parsed<String> {
        let Some(len) = self.rest().find('>') else {
            return self.error_at(at, "invalid capture group name");
        };
        let name = &self.rest()[..len];
        if name.contains('\\') {
            return self.error_at(at, "escapes in group names are not supported");
        }
        if !is_js_identifier(name) {
            return self.error_at(at, "invalid capture group name");
        }
        self.pos += len + 1;
        Ok(name.to_string())
    }

    // ---- escapes outside classes ----

    /// After a `\` at byte offset `at`, outside a class.
    fn atom_escape(&mut self, at: usize) -> Parsed<Atom> {
        let Some(c) = self.bump() else {
            return self.error_at(at, "\\ at end of pattern");
        };
        if let Some(escape) = ClassEscape::from_letter(c) {
            escape.write_class(&mut self.out);
            return Ok(Atom::Consuming);
        }
        match c {
            'b' => self.emit(WORD_BOUNDARY, Atom::Assertion),
            'B' => self.emit(NOT_WORD_BOUNDARY, Atom::Assertion),
            '1'..='9' => self.decimal_escape(c, at),
            // Without named groups `\k` is an identity escape (Annex B).
            'k' if self.scan.has_names() => self.named_backreference(at),
            _ => {
                let value = self.character_escape(c, false);
                Ok(self.literal(value))
            }
        }
    }

    /// `\N`: a backreference if the pattern has at least N groups, else (Annex B) a legacy octal
    /// escape, or the digit itself for 8 and 9.
    fn decimal_escape(&mut self, first: char, at: usize) -> Parsed<Atom> {
        let digits_len = self.rest().bytes().take_while(u8::is_ascii_digit).count();
        let digits = &self.pattern[at + 1..self.pos + digits_len];
        // Too long for usize means more than the group count.
        let index = digits.parse::<usize>().unwrap_or(usize::MAX);
        if index <= self.scan.count {
            self.pos += digits_len;
            return self.backreference(index, at);
        }
        let value = match first {
            '8' | '9' => u32::from(first),
            _ => self.legacy_octal(first),
        };
        Ok(self.literal(value))
    }

    /// After `\k`, with named groups in the pattern.
    fn named_backreference(&mut self, at: usize) -> Parsed<Atom> {
        if !self.eat('<') {
            return self.error_at(at, "invalid named reference");
        }
        let name = self.bracketed_name(at)?;
        let index = self
            .scan
            .names
            .iter()
            .find(|(candidate, _)| *candidate == name)
            .map(|&(_, index)| index);
        match index {
            Some(index) => self.backreference(index, at),
            None => self.error_at(at, "invalid named capture referenced"),
        }
    }

    /// A JS backreference to a group that has not participated matches the empty string, where
    /// fancy-regex's fails; the conditional `(?(<N>)\k<N>)` restores the JS meaning. The `<N>`
    /// spelling, unlike `\N`, is accepted next to named groups. A reference to a group that is not
    /// closed yet (`\1(a)`, `(a\1)`) always matches the empty string in JS, because every loop that
    /// could close the group first also resets it.
    fn backreference(&mut self, index: usize, at: usize) -> Parsed<Atom> {
        if self.lookbehind_depth > 0 {
            return self.error_at(at, "backreferences inside lookbehind are not supported");
        }
        if !self.closed.get(index - 1).copied().unwrap_or(false) {
            return self.emit("(?:)", Atom::ZeroWidth);
        }
        let _ = write!(self.out, r"(?(<{index}>)\k<{index}>)");
        Ok(Atom::Consuming)
    }

    // ---- escapes shared by atoms and classes ----

    /// The code point (or lone surrogate) of a character escape whose letter `c` was consumed.
    /// Annex B makes every unknown escape, and every malformed `\x`, `\u` or `\c`, stand for a
    /// character instead of being an error.
    fn character_escape(&mut self, c: char, in_class: bool) -> u32 {
        match c {
            't' => 0x09,
            'n' => 0x0A,
            'v' => 0x0B,
            'f' => 0x0C,
            'r' => 0x0D,
            'c' => self.control_escape(in_class),
            '0'..='7' => self.legacy_octal(c),
            'x' => self.eat_hex(2).unwrap_or(u32::from('x')),
            'u' => self.unicode_escape(),
            _ => u32::from(c),
        }
    }

    /// After `\c`: a control letter, or (Annex B) inside a class also a digit or `_`. Otherwise
    /// the backslash is a literal and the `c` is read again as the next character.
    fn control_escape(&mut self, in_class: bool) -> u32 {
        match self.peek() {
            Some(letter)
                if letter.is_ascii_alphabetic()
                    || (in_class && (letter.is_ascii_digit() || letter == '_')) =>
            {
                self.pos += 1;
                u32::from(letter) % 32
            }
            _ => {
                self.pos -= 1;
                u32::from('\\')
            }
        }
    }

    /// After `\u`: four hex digits, joined with a following `\uXXXX` low surrogate when they are a
    /// high surrogate. Without four hex digits, `\u` is just `u`.
    fn unicode_escape(&mut self) -> u32 {
        let Some(unit) = self.eat_hex(4) else {
            return u32::from('u');
        };
        if (0xD800..0xDC00).contains(&unit) {
            let save = self.pos;
            if self.eat_str("\\u") {
                match self.eat_hex(4) {
                    Some(low @ 0xDC00..0xE000) => {
                        return 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
                    }
                    _ => self.pos = save,
                }
            }
        }
        unit
    }

    /// V8's `ParseOctalLiteral`, after the first digit: up to three octal digits while the value
    /// stays below 256.
    fn legacy_octal(&mut self, first: char) -> u32 {
        let mut value = first.to_digit(8).unwrap_or(0);
        // One digit is always below 8, two are below 64: a third digit is taken only while the
        // result stays below 256, that is while the value so far is below 32.
        for bound in [8, 32] {
            match self.peek().and_then(|c| c.to_digit(8)) {
                Some(digit) if value < bound => {
                    self.pos += 1;
                    value = value * 8 + digit;
                }
                _ => break,
            }
        }
        value
    }

    /// A character outside a class; `value` may be a lone surrogate, which no Rust string holds.
    fn literal(&mut self, value: u32) -> Atom {
        match char::from_u32(value) {
            Some(c) => push_char(&mut self.out, c),
            None => self.out.push_str(NO_CHAR),
        }
        if value > 0xFFFF {
            Atom::Astral
        } else {
            Atom::Consuming
        }
    }

    // ---- classes ----

    /// After a `[`.
    fn class(&mut self) -> Parsed<Atom> {
        let open = self.pos - 1;
        let negated = self.eat('^');
        let mut items = Vec::new();
        loop {
            match self.peek() {
                None => return self.error_at(open, "unterminated character class"),
                Some(']') => {
                    self.pos += 1;
                    break;
                }
                Some(_) => self.class_range(&mut items)?,
            }
        }
        write_class(&mut self.out, negated, &items);
        Ok(Atom::Consuming)
    }

    /// One class atom, or a range of two.
    fn class_range(&mut self, items: &mut Vec<ClassItem>) -> Parsed<()> {
        let start = self.pos;
        let first = self.class_atom()?;
        let is_range = self.rest().starts_with('-') && !self.rest()[1..].starts_with(']');
        if !is_range {
            items.push(first);
            return Ok(());
        }
        self.pos += 1;
        let second = self.class_atom()?;
        match (first, second) {
            (ClassItem::Char(lo), ClassItem::Char(hi)) if lo > hi => {
                self.error_at(start, "range out of order in character class")
            }
            (ClassItem::Char(lo), ClassItem::Char(hi)) => {
                items.push(ClassItem::Range(lo, hi));
                Ok(())
            }
            // Annex B: a range with a class escape at either end is just its three parts.
            (first, second) => {
                items.extend([first, ClassItem::Char(u32::from('-')), second]);
                Ok(())
            }
        }
    }

    fn class_atom(&mut self) -> Parsed<ClassItem> {
        let at = self.pos;
        match self.bump() {
            None => self.error_at(at, "unterminated character class"),
            Some('\\') => self.class_escape(at),
            Some(c) => Ok(ClassItem::Char(u32::from(c))),
        }
    }

    /// After a `\` at `at`, inside a class.
    fn class_escape(&mut self, at: usize) -> Parsed<ClassItem> {
        let Some(c) = self.bump() else {
            return self.error_at(at, "\\ at end of pattern");
        };
        if let Some(escape) = ClassEscape::from_letter(c) {
            return Ok(ClassItem::Escape(escape));
        }
        match c {
            'b' => Ok(ClassItem::Char(0x08)),
            // With named groups `\k` is no identity escape, and it means nothing in a class.
            'k' if self.scan.has_names() => self.error_at(at, "invalid escape"),
            // No backreferences in classes: `\1` is octal, `\8` is `8`.
            _ => Ok(ClassItem::Char(self.character_escape(c, true))),
        }
    }
}

/// Write a JS class as a regex class. Lone surrogates cannot occur in a Rust string, so they are
/// dropped; a class left with nothing matches nothing (or anything, if negated), like JS `[]` and
/// `[^]`, which the regex crate cannot spell directly.
fn write_class(out: &mut String, negated: bool, items: &[ClassItem]) {
    let mut body = String::new();
    for &item in items {
        match item {
            ClassItem::Char(value) => {
                if let Some(c) = char::from_u32(value) {
                    push_char(&mut body, c);
                }
            }
            ClassItem::Range(lo, hi) => push_range(&mut body, lo, hi),
            ClassItem::Escape(escape) => escape.write_in_class(&mut body),
        }
    }
    if body.is_empty() {
        out.push_str(if negated { ANY_CHAR } else { NO_CHAR });
        return;
    }
    out.push('[');
    if negated {
        out.push('^');
    }
    out.push_str(&body);
    out.push(']');
}

/// A range minus the surrogate block.
fn push_range(body: &mut String, lo: u32, hi: u32) {
    for (lo, hi) in [(lo, hi.min(0xD7FF)), (lo.max(0xE000), hi)] {
        let (Some(lo), Some(hi)) = (char::from_u32(lo), char::from_u32(hi)) else {
            continue;
        };
        if lo > hi {
            continue;
        }
        push_char(body, lo);
        if lo < hi {
            body.push('-');
            push_char(body, hi);
        }
    }
}

/// Write `c` so the regex crate reads it as itself, inside or outside a class. Only true meta
/// characters are escaped: the regex crate gives meaning to escaped letters and to `\<` `\>`.
fn push_char(out: &mut String, c: char) {
    if "\\.+*?()|[]{}^$#&-~".contains(c) {
        out.push('\\');
        out.push(c);
    } else if c.is_control() || (c.is_whitespace() && c != ' ') {
        let _ = write!(out, "\\x{{{:X}}}", u32::from(c));
    } else {
        out.push(c);
    }
}

/// `{n}`, `{n,}` or `{n,m}` at the start of `s`, as (min, max, length in bytes). Counts saturate.
fn parse_braces(s: &str) -> Option<(u64, Option<u64>, usize)> {
    let inner = s.strip_prefix('{')?;
    let (min, min_len) = parse_decimal(inner)?;
    let after_min = &inner[min_len..];
    if after_min.starts_with('}') {
        return Some((min, Some(min), min_len + 2));
    }
    let after_comma = after_min.strip_prefix(',')?;
    if after_comma.starts_with('}') {
        return Some((min, None, min_len + 3));
    }
    let (max, max_len) = parse_decimal(after_comma)?;
    after_comma[max_len..].starts_with('}').then_some((min, Some(max), min_len + max_len + 3))
}

/// Leading ASCII digits of `s` (at least one), saturating.
fn parse_decimal(s: &str) -> Option<(u64, usize)> {
    let len = s.bytes().take_while(u8::is_ascii_digit).count();
    if len == 0 {
        return None;
    }
    let value = s[..len].bytes().fold(0u64, |value, digit| {
        value.saturating_mul(10).saturating_add(u64::from(digit - b'0'))
    });
    Some((value, len))
}

/// JS `RegExpIdentifierName`, approximated with std's Unicode tables.
fn is_js_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    let start = |c: char| c == '$' || c == '_' || c.is_alphabetic();
    start(first)
        && chars.all(|c| start(c) || c.is_alphanumeric() || c == '\u{200C}' || c == '\u{200D}')
}

/// Whether fancy-regex and the regex crate accept `name` in `(?P<name>…)`.
fn is_rust_group_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|first| first == '_' || first.is_alphabetic())
        && chars.all(|c| c == '_' || c.is_alphanumeric())
}

#[cfg(test)]
mod tests;
