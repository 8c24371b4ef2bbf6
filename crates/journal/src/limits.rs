//! Input limits and the validation of appends and reads against them.
//!
//! Everything is checked before the committer sees a request, so a rejected
//! request has written nothing. Errors name the offending field and the limit.

use serde::Deserialize;

use crate::error::JournalError;
use crate::guard::{self, Checked};

// The fixed limits live with every other service's (battlelog_runtime::limits).
use battlelog_runtime::limits::MAX_PAGE_BYTES;
pub use battlelog_runtime::limits::journal::{
    MAX_EVENT_TYPE_BYTES, MAX_IDEMPOTENCY_KEY_BYTES, MAX_MESSAGE_BYTES, MAX_STREAM_ID_BYTES, MIN_PAYLOAD_BYTES,
};
/// What one stored record weighs in a read page as sent (twice the record, framed).
pub use battlelog_runtime::limits::recorded_event_wire_bytes;

use crate::store::Page;

pub use crate::guard::Budget;

/// What a stored record adds to its payload, at most: the stream id, event
/// id, type and idempotency key at their limits, the version, the time and
/// the framing of each field.
pub const MAX_RECORD_OVERHEAD_BYTES: usize =
    MAX_STREAM_ID_BYTES + 36 + MAX_EVENT_TYPE_BYTES + MAX_IDEMPOTENCY_KEY_BYTES + 64;

/// The configurable limits (see the crate README for defaults and reasons).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// Largest payload of one event.
    pub max_payload_bytes: usize,
    /// Most events in one append.
    pub max_events_per_append: usize,
    /// Largest sum of payload bytes in one append, and in one batch of
    /// appends (`AppendBatch`) altogether.
    pub max_append_bytes: usize,
    /// Most appends in one `AppendBatch`.
    pub max_appends_per_batch: usize,
    /// Most events one read returns (a request's `max_count` 0 means this).
    pub max_read_count: usize,
    /// A read stops adding events before the page, as encoded on the wire,
    /// would pass this many bytes (it always returns at least one event,
    /// which always fits: see [`Limits::validate`]).
    pub max_read_bytes: usize,
    /// Most events one battle may hold, its close included.
    pub max_battle_events: u64,
    /// Most record bytes one battle may hold, its close included.
    pub max_battle_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_payload_bytes: 256 * 1024,
            max_events_per_append: 100,
            max_append_bytes: 1024 * 1024,
            max_appends_per_batch: 64,
            max_read_count: 1000,
            max_read_bytes: MAX_PAGE_BYTES,
            max_battle_events: 100_000,
            max_battle_bytes: 64 * 1024 * 1024,
        }
    }
}

impl Limits {
    /// Checks that the limits make sense together.
    pub fn validate(&self) -> Result<(), String> {
        let positive = [
            ("max_payload_bytes", self.max_payload_bytes),
            ("max_events_per_append", self.max_events_per_append),
            ("max_append_bytes", self.max_append_bytes),
            ("max_appends_per_batch", self.max_appends_per_batch),
            ("max_read_count", self.max_read_count),
            ("max_read_bytes", self.max_read_bytes),
        ];
        for (name, value) in positive {
            if value == 0 {
                return Err(format!("{name} must be at least 1"));
            }
        }
        if self.max_payload_bytes < MIN_PAYLOAD_BYTES {
            return Err(format!(
                "max_payload_bytes ({}) must be at least {MIN_PAYLOAD_BYTES}: the largest event the services write (a resolution of 1000 dice) must fit, or an action could be refused after its dice were journaled",
                self.max_payload_bytes
            ));
        }
        if self.max_payload_bytes > self.max_append_bytes {
            return Err(format!(
                "max_payload_bytes ({}) must not exceed max_append_bytes ({})",
                self.max_payload_bytes, self.max_append_bytes
            ));
        }
        if self.max_append_bytes > MAX_MESSAGE_BYTES / 2 {
            return Err(format!(
                "max_append_bytes must be at most {} (half the gRPC message ceiling)",
                MAX_MESSAGE_BYTES / 2
            ));
        }
        if self.max_read_bytes > MAX_PAGE_BYTES {
            return Err(format!(
                "max_read_bytes must be at most {MAX_PAGE_BYTES} (a page every gRPC client reads at its defaults)"
            ));
        }
        // The first event of a page is sent whatever it weighs: the largest
        // record must fit a page on its own.
        let largest = recorded_event_wire_bytes(self.max_payload_bytes + MAX_RECORD_OVERHEAD_BYTES);
        if largest > self.max_read_bytes {
            return Err(format!(
                "max_read_bytes ({}) must hold one record of max_payload_bytes as sent ({largest})",
                self.max_read_bytes
            ));
        }
        self.budget().validate(self.max_append_bytes)
    }

