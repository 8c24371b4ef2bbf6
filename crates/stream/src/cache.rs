//! [`FoldCache`]: folded battles kept warm, within a budget in bytes.
//!
//! One entry per battle: its folded state behind an async mutex, which also
//! serialises one replica's commands on that battle. Entries are weighed by
//! [`Fold::weight`] (re-weighed each time a command lets go of one) and
//! evicted by quick_cache's policy (CLOCK-Pro-like: recently and often used
//! battles stay) once the budget is spent. An entry that a command holds or
//! waits for is pinned: evicting it would let a second copy of the same
//! battle exist in this replica. A state heavier than the cache allows is
//! dropped when let go of. Dropping a state costs only a read later: the
//! journal is the record.

use std::convert::Infallible;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use quick_cache::sync::Cache;
use quick_cache::{DefaultHashBuilder, Lifecycle, Weighter};
use tokio::sync::{Mutex, OwnedMutexGuard};

use crate::Fold;
use crate::metrics::CacheMetrics;

/// What one cache entry costs beyond its state: the key, the map's slot,
/// the `Arc` and the mutex.
const ENTRY_OVERHEAD_BYTES: u64 = 128;

#[derive(Debug)]
struct Entry<S> {
    state: Arc<Mutex<S>>,
    /// Commands holding or waiting for the state: while any does, the
    /// entry is pinned.
    users: Arc<AtomicUsize>,
    /// The state's weight when last let go of.
    bytes: u64,
}

impl<S> Clone for Entry<S> {
    fn clone(&self) -> Self {
        Self { state: self.state.clone(), users: self.users.clone(), bytes: self.bytes }
    }
}

#[derive(Debug, Clone, Copy)]
struct ByBytes;

impl<S> Weighter<String, Entry<S>> for ByBytes {
    fn weight(&self, key: &String, entry: &Entry<S>) -> u64 {
        key.len() as u64 + ENTRY_OVERHEAD_BYTES + entry.bytes
    }
}

/// Entries in use (a command holds or waits for them) are not evicted.
#[derive(Debug, Clone, Copy)]
struct PinnedWhileHeld;

impl<S> Lifecycle<String, Entry<S>> for PinnedWhileHeld {
    type RequestState = ();

    fn is_pinned(&self, _key: &String, entry: &Entry<S>) -> bool {
        entry.users.load(Ordering::Acquire) > 0
    }

    fn on_evict(&self, _state: &mut (), _key: String, _entry: Entry<S>) {}
}

/// Folded battles by battle id, bounded in bytes.
pub struct FoldCache<S> {
    entries: Arc<Cache<String, Entry<S>, ByBytes, DefaultHashBuilder, PinnedWhileHeld>>,
    budget_bytes: u64,
    metrics: CacheMetrics,
}

impl<S> Clone for FoldCache<S> {
    fn clone(&self) -> Self {
        Self { entries: self.entries.clone(), budget_bytes: self.budget_bytes, metrics: self.metrics.clone() }
    }
}

impl<S> std::fmt::Debug for FoldCache<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FoldCache")
            .field("budget_bytes", &self.budget_bytes)
            .field("battles", &self.entries.len())
            .field("weight", &self.entries.weight())
            .finish()
    }
}

impl<S: Fold> FoldCache<S> {
    /// A cache holding up to about `budget_bytes` of folded state.
    pub fn new(budget_bytes: u64) -> Self {
        // A guess at the number of battles, for the cache's tables only.
        let estimated_battles = usize::try_from(budget_bytes / 4096).unwrap_or(usize::MAX).clamp(16, 1 << 20);
        let entries = Cache::with(estimated_battles, budget_bytes.max(1), ByBytes, Default::default(), PinnedWhileHeld);
        Self { entries: Arc::new(entries), budget_bytes, metrics: CacheMetrics::default() }
    }

    /// The same cache counting hits and misses into `metrics` and keeping
    /// its size there (set after every change: a lookup may insert and
    /// evict, letting go re-weighs).
    pub fn with_metrics(mut self, metrics: CacheMetrics) -> Self {
        metrics.set_size(self.weight_bytes(), self.len());
        self.metrics = metrics;
        self
    }

