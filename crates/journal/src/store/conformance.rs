//! The conformance suite of [`EventStore`]: written once, run against every
//! provider (as restate's `loglet_tests` run against each loglet provider).
//! Each check takes an empty store; [`conformance_tests!`] turns them into
//! one `#[test]` each for a provider, and a provider that keeps data across
//! a reopen also runs [`survives_reopen`].
//!
//! The expected values are written from the contract (versions from 0,
//! positions from 0 in commit order, h(v) recomputed from the read bytes),
//! never copied from a provider's output.

use super::{Applied, ChainCheck, EventStore, GroupAppend, StreamHead};
use crate::error::JournalError;
use crate::guard::Rule;
use crate::journal::tests::{opened, rolled};
use crate::limits::{ExpectedVersion, Limits, NewEvent, ValidAppend, validate_append};
use crate::record;
use battlelog_runtime::limits::recorded_event_wire_bytes;
use prost::Message;

/// Bytes of a read reply holding `events`, as the journal's service encodes
/// it (proto/battlelog/v1/journal.proto), whatever the stores count.
fn sent_bytes(events: &[super::StoredEvent]) -> usize {
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

/// An append to give [`group`].
pub(crate) fn append(stream: &str, expected: ExpectedVersion, events: Vec<NewEvent>) -> ValidAppend {
    validate_append(&Limits::default(), stream.into(), expected, events).expect("valid append")
}

pub(crate) fn keyed(event: NewEvent, key: &str) -> NewEvent {
    NewEvent { idempotency_key: Some(key.into()), ..event }
}

/// Appends `appends` as one group at `next_position` (advanced past what was
/// appended), flushes, and gives each append's outcome.
pub(crate) fn group(
    store: &dyn EventStore,
    next_position: &mut u64,
    appends: &[ValidAppend],
) -> Vec<Result<Applied, JournalError>> {
    let ids: Vec<Vec<String>> = appends
        .iter()
        .enumerate()
        .map(|(a, append)| (0..append.events.len()).map(|e| format!("event-{next_position}-{a}-{e}")).collect())
        .collect();
    let members: Vec<_> = appends.iter().zip(&ids).map(|(a, i)| GroupAppend::new(a, i)).collect();
    let outcomes = store.append_group(&members, *next_position, 1_700_000_000_000_000).expect("append_group");
    store.flush().expect("flush");
    for outcome in &outcomes {
        if let Ok(Applied::Appended(a)) = outcome {
            *next_position += a.events.len() as u64;
        }
    }
    outcomes
}

/// One append alone.
fn one(store: &dyn EventStore, next: &mut u64, append: ValidAppend) -> Result<Applied, JournalError> {
    group(store, next, &[append]).pop().expect("one outcome")
}

fn versions(outcome: &Result<Applied, JournalError>) -> Vec<u64> {
    match outcome {
        Ok(Applied::Appended(a)) => a.events.iter().map(|e| e.version).collect(),
        other => panic!("expected an append, got {other:?}"),
    }
}

fn head_version(store: &dyn EventStore, stream: &str) -> Option<u64> {
    store.stream_head(stream, u64::MAX).expect("head").version
}

/// Everything below this is readable in these checks.
const ALL: u64 = u64::MAX;

/// `no_stream`, `exact` and `any`: each holds or is a conflict naming the
/// actual version, and a conflict writes nothing.
pub(crate) fn expected_versions(store: &dyn EventStore) {
    let mut next = 0;
    assert_eq!(versions(&one(store, &mut next, append("s", ExpectedVersion::NoStream, vec![opened("")]))), [0]);
    let conflict = one(store, &mut next, append("s", ExpectedVersion::NoStream, vec![rolled(0, 0)]));
    assert!(
        matches!(
            &conflict,
            Err(JournalError::WrongExpectedVersion { actual: Some(0), expected: ExpectedVersion::NoStream, .. })
        ),
        "{conflict:?}"
    );
    assert_eq!(versions(&one(store, &mut next, append("s", ExpectedVersion::Exact(0), vec![rolled(0, 0)]))), [1]);
    let stale = one(store, &mut next, append("s", ExpectedVersion::Exact(0), vec![rolled(0, 1)]));
    assert!(matches!(&stale, Err(JournalError::WrongExpectedVersion { actual: Some(1), .. })), "{stale:?}");
    let empty = one(store, &mut next, append("t", ExpectedVersion::Exact(0), vec![opened("")]));
    assert!(matches!(&empty, Err(JournalError::WrongExpectedVersion { actual: None, .. })), "{empty:?}");
    assert_eq!(head_version(store, "t"), None, "a conflict writes nothing");
    assert_eq!(
        versions(&one(store, &mut next, append("s", ExpectedVersion::Any, vec![rolled(0, 1), rolled(0, 2)]))),
        [2, 3]
    );
    assert_eq!(head_version(store, "s"), Some(3));
    assert_eq!(store.next_position().unwrap(), 4);
    assert_eq!(next, 4);
}

/// A repeat of known keys gets the original result and writes nothing, even
/// with a stale expected version; a known key with another body, or known
/// and new keys mixed, is refused. Within one group a later append repeating
/// an earlier one's key is a repeat too.
pub(crate) fn idempotency_keys(store: &dyn EventStore) {
    let mut next = 0;
    let request = || vec![keyed(opened("t"), "req-1/0"), keyed(rolled(0, 0), "req-1/1")];
    let Ok(Applied::Appended(original)) = one(store, &mut next, append("s", ExpectedVersion::NoStream, request()))
    else {
        panic!("first append")
    };
    let repeat = one(store, &mut next, append("s", ExpectedVersion::NoStream, request())).expect("repeat");
    let Applied::Deduplicated(repeat) = repeat else { panic!("a repeat appends nothing: {repeat:?}") };
    assert!(repeat.deduplicated);
    assert_eq!(repeat.events, original.events, "versions, positions, ids, hashes and times as recorded");
    assert_eq!(head_version(store, "s"), Some(1));

    let reused = one(store, &mut next, append("s", ExpectedVersion::Any, vec![keyed(rolled(0, 1), "req-1/1")]));
    assert!(
        matches!(&reused, Err(JournalError::IdempotencyKeyReused { key, version: 1, .. }) if key == "req-1/1"),
        "{reused:?}"
    );
    let mixed =
        one(store, &mut next, append("s", ExpectedVersion::Any, vec![rolled(0, 1), keyed(opened("t"), "req-1/0")]));
    assert!(
        matches!(&mixed, Err(JournalError::IdempotencyPartialRepeat { repeated_index: 1, new_index: 0, .. })),
        "{mixed:?}"
    );
    assert_eq!(head_version(store, "s"), Some(1), "refusals write nothing");

    // Keys are per stream: the same key elsewhere is new.
    assert_eq!(
        versions(&one(store, &mut next, append("u", ExpectedVersion::Any, vec![keyed(opened(""), "req-1/0")]))),
        [0]
    );

    // Within one group.
    let first = append("v", ExpectedVersion::Any, vec![keyed(opened(""), "k")]);
    let outcomes = group(store, &mut next, &[first.clone(), first]);
    let (Ok(Applied::Appended(a)), Ok(Applied::Deduplicated(b))) = (&outcomes[0], &outcomes[1]) else {
        panic!("{outcomes:?}")
    };
    assert_eq!(a.events, b.events);
    assert_eq!(store.read_stream("v", 0, 10, usize::MAX, ALL).unwrap().len(), 1);
}

/// In one group, across streams: each append is all or nothing, checked
/// against what the earlier ones of the group left (the battle guard's state
/// included), and only accepted ones take global positions.
pub(crate) fn groups_are_atomic_per_append(store: &dyn EventStore) {
    let mut next = 0;
    let outcomes = group(
        store,
        &mut next,
        &[
            append("a", ExpectedVersion::NoStream, vec![opened("")]),
            append("b", ExpectedVersion::NoStream, vec![opened(""), rolled(0, 0)]),
            append("a", ExpectedVersion::Exact(0), vec![rolled(0, 0)]),
            append("a", ExpectedVersion::Exact(0), vec![rolled(0, 1)]),
            append("b", ExpectedVersion::Any, vec![rolled(0, 1), rolled(0, 3)]),
            append("b", ExpectedVersion::Any, vec![rolled(0, 5)]),
            append("c", ExpectedVersion::Any, vec![rolled(0, 0)]),
            append("b", ExpectedVersion::Exact(1), vec![rolled(0, 1), rolled(0, 2)]),
        ],
    );
    let summary: Vec<Result<Vec<u64>, String>> = outcomes
        .iter()
        .map(|o| match o {
            Ok(Applied::Appended(a)) => Ok(a.events.iter().map(|e| e.global_position).collect()),
            Ok(Applied::Deduplicated(_)) => Err("deduplicated".into()),
            Err(JournalError::EventRefused { rule, field, .. }) => Err(format!("{}: {field}", rule.reason())),
            Err(JournalError::WrongExpectedVersion { actual, .. }) => Err(format!("conflict at {actual:?}")),
            Err(other) => Err(other.to_string()),
        })
        .collect();
    assert_eq!(
        summary,
        [
            Ok(vec![0]),
            Ok(vec![1, 2]),
            Ok(vec![3]),
            Err("conflict at Some(1)".into()),
            Err("NONCE_OUT_OF_ORDER: events[1].payload.dice_rolled.nonce".into()),
            Err("NONCE_OUT_OF_ORDER: events[0].payload.dice_rolled.nonce".into()),
            Err("BATTLE_NOT_OPENED: events[0].event_type".into()),
            Ok(vec![4, 5]),
        ]
    );
    assert_eq!(next, 6);
    assert_eq!(store.next_position().unwrap(), 6);
    assert_eq!(head_version(store, "a"), Some(1));
    assert_eq!(head_version(store, "b"), Some(3));
    assert_eq!(head_version(store, "c"), None);
    // The guard state written with the last append of `b`: nonce 3 is next.
    let again = one(store, &mut next, append("b", ExpectedVersion::Any, vec![rolled(0, 2)]));
    assert!(matches!(&again, Err(JournalError::EventRefused { rule: Rule::NonceOutOfOrder, .. })), "{again:?}");
    assert_eq!(versions(&one(store, &mut next, append("b", ExpectedVersion::Any, vec![rolled(0, 3)]))), [4]);
}

/// Reads from a version, bounded by count and bytes (always at least one
/// event), and never at or past the durable bound.
pub(crate) fn reads_from_a_version(store: &dyn EventStore) {
    let mut next = 0;
    one(store, &mut next, append("s", ExpectedVersion::Any, vec![opened("")])).unwrap();
    for nonce in 0..5 {
        one(store, &mut next, append("s", ExpectedVersion::Any, vec![rolled(0, nonce)])).unwrap();
    }
    let all = store.read_stream("s", 0, 100, usize::MAX, ALL).unwrap();
    assert_eq!(all.iter().map(|e| e.event.version).collect::<Vec<_>>(), [0, 1, 2, 3, 4, 5]);
    let mut previous = record::genesis_hash("s");
    for event in &all {
        assert_eq!(event.event.stream_id, "s");
        assert_eq!(record::encode(&event.event), event.record, "the stored bytes are the record");
        assert_eq!(event.hash, record::chain_hash(&previous, &event.record), "h(v) chains");
        previous = event.hash;
    }
    assert_eq!(all[3].event.payload, rolled(0, 2).payload);

    let from = store.read_stream("s", 2, 2, usize::MAX, ALL).unwrap();
    assert_eq!(from, all[2..4]);
    let one_by_bytes = store.read_stream("s", 1, 100, 1, ALL).unwrap();
    assert_eq!(one_by_bytes, all[1..2], "a byte bound still returns one event");
    // The bound is on the page as sent: each record travels twice in a
    // RecordedEvent. At the weight of two events, two; one byte under, one.
    let two = recorded_event_wire_bytes(all[1].record.len()) + recorded_event_wire_bytes(all[2].record.len());
    let two_by_bytes = store.read_stream("s", 1, 100, two, ALL).unwrap();
    assert_eq!(two_by_bytes, all[1..3]);
    assert!(sent_bytes(&two_by_bytes) <= two, "the page as encoded stays within its bound");
    assert!(sent_bytes(&two_by_bytes) > all[1].record.len() + all[2].record.len(), "and weighs more than its records");
    assert_eq!(store.read_stream("s", 1, 100, two - 1, ALL).unwrap(), all[1..2]);
    assert_eq!(store.read_stream("s", 3, 100, usize::MAX, 4).unwrap(), all[3..4], "below the durable bound only");
    assert!(store.read_stream("s", 6, 100, usize::MAX, ALL).unwrap().is_empty());
    assert!(store.read_stream("none", 0, 100, usize::MAX, ALL).unwrap().is_empty());
    assert!(store.read_stream("s", 0, 100, usize::MAX, 0).unwrap().is_empty());
}

/// The global log holds every accepted event once, in commit order, across
/// streams; reads start anywhere and stop at the bounds.
pub(crate) fn global_log_order(store: &dyn EventStore) {
    let mut next = 0;
    let mut expected = Vec::new();
    for (stream, events) in [
        ("x", vec![opened("")]),
        ("y", vec![opened(""), rolled(0, 0)]),
        ("x", vec![rolled(0, 0)]),
        ("z", vec![rolled(0, 0)]), // refused: takes no position
        ("y", vec![rolled(0, 1)]),
    ] {
        let count = events.len() as u64;
        if let Ok(Applied::Appended(a)) = one(store, &mut next, append(stream, ExpectedVersion::Any, events)) {
            let first = a.events[0].version;
            expected.extend((first..first + count).map(|v| (stream.to_owned(), v)));
        }
    }
    let log = store.read_all(0, 100, usize::MAX, ALL).unwrap();
    let got: Vec<_> = log.iter().map(|e| (e.event.stream_id.clone(), e.event.version)).collect();
    assert_eq!(got, expected);
    assert_eq!(log.iter().map(|e| e.global_position).collect::<Vec<_>>(), [0, 1, 2, 3, 4]);
    assert_eq!(store.read_all(2, 2, usize::MAX, ALL).unwrap(), log[2..4]);
    assert_eq!(store.read_all(1, 100, 1, ALL).unwrap(), log[1..2]);
    assert_eq!(store.read_all(0, 100, usize::MAX, 3).unwrap(), log[..3]);
    assert!(store.read_all(5, 100, usize::MAX, ALL).unwrap().is_empty());
    let stream_y = store.read_stream("y", 0, 100, usize::MAX, ALL).unwrap();
    assert_eq!(stream_y, [log[1].clone(), log[2].clone(), log[4].clone()], "the same events either way");
}

/// A stream's head: none and h(−1) when empty, else its last version and
/// hash, below the durable bound; the chain verifies up to it.
pub(crate) fn heads_and_chains(store: &dyn EventStore) {
    let mut next = 0;
    let empty = StreamHead { version: None, hash: record::genesis_hash("h") };
    assert_eq!(store.stream_head("h", ALL).unwrap(), empty);
    assert_eq!(store.verify_chain("h", ALL).unwrap(), ChainCheck::Ok { count: 0, head_hash: empty.hash });
    one(store, &mut next, append("h", ExpectedVersion::Any, vec![opened(""), rolled(0, 0)])).unwrap();
    one(store, &mut next, append("other", ExpectedVersion::Any, vec![opened("")])).unwrap();
    one(store, &mut next, append("h", ExpectedVersion::Any, vec![rolled(0, 1)])).unwrap();
    let events = store.read_stream("h", 0, 100, usize::MAX, ALL).unwrap();
    assert_eq!(store.stream_head("h", ALL).unwrap(), StreamHead { version: Some(2), hash: events[2].hash });
    assert_eq!(store.stream_head("h", 3).unwrap(), StreamHead { version: Some(1), hash: events[1].hash });
    assert_eq!(store.verify_chain("h", ALL).unwrap(), ChainCheck::Ok { count: 3, head_hash: events[2].hash });
}

/// The outbox cursor starts at 0 and keeps what it was set to.
pub(crate) fn outbox_cursor(store: &dyn EventStore) {
    assert_eq!(store.outbox_cursor().unwrap(), 0);
    let mut next = 0;
    one(store, &mut next, append("o", ExpectedVersion::Any, vec![opened(""), rolled(0, 0)])).unwrap();
    store.set_outbox_cursor(1).unwrap();
    assert_eq!(store.outbox_cursor().unwrap(), 1);
    store.set_outbox_cursor(2).unwrap();
    assert_eq!(store.outbox_cursor().unwrap(), 2);
}

/// What a flushed store held is there after a reopen: events, heads, the
/// guard's state, idempotency keys, the next position, the outbox cursor.
pub(crate) fn survives_reopen(open: &dyn Fn() -> Box<dyn EventStore>) {
    let mut next = 0;
    let (events, original) = {
        let store = open();
        let Ok(Applied::Appended(original)) = one(
            &*store,
            &mut next,
            append("d", ExpectedVersion::NoStream, vec![keyed(opened("t"), "k0"), rolled(0, 0)]),
        ) else {
            panic!("append")
        };
        one(&*store, &mut next, append("e", ExpectedVersion::Any, vec![opened("")])).unwrap();
        one(&*store, &mut next, append("d", ExpectedVersion::Any, vec![rolled(0, 1)])).unwrap();
        store.set_outbox_cursor(2).unwrap();
        store.flush().unwrap();
        (store.read_all(0, 100, usize::MAX, ALL).unwrap(), original)
    };
    let store = open();
    assert_eq!(store.read_all(0, 100, usize::MAX, ALL).unwrap(), events);
    assert_eq!(store.next_position().unwrap(), 4);
    assert_eq!(store.outbox_cursor().unwrap(), 2);
    assert_eq!(head_version(&*store, "d"), Some(2));
    let repeat = one(&*store, &mut next, append("d", ExpectedVersion::NoStream, vec![keyed(opened("t"), "k0")]));
    assert_eq!(
        repeat.unwrap(),
        Applied::Deduplicated(super::AppendOutcome { events: original.events[..1].to_vec(), deduplicated: true })
    );
    let spent = one(&*store, &mut next, append("d", ExpectedVersion::Any, vec![rolled(0, 1)]));
    assert!(matches!(&spent, Err(JournalError::EventRefused { rule: Rule::NonceOutOfOrder, .. })), "{spent:?}");
    assert_eq!(versions(&one(&*store, &mut next, append("d", ExpectedVersion::Any, vec![rolled(0, 2)]))), [3]);
    assert!(matches!(store.verify_chain("d", ALL).unwrap(), ChainCheck::Ok { count: 4, .. }));
}

/// One `#[test]` per check of the suite, each on a fresh store from `$make`
/// (an expression giving something that derefs to an [`EventStore`]; keep
/// whatever else it returns alive, e.g. a temp dir, in a tuple).
macro_rules! conformance_tests {
    ($make:expr) => {
        mod conformance {
            #[allow(unused_imports)]
            use super::*;
            use crate::store::conformance as suite;

            #[test]
            fn expected_versions() {
                let (store, _keep) = $make;
                suite::expected_versions(&*store);
            }

            #[test]
            fn idempotency_keys() {
                let (store, _keep) = $make;
                suite::idempotency_keys(&*store);
            }

            #[test]
            fn groups_are_atomic_per_append() {
                let (store, _keep) = $make;
                suite::groups_are_atomic_per_append(&*store);
            }

            #[test]
            fn reads_from_a_version() {
                let (store, _keep) = $make;
                suite::reads_from_a_version(&*store);
            }

            #[test]
            fn global_log_order() {
                let (store, _keep) = $make;
                suite::global_log_order(&*store);
            }

            #[test]
            fn heads_and_chains() {
                let (store, _keep) = $make;
                suite::heads_and_chains(&*store);
            }

            #[test]
            fn outbox_cursor() {
                let (store, _keep) = $make;
                suite::outbox_cursor(&*store);
            }
        }
    };
}
pub(crate) use conformance_tests;
