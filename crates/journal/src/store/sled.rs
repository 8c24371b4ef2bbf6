//! The sled provider: the [`super::kv`] layout, one sled tree per table, on
//! local disk. Every sled type stays in this module.
//!
//! **How a group is made atomic without a sled transaction.** A sled 0.34
//! transaction (or `Tree::apply_batch`, the same mechanism) seals its log
//! buffer before and after its writes so that recovery can tell a whole batch
//! from part of one; measured here, that costs about two plain insert+flush
//! round trips, not one. This provider gets the same all-or-nothing with
//! plain inserts and a redo record instead:
//!
//! 1. plan the group in memory ([`super::kv::plan_group`]), reading through
//!    its own pending writes;
//! 2. insert the commit record `outbox/commit/redo` = (end position, every
//!    write of the group);
//! 3. insert the writes, in order;
//! 4. insert `outbox/commit/done` = end position;
//! 5. the committer flushes once.
//!
//! sled keeps one log for all its trees and recovers a prefix of it (its
//! recovery stops at the first message not completely on disk, the property
//! its own batches rely on), and all five steps run on the committer's one
//! thread, in that log order. So after a crash either the redo record of the
//! last group is missing (and, being its first write, so is all of the
//! group: nothing to do), or it is there; then, if `done` does not match it,
//! [`SledStore::open`] writes the whole group again (every write is an
//! insert of a fixed value, so writing twice is writing once) before
//! anything reads. Each group overwrites the same two keys, so the commit
//! record costs one extra insert of the group's bytes, not a growing log.
//!
//! Readers only see events below the durable watermark, so they never see a
//! group before its flush.

use std::path::Path;
use std::sync::RwLock;

use tracing::warn;

use super::kv::{self, KvRead, Table, Visit, Visitor, WriteSet};
use super::{Applied, ChainCheck, EventStore, GroupAppend, StorageError, StoredEvent, StreamHead};
use crate::error::JournalError;

/// The commit record's key in the `outbox` table: end position and writes
/// of the last group.
pub const COMMIT_REDO: &[u8] = b"commit/redo";
/// The key saying the last group is completely written: its end position.
pub const COMMIT_DONE: &[u8] = b"commit/done";

const ENGINE: &str = "sled";

fn storage(e: sled::Error) -> JournalError {
    JournalError::Storage(StorageError::new(ENGINE, e))
}

/// The journal's tables in a sled database.
#[derive(Debug)]
pub struct SledStore {
    kv: Trees,
    /// Held for writing while a group is written, so that a chain check
    /// reading a head under it for reading sees it only together with every
    /// record below it (sled gives plain reads no multi-tree snapshot).
    writing: RwLock<()>,
}

impl SledStore {
    /// Opens (or creates) the database in `dir`, and finishes the last
    /// group if a crash cut it short. Everything on disk afterwards is
    /// durable.
    pub fn open(dir: &Path, cache_capacity_bytes: u64) -> Result<Self, JournalError> {
        let db = sled::Config::new().path(dir).cache_capacity(cache_capacity_bytes).open().map_err(storage)?;
        let trees =
            Table::ALL.iter().map(|t| db.open_tree(t.name())).collect::<Result<Vec<_>, _>>().map_err(storage)?;
        let store = Self { kv: Trees { db, trees }, writing: RwLock::new(()) };
        store.recover()?;
        Ok(store)
    }

    fn tree(&self, table: Table) -> &sled::Tree {
        self.kv.tree(table)
    }

