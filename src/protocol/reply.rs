//! Reply lines for tool calls, written once and never parsed back: the envelope around the
//! result, the cap on one reply line (`reply_size::MAX_REPLY_BYTES`), and a batch's replies
//! joined into one array.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::error::INTERNAL;
use crate::protocol::dispatch::{self, ToolReply};
use crate::protocol::jsonrpc::{self, Id, RpcError};
use crate::protocol::revision::Revision;
use crate::reply_size::MAX_REPLY_BYTES;

/// The bytes the replies of one line (one request, or a whole batch) may still take, so that
/// a batch's one line stays under the cap too. Taken as each reply is written.
pub struct LineAllowance(AtomicUsize);

impl Default for LineAllowance {
    fn default() -> LineAllowance {
        LineAllowance(AtomicUsize::new(MAX_REPLY_BYTES))
    }
}

impl LineAllowance {
    /// What is left for one more reply; a batch line also takes one byte for each separator.
    fn left(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }

    /// Takes `len` bytes; false (taking nothing) if fewer are left.
    fn take(&self, len: usize) -> bool {
        self.0
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| left.checked_sub(len))
            .is_ok()
    }
}

/// The reply to a tool call that ran: its result, or a -32603 that says how to ask for less
/// when the result would not fit in what `budget` has left. One line without its newline.
pub fn tool_line(id: &Id, reply: ToolReply, revision: Revision, budget: &LineAllowance) -> String {
    let mut line = Vec::new();
    jsonrpc::open_line(&mut line, id, "result");
    // Room for the closing brace and the newline the line is sent with.
    let limit = budget.left().saturating_sub(2);
    match dispatch::write_result(reply, revision, &mut line, limit) {
        Ok(()) if budget.take(line.len() + 2) => {
            line.push(b'}');
            jsonrpc::into_text(line)
        }
        Ok(()) => too_large(id, line.len() + 2),
        Err(len) => too_large(id, len + 2),
    }
}

/// A batch's reply to anything but a tool call (`tools/list`, `ping`, an error), charged to the
/// batch's budget: over it, the -32603 that says how to ask for less. `id` is the request's,
/// when it has one.
pub fn charged(id: Option<&Id>, line: String, budget: &LineAllowance) -> String {
    if budget.take(line.len() + 1) {
        return line;
    }
    too_large(id.unwrap_or(&Id::null()), line.len() + 1)
}

/// The error for a reply over the cap, measured before it was built.
fn too_large(id: &Id, len: usize) -> String {
    let message = format!(
        "the reply would be {len} bytes of JSON, over the limit of {MAX_REPLY_BYTES} bytes for \
         one reply; ask for less at a time: read_file with offset and limit (or head or tail), \
         read_multiple_files with fewer paths, directory_tree with depth or maxEntries, a \
         narrower directory or maxResults for the searches, separate requests instead of one \
         batch"
    );
    tracing::warn!(%id, len, "reply over the cap; answered with an error");
    jsonrpc::failure_line(id, &RpcError::new(INTERNAL, message))
}

/// A batch's replies as the pieces of one line (the array of their lines), without its
/// newline: the replies are not copied into one string.
pub fn batch_pieces(replies: Vec<String>) -> Vec<String> {
    let mut pieces = Vec::with_capacity(replies.len() * 2 + 1);
    pieces.push("[".to_owned());
    for (i, reply) in replies.into_iter().enumerate() {
        if i > 0 {
            pieces.push(",".to_owned());
        }
        pieces.push(reply);
    }
    pieces.push("]".to_owned());
    pieces
}
