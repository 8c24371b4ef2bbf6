//! The sled storage: one tree per concern, one transaction per append, and the
//! reads, the outbox and the chain verification over it.
//!
//! Layout (all integers big-endian so that sled's byte order is numeric order):
//!
//! | tree          | key                              | value                                        |
//! |---------------|----------------------------------|----------------------------------------------|
//! | `records`     | stream id, 0x00, version (u64)   | h(version) (32), global position (u64), record bytes |
//! | `heads`       | stream id                        | head version (u64), head hash (32), battle state (45) |
//! | `idempotency` | stream id, 0x00, key             | version (u64), fingerprint (32)              |
//! | `global`      | global position (u64)            | the `records` key                            |
//! | `outbox`      | `published`                      | next global position to publish (u64)        |
//!
//! Stream ids never contain 0x00 (see [`crate::limits`]), so a stream's keys
//! are exactly the keys starting with `stream id, 0x00`.
//!
//! The battle state ([`crate::guard::BattleState`]: next nonce, epoch, its
//! commitment, revealed, closed) rides in the head value because every
//! append reads and rewrites the head anyway: the guard costs no extra read
//! or write, and the state is durable in the same transaction as the events.
//! A head of 40 bytes (written before the guard existed) has no state; the
//! first append to such a stream folds its records once to build it.
//!
//! Each group commit is one sled transaction (see `Store::apply_group`).
//!
//! Readers only see *durable* events: those whose global position is below the
//! watermark that the committer raises after each flush. An event applied but
//! not yet flushed could vanish in a crash, so no reader, subscriber or NATS
//! ever sees it before the append is acknowledged.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Mutex, RwLock};

use battlelog_proto::v1::battle_event::Event;
use battlelog_proto::v1::{BattleEvent, JournalRecord};
use prost::Message;
use sled::transaction::{
    ConflictableTransactionError, TransactionError, TransactionalTree, UnabortableTransactionError,
};
use sled::{Transactional, Tree};
use tokio::sync::watch;

use crate::error::JournalError;
use crate::guard::{self, BattleState, Violation};
use crate::limits::{ExpectedVersion, ValidAppend};
use crate::record::{self, Hash};

/// Tree names and key encodings, public so that tools (and the tampering
/// tests) can open a stopped journal's database directly.
pub mod layout {
    use super::Hash;

    /// Records by (stream, version).
    pub const RECORDS: &str = "records";
    /// Chain head per stream.
    pub const HEADS: &str = "heads";
    /// Idempotency index by (stream, key).
    pub const IDEMPOTENCY: &str = "idempotency";
    /// The global order: position → record key.
    pub const GLOBAL: &str = "global";
    /// The outbox: the global position up to which events are published.
    /// Everything at or past it in `global` waits for the publisher.
    pub const OUTBOX: &str = "outbox";
    /// The outbox cursor's key.
    pub const OUTBOX_CURSOR: &[u8] = b"published";
    /// Bytes before the record in a `records` value: hash and global position.
    pub const RECORD_VALUE_HEADER: usize = 40;

    /// `stream id || 0x00`.
    pub fn stream_prefix(stream_id: &str) -> Vec<u8> {
        let mut key = Vec::with_capacity(stream_id.len() + 9);
        key.extend_from_slice(stream_id.as_bytes());
        key.push(0);
        key
    }

    /// `stream id || 0x00 || u64_be(version)`.
    pub fn record_key(stream_id: &str, version: u64) -> Vec<u8> {
        let mut key = stream_prefix(stream_id);
        key.extend_from_slice(&version.to_be_bytes());
        key
    }

    /// The (stream id, version) of a `records` key.
    pub fn parse_record_key(key: &[u8]) -> Option<(&str, u64)> {
        let split = key.len().checked_sub(9)?;
        let (stream, rest) = key.split_at(split);
        if rest[0] != 0 {
            return None;
        }
        let version = u64::from_be_bytes(rest[1..].try_into().ok()?);
        Some((std::str::from_utf8(stream).ok()?, version))
    }

    /// `stream id || 0x00 || key`.
    pub fn idempotency_key(stream_id: &str, key: &str) -> Vec<u8> {
        let mut k = stream_prefix(stream_id);
        k.extend_from_slice(key.as_bytes());
        k
    }

    /// `u64_be(position)`.
    pub fn position_key(position: u64) -> [u8; 8] {
        position.to_be_bytes()
    }

    /// `hash || u64_be(position) || record`.
    pub fn record_value(hash: &Hash, position: u64, record: &[u8]) -> Vec<u8> {
        let mut value = Vec::with_capacity(RECORD_VALUE_HEADER + record.len());
        value.extend_from_slice(hash);
        value.extend_from_slice(&position.to_be_bytes());
        value.extend_from_slice(record);
        value
    }

