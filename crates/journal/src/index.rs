//! The battle index: one summary per battle — tenant, ruleset, title, forum
//! reference, when it was opened, whether and when it was closed, its head
//! version — for listing a tenant's battles newest first
//! (`Journal.ListBattleIndex`, behind the resolver's `ListBattles`).
//!
//! Why it is derived from the global log and kept in memory, not stored:
//! the log is the one thing every backend and every journal process share.
//! Each journal folds the store's global order ([`EventStore::read_all`],
//! woken by [`EventStore::changes`]), so journals on sled and on JetStream,
//! and several journals over one JetStream stream, answer alike; a restart
//! rebuilds the index by reading the log once (with the transparency log
//! on, from the pages of the tree's rebuild; else in the background), and
//! nothing derived can fall out of step with the log or need migrating. A
//! listing first catches the index up with the log as it is when asked, so
//! a battle whose opening was acknowledged — by this journal or another —
//! is listed. With the transparency log on, its follower hands each page
//! it reads to the index ([`BattleIndex::feed`]), so that every record is
//! read back once for both.
//!
//! Memory is bounded by `battle_index_bytes` (about: [`entry_cost`] per
//! battle): past it the battles opened longest ago are forgotten, oldest
//! first, so what remains is always each tenant's newest; a listing that
//! reaches the end of a tenant's remembered battles says `older_forgotten`.
//! Order is the global position of each battle's `BattleOpened` — the
//! store's commit order, the same for every reader, unlike clocks.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::RwLock;

use battlelog_proto::v1::battle_event::Event;
use battlelog_proto::v1::{BattleEvent, BattleStatus, BattleSummary};
use prost::Message;

use crate::error::JournalError;
use crate::store::{EventStore, StoredEvent};

/// The default of `battle_index_bytes`: 128 MiB, several hundred thousand
/// battles of ordinary titles.
pub const DEFAULT_INDEX_BYTES: usize = 128 * 1024 * 1024;

/// What one battle costs the index beyond its strings: the summary, its
/// place in three maps and two sets, and their keys.
const ENTRY_OVERHEAD_BYTES: usize = 256;

/// The approximate memory one battle takes in the index: its strings (the
/// tenant and forum reference twice: in the entry and in its lists' keys;
/// the battle id twice: in the entry and the position map) plus a fixed
/// overhead. `battle_index_bytes` is counted in these.
pub fn entry_cost(battle_id: &str, tenant: &str, ruleset: &str, title: &str, forum_ref: &str) -> usize {
    ENTRY_OVERHEAD_BYTES + 2 * battle_id.len() + 2 * tenant.len() + 2 * forum_ref.len() + ruleset.len() + title.len()
}

/// A query of the index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexQuery {
    /// Whose battles.
    pub tenant: String,
    /// Only this forum reference; `None`: any.
    pub forum_ref: Option<String>,
    /// Open, closed or any.
    pub status: BattleStatus,
    /// Only battles opened below this global position.
    pub before: Option<u64>,
    /// At most this many.
    pub max_count: usize,
}

/// A page of the index.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IndexPage {
    /// (opened position, summary), newest first.
    pub battles: Vec<(u64, BattleSummary)>,
    /// Where the next page starts (`before`), when more may follow.
    pub next_before: Option<u64>,
    /// The last page, and the tenant had older battles that were forgotten.
    pub older_forgotten: bool,
}

#[derive(Debug)]
struct Entry {
    tenant: String,
    opened_position: u64,
    summary: BattleSummary,
    cost: usize,
    /// The global position of its pending action's first roll, if any.
    pending_at: Option<u64>,
}

/// A battle's pending action, as the index keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingEntry {
    pub battle_id: String,
    /// The version of the action's first roll.
    pub version: u64,
    /// When the journal committed it (µs since the Unix epoch).
    pub rolled_at_unix_micros: i64,
}

