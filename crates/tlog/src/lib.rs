//! The transparency log of docs/protocol.md §5, pure: no I/O, no clock, no
//! randomness (`clippy.toml` and `tests/purity.rs` hold it to that). What
//! the journal signs its global log with, and what a judge or a stranger
//! checks an export's trailer and a kept checkpoint with.
//!
//! - [`merkle`]: the leaf input and hashes of §5, the append-only [`Tree`]
//!   (stored hashes and proofs by `tlog_tiles`), and RFC 9162's inclusion
//!   and consistency verification written here — two implementations that
//!   check each other.
//! - [`note`]: the log key and its verifier key, signed checkpoints (C2SP
//!   signed-note and tlog-checkpoint) and signed stream heads.
//! - [`trailer`]: the export's trailer line and its check, and the
//!   checkpoints a judge or a forum kept.

pub mod merkle;
pub mod note;
pub mod trailer;

/// A SHA-256 hash: a leaf, a node, a root, or a stream's h(v).
pub type Hash = [u8; 32];

pub use merkle::{
    EMPTY_ROOT, MAX_PROOF_HASHES, ProofError, Tree, leaf_hash, leaf_input, node_hash, verify_consistency,
    verify_inclusion,
};
pub use note::{
    Checkpoint, DEFAULT_ORIGIN, KeyError, LogKey, MAX_NOTE_BYTES, MAX_NOTE_SIGNATURES, NoteError, StreamHead,
    VerifierKey, head_message, verify_head,
};
pub use trailer::{KeptCheckpoint, MAX_TRAILER_BYTES, Trailer, TrailerError, TrailerHead};
