//! Fuzz target: one stdin line as the session reads it. Bytes → `jsonrpc::parse` (one message
//! or a batch) → `classify` (each element of a batch too) → for `tools/call`, the modern
//! envelope, the tool's schema validation, and the whole dispatch (`call_tool`) under a policy
//! with no allowed directories, so no tool can touch the filesystem or start a command → the
//! reply line, written as the session writes it.
//!
//! Must never panic. Checked besides: every reply is one line of JSON; a request's reply
//! carries its id exactly as the element spelled it (the raw-id path), and so do a
//! cancellation's `requestId` and a progress token; arguments the schema accepts are never
//! rejected by the tool's own deserialization (dispatch's "a schema looser than its struct").

#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use replay::fuzz::policy::Policy;
use replay::fuzz::progress::{Cancel, Progress};
use replay::fuzz::protocol::dispatch::call_tool;
use replay::fuzz::protocol::jsonrpc::{self, Element, Id, Incoming, Message};
use replay::fuzz::protocol::reply::{self, LineAllowance};
use replay::fuzz::protocol::revision::{self, LATEST_LEGACY};
use replay::fuzz::schema;
use replay::fuzz::tools::table::Tool;
use replay::fuzz::tools::Settings;
use replay::fuzz::write_order::WriteTurn;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

fuzz_target!(|data: &[u8]| {
    // As `session::accept`: blank lines are skipped, anything else must be JSON.
    if data.iter().all(u8::is_ascii_whitespace) {
        return;
    }
    match jsonrpc::parse(data) {
        Err((id, error)) => one_line(&jsonrpc::failure_line(&id, &error)),
        Ok(Incoming::One(element)) => {
            if let Some(line) = message(element) {
                one_line(&line);
            }
        }
        Ok(Incoming::Batch(elements)) => {
            let lines: Vec<String> = elements.into_iter().filter_map(message).collect();
            if !lines.is_empty() {
                one_line(&reply::batch_pieces(lines).concat());
            }
        }
    }
});

/// The reply line for one element, if it gets one.
fn message(mut element: Element) -> Option<String> {
    let text = element.text;
    match element.classify() {
        Ok(Message::Request { id, method, params }) => {
            // The id is the element's own text for it, as sent.
            assert!(text.contains(id.as_json()), "id {id} is not in {text:?}");
            if let Some(token) = element.progress_token(&params) {
                one_line(&format!("{{\"progressToken\":{token}}}"));
            }
            let line = match revision::envelope(&params) {
                Err(error) => jsonrpc::failure_line(&id, &error),
                Ok(_) if method == "tools/call" => tools_call(&id, params),
                Ok(_) => jsonrpc::success_line(&id, &Value::Null),
            };
            assert!(
                line.starts_with(&format!("{{\"jsonrpc\":\"2.0\",\"id\":{},", id.as_json())),
                "reply does not carry the id as sent: {line:?}"
            );
            Some(line)
        }
        Ok(Message::Notification { method, params }) => {
            let _ = revision::envelope(&params);
            if method == "notifications/cancelled" {
                if let Some(id) = element.cancelled_request() {
                    assert!(text.contains(id.as_json()), "requestId {id} is not in {text:?}");
                    let _ = id.key();
                }
            }
            None
        }
        Ok(Message::Response { id, .. }) => {
            let _ = id.as_string();
            None
        }
        Err((id, error)) => Some(jsonrpc::failure_line(&id, &error)),
    }
}

/// `line` is one line of JSON (the session adds the newline).
fn one_line(line: &str) {
    assert!(!line.contains('\n'), "reply is not one line: {line:?}");
    // Syntax only: an id such as 1E400 is valid JSON that no f64 holds.
    serde_json::from_str::<&RawValue>(line)
        .unwrap_or_else(|e| panic!("reply is not JSON ({e}): {line:?}"));
}

fn tools_call(id: &Id, params: Value) -> String {
    // The envelope as `dispatch` reads it, to validate on our own before dispatching.
    let accepted = match &params {
        Value::Object(fields) => match (fields.get("name"), fields.get("arguments")) {
            (Some(Value::String(name)), arguments) => {
                let mut args = match arguments {
                    None | Some(Value::Null) => Value::Object(Map::new()),
                    Some(args) => args.clone(),
                };
                match Tool::from_name(name) {
                    Some(tool) => {
                        if let Some(aliases) = tool.spec().aliases {
                            aliases(&mut args);
                        }
                        schema::of(tool).validate(&args).is_ok()
                    }
                    None => false,
                }
            }
            _ => false,
        },
        _ => false,
    };
    let (policy, settings) = nothing_allowed();
    let reply = call_tool(
        policy,
        settings,
        &Cancel::default(),
        &Progress::default(),
        &WriteTurn::default(),
        params,
    );
    match reply {
        Ok(reply) => reply::tool_line(id, reply, LATEST_LEGACY, &LineAllowance::default()),
        Err(error) => {
            if accepted {
                assert!(
                    !error.message.starts_with("invalid params: `arguments`"),
                    "the schema accepted arguments the tool could not read: {}",
                    error.message
                );
            }
            jsonrpc::failure_line(id, &error)
        }
    }
}

/// No allowed directories: every path is refused before the filesystem is touched.
fn nothing_allowed() -> (&'static Policy, &'static Settings) {
    static SCOPE: OnceLock<(Policy, Settings)> = OnceLock::new();
    let (policy, settings) = SCOPE
        .get_or_init(|| (Policy::new(Vec::new(), None, Default::default()), Settings::default()));
    (policy, settings)
}
