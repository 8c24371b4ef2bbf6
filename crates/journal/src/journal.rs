//! [`Journal`]: the embeddable handle. It owns the store and the outbox
//! drain and applies the append policy ([`crate::planner`]) above the
//! store; the gRPC service is a thin layer over it, and other services in
//! the same process can call it directly.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tracing::{Instrument as _, info, warn};

use crate::chain::ChainCheck;
use crate::error::JournalError;
use crate::index::{BattleIndex, IndexPage, IndexQuery};
use crate::limits::{self, ExpectedVersion, Limits, NewEvent};
use crate::merkle_log::{self, ConsistencyProof, InclusionProof, SignedHead, TransparencyLog, TransparencyOptions};
use crate::metrics::JournalMetrics;
use crate::outbox::{self, EventPublisher};
use crate::planner::{self, Plan};
pub use crate::store::group_commit::CommitStats;
use crate::store::{
    AppendOutcome, AppendedEvent, EventStore, PlannedAppend, SledStore, StorageError, StoredEvent, StreamHead,
};

/// How to open a journal.
#[derive(Debug, Clone)]
pub struct JournalOptions {
    /// The sled directory.
    pub data_dir: PathBuf,
    /// Input limits.
    pub limits: Limits,
    /// Most appends one group commit takes.
    pub max_commit_batch: usize,
    /// sled's page cache size.
    pub cache_capacity_bytes: u64,
    /// Where committed events fan out to; `None` keeps them in the outbox.
    pub publisher: Option<Arc<dyn EventPublisher>>,
    /// About how many bytes the battle index may take ([`crate::index`]).
    pub battle_index_bytes: usize,
    /// Where appends, group commits and the outbox are counted (by default
    /// registered nowhere).
    pub metrics: JournalMetrics,
    /// The transparency log: its key and checkpoint interval
    /// ([`crate::merkle_log`]); on by default.
    pub transparency: TransparencyOptions,
}

impl JournalOptions {
    /// Defaults for everything but the directory; no publisher.
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        Self {
            data_dir: data_dir.into(),
            limits: Limits::default(),
            max_commit_batch: 1024,
            cache_capacity_bytes: 256 * 1024 * 1024,
            publisher: None,
            battle_index_bytes: crate::index::DEFAULT_INDEX_BYTES,
            metrics: JournalMetrics::default(),
            transparency: TransparencyOptions::default(),
        }
    }

    /// The same options, counting into `metrics` (see [`JournalMetrics::register`]).
    pub fn with_metrics(mut self, metrics: JournalMetrics) -> Self {
        self.metrics = metrics;
        self
    }
}

/// A handle to an open journal; cheap to clone.
#[derive(Debug, Clone)]
pub struct Journal {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    store: Arc<dyn EventStore>,
    /// The same store when it is sled's, for its group-commit counters.
    sled: Option<Arc<SledStore>>,
    limits: Limits,
    drain: Mutex<Option<JoinHandle<()>>>,
    /// Turns true when shutdown starts; ends subscriptions and the drain,
    /// and refuses new appends.
    closing: watch::Sender<bool>,
    /// One turn per stream: appends to one stream through this journal plan
    /// and write one after another, so they never race each other into
    /// conflicts (only appends through another journal process can).
    turns: StreamTurns,
    /// Every battle's summary, for listings, folded from the global log.
    index: Arc<BattleIndex>,
    /// The task following the global log into the tree and the index; it
    /// holds the store, so shutdown ends it before the store is released.
    follower: Mutex<Option<JoinHandle<()>>>,
    metrics: JournalMetrics,
    /// The Merkle tree over the global log and its checkpoints.
    log: Arc<TransparencyLog>,
    /// The task signing checkpoints (none when the log is off); ended at
    /// shutdown like the follower.
    signer: Mutex<Option<JoinHandle<()>>>,
}

/// A lock per stream, held from planning to the store's answer; an entry
/// lives only while somebody holds or waits for it.
#[derive(Debug, Default)]
struct StreamTurns(Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>);

impl StreamTurns {
    async fn take(&self, stream_id: &str) -> StreamTurn<'_> {
        let turn = lock(&self.0).entry(stream_id.to_owned()).or_default().clone();
        let guard = turn.clone().lock_owned().await;
        StreamTurn { turns: self, stream_id: stream_id.to_owned(), turn, _guard: guard }
    }
}

/// A stream's turn, released (and forgotten when nobody else wants it) on drop.
struct StreamTurn<'a> {
    turns: &'a StreamTurns,
    stream_id: String,
    turn: Arc<tokio::sync::Mutex<()>>,
    _guard: tokio::sync::OwnedMutexGuard<()>,
}

impl Drop for StreamTurn<'_> {
    fn drop(&mut self) {
        let mut turns = lock(&self.turns.0);
        // Held here, by the guard and by the map: nobody else waits.
        if Arc::strong_count(&self.turn) <= 3 {
            turns.remove(&self.stream_id);
        }
    }
}

/// Events streamed by a subscription (catch-up, then live).
pub type Subscription = mpsc::Receiver<Result<StoredEvent, JournalError>>;

/// How many events a subscription reads from storage per step.
const SUBSCRIPTION_BATCH: usize = 256;

/// How often one append is planned again after its stream moved under it
/// (an append through another journal process won the race) before the
/// caller is told so.
const MAX_PLAN_ATTEMPTS: usize = 64;

/// One append of a batch planned for the group commit: its place in the
/// batch, the append, its stream's turn and the events it answers with.
type GroupedWrite<'a> = (usize, limits::ValidAppend, StreamTurn<'a>, Vec<AppendedEvent>);