/// Which list a battle is in: its tenant, with or without its forum
/// reference, open or closed. Every battle is in two: (tenant, None,
/// closed) and (tenant, Some(forum_ref), closed).
type ListKey = (String, Option<String>, bool);

#[derive(Debug, Default)]
struct State {
    /// The next global position to fold.
    cursor: u64,
    battles: HashMap<String, Entry>,
    /// The battles with an action pending (its first roll journaled, its
    /// resolution not yet), by the global position of that roll: what the
    /// resolver's sweeper finishes (roll-forward). Bounded by the battles
    /// remembered: a forgotten battle's entry goes with it.
    pending: BTreeMap<u64, PendingEntry>,
    /// Opened position → battle id: the eviction order (lowest first).
    by_position: BTreeMap<u64, String>,
    lists: HashMap<ListKey, BTreeSet<u64>>,
    /// Per tenant: the highest opened position forgotten, plus one.
    forgotten_below: HashMap<String, u64>,
    bytes: usize,
}

/// See the module doc. Shared by the journal's background follower and its
/// listings.
#[derive(Debug)]
pub struct BattleIndex {
    budget: usize,
    state: RwLock<State>,
    /// One reader of the log at a time; whoever holds it moves the shared
    /// cursor, so the follower and listings never fold an event twice.
    reading: tokio::sync::Mutex<()>,
}

impl BattleIndex {
    /// An empty index holding about `budget` bytes at most.
    pub fn new(budget: usize) -> Self {
        Self { budget, state: RwLock::new(State::default()), reading: tokio::sync::Mutex::new(()) }
    }

    /// The bytes the index counts as taken ([`entry_cost`] of each battle).
    pub fn bytes(&self) -> usize {
        read(&self.state).bytes
    }

    /// Folds the log from where the index stands until a read comes back
    /// empty: everything durable when this was called is then in.
    pub async fn catch_up(&self, store: &dyn EventStore, page: usize, max_bytes: usize) -> Result<(), JournalError> {
        let _reading = self.reading.lock().await;
        loop {
            let cursor = read(&self.state).cursor;
            let events = store.read_all(cursor, crate::limits::wire_page(page, max_bytes)).await?;
            if events.is_empty() {
                return Ok(());
            }
            let mut state = write(&self.state);
            for event in &events {
                state.fold(event, self.budget);
            }
        }
    }

    /// Folds `events`, a page of the global log read from position `from`
    /// by another reader, if the index has nothing left before `from` to
    /// fold (its cursor is at or past it) and no listing is reading the log
    /// right now; events before the cursor are skipped. Otherwise it does
    /// nothing, and the next [`Self::catch_up`] reads them itself. Returns
    /// whether it folded the page.
    pub fn feed(&self, from: u64, events: &[StoredEvent]) -> bool {
        let Ok(_reading) = self.reading.try_lock() else { return false };
        let mut state = write(&self.state);
        if state.cursor < from {
            return false;
        }
        for event in events {
            if event.global_position >= state.cursor {
                state.fold(event, self.budget);
            }
        }
        true
    }

    /// The battles whose action is pending, oldest roll first: at most
    /// `max_count`, each rolled at or before `rolled_before_unix_micros`
    /// (`None`: any), from what the index holds now (call
    /// [`Self::catch_up`] first).
    pub fn pending(&self, rolled_before_unix_micros: Option<i64>, max_count: usize) -> Vec<PendingEntry> {
        let state = read(&self.state);
        state
            .pending
            .values()
            .filter(|p| rolled_before_unix_micros.is_none_or(|before| p.rolled_at_unix_micros <= before))
            .take(max_count)
            .cloned()
            .collect()
    }

