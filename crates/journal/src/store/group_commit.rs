//! [`KvStore`]: the [`EventStore`] of every ordered key-value engine (sled on
//! disk, maps in memory), with group commit.
//!
//! An engine ([`KvEngine`]) gives key-value reads and writes a
//! [`WriteSet`] so that a crash keeps all of it or none; this module does
//! the rest once for all of them:
//!
//! - **Group commit.** Appends queue up on a channel; the committer thread
//!   takes everything queued (up to `max_batch` appends or 8 MiB), writes
//!   the group ([`kv_tables::write_group`]: each planned append only at the head it
//!   was planned against), flushes once, raises the durable watermark and
//!   only then answers every append of the group. While one flush is in
//!   progress the next group gathers, so under load one fsync serves many
//!   appends. A lone appender (the only one in flight, nobody writing)
//!   commits on its own task instead: at concurrency 1 the hand-off to the
//!   committer thread and back costs about as much as the write itself.
//!   Both take the same writer lock, so there is exactly one writer at a
//!   time and global positions follow commit order. A plain thread rather
//!   than a tokio task: sled's flush blocks for the whole fsync.
//! - **Durable answers only.** Every global position below the watermark is
//!   flushed. Reads pass it to the layout code, which returns nothing at or
//!   past it; a head or idempotency entry whose record lies past it is
//!   waited for (it is in the group being flushed), so the planner never
//!   decides on, and no retry is ever answered with, what a crash could
//!   still take back.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, TryLockError};
use std::time::Instant;

use tokio::sync::{mpsc, oneshot, watch};
use tracing::{debug, error};

use super::kv_tables::{self, GroupOutcome, KvRead, WriteSet};
use super::{
    Conflict, EventStore, Head, KeyEntry, Page, PlannedAppend, StorageError, StorageErrorKind, StoreFuture, StoredEvent,
};
use crate::metrics::JournalMetrics;

/// What an ordered key-value engine must do beyond reads.
pub trait KvEngine: KvRead + Send + Sync + std::fmt::Debug + 'static {
    /// Writes a group's writes so that a crash keeps all of them or none
    /// (`end` is the global position after the group). Need not be durable
    /// before [`KvEngine::flush`].
    fn commit(&self, writes: &WriteSet, end: u64) -> Result<(), StorageError>;

    /// Makes everything committed so far durable.
    fn flush(&self) -> Result<(), StorageError>;

    /// Moves the outbox cursor (need not be durable on its own).
    fn set_outbox_cursor(&self, next: u64) -> Result<(), StorageError>;
}

/// Payload bytes above which a group takes no more appends (one append
/// alone may still be larger).
const MAX_GROUP_BYTES: usize = 8 * 1024 * 1024;

/// An [`EventStore`] on an ordered key-value engine.
#[derive(Debug)]
pub struct KvStore<E: KvEngine> {
    shared: Arc<Shared<E>>,
    /// `None` once closed: no new appends.
    committer: Mutex<Option<mpsc::Sender<Pending>>>,
    committer_done: Mutex<Option<oneshot::Receiver<()>>>,
    /// Appends inside [`EventStore::append`].
    appending: AtomicUsize,
}

/// What the committer thread shares with the store's callers.
#[derive(Debug)]
struct Shared<E> {
    engine: E,
    /// Every global position below this is flushed.
    durable: watch::Sender<u64>,
    /// Whoever holds this writes: the committer thread for a queued group,
    /// or a lone appender for its own append.
    writer: Mutex<Writer>,
    stats: CommitStats,
    /// Where group sizes and flush times go, once a journal attaches them.
    metrics: OnceLock<JournalMetrics>,
}

/// The single writer's state.
#[derive(Debug)]
struct Writer {
    next_position: u64,
    /// Why the store refuses appends (a failed write or flush), if it does.
    poisoned: Option<String>,
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

/// One queued call of [`EventStore::append`] and where to send its answer.
#[derive(Debug)]
struct Pending {
    appends: Vec<PlannedAppend>,
    reply: oneshot::Sender<Result<GroupOutcome, StorageError>>,
}

/// Counts one append in flight for as long as it lives.
struct InFlight<'a> {
    count: &'a AtomicUsize,
    /// No other append was in flight when this one entered.
    alone: bool,
}

