//! The service's own durable state, in sled under `data_dir`:
//!
//! - `queue`: deliveries received from JetStream and not yet delivered,
//!   keyed `tenant \0 battle \0 version` (big-endian), so a battle's are
//!   adjacent and in version order;
//! - `parked`: deliveries that kept failing, and every later one of their
//!   battle, parked behind them in the same order, until replayed;
//! - `delivered`: per battle, the highest version delivered, so that a
//!   JetStream redelivery of an event already delivered is not sent again
//!   after a later one (receivers dedupe by `webhook-id` anyway).
//!
//! Why sled and not a JetStream stream of our own: a JetStream message is
//! acknowledged once its delivery is in `queue` and flushed, so it is never
//! held unacknowledged while its battle waits behind a failing delivery
//! (which could last hours, far beyond any sensible `ack_wait`), and
//! parking, replaying and keeping a battle in order are local transactions
//! over three trees instead of a protocol over the network. The price: one
//! instance per data dir (sled locks it), which one durable consumer
//! shared by several instances could not keep in order per battle anyway.
//!
//! Every change that decides where an event goes (queued, parked behind
//! its battle's parked one, a duplicate, or ahead of its battle) happens
//! under one lock, so a battle being parked and its next event arriving
//! cannot cross.
//!
//! A battle takes only its exact next version (0, its `BattleOpened`, for
//! a battle never seen): one after the highest delivered, queued or
//! parked. JetStream may hand out a later event before an earlier one (the
//! earlier one was handed to an instance that died before storing it, and
//! comes again only after `ack_wait_ms`), so an event ahead of its battle
//! is refused, to be offered again, until its battle's gap has lasted
//! `gap_wait_ms`; then the missing events are taken as gone (the stream's
//! retention, a consumer created after them) and the event is taken, the
//! gap reported by the caller.

use std::collections::HashMap;
use std::ops::Range;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sled::Transactional;

/// One delivery: an event, its body as it is POSTed, and its history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub tenant: String,
    pub battle: String,
    pub version: u64,
    /// `webhook-id`: the journal's event id, the same for every attempt.
    pub webhook_id: String,
    pub event_type: String,
    /// The JSON body, exactly as signed and sent.
    pub body: String,
    /// When this service first received it (or it was replayed), in ms
    /// since the Unix epoch: `retry_max_age_secs` counts from here.
    pub received_at_ms: u64,
    /// Attempts made (while parked: the attempts before it was parked).
    pub attempts: u32,
    /// Why it was parked: the last failure, or the version it waits behind.
    pub last_error: Option<String>,
    pub parked_at_ms: Option<u64>,
}

/// A battle of a tenant: the unit that is kept in order.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct BattleKey {
    pub tenant: String,
    pub battle: String,
}

impl BattleKey {
    fn prefix(&self) -> Vec<u8> {
        let mut key = Vec::with_capacity(self.tenant.len() + self.battle.len() + 2);
        key.extend_from_slice(self.tenant.as_bytes());
        key.push(0);
        key.extend_from_slice(self.battle.as_bytes());
        key.push(0);
        key
    }

    fn entry_key(&self, version: u64) -> Vec<u8> {
        let mut key = self.prefix();
        key.extend_from_slice(&version.to_be_bytes());
        key
    }
}

impl Entry {
    pub fn battle_key(&self) -> BattleKey {
        BattleKey { tenant: self.tenant.clone(), battle: self.battle.clone() }
    }

    fn key(&self) -> Vec<u8> {
        self.battle_key().entry_key(self.version)
    }
}

/// Where [`Store::enqueue`] put an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Enqueued {
    /// In the queue: its battle's worker delivers it.
    Queued,
    /// Parked behind an earlier parked event of its battle.
    ParkedBehind,
    /// Below its battle's next version (queued, parked or delivered
    /// before): a JetStream redelivery, nothing to do.
    Duplicate,
    /// Above its battle's next version, `expected`, and the gap is younger
    /// than `gap_wait`: not taken; it must be offered again later.
    Ahead { expected: u64 },
}

/// What [`Store::enqueue`] did with an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Routed {
    pub placed: Enqueued,
    /// The versions given up as gone: the event was ahead of its battle
    /// for `gap_wait` and was taken after all.
    pub skipped: Option<Range<u64>>,
}

