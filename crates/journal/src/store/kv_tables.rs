//! The journal's tables on an ordered key-value engine, written once for
//! every such provider: the layout, writing a group of planned appends (each only at
//! the head it was planned against), heads and idempotency entries for the
//! planner, reads and chain verification. A provider gives point reads and
//! ordered scans ([`KvRead`]) and writes a [`WriteSet`] atomically.
//!
//! Layout (all integers big-endian so that byte order is numeric order):
//!
//! | table         | key                              | value                                        |
//! |---------------|----------------------------------|----------------------------------------------|
//! | `records`     | stream id, 0x00, version (u64)   | h(version) (32), global position (u64), record bytes |
//! | `heads`       | stream id                        | head version (u64), head hash (32), battle state (53) |
//! | `idempotency` | stream id, 0x00, key             | version (u64), fingerprint (32)              |
//! | `global`      | global position (u64)            | the `records` key                            |
//! | `outbox`      | `published`                      | next global position to publish (u64)        |
//!
//! (sled's provider keeps its commit record in the `outbox` table too; see
//! [`super::sled`].) Stream ids never contain 0x00 (see [`crate::limits`]),
//! so a stream's keys are exactly the keys starting with `stream id, 0x00`.
//!
//! The battle state ([`crate::guard::BattleState`]: next nonce, epoch, its
//! commitment, revealed, closed, bytes) rides in the head value because every
//! append reads and rewrites the head anyway: the guard costs no extra read
//! or write, and the state is written in the same atomic group as the
//! events. A head of 40 bytes (written before the guard existed) has no
//! state; the planner folds such a stream's records once.
//!
//! The outbox is the global log from the outbox cursor on: writing an
//! event's `global` entry is writing its outbox entry, in the same group, at
//! no extra write per event.

use std::collections::HashMap;

use super::{Conflict, Head, KeyEntry, Page, PlannedAppend, StorageError, StoredEvent};
use crate::guard::BattleState;
use crate::record::{self, Hash};

/// Table names and key encodings, public so that tools (and the tampering
/// tests) can open a stopped journal's database directly.
pub mod layout {
    use super::{BattleState, Hash};

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
    pub fn head_value(version: u64, hash: &Hash, state: &BattleState) -> Vec<u8> {
        let mut value = Vec::with_capacity(LEGACY_HEAD_BYTES + crate::guard::STATE_BYTES);
        value.extend_from_slice(&version.to_be_bytes());
        value.extend_from_slice(hash);
        value.extend_from_slice(&state.encode());
        value
    }

    /// (version, hash) of a `heads` value.
    pub fn parse_head_value(value: &[u8]) -> Option<(u64, Hash)> {
        let with_state = |state_bytes| value.len() == LEGACY_HEAD_BYTES + state_bytes;
        if value.len() != LEGACY_HEAD_BYTES
            && !with_state(crate::guard::STATE_BYTES)
            && !with_state(crate::guard::STATE_BYTES_UNCOUNTED)
        {
            return None;
        }
        Some((u64::from_be_bytes(value[..8].try_into().ok()?), value[8..40].try_into().ok()?))
    }

    /// The battle state of a `heads` value: `Some(None)` for a legacy head
    /// without one, `None` when unreadable.
    pub fn parse_head_state(value: &[u8]) -> Option<Option<BattleState>> {
        match value.len() {
            LEGACY_HEAD_BYTES => Some(None),
            _ => BattleState::decode(value.get(LEGACY_HEAD_BYTES..)?).map(Some),
        }
    }

    /// `u64_be(version) || fingerprint`.
    pub fn idempotency_value(version: u64, fingerprint: &Hash) -> Vec<u8> {
        let mut value = Vec::with_capacity(40);
        value.extend_from_slice(&version.to_be_bytes());
        value.extend_from_slice(fingerprint);
        value
    }