    /// One page of a tenant's battles, newest first, from what the index
    /// holds now (call [`Self::catch_up`] first).
    pub fn query(&self, query: &IndexQuery) -> IndexPage {
        let state = read(&self.state);
        let closed: &[bool] = match query.status {
            BattleStatus::Open => &[false],
            BattleStatus::Closed => &[true],
            BattleStatus::Any => &[false, true],
        };
        let before = query.before.unwrap_or(u64::MAX);
        // Each list is in position order: walk them backwards from `before`
        // and merge, highest first.
        let mut walks: Vec<_> = closed
            .iter()
            .filter_map(|&closed| state.lists.get(&(query.tenant.clone(), query.forum_ref.clone(), closed)))
            .map(|list| list.range(..before).rev().peekable())
            .collect();
        let mut positions = Vec::with_capacity(query.max_count.min(1024));
        let mut more = false;
        loop {
            let next = walks
                .iter_mut()
                .enumerate()
                .filter_map(|(i, walk)| walk.peek().map(|&&p| (p, i)))
                .max_by_key(|&(p, _)| p);
            let Some((position, i)) = next else { break };
            if positions.len() == query.max_count {
                more = true;
                break;
            }
            walks[i].next();
            positions.push(position);
        }
        let battles: Vec<(u64, BattleSummary)> = positions
            .iter()
            .filter_map(|p| state.by_position.get(p))
            .filter_map(|id| state.battles.get(id))
            .map(|entry| (entry.opened_position, entry.summary.clone()))
            .collect();
        let next_before = if more { battles.last().map(|(p, _)| *p) } else { None };
        let older_forgotten = !more && state.forgotten_below.contains_key(&query.tenant);
        IndexPage { battles, next_before, older_forgotten }
    }
}

impl State {
    fn fold(&mut self, stored: &StoredEvent, budget: usize) {
        self.cursor = self.cursor.max(stored.global_position + 1);
        let record = &stored.event;
        if record.version == 0 {
            // The guard admits only a BattleOpened at version 0; anything
            // else (a stream stored before it) is not a battle to list.
            if let Ok(BattleEvent { event: Some(Event::BattleOpened(opened)) }) =
                BattleEvent::decode(record.payload.as_slice())
            {
                self.open(stored, opened, budget);
            }
            return;
        }
        let Some(entry) = self.battles.get_mut(&record.stream_id) else { return };
        entry.summary.head_version = entry.summary.head_version.max(record.version);
        match record.event_type.as_str() {
            // Only an action's first roll carries it; the key tells which
            // roll is a request's first without decoding the others.
            "DiceRolled" if record.idempotency_key.ends_with(":0") => {
                if let Ok(BattleEvent { event: Some(Event::DiceRolled(rolled)) }) =
                    BattleEvent::decode(record.payload.as_slice())
                    && rolled.for_action.is_some()
                {
                    if let Some(before) = entry.pending_at.replace(stored.global_position) {
                        self.pending.remove(&before);
                    }
                    self.pending.insert(
                        stored.global_position,
                        PendingEntry {
                            battle_id: record.stream_id.clone(),
                            version: record.version,
                            rolled_at_unix_micros: record.recorded_at_unix_micros,
                        },
                    );
                }
            }
            "ActionResolved" => {
                if let Some(at) = entry.pending_at.take() {
                    self.pending.remove(&at);
                }
            }
            _ => {}
        }
        if record.event_type == "BattleClosed" && !entry.summary.closed {
            entry.summary.closed = true;
            entry.summary.closed_at_unix_micros = Some(record.recorded_at_unix_micros);
            let position = entry.opened_position;
            let tenant = entry.tenant.clone();
            let forum_ref = entry.summary.forum_ref.clone();
            for forum_ref in [None, Some(forum_ref)] {
                let key = (tenant.clone(), forum_ref, false);
                remove_from(&mut self.lists, &key, position);
                self.lists.entry((key.0, key.1, true)).or_default().insert(position);
            }
        }
    }

