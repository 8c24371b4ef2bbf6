//! `berserk@2`: `berserk@1` ([`super::v1`]) with exactly the changes of
//! docs/rules.md §6.3, and nothing else:
//!
//! 1. the exchange is chosen after the roll: a `strike` takes no
//!    `avoid_exchange` on either side; a fight whose row has both sides
//!    striking (+2, +4, −4) resolves by the table without a step and names
//!    the side that rolled higher in `pending_choice`, which answers with an
//!    [`ExchangeChoice`] (no dice). While a strike awaits its choice, every
//!    other strike and every effect is refused;
//! 2. `fixed_roll` (an integer 1–6) replaces a side's die, and that side
//!    draws none; without a fight the defender's is ignored.
//!
//! The table, the totals, closed cards and effects are `@1`'s code.
//!
//! Where docs/rules.md is silent, these readings are ours (each has a test):
//! - A strike's checks run in this order: its participants (as in `@1`),
//!   a strike awaiting its choice, `avoid_exchange` (attacker, then
//!   defender), `fixed_roll` (attacker, then defender). The vectors put the
//!   pending choice before `avoid_exchange`.
//! - An exchange choice's checks run in the order §6.3.1 lists them (and
//!   the vectors agree): `against`, then `actor`, then `avoid`.
//! - "Awaiting its choice" is read on the battle as it stands: the strike's
//!   *effective* outcome (after any judge's override) names a pending side,
//!   and no earlier resolved exchange choice names it in `against`. A
//!   judge may so close a choice (`pending_choice: null`); an override may
//!   only name the side the table allows (see `berserk::fits_version`).
//! - The choice's outcome reads the strike's effective `diff` and tiers;
//!   avoided, it uses the row one step toward zero, which is never the tie
//!   row, so A is not needed.
//! - A `fixed_roll` of `null` is sent, and not an integer: refused.

use serde_json::Value;

use super::types::{Act, ExchangeChoice, ExchangeOutcome, Side, Strike, StrikeOutcome, Tier};
use super::v1::{self, fight_row, fight_totals, is_exchange, is_fight};
use crate::action::Action;
use crate::dice_request::{DiceRequest, Faces, RollSpec};
use crate::error::{Rejection, ResolveError};
use crate::model::sheet::Version;
use crate::model::state::Battle;
use crate::outcome::Outcome;
use crate::summary::Summary;

/// The side that may choose on a fight row: the attacker on +2 and +4, the
/// defender on −4 (the rows with both sides striking); nobody elsewhere.
pub fn chooser(diff: Option<i64>) -> Option<Side> {
    match diff {
        Some(2 | 4) => Some(Side::Attacker),
        Some(-4) => Some(Side::Defender),
        _ => None,
    }
}

/// A side's `fixed_roll`: `None` when absent, the value when it is an
/// integer 1–6, refused otherwise (§6.3.2).
pub fn fixed_roll(value: Option<&Value>, field: &'static str) -> Result<Option<u32>, Rejection> {
    match value {
        None => Ok(None),
        Some(value) => value
            .as_u64()
            .filter(|roll| (1..=6).contains(roll))
            .and_then(|roll| u32::try_from(roll).ok())
            .map(Some)
            .ok_or(Rejection::FixedRollOutOfRange { field }),
    }
}

/// The strike awaiting its choice at `version`, with the side that may
/// choose — or `None` when that version is no such strike.
fn awaiting_at(battle: &Battle, version: Version) -> Option<(&Strike, &StrikeOutcome, Side)> {
    let entry = battle.entry(version)?;
    let (Action::Strike(strike), Outcome::Strike(outcome)) = (&entry.action, &entry.effective) else {
        return None;
    };
    let side = outcome.pending_choice.flatten()?;
    let answered = battle
        .entries()
        .any(|entry| matches!(&entry.action, Action::ExchangeChoice(choice) if choice.against == Some(version)));
    (!answered).then_some((strike, outcome, side))
}

/// Refuses a strike or an effect while any strike awaits its choice.
fn refuse_while_awaiting(battle: &Battle) -> Result<(), Rejection> {
    let pending = battle.entries().find(|entry| {
        matches!(&entry.effective, Outcome::Strike(outcome) if outcome.pending_choice.flatten().is_some())
            && awaiting_at(battle, entry.version).is_some()
    });
    match pending {
        Some(entry) => Err(Rejection::StrikeAwaitsChoice { strike: entry.version }),
        None => Ok(()),
    }
}

