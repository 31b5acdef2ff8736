//! JSON-RPC 2.0 messages: reading a line (one message or a batch), classifying what arrives,
//! writing reply lines, the protocol codes.
//!
//! An id is kept as the JSON text the client sent (`Id`, a `RawValue`) from the moment its line
//! is read until it is written back, so `123456789012345678901234567890` or `1.0` come back
//! as sent, not as an `f64`'s rendering. Replies are written as lines once and never parsed
//! back.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::Value;

pub const PARSE_ERROR: i32 = -32700;
pub const INVALID_REQUEST: i32 = -32600;
pub const METHOD_NOT_FOUND: i32 = -32601;
// -32602 and -32603, which a tool can cause too, are defined once, with the contract's codes,
// in `error`.

/// An error object for a response.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i32,
    pub message: String,
    pub data: Option<Value>,
}

impl RpcError {
    pub fn new(code: i32, message: impl Into<String>) -> RpcError {
        RpcError { code, message: message.into(), data: None }
    }

    pub fn with_data(self, data: Value) -> RpcError {
        RpcError { data: Some(data), ..self }
    }
}

/// A request id as the client wrote it: a JSON string, number or null, kept as its text.
#[derive(Debug, Clone)]
pub struct Id(Box<RawValue>);

impl Id {
    /// The id of a reply to a message whose id could not be read.
    pub fn null() -> Id {
        Id(RawValue::from_string("null".to_owned()).expect("null is JSON"))
    }

    /// The JSON text, as sent.
    pub fn as_json(&self) -> &str {
        self.0.get()
    }

    /// What identifies the request: a string by its characters (`"\u0061"` is `"a"`), a
    /// number or null by its text.
    pub fn key(&self) -> String {
        match self.as_string() {
            Some(text) => serde_json::to_string(&text).unwrap_or_else(|_| self.0.get().to_owned()),
            None => self.0.get().to_owned(),
        }
    }

    /// The id's characters, when it is a string.
    pub fn as_string(&self) -> Option<String> {
        serde_json::from_str(self.0.get()).ok()
    }

    /// A string, a number or null: what JSON-RPC allows.
    fn is_valid(&self) -> bool {
        matches!(self.0.get().as_bytes().first(), Some(b'"' | b'-' | b'0'..=b'9' | b'n'))
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.get())
    }
}

/// One message from the client.
#[derive(Debug)]
pub enum Message {
    /// Has an `id` (possibly `null`, which is answered with `"id": null`): needs a response.
    Request { id: Id, method: String, params: Value },
    /// No `id`: never answered.
    Notification { method: String, params: Value },
    /// A response to a request the server sent (e.g. `roots/list`).
    Response { id: Id, outcome: Result<Value, Value> },
}

/// A line as read: one message, or a batch of them, each with its own text (for what must be
/// read raw from it, such as the id a cancellation names).
pub enum Incoming<'a> {
    One(Element<'a>),
    Batch(Vec<Element<'a>>),
}

/// One message of a line: its members as read, not yet classified.
pub struct Element<'a> {
    pub text: &'a str,
    envelope: Envelope,
}

/// The members JSON-RPC looks at; any other is read (for its nesting) and dropped. A member
/// given twice counts once, the last time, as in a JSON object.
#[derive(Default)]
struct Envelope {
    object: bool,
    jsonrpc: Option<Value>,
    id: Option<Id>,
    method: Option<Value>,
    params: Option<Value>,
    result: Option<Value>,
    error: Option<Value>,
}

