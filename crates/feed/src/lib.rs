//! The wire format of the journal's event feed over NATS, in one place that
//! every side compiles against: the journal writes it, the resolver and the
//! webhooks read it. Pure (no I/O, no clock; `tests/purity.rs`): headers go
//! in and out as (name, value) pairs, so the NATS client stays with the
//! services.
//!
//! Two kinds of message travel on the feed:
//!
//! - **An event** (the sled journal's fan-out, `battlelog.events.<tenant>.<battle>`):
//!   the payload is one record's exact bytes (docs/protocol.md §4), the
//!   headers ([`event::EventHeaders`]) its id, version, global position,
//!   type and chain hash, for consumers that do not decode.
//! - **An append** (the JetStream journal's own log,
//!   `battlelog.journal.<tenant>.<battle>`): one message per planned
//!   append, its records framed with their hashes ([`log::LogMessage`]).
//!
//! Modules:
//!
//! - [`headers`]: every header name, battlelog's and the NATS ones the
//!   journal sets.
//! - [`subject`]: subjects, tenants as subject tokens, and reading a subject back.
//! - [`event`]: the headers of an event message, encoded and decoded.
//! - [`log`]: the framing of an append message, encoded and decoded, and the
//!   light read of its headers ([`log::LogSpan`]).
//! - [`position`]: the JetStream log's global positions.
//! - [`FrameError`]: what is wrong with a message, naming the header or the
//!   part of the payload.

pub mod event;
pub mod headers;
pub mod log;
pub mod position;
pub mod subject;

/// A chain hash, h(version) (docs/protocol.md §4): SHA-256, 32 bytes.
pub type Hash = [u8; 32];

/// A message that is not what the feed's format says.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// A header the message must carry is absent.
    #[error("header {0} missing")]
    MissingHeader(&'static str),
    /// A header is there but does not hold what it must.
    #[error("header {name}: {problem}")]
    BadHeader {
        /// The header.
        name: &'static str,
        /// What it holds against what it must.
        problem: String,
    },
    /// The payload ends inside a record's hash and length.
    #[error("payload truncated in the framing of record {index}: {left} bytes left of the {needed} it takes")]
    TruncatedFraming {
        /// The record's index in the message.
        index: usize,
        /// Bytes left.
        left: usize,
        /// Bytes a framing takes.
        needed: usize,
    },
    /// The payload ends inside a record.
    #[error("payload truncated in record {index}: its framing says {len} bytes, {left} are left")]
    TruncatedRecord {
        /// The record's index in the message.
        index: usize,
        /// The length its framing says.
        len: usize,
        /// Bytes left.
        left: usize,
    },
    /// The payload holds another number of records than the header says.
    #[error("payload holds {found} records, header {} says {count}", headers::COUNT)]
    CountMismatch {
        /// Records in the payload.
        found: usize,
        /// What the header says.
        count: usize,
    },
}

/// Reads one header: `None` when absent.
pub(crate) fn require(header: &impl Fn(&str) -> Option<String>, name: &'static str) -> Result<String, FrameError> {
    header(name).ok_or(FrameError::MissingHeader(name))
}

/// A header holding a decimal number.
pub(crate) fn number<T: std::str::FromStr>(name: &'static str, text: &str) -> Result<T, FrameError>
where
    T::Err: std::fmt::Display,
{
    text.parse::<T>().map_err(|e| FrameError::BadHeader { name, problem: format!("{text:?} is not a number: {e}") })
}

/// A header holding 32 bytes in hex.
pub(crate) fn hash(name: &'static str, text: &str) -> Result<Hash, FrameError> {
    <Hash as hex::FromHex>::from_hex(text)
        .map_err(|e| FrameError::BadHeader { name, problem: format!("not 32 bytes of hex: {e}") })
}
