//! `pbta-2d6` (docs/rules.md §4): narrative Pokémon trainers, 2d6 + trait.
//!
//! [`types`] is the vocabulary every version shares; [`v1`] is how
//! `pbta-2d6@1` resolves it and [`v2`] how `pbta-2d6@2` does (docs/rules.md
//! §6.4: what a move may say is narrower, and only a move that goes wrong
//! exposes its helpers).

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

/// `pbta-2d6` at one of its versions, as [`crate::registry`] lists it.
pub(crate) struct Rules(RulesetId);

/// `pbta-2d6@1`.
pub(crate) static V1: Rules = Rules(RulesetId::Pbta2d6V1);
/// `pbta-2d6@2` (docs/rules.md §6.4).
pub(crate) static V2: Rules = Rules(RulesetId::Pbta2d6V2);

impl Engine for Rules {
    fn dice_needed(&self, battle: &Battle, action: &Action) -> Result<DiceRequest, Rejection> {
        match (self.0, battle.state(), action.split()) {
            (RulesetId::Pbta2d6V1, _, Split::Pbta(act)) => v1::dice_needed(battle, act),
            (RulesetId::Pbta2d6V2, _, Split::Pbta(act)) => v2::dice_needed(battle, act),
            _ => Err(wrong_ruleset(self.0, action)),
        }
    }

    fn resolve(&self, battle: &Battle, action: &Action, faces: &[u32]) -> Result<(Outcome, Summary), ResolveError> {
        match (self.0, battle.state(), action.split()) {
            (RulesetId::Pbta2d6V1, _, Split::Pbta(act)) => v1::resolve(battle, act, faces),
            (RulesetId::Pbta2d6V2, _, Split::Pbta(act)) => v2::resolve(battle, act, faces),
            _ => Err(wrong_ruleset(self.0, action).into()),
        }
    }

    fn apply(&self, state: &mut RulesState, action: &Action, outcome: &Outcome) -> Result<(), ResolveError> {
        match (self.0, state, action.split()) {
            // Stateless: only the outcome's kind has to fit.
            (_, RulesState::Pbta, Split::Pbta(_)) => same_kind(action, outcome),
            _ => Err(wrong_ruleset(self.0, action).into()),
        }
    }
}
