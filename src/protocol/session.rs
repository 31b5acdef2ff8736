//! The session: the read loop, `initialize` and version negotiation, `ping`, `tools/list`,
//! notifications, batches, and the orderly end at end of input.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::oneshot;
use tokio::task::JoinSet;

use crate::policy::Policy;
use crate::protocol::dispatch;
use crate::protocol::jsonrpc::{self, Message, RpcError, METHOD_NOT_FOUND, PARSE_ERROR};
use crate::protocol::transport::{self, Line, Outbox};
use crate::schema;
use crate::tools::{Cancel, Settings};

/// Protocol revisions answered in `initialize`, oldest first; a client asking for another gets
/// the latest.
pub const SUPPORTED_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
const LATEST_VERSION: &str = "2025-11-25";

/// How long in-flight calls may run on after stdin closes: execute_command's longest timeout
/// (60 s) plus its kill grace (3 s), plus a margin.
const DRAIN_LIMIT: Duration = Duration::from_secs(70);

pub struct Session {
    policy: Arc<Policy>,
    settings: Arc<Settings>,
    /// Cancellation flags of the tool calls in flight, by request id (as JSON text).
    calls: Mutex<HashMap<String, Arc<Cancel>>>,
    /// The `tools/list` result for this configuration, built on first use: parsing the
    /// schemas eagerly cost start-up a few hundred microseconds that `initialize` never needs.
    tools_list: OnceLock<Value>,
    version: Mutex<Option<String>>,
    /// Completion of the last file-changing call handed out; see `write_turn`.
    last_write: Mutex<Option<oneshot::Receiver<()>>>,
}

/// A `tools/call` as read: registered for cancellation, holding its write turn if it changes
/// files.
struct Call {
    id: Value,
    params: Value,
    cancel: Arc<Cancel>,
    turn: Option<WriteTurn>,
}

/// A file-changing call's place in line: wait for `previous`, run, then drop `_done` to let
/// the next writer go.
struct WriteTurn {
    previous: Option<oneshot::Receiver<()>>,
    _done: oneshot::Sender<()>,
}

/// Serves stdin until it closes, then answers what is in flight and returns.
pub async fn serve(policy: Policy, settings: Settings) {
    let (outbox, writer) = transport::spawn_writer();
    let mut lines = transport::spawn_reader();
    let session = Arc::new(Session {
        policy: Arc::new(policy),
        tools_list: OnceLock::new(),
        settings: Arc::new(settings),
        calls: Mutex::new(HashMap::new()),
        version: Mutex::new(None),
        last_write: Mutex::new(None),
    });
    let mut in_flight = JoinSet::new();
    while let Some(line) = lines.recv().await {
        while in_flight.try_join_next().is_some() {}
        session.accept(line, &outbox, &mut in_flight);
    }
    tracing::debug!(in_flight = in_flight.len(), "stdin closed; finishing in-flight requests");
    let drained =
        tokio::time::timeout(DRAIN_LIMIT, async { while in_flight.join_next().await.is_some() {} })
            .await;
    if drained.is_err() {
        tracing::warn!(
            "in-flight requests still running {DRAIN_LIMIT:?} after stdin closed; exiting"
        );
    }
    drop(outbox);
    let _ = writer.join();
}

