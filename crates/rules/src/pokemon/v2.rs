//! `pokemon-d6@2`: `pokemon-d6@1` ([`super::v1`]) with exactly the four
//! changes of docs/rules.md §6.1, and nothing else:
//!
//! 1. a `multi_hit` attack reads the general table (with `never_miss`,
//!    `high_crit` and `prefer`) and then hits max(1, p − 1) times
//!    ([`power_row`]);
//! 2. an attack whose `effect` is `flinch` interrupts the target where an
//!    effect applies, instead of giving it a 2-turn status;
//! 3. a `dodge` answers one attack, named by `against` (its battle version;
//!    in a script, the index of its action line): no die against a miss, a
//!    flinched Pokémon's Teleport fails, otherwise the attack's own priority
//!    and damage feed the table of §1.3;
//! 4. a status move's 6 that lands on a charging target breaks its
//!    preparation, and its outcome always carries `breaks_charge`.
//!
//! Everything else — the attack's order of resolution, condition dice,
//! status moves, Metronome, passing, the dodge table — is `@1`'s own code,
//! run with this version's `READING`.
//!
//! Where docs/rules.md is silent, these readings are ours (each has a test):
//! - `against` is checked against the battle as it stands: the attack's
//!   action gives its `target` and `priority`, its *effective* outcome (after
//!   any judge's override) its `result` and `damage` — as `defend` reads the
//!   cast it answers in `arcana-2d10`.
//! - The checks run in the order §6.1.3 lists them: a resolved attack, on
//!   this Pokémon, with a dodgeable result, not yet answered; then the miss;
//!   then the limit of 5; then a flinched Teleport. An unknown actor is
//!   refused first, as in `@1`.
//! - "Answered" means some earlier resolved dodge of this battle named the
//!   attack in its `against`; a rejected dodge leaves no trace, so it
//!   answers nothing.
//! - A status move's 6 breaks the target's preparation judged on the state
//!   before the move, as an attack's 6 is in `@1` (so a Pokémon that targets
//!   itself while charging reports `breaks_charge: true`; the move abandons
//!   that preparation anyway); a `self_hit` status move did not land on its
//!   target and breaks nothing.
//! - A flinch effect on a multi-hit move interrupts once, like any other
//!   effect that applies (it is not per hit).

use super::types::{Act, Attack, AttackResult, Dodge, DodgeOutcome, DodgeResult, Pokemon, State};
use super::v1::{self, DODGE_LIMIT, PowerRow, Reading};
use crate::action::Action;
use crate::dice_request::{DiceRequest, Faces, RollSpec};
use crate::error::{Rejection, ResolveError};
use crate::model::sheet::Version;
use crate::model::state::Battle;
use crate::outcome::Outcome;
use crate::summary::Summary;

/// How `pokemon-d6@2` reads the parts it shares with `@1`.
pub(crate) const READING: Reading = Reading { power_row, flinch_effect: true, status_move_breaks_charge: true };

/// docs/rules.md §6.1.1: the one-hit row of the general table (`@1`'s, with
/// `never_miss`, `high_crit` and `prefer`); a multi-hit move that did not
/// miss then hits max(1, p − 1) times at that row's multiplier.
pub fn power_row(power_die: u32, attack: &Attack) -> PowerRow {
    let row = v1::single_hit_row(power_die, attack);
    if attack.multi_hit && row.result != AttackResult::Miss {
        PowerRow { hits: Some(power_die.saturating_sub(1).max(1)), ..row }
    } else {
        row
    }
}

/// What a dodge answers and how it goes (§6.1.3), decided before any die.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    /// The attack missed: nothing to dodge.
    NotNeeded { damage: Option<u64> },
    /// A flinched Pokémon's Teleport: its next move, so it fails.
    Flinched { damage: Option<u64> },
    /// The dodge die decides, with the attack's priority and damage.
    Roll { priority: bool, damage: Option<u64> },
}

fn answer(battle: &Battle, state: &State, dodge: &Dodge) -> Result<(Version, Answer), Rejection> {
    let actor = v1::pokemon(state, "actor", &dodge.actor)?;
    let against = dodge.against.ok_or(Rejection::NotAnAttack { against: None })?;
    let entry = battle.entry(against).ok_or(Rejection::NotAnAttack { against: Some(against) })?;
    let (Action::Attack(attack), Outcome::Attack(outcome)) = (&entry.action, &entry.effective) else {
        return Err(Rejection::NotAnAttack { against: Some(against) });
    };
    if attack.target != dodge.actor {
        return Err(Rejection::AttackOnAnother { against, target: attack.target.clone() });
    }
    if !matches!(outcome.result, AttackResult::Hit | AttackResult::Crit | AttackResult::Miss) {
        return Err(Rejection::NothingToDodge { against });
    }
    if let Some(by) = answered_by(battle, against) {
        return Err(Rejection::AlreadyAnswered { against, by });
    }
    let damage = outcome.damage;
    // A miss comes first, whatever the defender's dodges and flinch.
    if outcome.result == AttackResult::Miss {
        return Ok((against, Answer::NotNeeded { damage }));
    }
    if actor.dodges_used >= DODGE_LIMIT {
        return Err(Rejection::DodgeLimitReached { actor: dodge.actor.clone(), limit: DODGE_LIMIT });
    }
    // Teleport is a move, so a flinch makes it fail; a plain dodge is not.
    if actor.flinched && dodge.teleport {
        return Ok((against, Answer::Flinched { damage }));
    }
    Ok((against, Answer::Roll { priority: attack.priority, damage }))
}

