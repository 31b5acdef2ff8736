//! `tools/list`: the tools this configuration serves, as each revision describes tools, built
//! once per revision.

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::{json, Value};

use crate::protocol::lock;
use crate::protocol::revision::{self, Revision};
use crate::schema;
use crate::tools::Settings;

/// `tools/list` results by revision, built on first use. The list is fixed for the life of
/// the process.
#[derive(Default)]
pub struct ToolsLists(Mutex<HashMap<Revision, Value>>);

impl ToolsLists {
    /// The list for `revision`. With `error_results` (`--tool-errors result`), each output
    /// schema also admits the error's structured content.
    pub fn get(&self, revision: Revision, settings: &Settings, error_results: bool) -> Value {
        let mut lists = lock(&self.0);
        let list = lists.entry(revision).or_insert_with(|| {
            let tools: Vec<Value> = schema::definitions()
                .iter()
                .filter(|d| settings.serves(d.tool))
                .map(|d| {
                    let mut def = revision::tool_definition(&d.definition, revision);
                    if error_results {
                        admit_error_output(&mut def);
                    }
                    def
                })
                .collect();
            let mut list = json!({ "tools": tools });
            if revision.is_modern() {
                // The list is fixed for the life of the process, and depends on its command
                // line, not on who asks.
                list["ttlMs"] = json!(300_000);
                list["cacheScope"] = json!("private");
            }
            list
        });
        list.clone()
    }
}

/// With `--tool-errors result`, an error result's `structuredContent` is `{error: {code,
/// message}}`: a declared output schema must admit it (clients validate even error results).
fn admit_error_output(definition: &mut Value) {
    let Some(schema) = definition.get_mut("outputSchema") else { return };
    let error = json!({
        "type": "object",
        "properties": {"error": {
            "type": "object",
            "properties": {"code": {"type": "integer"}, "message": {"type": "string"}},
            "required": ["code", "message"],
        }},
        "required": ["error"],
    });
    *schema = json!({"type": "object", "anyOf": [schema.take(), error]});
}
