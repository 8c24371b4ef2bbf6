//! The NATS JetStream publisher.
//!
//! Each event goes to `<subject_prefix>.<tenant>.<stream id>` in the
//! JetStream stream (created when missing) with `Nats-Msg-Id` = the event id,
//! so a republish after a crash or a lost ack is dropped by JetStream's
//! duplicate window. `<tenant>` is the battle's `BattleOpened.tenant`, or `_`
//! for a battle without one, so that NATS permissions can give each tenant
//! its own subjects (`deploy/nats/`). The payload is the exact record bytes;
//! headers carry the version, global position, type and chain hash for
//! consumers that do not decode (the format is `battlelog_feed::event`).
//!
//! The URL may be a list of a cluster's nodes (`nats_url`, read by
//! [`NatsUrls`]). Credentials come in the URL (`nats://journal:<password>@host:4222`).
//! async-nats 0.51 does not read a URL's userinfo (it authenticates only with
//! what its `ConnectOptions` carry), so [`NatsUrl`] takes them out of the URL
//! and hands them over as options; the address async-nats sees, and that
//! anything logs, then holds no password.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_nats::HeaderMap;
use async_nats::jetstream::{self, stream};
use battlelog_feed::{self as feed, event::EventHeaders};
use tracing::info;

use crate::outbox::{EventPublisher, PublishError, PublishFuture};
use crate::store::OutboxEvent;

/// How long JetStream may take to acknowledge one publish before it is retried.
const ACK_TIMEOUT: Duration = Duration::from_secs(3);
/// JetStream's deduplication window: a republish within it is dropped.
const DUPLICATE_WINDOW: Duration = Duration::from_secs(600);

/// Publishes committed events to JetStream.
#[derive(Debug)]
pub struct JetStreamPublisher {
    context: jetstream::Context,
    stream_name: String,
    subject_prefix: String,
    /// Whether the JetStream stream is known to exist; reset on failure so a
    /// server that lost it (or a new one) gets it again.
    stream_ready: AtomicBool,
}

impl JetStreamPublisher {
    /// Connects in the background: it returns at once even when NATS is
    /// down, and keeps reconnecting for ever, because the journal must take
    /// appends regardless and publish once NATS is back.
    pub async fn connect(
        urls: &NatsUrls,
        stream_name: &str,
        subject_prefix: &str,
    ) -> Result<Self, async_nats::ConnectError> {
        let client = urls
            .connect_options()
            .name("battlelog-journal")
            .retry_on_initial_connect()
            .max_reconnects(None)
            .connection_timeout(Duration::from_secs(2))
            .reconnect_delay_callback(|attempts| Duration::from_millis((attempts as u64 * 100).min(1000)))
            .event_callback(|event| async move { info!(%event, "nats") })
            .connect(urls.addresses())
            .await?;
        let mut context = jetstream::new(client);
        context.set_timeout(ACK_TIMEOUT);
        Ok(Self {
            context,
            stream_name: stream_name.to_owned(),
            subject_prefix: subject_prefix.to_owned(),
            stream_ready: AtomicBool::new(false),
        })
    }

    async fn ensure_stream(&self) -> Result<(), PublishError> {
        if self.stream_ready.load(Ordering::Acquire) {
            return Ok(());
        }
        let config = stream::Config {
            name: self.stream_name.clone(),
            subjects: vec![format!("{}.>", self.subject_prefix)],
            storage: stream::StorageType::File,
            duplicate_window: DUPLICATE_WINDOW,
            ..Default::default()
        };
        self.context
            .get_or_create_stream(config)
            .await
            .map_err(|e| PublishError(format!("JetStream stream {}: {e}", self.stream_name)))?;
        self.stream_ready.store(true, Ordering::Release);
        Ok(())
    }

    async fn publish_one(&self, event: &OutboxEvent) -> Result<(), PublishError> {
        self.ensure_stream().await?;
        let record = &event.event;
        let frame = EventHeaders {
            event_id: record.event_id.clone(),
            stream_id: record.stream_id.clone(),
            version: record.version,
            position: event.global_position,
            event_type: record.event_type.clone(),
            hash: event.hash,
        };
        let mut headers = HeaderMap::new();
        for (name, value) in frame.encode() {
            headers.insert(name, value.as_str());
        }
        let subject = feed::subject::subject(&self.subject_prefix, &event.tenant, &record.stream_id);
        let result = async {
            let ack = self.context.publish_with_headers(subject, headers, event.record.clone().into()).await?;
            ack.await.map(|_| ())
        }
        .await;
        result.map_err(|e| {
            self.stream_ready.store(false, Ordering::Release);
            PublishError(format!("publish {}@{}: {e}", record.stream_id, record.version))
        })
    }
}

impl EventPublisher for JetStreamPublisher {
    fn publish<'a>(&'a self, event: &'a OutboxEvent) -> PublishFuture<'a> {
        Box::pin(self.publish_one(event))
    }
}

pub use battlelog_runtime::nats_url::{NatsUrl, NatsUrls, redact_url};