    /// Splits a `records` value into (hash, global position, record bytes).
    pub fn split_record_value(value: &[u8]) -> Option<(Hash, u64, &[u8])> {
        if value.len() < RECORD_VALUE_HEADER {
            return None;
        }
        let hash: Hash = value[..32].try_into().ok()?;
        let position = u64::from_be_bytes(value[32..40].try_into().ok()?);
        Some((hash, position, &value[40..]))
    }

    /// Bytes of a head value without the battle state (written before the
    /// guard existed).
    pub const LEGACY_HEAD_BYTES: usize = 40;

    /// `u64_be(version) || hash || battle state`.
    pub fn head_value(version: u64, hash: &Hash, state: &super::BattleState) -> Vec<u8> {
        let mut value = Vec::with_capacity(LEGACY_HEAD_BYTES + super::guard::STATE_BYTES);
        value.extend_from_slice(&version.to_be_bytes());
        value.extend_from_slice(hash);
        value.extend_from_slice(&state.encode());
        value
    }

    /// (version, hash) of a `heads` value.
    pub fn parse_head_value(value: &[u8]) -> Option<(u64, Hash)> {
        if value.len() != LEGACY_HEAD_BYTES && value.len() != LEGACY_HEAD_BYTES + super::guard::STATE_BYTES {
            return None;
        }
        Some((u64::from_be_bytes(value[..8].try_into().ok()?), value[8..40].try_into().ok()?))
    }

    /// The battle state of a `heads` value: `Some(None)` for a legacy head
    /// without one, `None` when unreadable.
    pub fn parse_head_state(value: &[u8]) -> Option<Option<super::BattleState>> {
        match value.len() {
            LEGACY_HEAD_BYTES => Some(None),
            _ => super::BattleState::decode(value.get(LEGACY_HEAD_BYTES..)?).map(Some),
        }
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
    /// its version 0, or [`guard::TENANT_PLACEHOLDER`] when that is empty.
    pub tenant: String,
}

/// Why an append was refused inside its transaction.
enum Reject {
    Refused(Violation),
    WrongExpectedVersion { actual: Option<u64> },
    KeyReused { key: String, version: u64 },
    PartialRepeat { repeated_index: usize, new_index: usize },
    Corrupt { version: u64, reason: String },
}

/// What applying an append did.
pub(crate) enum Applied {
    /// New events were written at these global positions.
    Appended(AppendOutcome),
    /// Every key was known: the original result.
    Deduplicated(AppendOutcome),
}

/// The sled database and its trees.
#[derive(Debug)]
pub struct Store {
    db: sled::Db,
    records: Tree,
    heads: Tree,
    idempotency: Tree,
    global: Tree,
    outbox: Tree,
    /// The outbox cursor: positions below it are published.
    published: std::sync::atomic::AtomicU64,
    /// Every global position below this is durable (flushed).
    durable: watch::Sender<u64>,
    /// Held for writing while the committer applies one transaction, so that
    /// a reader taking it for reading sees a head only together with all the
    /// records below it (sled gives no multi-tree snapshot to plain reads).
    apply_lock: RwLock<()>,
    /// Group-commit counters.
    pub(crate) stats: CommitStats,
    /// Stream → tenant subject token, for the outbox: a stream's tenant is
    /// fixed by its version 0, so it is read once, not per event.
    tenants: Mutex<HashMap<String, String>>,
}

/// Streams whose tenant the outbox remembers; past it the cache starts over
/// (a miss costs one read of version 0).
const MAX_CACHED_TENANTS: usize = 100_000;

/// Counters of the group commit, for operators and the benchmark.
#[derive(Debug, Default)]
pub struct CommitStats {
    /// Group transactions flushed.
    pub groups: std::sync::atomic::AtomicU64,
    /// Appends answered by them.
    pub appends: std::sync::atomic::AtomicU64,
}

impl Store {
    /// Opens (or creates) the database in `dir`. Everything on disk at open
    /// time survived the last run and is durable.
    pub fn open(dir: &Path, cache_capacity_bytes: u64) -> Result<Self, JournalError> {
        let db = sled::Config::new().path(dir).cache_capacity(cache_capacity_bytes).open()?;
        let global = db.open_tree(layout::GLOBAL)?;
        let next = match global.last()? {
            Some((key, _)) => decode_position(&key)? + 1,
            None => 0,
        };
        let outbox = db.open_tree(layout::OUTBOX)?;
        let published = match outbox.get(layout::OUTBOX_CURSOR)? {
            Some(value) => decode_position(&value)?,
            None => 0,
        };
        Ok(Self {
            records: db.open_tree(layout::RECORDS)?,
            heads: db.open_tree(layout::HEADS)?,
            idempotency: db.open_tree(layout::IDEMPOTENCY)?,
            outbox,
            published: std::sync::atomic::AtomicU64::new(published),
            global,
            db,
            durable: watch::Sender::new(next),
            apply_lock: RwLock::new(()),
            stats: CommitStats::default(),
            tenants: Mutex::new(HashMap::new()),
        })
    }

