//! What a store fails with: [`StorageError`], engine-neutral, with a
//! [`StorageErrorKind`] that is all the journal needs to decide what a
//! caller hears (`crate::error` maps it, once). A store knows nothing of
//! the journal's errors; a third engine learns these four kinds, not
//! `JournalError`.

use std::fmt;

/// What kind of failure a [`StorageError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StorageErrorKind {
    /// The engine did not answer, or cannot for now (a leader election,
    /// NATS restarting, the store closing): the outcome is unknown, and a
    /// retry — made safe by idempotency keys — may succeed.
    Transient,
    /// The engine refused a write because what it was planned on changed
    /// under it in a way the store could not report as a [`super::Conflict`]:
    /// planning again may succeed.
    Conflict,
    /// Stored bytes are not what they must be ([`StorageError::location`]
    /// says where when known): no retry fixes it.
    Corrupt,
    /// The engine failed in a way a retry will not fix (I/O, a failed flush
    /// after which durability can no longer be promised, a configuration it
    /// cannot work with).
    Fatal,
}

impl StorageErrorKind {
    /// Its name in messages.
    pub fn as_str(self) -> &'static str {
        match self {
            StorageErrorKind::Transient => "transient",
            StorageErrorKind::Conflict => "conflict",
            StorageErrorKind::Corrupt => "corrupt",
            StorageErrorKind::Fatal => "fatal",
        }
    }
}

/// A store's failure: which engine, what kind, what happened and, for
/// corruption, where. The engine's own error is kept as the source, not as
/// a type the rest of the journal depends on.
#[derive(Debug)]
pub struct StorageError {
    kind: StorageErrorKind,
    engine: &'static str,
    message: String,
    location: Option<(String, u64)>,
    closed: bool,
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl StorageError {
    fn with_kind(kind: StorageErrorKind, engine: &'static str, message: impl Into<String>) -> Self {
        Self { kind, engine, message: message.into(), location: None, closed: false, source: None }
    }

    /// The engine's own error, of `kind`; its text is the message.
    pub fn engine_error(
        kind: StorageErrorKind,
        engine: &'static str,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        let source = source.into();
        Self { message: source.to_string(), source: Some(source), ..Self::with_kind(kind, engine, "") }
    }

    /// A failure a retry may get past.
    pub fn transient(engine: &'static str, message: impl Into<String>) -> Self {
        Self::with_kind(StorageErrorKind::Transient, engine, message)
    }

    /// A write refused because what it was planned on changed.
    pub fn conflict(engine: &'static str, message: impl Into<String>) -> Self {
        Self::with_kind(StorageErrorKind::Conflict, engine, message)
    }

    /// A failure no retry fixes.
    pub fn fatal(engine: &'static str, message: impl Into<String>) -> Self {
        Self::with_kind(StorageErrorKind::Fatal, engine, message)
    }

    /// Stored bytes of `stream_id` at `version` that are not what they must
    /// be, and why.
    pub fn corrupt(engine: &'static str, stream_id: &str, version: u64, reason: impl Into<String>) -> Self {
        Self {
            location: Some((stream_id.to_owned(), version)),
            ..Self::with_kind(StorageErrorKind::Corrupt, engine, reason)
        }
    }

    /// The store is closing or closed: appends and reads after
    /// [`super::EventStore::close`] (transient: another process, or this one
    /// restarted, serves them).
    pub fn closed(engine: &'static str) -> Self {
        Self { closed: true, ..Self::transient(engine, "the store is closed") }
    }

    /// What kind of failure.
    pub fn kind(&self) -> StorageErrorKind {
        self.kind
    }

    /// Which engine (`sled`, `memory`, `jetstream`).
    pub fn engine(&self) -> &'static str {
        self.engine
    }

    /// What happened (for corruption, why the bytes are wrong).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// For corruption: the stream and version where it was found.
    pub fn location(&self) -> Option<(&str, u64)> {
        self.location.as_ref().map(|(stream, version)| (stream.as_str(), *version))
    }

    /// Whether it only says the store is closed.
    pub fn is_closed(&self) -> bool {
        self.closed
    }
}

impl fmt::Display for StorageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.location {
            Some((stream, version)) => {
                write!(f, "{}: corrupt record {stream}@{version}: {}", self.engine, self.message)
            }
            None => write!(f, "{}: {}", self.engine, self.message),
        }
    }
}

impl std::error::Error for StorageError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_deref().map(|e| e as &(dyn std::error::Error + 'static))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_storage_error_says_its_engine_kind_and_place() {
        let corrupt = StorageError::corrupt("sled", "b1", 4, "record truncated");
        assert_eq!(corrupt.kind(), StorageErrorKind::Corrupt);
        assert_eq!(corrupt.location(), Some(("b1", 4)));
        assert_eq!(corrupt.to_string(), "sled: corrupt record b1@4: record truncated");
        let io = StorageError::engine_error(StorageErrorKind::Fatal, "sled", std::io::Error::other("disk full"));
        assert_eq!(io.to_string(), "sled: disk full");
        assert!(std::error::Error::source(&io).is_some(), "the engine's error is kept");
        let closed = StorageError::closed("memory");
        assert!(closed.is_closed() && closed.kind() == StorageErrorKind::Transient);
        assert_eq!(StorageErrorKind::Conflict.as_str(), "conflict");
    }
}
