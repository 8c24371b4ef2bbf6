//! The battlelog journal: a durable, hash-chained event store on sled, served
//! over gRPC and fanned out to NATS JetStream through an outbox.
//!
//! - [`record`]: the stored record and its SHA-256 chain (PROTOCOL.md §4).
//! - [`limits`]: input limits and validation (nothing invalid is written).
//! - [`guard`]: the battle guard — every stream is a battle, and no append
//!   may leave it one that no longer folds (nonces, epochs, reveals, close).
//! - [`store`]: the storage seam — [`EventStore`] (append a group
//!   atomically with expected versions and idempotency keys, read a stream
//!   or the global log, heads, chain verification, the outbox cursor) — and
//!   its providers: [`SledStore`] on disk ([`store::sled`], the only module
//!   that sees sled) and [`MemoryStore`] in memory, both on the key-value
//!   layout of [`store::kv`], both passing one conformance suite.
//! - `committer` (private): the group-commit thread — many appends, one
//!   flush — and the durable watermark readers read below.
//! - [`journal`]: [`Journal`], the embeddable handle (append, read, subscribe,
//!   verify, shutdown).
//! - [`outbox`]: the drain that publishes committed events in order through an
//!   [`EventPublisher`]; [`nats`]: the JetStream one.
//! - [`service`]: the gRPC service; [`error`]: errors and their gRPC codes
//!   (the one mapping).
//! - [`server`]: [`run`] (config → serving until shutdown) and [`serve`] (an
//!   open journal on a listener); [`config`]: the layered configuration.
//!
//! Embedding: `Journal::open(JournalOptions::new(dir)).await?` gives a handle
//! to call directly (`Journal::open_on(store, options)` on any
//! [`EventStore`]); `serve(journal, listener, shutdown)` also exposes it over
//! gRPC; `journal.shutdown().await` commits what is queued and closes.

mod committer;
pub mod config;
pub mod error;
pub mod guard;
pub mod journal;
pub mod limits;
pub mod nats;
pub mod outbox;
pub mod record;
pub mod server;
pub mod service;
pub mod store;

pub use config::{Config, ConfigError};
pub use error::JournalError;
pub use journal::{CommitStats, Journal, JournalOptions, Subscription};
pub use limits::{ExpectedVersion, Limits, NewEvent};
pub use outbox::{EventPublisher, PublishError};
pub use server::{ServeError, run, serve, serve_limited, serve_with_tls};
pub use store::{
    AppendOutcome, AppendedEvent, ChainCheck, EventStore, MemoryStore, SledStore, StorageError, StoredEvent, StreamHead,
};