    /// The next global position to assign (all below it are taken).
    pub(crate) fn next_position(&self) -> u64 {
        *self.durable.borrow()
    }

    /// The durable watermark: positions below it are flushed.
    pub fn durable_position(&self) -> u64 {
        *self.durable.borrow()
    }

    /// Watches the durable watermark (it only grows).
    pub fn watch_durable(&self) -> watch::Receiver<u64> {
        self.durable.subscribe()
    }

    /// Raises the durable watermark after a flush.
    pub(crate) fn set_durable(&self, next: u64) {
        self.durable.send_if_modified(|current| {
            let raised = next > *current;
            if raised {
                *current = next;
            }
            raised
        });
    }

    /// Flushes everything applied so far to disk (one fsync for however many
    /// transactions were applied since the last one: the group commit).
    pub(crate) fn flush(&self) -> Result<(), JournalError> {
        self.db.flush()?;
        Ok(())
    }

    /// Applies a group of appends, in order, in one sled transaction over all
    /// four trees it touches, positions starting at `next_position`. Each
    /// append either writes every record, index entry, head and global entry
    /// of it, or (rejected) nothing; later appends of the group see the
    /// earlier ones. The transaction makes the group reach disk as a unit, so
    /// no crash can leave half an append.
    ///
    /// One transaction per group rather than per append: a sled transaction
    /// seals its log buffer and costs about two plain insert+flush round trips
    /// on its own (see BENCHMARKS.md), so per-append transactions would cap
    /// the journal near the one-at-a-time floor whatever the group size.
    pub(crate) fn apply_group(
        &self,
        group: &[(&ValidAppend, &[String])],
        next_position: u64,
        now_micros: i64,
    ) -> Result<Vec<Result<Applied, JournalError>>, JournalError> {
        let _guard = self.apply_lock.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        let fingerprints: Vec<Vec<Hash>> = group
            .iter()
            .map(|(append, _)| append.events.iter().map(|e| record::fingerprint(&e.event_type, &e.payload)).collect())
            .collect();
        // The outbox is not among them: its content is "the global log from
        // the cursor on", so writing the global entry is writing the outbox
        // entry, in the same transaction, at no extra insert per event.
        let trees = (&self.records, &self.heads, &self.idempotency, &self.global);
        let outcomes = trees
            .transaction(|(records, heads, idempotency, global)| {
                let view = TxView { records, heads, idempotency, global };
                let mut position = next_position;
                let mut outcomes = Vec::with_capacity(group.len());
                for ((append, ids), fingerprints) in group.iter().zip(&fingerprints) {
                    let outcome = view.apply_one(append, ids, fingerprints, position, now_micros)?;
                    if let Ok(Applied::Appended(appended)) = &outcome {
                        position += appended.events.len() as u64;
                    }
                    outcomes.push(outcome);
                }
                Ok::<_, ConflictableTransactionError<std::convert::Infallible>>(outcomes)
            })
            .map_err(|err| match err {
                TransactionError::Storage(e) => JournalError::Storage(e),
                TransactionError::Abort(never) => match never {},
            })?;
        Ok(outcomes
            .into_iter()
            .zip(group)
            .map(|(outcome, (append, _))| outcome.map_err(|reject| reject.into_error(append)))
            .collect())
    }

    /// Reads durable events of a stream from `from_version`, at most `max_count`
    /// events and (after the first) at most `max_bytes` record bytes.
    pub fn read_stream(
        &self,
        stream_id: &str,
        from_version: u64,
        max_count: usize,
        max_bytes: usize,
    ) -> Result<Vec<StoredEvent>, JournalError> {
        let durable = self.durable_position();
        let start = layout::record_key(stream_id, from_version);
        let end = layout::record_key(stream_id, u64::MAX);
        let mut out = Vec::new();
        let mut bytes = 0usize;
        for (expected, item) in (from_version..).zip(self.records.range(start..=end)) {
            if out.len() >= max_count {
                break;
            }
            let (key, value) = item?;
            let version = layout::parse_record_key(&key).map_or(u64::MAX, |(_, v)| v);
            let event = decode_stored(stream_id, version, &value)?;
            if event.global_position >= durable {
                break;
            }
            if version != expected {
                return Err(JournalError::Corrupt {
                    stream_id: stream_id.to_owned(),
                    version: expected,
                    reason: "record missing".into(),
                });
            }
            if !out.is_empty() && bytes + event.record.len() > max_bytes {
                break;
            }
            bytes += event.record.len();
            out.push(event);
        }
        Ok(out)
    }

