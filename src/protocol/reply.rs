//! Reply lines for tool calls: a message, or a line made already with the tool's serialized
//! structured content spliced in.

use serde_json::Value;

/// A tool call's reply: a message, or a line made already (structured content spliced in).
pub enum Reply {
    Value(Value),
    Line(String),
}

impl Reply {
    /// For a batch, whose replies go out as one array.
    pub fn into_value(self) -> Value {
        match self {
            Reply::Value(value) => value,
            Reply::Line(line) => serde_json::from_str(&line).unwrap_or(Value::Null),
        }
    }
}

/// The reply line for `result` with `raw` (a serialized JSON object) as its
/// `structuredContent`, written as it is.
pub fn line_with_structured(id: &Value, result: &Value, raw: &str) -> String {
    let mut body = serde_json::to_vec(result).unwrap_or_else(|_| b"{}".to_vec());
    body.pop(); // the closing brace
    if body.len() > 1 {
        body.push(b',');
    }
    body.extend_from_slice(b"\"structuredContent\":");
    body.extend_from_slice(raw.as_bytes());
    body.push(b'}');
    let mut line = Vec::with_capacity(body.len() + 64);
    line.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    let _ = serde_json::to_writer(&mut line, id);
    line.extend_from_slice(b",\"result\":");
    line.extend_from_slice(&body);
    line.extend_from_slice(b"}\n");
    // Both parts are serde_json's UTF-8, and the tool's JSON is UTF-8 text.
    String::from_utf8(line).unwrap_or_default()
}
