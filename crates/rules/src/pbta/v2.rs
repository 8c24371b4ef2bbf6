//! `pbta-2d6@2`: `pbta-2d6@1` ([`super::v1`]) with exactly the changes of
//! docs/rules.md §6.4, and nothing else:
//!
//! 1. the trait comes from the sheet: a `move` takes no `trait_value`, and
//!    a trait the actor's sheet does not give is refused;
//! 2. `stakes` is required and not blank;
//! 3. `helpers` may not name the actor, nor one id twice (they need not be
//!    participants: a partner Pokémon may help);
//! 4. `exposed` lists the helpers on `success_with_cost` and `miss` only.
//!
//! The dice, the bands and the total are `@1`'s code.
//!
//! Where docs/rules.md is silent, this reading is ours (each step has a test):
//! the checks run in this order — the actor (as in `@1`), `trait_value`,
//! an unknown trait, a trait not on the sheet, `stakes`, `helpers`. The
//! vectors agree wherever two of them meet in one move.

use std::collections::HashSet;

use super::types::{Act, Move, MoveResult, TRAITS};
use super::v1;
use crate::dice_request::{DiceRequest, RollSpec};
use crate::error::{Rejection, ResolveError};
use crate::model::state::Battle;
use crate::outcome::Outcome;
use crate::summary::Summary;

fn check(battle: &Battle, action: &Move) -> Result<(), Rejection> {
    let Some(sheet) = battle.participant(&action.actor) else {
        return Err(Rejection::UnknownParticipant { field: "actor", id: action.actor.clone() });
    };
    if action.trait_value.is_some() {
        return Err(Rejection::TraitValueFromSheet);
    }
    let name = &action.trait_name;
    if !TRAITS.contains(&name.as_str()) {
        return Err(Rejection::NotATrait { name: name.clone() });
    }
    if !sheet.traits.contains_key(name) {
        return Err(Rejection::TraitNotOnSheet { actor: action.actor.clone(), name: name.clone() });
    }
    if action.stakes.trim().is_empty() {
        return Err(Rejection::StakesRequired);
    }
    let mut seen = HashSet::new();
    if let Some(helper) = action.helpers.iter().find(|helper| **helper == action.actor || !seen.insert(helper.as_str()))
    {
        return Err(Rejection::HelpersNotOthers { helper: helper.clone() });
    }
    Ok(())
}

/// §6.4.4: only what goes wrong exposes the helpers.
fn exposes(result: MoveResult) -> bool {
    result != MoveResult::FullSuccess
}

pub(crate) fn dice_needed(battle: &Battle, act: Act<'_>) -> Result<DiceRequest, Rejection> {
    let Act::Move(action) = act;
    check(battle, action)?;
    Ok(DiceRequest::Rolls(vec![RollSpec { count: 2, sides: 6, purpose: "2d6" }]))
}

pub(crate) fn resolve(battle: &Battle, act: Act<'_>, faces: &[u32]) -> Result<(Outcome, Summary), ResolveError> {
    let Act::Move(action) = act;
    check(battle, action)?;
    v1::resolve_with(battle, act, faces, exposes)
}

#[cfg(test)]
mod tests;