    /// (version, fingerprint) of an `idempotency` value.
    pub fn parse_idempotency_value(value: &[u8]) -> Option<(u64, Hash)> {
        if value.len() != 40 {
            return None;
        }
        Some((u64::from_be_bytes(value[..8].try_into().ok()?), value[8..].try_into().ok()?))
    }
}

/// The tables of the layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Table {
    /// `records`.
    Records,
    /// `heads`.
    Heads,
    /// `idempotency`.
    Idempotency,
    /// `global`.
    Global,
    /// `outbox` (the cursor; sled's commit record).
    Outbox,
}

impl Table {
    /// Every table, in a fixed order (the index of each is its tag).
    pub const ALL: [Table; 5] = [Table::Records, Table::Heads, Table::Idempotency, Table::Global, Table::Outbox];

    /// Its name in the layout.
    pub fn name(self) -> &'static str {
        match self {
            Table::Records => layout::RECORDS,
            Table::Heads => layout::HEADS,
            Table::Idempotency => layout::IDEMPOTENCY,
            Table::Global => layout::GLOBAL,
            Table::Outbox => layout::OUTBOX,
        }
    }

    /// A one-byte tag (its index in [`Table::ALL`]).
    pub fn tag(self) -> u8 {
        match self {
            Table::Records => 0,
            Table::Heads => 1,
            Table::Idempotency => 2,
            Table::Global => 3,
            Table::Outbox => 4,
        }
    }

    /// The table of a tag.
    pub fn from_tag(tag: u8) -> Option<Table> {
        Table::ALL.get(usize::from(tag)).copied()
    }
}

/// What a scan visitor wants next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Visit {
    /// The next entry, please.
    More,
    /// Enough.
    Stop,
}

/// Called with each (key, value) of a scan.
pub type Visitor<'a> = dyn FnMut(&[u8], &[u8]) -> Result<Visit, StorageError> + 'a;

/// Reads of an ordered key-value engine.
pub trait KvRead {
    /// The engine's name, in its errors.
    const NAME: &'static str;

    /// A stored value.
    type Value: AsRef<[u8]>;

    /// The value of `key` in `table`.
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Self::Value>, StorageError>;

    /// Visits the entries of `table` with `from <= key <= to` in key order
    /// (or reverse order) until the visitor says stop.
    fn scan(
        &self,
        table: Table,
        from: &[u8],
        to: &[u8],
        reverse: bool,
        visit: &mut Visitor<'_>,
    ) -> Result<(), StorageError>;

    /// The last key of `table`, if any.
    fn last_key(&self, table: Table) -> Result<Option<Vec<u8>>, StorageError>;
}

/// The writes of one group, in the order they were planned. A provider
/// writes all of them or none.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct WriteSet {
    /// (table, key, value), in plan order.
    pub writes: Vec<(Table, Vec<u8>, Vec<u8>)>,
    /// Where the latest write of each (table, key) is in `writes`, so that
    /// later appends of the group read what earlier ones wrote.
    latest: HashMap<(Table, Vec<u8>), usize>,
}

impl WriteSet {
    /// Adds a write.
    pub fn put(&mut self, table: Table, key: Vec<u8>, value: Vec<u8>) {
        self.latest.insert((table, key.clone()), self.writes.len());
        self.writes.push((table, key, value));
    }

    /// Whether nothing is to be written.
    pub fn is_empty(&self) -> bool {
        self.writes.is_empty()
    }

    /// Encodes the writes: per write, tag (1), key length (u32), key, value
    /// length (u32), value.
    pub fn encode(&self) -> Vec<u8> {
        let size: usize = self.writes.iter().map(|(_, k, v)| 9 + k.len() + v.len()).sum();
        let mut out = Vec::with_capacity(size);
        for (table, key, value) in &self.writes {
            out.push(table.tag());
            for part in [key, value] {
                // Keys are ≤ a few hundred bytes and values ≤ one record;
                // both far below 4 GiB (the limits cap an append at MiBs).
                out.extend_from_slice(&u32::try_from(part.len()).unwrap_or(u32::MAX).to_be_bytes());
                out.extend_from_slice(part);
            }
        }
        out
    }

