//! The call path (`Calls`): tool calls registered as they are read (cancellation flag, progress
//! sink, write turn), run inline or on the runtime, batches gathered into one array, and
//! answered unless cancelled.

use std::collections::HashMap;
use std::future::{poll_fn, Future};
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Instant;

use serde_json::{json, Value};
use tokio::task::JoinSet;

use crate::audit::{AuditLog, Record};
use crate::policy::Policy;
use crate::progress::{Cancel, Progress};
use crate::protocol::dispatch::{self, ToolCall};
use crate::protocol::held::Held;
use crate::protocol::jsonrpc::{self, Element, Id, RpcError};
use crate::protocol::reply::{self, LineAllowance};
use crate::protocol::revision::Revision;
use crate::protocol::schedule::Schedule;
use crate::protocol::scope::{Scope, Scopes};
use crate::protocol::transport::Outbox;
use crate::protocol::{lock, ToolErrors};
use crate::tools::table::{Runs, Tool};
use crate::write_order::Turn;
use crate::write_order::WriteTurn;

/// The call path: registers each `tools/call` as it is read (cancellation flag, progress sink,
/// write turn), runs it where its row says, and writes its reply unless it was cancelled. It
/// holds the handles it needs and nothing of the session's.
pub struct Calls {
    /// The tool calls in flight, by request id (`Id::key`: as sent).
    in_flight: Mutex<HashMap<String, Registered>>,
    /// The runtime, the requests in flight and the write turns.
    schedule: Schedule,
    /// What each call may reach, snapshotted when it is read.
    scopes: Arc<Scopes>,
    held: Arc<Held>,
    outbox: Outbox,
    tool_errors: ToolErrors,
    audit: Option<Arc<AuditLog>>,
}

struct Registered {
    cancel: Arc<Cancel>,
    /// The call's write turn (`Turn::seq`), if it changes files.
    turn: Option<u64>,
}

/// One element of a batch, prepared in arrival order: a tool call to run, or an element
/// already answered (`Err(None)`: a notification, or nothing to say).
pub type Job = Result<Call, Option<String>>;

impl Calls {
    pub fn new(
        scopes: Arc<Scopes>,
        held: Arc<Held>,
        outbox: Outbox,
        tool_errors: ToolErrors,
        audit: Option<Arc<AuditLog>>,
    ) -> Calls {
        Calls {
            in_flight: Mutex::default(),
            schedule: Schedule::default(),
            scopes,
            held,
            outbox,
            tool_errors,
            audit,
        }
    }

    pub fn schedule(&self) -> &Schedule {
        &self.schedule
    }

    /// `notifications/cancelled` for `id`: flags the call and ends its write turn if it runs;
    /// unknown or finished ids are ignored.
    pub fn cancel(&self, id: &Id) {
        let turn = {
            let calls = lock(&self.in_flight);
            let Some(call) = calls.get(&id.key()) else { return };
            tracing::debug!(%id, "cancelling");
            call.cancel.cancel();
            call.turn
        };
        if let Some(turn) = turn {
            self.schedule.cancelled(turn);
        }
    }

    /// Cancels every call in flight: the client is gone.
    pub fn cancel_all(&self) {
        for call in lock(&self.in_flight).values() {
            call.cancel.cancel();
        }
    }

    /// Stops what still runs past the drain (the process is ending).
    pub fn shut_down(self) {
        self.schedule.shut_down();
    }
}

/// A `tools/call` as read: its scope, registered for cancellation, holding its write turn if it
/// changes files.
pub struct Call {
    id: Id,
    /// The params as read on arrival, or why they name no tool call.
    request: Result<ToolCall, RpcError>,
    revision: Revision,
    scope: Scope,
    cancel: Arc<Cancel>,
    progress: Progress,
    turn: Option<Turn>,
}

impl Call {
    /// Whether the call waits for one of the places of calls that hold data
    /// (`Spec::holds_data`).
    fn holds_data(&self) -> bool {
        self.request.as_ref().is_ok_and(|call| call.tool.spec().holds_data)
    }

    /// Whether the call waits for one of the places of calls that run a command
    /// (`Spec::command_place`).
    fn takes_command_place(&self) -> bool {
        self.request.as_ref().is_ok_and(|call| call.tool.spec().command_place)
    }

    /// Whether the call is answered on the reading thread (`Spec::runs`).
    fn runs_inline(&self) -> bool {
        let Ok(call) = &self.request else { return false };
        match call.tool.spec().runs {
            Runs::Inline => true,
            Runs::InlineWithout(argument) => call.args.get(argument).is_none(),
            Runs::Pool => false,
        }
    }
}