impl<'a> InFlight<'a> {
    fn enter(count: &'a AtomicUsize) -> Self {
        let before = count.fetch_add(1, Ordering::AcqRel);
        Self { count, alone: before == 0 }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A previous write or flush failed: durability can no longer be promised,
/// so the store refuses appends until the journal is restarted.
fn poisoned<E: KvEngine>(reason: &str) -> StorageError {
    StorageError::fatal(E::NAME, format!("storage failed earlier ({reason}); restart the journal"))
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl<E: KvEngine> KvStore<E> {
    /// Starts the committer on `engine`; groups take at most `max_batch`
    /// appends.
    pub fn start(engine: E, max_batch: usize) -> Result<Self, StorageError> {
        let next = kv_tables::next_position(&engine)?;
        let shared = Arc::new(Shared {
            engine,
            durable: watch::Sender::new(next),
            writer: Mutex::new(Writer { next_position: next, poisoned: None }),
            stats: CommitStats::default(),
            metrics: OnceLock::new(),
        });
        let max_batch = max_batch.max(1);
        // Bounded so that a flood of appends waits in the callers
        // (backpressure) rather than in memory here.
        let (tx, rx) = mpsc::channel(max_batch * 4);
        let (done_tx, done_rx) = oneshot::channel();
        let thread_shared = shared.clone();
        std::thread::Builder::new()
            .name("journal-committer".into())
            .spawn(move || {
                run(&thread_shared, rx, max_batch);
                // Release the engine before saying so: whoever waits on `done`
                // may reopen the directory, and sled's lock lives as long as
                // the Db.
                drop(thread_shared);
                let _ = done_tx.send(());
            })
            .map_err(|e| StorageError::engine_error(StorageErrorKind::Fatal, E::NAME, e))?;
        Ok(Self {
            shared,
            committer: Mutex::new(Some(tx)),
            committer_done: Mutex::new(Some(done_rx)),
            appending: AtomicUsize::new(0),
        })
    }

    /// The engine, for tests and tools that look at the layout.
    pub fn engine(&self) -> &E {
        &self.shared.engine
    }

    /// Group-commit counters since open.
    pub fn commit_stats(&self) -> &CommitStats {
        &self.shared.stats
    }

    /// The durable watermark: every global position below it is flushed.
    pub fn durable(&self) -> u64 {
        *self.shared.durable.borrow()
    }

    /// Waits until `position` is durable.
    async fn wait_durable(&self, position: u64) -> Result<(), StorageError> {
        let mut durable = self.shared.durable.subscribe();
        durable.wait_for(|d| *d > position).await.map(drop).map_err(|_| StorageError::closed(E::NAME))
    }

    async fn append_planned(&self, appends: Vec<PlannedAppend>) -> Result<GroupOutcome, StorageError> {
        let in_flight = InFlight::enter(&self.appending);
        let sender = lock(&self.committer).clone().ok_or_else(|| StorageError::closed(E::NAME))?;
        // The only append in flight, on a multi-threaded runtime: commit
        // right here rather than hand off to the committer thread and wait to
        // be woken — at concurrency 1 those two hand-offs cost about as much
        // as the write itself. This blocks one runtime worker for one flush,
        // which tokio advises against; it is bounded: the writer lock lets at
        // most one worker do it at a time, only while no other append is in
        // flight, and the other workers steal its queued tasks meanwhile.
        // (`block_in_place` would move those tasks away explicitly, but its
        // own hand-off gave back most of the gain over gRPC: BENCHMARKS.md.)
        // The sender stays alive meanwhile, so closing waits for this commit
        // as for a queued one.
        if in_flight.alone
            && sender.capacity() == sender.max_capacity()
            && tokio::runtime::Handle::try_current()
                .is_ok_and(|runtime| runtime.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread)
        {
            let writer = match self.shared.writer.try_lock() {
                Ok(writer) => Some(writer),
                Err(TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
                Err(TryLockError::WouldBlock) => None,
            };
            if let Some(mut writer) = writer {
                self.shared.stats.alone.fetch_add(1, Ordering::Relaxed);
                let mut results = self.shared.commit(&mut writer, &[&appends]);
                return results.pop().unwrap_or_else(|| Err(poisoned::<E>("the commit gave no answer")));
            }
        }
        let (reply, answer) = oneshot::channel();
        sender.send(Pending { appends, reply }).await.map_err(|_| StorageError::closed(E::NAME))?;
        drop(sender);
        answer.await.map_err(|_| StorageError::closed(E::NAME))?
    }
}

impl<E: KvEngine> Shared<E> {
    /// One group (one entry per caller, each with its planned appends):
    /// written, flushed, the watermark raised; one result per caller.
    fn commit(&self, writer: &mut Writer, calls: &[&[PlannedAppend]]) -> Vec<Result<GroupOutcome, StorageError>> {
        if let Some(reason) = &writer.poisoned {
            return calls.iter().map(|_| Err(poisoned::<E>(reason))).collect();
        }
        let flat: Vec<PlannedAppend> = calls.iter().flat_map(|c| c.iter().cloned()).collect();
        let writing_span = tracing::debug_span!("journal.write").entered();
        let written = (|| {
            let (outcomes, writes) = kv_tables::write_group(&self.engine, &flat, writer.next_position)?;
            let appended: u64 = outcomes.iter().map(|o| o.as_ref().map_or(0, |p| p.len() as u64)).sum();
            if !writes.is_empty() {
                self.engine.commit(&writes, writer.next_position + appended)?;
            }
            Ok::<_, StorageError>((outcomes, appended))
        })();
        let (outcomes, appended) = match written {
            Ok(done) => done,
            Err(e) => {
                // A failed group write may have left the engine unusable;
                // stop writing rather than risk acknowledging what is not there.
                error!(error = %e, "group write failed: refusing further appends");
                writer.poisoned = Some(e.to_string());
                return calls.iter().map(|_| Err(poisoned::<E>(&e.to_string()))).collect();
            }
        };
        // Conflicts wait for the flush too: the head they name may have
        // been written earlier in this very group.
        drop(writing_span);
        if appended > 0 {
            let _flush_span = tracing::debug_span!("journal.flush").entered();
            let flushing = Instant::now();
            if let Err(e) = self.engine.flush() {
                error!(error = %e, "flush failed: refusing further appends");
                writer.poisoned = Some(e.to_string());
                return calls.iter().map(|_| Err(poisoned::<E>(&e.to_string()))).collect();
            }
            if let Some(metrics) = self.metrics.get() {
                metrics.group_flushed(appended, flushing.elapsed());
            }
            writer.next_position += appended;
            let next = writer.next_position;
            self.durable.send_if_modified(|current| {
                let raised = next > *current;
                *current = next.max(*current);
                raised
            });
        }
        debug!(calls = calls.len(), appends = flat.len(), "group commit");
        self.stats.groups.fetch_add(1, Ordering::Relaxed);
        self.stats.appends.fetch_add(flat.len() as u64, Ordering::Relaxed);
        let mut outcomes = outcomes.into_iter();
        calls.iter().map(|c| Ok(outcomes.by_ref().take(c.len()).collect())).collect()
    }
}

fn run<E: KvEngine>(shared: &Shared<E>, mut rx: mpsc::Receiver<Pending>, max_batch: usize) {
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
        let calls: Vec<&[PlannedAppend]> = batch.iter().map(|p| p.appends.as_slice()).collect();
        let results = shared.commit(&mut lock(&shared.writer), &calls);
        for (pending, result) in batch.drain(..).zip(results) {
            // The caller may have gone away; its append stands regardless.
            let _ = pending.reply.send(result);
        }
    }
}

fn payload_bytes(pending: &Pending) -> usize {
    pending.appends.iter().flat_map(|a| &a.records).map(|r| r.bytes.len()).sum()
}

impl<E: KvEngine> EventStore for KvStore<E> {
    fn engine(&self) -> &'static str {
        E::NAME
    }

    fn head<'a>(&'a self, stream_id: &'a str) -> StoreFuture<'a, Option<Head>> {
        Box::pin(async move {
            match kv_tables::head(&self.shared.engine, stream_id)? {
                None => Ok(None),
                Some((head, position)) => {
                    self.wait_durable(position).await?;
                    Ok(Some(head))
                }
            }
        })
    }

    fn idempotency<'a>(&'a self, stream_id: &'a str, keys: &'a [String]) -> StoreFuture<'a, Vec<Option<KeyEntry>>> {
        Box::pin(async move {
            let (entries, newest) = kv_tables::idempotency(&self.shared.engine, stream_id, keys)?;
            if let Some(position) = newest {
                self.wait_durable(position).await?;
            }
            Ok(entries)
        })
    }