/// The fixed rolls of both sides, after every check of a strike.
fn check_strike(battle: &Battle, strike: &Strike) -> Result<(Option<u32>, Option<u32>), Rejection> {
    v1::require(battle, "attacker.id", &strike.attacker.id)?;
    v1::require(battle, "defender.id", &strike.defender.id)?;
    refuse_while_awaiting(battle)?;
    if strike.attacker.avoid_exchange.is_some() {
        return Err(Rejection::AvoidExchangeBeforeRoll { field: "attacker.avoid_exchange" });
    }
    if strike.defender.avoid_exchange.is_some() {
        return Err(Rejection::AvoidExchangeBeforeRoll { field: "defender.avoid_exchange" });
    }
    let attacker = fixed_roll(strike.attacker.fixed_roll.as_ref(), "attacker.fixed_roll")?;
    let defender = fixed_roll(strike.defender.fixed_roll.as_ref(), "defender.fixed_roll")?;
    Ok((attacker, defender))
}

/// What an allowed exchange choice answers.
struct Answer<'a> {
    against: Version,
    strike: &'a Strike,
    diff: i64,
    attacker_tier: Tier,
    defender_tier: Tier,
    avoid: bool,
}

fn check_choice<'a>(battle: &'a Battle, choice: &ExchangeChoice) -> Result<Answer<'a>, Rejection> {
    let against = choice.against.ok_or(Rejection::NotAwaitingChoice { against: None })?;
    let not_awaiting = Rejection::NotAwaitingChoice { against: Some(against) };
    let (strike, outcome, side) = awaiting_at(battle, against).ok_or(not_awaiting.clone())?;
    // `fits_version` keeps a pending side on a fight row with a diff.
    let diff = outcome.diff.ok_or(not_awaiting)?;
    let chooser = match side {
        Side::Attacker => &strike.attacker.id,
        Side::Defender => &strike.defender.id,
    };
    if &choice.actor != chooser {
        return Err(Rejection::NotTheHigherSide { actor: choice.actor.clone(), side: side.name() });
    }
    let Value::Bool(avoid) = choice.avoid else {
        return Err(Rejection::AvoidNotBoolean);
    };
    Ok(Answer {
        against,
        strike,
        diff,
        attacker_tier: outcome.attacker_tier,
        defender_tier: outcome.defender_tier,
        avoid,
    })
}

pub(crate) fn dice_needed(battle: &Battle, act: Act<'_>) -> Result<DiceRequest, Rejection> {
    match act {
        Act::Strike(strike) => {
            let (attacker, defender) = check_strike(battle, strike)?;
            // Dice for the attacker, then the defender, skipping a fixed roll;
            // nothing for the defender without a fight.
            let mut rolls = Vec::new();
            if attacker.is_none() {
                rolls.push(RollSpec::one(6, "attacker"));
            }
            if is_fight(strike) && defender.is_none() {
                rolls.push(RollSpec::one(6, "defender"));
            }
            Ok(DiceRequest::Rolls(rolls))
        }
        Act::Effect(effect) => {
            v1::require(battle, "actor", &effect.actor)?;
            refuse_while_awaiting(battle)?;
            Ok(DiceRequest::Rolls(vec![RollSpec::one(6, "effect")]))
        }
        Act::ExchangeChoice(choice) => {
            check_choice(battle, choice)?;
            Ok(DiceRequest::none())
        }
    }
}

