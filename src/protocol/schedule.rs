//! Where calls run and when: the tokio runtime (built on first use), the count of requests in
//! flight that the end of input drains, and the write turns that order calls changing files
//! (`turns`).

use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::Duration;

use serde_json::Value;
use tokio::runtime::Runtime;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::policy::Policy;
use crate::protocol::lock;
use crate::protocol::turns::{self, Turn, Turns};

/// How long in-flight calls may run on after stdin closes: execute_command's longest timeout
/// (60 s) plus its kill grace (3 s), plus a margin.
pub const DRAIN_LIMIT: Duration = Duration::from_secs(70);

pub struct Schedule {
    /// Runs the calls that are not answered inline; built on first use, so that a session
    /// that only says `initialize` never starts its threads.
    runtime: OnceLock<Runtime>,
    in_flight: Arc<InFlight>,
    /// The file-changing calls in flight; see `write_turn`.
    turns: Arc<Turns>,
    /// Places for the calls whose memory grows with what they read (`holds_data`).
    data_calls: Arc<Semaphore>,
}

impl Default for Schedule {
    fn default() -> Schedule {
        Schedule {
            runtime: OnceLock::new(),
            in_flight: Arc::default(),
            turns: Arc::default(),
            data_calls: Arc::new(Semaphore::new(DATA_CALLS)),
        }
    }
}

/// How many calls that read data into memory run at once; the others wait, in arrival order,
/// holding only their arguments. Each such call holds up to about what its reply may
/// (`reply_size::REPLY_BYTES`, 24 MiB) and what it read to make it; without a bound, a batch of
/// 200 `read_file`s of a 16 MiB file held 3.26 GiB at once. Four keep two cores busy (each
/// walk is parallel itself).
const DATA_CALLS: usize = 4;

/// The tools whose memory grows with the data they read or return: they wait for one of the
/// `DATA_CALLS` places. Writers of a given content, moves, deletes, info and execute_command
/// (whose output is capped, and which may run a minute) do not.
pub fn holds_data(tool: &str) -> bool {
    matches!(
        tool,
        "read_file"
            | "read_multiple_files"
            | "list_directory"
            | "directory_tree"
            | "search_files"
            | "glob_search"
            | "grep_files"
            | "edit_file"
            | "edit_files"
    )
}

/// Counts the requests handed to the runtime, so that the end of input can wait for them.
#[derive(Default)]
struct InFlight {
    count: Mutex<usize>,
    idle: Condvar,
}

/// Held by a request while it runs; its drop counts it out.
pub struct Running(Arc<InFlight>);

impl Drop for Running {
    fn drop(&mut self) {
        let mut count = lock(&self.0.count);
        *count -= 1;
        if *count == 0 {
            self.0.idle.notify_all();
        }
    }
}

impl Schedule {
    pub fn runtime(&self) -> &Runtime {
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

    /// A place to run a call that holds data (`holds_data`), once one is free.
    pub async fn data_place(&self) -> Option<OwnedSemaphorePermit> {
        Arc::clone(&self.data_calls).acquire_owned().await.ok()
    }

    /// Counts a request in; the guard counts it out when dropped.
    pub fn running(&self) -> Running {
        *lock(&self.in_flight.count) += 1;
        Running(Arc::clone(&self.in_flight))
    }

    pub fn in_flight(&self) -> usize {
        *lock(&self.in_flight.count)
    }

    /// Waits until nothing runs; false if `limit` passed first.
    pub fn wait_idle(&self, limit: Duration) -> bool {
        let count = lock(&self.in_flight.count);
        let (count, _) = self
            .in_flight
            .idle
            .wait_timeout_while(count, limit, |count| *count > 0)
            .unwrap_or_else(|e| e.into_inner());
        *count == 0
    }

    /// A call that changes files waits for the earlier ones in flight on the same files (a
    /// path or one inside the other, however spelled), in the order they arrived, so that a
    /// client pipelining two edits of one file gets both applied, in order; a write elsewhere
    /// does not wait. Reads never wait. Taken when the line is read (in order), awaited by
    /// the task that runs the call.
    pub fn write_turn(&self, policy: &Policy, params: &Value) -> Option<Turn> {
        turns::keys(policy, params).map(|keys| self.turns.take(keys))
    }

    /// The call holding turn `seq` was cancelled: its turn ends now if it runs.
    pub fn cancelled(&self, seq: u64) {
        self.turns.cancelled(seq);
    }

    /// Stops what still runs past the drain (the process is ending).
    pub fn shut_down(self) {
        if let Some(runtime) = self.runtime.into_inner() {
            // Tool calls still running past the drain limit must not hold the process open.
            runtime.shutdown_timeout(Duration::from_millis(100));
        }
    }
}