    fn append(&self, appends: Vec<PlannedAppend>) -> StoreFuture<'_, Vec<Result<Vec<u64>, Conflict>>> {
        Box::pin(self.append_planned(appends))
    }

    fn read_stream<'a>(
        &'a self,
        stream_id: &'a str,
        from_version: u64,
        page: Page,
    ) -> StoreFuture<'a, Vec<StoredEvent>> {
        let durable = self.durable();
        Box::pin(async move { kv_tables::read_stream(&self.shared.engine, stream_id, from_version, page, durable) })
    }

    fn read_all(&self, from_position: u64, page: Page) -> StoreFuture<'_, Vec<StoredEvent>> {
        let durable = self.durable();
        Box::pin(async move { kv_tables::read_all(&self.shared.engine, from_position, page, durable) })
    }

    fn changes(&self) -> watch::Receiver<u64> {
        self.shared.durable.subscribe()
    }

    /// The first journal opened on this store keeps it: a store serves one
    /// journal at a time.
    fn attach_metrics(&self, metrics: &JournalMetrics) {
        let _ = self.shared.metrics.set(metrics.clone());
    }

    fn outbox_cursor(&self) -> StoreFuture<'_, Option<u64>> {
        Box::pin(async move { kv_tables::outbox_cursor(&self.shared.engine).map(Some) })
    }

    fn set_outbox_cursor(&self, next: u64) -> StoreFuture<'_, ()> {
        Box::pin(async move { self.shared.engine.set_outbox_cursor(next) })
    }

    fn close(&self) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            lock(&self.committer).take();
            let done = lock(&self.committer_done).take();
            if let Some(done) = done {
                // Fires when the committer thread has answered its last group.
                let _ = done.await;
            }
            self.shared.engine.flush()
        })
    }
}