    /// The room every battle has ([`Budget`]).
    pub fn budget(&self) -> Budget {
        Budget {
            max_events: self.max_battle_events,
            max_bytes: self.max_battle_bytes,
            resolution_bytes: (self.max_payload_bytes + MAX_RECORD_OVERHEAD_BYTES) as u64,
        }
    }

    /// The gRPC decode limit: large enough that an oversized append still
    /// decodes and gets a field-naming INVALID_ARGUMENT instead of a bare
    /// RESOURCE_EXHAUSTED from the transport.
    pub fn grpc_message_limit(&self) -> usize {
        MAX_MESSAGE_BYTES
    }

    /// The count a read returns for a requested `max_count` (0 = the limit).
    pub fn read_count(&self, requested: u32) -> usize {
        match usize::try_from(requested) {
            Ok(0) | Err(_) => self.max_read_count,
            Ok(n) => n.min(self.max_read_count),
        }
    }
}

/// The optimistic-concurrency guard of an append.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExpectedVersion {
    /// No guard.
    Any,
    /// The stream must have no event yet.
    NoStream,
    /// The stream's last event must have exactly this version.
    Exact(u64),
}

impl std::fmt::Display for ExpectedVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Any => f.write_str("any"),
            Self::NoStream => f.write_str("no_stream"),
            Self::Exact(v) => write!(f, "{v}"),
        }
    }
}

/// One event to append, as a caller gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewEvent {
    /// The caller's event type.
    pub event_type: String,
    /// The opaque payload.
    pub payload: Vec<u8>,
    /// Optional idempotency key, unique within the stream.
    pub idempotency_key: Option<String>,
}

/// An append that passed validation ([`validate_append`] is the only way
/// to make one).
#[derive(Debug, Clone)]
pub struct ValidAppend {
    pub(crate) stream_id: String,
    pub(crate) expected: ExpectedVersion,
    pub(crate) events: Vec<NewEvent>,
    /// What the battle guard needs of each event, in order.
    pub(crate) checked: Vec<Checked>,
    /// The room the battle may fill.
    pub(crate) budget: Budget,
}

fn invalid(field: impl Into<String>, message: impl Into<String>) -> JournalError {
    JournalError::InvalidArgument { field: field.into(), message: message.into() }
}

/// Stream ids are battle ids, checked by the one rule for them
/// ([`battlelog_runtime::limits::battle_id_field`]): 1–128 bytes of
/// `[A-Za-z0-9_-]`, because they are one NATS subject token and a sled key
/// prefix ended by 0x00.
pub fn validate_stream_id(field: &str, stream_id: &str) -> Result<(), JournalError> {
    battlelog_runtime::limits::battle_id_field(field, stream_id)
        .map_err(|e| JournalError::InvalidArgument { field: e.field, message: e.violation.to_string() })
}

fn validate_event_type(field: &str, event_type: &str) -> Result<(), JournalError> {
    if event_type.is_empty() {
        return Err(invalid(field, "must not be empty"));
    }
    if event_type.len() > MAX_EVENT_TYPE_BYTES {
        return Err(invalid(field, format!("{} bytes exceeds the limit of {MAX_EVENT_TYPE_BYTES}", event_type.len())));
    }
    if let Some(c) =
        event_type.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '/' | '-')))
    {
        return Err(invalid(field, format!("character {c:?} is not allowed (allowed: A-Z a-z 0-9 _ . : / -)")));
    }
    Ok(())
}

fn validate_idempotency_key(field: &str, key: &str) -> Result<(), JournalError> {
    if key.len() > MAX_IDEMPOTENCY_KEY_BYTES {
        return Err(invalid(field, format!("{} bytes exceeds the limit of {MAX_IDEMPOTENCY_KEY_BYTES}", key.len())));
    }
    if let Some(c) = key.chars().find(|c| !c.is_ascii_graphic()) {
        return Err(invalid(field, format!("character {c:?} is not allowed (printable ASCII only)")));
    }
    Ok(())
}

