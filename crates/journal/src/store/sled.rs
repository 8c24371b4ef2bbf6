//! The sled provider: the [`super::kv_tables`] layout, one sled tree per table, on
//! local disk. Every sled type stays in this module.
//!
//! **How a group is made atomic without a sled transaction.** A sled 0.34
//! transaction (or `Tree::apply_batch`, the same mechanism) seals its log
//! buffer before and after its writes so that recovery can tell a whole batch
//! from part of one; measured here, that costs about two plain insert+flush
//! round trips, not one. This provider gets the same all-or-nothing with
//! plain inserts and a redo record instead:
//!
//! 1. plan the group's writes in memory ([`super::kv_tables::write_group`]),
//!    reading through its own pending writes;
//! 2. insert the commit record `outbox/commit/redo` = (end position, every
//!    write of the group);
//! 3. insert the writes, in order;
//! 4. insert `outbox/commit/done` = end position;
//! 5. the committer flushes once.
//!
//! sled keeps one log for all its trees and recovers a prefix of it (its
//! recovery stops at the first message not completely on disk, the property
//! its own batches rely on), and all five steps run on the committer's one
//! writer ([`super::group_commit`]), in that log order. So after a crash either the redo record of the
//! last group is missing (and, being its first write, so is all of the
//! group: nothing to do), or it is there; then, if `done` does not match it,
//! [`SledTrees::open`] writes the whole group again (every write is an
//! insert of a fixed value, so writing twice is writing once) before
//! anything reads. Each group overwrites the same two keys, so the commit
//! record costs one extra insert of the group's bytes, not a growing log.
//!
//! Readers only see events below the durable watermark, so they never see a
//! group before its flush.

use std::path::Path;

use tracing::warn;

use super::group_commit::{KvEngine, KvStore};
use super::kv_tables::{self, KvRead, Table, Visit, Visitor, WriteSet};
use super::{StorageError, StorageErrorKind};

/// The commit record's key in the `outbox` table: end position and writes
/// of the last group.
pub const COMMIT_REDO: &[u8] = b"commit/redo";
/// The key saying the last group is completely written: its end position.
pub const COMMIT_DONE: &[u8] = b"commit/done";

const ENGINE: &str = "sled";

/// sled's own errors: I/O or a bug of sled's, which no retry fixes.
fn storage(e: sled::Error) -> StorageError {
    StorageError::engine_error(StorageErrorKind::Fatal, ENGINE, e)
}

/// How long opening waits for sled's lock on the directory to come free.
/// A lock can outlive its handle by a moment, for two reasons. sled 0.34
/// lets go a little after its `Db` is dropped (a background thread of the
/// old handle still holds the file: sled issues #1234, #1289). And a child
/// process started on another thread while the directory was open gets a
/// copy of the lock file's descriptor, which keeps the lock until the
/// child's exec closes it (`flock` belongs to the open file, not to one
/// descriptor). So a journal reopened in the same process, as a restart in
/// place or a test does, can find the lock held for a few milliseconds. A
/// journal that really holds the directory holds it for its whole life,
/// far longer than this.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Opens sled in `dir`, waiting up to `lock_wait` while sled finds the
/// directory's lock held.
fn open_db(dir: &Path, cache_capacity_bytes: u64, lock_wait: std::time::Duration) -> Result<sled::Db, StorageError> {
    let deadline = std::time::Instant::now() + lock_wait;
    let mut pause = std::time::Duration::from_millis(5);
    loop {
        match sled::Config::new().path(dir).cache_capacity(cache_capacity_bytes).open() {
            Ok(db) => return Ok(db),
            Err(e) if lock_refused(&e) => {
                if std::time::Instant::now() >= deadline {
                    return Err(StorageError::fatal(
                        ENGINE,
                        format!("the data directory {} is in use: another journal holds its lock ({e})", dir.display()),
                    ));
                }
                std::thread::sleep(pause);
                pause = (pause * 2).min(std::time::Duration::from_millis(100));
            }
            Err(e) => return Err(storage(e)),
        }
    }
}

