//! The NATS JetStream provider: [`JetStreamStore`], the journal's log in one
//! replicated JetStream stream, so that several journal processes serve the
//! same battles and a Raft quorum of NATS servers keeps every acknowledged
//! append.
//!
//! # Layout
//!
//! - **One JetStream stream** (`jetstream_stream`, default
//!   `BATTLELOG_JOURNAL`) on subjects `battlelog.journal.>`: file storage,
//!   `replicas` copies, no age, count or size limit (nothing is ever
//!   discarded), deletes and purges denied (the log is append-only), and
//!   `allow_direct` off: every read goes to the stream leader through the
//!   Msg Get API (`$JS.API.STREAM.MSG.GET.<stream>`), so a read never misses
//!   an acknowledged append the way a lagging follower's direct get could.
//! - **One subject per battle**: `battlelog.journal.<tenant>.<stream id>`,
//!   `<tenant>` being the battle's `BattleOpened.tenant` as a subject token
//!   ([`crate::guard::subject_token`]; `_` for none) — so NATS permissions
//!   can give each tenant its own battles, as the fan-out subjects always
//!   did. Stream ids are already one subject token each (1–128 bytes of
//!   `[A-Za-z0-9_-]`, [`crate::limits::validate_stream_id`]); they are used
//!   as they are. A battle is found without knowing its tenant through the
//!   wildcard `battlelog.journal.*.<stream id>`, which the Msg Get API
//!   (`last_by_subj`, `next_by_subj`) accepts.
//! - **One message per planned append** (a group of records, atomic as one
//!   message is). Payload: for each record, `h(version)` (32 bytes) ‖
//!   `u32_be(len)` ‖ the exact record bytes (docs/protocol.md §4). Headers
//!   (`battlelog_feed::log`, the one home of this format): the stream id, the first version, the record count,
//!   `h(last version)` and the battle state after it (hex of
//!   [`BattleState::encode`]), so that a stream's head is its subject's last
//!   message's headers.
//!
//! # Appends
//!
//! A planned append is published with
//! `Nats-Expected-Last-Subject-Sequence` = the stream sequence of the
//! battle's last message as planned against (0 for a new battle) and
//! `Nats-Expected-Last-Subject-Sequence-Subject` =
//! `battlelog.journal.*.<stream id>` (NATS 2.11 on): JetStream stores it
//! only if that is still the battle's last message *under any tenant*, so
//! two journals racing on one battle never fork it — one wins, the other
//! gets "wrong last sequence" (10071) and answers [`Conflict`] with the head
//! it then reads — and no second `BattleOpened` under another tenant can
//! start a parallel chain. `Nats-Msg-Id` is `<stream id>:<first
//! version>:<hex h(first version)>`, unique per plan (the hash covers the
//! chain before it and the record bytes, event ids included): a publish
//! retried after a lost acknowledgement is deduplicated within JetStream's
//! duplicate window, while a different plan for the same version is not.
//! An append resolves only with the publish acknowledgement (the message is
//! stored on a quorum).
//!
//! Global positions: `stream sequence << 16 | index in the message`. They
//! increase in commit order (JetStream orders the stream), leave gaps, and
//! [`EventStore::read_all`] starts at the first event at or past the one
//! asked for. [`JetStreamStore::connect`] refuses `max_events_per_append`
//! above 65 536, which would not fit.
//!
//! # Idempotency keys and the index
//!
//! Keys live in the records (`JournalRecord.idempotency_key`), so they last
//! as long as the log, far past any duplicate window. Each journal keeps, per
//! battle it touched, an index — the head, every key with its version and
//! [`crate::record::fingerprint`], which message holds which versions —
//! built by reading the battle's subject once and brought up to date by
//! reading on from its last known message before every `head` answer (so
//! that a head, and an expected version checked against it, are never
//! stale). `idempotency` answers from the index as it is: the planner reads
//! the head first, and the keys it then sees are at least as new as that
//! head; a key committed by another journal after it has moved the head, so
//! the plan conflicts and is made again. At most `jetstream_cache_streams`
//! battles are indexed; past that the least recently used is dropped (and
//! read again when next needed).
//!
//! # Changes
//!
//! [`EventStore::changes`] moves on every message JetStream *stores* on
//! `battlelog.journal.>`: an ordered push consumer (headers only, new
//! messages only) delivers them after they are stored — unlike a core
//! subscription, which would also see publishes JetStream refuses, and could
//! see one before it is readable. It moves too when this journal's own
//! append is acknowledged, and whenever the consumer is (re)created, since
//! something may have been stored meanwhile.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_nats::jetstream::consumer::{DeliverPolicy, push};
use async_nats::jetstream::context::PublishErrorKind;
use async_nats::jetstream::message::StreamMessage;
use async_nats::jetstream::stream::{self, RawMessageErrorKind};
use async_nats::jetstream::{self};
use async_nats::{HeaderMap, ServerAddr};
use battlelog_feed::position::position;
use battlelog_feed::{self as feed, log::LogMessage};
use battlelog_proto::v1::{BattleEvent, battle_event::Event};
use prost::Message as _;
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};
use tokio_stream::StreamExt;
use tracing::{info, warn};

use super::{
    Conflict, EventStore, Head, KeyEntry, Page, PlannedAppend, StorageError, StorageErrorKind, StoreFuture, StoredEvent,
};
use crate::guard::{self, BattleState};
use crate::limits::MAX_RECORD_OVERHEAD_BYTES;
use crate::record::{self, Hash};
use battlelog_runtime::nats_url::NatsUrls;

/// The engine name in its errors ([`StorageError::engine`]).
pub const ENGINE: &str = "jetstream";

/// The subjects of the journal's stream: `battlelog.journal.<tenant>.<stream id>`.
pub use battlelog_feed::subject::LOG_PREFIX as SUBJECT_PREFIX;
/// The default JetStream stream name.
pub const DEFAULT_STREAM: &str = "BATTLELOG_JOURNAL";
pub use battlelog_feed::position::MAX_EVENTS_PER_MESSAGE;
/// Room the headers of one message take, at most (the stream id at its limit,
/// two hashes in hex, the state in hex, numbers, the header names).
const HEADER_BYTES: usize = 2048;
/// How often a publish is tried before the append's outcome is reported
/// unknown (each waits up to the configured timeout; the same message id
/// makes a retry of a stored publish a no-op).
const PUBLISH_ATTEMPTS: u32 = 3;

