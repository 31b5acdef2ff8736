//! The tool schemas in `schemas/`, embedded at compile time: the one source for `tools/list`,
//! argument validation and README's tool table.

use std::fmt;
use std::sync::OnceLock;

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::ValidationError;
use serde_json::Value;

use crate::error::ToolError;

/// Embeds `schemas/<name>.json` for each tool, in the order `tools/list` serves them.
macro_rules! embed {
    ($($name:literal),* $(,)?) => {
        &[$(($name, include_str!(concat!("../schemas/", $name, ".json")))),*]
    };
}

/// `(tool name, schema file text)`.
pub static FILES: &[(&str, &str)] = embed!(
    "read_file",
    "read_multiple_files",
    "write_file",
    "create_directory",
    "list_directory",
    "directory_tree",
    "move_file",
    "copy_file",
    "delete_file",
    "get_file_info",
    "list_allowed_directories",
    "edit_file",
    "edit_files",
    "search_files",
    "glob_search",
    "grep_files",
    "execute_command",
    "command_session",
);

/// One tool's definition as served by `tools/list`, and its compiled validator.
pub struct ToolDef {
    pub name: &'static str,
    pub definition: Value,
    validator: OnceLock<Result<jsonschema::Validator, String>>,
}

/// All definitions, parsed on first use (start-up stays fast: a client that only pings never
/// pays for JSON parsing or schema compilation).
pub fn definitions() -> &'static [ToolDef] {
    static DEFS: OnceLock<Vec<ToolDef>> = OnceLock::new();
    DEFS.get_or_init(|| {
        FILES
            .iter()
            .map(|(name, text)| ToolDef {
                name,
                // The files are checked by `tests::every_schema_compiles`; a broken one is a
                // build defect, not a runtime condition.
                definition: serde_json::from_str(text).unwrap_or(Value::Null),
                validator: OnceLock::new(),
            })
            .collect()
    })
}

pub fn find(name: &str) -> Option<&'static ToolDef> {
    definitions().iter().find(|d| d.name == name)
}

impl ToolDef {
    pub fn input_schema(&self) -> &Value {
        &self.definition["inputSchema"]
    }

    /// Whether the tool writes files (its annotations say it is not read-only, and it is not
    /// execute_command, whose effects are open-ended and which may run for a minute).
    pub fn changes_files(&self) -> bool {
        let hints = &self.definition["annotations"];
        hints["readOnlyHint"] == false && hints["openWorldHint"] != true
    }

    fn validator(&self) -> &Result<jsonschema::Validator, String> {
        self.validator.get_or_init(|| {
            jsonschema::validator_for(self.input_schema()).map_err(|e| e.to_string())
        })
    }

    /// Checks `args` against the tool's input schema; the error names the offending field.
    ///
    /// An argument the schema does not name is refused first, with the nearest known name:
    /// a misspelled optional argument would otherwise be dropped without a word (`dry_run` on
    /// edit_file wrote the file). Then jsonschema checks the rest and stops at its first error:
    /// collecting every error (`iter_errors`) built one per element of a 20 MB array, 190 bytes
    /// per byte of request.
    pub fn validate(&self, args: &Value) -> Result<(), ToolError> {
        let validator = match self.validator() {
            Ok(v) => v,
            Err(detail) => {
                let (tool, detail) = (self.name.to_string(), detail.clone());
                return Err(ToolError::BrokenSchema { tool, detail });
            }
        };
        check_names(self.input_schema(), args, &mut Vec::new())?;
        let Err(error) = validator.validate(args) else {
            return Ok(());
        };
        let location = field_name(error.instance_path().as_str());
        if let ValidationErrorKind::Required { property } = error.kind() {
            let property = property.as_str().unwrap_or_default();
            let field = if location.is_empty() {
                property.to_string()
            } else {
                format!("{location}.{property}")
            };
            return Err(ToolError::invalid_params(&field, "is required"));
        }
        let field = if location.is_empty() { "arguments" } else { &location };
        Err(ToolError::invalid_params(field, detail(&error)))
    }
}

/// A step into the arguments: an object's key or an array's index.
enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

/// Refuses the first key of `args` that its (sub)schema closes off with
/// `additionalProperties: false`, walking objects and arrays as deep as the schema describes
/// them. The schema's depth bounds the recursion, whatever the arguments' depth.
fn check_names<'a>(
    schema: &Value,
    args: &'a Value,
    at: &mut Vec<Step<'a>>,
) -> Result<(), ToolError> {
    match args {
        Value::Object(map) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
            for (key, value) in map {
                match properties.and_then(|p| p.get(key)) {
                    Some(sub) => {
                        at.push(Step::Key(key));
                        check_names(sub, value, at)?;
                        at.pop();
                    }
                    None if closed => {
                        at.push(Step::Key(key));
                        let known: Vec<&str> = properties
                            .map(|p| p.keys().map(String::as_str).collect())
                            .unwrap_or_default();
                        return Err(ToolError::invalid_params(&path_of(at), unknown(key, &known)));
                    }
                    None => {}
                }
            }
        }
        Value::Array(items) => {
            let Some(item_schema) = schema.get("items") else { return Ok(()) };
            for (i, item) in items.iter().enumerate() {
                // Only objects can hold a name to refuse; a long array of strings is skipped
                // without a step per element.
                if !item.is_object() && !item.is_array() {
                    continue;
                }
                at.push(Step::Index(i));
                check_names(item_schema, item, at)?;
                at.pop();
            }
        }
        _ => {}
    }
    Ok(())
}