/// Whether sled refused to open because another handle holds the
/// directory's lock. sled says so only in its message. sled is pinned
/// (`=0.34.7`), and `a_directory_in_use_is_refused_by_name` fails if the
/// wording changes. The message is read rather than the lock tried again
/// after sled's refusal: a holder that lets go between the two tries would
/// make the refusal look like an error of sled's own, and our own try
/// would be one more lock for a child forked meanwhile to keep.
fn lock_refused(e: &sled::Error) -> bool {
    matches!(e, sled::Error::Io(io) if io.kind() == std::io::ErrorKind::Other
        && io.to_string().contains("could not acquire lock"))
}

/// The journal on sled: [`KvStore`]'s group commit on [`SledTrees`].
pub type SledStore = KvStore<SledTrees>;

impl KvStore<SledTrees> {
    /// Opens (or creates) the database in `dir`, finishes the last group if
    /// a crash cut it short, and starts the committer (groups of at most
    /// `max_batch` appends). Blocks while sled recovers its log.
    pub fn open(dir: &Path, cache_capacity_bytes: u64, max_batch: usize) -> Result<Self, StorageError> {
        KvStore::start(SledTrees::open(dir, cache_capacity_bytes)?, max_batch)
    }
}

/// The sled database and one tree per [`Table`] (indexed by its tag). No
/// sled type leaves this module.
#[derive(Debug)]
pub struct SledTrees {
    db: sled::Db,
    trees: Vec<sled::Tree>,
}

impl SledTrees {
    /// Opens the database and finishes a group a crash cut short.
    pub fn open(dir: &Path, cache_capacity_bytes: u64) -> Result<Self, StorageError> {
        let db = open_db(dir, cache_capacity_bytes, LOCK_WAIT)?;
        let trees =
            Table::ALL.iter().map(|t| db.open_tree(t.name())).collect::<Result<Vec<_>, _>>().map_err(storage)?;
        let store = Self { db, trees };
        store.recover()?;
        Ok(store)
    }

    fn tree(&self, table: Table) -> &sled::Tree {
        &self.trees[usize::from(table.tag())]
    }

    /// Writes the last group again if its `done` marker is missing.
    fn recover(&self) -> Result<(), StorageError> {
        let outbox = self.tree(Table::Outbox);
        let Some(redo) = outbox.get(COMMIT_REDO).map_err(storage)? else { return Ok(()) };
        let corrupt = || StorageError::corrupt(ENGINE, "", 0, "unreadable commit record");
        let (end, writes) = redo.split_at_checked(8).ok_or_else(corrupt)?;
        let done = outbox.get(COMMIT_DONE).map_err(storage)?;
        if done.as_deref() == Some(end) {
            return Ok(());
        }
        let writes = WriteSet::decode(writes).ok_or_else(corrupt)?;
        warn!(
            end = kv_tables::decode_position::<Self>(end)?,
            writes = writes.writes.len(),
            "finishing a group cut short by a crash"
        );
        self.write(&writes)?;
        outbox.insert(COMMIT_DONE, end).map_err(storage)?;
        self.db.flush().map_err(storage)?;
        Ok(())
    }

    fn write(&self, writes: &WriteSet) -> Result<(), StorageError> {
        for (table, key, value) in &writes.writes {
            self.tree(*table).insert(key.as_slice(), value.as_slice()).map_err(storage)?;
        }
        Ok(())
    }