impl Session {
    /// Handles one line. Session messages are answered in order, right here, so `initialize`
    /// takes effect before the next line; tool calls and batches run concurrently.
    fn accept(self: &Arc<Self>, line: Line, outbox: &Outbox, in_flight: &mut JoinSet<()>) {
        let bytes = match line {
            Line::Complete(bytes) => bytes,
            Line::TooLong { len } => {
                let message = format!(
                    "parse error: a message of {len} bytes exceeds the limit of {} bytes",
                    transport::MAX_LINE_BYTES
                );
                outbox.send(&jsonrpc::failure(Value::Null, &RpcError::new(PARSE_ERROR, message)));
                return;
            }
        };
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let value: Value = match serde_json::from_slice(&bytes) {
            Ok(v) => v,
            Err(e) => {
                let error = RpcError::new(PARSE_ERROR, format!("parse error: {e}"));
                outbox.send(&jsonrpc::failure(Value::Null, &error));
                return;
            }
        };
        if let Value::Array(batch) = value {
            self.accept_batch(batch, outbox, in_flight);
            return;
        }
        match jsonrpc::classify(value) {
            Ok(Message::Request { id, method, params }) if method == "tools/call" => {
                let outbox = outbox.clone();
                let session = Arc::clone(self);
                let call = self.prepare(id, params);
                if call.turn.is_none() {
                    // Nothing to wait for: straight onto the blocking pool, one hop instead of
                    // an async task that hops there (measurable at thousands of calls a second).
                    in_flight.spawn_blocking(move || {
                        if let Some(reply) = session.run_tool(call) {
                            outbox.send(&reply);
                        }
                    });
                } else {
                    in_flight.spawn(async move {
                        if let Some(reply) = session.call_tool(call).await {
                            outbox.send(&reply);
                        }
                    });
                }
            }
            Ok(message) => {
                if let Some(reply) = self.handle(message) {
                    outbox.send(&reply);
                }
            }
            Err((id, error)) => outbox.send(&jsonrpc::failure(id, &error)),
        }
    }

    /// A JSON-RPC batch: every element runs concurrently (writers still take their turns in
    /// order); one array of replies, none if every element was a notification.
    fn accept_batch(
        self: &Arc<Self>,
        batch: Vec<Value>,
        outbox: &Outbox,
        in_flight: &mut JoinSet<()>,
    ) {
        if batch.is_empty() {
            let error = RpcError::new(jsonrpc::INVALID_REQUEST, "invalid request: empty batch");
            outbox.send(&jsonrpc::failure(Value::Null, &error));
            return;
        }
        let mut parts = JoinSet::new();
        for (idx, value) in batch.into_iter().enumerate() {
            let session = Arc::clone(self);
            // Prepared here, in order: write turns and cancellation must follow arrival.
            let job = match jsonrpc::classify(value) {
                Ok(Message::Request { id, method, params }) if method == "tools/call" => {
                    Ok(self.prepare(id, params))
                }
                other => Err(other),
            };
            parts.spawn(async move {
                let reply = match job {
                    Ok(call) => session.call_tool(call).await,
                    Err(Ok(message)) => session.handle(message),
                    Err(Err((id, error))) => Some(jsonrpc::failure(id, &error)),
                };
                (idx, reply)
            });
        }
        let outbox = outbox.clone();
        in_flight.spawn(async move {
            let mut replies: Vec<(usize, Value)> = Vec::new();
            while let Some(joined) = parts.join_next().await {
                if let Ok((idx, Some(reply))) = joined {
                    replies.push((idx, reply));
                }
            }
            replies.sort_by_key(|(idx, _)| *idx);
            if !replies.is_empty() {
                outbox.send(&Value::Array(replies.into_iter().map(|(_, r)| r).collect()));
            }
        });
    }

    /// Calls that change files run one after another, in the order they arrived, so that a
    /// client pipelining two edits of one file gets both applied, in order. Reads never wait.
    /// Taken when the line is read (in order), awaited by the task that runs the call.
    fn write_turn(&self, params: &Value) -> Option<WriteTurn> {
        let name = params.get("name").and_then(Value::as_str)?;
        if !schema::find(name).is_some_and(|def| def.changes_files()) {
            return None;
        }
        let (done, next) = oneshot::channel();
        let mut last = self.last_write.lock().unwrap_or_else(|e| e.into_inner());
        let previous = last.replace(next);
        Some(WriteTurn { previous, _done: done })
    }

    /// Registers a tool call as it is read: its cancellation flag (so that a cancel sent right
    /// behind the request finds it) and its write turn.
    fn prepare(&self, id: Value, params: Value) -> Call {
        let cancel = Arc::new(Cancel::default());
        let mut calls = self.calls.lock().unwrap_or_else(|e| e.into_inner());
        calls.insert(id.to_string(), Arc::clone(&cancel));
        drop(calls);
        let turn = self.write_turn(&params);
        Call { id, params, cancel, turn }
    }

