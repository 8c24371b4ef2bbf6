//! The battlelog journal: a durable, hash-chained event store on sled, served
//! over gRPC and fanned out to NATS JetStream through an outbox.
//!
//! - [`record`]: the stored record and its SHA-256 chain (PROTOCOL.md §4).
//! - [`limits`]: input limits and validation (nothing invalid is written).
//! - [`guard`]: the battle guard — every stream is a battle, and no append
//!   may leave it one that no longer folds (nonces, epochs, reveals, close).
//! - [`store`]: the sled layout, one transaction per append, reads, outbox,
//!   chain verification.
//! - `committer` (private): the group-commit thread — many appends, one flush.
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
//! to call directly; `serve(journal, listener, shutdown)` also exposes it over
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
pub use journal::{Journal, JournalOptions, Subscription};
pub use limits::{ExpectedVersion, Limits, NewEvent};
pub use outbox::{EventPublisher, PublishError};
pub use server::{ServeError, run, serve, serve_with_tls};
pub use store::{AppendOutcome, AppendedEvent, ChainCheck, StoredEvent, StreamHead};