    /// A crash after the commit record and the first `n` writes of a group:
    /// what a torn group looks like on disk.
    #[cfg(test)]
    pub(crate) fn commit_torn(&self, writes: &WriteSet, end: u64, n: usize) -> Result<(), StorageError> {
        let mut redo = end.to_be_bytes().to_vec();
        redo.extend_from_slice(&writes.encode());
        self.tree(Table::Outbox).insert(COMMIT_REDO, redo).map_err(storage)?;
        let mut first = WriteSet::default();
        for (table, key, value) in writes.writes.iter().take(n) {
            first.put(*table, key.clone(), value.clone());
        }
        self.write(&first)?;
        self.db.flush().map_err(storage)?;
        Ok(())
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

impl KvRead for SledTrees {
    const NAME: &'static str = ENGINE;
    type Value = sled::IVec;

    fn get(&self, table: Table, key: &[u8]) -> Result<Option<sled::IVec>, StorageError> {
        self.tree(table).get(key).map_err(storage)
    }

    fn scan(
        &self,
        table: Table,
        from: &[u8],
        to: &[u8],
        reverse: bool,
        visit: &mut Visitor<'_>,
    ) -> Result<(), StorageError> {
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

    fn last_key(&self, table: Table) -> Result<Option<Vec<u8>>, StorageError> {
        Ok(self.tree(table).last().map_err(storage)?.map(|(k, _)| k.to_vec()))
    }
}

impl KvEngine for SledTrees {
    /// Steps 2–4 of the module doc: commit record, writes, done marker.
    fn commit(&self, writes: &WriteSet, end: u64) -> Result<(), StorageError> {
        let outbox = self.tree(Table::Outbox);
        let mut redo = end.to_be_bytes().to_vec();
        redo.extend_from_slice(&writes.encode());
        outbox.insert(COMMIT_REDO, redo).map_err(storage)?;
        self.write(writes)?;
        outbox.insert(COMMIT_DONE, &end.to_be_bytes()[..]).map_err(storage)?;
        Ok(())
    }

    fn flush(&self) -> Result<(), StorageError> {
        self.db.flush().map_err(storage)?;
        Ok(())
    }

    fn set_outbox_cursor(&self, next: u64) -> Result<(), StorageError> {
        self.tree(Table::Outbox).insert(super::layout::OUTBOX_CURSOR, &next.to_be_bytes()[..]).map_err(storage)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::JournalError;
    use crate::chain::{self, ChainCheck};
    use crate::guard::{self, Rule};
    use crate::journal::Journal;
    use crate::limits::{ExpectedVersion, Limits, validate_append};
    use crate::planner::{self, Plan};
    use crate::record;
    use crate::store::conformance::{self as suite, opened, rolled};
    use crate::store::{EventStore, Page, layout};

    fn open(dir: &Path) -> Arc<SledStore> {
        Arc::new(SledStore::open(dir, 1 << 20, 64).expect("open sled"))
    }

    crate::conformance_tests!(async {
        let dir = tempfile::tempdir().expect("temp dir");
        (open(dir.path()) as Arc<dyn EventStore>, dir)
    });

    /// A directory another journal holds is refused after the wait, with
    /// an error naming the directory; once it is let go, it opens.
    #[test]
    fn a_directory_in_use_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let holder = open_db(dir.path(), 1 << 20, std::time::Duration::ZERO).unwrap();
        let err = open_db(dir.path(), 1 << 20, std::time::Duration::from_millis(50)).unwrap_err().to_string();
        assert!(err.contains("is in use"), "{err}");
        assert!(err.contains(&dir.path().display().to_string()), "{err}");
        drop(holder);
        open_db(dir.path(), 1 << 20, LOCK_WAIT).expect("the lock comes free after the holder is dropped");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn what_was_written_survives_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        suite::survives_reopen(|| async { open(dir.path()) as Arc<dyn EventStore> }).await;
    }

    async fn journal(store: &Arc<SledStore>) -> Journal {
        suite::journal_on(store.clone()).await
    }

    /// A crash after a group's commit record and part of its writes: the
    /// reopened store has all of the group, as if it had finished.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_group_cut_short_is_finished_on_open() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = open(dir.path());
            let j = journal(&store).await;
            j.append("a0".into(), ExpectedVersion::Any, vec![opened("")]).await.unwrap();
            let mut plans = Vec::new();
            for (stream, events) in [("a", vec![opened(""), rolled(0, 0)]), ("b", vec![opened("")])] {
                let append =
                    validate_append(&Limits::default(), stream.into(), ExpectedVersion::NoStream, events).unwrap();
                let Plan::Write { planned, .. } = planner::plan(&*store, &append, 0).await.unwrap() else { panic!() };
                plans.push(planned);
            }
            let (_, writes) = kv_tables::write_group(store.engine(), &plans, 1).unwrap();
            assert!(writes.writes.len() > 3);
            // Two writes in: a record and its global entry, no head yet.
            store.engine().commit_torn(&writes, 4, 2).unwrap();
            assert!(store.engine().raw(Table::Heads, b"a").is_none(), "the head of `a` is not written");
            j.shutdown().await.unwrap();
        }
        let store = open(dir.path());
        assert_eq!(kv_tables::next_position(store.engine()).unwrap(), 4);
        let log = store.read_all(0, Page::count(100)).await.unwrap();
        let got: Vec<_> = log.iter().map(|e| (e.event.stream_id.as_str(), e.event.version)).collect();
        assert_eq!(got, [("a0", 0), ("a", 0), ("a", 1), ("b", 0)]);
        assert!(matches!(chain::check(store.as_ref(), "a").await.unwrap(), ChainCheck::Ok { count: 2, .. }));
        assert!(matches!(chain::check(store.as_ref(), "b").await.unwrap(), ChainCheck::Ok { count: 1, .. }));
        // The guard state came with the head: nonce 1 is next in `a`.
        let j = journal(&store).await;
        let spent = j.append("a".into(), ExpectedVersion::Any, vec![rolled(0, 0)]).await;
        assert!(matches!(&spent, Err(JournalError::EventRefused { rule: Rule::NonceOutOfOrder, .. })), "{spent:?}");
        j.shutdown().await.unwrap();
    }

    /// A head written before the guard (40 bytes, no state): the first append
    /// folds the stream once and stores the state; a history that is not a
    /// battle takes no more appends.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn streams_from_before_the_guard_are_folded_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path());
        let j = journal(&store).await;
        j.append("old".into(), ExpectedVersion::Any, vec![opened(""), rolled(0, 0)]).await.unwrap();
        let head = store.engine().raw(Table::Heads, b"old").unwrap();
        store.engine().put_raw(Table::Heads, b"old", &head[..layout::LEGACY_HEAD_BYTES]);
        let refused = j.append("old".into(), ExpectedVersion::Any, vec![rolled(0, 0)]).await;
        assert!(matches!(&refused, Err(JournalError::EventRefused { rule: Rule::NonceOutOfOrder, .. })));
        let folded = j.append("old".into(), ExpectedVersion::Any, vec![rolled(0, 1)]).await;
        assert!(folded.is_ok(), "the fold found nonce 1 next: {folded:?}");
        assert_eq!(
            store.engine().raw(Table::Heads, b"old").unwrap().len(),
            layout::LEGACY_HEAD_BYTES + guard::STATE_BYTES
        );

        // A legacy stream whose version 0 is junk, as the guard never let in.
        let junk = battlelog_proto::v1::JournalRecord {
            stream_id: "junk".into(),
            event_type: "E".into(),
            payload: b"x".to_vec(),
            ..Default::default()
        };
        let bytes = record::encode(&junk);
        let hash = record::chain_hash(&record::genesis_hash("junk"), &bytes);
        store.engine().put_raw(Table::Records, &layout::record_key("junk", 0), &layout::record_value(&hash, 0, &bytes));
        let mut legacy_head = 0u64.to_be_bytes().to_vec();
        legacy_head.extend_from_slice(&hash);
        store.engine().put_raw(Table::Heads, b"junk", &legacy_head);
        let refused = j.append("junk".into(), ExpectedVersion::Any, vec![rolled(0, 0)]).await;
        assert!(
            matches!(&refused, Err(JournalError::EventRefused { rule: Rule::StreamNotABattle, .. })),
            "{refused:?}"
        );
        j.shutdown().await.unwrap();
    }
}
