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

use battlelog_feed::Hash;
use battlelog_feed::event::EventClaims;
use battlelog_feed::log::LogMessage;

use crate::store::{BattleKey, Entry, now_ms};

/// The `type` of every delivery's body.
pub const BODY_TYPE: &str = "battlelog.event";

/// A message that is not a committed event of the journal's fan-out.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MessageError {
    #[error("subject {0:?} is not <prefix>.<tenant>.<battle>")]
    Subject(String),
    #[error("payload is not a journal record: {0}")]
    Record(String),
    #[error("the record's stream {record:?} is not the subject's battle {subject:?}")]
    Battle { record: String, subject: String },
    /// Its headers or its framing are not the feed's format (battlelog_feed).
    #[error("{0}")]
    Frame(#[from] battlelog_feed::FrameError),
}

/// The tenant and battle of `subject` under `prefix`.
pub use battlelog_feed::subject::parts as subject_parts;

/// RFC 3339 in UTC with microseconds, from microseconds since the epoch.
fn rfc3339(micros: i64) -> Value {
    let time = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(micros) * 1_000)
        .ok()
        .and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok());
    time.map_or(Value::Null, Value::String)
}

/// One record as a message of the feed carries it, not yet checked
/// against its battle's chain (crate::feed): what the message claims.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    /// The subject's tenant and battle.
    pub tenant: String,
    pub battle: String,
    /// The exact record bytes (docs/protocol.md §4: what is hashed).
    pub record: Vec<u8>,
    /// The same, decoded.
    pub decoded: JournalRecord,
    /// The hash the message claims for it, h(version).
    pub claimed_hash: Option<Hash>,
    /// The global position the message claims for it.
    pub claimed_position: Option<u64>,
}

impl Received {
    pub fn version(&self) -> u64 {
        self.decoded.version
    }

    pub fn battle_key(&self) -> BattleKey {
        BattleKey { tenant: self.tenant.clone(), battle: self.battle.clone() }
    }

    /// Its delivery, with the hash and position its check found.
    pub fn entry(&self, hash: Option<&Hash>, position: Option<u64>) -> Entry {
        record_entry(&self.tenant, &self.battle, &self.decoded, position, hash.map(hex::encode))
    }
}

/// The records of one message: a record of the sled journal's fan-out, or
/// the records of one append in the JetStream journal's own log (its
/// message at stream `sequence`, with a `Battlelog-First-Version` header;
/// battlelog_feed::log), in version order.
pub fn received(
    prefix: &str,
    subject: &str,
    headers: Option<&async_nats::HeaderMap>,
    payload: &[u8],
    sequence: u64,
) -> Result<Vec<Received>, MessageError> {
    use battlelog_feed::position::position;
    let header = |name: &str| headers.and_then(|h| h.get(name)).map(|v| v.as_str().to_owned());
    if header(battlelog_feed::headers::FIRST_VERSION).is_some() {
        let message = LogMessage::decode(header, payload)?;
        message
            .records
            .into_iter()
            .enumerate()
            .map(|(index, (hash, bytes))| {
                received_record(prefix, subject, bytes, Some(position(sequence, index)), Some(hash))
            })
            .collect()
    } else {
        let claims = EventClaims::decode(header)?;
        Ok(vec![received_record(prefix, subject, payload.to_vec(), claims.position, claims.hash)?])
    }
}

/// The delivery of one fan-out message (the sled journal's), as it claims
/// to be: unchecked.
pub fn entry(
    prefix: &str,
    subject: &str,
    headers: Option<&async_nats::HeaderMap>,
    payload: &[u8],
) -> Result<Entry, MessageError> {
    let mut records = received(prefix, subject, headers, payload, 0)?;
    let record = records.pop().ok_or_else(|| MessageError::Record("no record".into()))?;
    Ok(record.entry(record.claimed_hash.as_ref(), record.claimed_position))
}

/// One record's exact bytes, published on `subject`.
fn received_record(
    prefix: &str,
    subject: &str,
    record: Vec<u8>,
    claimed_position: Option<u64>,
    claimed_hash: Option<Hash>,
) -> Result<Received, MessageError> {
    let (tenant, battle) = subject_parts(prefix, subject).ok_or_else(|| MessageError::Subject(subject.to_owned()))?;
    let decoded = JournalRecord::decode(record.as_slice()).map_err(|e| MessageError::Record(e.to_string()))?;
    if decoded.stream_id != battle {
        return Err(MessageError::Battle { record: decoded.stream_id, subject: battle.to_owned() });
    }
    Ok(Received {
        tenant: tenant.to_owned(),
        battle: battle.to_owned(),
        record,
        decoded,
        claimed_hash,
        claimed_position,
    })
}

/// The delivery of one record.
fn record_entry(
    tenant: &str,
    battle: &str,
    record: &JournalRecord,
    position: Option<u64>,
    hash: Option<String>,
) -> Entry {
    let (event, event_error) = match battlelog_proto::battle::decode(record) {
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
    Entry {
        tenant: tenant.to_owned(),
        battle: battle.to_owned(),
        version: record.version,
        webhook_id: record.event_id.clone(),
        event_type: record.event_type.clone(),
        body: body.to_string(),
        received_at_ms: now_ms(),
        attempts: 0,
        last_error: None,
        parked_at_ms: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use battlelog_feed::headers;
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
        headers.insert(headers::HASH, "ab".repeat(32).as_str());
        let delivery =
            entry("battlelog.events", "battlelog.events.forum-a.b1", Some(&headers), &record.encode_to_vec())
                .expect("an event");
        assert_eq!((delivery.tenant.as_str(), delivery.battle.as_str(), delivery.version), ("forum-a", "b1", 7));
        assert_eq!(delivery.webhook_id, "evt-7");
        let body: Value = serde_json::from_str(&delivery.body).expect("JSON");
        assert_eq!(body["type"], BODY_TYPE);
        assert_eq!(body["data"]["global_position"], 42);
        assert_eq!(body["data"]["hash"], "ab".repeat(32));
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
        headers.insert(headers::HASH, "ab");
        assert!(
            matches!(
                entry("battlelog.events", "battlelog.events.forum-a.b1", Some(&headers), &record.encode_to_vec()),
                Err(MessageError::Frame(battlelog_feed::FrameError::BadHeader { name: headers::HASH, .. }))
            ),
            "a hash header that is no hash is no event"
        );
    }
}
