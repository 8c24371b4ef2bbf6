//! `arcana-2d10@1`: the tables of docs/rules.md §2.
//!
//! Where docs/rules.md is silent, these readings are ours: an ability limits only the actor
//! whose sheet lists it with `per_episode` (an ability missing from the
//! actor's sheet has no limit), a `defend` counts toward that limit and is
//! refused in a broken post like a `cast`, and broken concentration belongs
//! to its post, so a new episode does not mend it.
//!
//! `arcana-2d10@2` ([`super::v2`]) resolves and folds with this module's
//! code; only what it allows differs.

use super::types::{Act, CastOutcome, CastResult, Check, DefendOutcome, EpisodeOutcome, EpisodeResult, State};
use crate::dice_request::{DiceRequest, Faces, RollSpec};
use crate::error::{Rejection, ResolveError};
use crate::model::sheet::{Participant, Version};
use crate::model::state::Battle;
use crate::outcome::Outcome;
use crate::summary::Summary;

/// docs/rules.md §2.1: the specialization bonus by skill points.
pub fn specialization_bonus(skill_points: i64) -> i64 {
    match skill_points {
        2..=4 => 1,
        5..=7 => 2,
        8..=9 => 3,
        10..=12 => 4,
        _ => 0,
    }
}

/// Points + specialization (when it matches) + artifact + berserk + aux.
pub fn total_skill(check: &Check<'_>) -> i64 {
    let specialization = if check.specialization_matches { specialization_bonus(check.skill_points) } else { 0 };
    check.skill_points
        + specialization
        + i64::from(check.artifact_bonus)
        + i64::from(check.berserk_bonus)
        + i64::from(check.aux_bonus)
}

/// docs/rules.md §2.1: the result table, conditions checked in order.
pub fn cast_result(sum: u32, skill_points: i64, total_skill: i64) -> CastResult {
    let mastery = skill_points == 12;
    if sum == 2 {
        CastResult::CriticalSuccess
    } else if sum == 20 && mastery {
        CastResult::OrdinaryFailure
    } else if sum == 20 {
        CastResult::CriticalFailure
    } else if sum == 19 && !(mastery && total_skill >= 19) {
        CastResult::OrdinaryFailure
    } else if i64::from(sum) <= total_skill {
        CastResult::Success
    } else {
        CastResult::Failure
    }
}

/// docs/rules.md §2.2: a critical success is stopped only by a critical-success
/// defence; any other successful attack by any successful defence.
pub fn attack_lands(attack: CastResult, defence: CastResult) -> bool {
    let stopped =
        defence.succeeded() && (attack != CastResult::CriticalSuccess || defence == CastResult::CriticalSuccess);
    attack.succeeded() && !stopped
}

fn validate(battle: &Battle, state: &State, check: &Check<'_>) -> Result<(), Rejection> {
    let sheet = actor_sheet(battle, check)?;
    check_points(check)?;
    check_uses(state, sheet, check)?;
    if state.concentration_broken(check.actor, check.post) {
        return Err(Rejection::ConcentrationBroken);
    }
    Ok(())
}

/// The actor's sheet; an actor who is no participant is refused.
pub(crate) fn actor_sheet<'b>(battle: &'b Battle, check: &Check<'_>) -> Result<&'b Participant, Rejection> {
    battle
        .participant(check.actor)
        .ok_or_else(|| Rejection::UnknownParticipant { field: "actor", id: check.actor.to_owned() })
}

/// Skill points are 1..=12 (§2.1).
pub(crate) fn check_points(check: &Check<'_>) -> Result<(), Rejection> {
    if !(1..=12).contains(&check.skill_points) {
        return Err(Rejection::SkillPointsOutOfRange { points: check.skill_points });
    }
    Ok(())
}

/// The ability's `per_episode` limit, when the actor's sheet sets one.
pub(crate) fn check_uses(state: &State, sheet: &Participant, check: &Check<'_>) -> Result<(), Rejection> {
    if let Some(ability) = check.ability {
        let limit = sheet.abilities.get(ability).and_then(|sheet| sheet.per_episode);
        if let Some(limit) = limit.filter(|&limit| state.uses(check.actor, ability) >= limit) {
            return Err(Rejection::AbilityUsedUp { actor: check.actor.to_owned(), ability: ability.to_owned(), limit });
        }
    }
    Ok(())
}

/// The result of the cast a defence refers to, as it stands after rulings.
pub(crate) fn attacking_cast(battle: &Battle, against: Version) -> Result<CastResult, Rejection> {
    match battle.entry(against).map(|entry| &entry.effective) {
        Some(Outcome::Cast(cast)) => Ok(cast.result),
        _ => Err(Rejection::NotACast { against }),
    }
}

pub(crate) fn two_d10() -> DiceRequest {
    DiceRequest::Rolls(vec![RollSpec { count: 2, sides: 10, purpose: "2d10" }])
}

