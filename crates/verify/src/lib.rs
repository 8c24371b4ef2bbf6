//! Verification of battlelog battles, pure: no I/O, no clock, no
//! randomness (ARCHITECTURE.md, invariant 7; `clippy.toml` and `tests/purity.rs`
//! hold it to that). What a judge or a stranger needs to check a battle
//! without trusting the operator, and what the journal writes its chain
//! with.
//!
//! - [`chain`]: the stream hash chain `h(v)` of docs/protocol.md §4 — the one
//!   implementation, used by the journal to write and by the audit to check.
//! - [`export`]: the JSON Lines export (docs/protocol.md §4), written from the
//!   journal's events with its trailer line (§5, `export::trailer_from`)
//!   and read back.
//! - [`mod@audit`]: the audit of an export or a stream — chain, records,
//!   commitments and their signatures, re-derived rolls, re-resolved
//!   actions, and the export's trailer and a kept checkpoint
//!   (docs/protocol.md §5, `audit::proofs`) — with typed findings by
//!   version.
//! - [`judging`]: disputes, rulings and the close as a judge follows them —
//!   who made each (the recorded credential), what it contests, the before
//!   and after of an override's fields, whether it came after the close,
//!   and each action's final outcome after every ruling.
//! - [`explained`]: the battle folded from its records as the resolver's
//!   view folds it (the state `replay --at` shows), with every action
//!   explained on the way (`rules::explain`) — for the judge's page and
//!   `replay`.
//! - [`fold`]: battle events read back into rules types (participants, an
//!   action and its outcome, disputes and rulings as actions), shared with
//!   the resolver's view.
//! - [`stream_state`]: a battle stream's protocol state (opened, epoch and
//!   its commitment, revealed, next nonce, closed) and the rules each event
//!   must keep — the one fold the journal's guard, the roller's ledger, the
//!   resolver's view and the audit share.

pub mod audit;
pub mod chain;
pub mod explained;
pub mod export;
pub mod fold;
pub mod judging;
pub mod stream_state;

pub use audit::{
    AuditReport, AuditedRecord, Check, Finding, Problem, Trusted, audit, audit_pinned, audit_trusting,
    audit_with_roller_key,
};
pub use chain::{Hash, HashHexError, chain_hash, genesis_hash, hash_from_hex};
pub use export::{Export, ExportError, ExportLine, trailer_from};
pub use fold::PartsError;
pub use stream_state::{StreamEvent, StreamState, Violation};
