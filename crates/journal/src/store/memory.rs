//! The in-memory provider: the [`super::kv_tables`] layout in ordered maps behind
//! one lock, under the same [`KvStore`] as sled. Complete (every
//! [`super::EventStore`] method, the same checks and the same answers as on
//! disk) but not durable: for unit tests, and for embedding where losing
//! everything at exit is fine.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::{Mutex, MutexGuard};

use super::StorageError;
use super::group_commit::{KvEngine, KvStore};
use super::kv_tables::{KvRead, Table, Visit, Visitor, WriteSet};

/// The journal in memory: [`KvStore`]'s group commit on [`MemoryTables`].
pub type MemoryStore = KvStore<MemoryTables>;

impl KvStore<MemoryTables> {
    /// An empty store.
    pub fn new() -> Self {
        // Starting a committer on empty maps fails only if no thread can be
        // spawned, which leaves nothing to run tests or an embedding on.
        KvStore::start(MemoryTables::default(), 1024).expect("start the in-memory store's committer thread")
    }
}

impl Default for KvStore<MemoryTables> {
    fn default() -> Self {
        Self::new()
    }
}

/// Every table as an ordered map, behind one lock.
#[derive(Debug, Default)]
pub struct MemoryTables {
    maps: Mutex<[BTreeMap<Vec<u8>, Vec<u8>>; Table::ALL.len()]>,
}

impl MemoryTables {
    fn maps(&self) -> MutexGuard<'_, [BTreeMap<Vec<u8>, Vec<u8>>; Table::ALL.len()]> {
        // Nothing leaves the maps half-updated across a panic: a group's
        // writes are applied after all its checks.
        self.maps.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl KvRead for MemoryTables {
    const NAME: &'static str = "memory";
    type Value = Vec<u8>;

    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        Ok(self.maps()[usize::from(table.tag())].get(key).cloned())
    }

    fn scan(
        &self,
        table: Table,
        from: &[u8],
        to: &[u8],
        reverse: bool,
        visit: &mut Visitor<'_>,
    ) -> Result<(), StorageError> {
        if from > to {
            return Ok(());
        }
        let maps = self.maps();
        let range = maps[usize::from(table.tag())].range::<[u8], _>((Bound::Included(from), Bound::Included(to)));
        let entries: Box<dyn Iterator<Item = (&Vec<u8>, &Vec<u8>)>> =
            if reverse { Box::new(range.rev()) } else { Box::new(range) };
        for (key, value) in entries {
            if let Visit::Stop = visit(key, value)? {
                break;
            }
        }
        Ok(())
    }

    fn last_key(&self, table: Table) -> Result<Option<Vec<u8>>, StorageError> {
        Ok(self.maps()[usize::from(table.tag())].last_key_value().map(|(k, _)| k.clone()))
    }
}

impl KvEngine for MemoryTables {
    fn commit(&self, writes: &WriteSet, _end: u64) -> Result<(), StorageError> {
        let mut maps = self.maps();
        for (table, key, value) in &writes.writes {
            maps[usize::from(table.tag())].insert(key.clone(), value.clone());
        }
        Ok(())
    }

    fn flush(&self) -> Result<(), StorageError> {
        Ok(())
    }

    fn set_outbox_cursor(&self, next: u64) -> Result<(), StorageError> {
        let cursor = super::kv_tables::layout::OUTBOX_CURSOR.to_vec();
        self.maps()[usize::from(Table::Outbox.tag())].insert(cursor, next.to_be_bytes().to_vec());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::MemoryStore;
    use crate::store::EventStore;

    crate::conformance_tests!(async { (Arc::new(MemoryStore::new()) as Arc<dyn EventStore>, ()) });
}
