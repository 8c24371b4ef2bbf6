//! The journal's errors, and their reasons in battlelog's one error
//! vocabulary (`battlelog_proto::error`), which makes them gRPC statuses.
//!
//! Every `google.rpc.ErrorInfo` reason the journal sends is a
//! [`JournalReason`] (the battle guard's through [`Rule::reason`]); other
//! services decode them with `Error::from_status`, so they never change.

use battlelog_proto::error::{Error, InternalReason, JournalReason};
use tonic::{Code, Status};

use crate::guard::Rule;
use crate::limits::ExpectedVersion;
use crate::store::{StorageError, StorageErrorKind};

/// Everything the journal library can fail with.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// Bad input; nothing was written.
    #[error("invalid {field}: {message}")]
    InvalidArgument {
        /// The request field, e.g. `events[2].payload`.
        field: String,
        /// What is wrong with it, naming the limit.
        message: String,
    },
    /// The optimistic-concurrency guard failed; nothing was written.
    #[error("wrong expected version for stream {stream_id}: expected {expected}, actual {}", fmt_version(.actual))]
    WrongExpectedVersion {
        /// The stream.
        stream_id: String,
        /// What the caller expected.
        expected: ExpectedVersion,
        /// The stream's last version, `None` when it has no event.
        actual: Option<u64>,
    },
    /// An idempotency key repeated with a different event type or payload.
    #[error("idempotency key {key:?} of stream {stream_id} was already used for a different event (version {version})")]
    IdempotencyKeyReused {
        /// The stream.
        stream_id: String,
        /// The key.
        key: String,
        /// The version the key recorded.
        version: u64,
    },
    /// Some events of an append repeat known keys and others do not: neither
    /// a retry nor a new append.
    #[error(
        "append to stream {stream_id} mixes repeated idempotency keys (events[{repeated_index}]) with new events (events[{new_index}])"
    )]
    IdempotencyPartialRepeat {
        /// The stream.
        stream_id: String,
        /// Index of a repeated-key event in the request.
        repeated_index: usize,
        /// Index of a new event in the request.
        new_index: usize,
    },
    /// An event would leave its stream no longer a battle (see
    /// [`crate::guard`]); nothing of the append was written.
    #[error("stream {stream_id}: {field} refused ({}): {message}", .rule.reason())]
    EventRefused {
        /// The stream.
        stream_id: String,
        /// The request field at fault, e.g. `events[0].payload.dice_rolled.nonce`.
        field: String,
        /// The rule it breaks.
        rule: Rule,
        /// What was found against what the rule wants.
        message: String,
    },
    /// No stream of that id has an event (proofs and signed heads).
    #[error("stream {stream_id} has no events")]
    StreamNotFound {
        /// The stream.
        stream_id: String,
    },
    /// The transparency log's follower did not reach a record in time.
    #[error("the transparency log has not reached global position {position} within {waited_secs}s; retry")]
    FollowerStalled {
        /// The global position waited for.
        position: u64,
        /// How long it was waited for, in seconds.
        waited_secs: u64,
    },
    /// This journal runs without its transparency log (a benchmark's
    /// option, never a configuration's).
    #[error("this journal runs without its transparency log")]
    TransparencyOff,
    /// The store does not hold the log the last signed checkpoint covers
    /// ([`crate::kept`]): no appends, checkpoints, proofs or signed heads.
    #[error(
        "{0}; this journal takes no appends and signs nothing until its operator restores its data dir or accepts \
         the loss (docs/operating.md)"
    )]
    StoreBehind(crate::kept::StoreBehind),
    /// The journal is closing and takes no more appends.
    #[error("the journal is shutting down")]
    ShuttingDown,
    /// A stored record could not be read back.
    #[error("corrupt record {stream_id}@{version}: {reason}")]
    Corrupt {
        /// The stream.
        stream_id: String,
        /// The version.
        version: u64,
        /// What is wrong.
        reason: String,
    },
    /// Something the journal counted on failed (an answer never came, a
    /// proof could not be made); durability can no longer be promised.
    #[error("storage failed earlier ({0}); restart the journal")]
    Poisoned(String),
    /// The store failed; its kind says what the caller hears (corruption
    /// and a closed store become [`JournalError::Corrupt`] and
    /// [`JournalError::ShuttingDown`] on the way in, `From<StorageError>`).
    #[error("storage: {0}")]
    Storage(StorageError),
    /// The operating system refused something (e.g. starting the committer thread).
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
}

impl From<StorageError> for JournalError {
    /// Corruption found at a place keeps its place (`RECORD_CORRUPT` names
    /// the stream and version); a closed store is the journal shutting down.
    fn from(e: StorageError) -> Self {
        if let (StorageErrorKind::Corrupt, Some((stream_id, version))) = (e.kind(), e.location()) {
            return JournalError::Corrupt { stream_id: stream_id.to_owned(), version, reason: e.message().to_owned() };
        }
        if e.is_closed() {
            return JournalError::ShuttingDown;
        }
        JournalError::Storage(e)
    }
}

