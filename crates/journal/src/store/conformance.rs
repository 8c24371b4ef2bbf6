//! The conformance suite of [`EventStore`]: written once, run against every
//! provider (as restate's `loglet_tests` run against each loglet provider),
//! from this crate's tests and, with the `test-util` feature, from outside
//! it ([`crate::conformance_tests!`] on a store of your own).
//!
//! Each check takes an empty store. Most go through a [`Journal`] on the
//! store, because the policy above it (the planner) is what callers meet;
//! the checks of the seam itself (a stale plan is a conflict that writes
//! nothing, positions follow commit order) call the store directly.
//!
//! The expected values are written from the contract (versions from 0,
//! positions increasing in commit order, h(v) recomputed from the read
//! bytes), never copied from a provider's output. Positions are compared by
//! order only: a store assigns its own (JetStream's are not dense).

use std::future::Future;
use std::sync::Arc;

use battlelog_proto::v1::battle_event::Event;
use battlelog_proto::v1::{ActionResolved, BattleOpened, DiceRolled, SeedRevealed};
use prost::Message;
use sha2::{Digest, Sha256};

use super::{AppendOutcome, Conflict, EventStore, Page, StoredEvent, StreamHead};
use crate::chain::ChainCheck;
use crate::error::JournalError;
use crate::guard::Rule;
use crate::journal::{Journal, JournalOptions};
use crate::limits::{ExpectedVersion, Limits, NewEvent, recorded_event_wire_bytes, validate_append, wire_page};
use crate::planner::{self, Plan};
use crate::record;

/// The epoch's server seed in these checks: 32 bytes of `epoch + 1`.
pub fn seed(epoch: u32) -> String {
    hex::encode([epoch as u8 + 1; 32])
}

/// docs/protocol.md §1: lowercase_hex(SHA-256(server_seed)).
pub fn commitment(epoch: u32) -> String {
    hex::encode(Sha256::digest([epoch as u8 + 1; 32]))
}

/// A battle event as the journal takes it.
pub fn battle_event(event: Event) -> NewEvent {
    let new = battlelog_proto::battle::new_event(event, String::new());
    NewEvent { event_type: new.event_type, payload: new.payload, idempotency_key: None }
}

/// `BattleOpened` of `tenant`, committing to epoch 0's [`seed`].
pub fn opened(tenant: &str) -> NewEvent {
    battle_event(Event::BattleOpened(BattleOpened {
        ruleset: "pokemon-d6@1".into(),
        commitment: commitment(0),
        tenant: tenant.into(),
        ..Default::default()
    }))
}

/// A `DiceRolled` of `epoch` with `nonce`.
pub fn rolled(epoch: u32, nonce: u64) -> NewEvent {
    battle_event(Event::DiceRolled(DiceRolled { epoch, nonce, expression: "1d6".into(), ..Default::default() }))
}

/// A `SeedRevealed` of `epoch`.
pub fn revealed(epoch: u32, server_seed: String) -> NewEvent {
    battle_event(Event::SeedRevealed(SeedRevealed { epoch, server_seed, credential: None }))
}

/// An `ActionResolved`: the guard lets it come in any order, so concurrent
/// appenders do not refuse each other's.
pub fn resolved(summary: &str) -> NewEvent {
    battle_event(Event::ActionResolved(ActionResolved { summary_en: summary.into(), ..Default::default() }))
}

/// `event` with an idempotency key.
pub fn keyed(event: NewEvent, key: &str) -> NewEvent {
    NewEvent { idempotency_key: Some(key.into()), ..event }
}

/// A journal with default limits on `store`.
pub async fn journal_on(store: Arc<dyn EventStore>) -> Journal {
    Journal::open_on(store, JournalOptions::new("conformance")).await.expect("open a journal on the store")
}

fn versions(outcome: &Result<AppendOutcome, JournalError>) -> Vec<u64> {
    match outcome {
        Ok(a) if !a.deduplicated => a.events.iter().map(|e| e.version).collect(),
        other => panic!("expected an append, got {other:?}"),
    }
}

async fn head_version(journal: &Journal, stream: &str) -> Option<u64> {
    journal.stream_head(stream).await.expect("head").version
}

async fn read(store: &dyn EventStore, stream: &str, from: u64) -> Vec<StoredEvent> {
    store.read_stream(stream, from, Page::count(10_000)).await.expect("read stream")
}

