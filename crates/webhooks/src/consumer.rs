//! Following the journal's JetStream fan-out with a durable pull consumer:
//! each message is routed into the store (crate::store), the store is
//! flushed, and only then is the message acknowledged, so that a crash at
//! any point leaves it either in the store or still unacknowledged in
//! JetStream, which delivers it again (and the store knows it then).
//!
//! The sled journal's fan-out carries one event a message; the JetStream
//! journal's log (`nats_stream = "BATTLELOG_JOURNAL"`, `nats_subject_prefix
//! = "battlelog.journal"`) one append a message, all of one battle: either
//! is followed the same way.
//!
//! An event ahead of its battle (its predecessor not stored yet: JetStream
//! handed that one to an instance that died, and offers it again only after
//! `ack_wait_ms`) is not acknowledged but refused (NAK) with a delay of
//! `gap_retry_ms`, so JetStream offers it again after the missing one;
//! `gap_wait_ms` into such a gap, the missing events are taken as gone and
//! the gap is logged and counted (crate::store).
//!
//! The stream is the journal's to create (on its first publish); until it
//! exists this waits for it, so the services may start in any order. It asks
//! again every second, but says so once (`Said`): a failure is logged
//! when it is new, not at every try, and again only once the state changes
//! (following, another failure).

use std::time::Duration;

use async_nats::jetstream::{self, AckKind, consumer::AckPolicy, consumer::DeliverPolicy, consumer::pull};
use battlelog_runtime::nats_url::NatsUrls;
use tokio::sync::watch;
use tokio_stream::StreamExt;
use tracing::{info, warn};

use crate::deliver::Deliverer;
use crate::event::Received;
use crate::feed::{FeedCheck, Verdict};
use crate::metrics::WebhooksMetrics;
use crate::store::{Enqueued, Entry, Store, now_ms};

/// What the consumer needs from the config.
#[derive(Debug, Clone)]
pub struct ConsumerOptions {
    /// Any nodes of the cluster, with the service's login.
    pub nats_urls: NatsUrls,
    pub stream: String,
    pub subject_prefix: String,
    pub durable: String,
    pub ack_wait: Duration,
    pub max_ack_pending: i64,
    /// How long a battle waits for a missing version before giving it up.
    pub gap_wait: Duration,
    /// The delay before JetStream offers an event ahead of its battle again.
    pub gap_retry: Duration,
}

/// How long to wait before trying NATS again after a failure.
const RETRY_NATS: Duration = Duration::from_secs(1);

/// Why following the stream stopped.
#[derive(Debug)]
enum Stopped {
    /// The stream does not exist (yet): the journal makes it with its first
    /// event.
    NoStream,
    /// Anything else, said as it happened.
    Failed(String),
}

impl From<String> for Stopped {
    fn from(error: String) -> Self {
        Self::Failed(error)
    }
}

/// What was last said about following, so that the same state, tried again
/// every [`RETRY_NATS`], is logged once.
#[derive(Debug, Default, PartialEq, Eq)]
enum Said {
    #[default]
    Nothing,
    Following,
    NoStream,
    Failed(String),
}

/// Follows the stream until `stop`; reconnects after any failure.
pub async fn follow(
    options: ConsumerOptions,
    store: std::sync::Arc<Store>,
    feed: FeedCheck,
    deliverer: Deliverer,
    metrics: std::sync::Arc<WebhooksMetrics>,
    mut stop: watch::Receiver<bool>,
) {
    let client = options
        .nats_urls
        .connect_options()
        .name("battlelog-webhooks")
        .retry_on_initial_connect()
        .max_reconnects(None)
        .connection_timeout(Duration::from_secs(2))
        .reconnect_delay_callback(|attempts| Duration::from_millis((attempts as u64 * 100).min(1000)))
        .event_callback(|event| async move { info!(%event, "nats") })
        .connect(options.nats_urls.addresses())
        .await;
    let client = match client {
        Ok(client) => client,
        Err(error) => {
            // Only a malformed address fails here (it retries otherwise).
            warn!(%error, "cannot connect to NATS; no events are followed");
            return;
        }
    };
    let context = jetstream::new(client);
    let mut said = Said::Nothing;
    loop {
        let result = tokio::select! {
            result = follow_once(&options, &context, &store, &feed, &deliverer, &metrics, &mut said) => result,
            _ = stop.wait_for(|stop| *stop) => return,
        };
        match result {
            Err(Stopped::NoStream) if said != Said::NoStream => {
                info!(
                    stream = %options.stream,
                    "waiting for the journal's stream, which the journal makes with its first event; asking every second"
                );
                said = Said::NoStream;
            }
            Err(Stopped::Failed(error)) if said != Said::Failed(error.clone()) => {
                warn!(%error, stream = %options.stream, "following the journal's events failed; trying again every second");
                said = Said::Failed(error);
            }
            _ => {}
        }
        tokio::select! {
            () = tokio::time::sleep(RETRY_NATS) => {}
            _ = stop.wait_for(|stop| *stop) => return,
        }
    }
}

