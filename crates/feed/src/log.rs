//! An append message of the JetStream journal's own log: one message per
//! planned append (atomic as one message is), on the battle's subject.
//!
//! - Payload: for each record, `h(version)` (32 bytes) ‖ `u32_be(len)` ‖
//!   the exact record bytes (docs/protocol.md §4).
//! - Headers: the stream id, the first version, the record count,
//!   `h(last version)` and the battle state after it (hex; opaque here), so
//!   that a stream's head is its subject's last message's headers.
//! - `Nats-Msg-Id`: `<stream id>:<first version>:<hex h(first version)>`,
//!   unique per plan (the hash covers the chain before it and the record
//!   bytes): a retried publish is deduplicated, a different plan for the
//!   same version is not.
//!
//! Decoding checks the framing only; whether the records chain is the
//! journal's check (and every consumer's that cares).

use crate::{FrameError, Hash, hash, headers, number, require};

/// Payload bytes a record adds besides its own: its hash and length.
pub const RECORD_FRAMING: usize = 32 + 4;

/// One append message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogMessage {
    /// The battle.
    pub stream_id: String,
    /// The version of its first record.
    pub first_version: u64,
    /// h(version) and the exact bytes of each record.
    pub records: Vec<(Hash, Vec<u8>)>,
    /// h(last version), as the headers say.
    pub last_hash: Hash,
    /// The battle state after the last record, as the headers say (the
    /// journal's encoding; absent in messages written before it).
    pub state: Option<Vec<u8>>,
}

impl LogMessage {
    /// The version of its last record.
    pub fn last_version(&self) -> u64 {
        self.first_version + self.records.len().saturating_sub(1) as u64
    }

    /// `<stream id>:<first version>:<hex h(first version)>`; `None` for a
    /// message without records (which is never published).
    pub fn msg_id(&self) -> Option<String> {
        let (first_hash, _) = self.records.first()?;
        Some(format!("{}:{}:{}", self.stream_id, self.first_version, hex::encode(first_hash)))
    }

    /// Its battlelog headers as (name, value) pairs (not the NATS ones:
    /// those depend on where it is appended).
    pub fn headers(&self) -> Vec<(&'static str, String)> {
        let mut out = vec![
            (headers::STREAM, self.stream_id.clone()),
            (headers::FIRST_VERSION, self.first_version.to_string()),
            (headers::COUNT, self.records.len().to_string()),
            (headers::LAST_HASH, hex::encode(self.last_hash)),
        ];
        if let Some(state) = &self.state {
            out.push((headers::STATE, hex::encode(state)));
        }
        out
    }

    /// Its payload: the records, framed.
    pub fn payload(&self) -> Vec<u8> {
        let size = self.records.iter().map(|(_, bytes)| RECORD_FRAMING + bytes.len()).sum();
        let mut out = Vec::with_capacity(size);
        for (hash, bytes) in &self.records {
            out.extend_from_slice(hash);
            // A record is bounded by the journal's limits (MiBs), far below
            // what a u32 holds.
            out.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
            out.extend_from_slice(bytes);
        }
        out
    }

    /// Decodes a message; the error names the header or the part of the
    /// payload that is wrong.
    pub fn decode(header: impl Fn(&str) -> Option<String>, payload: &[u8]) -> Result<Self, FrameError> {
        let span = LogSpan::decode(&header)?.ok_or(FrameError::MissingHeader(headers::FIRST_VERSION))?;
        let last_hash = hash(headers::LAST_HASH, &require(&header, headers::LAST_HASH)?)?;
        let state = header(headers::STATE)
            .map(|text| {
                hex::decode(text)
                    .map_err(|e| FrameError::BadHeader { name: headers::STATE, problem: format!("not hex: {e}") })
            })
            .transpose()?;
        let records = decode_payload(payload)?;
        if records.len() != span.count {
            return Err(FrameError::CountMismatch { found: records.len(), count: span.count });
        }
        Ok(Self { stream_id: span.stream_id, first_version: span.first_version, records, last_hash, state })
    }
}

/// Which versions of which battle an append message holds, read from its
/// headers alone (a consumer that reads the records from the journal needs
/// no more).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogSpan {
    /// The battle.
    pub stream_id: String,
    /// The version of the first record.
    pub first_version: u64,
    /// How many records (at least one).
    pub count: usize,
}

impl LogSpan {
    /// `None` when the message is not an append message (it has no
    /// [`headers::FIRST_VERSION`]); an error naming the header when it is
    /// one but its headers are wrong.
    pub fn decode(header: &impl Fn(&str) -> Option<String>) -> Result<Option<Self>, FrameError> {
        let Some(first) = header(headers::FIRST_VERSION) else { return Ok(None) };
        let first_version: u64 = number(headers::FIRST_VERSION, &first)?;
        let stream_id = require(header, headers::STREAM)?;
        let count: usize = number(headers::COUNT, &require(header, headers::COUNT)?)?;
        if count == 0 {
            return Err(FrameError::BadHeader {
                name: headers::COUNT,
                problem: "0, where a message holds at least one record".into(),
            });
        }
        if first_version.checked_add(count as u64 - 1).is_none() {
            return Err(FrameError::BadHeader {
                name: headers::COUNT,
                problem: format!("{count} records from version {first_version} overflow a version"),
            });
        }
        Ok(Some(Self { stream_id, first_version, count }))
    }

    /// The version of the last record.
    pub fn last_version(&self) -> u64 {
        self.first_version + (self.count as u64 - 1)
    }
}

