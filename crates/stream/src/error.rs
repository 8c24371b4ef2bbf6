//! What the journal answered, read by its `google.rpc.ErrorInfo` reason.
//!
//! The journal puts an `ErrorInfo` (domain [`JOURNAL_DOMAIN`]) on every
//! refusal a caller may act on: a stale expected version, an idempotency key
//! reused, an event its battle guard refuses. [`StreamError::from_status`]
//! reads those, and [`StreamError::into_status`] is the one way back: a
//! conflict keeps its `ErrorInfo`, so the roller can pass the journal's
//! conflict on to the resolver and the resolver reads it as one.

use std::collections::HashMap;

use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt};

/// The journal's `ErrorInfo.domain` (`battlelog_journal::error::ERROR_DOMAIN`).
pub const JOURNAL_DOMAIN: &str = "journal.battlelog";
/// A stale expected version; metadata `actual_version` is the stream's head
/// (a number, or `none`).
pub const REASON_WRONG_EXPECTED_VERSION: &str = "WRONG_EXPECTED_VERSION";
/// An idempotency key already used for a different event; metadata
/// `version` is where the key was recorded.
pub const REASON_IDEMPOTENCY_KEY_REUSED: &str = "IDEMPOTENCY_KEY_REUSED";
/// One append mixing repeated and new idempotency keys.
pub const REASON_IDEMPOTENCY_PARTIAL_REPEAT: &str = "IDEMPOTENCY_PARTIAL_REPEAT";

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
    /// The journal's battle guard refused an event (`reason` is its rule,
    /// e.g. `NONCE_OUT_OF_ORDER`); nothing was written.
    #[error("journal: {message}")]
    Refused {
        /// The guard's `ErrorInfo.reason`.
        reason: String,
        /// The journal's status, passed on as it came.
        code: Code,
        /// The journal's message.
        message: String,
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
        let Some(info) = status.get_error_details().error_info().cloned() else {
            return StreamError::Journal(status);
        };
        if info.domain != JOURNAL_DOMAIN {
            return StreamError::Journal(status);
        }
        let number = |key: &str| info.metadata.get(key).and_then(|v| v.parse::<u64>().ok());
        match info.reason.as_str() {
            REASON_WRONG_EXPECTED_VERSION => {
                StreamError::Conflict { stream_id: stream_id.to_owned(), actual: number("actual_version") }
            }
            REASON_IDEMPOTENCY_KEY_REUSED | REASON_IDEMPOTENCY_PARTIAL_REPEAT => StreamError::KeyReused {
                stream_id: stream_id.to_owned(),
                key: info.metadata.get("idempotency_key").cloned().unwrap_or_default(),
                version: number("version"),
            },
            _ => {
                StreamError::Refused { reason: info.reason, code: status.code(), message: status.message().to_owned() }
            }
        }
    }

    /// Someone else appended first: fold again and retry.
    pub fn is_conflict(&self) -> bool {
        matches!(self, StreamError::Conflict { .. })
    }

    /// Whether `status` (the journal's, or a peer's that passed one on) is a
    /// stale expected version, read from its `ErrorInfo`.
    pub fn is_conflict_status(status: &Status) -> bool {
        status
            .get_error_details()
            .error_info()
            .is_some_and(|info| info.domain == JOURNAL_DOMAIN && info.reason == REASON_WRONG_EXPECTED_VERSION)
    }

    /// The status for a caller. Conflicts and reused keys keep their
    /// `ErrorInfo`, so that a service calling us reads them as such.
    pub fn into_status(self) -> Status {
        let message = format!("journal: {self}");
        match self {
            StreamError::Conflict { actual, .. } => Status::with_error_details(
                Code::Aborted,
                message,
                ErrorDetails::with_error_info(
                    REASON_WRONG_EXPECTED_VERSION,
                    JOURNAL_DOMAIN,
                    HashMap::from([("actual_version".to_owned(), fmt_version(&actual))]),
                ),
            ),
            StreamError::KeyReused { key, version, .. } => {
                let mut metadata = HashMap::from([("idempotency_key".to_owned(), key)]);
                if let Some(version) = version {
                    metadata.insert("version".to_owned(), version.to_string());
                }
                Status::with_error_details(
                    Code::FailedPrecondition,
                    message,
                    ErrorDetails::with_error_info(REASON_IDEMPOTENCY_KEY_REUSED, JOURNAL_DOMAIN, metadata),
                )
            }
            StreamError::Refused { reason, code, message } => {
                // A malformed event is our bug, not the caller's.
                let code = if code == Code::InvalidArgument { Code::Internal } else { code };
                Status::with_error_details(
                    code,
                    format!("journal: {message}"),
                    ErrorDetails::with_error_info(reason, JOURNAL_DOMAIN, HashMap::new()),
                )
            }
            StreamError::Fold { .. } => Status::data_loss(message),
            StreamError::Journal(status) => downstream("journal", status),
        }
    }
}

