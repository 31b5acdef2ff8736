//! Tool calls: registered as they are read (cancellation flag, progress sink, write turn), run
//! inline or on the runtime, batches gathered into one array, and answered unless cancelled.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tokio::task::JoinSet;

use crate::cli::ToolErrors;
use crate::progress::{Cancel, Progress, WriteTurn};
use crate::protocol::dispatch;
use crate::protocol::jsonrpc::{self, Element, Id, Message, RpcError};
use crate::protocol::lock;
use crate::protocol::reply::{self, Budget};
use crate::protocol::revision::Revision;
use crate::protocol::schedule;
use crate::protocol::scope::Scope;
use crate::protocol::session::Session;
use crate::protocol::transport::Outbox;
use crate::protocol::turns::Turn;

/// Tools answered on the reading thread itself, without a hand-off: read-only, quick, and
/// never waiting on anything but the local filesystem. A small read costs less than the two
/// thread wake-ups a hand-off takes, and pipelined reads are answered in arrival order.
/// read_file with an `offset` is the exception: it scans the file up to the offset.
const INLINE_TOOLS: [&str; 3] = ["read_file", "get_file_info", "list_allowed_directories"];

/// The tool calls in flight, by request id (`Id::key`: as sent): each one's cancellation flag
/// and write turn.
#[derive(Default)]
pub struct Calls(Mutex<HashMap<String, Registered>>);

struct Registered {
    cancel: Arc<Cancel>,
    /// The call's write turn (`Turn::seq`), if it changes files.
    turn: Option<u64>,
}

impl Calls {
    /// `notifications/cancelled` for `id`: flags the call and gives its write turn's number,
    /// which the caller ends; unknown or finished ids are ignored.
    pub fn cancel(&self, id: &Id) -> Option<u64> {
        let calls = lock(&self.0);
        let call = calls.get(&id.key())?;
        tracing::debug!(%id, "cancelling");
        call.cancel.cancel();
        call.turn
    }

    /// Cancels every call in flight: the client is gone.
    pub fn cancel_all(&self) {
        for call in lock(&self.0).values() {
            call.cancel.cancel();
        }
    }
}

/// A `tools/call` as read: its scope, registered for cancellation, holding its write turn if it
/// changes files.
struct Call {
    id: Id,
    params: Value,
    revision: Revision,
    scope: Scope,
    cancel: Arc<Cancel>,
    progress: Progress,
    turn: Option<Turn>,
}

impl Call {
    /// Whether the call waits for one of the places of calls that hold data
    /// (`schedule::holds_data`).
    fn holds_data(&self) -> bool {
        let name = self.params.get("name").and_then(Value::as_str).unwrap_or_default();
        schedule::holds_data(name)
    }
}

impl Session {
    /// A single `tools/call`: inline if it is a quick read, else on the runtime.
    pub(super) fn accept_call(
        self: &Arc<Self>,
        element: &Element,
        id: Id,
        params: Value,
        revision: Revision,
        cost: usize,
    ) {
        let name = params.get("name").and_then(Value::as_str).unwrap_or_default();
        // A read from an `offset` scans up to it: far into a big file, that is not quick.
        let scans = name == "read_file" && params.pointer("/arguments/offset").is_some();
        let inline = (INLINE_TOOLS.contains(&name) && !scans) || self.scopes.sandbox_deferred();
        let call = self.prepare(element, id, params, revision);
        if inline {
            if let Some(line) = self.run_tool(call, &Budget::default()) {
                self.held.send_line(line);
            }
            return;
        }
        let running = self.schedule.running(cost);
        let session = Arc::clone(self);
        if call.turn.as_ref().is_none_or(Turn::is_free) && !call.holds_data() {
            // Nothing to wait for: straight onto the blocking pool, one hop instead of an
            // async task that hops there.
            self.schedule.runtime().spawn_blocking(move || {
                session.outbox.wait_for_room();
                if let Some(line) = session.run_tool(call, &Budget::default()) {
                    session.held.send_line(line);
                }
                drop(running);
            });
        } else {
            self.schedule.runtime().spawn(async move {
                let budget = Arc::new(Budget::default());
                if let Some(line) = session.clone().call_tool(call, budget).await {
                    session.held.send_line(line);
                }
                drop(running);
            });
        }
    }

