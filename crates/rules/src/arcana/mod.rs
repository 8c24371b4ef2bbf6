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

/// `arcana-2d10@1`, registered in [`crate::registry`].
pub(crate) struct V1;

impl Engine for V1 {
    fn dice_needed(&self, battle: &Battle, action: &Action) -> Result<DiceRequest, Rejection> {
        match (battle.state(), action.split()) {
            (RulesState::Arcana(state), Split::Arcana(act)) => v1::dice_needed(battle, state, act),
            _ => Err(wrong_ruleset(RulesetId::Arcana2d10V1, action)),
        }
    }

    fn resolve(&self, battle: &Battle, action: &Action, faces: &[u32]) -> Result<(Outcome, Summary), ResolveError> {
        match (battle.state(), action.split()) {
            (RulesState::Arcana(_), Split::Arcana(act)) => v1::resolve(battle, act, faces),
            _ => Err(wrong_ruleset(RulesetId::Arcana2d10V1, action).into()),
        }
    }

    fn apply(&self, state: &mut RulesState, action: &Action, outcome: &Outcome) -> Result<(), ResolveError> {
        match (state, action.split()) {
            // §6.2 changes what is allowed, not what a use leaves behind.
            (RulesState::Arcana(state), Split::Arcana(act)) => v1::apply(state, act, outcome),
            _ => Err(wrong_ruleset(RulesetId::Arcana2d10V1, action).into()),
        }
    }
}

/// `arcana-2d10@2`, registered in [`crate::registry`].
pub(crate) struct V2;

impl Engine for V2 {
    fn dice_needed(&self, battle: &Battle, action: &Action) -> Result<DiceRequest, Rejection> {
        match (battle.state(), action.split()) {
            (RulesState::Arcana(state), Split::Arcana(act)) => v2::dice_needed(battle, state, act),
            _ => Err(wrong_ruleset(RulesetId::Arcana2d10V2, action)),
        }
    }

    fn resolve(&self, battle: &Battle, action: &Action, faces: &[u32]) -> Result<(Outcome, Summary), ResolveError> {
        match (battle.state(), action.split()) {
            (RulesState::Arcana(_), Split::Arcana(act)) => v2::resolve(battle, act, faces),
            _ => Err(wrong_ruleset(RulesetId::Arcana2d10V2, action).into()),
        }
    }

    fn apply(&self, state: &mut RulesState, action: &Action, outcome: &Outcome) -> Result<(), ResolveError> {
        match (state, action.split()) {
            // §6.2 changes what is allowed, not what a use leaves behind.
            (RulesState::Arcana(state), Split::Arcana(act)) => v1::apply(state, act, outcome),
            _ => Err(wrong_ruleset(RulesetId::Arcana2d10V2, action).into()),
        }
    }
}