    /// Reads durable events of the global log from `from_position`.
    pub fn read_all(
        &self,
        from_position: u64,
        max_count: usize,
        max_bytes: usize,
    ) -> Result<Vec<StoredEvent>, JournalError> {
        let durable = self.durable_position();
        let mut out = Vec::new();
        let mut bytes = 0usize;
        for item in self.global.range(layout::position_key(from_position)..) {
            if out.len() >= max_count {
                break;
            }
            let (key, record_key) = item?;
            let position = decode_position(&key)?;
            if position >= durable {
                break;
            }
            let event = self.read_by_record_key(&record_key)?;
            if !out.is_empty() && bytes + event.record.len() > max_bytes {
                break;
            }
            bytes += event.record.len();
            out.push(event);
        }
        Ok(out)
    }

    fn read_by_record_key(&self, record_key: &[u8]) -> Result<StoredEvent, JournalError> {
        let (stream_id, version) = layout::parse_record_key(record_key).ok_or_else(|| JournalError::Corrupt {
            stream_id: String::from_utf8_lossy(record_key).into_owned(),
            version: 0,
            reason: "unreadable record key in the global log".into(),
        })?;
        let value = self.records.get(record_key)?.ok_or_else(|| JournalError::Corrupt {
            stream_id: stream_id.to_owned(),
            version,
            reason: "record missing".into(),
        })?;
        decode_stored(stream_id, version, &value)
    }

    /// The durable head of a stream.
    pub fn stream_head(&self, stream_id: &str) -> Result<StreamHead, JournalError> {
        let durable = self.durable_position();
        for item in self.records.scan_prefix(layout::stream_prefix(stream_id)).rev() {
            let (key, value) = item?;
            let version = layout::parse_record_key(&key).map_or(u64::MAX, |(_, v)| v);
            let (hash, position, _) = layout::split_record_value(&value).ok_or_else(|| JournalError::Corrupt {
                stream_id: stream_id.to_owned(),
                version,
                reason: "truncated record".into(),
            })?;
            if position < durable {
                return Ok(StreamHead { version: Some(version), hash });
            }
        }
        Ok(StreamHead { version: None, hash: record::genesis_hash(stream_id) })
    }

    /// Recomputes the stream's chain from the stored record bytes and reports
    /// the first version where it breaks: a record missing, undecodable,
    /// claiming another stream or version, a hash that does not chain, or a
    /// head that does not match the last record.
    pub fn verify(&self, stream_id: &str) -> Result<ChainCheck, JournalError> {
        // The head is read under the apply lock, so every record up to it is
        // completely written; records appended meanwhile lie past it.
        // The durable watermark read with it tells the records the head must
        // cover (those before it) from ones appended since.
        let (head, durable) = {
            let _guard = self.apply_lock.read().unwrap_or_else(|poisoned| poisoned.into_inner());
            (self.heads.get(stream_id.as_bytes())?, self.durable_position())
        };
        let head = match head {
            None => None,
            Some(value) => match layout::parse_head_value(&value) {
                Some(h) => Some(h),
                None => return Ok(broken(0, "the stream head entry is unreadable")),
            },
        };
        let start = layout::record_key(stream_id, 0);
        let end = layout::record_key(stream_id, head.map_or(u64::MAX, |(v, _)| v));
        let mut previous = record::genesis_hash(stream_id);
        let mut expected = 0u64;
        for item in self.records.range(start..=end) {
            let (key, value) = item?;
            let Some((_, version)) = layout::parse_record_key(&key) else {
                return Ok(broken(expected, "unreadable record key"));
            };
            if version != expected {
                return Ok(broken(expected, "record missing"));
            }
            let Some((stored_hash, _, bytes)) = layout::split_record_value(&value) else {
                return Ok(broken(version, "record truncated"));
            };
            let decoded = match record::decode(bytes) {
                Ok(decoded) => decoded,
                Err(e) => return Ok(broken(version, format!("record does not decode: {e}"))),
            };
            if decoded.stream_id != stream_id || decoded.version != version {
                return Ok(broken(
                    version,
                    format!("record claims stream {:?} version {}", decoded.stream_id, decoded.version),
                ));
            }
            let hash = record::chain_hash(&previous, bytes);
            if hash != stored_hash {
                return Ok(broken(version, "hash does not chain from the previous record"));
            }
            previous = hash;
            expected += 1;
        }
        match head {
            None if expected > 0 => Ok(broken(expected, "records exist but the stream head is missing")),
            None => Ok(ChainCheck::Ok { count: 0, head_hash: previous }),
            Some((head_version, _)) if expected <= head_version => Ok(broken(expected, "record missing")),
            Some((head_version, head_hash)) if head_hash != previous => {
                Ok(broken(head_version, "the stream head hash does not match the last record"))
            }
            Some((head_version, _)) if self.durable_record_past(stream_id, head_version, durable)? => {
                Ok(broken(head_version + 1, "a durable record lies past the stream head"))
            }
            Some(_) => Ok(ChainCheck::Ok { count: expected, head_hash: previous }),
        }
    }