/// Reads one line: a message or a batch, or the error to answer it with and the id to answer
/// with (null unless the line could be read far enough to find one). A line that is not JSON
/// (nested past serde_json's 128 levels, numbers out of range, strings that are not Unicode) is
/// a -32700; a line whose values would take far more memory than its bytes (`read_cost`) is a
/// -32600, refused before it is read into values.
pub fn parse(line: &[u8]) -> Result<Incoming<'_>, (Id, RpcError)> {
    let parse_error = |e: serde_json::Error| {
        (Id::null(), RpcError::new(PARSE_ERROR, format!("parse error: {e}")))
    };
    let text = std::str::from_utf8(line).map_err(|e| {
        (Id::null(), RpcError::new(PARSE_ERROR, format!("parse error: not UTF-8 ({e})")))
    })?;
    // A batch is always estimated: its message count is bounded whatever its length.
    if line.len() >= READ_COST_CHECKED_FROM || text.trim_start().starts_with('[') {
        let ReadCost { bytes: cost, depth, elements } = read_cost(line);
        let bound = line.len().saturating_mul(READ_COST_PER_BYTE) + READ_COST_SLACK;
        // Refused here, not left to serde_json: it would stop only where it meets the deep
        // part, maybe after reading everything before it.
        if depth > MAX_NESTING {
            let message = format!(
                "parse error: the message nests {depth} levels deep, past the {MAX_NESTING} \
                 levels a message may (recursion limit)"
            );
            return Err((Id::null(), RpcError::new(PARSE_ERROR, message)));
        }
        if elements > MAX_BATCH {
            let message = format!(
                "invalid request: a batch of {elements} messages; a batch holds at most \
                 {MAX_BATCH}: send the rest in other lines"
            );
            return Err((Id::null(), RpcError::new(INVALID_REQUEST, message)));
        }
        if cost > bound {
            let message = format!(
                "invalid request: this message of {} bytes would take about {} MiB to read \
                 (every JSON object, array and value in it costs memory of its own; the most is \
                 {READ_COST_PER_BYTE} times a message's size plus {} MiB); send fewer items \
                 per call",
                line.len(),
                cost >> 20,
                READ_COST_SLACK >> 20,
            );
            tracing::warn!(bytes = line.len(), cost, "a message too costly to read; refused");
            return Err((answer_id(text), RpcError::new(INVALID_REQUEST, message)));
        }
    }
    if text.trim_start().starts_with('[') {
        // Read whole first, which refuses what is nested too deep, then again as each
        // element's text: what is read raw from an element (the id a cancellation names) is
        // sliced from that. Batches are rare enough for the second pass.
        let envelopes: Vec<Envelope> = serde_json::from_str(text).map_err(parse_error)?;
        let texts: Vec<&RawValue> = serde_json::from_str(text).map_err(parse_error)?;
        let elements = envelopes
            .into_iter()
            .zip(texts)
            .map(|(envelope, raw)| Element { text: raw.get(), envelope })
            .collect();
        return Ok(Incoming::Batch(elements));
    }
    let envelope = serde_json::from_str(text).map_err(parse_error)?;
    Ok(Incoming::One(Element { text, envelope }))
}

/// Lines shorter than this are read without estimating their cost: even one made only of tiny
/// objects (about 100 bytes of values per byte) stays within `READ_COST_SLACK`.
const READ_COST_CHECKED_FROM: usize = 64 << 10;
/// What reading a line into values may cost, per byte of the line, beyond `READ_COST_SLACK`.
/// An ordinary request is mostly strings, read at about one byte per byte (a 20 MB
/// `write_file` content costs 20 MB); 16 leaves room for requests made of many small items (a
/// thousand edits) and refuses the shapes that cost a hundred times their size (a 2 MB line of
/// `"globs": [0,0,…]` took 390 MB; `[{"a":0},…]` costs 89 bytes per byte).
const READ_COST_PER_BYTE: usize = 16;
const READ_COST_SLACK: usize = 16 << 20;

/// An upper estimate, in bytes, of the memory `serde_json::Value`s take for the JSON `text`,
/// counted in one pass over its bytes without reading any value: an object is a B-tree leaf
/// (about 640 bytes for up to 11 members), an array a vector header, each value or member a
/// 32-byte slot with room for the vector's growth (64), and string contents their bytes. It
/// runs at about 1 GB/s; the shapes that cost most are above their measured peak (issue #13:
/// `[{"a":0},…]` 104 estimated against 89 measured bytes per byte, `[0,0,…]` 32 against 17, a
/// thousand edits 28 against 28).
pub fn read_cost(text: &[u8]) -> ReadCost {
    const OBJECT: usize = 640;
    const ARRAY: usize = 32;
    const SLOT: usize = 64;
    let (mut cost, mut in_string, mut escaped) = (0usize, false, false);
    let (mut depth, mut deepest, mut elements) = (0usize, 0usize, 0usize);
    // A batch: the line is an array; its elements are counted by the commas at its level.
    let batch = text.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[');
    for &b in text {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => cost += 1,
            }
            continue;
        }
        cost += match b {
            b'"' => {
                in_string = true;
                0
            }
            b'{' | b'[' => {
                depth += 1;
                deepest = deepest.max(depth);
                if b == b'{' {
                    OBJECT + SLOT
                } else {
                    ARRAY + SLOT
                }
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                0
            }
            b',' if batch && depth == 1 => {
                elements += 1;
                SLOT + BATCH_ELEMENT
            }
            b',' | b':' => SLOT,
            _ => 0,
        };
    }
    if batch && deepest > 0 {
        // The first element has no comma before it (and `[]` has none at all: counted as one).
        elements += 1;
        cost += BATCH_ELEMENT;
    }
    ReadCost { bytes: cost, depth: deepest, elements }
}

/// What `read_cost` found: the estimated bytes, how deep the text nests, and, for a batch, how
/// many messages it holds.
#[derive(Debug, PartialEq, Eq)]
pub struct ReadCost {
    pub bytes: usize,
    pub depth: usize,
    pub elements: usize,
}

