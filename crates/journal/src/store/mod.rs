//! The storage seam: [`EventStore`], what the committer, the outbox drain and
//! the readers need of a storage engine, and its two providers.
//!
//! - [`EventStore`]: append a group of appends (each all or nothing, checked
//!   against its expected version, its idempotency keys and the battle
//!   guard), make it durable, read a stream or the global log, a stream's
//!   head, verify a chain, keep the outbox cursor. Modelled on restate's
//!   bifrost `Loglet`: a narrow trait, durability promised only by
//!   [`EventStore::flush`], and one conformance suite run against every
//!   provider.
//! - [`kv`]: the layout and the append, read and verify logic for an
//!   ordered key-value engine, written once; [`layout`] is its byte layout.
//! - [`sled`]: the on-disk provider ([`SledStore`]), sled's types private
//!   to it; [`memory`]: the in-memory provider ([`MemoryStore`]), complete
//!   but not durable, for tests.
//! - `conformance` (tests only): the suite both providers pass.
//!
//! A provider for an engine that is not an ordered key-value store (a NATS
//! JetStream cluster, say, with the per-subject expected sequence as the
//! expected version) implements [`EventStore`] directly.
//!
//! Durability is the journal's business, not the store's: the committer
//! calls [`EventStore::flush`] after each group and then raises a durable
//! watermark (a global position); every read takes that watermark as
//! `durable` and returns nothing at or past it, so no reader, subscriber or
//! publisher ever sees an event before its append was acknowledged.

#[cfg(test)]
pub(crate) mod conformance;
pub mod jetstream;
pub mod kv;
pub mod memory;
pub mod seam;
pub mod sled;

use battlelog_proto::v1::JournalRecord;

use crate::error::JournalError;
use crate::guard::Checked;
use crate::limits::{ExpectedVersion, NewEvent, ValidAppend};
use crate::record::Hash;

pub use self::kv::layout;
pub use self::memory::MemoryStore;
pub use self::sled::SledStore;

/// A storage engine for the journal. All methods block (the committer runs
/// on its own thread; reads are short).
pub trait EventStore: Send + Sync + std::fmt::Debug + 'static {
    /// The first global position not yet written: where the next group
    /// starts. Read once at open; the committer counts from there.
    fn next_position(&self) -> Result<u64, JournalError>;

    /// Applies `group` in order, global positions from `first_position`,
    /// each append checked (idempotency keys first, then the expected
    /// version, then the battle guard) against the stream as the earlier
    /// appends of the group left it. Each append writes all its records,
    /// index entries, head and guard state, or (refused: the inner `Err`)
    /// nothing; a crash never leaves part of one. The outer `Err` means the
    /// engine failed and nothing of the group can be trusted.
    ///
    /// Not durable until [`EventStore::flush`] returns.
    fn append_group(
        &self,
        group: &[GroupAppend<'_>],
        first_position: u64,
        now_micros: i64,
    ) -> Result<Vec<Result<Applied, JournalError>>, JournalError>;

    /// Makes everything appended so far durable (one sync for however many
    /// groups were appended since the last one).
    fn flush(&self) -> Result<(), JournalError>;

    /// Events of a stream from `from_version` that lie below the global
    /// position `durable`: at most `max_count`, and (after the first) at most
    /// `max_bytes` as the page will be sent
    /// ([`battlelog_runtime::limits::recorded_event_wire_bytes`] of each).
    fn read_stream(
        &self,
        stream_id: &str,
        from_version: u64,
        max_count: usize,
        max_bytes: usize,
        durable: u64,
    ) -> Result<Vec<StoredEvent>, JournalError>;

    /// Events of the global log from `from_position`, below `durable`, bounded
    /// as [`EventStore::read_stream`].
    fn read_all(
        &self,
        from_position: u64,
        max_count: usize,
        max_bytes: usize,
        durable: u64,
    ) -> Result<Vec<StoredEvent>, JournalError>;

    /// The last event of a stream below `durable`.
    fn stream_head(&self, stream_id: &str, durable: u64) -> Result<StreamHead, JournalError>;

    /// Recomputes a stream's chain from the stored bytes and names the first
    /// version where it breaks (see [`ChainCheck`]); `durable` tells records
    /// the head must cover from ones appended after it was read.
    fn verify_chain(&self, stream_id: &str, durable: u64) -> Result<ChainCheck, JournalError>;

    /// The outbox cursor: every global position below it is published.
    fn outbox_cursor(&self) -> Result<u64, JournalError>;

    /// Moves the outbox cursor. Need not be durable on its own: a move lost
    /// in a crash only republishes (deduplicated by event id).
    fn set_outbox_cursor(&self, next: u64) -> Result<(), JournalError>;
}

/// One append of a group, with the event ids the committer gave it.
#[derive(Debug, Clone, Copy)]
pub struct GroupAppend<'a> {
    /// The validated append.
    pub(crate) append: &'a ValidAppend,
    /// One id per event.
    pub(crate) event_ids: &'a [String],
}

impl<'a> GroupAppend<'a> {
    pub(crate) fn new(append: &'a ValidAppend, event_ids: &'a [String]) -> Self {
        Self { append, event_ids }
    }

    /// The stream appended to.
    pub fn stream_id(&self) -> &'a str {
        &self.append.stream_id
    }

    /// What the caller expects the stream's version to be.
    pub fn expected(&self) -> ExpectedVersion {
        self.append.expected
    }

    /// The events, validated against the limits.
    pub fn events(&self) -> &'a [NewEvent] {
        &self.append.events
    }

    /// What the battle guard needs of each event ([`crate::guard::apply`]).
    pub fn checked(&self) -> &'a [Checked] {
        &self.append.checked
    }

    /// The id of each event.
    pub fn event_ids(&self) -> &'a [String] {
        self.event_ids
    }
}

/// What applying one append did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Applied {
    /// New events were written.
    Appended(AppendOutcome),
    /// Every key was known: the original result, nothing written.
    Deduplicated(AppendOutcome),
}

/// The engine failed (I/O, a poisoned lock, an internal bug). Engine-neutral:
/// the engine's own error is kept as the source, not as a type the rest of
/// the journal depends on.
#[derive(Debug, thiserror::Error)]
#[error("{engine}: {source}")]
pub struct StorageError {
    /// Which engine (`sled`, `memory`).
    pub engine: &'static str,
    /// What it said.
    #[source]
    pub source: Box<dyn std::error::Error + Send + Sync>,
}

impl StorageError {
    /// Wraps an engine's error.
    pub fn new(engine: &'static str, source: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Self { engine, source: source.into() }
    }
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

/// The outcome of verifying a stream's chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChainCheck {
    /// Every record from 0 to the head chains correctly.
    Ok {
        /// Number of records checked.
        count: u64,
        /// The recomputed head hash (h(−1) for an empty stream).
        head_hash: Hash,
    },
    /// The chain breaks at `version`; versions below it are good.
    Broken {
        /// The first bad version.
        version: u64,
        /// Why.
        reason: String,
    },
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
