//! Fuzz target: one stdin line as the session reads it. Bytes → JSON → `classify` (each
//! element of a batch too) → for `tools/call`, the modern envelope, the tool's schema
//! validation, and the whole dispatch (`call_tool`) under a policy with no allowed directories,
//! so no tool can touch the filesystem or start a command.
//!
//! Must never panic. Checked besides: arguments the schema accepts are never rejected by the
//! tool's own deserialization (dispatch's "a schema looser than its struct").

#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use replay::policy::Policy;
use replay::protocol::dispatch::call_tool;
use replay::protocol::jsonrpc::{self, Message};
use replay::protocol::{revision, transport};
use replay::schema;
use replay::tools::{self, Cancel, Progress, Settings};
use serde_json::{Map, Value};

fuzz_target!(|data: &[u8]| {
    // As `session::accept`: blank lines are skipped, anything else must be JSON.
    if data.iter().all(u8::is_ascii_whitespace) {
        return;
    }
    let Ok(value) = serde_json::from_slice::<Value>(data) else { return };
    match value {
        Value::Array(batch) => batch.into_iter().for_each(message),
        other => message(other),
    }
});

fn message(value: Value) {
    match jsonrpc::classify(value) {
        Ok(Message::Request { id, method, params }) => {
            let answer = match revision::envelope(&params) {
                Err(error) => jsonrpc::failure(id, &error),
                Ok(_) if method == "tools/call" => tools_call(id, params),
                Ok(_) => jsonrpc::success(id, Value::Null),
            };
            // The reply must serialize to exactly one line.
            let line = transport::line_of(&answer);
            assert_eq!(line.matches('\n').count(), 1, "reply is not one line: {line:?}");
        }
        Ok(Message::Notification { params, .. }) => {
            let _ = revision::envelope(&params);
        }
        Ok(Message::Response { .. }) => {}
        Err((id, error)) => {
            assert!(matches!(id, Value::Null | Value::Number(_) | Value::String(_)));
            let _ = transport::line_of(&jsonrpc::failure(id, &error));
        }
    }
}

fn tools_call(id: Value, params: Value) -> Value {
    // The envelope as `dispatch` reads it, to validate on our own before dispatching.
    let accepted = match &params {
        Value::Object(fields) => match (fields.get("name"), fields.get("arguments")) {
            (Some(Value::String(name)), arguments) => {
                let mut args = match arguments {
                    None | Some(Value::Null) => Value::Object(Map::new()),
                    Some(args) => args.clone(),
                };
                tools::map_aliases(name, &mut args);
                schema::find(name).is_some_and(|def| def.validate(&args).is_ok())
            }
            _ => false,
        },
        _ => false,
    };
    let (policy, settings) = nothing_allowed();
    let reply = call_tool(policy, settings, &Cancel::default(), &Progress::default(), params);
    match reply {
        Ok(reply) => jsonrpc::success(id, reply.result),
        Err(error) => {
            if accepted {
                assert!(
                    !error.message.starts_with("invalid params: `arguments`"),
                    "the schema accepted arguments the tool could not read: {}",
                    error.message
                );
            }
            jsonrpc::failure(id, &error)
        }
    }
}

/// No allowed directories: every path is refused before the filesystem is touched.
fn nothing_allowed() -> (&'static Policy, &'static Settings) {
    static SCOPE: OnceLock<(Policy, Settings)> = OnceLock::new();
    let (policy, settings) =
        SCOPE.get_or_init(|| (Policy::new(Vec::new(), None), Settings::default()));
    (policy, settings)
}
