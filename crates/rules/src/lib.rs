//! The rules engine of battlelog: the four rulesets of `docs/rules.md`, the
//! judges' actions and free rolls of its §5, and the battle state they fold
//! into. Pure: no I/O, no clock, no randomness — resolving is
//! `(battle, action, dice faces) → outcome + summary + new battle`.
//!
//! - [`model`]: the shared model — what a battle opens with
//!   ([`model::sheet`]: participants, sheets, [`Version`]) and the battle as
//!   it stands ([`model::state`]: [`Battle`], its entries, [`RulesState`]).
//! - [`battle`]: how a battle changes — opening, the dice an action needs,
//!   resolving, folding recorded outcomes, rulings and replay to any
//!   version. It asks the one dispatch (`registry`, private) for the
//!   battle's ruleset version and never matches on a ruleset itself.
//! - [`action`] / [`outcome`]: the typed JSON vocabulary of every ruleset,
//!   one variant per action kind, each holding its family's own type.
//! - [`ruleset`]: `name@version` identifiers; each version is its own `v1`,
//!   `v2` … module, so a new version never changes an old one. Released:
//!   `@1` and `@2` of `pokemon-d6`, `arcana-2d10`, `berserk` and
//!   `pbta-2d6`; a battle keeps the version it opened with.
//! - [`pokemon`], [`arcana`], [`berserk`], [`pbta`]: one folder per
//!   ruleset, each the same shape — `types.rs` (its actions, outcomes and
//!   state), `v1.rs` / `v2.rs` (how each version resolves them),
//!   `explain.rs` (why its results are what they are) and `mod.rs` (its
//!   `Engine`, one `static` per version, which `registry` lists). Each `v2` is docs/rules.md
//!   §6: it runs `v1`'s code and differs only where §6 says (a `@2` dodge
//!   names the attack it `against`s; `@2` sheets give abilities `magical`
//!   and `min_points`; a `@2` fight's exchange is chosen after the roll by
//!   an `exchange_choice`, and a `fixed_roll` replaces a die; a `@2` move
//!   takes its trait from the sheet and needs stakes).
//! - [`common`]: rulings, disputes and free rolls (§5).
//! - [`error`]: why an action was refused ([`error::Rejection`]), with each
//!   rule's stable reason ([`error::RulesReason`], the services'
//!   `ErrorInfo` reason), its docs/rules.md section and its Russian message.
//! - [`dice_request`]: which dice to ask the roller for, and the check of
//!   the faces handed back.
//! - [`fraction`]: exact multipliers and round-half-up.
//! - [`summary`]: one-line Russian and English forum summaries.
//! - [`explain`]: why a result is what it is — the dice and what each
//!   meant, every modifier by name, the docs/rules.md row, the state changes —
//!   and the state a judge reads at any version, labelled in English and
//!   Russian ([`explain::parts`] is what each family's `explain.rs` builds).
//! - [`script`]: the JSON Lines player behind `battlelog rules play`.
//! - [`schema`]: each ruleset version's JSON Schemas (sheet, actions,
//!   outcomes), derived from these types and narrowed per version.
//! - [`read`]: JSON into these types, naming the path of a refused value.

pub mod action;
pub mod arcana;
pub mod battle;
pub mod berserk;
pub mod common;
pub mod dice_request;
mod engine;
pub mod error;
pub mod explain;
pub mod fraction;
pub mod model;
pub mod outcome;
pub mod pbta;
pub mod pokemon;
mod present_or_null;
pub mod read;
mod registry;
pub mod ruleset;
pub mod schema;
pub mod script;
pub mod summary;

#[cfg(test)]
mod test_support;

pub use action::{Action, ActionKind};
pub use dice_request::{DiceError, DiceRequest, RollSpec};
pub use error::{OpenError, Rejection, ResolveError};
pub use fraction::Fraction;
pub use model::{AbilitySheet, Battle, Entry, OpenBattle, Participant, Resolution, RulesState, Version};
pub use outcome::Outcome;
pub use ruleset::{Family, RulesetError, RulesetId};
pub use summary::Summary;