    /// Whether the record after `head_version` was durable at `durable`:
    /// readers serve it, so a head that stops before it disowns part of
    /// the stream. (One appended after the head was read is not.)
    fn durable_record_past(&self, stream_id: &str, head_version: u64, durable: u64) -> Result<bool, JournalError> {
        let Some(next) = head_version.checked_add(1) else { return Ok(false) };
        let Some(value) = self.records.get(layout::record_key(stream_id, next))? else { return Ok(false) };
        Ok(layout::split_record_value(&value).is_none_or(|(_, position, _)| position < durable))
    }

    /// Up to `max` durable events past the outbox cursor, oldest first.
    pub(crate) fn outbox_batch(&self, max: usize) -> Result<Vec<OutboxEvent>, JournalError> {
        let from = self.published.load(std::sync::atomic::Ordering::Acquire);
        self.read_all(from, max, usize::MAX)?
            .into_iter()
            .map(|stored| {
                Ok(OutboxEvent {
                    tenant: self.tenant_of(&stored.event)?,
                    global_position: stored.global_position,
                    hash: stored.hash,
                    record: stored.record,
                    event: stored.event,
                })
            })
            .collect()
    }

    /// The tenant subject token of a durable record's stream, from the
    /// `BattleOpened` at its version 0 (the record itself when it is that).
    fn tenant_of(&self, record: &JournalRecord) -> Result<String, JournalError> {
        let mut cache = self.tenants.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(tenant) = cache.get(&record.stream_id) {
            return Ok(tenant.clone());
        }
        let first;
        let payload = if record.version == 0 {
            &record.payload
        } else {
            first = self.read_by_record_key(&layout::record_key(&record.stream_id, 0))?;
            &first.event.payload
        };
        // Streams written before the guard may not open with a BattleOpened;
        // their events go out under the placeholder rather than not at all.
        let tenant = match BattleEvent::decode(payload.as_slice()) {
            Ok(BattleEvent { event: Some(Event::BattleOpened(opened)) }) => {
                guard::subject_token(&opened.tenant).into_owned()
            }
            _ => guard::TENANT_PLACEHOLDER.to_owned(),
        };
        if cache.len() >= MAX_CACHED_TENANTS {
            cache.clear();
        }
        cache.insert(record.stream_id.clone(), tenant.clone());
        Ok(tenant)
    }

    /// Moves the outbox cursor past a published event. Not flushed on its
    /// own: if the move is lost in a crash, the event is published again and
    /// NATS drops the duplicate by its `Nats-Msg-Id`.
    pub(crate) fn outbox_mark_published(&self, position: u64) -> Result<(), JournalError> {
        self.outbox.insert(layout::OUTBOX_CURSOR, &layout::position_key(position + 1)[..])?;
        self.published.store(position + 1, std::sync::atomic::Ordering::Release);
        Ok(())
    }

    /// Group-commit counters since open.
    pub fn commit_stats(&self) -> &CommitStats {
        &self.stats
    }

    /// Number of durable events waiting in the outbox.
    pub fn outbox_len(&self) -> u64 {
        self.durable_position().saturating_sub(self.published.load(std::sync::atomic::Ordering::Acquire))
    }
}

/// The trees of one group transaction.
struct TxView<'a> {
    records: &'a TransactionalTree,
    heads: &'a TransactionalTree,
    idempotency: &'a TransactionalTree,
    global: &'a TransactionalTree,
}

type TxResult<T> = Result<T, UnabortableTransactionError>;