/// How to reach and shape the journal's JetStream stream.
#[derive(Debug, Clone)]
pub struct JetStreamOptions {
    /// NATS URLs, comma-separated (any node of a cluster); credentials in
    /// the userinfo of the first that has some.
    pub nats_urls: String,
    /// The JetStream stream (created when missing).
    pub stream: String,
    /// Its replicas when created (1, or 3 on a three-node cluster).
    pub replicas: usize,
    /// Most events one append holds (`max_events_per_append`).
    pub max_events_per_append: usize,
    /// Largest payload of one event (`max_payload_bytes`): an append must
    /// be able to hold one.
    pub max_payload_bytes: usize,
    /// Largest sum of payload bytes of one append (`max_append_bytes`): with
    /// the count, what the largest message weighs, which NATS's
    /// `max_payload` must allow. Lowered at connect to what the server
    /// takes ([`JetStreamStore::max_append_bytes`]).
    pub max_append_bytes: usize,
    /// Most battles whose index is kept in memory.
    pub cache_streams: usize,
    /// How long one JetStream request (a publish acknowledgement, a read) may take.
    pub timeout: Duration,
    /// How long the start waits for a cluster that cannot yet find or
    /// create the stream (see `stream_at_start`).
    pub start_wait: Duration,
}

impl JetStreamOptions {
    /// Defaults for everything but the URLs.
    pub fn new(nats_urls: impl Into<String>) -> Self {
        let limits = crate::limits::Limits::default();
        Self {
            nats_urls: nats_urls.into(),
            stream: DEFAULT_STREAM.to_owned(),
            replicas: 1,
            max_events_per_append: limits.max_events_per_append,
            max_payload_bytes: limits.max_payload_bytes,
            max_append_bytes: limits.max_append_bytes,
            cache_streams: 10_000,
            timeout: Duration::from_secs(5),
            start_wait: Duration::from_secs(60),
        }
    }

    /// The most bytes one append's message may weigh, headers included.
    pub fn max_message_bytes(&self) -> usize {
        self.max_append_bytes + self.message_overhead_bytes()
    }

    /// What one append's message weighs besides its payloads, at most: each
    /// of `max_events_per_append` records' own fields at their limits and
    /// its framing, and the headers.
    pub fn message_overhead_bytes(&self) -> usize {
        self.max_events_per_append * (MAX_RECORD_OVERHEAD_BYTES + feed::log::RECORD_FRAMING) + HEADER_BYTES
    }

    /// The `max_append_bytes` under which the largest append is one message
    /// a server of `max_payload` takes: the configured one when it fits,
    /// else what fits (the second value: whether it was lowered); an error
    /// naming both when not even one event of `max_payload_bytes` would.
    pub fn fit_under(&self, max_payload: usize) -> Result<(usize, bool), String> {
        let room = max_payload.saturating_sub(self.message_overhead_bytes());
        if room < self.max_payload_bytes.min(self.max_append_bytes) {
            return Err(format!(
                "NATS max_payload is {max_payload} bytes: under it one append's payloads may weigh at most {room} \
                 (its {} records' own fields and the headers take {}), less than max_payload_bytes {}: raise \
                 max_payload in the NATS config, or lower max_payload_bytes or max_events_per_append",
                self.max_events_per_append,
                self.message_overhead_bytes(),
                self.max_payload_bytes
            ));
        }
        Ok((self.max_append_bytes.min(room), room < self.max_append_bytes))
    }
}

/// The journal's log in a NATS JetStream stream (see the module doc).
#[derive(Debug, Clone)]
pub struct JetStreamStore {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// `max_append_bytes` as fitted under the server's `max_payload`.
    max_append_bytes: usize,
    client: async_nats::Client,
    context: jetstream::Context,
    stream: stream::Stream,
    cache: Mutex<Cache>,
    changes: watch::Sender<u64>,
    watcher: Mutex<Option<JoinHandle<()>>>,
    closed: AtomicBool,
}

