//! `arcana-2d10` (docs/rules.md §2): roll-under 2d10 skill and magic checks,
//! the exchange of blows, per-episode ability limits and concentration.
//!
//! [`types`] is the vocabulary every version shares; [`v1`] is how
//! `arcana-2d10@1` resolves it and [`v2`] how `arcana-2d10@2` does
//! (docs/rules.md §6.2: sheets declare whether an ability is `magical` and its
//! `min_points`, and broken concentration blocks magical abilities only).
//! The sheet fields live on [`crate::AbilitySheet`]; an `@1` battle refuses
//! them when it opens.

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

/// `arcana-2d10` at one of its versions, as [`crate::registry`] lists it.
pub(crate) struct Rules(RulesetId);

/// `arcana-2d10@1`.
pub(crate) static V1: Rules = Rules(RulesetId::Arcana2d10V1);
/// `arcana-2d10@2` (docs/rules.md §6.2).
pub(crate) static V2: Rules = Rules(RulesetId::Arcana2d10V2);

impl Engine for Rules {
    fn dice_needed(&self, battle: &Battle, action: &Action) -> Result<DiceRequest, Rejection> {
        match (self.0, battle.state(), action.split()) {
            (RulesetId::Arcana2d10V1, RulesState::Arcana(state), Split::Arcana(act)) => {
                v1::dice_needed(battle, state, act)
            }
            (RulesetId::Arcana2d10V2, RulesState::Arcana(state), Split::Arcana(act)) => {
                v2::dice_needed(battle, state, act)
            }
            _ => Err(wrong_ruleset(self.0, action)),
        }
    }

    fn resolve(&self, battle: &Battle, action: &Action, faces: &[u32]) -> Result<(Outcome, Summary), ResolveError> {
        match (self.0, battle.state(), action.split()) {
            (RulesetId::Arcana2d10V1, RulesState::Arcana(_), Split::Arcana(act)) => v1::resolve(battle, act, faces),
            (RulesetId::Arcana2d10V2, RulesState::Arcana(_), Split::Arcana(act)) => v2::resolve(battle, act, faces),
            _ => Err(wrong_ruleset(self.0, action).into()),
        }
    }

    fn apply(&self, state: &mut RulesState, action: &Action, outcome: &Outcome) -> Result<(), ResolveError> {
        match (self.0, state, action.split()) {
            // §6.2 changes what is allowed, not what a use leaves behind.
            (_, RulesState::Arcana(state), Split::Arcana(act)) => v1::apply(state, act, outcome),
            _ => Err(wrong_ruleset(self.0, action).into()),
        }
    }
}