/// What a batch's message costs beyond its values: its envelope, its text, the task that
/// serves it and its reply.
const BATCH_ELEMENT: usize = 2048;

/// The most messages one batch may hold. Each gets a task and a reply of its own: 20,000
/// `tools/list` requests in a 1 MB line asked for a 298 MiB reply. (MCP's revisions since
/// 2025-06-18 have no batches at all; older clients send a few.)
pub const MAX_BATCH: usize = 1000;

/// How deep serde_json reads before it refuses a line.
const MAX_NESTING: usize = 128;

/// The id of a message that could not be read into values, read on its own (the other members
/// are skipped without being built); null when there is none, or for a batch.
fn answer_id(text: &str) -> Id {
    #[derive(serde::Deserialize)]
    struct IdOnly {
        id: Option<Box<RawValue>>,
    }
    serde_json::from_str::<IdOnly>(text)
        .ok()
        .and_then(|message| message.id)
        .map(Id)
        .filter(Id::is_valid)
        .unwrap_or_else(Id::null)
}

impl Element<'_> {
    /// Classifies the message (once: its members move out). A malformed envelope comes back
    /// as the id to answer with (when one could be read) and a -32600 error.
    pub fn classify(&mut self) -> Result<Message, (Id, RpcError)> {
        let envelope = std::mem::take(&mut self.envelope);
        if !envelope.object {
            return Err((Id::null(), invalid("a message must be a JSON object")));
        }
        let id_is_valid = envelope.id.as_ref().is_none_or(Id::is_valid);
        if envelope.jsonrpc.as_ref().and_then(Value::as_str) != Some("2.0") {
            let answer_id = envelope.id.filter(|_| id_is_valid).unwrap_or_else(Id::null);
            return Err((answer_id, invalid("\"jsonrpc\" must be \"2.0\"")));
        }
        if !id_is_valid {
            let bad = envelope.id.map(|id| id.to_string()).unwrap_or_default();
            let detail = format!("\"id\" must be a string, a number or null, not {bad}");
            return Err((Id::null(), invalid(detail)));
        }
        let mut params = envelope.params.unwrap_or(Value::Null);
        let initialize = envelope.method.as_ref().and_then(Value::as_str) == Some("initialize");
        if initialize && !matches!(params, Value::Object(_)) {
            // A handshake that fails drops the server from some hosts (Cadabra's launch
            // probe): scalar or array params of `initialize` negotiate as absent ones do, to the
            // latest revision, as replay v2.2 answers them.
            params = Value::Null;
        }
        if !matches!(params, Value::Object(_) | Value::Array(_) | Value::Null) {
            let answer_id = envelope.id.unwrap_or_else(Id::null);
            return Err((answer_id, invalid("\"params\" must be an object or an array")));
        }
        match (envelope.method, envelope.id) {
            (Some(Value::String(method)), Some(id)) => Ok(Message::Request { id, method, params }),
            (Some(Value::String(method)), None) => Ok(Message::Notification { method, params }),
            (Some(_), id) => {
                Err((id.unwrap_or_else(Id::null), invalid("\"method\" must be a string")))
            }
            (None, Some(id)) => match (envelope.result, envelope.error) {
                (Some(result), None) => Ok(Message::Response { id, outcome: Ok(result) }),
                (None, Some(error)) => Ok(Message::Response { id, outcome: Err(error) }),
                _ => Err((
                    id,
                    invalid(
                        "a message needs a \"method\" (or, for a response, \"result\" or \"error\")",
                    ),
                )),
            },
            (None, None) => Err((Id::null(), invalid("a message needs a \"method\""))),
        }
    }

    /// `params.requestId` as sent (`notifications/cancelled`).
    pub fn cancelled_request(&self) -> Option<Id> {
        #[derive(serde::Deserialize)]
        struct Cancelled {
            params: Params,
        }
        #[derive(serde::Deserialize)]
        struct Params {
            #[serde(rename = "requestId")]
            request_id: Box<RawValue>,
        }
        let cancelled: Cancelled = serde_json::from_str(self.text).ok()?;
        Some(Id(cancelled.params.request_id)).filter(Id::is_valid)
    }

    /// `params._meta.progressToken` as sent, when the request asks for progress.
    pub fn progress_token(&self, params: &Value) -> Option<Id> {
        let token = params.pointer("/_meta/progressToken")?;
        match token {
            // Strings and 64-bit integers are written again as they were read.
            Value::String(_) => serde_json::value::to_raw_value(token).ok().map(Id),
            Value::Number(n) if !n.is_f64() => serde_json::value::to_raw_value(token).ok().map(Id),
            // A float, or an integer past 64 bits: read again from the text, as sent.
            Value::Number(_) => {
                #[derive(serde::Deserialize)]
                struct Request {
                    params: Params,
                }
                #[derive(serde::Deserialize)]
                struct Params {
                    #[serde(rename = "_meta")]
                    meta: Meta,
                }
                #[derive(serde::Deserialize)]
                struct Meta {
                    #[serde(rename = "progressToken")]
                    token: Box<RawValue>,
                }
                let request: Request = serde_json::from_str(self.text).ok()?;
                Some(Id(request.params.meta.token))
            }
            _ => None,
        }
    }
}

