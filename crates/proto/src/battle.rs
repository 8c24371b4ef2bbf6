//! Battle events to and from journal records, and to the JSON that exports
//! and people read. A record's `event_type` names the event and its payload
//! is the protobuf encoding of a `BattleEvent` holding exactly that event
//! (`proto/battlelog/v1/battle.proto`).

use prost::Message;
use prost_types::value::Kind;
use serde_json::{Map, Number, Value, json};

use crate::v1::{self, BattleEvent, JournalRecord, NewEvent, battle_event::Event};

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

/// The credential a command event records (who caused it), if any:
/// battles from before credentials, and the roller's own events but a
/// reveal, have none.
pub fn credential(event: &Event) -> Option<&v1::Credential> {
    match event {
        Event::BattleOpened(e) => e.credential.as_ref(),
        Event::ActionResolved(e) => e.credential.as_ref(),
        Event::DisputeRaised(e) => e.credential.as_ref(),
        Event::JudgeRuling(e) => e.credential.as_ref(),
        Event::SeedRevealed(e) => e.credential.as_ref(),
        Event::BattleClosed(e) => e.credential.as_ref(),
        Event::SeedCommitted(_) | Event::DiceRolled(_) => None,
    }
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

/// The forum line of a journaled roll, e.g. `4d6kh3: [6, 5, 3, ~~1~~] = 14`,
/// or the expression and its error when the arithmetic failed.
pub fn rendering(roll: &v1::DiceRolled) -> String {
    match dice::Expression::parse(&roll.expression) {
        Ok(expression) if roll.error.is_empty() => {
            let rolled = dice::Roll { total: roll.total, dice: roll.dice.iter().map(die_from_proto).collect() };
            dice::render(&expression, &rolled)
        }
        _ => format!("{}: {}", roll.expression, roll.error),
    }
}

/// A `google.protobuf.Struct` as a JSON object. Protobuf numbers are
/// doubles; whole ones come back as JSON integers, so `{"power": 65}`
/// survives the round trip as written.
pub fn struct_to_json(fields: &prost_types::Struct) -> Map<String, Value> {
    fields.fields.iter().map(|(name, value)| (name.clone(), value_to_json(value))).collect()
}

pub fn value_to_json(value: &prost_types::Value) -> Value {
    match &value.kind {
        None | Some(Kind::NullValue(_)) => Value::Null,
        Some(Kind::BoolValue(b)) => Value::Bool(*b),
        Some(Kind::StringValue(s)) => Value::String(s.clone()),
        Some(Kind::NumberValue(n)) => number_to_json(*n),
        Some(Kind::StructValue(s)) => Value::Object(struct_to_json(s)),
        Some(Kind::ListValue(list)) => Value::Array(list.values.iter().map(value_to_json).collect()),
    }
}

/// Doubles hold integers exactly up to 2^53.
const MAX_EXACT_INTEGER: f64 = 9_007_199_254_740_992.0;

fn number_to_json(n: f64) -> Value {
    if n.fract() == 0.0 && n.abs() <= MAX_EXACT_INTEGER {
        // Exact: checked whole and within the range doubles hold exactly.
        Value::Number(Number::from(n as i64))
    } else {
        Number::from_f64(n).map_or(Value::Null, Value::Number)
    }
}

/// Why a `Struct` from a request was refused, with the path of the value in
/// it (`action.targets[1].hp`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StructError {
    #[error("nests deeper than {limit} levels (at {path})")]
    TooDeep { path: String, limit: usize },
    #[error("{path}: must be a finite number, not {value}")]
    NotFinite { path: String, value: String },
    #[error("{path}: may not hold control characters")]
    Control { path: String },
}

impl StructError {
    /// The path of the offending value, for the field a refusal names.
    pub fn path(&self) -> &str {
        match self {
            Self::TooDeep { path, .. } | Self::NotFinite { path, .. } | Self::Control { path } => path,
        }
    }
}

