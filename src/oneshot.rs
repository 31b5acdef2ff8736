//! replay without an MCP client: `replay call` runs one tool through the server's own
//! `tools/call` path (`protocol::dispatch`: schema validation, the policy, the tool), and
//! `replay tools` and `replay schema` print what `schemas/` says.
//!
//! Each function returns what to print; `main` writes it (stdout through
//! `protocol::transport`, the only stdout writer) and exits with the status.

use serde_json::{json, Value};

use crate::error;
use crate::policy::Policy;
use crate::progress::{Cancel, Progress};
use crate::protocol::dispatch::{self, ToolReply};
use crate::protocol::jsonrpc::RpcError;
use crate::protocol::revision::LATEST_LEGACY;
use crate::reply_size::MAX_REPLY_BYTES;
use crate::schema;
use crate::tools::{Content, Settings};
use crate::write_order::WriteTurn;

/// What a one-shot command prints, and its exit status.
#[derive(Debug, PartialEq, Eq)]
pub struct Answer {
    pub stdout: String,
    pub stderr: String,
    pub status: u8,
}

/// The tool, its arguments and how to print the result.
pub struct Request {
    pub tool: String,
    pub args: Value,
    /// Print the MCP result object as JSON instead of its text.
    pub json: bool,
}

/// Runs the tool once and renders its result: the text of each content item (or, with `json`,
/// the MCP result object). A failure is `error CODE: message` on stderr and status 1.
pub fn call(policy: &Policy, settings: &Settings, cancel: &Cancel, request: Request) -> Answer {
    let Request { tool, args, json } = request;
    let params = json!({"name": tool, "arguments": args});
    let outcome = dispatch::call_tool(
        policy,
        settings,
        cancel,
        &Progress::default(),
        &WriteTurn::default(),
        params,
    );
    let reply = match outcome {
        Ok(reply) => reply,
        Err(error) => {
            let stdout =
                if json { json_line(dispatch::error_result(&error)) } else { String::new() };
            let stderr = format!("replay: {}\n", error::as_text(error.code, &error.message));
            return Answer { stdout, stderr, status: 1 };
        }
    };
    let status = u8::from(reply.is_error);
    match (json, reply.is_error) {
        (true, _) => Answer { stdout: json_line(reply), stderr: String::new(), status },
        (false, false) => Answer { stdout: text_of(&reply.content), stderr: String::new(), status },
        (false, true) => Answer { stdout: String::new(), stderr: text_of(&reply.content), status },
    }
}

/// The result object as a 2025-11-25 client would get it, structured content included, on
/// one line. Written by the server's own writer, so it is never larger than a reply may be.
fn json_line(reply: ToolReply) -> String {
    let mut line = Vec::new();
    match dispatch::write_result(reply, LATEST_LEGACY, &mut line, MAX_REPLY_BYTES) {
        Ok(()) => {
            line.push(b'\n');
            String::from_utf8(line).unwrap_or_default()
        }
        Err(len) => {
            let error = RpcError::new(
                error::INTERNAL,
                format!("the result would be {len} bytes of JSON, over the limit of {MAX_REPLY_BYTES}; ask for less"),
            );
            json_line(dispatch::error_result(&error))
        }
    }
}

/// Each content item on its own, ending in a newline: text as it is, binary as a note (the data
/// is base64 in `--json`'s output).
fn text_of(content: &[Content]) -> String {
    let mut out = String::new();
    for item in content {
        let (kind, mime_type, data) = match item {
            Content::Text(text) => {
                out.push_str(text);
                if !out.ends_with('\n') {
                    out.push('\n');
                }
                continue;
            }
            Content::Image { data, mime_type } => ("image", mime_type, data),
            Content::Audio { data, mime_type } => ("audio", mime_type, data),
            Content::Blob { data, mime_type, .. } => ("resource", mime_type, data),
            Content::Found { paths, notes } => {
                out.push_str(&Content::found_text(paths, notes, false));
                out.push('\n');
                continue;
            }
        };
        let bytes = (data.len() / 4 * 3).saturating_sub(padding(data));
        out.push_str(&format!(
            "[{kind} {mime_type}, {bytes} bytes: --json gives its data as base64]\n"
        ));
    }
    out
}

fn padding(base64: &str) -> usize {
    base64.bytes().rev().take_while(|&b| b == b'=').count()
}

/// `replay tools`: one line per tool served, its name and the first sentence of its
/// description, in tools/list order.
pub fn tools_summary(served: &[&str]) -> String {
    let width = served.iter().map(|n| n.len()).max().unwrap_or(0);
    let mut out = String::new();
    for name in served {
        let Some(def) = schema::find(name) else { continue };
        let description = def.definition["description"].as_str().unwrap_or_default();
        out.push_str(&format!("{name:width$}  {}\n", first_sentence(description)));
    }
    out
}

/// Up to the first period that ends the text or is followed by whitespace.
fn first_sentence(text: &str) -> &str {
    let bytes = text.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'.' && bytes.get(i + 1).is_none_or(u8::is_ascii_whitespace) {
            return &text[..=i];
        }
    }
    text
}

/// `replay schema`: the tool's input schema as pretty JSON; `None` for a name no tool has.
pub fn schema_text(tool: &str) -> Option<String> {
    let def = schema::find(tool)?;
    serde_json::to_string_pretty(def.input_schema()).ok().map(|text| text + "\n")
}

#[cfg(test)]
mod tests;