    /// Decodes [`WriteSet::encode`]'s bytes; `None` when they are not that.
    pub fn decode(mut bytes: &[u8]) -> Option<WriteSet> {
        let mut set = WriteSet::default();
        while let Some((&tag, rest)) = bytes.split_first() {
            let table = Table::from_tag(tag)?;
            let (key, rest) = take_part(rest)?;
            let (value, rest) = take_part(rest)?;
            set.put(table, key.to_vec(), value.to_vec());
            bytes = rest;
        }
        Some(set)
    }
}

fn take_part(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let (len, rest) = bytes.split_at_checked(4)?;
    let len = usize::try_from(u32::from_be_bytes(len.try_into().ok()?)).ok()?;
    rest.split_at_checked(len)
}

/// Reads through a group's pending writes to the engine.
struct Overlay<'a, K: KvRead> {
    kv: &'a K,
    pending: &'a WriteSet,
}

impl<K: KvRead> Overlay<'_, K> {
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        if let Some(&i) = self.pending.latest.get(&(table, key.to_vec())) {
            return Ok(Some(self.pending.writes[i].2.clone()));
        }
        Ok(self.kv.get(table, key)?.map(|v| v.as_ref().to_vec()))
    }
}

/// What [`write_group`] decided for each append: its global positions, or
/// the head it found instead of the expected one.
pub type GroupOutcome = Vec<Result<Vec<u64>, Conflict>>;

/// The writes of a group of planned appends, global positions from
/// `first_position`: each append whose stream head (as the engine and the
/// earlier appends of the group leave it) is still the one it was planned
/// against writes its records, `global` and idempotency entries and the new
/// head with its battle state; any other is refused with the head found and
/// writes nothing. The policy was applied by the planner; this only keeps
/// the check that makes a stale plan harmless.
pub fn write_group<K: KvRead>(
    kv: &K,
    appends: &[PlannedAppend],
    first_position: u64,
) -> Result<(GroupOutcome, WriteSet), StorageError> {
    let mut writes = WriteSet::default();
    let mut position = first_position;
    let mut outcomes = Vec::with_capacity(appends.len());
    for append in appends {
        let stream = append.stream_id.as_str();
        let view = Overlay { kv, pending: &writes };
        let actual = match view.get(Table::Heads, stream.as_bytes())? {
            None => None,
            Some(value) => Some(
                layout::parse_head_value(&value)
                    .ok_or_else(|| StorageError::corrupt(K::NAME, stream, 0, "unreadable stream head"))?
                    .0,
            ),
        };
        if actual != append.expected || append.records.is_empty() {
            outcomes.push(Err(Conflict { actual }));
            continue;
        }
        let mut positions = Vec::with_capacity(append.records.len());
        for (i, planned) in append.records.iter().enumerate() {
            let version = append.first_version() + i as u64;
            let key = layout::record_key(stream, version);
            writes.put(Table::Records, key.clone(), layout::record_value(&planned.hash, position, &planned.bytes));
            writes.put(Table::Global, layout::position_key(position).to_vec(), key);
            if let Some((k, fingerprint)) = &planned.key {
                writes.put(
                    Table::Idempotency,
                    layout::idempotency_key(stream, k),
                    layout::idempotency_value(version, fingerprint),
                );
            }
            positions.push(position);
            position += 1;
        }
        let last_hash = append.last_hash().unwrap_or_else(|| record::genesis_hash(stream));
        writes.put(
            Table::Heads,
            stream.as_bytes().to_vec(),
            layout::head_value(append.last_version(), &last_hash, &append.state),
        );
        outcomes.push(Ok(positions));
    }
    Ok((outcomes, writes))
}

