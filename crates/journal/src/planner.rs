//! The append policy, once for every store: idempotency keys, the expected
//! version, the battle guard and the chain, decided above storage.
//!
//! [`plan`] reads what it needs of the stream from the store (its head with
//! the battle state, the entries of the append's idempotency keys) and
//! either answers the append itself (a repeat of known keys, or a refusal)
//! or gives the exact records to write, as a [`PlannedAppend`] tied to the
//! head it read. The store writes that only if the head has not moved
//! meanwhile ([`crate::store::Conflict`] otherwise, and the journal plans
//! again), so two journal processes on one log can never fork a battle, and
//! a store holds no policy of its own.
//!
//! The checks run in the order a caller relies on: idempotency first (a
//! retry of a committed append gets its original result even though its
//! expected version is now stale), then the expected version, then the
//! guard, event by event against the state the earlier events left; every
//! check comes before any record is built.

use battlelog_proto::v1::JournalRecord;

use crate::error::JournalError;
use crate::guard::{self, BattleState, Violation};
use crate::limits::{ExpectedVersion, ValidAppend};
use crate::record::{self, Hash};
use crate::store::{AppendOutcome, AppendedEvent, EventStore, Head, Page, PlannedAppend, PlannedRecord};

/// What [`plan`] decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// Every event repeats a known idempotency key: the original result,
    /// nothing to write.
    Repeat(AppendOutcome),
    /// Write this; `events` is the answer once the store has given each
    /// event its global position (in order).
    Write {
        /// The records for the store.
        planned: PlannedAppend,
        /// One per event; `global_position` still 0.
        events: Vec<AppendedEvent>,
    },
}

/// Plans `append` against the stream as the store has it now. Event ids
/// are fresh UUIDv7s; `now_micros` is the records' commit time.
pub async fn plan(store: &dyn EventStore, append: &ValidAppend, now_micros: i64) -> Result<Plan, JournalError> {
    let stream = append.stream_id.as_str();
    let fingerprints: Vec<Hash> =
        append.events.iter().map(|e| record::fingerprint(&e.event_type, &e.payload)).collect();

    // The head is read before the keys, so the keys are at least as new as
    // it: a key committed at or before the head is seen (a repeat), and one
    // committed after it has moved the head (this plan then conflicts and is
    // made again). Read the other way round, a key committed between the two
    // reads — by another append in flight, or another journal process —
    // would be missed and written a second time.
    let head = store.head(stream).await?;
    if let Some(repeat) = repeat_of_known_keys(store, append, &fingerprints).await? {
        return Ok(Plan::Repeat(repeat));
    }

    let actual = head.map(|h| h.version);
    check_expected(append, actual)?;

    // The battle guard, against the state stored with the head.
    let state = match head {
        Some(Head { state: Some(state), .. }) => Some(state),
        Some(Head { version, state: None, .. }) => Some(fold_legacy(store, stream, version).await?),
        None => None,
    };
    let first_version = actual.map_or(0, |v| v + 1);
    let event_ids: Vec<String> = append.events.iter().map(|_| uuid::Uuid::now_v7().to_string()).collect();
    let records = encode_records(append, first_version, &event_ids, now_micros);
    let state = guarded(append, state, first_version, &records)?;

    let mut previous = head.map_or_else(|| record::genesis_hash(stream), |h| h.hash);
    let mut planned = Vec::with_capacity(records.len());
    let mut events = Vec::with_capacity(records.len());
    for (i, bytes) in records.into_iter().enumerate() {
        let hash = record::chain_hash(&previous, &bytes);
        previous = hash;
        let key = append.events[i].idempotency_key.clone().map(|k| (k, fingerprints[i]));
        planned.push(PlannedRecord { bytes, hash, key });
        events.push(AppendedEvent {
            version: first_version + i as u64,
            global_position: 0,
            event_id: event_ids[i].clone(),
            hash,
            recorded_at_unix_micros: now_micros,
        });
    }
    Ok(Plan::Write {
        planned: PlannedAppend { stream_id: stream.to_owned(), expected: actual, records: planned, state },
        events,
    })
}

/// The append's expected version against the stream's `actual` one.
fn check_expected(append: &ValidAppend, actual: Option<u64>) -> Result<(), JournalError> {
    let ok = match append.expected {
        ExpectedVersion::Any => true,
        ExpectedVersion::NoStream => actual.is_none(),
        ExpectedVersion::Exact(v) => actual == Some(v),
    };
    if !ok {
        return Err(JournalError::WrongExpectedVersion {
            stream_id: append.stream_id.clone(),
            expected: append.expected,
            actual,
        });
    }
    Ok(())
}

/// The append's events as the journal's records, from `first_version` on.
fn encode_records(append: &ValidAppend, first_version: u64, event_ids: &[String], now_micros: i64) -> Vec<Vec<u8>> {
    append
        .events
        .iter()
        .enumerate()
        .map(|(i, event)| {
            record::encode(&JournalRecord {
                stream_id: append.stream_id.clone(),
                version: first_version + i as u64,
                event_id: event_ids[i].clone(),
                event_type: event.event_type.clone(),
                recorded_at_unix_micros: now_micros,
                idempotency_key: event.idempotency_key.clone().unwrap_or_default(),
                payload: event.payload.clone(),
            })
        })
        .collect()
}