/// A log across the network that does not answer is an outage — a leader
/// election, NATS restarting — not a bug: transient (the caller retries, its
/// idempotency keys making that safe).
fn storage(e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> StorageError {
    StorageError::engine_error(StorageErrorKind::Transient, ENGINE, e)
}

fn corrupt(stream_id: &str, version: u64, reason: impl Into<String>) -> StorageError {
    StorageError::corrupt(ENGINE, stream_id, version, reason)
}

/// A configuration this store cannot work with, naming the key.
fn invalid(field: &str, message: impl std::fmt::Display) -> StorageError {
    StorageError::fatal(ENGINE, format!("invalid {field}: {message}"))
}

/// `battlelog.journal.*.<stream id>`: a battle's subject under any tenant.
fn battle_filter(stream_id: &str) -> String {
    feed::subject::battle_filter(SUBJECT_PREFIX, stream_id)
}

/// The connection: every URL of the list, with its login (async-nats takes
/// it as options, not from a URL).
fn connect_options(urls: &str) -> Result<(async_nats::ConnectOptions, Vec<ServerAddr>), StorageError> {
    let urls = NatsUrls::parse(urls).map_err(|e| invalid("nats_url", e))?;
    Ok((urls.connect_options(), urls.addresses()))
}

/// `major.minor` of a server version string (`2.12.8`).
fn server_version(version: &str) -> (u32, u32) {
    let mut parts = version.trim_start_matches('v').split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

impl JetStreamStore {
    /// Connects, checks the server can hold this journal's appends, and
    /// creates the stream when missing (an existing one is used as it is,
    /// provided it takes the journal's subjects).
    pub async fn connect(options: JetStreamOptions) -> Result<Self, StorageError> {
        options.check()?;
        let client = connect_client(&options).await?;
        let server = client.server_info();
        if server_version(&server.version) < (2, 11) {
            return Err(storage(format!(
                "nats-server {} is too old: the JetStream journal needs 2.11 or later (Nats-Expected-Last-Subject-Sequence-Subject)",
                server.version
            )));
        }
        // A stock nats-server's max_payload (1 MiB) is below the largest
        // append at the default limits: the appends are fitted under it
        // rather than refused, and a smaller configured limit is kept.
        let (max_append_bytes, lowered) = options.fit_under(server.max_payload).map_err(storage)?;
        if lowered {
            info!(
                "NATS max_payload is {} bytes: max_append_bytes lowered from {} to {max_append_bytes}, so that the \
                 largest append ({} events) is one message the server takes",
                server.max_payload, options.max_append_bytes, options.max_events_per_append
            );
        }
        let mut context = jetstream::new(client.clone());
        context.set_timeout(options.timeout);
        let config = stream_config(&options);
        let (stream, info) = stream_at_start(&context, config, options.start_wait).await?;
        if !info.config.subjects.iter().any(|s| s == &format!("{SUBJECT_PREFIX}.>")) {
            return Err(storage(format!(
                "JetStream stream {} exists with subjects {:?}, not {SUBJECT_PREFIX}.>",
                options.stream, info.config.subjects
            )));
        }
        if info.config.num_replicas != options.replicas {
            warn!(
                stream = %options.stream,
                existing = info.config.num_replicas,
                configured = options.replicas,
                "the JetStream stream exists with other replicas; using it as it is"
            );
        }
        let (changes, _) = watch::channel(0);
        let inner = Arc::new(Inner {
            max_append_bytes,
            client,
            context,
            stream,
            cache: Mutex::new(Cache::new(options.cache_streams.max(1))),
            changes,
            watcher: Mutex::new(None),
            closed: AtomicBool::new(false),
        });
        let watcher = tokio::spawn(watch_changes(Arc::downgrade(&inner), options.stream.clone()));
        *inner.watcher.lock().unwrap_or_else(|e| e.into_inner()) = Some(watcher);
        Ok(Self { inner })
    }
}

impl JetStreamOptions {
    /// The limits a JetStream journal can keep at all.
    fn check(&self) -> Result<(), StorageError> {
        if self.max_events_per_append > MAX_EVENTS_PER_MESSAGE {
            return Err(invalid(
                "max_events_per_append",
                format!(
                    "{} exceeds {MAX_EVENTS_PER_MESSAGE}, the most events one JetStream message can number",
                    self.max_events_per_append
                ),
            ));
        }
        if !(1..=5).contains(&self.replicas) {
            return Err(invalid("replicas", format!("{} is not in 1..=5 (JetStream's range)", self.replicas)));
        }
        Ok(())
    }
}

/// The NATS connection of the journal, failing over along the URL list.
async fn connect_client(options: &JetStreamOptions) -> Result<async_nats::Client, StorageError> {
    let (connect, addresses) = connect_options(&options.nats_urls)?;
    let client = connect
        .name("battlelog-journal")
        .connection_timeout(options.timeout)
        .request_timeout(Some(options.timeout))
        // A server that stops answering without closing its connections
        // (frozen, or cut off by a partition) is left for another of the
        // list once two pings go unanswered — at the default ping
        // interval of two minutes this journal would stall that long.
        .ping_interval((options.timeout / 2).max(Duration::from_millis(50)))
        .max_reconnects(None)
        .reconnect_delay_callback(|attempts| Duration::from_millis((attempts as u64 * 100).min(1000)))
        .event_callback(|event| async move { info!(%event, "nats") })
        .connect(addresses)
        .await
        .map_err(storage)?;
    Ok(client)
}

/// The journal's stream as it is created when missing: every subject of
/// the journal, kept for ever, never deleted or purged.
fn stream_config(options: &JetStreamOptions) -> stream::Config {
    stream::Config {
        name: options.stream.clone(),
        subjects: vec![format!("{SUBJECT_PREFIX}.>")],
        storage: stream::StorageType::File,
        num_replicas: options.replicas,
        max_messages: -1,
        max_bytes: -1,
        max_messages_per_subject: -1,
        max_age: Duration::ZERO,
        max_message_size: -1,
        discard: stream::DiscardPolicy::New,
        deny_delete: true,
        deny_purge: true,
        allow_direct: false,
        ..Default::default()
    }
}

/// Finds or creates the journal's stream, waiting up to `wait` while the
/// cluster cannot answer yet: a cluster started a moment ago has no meta
/// leader, a node or two of an R3 cluster may still be joining, and under
/// load the first requests time out. Operators start the journal with (or
/// just after) the cluster, so that is a wait, said once, not a failed
/// start; anything else (a bad name, refused rights) ends the start at once.
async fn stream_at_start(
    context: &jetstream::Context,
    config: stream::Config,
    wait: Duration,
) -> Result<(stream::Stream, stream::Info), StorageError> {
    let deadline = tokio::time::Instant::now() + wait;
    let mut pause = Duration::from_millis(100);
    let mut said = false;
    loop {
        let found = match context.get_or_create_stream(config.clone()).await {
            Ok(mut stream) => match stream.info().await {
                Ok(info) => {
                    let info = info.clone();
                    Ok((stream, info))
                }
                Err(e) => Err((e.to_string(), matches!(e.kind(), jetstream::context::RequestErrorKind::TimedOut))),
            },
            Err(e) => Err((e.to_string(), cluster_not_ready(&e))),
        };
        match found {
            Ok(found) => {
                if said {
                    info!(stream = %config.name, "the JetStream cluster answered; the stream is in place");
                }
                return Ok(found);
            }
            Err((error, true)) if tokio::time::Instant::now() + pause <= deadline => {
                if !said {
                    warn!(
                        stream = %config.name,
                        %error,
                        wait_ms = wait.as_millis() as u64,
                        "the JetStream cluster cannot place the stream yet; waiting (jetstream_start_wait_ms)"
                    );
                    said = true;
                }
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(2));
            }
            Err((error, transient)) => {
                let waited = if transient && !wait.is_zero() {
                    format!(" (still so after jetstream_start_wait_ms = {} ms)", wait.as_millis())
                } else if transient {
                    " (jetstream_start_wait_ms = 0: no wait)".to_owned()
                } else {
                    String::new()
                };
                return Err(storage(format!("cannot find or create the stream {}: {error}{waited}", config.name)));
            }
        }
    }
}

/// Whether `e` is a cluster that is not ready yet, rather than a refusal
/// that waiting would not change.
fn cluster_not_ready(e: &jetstream::context::CreateStreamError) -> bool {
    use jetstream::ErrorCode;
    use jetstream::context::CreateStreamErrorKind as Kind;
    match e.kind() {
        Kind::TimedOut | Kind::JetStreamUnavailable => true,
        Kind::JetStream(error) => [
            ErrorCode::CLUSTER_NOT_AVAILABLE,
            ErrorCode::CLUSTER_NO_PEERS,
            ErrorCode::INSUFFICIENT_RESOURCES,
            ErrorCode::CLUSTER_INCOMPLETE,
            ErrorCode::CLUSTER_NOT_LEADER,
            ErrorCode::CLUSTER_NOT_ACTIVE,
            ErrorCode::CLUSTER_NOT_ASSIGNED,
        ]
        .contains(&error.error_code()),
        _ => false,
    }
}

impl JetStreamStore {
    /// The most payload bytes one append may carry on this server: the
    /// configured `max_append_bytes`, or less where the server's
    /// `max_payload` is smaller than the largest append would weigh. The
    /// journal takes appends up to this, so none is refused by NATS.
    pub fn max_append_bytes(&self) -> usize {
        self.inner.max_append_bytes
    }
}

impl Drop for Inner {
    /// A store dropped without [`EventStore::close`] stops its watcher too
    /// (the watcher holds only a weak reference, but waits on NATS).
    fn drop(&mut self) {
        if let Some(watcher) = self.watcher.get_mut().unwrap_or_else(|e| e.into_inner()).take() {
            watcher.abort();
        }
    }
}

/// Bumps `changes` for every message the stream stores (see the module doc).
async fn watch_changes(inner: std::sync::Weak<Inner>, stream_name: String) {
    let mut failures = 0u64;
    loop {
        let Some(store) = inner.upgrade() else { return };
        let result: Result<(), Box<dyn std::error::Error + Send + Sync>> = async {
            let stream = store.context.get_stream_no_info(&stream_name).await?;
            let consumer = stream
                .create_consumer(push::OrderedConfig {
                    deliver_subject: store.client.new_inbox(),
                    filter_subject: format!("{SUBJECT_PREFIX}.>"),
                    deliver_policy: DeliverPolicy::New,
                    headers_only: true,
                    ..Default::default()
                })
                .await?;
            let mut messages = consumer.messages().await?;
            // Something may have been stored while there was no consumer.
            store.changes.send_modify(|n| *n += 1);
            failures = 0;
            let changes = store.changes.clone();
            drop(store);
            while let Some(message) = messages.next().await {
                message?;
                changes.send_modify(|n| *n += 1);
            }
            Ok(())
        }
        .await;
        if let Err(e) = result {
            warn!(error = %e, "watching the journal stream for changes; retrying");
        }
        failures += 1;
        tokio::time::sleep(Duration::from_millis((failures * 100).min(2000))).await;
    }
}

// ----------------------------------------------------------------------------
// Messages

/// One journal message (its format is the feed's, `battlelog_feed::log`).
type JournalMessage = LogMessage;

/// Decodes a message of the journal's stream; the error says what is wrong.
fn decode_message(message: &StreamMessage) -> Result<JournalMessage, feed::FrameError> {
    LogMessage::decode(|name| message.headers.get(name).map(|v| v.as_str().to_owned()), &message.payload)
}

/// The battle state a message's headers carry, if any.
fn message_state(message: &JournalMessage) -> Result<Option<BattleState>, String> {
    match &message.state {
        None => Ok(None),
        Some(bytes) => BattleState::decode(bytes)
            .map(Some)
            .ok_or_else(|| format!("header {} is not a battle state", feed::headers::STATE)),
    }
}

/// The subject token of the tenant a battle's version 0 (its `BattleOpened`) names.
fn tenant_of_opening(record_bytes: &[u8]) -> String {
    let tenant = record::decode(record_bytes)
        .ok()
        .and_then(|r| BattleEvent::decode(r.payload.as_slice()).ok())
        .and_then(|e| match e.event {
            Some(Event::BattleOpened(opened)) => Some(opened.tenant),
            _ => None,
        })
        .unwrap_or_default();
    guard::subject_token(&tenant).into_owned()
}

/// Checks that `message` chains on `previous` (docs/protocol.md §4): each record
/// claims this battle and its version, each stored hash is
/// `SHA-256(h(v − 1) || record_v)`, and the head hash is the last record's.
/// Returns the idempotency keys of its records; or the first version that
/// does not chain, and why.
fn chain_link(
    stream_id: &str,
    mut previous: Hash,
    message: &JournalMessage,
) -> Result<Vec<(String, KeyEntry)>, (u64, String)> {
    let mut keys = Vec::new();
    for (i, (stored_hash, bytes)) in message.records.iter().enumerate() {
        let version = message.first_version + i as u64;
        let decoded = record::decode(bytes).map_err(|e| (version, format!("its record does not decode: {e}")))?;
        if decoded.stream_id != stream_id || decoded.version != version {
            return Err((
                version,
                format!("its record claims stream {:?} version {}", decoded.stream_id, decoded.version),
            ));
        }
        let hash = record::chain_hash(&previous, bytes);
        if hash != *stored_hash {
            return Err((version, format!("the hash of version {version} is not SHA-256(previous hash || record)")));
        }
        previous = hash;
        if !decoded.idempotency_key.is_empty() {
            let fingerprint = record::fingerprint(&decoded.event_type, &decoded.payload);
            keys.push((decoded.idempotency_key, KeyEntry { version, fingerprint }));
        }
    }
    if message.last_hash != previous {
        return Err((message.last_version(), "its head hash is not its last record's".into()));
    }
    Ok(keys)
}

// ----------------------------------------------------------------------------
// The per-battle index

/// What this journal knows of one battle, read from its subject.
#[derive(Debug, Default)]
struct StreamIndex {
    /// The battle's literal subject, once a message is known.
    subject: Option<String>,
    /// Stream sequence of the last message read (0: none).
    last_seq: u64,
    /// The head after it.
    head: Option<Head>,
    /// Idempotency keys.
    keys: HashMap<String, KeyEntry>,
    /// (first version, stream sequence) of each message, by version.
    messages: Vec<(u64, u64)>,
}

impl StreamIndex {
    /// Adds the battle's next message.
    fn apply(
        &mut self,
        stream_id: &str,
        sequence: u64,
        subject: &str,
        message: &JournalMessage,
    ) -> Result<(), StorageError> {
        let expected = self.head.map_or(0, |h| h.version + 1);
        if message.stream_id != stream_id || message.first_version != expected {
            return Err(corrupt(
                stream_id,
                expected,
                format!(
                    "message {sequence} holds {}@{} where version {expected} was due",
                    message.stream_id, message.first_version
                ),
            ));
        }
        // Anyone who may publish on the battle's subject (the journal's NATS
        // user) could add a message here, and its headers say nothing true
        // by themselves: unless it chains on the head, the head stays where
        // it was, and nothing is appended on top of it.
        let previous = self.head.map_or_else(|| record::genesis_hash(stream_id), |h| h.hash);
        let keys = chain_link(stream_id, previous, message).map_err(|(version, why)| {
            corrupt(
                stream_id,
                version,
                format!("message {sequence} on {subject} does not chain: {why}; nothing is appended on top of it"),
            )
        })?;
        let state = message_state(message).map_err(|why| {
            corrupt(stream_id, message.last_version(), format!("message {sequence} on {subject}: {why}"))
        })?;
        self.keys.extend(keys);
        self.messages.push((message.first_version, sequence));
        self.subject = Some(subject.to_owned());
        self.last_seq = sequence;
        self.head = Some(Head { version: message.last_version(), hash: message.last_hash, state });
        Ok(())
    }

    /// The stream sequence of the message whose last version is `version`.
    fn sequence_ending_at(&self, version: u64) -> Option<u64> {
        let i = self.messages.partition_point(|(first, _)| *first <= version);
        let (_, seq) = *self.messages.get(i.checked_sub(1)?)?;
        let last = self.messages.get(i).map_or(self.head?.version, |(next_first, _)| next_first - 1);
        (last == version).then_some(seq)
    }

    /// The stream sequences of the known messages from the one holding
    /// `version` on (none when `version` is past the head).
    fn sequences_from(&self, version: u64) -> impl Iterator<Item = u64> + '_ {
        let past_head = self.head.is_none_or(|h| version > h.version);
        let i = self.messages.partition_point(|(first, _)| *first <= version).saturating_sub(1);
        let from = if past_head { self.messages.len() } else { i };
        self.messages[from..].iter().map(|(_, seq)| *seq)
    }
}

