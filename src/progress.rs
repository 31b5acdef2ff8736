//! A running call's link to its client and its server: the client's cancellation (`Cancel`),
//! and the progress reports sent back (`Progress`, and `Tally` for work counted on several
//! threads). A leaf module, so that the walk and the tools below the protocol can take them
//! without importing from the tools or the protocol.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Set when the client cancels the call (`notifications/cancelled`); long tools look at it, and
/// a call waiting for its place awaits it (`cancelled`).
#[derive(Debug, Default)]
pub struct Cancel {
    flag: AtomicBool,
    woken: tokio::sync::Notify,
}

impl Cancel {
    pub fn cancel(&self) {
        self.flag.store(true, Ordering::Relaxed);
        // Kept as a permit if no one waits yet, so a wait that starts later ends at once.
        self.woken.notify_one();
    }

    pub fn is_cancelled(&self) -> bool {
        self.flag.load(Ordering::Relaxed)
    }

    /// Returns once the call is cancelled.
    pub async fn cancelled(&self) {
        while !self.is_cancelled() {
            self.woken.notified().await;
        }
    }
}

/// Progress reports of one call. They become `notifications/progress` when the client asked for
/// them (a `progressToken`); otherwise they cost a branch. The first report goes out at once,
/// later ones at most every `Progress::INTERVAL`, each with a larger `progress` than the last,
/// and none once `finish` has run (the response follows it).
#[derive(Default)]
pub struct Progress {
    sink: Option<Box<ProgressSink>>,
    state: std::sync::Mutex<ProgressState>,
}

/// Receives `(progress, total, message)`.
type ProgressSink = dyn Fn(u64, Option<u64>, String) + Send + Sync;

#[derive(Default)]
struct ProgressState {
    last_value: Option<u64>,
    last_sent: Option<std::time::Instant>,
    finished: bool,
}

impl Progress {
    pub const INTERVAL: std::time::Duration = std::time::Duration::from_millis(100);

    /// Reports to `sink(progress, total, message)`.
    pub fn new(sink: impl Fn(u64, Option<u64>, String) + Send + Sync + 'static) -> Progress {
        Progress { sink: Some(Box::new(sink)), state: Default::default() }
    }

    /// Whether anyone listens: a tool may skip counting work when not.
    pub fn wanted(&self) -> bool {
        self.sink.is_some()
    }

    /// `done` units of work so far (of `total`, when known). `message` is built only when sent.
    pub fn report(&self, done: u64, total: Option<u64>, message: impl FnOnce() -> String) {
        let Some(sink) = &self.sink else { return };
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.finished || state.last_value.is_some_and(|last| done <= last) {
            return;
        }
        let now = std::time::Instant::now();
        if state.last_sent.is_some_and(|at| now.duration_since(at) < Self::INTERVAL) {
            return;
        }
        state.last_value = Some(done);
        state.last_sent = Some(now);
        // Sent under the lock, so that `finish` cannot slip between the check and the send.
        sink(done, total, message());
    }

    /// No report after this: the call's response is about to be sent.
    pub fn finish(&self) {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).finished = true;
    }
}

/// Work counted on several threads at once (entries walked, files searched) and reported as
/// progress. Counting is one atomic add, and `Progress`'s lock is taken only every
/// `Tally::STRIDE` units, so walker threads do not queue on it; when no one listens, nothing is
/// counted at all.
pub struct Tally<'a> {
    progress: &'a Progress,
    done: AtomicU64,
    /// The report's text for a count, e.g. "searched 1200 files".
    message: fn(u64) -> String,
}

impl<'a> Tally<'a> {
    const STRIDE: u64 = 32;

    pub fn new(progress: &'a Progress, message: fn(u64) -> String) -> Tally<'a> {
        Tally { progress, done: AtomicU64::new(0), message }
    }

    /// One more unit done.
    pub fn add_one(&self) {
        if !self.progress.wanted() {
            return;
        }
        let done = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        if done % Self::STRIDE == 0 {
            self.progress.report(done, None, || (self.message)(done));
        }
    }
}