impl Journal {
    /// Opens (or creates) the journal in `options.data_dir` on sled, starts
    /// the committer and, with a publisher, the outbox drain (which first
    /// sends whatever an earlier run left in the outbox). Needs a tokio
    /// runtime.
    pub async fn open(mut options: JournalOptions) -> Result<Self, JournalError> {
        validate_limits(&options.limits)?;
        if options.transparency.enabled && options.transparency.key.is_none() {
            // sled has a directory: the log key lives beside the log.
            let path = options.data_dir.join(crate::config::GENERATED_LOG_KEY_FILE);
            let key = merkle_log::read_or_create_key(&path, battlelog_tlog::DEFAULT_ORIGIN)
                .map_err(|message| JournalError::InvalidArgument { field: "log_key_file".into(), message })?;
            options.transparency.key = Some(Arc::new(key));
        }
        if options.transparency.kept_checkpoint.is_none() {
            // Beside the log key, apart from sled's own files.
            options.transparency.kept_checkpoint = Some(options.data_dir.join(crate::kept::KEPT_CHECKPOINT_FILE));
        }
        let dir = options.data_dir.clone();
        let cache = options.cache_capacity_bytes;
        let batch = options.max_commit_batch;
        // Opening recovers sled's log (and a group a crash cut short), which blocks.
        let store = tokio::task::spawn_blocking(move || SledStore::open(&dir, cache, batch))
            .await
            .map_err(|e| JournalError::Storage(StorageError::fatal("sled", format!("open task: {e}"))))??;
        let store = Arc::new(store);
        let mut journal = Self::open_on(store.clone(), options).await?;
        if let Some(inner) = Arc::get_mut(&mut journal.inner) {
            inner.sled = Some(store);
        }
        Ok(journal)
    }

    /// Opens the journal on an already open store (`options.data_dir`,
    /// `cache_capacity_bytes` and `max_commit_batch` are the store's business
    /// then): the same policy, outbox drain and reads, on any [`EventStore`].
    pub async fn open_on(store: Arc<dyn EventStore>, options: JournalOptions) -> Result<Self, JournalError> {
        validate_limits(&options.limits)?;
        store.attach_metrics(&options.metrics);
        let (closing, _) = watch::channel(false);
        let drain = start_drain(&store, options.publisher.clone(), &options.metrics, &closing).await?;
        let log = Arc::new(TransparencyLog::new(&options.transparency, options.metrics.clone())?);
        if let Some(dir) = options.transparency.kept_checkpoint.as_deref().and_then(std::path::Path::parent) {
            say_forks(dir);
        }
        let index = Arc::new(BattleIndex::new(options.battle_index_bytes));
        let signer = if log.enabled() {
            Some(start_log(&log, &store, &index, &options, &closing).await)
        } else {
            warn!("the transparency log is off: no checkpoints, proofs or signed heads");
            None
        };
        let follower = start_follower(&log, &store, &index, &options.limits, &closing);
        Ok(Self {
            inner: Arc::new(Inner {
                store,
                sled: None,
                limits: options.limits,
                drain: Mutex::new(drain),
                closing,
                turns: StreamTurns::default(),
                index,
                follower: Mutex::new(Some(follower)),
                metrics: options.metrics,
                log,
                signer: Mutex::new(signer),
            }),
        })
    }

    /// The battle index (for its size; list with [`Self::list_battles`]).
    pub fn battle_index(&self) -> &BattleIndex {
        &self.inner.index
    }

    /// A page of one tenant's battles, newest first, after catching the
    /// index up with everything durable now. `max_count` is capped at
    /// `max_read_count` (0 means it).
    pub async fn list_battles(&self, mut query: IndexQuery) -> Result<IndexPage, JournalError> {
        let l = &self.inner.limits;
        if query.tenant.is_empty() {
            return Err(JournalError::InvalidArgument { field: "tenant".into(), message: "is required".into() });
        }
        // As for reads: 0 or more than max_read_count is max_read_count (a
        // page may be short and still have a next one).
        if query.max_count == 0 || query.max_count > l.max_read_count {
            query.max_count = l.max_read_count;
        }
        self.inner.index.catch_up(&*self.inner.store, l.max_read_count, l.max_read_bytes).await?;
        Ok(self.inner.index.query(&query))
    }

    /// The battles with an action pending (roll-forward), oldest roll
    /// first, after catching the index up with everything durable now:
    /// at most `max_count` (capped at `max_read_count`; 0 means that), each
    /// rolled at or before `rolled_before_unix_micros` (`None`: any).
    pub async fn pending_actions(
        &self,
        rolled_before_unix_micros: Option<i64>,
        max_count: usize,
    ) -> Result<Vec<crate::index::PendingEntry>, JournalError> {
        let l = &self.inner.limits;
        let max_count = if max_count == 0 || max_count > l.max_read_count { l.max_read_count } else { max_count };
        self.inner.index.catch_up(&*self.inner.store, l.max_read_count, l.max_read_bytes).await?;
        Ok(self.inner.index.pending(rolled_before_unix_micros, max_count))
    }

    /// The newest checkpoint of the transparency log (`None` while the log
    /// is empty, or with the log off).
    pub fn checkpoint(&self) -> Option<battlelog_tlog::Checkpoint> {
        self.inner.log.newest()
    }

    /// The newest checkpoint now and whenever a newer one is issued.
    pub fn watch_checkpoints(&self) -> watch::Receiver<Option<battlelog_tlog::Checkpoint>> {
        self.inner.log.watch_newest()
    }

    /// How this journal's store falls short of the last checkpoint it
    /// signed ([`crate::kept`]), if it does: then it takes no appends and
    /// signs nothing.
    pub fn store_behind(&self) -> Option<crate::kept::StoreBehind> {
        self.inner.log.behind()
    }

    /// True while the journal takes appends (its store is not behind its
    /// last signed checkpoint), now and whenever that changes: what its
    /// health says.
    pub fn watch_writable(&self) -> watch::Receiver<bool> {
        self.inner.log.watch_writable()
    }

    /// The log's verifier key (docs/protocol.md §5), to publish.
    pub fn log_key(&self) -> battlelog_tlog::VerifierKey {
        self.inner.log.verifier_key()
    }

    /// Leaves in this journal's tree now (it may be ahead of the newest
    /// checkpoint).
    pub fn tree_size(&self) -> u64 {
        self.inner.log.size()
    }

    /// About the memory the tree takes (its stored hashes and each leaf's
    /// global position).
    pub fn tree_memory_bytes(&self) -> usize {
        self.inner.log.memory_bytes()
    }

    /// The inclusion proof of `stream_id@version` at `tree_size` (`None`:
    /// the newest checkpoint's). A size past the newest checkpoint, a
    /// version past the head, or a record not yet in the tree at that size
    /// is `InvalidArgument` naming the field; a stream without events is
    /// `StreamNotFound`.
    pub async fn inclusion_proof(
        &self,
        stream_id: &str,
        version: u64,
        tree_size: Option<u64>,
    ) -> Result<InclusionProof, JournalError> {
        limits::validate_stream_id("stream_id", stream_id)?;
        if !self.inner.log.enabled() {
            return Err(JournalError::TransparencyOff);
        }
        let l = &self.inner.limits;
        let position = merkle_log::position_of(&*self.inner.store, stream_id, version, l.max_read_bytes).await?;
        self.inner.log.inclusion_proof(stream_id, version, position, tree_size)
    }

