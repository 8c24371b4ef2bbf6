//! A committed event as the journal's fan-out carries it (subject
//! `<prefix>.<tenant>.<battle>`, payload the exact record bytes, headers
//! `Battlelog-*`) — or as the JetStream journal's own log does (one message
//! per append, its records framed with their hashes) — turned into the JSON
//! body a tenant's endpoint receives:
//!
//! ```json
//! {"type": "battlelog.event", "timestamp": "2026-12-01T21:00:00.123456Z",
//!  "data": {"tenant": "forum-a", "battle_id": "…", "version": 3,
//!           "global_position": 17, "event_id": "…", "event_type": "DiceRolled",
//!           "hash": "<hex h(version)>", "recorded_at": "2026-12-01T21:00:00.123456Z",
//!           "recorded_at_unix_micros": 1796158800123456, "event": {…}}}
//! ```
//!
//! `event` is the event as exports show it (battlelog_proto::battle::
//! event_to_json); a record that is not a battle event is still delivered,
//! with `event: null` and why in `event_error`, never dropped.

use battlelog_proto::v1::JournalRecord;
use prost::Message;
use serde_json::{Value, json};

use crate::store::{Entry, now_ms};

/// The `type` of every delivery's body.
pub const BODY_TYPE: &str = "battlelog.event";

/// Header names of the journal's fan-out (battlelog_journal::nats::headers).
pub mod headers {
    pub const POSITION: &str = "Battlelog-Global-Position";
    pub const HASH: &str = "Battlelog-Hash";
}

/// A message that is not a committed event of the journal's fan-out.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MessageError {
    #[error("subject {0:?} is not <prefix>.<tenant>.<battle>")]
    Subject(String),
    #[error("payload is not a journal record: {0}")]
    Record(String),
    #[error("the record's stream {record:?} is not the subject's battle {subject:?}")]
    Battle { record: String, subject: String },
}

/// The tenant and battle of `subject` under `prefix`.
pub fn subject_parts<'a>(prefix: &str, subject: &'a str) -> Option<(&'a str, &'a str)> {
    let rest = subject.strip_prefix(prefix)?.strip_prefix('.')?;
    let (tenant, battle) = rest.split_once('.')?;
    (!tenant.is_empty() && !battle.is_empty() && !battle.contains('.')).then_some((tenant, battle))
}

/// RFC 3339 in UTC with microseconds, from microseconds since the epoch.
fn rfc3339(micros: i64) -> Value {
    let time = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(micros) * 1_000)
        .ok()
        .and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok());
    time.map_or(Value::Null, Value::String)
}

/// The deliveries of one message: a record of the sled journal's fan-out,
/// or the records of one append in the JetStream journal's own log (its
/// message at stream `sequence`, with a `Battlelog-First-Version` header;
/// battlelog_journal::store::jetstream), in version order.
pub fn entries(
    prefix: &str,
    subject: &str,
    headers: Option<&async_nats::HeaderMap>,
    payload: &[u8],
    sequence: u64,
) -> Result<Vec<Entry>, MessageError> {
    use battlelog_journal::store::jetstream::{JournalMessage, headers as log_headers, position};
    match headers.filter(|h| h.get(log_headers::FIRST_VERSION).is_some()) {
        Some(found) => {
            let message = JournalMessage::decode(found, payload).map_err(MessageError::Record)?;
            message
                .records
                .iter()
                .enumerate()
                .map(|(index, (hash, bytes))| {
                    record_entry(prefix, subject, bytes, Some(position(sequence, index)), Some(hex::encode(hash)))
                })
                .collect()
        }
        None => {
            let header = |name: &str| headers.and_then(|h| h.get(name)).map(|v| v.as_str().to_owned());
            let position = header(headers::POSITION).and_then(|p| p.parse::<u64>().ok());
            Ok(vec![record_entry(prefix, subject, payload, position, header(headers::HASH))?])
        }
    }
}

/// The delivery of one fan-out message (the sled journal's).
pub fn entry(
    prefix: &str,
    subject: &str,
    headers: Option<&async_nats::HeaderMap>,
    payload: &[u8],
) -> Result<Entry, MessageError> {
    let header = |name: &str| headers.and_then(|h| h.get(name)).map(|v| v.as_str().to_owned());
    let position = header(headers::POSITION).and_then(|p| p.parse::<u64>().ok());
    record_entry(prefix, subject, payload, position, header(headers::HASH))
}