/// A stream's head with its battle state, and the global position of its
/// last record (so that the caller can tell whether it is durable yet).
pub fn head<K: KvRead>(kv: &K, stream_id: &str) -> Result<Option<(Head, u64)>, StorageError> {
    let corrupt = |version, reason: &str| StorageError::corrupt(K::NAME, stream_id, version, reason);
    let Some(value) = kv.get(Table::Heads, stream_id.as_bytes())? else { return Ok(None) };
    let value = value.as_ref();
    let (version, hash) = layout::parse_head_value(value).ok_or_else(|| corrupt(0, "unreadable stream head"))?;
    let state = layout::parse_head_state(value)
        .ok_or_else(|| corrupt(version, "unreadable battle state in the stream head"))?;
    let position = record_position(kv, stream_id, version)?;
    Ok(Some((Head { version, hash, state }, position)))
}

/// The idempotency entries of `keys` in a stream, and the largest global
/// position among their records (`None` when no key is known).
pub fn idempotency<K: KvRead>(
    kv: &K,
    stream_id: &str,
    keys: &[String],
) -> Result<(Vec<Option<KeyEntry>>, Option<u64>), StorageError> {
    let mut entries = Vec::with_capacity(keys.len());
    let mut newest = None;
    for key in keys {
        let Some(value) = kv.get(Table::Idempotency, &layout::idempotency_key(stream_id, key))? else {
            entries.push(None);
            continue;
        };
        let (version, fingerprint) = layout::parse_idempotency_value(value.as_ref())
            .ok_or_else(|| StorageError::corrupt(K::NAME, stream_id, 0, format!("idempotency entry of {key:?}")))?;
        let position = record_position(kv, stream_id, version)?;
        newest = newest.max(Some(position));
        entries.push(Some(KeyEntry { version, fingerprint }));
    }
    Ok((entries, newest))
}

/// The global position of a stream's record.
fn record_position<K: KvRead>(kv: &K, stream_id: &str, version: u64) -> Result<u64, StorageError> {
    let value = kv
        .get(Table::Records, &layout::record_key(stream_id, version))?
        .ok_or_else(|| StorageError::corrupt(K::NAME, stream_id, version, "record missing"))?;
    let (_, position, _) = layout::split_record_value(value.as_ref())
        .ok_or_else(|| StorageError::corrupt(K::NAME, stream_id, version, "record truncated"))?;
    Ok(position)
}

/// The next global position: one past the last `global` key.
pub fn next_position<K: KvRead>(kv: &K) -> Result<u64, StorageError> {
    match kv.last_key(Table::Global)? {
        Some(key) => Ok(decode_position::<K>(&key)? + 1),
        None => Ok(0),
    }
}

/// The outbox cursor (0 when never moved).
pub fn outbox_cursor<K: KvRead>(kv: &K) -> Result<u64, StorageError> {
    match kv.get(Table::Outbox, layout::OUTBOX_CURSOR)? {
        Some(value) => decode_position::<K>(value.as_ref()),
        None => Ok(0),
    }
}

/// See [`super::EventStore::read_stream`].
pub fn read_stream<K: KvRead>(
    kv: &K,
    stream_id: &str,
    from_version: u64,
    page: Page,
    durable: u64,
) -> Result<Vec<StoredEvent>, StorageError> {
    let Page { max_count, max_bytes, weigh } = page;
    let start = layout::record_key(stream_id, from_version);
    let end = layout::record_key(stream_id, u64::MAX);
    let mut out = Vec::new();
    let mut bytes = 0usize;
    let mut expected = from_version;
    kv.scan(Table::Records, &start, &end, false, &mut |key, value| {
        if out.len() >= max_count {
            return Ok(Visit::Stop);
        }
        let version = layout::parse_record_key(key).map_or(u64::MAX, |(_, v)| v);
        let event = decode_stored::<K>(stream_id, version, value)?;
        if event.global_position >= durable {
            return Ok(Visit::Stop);
        }
        if version != expected {
            return Err(StorageError::corrupt(K::NAME, stream_id, expected, "record missing"));
        }
        // Cut by what the caller weighs (the journal: the page on the wire).
        let weight = weigh(event.record.len());
        if !out.is_empty() && bytes + weight > max_bytes {
            return Ok(Visit::Stop);
        }
        bytes += weight;
        expected += 1;
        out.push(event);
        Ok(Visit::More)
    })?;
    Ok(out)
}

