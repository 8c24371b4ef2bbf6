//! The one battle-stream client of the battlelog services.
//!
//! The resolver and the roller both fold a battle's journal stream into the
//! little they need of it; this crate is how they read it, append to it,
//! cache what they folded and understand what the journal answered.
//!
//! - [`client`]: [`StreamClient`] — catch a fold up to the head the journal
//!   reports (no empty trailing read), append with an expected version, and
//!   fetch a few records on the rare paths that need them (an idempotent
//!   replay, a battle as it stood at an old version).
//! - [`batch`]: [`AppendQueue`] — appends go out at once while few calls
//!   are in flight, and together in one `AppendBatch` when more queue up;
//!   each is answered as if it had been sent alone.
//! - [`cache`]: [`FoldCache`] — one folded state per battle, evicted by one
//!   policy within a budget in bytes; a state in use is never evicted.
//! - [`metrics`]: [`CacheMetrics`] — the cache's size, hits and misses and
//!   the catch-up reads, for a service's `/metrics`.
//! - [`error`]: [`StreamError`] — the journal's statuses read by their
//!   `google.rpc.ErrorInfo` reasons (never by message text), the one way back
//!   to a `Status`, and how a peer's status is passed on ([`downstream`]).
//!
//! It is a crate of its own rather than a module of `battlelog-runtime`
//! because it needs the journal's gRPC client and a cache crate that the
//! runtime's other users (config, TLS, logging) have no use for, and a
//! module of the resolver would make the roller link the resolver.

pub mod batch;
pub mod cache;
pub mod client;
pub mod error;
pub mod metrics;

pub use batch::{AppendLimits, AppendQueue, DEFAULT_APPEND_BATCH, DEFAULT_APPEND_CALLS};
pub use cache::{FoldCache, Held};
pub use client::{Appended, StreamClient};
pub use error::{StreamError, downstream};
pub use metrics::CacheMetrics;

use battlelog_proto::v1::JournalRecord;

/// How many times a command folds the journal again and retries after
/// losing the race for a stream's next version, before it gives up with
/// `ABORTED` (the caller retries with the same request id). The resolver and
/// the roller both use this one limit.
pub const MAX_ATTEMPTS: usize = 32;

/// The default budget of a service's fold cache: 64 MiB.
pub const DEFAULT_CACHE_BYTES: u64 = 64 * 1024 * 1024;

/// A battle's state folded from its stream, as a service keeps it.
pub trait Fold: Default + Send + 'static {
    /// Why a record does not fold.
    type Error: std::fmt::Display;

    /// The version of the next record to fold: the number folded so far.
    fn next_version(&self) -> u64;

    /// Folds the next record of the stream.
    fn apply(&mut self, record: &JournalRecord) -> Result<(), Self::Error>;

    /// About how many bytes of memory this state holds (its heap included),
    /// for the cache budget. An estimate, but one that grows with the state.
    fn weight(&self) -> usize;
}