    /// Writes the last group again if its `done` marker is missing.
    fn recover(&self) -> Result<(), JournalError> {
        let outbox = self.tree(Table::Outbox);
        let Some(redo) = outbox.get(COMMIT_REDO).map_err(storage)? else { return Ok(()) };
        let corrupt = || JournalError::Corrupt {
            stream_id: String::new(),
            version: 0,
            reason: "unreadable commit record".into(),
        };
        let (end, writes) = redo.split_at_checked(8).ok_or_else(corrupt)?;
        let done = outbox.get(COMMIT_DONE).map_err(storage)?;
        if done.as_deref() == Some(end) {
            return Ok(());
        }
        let writes = WriteSet::decode(writes).ok_or_else(corrupt)?;
        warn!(end = kv::decode_position(end)?, writes = writes.writes.len(), "finishing a group cut short by a crash");
        self.write(&writes)?;
        outbox.insert(COMMIT_DONE, end).map_err(storage)?;
        self.kv.db.flush().map_err(storage)?;
        Ok(())
    }

    fn write(&self, writes: &WriteSet) -> Result<(), JournalError> {
        for (table, key, value) in &writes.writes {
            self.tree(*table).insert(key.as_slice(), value.as_slice()).map_err(storage)?;
        }
        Ok(())
    }

    /// Steps 2–4 of the module doc: commit record, writes, done marker.
    fn commit(&self, writes: &WriteSet, end: u64) -> Result<(), JournalError> {
        let outbox = self.tree(Table::Outbox);
        let mut redo = end.to_be_bytes().to_vec();
        redo.extend_from_slice(&writes.encode());
        outbox.insert(COMMIT_REDO, redo).map_err(storage)?;
        self.write(writes)?;
        outbox.insert(COMMIT_DONE, &end.to_be_bytes()[..]).map_err(storage)?;
        Ok(())
    }

    /// A crash after the commit record and the first `n` writes of a group:
    /// what a torn group looks like on disk.
    #[cfg(test)]
    pub(crate) fn commit_torn(&self, writes: &WriteSet, end: u64, n: usize) -> Result<(), JournalError> {
        let mut redo = end.to_be_bytes().to_vec();
        redo.extend_from_slice(&writes.encode());
        self.tree(Table::Outbox).insert(COMMIT_REDO, redo).map_err(storage)?;
        let mut first = WriteSet::default();
        for (table, key, value) in writes.writes.iter().take(n) {
            first.put(*table, key.clone(), value.clone());
        }
        self.write(&first)?;
        self.kv.db.flush().map_err(storage)?;
        Ok(())
    }

    /// Plans a group without writing it (for [`SledStore::commit_torn`]).
    #[cfg(test)]
    pub(crate) fn plan(&self, group: &[GroupAppend<'_>], first_position: u64) -> WriteSet {
        kv::plan_group(&self.kv, group, first_position, 0).expect("plan").1
    }

    /// The raw value of `key` in `table` (for tests that look at the layout).
    #[cfg(test)]
    pub(crate) fn raw(&self, table: Table, key: &[u8]) -> Option<Vec<u8>> {
        self.tree(table).get(key).expect("get").map(|v| v.to_vec())
    }

    /// Puts a raw value (for tests that write what an older journal wrote).
    #[cfg(test)]
    pub(crate) fn put_raw(&self, table: Table, key: &[u8], value: &[u8]) {
        self.tree(table).insert(key, value).expect("insert");
    }
}

/// The sled database and one tree per [`Table`] (indexed by its tag): the
/// key-value reads the shared layout code runs on. Private, so that no sled
/// type leaves this module.
#[derive(Debug)]
struct Trees {
    db: sled::Db,
    trees: Vec<sled::Tree>,
}

impl Trees {
    fn tree(&self, table: Table) -> &sled::Tree {
        &self.trees[usize::from(table.tag())]
    }
}

impl KvRead for Trees {
    type Value = sled::IVec;

    fn get(&self, table: Table, key: &[u8]) -> Result<Option<sled::IVec>, JournalError> {
        self.tree(table).get(key).map_err(storage)
    }

    fn scan(
        &self,
        table: Table,
        from: &[u8],
        to: &[u8],
        reverse: bool,
        visit: &mut Visitor<'_>,
    ) -> Result<(), JournalError> {
        let range = self.tree(table).range(from..=to);
        let mut step = |item: sled::Result<(sled::IVec, sled::IVec)>| {
            let (key, value) = item.map_err(storage)?;
            visit(&key, &value)
        };
        if reverse {
            for item in range.rev() {
                if let Visit::Stop = step(item)? {
                    break;
                }
            }
        } else {
            for item in range {
                if let Visit::Stop = step(item)? {
                    break;
                }
            }
        }
        Ok(())
    }