impl TxView<'_> {
    /// One append inside the group transaction. Every check comes before the
    /// first write, so a rejected append leaves nothing behind.
    fn apply_one(
        &self,
        append: &ValidAppend,
        event_ids: &[String],
        fingerprints: &[Hash],
        next_position: u64,
        now_micros: i64,
    ) -> TxResult<Result<Applied, Reject>> {
        let stream = append.stream_id.as_str();
        // Idempotency first: a retry of a committed append must get its
        // original result even though its expected version is now stale.
        let mut repeated: Vec<(usize, u64)> = Vec::new();
        let mut new_index = None;
        for (i, event) in append.events.iter().enumerate() {
            let Some(key) = &event.idempotency_key else {
                new_index.get_or_insert(i);
                continue;
            };
            match self.idempotency.get(layout::idempotency_key(stream, key))? {
                None => {
                    new_index.get_or_insert(i);
                }
                Some(value) => {
                    let Some((version, fp)) = parse_idempotency_value(&value) else {
                        return Ok(Err(Reject::Corrupt {
                            version: 0,
                            reason: format!("idempotency entry of {key:?}"),
                        }));
                    };
                    if fp != fingerprints[i] {
                        return Ok(Err(Reject::KeyReused { key: key.clone(), version }));
                    }
                    repeated.push((i, version));
                }
            }
        }
        if let Some(&(repeated_index, _)) = repeated.first() {
            if let Some(new_index) = new_index {
                return Ok(Err(Reject::PartialRepeat { repeated_index, new_index }));
            }
            let mut events = Vec::with_capacity(repeated.len());
            for (_, version) in repeated {
                match read_appended(self.records, stream, version)? {
                    Ok(event) => events.push(event),
                    Err(reject) => return Ok(Err(reject)),
                }
            }
            return Ok(Ok(Applied::Deduplicated(AppendOutcome { events, deduplicated: true })));
        }

        let head_value = self.heads.get(stream.as_bytes())?;
        let head = match &head_value {
            None => None,
            Some(value) => match layout::parse_head_value(value) {
                Some(head) => Some(head),
                None => return Ok(Err(Reject::Corrupt { version: 0, reason: "unreadable stream head".into() })),
            },
        };
        let actual = head.map(|(v, _)| v);
        let ok = match append.expected {
            ExpectedVersion::Any => true,
            ExpectedVersion::NoStream => actual.is_none(),
            ExpectedVersion::Exact(v) => actual == Some(v),
        };
        if !ok {
            return Ok(Err(Reject::WrongExpectedVersion { actual }));
        }

        // The battle guard, against the state stored with the head (earlier
        // appends of this group included: the transaction reads its own writes).
        let mut state = match (&head_value, actual) {
            (Some(value), Some(version)) => match layout::parse_head_state(value) {
                Some(Some(state)) => Some(state),
                Some(None) => match self.fold_legacy(stream, version)? {
                    Ok(state) => Some(state),
                    Err(reject) => return Ok(Err(reject)),
                },
                None => {
                    return Ok(Err(Reject::Corrupt {
                        version,
                        reason: "unreadable battle state in the stream head".into(),
                    }));
                }
            },
            _ => None,
        };
        for (i, checked) in append.checked.iter().enumerate() {
            match guard::apply(state, i, checked) {
                Ok(next) => state = Some(next),
                Err(violation) => return Ok(Err(Reject::Refused(violation))),
            }
        }
        let Some(state) = state else {
            return Ok(Err(Reject::Corrupt { version: 0, reason: "an append without events".into() }));
        };

        let mut previous = head.map_or_else(|| record::genesis_hash(stream), |(_, h)| h);
        let first_version = actual.map_or(0, |v| v + 1);
        let mut events = Vec::with_capacity(append.events.len());
        for (i, event) in append.events.iter().enumerate() {
            let version = first_version + i as u64;
            let position = next_position + i as u64;
            let rec = JournalRecord {
                stream_id: stream.to_owned(),
                version,
                event_id: event_ids[i].clone(),
                event_type: event.event_type.clone(),
                recorded_at_unix_micros: now_micros,
                idempotency_key: event.idempotency_key.clone().unwrap_or_default(),
                payload: event.payload.clone(),
            };
            let bytes = record::encode(&rec);
            let hash = record::chain_hash(&previous, &bytes);
            let key = layout::record_key(stream, version);
            let position_key = layout::position_key(position);
            self.records.insert(key.as_slice(), layout::record_value(&hash, position, &bytes))?;
            self.global.insert(&position_key[..], key.as_slice())?;
            if let Some(k) = &event.idempotency_key {
                self.idempotency
                    .insert(layout::idempotency_key(stream, k), idempotency_value(version, &fingerprints[i]))?;
            }
            previous = hash;
            events.push(AppendedEvent {
                version,
                global_position: position,
                event_id: event_ids[i].clone(),
                hash,
                recorded_at_unix_micros: now_micros,
            });
        }
        let last = first_version + append.events.len() as u64 - 1;
        self.heads.insert(stream.as_bytes(), layout::head_value(last, &previous, &state))?;
        Ok(Ok(Applied::Appended(AppendOutcome { events, deduplicated: false })))
    }

    /// The battle state of a stream whose head predates the guard: its
    /// records folded once (the append then stores the state with the head).
    /// A history that does not fold as a battle takes no more appends: the
    /// guard could not vouch for anything after it.
    fn fold_legacy(&self, stream: &str, head_version: u64) -> TxResult<Result<BattleState, Reject>> {
        let mut state = None;
        for version in 0..=head_version {
            let corrupt = |reason: &str| Reject::Corrupt { version, reason: reason.into() };
            let Some(value) = self.records.get(layout::record_key(stream, version))? else {
                return Ok(Err(corrupt("record missing")));
            };
            let Some((_, _, bytes)) = layout::split_record_value(&value) else {
                return Ok(Err(corrupt("record truncated")));
            };
            let Ok(record) = record::decode(bytes) else {
                return Ok(Err(corrupt("record does not decode")));
            };
            let step = guard::inspect(0, &record.event_type, &record.payload).and_then(|c| guard::apply(state, 0, &c));
            match step {
                Ok(next) => state = Some(next),
                Err(v) => {
                    return Ok(Err(Reject::Refused(Violation {
                        field: "stream_id".into(),
                        rule: guard::Rule::StreamNotABattle,
                        message: format!(
                            "version {version}, stored before the battle guard, breaks {}: {}",
                            v.rule.reason(),
                            v.message
                        ),
                    })));
                }
            }
        }
        Ok(state.ok_or(Reject::Corrupt { version: 0, reason: "a head without records".into() }))
    }
}