/// The battle state after the append's events, each checked and charged by
/// the guard; the first refusal is the append's.
fn guarded(
    append: &ValidAppend,
    mut state: Option<BattleState>,
    first_version: u64,
    records: &[Vec<u8>],
) -> Result<BattleState, JournalError> {
    let stream = append.stream_id.as_str();
    for (i, checked) in append.checked.iter().enumerate() {
        let closed_before = state.is_some_and(|s| s.closed);
        let step = guard::apply(state, i, checked).and_then(|mut next| {
            let version = first_version + i as u64;
            guard::charge(&mut next, closed_before, i, checked, version, records[i].len(), &append.budget)?;
            Ok(next)
        });
        match step {
            Ok(next) => state = Some(next),
            Err(violation) => return Err(refused(stream, violation)),
        }
    }
    state.ok_or_else(|| JournalError::Corrupt {
        stream_id: stream.to_owned(),
        version: first_version,
        reason: "an append without events".into(),
    })
}

fn refused(stream: &str, Violation { field, rule, message }: Violation) -> JournalError {
    JournalError::EventRefused { stream_id: stream.to_owned(), field, rule, message }
}

/// The original result when every event repeats a known key with the same
/// type and payload; an error when a key is reused for something else or
/// only some events repeat; `None` when nothing repeats.
async fn repeat_of_known_keys(
    store: &dyn EventStore,
    append: &ValidAppend,
    fingerprints: &[Hash],
) -> Result<Option<AppendOutcome>, JournalError> {
    let stream = append.stream_id.as_str();
    let keyed: Vec<(usize, String)> =
        append.events.iter().enumerate().filter_map(|(i, e)| e.idempotency_key.clone().map(|k| (i, k))).collect();
    if keyed.is_empty() {
        return Ok(None);
    }
    let keys: Vec<String> = keyed.iter().map(|(_, k)| k.clone()).collect();
    let entries = store.idempotency(stream, &keys).await?;
    let mut repeated: Vec<(usize, u64)> = Vec::new();
    let mut new_index = append.events.iter().position(|e| e.idempotency_key.is_none());
    for ((i, key), entry) in keyed.into_iter().zip(entries) {
        match entry {
            None => new_index = Some(new_index.map_or(i, |n| n.min(i))),
            Some(entry) if entry.fingerprint != fingerprints[i] => {
                return Err(JournalError::IdempotencyKeyReused {
                    stream_id: stream.to_owned(),
                    key,
                    version: entry.version,
                });
            }
            Some(entry) => repeated.push((i, entry.version)),
        }
    }
    let Some(&(repeated_index, _)) = repeated.first() else { return Ok(None) };
    if let Some(new_index) = new_index {
        return Err(JournalError::IdempotencyPartialRepeat { stream_id: stream.to_owned(), repeated_index, new_index });
    }
    let mut events = Vec::with_capacity(repeated.len());
    for (_, version) in repeated {
        let corrupt =
            |reason: &str| JournalError::Corrupt { stream_id: stream.to_owned(), version, reason: reason.into() };
        let stored = store.read_stream(stream, version, Page::count(1)).await?;
        let event = stored
            .into_iter()
            .next()
            .filter(|e| e.event.version == version)
            .ok_or_else(|| corrupt("record missing"))?;
        events.push(AppendedEvent {
            version,
            global_position: event.global_position,
            event_id: event.event.event_id,
            hash: event.hash,
            recorded_at_unix_micros: event.event.recorded_at_unix_micros,
        });
    }
    Ok(Some(AppendOutcome { events, deduplicated: true }))
}

/// The battle state of a stream whose head predates the guard: its records
/// folded once (the next append stores the state with the head). A history
/// that does not fold as a battle takes no more appends: the guard could not
/// vouch for anything after it.
async fn fold_legacy(store: &dyn EventStore, stream: &str, head_version: u64) -> Result<BattleState, JournalError> {
    const PAGE: usize = 256;
    let mut state: Option<BattleState> = None;
    let mut version = 0u64;
    while version <= head_version {
        let page = store.read_stream(stream, version, Page::count(PAGE)).await?;
        if page.is_empty() {
            break;
        }
        for stored in page {
            if version > head_version {
                break;
            }
            if stored.event.version != version {
                return Err(JournalError::Corrupt {
                    stream_id: stream.to_owned(),
                    version,
                    reason: "record missing".into(),
                });
            }
            match fold_stored(state, &stored.event, stored.record.len()) {
                Ok(next) => state = Some(next),
                Err(v) => {
                    return Err(refused(
                        stream,
                        Violation {
                            field: "stream_id".into(),
                            rule: guard::Rule::StreamNotABattle,
                            message: format!(
                                "version {version}, stored before the battle guard, breaks {}: {}",
                                v.rule.reason(),
                                v.message
                            ),
                        },
                    ));
                }
            }
            version += 1;
        }
    }
    if version <= head_version {
        return Err(JournalError::Corrupt { stream_id: stream.to_owned(), version, reason: "record missing".into() });
    }
    state.ok_or(JournalError::Corrupt {
        stream_id: stream.to_owned(),
        version: 0,
        reason: "a head without records".into(),
    })
}

/// The battle state after a stored record: the guard's fold, the record's
/// bytes counted as they stand, with no budget check (it is stored). For
/// streams the state was not stored with, and for copies between stores.
pub fn fold_stored(
    state: Option<BattleState>,
    record: &JournalRecord,
    record_bytes: usize,
) -> Result<BattleState, Violation> {
    let next = guard::inspect(0, &record.event_type, &record.payload).and_then(|c| guard::apply(state, 0, &c))?;
    Ok(BattleState { bytes: next.bytes + record_bytes as u64, ..next })
}