pub(crate) fn resolve(battle: &Battle, act: Act<'_>, faces: &[u32]) -> Result<(Outcome, Summary), ResolveError> {
    let mut faces = Faces::new(faces);
    match act {
        Act::Strike(strike) => {
            let (attacker_fixed, defender_fixed) = check_strike(battle, strike)?;
            let attacker_die = match attacker_fixed {
                Some(roll) => roll,
                None => faces.take()?,
            };
            let outcome = if is_fight(strike) {
                let defender_die = match defender_fixed {
                    Some(roll) => roll,
                    None => faces.take()?,
                };
                let (attacker_total, defender_total) =
                    fight_totals(attacker_die, defender_die, &strike.attacker, &strike.defender);
                let diff = attacker_total - defender_total;
                let (attacker_tier, defender_tier) = fight_row(diff, attacker_total);
                let pending = if is_exchange(diff, attacker_total) { chooser(Some(diff)) } else { None };
                strike_outcome(strike, true, attacker_tier, defender_tier, Some(diff), pending)
            } else {
                // Experience does not apply against a closed card (§3.1).
                let total = i64::from(attacker_die) + i64::from(strike.attacker.die_modifier);
                strike_outcome(strike, false, v1::closed_tier(total), Tier::None, None, None)
            };
            let summary = strike_summary(strike, &outcome);
            Ok((Outcome::Strike(outcome), summary))
        }
        Act::Effect(effect) => {
            refuse_while_awaiting(battle)?;
            v1::resolve_effect(effect, faces.take()?)
        }
        Act::ExchangeChoice(choice) => {
            let answer = check_choice(battle, choice)?;
            let (diff, attacker_tier, defender_tier) = if answer.avoid {
                // One row toward zero: +1, +3 or −3, never the tie row, so
                // the attacker's total (read only on a tie) does not matter.
                let diff = answer.diff - answer.diff.signum();
                let (attacker_tier, defender_tier) = fight_row(diff, 0);
                (diff, attacker_tier, defender_tier)
            } else {
                (answer.diff, answer.attacker_tier, answer.defender_tier)
            };
            let outcome = ExchangeOutcome {
                exchange_avoided: answer.avoid,
                attacker_tier,
                defender_tier,
                diff,
                attacker_damage: answer.strike.attacker.strike.map(|values| attacker_tier.damage(&values)),
                defender_damage: answer.strike.defender.strike.map(|values| defender_tier.damage(&values)),
            };
            let summary = choice_summary(&choice.actor, &answer, &outcome);
            Ok((Outcome::ExchangeChoice(outcome), summary))
        }
    }
}

fn strike_outcome(
    strike: &Strike,
    fight: bool,
    attacker_tier: Tier,
    defender_tier: Tier,
    diff: Option<i64>,
    pending: Option<Side>,
) -> StrikeOutcome {
    StrikeOutcome {
        fight,
        attacker_tier,
        defender_tier,
        attacker_damage: strike.attacker.strike.map(|values| attacker_tier.damage(&values)),
        defender_damage: strike.defender.strike.map(|values| defender_tier.damage(&values)),
        diff,
        exchange_avoided: false,
        pending_choice: Some(pending),
    }
}

/// Both sides' tiers as «a — слабый удар (1), b — промах» / "a — weak strike (1), b — miss".
fn row_text(strike: &Strike, diff: i64, attacker_tier: Tier, defender_tier: Tier) -> (String, String) {
    let (a, d) = (&strike.attacker.id, &strike.defender.id);
    let (attacker_ru, attacker_en) =
        v1::tier_text(attacker_tier, strike.attacker.strike.map(|values| attacker_tier.damage(&values)));
    let (defender_ru, defender_en) =
        v1::tier_text(defender_tier, strike.defender.strike.map(|values| defender_tier.damage(&values)));
    (
        format!("разница {diff:+}: {a} — {attacker_ru}, {d} — {defender_ru}"),
        format!("difference {diff:+}: {a} — {attacker_en}, {d} — {defender_en}"),
    )
}

/// `@1`'s summary; when a choice is pending, who may choose and what
/// avoiding the exchange would give.
fn strike_summary(strike: &Strike, outcome: &StrikeOutcome) -> Summary {
    let summary = v1::strike_summary(strike, outcome);
    let (Some(Some(side)), Some(diff)) = (outcome.pending_choice, outcome.diff) else {
        return summary;
    };
    let chooser = match side {
        Side::Attacker => &strike.attacker.id,
        Side::Defender => &strike.defender.id,
    };
    let stepped = diff - diff.signum();
    let (attacker_tier, defender_tier) = fight_row(stepped, 0);
    let (row_ru, row_en) = row_text(strike, stepped, attacker_tier, defender_tier);
    Summary::new(
        format!("{}; {chooser} может уйти от обмена ударами ({row_ru}) или принять его", summary.ru),
        format!("{}; {chooser} may avoid the exchange of blows ({row_en}) or take it", summary.en),
    )
}

fn choice_summary(actor: &str, answer: &Answer<'_>, outcome: &ExchangeOutcome) -> Summary {
    let (row_ru, row_en) = row_text(answer.strike, outcome.diff, outcome.attacker_tier, outcome.defender_tier);
    let against = answer.against;
    if outcome.exchange_avoided {
        Summary::new(
            format!("{actor} уходит от обмена ударами в бою №{against}, {row_ru}"),
            format!("{actor} avoids the exchange of blows in fight #{against}, {row_en}"),
        )
    } else {
        Summary::new(
            format!("{actor} принимает обмен ударами в бою №{against}, {row_ru}"),
            format!("{actor} takes the exchange of blows in fight #{against}, {row_en}"),
        )
    }
}

#[cfg(test)]
mod tests;
