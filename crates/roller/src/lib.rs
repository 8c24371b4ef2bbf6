//! The battlelog roller: the only place a battle's dice come from.
//!
//! - [`master_key`]: the secret every server seed derives from (docs/protocol.md §1).
//! - [`ledger`]: what the roller needs to know of a battle (client seed,
//!   epoch, next nonce, recorded requests), folded from its journal stream.
//! - [`service`]: the `Roller` gRPC service: commit, roll, reveal.
//! - [`metrics`]: [`RollerMetrics`], what `/metrics` shows of rolls,
//!   dice, reveals and commitments.
//! - [`server`]: [`run`] (config → serving until shutdown) and [`serve`].
//! - [`config`]: defaults ← file ← `BATTLELOG_ROLLER_*` ← flags.
//! - [`mod@beacon`]: protocol v2's beacon over drand's HTTP API — the client
//!   that asks relays for verified rounds, and the development beacon.
//!
//! The roller keeps nothing of its own: seeds derive from the master key,
//! nonces and epochs come from the journal, and a roll's faces are returned
//! only after its `DiceRolled` event is durably journaled (ARCHITECTURE.md,
//! invariant 1). Any number of replicas may run side by side.

pub mod beacon;
pub mod config;
pub mod ledger;
pub mod master_key;
pub mod metrics;
pub mod server;
pub mod service;

pub use config::Config;
pub use master_key::MasterKey;
pub use metrics::RollerMetrics;
pub use server::{ServeError, run, serve};
pub use service::RollerService;

// What its binary runs, and `battlelog up` (battlelog_runtime::service).
battlelog_runtime::service!(Config, config::SERVICE, ServeError, run);
