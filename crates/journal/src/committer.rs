//! Group commit: one thread owns all writes.
//!
//! Appends queue up on a channel. The committer takes everything queued (up
//! to `max_batch` appends or 8 MiB), appends the group to the store in one
//! [`EventStore::append_group`] (each append all or nothing), flushes once, raises
//! the durable watermark and only then answers every append of the group.
//! While one flush is in progress the next group gathers, so under load one
//! fsync serves many appends; alone, an append costs one group write and one
//! flush.
//!
//! A lone appender (the only append in flight, nobody writing) commits on
//! its own thread instead ([`Shared::commit_alone`]): at concurrency 1 the
//! hand-off to the committer thread and back costs about as much as the
//! write itself.
//! Both take the same writer lock, so there is still exactly one writer at a
//! time, and the order of positions is the order of commits.
//!
//! A plain thread rather than a tokio task: sled's flush blocks for the whole
//! fsync, and that must not stall the runtime's workers.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};
use std::time::{SystemTime, UNIX_EPOCH};

use tokio::sync::{Notify, mpsc, oneshot, watch};
use tracing::{debug, error};

use crate::error::JournalError;
use crate::limits::ValidAppend;
use crate::store::{AppendOutcome, Applied, EventStore, GroupAppend};

/// What the committer shares with the readers and with lone appenders: the
/// store, the durable watermark it raises after each flush, the writer
/// state, and its counters.
#[derive(Debug)]
pub(crate) struct Shared {
    pub store: Arc<dyn EventStore>,
    /// Every global position below this is durable (flushed). Readers pass
    /// it to the store so that they never see an event before its append
    /// was acknowledged.
    pub durable: watch::Sender<u64>,
    pub stats: CommitStats,
    /// Whoever holds this writes: the committer thread for a queued group,
    /// or a lone appender for its own append (see [`Shared::try_writer`]).
    writer: Mutex<Writer>,
    /// Woken after each flush that wrote something.
    outbox_wake: Arc<Notify>,
}

/// The writer, held (see [`Shared::try_writer`]).
#[derive(Debug)]
pub(crate) struct WriterGuard<'a>(MutexGuard<'a, Writer>);

/// The single writer's state.
#[derive(Debug)]
struct Writer {
    next_position: u64,
    /// Why the journal refuses appends (a failed write or flush), if it does.
    poisoned: Option<String>,
}

impl Shared {
    pub fn new(store: Arc<dyn EventStore>, outbox_wake: Arc<Notify>) -> Result<Self, JournalError> {
        let next = store.next_position()?;
        Ok(Self {
            store,
            durable: watch::Sender::new(next),
            stats: CommitStats::default(),
            writer: Mutex::new(Writer { next_position: next, poisoned: None }),
            outbox_wake,
        })
    }

    /// The durable watermark.
    pub fn durable(&self) -> u64 {
        *self.durable.borrow()
    }

    /// Raises the durable watermark after a flush (it only grows).
    fn set_durable(&self, next: u64) {
        self.durable.send_if_modified(|current| {
            let raised = next > *current;
            if raised {
                *current = next;
            }
            raised
        });
    }

