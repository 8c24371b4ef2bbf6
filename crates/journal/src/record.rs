//! The stored record and its hash chain (PROTOCOL.md §4).
//!
//! A record is the protobuf encoding of [`JournalRecord`], produced once when
//! the event is committed. Those exact bytes are stored and hashed; nothing
//! here re-encodes a decoded record to check it, because a different encoder
//! (or a field added later) could produce different bytes for the same values.

use battlelog_proto::v1::JournalRecord;
use prost::Message;
use sha2::{Digest, Sha256};

/// A SHA-256 chain hash, `h(v)`.
pub type Hash = [u8; 32];

/// Domain separator of a stream's chain seed, `h(−1)`.
const STREAM_DOMAIN: &[u8] = b"battlelog/v1/stream";

/// `h(−1) = SHA-256("battlelog/v1/stream" || 0x00 || stream_id)`.
pub fn genesis_hash(stream_id: &str) -> Hash {
    Sha256::new().chain_update(STREAM_DOMAIN).chain_update([0u8]).chain_update(stream_id.as_bytes()).finalize().into()
}

/// `h(v) = SHA-256(h(v−1) || record_v)`.
pub fn chain_hash(previous: &Hash, record: &[u8]) -> Hash {
    Sha256::new().chain_update(previous).chain_update(record).finalize().into()
}

/// Encodes a record once, at commit; the result is what gets stored and hashed.
pub fn encode(record: &JournalRecord) -> Vec<u8> {
    record.encode_to_vec()
}

/// Decodes stored record bytes (for reading; never to re-hash).
pub fn decode(bytes: &[u8]) -> Result<JournalRecord, prost::DecodeError> {
    JournalRecord::decode(bytes)
}

/// What an idempotency key remembers of its event, so that a repeat with a
/// different type or payload is told apart from a true retry:
/// `SHA-256(event_type || 0x00 || payload)`.
pub fn fingerprint(event_type: &str, payload: &[u8]) -> Hash {
    Sha256::new().chain_update(event_type.as_bytes()).chain_update([0u8]).chain_update(payload).finalize().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn genesis_matches_the_protocol_definition() {
        let mut input = b"battlelog/v1/stream".to_vec();
        input.push(0);
        input.extend_from_slice(b"battle-1");
        let expected: Hash = Sha256::digest(&input).into();
        assert_eq!(genesis_hash("battle-1"), expected);
        assert_ne!(genesis_hash("battle-1"), genesis_hash("battle-2"));
    }

    #[test]
    fn chain_hash_is_sha256_of_previous_then_record() {
        let prev = genesis_hash("s");
        let mut input = prev.to_vec();
        input.extend_from_slice(b"record bytes");
        let expected: Hash = Sha256::digest(&input).into();
        assert_eq!(chain_hash(&prev, b"record bytes"), expected);
    }

    #[test]
    fn records_round_trip_and_every_field_changes_the_bytes() {
        let record = JournalRecord {
            stream_id: "s".into(),
            version: 3,
            event_id: "e".into(),
            event_type: "T".into(),
            recorded_at_unix_micros: 42,
            idempotency_key: "k".into(),
            payload: vec![1, 2, 3],
        };
        let bytes = encode(&record);
        assert_eq!(decode(&bytes).ok(), Some(record.clone()));
        let variants = [
            JournalRecord { stream_id: "t".into(), ..record.clone() },
            JournalRecord { version: 4, ..record.clone() },
            JournalRecord { event_id: "f".into(), ..record.clone() },
            JournalRecord { event_type: "U".into(), ..record.clone() },
            JournalRecord { recorded_at_unix_micros: 43, ..record.clone() },
            JournalRecord { idempotency_key: "l".into(), ..record.clone() },
            JournalRecord { payload: vec![1, 2, 4], ..record.clone() },
        ];
        for variant in variants {
            assert_ne!(encode(&variant), bytes, "{variant:?}");
        }
    }
}
