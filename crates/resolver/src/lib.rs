//! The battlelog resolver: battles' game logic, served over gRPC.
//!
//! - [`view`]: a battle folded from its journal stream (replay to any version).
//! - [`battle_id`]: the ids `OpenBattle` generates, keyed with a secret, and
//!   the form no caller may choose.
//! - [`service`]: the `Resolver` gRPC service, split by concern: the
//!   commands (open, act, dispute, rule, close) and the optimistic loop
//!   that act, dispute, rule and close share; the reads (get, audit,
//!   export, watch, reveal, checkpoints, list rulesets and battles); who
//!   may call what ([`service::rights`]); idempotency keys and replays.
//! - [`listing`]: `ListBattles`, a tenant's battles newest first, paged,
//!   from the journal's battle index.
//! - [`post`]: the forum post of each mutating reply, from the reply itself
//!   (the writing is `battlelog-post`'s, pure).
//! - [`metrics`]: [`ResolverMetrics`], what `/metrics` shows of the fold
//!   cache and the actions resolved.
//! - [`server`]: [`run`] (config → serving until shutdown) and [`serve`].
//! - [`config`]: defaults ← file ← `BATTLELOG_RESOLVER_*` ← flags.
//!
//! The resolver keeps nothing of its own: a battle's state is a fold of the
//! journal, cached per battle (folded state only, within `cache_bytes`; see
//! `battlelog_stream`). Reads catch the fold up from the journal first;
//! commands trust a warm fold and let the append's expected version catch
//! a stale one.
//! The audit, the export format and the hash chain are `battlelog-verify`'s
//! (pure, shared with the journal and the CLI).

pub mod battle_id;
pub mod config;
pub mod listing;
pub mod metrics;
pub mod post;
pub mod server;
pub mod service;
pub mod view;

pub use config::Config;
pub use metrics::ResolverMetrics;
pub use server::{ServeError, run, serve};
pub use service::ResolverService;

// What its binary runs, and `battlelog up` (battlelog_runtime::service).
battlelog_runtime::service!(Config, config::SERVICE, ServeError, run);