/// Checks a `Struct` that came from a caller before anything reads it as
/// JSON: at most `max_depth` levels of objects and lists (the struct itself
/// is level 1), only finite numbers (JSON has no NaN or infinity, and
/// [`struct_to_json`] would silently turn them into `null`), and no control
/// characters in keys, nor in strings other than line breaks (they end up
/// in summaries, exports and terminals). `root` names the field the struct
/// is in, as the paths of refusals start.
///
/// The walk stops at `max_depth`, so its own recursion is bounded whatever
/// the input; the conversions to JSON recurse without a bound and must only
/// see checked structs.
pub fn check_struct(root: &str, fields: &prost_types::Struct, max_depth: usize) -> Result<(), StructError> {
    let mut path = root.to_owned();
    check_fields(fields, &mut path, 1, max_depth)
}

fn check_fields(fields: &prost_types::Struct, path: &mut String, depth: usize, max: usize) -> Result<(), StructError> {
    if depth > max {
        return Err(StructError::TooDeep { path: path.clone(), limit: max });
    }
    for (key, value) in &fields.fields {
        let len = path.len();
        push_key(path, key);
        if key.chars().any(char::is_control) {
            return Err(StructError::Control { path: path.clone() });
        }
        check_value(value, path, depth, max)?;
        path.truncate(len);
    }
    Ok(())
}

