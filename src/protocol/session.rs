//! The session: the read loop, both protocol eras (`initialize`, and `server/discover` with
//! per-request envelopes), `ping`, `tools/list`, notifications, client roots, progress,
//! batches, and the orderly end at end of input.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, OnceLock, RwLock};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::runtime::Runtime;
use tokio::sync::oneshot;
use tokio::task::JoinSet;

use crate::policy::{AllowedRoot, Policy};
use crate::protocol::dispatch::ToolReply;
use crate::protocol::jsonrpc::{self, Message, RpcError, METHOD_NOT_FOUND, PARSE_ERROR};
use crate::protocol::revision::{self, Revision};
use crate::protocol::transport::{self, Line, Outbox};
use crate::protocol::{dispatch, roots};
use crate::sandbox::Sandbox;
use crate::schema;
use crate::tools::{Cancel, Progress, Settings};

/// How long in-flight calls may run on after stdin closes: execute_command's longest timeout
/// (60 s) plus its kill grace (3 s), plus a margin.
const DRAIN_LIMIT: Duration = Duration::from_secs(70);

/// How a failing tool call is answered (`--tool-errors`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolErrors {
    /// A JSON-RPC error with the contract's code (the default).
    #[default]
    Rpc,
    /// A result with `isError: true` whose text carries the code and the message (and, with
    /// structured output, `structuredContent: {error: {code, message}}`), so that a host that
    /// hides JSON-RPC errors still shows the model what went wrong.
    Result,
}

/// What the session needs beyond the policy and the tools' settings.
pub struct Options {
    pub tool_errors: ToolErrors,
    /// Started without directories: the sandbox waits for the client's first roots.
    pub deferred_sandbox: Option<Sandbox>,
    /// `--read-only`: a client's first roots become read-only directories, not read-write.
    pub read_only: bool,
}

pub struct Session {
    /// The allowed set and the tools' settings now; replaced when client roots change. Each
    /// call takes a snapshot when it is read.
    scope: RwLock<Scope>,
    /// The most the allowed set may be: the command line's directories, or the client's first
    /// roots when there were none.
    ceiling: Mutex<Vec<AllowedRoot>>,
    deferred_sandbox: Mutex<Option<Sandbox>>,
    tool_errors: ToolErrors,
    read_only: bool,
    outbox: Outbox,
    /// What the legacy era's `initialize` settled, and the client's root support.
    client: Mutex<Client>,
    /// Cancellation flags of the tool calls in flight, by request id (as JSON text).
    calls: Mutex<HashMap<String, Arc<Cancel>>>,
    /// `tools/list` results by revision, built on first use.
    tools_lists: Mutex<HashMap<Revision, Value>>,
    /// Completion of the last file-changing call handed out; see `write_turn`.
    last_write: Mutex<Option<oneshot::Receiver<()>>>,
    /// Runs the calls that are not answered inline; built on first use, so that a session
    /// that only says `initialize` never starts its threads.
    runtime: OnceLock<Runtime>,
    in_flight: InFlight,
    /// Replies made on the reading thread, held until it has read all the input there is:
    /// pipelined requests get their replies in one hand-off to the writer, not one each.
    held: Mutex<String>,
    reader: std::thread::ThreadId,
}

#[derive(Clone)]
struct Scope {
    policy: Arc<Policy>,
    settings: Arc<Settings>,
}

#[derive(Default)]
struct Client {
    /// Set by `initialize`; requests before it are served as the latest legacy revision.
    revision: Option<Revision>,
    /// The client said it has roots (`capabilities.roots`).
    has_roots: bool,
    /// Ids of our `roots/list` requests still unanswered.
    roots_requests: Vec<String>,
    next_request: u64,
}

