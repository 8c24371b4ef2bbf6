//! The outbox drain: committed events leave for the fan-out (NATS, or any
//! other [`EventPublisher`]) strictly in global order, which keeps every
//! stream in version order, and leave the outbox (its cursor moves past
//! them) only once the publisher has confirmed them. While the publisher fails, the drain retries the same
//! event with a growing pause; appends are unaffected.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Notify, watch};
use tracing::{info, warn};

use crate::store::{OutboxEvent, Store};

/// The future a publisher returns.
pub type PublishFuture<'a> = Pin<Box<dyn Future<Output = Result<(), PublishError>> + Send + 'a>>;

/// Why a publish failed; the drain retries it.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct PublishError(pub String);

/// Where committed events fan out to. Implemented for NATS JetStream
/// ([`crate::nats::JetStreamPublisher`]); an in-process fan-out (as
/// `battlelog up` without NATS wants) implements the same trait.
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
/// outbox for the next start.
pub(crate) async fn drain(
    store: Arc<Store>,
    publisher: Arc<dyn EventPublisher>,
    wake: Arc<Notify>,
    mut closing: watch::Receiver<bool>,
) {
    let mut retry = MIN_RETRY;
    let mut failing = false;
    loop {
        if *closing.borrow() {
            return;
        }
        let batch = match store.outbox_batch(DRAIN_BATCH) {
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
                _ = wake.notified() => {}
                _ = closing.changed() => return,
            }
            continue;
        }
        for event in &batch {
            loop {
                // Shutdown does not wait out an ack timeout: an event given up
                // here keeps its place in the outbox and is sent again (and
                // deduplicated by NATS) after the next start.
                let published = tokio::select! {
                    published = publisher.publish(event) => published,
                    _ = closing.changed() => return,
                };
                match published {
                    Ok(()) => {
                        if failing {
                            info!(position = event.global_position, "publishing again");
                            failing = false;
                        }
                        retry = MIN_RETRY;
                        if let Err(e) = store.outbox_mark_published(event.global_position) {
                            warn!(error = %e, "cannot move the outbox cursor");
                        }
                        break;
                    }
                    Err(e) => {
                        if !failing {
                            warn!(error = %e, position = event.global_position, "publishing failed; retrying until it works");
                            failing = true;
                        }
                        if !pause(&mut closing, retry).await {
                            return;
                        }
                        retry = (retry * 2).min(MAX_RETRY);
                    }
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