/// See [`super::EventStore::read_all`].
pub fn read_all<K: KvRead>(
    kv: &K,
    from_position: u64,
    page: Page,
    durable: u64,
) -> Result<Vec<StoredEvent>, StorageError> {
    let Page { max_count, max_bytes, weigh } = page;
    let mut record_keys = Vec::new();
    kv.scan(Table::Global, &layout::position_key(from_position), &[0xff; 8], false, &mut |key, record_key| {
        if record_keys.len() >= max_count || decode_position::<K>(key)? >= durable {
            return Ok(Visit::Stop);
        }
        record_keys.push(record_key.to_vec());
        Ok(Visit::More)
    })?;
    let mut out = Vec::with_capacity(record_keys.len());
    let mut bytes = 0usize;
    for record_key in record_keys {
        let event = read_by_record_key(kv, &record_key)?;
        let weight = weigh(event.record.len());
        if !out.is_empty() && bytes + weight > max_bytes {
            break;
        }
        bytes += weight;
        out.push(event);
    }
    Ok(out)
}

fn read_by_record_key<K: KvRead>(kv: &K, record_key: &[u8]) -> Result<StoredEvent, StorageError> {
    let (stream_id, version) = layout::parse_record_key(record_key).ok_or_else(|| {
        StorageError::corrupt(
            K::NAME,
            &String::from_utf8_lossy(record_key),
            0,
            "unreadable record key in the global log",
        )
    })?;
    let value = kv
        .get(Table::Records, record_key)?
        .ok_or_else(|| StorageError::corrupt(K::NAME, stream_id, version, "record missing"))?;
    decode_stored::<K>(stream_id, version, value.as_ref())
}

fn decode_stored<K: KvRead>(stream_id: &str, version: u64, value: &[u8]) -> Result<StoredEvent, StorageError> {
    let corrupt = |reason: String| StorageError::corrupt(K::NAME, stream_id, version, reason);
    let (hash, global_position, bytes) =
        layout::split_record_value(value).ok_or_else(|| corrupt("record truncated".to_owned()))?;
    let event = record::decode(bytes).map_err(|e| corrupt(format!("record does not decode: {e}")))?;
    Ok(StoredEvent { global_position, hash, record: bytes.to_vec(), event })
}

/// A big-endian u64 key or value.
pub fn decode_position<K: KvRead>(bytes: &[u8]) -> Result<u64, StorageError> {
    let bytes: [u8; 8] =
        bytes.try_into().map_err(|_| StorageError::corrupt(K::NAME, "", 0, "unreadable global position"))?;
    Ok(u64::from_be_bytes(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_sets_round_trip_and_junk_is_refused() {
        let mut set = WriteSet::default();
        set.put(Table::Records, b"s\0\0".to_vec(), vec![1; 300]);
        set.put(Table::Heads, b"s".to_vec(), Vec::new());
        set.put(Table::Outbox, Vec::new(), b"v".to_vec());
        let bytes = set.encode();
        assert_eq!(WriteSet::decode(&bytes), Some(set));
        assert_eq!(WriteSet::decode(&bytes[..bytes.len() - 1]), None, "cut short");
        assert_eq!(WriteSet::decode(&[9, 0, 0, 0, 0, 0, 0, 0, 0]), None, "no such table");
        assert_eq!(WriteSet::decode(&[]), Some(WriteSet::default()));
    }
}
