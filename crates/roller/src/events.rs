//! Battle events to and from journal records. A record's `event_type` names
//! the event and its payload is the protobuf encoding of a `BattleEvent`
//! holding exactly that event (`proto/battlelog/v1/battle.proto`).

use battlelog_proto::v1::{self, BattleEvent, JournalRecord, NewEvent, battle_event::Event};
use prost::Message;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EventError {
    #[error("version {version}: payload is not a BattleEvent: {message}")]
    Undecodable { version: u64, message: String },
    #[error("version {version}: payload holds no event")]
    Empty { version: u64 },
    #[error("version {version}: record says {declared} but the payload holds {actual}")]
    TypeMismatch { version: u64, declared: String, actual: &'static str },
}

/// The record's `event_type` for `event`.
pub fn type_name(event: &Event) -> &'static str {
    match event {
        Event::BattleOpened(_) => "BattleOpened",
        Event::SeedCommitted(_) => "SeedCommitted",
        Event::DiceRolled(_) => "DiceRolled",
        Event::ActionResolved(_) => "ActionResolved",
        Event::DisputeRaised(_) => "DisputeRaised",
        Event::JudgeRuling(_) => "JudgeRuling",
        Event::SeedRevealed(_) => "SeedRevealed",
        Event::BattleClosed(_) => "BattleClosed",
    }
}

/// The journal append entry for `event`.
pub fn new_event(event: Event, idempotency_key: String) -> NewEvent {
    let event_type = type_name(&event).to_owned();
    NewEvent { event_type, payload: BattleEvent { event: Some(event) }.encode_to_vec(), idempotency_key }
}

/// Decodes a record's payload and checks it is the event its type says.
pub fn decode(record: &JournalRecord) -> Result<Event, EventError> {
    let version = record.version;
    let decoded = BattleEvent::decode(record.payload.as_slice())
        .map_err(|e| EventError::Undecodable { version, message: e.to_string() })?;
    let event = decoded.event.ok_or(EventError::Empty { version })?;
    let actual = type_name(&event);
    if actual != record.event_type {
        return Err(EventError::TypeMismatch { version, declared: record.event_type.clone(), actual });
    }
    Ok(event)
}

pub fn die_to_proto(die: &dice::Die) -> v1::Die {
    v1::Die { sides: die.sides, value: die.value, kept: die.kept, rerolled: die.rerolled, exploded: die.exploded }
}

pub fn die_from_proto(die: &v1::Die) -> dice::Die {
    dice::Die { sides: die.sides, value: die.value, kept: die.kept, rerolled: die.rerolled, exploded: die.exploded }
}
