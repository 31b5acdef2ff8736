//! `tools/call`: read the envelope, validate the arguments against the schema, run the tool
//! (a panic becomes -32603), and render its output as MCP content.

use std::panic::{catch_unwind, AssertUnwindSafe};

use serde_json::{json, Map, Value};

use crate::error::ToolError;
use crate::policy::Policy;
use crate::protocol::jsonrpc::RpcError;
use crate::protocol::revision::Revision;
use crate::schema;
use crate::tools::{self, Cancel, Content, Ctx, Output, Progress, Settings};

/// A `tools/call` result, and its structured content when the tool had it serialized already:
/// it goes into the reply's line as it is (`protocol::session`).
pub struct ToolReply {
    pub result: Value,
    pub structured_json: Option<String>,
}

/// Runs one `tools/call` to completion on the calling (blocking) thread.
pub fn call_tool(
    policy: &Policy,
    settings: &Settings,
    cancel: &Cancel,
    progress: &Progress,
    params: Value,
) -> Result<ToolReply, RpcError> {
    let (name, args) = envelope(params)?;
    let def = schema::find(&name).filter(|_| settings.serves(&name)).ok_or_else(|| {
        rpc_error(&ToolError::invalid_params(
            "name",
            format!("names no tool of this server: {name:?}; see tools/list"),
        ))
    })?;
    def.validate(&args).map_err(|e| rpc_error(&e))?;
    let mut args = args;
    integral_floats_as_integers(&mut args);
    let ctx = Ctx { policy, settings, cancel, progress };
    let outcome = catch_unwind(AssertUnwindSafe(|| tools::call(&name, &ctx, args)));
    let output = match outcome {
        Ok(result) => result.map_err(|e| rpc_error(&e))?,
        Err(panic) => {
            let detail = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "the tool panicked".to_string());
            tracing::error!(tool = %name, %detail, "tool panicked");
            return Err(rpc_error(&ToolError::Panicked { detail }));
        }
    };
    Ok(render(output))
}

/// `{name, arguments}`; absent arguments are an empty object.
fn envelope(params: Value) -> Result<(String, Value), RpcError> {
    let Value::Object(mut params) = params else {
        return Err(rpc_error(&ToolError::invalid_params(
            "params",
            "must be an object with `name` and `arguments`",
        )));
    };
    let name = match params.remove("name") {
        Some(Value::String(name)) => name,
        Some(_) => return Err(rpc_error(&ToolError::invalid_params("name", "must be a string"))),
        None => return Err(rpc_error(&ToolError::invalid_params("name", "is required"))),
    };
    let args = match params.remove("arguments") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(args) => args,
    };
    Ok((name, args))
}

/// JSON Schema counts `1.0` as an integer, serde's `usize` does not: after validation, a
/// whole-number float is the integer it spells. In place: most arguments have no float at all.
fn integral_floats_as_integers(value: &mut Value) {
    match value {
        Value::Number(n) if n.is_f64() => {
            let Some(f) = n.as_f64().filter(|f| f.fract() == 0.0) else { return };
            if (0.0..=u64::MAX as f64).contains(&f) {
                *value = Value::from(f as u64);
            } else if (i64::MIN as f64..0.0).contains(&f) {
                *value = Value::from(f as i64);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integral_floats_as_integers),
        Value::Object(map) => map.values_mut().for_each(integral_floats_as_integers),
        _ => {}
    }
}

pub fn rpc_error(error: &ToolError) -> RpcError {
    RpcError::new(error.code(), error.to_string())
}

/// `--tool-errors result` (and `replay call --json`): the failure as a result the model can read.
pub fn error_result(error: &RpcError, revision: Revision) -> Value {
    let mut result = json!({
        "content": [{"type": "text", "text": format!("error {}: {}", error.code, error.message)}],
        "isError": true,
    });
    if revision.has_structured_output() {
        result["structuredContent"] =
            json!({"error": {"code": error.code, "message": error.message}});
    }
    result
}

fn render(output: Output) -> ToolReply {
    let structured_json = output.structured_json;
    let content: Vec<Value> = output.content.into_iter().map(render_content).collect();
    let mut result = json!({ "content": content });
    if output.is_error {
        result["isError"] = Value::Bool(true);
    }
    if let Some(structured) = output.structured {
        result["structuredContent"] = structured;
    }
    ToolReply { result, structured_json }
}

fn render_content(content: Content) -> Value {
    match content {
        Content::Text(text) => json!({"type": "text", "text": text}),
        Content::Image { data, mime_type } => {
            json!({"type": "image", "data": data, "mimeType": mime_type})
        }
        Content::Audio { data, mime_type } => {
            json!({"type": "audio", "data": data, "mimeType": mime_type})
        }
        Content::Blob { uri, data, mime_type } => json!({
            "type": "resource",
            "resource": {"uri": uri, "mimeType": mime_type, "blob": data},
        }),
    }
}
