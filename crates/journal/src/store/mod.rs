//! The storage seam: [`EventStore`], what the journal needs of a log
//! engine, and its providers.
//!
//! The append policy (idempotency keys, expected versions, the battle
//! guard, the chain) is the journal's, above storage
//! ([`crate::planner`]): it reads a stream's [`Head`] and idempotency
//! entries from the store, decides, and hands the store a
//! [`PlannedAppend`] — the exact records, their hashes, the battle state
//! after them — to write atomically *if the stream's head is still the one
//! it planned against*. A store that finds another head refuses with a
//! [`Conflict`] and the journal plans again. So a store needs no policy of
//! its own: an ordered key-value engine (sled, memory) checks the head
//! under its one writer, a NATS JetStream stream with
//! `Nats-Expected-Last-Subject-Sequence`, and several journal processes can
//! share one log without forking a battle.
//!
//! - [`EventStore`]: async and narrow — heads and idempotency entries for
//!   the planner, append planned groups (the store assigns global
//!   positions), read a stream or the global log, wake subscribers, an
//!   optional outbox cursor. The chain is checked above it, through it
//!   ([`crate::chain`]), the same for every provider.
//! - [`error`]: [`StorageError`], what a store fails with: engine-neutral,
//!   with a kind (transient, conflict, corrupt, fatal) the journal maps once. Modelled on restate's bifrost
//!   `Loglet`: a narrow trait and one conformance suite run against every
//!   provider.
//! - [`kv_tables`]: the tables of an ordered key-value engine, written once:
//!   their layout ([`layout`]), group writing and reads.
//! - [`group_commit`]: [`group_commit::KvStore`], the [`EventStore`] of every
//!   such engine — group commit and the durable watermark.
//! - [`sled`]: the on-disk provider ([`SledStore`]: group commit, one flush
//!   per group; sled's types private to it); [`memory`]: the in-memory
//!   provider ([`MemoryStore`]), complete but not durable.
//! - [`jetstream`]: the NATS JetStream provider ([`jetstream::JetStreamStore`]):
//!   one message per planned append on a subject per battle, the expected
//!   version as JetStream's expected last subject sequence; several journals
//!   may share it.
//! - [`conformance`] (feature `test-util`, and this crate's tests): the suite
//!   every provider passes, callable from outside the crate.
//!
//! Every answer a store gives is durable: an append resolves only once its
//! records are (flushed, or acknowledged by a quorum), and reads, heads and
//! idempotency entries show nothing that is not, so no reader, subscriber,
//! retry or publisher ever sees an event before its append was acknowledged.

#[cfg(any(test, feature = "test-util"))]
pub mod conformance;
pub mod error;
pub mod group_commit;
pub mod jetstream;
pub mod kv_tables;
pub mod memory;
pub mod sled;

use std::future::Future;
use std::pin::Pin;

use battlelog_proto::v1::JournalRecord;
use tokio::sync::watch;

use crate::guard::BattleState;
use crate::record::Hash;

pub use self::error::{StorageError, StorageErrorKind};
pub use self::kv_tables::layout;
pub use self::memory::MemoryStore;
pub use self::sled::SledStore;

/// What a store's async methods return.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StorageError>> + Send + 'a>>;

/// A log engine for the journal. Every method is async (a store may be a
/// network away) and every answer is durable (see the module doc).
pub trait EventStore: Send + Sync + std::fmt::Debug + 'static {
    /// The engine's name, for logs and errors (`sled`, `memory`, `jetstream`).
    fn engine(&self) -> &'static str;

    /// A stream's durable head, `None` for a stream without events.
    fn head<'a>(&'a self, stream_id: &'a str) -> StoreFuture<'a, Option<Head>>;

    /// What each of `keys` was recorded with in `stream_id` (in order;
    /// `None` for a key never used there).
    fn idempotency<'a>(&'a self, stream_id: &'a str, keys: &'a [String]) -> StoreFuture<'a, Vec<Option<KeyEntry>>>;

    /// Appends planned appends, each all or nothing and only if its stream's
    /// head is still [`PlannedAppend::expected`]; otherwise that one is
    /// refused with the head found ([`Conflict`]) and nothing of it is
    /// written. The store assigns global positions, increasing in commit
    /// order. Resolves once what it wrote is durable; the outer `Err` means
    /// the engine failed and the outcome of the whole call is unknown.
    fn append(&self, appends: Vec<PlannedAppend>) -> StoreFuture<'_, Vec<Result<Vec<u64>, Conflict>>>;

    /// Events of a stream from `from_version`, as many as `page` allows.
    fn read_stream<'a>(
        &'a self,
        stream_id: &'a str,
        from_version: u64,
        page: Page,
    ) -> StoreFuture<'a, Vec<StoredEvent>>;

    /// Events of the global log from `from_position` (the first event at or
    /// past it), bounded as [`EventStore::read_stream`].
    fn read_all(&self, from_position: u64, page: Page) -> StoreFuture<'_, Vec<StoredEvent>>;

    /// Changes (to some larger number) whenever new events may have become
    /// readable: subscriptions wait on it between reads.
    fn changes(&self) -> watch::Receiver<u64>;

    /// The outbox cursor (every global position below it is published), for
    /// a store whose committed events must be fanned out by the journal;
    /// `None` for a store whose log is itself the fan-out (JetStream).
    fn outbox_cursor(&self) -> StoreFuture<'_, Option<u64>> {
        Box::pin(async { Ok(None) })
    }

    /// Moves the outbox cursor. Need not be durable on its own: a move lost
    /// in a crash only republishes (deduplicated by event id).
    fn set_outbox_cursor(&self, next: u64) -> StoreFuture<'_, ()> {
        let _ = next;
        Box::pin(async { Ok(()) })
    }

    /// Finishes what is in flight and releases the engine (sled's lock on
    /// its directory). Appends after this fail.
    fn close(&self) -> StoreFuture<'_, ()>;

    /// Counts the store's own work (group commits and flushes) into
    /// `metrics` from now on; stores without such work ignore it.
    fn attach_metrics(&self, metrics: &crate::metrics::JournalMetrics) {
        let _ = metrics;
    }
}