#[derive(Debug)]
struct Slot {
    index: tokio::sync::Mutex<StreamIndex>,
    used: AtomicU64,
}

/// The indexes, at most `capacity`, the least recently used dropped first.
#[derive(Debug)]
struct Cache {
    slots: HashMap<String, Arc<Slot>>,
    tick: u64,
    capacity: usize,
}

impl Cache {
    fn new(capacity: usize) -> Self {
        Self { slots: HashMap::new(), tick: 0, capacity }
    }

    fn slot(&mut self, stream_id: &str) -> Arc<Slot> {
        self.tick += 1;
        if let Some(slot) = self.slots.get(stream_id) {
            slot.used.store(self.tick, Ordering::Relaxed);
            return slot.clone();
        }
        if self.slots.len() >= self.capacity {
            // One scan frees a tenth of the room, so that eviction costs
            // O(1) per insertion on average.
            let mut ages: Vec<(u64, String)> =
                self.slots.iter().map(|(k, s)| (s.used.load(Ordering::Relaxed), k.clone())).collect();
            ages.sort_unstable();
            for (_, key) in ages.into_iter().take((self.capacity / 10).max(1)) {
                self.slots.remove(&key);
            }
        }
        let slot =
            Arc::new(Slot { index: tokio::sync::Mutex::new(StreamIndex::default()), used: AtomicU64::new(self.tick) });
        self.slots.insert(stream_id.to_owned(), slot.clone());
        slot
    }
}