async fn follow_once(
    options: &ConsumerOptions,
    context: &jetstream::Context,
    store: &Store,
    feed: &FeedCheck,
    deliverer: &Deliverer,
    metrics: &WebhooksMetrics,
    said: &mut Said,
) -> Result<(), Stopped> {
    let mut messages = open_consumer(options, context).await?;
    info!(stream = %options.stream, consumer = %options.durable, "following the journal's committed events");
    *said = Said::Following;
    let follower = Follower { options, store, feed, deliverer, metrics };
    while let Some(message) = messages.next().await {
        let message = message.map_err(|e| format!("receiving: {e}"))?;
        follower.take(&message).await?;
    }
    Err(Stopped::Failed("the consumer's messages ended".into()))
}

/// The durable consumer's messages, the consumer created (or updated to
/// this config: ack_wait, max_ack_pending — a changed key takes effect at
/// the next start).
async fn open_consumer(options: &ConsumerOptions, context: &jetstream::Context) -> Result<pull::Stream, Stopped> {
    use async_nats::jetstream::ErrorCode;
    use async_nats::jetstream::context::GetStreamErrorKind;
    let stream = context.get_stream(&options.stream).await.map_err(|e| match e.kind() {
        GetStreamErrorKind::JetStream(error) if error.error_code() == ErrorCode::STREAM_NOT_FOUND => Stopped::NoStream,
        _ => Stopped::Failed(format!("stream {}: {e}", options.stream)),
    })?;
    let config = pull::Config {
        durable_name: Some(options.durable.clone()),
        filter_subject: format!("{}.>", options.subject_prefix),
        deliver_policy: DeliverPolicy::All,
        ack_policy: AckPolicy::Explicit,
        ack_wait: options.ack_wait,
        max_ack_pending: options.max_ack_pending,
        ..Default::default()
    };
    let consumer: jetstream::consumer::PullConsumer =
        stream.create_consumer(config).await.map_err(|e| format!("consumer {}: {e}", options.durable))?;
    Ok(consumer.messages().await.map_err(|e| format!("consumer {}: {e}", options.durable))?)
}

/// What one message's records became: each one's place, and why the rest
/// were not taken (a record ahead of its battle, or a journal that could
/// not answer).
#[derive(Default)]
struct Placing {
    placed: Vec<Enqueued>,
    ahead: Option<(Entry, u64)>,
    unavailable: Option<String>,
}

/// Takes the consumer's messages: checks their records with the journal,
/// queues them for delivery, and acknowledges each message.
struct Follower<'a> {
    options: &'a ConsumerOptions,
    store: &'a Store,
    feed: &'a FeedCheck,
    deliverer: &'a Deliverer,
    metrics: &'a WebhooksMetrics,
}