    /// The consistency proof from `old_size` to `new_size` (`None`: the
    /// newest checkpoint's); `old_size` past `new_size`, or `new_size` past
    /// the newest checkpoint, is `InvalidArgument` naming the field.
    pub fn consistency_proof(&self, old_size: u64, new_size: Option<u64>) -> Result<ConsistencyProof, JournalError> {
        self.inner.log.consistency_proof(old_size, new_size)
    }

    /// `stream_id`'s head signed with the log key at a checkpoint that
    /// holds it, with its inclusion proof: an export's trailer. Issues that
    /// checkpoint when the newest does not hold the head yet.
    pub async fn signed_head(&self, stream_id: &str) -> Result<SignedHead, JournalError> {
        let closing = self.inner.closing.subscribe();
        let max_bytes = self.inner.limits.max_read_bytes;
        self.inner.log.signed_head(&*self.inner.store, stream_id, max_bytes, closing).await
    }

    /// The limits this journal enforces.
    pub fn limits(&self) -> &Limits {
        &self.inner.limits
    }

    /// The store underneath.
    pub fn store(&self) -> &Arc<dyn EventStore> {
        &self.inner.store
    }

    /// Group-commit counters since open, when the store is sled's.
    pub fn commit_stats(&self) -> Option<&CommitStats> {
        self.inner.sled.as_deref().map(SledStore::commit_stats)
    }

    /// Appends `events` to `stream_id` if `expected` holds: all or none, and
    /// durable before this returns `Ok`. Concurrent appends share flushes. A
    /// repeat of known idempotency keys returns the original result.
    pub async fn append(
        &self,
        stream_id: String,
        expected: ExpectedVersion,
        events: Vec<NewEvent>,
    ) -> Result<AppendOutcome, JournalError> {
        self.counted(self.append_counted(stream_id, expected, events).await)
    }

    /// `outcome`, counted into the metrics (appended, replayed or refused).
    fn counted(&self, outcome: Result<AppendOutcome, JournalError>) -> Result<AppendOutcome, JournalError> {
        self.inner.metrics.append_answered(match &outcome {
            Ok(outcome) if outcome.deduplicated => Some(0),
            Ok(outcome) => Some(outcome.events.len() as u64),
            Err(_) => None,
        });
        outcome
    }

    /// [`Self::append`] before it is counted.
    async fn append_counted(
        &self,
        stream_id: String,
        expected: ExpectedVersion,
        events: Vec<NewEvent>,
    ) -> Result<AppendOutcome, JournalError> {
        let append = limits::validate_append(&self.inner.limits, stream_id, expected, events)?;
        self.inner.log.check_not_behind()?;
        let turn = self.inner.turns.take(&append.stream_id).await;
        self.append_in_turn(&append, turn).await
    }

    /// Several appends, each carried out and answered as [`Self::append`]
    /// would (its own validation, guard, repeat or conflict), their records
    /// handed to the store together so that one group commit (one flush)
    /// takes them: an `AppendBatch`. In call order, one outcome per append.
    pub async fn append_batch(
        &self,
        appends: Vec<(String, ExpectedVersion, Vec<NewEvent>)>,
    ) -> Vec<Result<AppendOutcome, JournalError>> {
        if let Some(behind) = self.inner.log.behind() {
            return appends.iter().map(|_| self.counted(Err(JournalError::StoreBehind(behind.clone())))).collect();
        }
        let mut outcomes: Vec<Option<Result<AppendOutcome, JournalError>>> = appends.iter().map(|_| None).collect();
        // One append per stream goes together; another to a stream already
        // in the batch goes after, on its own (its stream's turn is held).
        let mut streams = std::collections::HashSet::new();
        let mut together = Vec::new();
        let mut after = Vec::new();
        for (i, (stream_id, expected, events)) in appends.into_iter().enumerate() {
            if !streams.insert(stream_id.clone()) {
                after.push((i, stream_id, expected, events));
                continue;
            }
            match limits::validate_append(&self.inner.limits, stream_id, expected, events) {
                Ok(append) => together.push((i, append)),
                Err(error) => outcomes[i] = Some(Err(error)),
            }
        }
        // Turns are taken in stream order, as a single append takes only
        // one: two batches sharing streams cannot wait on each other.
        together.sort_by(|a, b| a.1.stream_id.cmp(&b.1.stream_id));
        let store = &*self.inner.store;
        let mut planned = Vec::new();
        let mut writes = Vec::new();
        for (i, append) in together {
            if *self.inner.closing.borrow() {
                outcomes[i] = Some(Err(JournalError::ShuttingDown));
                continue;
            }
            let turn = self.inner.turns.take(&append.stream_id).await;
            let plan = planner::plan(store, &append, now_micros()).instrument(tracing::debug_span!("journal.plan"));
            match plan.await {
                Ok(Plan::Repeat(outcome)) => outcomes[i] = Some(Ok(outcome)),
                Ok(Plan::Write { planned: records, events }) => {
                    planned.push(records);
                    writes.push((i, append, turn, events));
                }
                Err(error) => outcomes[i] = Some(Err(error)),
            }
        }
        self.commit_together(planned, writes, &mut outcomes).await;
        for (i, stream_id, expected, events) in after {
            outcomes[i] = Some(self.append_counted(stream_id, expected, events).await);
        }
        outcomes
            .into_iter()
            .map(|outcome| {
                self.counted(outcome.unwrap_or_else(|| Err(JournalError::Poisoned("an append got no answer".into()))))
            })
            .collect()
    }

    /// Commits a batch's planned appends as one group, each answer into its
    /// place in `outcomes`; an append the group could not take goes again
    /// alone, still in its turn.
    async fn commit_together(
        &self,
        planned: Vec<PlannedAppend>,
        writes: Vec<GroupedWrite<'_>>,
        outcomes: &mut [Option<Result<AppendOutcome, JournalError>>],
    ) {
        let committed = if planned.is_empty() {
            Ok(Vec::new())
        } else {
            self.inner.store.append(planned).instrument(tracing::debug_span!("journal.commit")).await
        };
        match committed {
            Ok(results) if results.len() == writes.len() => {
                for ((i, append, turn, mut events), result) in writes.into_iter().zip(results) {
                    outcomes[i] = Some(match result {
                        Ok(positions) => {
                            for (event, position) in events.iter_mut().zip(positions) {
                                event.global_position = position;
                            }
                            Ok(AppendOutcome { events, deduplicated: false })
                        }
                        // Another journal process moved the stream first:
                        // this one goes on alone, still in its turn.
                        Err(_) => self.append_in_turn(&append, turn).await,
                    });
                }
            }
            // The group failed as a whole (or answered for the wrong number
            // of appends): each tries again alone and gets its own answer.
            _ => {
                for (i, append, turn, _) in writes {
                    outcomes[i] = Some(self.append_in_turn(&append, turn).await);
                }
            }
        }
    }