// ----------------------------------------------------------------------------
// Reads and appends

enum Published {
    Stored(u64),
    WrongLastSequence,
}

/// Most messages a read asks for at once.
const READ_AHEAD: usize = 32;

/// Messages in stream order, read ahead: the Msg Get API answers one
/// message per request, so a long read asks for several at once — by exact
/// sequence, where the sequences are known (a battle's, from its index) or
/// dense (the whole log: every sequence of the stream is a journal message,
/// since nothing is deleted) — starting with one and doubling while that
/// pays, so that a read at the head of the log costs one request. Past
/// them, or at the first hole, it goes on one `next_by_subj` at a time.
struct Messages<'a> {
    inner: &'a Inner,
    /// `next_by_subj` filter.
    filter: String,
    /// Exact sequences to read first.
    known: VecDeque<u64>,
    /// Whether every sequence from `after` on holds a message of `filter`.
    dense: bool,
    /// The next sequence to look from.
    after: u64,
    window: usize,
    ready: VecDeque<StreamMessage>,
    done: bool,
}

impl<'a> Messages<'a> {
    fn new(inner: &'a Inner, filter: String, after: u64) -> Self {
        Self {
            inner,
            filter,
            known: VecDeque::new(),
            dense: false,
            after: after.max(1),
            window: 1,
            ready: VecDeque::new(),
            done: false,
        }
    }

    async fn next(&mut self) -> Result<Option<StreamMessage>, StorageError> {
        loop {
            if let Some(message) = self.ready.pop_front() {
                return Ok(Some(message));
            }
            if self.done {
                return Ok(None);
            }
            let exact: Vec<u64> = if !self.known.is_empty() {
                let n = self.window.min(self.known.len());
                self.known.drain(..n).collect()
            } else if self.dense && self.window > 1 {
                (self.after..self.after + self.window as u64).collect()
            } else {
                Vec::new()
            };
            if exact.is_empty() {
                match self.inner.next_message(&self.filter, self.after).await? {
                    Some(message) => {
                        self.after = message.sequence + 1;
                        self.ready.push_back(message);
                        self.window = (self.window * 2).min(READ_AHEAD);
                    }
                    None => self.done = true,
                }
                continue;
            }
            let mut complete = true;
            for message in self.inner.messages_at(&exact).await? {
                match message {
                    Some(message) if complete => {
                        self.after = message.sequence + 1;
                        self.ready.push_back(message);
                    }
                    // What follows a hole is read by subject (it skips holes).
                    _ => complete = false,
                }
            }
            if complete {
                self.window = (self.window * 2).min(READ_AHEAD);
            } else {
                self.known.clear();
                self.dense = false;
            }
        }
    }
}

impl Inner {
    fn slot(&self, stream_id: &str) -> Arc<Slot> {
        self.cache.lock().unwrap_or_else(|e| e.into_inner()).slot(stream_id)
    }

    /// The first message at or after `sequence` on `subject`, if any.
    async fn next_message(&self, subject: &str, sequence: u64) -> Result<Option<StreamMessage>, StorageError> {
        match self.stream.raw_message_builder().sequence(sequence.max(1)).next_by_subject(subject).send().await {
            Ok(message) => Ok(Some(message)),
            Err(e) if matches!(e.kind(), RawMessageErrorKind::NoMessageFound) => Ok(None),
            Err(e) => Err(storage(e)),
        }
    }