    fn open(&mut self, stored: &StoredEvent, opened: battlelog_proto::v1::BattleOpened, budget: usize) {
        let record = &stored.event;
        if self.battles.contains_key(&record.stream_id) {
            return;
        }
        let position = stored.global_position;
        let cost = entry_cost(&record.stream_id, &opened.tenant, &opened.ruleset, &opened.title, &opened.forum_ref);
        let summary = BattleSummary {
            battle_id: record.stream_id.clone(),
            ruleset: opened.ruleset,
            title: opened.title,
            forum_ref: opened.forum_ref,
            opened_at_unix_micros: record.recorded_at_unix_micros,
            closed: false,
            closed_at_unix_micros: None,
            head_version: 0,
        };
        for forum_ref in [None, Some(summary.forum_ref.clone())] {
            self.lists.entry((opened.tenant.clone(), forum_ref, false)).or_default().insert(position);
        }
        self.by_position.insert(position, record.stream_id.clone());
        self.battles.insert(
            record.stream_id.clone(),
            Entry { tenant: opened.tenant, opened_position: position, summary, cost, pending_at: None },
        );
        self.bytes += cost;
        while self.bytes > budget {
            let Some((oldest, id)) = self.by_position.pop_first() else { break };
            self.forget(oldest, &id);
        }
    }

    fn forget(&mut self, position: u64, battle_id: &str) {
        let Some(entry) = self.battles.remove(battle_id) else { return };
        self.bytes -= entry.cost;
        if let Some(at) = entry.pending_at {
            self.pending.remove(&at);
        }
        for forum_ref in [None, Some(entry.summary.forum_ref.clone())] {
            remove_from(&mut self.lists, &(entry.tenant.clone(), forum_ref, entry.summary.closed), position);
        }
        let below = self.forgotten_below.entry(entry.tenant).or_default();
        *below = (*below).max(position + 1);
    }
}