/// Validates an append against `limits`; nothing is written unless this passes.
/// Checks a batch of appends as a whole (`AppendBatch`): 1 to
/// `max_appends_per_batch` appends whose payloads weigh at most
/// `max_append_bytes` together, so that a batch holds no more than one
/// append may. Each append is checked on its own after this
/// ([`validate_append`]), and its errors are its own.
pub fn validate_batch(limits: &Limits, count: usize, payload_bytes: usize) -> Result<(), JournalError> {
    if count == 0 {
        return Err(invalid("appends", "at least one append is required"));
    }
    if count > limits.max_appends_per_batch {
        return Err(invalid(
            "appends",
            format!("{count} appends exceeds max_appends_per_batch = {}", limits.max_appends_per_batch),
        ));
    }
    if payload_bytes > limits.max_append_bytes {
        return Err(invalid(
            "appends",
            format!(
                "{payload_bytes} payload bytes in one batch exceeds max_append_bytes = {}",
                limits.max_append_bytes
            ),
        ));
    }
    Ok(())
}

pub fn validate_append(
    limits: &Limits,
    stream_id: String,
    expected: ExpectedVersion,
    events: Vec<NewEvent>,
) -> Result<ValidAppend, JournalError> {
    validate_stream_id("stream_id", &stream_id)?;
    if events.is_empty() {
        return Err(invalid("events", "at least one event is required"));
    }
    if events.len() > limits.max_events_per_append {
        return Err(invalid(
            "events",
            format!("{} events exceeds max_events_per_append = {}", events.len(), limits.max_events_per_append),
        ));
    }
    let mut total = 0usize;
    let mut keys: Vec<(&str, usize)> = Vec::new();
    for (i, event) in events.iter().enumerate() {
        validate_event_type(&format!("events[{i}].event_type"), &event.event_type)?;
        if event.payload.len() > limits.max_payload_bytes {
            return Err(invalid(
                format!("events[{i}].payload"),
                format!("{} bytes exceeds max_payload_bytes = {}", event.payload.len(), limits.max_payload_bytes),
            ));
        }
        total += event.payload.len();
        if let Some(key) = &event.idempotency_key {
            let field = format!("events[{i}].idempotency_key");
            if key.is_empty() {
                return Err(invalid(field, "must not be empty when given"));
            }
            validate_idempotency_key(&field, key)?;
            if let Some((_, j)) = keys.iter().find(|(k, _)| k == key) {
                return Err(invalid(field, format!("repeats events[{j}].idempotency_key")));
            }
            keys.push((key, i));
        }
    }
    if total > limits.max_append_bytes {
        return Err(invalid(
            "events",
            format!("{total} payload bytes in total exceeds max_append_bytes = {}", limits.max_append_bytes),
        ));
    }
    // Payloads are decoded here, on the caller's task, so that the
    // committer thread (the journal's one writer) only compares numbers.
    let checked = events
        .iter()
        .enumerate()
        .map(|(i, e)| guard::inspect(i, &e.event_type, &e.payload))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|v| JournalError::EventRefused {
            stream_id: stream_id.clone(),
            field: v.field,
            rule: v.rule,
            message: v.message,
        })?;
    Ok(ValidAppend { stream_id, expected, events, checked, budget: limits.budget() })
}