    /// The messages at these sequences, asked for at once, in order (`None`
    /// where there is none).
    async fn messages_at(&self, sequences: &[u64]) -> Result<Vec<Option<StreamMessage>>, StorageError> {
        if let [sequence] = sequences {
            return Ok(vec![self.message_at(*sequence).await?]);
        }
        let mut tasks = JoinSet::new();
        for (i, &sequence) in sequences.iter().enumerate() {
            let stream = self.stream.clone();
            tasks.spawn(async move { (i, stream.get_raw_message(sequence).await) });
        }
        let mut out: Vec<Option<StreamMessage>> = sequences.iter().map(|_| None).collect();
        while let Some(joined) = tasks.join_next().await {
            let (i, result) = joined.map_err(storage)?;
            match result {
                Ok(message) => out[i] = Some(message),
                Err(e) if matches!(e.kind(), RawMessageErrorKind::NoMessageFound) => {}
                Err(e) => return Err(storage(e)),
            }
        }
        Ok(out)
    }

    async fn message_at(&self, sequence: u64) -> Result<Option<StreamMessage>, StorageError> {
        match self.stream.get_raw_message(sequence).await {
            Ok(message) => Ok(Some(message)),
            Err(e) if matches!(e.kind(), RawMessageErrorKind::NoMessageFound) => Ok(None),
            Err(e) => Err(storage(e)),
        }
    }

    /// Reads the battle's messages past what `index` knows.
    async fn refresh(&self, stream_id: &str, index: &mut StreamIndex) -> Result<(), StorageError> {
        // Once a battle's subject is known, its literal subject (a battle has
        // one: appends are checked across every tenant's) is the cheaper
        // lookup for the server.
        let filter = index.subject.clone().unwrap_or_else(|| battle_filter(stream_id));
        while let Some(message) = self.next_message(&filter, index.last_seq + 1).await? {
            let decoded = decode_message(&message).map_err(|e| {
                corrupt(
                    stream_id,
                    index.head.map_or(0, |h| h.version + 1),
                    format!("message {} on {} is not a journal message: {e}", message.sequence, message.subject),
                )
            })?;
            index.apply(stream_id, message.sequence, message.subject.as_str(), &decoded)?;
        }
        Ok(())
    }

    async fn head(&self, stream_id: &str) -> Result<Option<Head>, StorageError> {
        let slot = self.slot(stream_id);
        let mut index = slot.index.lock().await;
        self.refresh(stream_id, &mut index).await?;
        Ok(index.head)
    }

    async fn idempotency(&self, stream_id: &str, keys: &[String]) -> Result<Vec<Option<KeyEntry>>, StorageError> {
        let slot = self.slot(stream_id);
        let mut index = slot.index.lock().await;
        // The planner reads the head (which brings the index up to date)
        // before the keys, and an index only moves forward: the keys are at
        // least as new as that head, which is all a plan needs (a key
        // committed after it has moved the head, so the plan conflicts). An
        // index dropped and made again in between is read whole here.
        if index.last_seq == 0 {
            self.refresh(stream_id, &mut index).await?;
        }
        Ok(keys.iter().map(|k| index.keys.get(k).copied()).collect())
    }

    /// Appends the planned appends of one battle, in order.
    async fn append_stream(
        &self,
        appends: Vec<(usize, PlannedAppend)>,
    ) -> Vec<(usize, Result<Result<Vec<u64>, Conflict>, StorageError>)> {
        let mut out = Vec::with_capacity(appends.len());
        for (i, append) in appends {
            let result = self.append_one(append).await;
            out.push((i, result));
        }
        out
    }

    async fn append_one(&self, append: PlannedAppend) -> Result<Result<Vec<u64>, Conflict>, StorageError> {
        if self.closed.load(Ordering::Acquire) {
            return Err(StorageError::closed(ENGINE));
        }
        let stream_id = append.stream_id.as_str();
        let (Some(first), Some(last_hash)) = (append.records.first(), append.last_hash()) else {
            return Ok(Ok(Vec::new()));
        };
        let slot = self.slot(stream_id);
        let mut index = slot.index.lock().await;
        let actual = index.head.map(|h| h.version);
        if append.expected > actual || (append.expected.is_some() && index.subject.is_none()) {
            // Planned against a head this index has not seen yet.
            self.refresh(stream_id, &mut index).await?;
        }
        let actual = index.head.map(|h| h.version);
        if append.expected != actual {
            return Ok(Err(Conflict { actual }));
        }
        let expected_seq = match append.expected {
            None => 0,
            Some(version) => match index.sequence_ending_at(version) {
                Some(seq) => seq,
                None => return Ok(Err(Conflict { actual })),
            },
        };
        let subject = match &index.subject {
            Some(subject) => subject.clone(),
            None => feed::subject::subject(SUBJECT_PREFIX, &tenant_of_opening(&first.bytes), stream_id),
        };
        let first_version = append.first_version();
        let message = JournalMessage {
            stream_id: stream_id.to_owned(),
            first_version,
            records: append.records.iter().map(|r| (r.hash, r.bytes.clone())).collect(),
            last_hash,
            state: Some(append.state.encode().to_vec()),
        };
        // Never written unless it chains on the head it was planned on: the
        // index, and every journal reading the log, would refuse it.
        let previous = index.head.map_or_else(|| record::genesis_hash(stream_id), |h| h.hash);
        if let Err((version, why)) = chain_link(stream_id, previous, &message) {
            return Err(corrupt(stream_id, version, format!("the planned append does not chain: {why}; not written")));
        }
        let mut headers = HeaderMap::new();
        let msg_id = message.msg_id().unwrap_or_default();
        headers.insert(feed::headers::MSG_ID, msg_id.as_str());
        headers.insert(feed::headers::EXPECTED_LAST_SUBJECT_SEQUENCE, expected_seq.to_string().as_str());
        headers.insert(feed::headers::EXPECTED_LAST_SUBJECT_SEQUENCE_SUBJECT, battle_filter(stream_id).as_str());
        for (name, value) in message.headers() {
            headers.insert(name, value.as_str());
        }
        let payload = message.payload();
        match self.publish(&subject, headers, payload).await? {
            Published::WrongLastSequence => {
                self.refresh(stream_id, &mut index).await?;
                Ok(Err(Conflict { actual: index.head.map(|h| h.version) }))
            }
            Published::Stored(sequence) => {
                if index.last_seq == expected_seq && sequence > expected_seq {
                    index.apply(stream_id, sequence, &subject, &message)?;
                } else {
                    // A retry found its first attempt stored: read what is there.
                    self.refresh(stream_id, &mut index).await?;
                }
                drop(index);
                self.changes.send_modify(|n| *n += 1);
                Ok(Ok((0..message.records.len()).map(|i| position(sequence, i)).collect()))
            }
        }
    }