    fn writer(&self) -> MutexGuard<'_, Writer> {
        self.writer.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The writer, when nobody else is writing: a lone appender then
    /// commits on its own thread ([`Shared::commit_alone`]) and pays no
    /// hand-off to the committer thread and back. `None` when busy (queue
    /// the append instead).
    pub fn try_writer(&self) -> Option<WriterGuard<'_>> {
        match self.writer.try_lock() {
            Ok(writer) => Some(WriterGuard(writer)),
            Err(TryLockError::Poisoned(poisoned)) => Some(WriterGuard(poisoned.into_inner())),
            Err(TryLockError::WouldBlock) => None,
        }
    }

    /// Commits one append as a group of its own. Blocks for the flush: call
    /// it where blocking is allowed.
    pub fn commit_alone(
        &self,
        writer: &mut WriterGuard<'_>,
        append: &ValidAppend,
    ) -> Result<AppendOutcome, JournalError> {
        self.stats.alone.fetch_add(1, Ordering::Relaxed);
        // `commit` answers every append it is given: one here.
        let mut results = self.commit(&mut writer.0, &[append]);
        results.pop().unwrap_or_else(|| Err(JournalError::Poisoned("the commit gave no answer".into())))
    }

    /// One group: written, flushed, the watermark raised; one result per
    /// append, in order.
    fn commit(&self, writer: &mut Writer, appends: &[&ValidAppend]) -> Vec<Result<AppendOutcome, JournalError>> {
        let store = &*self.store;
        let mut results = Vec::with_capacity(appends.len());
        let mut wrote = false;
        if let Some(reason) = &writer.poisoned {
            results.extend(appends.iter().map(|_| Err(JournalError::Poisoned(reason.clone()))));
            return results;
        }
        let ids: Vec<Vec<String>> =
            appends.iter().map(|a| a.events.iter().map(|_| uuid::Uuid::now_v7().to_string()).collect()).collect();
        let group: Vec<_> = appends.iter().zip(&ids).map(|(a, ids)| GroupAppend::new(a, ids)).collect();
        match store.append_group(&group, writer.next_position, now_micros()) {
            Ok(outcomes) => {
                for outcome in outcomes {
                    results.push(match outcome {
                        Ok(Applied::Appended(outcome)) => {
                            writer.next_position += outcome.events.len() as u64;
                            wrote = true;
                            Ok(outcome)
                        }
                        Ok(Applied::Deduplicated(outcome)) => Ok(outcome),
                        Err(e) => Err(e),
                    });
                }
            }
            Err(e) => {
                // A failed group write may have left the engine unusable;
                // stop writing rather than risk acknowledging what is not there.
                error!(error = %e, "group write failed: refusing further appends");
                writer.poisoned = Some(e.to_string());
                results.extend(appends.iter().map(|_| Err(JournalError::Poisoned(e.to_string()))));
            }
        }

        // Every answer waits for the flush, rejections and repeats too: they
        // may name a version written earlier in this very group, and that
        // version must exist after a crash. Without a write, earlier groups
        // were flushed already.
        let flushed = if wrote { store.flush() } else { Ok(()) };
        match flushed {
            Ok(()) => {
                self.set_durable(writer.next_position);
                if wrote {
                    self.outbox_wake.notify_one();
                }
            }
            Err(e) => {
                error!(error = %e, "flush failed: refusing further appends");
                let reason = e.to_string();
                writer.poisoned = Some(reason.clone());
                for result in &mut results {
                    *result = Err(JournalError::Poisoned(reason.clone()));
                }
            }
        }
        debug!(appends = appends.len(), "group commit");
        self.stats.groups.fetch_add(1, Ordering::Relaxed);
        self.stats.appends.fetch_add(appends.len() as u64, Ordering::Relaxed);
        results
    }
}

/// Counters of the group commit, for operators and the benchmark.
#[derive(Debug, Default)]
pub struct CommitStats {
    /// Groups written and flushed.
    pub groups: AtomicU64,
    /// Appends answered by them.
    pub appends: AtomicU64,
    /// Of those, appends committed alone by their caller (nothing queued,
    /// nobody writing) rather than by the committer thread.
    pub alone: AtomicU64,
}

/// One queued append and where to send its answer.
#[derive(Debug)]
pub(crate) struct Pending {
    pub append: ValidAppend,
    pub reply: oneshot::Sender<Result<AppendOutcome, JournalError>>,
}

/// Starts the committer thread. It ends when every sender is dropped and the
/// queue is drained; `done` fires after its last flush.
pub(crate) fn spawn(
    shared: Arc<Shared>,
    max_batch: usize,
) -> std::io::Result<(mpsc::Sender<Pending>, oneshot::Receiver<()>)> {
    // Bounded so that a flood of appends waits in the callers (backpressure)
    // rather than in memory here.
    let (tx, rx) = mpsc::channel(max_batch.max(1) * 4);
    let (done_tx, done_rx) = oneshot::channel();
    std::thread::Builder::new().name("journal-committer".into()).spawn(move || {
        run(&shared, rx, max_batch.max(1));
        // Release the database before saying so: whoever waits on `done`
        // may reopen the directory, and sled's lock lives as long as the Db.
        drop(shared);
        let _ = done_tx.send(());
    })?;
    Ok((tx, done_rx))
}

fn run(shared: &Shared, mut rx: mpsc::Receiver<Pending>, max_batch: usize) {
    let mut batch = Vec::with_capacity(max_batch);
    while let Some(first) = rx.blocking_recv() {
        let mut bytes = payload_bytes(&first);
        batch.push(first);
        // Bounded by count and bytes so that one group write stays a
        // reasonable size in memory and on the log.
        while batch.len() < max_batch && bytes < MAX_GROUP_BYTES {
            match rx.try_recv() {
                Ok(pending) => {
                    bytes += payload_bytes(&pending);
                    batch.push(pending);
                }
                Err(_) => break,
            }
        }
        let appends: Vec<&ValidAppend> = batch.iter().map(|p| &p.append).collect();
        let results = shared.commit(&mut shared.writer(), &appends);
        for (pending, result) in batch.drain(..).zip(results) {
            // The caller may have gone away; its append stands regardless.
            let _ = pending.reply.send(result);
        }
    }
}

/// Payload bytes above which a group takes no more appends (one append
/// alone may still be up to `max_append_bytes`).
const MAX_GROUP_BYTES: usize = 8 * 1024 * 1024;

fn payload_bytes(pending: &Pending) -> usize {
    pending.append.events.iter().map(|e| e.payload.len()).sum()
}

fn now_micros() -> i64 {
    let micros = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros());
    i64::try_from(micros).unwrap_or(i64::MAX)
}