fn invalid(detail: impl fmt::Display) -> RpcError {
    RpcError::new(INVALID_REQUEST, format!("invalid request: {detail}"))
}

impl<'de> Deserialize<'de> for Envelope {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Envelope, D::Error> {
        deserializer.deserialize_any(EnvelopeVisitor)
    }
}

struct EnvelopeVisitor;

impl<'de> Visitor<'de> for EnvelopeVisitor {
    type Value = Envelope;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC message")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Envelope, A::Error> {
        let mut envelope = Envelope { object: true, ..Envelope::default() };
        while let Some(member) = map.next_key::<Member>()? {
            match member {
                Member::Jsonrpc => envelope.jsonrpc = Some(map.next_value()?),
                Member::Id => envelope.id = Some(Id(map.next_value()?)),
                Member::Method => envelope.method = Some(map.next_value()?),
                Member::Params => envelope.params = Some(map.next_value()?),
                Member::Result => envelope.result = Some(map.next_value()?),
                Member::Error => envelope.error = Some(map.next_value()?),
                // Read as a value, not skipped: skipping has no nesting limit, and a line
                // nested past it is refused however it is spelled.
                Member::Other => drop(map.next_value::<Value>()?),
            }
        }
        Ok(envelope)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Envelope, A::Error> {
        while seq.next_element::<Value>()?.is_some() {}
        Ok(Envelope::default())
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Envelope, E> {
        Ok(Envelope::default())
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Envelope, E> {
        Ok(Envelope::default())
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Envelope, E> {
        Ok(Envelope::default())
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Envelope, E> {
        Ok(Envelope::default())
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Envelope, E> {
        Ok(Envelope::default())
    }

    fn visit_unit<E: de::Error>(self) -> Result<Envelope, E> {
        Ok(Envelope::default())
    }
}

/// A member name of a message, read without allocating.
enum Member {
    Jsonrpc,
    Id,
    Method,
    Params,
    Result,
    Error,
    Other,
}

impl<'de> Deserialize<'de> for Member {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Member, D::Error> {
        struct MemberVisitor;
        impl Visitor<'_> for MemberVisitor {
            type Value = Member;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a member name")
            }

            fn visit_str<E: de::Error>(self, name: &str) -> Result<Member, E> {
                Ok(match name {
                    "jsonrpc" => Member::Jsonrpc,
                    "id" => Member::Id,
                    "method" => Member::Method,
                    "params" => Member::Params,
                    "result" => Member::Result,
                    "error" => Member::Error,
                    _ => Member::Other,
                })
            }
        }
        deserializer.deserialize_identifier(MemberVisitor)
    }
}

/// Starts a reply line to `id` in `line`: `{"jsonrpc":"2.0","id":ID,"MEMBER":`, where `member`
/// is `result` or `error`. Every reply line begins here (success, failure, a tool's result),
/// its id written as the client spelled it.
pub fn open_line(line: &mut Vec<u8>, id: &Id, member: &str) {
    line.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    line.extend_from_slice(id.as_json().as_bytes());
    line.extend_from_slice(b",\"");
    line.extend_from_slice(member.as_bytes());
    line.extend_from_slice(b"\":");
}

/// The success reply to `id`, one line without its newline (room is left for it).
pub fn success_line(id: &Id, result: &Value) -> String {
    let mut line = Vec::with_capacity(crate::reply_size::json_len(result) + 64);
    open_line(&mut line, id, "result");
    let _ = serde_json::to_writer(&mut line, result);
    line.push(b'}');
    into_text(line)
}

/// The error reply to `id`, one line without its newline.
pub fn failure_line(id: &Id, error: &RpcError) -> String {
    let mut line = Vec::with_capacity(error.message.len() + 96);
    open_line(&mut line, id, "error");
    line.extend_from_slice(b"{\"code\":");
    line.extend_from_slice(error.code.to_string().as_bytes());
    line.extend_from_slice(b",\"message\":");
    let _ = serde_json::to_writer(&mut line, &error.message);
    if let Some(data) = &error.data {
        line.extend_from_slice(b",\"data\":");
        let _ = serde_json::to_writer(&mut line, data);
    }
    line.extend_from_slice(b"}}");
    into_text(line)
}

/// Lines written here hold serde_json's output and ids that were read as UTF-8 text.
pub fn into_text(line: Vec<u8>) -> String {
    String::from_utf8(line).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

#[cfg(test)]
mod tests;