    /// Records the size as it stands.
    fn measured(&self) {
        self.metrics.set_size(self.entries.weight(), self.entries.len());
    }

    /// The budget this cache was made with.
    pub fn budget_bytes(&self) -> u64 {
        self.budget_bytes
    }

    /// The weight of what is cached now, in bytes.
    pub fn weight_bytes(&self) -> u64 {
        self.entries.weight()
    }

    /// Battles cached now.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// `battle_id`'s state, locked for this command (created empty when not
    /// cached). Waits while another command of this replica holds it.
    pub async fn lock(&self, battle_id: &str) -> Held<S> {
        let mut missed = false;
        let entry = self.entries.get_or_insert_with(battle_id, || {
            missed = true;
            Ok::<_, Infallible>(Entry {
                state: Arc::new(Mutex::new(S::default())),
                users: Arc::new(AtomicUsize::new(0)),
                bytes: 0,
            })
        });
        let Ok(entry) = entry;
        self.metrics.looked_up(!missed);
        if missed {
            self.measured();
        }
        // Pinned from here on. (Evicted in the instant before, it would
        // only be read again by the next command.)
        entry.users.fetch_add(1, Ordering::AcqRel);
        let guard = entry.state.clone().lock_owned().await;
        Held {
            battle_id: battle_id.to_owned(),
            shared: entry.state,
            users: entry.users,
            guard: Some(guard),
            cache: self.clone(),
        }
    }

    /// `battle_id`'s state if it is cached, without counting as a use.
    pub fn peek(&self, battle_id: &str) -> Option<Arc<Mutex<S>>> {
        self.entries.peek(battle_id).map(|entry| entry.state)
    }

    /// Re-weighs `battle_id`'s entry, if `shared` is still the one cached.
    fn reweigh(&self, battle_id: &str, shared: &Arc<Mutex<S>>, users: &Arc<AtomicUsize>, bytes: u64) {
        if self.entries.peek(battle_id).is_some_and(|entry| Arc::ptr_eq(&entry.state, shared)) {
            // An entry heavier than the cache allows, and no longer in use,
            // is not admitted: it is dropped, and the next command reads
            // the battle afresh.
            let entry = Entry { state: shared.clone(), users: users.clone(), bytes };
            let _ = self.entries.replace(battle_id.to_owned(), entry, true);
            self.measured();
        }
    }
}

/// A battle's state held by one command; re-weighed in the cache when let go.
pub struct Held<S: Fold> {
    battle_id: String,
    shared: Arc<Mutex<S>>,
    users: Arc<AtomicUsize>,
    guard: Option<OwnedMutexGuard<S>>,
    cache: FoldCache<S>,
}

impl<S: Fold> std::fmt::Debug for Held<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Held").field("battle_id", &self.battle_id).finish_non_exhaustive()
    }
}

impl<S: Fold> Deref for Held<S> {
    type Target = S;
    fn deref(&self) -> &S {
        self.guard.as_deref().unwrap_or_else(|| unreachable!("held until dropped"))
    }
}

impl<S: Fold> DerefMut for Held<S> {
    fn deref_mut(&mut self) -> &mut S {
        self.guard.as_deref_mut().unwrap_or_else(|| unreachable!("held until dropped"))
    }
}

