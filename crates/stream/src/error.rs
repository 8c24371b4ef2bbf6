//! What the journal answered, read by its `google.rpc.ErrorInfo` reason.
//!
//! The journal puts an `ErrorInfo` (battlelog's one vocabulary,
//! `battlelog_proto::error`) on every refusal a caller may act on: a stale
//! expected version, an idempotency key reused, an event its battle guard
//! refuses. [`StreamError::from_status`] reads those with
//! `Error::from_status`, and [`StreamError::into_status`] is the one way
//! back: a conflict keeps its reason, so the roller can pass the journal's
//! conflict on to the resolver and the resolver reads it as one.

use battlelog_proto::error::{BattleReason, Error, JournalReason, Reason};
use tonic::{Code, Status};

pub use battlelog_proto::error::unreachable;

/// A journal call that did not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum StreamError {
    /// The stream is not at the expected version: someone else appended
    /// first. Fold again and retry.
    #[error("stream {stream_id} is at version {}, not the one expected", fmt_version(.actual))]
    Conflict {
        /// The stream.
        stream_id: String,
        /// The stream's head when the journal refused, `None` when empty.
        actual: Option<u64>,
    },
    /// An idempotency key of the append was recorded before with another
    /// event (or mixed with new keys): someone else served this request id.
    #[error("stream {stream_id}: idempotency key {key:?} was already used for another event")]
    KeyReused {
        /// The stream.
        stream_id: String,
        /// The key, when the journal named it.
        key: String,
        /// Where the journal recorded it, when it said.
        version: Option<u64>,
    },
    /// The journal's battle guard refused an event (its reason is the rule,
    /// e.g. `NONCE_OUT_OF_ORDER`); nothing was written.
    #[error("journal: {}", .error.message)]
    Refused {
        /// The journal's error, read back with its reason, code and messages.
        error: Error,
    },
    /// What the journal holds does not fold.
    #[error("battle {stream_id}: {message}")]
    Fold {
        /// The stream.
        stream_id: String,
        /// Why, naming the version.
        message: String,
    },
    /// Anything else: an outage, a bug, a record without its event.
    #[error("journal: {}", .0.message())]
    Journal(Status),
}

fn fmt_version(version: &Option<u64>) -> String {
    version.map_or_else(|| "none".to_owned(), |v| v.to_string())
}

impl StreamError {
    /// Reads `status` from the journal (or a status made by
    /// [`StreamError::into_status`], as the roller passes one on) by its
    /// `ErrorInfo` reason.
    pub fn from_status(stream_id: &str, status: Status) -> StreamError {
        let Some(error) = Error::from_status(&status) else {
            return StreamError::Journal(status);
        };
        let number = |key: &str| error.metadata.get(key).and_then(|v| v.parse::<u64>().ok());
        match error.reason {
            Reason::JournalReason(JournalReason::WrongExpectedVersion) => {
                StreamError::Conflict { stream_id: stream_id.to_owned(), actual: number("actual_version") }
            }
            Reason::JournalReason(JournalReason::IdempotencyKeyReused | JournalReason::IdempotencyPartialRepeat) => {
                StreamError::KeyReused {
                    stream_id: stream_id.to_owned(),
                    key: error.metadata.get("idempotency_key").cloned().unwrap_or_default(),
                    version: number("version"),
                }
            }
            // The battle guard's rules; the journal's outages and faults
            // are passed on as they came.
            Reason::JournalReason(
                JournalReason::JournalShuttingDown
                | JournalReason::RecordCorrupt
                | JournalReason::StorageUnavailable
                | JournalReason::StorageFailed,
            ) => StreamError::Journal(status),
            Reason::JournalReason(_) | Reason::BattleReason(BattleReason::BattleClosed) => {
                StreamError::Refused { error }
            }
            _ => StreamError::Journal(status),
        }
    }

    /// Someone else appended first: fold again and retry.
    pub fn is_conflict(&self) -> bool {
        matches!(self, StreamError::Conflict { .. })
    }

