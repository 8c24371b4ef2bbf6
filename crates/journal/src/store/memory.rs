//! The in-memory provider: the [`super::kv`] layout in ordered maps behind
//! one lock. Complete (every [`EventStore`] method, the same checks and the
//! same answers as on disk) but not durable: for unit tests, and for
//! embedding where losing everything at exit is fine.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::{Mutex, MutexGuard};

use super::kv::{self, KvRead, Table, Visit, Visitor};
use super::{Applied, ChainCheck, EventStore, GroupAppend, StoredEvent, StreamHead};
use crate::error::JournalError;

/// Every table as an ordered map.
#[derive(Debug, Default)]
struct Tables {
    maps: [BTreeMap<Vec<u8>, Vec<u8>>; Table::ALL.len()],
}

impl Tables {
    fn map(&self, table: Table) -> &BTreeMap<Vec<u8>, Vec<u8>> {
        &self.maps[usize::from(table.tag())]
    }
}

impl KvRead for Tables {
    type Value = Vec<u8>;

    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Vec<u8>>, JournalError> {
        Ok(self.map(table).get(key).cloned())
    }

    fn scan(
        &self,
        table: Table,
        from: &[u8],
        to: &[u8],
        reverse: bool,
        visit: &mut Visitor<'_>,
    ) -> Result<(), JournalError> {
        if from > to {
            return Ok(());
        }
        let range = self.map(table).range::<[u8], _>((Bound::Included(from), Bound::Included(to)));
        let entries: Box<dyn Iterator<Item = (&Vec<u8>, &Vec<u8>)>> =
            if reverse { Box::new(range.rev()) } else { Box::new(range) };
        for (key, value) in entries {
            if let Visit::Stop = visit(key, value)? {
                break;
            }
        }
        Ok(())
    }

    fn last_key(&self, table: Table) -> Result<Option<Vec<u8>>, JournalError> {
        Ok(self.map(table).last_key_value().map(|(k, _)| k.clone()))
    }
}

/// The journal's tables in memory.
#[derive(Debug, Default)]
pub struct MemoryStore {
    tables: Mutex<Tables>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn tables(&self) -> MutexGuard<'_, Tables> {
        // Nothing leaves the maps half-updated across a panic: a group's
        // writes are applied after all its checks.
        self.tables.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl EventStore for MemoryStore {
    fn next_position(&self) -> Result<u64, JournalError> {
        kv::next_position(&*self.tables())
    }

    fn append_group(
        &self,
        group: &[GroupAppend<'_>],
        first_position: u64,
        now_micros: i64,
    ) -> Result<Vec<Result<Applied, JournalError>>, JournalError> {
        let mut tables = self.tables();
        let (outcomes, writes) = kv::plan_group(&*tables, group, first_position, now_micros)?;
        for (table, key, value) in writes.writes {
            tables.maps[usize::from(table.tag())].insert(key, value);
        }
        Ok(outcomes)
    }

    fn flush(&self) -> Result<(), JournalError> {
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
        kv::read_stream(&*self.tables(), stream_id, from_version, max_count, max_bytes, durable)
    }

    fn read_all(
        &self,
        from_position: u64,
        max_count: usize,
        max_bytes: usize,
        durable: u64,
    ) -> Result<Vec<StoredEvent>, JournalError> {
        kv::read_all(&*self.tables(), from_position, max_count, max_bytes, durable)
    }

    fn stream_head(&self, stream_id: &str, durable: u64) -> Result<StreamHead, JournalError> {
        kv::stream_head(&*self.tables(), stream_id, durable)
    }

    fn verify_chain(&self, stream_id: &str, durable: u64) -> Result<ChainCheck, JournalError> {
        let tables = self.tables();
        let head = tables.get(Table::Heads, stream_id.as_bytes())?;
        kv::verify_chain(&*tables, stream_id, head.as_deref(), durable)
    }

    fn outbox_cursor(&self) -> Result<u64, JournalError> {
        kv::outbox_cursor(&*self.tables())
    }

    fn set_outbox_cursor(&self, next: u64) -> Result<(), JournalError> {
        let cursor = kv::layout::OUTBOX_CURSOR.to_vec();
        self.tables().maps[usize::from(Table::Outbox.tag())].insert(cursor, next.to_be_bytes().to_vec());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::MemoryStore;

    crate::store::conformance::conformance_tests!((Box::new(MemoryStore::new()), ()));
}