fn fmt_version(v: &Option<u64>) -> String {
    v.map_or_else(|| "none".to_owned(), |v| v.to_string())
}

impl From<JournalError> for Error {
    fn from(err: JournalError) -> Self {
        let message = err.to_string();
        match err {
            JournalError::InvalidArgument { field, message: description } => {
                let mut error = Error::invalid_argument(&field, description);
                error.message = message;
                error
            }
            JournalError::WrongExpectedVersion { expected, actual, .. } => {
                Error::new(JournalReason::WrongExpectedVersion, message)
                    .with("actual_version", fmt_version(&actual))
                    .with("expected_version", expected)
            }
            JournalError::IdempotencyKeyReused { key, version, .. } => {
                Error::new(JournalReason::IdempotencyKeyReused, message)
                    .with("idempotency_key", key)
                    .with("version", version)
            }
            JournalError::IdempotencyPartialRepeat { repeated_index, new_index, .. } => {
                Error::new(JournalReason::IdempotencyPartialRepeat, message)
                    .with("repeated_index", repeated_index)
                    .with("new_index", new_index)
            }
            JournalError::EventRefused { stream_id, field, rule, message: description } => {
                let mut error = Error::new(rule.reason(), message).with("stream_id", stream_id).with("field", &field);
                // Malformed input whatever the stream holds: the caller's bug,
                // named like every other bad field. Out of place in this
                // stream now: the stream's state says no.
                if rule.is_malformed_input() {
                    error.violation = Some((field, description));
                    error.code = Code::InvalidArgument;
                } else {
                    error.code = Code::FailedPrecondition;
                }
                error
            }
            // Every stream is a battle (crate::guard): one without events is
            // a battle never opened.
            JournalError::StreamNotFound { stream_id } => Error::battle_not_found(&stream_id),
            JournalError::TransparencyOff => Error::new(InternalReason::Unavailable, message),
            JournalError::FollowerStalled { .. } => Error::new(JournalReason::StorageUnavailable, message),
            JournalError::ShuttingDown => Error::new(JournalReason::JournalShuttingDown, message),
            JournalError::StoreBehind(behind) => Error::new(JournalReason::StoreBehindCheckpoint, message)
                .with("store_size", behind.store_size)
                .with("checkpoint_size", behind.checkpoint_size),
            JournalError::Corrupt { .. } => Error::new(JournalReason::RecordCorrupt, message),
            // The one place a store's failure becomes what the caller hears,
            // by its kind alone. Transient (a log across the network that does
            // not answer: a leader election, NATS restarting) and a write
            // that lost a race are not bugs: the caller retries, its
            // idempotency keys making that safe.
            JournalError::Storage(e) => match e.kind() {
                StorageErrorKind::Transient | StorageErrorKind::Conflict => {
                    Error::new(JournalReason::StorageUnavailable, message)
                }
                StorageErrorKind::Corrupt => Error::new(JournalReason::RecordCorrupt, message),
                StorageErrorKind::Fatal => Error::new(JournalReason::StorageFailed, message),
            },
            JournalError::Poisoned(_) | JournalError::Io(_) => Error::new(JournalReason::StorageFailed, message),
        }
    }
}

impl From<JournalError> for Status {
    fn from(err: JournalError) -> Self {
        Error::from(err).into_status()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a caller hears of a store's failure follows its kind, whatever
    /// the engine: a log that does not answer is `UNAVAILABLE` (retry), a
    /// failing disk `INTERNAL`, corruption `RECORD_CORRUPT` at its place.
    #[test]
    fn storage_errors_are_mapped_by_kind_not_by_engine() {
        let status = |e: StorageError| Status::from(JournalError::from(e));
        for engine in ["jetstream", "sled", "a third engine"] {
            assert_eq!(status(StorageError::transient(engine, "timed out")).code(), Code::Unavailable, "{engine}");
            assert_eq!(status(StorageError::conflict(engine, "raced")).code(), Code::Unavailable, "{engine}");
            assert_eq!(status(StorageError::fatal(engine, "disk")).code(), Code::Internal, "{engine}");
        }
        let corrupt = JournalError::from(StorageError::corrupt("sled", "b1", 4, "record truncated"));
        assert!(
            matches!(&corrupt, JournalError::Corrupt { stream_id, version: 4, reason } if stream_id == "b1" && reason == "record truncated"),
            "{corrupt:?}"
        );
        let error = Error::from(corrupt);
        assert_eq!(error.reason, JournalReason::RecordCorrupt.into());
        let unplaced = Error::from(JournalError::from(StorageError::corrupt("sled", "", 0, "x")));
        assert_eq!(unplaced.reason, JournalReason::RecordCorrupt.into());
        assert!(matches!(JournalError::from(StorageError::closed("memory")), JournalError::ShuttingDown));
    }
}
