//! [`AppendQueue`]: a service's appends to the journal, sent at once while
//! few are in flight, and together in one `AppendBatch` when more queue up
//! behind them.
//!
//! Why: a unary gRPC call costs about as much CPU as the append it carries
//! (issue 24's profile: the client's and the server's gRPC stacks were half
//! of an append's CPU at concurrency 64). At concurrency 1 there is nothing
//! to share that cost with, and an append goes out alone, as an `Append`,
//! from the caller's own task: no hand-off, no wait. Under load, appends
//! that arrive while `max_calls` calls are out wait for the next free one
//! and go in it together, as a Kafka producer batches what queues behind its
//! in-flight requests; the journal commits them in one group commit.
//!
//! Each append of a batch is carried out and answered as if it had been
//! sent alone: its own expected version, its own result or error (with the
//! error's `ErrorInfo`, which the services read), no order among them.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use battlelog_auth::AuthChannel;
use battlelog_proto::error::{Error, status_from_parts};
use battlelog_proto::v1::journal_client::JournalClient;
use battlelog_proto::v1::{AppendBatchRequest, AppendRequest, AppendResponse, append_result};
use battlelog_runtime::config::ConfigError;
use futures_util::future::join_all;
use tokio::sync::oneshot;
use tonic::{Code, Status};

/// The default of the services' `journal_append_calls`: the most append
/// calls out to the journal at once before appends queue up (and are then
/// batched). A few keep the journal busy: while one batch is being flushed,
/// the next is being planned and another is on its way. With the append
/// bench at concurrency 64 (BENCHMARKS.md), one call out stalled (7 k
/// appends/s), 2 to 4 did best (3 a little ahead of 2 and 4) and 6 or 8 did
/// worse: smaller batches for the same calls.
pub const DEFAULT_APPEND_CALLS: usize = 3;

/// The most payload bytes one batch carries. Every journal takes at least
/// this much in one append (`max_append_bytes` ≥ `max_payload_bytes` ≥
/// this), and so in one batch: a batch the client makes is never refused
/// for its weight. An append heavier than this goes alone.
pub const BATCH_PAYLOAD_BYTES: usize = battlelog_runtime::limits::journal::MIN_PAYLOAD_BYTES;

/// The default of the services' `journal_append_batch`: the most appends
/// one `AppendBatch` carries; the journal's own default
/// `max_appends_per_batch`.
pub const DEFAULT_APPEND_BATCH: usize = 64;

/// How a service sends its appends: its `journal_append_batch` and
/// `journal_append_calls`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppendLimits {
    /// Most appends per call (≥ 1; 1: every append alone, never queued,
    /// and `max_calls` does not apply).
    pub max_batch: usize,
    /// Most append calls out at once before appends queue up (≥ 1).
    pub max_calls: usize,
}

impl AppendLimits {
    /// Both at least 1, or the config error naming the service's key
    /// (`journal_append_batch`, `journal_append_calls`).
    pub fn validate(&self) -> Result<(), ConfigError> {
        let at_least_one = [
            ("journal_append_batch", self.max_batch, "1: every append alone"),
            ("journal_append_calls", self.max_calls, "appends queue behind this many calls"),
        ];
        for (key, value, meaning) in at_least_one {
            if value == 0 {
                return Err(ConfigError::Invalid { key, message: format!("must be at least 1 ({meaning})") });
            }
        }
        Ok(())
    }
}

impl Default for AppendLimits {
    fn default() -> Self {
        Self { max_batch: DEFAULT_APPEND_BATCH, max_calls: DEFAULT_APPEND_CALLS }
    }
}

/// A queue of appends to one journal, shared by the clones of a
/// [`crate::StreamClient`].
#[derive(Debug, Clone)]
pub struct AppendQueue {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    journal: JournalClient<AuthChannel>,
    limits: AppendLimits,
    state: Mutex<State>,
    /// Whether the journal has been found not to take a batch (an older
    /// journal, or one whose `max_appends_per_batch` is lower): said once.
    warned: AtomicBool,
}

#[derive(Debug, Default)]
struct State {
    /// Calls out now, at most `max_calls`.
    in_flight: usize,
    /// Appends waiting for a call. Not empty only while every call is out:
    /// the call that ends takes them.
    queued: VecDeque<Queued>,
}

#[derive(Debug)]
struct Queued {
    request: AppendRequest,
    payload_bytes: usize,
    reply: oneshot::Sender<Result<AppendResponse, Status>>,
}