/// The version of the dodge that already answered the attack at `against`.
fn answered_by(battle: &Battle, against: Version) -> Option<Version> {
    battle
        .entries()
        .find(|entry| matches!(&entry.action, Action::Dodge(dodge) if dodge.against == Some(against)))
        .map(|entry| entry.version)
}

pub(crate) fn dice_needed(battle: &Battle, state: &State, act: Act<'_>) -> Result<DiceRequest, Rejection> {
    match act {
        Act::Dodge(dodge) => Ok(match answer(battle, state, dodge)?.1 {
            Answer::Roll { .. } => DiceRequest::Rolls(vec![RollSpec::one(6, "dodge")]),
            Answer::NotNeeded { .. } | Answer::Flinched { .. } => DiceRequest::none(),
        }),
        // Attacks, status moves, Metronome and passing draw the same dice as in `@1`.
        _ => v1::dice_needed(state, act),
    }
}

pub(crate) fn resolve(
    battle: &Battle,
    state: &State,
    act: Act<'_>,
    faces: &[u32],
) -> Result<(Outcome, Summary), ResolveError> {
    match act {
        Act::Dodge(dodge) => {
            let (outcome, summary) = resolve_dodge(battle, state, dodge, &mut Faces::new(faces))?;
            Ok((Outcome::Dodge(outcome), summary))
        }
        _ => v1::resolve_with(&READING, state, act, faces),
    }
}

fn resolve_dodge(
    battle: &Battle,
    state: &State,
    dodge: &Dodge,
    faces: &mut Faces<'_>,
) -> Result<(DodgeOutcome, Summary), ResolveError> {
    let actor = v1::pokemon(state, "actor", &dodge.actor)?;
    let (against, answer) = answer(battle, state, dodge)?;
    let me = &dodge.actor;
    Ok(match answer {
        Answer::NotNeeded { damage } => {
            let dodges_left = dodges_left(actor, false);
            let outcome = DodgeOutcome {
                result: Some(DodgeResult::NotNeeded),
                reduction_percent: 100,
                counted: false,
                dodges_left,
                damage_after: damage.map(|_| 0),
            };
            let summary = Summary::new(
                format!(
                    "{me}: атака №{against} прошла мимо — уклоняться не нужно; уклонение не засчитано, осталось уклонений: {dodges_left}"
                ),
                format!("{me}: attack #{against} missed, nothing to dodge; dodge not counted, {dodges_left} left"),
            );
            (outcome, summary)
        }
        Answer::Flinched { damage } => {
            let dodges_left = dodges_left(actor, true);
            let outcome = DodgeOutcome {
                result: Some(DodgeResult::Flinched),
                reduction_percent: 0,
                counted: true,
                dodges_left,
                damage_after: damage,
            };
            let (damage_ru, damage_en) = match damage {
                Some(damage) => (format!(" (урон {damage})"), format!(" ({damage} damage)")),
                None => (String::new(), String::new()),
            };
            let summary = Summary::new(
                format!(
                    "Телепорт: {me} вздрагивает — телепорт срывается{damage_ru}; уклонение засчитано, осталось уклонений: {dodges_left}"
                ),
                format!("Teleport: {me} flinches and the teleport fails{damage_en}; dodge counted, {dodges_left} left"),
            );
            (outcome, summary)
        }
        Answer::Roll { priority, damage } => {
            let outcome = DodgeOutcome {
                result: Some(DodgeResult::Rolled),
                ..v1::rolled_dodge(actor, faces.take()?, priority, damage)
            };
            let summary = v1::dodge_summary(me, dodge.teleport, &outcome, damage);
            (outcome, summary)
        }
    })
}

fn dodges_left(actor: &Pokemon, counted: bool) -> u32 {
    DODGE_LIMIT - actor.dodges_used.saturating_add(u32::from(counted)).min(DODGE_LIMIT)
}

/// Folds an outcome into the state: `@1`'s fold with this version's
/// reading, and a failed Teleport spends the flinch (§6.1.3).
pub(crate) fn apply(state: &mut State, act: Act<'_>, outcome: &Outcome) -> Result<(), ResolveError> {
    v1::apply_with(&READING, state, act, outcome)?;
    if let (Act::Dodge(dodge), Outcome::Dodge(outcome)) = (act, outcome)
        && outcome.result == Some(DodgeResult::Flinched)
    {
        v1::pokemon_mut(state, "actor", &dodge.actor)?.flinched = false;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
