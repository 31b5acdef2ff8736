//! The session: the read loop, both protocol eras (`initialize`, and `server/discover` with
//! per-request envelopes), `ping`, `tools/list`, notifications, asking for client roots, and
//! the orderly end at end of input. Tool calls go to the call path (`calls::Calls`); where they
//! run is `schedule`'s.
//! When stdout fails, calls in flight are cancelled and given 10 s before the process exits.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde_json::{json, Value};

use crate::audit::AuditLog;
use crate::memory;
use crate::policy::Policy;
use crate::protocol::calls::{Calls, Job};
use crate::protocol::held::Held;
use crate::protocol::jsonrpc::{
    self, Element, Id, Incoming, Message, RpcError, METHOD_NOT_FOUND, PARSE_ERROR,
};
use crate::protocol::reply::{self, LineAllowance};
use crate::protocol::revision::{self, Revision};
use crate::protocol::schedule::DRAIN_LIMIT;
use crate::protocol::scope::Scopes;
use crate::protocol::tools_list::ToolsLists;
use crate::protocol::transport::{self, Line, Outbox, Quiet};
use crate::protocol::{lock, roots, ToolErrors};
use crate::sandbox::Sandbox;
use crate::tools::Settings;

/// What the session needs beyond the policy and the tools' settings.
pub struct Options {
    pub tool_errors: ToolErrors,
    /// Started without directories: the sandbox waits for the client's first roots.
    pub deferred_sandbox: Option<Sandbox>,
    /// `--read-only`: a client's first roots become read-only directories, not read-write.
    pub read_only: bool,
    /// `--audit-log`: a line per tool call.
    pub audit: Option<Arc<AuditLog>>,
}

pub struct Session {
    /// The allowed set and the tools' settings; replaced when client roots change.
    scopes: Arc<Scopes>,
    tool_errors: ToolErrors,
    outbox: Outbox,
    /// Replies made on the reading thread, handed over when it has read all there is.
    held: Arc<Held>,
    /// What the legacy era's `initialize` settled, and the client's root support.
    client: Mutex<Client>,
    /// The call path: the tool calls in flight, where they run, and their write turns.
    calls: Arc<Calls>,
    tools_lists: ToolsLists,
    /// Told the client's name and version at `initialize`.
    audit: Option<Arc<AuditLog>>,
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
    /// The client has named a usable root: from then on an answer without one allows nothing.
    narrowed: bool,
}

/// Serves stdin until it closes, then answers what is in flight and returns.
pub fn serve(policy: Policy, settings: Arc<Settings>, options: Options) {
    let hook: Arc<OnceLock<std::sync::Weak<Session>>> = Arc::default();
    let gone = Arc::clone(&hook);
    // Freed memory goes back to the kernel once replies stop: kept while calls come, so the
    // next large reply reuses it (see `memory`).
    let quiet = Quiet { after: memory::QUIET, then: Box::new(memory::give_back) };
    let on_gone = move || {
        if let Some(session) = gone.get().and_then(std::sync::Weak::upgrade) {
            session.client_gone();
        }
    };
    let (outbox, writer) = transport::spawn_writer(on_gone, quiet);
    let scopes =
        Arc::new(Scopes::new(policy, settings, options.deferred_sandbox, options.read_only));
    let held = Arc::new(Held::new(outbox.clone(), std::thread::current().id()));
    let audit = options.audit.clone();
    let calls = Calls::new(
        Arc::clone(&scopes),
        Arc::clone(&held),
        outbox.clone(),
        options.tool_errors,
        options.audit,
    );
    let session = Arc::new(Session {
        scopes,
        tool_errors: options.tool_errors,
        held,
        outbox,
        client: Mutex::new(Client::default()),
        calls: Arc::new(calls),
        tools_lists: ToolsLists::default(),
        audit,
    });
    let _ = hook.set(Arc::downgrade(&session));
    let each = |line| {
        session.accept(line);
        // Backpressure: no next request while too many replies wait unread, or while the
        // calls in flight hold too much.
        if session.outbox.must_wait() || session.calls.schedule().backlog_full() {
            session.held.release();
            session.outbox.wait_for_room();
            session.calls.schedule().wait_for_backlog();
        }
    };
    transport::read_lines(each, || session.held.release());
    let pending = session.calls.schedule().in_flight();
    tracing::debug!(in_flight = pending, "stdin closed; finishing in-flight requests");
    if !session.calls.schedule().wait_idle(DRAIN_LIMIT) {
        tracing::warn!(
            "in-flight requests still running {DRAIN_LIMIT:?} after stdin closed; exiting"
        );
    }
    session.outbox.close();
    let _ = writer.join();
    if let Some(calls) = Arc::into_inner(session).and_then(|session| Arc::into_inner(session.calls))
    {
        calls.shut_down();
    }
}

