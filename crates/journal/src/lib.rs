//! The battlelog journal: a durable, hash-chained event store on sled, served
//! over gRPC and fanned out to NATS JetStream through an outbox.
//!
//! - [`record`]: the stored record and its SHA-256 chain (docs/protocol.md §4).
//! - [`limits`]: input limits and validation (nothing invalid is written).
//! - [`guard`]: the battle guard — every stream is a battle, and no append
//!   may leave it one that no longer folds (nonces, epochs, reveals, close).
//! - [`planner`]: the append policy above storage — idempotency keys, the
//!   expected version, the battle guard, the chain — shared by every store.
//! - [`store`]: the storage seam — [`EventStore`] (async and narrow: heads
//!   and idempotency entries, append planned records at the head they were
//!   planned against, read a stream or the global log), what a store fails
//!   with ([`StorageError`]: a kind the journal maps once, in [`error`]) —
//!   and its providers: [`SledStore`] on disk ([`store::sled`], the only module
//!   that sees sled) and [`MemoryStore`] in memory, both a
//!   [`store::group_commit::KvStore`] (group commit, the durable watermark) on
//!   the key-value layout of [`store::kv_tables`]; and
//!   [`store::jetstream::JetStreamStore`], the log in a NATS JetStream
//!   stream that several journal processes share (`--backend jetstream`);
//!   all pass one conformance suite ([`store::conformance`], feature
//!   `test-util`).
//! - [`chain`]: the chain check, once for every store, reading through
//!   [`EventStore`] ([`ChainCheck`]).
//! - [`copy`]: copying every stream from one store to another, exact to the
//!   byte and verified on both sides (the migration from sled).
//! - [`journal`]: [`Journal`], the embeddable handle (append, read, subscribe,
//!   verify, list battles, shutdown).
//! - [`kept`]: the newest signed checkpoint kept apart from the store, what
//!   the store is held to at start, and the operator's `accept-loss`.
//! - [`merkle_log`]: the transparency log of docs/protocol.md §5 — a Merkle
//!   tree over the global log (rebuilt from it at start), signed
//!   checkpoints, inclusion and consistency proofs, signed stream heads —
//!   above the store, so every backend has it.
//! - [`index`]: the battle index behind listings, folded from the global log
//!   by every journal process (the same on every backend), bounded in bytes.
//! - [`outbox`]: the drain that publishes committed events in order through an
//!   [`EventPublisher`]; [`nats`]: the JetStream one.
//! - [`service`]: the gRPC service; [`error`]: errors and their gRPC codes
//!   (the one mapping).
//! - [`metrics`]: [`JournalMetrics`], what `/metrics` shows of appends,
//!   group commits, flushes and the outbox.
//! - [`server`]: [`run`] (config → serving until shutdown) and [`serve`] (an
//!   open journal on a listener); [`config`]: the layered configuration.
//!
//! Embedding: `Journal::open(JournalOptions::new(dir)).await?` gives a handle
//! to call directly (`Journal::open_on(store, options)` on any
//! [`EventStore`]); `serve(journal, listener, shutdown)` also exposes it over
//! gRPC; `journal.shutdown().await` commits what is queued and closes.

pub mod chain;
pub mod config;
pub mod copy;
pub mod error;
pub mod guard;
pub mod index;
pub mod journal;
pub mod kept;
pub mod limits;
pub mod merkle_log;
pub mod metrics;
pub mod nats;
pub mod outbox;
pub mod planner;
pub mod record;
pub mod server;
pub mod service;
pub mod store;

pub use chain::ChainCheck;
pub use config::{Config, ConfigError};
pub use error::JournalError;
pub use journal::{CommitStats, Journal, JournalOptions, Subscription};
pub use limits::{ExpectedVersion, Limits, NewEvent};
pub use merkle_log::{ConsistencyProof, InclusionProof, SignedHead, TransparencyOptions};
pub use metrics::JournalMetrics;
pub use outbox::{EventPublisher, PublishError};
pub use server::{ServeError, run, serve};
pub use store::{
    AppendOutcome, AppendedEvent, EventStore, MemoryStore, SledStore, StorageError, StorageErrorKind, StoredEvent,
    StreamHead,
};

// What its binary runs, and `battlelog up` (battlelog_runtime::service).
battlelog_runtime::service!(Config, config::SERVICE, ServeError, run);