    /// Plans and writes `append` while its stream's `turn` is held, planning
    /// again while another journal process wins the race for the stream.
    async fn append_in_turn(
        &self,
        append: &limits::ValidAppend,
        turn: StreamTurn<'_>,
    ) -> Result<AppendOutcome, JournalError> {
        let _turn = turn;
        let store = &*self.inner.store;
        let mut last_conflict = None;
        let mut attempt = 0u32;
        for _ in 0..MAX_PLAN_ATTEMPTS {
            if *self.inner.closing.borrow() {
                return Err(JournalError::ShuttingDown);
            }
            let plan = planner::plan(store, append, now_micros()).instrument(tracing::debug_span!("journal.plan"));
            let (planned, mut events) = match plan.await? {
                Plan::Repeat(outcome) => return Ok(outcome),
                Plan::Write { planned, events } => (planned, events),
            };
            let outcome = store.append(vec![planned]).instrument(tracing::debug_span!("journal.commit")).await?.pop();
            match outcome {
                Some(Ok(positions)) => {
                    for (event, position) in events.iter_mut().zip(positions) {
                        event.global_position = position;
                    }
                    return Ok(AppendOutcome { events, deduplicated: false });
                }
                // Another journal process moved the stream first: plan again
                // against its new head (which may now make this a repeat, or
                // refuse it), after a random pause that grows with each lost
                // race, so that two processes racing for one battle do not
                // keep colliding in step.
                Some(Err(conflict)) => {
                    last_conflict = Some(conflict);
                    attempt += 1;
                    let ceiling_micros = 100u64 << attempt.min(7);
                    tokio::time::sleep(std::time::Duration::from_micros(random_u64() % ceiling_micros)).await;
                }
                None => return Err(JournalError::Poisoned("the store gave no answer".into())),
            }
        }
        Err(JournalError::WrongExpectedVersion {
            stream_id: append.stream_id.clone(),
            expected: append.expected,
            actual: last_conflict.and_then(|c| c.actual),
        })
    }

    /// Reads durable events of a stream from `from_version` (at most
    /// `max_count`, capped by the limits; 0 means the cap).
    pub async fn read_stream(
        &self,
        stream_id: &str,
        from_version: u64,
        max_count: u32,
    ) -> Result<Vec<StoredEvent>, JournalError> {
        limits::validate_stream_id("stream_id", stream_id)?;
        let l = &self.inner.limits;
        Ok(self
            .inner
            .store
            .read_stream(stream_id, from_version, limits::wire_page(l.read_count(max_count), l.max_read_bytes))
            .await?)
    }

    /// Reads durable events of the global log from `from_position`.
    pub async fn read_all(&self, from_position: u64, max_count: u32) -> Result<Vec<StoredEvent>, JournalError> {
        let l = &self.inner.limits;
        Ok(self
            .inner
            .store
            .read_all(from_position, limits::wire_page(l.read_count(max_count), l.max_read_bytes))
            .await?)
    }

    /// The durable head of a stream.
    pub async fn stream_head(&self, stream_id: &str) -> Result<StreamHead, JournalError> {
        limits::validate_stream_id("stream_id", stream_id)?;
        Ok(match self.inner.store.head(stream_id).await? {
            Some(head) => StreamHead { version: Some(head.version), hash: head.hash },
            None => StreamHead { version: None, hash: crate::record::genesis_hash(stream_id) },
        })
    }

    /// Recomputes a stream's chain from the stored bytes.
    pub async fn verify_chain(&self, stream_id: &str) -> Result<ChainCheck, JournalError> {
        limits::validate_stream_id("stream_id", stream_id)?;
        Ok(crate::chain::check(self.inner.store.as_ref(), stream_id).await?)
    }

    /// Streams a stream's events from `from_version`: everything stored, then
    /// each new event as it becomes durable. Every step reads from storage
    /// after the last version sent, so the switch from catch-up to live can
    /// neither skip nor repeat an event. Ends at shutdown or when dropped.
    pub fn subscribe_stream(&self, stream_id: &str, from_version: u64) -> Result<Subscription, JournalError> {
        limits::validate_stream_id("stream_id", stream_id)?;
        let stream_id: Arc<str> = stream_id.into();
        let max_bytes = self.inner.limits.max_read_bytes;
        Ok(self.subscribe(from_version, move |store, cursor| {
            let stream_id = stream_id.clone();
            Box::pin(async move {
                let events =
                    store.read_stream(&stream_id, cursor, limits::wire_page(SUBSCRIPTION_BATCH, max_bytes)).await?;
                let next = events.last().map_or(cursor, |e| e.event.version + 1);
                Ok((events, next))
            })
        }))
    }

    /// Streams the global log from `from_position`, catch-up then live.
    pub fn subscribe_all(&self, from_position: u64) -> Subscription {
        let max_bytes = self.inner.limits.max_read_bytes;
        self.subscribe(from_position, move |store, cursor| {
            Box::pin(async move {
                let events = store.read_all(cursor, limits::wire_page(SUBSCRIPTION_BATCH, max_bytes)).await?;
                let next = events.last().map_or(cursor, |e| e.global_position + 1);
                Ok((events, next))
            })
        })
    }

    fn subscribe<F>(&self, from: u64, mut read: F) -> Subscription
    where
        F: FnMut(Arc<dyn EventStore>, u64) -> crate::store::StoreFuture<'static, (Vec<StoredEvent>, u64)>
            + Send
            + 'static,
    {
        let (tx, rx) = mpsc::channel(SUBSCRIPTION_BATCH);
        let store = self.inner.store.clone();
        let mut closing = self.inner.closing.subscribe();
        let mut changes = store.changes();
        tokio::spawn(async move {
            let mut cursor = from;
            loop {
                if *closing.borrow() {
                    return;
                }
                // Marked seen before reading: a change after this read wakes
                // the wait below, so no event can slip between read and wait.
                changes.borrow_and_update();
                let (events, next) = match read(store.clone(), cursor).await {
                    Ok(step) => step,
                    Err(e) => {
                        let _ = tx.send(Err(e.into())).await;
                        return;
                    }
                };
                if events.is_empty() {
                    tokio::select! {
                        changed = changes.changed() => if changed.is_err() { return },
                        _ = closing.changed() => return,
                        _ = tx.closed() => return,
                    }
                    continue;
                }
                for event in events {
                    if tx.send(Ok(event)).await.is_err() {
                        return;
                    }
                }
                cursor = next;
            }
        });
        rx
    }

