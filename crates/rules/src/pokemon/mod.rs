//! `pokemon-d6` (docs/rules.md §1): forum Pokémon battles on a d6 — attacks,
//! status moves, dodges, Metronome and passing.
//!
//! [`types`] is the vocabulary (actions, outcomes, per-Pokémon state) that
//! every version shares; [`v1`] is how `pokemon-d6@1` resolves it and [`v2`]
//! how `pokemon-d6@2` does (docs/rules.md §6.1: `@1` with four changes). Fields
//! that only `@2` knows (`against` on a dodge, `result` on a dodge's
//! outcome, `breaks_charge` on a status move's) are optional here, so `@1`
//! actions and journaled `@1` outcomes read and write exactly as before.

pub(crate) mod explain;
pub mod types;
pub mod v1;
pub mod v2;

pub use types::*;

use crate::action::{Action, Split};
use crate::dice_request::DiceRequest;
use crate::engine::{Engine, wrong_ruleset};
use crate::error::{Rejection, ResolveError};
use crate::model::state::{Battle, RulesState};
use crate::outcome::Outcome;
use crate::ruleset::RulesetId;
use crate::summary::Summary;

/// `pokemon-d6` at one of its versions, as [`crate::registry`] lists it.
pub(crate) struct Rules(RulesetId);

/// `pokemon-d6@1`.
pub(crate) static V1: Rules = Rules(RulesetId::PokemonD6V1);
/// `pokemon-d6@2` (docs/rules.md §6.1).
pub(crate) static V2: Rules = Rules(RulesetId::PokemonD6V2);

impl Engine for Rules {
    fn dice_needed(&self, battle: &Battle, action: &Action) -> Result<DiceRequest, Rejection> {
        match (self.0, battle.state(), action.split()) {
            (RulesetId::PokemonD6V1, RulesState::Pokemon(state), Split::Pokemon(act)) => v1::dice_needed(state, act),
            (RulesetId::PokemonD6V2, RulesState::Pokemon(state), Split::Pokemon(act)) => {
                v2::dice_needed(battle, state, act)
            }
            _ => Err(wrong_ruleset(self.0, action)),
        }
    }

    fn resolve(&self, battle: &Battle, action: &Action, faces: &[u32]) -> Result<(Outcome, Summary), ResolveError> {
        match (self.0, battle.state(), action.split()) {
            (RulesetId::PokemonD6V1, RulesState::Pokemon(state), Split::Pokemon(act)) => v1::resolve(state, act, faces),
            (RulesetId::PokemonD6V2, RulesState::Pokemon(state), Split::Pokemon(act)) => {
                v2::resolve(battle, state, act, faces)
            }
            _ => Err(wrong_ruleset(self.0, action).into()),
        }
    }

    fn apply(&self, state: &mut RulesState, action: &Action, outcome: &Outcome) -> Result<(), ResolveError> {
        match (self.0, state, action.split()) {
            (RulesetId::PokemonD6V1, RulesState::Pokemon(state), Split::Pokemon(act)) => v1::apply(state, act, outcome),
            (RulesetId::PokemonD6V2, RulesState::Pokemon(state), Split::Pokemon(act)) => v2::apply(state, act, outcome),
            _ => Err(wrong_ruleset(self.0, action).into()),
        }
    }

    fn fits_version(&self, outcome: &Outcome) -> Result<(), String> {
        fits_version(self.0, outcome)
    }
}

/// Whether an outcome has the shape its ruleset version writes: a judge's
/// override may replace fields, but not give an `@1` outcome a field only
/// `@2` knows (its fold would then read it) nor take one from an `@2`
/// outcome. Outcomes of other rulesets always fit.
pub(crate) fn fits_version(ruleset: RulesetId, outcome: &Outcome) -> Result<(), String> {
    let v2 = match ruleset {
        RulesetId::PokemonD6V1 => false,
        RulesetId::PokemonD6V2 => true,
        _ => return Ok(()),
    };
    let (field, present) = match outcome {
        Outcome::Dodge(dodge) => ("result", dodge.result.is_some()),
        Outcome::StatusMove(status_move) => ("breaks_charge", status_move.breaks_charge.is_some()),
        _ => return Ok(()),
    };
    match (v2, present) {
        (false, true) => Err(format!("`{field}` is not part of a {ruleset} {} outcome", outcome.kind().name())),
        (true, false) => Err(format!("a {ruleset} {} outcome needs `{field}`", outcome.kind().name())),
        _ => Ok(()),
    }
}
