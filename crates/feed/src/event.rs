//! An event message of the sled journal's fan-out: the payload is the
//! record's exact bytes; the headers carry what a consumer that does not
//! decode needs, and `Nats-Msg-Id` = the event id so that JetStream drops a
//! republish (after a crash, a lost acknowledgement) within its window.

use crate::{FrameError, Hash, hash, headers, number};

/// The headers of one event message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventHeaders {
    /// The event id (`Nats-Msg-Id`).
    pub event_id: String,
    /// The stream (battle).
    pub stream_id: String,
    /// Its version in the stream.
    pub version: u64,
    /// Its position in the global log.
    pub position: u64,
    /// Its type.
    pub event_type: String,
    /// h(version).
    pub hash: Hash,
}

impl EventHeaders {
    /// The headers as (name, value) pairs, in a fixed order.
    pub fn encode(&self) -> Vec<(&'static str, String)> {
        vec![
            (headers::MSG_ID, self.event_id.clone()),
            (headers::STREAM, self.stream_id.clone()),
            (headers::VERSION, self.version.to_string()),
            (headers::POSITION, self.position.to_string()),
            (headers::EVENT_TYPE, self.event_type.clone()),
            (headers::HASH, hex::encode(self.hash)),
        ]
    }

    /// Decodes every header; the error names the one missing or malformed.
    pub fn decode(header: impl Fn(&str) -> Option<String>) -> Result<Self, FrameError> {
        let get = |name| crate::require(&header, name);
        Ok(Self {
            event_id: get(headers::MSG_ID)?,
            stream_id: get(headers::STREAM)?,
            version: number(headers::VERSION, &get(headers::VERSION)?)?,
            position: number(headers::POSITION, &get(headers::POSITION)?)?,
            event_type: get(headers::EVENT_TYPE)?,
            hash: hash(headers::HASH, &get(headers::HASH)?)?,
        })
    }
}

/// What an event message claims of its record beyond the record itself:
/// its global position and h(version), each `None` when the header is
/// absent (a consumer checks them, it does not trust them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EventClaims {
    /// `Battlelog-Global-Position`.
    pub position: Option<u64>,
    /// `Battlelog-Hash`.
    pub hash: Option<Hash>,
}

impl EventClaims {
    /// Reads the claims; a header that is there but malformed is an error
    /// naming it.
    pub fn decode(header: impl Fn(&str) -> Option<String>) -> Result<Self, FrameError> {
        Ok(Self {
            position: header(headers::POSITION).map(|p| number(headers::POSITION, &p)).transpose()?,
            hash: header(headers::HASH).map(|h| hash(headers::HASH, &h)).transpose()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn lookup<'a>(pairs: &'a [(&'static str, String)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| v.clone())
    }

    fn sample() -> EventHeaders {
        EventHeaders {
            event_id: "evt-1".into(),
            stream_id: "b1".into(),
            version: 7,
            position: 42,
            event_type: "DiceRolled".into(),
            hash: [0xab; 32],
        }
    }

    #[test]
    fn event_headers_round_trip_under_the_documented_names() {
        let pairs = sample().encode();
        assert_eq!(EventHeaders::decode(lookup(&pairs)), Ok(sample()));
        let names: Vec<&str> = pairs.iter().map(|(n, _)| *n).collect();
        assert_eq!(
            names,
            [
                "Nats-Msg-Id",
                "Battlelog-Stream",
                "Battlelog-Version",
                "Battlelog-Global-Position",
                "Battlelog-Event-Type",
                "Battlelog-Hash"
            ]
        );
        assert_eq!(lookup(&pairs)("Battlelog-Hash"), Some("ab".repeat(32)));
        let claims = EventClaims::decode(lookup(&pairs)).unwrap();
        assert_eq!(claims, EventClaims { position: Some(42), hash: Some([0xab; 32]) });
        assert_eq!(EventClaims::decode(|_| None), Ok(EventClaims::default()), "claims are optional");
    }

    #[test]
    fn malformed_event_headers_are_refused_by_name() {
        let without = |name: &str| -> Vec<(&'static str, String)> {
            sample().encode().into_iter().filter(|(n, _)| *n != name).collect()
        };
        let with = |name: &'static str, value: &str| -> Vec<(&'static str, String)> {
            let mut pairs = without(name);
            pairs.push((name, value.to_owned()));
            pairs
        };
        assert_eq!(
            EventHeaders::decode(lookup(&without(headers::VERSION))),
            Err(FrameError::MissingHeader("Battlelog-Version"))
        );
        let error = EventHeaders::decode(lookup(&with(headers::POSITION, "-1"))).unwrap_err();
        assert!(error.to_string().starts_with("header Battlelog-Global-Position: \"-1\" is not a number"), "{error}");
        for bad_hash in ["ab", "zz".repeat(32).as_str(), &"ab".repeat(33)] {
            let pairs = with(headers::HASH, bad_hash);
            let error = EventHeaders::decode(lookup(&pairs)).unwrap_err();
            assert!(error.to_string().starts_with("header Battlelog-Hash: not 32 bytes of hex"), "{error}");
            assert_eq!(EventClaims::decode(lookup(&pairs)).unwrap_err(), error);
        }
    }
}