/// `edits[0].new_text` from its steps. A key is the client's, so it is cut at 64 characters
/// and its control characters escaped: the error stays one short line.
fn path_of(at: &[Step<'_>]) -> String {
    const MAX_KEY_CHARS: usize = 64;
    let mut out = String::new();
    for step in at {
        match step {
            Step::Key(key) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.extend(key.chars().take(MAX_KEY_CHARS).flat_map(char::escape_debug));
                if key.chars().nth(MAX_KEY_CHARS).is_some() {
                    out.push('…');
                }
            }
            Step::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

/// The detail of an unknown-name error: the nearest known name, or all of them.
fn unknown(key: &str, known: &[&str]) -> String {
    match nearest(key, known) {
        Some(name) => format!("is not a known argument; did you mean `{name}`?"),
        None if known.is_empty() => "is not a known argument; this takes none".to_string(),
        None => format!("is not a known argument; known here: {}", known.join(", ")),
    }
}

/// The known name nearest to `key`, when it is near enough to be a slip: the same once case,
/// `_` and `-` are folded away (`dry_run`, `DryRun` → `dryRun`), or a few edits apart
/// (`offest` → `offset`), at most one edit per three letters. Failing that, a name that starts
/// or ends with the whole key, when the key has four letters or more (`regex` → `isRegex`, the
/// name replay v2.1's own tests use; `exclude` → `excludeGlobs`), if only one name does.
fn nearest<'k>(key: &str, known: &[&'k str]) -> Option<&'k str> {
    let fold = |s: &str| -> Vec<char> {
        s.chars().filter(|c| *c != '_' && *c != '-').flat_map(char::to_lowercase).collect()
    };
    // Names longer than any argument's are no slip of one; this also bounds the work below.
    if key.len() > 64 {
        return None;
    }
    let key = fold(key);
    let slip = known
        .iter()
        .map(|name| (edit_distance(&key, &fold(name)), *name))
        .filter(|(d, name)| *d <= (key.len().min(name.len()) / 3).max(1))
        .min_by_key(|(d, _)| *d)
        .map(|(_, name)| name);
    slip.or_else(|| {
        if key.len() < 4 {
            return None;
        }
        let mut holding = known.iter().filter(|name| {
            let name = fold(name);
            name.starts_with(&key) || name.ends_with(&key)
        });
        // Only one such name makes a suggestion: `text` could be oldText or newText.
        match (holding.next(), holding.next()) {
            (Some(name), None) => Some(*name),
            _ => None,
        }
    })
}

/// Optimal string alignment distance: insertions, deletions, substitutions and swaps of two
/// neighbours each count one.
fn edit_distance(a: &[char], b: &[char]) -> usize {
    let mut rows = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in rows[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (rows[i - 1][j] + 1).min(rows[i][j - 1] + 1).min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = d;
        }
    }
    rows[a.len()][b.len()]
}

/// What a schema error says, without quoting the value: the value may be megabytes long.
fn detail(error: &ValidationError<'_>) -> String {
    let instance = error.instance();
    match error.kind() {
        ValidationErrorKind::Type { kind } => {
            let expected = match kind {
                TypeKind::Single(t) => a_type(&t.to_string()),
                TypeKind::Multiple(set) => {
                    set.iter().map(|t| a_type(&t.to_string())).collect::<Vec<_>>().join(" or ")
                }
            };
            format!("must be {expected}, not {}", a_type(type_of(instance)))
        }
        ValidationErrorKind::Minimum { limit } => format!("must be at least {limit}"),
        ValidationErrorKind::Maximum { limit } => format!("must be at most {limit}"),
        ValidationErrorKind::MinItems { limit } => format!("needs at least {limit} item(s)"),
        ValidationErrorKind::MaxItems { limit } => format!("takes at most {limit} items"),
        ValidationErrorKind::MinLength { limit } => format!("needs at least {limit} character(s)"),
        ValidationErrorKind::MaxLength { limit } => format!("takes at most {limit} characters"),
        ValidationErrorKind::Enum { options } => format!("must be one of {options}"),
        ValidationErrorKind::Constant { expected_value } => format!("must be {expected_value}"),
        // The keywords above are all that `schemas/` uses; anything else is said as jsonschema
        // says it, cut short.
        _ => {
            let mut text = Bounded(String::new());
            // Err means the text was cut, which is the point.
            let _ = fmt::write(&mut text, format_args!("{error}"));
            text.0
        }
    }
}

/// `a string`, `an integer`, `an object`.
fn a_type(name: &str) -> String {
    let article = if name.starts_with(['a', 'e', 'i', 'o', 'u']) { "an" } else { "a" };
    format!("{article} {name}")
}

/// The JSON Schema type name of a value.
fn type_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A text that takes at most 200 bytes and then refuses more, so formatting a huge value
/// stops early instead of allocating its whole rendering.
struct Bounded(String);

impl fmt::Write for Bounded {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        const MAX: usize = 200;
        let room = MAX - self.0.len();
        if s.len() <= room {
            self.0.push_str(s);
            return Ok(());
        }
        let mut end = room;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        self.0.push_str(&s[..end]);
        self.0.push('…');
        Err(fmt::Error)
    }
}

/// `/edits/0/oldText` → `edits[0].oldText`.
fn field_name(pointer: &str) -> String {
    let mut out = String::new();
    for part in pointer.split('/').skip(1) {
        let part = part.replace("~1", "/").replace("~0", "~");
        if part.bytes().all(|b| b.is_ascii_digit()) && !part.is_empty() {
            out.push_str(&format!("[{part}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&part);
        }
    }
    out
}

#[cfg(test)]
mod tests;