impl Calls {
    /// A single `tools/call`: inline if it is a quick read, else on the runtime.
    pub fn accept(
        self: &Arc<Self>,
        element: &Element,
        id: Id,
        params: Value,
        revision: Revision,
        cost: usize,
    ) {
        let call = self.prepare(element, id, params, revision);
        if call.runs_inline() || self.scopes.sandbox_deferred() {
            if let Some(line) = self.run_tool(call, &LineAllowance::default()) {
                self.held.send_line(line);
            }
            return;
        }
        let running = self.schedule.running(cost);
        let calls = Arc::clone(self);
        let waits = call.holds_data() || call.takes_command_place();
        if call.turn.as_ref().is_none_or(Turn::is_free) && !waits {
            // Nothing to wait for: straight onto the blocking pool, one hop instead of an
            // async task that hops there.
            self.schedule.runtime().spawn_blocking(move || {
                calls.outbox.wait_for_room();
                if let Some(line) = calls.run_tool(call, &LineAllowance::default()) {
                    calls.held.send_line(line);
                }
                drop(running);
            });
        } else {
            self.schedule.runtime().spawn(async move {
                let budget = Arc::new(LineAllowance::default());
                if let Some(line) = calls.clone().call_tool(call, budget).await {
                    calls.held.send_line(line);
                }
                drop(running);
            });
        }
    }

    /// A batch's elements, prepared in order (`Job`), run concurrently (writers still take
    /// their turns in order); one array of replies, none if every element was a notification.
    /// The array is the elements' reply lines joined, under `budget`, the cap on one reply as a
    /// whole.
    pub fn run_batch(self: &Arc<Self>, jobs: Vec<Job>, budget: Arc<LineAllowance>, cost: usize) {
        if self.scopes.sandbox_deferred() {
            let replies: Vec<String> = jobs
                .into_iter()
                .filter_map(|job| match job {
                    Ok(call) => self.run_tool(call, &budget),
                    Err(reply) => reply,
                })
                .collect();
            if !replies.is_empty() {
                self.held.send_pieces(reply::batch_pieces(replies));
            }
            return;
        }
        let mut parts = JoinSet::new();
        let running = self.schedule.running(cost);
        let runtime = self.schedule.runtime().handle().clone();
        for (idx, job) in jobs.into_iter().enumerate() {
            let calls = Arc::clone(self);
            let budget = Arc::clone(&budget);
            parts.spawn_on(
                async move {
                    let reply = match job {
                        Ok(call) => calls.call_tool(call, budget).await,
                        Err(reply) => reply,
                    };
                    (idx, reply)
                },
                &runtime,
            );
        }
        let calls = Arc::clone(self);
        runtime.spawn(async move {
            let mut replies: Vec<(usize, String)> = Vec::new();
            while let Some(joined) = parts.join_next().await {
                if let Ok((idx, Some(reply))) = joined {
                    replies.push((idx, reply));
                }
            }
            replies.sort_by_key(|(idx, _)| *idx);
            if !replies.is_empty() {
                let replies: Vec<String> = replies.into_iter().map(|(_, r)| r).collect();
                calls.held.send_pieces(reply::batch_pieces(replies));
            }
            drop(running);
        });
    }

    /// Registers a tool call as it is read: its scope, its cancellation flag (so that a cancel
    /// sent right behind the request finds it), its progress reports and its write turn.
    pub fn prepare(&self, element: &Element, id: Id, params: Value, revision: Revision) -> Call {
        let scope = self.scopes.current();
        let cancel = Arc::new(Cancel::default());
        let progress = match element.progress_token(&params) {
            Some(token) => progress_sink(self.outbox.clone(), token, revision, Arc::clone(&cancel)),
            None => Progress::default(),
        };
        let request = dispatch::envelope(params);
        let keys = request.as_ref().ok().and_then(|c| c.tool.write_keys(&scope.policy, &c.args));
        let turn = keys.map(|keys| self.schedule.write_turn(keys));
        let registered =
            Registered { cancel: Arc::clone(&cancel), turn: turn.as_ref().map(Turn::seq) };
        lock(&self.in_flight).insert(id.key(), registered);
        Call { id, request, revision, scope, cancel, progress, turn }
    }

    /// Runs a tool call once its write turn (if any) has come. `None` when the client
    /// cancelled it: a cancelled request gets no response.
    async fn call_tool(
        self: Arc<Self>,
        mut call: Call,
        budget: Arc<LineAllowance>,
    ) -> Option<String> {
        if let Some(turn) = &mut call.turn {
            turn.wait().await;
        }
        // After the turn: a writer waiting for its turn does not hold a place meanwhile.
        let place = match call.holds_data() {
            true => self.schedule.data_place().await,
            false => None,
        };
        let command_place = match call.takes_command_place() {
            true => match until_cancelled(self.schedule.command_place(), &call.cancel).await {
                Some(place) => place,
                // Cancelled while waiting: `run_tool` only counts it out, on this task.
                None => return self.run_tool(call, &budget),
            },
            false => None,
        };
        let outcome = tokio::task::spawn_blocking(move || {
            // Not started while replies wait unread past the bound (backpressure).
            self.outbox.wait_for_room();
            let reply = self.run_tool(call, &budget);
            drop((place, command_place));
            reply
        })
        .await;
        // The tool's own panics are caught in dispatch; a join error is the runtime shutting
        // down, and there is no one left to answer.
        outcome.unwrap_or_default()
    }