    /// Starts shutting down: refuses new appends and ends subscriptions.
    /// Appends already handed to the store still commit.
    pub fn begin_shutdown(&self) {
        self.inner.closing.send_replace(true);
    }

    /// Shuts down: [`Self::begin_shutdown`], then waits until the outbox
    /// drain has stopped and the store has committed what it was given and
    /// closed. A sled directory can be opened again once every clone of this
    /// handle is dropped (sled holds a lock on it while the database is open).
    pub async fn shutdown(&self) -> Result<(), JournalError> {
        self.begin_shutdown();
        let drain = lock(&self.inner.drain).take();
        if let Some(drain) = drain {
            let _ = drain.await;
        }
        // Derived state only: stopped mid-read loses nothing, and gives the
        // store back (sled's lock) before this returns.
        let follower = lock(&self.inner.follower).take();
        let signer = lock(&self.inner.signer).take();
        for task in follower.into_iter().chain(signer) {
            task.abort();
            let _ = task.await;
        }
        self.inner.store.close().await?;
        info!("journal closed");
        Ok(())
    }
}

/// The outbox drain, when the store keeps an outbox and there is a
/// publisher to drain it to.
async fn start_drain(
    store: &Arc<dyn EventStore>,
    publisher: Option<Arc<dyn EventPublisher>>,
    metrics: &JournalMetrics,
    closing: &watch::Sender<bool>,
) -> Result<Option<JoinHandle<()>>, JournalError> {
    Ok(match (publisher, store.outbox_cursor().await?) {
        (Some(publisher), Some(cursor)) => {
            info!(cursor, "outbox drain started");
            Some(tokio::spawn(outbox::drain(store.clone(), publisher, metrics.clone(), closing.subscribe())))
        }
        (None, Some(cursor)) => {
            warn!(cursor, "no event publisher (no NATS URL): committed events wait in the outbox");
            None
        }
        (Some(_), None) => {
            info!(engine = store.engine(), "the store's log is its own fan-out: no outbox drain");
            None
        }
        (None, None) => None,
    })
}

/// The transparency log rebuilt from the global log (and the battle index
/// with it), its first checkpoint signed, and its signer started.
async fn start_log(
    log: &Arc<TransparencyLog>,
    store: &Arc<dyn EventStore>,
    index: &Arc<BattleIndex>,
    options: &JournalOptions,
    closing: &watch::Sender<bool>,
) -> JoinHandle<()> {
    // Rebuilt before the first call: a checkpoint signed now covers
    // every durable record, so it extends every one issued before.
    let started = std::time::Instant::now();
    // A log that does not read back whole (a corrupt record) must
    // not keep the journal from starting: its operator needs
    // VerifyChain to find the break. The tree stops before it, and
    // the follower keeps trying (and saying so).
    // The index is folded from the same pages, so that the log is
    // read once at start, and the follower never holds the tree
    // back behind the index's own first read of the whole log.
    let rebuilt = log
        .catch_up(&**store, options.limits.max_read_count, options.limits.max_read_bytes, |from, events| {
            index.feed(from, events);
        })
        .await;
    if let Err(e) = rebuilt {
        warn!(error = %e, leaves = log.size(), "transparency log: the global log stopped reading back; the tree stops here");
    }
    // Before anything is signed or taken: a store behind what was
    // signed must not sign again over the records it lost.
    log.hold_to_kept();
    let first = match log.issue().await {
        Ok(first) => first,
        Err(e) => {
            warn!(error = %e, "no checkpoint signed at start");
            log.newest()
        }
    };
    info!(
        leaves = log.size(),
        memory_bytes = log.memory_bytes(),
        millis = started.elapsed().as_millis() as u64,
        checkpoint_size = first.map(|c| c.size),
        "transparency log rebuilt from the global log"
    );
    let signer =
        tokio::spawn(merkle_log::sign(log.clone(), options.transparency.checkpoint_interval, closing.subscribe()));
    info!("log key: {}", log.verifier_key());
    signer
}

/// The follower of the global log, for the tree and the battle index.
fn start_follower(
    log: &Arc<TransparencyLog>,
    store: &Arc<dyn EventStore>,
    index: &Arc<BattleIndex>,
    limits: &Limits,
    closing: &watch::Sender<bool>,
) -> JoinHandle<()> {
    let (follower_index, follower_store) = (index.clone(), store.clone());
    let (page, max_bytes) = (limits.max_read_count, limits.max_read_bytes);
    // One follower reads each new record once for both the tree and the
    // index: reading the log back is most of what following costs
    // (BENCHMARKS.md, the journal's CPU at concurrency 64). The index
    // then reads only what the tree's pages did not give it (what came
    // in between, or what a listing's own read was folding meanwhile).
    let follower_log = log.enabled().then(|| log.clone());
    tokio::spawn(follow_log("transparency log and battle index", store.clone(), closing.subscribe(), move || {
        let (log, index, store) = (follower_log.clone(), follower_index.clone(), follower_store.clone());
        async move {
            // A record that does not read back stops the tree; the
            // index still takes what it can, as it did on its own.
            let followed = match log {
                Some(log) => {
                    log.catch_up(&*store, page, max_bytes, |from, events| {
                        index.feed(from, events);
                    })
                    .await
                }
                None => Ok(()),
            };
            index.catch_up(&*store, page, max_bytes).await.and(followed)
        }
    }))
}

