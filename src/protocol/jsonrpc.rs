//! JSON-RPC 2.0 messages: classifying what arrives, building what goes out, the protocol codes.

use serde_json::{json, Map, Value};

pub const PARSE_ERROR: i32 = -32700;
pub const INVALID_REQUEST: i32 = -32600;
pub const METHOD_NOT_FOUND: i32 = -32601;
pub const INVALID_PARAMS: i32 = -32602;

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

/// One message from the client.
#[derive(Debug)]
pub enum Message {
    /// Has an `id` (possibly `null`, which is answered with `"id": null`): needs a response.
    Request { id: Value, method: String, params: Value },
    /// No `id`: never answered.
    Notification { method: String, params: Value },
    /// A response to a request the server sent (e.g. `roots/list`).
    Response { id: Value, outcome: Result<Value, Value> },
}

/// Classifies one JSON value. A malformed envelope comes back as the id to answer with (when
/// one could be read) and a -32600 error.
pub fn classify(value: Value) -> Result<Message, (Value, RpcError)> {
    let Value::Object(mut object) = value else {
        return Err((Value::Null, invalid("a message must be a JSON object")));
    };
    let id = object.remove("id");
    let answer_id = match &id {
        Some(v @ (Value::Number(_) | Value::String(_) | Value::Null)) => v.clone(),
        _ => Value::Null,
    };
    if object.get("jsonrpc") != Some(&Value::String("2.0".into())) {
        return Err((answer_id, invalid("\"jsonrpc\" must be \"2.0\"")));
    }
    if let Some(bad) =
        id.as_ref().filter(|v| !matches!(v, Value::Number(_) | Value::String(_) | Value::Null))
    {
        return Err((
            Value::Null,
            invalid(format!("\"id\" must be a string, a number or null, not {bad}")),
        ));
    }
    let params = object.remove("params").unwrap_or(Value::Null);
    if !matches!(params, Value::Object(_) | Value::Array(_) | Value::Null) {
        return Err((answer_id, invalid("\"params\" must be an object or an array")));
    }
    match (object.remove("method"), id) {
        (Some(Value::String(method)), Some(id)) => Ok(Message::Request { id, method, params }),
        (Some(Value::String(method)), None) => Ok(Message::Notification { method, params }),
        (Some(_), _) => Err((answer_id, invalid("\"method\" must be a string"))),
        (None, Some(id)) => response(id, object).map_err(|e| (answer_id, e)),
        (None, None) => Err((Value::Null, invalid("a message needs a \"method\""))),
    }
}

fn response(id: Value, mut object: Map<String, Value>) -> Result<Message, RpcError> {
    match (object.remove("result"), object.remove("error")) {
        (Some(result), None) => Ok(Message::Response { id, outcome: Ok(result) }),
        (None, Some(error)) => Ok(Message::Response { id, outcome: Err(error) }),
        _ => Err(invalid(
            "a message needs a \"method\" (or, for a response, \"result\" or \"error\")",
        )),
    }
}

fn invalid(detail: impl std::fmt::Display) -> RpcError {
    RpcError::new(INVALID_REQUEST, format!("invalid request: {detail}"))
}

pub fn success(id: Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

pub fn failure(id: Value, error: &RpcError) -> Value {
    let mut body = json!({"code": error.code, "message": error.message});
    if let Some(data) = &error.data {
        body["data"] = data.clone();
    }
    json!({"jsonrpc": "2.0", "id": id, "error": body})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(input: &str, expect: &str) {
        let got = match classify(serde_json::from_str(input).unwrap()) {
            Ok(Message::Request { id, method, .. }) => format!("request {id} {method}"),
            Ok(Message::Notification { method, .. }) => format!("notification {method}"),
            Ok(Message::Response { id, outcome }) => format!("response {id} {}", outcome.is_ok()),
            Err((id, e)) => format!("error {id} {}", e.code),
        };
        assert_eq!(got, expect, "input: {input}");
    }

    #[test]
    fn classification() {
        check(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#, "request 1 ping");
        check(r#"{"jsonrpc":"2.0","id":"a","method":"ping"}"#, "request \"a\" ping");
        check(r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#, "request null ping");
        check(r#"{"jsonrpc":"2.0","method":"initialized"}"#, "notification initialized");
        check(r#"{"jsonrpc":"2.0","id":3,"result":{}}"#, "response 3 true");
        check(r#"{"jsonrpc":"2.0","id":3,"error":{"code":1}}"#, "response 3 false");
        check(r#"{"id":1,"method":"ping"}"#, "error 1 -32600");
        check(r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#, "error 1 -32600");
        check(r#"{"jsonrpc":"2.0","id":1,"method":5}"#, "error 1 -32600");
        check(r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#, "error null -32600");
        check(r#"{"jsonrpc":"2.0","id":1,"method":"x","params":3}"#, "error 1 -32600");
        check(r#"{"jsonrpc":"2.0","id":1}"#, "error 1 -32600");
        check(r#"[]"#, "error null -32600");
        check(r#"7"#, "error null -32600");
    }
}