    /// Runs a tool call once its write turn (if any) has come. `None` when the client
    /// cancelled it: a cancelled request gets no response.
    async fn call_tool(self: Arc<Self>, mut call: Call) -> Option<Value> {
        if let Some(WriteTurn { previous: Some(previous), .. }) = &mut call.turn {
            // An error only means the previous writer is gone (finished or panicked): go on.
            let _ = previous.await;
        }
        let outcome = tokio::task::spawn_blocking(move || self.run_tool(call)).await;
        // The tool's own panics are caught in dispatch; a join error is the runtime shutting
        // down, and there is no one left to answer.
        outcome.unwrap_or_default()
    }

    /// Runs a tool call on this (blocking) thread, unless it was cancelled already.
    fn run_tool(&self, call: Call) -> Option<Value> {
        let Call { id, params, cancel, turn } = call;
        let result = if cancel.is_cancelled() {
            None
        } else {
            Some(dispatch::call_tool(&self.policy, &self.settings, &cancel, params))
        };
        // The next writer may go as soon as this one is done, before the reply is written.
        drop(turn);
        self.calls.lock().unwrap_or_else(|e| e.into_inner()).remove(&id.to_string());
        match result {
            Some(result) if !cancel.is_cancelled() => Some(reply(id, result)),
            _ => {
                tracing::debug!(%id, "cancelled; no response");
                None
            }
        }
    }

    /// `notifications/cancelled`: flags the call; unknown or finished ids are ignored.
    fn cancel(&self, params: &Value) {
        let Some(id) = params.get("requestId") else { return };
        if let Some(cancel) =
            self.calls.lock().unwrap_or_else(|e| e.into_inner()).get(&id.to_string())
        {
            tracing::debug!(%id, "cancelling");
            cancel.cancel();
        }
    }

    /// Everything but `tools/call`. Returns the reply, if the message needs one.
    fn handle(&self, message: Message) -> Option<Value> {
        match message {
            Message::Request { id, method, params } => Some(match self.request(&method, &params) {
                Ok(result) => jsonrpc::success(id, result),
                Err(error) => jsonrpc::failure(id, &error),
            }),
            Message::Notification { method, params } => {
                match method.as_str() {
                    "notifications/initialized" | "initialized" => {
                        tracing::debug!("client initialized")
                    }
                    "notifications/cancelled" => self.cancel(&params),
                    other => tracing::debug!(method = other, %params, "ignoring notification"),
                }
                None
            }
            Message::Response { id, outcome } => {
                tracing::debug!(%id, ?outcome, "ignoring a response to no request of ours");
                None
            }
        }
    }

    fn request(&self, method: &str, params: &Value) -> Result<Value, RpcError> {
        match method {
            "initialize" => Ok(self.initialize(params)),
            "ping" => Ok(json!({})),
            "tools/list" => Ok(self.tools_list.get_or_init(|| tools_list(&self.settings)).clone()),
            "tools/call" => unreachable!("tools/call is dispatched concurrently"),
            _ => Err(RpcError::new(METHOD_NOT_FOUND, format!("method not found: {method}"))),
        }
    }

    fn initialize(&self, params: &Value) -> Value {
        let asked = params.get("protocolVersion").and_then(Value::as_str).unwrap_or_default();
        let version =
            SUPPORTED_VERSIONS.iter().find(|v| **v == asked).copied().unwrap_or(LATEST_VERSION);
        *self.version.lock().unwrap_or_else(|e| e.into_inner()) = Some(version.to_string());
        json!({
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": false}},
            "serverInfo": {"name": "replay", "version": env!("CARGO_PKG_VERSION")},
        })
    }
}

fn reply(id: Value, result: Result<Value, RpcError>) -> Value {
    match result {
        Ok(result) => jsonrpc::success(id, result),
        Err(error) => jsonrpc::failure(id, &error),
    }
}

/// The `tools/list` result: every schema of a tool this configuration serves.
fn tools_list(settings: &Settings) -> Value {
    let tools: Vec<Value> = schema::definitions()
        .iter()
        .filter(|d| settings.serves(d.name))
        .map(|d| d.definition.clone())
        .collect();
    json!({ "tools": tools })
}