/// Keeps a follower of the global log up with it as it grows — the battle
/// index (so that a listing usually finds little left to catch up) and the
/// transparency log's tree: `catch_up` reads what is new, woken by the
/// store's changes; a failed read is retried after a second (a listing
/// meanwhile catches up itself, or reports the store's error); ends at
/// shutdown.
pub(crate) async fn follow_log<F, Fut>(
    what: &'static str,
    store: Arc<dyn EventStore>,
    mut closing: watch::Receiver<bool>,
    mut catch_up: F,
) where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(), JournalError>>,
{
    let mut changes = store.changes();
    loop {
        if *closing.borrow() {
            return;
        }
        // Marked seen before reading: a change after the read wakes the wait.
        changes.borrow_and_update();
        let retry = match catch_up().await {
            Ok(()) => None,
            Err(e) => {
                warn!(error = %e, "{what}: reading the log failed; retrying");
                Some(tokio::time::sleep(std::time::Duration::from_secs(1)))
            }
        };
        match retry {
            Some(pause) => tokio::select! {
                () = pause => {}
                _ = closing.changed() => return,
            },
            None => tokio::select! {
                changed = changes.changed() => if changed.is_err() { return },
                _ = closing.changed() => return,
            },
        }
    }
}

/// Says at start how many forks an operator accepted on this journal
/// ([`crate::kept::accept_loss`]), the last one named: the record stays, and
/// so does the line.
fn say_forks(data_dir: &std::path::Path) {
    match crate::kept::forks(data_dir) {
        Ok(forks) => {
            if let Some(last) = forks.last() {
                warn!(
                    forks = forks.len(),
                    file = %data_dir.join(crate::kept::FORKS_FILE).display(),
                    "this journal's log was forked by its operator {} time(s); the last abandoned the checkpoint of \
                     tree size {} (root {}) for a store of {} records, at {} (Unix seconds), by {}: {}",
                    forks.len(),
                    last.abandoned_size,
                    last.abandoned_root,
                    last.store_size,
                    last.recorded_at_unix_secs,
                    last.by,
                    last.reason
                );
            }
        }
        Err(e) => warn!(error = %e, "the record of accepted forks does not read"),
    }
}

fn validate_limits(limits: &Limits) -> Result<(), JournalError> {
    limits.validate().map_err(|message| JournalError::InvalidArgument { field: "limits".into(), message })
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A random number for back-off jitter (std's hasher keys are random per
/// process and per `RandomState`).
fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    std::collections::hash_map::RandomState::new().build_hasher().finish()
}

fn now_micros() -> i64 {
    let micros = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros());
    i64::try_from(micros).unwrap_or(i64::MAX)
}

#[cfg(test)]
pub(crate) mod tests {
    use battlelog_proto::v1::battle_event::Event;
    use std::sync::atomic::Ordering;

    use battlelog_proto::v1::{BattleClosed, SeedCommitted};

    use super::*;
    use crate::guard::Rule;

    pub(crate) use crate::store::conformance::{
        battle_event, commitment, keyed, opened, resolved, revealed, rolled, seed,
    };

    async fn open(dir: &std::path::Path) -> Journal {
        Journal::open(JournalOptions::new(dir)).await.unwrap()
    }

    fn rule_of(result: Result<AppendOutcome, JournalError>) -> (Rule, String) {
        match result {
            Err(JournalError::EventRefused { rule, field, .. }) => (rule, field),
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn append_read_verify_and_guard() {
        let dir = tempfile::tempdir().unwrap();
        let journal = open(dir.path()).await;
        let first =
            journal.append("s".into(), ExpectedVersion::NoStream, vec![opened(""), rolled(0, 0)]).await.unwrap();
        assert_eq!(first.events.iter().map(|e| e.version).collect::<Vec<_>>(), [0, 1]);
        let err = journal.append("s".into(), ExpectedVersion::Exact(0), vec![rolled(0, 1)]).await;
        assert!(matches!(err, Err(JournalError::WrongExpectedVersion { actual: Some(1), .. })), "{err:?}");
        let err = journal.append("s".into(), ExpectedVersion::NoStream, vec![rolled(0, 1)]).await;
        assert!(matches!(err, Err(JournalError::WrongExpectedVersion { actual: Some(1), .. })), "{err:?}");
        journal.append("s".into(), ExpectedVersion::Exact(1), vec![rolled(0, 1)]).await.unwrap();

        let events = journal.read_stream("s", 0, 0).await.unwrap();
        assert_eq!(events.len(), 3);
        assert_eq!(events[2].event.payload, rolled(0, 1).payload);
        assert_eq!(events[1].hash, first.events[1].hash);
        let head = journal.stream_head("s").await.unwrap();
        assert_eq!(head, StreamHead { version: Some(2), hash: events[2].hash });
        assert_eq!(journal.verify_chain("s").await.unwrap(), ChainCheck::Ok { count: 3, head_hash: events[2].hash });
        assert_eq!(journal.read_all(1, 10).await.unwrap().len(), 2);
        journal.shutdown().await.unwrap();
    }

    /// A batch's appends are answered each as alone: written in one group
    /// commit when their streams differ, a second append to a stream of the
    /// batch after the first, a repeat as a repeat, a bad one refused alone.
    #[tokio::test]
    async fn a_batch_is_answered_append_by_append_in_one_group() {
        let dir = tempfile::tempdir().unwrap();
        let journal = open(dir.path()).await;
        journal.append("known".into(), ExpectedVersion::Any, vec![keyed(opened(""), "k")]).await.unwrap();
        let stats = journal.commit_stats().unwrap();
        let groups_before = stats.groups.load(Ordering::Relaxed);
        let outcomes = journal
            .append_batch(vec![
                ("b".into(), ExpectedVersion::NoStream, vec![opened("")]),
                ("a".into(), ExpectedVersion::NoStream, vec![opened(""), rolled(0, 0)]),
                ("a".into(), ExpectedVersion::Exact(1), vec![rolled(0, 1)]),
                ("known".into(), ExpectedVersion::NoStream, vec![keyed(opened(""), "k")]),
                ("bad.id".into(), ExpectedVersion::Any, vec![opened("")]),
                ("c".into(), ExpectedVersion::Exact(3), vec![opened("")]),
            ])
            .await;
        assert_eq!(outcomes.len(), 6);
        let versions = |i: usize| match &outcomes[i] {
            Ok(outcome) => outcome.events.iter().map(|e| e.version).collect::<Vec<_>>(),
            Err(error) => panic!("append {i}: {error:?}"),
        };
        assert_eq!(versions(0), [0]);
        assert_eq!(versions(1), [0, 1]);
        assert_eq!(versions(2), [2], "the second append to a stream follows the first");
        assert!(outcomes[3].as_ref().unwrap().deduplicated, "a repeat is a repeat");
        assert!(matches!(&outcomes[4], Err(JournalError::InvalidArgument { field, .. }) if field == "stream_id"));
        assert!(matches!(&outcomes[5], Err(JournalError::WrongExpectedVersion { actual: None, .. })));
        // "b" and "a" (its first) went in one group; "a"'s second in another.
        assert_eq!(stats.groups.load(Ordering::Relaxed) - groups_before, 2);
        assert_eq!(journal.read_stream("a", 0, 0).await.unwrap().len(), 3);
        assert_eq!(
            journal.verify_chain("a").await.unwrap(),
            ChainCheck::Ok { count: 3, head_hash: journal.stream_head("a").await.unwrap().hash }
        );
        journal.shutdown().await.unwrap();
    }

    /// Two batches naming the same streams in opposite orders, many times
    /// at once: each takes its streams' turns in one order, so neither
    /// waits for the other for ever, and every append is written once.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn batches_sharing_streams_do_not_wait_on_each_other() {
        let dir = tempfile::tempdir().unwrap();
        let journal = open(dir.path()).await;
        for stream in ["x", "y"] {
            journal.append(stream.into(), ExpectedVersion::NoStream, vec![opened("")]).await.unwrap();
        }
        let mut tasks = Vec::new();
        for task in 0..8u64 {
            let journal = journal.clone();
            tasks.push(tokio::spawn(async move {
                for round in 0..20u64 {
                    let nonce = task * 100 + round;
                    let order = if task % 2 == 0 { ["x", "y"] } else { ["y", "x"] };
                    let batch = order
                        .iter()
                        .map(|s| (s.to_string(), ExpectedVersion::Any, vec![resolved(&format!("{s} {nonce}"))]))
                        .collect();
                    for outcome in journal.append_batch(batch).await {
                        outcome.expect("appended");
                    }
                }
            }));
        }
        let all = async {
            for task in tasks {
                task.await.unwrap();
            }
        };
        // A deadlock never ends; a minute is far more than 320 appends take.
        tokio::time::timeout(std::time::Duration::from_secs(60), all).await.expect("no batch waits for ever");
        for stream in ["x", "y"] {
            assert_eq!(journal.read_stream(stream, 0, 0).await.unwrap().len(), 1 + 8 * 20);
        }
        journal.shutdown().await.unwrap();
    }

    #[tokio::test]
    async fn idempotency_survives_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let journal = open(dir.path()).await;
        let original =
            journal.append("s".into(), ExpectedVersion::Any, vec![keyed(opened(""), "req-1")]).await.unwrap();
        journal.shutdown().await.unwrap();
        drop(journal);

        let journal = open(dir.path()).await;
        let repeat =
            journal.append("s".into(), ExpectedVersion::NoStream, vec![keyed(opened(""), "req-1")]).await.unwrap();
        assert!(repeat.deduplicated);
        assert_eq!(repeat.events, original.events);
        let reused = journal.append("s".into(), ExpectedVersion::Any, vec![keyed(opened("other"), "req-1")]).await;
        assert!(matches!(reused, Err(JournalError::IdempotencyKeyReused { version: 0, .. })), "{reused:?}");
        let partial =
            journal.append("s".into(), ExpectedVersion::Any, vec![keyed(opened(""), "req-1"), rolled(0, 0)]).await;
        assert!(matches!(partial, Err(JournalError::IdempotencyPartialRepeat { .. })), "{partial:?}");
        assert_eq!(journal.read_stream("s", 0, 0).await.unwrap().len(), 1);
        journal.shutdown().await.unwrap();
    }

