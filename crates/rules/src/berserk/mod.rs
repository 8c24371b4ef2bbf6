//! `berserk` (docs/rules.md §3): the Berserk card game's strike table, strikes
//! against closed cards, and X-Y-Z effects.
//!
//! [`types`] is the vocabulary every version shares; [`v1`] is how
//! `berserk@1` resolves it and [`v2`] how `berserk@2` does (docs/rules.md §6.3:
//! `@1` with the exchange chosen after the roll and fixed rolls). Fields
//! that only `@2` knows (`fixed_roll` on a side, `pending_choice` on a
//! strike's outcome) are optional here, so `@1` actions and journaled `@1`
//! outcomes read as before; `avoid_exchange` is optional so that `@2` can
//! refuse it whenever it is sent, even as `false`.

pub(crate) mod explain;
pub mod types;
pub mod v1;
pub mod v2;

pub use types::*;

use crate::action::{Action, Split};
use crate::dice_request::DiceRequest;
use crate::engine::{Engine, same_kind, wrong_ruleset};
use crate::error::{Rejection, ResolveError};
use crate::model::state::{Battle, RulesState};
use crate::outcome::Outcome;
use crate::ruleset::RulesetId;
use crate::summary::Summary;

/// `berserk` at one of its versions, as [`crate::registry`] lists it.
pub(crate) struct Rules(RulesetId);

/// `berserk@1`.
pub(crate) static V1: Rules = Rules(RulesetId::BerserkV1);
/// `berserk@2` (docs/rules.md §6.3).
pub(crate) static V2: Rules = Rules(RulesetId::BerserkV2);

impl Engine for Rules {
    fn dice_needed(&self, battle: &Battle, action: &Action) -> Result<DiceRequest, Rejection> {
        match (self.0, battle.state(), action.split()) {
            (RulesetId::BerserkV1, _, Split::Berserk(act)) => v1::dice_needed(battle, act),
            (RulesetId::BerserkV2, _, Split::Berserk(act)) => v2::dice_needed(battle, act),
            _ => Err(wrong_ruleset(self.0, action)),
        }
    }

    fn resolve(&self, battle: &Battle, action: &Action, faces: &[u32]) -> Result<(Outcome, Summary), ResolveError> {
        match (self.0, battle.state(), action.split()) {
            (RulesetId::BerserkV1, _, Split::Berserk(act)) => v1::resolve(battle, act, faces),
            (RulesetId::BerserkV2, _, Split::Berserk(act)) => v2::resolve(battle, act, faces),
            _ => Err(wrong_ruleset(self.0, action).into()),
        }
    }

    fn apply(&self, state: &mut RulesState, action: &Action, outcome: &Outcome) -> Result<(), ResolveError> {
        match (self.0, state, action.split()) {
            // Stateless: only the outcome's kind has to fit. A `berserk@2` choice
            // awaiting its answer is read from the history (the strikes'
            // effective outcomes), not kept as state.
            (_, RulesState::Berserk, Split::Berserk(_)) => same_kind(action, outcome),
            _ => Err(wrong_ruleset(self.0, action).into()),
        }
    }

    fn fits_version(&self, outcome: &Outcome) -> Result<(), String> {
        fits_version(self.0, outcome)
    }
}

/// Whether a strike's outcome has the shape its version writes (as
/// [`crate::pokemon::fits_version`] does for Pokémon): `pending_choice` is
/// absent under `@1` and present under `@2`, where a side may only be
/// pending on a fight row that has both sides striking (+2 or +4 for the
/// attacker, −4 for the defender) — so a judge's override cannot leave a
/// choice that [`v2`] could not resolve. Other outcomes always fit.
pub(crate) fn fits_version(ruleset: RulesetId, outcome: &Outcome) -> Result<(), String> {
    let Outcome::Strike(strike) = outcome else { return Ok(()) };
    match (ruleset, &strike.pending_choice) {
        (RulesetId::BerserkV1, Some(_)) => Err(format!("`pending_choice` is not part of a {ruleset} strike outcome")),
        (RulesetId::BerserkV2, None) => Err(format!("a {ruleset} strike outcome needs `pending_choice`")),
        (RulesetId::BerserkV2, Some(Some(side))) if v2::chooser(strike.diff) != Some(*side) => {
            Err(format!("`pending_choice` {} does not fit a strike whose diff is {:?}", side.name(), strike.diff))
        }
        _ => Ok(()),
    }
}
