//! `pbta-2d6@1`: 2d6 + trait + help, read in three bands (docs/rules.md §4).

use super::types::{Act, MoveOutcome, MoveResult, TRAITS};
use crate::dice_request::{DiceRequest, Faces, RollSpec};
use crate::error::{Rejection, ResolveError};
use crate::model::state::Battle;
use crate::outcome::Outcome;
use crate::summary::Summary;

/// ≥ 10 full success, 7–9 success with a cost, ≤ 6 miss.
pub fn band(total: i64) -> MoveResult {
    match total {
        10.. => MoveResult::FullSuccess,
        7..=9 => MoveResult::SuccessWithCost,
        _ => MoveResult::Miss,
    }
}

fn trait_ru(name: &str) -> &str {
    match name {
        "brawn" => "сила",
        "grace" => "ловкость",
        "charm" => "обаяние",
        "grit" => "стойкость",
        "wits" => "смекалка",
        "cool" => "хладнокровие",
        other => other,
    }
}

pub(crate) fn dice_needed(battle: &Battle, act: Act<'_>) -> Result<DiceRequest, Rejection> {
    let Act::Move(action) = act;
    if battle.participant(&action.actor).is_none() {
        return Err(Rejection::UnknownParticipant { field: "actor", id: action.actor.clone() });
    }
    if !TRAITS.contains(&action.trait_name.as_str()) {
        return Err(Rejection::UnknownTrait { name: action.trait_name.clone() });
    }
    Ok(DiceRequest::Rolls(vec![RollSpec { count: 2, sides: 6, purpose: "2d6" }]))
}

pub(crate) fn resolve(battle: &Battle, act: Act<'_>, faces: &[u32]) -> Result<(Outcome, Summary), ResolveError> {
    resolve_with(battle, act, faces, |_| true)
}

/// The roll, the band and the summary; `exposes` says on which bands the
/// helpers are exposed (every band under `@1`).
pub(crate) fn resolve_with(
    battle: &Battle,
    act: Act<'_>,
    faces: &[u32],
    exposes: fn(MoveResult) -> bool,
) -> Result<(Outcome, Summary), ResolveError> {
    let Act::Move(action) = act;
    let mut faces = Faces::new(faces);
    let sum = i64::from(faces.take()?) + i64::from(faces.take()?);
    let sheet_value =
        battle.participant(&action.actor).and_then(|sheet| sheet.traits.get(&action.trait_name).copied()).unwrap_or(0);
    let trait_value = action.trait_value.unwrap_or(sheet_value);
    let help = u32::from(!action.helpers.is_empty());
    let total = sum + i64::from(trait_value) + i64::from(help);
    let result = band(total);
    let (actor, name) = (&action.actor, &action.trait_name);
    let (result_ru, result_en) = match result {
        MoveResult::FullSuccess => ("полный успех", "full success"),
        MoveResult::SuccessWithCost => ("успех с ценой", "success at a cost"),
        MoveResult::Miss => ("провал, ход ведущего", "miss, the GM makes a move"),
    };
    let mut ru = format!("{actor}, {}: {result_ru} ({total})", trait_ru(name));
    let mut en = format!("{actor}, {name}: {result_en} ({total})");
    let exposed = if exposes(result) { action.helpers.clone() } else { Vec::new() };
    if help > 0 {
        let helpers = action.helpers.join(", ");
        if exposed.is_empty() {
            ru.push_str(&format!("; помогали {helpers}"));
            en.push_str(&format!("; helped by {helpers}"));
        } else {
            ru.push_str(&format!("; помогали {helpers} — они разделяют риск"));
            en.push_str(&format!("; helped by {helpers}, who share the risk"));
        }
    }
    let outcome = MoveOutcome { result, total, help, exposed };
    Ok((Outcome::Move(outcome), Summary::new(ru, en)))
}

#[cfg(test)]
mod tests;