impl Follower<'_> {
    async fn take(&self, message: &jetstream::Message) -> Result<(), Stopped> {
        let (options, metrics) = (self.options, self.metrics);
        let sequence = message.info().map(|info| info.stream_sequence).unwrap_or_default();
        let routed = crate::event::received(
            &options.subject_prefix,
            &message.subject,
            message.headers.as_ref(),
            &message.payload,
            sequence,
        );
        let records = match routed {
            Ok(records) => records,
            Err(error) => {
                // Not an event of the fan-out (nothing the journal
                // publishes): counted and logged, and acknowledged so that
                // it does not block the stream.
                metrics.undecodable.inc();
                warn!(%error, subject = %message.subject, "not a committed event; skipped");
                message.ack().await.map_err(|e| format!("ack: {e}"))?;
                return Ok(());
            }
        };
        let Some(first) = records.first() else {
            message.ack().await.map_err(|e| format!("ack: {e}"))?;
            return Ok(());
        };
        if !self.deliverer.serves(&first.tenant) {
            metrics.skipped_no_endpoint.inc_by(records.len() as u64);
            message.ack().await.map_err(|e| format!("ack: {e}"))?;
            return Ok(());
        }
        let Placing { placed, ahead, unavailable } = self.place(&records, message.subject.as_str(), sequence).await?;
        metrics.received.inc_by(placed.len() as u64);
        self.store.flush().await.map_err(|e| format!("store: {e}"))?;
        if let Some(why) = unavailable {
            // Neither taken nor refused: offered again once the journal
            // may answer.
            warn!(subject = %message.subject, sequence, why = %why, "cannot check a record with the journal; offered again later");
            message.ack_with(AckKind::Nak(Some(options.gap_retry))).await.map_err(|e| format!("nak: {e}"))?;
        } else if let Some((entry, expected)) = ahead {
            // Not acknowledged: JetStream offers it again once its
            // predecessors had their chance to arrive.
            metrics.out_of_order.inc();
            info!(tenant = %entry.tenant, battle = %entry.battle, version = entry.version, expected, "an event ahead of its battle; offered again later");
            message.ack_with(AckKind::Nak(Some(options.gap_retry))).await.map_err(|e| format!("nak: {e}"))?;
        } else {
            message.ack().await.map_err(|e| format!("ack: {e}"))?;
        }
        let battle = first.battle_key();
        for placed in placed {
            match placed {
                Enqueued::Queued => self.deliverer.wake(battle.clone()),
                Enqueued::ParkedBehind => {
                    metrics.parked.inc();
                }
                Enqueued::Duplicate => {
                    metrics.duplicates.inc();
                }
                Enqueued::Ahead { .. } => {}
            }
        }
        Ok(())
    }

    /// Checks one message's records with the journal and queues them, in
    /// order, until one is refused, ahead of its battle or not checkable.
    async fn place(&self, records: &[Received], subject: &str, sequence: u64) -> Result<Placing, Stopped> {
        let (options, metrics) = (self.options, self.metrics);
        let mut placing = Placing { placed: Vec::with_capacity(records.len()), ..Placing::default() };
        for (index, record) in records.iter().enumerate() {
            // Only what the journal holds is delivered (crate::feed).
            let (hash, position) = match self.feed.check(record).await.map_err(|e| format!("store: {e}"))? {
                Verdict::Taken { hash, position } => (hash, position),
                Verdict::Refused(why) => {
                    // This record and the rest of its message (which chain
                    // on it) are dropped; the real ones come on their own.
                    let dropped = records.len() - index;
                    metrics.forged.inc_by(dropped as u64);
                    warn!(
                        tenant = %record.tenant,
                        battle = %record.battle,
                        version = record.version(),
                        event_id = %record.decoded.event_id,
                        subject = %subject,
                        sequence,
                        why = %why,
                        "a record of the feed that is not the journal's; dropped, never delivered"
                    );
                    break;
                }
                Verdict::Unavailable(why) => {
                    placing.unavailable = Some(why);
                    break;
                }
            };
            let entry = record.entry(hash.as_ref(), position);
            let routed = self.store.enqueue(&entry, options.gap_wait, now_ms()).map_err(|e| format!("store: {e}"))?;
            if let Some(missing) = &routed.skipped {
                metrics.gaps.inc();
                warn!(
                    tenant = %entry.tenant,
                    battle = %entry.battle,
                    missing_from = missing.start,
                    missing_to = missing.end - 1,
                    version = entry.version,
                    gap_wait_ms = options.gap_wait.as_millis() as u64,
                    "a battle's events never arrived (gone from the stream?); delivering its later ones without them"
                );
            }
            if let Enqueued::Ahead { expected } = routed.placed {
                placing.ahead = Some((entry, expected));
                break;
            }
            if matches!(routed.placed, Enqueued::Queued | Enqueued::ParkedBehind)
                && let Some(hash) = &hash
            {
                self.feed.taken(&entry.battle_key(), entry.version, hash).map_err(|e| format!("store: {e}"))?;
            }
            placing.placed.push(routed.placed);
        }
        Ok(placing)
    }
}
