//! Where calls run and when: the tokio runtime (built on first use), the count of requests in
//! flight that the end of input drains, and the write turns that order calls changing files
//! (`write_order`).
//!
//! Figures: at end of input, calls in flight drain for up to `DRAIN_LIMIT` (70 s); a call whose
//! memory grows with what it reads takes one of `DATA_CALLS` (4) places; a command takes one of
//! `command_calls()` (twice the CPUs, at least 8) places; the requests in
//! flight hold at most `BACKLOG_BOUND` (64 MiB) before the reading thread waits.

use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::Duration;

use tokio::runtime::Runtime;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::protocol::lock;
use crate::write_order::{Turn, Turns};

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
    /// Places for the calls whose memory grows with what they read (`Spec::holds_data`).
    data_calls: Arc<Semaphore>,
    /// Places for the calls that run a command (`Spec::command_place`).
    command_calls: Arc<Semaphore>,
}

impl Default for Schedule {
    fn default() -> Schedule {
        Schedule {
            runtime: OnceLock::new(),
            in_flight: Arc::default(),
            turns: Arc::default(),
            data_calls: Arc::new(Semaphore::new(DATA_CALLS)),
            command_calls: Arc::new(Semaphore::new(command_calls())),
        }
    }
}

/// How many calls that read data into memory run at once; the others wait, in arrival order,
/// holding only their arguments. Each such call holds up to about what its reply may
/// (`reply_size::REPLY_BYTES`, 24 MiB) and what it read to make it; without a bound, a batch of
/// 200 `read_file`s of a 16 MiB file held 3.26 GiB at once. Four keep two cores busy (each
/// walk is parallel itself).
const DATA_CALLS: usize = 4;

/// How many calls that run a command run at once: twice the CPUs, at least 8. Each holds a
/// blocking thread, and a foreground one two more draining its pipes, for up to a minute; the
/// others wait as async tasks on the runtime's one worker, holding no thread. Without a bound,
/// 1,000 pipelined `sleep` calls held about 1,540 threads and a ping waited 5 s (issue #23).
fn command_calls() -> usize {
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    (2 * cpus).max(8)
}

/// How much the requests handed to the runtime may hold, as estimated when read
/// (`jsonrpc::read_cost`), before the server stops reading more until they drop to half of it.
/// Calls waiting for a place or a write turn hold their whole message; without a bound, 300
/// lines of 64 KiB queued behind four slow calls held 2 GB. Pipelined ordinary calls (a
/// hundred 1 MB writes) stay well below it, so they only ever see flow control.
pub const BACKLOG_BOUND: usize = 64 << 20;

/// Counts the requests handed to the runtime, so that the end of input can wait for them, and
/// what they hold (`BACKLOG_BOUND`).
#[derive(Default)]
struct InFlight {
    count: Mutex<Counts>,
    idle: Condvar,
    /// Signalled when the backlog drops to half its bound.
    drained: Condvar,
}

#[derive(Default)]
struct Counts {
    requests: usize,
    /// The estimated bytes the requests in flight hold.
    backlog: usize,
}

/// Held by a request while it runs; its drop counts it out.
pub struct Running {
    in_flight: Arc<InFlight>,
    cost: usize,
}