impl From<StreamError> for Status {
    fn from(error: StreamError) -> Status {
        error.into_status()
    }
}

/// Passes a peer service's answer on, saying where it came from. A peer
/// that cannot be reached is `UNAVAILABLE` (retry later), whatever the
/// transport made of it, so that callers see an outage as one; the peer's
/// `INVALID_ARGUMENT` was ours to prevent, so it is `INTERNAL`. The peer's
/// error details travel on.
pub fn downstream(service: &str, status: Status) -> Status {
    if unreachable(&status) {
        return Status::unavailable(format!("{service} is unavailable: {}", status.message()));
    }
    let code = match status.code() {
        Code::InvalidArgument => Code::Internal,
        code => code,
    };
    Status::with_details(code, format!("{service}: {}", status.message()), status.details().to_vec().into())
}

/// Whether the call never got an answer from the peer. tonic 0.14 reports
/// a refused connection on a lazy channel as `UNAVAILABLE` "tcp connect
/// error" (which names no service); every other failure of the transport
/// carries the transport's error as its source, whatever code tonic gives
/// it: `UNKNOWN` when it cannot classify it, and for a peer shutting down
/// `CANCELLED` "operation was canceled" or `INTERNAL` "h2 protocol error"
/// (a request the connection dropped, or the peer's GOAWAY refused). A
/// status the peer itself sent has no source.
pub fn unreachable(status: &Status) -> bool {
    if status.code() == Code::Unavailable {
        return true;
    }
    let mut source = std::error::Error::source(status);
    while let Some(error) = source {
        if error.is::<tonic::transport::Error>() || error.is::<std::io::Error>() {
            return true;
        }
        source = error.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reasons are the journal's own: this crate reads what it sends.
    #[test]
    fn the_reasons_are_the_journals() {
        use battlelog_journal::error as journal;
        assert_eq!(JOURNAL_DOMAIN, journal::ERROR_DOMAIN);
        assert_eq!(REASON_WRONG_EXPECTED_VERSION, journal::REASON_WRONG_EXPECTED_VERSION);
        assert_eq!(REASON_IDEMPOTENCY_KEY_REUSED, journal::REASON_IDEMPOTENCY_KEY_REUSED);
        assert_eq!(REASON_IDEMPOTENCY_PARTIAL_REPEAT, journal::REASON_IDEMPOTENCY_PARTIAL_REPEAT);
    }

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
    /// a reused key.
    #[test]
    fn message_text_is_never_read() {
        let status = Status::failed_precondition("idempotency key reused, says the text");
        assert!(matches!(StreamError::from_status("b1", status), StreamError::Journal(_)));
        let other_domain = Status::with_error_details(
            Code::Aborted,
            "x",
            ErrorDetails::with_error_info(REASON_WRONG_EXPECTED_VERSION, "elsewhere", HashMap::new()),
        );
        assert!(!StreamError::from_status("b1", other_domain).is_conflict());
    }

    #[test]
    fn a_guard_refusal_keeps_its_reason_and_code() {
        let status = Status::with_error_details(
            Code::FailedPrecondition,
            "nonce 3 where 2 was next",
            ErrorDetails::with_error_info("NONCE_OUT_OF_ORDER", JOURNAL_DOMAIN, HashMap::new()),
        );
        match StreamError::from_status("b1", status) {
            StreamError::Refused { reason, code, .. } => {
                assert_eq!((reason.as_str(), code), ("NONCE_OUT_OF_ORDER", Code::FailedPrecondition));
            }
            other => panic!("{other:?}"),
        }
    }
}