/// A read page of at most `max_count` events and `max_bytes` as the page
/// will be sent ([`recorded_event_wire_bytes`] of each): how the journal asks
/// a store, which knows nothing of the wire.
pub fn wire_page(max_count: usize, max_bytes: usize) -> Page {
    Page { max_count, max_bytes, weigh: recorded_event_wire_bytes }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A valid `BattleClosed` of exactly `payload` bytes (5 to 129; 2 below),
    /// so that only the limit under test can refuse it.
    fn event(payload: usize) -> NewEvent {
        use battlelog_proto::v1::{BattleClosed, battle_event::Event};
        let reason = "r".repeat(payload.saturating_sub(4));
        let event = Event::BattleClosed(BattleClosed { by: String::new(), reason, credential: None });
        let new = battlelog_proto::battle::new_event(event, String::new());
        assert!(payload < 5 || new.payload.len() == payload, "no BattleClosed of {payload} bytes");
        NewEvent { event_type: new.event_type, payload: new.payload, idempotency_key: None }
    }

    fn field_of(err: JournalError) -> String {
        match err {
            JournalError::InvalidArgument { field, .. } => field,
            other => panic!("expected InvalidArgument, got {other:?}"),
        }
    }

    #[test]
    fn stream_ids_are_checked() {
        let limits = Limits::default();
        for bad in ["", "a.b", "a b", "a*", "é", &"x".repeat(129)] {
            let err = validate_append(&limits, bad.into(), ExpectedVersion::Any, vec![event(1)]).unwrap_err();
            assert_eq!(field_of(err), "stream_id", "{bad:?}");
        }
        assert!(validate_append(&limits, "battle-1_A".into(), ExpectedVersion::Any, vec![event(5)]).is_ok());
    }

    #[test]
    fn sizes_and_counts_are_checked() {
        // Validation is not asked here: the checks hold for any numbers.
        let limits =
            Limits { max_payload_bytes: 10, max_events_per_append: 3, max_append_bytes: 20, ..Limits::default() };
        let e = |events| validate_append(&limits, "s".into(), ExpectedVersion::Any, events).map(|_| ());
        assert_eq!(field_of(e(vec![]).unwrap_err()), "events");
        assert_eq!(field_of(e(vec![event(1), event(11)]).unwrap_err()), "events[1].payload");
        assert_eq!(field_of(e(vec![event(1); 4]).unwrap_err()), "events");
        assert_eq!(field_of(e(vec![event(10), event(10), event(1)]).unwrap_err()), "events");
        assert!(e(vec![event(10), event(10)]).is_ok());
    }

    #[test]
    fn keys_and_types_are_checked() {
        let limits = Limits::default();
        let keyed = |k: &str| NewEvent { idempotency_key: Some(k.into()), ..event(5) };
        let e = |events| validate_append(&limits, "s".into(), ExpectedVersion::Any, events).map(|_| ());
        assert_eq!(field_of(e(vec![keyed("a"), keyed("a")]).unwrap_err()), "events[1].idempotency_key");
        assert_eq!(field_of(e(vec![keyed("")]).unwrap_err()), "events[0].idempotency_key");
        assert_eq!(field_of(e(vec![keyed("a b")]).unwrap_err()), "events[0].idempotency_key");
        let typed = NewEvent { event_type: String::new(), ..event(1) };
        assert_eq!(field_of(e(vec![event(1), typed]).unwrap_err()), "events[1].event_type");
        assert!(e(vec![keyed("req-1/0"), keyed("req-1/1")]).is_ok());
    }

    #[test]
    fn limits_are_checked_at_their_edges() {
        let ok = |limits: Limits| limits.validate();
        assert_eq!(ok(Limits { max_payload_bytes: MIN_PAYLOAD_BYTES, ..Limits::default() }), Ok(()));
        let err = ok(Limits { max_payload_bytes: MIN_PAYLOAD_BYTES - 1, ..Limits::default() }).unwrap_err();
        assert!(err.contains("max_payload_bytes") && err.contains(&MIN_PAYLOAD_BYTES.to_string()), "{err}");
        // A page: at most MAX_PAGE_BYTES, at least one largest record as sent.
        assert_eq!(ok(Limits { max_read_bytes: MAX_PAGE_BYTES, ..Limits::default() }), Ok(()));
        assert!(
            ok(Limits { max_read_bytes: MAX_PAGE_BYTES + 1, ..Limits::default() })
                .unwrap_err()
                .contains("max_read_bytes")
        );
        let largest = recorded_event_wire_bytes(Limits::default().max_payload_bytes + MAX_RECORD_OVERHEAD_BYTES);
        assert_eq!(ok(Limits { max_read_bytes: largest, ..Limits::default() }), Ok(()));
        assert!(
            ok(Limits { max_read_bytes: largest - 1, ..Limits::default() }).unwrap_err().contains("max_read_bytes")
        );
        // A battle: at least an opening append, a roll's resolution and the close.
        let least = guard::CLOSING_RESERVE_BYTES + (1024 * 1024 + 256 * 1024 + MAX_RECORD_OVERHEAD_BYTES) as u64;
        assert_eq!(ok(Limits { max_battle_bytes: least, ..Limits::default() }), Ok(()));
        assert!(
            ok(Limits { max_battle_bytes: least - 1, ..Limits::default() }).unwrap_err().contains("max_battle_bytes")
        );
        assert_eq!(ok(Limits { max_battle_events: 5, ..Limits::default() }), Ok(()));
        assert!(ok(Limits { max_battle_events: 4, ..Limits::default() }).unwrap_err().contains("max_battle_events"));
    }

    #[test]
    fn default_limits_are_consistent() {
        assert_eq!(Limits::default().validate(), Ok(()));
        assert!(Limits { max_payload_bytes: 0, ..Limits::default() }.validate().is_err());
        assert_eq!(Limits::default().read_count(0), 1000);
        assert_eq!(Limits::default().read_count(5), 5);
        assert_eq!(Limits::default().read_count(5000), 1000);
    }
}