    /// Runs a tool call on this thread, unless it was cancelled already, and writes its reply
    /// line (without the newline).
    fn run_tool(&self, call: Call, budget: &LineAllowance) -> Option<String> {
        let Call { id, request, revision, scope, cancel, progress, turn } = call;
        let audited = self
            .audit
            .as_ref()
            .zip(request.as_ref().ok())
            .map(|(log, request)| (log, Instant::now(), Audited::of(request, &scope.policy)));
        let started = turn.as_ref().is_none_or(|turn| turn.start(&cancel));
        let result = if !started || cancel.is_cancelled() {
            None
        } else {
            let write_turn = turn.as_ref().map_or_else(WriteTurn::default, Turn::gate);
            let (policy, settings) = (&scope.policy, &scope.settings);
            Some(request.and_then(|request| {
                dispatch::run(policy, settings, &cancel, &progress, &write_turn, request)
            }))
        };
        // No progress after this: the response follows.
        progress.finish();
        // The writers behind this one may go as soon as it is done, before its reply is written.
        drop(turn);
        lock(&self.in_flight).remove(&id.key());
        let result = match result {
            Some(result) if !cancel.is_cancelled() => result,
            _ => {
                tracing::debug!(%id, "cancelled; no response");
                if let Some((log, started, audited)) = audited {
                    log.record(&audited.record(None, 0, started));
                }
                return None;
            }
        };
        let outcome = result.as_ref().map(|_| ()).map_err(|error| error.code);
        let line = match result {
            Ok(reply) => reply::tool_line(&id, reply, revision, budget),
            Err(error) if self.tool_errors == ToolErrors::Result => {
                reply::tool_line(&id, dispatch::error_result(&error), revision, budget)
            }
            Err(error) => jsonrpc::failure_line(&id, &error),
        };
        if let Some((log, started, audited)) = audited {
            log.record(&audited.record(Some(outcome), line.len(), started));
        }
        Some(line)
    }
}

/// What the audit log records of a call's request, taken before it runs.
struct Audited {
    tool: &'static str,
    paths: Vec<String>,
    command: Option<String>,
    bytes_in: usize,
}

impl Audited {
    /// The arguments that name paths (and the files a patch names), each resolved as a read
    /// would resolve it (as given when the policy refuses it), and `execute_command`'s command
    /// text.
    fn of(request: &ToolCall, policy: &Policy) -> Audited {
        let mut paths = Vec::new();
        let mut add = |raw: &str| match policy.resolve_read(raw) {
            Ok(resolved) => paths.push(resolved.real.display().to_string()),
            Err(_) => paths.push(raw.to_string()),
        };
        for key in ["path", "source", "destination", "directory", "workingDirectory"] {
            if let Some(raw) = request.args.get(key).and_then(Value::as_str) {
                add(raw);
            }
        }
        if let Some(list) = request.args.get("paths").and_then(Value::as_array) {
            list.iter().filter_map(Value::as_str).for_each(&mut add);
        }
        // A patch names its files in its text: each header's path (added, deleted, updated,
        // moved to), so that the line says which files a patch touched.
        if request.tool == Tool::ApplyPatch {
            let targets = crate::tools::patch::targets(policy, &request.args).unwrap_or_default();
            targets.iter().for_each(|raw| add(raw));
        }
        let command = (request.tool == Tool::ExecuteCommand)
            .then(|| request.args.get("command").and_then(Value::as_str).map(str::to_string))
            .flatten();
        let bytes_in = request.args.to_string().len();
        Audited { tool: request.tool.name(), paths, command, bytes_in }
    }

    fn record(
        &self,
        outcome: Option<Result<(), i32>>,
        bytes_out: usize,
        started: Instant,
    ) -> Record<'_> {
        Record {
            tool: self.tool,
            paths: self.paths.clone(),
            command: self.command.as_deref(),
            outcome,
            bytes_in: self.bytes_in,
            bytes_out,
            duration: started.elapsed(),
        }
    }
}

/// `wait`'s output, or `None` as soon as `cancel` is set: a call waiting for its place ends on
/// its client's cancel, without waiting for the place.
async fn until_cancelled<T>(wait: impl Future<Output = T>, cancel: &Cancel) -> Option<T> {
    let mut wait = pin!(wait);
    let mut cancelled = pin!(cancel.cancelled());
    poll_fn(|cx| {
        if let Poll::Ready(value) = wait.as_mut().poll(cx) {
            return Poll::Ready(Some(value));
        }
        cancelled.as_mut().poll(cx).map(|()| None)
    })
    .await
}

/// Progress reports of one call as `notifications/progress` with its token (as sent). A
/// cancelled call sends none (nothing more may be said about it).
fn progress_sink(outbox: Outbox, token: Id, revision: Revision, cancel: Arc<Cancel>) -> Progress {
    Progress::new(move |done, total, message| {
        if cancel.is_cancelled() {
            return;
        }
        let mut line = format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":{token},"progress":{done}"#
        );
        if let Some(total) = total {
            line.push_str(&format!(r#","total":{total}"#));
        }
        if revision.has_annotations() {
            line.push_str(r#","message":"#);
            line.push_str(&json!(message).to_string());
        }
        line.push_str("}}\n");
        outbox.send_lines(line);
    })
}