    /// Whether `status` (the journal's, or a peer's that passed one on) is a
    /// stale expected version, read from its `ErrorInfo`.
    pub fn is_conflict_status(status: &Status) -> bool {
        Error::from_status(status)
            .is_some_and(|error| error.reason == Reason::JournalReason(JournalReason::WrongExpectedVersion))
    }

    /// The status for a caller. Conflicts and reused keys keep their
    /// reasons, so that a service calling us reads them as such.
    pub fn into_status(self) -> Status {
        let message = format!("journal: {self}");
        match self {
            StreamError::Conflict { actual, .. } => Error::new(JournalReason::WrongExpectedVersion, message)
                .with("actual_version", fmt_version(&actual))
                .into_status(),
            StreamError::KeyReused { key, version, .. } => {
                let mut error = Error::new(JournalReason::IdempotencyKeyReused, message).with("idempotency_key", key);
                if let Some(version) = version {
                    error = error.with("version", version);
                }
                error.into_status()
            }
            StreamError::Refused { mut error } => {
                // A malformed event is our bug, not the caller's.
                if error.code == Code::InvalidArgument {
                    error.code = Code::Internal;
                }
                error.message = message;
                error.into_status()
            }
            StreamError::Fold { .. } => Error::data_loss(message).into_status(),
            StreamError::Journal(status) => downstream("journal", status),
        }
    }
}

impl From<StreamError> for Status {
    fn from(error: StreamError) -> Status {
        error.into_status()
    }
}

/// Passes a peer service's answer on, saying where it came from
/// (`battlelog_proto::error::pass_on`).
pub fn downstream(service: &str, status: Status) -> Status {
    battlelog_proto::error::pass_on(service, status)
}

#[cfg(test)]
mod tests {
    use tonic_types::{ErrorDetails, StatusExt};

    use super::*;

    #[test]
    fn a_conflict_survives_being_passed_on() {
        let status = StreamError::Conflict { stream_id: "b1".into(), actual: Some(7) }.into_status();
        assert_eq!(status.code(), Code::Aborted);
        let passed_on = downstream("roller", status);
        match StreamError::from_status("b1", passed_on) {
            StreamError::Conflict { actual, .. } => assert_eq!(actual, Some(7)),
            other => panic!("not read as a conflict: {other:?}"),
        }
    }

    /// Only the ErrorInfo counts: a message that talks of idempotency is not
    /// a reused key, nor a reason of another domain a conflict.
    #[test]
    fn message_text_is_never_read() {
        let status = Status::failed_precondition("idempotency key reused, says the text");
        assert!(matches!(StreamError::from_status("b1", status), StreamError::Journal(_)));
        let other_domain = Status::with_error_details(
            Code::Aborted,
            "x",
            ErrorDetails::with_error_info("WRONG_EXPECTED_VERSION", "elsewhere", std::collections::HashMap::new()),
        );
        assert!(!StreamError::from_status("b1", other_domain).is_conflict());
    }

    /// The journal's own errors read back as what they are: the guard's
    /// refusal with its reason and code, an outage as an outage.
    #[test]
    fn the_journals_errors_read_back() {
        use battlelog_journal::error::JournalError;
        use battlelog_journal::guard::Rule;
        let refused = Status::from(JournalError::EventRefused {
            stream_id: "b1".into(),
            field: "events[0].payload.dice_rolled.nonce".into(),
            rule: Rule::NonceOutOfOrder,
            message: "nonce 3 where 2 was next".into(),
        });
        match StreamError::from_status("b1", refused) {
            StreamError::Refused { error } => {
                assert_eq!((error.reason.as_str(), error.code), ("NONCE_OUT_OF_ORDER", Code::FailedPrecondition));
            }
            other => panic!("{other:?}"),
        }
        let stale = Status::from(JournalError::WrongExpectedVersion {
            stream_id: "b1".into(),
            expected: battlelog_journal::limits::ExpectedVersion::Exact(2),
            actual: Some(4),
        });
        assert!(matches!(StreamError::from_status("b1", stale), StreamError::Conflict { actual: Some(4), .. }));
        let closing = Status::from(JournalError::ShuttingDown);
        assert!(matches!(StreamError::from_status("b1", closing), StreamError::Journal(_)));
    }
}
