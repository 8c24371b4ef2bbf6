//! The export's trailer line of docs/protocol.md §5 and its check, and the
//! checkpoints a judge or a forum kept to hold the log to its past.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::{Deserialize, Serialize};

use crate::merkle::{MAX_PROOF_HASHES, ProofError, leaf_hash, verify_inclusion};
use crate::note::{
    Checkpoint, MAX_NOTE_BYTES, NoteError, StreamHead, VerifierKey, root_from_text, size_from_text, verify_head,
};
use crate::{EMPTY_ROOT, Hash};

/// The largest trailer line read, in bytes: a note, a key, a head, a
/// signature and at most [`MAX_PROOF_HASHES`] base64 hashes fit well within.
pub const MAX_TRAILER_BYTES: usize = MAX_NOTE_BYTES + 16 * 1024;

/// The last line of an export (§5): the checkpoint, the log key, the
/// stream's signed head and the head record's inclusion proof.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Trailer {
    /// The whole signed note.
    pub checkpoint: String,
    /// The verifier key, `<origin>+<key id>+<base64 key>`.
    pub log_key: String,
    pub head: TrailerHead,
    /// Base64 of the 64-byte Ed25519 signature of the head.
    pub head_signature: String,
    /// The global index of the head record's leaf.
    pub leaf_index: u64,
    /// Base64 of each 32-byte hash of the RFC 9162 inclusion proof.
    pub inclusion_proof: Vec<String>,
}

/// The head as the trailer writes it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct TrailerHead {
    pub stream: String,
    pub version: u64,
    /// Lowercase hex of h(version).
    pub hash: String,
}

impl From<&StreamHead> for TrailerHead {
    fn from(head: &StreamHead) -> TrailerHead {
        TrailerHead { stream: head.stream_id.clone(), version: head.version, hash: hex::encode(head.hash) }
    }
}

/// Why a trailer does not hold, each naming what failed, for an audit's
/// finding.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum TrailerError {
    /// A field is not what §5 says it holds.
    #[error("trailer {field}: {message}")]
    Malformed { field: &'static str, message: String },
    /// The trailer's log key is not the key the verifier trusts.
    #[error("the trailer's log key {found} is not the trusted key {trusted}")]
    LogKeyNotTrusted { found: String, trusted: String },
    /// The checkpoint's signature does not verify with `log_key`.
    #[error("the checkpoint does not verify with the trailer's log key: {0}")]
    CheckpointSignature(String),
    /// The signed head's version is not the export's last event's (`None`:
    /// the export has no event).
    #[error("the signed head is version {head_version}, the export's last event is {}", match last_version { Some(v) => format!("version {v}"), None => "missing (no events)".to_owned() })]
    HeadNotLastEvent { head_version: u64, last_version: Option<u64> },
    /// The signed head names another stream than the export's last event.
    #[error("the signed head is of stream {head_stream:?}, the export's last event of {last_stream:?}")]
    HeadStreamNotLastEvent { head_stream: String, last_stream: String },
    /// The signed head's hash is not the export's last event's h(version).
    #[error("the signed head's hash at version {version} is {head_hash}, the export's last event's is {last_hash}")]
    HeadHashNotLastEvent { version: u64, head_hash: String, last_hash: String },
    /// The head signature does not verify with the log key.
    #[error("the head signature does not verify with the trailer's log key")]
    HeadSignature,
    /// The inclusion proof of the head's leaf does not lead to the
    /// checkpoint's root.
    #[error("the head record's inclusion proof: {0}")]
    InclusionProof(ProofError),
}

fn malformed(field: &'static str, message: impl Into<String>) -> TrailerError {
    TrailerError::Malformed { field, message: message.into() }
}

impl Trailer {
    /// The trailer of a head the journal signed, proved in `checkpoint`
    /// by `inclusion_proof` at `leaf_index` (what the journal writes).
    pub fn new(
        checkpoint: &Checkpoint,
        log_key: &VerifierKey,
        head: &StreamHead,
        head_signature: &[u8; 64],
        leaf_index: u64,
        inclusion_proof: &[Hash],
    ) -> Trailer {
        Trailer {
            checkpoint: checkpoint.note.clone(),
            log_key: log_key.to_string(),
            head: TrailerHead::from(head),
            head_signature: BASE64.encode(head_signature),
            leaf_index,
            inclusion_proof: inclusion_proof.iter().map(|h| BASE64.encode(h)).collect(),
        }
    }

    /// Reads a trailer line (JSON), refusing one over [`MAX_TRAILER_BYTES`].
    pub fn from_json(line: &str) -> Result<Trailer, TrailerError> {
        if line.len() > MAX_TRAILER_BYTES {
            return Err(malformed("line", format!("{} bytes, more than the limit of {MAX_TRAILER_BYTES}", line.len())));
        }
        serde_json::from_str(line).map_err(|e| malformed("line", e.to_string()))
    }