    /// Publishes and waits for the acknowledgement, retrying with the same
    /// message id while the outcome is unknown.
    async fn publish(&self, subject: &str, headers: HeaderMap, payload: Vec<u8>) -> Result<Published, StorageError> {
        let mut last_error = None;
        for _ in 0..PUBLISH_ATTEMPTS {
            let result = async {
                self.context
                    .publish_with_headers(subject.to_owned(), headers.clone(), payload.clone().into())
                    .await?
                    .await
            }
            .await;
            match result {
                Ok(ack) => return Ok(Published::Stored(ack.sequence)),
                Err(e) if matches!(e.kind(), PublishErrorKind::WrongLastSequence) => {
                    return Ok(Published::WrongLastSequence);
                }
                Err(e) if matches!(e.kind(), PublishErrorKind::MaxPayloadExceeded) => return Err(storage(e)),
                Err(e) => {
                    warn!(%subject, error = %e, "JetStream publish failed; retrying with the same message id");
                    last_error = Some(e);
                }
            }
        }
        Err(storage(last_error.map_or_else(|| "publish failed".to_owned(), |e| e.to_string())))
    }

    async fn read_stream(
        &self,
        stream_id: &str,
        from_version: u64,
        page: Page,
    ) -> Result<Vec<StoredEvent>, StorageError> {
        let Page { max_count, max_bytes, weigh } = page;
        let mut out = Vec::new();
        if max_count == 0 {
            return Ok(out);
        }
        let mut messages = {
            let slot = self.slot(stream_id);
            let mut index = slot.index.lock().await;
            if index.last_seq == 0 {
                self.refresh(stream_id, &mut index).await?;
            }
            let filter = index.subject.clone().unwrap_or_else(|| battle_filter(stream_id));
            let mut messages = Messages::new(self, filter, index.last_seq + 1);
            // Each message holds at least one event: no more than
            // `max_count` of them are needed.
            messages.known = index.sequences_from(from_version).take(max_count).collect();
            messages
        };
        let mut bytes = 0usize;
        let mut expected = None::<u64>;
        while let Some(message) = messages.next().await? {
            let decoded = decode_message(&message)
                .map_err(|e| corrupt(stream_id, expected.unwrap_or(from_version), e.to_string()))?;
            if let Some(expected) = expected
                && decoded.first_version != expected
            {
                return Err(corrupt(stream_id, expected, "record missing"));
            }
            for (i, (hash, record_bytes)) in decoded.records.iter().enumerate() {
                let version = decoded.first_version + i as u64;
                if version < from_version {
                    continue;
                }
                let event = record::decode(record_bytes)
                    .map_err(|e| corrupt(stream_id, version, format!("record does not decode: {e}")))?;
                if event.version != version || event.stream_id != stream_id {
                    return Err(corrupt(stream_id, version, "record claims another stream or version"));
                }
                let weight = weigh(record_bytes.len());
                if out.len() >= max_count || (!out.is_empty() && bytes + weight > max_bytes) {
                    return Ok(out);
                }
                bytes += weight;
                out.push(StoredEvent {
                    global_position: position(message.sequence, i),
                    hash: *hash,
                    record: record_bytes.clone(),
                    event,
                });
            }
            expected = Some(decoded.last_version() + 1);
        }
        Ok(out)
    }

    async fn read_all(&self, from_position: u64, page: Page) -> Result<Vec<StoredEvent>, StorageError> {
        let Page { max_count, max_bytes, weigh } = page;
        let mut out = Vec::new();
        let (sequence, index) = feed::position::split(from_position);
        let mut skip = if sequence == 0 { 0 } else { index };
        let mut bytes = 0usize;
        let mut messages = Messages::new(self, format!("{SUBJECT_PREFIX}.>"), sequence);
        messages.dense = true;
        while out.len() < max_count {
            let Some(message) = messages.next().await? else { break };
            if message.sequence != sequence {
                skip = 0;
            }
            let decoded = decode_message(&message)
                .map_err(|e| corrupt(message.subject.as_str(), 0, format!("message {}: {e}", message.sequence)))?;
            for (i, (hash, record_bytes)) in decoded.records.iter().enumerate().skip(skip) {
                let version = decoded.first_version + i as u64;
                let event = record::decode(record_bytes)
                    .map_err(|e| corrupt(&decoded.stream_id, version, format!("record does not decode: {e}")))?;
                let weight = weigh(record_bytes.len());
                if out.len() >= max_count || (!out.is_empty() && bytes + weight > max_bytes) {
                    return Ok(out);
                }
                bytes += weight;
                out.push(StoredEvent {
                    global_position: position(message.sequence, i),
                    hash: *hash,
                    record: record_bytes.clone(),
                    event,
                });
            }
            skip = 0;
        }
        Ok(out)
    }
}

