//! `arcana-2d10@2`: `arcana-2d10@1` ([`super::v1`]) with exactly the changes
//! of docs/rules.md §6.2:
//!
//! 1. an ability on the actor's sheet may carry `magical` (default true) and
//!    `min_points` (1..=12); a `cast` or `defend` with an ability whose
//!    `min_points` exceeds its `skill_points` is refused. An ability missing
//!    from the actor's sheet is magical with no minimum;
//! 2. an `ordinary_failure` or `critical_failure` still breaks the actor's
//!    concentration for its `post`, but only later uses of a *magical*
//!    ability in that post are refused; a non-magical ability or a plain
//!    skill check (no `ability`) goes ahead;
//! 3. (unchanged, stated in §6.2.3) a 20 at 12 points is an
//!    `ordinary_failure`, whatever the total skill: the two exemptions at 12
//!    points do not chain. [`super::v1::cast_result`] already reads it so.
//!
//! The dice, the result table, the exchange of blows and the fold are
//! `@1`'s code; only what is allowed differs, so `resolve` is `@1`'s.
//!
//! Where docs/rules.md is silent, these readings are ours (each has a test):
//! - Checks run in this order: the actor, skill points in 1..=12, (for a
//!   defence) `against`, `min_points`, the `per_episode` limit,
//!   concentration. `@1` checks `against` last; the `@2` vectors put it
//!   before `min_points`. A refused use counts toward nothing.
//! - A use allowed in a broken post that fails badly again reports
//!   `concentration_broken: true`, as every `ordinary_failure` and
//!   `critical_failure` does: the field says this roll would break it, and
//!   the post stays broken either way.
//! - `min_points` is checked against the skill points alone, before any
//!   bonus: the seed's "from 5 points" counts the skill.

use super::types::{Act, Check, State};
use super::v1;
use crate::dice_request::DiceRequest;
use crate::error::{Rejection, ResolveError};
use crate::model::sheet::{AbilitySheet, Version};
use crate::model::state::Battle;
use crate::outcome::Outcome;
use crate::summary::Summary;

/// The checks of a use, in order; `against` is a defence's.
fn validate(battle: &Battle, state: &State, check: &Check<'_>, against: Option<Version>) -> Result<(), Rejection> {
    let sheet = v1::actor_sheet(battle, check)?;
    v1::check_points(check)?;
    // What a defence answers comes before what the defender may use (the
    // vectors agree: a defence against no cast is refused as such even when
    // its ability also lacks points).
    if let Some(against) = against {
        v1::attacking_cast(battle, against).map_err(|_| Rejection::AgainstNotACast { against })?;
    }
    let ability = check.ability.map(|name| (name, sheet.abilities.get(name)));
    if let Some((name, Some(AbilitySheet { min_points: Some(min_points), .. }))) = ability
        && i64::from(*min_points) > check.skill_points
    {
        return Err(Rejection::BelowMinPoints {
            ability: name.to_owned(),
            min_points: *min_points,
            points: check.skill_points,
        });
    }
    v1::check_uses(state, sheet, check)?;
    let magical = ability.is_some_and(|(_, sheet)| sheet.is_none_or(AbilitySheet::is_magical));
    if magical && state.concentration_broken(check.actor, check.post) {
        return Err(Rejection::ConcentrationBrokenForMagic);
    }
    Ok(())
}

pub(crate) fn dice_needed(battle: &Battle, state: &State, act: Act<'_>) -> Result<DiceRequest, Rejection> {
    match act {
        Act::Cast(cast) => {
            validate(battle, state, &cast.check(), None)?;
            Ok(v1::two_d10())
        }
        Act::Defend(defend) => {
            validate(battle, state, &defend.check(), Some(defend.against))?;
            Ok(v1::two_d10())
        }
        Act::StartEpisode => v1::dice_needed(battle, state, act),
    }
}

/// `@1`'s resolution: [`dice_needed`] has already allowed the action.
pub(crate) fn resolve(battle: &Battle, act: Act<'_>, faces: &[u32]) -> Result<(Outcome, Summary), ResolveError> {
    v1::resolve(battle, act, faces)
}

#[cfg(test)]
mod tests;
