//! The JSON and JSONC clients' files: the `replay` entry put into, or taken out of, the object
//! under the client's key, through jsonc-parser's CST so that every comment, trailing comma
//! and layout it does not touch stays as the user wrote it.

use jsonc_parser::cst::{CstInputValue, CstObject, CstRootNode};
use jsonc_parser::ParseOptions;

use super::{json_file, json_value, Edit, Entry, Field, NAME};

/// `text` with `entry` as `KEY.replay`. A file of whitespace only becomes the entry's own file.
pub fn put(text: &str, key: &str, entry: &Entry) -> Result<Edit, String> {
    if text.trim().is_empty() {
        return Ok(Edit::Write(json_file(key, entry)));
    }
    let root = parse(text)?;
    let servers = servers(&root, key)?;
    let existing = match &servers {
        Some(servers) => servers.get(NAME),
        None => None,
    };
    let wanted = json_value(entry);
    let replaces = match &existing {
        Some(prop) => {
            let held = prop.value().and_then(|v| v.to_serde_value());
            if held.as_ref() == Some(&wanted) {
                return Ok(Edit::Same);
            }
            true
        }
        None => false,
    };
    match (servers, existing) {
        (_, Some(prop)) => prop.set_value(input(entry)),
        (Some(servers), None) => {
            servers.append(NAME, input(entry));
        }
        (None, None) => {
            let object = root.object_value().ok_or_else(not_an_object)?;
            object.append(key, CstInputValue::Object(vec![(NAME.to_string(), input(entry))]));
        }
    }
    let new_text = root.to_string();
    Ok(if replaces { Edit::Replace(new_text) } else { Edit::Write(new_text) })
}

/// `text` without `KEY.replay`, or `None` when it holds no such entry. The object under `key`
/// stays, emptied, since the client may have written it itself.
pub fn take(text: &str, key: &str) -> Result<Option<String>, String> {
    if text.trim().is_empty() {
        return Ok(None);
    }
    let root = parse(text)?;
    let Some(prop) = servers(&root, key)?.and_then(|servers| servers.get(NAME)) else {
        return Ok(None);
    };
    prop.remove();
    Ok(Some(root.to_string()))
}

/// JSONC as VS Code and Zed read it: JSON with comments and trailing commas. The parser's
/// default also takes missing commas, single quotes, hex numbers and more, which would let a
/// broken file through and be rewritten.
const JSONC: ParseOptions = ParseOptions {
    allow_comments: true,
    allow_trailing_commas: true,
    allow_loose_object_property_names: false,
    allow_missing_commas: false,
    allow_single_quoted_strings: false,
    allow_hexadecimal_numbers: false,
    allow_unary_plus_numbers: false,
    allow_bare_decimal_point_numbers: false,
    allow_non_finite_numbers: false,
    allow_extended_string_escapes: false,
};

fn parse(text: &str) -> Result<CstRootNode, String> {
    let root =
        CstRootNode::parse(text, &JSONC).map_err(|e| format!("it is not valid JSON: {e}"))?;
    if root.object_value().is_none() {
        return Err(not_an_object());
    }
    Ok(root)
}

/// The object under `key`, `None` when the file has no `key`; an error when `key` holds
/// something else than an object, which the client would not read as servers either.
fn servers(root: &CstRootNode, key: &str) -> Result<Option<CstObject>, String> {
    let object = root.object_value().ok_or_else(not_an_object)?;
    let Some(prop) = object.get(key) else {
        return Ok(None);
    };
    match prop.object_value() {
        Some(servers) => Ok(Some(servers)),
        None => Err(format!("its {key:?} is not an object; fix or remove it, then run again")),
    }
}

fn not_an_object() -> String {
    "its top level is not a JSON object".to_string()
}

fn input(entry: &Entry) -> CstInputValue {
    let fields = entry.iter().map(|(name, field)| {
        let value = match field {
            Field::Text(text) => CstInputValue::String(text.clone()),
            Field::Bool(flag) => CstInputValue::Bool(*flag),
            Field::List(items) => {
                CstInputValue::Array(items.iter().cloned().map(CstInputValue::String).collect())
            }
        };
        (name.to_string(), value)
    });
    CstInputValue::Object(fields.collect())
}
