//! `tools/call`: read the envelope, validate the arguments against the schema, run the tool
//! (a panic becomes -32603), render its output as MCP content, and write the result object:
//! the one writer of tool results, for the session's reply lines and `replay call --json`.

use std::panic::{catch_unwind, AssertUnwindSafe};

use serde_json::{json, Map, Value};

use crate::error::{self, ToolError};
use crate::policy::Policy;
use crate::progress::{Cancel, Progress};
use crate::protocol::jsonrpc::RpcError;
use crate::protocol::revision::{self, Revision};
use crate::reply_size::{json_len, json_len_range, push_json};
use crate::schema;
use crate::tools::table::Tool;
use crate::tools::{self, Content, Ctx, Output, Settings, Structured};
use crate::write_order::WriteTurn;

/// A `tools/call` result: its content and its structured data in the form the tool made them.
/// Rendered as MCP content items by `write_result`, as text by `replay call`; never parsed back.
#[derive(Debug)]
pub struct ToolReply {
    pub content: Vec<Content>,
    pub is_error: bool,
    pub structured: Option<Structured>,
}

/// A `tools/call`'s params as read, once, on arrival: the tool named and its arguments.
#[derive(Debug)]
pub struct ToolCall {
    pub tool: Tool,
    pub args: Value,
}

/// Reads and runs one `tools/call` to completion on the calling (blocking) thread.
pub fn call_tool(
    policy: &Policy,
    settings: &Settings,
    cancel: &Cancel,
    progress: &Progress,
    write_turn: &WriteTurn,
    params: Value,
) -> Result<ToolReply, RpcError> {
    let call = envelope(params)?;
    run(policy, settings, cancel, progress, write_turn, call)
}

/// Runs a call read by `envelope` to completion on the calling (blocking) thread.
pub fn run(
    policy: &Policy,
    settings: &Settings,
    cancel: &Cancel,
    progress: &Progress,
    write_turn: &WriteTurn,
    call: ToolCall,
) -> Result<ToolReply, RpcError> {
    let ToolCall { tool, mut args } = call;
    if !settings.serves(tool) {
        return Err(rpc_error(&unknown_tool(tool.name())));
    }
    let spec = tool.spec();
    if let Some(aliases) = spec.aliases {
        aliases(&mut args);
    }
    schema::of(tool).validate(&args).map_err(|e| rpc_error(&e))?;
    integral_floats_as_integers(&mut args);
    let ctx = Ctx { policy, settings, cancel, progress, write_turn };
    let outcome = catch_unwind(AssertUnwindSafe(|| tools::call(tool, &ctx, args)));
    let output = match outcome {
        Ok(result) => result.map_err(|e| rpc_error(&e))?,
        Err(panic) => {
            let detail = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "the tool panicked".to_string());
            tracing::error!(tool = %spec.name, %detail, "tool panicked");
            return Err(rpc_error(&ToolError::Panicked { detail }));
        }
    };
    Ok(reply(output))
}

fn unknown_tool(name: &str) -> ToolError {
    ToolError::invalid_params(
        "name",
        format!("names no tool of this server: {name:?}; see tools/list"),
    )
}

/// `{name, arguments}`, the name one of replay's tools; absent arguments are an empty object.
/// A tool the server does not serve is refused when run (`run`), with the same words.
pub fn envelope(params: Value) -> Result<ToolCall, RpcError> {
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
    let Some(tool) = Tool::from_name(&name) else {
        return Err(rpc_error(&unknown_tool(&name)));
    };
    let args = match params.remove("arguments") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(args) => args,
    };
    Ok(ToolCall { tool, args })
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

/// `--tool-errors result` (and `replay call --json`): the failure as a result the model can
/// read. Its structured content goes out only where the revision has structured output.
pub fn error_result(error: &RpcError) -> ToolReply {
    ToolReply {
        content: vec![Content::Text(error::as_text(error.code, &error.message))],
        is_error: true,
        structured: Some(Structured::Value(
            json!({"error": {"code": error.code, "message": error.message}}),
        )),
    }
}

fn reply(output: Output) -> ToolReply {
    ToolReply { content: output.content, is_error: output.is_error, structured: output.structured }
}