/// Takes `position` out of the list at `key`, and the list when it empties.
fn remove_from(lists: &mut HashMap<ListKey, BTreeSet<u64>>, key: &ListKey, position: u64) {
    if let Some(list) = lists.get_mut(key) {
        list.remove(&position);
        if list.is_empty() {
            lists.remove(key);
        }
    }
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use battlelog_proto::v1::{BattleClosed, BattleOpened};

    use super::*;
    use crate::journal::tests::{battle_event, commitment};
    use crate::{ExpectedVersion, Journal, JournalOptions, MemoryStore};

    fn opened(tenant: &str, forum_ref: &str, title: &str) -> crate::NewEvent {
        battle_event(Event::BattleOpened(BattleOpened {
            ruleset: "pokemon-d6@1".into(),
            title: title.into(),
            forum_ref: forum_ref.into(),
            commitment: commitment(0),
            tenant: tenant.into(),
            ..Default::default()
        }))
    }

    fn closed() -> crate::NewEvent {
        battle_event(Event::BattleClosed(BattleClosed { by: "judge".into(), reason: "done".into(), credential: None }))
    }

    fn query(tenant: &str, forum_ref: Option<&str>, status: BattleStatus, before: Option<u64>, n: usize) -> IndexQuery {
        IndexQuery { tenant: tenant.into(), forum_ref: forum_ref.map(Into::into), status, before, max_count: n }
    }

    fn ids(page: &IndexPage) -> Vec<&str> {
        page.battles.iter().map(|(_, s)| s.battle_id.as_str()).collect()
    }

    async fn memory_journal(budget: usize) -> Journal {
        let options = JournalOptions { battle_index_bytes: budget, ..JournalOptions::new("unused") };
        Journal::open_on(Arc::new(MemoryStore::new()), options).await.unwrap()
    }

    async fn open(journal: &Journal, id: &str, tenant: &str, forum_ref: &str) {
        journal.append(id.into(), ExpectedVersion::NoStream, vec![opened(tenant, forum_ref, id)]).await.unwrap();
    }

    /// Tenants, forum references and statuses filter; pages go newest first
    /// and continue where the last one stopped; a close moves a battle from
    /// the open list to the closed one, with its time and head.
    #[tokio::test]
    async fn lists_filter_and_page_newest_first() {
        let journal = memory_journal(DEFAULT_INDEX_BYTES).await;
        open(&journal, "a1", "t1", "thread/1").await;
        open(&journal, "b1", "t2", "thread/1").await;
        open(&journal, "a2", "t1", "thread/2").await;
        open(&journal, "a3", "t1", "thread/1").await;
        let closing = journal.append("a1".into(), ExpectedVersion::Exact(0), vec![closed()]).await.unwrap();

        let all = journal.list_battles(query("t1", None, BattleStatus::Any, None, 10)).await.unwrap();
        assert_eq!(ids(&all), ["a3", "a2", "a1"]);
        assert_eq!(all.next_before, None);
        assert!(!all.older_forgotten);
        let a1 = &all.battles[2].1;
        assert!(a1.closed);
        assert_eq!(a1.closed_at_unix_micros, Some(closing.events[0].recorded_at_unix_micros));
        assert_eq!(a1.head_version, 1);
        assert_eq!((a1.title.as_str(), a1.forum_ref.as_str(), a1.ruleset.as_str()), ("a1", "thread/1", "pokemon-d6@1"));
        assert_eq!(all.battles[0].1.closed_at_unix_micros, None);

        let first = journal.list_battles(query("t1", None, BattleStatus::Any, None, 2)).await.unwrap();
        assert_eq!(ids(&first), ["a3", "a2"]);
        let rest = journal.list_battles(query("t1", None, BattleStatus::Any, first.next_before, 2)).await.unwrap();
        assert_eq!((ids(&rest), rest.next_before), (vec!["a1"], None));

        let thread1 = journal.list_battles(query("t1", Some("thread/1"), BattleStatus::Any, None, 10)).await.unwrap();
        assert_eq!(ids(&thread1), ["a3", "a1"]);
        let open_ones = journal.list_battles(query("t1", Some("thread/1"), BattleStatus::Open, None, 10)).await;
        assert_eq!(ids(&open_ones.unwrap()), ["a3"]);
        let closed_ones = journal.list_battles(query("t1", None, BattleStatus::Closed, None, 10)).await.unwrap();
        assert_eq!(ids(&closed_ones), ["a1"]);
        let other = journal.list_battles(query("t2", None, BattleStatus::Any, None, 10)).await.unwrap();
        assert_eq!(ids(&other), ["b1"]);
        let nobody = journal.list_battles(query("t3", None, BattleStatus::Any, None, 10)).await.unwrap();
        assert!(nobody.battles.is_empty());
        journal.shutdown().await.unwrap();
    }

    /// `battle_index_bytes` at its edge: a budget of exactly two battles'
    /// cost keeps both; one byte less forgets the older, and the listing
    /// says so; the tenant whose battles all fit is not told.
    #[tokio::test]
    async fn the_budget_forgets_the_oldest_battles_first() {
        let cost = |id: &str, tenant: &str| entry_cost(id, tenant, "pokemon-d6@1", id, "f");
        let both = cost("x1", "t1") + cost("x2", "t1");

        let journal = memory_journal(both).await;
        open(&journal, "x1", "t1", "f").await;
        open(&journal, "x2", "t1", "f").await;
        let page = journal.list_battles(query("t1", None, BattleStatus::Any, None, 10)).await.unwrap();
        assert_eq!((ids(&page), page.older_forgotten), (vec!["x2", "x1"], false));
        assert_eq!(journal.battle_index().bytes(), both);
        journal.shutdown().await.unwrap();

        let journal = memory_journal(both - 1).await;
        open(&journal, "x1", "t1", "f").await;
        open(&journal, "x2", "t1", "f").await;
        let page = journal.list_battles(query("t1", None, BattleStatus::Any, None, 10)).await.unwrap();
        assert_eq!((ids(&page), page.older_forgotten), (vec!["x2"], true));
        assert_eq!(journal.battle_index().bytes(), cost("x2", "t1"));
        // A forgotten battle's later events change nothing.
        journal.append("x1".into(), ExpectedVersion::Exact(0), vec![closed()]).await.unwrap();
        let closed_ones = journal.list_battles(query("t1", None, BattleStatus::Closed, None, 10)).await.unwrap();
        assert!(closed_ones.battles.is_empty());
        journal.shutdown().await.unwrap();
    }

    /// A page read by the tree's follower is folded only when the index has
    /// nothing before it left to fold, never twice, and not while a listing
    /// is reading the log itself.
    #[tokio::test]
    async fn a_shared_page_is_folded_once_and_only_without_a_gap() {
        let journal = memory_journal(DEFAULT_INDEX_BYTES).await;
        for id in ["f1", "f2", "f3", "f4"] {
            open(&journal, id, "t1", "f").await;
        }
        let log = journal.read_all(0, 0).await.unwrap();
        assert_eq!(log.len(), 4);
        journal.shutdown().await.unwrap();
        let at = |i: usize| log[i].global_position;
        let listed = |index: &BattleIndex| {
            let page = index.query(&query("t1", None, BattleStatus::Any, None, 10));
            page.battles.iter().map(|(_, s)| s.battle_id.clone()).collect::<Vec<_>>()
        };
        let cost = |ids: &[&str]| ids.iter().map(|id| entry_cost(id, "t1", "pokemon-d6@1", id, "f")).sum::<usize>();

        let index = BattleIndex::new(DEFAULT_INDEX_BYTES);
        // A page past the cursor would leave a gap: refused.
        assert!(!index.feed(at(2), &log[2..]));
        assert!(listed(&index).is_empty());
        assert!(index.feed(at(0), &log[..2]));
        assert_eq!(listed(&index), ["f2", "f1"]);
        // Overlapping what it already folded: only the new ones count.
        assert!(index.feed(at(1), &log[1..3]));
        assert_eq!(listed(&index), ["f3", "f2", "f1"]);
        assert_eq!(index.bytes(), cost(&["f1", "f2", "f3"]));
        // A listing holds the reader's turn: the page is left to it.
        let turn = index.reading.try_lock().unwrap();
        assert!(!index.feed(at(3), &log[3..]));
        drop(turn);
        assert_eq!(listed(&index), ["f3", "f2", "f1"]);
        assert!(index.feed(at(3), &log[3..]));
        assert_eq!(listed(&index), ["f4", "f3", "f2", "f1"]);
    }

    /// A new index over a log already written (a restart, or a second
    /// journal over the same store) lists the same battles.
    #[tokio::test]
    async fn an_index_rebuilt_from_the_log_lists_the_same() {
        let store = Arc::new(MemoryStore::new());
        let first = Journal::open_on(store.clone(), JournalOptions::new("unused")).await.unwrap();
        for (id, tenant) in [("r1", "t1"), ("r2", "t2"), ("r3", "t1")] {
            open(&first, id, tenant, "f").await;
        }
        first.append("r3".into(), ExpectedVersion::Exact(0), vec![closed()]).await.unwrap();
        let before = first.list_battles(query("t1", None, BattleStatus::Any, None, 10)).await.unwrap();

        let second = Journal::open_on(store, JournalOptions::new("unused")).await.unwrap();
        // Folded at open from the pages of the tree's rebuild, before any
        // follower ran (this runtime has one thread, and nothing has yielded
        // to the follower yet) and before a listing could read the log.
        let at_open = second.battle_index().query(&query("t1", None, BattleStatus::Any, None, 10));
        assert_eq!(at_open, before);
        let after = second.list_battles(query("t1", None, BattleStatus::Any, None, 10)).await.unwrap();
        assert_eq!(ids(&after), ["r3", "r1"]);
        assert_eq!(after, before);
        second.shutdown().await.unwrap();
    }
}