impl Reject {
    fn into_error(self, append: &ValidAppend) -> JournalError {
        let stream_id = append.stream_id.clone();
        match self {
            Reject::Refused(Violation { field, rule, message }) => {
                JournalError::EventRefused { stream_id, field, rule, message }
            }
            Reject::WrongExpectedVersion { actual } => {
                JournalError::WrongExpectedVersion { stream_id, expected: append.expected, actual }
            }
            Reject::KeyReused { key, version } => JournalError::IdempotencyKeyReused { stream_id, key, version },
            Reject::PartialRepeat { repeated_index, new_index } => {
                JournalError::IdempotencyPartialRepeat { stream_id, repeated_index, new_index }
            }
            Reject::Corrupt { version, reason } => JournalError::Corrupt { stream_id, version, reason },
        }
    }
}

fn broken(version: u64, reason: impl Into<String>) -> ChainCheck {
    ChainCheck::Broken { version, reason: reason.into() }
}

fn idempotency_value(version: u64, fingerprint: &Hash) -> Vec<u8> {
    let mut value = Vec::with_capacity(40);
    value.extend_from_slice(&version.to_be_bytes());
    value.extend_from_slice(fingerprint);
    value
}

fn parse_idempotency_value(value: &[u8]) -> Option<(u64, Hash)> {
    if value.len() != 40 {
        return None;
    }
    Some((u64::from_be_bytes(value[..8].try_into().ok()?), value[8..].try_into().ok()?))
}

fn read_appended(
    records: &TransactionalTree,
    stream_id: &str,
    version: u64,
) -> TxResult<Result<AppendedEvent, Reject>> {
    let corrupt = |reason: &str| Reject::Corrupt { version, reason: reason.into() };
    let Some(value) = records.get(layout::record_key(stream_id, version))? else {
        return Ok(Err(corrupt("record missing")));
    };
    let Some((hash, global_position, bytes)) = layout::split_record_value(&value) else {
        return Ok(Err(corrupt("record truncated")));
    };
    let Ok(decoded) = record::decode(bytes) else {
        return Ok(Err(corrupt("record does not decode")));
    };
    Ok(Ok(AppendedEvent {
        version,
        global_position,
        event_id: decoded.event_id,
        hash,
        recorded_at_unix_micros: decoded.recorded_at_unix_micros,
    }))
}

fn decode_stored(stream_id: &str, version: u64, value: &[u8]) -> Result<StoredEvent, JournalError> {
    let corrupt = |reason: String| JournalError::Corrupt { stream_id: stream_id.to_owned(), version, reason };
    let (hash, global_position, bytes) =
        layout::split_record_value(value).ok_or_else(|| corrupt("record truncated".into()))?;
    let event = record::decode(bytes).map_err(|e| corrupt(format!("record does not decode: {e}")))?;
    Ok(StoredEvent { global_position, hash, record: bytes.to_vec(), event })
}

