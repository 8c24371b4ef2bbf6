//! The outbox drain: committed events leave for the fan-out (NATS, or any
//! other [`EventPublisher`]) strictly in global order, which keeps every
//! stream in version order, and leave the outbox (its cursor moves past
//! them) only once the publisher has confirmed them. While the publisher fails, the drain retries the same
//! event with a growing pause; appends are unaffected.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use battlelog_proto::v1::battle_event::Event;
use battlelog_proto::v1::{BattleEvent, JournalRecord};
use prost::Message;
use tokio::sync::watch;
use tracing::{info, warn};

use crate::error::JournalError;
use crate::guard;
use crate::metrics::JournalMetrics;
use crate::store::{EventStore, OutboxEvent, Page};

/// The future a publisher returns.
pub type PublishFuture<'a> = Pin<Box<dyn Future<Output = Result<(), PublishError>> + Send + 'a>>;

/// Why a publish failed; the drain retries it.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct PublishError(pub String);

/// Where committed events fan out to. Implemented for NATS JetStream
/// ([`crate::nats::JetStreamPublisher`]); an embedder's own fan-out
/// implements the same trait.
pub trait EventPublisher: Send + Sync + std::fmt::Debug + 'static {
    /// Publishes one committed event. Resolve `Ok` only once the sink has
    /// accepted it: the event then leaves the outbox for good. Events are
    /// passed one at a time in global order, the next only after this one
    /// succeeded, and may be passed again after a crash (deduplicate by
    /// `event.event.event_id`).
    fn publish<'a>(&'a self, event: &'a OutboxEvent) -> PublishFuture<'a>;
}

/// How many outbox entries are read per pass.
const DRAIN_BATCH: usize = 256;
const MIN_RETRY: Duration = Duration::from_millis(50);
const MAX_RETRY: Duration = Duration::from_secs(2);

/// Runs the drain until `closing` turns true. Entries left then stay in the
/// outbox for the next start. It keeps `metrics`' outbox lag (durable
/// events past the cursor) current at each step and counts publishes.
pub(crate) async fn drain(
    store: Arc<dyn EventStore>,
    publisher: Arc<dyn EventPublisher>,
    metrics: JournalMetrics,
    mut closing: watch::Receiver<bool>,
) {
    let store = &*store;
    let mut changes = store.changes();
    let mut tenants = Tenants::default();
    let Some(mut cursor) = read_cursor(store, &mut closing).await else { return };
    let mut sender = Sender { store, publisher: &*publisher, metrics: &metrics, retry: MIN_RETRY, failing: false };
    loop {
        if *closing.borrow() {
            return;
        }
        // Marked seen before reading: a commit after this read wakes the
        // wait below.
        let durable = *changes.borrow_and_update();
        metrics.set_outbox_lag(durable.saturating_sub(cursor));
        let batch = match outbox_batch(store, &mut tenants, cursor).await {
            Ok(batch) => batch,
            Err(e) => {
                warn!(error = %e, "cannot read the outbox");
                if !pause(&mut closing, MAX_RETRY).await {
                    return;
                }
                continue;
            }
        };
        if batch.is_empty() {
            tokio::select! {
                changed = changes.changed() => if changed.is_err() { return },
                _ = closing.changed() => return,
            }
            continue;
        }
        for event in &batch {
            if !sender.send(event, &changes, &mut closing).await {
                return;
            }
            cursor = event.global_position + 1;
        }
    }
}

/// The outbox cursor, read again until it reads; `None` when the journal
/// started closing meanwhile.
async fn read_cursor(store: &dyn EventStore, closing: &mut watch::Receiver<bool>) -> Option<u64> {
    loop {
        match store.outbox_cursor().await {
            Ok(cursor) => return Some(cursor.unwrap_or(0)),
            Err(e) => {
                warn!(error = %e, "cannot read the outbox cursor");
                if !pause(closing, MAX_RETRY).await {
                    return None;
                }
            }
        }
    }
}

/// Publishes the drain's events one at a time, retrying each until it is
/// sent, and moves the cursor past it.
struct Sender<'a> {
    store: &'a dyn EventStore,
    publisher: &'a dyn EventPublisher,
    metrics: &'a JournalMetrics,
    /// The next wait after a failed publish, doubling up to [`MAX_RETRY`].
    retry: Duration,
    /// Whether the last publish failed (said once, not at every retry).
    failing: bool,
}