/// Every event of the global log, paging from position 0.
async fn read_log(store: &dyn EventStore) -> Vec<StoredEvent> {
    let mut log: Vec<StoredEvent> = Vec::new();
    loop {
        let from = log.last().map_or(0, |e| e.global_position + 1);
        let page = store.read_all(from, Page::count(3)).await.expect("read all");
        if page.is_empty() {
            return log;
        }
        log.extend(page);
    }
}

/// Bytes of a read reply holding `events`, as the journal's service encodes
/// it (proto/battlelog/v1/journal.proto), whatever the stores count.
fn sent_bytes(events: &[StoredEvent]) -> usize {
    let events = events
        .iter()
        .map(|e| battlelog_proto::v1::RecordedEvent {
            global_position: e.global_position,
            hash: e.hash.to_vec(),
            record: e.record.clone(),
            event: Some(e.event.clone()),
        })
        .collect();
    battlelog_proto::v1::ReadStreamResponse { events, head_version: None }.encoded_len()
}

/// `no_stream`, `exact` and `any`: each holds or is a conflict naming the
/// actual version, and a conflict writes nothing.
pub async fn expected_versions(store: Arc<dyn EventStore>) {
    let j = journal_on(store).await;
    let s = || "s".to_owned();
    assert_eq!(versions(&j.append(s(), ExpectedVersion::NoStream, vec![opened("")]).await), [0]);
    let conflict = j.append(s(), ExpectedVersion::NoStream, vec![rolled(0, 0)]).await;
    assert!(
        matches!(
            &conflict,
            Err(JournalError::WrongExpectedVersion { actual: Some(0), expected: ExpectedVersion::NoStream, .. })
        ),
        "{conflict:?}"
    );
    assert_eq!(versions(&j.append(s(), ExpectedVersion::Exact(0), vec![rolled(0, 0)]).await), [1]);
    let stale = j.append(s(), ExpectedVersion::Exact(0), vec![rolled(0, 1)]).await;
    assert!(matches!(&stale, Err(JournalError::WrongExpectedVersion { actual: Some(1), .. })), "{stale:?}");
    let empty = j.append("t".into(), ExpectedVersion::Exact(0), vec![opened("")]).await;
    assert!(matches!(&empty, Err(JournalError::WrongExpectedVersion { actual: None, .. })), "{empty:?}");
    assert_eq!(head_version(&j, "t").await, None, "a conflict writes nothing");
    assert_eq!(versions(&j.append(s(), ExpectedVersion::Any, vec![rolled(0, 1), rolled(0, 2)]).await), [2, 3]);
    assert_eq!(head_version(&j, "s").await, Some(3));
    j.shutdown().await.expect("shutdown");
}

/// A repeat of known keys gets the original result and writes nothing, even
/// with a stale expected version; a known key with another body, or known
/// and new keys mixed, is refused; keys are per stream; two identical keyed
/// appends racing each other append once.
pub async fn idempotency_keys(store: Arc<dyn EventStore>) {
    let j = journal_on(store).await;
    let request = || vec![keyed(opened("t"), "req-1/0"), keyed(rolled(0, 0), "req-1/1")];
    let original = j.append("s".into(), ExpectedVersion::NoStream, request()).await.expect("first append");
    assert!(!original.deduplicated);
    let repeat = j.append("s".into(), ExpectedVersion::NoStream, request()).await.expect("repeat");
    assert!(repeat.deduplicated, "a repeat appends nothing: {repeat:?}");
    assert_eq!(repeat.events, original.events, "versions, positions, ids, hashes and times as recorded");
    assert_eq!(head_version(&j, "s").await, Some(1));

    let reused = j.append("s".into(), ExpectedVersion::Any, vec![keyed(rolled(0, 1), "req-1/1")]).await;
    assert!(
        matches!(&reused, Err(JournalError::IdempotencyKeyReused { key, version: 1, .. }) if key == "req-1/1"),
        "{reused:?}"
    );
    let mixed = j.append("s".into(), ExpectedVersion::Any, vec![rolled(0, 1), keyed(opened("t"), "req-1/0")]).await;
    assert!(
        matches!(&mixed, Err(JournalError::IdempotencyPartialRepeat { repeated_index: 1, new_index: 0, .. })),
        "{mixed:?}"
    );
    assert_eq!(head_version(&j, "s").await, Some(1), "refusals write nothing");

    // Keys are per stream: the same key elsewhere is new.
    assert_eq!(versions(&j.append("u".into(), ExpectedVersion::Any, vec![keyed(opened(""), "req-1/0")]).await), [0]);

    // Racing: both are answered with the one append.
    let first = j.append("v".into(), ExpectedVersion::Any, vec![keyed(opened(""), "k")]);
    let second = j.append("v".into(), ExpectedVersion::Any, vec![keyed(opened(""), "k")]);
    let (a, b) = tokio::join!(first, second);
    let (a, b) = (a.expect("one of the racers"), b.expect("the other racer"));
    assert_eq!(a.events, b.events);
    assert_eq!(u8::from(a.deduplicated) + u8::from(b.deduplicated), 1, "exactly one appended");
    assert_eq!(j.read_stream("v", 0, 10).await.expect("read").len(), 1);
    j.shutdown().await.expect("shutdown");
}