/// `value` sits in a container at `depth`.
fn check_value(value: &prost_types::Value, path: &mut String, depth: usize, max: usize) -> Result<(), StructError> {
    match &value.kind {
        Some(Kind::NumberValue(n)) if !n.is_finite() => {
            Err(StructError::NotFinite { path: path.clone(), value: n.to_string() })
        }
        Some(Kind::StringValue(s)) if s.chars().any(|c| c.is_control() && c != '\n') => {
            Err(StructError::Control { path: path.clone() })
        }
        Some(Kind::StructValue(inner)) => check_fields(inner, path, depth + 1, max),
        Some(Kind::ListValue(list)) => {
            if depth + 1 > max {
                return Err(StructError::TooDeep { path: path.clone(), limit: max });
            }
            for (i, item) in list.values.iter().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                check_value(item, path, depth + 1, max)?;
                path.truncate(len);
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Keys are the caller's: a plain one reads `.key`; any other is quoted
/// with its control characters escaped and cut short, so that a refusal
/// never echoes a terminal escape or a megabyte back.
fn push_key(path: &mut String, key: &str) {
    const SHOWN: usize = 32;
    let plain =
        !key.is_empty() && key.len() <= 64 && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if plain {
        path.push('.');
        path.push_str(key);
    } else {
        let shown: String = key.chars().take(SHOWN).collect();
        let cut = if key.chars().nth(SHOWN).is_some() { "…" } else { "" };
        path.push_str(&format!("[{shown:?}{cut}]"));
    }
}

/// A JSON object as a `google.protobuf.Struct`.
pub fn json_to_struct(fields: &Map<String, Value>) -> prost_types::Struct {
    prost_types::Struct { fields: fields.iter().map(|(name, value)| (name.clone(), json_to_value(value))).collect() }
}

pub fn json_to_value(value: &Value) -> prost_types::Value {
    let kind = match value {
        Value::Null => Kind::NullValue(prost_types::NullValue::NullValue as i32),
        Value::Bool(b) => Kind::BoolValue(*b),
        Value::Number(n) => Kind::NumberValue(n.as_f64().unwrap_or_default()),
        Value::String(s) => Kind::StringValue(s.clone()),
        Value::Array(items) => {
            Kind::ListValue(prost_types::ListValue { values: items.iter().map(json_to_value).collect() })
        }
        Value::Object(fields) => Kind::StructValue(json_to_struct(fields)),
    };
    prost_types::Value { kind: Some(kind) }
}

fn die_json(die: &v1::Die) -> Value {
    json!({"sides": die.sides, "value": die.value, "kept": die.kept, "rerolled": die.rerolled, "exploded": die.exploded})
}

fn optional_struct(fields: Option<&prost_types::Struct>) -> Value {
    fields.map_or(Value::Null, |s| Value::Object(struct_to_json(s)))
}

/// The event as docs/protocol.md §4's export shows it: `type` plus its fields in
/// snake_case, enum values as docs/rules.md strings.
pub fn event_to_json(event: &Event) -> Value {
    let mut fields = match event {
        Event::BattleOpened(e) => json!({
            "ruleset": e.ruleset,
            "title": e.title,
            "forum_ref": e.forum_ref,
            "participants": e.participants.iter().map(|p| Value::Object(struct_to_json(p))).collect::<Vec<_>>(),
            "client_seed": e.client_seed,
            "commitment": e.commitment,
            "tenant": e.tenant,
        }),
        Event::SeedCommitted(e) => json!({"epoch": e.epoch, "commitment": e.commitment}),
        Event::DiceRolled(e) => {
            let mut fields = json!({
                "epoch": e.epoch,
                "nonce": e.nonce,
                "expression": e.expression,
                "purpose": e.purpose,
                "actor": e.actor,
                "total": e.total,
                "dice": e.dice.iter().map(die_json).collect::<Vec<_>>(),
            });
            if !e.error.is_empty() {
                fields["error"] = Value::String(e.error.clone());
            }
            // The action an action's first roll is drawn for (roll-forward);
            // its caller's credential is not shown, as on every event.
            if let Some(requested) = &e.for_action {
                fields["for_action"] = json!({"action": optional_struct(requested.action.as_ref())});
            }
            fields
        }
        Event::ActionResolved(e) => json!({
            "action": optional_struct(e.action.as_ref()),
            "rolls": e.rolls,
            "outcome": optional_struct(e.outcome.as_ref()),
            "summary_ru": e.summary_ru,
            "summary_en": e.summary_en,
        }),
        Event::DisputeRaised(e) => json!({"by": e.by, "refers_to": e.refers_to, "reason": e.reason}),
        Event::JudgeRuling(e) => {
            let mut fields = json!({
                "judge": e.judge,
                "refers_to": e.refers_to,
                "text": e.text,
                "override": optional_struct(e.r#override.as_ref()),
            });
            // Only when recorded: a ruling from before the field existed
            // shows exactly what it showed then.
            if let Some(dispute) = e.answers_dispute {
                fields["answers_dispute"] = json!(dispute);
            }
            fields
        }
        Event::SeedRevealed(e) => json!({"epoch": e.epoch, "server_seed": e.server_seed}),
        Event::BattleClosed(e) => json!({"by": e.by, "reason": e.reason}),
    };
    if let Value::Object(map) = &mut fields {
        map.insert("type".to_owned(), Value::String(type_name(event).to_owned()));
        if let Event::BattleOpened(v1::BattleOpened { commitment_signature, roller_key, .. })
        | Event::SeedCommitted(v1::SeedCommitted { commitment_signature, roller_key, .. }) = event
        {
            insert_signature(map, commitment_signature, roller_key);
        }
    }
    fields
}

/// A commitment's signature and roller key, lowercase hex like the
/// commitment itself (docs/PROTOCOL-signatures.md). Left out when empty:
/// a battle from before signed commitments then shows what its record holds.
fn insert_signature(map: &mut Map<String, Value>, signature: &[u8], roller_key: &[u8]) {
    for (name, bytes) in [("commitment_signature", signature), ("roller_key", roller_key)] {
        if !bytes.is_empty() {
            map.insert(name.to_owned(), Value::String(hex::encode(bytes)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn struct_round_trip_keeps_integers_and_nesting() {
        let original =
            json!({"type": "attack", "power": 65, "ratio": 0.5, "flags": [true, null, "x"], "inner": {"n": -3}});
        let Value::Object(fields) = &original else { unreachable!("an object literal") };
        assert_eq!(Value::Object(struct_to_json(&json_to_struct(fields))), original);
    }

    fn nested(depth: usize) -> prost_types::Struct {
        let mut value = json!(1);
        for _ in 0..depth {
            value = json!({ "a": value });
        }
        let Value::Object(fields) = value else { unreachable!("an object") };
        json_to_struct(&fields)
    }

    #[test]
    fn structs_deeper_than_the_limit_are_refused_with_the_path() {
        assert_eq!(check_struct("action", &nested(3), 3), Ok(()));
        let error = check_struct("action", &nested(4), 3).expect_err("too deep");
        assert_eq!(error, StructError::TooDeep { path: "action.a.a.a".into(), limit: 3 });
        assert_eq!(error.to_string(), "nests deeper than 3 levels (at action.a.a.a)");
        // Lists are levels too: {"a": [[1]]} is three deep.
        let Value::Object(lists) = json!({"a": [[1]]}) else { unreachable!("an object") };
        assert_eq!(check_struct("x", &json_to_struct(&lists), 3), Ok(()));
        let error = check_struct("x", &json_to_struct(&lists), 2).expect_err("too deep");
        assert_eq!(error.path(), "x.a[0]");
    }

    #[test]
    fn a_check_far_past_the_limit_stops_at_the_limit() {
        // Past what prost decodes (100 levels of messages), as a struct
        // built in memory may be.
        let error = check_struct("deep", &nested(200), 32).expect_err("too deep");
        assert!(matches!(error, StructError::TooDeep { limit: 32, .. }), "{error}");
    }

    #[test]
    fn non_finite_numbers_and_control_characters_are_refused_by_path() {
        let mut action = prost_types::Struct::default();
        let number = |n: f64| prost_types::Value { kind: Some(Kind::NumberValue(n)) };
        let text = |s: &str| prost_types::Value { kind: Some(Kind::StringValue(s.into())) };
        action.fields.insert("damage".into(), number(f64::NAN));
        assert_eq!(
            check_struct("action", &action, 32),
            Err(StructError::NotFinite { path: "action.damage".into(), value: "NaN".into() })
        );
        action.fields.insert("damage".into(), number(4.5));
        let list = prost_types::ListValue { values: vec![number(1.0), number(f64::NEG_INFINITY)] };
        action.fields.insert("rolls".into(), prost_types::Value { kind: Some(Kind::ListValue(list)) });
        let error = check_struct("action", &action, 32).expect_err("infinite");
        assert_eq!(error.to_string(), "action.rolls[1]: must be a finite number, not -inf");
        action.fields.remove("rolls");
        action.fields.insert("note".into(), text("two\nlines"));
        assert_eq!(check_struct("action", &action, 32), Ok(()), "line breaks are text");
        for bad in ["\u{1b}[31mred", "bell\u{7}", "del\u{7f}", "c1\u{9b}"] {
            action.fields.insert("note".into(), text(bad));
            assert_eq!(check_struct("action", &action, 32), Err(StructError::Control { path: "action.note".into() }));
        }
        action.fields.remove("note");
        action.fields.insert("\u{1b}]0;evil\u{7}".into(), number(1.0));
        let error = check_struct("action", &action, 32).expect_err("a key with escapes");
        assert_eq!(error.path(), r#"action["\u{1b}]0;evil\u{7}"]"#, "escaped, never raw");
    }

    #[test]
    fn signed_commitments_show_their_signature_and_key_in_hex() {
        let signed = Event::SeedCommitted(v1::SeedCommitted {
            epoch: 2,
            commitment: "c0".into(),
            commitment_signature: vec![0xab; 64],
            roller_key: vec![0x01, 0xfe],
        });
        assert_eq!(
            event_to_json(&signed),
            json!({"type": "SeedCommitted", "epoch": 2, "commitment": "c0",
                "commitment_signature": "ab".repeat(64), "roller_key": "01fe"})
        );
        let opened = Event::BattleOpened(v1::BattleOpened {
            commitment_signature: vec![0x0f],
            roller_key: vec![0xa0],
            ..Default::default()
        });
        let shown = event_to_json(&opened);
        assert_eq!((&shown["commitment_signature"], &shown["roller_key"]), (&json!("0f"), &json!("a0")));
        // Unsigned (a battle from before signatures): nothing to show.
        let unsigned =
            Event::SeedCommitted(v1::SeedCommitted { epoch: 1, commitment: "c0".into(), ..Default::default() });
        assert_eq!(event_to_json(&unsigned), json!({"type": "SeedCommitted", "epoch": 1, "commitment": "c0"}));
    }

    #[test]
    fn a_record_whose_type_lies_about_its_payload_is_refused() {
        let event = Event::SeedCommitted(v1::SeedCommitted { epoch: 1, commitment: "ab".into(), ..Default::default() });
        let new = new_event(event, String::new());
        let record =
            JournalRecord { version: 3, event_type: "DiceRolled".into(), payload: new.payload, ..Default::default() };
        assert_eq!(
            decode(&record),
            Err(EventError::TypeMismatch { version: 3, declared: "DiceRolled".into(), actual: "SeedCommitted" })
        );
    }
}