fn decode_payload(mut payload: &[u8]) -> Result<Vec<(Hash, Vec<u8>)>, FrameError> {
    let mut out = Vec::new();
    while !payload.is_empty() {
        let index = out.len();
        let Some((framing, rest)) = payload.split_first_chunk::<RECORD_FRAMING>() else {
            return Err(FrameError::TruncatedFraming { index, left: payload.len(), needed: RECORD_FRAMING });
        };
        let (hash, len) = framing.split_at(32);
        let hash: Hash = hash.try_into().unwrap_or([0; 32]);
        let len = u32::from_be_bytes([len[0], len[1], len[2], len[3]]) as usize;
        let Some((record, rest)) = rest.split_at_checked(len) else {
            return Err(FrameError::TruncatedRecord { index, len, left: rest.len() });
        };
        out.push((hash, record.to_vec()));
        payload = rest;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup<'a>(pairs: &'a [(&'static str, String)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| v.clone())
    }

    type Pairs = Vec<(&'static str, String)>;

    fn sample(state: Option<Vec<u8>>) -> LogMessage {
        LogMessage {
            stream_id: "b1".into(),
            first_version: 5,
            records: vec![([1; 32], b"abc".to_vec()), ([2; 32], Vec::new()), ([3; 32], vec![9; 300])],
            last_hash: [3; 32],
            state,
        }
    }

    #[test]
    fn append_messages_round_trip_with_and_without_a_state() {
        for message in [sample(Some(vec![0, 1, 0xfe])), sample(None)] {
            let headers = message.headers();
            let payload = message.payload();
            assert_eq!(LogMessage::decode(lookup(&headers), &payload), Ok(message.clone()));
            assert_eq!(message.last_version(), 7);
            let span = LogSpan::decode(&lookup(&headers)).unwrap().unwrap();
            assert_eq!((span.stream_id.as_str(), span.first_version, span.count, span.last_version()), ("b1", 5, 3, 7));
        }
        // The framing written out by hand: hash, u32 big-endian length, bytes.
        let one = LogMessage { records: vec![([7; 32], b"xy".to_vec())], ..sample(None) };
        let mut expected = vec![7u8; 32];
        expected.extend_from_slice(&[0, 0, 0, 2, b'x', b'y']);
        assert_eq!(one.payload(), expected);
        assert_eq!(one.msg_id().as_deref(), Some(format!("b1:5:{}", "07".repeat(32)).as_str()));
        assert_eq!(LogMessage { records: Vec::new(), ..sample(None) }.msg_id(), None);
    }

    #[test]
    fn an_event_message_is_no_append_message() {
        let event = [("Battlelog-Stream", "b1".to_owned()), ("Battlelog-Version", "3".to_owned())];
        assert_eq!(LogSpan::decode(&lookup(&event)), Ok(None));
        assert_eq!(LogMessage::decode(lookup(&event), b""), Err(FrameError::MissingHeader("Battlelog-First-Version")));
    }

    #[test]
    fn malformed_append_messages_are_refused_naming_what_is_wrong() {
        let message = sample(Some(vec![1, 2]));
        let payload = message.payload();
        let replaced = |name: &'static str, value: Option<&str>| -> Vec<(&'static str, String)> {
            let mut pairs: Vec<_> = message.headers().into_iter().filter(|(n, _)| *n != name).collect();
            pairs.extend(value.map(|v| (name, v.to_owned())));
            pairs
        };
        let refused = |pairs: Vec<(&'static str, String)>, payload: &[u8]| {
            LogMessage::decode(lookup(&pairs), payload).expect_err("refused").to_string()
        };
        let cases: [(&str, Pairs, &str); 8] = [
            ("no stream", replaced(headers::STREAM, None), "header Battlelog-Stream missing"),
            ("no count", replaced(headers::COUNT, None), "header Battlelog-Count missing"),
            ("no last hash", replaced(headers::LAST_HASH, None), "header Battlelog-Last-Hash missing"),
            (
                "a word for a version",
                replaced(headers::FIRST_VERSION, Some("five")),
                "header Battlelog-First-Version: \"five\" is not a number",
            ),
            ("a zero count", replaced(headers::COUNT, Some("0")), "header Battlelog-Count: 0, where"),
            (
                "a short hash",
                replaced(headers::LAST_HASH, Some("0303")),
                "header Battlelog-Last-Hash: not 32 bytes of hex",
            ),
            ("a state not hex", replaced(headers::STATE, Some("0g")), "header Battlelog-State: not hex"),
            (
                "a count past the payload",
                replaced(headers::COUNT, Some("4")),
                "payload holds 3 records, header Battlelog-Count says 4",
            ),
        ];
        for (what, pairs, wanted) in cases {
            let error = refused(pairs, &payload);
            assert!(error.starts_with(wanted), "{what}: {error}");
        }
        let overflow = replaced(headers::FIRST_VERSION, Some(&u64::MAX.to_string()));
        assert!(refused(overflow, &payload).contains("overflow a version"));

        let headers = message.headers();
        assert_eq!(
            LogMessage::decode(lookup(&headers), &payload[..35]),
            Err(FrameError::TruncatedFraming { index: 0, left: 35, needed: 36 })
        );
        assert_eq!(
            LogMessage::decode(lookup(&headers), &payload[..36 + 2]),
            Err(FrameError::TruncatedRecord { index: 0, len: 3, left: 2 })
        );
        let cut = payload.len() - 1;
        assert_eq!(
            LogMessage::decode(lookup(&headers), &payload[..cut]),
            Err(FrameError::TruncatedRecord { index: 2, len: 300, left: 299 })
        );
        assert!(
            refused(headers, &payload[..cut]).starts_with("payload truncated in record 2: its framing says 300 bytes")
        );
    }
}