/// The seam itself: a plan whose stream moved after it was made is a
/// conflict naming the head found, and writes nothing; in one call, each
/// append stands or falls alone; positions increase in commit order.
pub async fn stale_plans_conflict(store: Arc<dyn EventStore>) {
    let j = journal_on(store.clone()).await;
    j.append("p".into(), ExpectedVersion::NoStream, vec![opened("")]).await.expect("open");
    let plan = |events| {
        let append = validate_append(&Limits::default(), "p".into(), ExpectedVersion::Any, events).expect("valid");
        let store = store.clone();
        async move {
            match planner::plan(&*store, &append, 1_700_000_000_000_000).await.expect("plan") {
                Plan::Write { planned, .. } => planned,
                Plan::Repeat(outcome) => panic!("nothing repeats here: {outcome:?}"),
            }
        }
    };
    // Two plans against the same head (version 0), as two journal
    // processes would make them.
    let a = plan(vec![rolled(0, 0), resolved("a")]).await;
    let b = plan(vec![resolved("b")]).await;
    assert_eq!((a.expected, b.expected), (Some(0), Some(0)));
    let outcomes = store.append(vec![a.clone(), b.clone()]).await.expect("append");
    assert_eq!(outcomes.len(), 2);
    let positions = outcomes[0].clone().expect("the first plan holds");
    assert_eq!(positions.len(), 2);
    assert!(positions[0] < positions[1], "positions follow commit order: {positions:?}");
    assert_eq!(outcomes[1], Err(Conflict { actual: Some(2) }), "the second found the first's head");
    // Again, alone: still stale.
    assert_eq!(store.append(vec![b]).await.expect("append"), [Err(Conflict { actual: Some(2) })]);
    assert_eq!(store.append(vec![a]).await.expect("append"), [Err(Conflict { actual: Some(2) })], "no replay");
    let events = read(&*store, "p", 0).await;
    assert_eq!(events.iter().map(|e| e.event.version).collect::<Vec<_>>(), [0, 1, 2], "nothing of a conflict");
    assert_eq!(events[2].event.payload, resolved("a").payload);
    // A plan for a stream that must not exist, when it does.
    let append = validate_append(&Limits::default(), "q".into(), ExpectedVersion::NoStream, vec![opened("")]).unwrap();
    let Plan::Write { planned: q1, .. } = planner::plan(&*store, &append, 0).await.expect("plan") else { panic!() };
    let Plan::Write { planned: q2, .. } = planner::plan(&*store, &append, 1).await.expect("plan") else { panic!() };
    assert!(store.append(vec![q1]).await.expect("append")[0].is_ok());
    assert_eq!(store.append(vec![q2]).await.expect("append"), [Err(Conflict { actual: Some(0) })]);
    let later = j.append("p".into(), ExpectedVersion::Any, vec![resolved("c")]).await.expect("append");
    assert!(later.events[0].global_position > positions[1], "a later commit, a later position");
    j.shutdown().await.expect("shutdown");
}