/// An append's turn: a call was free and it goes now, from its caller's
/// task; or it waits in the queue for the answer of the batch it goes in.
enum Turn {
    Now(AppendRequest),
    Queued(oneshot::Receiver<Result<AppendResponse, Status>>),
}

/// One of the `max_calls` calls, held while it is out. When it is given
/// back (dropped: the call ended, or its caller went away), it takes what
/// has queued meanwhile out as the next call, so that no queued append is
/// left waiting with a call free.
struct Slot(Arc<Shared>);

impl Drop for Slot {
    fn drop(&mut self) {
        Shared::hand_on(&self.0);
    }
}

impl AppendQueue {
    /// Appends to `journal` within `limits` (a limit below 1 is taken as 1).
    pub fn new(journal: JournalClient<AuthChannel>, limits: AppendLimits) -> Self {
        Self {
            shared: Arc::new(Shared {
                journal,
                limits: AppendLimits { max_batch: limits.max_batch.max(1), max_calls: limits.max_calls.max(1) },
                state: Mutex::new(State::default()),
                warned: AtomicBool::new(false),
            }),
        }
    }

    /// Appends as `Append` would, and answers what `Append` would have
    /// answered: alone and at once while a call is free, else in the next
    /// batch.
    pub async fn append(&self, request: AppendRequest) -> Result<AppendResponse, Status> {
        let shared = &self.shared;
        if shared.limits.max_batch == 1 {
            return shared.journal.clone().append(request).await.map(tonic::Response::into_inner);
        }
        let turn = {
            let mut state = shared.lock();
            if state.in_flight < shared.limits.max_calls {
                state.in_flight += 1;
                Turn::Now(request)
            } else {
                let (reply, answer) = oneshot::channel();
                state.queued.push_back(Queued { payload_bytes: payload_bytes(&request), request, reply });
                Turn::Queued(answer)
            }
        };
        match turn {
            Turn::Now(request) => {
                let _slot = Slot(shared.clone());
                shared.journal.clone().append(request).await.map(tonic::Response::into_inner)
            }
            Turn::Queued(answer) => answer.await.unwrap_or_else(|_| Err(lost())),
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // The state is a counter and a queue, consistent after every
        // statement: a panic elsewhere leaves nothing half-done in it.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A call ended: the queued appends (up to a batch) go out in its
    /// place, in a task of their own so that the caller whose call ended
    /// returns at once; with none queued, the call is free.
    fn hand_on(shared: &Arc<Shared>) {
        let batch = {
            let mut state = shared.lock();
            let batch = shared.take_batch(&mut state.queued);
            if batch.is_empty() {
                state.in_flight -= 1;
                return;
            }
            batch
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                let shared = shared.clone();
                runtime.spawn(async move {
                    let _slot = Slot(shared.clone());
                    shared.send(batch).await;
                    // The callers just answered often append again at once
                    // (a roll, then its resolution): let them queue while
                    // this call is still held, so that they go together in
                    // the next batch, instead of the first of them taking
                    // the free call alone and the rest waiting behind it.
                    tokio::task::yield_now().await;
                });
            }
            // Only when the runtime itself is gone, and its tasks with it:
            // the batch's callers are told their appends were not sent.
            Err(_) => {
                shared.lock().in_flight -= 1;
                drop(batch);
            }
        }
    }

    /// The next batch from the front of the queue: at most `max_batch`
    /// appends and [`BATCH_PAYLOAD_BYTES`] of payloads (the first one
    /// whatever it weighs).
    fn take_batch(&self, queued: &mut VecDeque<Queued>) -> Vec<Queued> {
        let mut batch: Vec<Queued> = Vec::new();
        let mut bytes = 0usize;
        while let Some(next) = queued.front() {
            let fits = batch.is_empty()
                || (batch.len() < self.limits.max_batch && bytes + next.payload_bytes <= BATCH_PAYLOAD_BYTES);
            if !fits {
                break;
            }
            bytes += next.payload_bytes;
            batch.extend(queued.pop_front());
        }
        batch
    }

    /// Sends `batch` (one append alone, as `Append`) and answers each of
    /// its callers.
    async fn send(&self, mut batch: Vec<Queued>) {
        if batch.len() == 1 {
            let Queued { request, reply, .. } = batch.remove(0);
            let _ = reply.send(self.journal.clone().append(request).await.map(tonic::Response::into_inner));
            return;
        }
        let (requests, replies): (Vec<AppendRequest>, Vec<_>) = batch.into_iter().map(|q| (q.request, q.reply)).unzip();
        // Kept for the fallback below; a batch's payloads are small.
        let sent = AppendBatchRequest { appends: requests.clone() };
        match self.journal.clone().append_batch(sent).await {
            Ok(response) => {
                let results = response.into_inner().results;
                if results.len() != replies.len() {
                    let message =
                        format!("the journal answered {} results for {} appends", results.len(), replies.len());
                    for reply in replies {
                        let _ = reply.send(Err(Error::internal(message.clone()).into_status()));
                    }
                    return;
                }
                for (reply, result) in replies.into_iter().zip(results) {
                    let _ = reply.send(match result.result {
                        Some(append_result::Result::Appended(appended)) => Ok(appended),
                        Some(append_result::Result::Error(error)) => {
                            Err(status_from_parts(error.code, error.message, error.details))
                        }
                        None => Err(Error::internal("the journal answered an append with no result").into_status()),
                    });
                }
            }
            // Refused as a whole before any append was looked at: a
            // journal that predates `AppendBatch` (during a rolling
            // upgrade), or one configured for smaller batches. Each goes
            // alone, as it would have without batching.
            Err(status) if matches!(status.code(), Code::Unimplemented | Code::InvalidArgument) => {
                if !self.warned.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        status = %status.message(),
                        appends = replies.len(),
                        "the journal refused a batch of appends; sending them one by one (set journal_append_batch \
                         to at most the journal's max_appends_per_batch, or 1 for a journal without AppendBatch)"
                    );
                }
                let answers = join_all(requests.into_iter().map(|request| {
                    let mut journal = self.journal.clone();
                    async move { journal.append(request).await }
                }))
                .await;
                for (reply, answer) in replies.into_iter().zip(answers) {
                    let _ = reply.send(answer.map(tonic::Response::into_inner));
                }
            }
            // The call failed as a whole (the journal unreachable, the token
            // refused, …): each append learns it as its own call would have.
            Err(status) => {
                for reply in replies {
                    let _ = reply.send(Err(status.clone()));
                }
            }
        }
    }
}