fn decode_position(key: &[u8]) -> Result<u64, JournalError> {
    let bytes: [u8; 8] = key.try_into().map_err(|_| JournalError::Corrupt {
        stream_id: String::new(),
        version: 0,
        reason: "unreadable global position key".into(),
    })?;
    Ok(u64::from_be_bytes(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guard::Rule;
    use crate::journal::tests::{opened, rolled};
    use crate::limits::{Limits, NewEvent, validate_append};

    fn valid(stream: &str, events: Vec<NewEvent>) -> ValidAppend {
        validate_append(&Limits::default(), stream.into(), ExpectedVersion::Any, events).expect("valid")
    }

    fn ids(append: &ValidAppend) -> Vec<String> {
        (0..append.events.len()).map(|i| format!("id-{i}")).collect()
    }

    /// Several appends to one stream in one group transaction: each is
    /// checked against the state the earlier ones left, and a refused one in
    /// the middle neither writes nor disturbs its neighbours.
    #[test]
    fn a_group_checks_each_append_against_the_ones_before_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        let appends = [
            valid("b", vec![opened("")]),
            valid("b", vec![rolled(0, 0)]),
            valid("b", vec![rolled(0, 5)]),
            valid("b", vec![rolled(0, 0)]),
            valid("b", vec![rolled(0, 1), rolled(0, 2)]),
        ];
        let ids: Vec<_> = appends.iter().map(ids).collect();
        let group: Vec<_> = appends.iter().zip(&ids).map(|(a, i)| (a, i.as_slice())).collect();
        let outcomes = store.apply_group(&group, 0, 0).unwrap();
        let summary: Vec<_> = outcomes
            .iter()
            .map(|o| match o {
                Ok(Applied::Appended(a)) => Ok(a.events.iter().map(|e| e.version).collect::<Vec<_>>()),
                Ok(Applied::Deduplicated(_)) => panic!("no keys here"),
                Err(JournalError::EventRefused { rule, .. }) => Err(*rule),
                Err(other) => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            summary,
            [Ok(vec![0]), Ok(vec![1]), Err(Rule::NonceOutOfOrder), Err(Rule::NonceOutOfOrder), Ok(vec![2, 3])]
        );
        let head = store.heads.get("b").unwrap().unwrap();
        let state = layout::parse_head_state(&head).unwrap().unwrap();
        assert_eq!((state.next_nonce, state.epoch, state.revealed, state.closed), (3, 0, false, false));
    }

    /// A head written before the guard (40 bytes, no state): the first append
    /// folds the stream once and stores the state; a history that is not a
    /// battle takes no more appends.
    #[test]
    fn streams_from_before_the_guard_are_folded_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        let apply = |append: ValidAppend, position: u64| {
            let ids = ids(&append);
            store.apply_group(&[(&append, ids.as_slice())], position, 0).unwrap().pop().unwrap()
        };
        assert!(apply(valid("old", vec![opened(""), rolled(0, 0)]), 0).is_ok());
        let head = store.heads.get("old").unwrap().unwrap();
        store.heads.insert("old", &head[..layout::LEGACY_HEAD_BYTES]).unwrap();
        assert!(matches!(
            apply(valid("old", vec![rolled(0, 0)]), 2),
            Err(JournalError::EventRefused { rule: Rule::NonceOutOfOrder, .. })
        ));
        assert!(apply(valid("old", vec![rolled(0, 1)]), 2).is_ok(), "the fold found nonce 1 next");
        assert_eq!(store.heads.get("old").unwrap().unwrap().len(), layout::LEGACY_HEAD_BYTES + guard::STATE_BYTES);

        // A legacy stream whose version 0 is junk, as the guard never let in.
        let junk = JournalRecord {
            stream_id: "junk".into(),
            event_type: "E".into(),
            payload: b"x".to_vec(),
            ..Default::default()
        };
        let bytes = record::encode(&junk);
        let hash = record::chain_hash(&record::genesis_hash("junk"), &bytes);
        store.records.insert(layout::record_key("junk", 0), layout::record_value(&hash, 9, &bytes)).unwrap();
        let mut legacy_head = 0u64.to_be_bytes().to_vec();
        legacy_head.extend_from_slice(&hash);
        store.heads.insert("junk", legacy_head).unwrap();
        assert!(matches!(
            apply(valid("junk", vec![rolled(0, 0)]), 10),
            Err(JournalError::EventRefused { rule: Rule::StreamNotABattle, .. })
        ));
    }

    /// The outbox names each event's tenant, read from the stream's version 0.
    #[test]
    fn outbox_events_carry_their_battles_tenant() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        let appends = [
            valid("a", vec![opened("forum-a"), rolled(0, 0)]),
            valid("n", vec![opened("")]),
            valid("a", vec![rolled(0, 1)]),
        ];
        let ids: Vec<_> = appends.iter().map(ids).collect();
        let group: Vec<_> = appends.iter().zip(&ids).map(|(a, i)| (a, i.as_slice())).collect();
        store.apply_group(&group, 0, 0).unwrap();
        store.flush().unwrap();
        // A fresh store: the cache is empty, so version 2's tenant is read
        // from version 0.
        drop(store);
        let store = Store::open(dir.path(), 1 << 20).unwrap();
        store.outbox_mark_published(2).unwrap();
        let tenants: Vec<_> =
            store.outbox_batch(10).unwrap().into_iter().map(|e| (e.event.stream_id, e.tenant)).collect();
        assert_eq!(tenants, [("a".to_owned(), "forum-a".to_owned())]);
        store.published.store(0, std::sync::atomic::Ordering::Release);
        let tenants: Vec<_> = store.outbox_batch(10).unwrap().into_iter().map(|e| e.tenant).collect();
        assert_eq!(tenants, ["forum-a", "forum-a", "_", "forum-a"]);
    }
}