    /// A JSON-RPC batch: every element runs concurrently (writers still take their turns in
    /// order); one array of replies, none if every element was a notification. The array is
    /// the elements' reply lines joined, under the cap on one reply as a whole.
    pub(super) fn accept_batch(self: &Arc<Self>, batch: Vec<Element>, cost: usize) {
        if batch.is_empty() {
            let error = RpcError::new(jsonrpc::INVALID_REQUEST, "invalid request: empty batch");
            self.held.send_line(jsonrpc::failure_line(&Id::null(), &error));
            return;
        }
        // One budget for the whole array: every reply in it is charged, tool results and the
        // others alike (20,000 `tools/list` in one batch asked for 298 MiB).
        let budget = Arc::new(Budget::default());
        // Prepared here, in order: write turns and cancellation must follow arrival.
        let jobs: Vec<Result<Call, Option<String>>> = batch
            .into_iter()
            .map(|mut element| match element.classify() {
                Ok(Message::Request { id, method, params }) if method == "tools/call" => {
                    match self.revision_of(&method, &params) {
                        Ok(revision) => Ok(self.prepare(&element, id, params, revision)),
                        Err(error) => {
                            let line = jsonrpc::failure_line(&id, &error);
                            Err(Some(reply::charged(Some(&id), line, &budget)))
                        }
                    }
                }
                Ok(message) => {
                    let id = match &message {
                        Message::Request { id, .. } => Some(id.clone()),
                        _ => None,
                    };
                    let line = self.handle(&element, message);
                    Err(line.map(|line| reply::charged(id.as_ref(), line, &budget)))
                }
                Err((id, error)) => {
                    let line = jsonrpc::failure_line(&id, &error);
                    Err(Some(reply::charged(Some(&id), line, &budget)))
                }
            })
            .collect();
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
            let session = Arc::clone(self);
            let budget = Arc::clone(&budget);
            parts.spawn_on(
                async move {
                    let reply = match job {
                        Ok(call) => session.call_tool(call, budget).await,
                        Err(reply) => reply,
                    };
                    (idx, reply)
                },
                &runtime,
            );
        }
        let session = Arc::clone(self);
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
                session.held.send_pieces(reply::batch_pieces(replies));
            }
            drop(running);
        });
    }

    /// Registers a tool call as it is read: its scope, its cancellation flag (so that a cancel
    /// sent right behind the request finds it), its progress reports and its write turn.
    fn prepare(&self, element: &Element, id: Id, params: Value, revision: Revision) -> Call {
        let scope = self.scopes.current();
        let cancel = Arc::new(Cancel::default());
        let turn = self.schedule.write_turn(&scope.policy, &params);
        let registered =
            Registered { cancel: Arc::clone(&cancel), turn: turn.as_ref().map(Turn::seq) };
        lock(&self.calls.0).insert(id.key(), registered);
        let progress = match element.progress_token(&params) {
            Some(token) => progress_sink(self.outbox.clone(), token, revision, Arc::clone(&cancel)),
            None => Progress::default(),
        };
        Call { id, params, revision, scope, cancel, progress, turn }
    }

    /// Runs a tool call once its write turn (if any) has come. `None` when the client
    /// cancelled it: a cancelled request gets no response.
    async fn call_tool(self: Arc<Self>, mut call: Call, budget: Arc<Budget>) -> Option<String> {
        if let Some(turn) = &mut call.turn {
            turn.wait().await;
        }
        // After the turn: a writer waiting for its turn does not hold a place meanwhile.
        let place = match call.holds_data() {
            true => self.schedule.data_place().await,
            false => None,
        };
        let outcome = tokio::task::spawn_blocking(move || {
            // Not started while replies wait unread past the bound (backpressure).
            self.outbox.wait_for_room();
            let reply = self.run_tool(call, &budget);
            drop(place);
            reply
        })
        .await;
        // The tool's own panics are caught in dispatch; a join error is the runtime shutting
        // down, and there is no one left to answer.
        outcome.unwrap_or_default()
    }

    /// Runs a tool call on this thread, unless it was cancelled already, and writes its reply
    /// line (without the newline).
    fn run_tool(&self, call: Call, budget: &Budget) -> Option<String> {
        let Call { id, params, revision, scope, cancel, progress, turn } = call;
        let started = turn.as_ref().is_none_or(|turn| turn.start(&cancel));
        let result = if !started || cancel.is_cancelled() {
            None
        } else {
            let write_turn =
                turn.as_ref().map_or_else(WriteTurn::default, |t| WriteTurn::new(t.link()));
            let (policy, settings) = (&scope.policy, &scope.settings);
            Some(dispatch::call_tool(policy, settings, &cancel, &progress, &write_turn, params))
        };
        // No progress after this: the response follows.
        progress.finish();
        // The writers behind this one may go as soon as it is done, before its reply is written.
        drop(turn);
        lock(&self.calls.0).remove(&id.key());
        let result = match result {
            Some(result) if !cancel.is_cancelled() => result,
            _ => {
                tracing::debug!(%id, "cancelled; no response");
                return None;
            }
        };
        Some(match result {
            Ok(reply) => reply::tool_line(&id, reply, revision, budget),
            Err(error) if self.tool_errors == ToolErrors::Result => {
                reply::tool_line(&id, dispatch::error_result(&error), revision, budget)
            }
            Err(error) => jsonrpc::failure_line(&id, &error),
        })
    }
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
