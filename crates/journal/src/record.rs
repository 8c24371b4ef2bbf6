//! The stored record and its hash chain (docs/protocol.md §4; the chain itself
//! is `battlelog_verify::chain`).
//!
//! A record is the protobuf encoding of [`JournalRecord`], produced once when
//! the event is committed. Those exact bytes are stored and hashed; nothing
//! here re-encodes a decoded record to check it, because a different encoder
//! (or a field added later) could produce different bytes for the same values.

use battlelog_proto::v1::JournalRecord;
use prost::Message;
use sha2::{Digest, Sha256};

/// The chain is battlelog-verify's, the one implementation the audit checks
/// with too: what the journal writes is by construction what a verifier
/// recomputes.
pub use battlelog_verify::chain::{Hash, chain_hash, genesis_hash};

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
