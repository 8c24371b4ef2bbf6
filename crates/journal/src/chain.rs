//! The chain check (docs/protocol.md §4), written once above every store and
//! reading only through [`EventStore`]: a stream's records from version 0
//! are recomputed from their stored bytes, and the first version where the
//! chain breaks is named — a record missing or unreadable, one claiming
//! another stream or version, a hash that does not chain, a head that does
//! not match the last record, or a durable record past the head.
//!
//! A store reports what it cannot read as corruption at a place
//! ([`StorageErrorKind::Corrupt`]); here that is a break at that version,
//! not a failure of the check. Appends may go on meanwhile: a head that
//! moves while the chain is read is an append, not a break, and the check
//! starts again from the new head.

use crate::record::{self, Hash};
use crate::store::{EventStore, Head, Page, StorageError, StorageErrorKind};

/// Records read per page.
const PAGE: usize = 256;
/// How many times the check starts again when appends move the head under it.
const ATTEMPTS: usize = 5;

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

fn broken(version: u64, reason: impl Into<String>) -> ChainCheck {
    ChainCheck::Broken { version, reason: reason.into() }
}

/// Checks `stream_id`'s chain on `store`. `Err` only when the store failed
/// otherwise than by what it holds (an outage, a closed store).
pub async fn check(store: &dyn EventStore, stream_id: &str) -> Result<ChainCheck, StorageError> {
    for _ in 1..ATTEMPTS {
        if let Some(verdict) = check_once(store, stream_id, false).await? {
            return Ok(verdict);
        }
    }
    // Still moving: the last try takes the head it read as the end.
    Ok(check_once(store, stream_id, true).await?.unwrap_or_else(|| broken(0, "the stream never held still")))
}

/// One pass; `None` when an append moved the head meanwhile.
async fn check_once(store: &dyn EventStore, stream_id: &str, last: bool) -> Result<Option<ChainCheck>, StorageError> {
    let head = match store.head(stream_id).await {
        Ok(head) => Ok(head),
        Err(e) => Err(corruption(e, stream_id)?),
    };
    // With a head, the records up to it; without one (none, or unreadable),
    // every record there is.
    let end = match &head {
        Ok(Some(head)) => Some(head.version),
        _ => None,
    };
    let walked = match walk(store, stream_id, end).await? {
        Walk::Broken(verdict) => return Ok(Some(verdict)),
        Walk::Chained { count, last_hash } => (count, last_hash),
    };
    let (count, last_hash) = walked;
    let verdict = match head {
        // The head itself is unreadable, or names a record that is not
        // there: the first version past the good records, or the head's own
        // place if that comes first.
        Err((version, reason)) if version > count => broken(count, format!("record missing ({reason})")),
        Err((version, reason)) => broken(version, reason),
        Ok(None) if count == 0 => ChainCheck::Ok { count: 0, head_hash: last_hash },
        Ok(None) => {
            if !last && store.head(stream_id).await?.is_some() {
                return Ok(None);
            }
            broken(count, "records exist but the stream head is missing")
        }
        Ok(Some(head)) => match past_head(store, stream_id, head, count, last_hash, last).await? {
            Some(verdict) => verdict,
            None => return Ok(None),
        },
    };
    Ok(Some(verdict))
}

/// The verdict for a stream with a head whose records up to it chained
/// (`count` of them, the last hashing to `last_hash`); `None` when the head
/// moved meanwhile.
async fn past_head(
    store: &dyn EventStore,
    stream_id: &str,
    head: Head,
    count: u64,
    last_hash: Hash,
    last: bool,
) -> Result<Option<ChainCheck>, StorageError> {
    if count <= head.version {
        return Ok(Some(broken(count, "record missing")));
    }
    if head.hash != last_hash {
        return Ok(Some(broken(head.version, "the stream head hash does not match the last record")));
    }
    // Readers serve a durable record past the head, so a head that stops
    // before it disowns part of the stream — unless it was appended since.
    let next = head.version + 1;
    let beyond = match store.read_stream(stream_id, next, Page::count(1)).await {
        Ok(events) => !events.is_empty(),
        Err(e) => {
            let (version, reason) = corruption(e, stream_id)?;
            return Ok(Some(broken(version, reason)));
        }
    };
    if beyond {
        let now = store.head(stream_id).await?;
        if !last && now.is_some_and(|h| h.version > head.version) {
            return Ok(None);
        }
        return Ok(Some(broken(next, "a durable record lies past the stream head")));
    }
    Ok(Some(ChainCheck::Ok { count, head_hash: last_hash }))
}

enum Walk {
    /// Records 0..count chain; the last hashes to `last_hash` (h(−1) for none).
    Chained {
        count: u64,
        last_hash: Hash,
    },
    Broken(ChainCheck),
}

