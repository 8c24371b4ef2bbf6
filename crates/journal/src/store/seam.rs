//! TEMPORARY (until the new seam is merged): the new trait's items, so the
//! JetStream store compiles against them before the refactor lands.
#![allow(dead_code, missing_docs)]
use std::future::Future;
use std::pin::Pin;

use tokio::sync::watch;

use super::{ChainCheck, StoredEvent};
use crate::error::JournalError;
use crate::guard::BattleState;
use crate::record::Hash;

/// What a store's async methods return.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, JournalError>> + Send + 'a>>;

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

    /// Events of a stream from `from_version`: at most `max_count`, and
    /// (after the first) at most `max_bytes` as the page will be sent
    /// ([`battlelog_runtime::limits::recorded_event_wire_bytes`] of each).
    fn read_stream<'a>(
        &'a self,
        stream_id: &'a str,
        from_version: u64,
        max_count: usize,
        max_bytes: usize,
    ) -> StoreFuture<'a, Vec<StoredEvent>>;

    /// Events of the global log from `from_position` (the first event at or
    /// past it), bounded as [`EventStore::read_stream`].
    fn read_all(&self, from_position: u64, max_count: usize, max_bytes: usize) -> StoreFuture<'_, Vec<StoredEvent>>;

    /// Recomputes a stream's chain from the stored bytes and names the first
    /// version where it breaks (see [`ChainCheck`]).
    fn verify_chain<'a>(&'a self, stream_id: &'a str) -> StoreFuture<'a, ChainCheck>;

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
    /// The exact record bytes (PROTOCOL.md §4), stored and hashed as they are.
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