/// The battle guard holds through the store: a refused event writes
/// nothing, and the state it checks survives across appends.
pub async fn guard_state(store: Arc<dyn EventStore>) {
    let j = journal_on(store).await;
    let b = || "b".to_owned();
    j.append(b(), ExpectedVersion::NoStream, vec![opened(""), rolled(0, 0)]).await.expect("open and roll");
    let gap = j.append(b(), ExpectedVersion::Any, vec![rolled(0, 1), rolled(0, 3)]).await;
    assert!(
        matches!(&gap, Err(JournalError::EventRefused { rule: Rule::NonceOutOfOrder, field, .. }) if field == "events[1].payload.dice_rolled.nonce"),
        "{gap:?}"
    );
    let unopened = j.append("c".into(), ExpectedVersion::Any, vec![rolled(0, 0)]).await;
    assert!(matches!(&unopened, Err(JournalError::EventRefused { rule: Rule::BattleNotOpened, .. })), "{unopened:?}");
    assert_eq!(head_version(&j, "b").await, Some(1));
    assert_eq!(head_version(&j, "c").await, None);
    assert_eq!(versions(&j.append(b(), ExpectedVersion::Any, vec![rolled(0, 1), rolled(0, 2)]).await), [2, 3]);
    let spent = j.append(b(), ExpectedVersion::Any, vec![rolled(0, 2)]).await;
    assert!(matches!(&spent, Err(JournalError::EventRefused { rule: Rule::NonceOutOfOrder, .. })), "{spent:?}");
    assert_eq!(versions(&j.append(b(), ExpectedVersion::Any, vec![revealed(0, seed(0))]).await), [4]);
    let late = j.append(b(), ExpectedVersion::Any, vec![rolled(0, 4)]).await;
    assert!(matches!(&late, Err(JournalError::EventRefused { rule: Rule::EpochRevealed, .. })), "{late:?}");
    j.shutdown().await.expect("shutdown");
}

/// Reads from a version, bounded by count and bytes (always at least one
/// event), each record exactly the stored bytes, chained.
pub async fn reads_from_a_version(store: Arc<dyn EventStore>) {
    let j = journal_on(store.clone()).await;
    j.append("s".into(), ExpectedVersion::Any, vec![opened("")]).await.expect("open");
    for nonce in 0..5 {
        j.append("s".into(), ExpectedVersion::Any, vec![rolled(0, nonce)]).await.expect("roll");
    }
    let store = &*store;
    let all = read(store, "s", 0).await;
    assert_eq!(all.iter().map(|e| e.event.version).collect::<Vec<_>>(), [0, 1, 2, 3, 4, 5]);
    let mut previous = record::genesis_hash("s");
    for event in &all {
        assert_eq!(event.event.stream_id, "s");
        assert_eq!(record::encode(&event.event), event.record, "the stored bytes are the record");
        assert_eq!(event.hash, record::chain_hash(&previous, &event.record), "h(v) chains");
        previous = event.hash;
    }
    assert_eq!(all[3].event.payload, rolled(0, 2).payload);

    let page =
        |from, count, bytes| async move { store.read_stream("s", from, wire_page(count, bytes)).await.expect("read") };
    assert_eq!(page(2, 2, usize::MAX).await, all[2..4]);
    assert_eq!(page(1, 100, 1).await, all[1..2], "a byte bound still returns one event");
    // The bound is on the page as sent: each record travels twice in a
    // RecordedEvent. At the weight of two events, two; one byte under, one.
    let two = recorded_event_wire_bytes(all[1].record.len()) + recorded_event_wire_bytes(all[2].record.len());
    let two_by_bytes = page(1, 100, two).await;
    assert_eq!(two_by_bytes, all[1..3]);
    assert!(sent_bytes(&two_by_bytes) <= two, "the page as encoded stays within its bound");
    assert!(sent_bytes(&two_by_bytes) > all[1].record.len() + all[2].record.len(), "and weighs more than its records");
    assert_eq!(page(1, 100, two - 1).await, all[1..2]);
    assert!(page(6, 100, usize::MAX).await.is_empty());
    assert!(store.read_stream("none", 0, Page::count(100)).await.expect("read").is_empty());
    j.shutdown().await.expect("shutdown");
}