/// Reads the stream from version 0 (up to `end`, or to its last record) and
/// recomputes every hash.
async fn walk(store: &dyn EventStore, stream_id: &str, end: Option<u64>) -> Result<Walk, StorageError> {
    let mut previous = record::genesis_hash(stream_id);
    let mut version = 0u64;
    loop {
        if end.is_some_and(|end| version > end) {
            break;
        }
        let page = match store.read_stream(stream_id, version, Page::count(PAGE)).await {
            Ok(page) => page,
            Err(e) => {
                let (at, reason) = corruption(e, stream_id)?;
                return Ok(Walk::Broken(broken(at, reason)));
            }
        };
        if page.is_empty() {
            break;
        }
        for event in page {
            if end.is_some_and(|end| version > end) {
                break;
            }
            let claimed = &event.event;
            if claimed.stream_id != stream_id || claimed.version != version {
                let why = format!("record claims stream {:?} version {}", claimed.stream_id, claimed.version);
                return Ok(Walk::Broken(broken(version, why)));
            }
            let hash = record::chain_hash(&previous, &event.record);
            if hash != event.hash {
                return Ok(Walk::Broken(broken(version, "hash does not chain from the previous record")));
            }
            previous = hash;
            version += 1;
        }
    }
    Ok(Walk::Chained { count: version, last_hash: previous })
}

/// Where and why the store found `stream_id` corrupt; any other failure
/// stays an error.
fn corruption(e: StorageError, stream_id: &str) -> Result<(u64, String), StorageError> {
    match (e.kind(), e.location()) {
        (StorageErrorKind::Corrupt, Some((stream, version))) if stream == stream_id || stream.is_empty() => {
            Ok((version, e.message().to_owned()))
        }
        (StorageErrorKind::Corrupt, None) => Ok((0, e.message().to_owned())),
        _ => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::limits::ExpectedVersion;
    use crate::store::conformance::{journal_on, opened, resolved};
    use crate::store::kv_tables::{KvRead, Table};
    use crate::store::{SledStore, layout};

    /// Changed bytes, a changed hash, a swap, a head set back or removed —
    /// written straight into sled — are each found at the first bad version
    /// by the one check above the store, reading only through the trait.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_check_above_the_store_finds_each_break_at_its_first_version() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Arc::new(SledStore::open(dir.path(), 1 << 20, 64).expect("open sled"));
        let journal = journal_on(store.clone()).await;
        let mut events = vec![opened("")];
        events.extend((1..6).map(|i| resolved(&format!("event {i}"))));
        journal.append("t".into(), ExpectedVersion::NoStream, events).await.expect("append");
        let engine = store.engine();
        let records: Vec<Vec<u8>> = (0..6)
            .map(|v| engine.get(Table::Records, &layout::record_key("t", v)).unwrap().expect("stored").to_vec())
            .collect();
        let head = engine.get(Table::Heads, b"t").unwrap().expect("a head").to_vec();
        let clean = check(store.as_ref(), "t").await.unwrap();
        assert!(matches!(clean, ChainCheck::Ok { count: 6, .. }), "{clean:?}");

        let restore = || {
            for (v, value) in records.iter().enumerate() {
                engine.put_raw(Table::Records, &layout::record_key("t", v as u64), value);
            }
            engine.put_raw(Table::Heads, b"t", &head);
        };
        let mut last_byte = records[3].clone();
        *last_byte.last_mut().unwrap() ^= 1;
        let mut hash_byte = records[4].clone();
        hash_byte[0] ^= 0x80;
        let mut set_back = head.clone();
        set_back[..8].copy_from_slice(&2u64.to_be_bytes());
        set_back[8..40].copy_from_slice(&records[2][..32]);
        type Tamper<'a> = Box<dyn Fn() + 'a>;
        let cases: Vec<(&str, Tamper, u64)> = vec![
            (
                "a byte of record 3",
                Box::new(|| engine.put_raw(Table::Records, &layout::record_key("t", 3), &last_byte)),
                3,
            ),
            (
                "the hash of record 4",
                Box::new(|| engine.put_raw(Table::Records, &layout::record_key("t", 4), &hash_byte)),
                4,
            ),
            (
                "records 1 and 4 swapped",
                Box::new(|| {
                    engine.put_raw(Table::Records, &layout::record_key("t", 1), &records[4]);
                    engine.put_raw(Table::Records, &layout::record_key("t", 4), &records[1]);
                }),
                1,
            ),
            ("the head set back to 2", Box::new(|| engine.put_raw(Table::Heads, b"t", &set_back)), 3),
        ];
        for (what, tamper, first_bad) in cases {
            restore();
            tamper();
            match check(store.as_ref(), "t").await.unwrap() {
                ChainCheck::Broken { version, reason } => assert_eq!(version, first_bad, "{what}: {reason}"),
                ok => panic!("{what}: verified: {ok:?}"),
            }
        }
        restore();
        assert!(matches!(check(store.as_ref(), "t").await.unwrap(), ChainCheck::Ok { count: 6, .. }));
        assert!(matches!(check(store.as_ref(), "none").await.unwrap(), ChainCheck::Ok { count: 0, .. }));
        journal.shutdown().await.expect("shutdown");
    }
}