    /// The head as a [`StreamHead`], its hash read from hex.
    pub fn stream_head(&self) -> Result<StreamHead, TrailerError> {
        let hash = &self.head.hash;
        if hash.len() != 64 || !hash.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(malformed("head.hash", format!("{hash:?} is not 64 lowercase hex digits")));
        }
        let mut bytes = [0u8; 32];
        hex::decode_to_slice(hash, &mut bytes).map_err(|e| malformed("head.hash", e.to_string()))?;
        Ok(StreamHead { stream_id: self.head.stream.clone(), version: self.head.version, hash: bytes })
    }

    /// Checks it as §5 says, against the export's last event (stream,
    /// version, h(version)) and, when given, the key the verifier trusts:
    /// the log key is the trusted one; the checkpoint's signature verifies
    /// with it; the head is the last event; the head signature verifies at
    /// the checkpoint's size; the head's leaf is at `leaf_index` under the
    /// checkpoint's root. Returns the checkpoint it proved the head in.
    pub fn check(
        &self,
        last_event: Option<&StreamHead>,
        trusted: Option<&VerifierKey>,
    ) -> Result<Checkpoint, TrailerError> {
        let log_key = VerifierKey::parse(&self.log_key).map_err(|e| malformed("log_key", e.to_string()))?;
        if let Some(trusted) = trusted
            && *trusted != log_key
        {
            return Err(TrailerError::LogKeyNotTrusted { found: log_key.to_string(), trusted: trusted.to_string() });
        }
        let checkpoint = Checkpoint::open(&self.checkpoint, &log_key).map_err(|e| match e {
            NoteError::TooLarge { .. } | NoteError::Malformed { .. } => malformed("checkpoint", e.to_string()),
            other => TrailerError::CheckpointSignature(other.to_string()),
        })?;
        let head = self.stream_head()?;
        match last_event {
            None => return Err(TrailerError::HeadNotLastEvent { head_version: head.version, last_version: None }),
            Some(last) if last.stream_id != head.stream_id => {
                return Err(TrailerError::HeadStreamNotLastEvent {
                    head_stream: head.stream_id,
                    last_stream: last.stream_id.clone(),
                });
            }
            Some(last) if last.version != head.version => {
                return Err(TrailerError::HeadNotLastEvent {
                    head_version: head.version,
                    last_version: Some(last.version),
                });
            }
            Some(last) if last.hash != head.hash => {
                return Err(TrailerError::HeadHashNotLastEvent {
                    version: head.version,
                    head_hash: hex::encode(head.hash),
                    last_hash: hex::encode(last.hash),
                });
            }
            Some(_) => {}
        }
        let signature =
            BASE64.decode(&self.head_signature).map_err(|e| malformed("head_signature", format!("not base64: {e}")))?;
        if signature.len() != 64 {
            return Err(malformed("head_signature", format!("{} bytes, an Ed25519 signature is 64", signature.len())));
        }
        verify_head(&log_key, &head, checkpoint.size, &signature).map_err(|_| TrailerError::HeadSignature)?;
        if self.inclusion_proof.len() > MAX_PROOF_HASHES {
            return Err(malformed(
                "inclusion_proof",
                format!("{} hashes, more than the limit of {MAX_PROOF_HASHES}", self.inclusion_proof.len()),
            ));
        }
        let proof = self
            .inclusion_proof
            .iter()
            .enumerate()
            .map(|(i, text)| {
                let bytes = BASE64
                    .decode(text)
                    .map_err(|e| malformed("inclusion_proof", format!("hash {i}: not base64: {e}")))?;
                <Hash>::try_from(bytes.as_slice()).map_err(|_| {
                    malformed("inclusion_proof", format!("hash {i}: {} bytes, a SHA-256 hash is 32", bytes.len()))
                })
            })
            .collect::<Result<Vec<Hash>, TrailerError>>()?;
        let leaf = leaf_hash(&head.stream_id, head.version, &head.hash);
        verify_inclusion(self.leaf_index, checkpoint.size, &leaf, &proof, &checkpoint.root)
            .map_err(TrailerError::InclusionProof)?;
        Ok(checkpoint)
    }
}

/// A checkpoint a judge kept: a whole signed note, or the tree size and
/// root a forum posted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeptCheckpoint {
    pub size: u64,
    pub root: Hash,
    /// The signed note, when one was kept.
    pub note: Option<String>,
}

impl KeptCheckpoint {
    /// Accepts a signed note (checked with `key` when given) or
    /// `"<size> <base64 root>"` / `"<size>\n<base64 root>"` (the root may
    /// also be 64 hex digits). The bare form carries no signature, so `key`
    /// does not apply to it: it is what the judge chose to keep.
    pub fn parse(text: &str, key: Option<&VerifierKey>) -> Result<KeptCheckpoint, NoteError> {
        if text.len() > MAX_NOTE_BYTES {
            return Err(NoteError::TooLarge { field: "checkpoint", found: text.len(), limit: MAX_NOTE_BYTES });
        }
        // Two words are the bare form: a note has at least six (origin,
        // size, root, and a signature line's dash, name and signature).
        let words: Vec<&str> = text.split_whitespace().collect();
        if let [size, root] = words.as_slice() {
            let size = size_from_text(size)?;
            let root = root_from_text(root)?;
            if size == 0 && root != EMPTY_ROOT {
                return Err(NoteError::Malformed {
                    field: "root",
                    message: "a tree of size 0 has the empty root (SHA-256 of nothing)".to_owned(),
                });
            }
            return Ok(KeptCheckpoint { size, root, note: None });
        }
        if words.is_empty() {
            return Err(NoteError::Malformed {
                field: "checkpoint",
                message: "empty: expected a signed note or \"<size> <root>\"".to_owned(),
            });
        }
        // A note pasted without its final newline, or saved with blank
        // lines or spaces after it, is still the same note: the signature
        // covers the text before the blank line only.
        let note = format!("{}\n", text.trim_end());
        let note = note.as_str();
        let checkpoint = match key {
            Some(key) => Checkpoint::open(note, key)?,
            None => Checkpoint::parse_unverified(note)?,
        };
        Ok(KeptCheckpoint { size: checkpoint.size, root: checkpoint.root, note: Some(checkpoint.note) })
    }
}