fn payload_bytes(request: &AppendRequest) -> usize {
    request.events.iter().map(|e| e.payload.len()).sum()
}

/// A queued append whose batch was never sent (the runtime stopped first):
/// the journal never saw it, but its caller cannot know that from a lost
/// answer, so it is an outage, retried with the same request id.
fn lost() -> Status {
    Error::unavailable("the journal client stopped before the append was sent").into_status()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// Polls until `done` holds for the queue's state; a state that never
    /// comes fails the test after ten seconds.
    async fn until(queue: &AppendQueue, done: impl Fn(&State) -> bool) {
        let reached = async {
            while !done(&queue.shared.lock()) {
                tokio::task::yield_now().await;
            }
        };
        tokio::time::timeout(Duration::from_secs(10), reached).await.expect("the queue reached the state");
    }

    /// A call's slot is given back when its caller goes away mid-call, and
    /// what queued behind it goes out then: no slot leaks, and nothing
    /// queued waits for a call that will never end.
    #[tokio::test]
    async fn a_caller_that_goes_away_gives_its_call_back() {
        // A peer that takes connections and never answers: every call
        // stays out until its caller leaves.
        let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", silent.local_addr().expect("addr"));
        // At the edge of `journal_append_calls`: that many calls out, and
        // the rest queued; 1 is the smallest it may be.
        for calls in [1, 2] {
            let channel = tonic::transport::Endpoint::from_shared(url.clone()).expect("url").connect_lazy();
            let journal = JournalClient::new(battlelog_auth::authed(channel, "token").expect("token"));
            let queue = AppendQueue::new(journal, AppendLimits { max_calls: calls, ..AppendLimits::default() });
            let request = |i: usize| AppendRequest { stream_id: format!("s{i}"), ..Default::default() };
            let callers: Vec<_> = (0..calls + 2)
                .map(|i| {
                    let queue = queue.clone();
                    tokio::spawn(async move { queue.append(request(i)).await })
                })
                .collect();
            until(&queue, |s| s.in_flight == calls && s.queued.len() == 2).await;

            for caller in &callers[..calls] {
                caller.abort();
            }
            // The first call given back takes the two queued out as one
            // batch (its own call, out to the silent peer); the others are
            // free.
            until(&queue, |s| s.in_flight == 1 && s.queued.is_empty()).await;
            for caller in &callers[calls..] {
                assert!(!caller.is_finished(), "a queued append waits for its batch's answer");
            }
        }
    }
}