    #[tokio::test]
    async fn subscription_catches_up_then_goes_live() {
        let dir = tempfile::tempdir().unwrap();
        let journal = open(dir.path()).await;
        journal.append("s".into(), ExpectedVersion::Any, vec![opened("")]).await.unwrap();
        for nonce in 0..2 {
            journal.append("s".into(), ExpectedVersion::Any, vec![rolled(0, nonce)]).await.unwrap();
        }
        let mut sub = journal.subscribe_stream("s", 1).unwrap();
        for nonce in 2..5 {
            journal.append("s".into(), ExpectedVersion::Any, vec![rolled(0, nonce)]).await.unwrap();
        }
        for expected in 1..6u64 {
            let got = sub.recv().await.unwrap().unwrap();
            assert_eq!(got.event.version, expected);
        }
        journal.shutdown().await.unwrap();
        assert!(sub.recv().await.is_none(), "subscriptions end at shutdown");
        assert!(matches!(
            journal.append("s".into(), ExpectedVersion::Any, vec![rolled(0, 5)]).await,
            Err(JournalError::ShuttingDown)
        ));
    }

    /// Junk, a far-off nonce, a forged reveal, a second opening, or a bad
    /// event late in a request: refused, nothing written, and the battle
    /// still takes its next valid event.
    #[tokio::test]
    async fn refused_events_write_nothing_and_the_battle_goes_on() {
        let dir = tempfile::tempdir().unwrap();
        let journal = open(dir.path()).await;
        journal.append("b".into(), ExpectedVersion::NoStream, vec![opened("forum-a"), rolled(0, 0)]).await.unwrap();
        let head = journal.stream_head("b").await.unwrap();
        let logged = journal.read_all(0, 0).await.unwrap().len();

        let junk = NewEvent { event_type: "DiceRolled".into(), payload: b"junk".to_vec(), idempotency_key: None };
        let cases: Vec<(Vec<NewEvent>, Rule, &str)> = vec![
            (vec![junk], Rule::EventUndecodable, "events[0].payload"),
            (vec![rolled(0, 1_000_000)], Rule::NonceOutOfOrder, "events[0].payload.dice_rolled.nonce"),
            (vec![revealed(0, seed(9))], Rule::SeedMismatch, "events[0].payload.seed_revealed.server_seed"),
            (vec![opened("forum-a")], Rule::BattleAlreadyOpened, "events[0].event_type"),
            // The first event alone would do; the request is all or nothing.
            (vec![rolled(0, 1), rolled(0, 3)], Rule::NonceOutOfOrder, "events[1].payload.dice_rolled.nonce"),
            (
                vec![
                    rolled(0, 1),
                    battle_event(Event::SeedCommitted(SeedCommitted {
                        epoch: 1,
                        commitment: commitment(1),
                        ..Default::default()
                    })),
                ],
                Rule::EpochNotRevealed,
                "events[1].payload.seed_committed.epoch",
            ),
        ];
        for (events, rule, field) in cases {
            assert_eq!(rule_of(journal.append("b".into(), ExpectedVersion::Any, events).await), (rule, field.into()));
            assert_eq!(journal.stream_head("b").await.unwrap(), head, "{rule:?}: nothing written");
            assert_eq!(journal.read_all(0, 0).await.unwrap().len(), logged);
        }
        let err = journal.append("fresh".into(), ExpectedVersion::Any, vec![rolled(0, 0)]).await;
        assert_eq!(rule_of(err), (Rule::BattleNotOpened, "events[0].event_type".into()));
        assert_eq!(journal.stream_head("fresh").await.unwrap().version, None);

        let next = journal.append("b".into(), ExpectedVersion::Any, vec![rolled(0, 1)]).await.unwrap();
        assert_eq!(next.events[0].version, 2, "the battle goes on");
        journal
            .append(
                "b".into(),
                ExpectedVersion::Any,
                vec![
                    revealed(0, seed(0)),
                    battle_event(Event::SeedCommitted(SeedCommitted {
                        epoch: 1,
                        commitment: commitment(1),
                        ..Default::default()
                    })),
                ],
            )
            .await
            .unwrap();
        journal.append("b".into(), ExpectedVersion::Any, vec![rolled(1, 2)]).await.unwrap();
        journal.shutdown().await.unwrap();
    }