/// A `tools/call` as read: its scope, registered for cancellation, holding its write turn if it
/// changes files.
struct Call {
    id: Value,
    params: Value,
    revision: Revision,
    scope: Scope,
    cancel: Arc<Cancel>,
    progress: Progress,
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
/// read_file with an `offset` is the exception: it scans the file up to the offset.
const INLINE_TOOLS: [&str; 3] = ["read_file", "get_file_info", "list_allowed_directories"];

/// Serves stdin until it closes, then answers what is in flight and returns.
pub fn serve(policy: Policy, settings: Arc<Settings>, options: Options) {
    let hook: Arc<OnceLock<std::sync::Weak<Session>>> = Arc::default();
    let gone = Arc::clone(&hook);
    let (outbox, writer) = transport::spawn_writer(move || {
        if let Some(session) = gone.get().and_then(std::sync::Weak::upgrade) {
            session.client_gone();
        }
    });
    let ceiling = policy.roots().to_vec();
    let session = Arc::new(Session {
        scope: RwLock::new(Scope { policy: Arc::new(policy), settings }),
        ceiling: Mutex::new(ceiling),
        deferred_sandbox: Mutex::new(options.deferred_sandbox),
        tool_errors: options.tool_errors,
        read_only: options.read_only,
        outbox,
        client: Mutex::new(Client::default()),
        calls: Mutex::new(HashMap::new()),
        tools_lists: Mutex::new(HashMap::new()),
        last_write: Mutex::new(None),
        runtime: OnceLock::new(),
        in_flight: InFlight::default(),
        held: Mutex::new(String::new()),
        reader: std::thread::current().id(),
    });
    let _ = hook.set(Arc::downgrade(&session));
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
        let mut count = lock(&in_flight.count);
        *count -= 1;
        if *count == 0 {
            in_flight.idle.notify_all();
        }
    }
}

impl InFlight {
    fn count(&self) -> usize {
        *lock(&self.count)
    }