/// A battle waiting for its version `expected` since `since_ms`.
#[derive(Debug, Clone, Copy)]
struct Gap {
    expected: u64,
    since_ms: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("sled: {0}")]
    Sled(#[from] sled::Error),
    #[error("sled transaction: {0}")]
    Transaction(String),
    #[error("a stored entry does not decode: {0}")]
    Decode(#[from] serde_json::Error),
}

impl From<sled::transaction::TransactionError<StoreError>> for StoreError {
    fn from(error: sled::transaction::TransactionError<StoreError>) -> Self {
        match error {
            sled::transaction::TransactionError::Abort(e) => e,
            sled::transaction::TransactionError::Storage(e) => StoreError::Sled(e),
        }
    }
}

/// Which parked entries a listing or a replay is about.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Filter {
    pub tenant: Option<String>,
    pub battle: Option<String>,
}

impl Filter {
    fn matches(&self, entry: &Entry) -> bool {
        self.tenant.as_ref().is_none_or(|t| *t == entry.tenant)
            && self.battle.as_ref().is_none_or(|b| *b == entry.battle)
    }
}

/// The queue, the parked deliveries and the delivered marks.
#[derive(Debug)]
pub struct Store {
    db: sled::Db,
    queue: sled::Tree,
    parked: sled::Tree,
    delivered: sled::Tree,
    /// Held by every change that routes an event (see the module docs);
    /// the battles with an open gap. In memory: after a restart a gap
    /// waits its `gap_wait` again, later but never wrong.
    route: Mutex<HashMap<BattleKey, Gap>>,
}

fn decode(bytes: &[u8]) -> Result<Entry, StoreError> {
    Ok(serde_json::from_slice(bytes)?)
}

fn encode(entry: &Entry) -> Vec<u8> {
    // A struct of strings and numbers always serializes.
    serde_json::to_vec(entry).expect("an entry serializes")
}

impl Store {
    pub fn open(dir: &Path) -> Result<Self, StoreError> {
        let db = sled::Config::new().path(dir).open()?;
        Ok(Self {
            queue: db.open_tree("queue")?,
            parked: db.open_tree("parked")?,
            delivered: db.open_tree("delivered")?,
            db,
            route: Mutex::new(HashMap::new()),
        })
    }

