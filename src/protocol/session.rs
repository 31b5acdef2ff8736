//! The session: the read loop, `initialize` and version negotiation, `ping`, `tools/list`,
//! notifications, batches, and the orderly end at end of input.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::runtime::Runtime;
use tokio::sync::oneshot;
use tokio::task::JoinSet;

use crate::policy::Policy;
use crate::protocol::dispatch;
use crate::protocol::jsonrpc::{self, Message, RpcError, METHOD_NOT_FOUND, PARSE_ERROR};
use crate::protocol::transport::{self, Line, Outbox};
use crate::schema;
use crate::tools::{Cancel, Progress, Settings};

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
    outbox: Outbox,
    /// Cancellation flags of the tool calls in flight, by request id (as JSON text).
    calls: Mutex<HashMap<String, Arc<Cancel>>>,
    /// The `tools/list` result for this configuration, built on first use: parsing the
    /// schemas eagerly cost start-up a few hundred microseconds that `initialize` never needs.
    tools_list: OnceLock<Value>,
    version: Mutex<Option<String>>,
    /// Completion of the last file-changing call handed out; see `write_turn`.
    last_write: Mutex<Option<oneshot::Receiver<()>>>,
    /// Runs the calls that are not answered inline; built on first use, so that a session
    /// that only says `initialize` never starts its threads.
    runtime: OnceLock<Runtime>,
    in_flight: InFlight,
    /// Replies made on the reading thread, held until it has read all the input there is:
    /// pipelined requests get their replies in one hand-off to the writer, not one each.
    held: Mutex<String>,
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

/// Replies held on the reading thread are handed over at this size even if more input waits.
const HOLD_LIMIT: usize = 64 * 1024;

/// Tools answered on the reading thread itself, without a hand-off: read-only, quick, and
/// never waiting on anything but the local filesystem. A small read costs less than the two
/// thread wake-ups a hand-off takes, and pipelined reads are answered in arrival order.
const INLINE_TOOLS: [&str; 3] = ["read_file", "get_file_info", "list_allowed_directories"];

/// Serves stdin until it closes, then answers what is in flight and returns.
pub fn serve(policy: Policy, settings: Arc<Settings>) {
    let (outbox, writer) = transport::spawn_writer();
    let session = Arc::new(Session {
        policy: Arc::new(policy),
        settings,
        outbox,
        calls: Mutex::new(HashMap::new()),
        tools_list: OnceLock::new(),
        version: Mutex::new(None),
        last_write: Mutex::new(None),
        runtime: OnceLock::new(),
        in_flight: InFlight::default(),
        held: Mutex::new(String::new()),
    });
    transport::read_lines(|line| session.accept(line), || session.release_held());
    let pending = session.in_flight.count();
    tracing::debug!(in_flight = pending, "stdin closed; finishing in-flight requests");
    if !session.in_flight.wait_idle(DRAIN_LIMIT) {
        tracing::warn!(
            "in-flight requests still running {DRAIN_LIMIT:?} after stdin closed; exiting"
        );
    }
    session.outbox.close();
    let _ = writer.join();
    if let Some(runtime) = Arc::into_inner(session).and_then(|s| s.runtime.into_inner()) {
        // Tool calls still running past the drain limit must not hold the process open.
        runtime.shutdown_timeout(Duration::from_millis(100));
    }
}

/// Counts the requests handed to the runtime, so that the end of input can wait for them.
#[derive(Default)]
struct InFlight {
    count: Mutex<usize>,
    idle: Condvar,
}

/// Held by a request while it runs; its drop counts it out.
struct Running(Arc<Session>);

impl Drop for Running {
    fn drop(&mut self) {
        let in_flight = &self.0.in_flight;
        let mut count = in_flight.count.lock().unwrap_or_else(|e| e.into_inner());
        *count -= 1;
        if *count == 0 {
            in_flight.idle.notify_all();
        }
    }
}

impl InFlight {
    fn count(&self) -> usize {
        *self.count.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits until nothing runs; false if `limit` passed first.
    fn wait_idle(&self, limit: Duration) -> bool {
        let count = self.count.lock().unwrap_or_else(|e| e.into_inner());
        let (count, _) = self
            .idle
            .wait_timeout_while(count, limit, |count| *count > 0)
            .unwrap_or_else(|e| e.into_inner());
        *count == 0
    }
}

impl Session {
    /// Counts a request in; the guard counts it out when dropped.
    fn running(self: &Arc<Self>) -> Running {
        *self.in_flight.count.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        Running(Arc::clone(self))
    }

    fn runtime(&self) -> &Runtime {
        self.runtime.get_or_init(|| {
            // One worker: the async side only waits for write turns and gathers batches; the
            // tools themselves run on the blocking pool.
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("replay-rt")
                .enable_time()
                .build()
                .expect("building the tokio runtime")
        })
    }