impl Drop for Running {
    fn drop(&mut self) {
        let mut counts = lock(&self.in_flight.count);
        counts.requests -= 1;
        let was = counts.backlog;
        counts.backlog -= self.cost;
        if counts.requests == 0 {
            self.in_flight.idle.notify_all();
        }
        if was > BACKLOG_BOUND / 2 && counts.backlog <= BACKLOG_BOUND / 2 {
            self.in_flight.drained.notify_all();
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

    /// A place to run a call that holds data (`Spec::holds_data`), once one is free.
    pub async fn data_place(&self) -> Option<OwnedSemaphorePermit> {
        Arc::clone(&self.data_calls).acquire_owned().await.ok()
    }

    /// A place to run a call that runs a command (`Spec::command_place`), once one is free.
    pub async fn command_place(&self) -> Option<OwnedSemaphorePermit> {
        Arc::clone(&self.command_calls).acquire_owned().await.ok()
    }

    /// Counts a request in, holding `cost` bytes (its message's `jsonrpc::read_cost`); the guard
    /// counts it out when dropped.
    pub fn running(&self, cost: usize) -> Running {
        let mut counts = lock(&self.in_flight.count);
        counts.requests += 1;
        counts.backlog += cost;
        Running { in_flight: Arc::clone(&self.in_flight), cost }
    }

    pub fn in_flight(&self) -> usize {
        lock(&self.in_flight.count).requests
    }

    /// Whether the requests in flight hold more than `BACKLOG_BOUND`.
    pub fn backlog_full(&self) -> bool {
        lock(&self.in_flight.count).backlog > BACKLOG_BOUND
    }

    /// Blocks while the requests in flight hold more than `BACKLOG_BOUND`, until they hold half
    /// of it: the reading thread calls this before it reads the next request (backpressure).
    /// The calls in flight end on their own (each tool has its limits), so this ends too.
    pub fn wait_for_backlog(&self) {
        let counts = lock(&self.in_flight.count);
        if counts.backlog <= BACKLOG_BOUND {
            return;
        }
        tracing::debug!(bytes = counts.backlog, "calls in flight hold much; pausing reads");
        let _counts = self
            .in_flight
            .drained
            .wait_while(counts, |counts| counts.backlog > BACKLOG_BOUND / 2)
            .unwrap_or_else(|e| e.into_inner());
    }

    /// Waits until nothing runs; false if `limit` passed first.
    pub fn wait_idle(&self, limit: Duration) -> bool {
        let counts = lock(&self.in_flight.count);
        let (counts, _) = self
            .in_flight
            .idle
            .wait_timeout_while(counts, limit, |counts| counts.requests > 0)
            .unwrap_or_else(|e| e.into_inner());
        counts.requests == 0
    }

    /// A call that changes files waits for the earlier ones in flight on the same files (a
    /// path or one inside the other, however spelled), in the order they arrived, so that a
    /// client pipelining two edits of one file gets both applied, in order; a write elsewhere
    /// does not wait. Reads never wait. Taken on the call's keys (`Tool::write_keys`) when the
    /// line is read (in order), awaited by the task that runs the call.
    pub fn write_turn(&self, keys: Vec<PathBuf>) -> Turn {
        self.turns.take(keys)
    }

    /// The call holding turn `seq` was cancelled: its turn ends now if it runs.
    pub fn cancelled(&self, seq: u64) {
        self.turns.cancelled(seq);
    }

    /// Stops what still runs past the drain (the process is ending).
    pub fn shut_down(mut self) {
        if let Some(runtime) = self.runtime.take() {
            // Tool calls still running past the drain limit must not hold the process open.
            runtime.shutdown_timeout(Duration::from_millis(100));
        }
    }
}

impl Drop for Schedule {
    /// The last reference to the session may go on one of the runtime's own threads (a batch's
    /// gathering task that ends after the end of input was drained), where dropping a runtime
    /// panics ("Cannot drop a runtime in a context where blocking is not allowed"); shutting
    /// it down in the background is allowed anywhere.
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schedule_dropped_on_its_own_runtime_does_not_panic() {
        let schedule = Arc::new(Schedule::default());
        let last = Arc::clone(&schedule);
        let (done, outcome) = std::sync::mpsc::channel();
        let (go, wait) = std::sync::mpsc::channel::<()>();
        schedule.runtime().spawn(async move {
            let _ = wait.recv();
            let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(last)));
            let _ = done.send(dropped.is_ok());
        });
        drop(schedule);
        go.send(()).expect("the task waits");
        let dropped = outcome.recv_timeout(Duration::from_secs(10)).expect("the task reports");
        assert!(dropped, "dropping the last Schedule on its runtime panicked");
    }
}
