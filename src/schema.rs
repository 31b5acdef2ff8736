//! The tool schemas in `schemas/`, embedded at compile time: the one source for `tools/list`,
//! argument validation and README's tool table.

use std::sync::OnceLock;

use jsonschema::error::ValidationErrorKind;
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
    pub fn validate(&self, args: &Value) -> Result<(), ToolError> {
        let validator = match self.validator() {
            Ok(v) => v,
            Err(detail) => return Err(ToolError::Panicked { detail: detail.clone() }),
        };
        // The common case first: `is_valid` builds no error values.
        if validator.is_valid(args) {
            return Ok(());
        }
        let Some(error) = validator.iter_errors(args).next() else {
            return Ok(());
        };
        let location = field_name(error.instance_path().as_str());
        Err(match error.kind() {
            ValidationErrorKind::Required { property } => {
                let property = property.as_str().unwrap_or_default();
                let field = if location.is_empty() {
                    property.to_string()
                } else {
                    format!("{location}.{property}")
                };
                ToolError::invalid_params(&field, "is required")
            }
            _ if location.is_empty() => ToolError::invalid_params("arguments", error.to_string()),
            _ => ToolError::invalid_params(&location, error.to_string()),
        })
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