impl<S: Fold> Drop for Held<S> {
    fn drop(&mut self) {
        let Some(guard) = self.guard.take() else { return };
        let bytes = guard.weight() as u64;
        drop(guard);
        self.users.fetch_sub(1, Ordering::AcqRel);
        self.cache.reweigh(&self.battle_id, &self.shared, &self.users, bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use battlelog_proto::v1::JournalRecord;

    /// A fold that only counts, and weighs what it is told to.
    #[derive(Debug, Default)]
    struct Counted {
        next: u64,
        bytes: usize,
    }

    impl Fold for Counted {
        type Error = String;
        fn next_version(&self) -> u64 {
            self.next
        }
        fn apply(&mut self, record: &JournalRecord) -> Result<(), String> {
            self.next = record.version + 1;
            Ok(())
        }
        fn weight(&self) -> usize {
            self.bytes
        }
    }

    #[tokio::test]
    async fn a_state_is_kept_between_commands() {
        let cache = FoldCache::<Counted>::new(1 << 20);
        cache.lock("b1").await.next = 5;
        assert_eq!(cache.lock("b1").await.next_version(), 5);
        assert_eq!(cache.len(), 1);
    }

    /// The budget is in bytes: many small battles fit, a few heavy ones
    /// push the others out, and the weight stays near the budget.
    #[tokio::test]
    async fn the_budget_bounds_the_bytes_not_the_count() {
        let budget = 1 << 20;
        let cache = FoldCache::<Counted>::new(budget);
        for i in 0..1000 {
            cache.lock(&format!("small-{i}")).await.bytes = 100;
        }
        assert_eq!(cache.len(), 1000, "1000 small battles fit in 1 MiB");
        for i in 0..200 {
            cache.lock(&format!("heavy-{i}")).await.bytes = 50_000;
        }
        assert!(cache.weight_bytes() <= budget, "{} bytes cached over a budget of {budget}", cache.weight_bytes());
        let heavy = (0..200).filter(|i| cache.peek(&format!("heavy-{i}")).is_some()).count();
        assert!(heavy <= 21, "{heavy} battles of 50 kB cannot all fit in 1 MiB");
    }

    /// A state heavier than the whole budget is not kept once let go of.
    #[tokio::test]
    async fn a_state_over_the_budget_is_dropped_when_let_go_of() {
        let cache = FoldCache::<Counted>::new(1);
        let mut held = cache.lock("b1").await;
        held.next = 3;
        drop(held);
        assert!(cache.peek("b1").is_none());
        assert_eq!(cache.lock("b1").await.next_version(), 0, "read afresh");
    }

    /// A battle a command holds is never evicted, however full the cache.
    #[tokio::test]
    async fn a_held_state_is_not_evicted() {
        let cache = FoldCache::<Counted>::new(64 * 1024);
        let mut held = cache.lock("busy").await;
        held.next = 9;
        for i in 0..500 {
            cache.lock(&format!("other-{i}")).await.bytes = 1000;
        }
        let peeked = cache.peek("busy").expect("still cached while held");
        assert!(Arc::ptr_eq(&peeked, &held.shared));
        drop(held);
        assert_eq!(cache.peek("busy").expect("cached").try_lock().expect("free").next_version(), 9);
    }

    /// A first lookup misses, the next hits; the size recorded is what the
    /// cache holds: each entry its state's weight, its key and the
    /// per-entry overhead, and nothing once a state too heavy is dropped.
    #[tokio::test]
    async fn lookups_and_size_are_recorded() {
        let metrics = CacheMetrics::default();
        let cache = FoldCache::<Counted>::new(64 * 1024).with_metrics(metrics.clone());
        assert_eq!(metrics.size(), (0, 0));
        cache.lock("b1").await.bytes = 1000;
        assert_eq!(metrics.lookups(), (0, 1), "a miss");
        assert_eq!(metrics.size(), (2 + ENTRY_OVERHEAD_BYTES + 1000, 1));
        cache.lock("b1").await.bytes = 3000;
        assert_eq!(metrics.lookups(), (1, 1), "then a hit");
        cache.lock("b22").await.bytes = 10;
        assert_eq!(metrics.size(), ((2 + ENTRY_OVERHEAD_BYTES + 3000) + (3 + ENTRY_OVERHEAD_BYTES + 10), 2));
        // Over the whole budget: dropped when let go of.
        cache.lock("b1").await.bytes = 100_000;
        assert_eq!(metrics.size(), (3 + ENTRY_OVERHEAD_BYTES + 10, 1));
        assert_eq!(metrics.lookups(), (2, 2));
    }
}