impl EventStore for JetStreamStore {
    fn engine(&self) -> &'static str {
        ENGINE
    }

    fn head<'a>(&'a self, stream_id: &'a str) -> StoreFuture<'a, Option<Head>> {
        Box::pin(self.inner.head(stream_id))
    }

    fn idempotency<'a>(&'a self, stream_id: &'a str, keys: &'a [String]) -> StoreFuture<'a, Vec<Option<KeyEntry>>> {
        Box::pin(self.inner.idempotency(stream_id, keys))
    }

    fn append(&self, appends: Vec<PlannedAppend>) -> StoreFuture<'_, Vec<Result<Vec<u64>, Conflict>>> {
        Box::pin(async move {
            let total = appends.len();
            let mut by_stream: Vec<(String, Vec<(usize, PlannedAppend)>)> = Vec::new();
            for (i, append) in appends.into_iter().enumerate() {
                match by_stream.iter_mut().find(|(s, _)| *s == append.stream_id) {
                    Some((_, list)) => list.push((i, append)),
                    None => by_stream.push((append.stream_id.clone(), vec![(i, append)])),
                }
            }
            let mut answered = Vec::with_capacity(total);
            if by_stream.len() <= 1 {
                // One battle (the usual case): no task to spawn.
                if let Some((_, list)) = by_stream.pop() {
                    answered.push(self.inner.append_stream(list).await);
                }
            } else {
                // Battles in parallel, each battle's appends in order (a
                // later one may be planned on an earlier one).
                let mut tasks = JoinSet::new();
                for (_, list) in by_stream {
                    let inner = self.inner.clone();
                    tasks.spawn(async move { inner.append_stream(list).await });
                }
                while let Some(joined) = tasks.join_next().await {
                    answered.push(joined.map_err(storage)?);
                }
            }
            let mut results: Vec<Option<Result<Vec<u64>, Conflict>>> = vec![None; total];
            let mut failure = None;
            for list in answered {
                for (i, result) in list {
                    match result {
                        Ok(r) => results[i] = Some(r),
                        Err(e) => failure = Some(e),
                    }
                }
            }
            if let Some(e) = failure {
                return Err(e);
            }
            Ok(results.into_iter().map(|r| r.expect("every append answered")).collect())
        })
    }

    fn read_stream<'a>(
        &'a self,
        stream_id: &'a str,
        from_version: u64,
        page: Page,
    ) -> StoreFuture<'a, Vec<StoredEvent>> {
        Box::pin(self.inner.read_stream(stream_id, from_version, page))
    }

    fn read_all(&self, from_position: u64, page: Page) -> StoreFuture<'_, Vec<StoredEvent>> {
        Box::pin(self.inner.read_all(from_position, page))
    }

    fn changes(&self) -> watch::Receiver<u64> {
        self.inner.changes.subscribe()
    }

    fn close(&self) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            self.inner.closed.store(true, Ordering::Release);
            if let Some(watcher) = self.inner.watcher.lock().unwrap_or_else(|e| e.into_inner()).take() {
                watcher.abort();
            }
            self.inner.client.flush().await.map_err(storage)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unanswering_log_is_transient() {
        assert_eq!(storage("timed out").kind(), StorageErrorKind::Transient);
        assert_eq!(corrupt("s", 3, "why").location(), Some(("s", 3)));
    }

    #[test]
    fn server_versions_read_as_major_minor() {
        assert_eq!(server_version("2.12.8"), (2, 12));
        assert!(server_version("v2.10.22") < (2, 11));
    }

    /// `n` records of battle `s` from version `first`, chained on `previous`
    /// (SHA-256 written out here, not the store's chain code).
    fn chained(previous: Hash, first: u64, n: usize) -> JournalMessage {
        use sha2::{Digest, Sha256};
        let mut previous = previous;
        let records: Vec<(Hash, Vec<u8>)> = (0..n)
            .map(|i| {
                let record = battlelog_proto::v1::JournalRecord {
                    stream_id: "s".into(),
                    version: first + i as u64,
                    idempotency_key: format!("k{}", first + i as u64),
                    ..Default::default()
                };
                let bytes = record::encode(&record);
                previous = Sha256::new().chain_update(previous).chain_update(&bytes).finalize().into();
                (previous, bytes)
            })
            .collect();
        JournalMessage { stream_id: "s".into(), first_version: first, records, last_hash: previous, state: None }
    }

    #[test]
    fn the_index_finds_messages_by_version() {
        let mut index = StreamIndex::default();
        let mut head = record::genesis_hash("s");
        let mut message = |first: u64, n: usize| {
            let message = chained(head, first, n);
            head = message.last_hash;
            message
        };
        index.apply("s", 4, "battlelog.journal._.s", &message(0, 2)).unwrap();
        index.apply("s", 9, "battlelog.journal._.s", &message(2, 3)).unwrap();
        assert_eq!(index.sequence_ending_at(1), Some(4));
        assert_eq!(index.sequence_ending_at(4), Some(9));
        assert_eq!(index.sequence_ending_at(2), None, "version 2 is not the last of its message");
        assert_eq!(index.sequence_ending_at(5), None);
        assert_eq!(index.sequences_from(0).collect::<Vec<_>>(), [4, 9]);
        assert_eq!(index.sequences_from(1).collect::<Vec<_>>(), [4, 9]);
        assert_eq!(index.sequences_from(3).collect::<Vec<_>>(), [9]);
        assert_eq!(index.sequences_from(5).count(), 0);
        assert!(index.apply("s", 10, "battlelog.journal._.s", &message(6, 1)).is_err(), "a gap is corrupt");
    }

    /// A message injected on a battle's subject with valid-looking headers
    /// is refused unless it chains on the head: the head and the keys stay
    /// as they were, and the error names the message.
    #[test]
    fn the_index_refuses_a_message_that_does_not_chain() {
        let mut index = StreamIndex::default();
        let opening = chained(record::genesis_hash("s"), 0, 2);
        index.apply("s", 1, "battlelog.journal._.s", &opening).unwrap();
        let head = index.head;
        let next = chained(opening.last_hash, 2, 2);

        let mut wrong_hash = next.clone();
        wrong_hash.records[1].0[0] ^= 1;
        let mut wrong_bytes = next.clone();
        wrong_bytes.records[0].1.push(0);
        let mut wrong_head = next.clone();
        wrong_head.last_hash = next.records[0].0;
        let on_another_head = chained([9; 32], 2, 2);
        let mut wrong_record = chained(opening.last_hash, 2, 1);
        wrong_record.records[0].1 = record::encode(&battlelog_proto::v1::JournalRecord {
            stream_id: "other".into(),
            version: 2,
            ..Default::default()
        });
        wrong_record.records[0].0 = record::chain_hash(&opening.last_hash, &wrong_record.records[0].1);
        wrong_record.last_hash = wrong_record.records[0].0;
        for (what, forged, version) in [
            ("a changed hash", wrong_hash, 3),
            ("changed bytes", wrong_bytes, 2),
            ("a head hash not its last record's", wrong_head, 3),
            ("chained on another head", on_another_head, 2),
            ("a record of another battle", wrong_record, 2),
        ] {
            match index.apply("s", 7, "battlelog.journal.forum-a.s", &forged) {
                Err(e) if e.kind() == StorageErrorKind::Corrupt => {
                    let (at, reason) = (e.location().map(|(_, v)| v), e.message());
                    assert_eq!(at, Some(version), "{what}: {reason}");
                    assert!(reason.contains("message 7 on battlelog.journal.forum-a.s"), "{what}: {reason}");
                }
                other => panic!("{what}: {other:?}"),
            }
            assert_eq!(index.head, head, "{what}: the head did not move");
            assert!(!index.keys.contains_key("k2"), "{what}: no key of it taken");
            assert_eq!(index.last_seq, 1);
        }
        index.apply("s", 8, "battlelog.journal._.s", &next).expect("the real one chains");
        assert_eq!(index.head.map(|h| (h.version, h.hash)), Some((3, next.last_hash)));
    }
}