/// A tool's content item as MCP content items for `revision`: one, but for the paths a search
/// found (`Content::Found`), which from 2025-06-18 on are counted and followed by a
/// `resource_link` each. The text keeps the paths: a host that shows the model text only (or
/// a replay v2.1 client) still gets the answer.
fn render_items(content: Content, revision: Revision, out: &mut Vec<Value>) {
    let Content::Found { paths, notes } = content else {
        out.push(revision::tool_content(render_content(content), revision));
        return;
    };
    let linked = revision.has_structured_output();
    let text = Content::found_text(&paths, &notes, linked);
    out.push(render_content(Content::Text(text)));
    if linked {
        out.extend(paths.iter().map(|path| resource_link(path)));
    }
}

/// `{"type": "resource_link", "uri": "file:///…", "name": <basename>, "mimeType": …}`, the
/// type left out where the name does not say it (`link_mime_type`).
fn resource_link(path: &str) -> Value {
    let name = path.rsplit('/').next().unwrap_or(path);
    let mut link = Map::new();
    link.insert("type".to_owned(), Value::from("resource_link"));
    link.insert("uri".to_owned(), Value::String(file_uri(path)));
    link.insert("name".to_owned(), Value::from(name));
    if let Some(mime_type) = link_mime_type(name) {
        link.insert("mimeType".to_owned(), Value::from(mime_type));
    }
    Value::Object(link)
}

/// `file://` and the path, each byte but the unreserved ones and `/` as `%XX` (RFC 3986), so
/// that a space, `#`, `?` or `%` in a name stays part of the path.
pub fn file_uri(path: &str) -> String {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut uri = String::with_capacity(path.len() + 7);
    uri.push_str("file://");
    for &byte in path.as_bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~/".contains(&byte) {
            uri.push(char::from(byte));
        } else {
            uri.push('%');
            uri.push(char::from(HEX[usize::from(byte >> 4)]));
            uri.push(char::from(HEX[usize::from(byte & 0xf)]));
        }
    }
    uri
}

/// The media type a link's name says, for the kinds of file a search hands back; none for the
/// others, as a wrong type is worse than none to a client that dispatches on it.
pub fn link_mime_type(name: &str) -> Option<&'static str> {
    let (_, ext) = name.rsplit_once('.')?;
    let mime_type = match ext.to_ascii_lowercase().as_str() {
        "txt" | "text" => "text/plain",
        "md" | "markdown" => "text/markdown",
        "html" | "htm" => "text/html",
        "css" => "text/css",
        "js" | "mjs" => "text/javascript",
        "py" => "text/x-python",
        "swift" => "text/x-swift",
        "c" | "h" => "text/x-c",
        "cpp" | "cc" | "cxx" | "hpp" | "hh" | "mm" => "text/x-c++",
        "m" => "text/x-objcsrc",
        "rs" => "text/x-rust",
        "go" => "text/x-go",
        "json" => "application/json",
        "xml" => "application/xml",
        "yaml" | "yml" => "application/yaml",
        "toml" => "application/toml",
        "sh" | "bash" | "zsh" => "application/x-sh",
        "pdf" => "application/pdf",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "svg" => "image/svg+xml",
        _ => return None,
    };
    Some(mime_type)
}

/// An MCP content item. Built member by member, moving the tool's strings in: `json!` would
/// copy them (a 5 MiB file's text, or a 24 MiB tree, held twice).
fn render_content(content: Content) -> Value {
    let item = |kind: &str, members: Vec<(&str, Value)>| {
        let mut map = Map::new();
        map.insert("type".to_owned(), Value::from(kind));
        for (name, value) in members {
            map.insert(name.to_owned(), value);
        }
        Value::Object(map)
    };
    match content {
        Content::Text(text) => item("text", vec![("text", Value::String(text))]),
        Content::Image { data, mime_type } => {
            item("image", vec![("data", Value::String(data)), ("mimeType", Value::from(mime_type))])
        }
        Content::Audio { data, mime_type } => {
            item("audio", vec![("data", Value::String(data)), ("mimeType", Value::from(mime_type))])
        }
        Content::Blob { uri, data, mime_type } => {
            let mut resource = Map::new();
            resource.insert("uri".to_owned(), Value::String(uri));
            resource.insert("mimeType".to_owned(), Value::from(mime_type));
            resource.insert("blob".to_owned(), Value::String(data));
            item("resource", vec![("resource", Value::Object(resource))])
        }
        Content::Found { paths, notes } => {
            render_content(Content::Text(Content::found_text(&paths, &notes, false)))
        }
    }
}