    /// Handles one line. Session messages and quick reads are answered in order, right here,
    /// so `initialize` takes effect before the next line; other tool calls and batches run
    /// concurrently.
    fn accept(self: &Arc<Self>, line: Line) {
        let bytes = match line {
            Line::Complete(bytes) => bytes,
            Line::TooLong { len } => {
                let message = format!(
                    "parse error: a message of {len} bytes exceeds the limit of {} bytes",
                    transport::MAX_LINE_BYTES
                );
                self.send(&jsonrpc::failure(Value::Null, &RpcError::new(PARSE_ERROR, message)));
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
                self.send(&jsonrpc::failure(Value::Null, &error));
                return;
            }
        };
        if let Value::Array(batch) = value {
            self.accept_batch(batch);
            return;
        }
        match jsonrpc::classify(value) {
            Ok(Message::Request { id, method, params }) if method == "tools/call" => {
                self.accept_call(id, params)
            }
            Ok(message) => {
                if let Some(reply) = self.handle(message) {
                    self.send(&reply);
                }
            }
            Err((id, error)) => self.send(&jsonrpc::failure(id, &error)),
        }
    }

    /// Replies from the reading thread: held until `release_held`.
    fn send(&self, message: &Value) {
        // serde_json escapes control characters, so a message is always exactly one line.
        let line = message.to_string();
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        held.push_str(&line);
        held.push('\n');
        // A client that never pauses still gets its replies as it goes.
        if held.len() >= HOLD_LIMIT {
            self.outbox.send_lines(std::mem::take(&mut held));
        }
    }

    fn release_held(&self) {
        let held = std::mem::take(&mut *self.held.lock().unwrap_or_else(|e| e.into_inner()));
        self.outbox.send_lines(held);
    }

    /// A single `tools/call`: inline if it is a quick read, else on the runtime.
    fn accept_call(self: &Arc<Self>, id: Value, params: Value) {
        let name = params.get("name").and_then(Value::as_str).unwrap_or_default();
        if INLINE_TOOLS.contains(&name) {
            let cancel = Cancel::default();
            let progress = Progress::default();
            let result =
                dispatch::call_tool(&self.policy, &self.settings, &cancel, &progress, params);
            self.send(&reply(id, result));
            return;
        }
        let call = self.prepare(id, params);
        let running = self.running();
        let session = Arc::clone(self);
        if call.turn.is_none() {
            // Nothing to wait for: straight onto the blocking pool, one hop instead of an
            // async task that hops there.
            self.runtime().spawn_blocking(move || {
                if let Some(reply) = session.run_tool(call) {
                    session.outbox.send(&reply);
                }
                drop(running);
            });
        } else {
            self.runtime().spawn(async move {
                if let Some(reply) = session.clone().call_tool(call).await {
                    session.outbox.send(&reply);
                }
                drop(running);
            });
        }
    }

    /// A JSON-RPC batch: every element runs concurrently (writers still take their turns in
    /// order); one array of replies, none if every element was a notification.
    fn accept_batch(self: &Arc<Self>, batch: Vec<Value>) {
        if batch.is_empty() {
            let error = RpcError::new(jsonrpc::INVALID_REQUEST, "invalid request: empty batch");
            self.send(&jsonrpc::failure(Value::Null, &error));
            return;
        }
        let mut parts = JoinSet::new();
        let running = self.running();
        let runtime = self.runtime().handle().clone();
        for (idx, value) in batch.into_iter().enumerate() {
            let session = Arc::clone(self);
            // Prepared here, in order: write turns and cancellation must follow arrival.
            let job = match jsonrpc::classify(value) {
                Ok(Message::Request { id, method, params }) if method == "tools/call" => {
                    Ok(self.prepare(id, params))
                }
                other => Err(other),
            };
            parts.spawn_on(
                async move {
                    let reply = match job {
                        Ok(call) => session.call_tool(call).await,
                        Err(Ok(message)) => session.handle(message),
                        Err(Err((id, error))) => Some(jsonrpc::failure(id, &error)),
                    };
                    (idx, reply)
                },
                &runtime,
            );
        }
        let session = Arc::clone(self);
        runtime.spawn(async move {
            let mut replies: Vec<(usize, Value)> = Vec::new();
            while let Some(joined) = parts.join_next().await {
                if let Ok((idx, Some(reply))) = joined {
                    replies.push((idx, reply));
                }
            }
            replies.sort_by_key(|(idx, _)| *idx);
            if !replies.is_empty() {
                session.outbox.send(&Value::Array(replies.into_iter().map(|(_, r)| r).collect()));
            }
            drop(running);
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
            Some(dispatch::call_tool(
                &self.policy,
                &self.settings,
                &cancel,
                &Progress::default(),
                params,
            ))
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