/// The delivery of one record's exact bytes, published on `subject`.
fn record_entry(
    prefix: &str,
    subject: &str,
    payload: &[u8],
    position: Option<u64>,
    hash: Option<String>,
) -> Result<Entry, MessageError> {
    let (tenant, battle) = subject_parts(prefix, subject).ok_or_else(|| MessageError::Subject(subject.to_owned()))?;
    let record = JournalRecord::decode(payload).map_err(|e| MessageError::Record(e.to_string()))?;
    if record.stream_id != battle {
        return Err(MessageError::Battle { record: record.stream_id, subject: battle.to_owned() });
    }
    let (event, event_error) = match battlelog_proto::battle::decode(&record) {
        Ok(event) => (battlelog_proto::battle::event_to_json(&event), None),
        Err(e) => (Value::Null, Some(e.to_string())),
    };
    let recorded_at = rfc3339(record.recorded_at_unix_micros);
    let mut data = json!({
        "tenant": tenant,
        "battle_id": battle,
        "version": record.version,
        "global_position": position,
        "event_id": record.event_id,
        "event_type": record.event_type,
        "hash": hash,
        "recorded_at": recorded_at,
        "recorded_at_unix_micros": record.recorded_at_unix_micros,
        "event": event,
    });
    if let Some(error) = event_error {
        data["event_error"] = Value::String(error);
    }
    let body = json!({"type": BODY_TYPE, "timestamp": recorded_at, "data": data});
    Ok(Entry {
        tenant: tenant.to_owned(),
        battle: battle.to_owned(),
        version: record.version,
        webhook_id: record.event_id,
        event_type: record.event_type,
        body: body.to_string(),
        received_at_ms: now_ms(),
        attempts: 0,
        last_error: None,
        parked_at_ms: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use battlelog_proto::v1::{BattleClosed, battle_event::Event};

    #[test]
    fn a_record_becomes_its_body_with_the_subjects_tenant() {
        let new = battlelog_proto::battle::new_event(
            Event::BattleClosed(BattleClosed { by: "judge".into(), reason: "done".into(), ..Default::default() }),
            "k".into(),
        );
        let record = JournalRecord {
            stream_id: "b1".into(),
            version: 7,
            event_id: "evt-7".into(),
            event_type: new.event_type,
            recorded_at_unix_micros: 1_000_000_000_123_456,
            idempotency_key: "k".into(),
            payload: new.payload,
        };
        let mut headers = async_nats::HeaderMap::new();
        headers.insert(headers::POSITION, "42");
        headers.insert(headers::HASH, "ab");
        let delivery =
            entry("battlelog.events", "battlelog.events.forum-a.b1", Some(&headers), &record.encode_to_vec())
                .expect("an event");
        assert_eq!((delivery.tenant.as_str(), delivery.battle.as_str(), delivery.version), ("forum-a", "b1", 7));
        assert_eq!(delivery.webhook_id, "evt-7");
        let body: Value = serde_json::from_str(&delivery.body).expect("JSON");
        assert_eq!(body["type"], BODY_TYPE);
        assert_eq!(body["data"]["global_position"], 42);
        assert_eq!(body["data"]["hash"], "ab");
        assert_eq!(body["data"]["recorded_at"], "2001-09-09T01:46:40.123456Z");
        assert_eq!(body["data"]["event"]["type"], "BattleClosed");
        assert_eq!(body["data"]["event"]["reason"], "done");

        let other = JournalRecord { payload: vec![0xff], ..record.clone() };
        let delivery = entry("battlelog.events", "battlelog.events.forum-a.b1", None, &other.encode_to_vec()).unwrap();
        let body: Value = serde_json::from_str(&delivery.body).unwrap();
        assert_eq!(body["data"]["event"], Value::Null);
        assert!(body["data"]["event_error"].is_string());

        assert_eq!(
            entry("battlelog.events", "battlelog.events.forum-a.b2", None, &record.encode_to_vec()),
            Err(MessageError::Battle { record: "b1".into(), subject: "b2".into() })
        );
        assert!(matches!(entry("battlelog.events", "elsewhere.a.b1", None, &[]), Err(MessageError::Subject(_))));
    }
}