    /// The same journal on the in-memory store: appends, reads, repeats,
    /// refusals and subscriptions behave as on sled.
    #[tokio::test]
    async fn a_journal_runs_on_the_memory_store() {
        let store = Arc::new(crate::store::MemoryStore::new());
        let journal = Journal::open_on(store, JournalOptions::new("unused")).await.unwrap();
        let mut sub = journal.subscribe_all(0);
        let first = journal
            .append("m".into(), ExpectedVersion::NoStream, vec![keyed(opened(""), "k"), rolled(0, 0)])
            .await
            .unwrap();
        let repeat = journal.append("m".into(), ExpectedVersion::NoStream, vec![keyed(opened(""), "k")]).await.unwrap();
        assert!(repeat.deduplicated);
        assert_eq!(repeat.events[..], first.events[..1]);
        assert_eq!(
            rule_of(journal.append("m".into(), ExpectedVersion::Any, vec![rolled(0, 0)]).await).0,
            Rule::NonceOutOfOrder
        );
        journal.append("m".into(), ExpectedVersion::Exact(1), vec![rolled(0, 1)]).await.unwrap();
        assert_eq!(journal.stream_head("m").await.unwrap().version, Some(2));
        assert!(matches!(journal.verify_chain("m").await.unwrap(), ChainCheck::Ok { count: 3, .. }));
        for position in 0..3 {
            assert_eq!(sub.recv().await.unwrap().unwrap().global_position, position);
        }
        assert_eq!(
            journal.store().outbox_cursor().await.unwrap(),
            Some(0),
            "no publisher: everything waits in the outbox"
        );
        journal.shutdown().await.unwrap();
    }

    /// On a multi-threaded runtime a lone appender commits on its own
    /// thread, and appenders racing each other queue for the committer
    /// thread: either way one writer at a time, every position taken once,
    /// every stream in version order, every chain whole.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn lone_and_queued_appends_share_one_order() {
        let dir = tempfile::tempdir().unwrap();
        let journal = open(dir.path()).await;
        journal.append("solo".into(), ExpectedVersion::NoStream, vec![opened("")]).await.unwrap();
        let alone = journal.commit_stats().expect("sled").alone.load(Ordering::Relaxed);
        assert_eq!(alone, 1, "nothing else was queued or writing");

        const WRITERS: u64 = 8;
        const APPENDS: u64 = 40;
        let tasks: Vec<_> = (0..WRITERS)
            .map(|w| {
                let journal = journal.clone();
                tokio::spawn(async move {
                    let stream = format!("w{w}");
                    journal.append(stream.clone(), ExpectedVersion::NoStream, vec![opened("")]).await.unwrap();
                    for nonce in 0..APPENDS {
                        let expected = ExpectedVersion::Exact(nonce);
                        journal.append(stream.clone(), expected, vec![rolled(0, nonce)]).await.unwrap();
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        let total = 1 + WRITERS * (APPENDS + 1);
        let log = journal.read_all(0, 10_000).await.unwrap();
        assert_eq!(log.iter().map(|e| e.global_position).collect::<Vec<_>>(), (0..total).collect::<Vec<_>>());
        for w in 0..WRITERS {
            let stream = format!("w{w}");
            let versions: Vec<_> =
                log.iter().filter(|e| e.event.stream_id == stream).map(|e| e.event.version).collect();
            assert_eq!(versions, (0..=APPENDS).collect::<Vec<_>>(), "{stream} in version order");
            assert!(
                matches!(journal.verify_chain(&stream).await.unwrap(), ChainCheck::Ok { count, .. } if count == APPENDS + 1)
            );
        }
        let stats = journal.commit_stats().expect("sled");
        assert_eq!(stats.appends.load(Ordering::Relaxed), total);
        journal.shutdown().await.unwrap();
    }

    /// The guard's state is stored with the head: after a restart it still
    /// knows the next nonce, the epoch and the close.
    #[tokio::test]
    async fn the_guard_state_survives_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let journal = open(dir.path()).await;
        journal.append("b".into(), ExpectedVersion::Any, vec![opened(""), rolled(0, 0), rolled(0, 1)]).await.unwrap();
        journal.shutdown().await.unwrap();
        drop(journal);

        let journal = open(dir.path()).await;
        let err = journal.append("b".into(), ExpectedVersion::Any, vec![rolled(0, 1)]).await;
        assert_eq!(rule_of(err).0, Rule::NonceOutOfOrder, "nonce 1 is spent");
        let closed = battle_event(Event::BattleClosed(BattleClosed {
            by: "judge".into(),
            reason: "done".into(),
            credential: None,
        }));
        journal.append("b".into(), ExpectedVersion::Any, vec![rolled(0, 2), closed]).await.unwrap();
        journal.shutdown().await.unwrap();
        drop(journal);

        let journal = open(dir.path()).await;
        assert_eq!(
            rule_of(journal.append("b".into(), ExpectedVersion::Any, vec![rolled(0, 3)]).await).0,
            Rule::BattleClosed
        );
        journal.append("b".into(), ExpectedVersion::Any, vec![revealed(0, seed(0))]).await.unwrap();
        journal.shutdown().await.unwrap();
    }
}