/// The global log holds every accepted event once, in commit order, across
/// streams; reads start anywhere (at the first event at or past a position)
/// and stop at the bounds.
pub async fn global_log_order(store: Arc<dyn EventStore>) {
    let j = journal_on(store.clone()).await;
    let mut expected = Vec::new();
    for (stream, events) in [
        ("x", vec![opened("")]),
        ("y", vec![opened(""), rolled(0, 0)]),
        ("x", vec![rolled(0, 0)]),
        ("z", vec![rolled(0, 0)]), // refused: takes no position
        ("y", vec![rolled(0, 1)]),
    ] {
        let count = events.len() as u64;
        if let Ok(a) = j.append(stream.into(), ExpectedVersion::Any, events).await {
            let first = a.events[0].version;
            expected.extend((first..first + count).map(|v| (stream.to_owned(), v)));
        }
    }
    let store = &*store;
    let log = read_log(store).await;
    let got: Vec<_> = log.iter().map(|e| (e.event.stream_id.clone(), e.event.version)).collect();
    assert_eq!(got, expected);
    assert!(log.windows(2).all(|w| w[0].global_position < w[1].global_position), "increasing positions");
    let all =
        |from, count, bytes| async move { store.read_all(from, wire_page(count, bytes)).await.expect("read all") };
    assert_eq!(all(log[2].global_position, 2, usize::MAX).await, log[2..4]);
    assert_eq!(all(log[1].global_position, 100, 1).await, log[1..2], "a byte bound still returns one event");
    assert_eq!(all(log[1].global_position + 1, 1, usize::MAX).await, log[2..3], "the first event at or past it");
    assert!(all(log[4].global_position + 1, 100, usize::MAX).await.is_empty());
    let stream_y = read(store, "y", 0).await;
    assert_eq!(stream_y, [log[1].clone(), log[2].clone(), log[4].clone()], "the same events either way");
    j.shutdown().await.expect("shutdown");
}

/// A stream's head: none and h(−1) when empty, else its last version and
/// hash; the chain verifies up to it.
pub async fn heads_and_chains(store: Arc<dyn EventStore>) {
    let j = journal_on(store.clone()).await;
    let empty = StreamHead { version: None, hash: record::genesis_hash("h") };
    assert_eq!(j.stream_head("h").await.expect("head"), empty);
    assert_eq!(j.verify_chain("h").await.expect("verify"), ChainCheck::Ok { count: 0, head_hash: empty.hash });
    j.append("h".into(), ExpectedVersion::Any, vec![opened(""), rolled(0, 0)]).await.expect("append");
    j.append("other".into(), ExpectedVersion::Any, vec![opened("")]).await.expect("append");
    j.append("h".into(), ExpectedVersion::Any, vec![rolled(0, 1)]).await.expect("append");
    let events = read(&*store, "h", 0).await;
    assert_eq!(j.stream_head("h").await.expect("head"), StreamHead { version: Some(2), hash: events[2].hash });
    let head = store.head("h").await.expect("head").expect("a head");
    assert_eq!((head.version, head.hash), (2, events[2].hash));
    assert_eq!(head.state.map(|s| s.next_nonce), Some(2), "the battle state after version 2");
    assert_eq!(j.verify_chain("h").await.expect("verify"), ChainCheck::Ok { count: 3, head_hash: events[2].hash });
    j.shutdown().await.expect("shutdown");
}

