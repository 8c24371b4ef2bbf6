//! Target `journal_decode`: every place the journal and its readers decode
//! battle data from bytes they did not write this moment.
//!
//! The first byte picks the decoder, the rest is its input:
//! - 0: a stored record (`battlelog_journal::record::decode`) and the
//!   battle event in it (`battlelog_proto::battle::decode`), with what
//!   readers do next: the export's JSON, a roll's forum line, the event's
//!   credential, the NATS subject token of a battle's tenant;
//! - 1: an appended event at the journal's door (`guard::inspect`, with
//!   the event type named by the second byte) and the guard's `apply`;
//! - 2: the guard's stored per-battle state (`BattleState::decode`);
//! - 3: a write set of the sled store's group commit (`WriteSet::decode`).
//!
//! Properties, beyond "no panic":
//! - a decoded record encodes and decodes to itself, and a decoded event is
//!   the one its record's type names;
//! - an event's export JSON reads back from its text as the same value (the
//!   audit compares a shown event with the record's this way, so an event
//!   whose JSON did not survive its own text would fail every honest audit);
//! - a tenant's subject token holds no NATS separator or wildcard;
//! - an event the guard admits is exactly one event of the type named, and
//!   no longer than its canonical encoding (the guard's rule against a
//!   second event or undefined fields hidden in the bytes). Not byte for
//!   byte the canonical encoding: protobuf lets fields and map entries come
//!   in any order, which every decoder reads as the same event, and the
//!   guard admits that (the fuzzer found it at once);
//! - the guard's state and a write set decode only what their encoders
//!   write: decoding then encoding gives the input back.

use battlelog_journal::guard::{self, BattleState, STATE_BYTES_UNCOUNTED};
use battlelog_journal::record;
use battlelog_journal::store::kv_tables::WriteSet;
use battlelog_proto::battle;
use battlelog_proto::v1::BattleEvent;
use battlelog_proto::v1::battle_event::Event;
use prost::Message;
use serde_json::Value;

/// Every event type a record may name, as `battle::type_name` spells them.
pub const TYPES: [&str; 8] = [
    "BattleOpened",
    "SeedCommitted",
    "DiceRolled",
    "ActionResolved",
    "DisputeRaised",
    "JudgeRuling",
    "SeedRevealed",
    "BattleClosed",
];

/// Runs the target on one input.
pub fn run(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else { return };
    match mode % 4 {
        0 => stored_record(rest),
        1 => appended_event(rest),
        2 => battle_state(rest),
        _ => write_set(rest),
    }
}

fn stored_record(bytes: &[u8]) {
    let Ok(decoded) = record::decode(bytes) else { return };
    assert_eq!(record::decode(&record::encode(&decoded)).ok().as_ref(), Some(&decoded), "a record did not round-trip");
    let event = match battle::decode(&decoded) {
        Ok(event) => event,
        Err(error) => {
            assert!(!error.to_string().is_empty());
            return;
        }
    };
    assert_eq!(battle::type_name(&event), decoded.event_type, "decoded an event of another type");
    let json = battle::event_to_json(&event);
    let text = serde_json::to_string(&json).expect("an event's JSON serialises");
    let back: Value = serde_json::from_str(&text).expect("an event's JSON text parses");
    assert_eq!(back, json, "an event's JSON changed through its text: {text}");
    let _ = battle::credential(&event);
    match &event {
        Event::DiceRolled(rolled) => {
            let _ = battle::rendering(rolled);
        }
        Event::BattleOpened(opened) => {
            let token = guard::subject_token(&opened.tenant);
            assert!(!token.is_empty(), "an empty subject token");
            let unsafe_char = |c: char| matches!(c, '.' | '*' | '>') || c.is_whitespace() || c.is_control();
            assert!(!token.chars().any(unsafe_char), "subject token {token:?} for tenant {:?}", opened.tenant);
        }
        _ => {}
    }
}

fn appended_event(data: &[u8]) {
    let Some((&which, payload)) = data.split_first() else { return };
    let event_type = TYPES[usize::from(which) % TYPES.len()];
    let checked = match guard::inspect(0, event_type, payload) {
        Ok(checked) => checked,
        Err(violation) => {
            assert!(!violation.field.is_empty() && !violation.message.is_empty(), "{violation:?}");
            return;
        }
    };
    let event = BattleEvent::decode(payload).expect("an admitted payload decodes");
    let canonical = event.encode_to_vec();
    assert!(canonical.len() >= payload.len(), "an admitted payload is longer than its event's encoding");
    assert_eq!(BattleEvent::decode(canonical.as_slice()).as_ref(), Ok(&event), "an event did not round-trip");
    let actual = event.event.as_ref().map(battle::type_name);
    assert_eq!(actual, Some(event_type), "admitted as {event_type}");
    if let Ok(state) = guard::apply(None, 0, &checked) {
        assert_eq!(BattleState::decode(&state.encode()), Some(state));
        if let Ok(next) = guard::apply(Some(state), 1, &checked) {
            assert_eq!(BattleState::decode(&next.encode()), Some(next));
        }
    }
}

fn battle_state(bytes: &[u8]) {
    if let Some(state) = BattleState::decode(bytes) {
        // The shorter form stored before byte counts reads as counting none.
        let encoded = state.encode();
        let expected =
            if bytes.len() == STATE_BYTES_UNCOUNTED { &encoded[..STATE_BYTES_UNCOUNTED] } else { &encoded[..] };
        assert_eq!(expected, bytes, "a battle state decoded from bytes it does not encode to");
        if bytes.len() == STATE_BYTES_UNCOUNTED {
            assert_eq!(state.bytes, 0, "an uncounted state counts no bytes");
        }
    }
}

fn write_set(bytes: &[u8]) {
    if let Some(set) = WriteSet::decode(bytes) {
        assert_eq!(set.encode(), bytes, "a write set decoded from bytes it does not encode to");
    }
}