    /// Waits until nothing runs; false if `limit` passed first.
    fn wait_idle(&self, limit: Duration) -> bool {
        let count = lock(&self.count);
        let (count, _) = self
            .idle
            .wait_timeout_while(count, limit, |count| *count > 0)
            .unwrap_or_else(|e| e.into_inner());
        *count == 0
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl Session {
    /// Counts a request in; the guard counts it out when dropped.
    fn running(self: &Arc<Self>) -> Running {
        *lock(&self.in_flight.count) += 1;
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

    /// The client closed stdout: nothing can be answered any more, so stop what runs (a write
    /// under way still finishes whole), let it end, and exit, even while stdin stays open.
    fn client_gone(&self) {
        tracing::info!("the client closed stdout; cancelling in-flight calls and exiting");
        for cancel in lock(&self.calls).values() {
            cancel.cancel();
        }
        self.in_flight.wait_idle(Duration::from_secs(10));
        if let Some(tmp) = &self.scope().settings.command_tmp {
            tmp.remove();
        }
        std::process::exit(0);
    }

    fn scope(&self) -> Scope {
        self.scope.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// While the sandbox waits for the client's roots, no thread may start that the sandbox
    /// would not cover (Landlock confines the thread that applies it and those it starts
    /// afterwards), so every call runs on the reading thread. Nothing is allowed yet anyway.
    fn must_stay_inline(&self) -> bool {
        lock(&self.deferred_sandbox).is_some()
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
                match self.revision_of(&method, &params) {
                    Ok(revision) => self.accept_call(id, params, revision),
                    Err(error) => self.send(&jsonrpc::failure(id, &error)),
                }
            }
            Ok(message) => {
                if let Some(reply) = self.handle(message) {
                    self.send(&reply);
                }
            }
            Err((id, error)) => self.send(&jsonrpc::failure(id, &error)),
        }
    }

    /// The revision a request is served under: the one its modern envelope names, else what
    /// `initialize` settled (the latest legacy revision before it). `initialize` itself is
    /// always legacy.
    fn revision_of(&self, method: &str, params: &Value) -> Result<Revision, RpcError> {
        let modern = if method == "initialize" { None } else { revision::envelope(params)? };
        Ok(modern.unwrap_or_else(|| lock(&self.client).revision.unwrap_or(revision::LATEST_LEGACY)))
    }

    /// Replies from the reading thread are held until `release_held`; other threads (a batch
    /// answering a notification, say) send at once, since the reading thread may be waiting
    /// for input that never comes.
    fn send(&self, message: &Value) {
        self.send_line(transport::line_of(message));
    }

    fn send_reply(&self, reply: Reply) {
        match reply {
            Reply::Value(value) => self.send(&value),
            Reply::Line(line) => self.send_line(line),
        }
    }

    fn send_line(&self, line: String) {
        if std::thread::current().id() != self.reader {
            self.outbox.send_lines(line);
            return;
        }
        let mut held = lock(&self.held);
        if line.len() >= HOLD_LIMIT {
            // A big reply goes as it is, after what is held, without another copy.
            self.outbox.send_lines(std::mem::take(&mut held));
            self.outbox.send_lines(line);
            return;
        }
        held.push_str(&line);
        // A client that never pauses still gets its replies as it goes.
        if held.len() >= HOLD_LIMIT {
            self.outbox.send_lines(std::mem::take(&mut held));
        }
    }

    fn release_held(&self) {
        let held = std::mem::take(&mut *lock(&self.held));
        self.outbox.send_lines(held);
    }

    /// A single `tools/call`: inline if it is a quick read, else on the runtime.
    fn accept_call(self: &Arc<Self>, id: Value, params: Value, revision: Revision) {
        let name = params.get("name").and_then(Value::as_str).unwrap_or_default();
        // A read from an `offset` scans up to it: far into a big file, that is not quick.
        let scans = name == "read_file" && params.pointer("/arguments/offset").is_some();
        let inline = (INLINE_TOOLS.contains(&name) && !scans) || self.must_stay_inline();
        let call = self.prepare(id, params, revision);
        if inline {
            if let Some(reply) = self.run_tool(call) {
                self.send_reply(reply);
            }
            return;
        }
        let running = self.running();
        let session = Arc::clone(self);
        if call.turn.is_none() {
            // Nothing to wait for: straight onto the blocking pool, one hop instead of an
            // async task that hops there.
            self.runtime().spawn_blocking(move || {
                if let Some(reply) = session.run_tool(call) {
                    session.send_reply(reply);
                }
                drop(running);
            });
        } else {
            self.runtime().spawn(async move {
                if let Some(reply) = session.clone().call_tool(call).await {
                    session.send_reply(reply);
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
        // Prepared here, in order: write turns and cancellation must follow arrival.
        let jobs: Vec<Result<Call, Option<Value>>> = batch
            .into_iter()
            .map(|value| match jsonrpc::classify(value) {
                Ok(Message::Request { id, method, params }) if method == "tools/call" => {
                    match self.revision_of(&method, &params) {
                        Ok(revision) => Ok(self.prepare(id, params, revision)),
                        Err(error) => Err(Some(jsonrpc::failure(id, &error))),
                    }
                }
                Ok(message) => Err(self.handle(message)),
                Err((id, error)) => Err(Some(jsonrpc::failure(id, &error))),
            })
            .collect();
        if self.must_stay_inline() {
            let replies: Vec<Value> = jobs
                .into_iter()
                .filter_map(|job| match job {
                    Ok(call) => self.run_tool(call).map(Reply::into_value),
                    Err(reply) => reply,
                })
                .collect();
            if !replies.is_empty() {
                self.send(&Value::Array(replies));
            }
            return;
        }
        let mut parts = JoinSet::new();
        let running = self.running();
        let runtime = self.runtime().handle().clone();
        for (idx, job) in jobs.into_iter().enumerate() {
            let session = Arc::clone(self);
            parts.spawn_on(
                async move {
                    let reply = match job {
                        Ok(call) => session.call_tool(call).await.map(Reply::into_value),
                        Err(reply) => reply,
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
        let previous = lock(&self.last_write).replace(next);
        Some(WriteTurn { previous, _done: done })
    }

    /// Registers a tool call as it is read: its scope, its cancellation flag (so that a cancel
    /// sent right behind the request finds it), its progress reports and its write turn.
    fn prepare(&self, id: Value, params: Value, revision: Revision) -> Call {
        let cancel = Arc::new(Cancel::default());
        lock(&self.calls).insert(id.to_string(), Arc::clone(&cancel));
        let progress = match params.pointer("/_meta/progressToken") {
            Some(token @ (Value::String(_) | Value::Number(_))) => {
                progress_sink(self.outbox.clone(), token.clone(), revision, Arc::clone(&cancel))
            }
            _ => Progress::default(),
        };
        let turn = self.write_turn(&params);
        Call { id, params, revision, scope: self.scope(), cancel, progress, turn }
    }

    /// Runs a tool call once its write turn (if any) has come. `None` when the client
    /// cancelled it: a cancelled request gets no response.
    async fn call_tool(self: Arc<Self>, mut call: Call) -> Option<Reply> {
        if let Some(WriteTurn { previous: Some(previous), .. }) = &mut call.turn {
            // An error only means the previous writer is gone (finished or panicked): go on.
            let _ = previous.await;
        }
        let outcome = tokio::task::spawn_blocking(move || self.run_tool(call)).await;
        // The tool's own panics are caught in dispatch; a join error is the runtime shutting
        // down, and there is no one left to answer.
        outcome.unwrap_or_default()
    }

    /// Runs a tool call on this thread, unless it was cancelled already.
    fn run_tool(&self, call: Call) -> Option<Reply> {
        let Call { id, params, revision, scope, cancel, progress, turn } = call;
        let result = if cancel.is_cancelled() {
            None
        } else {
            Some(dispatch::call_tool(&scope.policy, &scope.settings, &cancel, &progress, params))
        };
        // No progress after this: the response follows.
        progress.finish();
        // The next writer may go as soon as this one is done, before the reply is written.
        drop(turn);
        lock(&self.calls).remove(&id.to_string());
        let result = match result {
            Some(result) if !cancel.is_cancelled() => result,
            _ => {
                tracing::debug!(%id, "cancelled; no response");
                return None;
            }
        };
        let result = match result {
            Err(error) if self.tool_errors == ToolErrors::Result => {
                Ok(ToolReply { result: error_result(&error, revision), structured_json: None })
            }
            other => other,
        };
        Some(match result {
            Ok(ToolReply { result, structured_json }) => {
                let result = finish(revision::tool_result(result, revision), revision);
                match structured_json.filter(|_| revision.has_structured_output()) {
                    Some(raw) => Reply::Line(line_with_structured(&id, &result, &raw)),
                    None => Reply::Value(jsonrpc::success(id, result)),
                }
            }
            Err(error) => Reply::Value(jsonrpc::failure(id, &error)),
        })
    }

    /// `notifications/cancelled`: flags the call; unknown or finished ids are ignored.
    fn cancel(&self, params: &Value) {
        let Some(id) = params.get("requestId") else { return };
        if let Some(cancel) = lock(&self.calls).get(&id.to_string()) {
            tracing::debug!(%id, "cancelling");
            cancel.cancel();
        }
    }

    /// Everything but `tools/call`. Returns the reply, if the message needs one.
    fn handle(&self, message: Message) -> Option<Value> {
        match message {
            Message::Request { id, method, params } => {
                let outcome = self.revision_of(&method, &params).and_then(|revision| {
                    self.request(&method, &params, revision).map(|r| finish(r, revision))
                });
                Some(match outcome {
                    Ok(result) => jsonrpc::success(id, result),
                    Err(error) => jsonrpc::failure(id, &error),
                })
            }
            Message::Notification { method, params } => {
                match method.as_str() {
                    "notifications/initialized" | "initialized" => self.request_roots(),
                    "notifications/roots/list_changed" => self.request_roots(),
                    "notifications/cancelled" => self.cancel(&params),
                    other => tracing::debug!(method = other, %params, "ignoring notification"),
                }
                None
            }
            Message::Response { id, outcome } => {
                self.response(id, outcome);
                None
            }
        }
    }

    fn request(&self, method: &str, params: &Value, revision: Revision) -> Result<Value, RpcError> {
        match method {
            "initialize" => Ok(self.initialize(params)),
            "server/discover" => Ok(discover()),
            "ping" => Ok(json!({})),
            "tools/list" => Ok(self.tools_list(revision)),
            "tools/call" => unreachable!("tools/call is dispatched on its own"),
            _ => Err(RpcError::new(METHOD_NOT_FOUND, format!("method not found: {method}"))),
        }
    }

    fn initialize(&self, params: &Value) -> Value {
        let asked = params.get("protocolVersion").and_then(Value::as_str).unwrap_or_default();
        let revision = revision::negotiate(asked);
        let mut client = lock(&self.client);
        client.revision = Some(revision);
        client.has_roots = params.pointer("/capabilities/roots").is_some_and(Value::is_object);
        json!({
            "protocolVersion": revision.as_str(),
            "capabilities": {"tools": {"listChanged": false}},
            "serverInfo": revision::server_info(),
        })
    }

    /// The tools this configuration serves, as `revision` describes tools.
    fn tools_list(&self, revision: Revision) -> Value {
        let mut lists = lock(&self.tools_lists);
        let list = lists.entry(revision).or_insert_with(|| {
            let settings = self.scope().settings;
            let tools: Vec<Value> = schema::definitions()
                .iter()
                .filter(|d| settings.serves(d.name))
                .map(|d| {
                    let mut def = revision::tool_definition(&d.definition, revision);
                    if self.tool_errors == ToolErrors::Result {
                        admit_error_output(&mut def);
                    }
                    def
                })
                .collect();
            let mut list = json!({ "tools": tools });
            if revision.is_modern() {
                // The list is fixed for the life of the process, and depends on its command
                // line, not on who asks.
                list["ttlMs"] = json!(300_000);
                list["cacheScope"] = json!("private");
            }
            list
        });
        list.clone()
    }

    /// Asks a client that has roots for them (after `initialized`, and when they change).
    fn request_roots(&self) {
        let id = {
            let mut client = lock(&self.client);
            if !client.has_roots {
                return;
            }
            client.next_request += 1;
            let id = format!("replay-roots-{}", client.next_request);
            client.roots_requests.push(id.clone());
            id
        };
        tracing::debug!(%id, "asking the client for its roots");
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": "roots/list"}));
    }

    /// A response to one of our requests: only `roots/list` is ever asked.
    fn response(&self, id: Value, outcome: Result<Value, Value>) {
        let Some(id) = id.as_str() else {
            tracing::debug!(%id, "ignoring a response to no request of ours");
            return;
        };
        {
            let mut client = lock(&self.client);
            let Some(at) = client.roots_requests.iter().position(|r| r == id) else {
                tracing::debug!(%id, "ignoring a response to no request of ours");
                return;
            };
            client.roots_requests.remove(at);
        }
        match outcome {
            Ok(result) => self.apply_roots(&roots::parse(&result)),
            Err(error) => tracing::warn!(%error, "the client could not list its roots"),
        }
    }

    /// Narrows the allowed set to the client's roots (never beyond the ceiling). A server
    /// started without directories takes the first roots as its ceiling and applies the
    /// sandbox now, from this thread, before any thread that would escape it exists.
    fn apply_roots(&self, client_roots: &[std::path::PathBuf]) {
        let mut ceiling = lock(&self.ceiling);
        let mut settings = (*self.scope().settings).clone();
        if ceiling.is_empty() {
            if client_roots.is_empty() {
                return;
            }
            *ceiling = roots::as_ceiling(client_roots);
            if self.read_only {
                ceiling.iter_mut().for_each(|root| root.access = crate::policy::Access::Read);
            }
            if let Some(sandbox) = lock(&self.deferred_sandbox).take() {
                let applied = sandbox.apply(&ceiling);
                tracing::info!(status = ?applied.status, "sandbox applied with the client's roots");
                settings.sandbox_note = applied.status.note();
                settings.confinement = applied.confinement;
            }
        }
        let allowed = roots::narrow(&ceiling, client_roots);
        for root in &allowed {
            tracing::info!(path = %root.path.display(), access = ?root.access, "allowed directory (client roots)");
        }
        let policy = self.scope().policy.with_roots(allowed);
        *self.scope.write().unwrap_or_else(|e| e.into_inner()) =
            Scope { policy: Arc::new(policy), settings: Arc::new(settings) };
    }
}

/// A tool call's reply: a message, or a line made already (structured content spliced in).
enum Reply {
    Value(Value),
    Line(String),
}

impl Reply {
    /// For a batch, whose replies go out as one array.
    fn into_value(self) -> Value {
        match self {
            Reply::Value(value) => value,
            Reply::Line(line) => serde_json::from_str(&line).unwrap_or(Value::Null),
        }
    }
}

/// The reply line for `result` with `raw` (a serialized JSON object) as its
/// `structuredContent`, written as it is.
fn line_with_structured(id: &Value, result: &Value, raw: &str) -> String {
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

/// The modern era's `server/discover`: which revisions replay serves without a handshake.
/// Answered in the modern shape even to a request without an envelope (a script asking what
/// the server speaks).
fn discover() -> Value {
    let supported: Vec<&str> = revision::MODERN.iter().map(|r| r.as_str()).collect();
    revision::modern_result(json!({
        "supportedVersions": supported,
        "capabilities": {"tools": {"listChanged": false}},
        "ttlMs": 300_000,
        "cacheScope": "private",
    }))
}

/// A result as its revision shapes every result: the modern era marks each one.
fn finish(result: Value, revision: Revision) -> Value {
    if revision.is_modern() {
        revision::modern_result(result)
    } else {
        result
    }
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

/// With `--tool-errors result`, an error result's `structuredContent` is `{error: {code,
/// message}}`: a declared output schema must admit it (clients validate even error results).
fn admit_error_output(definition: &mut Value) {
    let Some(schema) = definition.get_mut("outputSchema") else { return };
    let error = json!({
        "type": "object",
        "properties": {"error": {
            "type": "object",
            "properties": {"code": {"type": "integer"}, "message": {"type": "string"}},
            "required": ["code", "message"],
        }},
        "required": ["error"],
    });
    *schema = json!({"type": "object", "anyOf": [schema.take(), error]});
}

/// Progress reports of one call as `notifications/progress` with its token. A cancelled call
/// sends none (nothing more may be said about it).
fn progress_sink(
    outbox: Outbox,
    token: Value,
    revision: Revision,
    cancel: Arc<Cancel>,
) -> Progress {
    Progress::new(move |done, total, message| {
        if cancel.is_cancelled() {
            return;
        }
        let mut params = json!({"progressToken": token, "progress": done});
        if let Some(total) = total {
            params["total"] = json!(total);
        }
        if revision.has_annotations() {
            params["message"] = json!(message);
        }
        outbox
            .send(&json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": params}));
    })
}