impl Session {
    /// The client closed stdout: nothing can be answered any more, so stop what runs (a write
    /// under way still finishes whole), let it end, and exit, even while stdin stays open.
    fn client_gone(&self) {
        tracing::info!("the client closed stdout; cancelling in-flight calls and exiting");
        self.calls.cancel_all();
        self.calls.schedule().wait_idle(Duration::from_secs(10));
        if let Some(tmp) = &self.scopes.current().settings.command_tmp {
            tmp.remove();
        }
        std::process::exit(0);
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
                let error = RpcError::new(PARSE_ERROR, message);
                self.held.send_line(jsonrpc::failure_line(&Id::null(), &error));
                return;
            }
        };
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        // What the request holds while it waits and runs, for the backlog's bound.
        let cost = || jsonrpc::read_cost(&bytes).bytes.max(bytes.len());
        let mut element = match jsonrpc::parse(&bytes) {
            Ok(Incoming::One(element)) => element,
            Ok(Incoming::Batch(elements)) => return self.accept_batch(elements, cost()),
            Err((id, error)) => return self.held.send_line(jsonrpc::failure_line(&id, &error)),
        };
        let reply = match element.classify() {
            Ok(Message::Request { id, method, params }) if method == "tools/call" => {
                match self.revision_of(&method, &params) {
                    Ok(revision) => {
                        return self.calls.accept(&element, id, params, revision, cost())
                    }
                    Err(error) => Some(jsonrpc::failure_line(&id, &error)),
                }
            }
            Ok(message) => self.handle(&element, message),
            Err((id, error)) => Some(jsonrpc::failure_line(&id, &error)),
        };
        if let Some(reply) = reply {
            self.held.send_line(reply);
        }
    }

    /// A JSON-RPC batch: each element prepared here, in order (write turns and cancellation
    /// must follow arrival), then run by the call path (`Calls::run_batch`).
    fn accept_batch(self: &Arc<Self>, batch: Vec<Element>, cost: usize) {
        if batch.is_empty() {
            let error = RpcError::new(jsonrpc::INVALID_REQUEST, "invalid request: empty batch");
            self.held.send_line(jsonrpc::failure_line(&Id::null(), &error));
            return;
        }
        // One budget for the whole array: every reply in it is charged, tool results and the
        // others alike (20,000 `tools/list` in one batch asked for 298 MiB).
        let budget = Arc::new(LineAllowance::default());
        let jobs = batch.into_iter().map(|element| self.batch_job(element, &budget)).collect();
        self.calls.run_batch(jobs, budget, cost);
    }

    /// One element of a batch: a tool call registered with the call path, or its reply.
    fn batch_job(&self, mut element: Element, budget: &LineAllowance) -> Job {
        let message = match element.classify() {
            Ok(message) => message,
            Err((id, error)) => {
                let line = jsonrpc::failure_line(&id, &error);
                return Err(Some(reply::charged(Some(&id), line, budget)));
            }
        };
        match message {
            Message::Request { id, method, params } if method == "tools/call" => {
                match self.revision_of(&method, &params) {
                    Ok(revision) => Ok(self.calls.prepare(&element, id, params, revision)),
                    Err(error) => {
                        let line = jsonrpc::failure_line(&id, &error);
                        Err(Some(reply::charged(Some(&id), line, budget)))
                    }
                }
            }
            message => {
                let id = match &message {
                    Message::Request { id, .. } => Some(id.clone()),
                    _ => None,
                };
                let line = self.handle(&element, message);
                Err(line.map(|line| reply::charged(id.as_ref(), line, budget)))
            }
        }
    }

    /// The revision a request is served under: the one its modern envelope names, else what
    /// `initialize` settled (the latest legacy revision before it). `initialize` itself is
    /// always legacy.
    fn revision_of(&self, method: &str, params: &Value) -> Result<Revision, RpcError> {
        let modern = if method == "initialize" { None } else { revision::envelope(params)? };
        Ok(modern.unwrap_or_else(|| lock(&self.client).revision.unwrap_or(revision::LATEST_LEGACY)))
    }

    /// Everything but `tools/call`. Returns the reply line, if the message needs one.
    fn handle(&self, element: &Element, message: Message) -> Option<String> {
        match message {
            Message::Request { id, method, params } => {
                let outcome = self.revision_of(&method, &params).and_then(|revision| {
                    self.request(&method, &params, revision).map(|r| finish(r, revision))
                });
                Some(match outcome {
                    Ok(result) => jsonrpc::success_line(&id, &result),
                    Err(error) => jsonrpc::failure_line(&id, &error),
                })
            }
            Message::Notification { method, params } => {
                match method.as_str() {
                    "notifications/initialized" | "initialized" => self.request_roots(),
                    "notifications/roots/list_changed" => self.request_roots(),
                    "notifications/cancelled" => {
                        if let Some(id) = element.cancelled_request() {
                            self.calls.cancel(&id);
                        }
                    }
                    other => tracing::debug!(method = other, %params, "ignoring notification"),
                }
                None
            }
            Message::Response { id, outcome } => {
                self.response(&id, outcome);
                None
            }
        }
    }

    fn request(&self, method: &str, params: &Value, revision: Revision) -> Result<Value, RpcError> {
        match method {
            "initialize" => Ok(self.initialize(params)),
            "server/discover" => Ok(discover()),
            "ping" => Ok(json!({})),
            "tools/list" => {
                let settings = self.scopes.current().settings;
                let error_results = self.tool_errors == ToolErrors::Result;
                Ok(self.tools_lists.get(revision, &settings, error_results))
            }
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
        if let Some(audit) = &self.audit {
            let info = |key: &str| {
                params.pointer(&format!("/clientInfo/{key}")).and_then(Value::as_str).unwrap_or("")
            };
            audit.set_client(info("name"), info("version"));
        }
        json!({
            "protocolVersion": revision.as_str(),
            "capabilities": {"tools": {"listChanged": false}},
            "serverInfo": revision::server_info(),
            "instructions": revision::INSTRUCTIONS,
        })
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
        let request = json!({"jsonrpc": "2.0", "id": id, "method": "roots/list"});
        self.held.send_line(request.to_string());
    }

    /// A response to one of our requests: only `roots/list` is ever asked.
    fn response(&self, id: &Id, outcome: Result<Value, Value>) {
        let Some(id) = id.as_string() else {
            tracing::debug!(%id, "ignoring a response to no request of ours");
            return;
        };
        {
            let mut client = lock(&self.client);
            let Some(at) = client.roots_requests.iter().position(|r| *r == id) else {
                tracing::debug!(%id, "ignoring a response to no request of ours");
                return;
            };
            client.roots_requests.remove(at);
        }
        match outcome {
            Ok(result) => {
                let dirs = roots::parse(&result);
                let mut client = lock(&self.client);
                // An empty list from a client that never named a root (the MCP Inspector
                // declares roots and sends none) keeps the command line it never narrowed.
                let empty =
                    result.get("roots").and_then(Value::as_array).is_some_and(Vec::is_empty);
                if empty && !client.narrowed {
                    tracing::info!(
                        "the client sent an empty roots list: the command line's directories stay"
                    );
                    return;
                }
                client.narrowed |= !dirs.is_empty();
                drop(client);
                self.scopes.apply_roots(&dirs)
            }
            Err(error) => tracing::warn!(%error, "the client could not list its roots"),
        }
    }
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
        "instructions": revision::INSTRUCTIONS,
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