pub(crate) fn dice_needed(battle: &Battle, state: &State, act: Act<'_>) -> Result<DiceRequest, Rejection> {
    match act {
        Act::Cast(cast) => {
            validate(battle, state, &cast.check())?;
            Ok(two_d10())
        }
        Act::Defend(defend) => {
            validate(battle, state, &defend.check())?;
            attacking_cast(battle, defend.against)?;
            Ok(two_d10())
        }
        Act::StartEpisode => Ok(DiceRequest::none()),
    }
}

fn roll(check: &Check<'_>, faces: &mut Faces<'_>) -> Result<CastOutcome, ResolveError> {
    let sum = faces.take()? + faces.take()?;
    let total_skill = total_skill(check);
    let result = cast_result(sum, check.skill_points, total_skill);
    Ok(CastOutcome { result, sum, total_skill, concentration_broken: result.breaks_concentration() })
}

fn check_summary(check: &Check<'_>, outcome: &CastOutcome) -> (String, String) {
    let (label_ru, label_en) = match check.ability {
        Some(ability) => (format!("{}, «{ability}»", check.actor), format!("{}, {ability}", check.actor)),
        None => (format!("{}, проверка умения", check.actor), format!("{}, skill check", check.actor)),
    };
    let (result_ru, result_en) = match outcome.result {
        CastResult::CriticalSuccess => ("критический успех", "critical success"),
        CastResult::Success => ("успех", "success"),
        CastResult::Failure => ("неудача", "failure"),
        CastResult::OrdinaryFailure => ("обычная неудача", "ordinary failure"),
        CastResult::CriticalFailure => ("критическая неудача", "critical failure"),
    };
    let (sum, total) = (outcome.sum, outcome.total_skill);
    let mut ru = format!("{label_ru}: {result_ru} — выпало {sum} при суммарном скилле {total}");
    let mut en = format!("{label_en}: {result_en} — rolled {sum} against total skill {total}");
    if outcome.concentration_broken {
        ru.push_str("; концентрация сбита до конца поста");
        en.push_str("; concentration broken for the rest of the post");
    }
    (ru, en)
}

pub(crate) fn resolve(battle: &Battle, act: Act<'_>, faces: &[u32]) -> Result<(Outcome, Summary), ResolveError> {
    let mut faces = Faces::new(faces);
    match act {
        Act::Cast(cast) => {
            let check = cast.check();
            let outcome = roll(&check, &mut faces)?;
            let (ru, en) = check_summary(&check, &outcome);
            Ok((Outcome::Cast(outcome), Summary::new(ru, en)))
        }
        Act::Defend(defend) => {
            let check = defend.check();
            let attack = attacking_cast(battle, defend.against)?;
            let cast = roll(&check, &mut faces)?;
            let lands = attack_lands(attack, cast.result);
            let (mut ru, mut en) = check_summary(&check, &cast);
            if lands {
                ru.push_str("; атака проходит");
                en.push_str("; the attack lands");
            } else {
                ru.push_str("; атака отражена");
                en.push_str("; the attack is stopped");
            }
            let outcome = DefendOutcome {
                result: cast.result,
                sum: cast.sum,
                total_skill: cast.total_skill,
                concentration_broken: cast.concentration_broken,
                attack_lands: lands,
            };
            Ok((Outcome::Defend(outcome), Summary::new(ru, en)))
        }
        Act::StartEpisode => Ok((
            Outcome::StartEpisode(EpisodeOutcome { result: EpisodeResult::EpisodeStarted }),
            Summary::new(
                "Начинается новый эпизод: лимиты способностей сброшены",
                "A new episode begins: per-episode limits are reset",
            ),
        )),
    }
}

/// Folds an outcome (resolved now, or recorded and perhaps overridden by a
/// judge) into the state: every use counts, whatever its result.
pub(crate) fn apply(state: &mut State, act: Act<'_>, outcome: &Outcome) -> Result<(), ResolveError> {
    let (check, broken) = match (act, outcome) {
        (Act::Cast(cast), Outcome::Cast(outcome)) => (cast.check(), outcome.concentration_broken),
        (Act::Defend(defend), Outcome::Defend(outcome)) => (defend.check(), outcome.concentration_broken),
        (Act::StartEpisode, Outcome::StartEpisode(_)) => {
            state.episode = state.episode.saturating_add(1);
            state.uses.clear();
            return Ok(());
        }
        _ => return Err(ResolveError::OutcomeMismatch { action: act.kind_name(), outcome: outcome.kind_name() }),
    };
    if let Some(ability) = check.ability {
        let uses = state.uses.entry(check.actor.to_owned()).or_default().entry(ability.to_owned()).or_default();
        *uses = uses.saturating_add(1);
    }
    if broken {
        state.broken_posts.entry(check.actor.to_owned()).or_default().insert(check.post.to_owned());
    }
    Ok(())
}

impl Act<'_> {
    pub(crate) fn kind_name(self) -> &'static str {
        match self {
            Act::Cast(_) => "cast",
            Act::Defend(_) => "defend",
            Act::StartEpisode => "start_episode",
        }
    }
}

#[cfg(test)]
mod tests;