    /// Another tree of the store's database, written and flushed with it
    /// (crate::feed's chain).
    pub fn tree(&self, name: &str) -> Result<sled::Tree, StoreError> {
        Ok(self.db.open_tree(name)?)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<BattleKey, Gap>> {
        self.route.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Everything written so far is on disk when this returns: called
    /// before a JetStream message is acknowledged.
    pub async fn flush(&self) -> Result<(), StoreError> {
        self.db.flush_async().await?;
        Ok(())
    }

    fn delivered_version(&self, battle: &BattleKey) -> Result<Option<u64>, StoreError> {
        Ok(self
            .delivered
            .get(battle.prefix())?
            .and_then(|v| <[u8; 8]>::try_from(v.as_ref()).ok())
            .map(u64::from_be_bytes))
    }

    /// The version `battle` takes next: one after the highest delivered,
    /// queued or parked; 0 for a battle never seen.
    fn next_version(&self, battle: &BattleKey) -> Result<u64, StoreError> {
        let last = |tree: &sled::Tree| -> Result<Option<u64>, StoreError> {
            Ok(tree
                .scan_prefix(battle.prefix())
                .next_back()
                .transpose()?
                .and_then(|(key, _)| <[u8; 8]>::try_from(&key[key.len().saturating_sub(8)..]).ok())
                .map(u64::from_be_bytes))
        };
        let highest =
            [self.delivered_version(battle)?, last(&self.queue)?, last(&self.parked)?].into_iter().flatten().max();
        Ok(highest.map_or(0, |v| v.saturating_add(1)))
    }

    /// Routes a received event at `now_ms`: to the queue, behind its
    /// battle's parked events, nowhere when it was seen before, or back to
    /// the caller when it is ahead of its battle for less than `gap_wait`.
    pub fn enqueue(&self, entry: &Entry, gap_wait: Duration, now_ms: u64) -> Result<Routed, StoreError> {
        let mut gaps = self.lock();
        let battle = entry.battle_key();
        let key = entry.key();
        let expected = self.next_version(&battle)?;
        let mut skipped = None;
        if entry.version < expected {
            return Ok(Routed { placed: Enqueued::Duplicate, skipped });
        }
        if entry.version > expected {
            let gap = match gaps.get(&battle) {
                Some(gap) if gap.expected == expected => *gap,
                _ => {
                    let gap = Gap { expected, since_ms: now_ms };
                    gaps.insert(battle.clone(), gap);
                    gap
                }
            };
            if u128::from(now_ms.saturating_sub(gap.since_ms)) < gap_wait.as_millis() {
                return Ok(Routed { placed: Enqueued::Ahead { expected }, skipped });
            }
            skipped = Some(expected..entry.version);
        }
        gaps.remove(&battle);
        if let Some(first) = self.parked.scan_prefix(battle.prefix()).next() {
            let first = decode(&first?.1)?;
            let mut parked = entry.clone();
            parked.last_error = Some(format!("waits behind version {} of its battle, parked", first.version));
            parked.parked_at_ms = Some(now_ms);
            self.parked.insert(key, encode(&parked))?;
            return Ok(Routed { placed: Enqueued::ParkedBehind, skipped });
        }
        self.queue.insert(key, encode(entry))?;
        Ok(Routed { placed: Enqueued::Queued, skipped })
    }

    /// The battle's next delivery, if any.
    pub fn head(&self, battle: &BattleKey) -> Result<Option<Entry>, StoreError> {
        self.queue.scan_prefix(battle.prefix()).next().transpose()?.map(|(_, v)| decode(&v)).transpose()
    }

    /// `entry` was delivered: out of the queue, and its battle's mark moves.
    pub fn delivered(&self, entry: &Entry) -> Result<(), StoreError> {
        let _route = self.lock();
        let battle = entry.battle_key().prefix();
        let key = entry.key();
        (&self.queue, &self.delivered)
            .transaction(|(queue, delivered)| {
                queue.remove(key.clone())?;
                let before =
                    delivered.get(&battle)?.and_then(|v| <[u8; 8]>::try_from(v.as_ref()).ok()).map(u64::from_be_bytes);
                if before.is_none_or(|v| v < entry.version) {
                    delivered.insert(battle.clone(), &entry.version.to_be_bytes())?;
                }
                Ok::<_, sled::transaction::ConflictableTransactionError<StoreError>>(())
            })
            .map_err(StoreError::from)?;
        Ok(())
    }

    /// Parks `entry` (which failed with `error` after its attempts) and,
    /// behind it in order, every queued event of its battle. Returns how
    /// many were parked.
    pub fn park(&self, entry: &Entry, error: &str) -> Result<usize, StoreError> {
        let _route = self.lock();
        let now = now_ms();
        let mut moved = Vec::new();
        for item in self.queue.scan_prefix(entry.battle_key().prefix()) {
            let (key, value) = item?;
            let mut parked = decode(&value)?;
            if parked.version == entry.version {
                parked = entry.clone();
                parked.last_error = Some(error.to_owned());
            } else {
                parked.last_error = Some(format!("waits behind version {} of its battle, parked", entry.version));
            }
            parked.parked_at_ms = Some(now);
            moved.push((key, encode(&parked)));
        }
        (&self.queue, &self.parked)
            .transaction(|(queue, parked)| {
                for (key, value) in &moved {
                    queue.remove(key.clone())?;
                    parked.insert(key.clone(), value.clone())?;
                }
                Ok::<_, sled::transaction::ConflictableTransactionError<StoreError>>(())
            })
            .map_err(StoreError::from)?;
        Ok(moved.len())
    }

    /// The parked deliveries `filter` selects, by tenant, battle and version.
    pub fn parked(&self, filter: &Filter) -> Result<Vec<Entry>, StoreError> {
        let mut entries = Vec::new();
        for item in self.parked.iter() {
            let entry = decode(&item?.1)?;
            if filter.matches(&entry) {
                entries.push(entry);
            }
        }
        Ok(entries)
    }

    /// How many deliveries are parked, by tenant.
    pub fn parked_by_tenant(&self) -> Result<std::collections::BTreeMap<String, u64>, StoreError> {
        let mut counts = std::collections::BTreeMap::new();
        for item in self.parked.iter() {
            let (key, _) = item?;
            let tenant = key.split(|b| *b == 0).next().unwrap_or_default();
            *counts.entry(String::from_utf8_lossy(tenant).into_owned()).or_insert(0) += 1;
        }
        Ok(counts)
    }

    /// How many deliveries wait in the queue.
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    /// Moves the parked deliveries of every battle `filter` selects back
    /// into the queue, all of a battle's at once and in order, as new
    /// (no attempts, received now). Returns the battles and the count.
    pub fn replay(&self, filter: &Filter) -> Result<(Vec<BattleKey>, usize), StoreError> {
        let _route = self.lock();
        let now = now_ms();
        let mut battles = std::collections::BTreeSet::new();
        let mut moved = Vec::new();
        for item in self.parked.iter() {
            let (key, value) = item?;
            let mut entry = decode(&value)?;
            if !filter.matches(&entry) {
                continue;
            }
            battles.insert(entry.battle_key());
            entry.attempts = 0;
            entry.received_at_ms = now;
            entry.last_error = None;
            entry.parked_at_ms = None;
            moved.push((key, encode(&entry)));
        }
        (&self.queue, &self.parked)
            .transaction(|(queue, parked)| {
                for (key, value) in &moved {
                    parked.remove(key.clone())?;
                    queue.insert(key.clone(), value.clone())?;
                }
                Ok::<_, sled::transaction::ConflictableTransactionError<StoreError>>(())
            })
            .map_err(StoreError::from)?;
        Ok((battles.into_iter().collect(), moved.len()))
    }

    /// The battles with deliveries waiting in the queue: the work left
    /// when the service last stopped.
    pub fn queued_battles(&self) -> Result<Vec<BattleKey>, StoreError> {
        let mut battles = std::collections::BTreeSet::new();
        for item in self.queue.iter() {
            battles.insert(decode(&item?.1)?.battle_key());
        }
        Ok(battles.into_iter().collect())
    }
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(tenant: &str, battle: &str, version: u64) -> Entry {
        Entry {
            tenant: tenant.into(),
            battle: battle.into(),
            version,
            webhook_id: format!("{battle}-{version}"),
            event_type: "DiceRolled".into(),
            body: "{}".into(),
            received_at_ms: now_ms(),
            attempts: 0,
            last_error: None,
            parked_at_ms: None,
        }
    }

    const LONG: Duration = Duration::from_secs(3600);

    /// Routes `entry` now, with a gap wait longer than any test.
    fn put(store: &Store, entry: &Entry) -> Enqueued {
        let routed = store.enqueue(entry, LONG, now_ms()).unwrap();
        assert_eq!(routed.skipped, None);
        routed.placed
    }

    fn versions(entries: &[Entry]) -> Vec<u64> {
        entries.iter().map(|e| e.version).collect()
    }

    #[test]
    fn a_battle_parked_keeps_its_later_events_behind_it_in_order_until_replayed() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Store::open(dir.path()).expect("open");
        let b = BattleKey { tenant: "t".into(), battle: "b".into() };
        for v in 0..3 {
            assert_eq!(put(&store, &entry("t", "b", v)), Enqueued::Queued);
        }
        assert_eq!(put(&store, &entry("t", "other", 0)), Enqueued::Queued);
        assert_eq!(put(&store, &entry("t", "b", 1)), Enqueued::Duplicate, "a redelivery");
        let head = store.head(&b).unwrap().expect("v0");
        store.delivered(&head).unwrap();
        assert_eq!(put(&store, &entry("t", "b", 0)), Enqueued::Duplicate, "delivered before");
        let head = store.head(&b).unwrap().expect("v1");
        assert_eq!(head.version, 1);
        assert_eq!(store.park(&head, "HTTP 500").unwrap(), 2);
        assert_eq!(store.head(&b).unwrap(), None);
        assert_eq!(put(&store, &entry("t", "b", 4)), Enqueued::Ahead { expected: 3 }, "parked ones count");
        assert_eq!(put(&store, &entry("t", "b", 3)), Enqueued::ParkedBehind);
        let parked = store.parked(&Filter::default()).unwrap();
        assert_eq!(versions(&parked), [1, 2, 3]);
        assert_eq!(parked[0].last_error.as_deref(), Some("HTTP 500"));
        assert!(parked[1].last_error.as_deref().is_some_and(|e| e.contains("behind version 1")));
        assert_eq!(store.parked_by_tenant().unwrap().get("t"), Some(&3));
        // The other battle went on.
        assert_eq!(
            store.head(&BattleKey { tenant: "t".into(), battle: "other".into() }).unwrap().map(|e| e.version),
            Some(0)
        );

        let none = Filter { tenant: Some("t".into()), battle: Some("nope".into()) };
        assert_eq!(store.replay(&none).unwrap().1, 0);
        let (battles, count) = store.replay(&Filter { tenant: None, battle: Some("b".into()) }).unwrap();
        assert_eq!((battles, count), (vec![b.clone()], 3));
        assert!(store.parked(&Filter::default()).unwrap().is_empty());
        let mut order = Vec::new();
        while let Some(head) = store.head(&b).unwrap() {
            assert_eq!(head.attempts, 0);
            order.push(head.version);
            store.delivered(&head).unwrap();
        }
        assert_eq!(order, [1, 2, 3]);
    }

    #[test]
    fn the_queue_survives_a_reopen() {
        let dir = tempfile::tempdir().expect("temp dir");
        {
            let store = Store::open(dir.path()).expect("open");
            assert_eq!(put(&store, &entry("t", "b", 0)), Enqueued::Queued);
            futures_flush(&store);
        }
        let store = Store::open(dir.path()).expect("reopen");
        assert_eq!(store.queued_battles().unwrap(), [BattleKey { tenant: "t".into(), battle: "b".into() }]);
        // What the queue holds counts after a reopen: 1 is next.
        assert_eq!(put(&store, &entry("t", "b", 0)), Enqueued::Duplicate);
        assert_eq!(put(&store, &entry("t", "b", 2)), Enqueued::Ahead { expected: 1 });
        assert_eq!(put(&store, &entry("t", "b", 1)), Enqueued::Queued);
    }

    #[test]
    fn a_battle_takes_only_its_next_version_until_a_gap_has_lasted_gap_wait() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Store::open(dir.path()).expect("open");
        let b = BattleKey { tenant: "t".into(), battle: "b".into() };
        let wait = Duration::from_millis(1_000);
        let at = |version: u64, now: u64| store.enqueue(&entry("t", "b", version), wait, now).unwrap();
        let placed = |version: u64, now: u64| {
            let routed = at(version, now);
            assert_eq!(routed.skipped, None, "v{version} at {now}");
            routed.placed
        };

        // A battle never seen starts at 0 (its BattleOpened).
        assert_eq!(placed(1, 10_000), Enqueued::Ahead { expected: 0 });
        assert_eq!(placed(0, 10_000), Enqueued::Queued, "the exact next");
        assert_eq!(placed(0, 10_001), Enqueued::Duplicate, "queued before");
        assert_eq!(placed(1, 10_002), Enqueued::Queued, "the gap closed: no wait left over");
        store.delivered(&store.head(&b).unwrap().expect("v0")).unwrap();
        store.delivered(&store.head(&b).unwrap().expect("v1")).unwrap();
        assert_eq!(placed(1, 10_003), Enqueued::Duplicate, "delivered before");
        assert_eq!(placed(0, 10_003), Enqueued::Duplicate);

        // 2 is missing; 4 arrives at 20 000, then again, then 3.
        assert_eq!(placed(4, 20_000), Enqueued::Ahead { expected: 2 });
        assert_eq!(placed(3, 20_500), Enqueued::Ahead { expected: 2 }, "the gap is the battle's, not the event's");
        assert_eq!(placed(4, 20_999), Enqueued::Ahead { expected: 2 }, "just under gap_wait");
        assert_eq!(store.head(&b).unwrap(), None, "nothing ahead was queued");
        // At gap_wait exactly, 2 is given up: the event is taken, the gap said.
        let routed = at(4, 21_000);
        assert_eq!(routed, Routed { placed: Enqueued::Queued, skipped: Some(2..4) });
        assert_eq!(placed(2, 21_001), Enqueued::Duplicate, "too late: behind what was taken");
        assert_eq!(placed(5, 21_002), Enqueued::Queued);

        // A new gap waits its own gap_wait, from when it was first seen.
        assert_eq!(placed(7, 30_000), Enqueued::Ahead { expected: 6 });
        assert_eq!(placed(6, 30_999), Enqueued::Queued, "arrived in time");
        assert_eq!(placed(8, 31_500), Enqueued::Ahead { expected: 7 }, "a fresh gap, not 6's");
        let routed = at(8, 32_500);
        assert_eq!(routed, Routed { placed: Enqueued::Queued, skipped: Some(7..8) }, "past its wait");
        let mut order = Vec::new();
        while let Some(head) = store.head(&b).unwrap() {
            order.push(head.version);
            store.delivered(&head).unwrap();
        }
        assert_eq!(order, [4, 5, 6, 8]);
    }

    fn futures_flush(store: &Store) {
        tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(store.flush()).unwrap();
    }
}