impl Sender<'_> {
    /// Publishes `event` until it is sent; false when the journal started
    /// closing first.
    async fn send(
        &mut self,
        event: &OutboxEvent,
        changes: &watch::Receiver<u64>,
        closing: &mut watch::Receiver<bool>,
    ) -> bool {
        loop {
            // Shutdown does not wait out an ack timeout: an event given up
            // here keeps its place in the outbox and is sent again (and
            // deduplicated by NATS) after the next start.
            let published = tokio::select! {
                published = self.publisher.publish(event) => published,
                _ = closing.changed() => return false,
            };
            // What was committed meanwhile counts too: the lag is read
            // against the store's durable watermark, not this batch.
            match published {
                Ok(()) => {
                    self.metrics.published();
                    self.metrics.set_outbox_lag((*changes.borrow()).saturating_sub(event.global_position + 1));
                    if self.failing {
                        info!(position = event.global_position, "publishing again");
                        self.failing = false;
                    }
                    self.retry = MIN_RETRY;
                    // Not flushed on its own: if the move is lost in a
                    // crash, the event is published again and NATS drops
                    // the duplicate by its `Nats-Msg-Id`.
                    if let Err(e) = self.store.set_outbox_cursor(event.global_position + 1).await {
                        warn!(error = %e, "cannot move the outbox cursor");
                    }
                    return true;
                }
                Err(e) => {
                    self.metrics.publish_failed();
                    self.metrics.set_outbox_lag((*changes.borrow()).saturating_sub(event.global_position));
                    if !self.failing {
                        warn!(error = %e, position = event.global_position, "publishing failed; retrying until it works");
                        self.failing = true;
                    }
                    if !pause(closing, self.retry).await {
                        return false;
                    }
                    self.retry = (self.retry * 2).min(MAX_RETRY);
                }
            }
        }
    }
}

/// Sleeps for `delay`; false when the journal started closing meanwhile.
async fn pause(closing: &mut watch::Receiver<bool>, delay: Duration) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(delay) => !*closing.borrow(),
        _ = closing.changed() => false,
    }
}

/// Up to [`DRAIN_BATCH`] durable events from `from` on, oldest first, each
/// with its stream's tenant.
async fn outbox_batch(
    store: &dyn EventStore,
    tenants: &mut Tenants,
    from: u64,
) -> Result<Vec<OutboxEvent>, JournalError> {
    let stored = store.read_all(from, Page::count(DRAIN_BATCH)).await?;
    let mut batch = Vec::with_capacity(stored.len());
    for stored in stored {
        batch.push(OutboxEvent {
            tenant: tenants.of(store, &stored.event).await?,
            global_position: stored.global_position,
            hash: stored.hash,
            record: stored.record,
            event: stored.event,
        });
    }
    Ok(batch)
}

/// Stream → tenant subject token: a stream's tenant is fixed by its version
/// 0, so it is read once per stream, not per event.
#[derive(Debug, Default)]
struct Tenants(HashMap<String, String>);

/// Streams whose tenant the drain remembers; past it the cache starts over
/// (a miss costs one read of version 0).
const MAX_CACHED_TENANTS: usize = 100_000;

impl Tenants {
    /// The tenant subject token of a durable record's stream, from the
    /// `BattleOpened` at its version 0 (the record itself when it is that).
    async fn of(&mut self, store: &dyn EventStore, record: &JournalRecord) -> Result<String, JournalError> {
        if let Some(tenant) = self.0.get(&record.stream_id) {
            return Ok(tenant.clone());
        }
        let first;
        let payload = if record.version == 0 {
            &record.payload
        } else {
            first = store.read_stream(&record.stream_id, 0, Page::count(1)).await?;
            let Some(opening) = first.first() else {
                return Err(JournalError::Corrupt {
                    stream_id: record.stream_id.clone(),
                    version: 0,
                    reason: "record missing".into(),
                });
            };
            &opening.event.payload
        };
        // Streams written before the guard may not open with a BattleOpened;
        // their events go out under the placeholder rather than not at all.
        let tenant = match BattleEvent::decode(payload.as_slice()) {
            Ok(BattleEvent { event: Some(Event::BattleOpened(opened)) }) => {
                guard::subject_token(&opened.tenant).into_owned()
            }
            _ => guard::TENANT_PLACEHOLDER.to_owned(),
        };
        if self.0.len() >= MAX_CACHED_TENANTS {
            self.0.clear();
        }
        self.0.insert(record.stream_id.clone(), tenant.clone());
        Ok(tenant)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::tests::{opened, rolled};
    use crate::journal::{Journal, JournalOptions};
    use crate::limits::ExpectedVersion;
    use crate::store::MemoryStore;

    /// The outbox names each event's tenant, read from the stream's version
    /// 0 when the event is not that.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn outbox_events_carry_their_battles_tenant() {
        let store: Arc<dyn EventStore> = Arc::new(MemoryStore::new());
        let journal = Journal::open_on(store.clone(), JournalOptions::new("unused")).await.unwrap();
        for (stream, events) in
            [("a", vec![opened("forum-a"), rolled(0, 0)]), ("n", vec![opened("")]), ("a", vec![rolled(0, 1)])]
        {
            journal.append(stream.into(), ExpectedVersion::Any, events).await.unwrap();
        }

        // A fresh cache, starting past version 0: its tenant is read.
        let tenants: Vec<_> = outbox_batch(&*store, &mut Tenants::default(), 3)
            .await
            .unwrap()
            .into_iter()
            .map(|e| (e.event.stream_id, e.tenant))
            .collect();
        assert_eq!(tenants, [("a".to_owned(), "forum-a".to_owned())]);
        let tenants: Vec<_> =
            outbox_batch(&*store, &mut Tenants::default(), 0).await.unwrap().into_iter().map(|e| e.tenant).collect();
        assert_eq!(tenants, ["forum-a", "forum-a", "_", "forum-a"]);
    }
}
