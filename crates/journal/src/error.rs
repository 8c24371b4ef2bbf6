//! The journal's errors, and the one place they become gRPC statuses.
//!
//! Every `google.rpc.ErrorInfo` reason the journal sends is a `REASON_*`
//! constant here (the battle guard's through [`Rule::reason`]); other
//! services decode them, so they never change.

use std::collections::HashMap;

use tonic::{Code, Status};
use tonic_types::{ErrorDetails, FieldViolation, StatusExt};

use crate::guard::Rule;
use crate::limits::ExpectedVersion;
use crate::store::StorageError;

/// The `ErrorInfo.domain` of every structured error the journal returns.
pub const ERROR_DOMAIN: &str = "journal.battlelog";
/// `ErrorInfo.reason` of a stale expected version; metadata `actual_version`
/// holds the stream's version (or `none`) and `expected_version` the guard.
pub const REASON_WRONG_EXPECTED_VERSION: &str = "WRONG_EXPECTED_VERSION";
/// `ErrorInfo.reason` of an idempotency key reused for a different event.
pub const REASON_IDEMPOTENCY_KEY_REUSED: &str = "IDEMPOTENCY_KEY_REUSED";
/// `ErrorInfo.reason` of an append mixing already-seen and new keys.
pub const REASON_IDEMPOTENCY_PARTIAL_REPEAT: &str = "IDEMPOTENCY_PARTIAL_REPEAT";

// The battle guard's reasons ([`Rule::reason`]); metadata `field` names the
// refused event's field and `stream_id` the stream.
/// [`Rule::EventUndecodable`].
pub const REASON_EVENT_UNDECODABLE: &str = "EVENT_UNDECODABLE";
/// [`Rule::EventTypeMismatch`].
pub const REASON_EVENT_TYPE_MISMATCH: &str = "EVENT_TYPE_MISMATCH";
/// [`Rule::EventMalformed`].
pub const REASON_EVENT_MALFORMED: &str = "EVENT_MALFORMED";
/// [`Rule::BattleNotOpened`].
pub const REASON_BATTLE_NOT_OPENED: &str = "BATTLE_NOT_OPENED";
/// [`Rule::BattleAlreadyOpened`].
pub const REASON_BATTLE_ALREADY_OPENED: &str = "BATTLE_ALREADY_OPENED";
/// [`Rule::NonceOutOfOrder`].
pub const REASON_NONCE_OUT_OF_ORDER: &str = "NONCE_OUT_OF_ORDER";
/// [`Rule::EpochMismatch`].
pub const REASON_EPOCH_MISMATCH: &str = "EPOCH_MISMATCH";
/// [`Rule::EpochRevealed`].
pub const REASON_EPOCH_REVEALED: &str = "EPOCH_REVEALED";
/// [`Rule::EpochNotRevealed`].
pub const REASON_EPOCH_NOT_REVEALED: &str = "EPOCH_NOT_REVEALED";
/// [`Rule::SeedMismatch`].
pub const REASON_SEED_MISMATCH: &str = "SEED_MISMATCH";
/// [`Rule::BattleClosed`].
pub const REASON_BATTLE_CLOSED: &str = "BATTLE_CLOSED";
/// [`Rule::StreamNotABattle`].
pub const REASON_STREAM_NOT_A_BATTLE: &str = "STREAM_NOT_A_BATTLE";
/// [`Rule::BattleBudgetExceeded`].
pub const REASON_BATTLE_BUDGET_EXCEEDED: &str = "BATTLE_BUDGET_EXCEEDED";

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
    /// A previous flush failed; durability can no longer be promised, so the
    /// journal refuses appends until restarted.
    #[error("storage failed earlier ({0}); restart the journal")]
    Poisoned(String),
    /// The storage engine failed (its own error is the source).
    #[error("storage: {0}")]
    Storage(#[from] StorageError),
    /// The operating system refused something (e.g. starting the committer thread).
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
}

fn fmt_version(v: &Option<u64>) -> String {
    v.map_or_else(|| "none".to_owned(), |v| v.to_string())
}

impl From<JournalError> for Status {
    fn from(err: JournalError) -> Self {
        let message = err.to_string();
        match err {
            JournalError::InvalidArgument { field, message: description } => Status::with_error_details(
                Code::InvalidArgument,
                message,
                ErrorDetails::with_bad_request_violation(field, description),
            ),
            JournalError::WrongExpectedVersion { expected, actual, .. } => Status::with_error_details(
                Code::Aborted,
                message,
                ErrorDetails::with_error_info(
                    REASON_WRONG_EXPECTED_VERSION,
                    ERROR_DOMAIN,
                    HashMap::from([
                        ("actual_version".to_owned(), fmt_version(&actual)),
                        ("expected_version".to_owned(), expected.to_string()),
                    ]),
                ),
            ),
            JournalError::IdempotencyKeyReused { key, version, .. } => Status::with_error_details(
                Code::FailedPrecondition,
                message,
                ErrorDetails::with_error_info(
                    REASON_IDEMPOTENCY_KEY_REUSED,
                    ERROR_DOMAIN,
                    HashMap::from([("idempotency_key".to_owned(), key), ("version".to_owned(), version.to_string())]),
                ),
            ),
            JournalError::IdempotencyPartialRepeat { repeated_index, new_index, .. } => Status::with_error_details(
                Code::FailedPrecondition,
                message,
                ErrorDetails::with_error_info(
                    REASON_IDEMPOTENCY_PARTIAL_REPEAT,
                    ERROR_DOMAIN,
                    HashMap::from([
                        ("repeated_index".to_owned(), repeated_index.to_string()),
                        ("new_index".to_owned(), new_index.to_string()),
                    ]),
                ),
            ),
            JournalError::EventRefused { stream_id, field, rule, message: description } => {
                let info = HashMap::from([("stream_id".to_owned(), stream_id), ("field".to_owned(), field.clone())]);
                let mut details = ErrorDetails::with_error_info(rule.reason(), ERROR_DOMAIN, info);
                // Malformed input whatever the stream holds: the caller's bug,
                // named like every other bad field. Out of place in this
                // stream now: the stream's state says no.
                let code = if rule.is_malformed_input() {
                    details.set_bad_request(vec![FieldViolation::new(field, description)]);
                    Code::InvalidArgument
                } else {
                    Code::FailedPrecondition
                };
                Status::with_error_details(code, message, details)
            }
            JournalError::ShuttingDown => Status::unavailable(message),
            JournalError::Corrupt { .. } => Status::data_loss(message),
            // A log across the network (JetStream) that does not answer is an
            // outage — a leader election, NATS restarting — not a bug: the
            // caller retries (its idempotency keys make that safe).
            JournalError::Storage(e) if e.engine == crate::store::jetstream::ENGINE => Status::unavailable(message),
            JournalError::Poisoned(_) | JournalError::Storage(_) | JournalError::Io(_) => Status::internal(message),
        }
    }
}