    fn last_key(&self, table: Table) -> Result<Option<Vec<u8>>, JournalError> {
        Ok(self.tree(table).last().map_err(storage)?.map(|(k, _)| k.to_vec()))
    }
}

impl EventStore for SledStore {
    fn next_position(&self) -> Result<u64, JournalError> {
        kv::next_position(&self.kv)
    }

    fn append_group(
        &self,
        group: &[GroupAppend<'_>],
        first_position: u64,
        now_micros: i64,
    ) -> Result<Vec<Result<Applied, JournalError>>, JournalError> {
        let _writing = self.writing.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        let (outcomes, writes) = kv::plan_group(&self.kv, group, first_position, now_micros)?;
        if !writes.is_empty() {
            let appended: u64 = outcomes
                .iter()
                .map(|o| match o {
                    Ok(Applied::Appended(a)) => a.events.len() as u64,
                    _ => 0,
                })
                .sum();
            self.commit(&writes, first_position + appended)?;
        }
        Ok(outcomes)
    }

    fn flush(&self) -> Result<(), JournalError> {
        self.kv.db.flush().map_err(storage)?;
        Ok(())
    }

    fn read_stream(
        &self,
        stream_id: &str,
        from_version: u64,
        max_count: usize,
        max_bytes: usize,
        durable: u64,
    ) -> Result<Vec<StoredEvent>, JournalError> {
        kv::read_stream(&self.kv, stream_id, from_version, max_count, max_bytes, durable)
    }

    fn read_all(
        &self,
        from_position: u64,
        max_count: usize,
        max_bytes: usize,
        durable: u64,
    ) -> Result<Vec<StoredEvent>, JournalError> {
        kv::read_all(&self.kv, from_position, max_count, max_bytes, durable)
    }

    fn stream_head(&self, stream_id: &str, durable: u64) -> Result<StreamHead, JournalError> {
        kv::stream_head(&self.kv, stream_id, durable)
    }

    fn verify_chain(&self, stream_id: &str, durable: u64) -> Result<ChainCheck, JournalError> {
        let head = {
            let _writing = self.writing.read().unwrap_or_else(|poisoned| poisoned.into_inner());
            self.kv.get(Table::Heads, stream_id.as_bytes())?
        };
        kv::verify_chain(&self.kv, stream_id, head.as_deref(), durable)
    }

    fn outbox_cursor(&self) -> Result<u64, JournalError> {
        kv::outbox_cursor(&self.kv)
    }

    fn set_outbox_cursor(&self, next: u64) -> Result<(), JournalError> {
        self.tree(Table::Outbox).insert(super::layout::OUTBOX_CURSOR, &next.to_be_bytes()[..]).map_err(storage)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guard::{self, Rule};
    use crate::journal::tests::{opened, rolled};
    use crate::limits::ExpectedVersion;
    use crate::record;
    use crate::store::conformance::{self as suite, append};
    use crate::store::layout;

    fn open(dir: &Path) -> SledStore {
        SledStore::open(dir, 1 << 20).expect("open sled")
    }

    suite::conformance_tests!({
        let dir = tempfile::tempdir().expect("temp dir");
        (Box::new(super::open(dir.path())), dir)
    });

    #[test]
    fn what_was_flushed_survives_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        suite::survives_reopen(&|| Box::new(open(dir.path())));
    }

    /// A crash after a group's commit record and part of its writes: the
    /// reopened store has all of the group, as if it had finished.
    #[test]
    fn a_group_cut_short_is_finished_on_open() {
        let dir = tempfile::tempdir().unwrap();
        let mut next = 0;
        let appends = [
            append("a", ExpectedVersion::NoStream, vec![opened(""), rolled(0, 0)]),
            append("b", ExpectedVersion::NoStream, vec![opened("")]),
        ];
        let ids: Vec<Vec<String>> = vec![vec!["a0".into(), "a1".into()], vec!["b0".into()]];
        {
            let store = open(dir.path());
            suite::group(&store, &mut next, &[append("a0", ExpectedVersion::Any, vec![opened("")])]);
            let members: Vec<_> = appends.iter().zip(&ids).map(|(a, i)| GroupAppend::new(a, i)).collect();
            let writes = store.plan(&members, next);
            assert!(writes.writes.len() > 3);
            // Two writes in: a record and its global entry, no head yet.
            store.commit_torn(&writes, next + 3, 2).unwrap();
            assert!(store.raw(Table::Heads, b"a").is_none(), "the head of `a` is not written");
        }
        let store = open(dir.path());
        assert_eq!(store.next_position().unwrap(), 4);
        let log = store.read_all(0, 100, usize::MAX, u64::MAX).unwrap();
        let got: Vec<_> = log.iter().map(|e| (e.event.stream_id.as_str(), e.event.version)).collect();
        assert_eq!(got, [("a0", 0), ("a", 0), ("a", 1), ("b", 0)]);
        assert!(matches!(store.verify_chain("a", u64::MAX).unwrap(), ChainCheck::Ok { count: 2, .. }));
        assert!(matches!(store.verify_chain("b", u64::MAX).unwrap(), ChainCheck::Ok { count: 1, .. }));
        // The guard state came with the head: nonce 1 is next in `a`.
        let mut next = 4;
        let spent = suite::group(&store, &mut next, &[append("a", ExpectedVersion::Any, vec![rolled(0, 0)])]);
        assert!(matches!(&spent[0], Err(JournalError::EventRefused { rule: Rule::NonceOutOfOrder, .. })));
    }

    /// A head written before the guard (40 bytes, no state): the first append
    /// folds the stream once and stores the state; a history that is not a
    /// battle takes no more appends.
    #[test]
    fn streams_from_before_the_guard_are_folded_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path());
        let mut next = 0;
        suite::group(&store, &mut next, &[append("old", ExpectedVersion::Any, vec![opened(""), rolled(0, 0)])]);
        let head = store.raw(Table::Heads, b"old").unwrap();
        store.put_raw(Table::Heads, b"old", &head[..layout::LEGACY_HEAD_BYTES]);
        let refused = suite::group(&store, &mut next, &[append("old", ExpectedVersion::Any, vec![rolled(0, 0)])]);
        assert!(matches!(&refused[0], Err(JournalError::EventRefused { rule: Rule::NonceOutOfOrder, .. })));
        let folded = suite::group(&store, &mut next, &[append("old", ExpectedVersion::Any, vec![rolled(0, 1)])]);
        assert!(folded[0].is_ok(), "the fold found nonce 1 next");
        assert_eq!(store.raw(Table::Heads, b"old").unwrap().len(), layout::LEGACY_HEAD_BYTES + guard::STATE_BYTES);

        // A legacy stream whose version 0 is junk, as the guard never let in.
        let junk = battlelog_proto::v1::JournalRecord {
            stream_id: "junk".into(),
            event_type: "E".into(),
            payload: b"x".to_vec(),
            ..Default::default()
        };
        let bytes = record::encode(&junk);
        let hash = record::chain_hash(&record::genesis_hash("junk"), &bytes);
        store.put_raw(Table::Records, &layout::record_key("junk", 0), &layout::record_value(&hash, 9, &bytes));
        let mut legacy_head = 0u64.to_be_bytes().to_vec();
        legacy_head.extend_from_slice(&hash);
        store.put_raw(Table::Heads, b"junk", &legacy_head);
        let refused = suite::group(&store, &mut next, &[append("junk", ExpectedVersion::Any, vec![rolled(0, 0)])]);
        assert!(matches!(&refused[0], Err(JournalError::EventRefused { rule: Rule::StreamNotABattle, .. })));
    }
}