/// How much one read may return: at most `max_count` events and, past the
/// first (which always comes), at most `max_bytes` as `weigh` weighs each
/// record from its length. The store cuts the page; what a page weighs is
/// the caller's to say (the journal weighs a record as the page will be
/// sent: `crate::limits::wire_page`), so no store knows the wire.
#[derive(Debug, Clone, Copy)]
pub struct Page {
    /// Most events.
    pub max_count: usize,
    /// Most bytes, as weighed.
    pub max_bytes: usize,
    /// A record's weight from its length.
    pub weigh: fn(usize) -> usize,
}

impl Page {
    /// At most `max_count` events, whatever they weigh.
    pub fn count(max_count: usize) -> Self {
        Self { max_count, max_bytes: usize::MAX, weigh: |len| len }
    }
}

/// A stream's head as the planner needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    /// The last version.
    pub version: u64,
    /// h(version).
    pub hash: Hash,
    /// The battle state after it; `None` for a stream stored before the
    /// guard (the planner folds its records once).
    pub state: Option<BattleState>,
}

/// What an idempotency key remembers: the version it was appended at and
/// [`crate::record::fingerprint`] of its event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyEntry {
    /// Version of the keyed event.
    pub version: u64,
    /// Its type and payload, hashed.
    pub fingerprint: Hash,
}

/// One append, planned: everything the store writes, decided above it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedAppend {
    /// The stream.
    pub stream_id: String,
    /// The head it was planned against (`None`: the stream must not exist).
    /// The records follow on from it.
    pub expected: Option<u64>,
    /// The records, versions `expected + 1` on (0 on for a new stream).
    pub records: Vec<PlannedRecord>,
    /// The battle state after the last record.
    pub state: BattleState,
}

impl PlannedAppend {
    /// The version of the first record.
    pub fn first_version(&self) -> u64 {
        self.expected.map_or(0, |v| v + 1)
    }

    /// The version of the last record.
    pub fn last_version(&self) -> u64 {
        self.first_version() + self.records.len().saturating_sub(1) as u64
    }

    /// h(last version).
    pub fn last_hash(&self) -> Option<Hash> {
        self.records.last().map(|r| r.hash)
    }
}

/// One record of a [`PlannedAppend`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedRecord {
    /// The exact record bytes (docs/protocol.md §4), stored and hashed as they are.
    pub bytes: Vec<u8>,
    /// h(version).
    pub hash: Hash,
    /// Its idempotency key and the event's fingerprint, if keyed.
    pub key: Option<(String, Hash)>,
}

/// A [`PlannedAppend`] refused: its stream's head moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Conflict {
    /// The head version found.
    pub actual: Option<u64>,
}

/// An event as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEvent {
    /// Position in the global log.
    pub global_position: u64,
    /// h(version) as stored.
    pub hash: Hash,
    /// The exact stored record bytes.
    pub record: Vec<u8>,
    /// The record decoded.
    pub event: JournalRecord,
}

/// What one append recorded for one event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppendedEvent {
    /// Version in the stream.
    pub version: u64,
    /// Position in the global log.
    pub global_position: u64,
    /// The id the journal gave the event.
    pub event_id: String,
    /// h(version).
    pub hash: Hash,
    /// Commit time, microseconds since the Unix epoch.
    pub recorded_at_unix_micros: i64,
}

/// The result of an append.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppendOutcome {
    /// One entry per requested event, in request order.
    pub events: Vec<AppendedEvent>,
    /// True when every event repeated a known idempotency key and nothing was appended.
    pub deduplicated: bool,
}

/// A stream's durable head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamHead {
    /// The last durable version; `None` for a stream without events.
    pub version: Option<u64>,
    /// h(version), or h(−1) for an empty stream.
    pub hash: Hash,
}

/// One outbox entry, ready to publish.
#[derive(Debug, Clone)]
pub struct OutboxEvent {
    /// Position in the global log.
    pub global_position: u64,
    /// h(version).
    pub hash: Hash,
    /// The exact record bytes.
    pub record: Vec<u8>,
    /// The record decoded.
    pub event: JournalRecord,
    /// The stream's tenant as a NATS subject token: `BattleOpened.tenant` of
    /// its version 0, or [`crate::guard::TENANT_PLACEHOLDER`] when that is empty.
    pub tenant: String,
}
