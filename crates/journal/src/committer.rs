//! Group commit: one thread owns all writes.
//!
//! Appends queue up on a channel. The committer takes everything queued (up
//! to `max_batch` appends or 8 MiB), applies the group in one sled
//! transaction (each append all or nothing inside it), flushes once, raises
//! the durable watermark and only then answers every append of the group.
//! While one flush is in progress the next group gathers, so under load one
//! fsync serves many appends; alone, an append costs one transaction and one
//! flush.
//!
//! A plain thread rather than a tokio task: sled's flush blocks for the whole
//! fsync, and that must not stall the runtime's workers.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use tokio::sync::{Notify, mpsc, oneshot};
use tracing::{debug, error};

use crate::error::JournalError;
use crate::limits::ValidAppend;
use crate::store::{AppendOutcome, Applied, Store};

/// One queued append and where to send its answer.
#[derive(Debug)]
pub(crate) struct Pending {
    pub append: ValidAppend,
    pub reply: oneshot::Sender<Result<AppendOutcome, JournalError>>,
}

/// Starts the committer thread. It ends when every sender is dropped and the
/// queue is drained; `done` fires after its last flush.
pub(crate) fn spawn(
    store: Arc<Store>,
    max_batch: usize,
    outbox_wake: Arc<Notify>,
) -> std::io::Result<(mpsc::Sender<Pending>, oneshot::Receiver<()>)> {
    // Bounded so that a flood of appends waits in the callers (backpressure)
    // rather than in memory here.
    let (tx, rx) = mpsc::channel(max_batch.max(1) * 4);
    let (done_tx, done_rx) = oneshot::channel();
    std::thread::Builder::new().name("journal-committer".into()).spawn(move || {
        run(&store, rx, max_batch.max(1), &outbox_wake);
        // Release the database before saying so: whoever waits on `done`
        // may reopen the directory, and sled's lock lives as long as the Db.
        drop(store);
        let _ = done_tx.send(());
    })?;
    Ok((tx, done_rx))
}

fn run(store: &Store, mut rx: mpsc::Receiver<Pending>, max_batch: usize, outbox_wake: &Notify) {
    let mut next_position = store.next_position();
    let mut poisoned: Option<String> = None;
    let mut batch = Vec::with_capacity(max_batch);
    let mut results = Vec::with_capacity(max_batch);
    while let Some(first) = rx.blocking_recv() {
        let mut bytes = payload_bytes(&first);
        batch.push(first);
        // Bounded by count and bytes so that one group transaction stays a
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

        let mut wrote = false;
        if let Some(reason) = &poisoned {
            results.extend(batch.iter().map(|_| Err(JournalError::Poisoned(reason.clone()))));
        } else {
            let ids: Vec<Vec<String>> = batch
                .iter()
                .map(|p| p.append.events.iter().map(|_| uuid::Uuid::now_v7().to_string()).collect())
                .collect();
            let group: Vec<_> = batch.iter().zip(&ids).map(|(p, ids)| (&p.append, ids.as_slice())).collect();
            match store.apply_group(&group, next_position, now_micros()) {
                Ok(outcomes) => {
                    for outcome in outcomes {
                        results.push(match outcome {
                            Ok(Applied::Appended(outcome)) => {
                                next_position += outcome.events.len() as u64;
                                wrote = true;
                                Ok(outcome)
                            }
                            Ok(Applied::Deduplicated(outcome)) => Ok(outcome),
                            Err(e) => Err(e),
                        });
                    }
                }
                Err(e) => {
                    // A failed transaction may have left sled unusable; stop
                    // writing rather than risk acknowledging what is not there.
                    error!(error = %e, "group transaction failed: refusing further appends");
                    poisoned = Some(e.to_string());
                    results.extend(batch.iter().map(|_| Err(JournalError::Poisoned(e.to_string()))));
                }
            }
        }

        // Every answer waits for the flush, rejections and repeats too: they
        // may name a version written earlier in this very batch, and that
        // version must exist after a crash. Without a write, earlier batches
        // were flushed already.
        let flushed = if wrote { store.flush() } else { Ok(()) };
        match flushed {
            Ok(()) => {
                store.set_durable(next_position);
                if wrote {
                    outbox_wake.notify_one();
                }
            }
            Err(e) => {
                error!(error = %e, "flush failed: refusing further appends");
                let reason = e.to_string();
                poisoned = Some(reason.clone());
                for result in &mut results {
                    *result = Err(JournalError::Poisoned(reason.clone()));
                }
            }
        }
        debug!(appends = batch.len(), "group commit");
        store.stats.groups.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        store.stats.appends.fetch_add(batch.len() as u64, std::sync::atomic::Ordering::Relaxed);
        for (pending, result) in batch.drain(..).zip(results.drain(..)) {
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