/// Many appenders on one battle at once, through two journals on the same
/// store (as two journal processes on one log), never fork it: with `any`,
/// every append lands once, versions consecutive; with `exact`, of those
/// expecting the same version exactly one wins.
pub async fn concurrent_appends_never_fork(store: Arc<dyn EventStore>) {
    const TASKS: usize = 8;
    const EACH: usize = 5;
    let j = journal_on(store.clone()).await;
    let other = journal_on(store.clone()).await;
    j.append("f".into(), ExpectedVersion::NoStream, vec![opened("")]).await.expect("open");
    let mut tasks = tokio::task::JoinSet::new();
    for t in 0..TASKS {
        let j = if t % 2 == 0 { j.clone() } else { other.clone() };
        tasks.spawn(async move {
            for i in 0..EACH {
                j.append("f".into(), ExpectedVersion::Any, vec![resolved(&format!("{t}/{i}"))]).await.expect("append");
            }
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.expect("appender");
    }
    let events = read(&*store, "f", 0).await;
    assert_eq!(events.len(), 1 + TASKS * EACH);
    assert!(events.iter().enumerate().all(|(i, e)| e.event.version == i as u64), "consecutive versions");
    let mut summaries: Vec<Vec<u8>> = events[1..].iter().map(|e| e.event.payload.clone()).collect();
    summaries.sort();
    summaries.dedup();
    assert_eq!(summaries.len(), TASKS * EACH, "each append exactly once");
    assert!(
        matches!(j.verify_chain("f").await.expect("verify"), ChainCheck::Ok { count, .. } if count == events.len() as u64)
    );

    let head = events.len() as u64 - 1;
    let mut racers = tokio::task::JoinSet::new();
    for t in 0..TASKS {
        let j = if t % 2 == 0 { j.clone() } else { other.clone() };
        racers.spawn(async move {
            j.append("f".into(), ExpectedVersion::Exact(head), vec![resolved(&format!("race {t}"))]).await
        });
    }
    let mut won = 0;
    while let Some(done) = racers.join_next().await {
        match done.expect("racer") {
            Ok(outcome) => {
                assert_eq!(versions(&Ok(outcome)), [head + 1]);
                won += 1;
            }
            Err(JournalError::WrongExpectedVersion { actual: Some(v), .. }) => assert_eq!(v, head + 1),
            Err(other) => panic!("a racer failed otherwise: {other}"),
        }
    }
    assert_eq!(won, 1, "exactly one racer per version");
    other.begin_shutdown();
    j.shutdown().await.expect("shutdown");
}

/// A subscription catches up, then goes live, without skipping or
/// repeating an event.
pub async fn subscriptions_catch_up_then_go_live(store: Arc<dyn EventStore>) {
    let j = journal_on(store).await;
    j.append("s".into(), ExpectedVersion::Any, vec![opened("")]).await.expect("open");
    for nonce in 0..2 {
        j.append("s".into(), ExpectedVersion::Any, vec![rolled(0, nonce)]).await.expect("roll");
    }
    let mut stream = j.subscribe_stream("s", 1).expect("subscribe");
    let mut all = j.subscribe_all(0);
    for nonce in 2..5 {
        j.append("s".into(), ExpectedVersion::Any, vec![rolled(0, nonce)]).await.expect("roll");
    }
    for expected in 1..6u64 {
        let got = stream.recv().await.expect("an event").expect("no error");
        assert_eq!(got.event.version, expected);
    }
    for expected in 0..6u64 {
        let got = all.recv().await.expect("an event").expect("no error");
        assert_eq!(got.event.version, expected);
    }
    j.shutdown().await.expect("shutdown");
}

/// What a store held is there after a reopen: events, heads, the guard's
/// state, idempotency keys. `open` opens the same store again (after the
/// previous one was closed and dropped).
pub async fn survives_reopen<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn EventStore>>,
{
    let (events, original) = {
        let j = journal_on(open().await).await;
        let original = j
            .append("d".into(), ExpectedVersion::NoStream, vec![keyed(opened("t"), "k0"), rolled(0, 0)])
            .await
            .expect("append");
        j.append("e".into(), ExpectedVersion::Any, vec![opened("")]).await.expect("append");
        j.append("d".into(), ExpectedVersion::Any, vec![rolled(0, 1)]).await.expect("append");
        let events = read_log(&**j.store()).await;
        j.shutdown().await.expect("shutdown");
        (events, original)
    };
    let j = journal_on(open().await).await;
    assert_eq!(read_log(&**j.store()).await, events);
    assert_eq!(head_version(&j, "d").await, Some(2));
    let repeat = j.append("d".into(), ExpectedVersion::NoStream, vec![keyed(opened("t"), "k0")]).await.expect("repeat");
    assert_eq!(repeat, AppendOutcome { events: original.events[..1].to_vec(), deduplicated: true });
    let spent = j.append("d".into(), ExpectedVersion::Any, vec![rolled(0, 1)]).await;
    assert!(matches!(&spent, Err(JournalError::EventRefused { rule: Rule::NonceOutOfOrder, .. })), "{spent:?}");
    let next = j.append("d".into(), ExpectedVersion::Any, vec![rolled(0, 2)]).await.expect("append");
    assert_eq!(versions(&Ok(next.clone())), [3]);
    assert!(next.events[0].global_position > events.last().expect("events").global_position, "positions go on");
    assert!(matches!(j.verify_chain("d").await.expect("verify"), ChainCheck::Ok { count: 4, .. }));
    j.shutdown().await.expect("shutdown");
}

/// One `#[tokio::test]` per check of the suite, each on a fresh store:
/// `$make` is a future giving `(Arc<dyn EventStore>, anything to keep
/// alive meanwhile, e.g. a temp dir)`. Needs `tokio` (with `macros` and
/// `rt-multi-thread`) where it is used.
#[macro_export]
macro_rules! conformance_tests {
    ($make:expr) => {
        $crate::conformance_tests!(@each $make;
            expected_versions, idempotency_keys, stale_plans_conflict, guard_state, reads_from_a_version,
            global_log_order, heads_and_chains, concurrent_appends_never_fork,
            subscriptions_catch_up_then_go_live);
    };
    (@each $make:expr; $($check:ident),*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $check() {
                let (store, _keep) = $make.await;
                $crate::store::conformance::$check(store).await;
            }
        )*
    };
}