/// Appends the result object to `out` as `revision` knows results: content items it knows,
/// `structuredContent` from 2025-06-18 (the tool's serialized JSON spliced in as it is), the
/// modern era's marks. Its exact length is measured first: `Err(len)`, with `out` untouched,
/// when `out` would grow past `limit` bytes, so an oversized reply is never built.
pub fn write_result(
    reply: ToolReply,
    revision: Revision,
    out: &mut Vec<u8>,
    limit: usize,
) -> Result<(), usize> {
    let mut content: Vec<Value> = Vec::with_capacity(reply.content.len());
    for item in reply.content {
        render_items(item, revision, &mut content);
    }
    let structured = reply.structured.filter(|_| revision.has_structured_output());
    let modern = revision.is_modern().then(|| revision::modern_result(json!({})).to_string());
    let (is_error, structured_ref, modern_ref) =
        (reply.is_error, structured.as_ref(), modern.as_deref());
    let (least, most) = result_len(&content, is_error, structured_ref, modern_ref, json_len_range);
    let room = if out.len() + most <= limit {
        // Within the limit however its strings escape, so they need not be counted exactly:
        // a pass over all their bytes, a fifth of a 5 MiB read_file's time. Room for them as
        // they are and an eighth more (a Vec grows past it if they escape more).
        least + least / 8
    } else {
        let exact = |value: &Value| {
            let len = json_len(value);
            (len, len)
        };
        let (len, _) = result_len(&content, is_error, structured_ref, modern_ref, exact);
        if out.len() + len > limit {
            return Err(out.len() + len);
        }
        len
    };
    // And room for what closes the line after it (the envelope's brace, the newline).
    out.reserve(room + 2);
    out.extend_from_slice(b"{\"content\":[");
    // Each item is dropped once written, so that a big reply's text and its line are held
    // together only while that item is written.
    for (i, item) in content.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        push_json(out, &item);
    }
    out.push(b']');
    if reply.is_error {
        out.extend_from_slice(b",\"isError\":true");
    }
    match structured {
        Some(Structured::Value(value)) => {
            out.extend_from_slice(b",\"structuredContent\":");
            push_json(out, &value);
        }
        Some(Structured::Json(json)) => {
            out.extend_from_slice(b",\"structuredContent\":");
            out.extend_from_slice(json.as_bytes());
        }
        None => {}
    }
    if let Some(modern) = &modern {
        // `{"_meta":…,"resultType":…}`, its members after ours.
        out.push(b',');
        out.extend_from_slice(&modern.as_bytes()[1..modern.len() - 1]);
    }
    out.push(b'}');
    Ok(())
}

/// The least and the most that `write_result` writes, when `measure` gives the least and the
/// most a value takes as JSON (both exact with `json_len`).
fn result_len(
    content: &[Value],
    is_error: bool,
    structured: Option<&Structured>,
    modern: Option<&str>,
    measure: impl Fn(&Value) -> (usize, usize),
) -> (usize, usize) {
    let mut fixed = r#"{"content":[]}"#.len() + content.len().saturating_sub(1);
    let (mut least, mut most) = (0, 0);
    let mut add = |(lo, hi): (usize, usize)| {
        least += lo;
        most += hi;
    };
    content.iter().map(&measure).for_each(&mut add);
    if is_error {
        fixed += r#","isError":true"#.len();
    }
    match structured {
        Some(Structured::Value(value)) => {
            fixed += r#","structuredContent":"#.len();
            add(measure(value));
        }
        Some(Structured::Json(json)) => fixed += r#","structuredContent":"#.len() + json.len(),
        None => {}
    }
    fixed += modern.map_or(0, |m| m.len() - 1);
    (fixed + least, fixed + most)
}

#[cfg(test)]
mod tests;
