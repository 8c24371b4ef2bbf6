//! `berserk@1`: the strike table of docs/rules.md §3 (seed rules 514–515, 511.8).

use super::types::{
    Act, Attacker, Defender, Effect, EffectOutcome, EffectTier, Strike, StrikeKind, StrikeOutcome, Tier,
};
use crate::dice_request::{DiceRequest, Faces, RollSpec};
use crate::error::{Rejection, ResolveError};
use crate::model::state::Battle;
use crate::outcome::Outcome;
use crate::summary::Summary;

/// Both cards roll only in a simple strike on an open card of the other squad;
/// everything else resolves as against a closed card.
pub fn is_fight(strike: &Strike) -> bool {
    strike.kind == StrikeKind::Simple && !strike.defender.closed && !strike.own_squad
}

/// Experience cancels out: only the side with more adds the difference.
pub fn experience_bonuses(attack_experience: u32, defense_experience: u32) -> (i64, i64) {
    let (attack, defense) = (i64::from(attack_experience), i64::from(defense_experience));
    ((attack - defense).max(0), (defense - attack).max(0))
}

/// The strike table: (attacker strikes, defender strikes) by `diff` = A − D;
/// a tie is read by the attacker's total A.
pub fn fight_row(diff: i64, attacker_total: i64) -> (Tier, Tier) {
    match diff {
        5.. => (Tier::Strong, Tier::Miss),
        4 => (Tier::Strong, Tier::Weak),
        3 => (Tier::Medium, Tier::Miss),
        2 => (Tier::Medium, Tier::Weak),
        1 | -1 => (Tier::Weak, Tier::Miss),
        0 if attacker_total <= 4 => (Tier::Weak, Tier::Miss),
        0 => (Tier::Miss, Tier::Weak),
        -2 => (Tier::Miss, Tier::Miss),
        -3 => (Tier::Miss, Tier::Weak),
        -4 => (Tier::Weak, Tier::Medium),
        _ => (Tier::Miss, Tier::Medium),
    }
}

/// Against a closed card: A ≤ 3 weak, 4–5 medium, ≥ 6 strong.
pub fn closed_tier(attacker_total: i64) -> Tier {
    match attacker_total {
        ..=3 => Tier::Weak,
        4 | 5 => Tier::Medium,
        _ => Tier::Strong,
    }
}

/// An X-Y-Z effect: value ≤ 3 → X, 4–5 → Y, ≥ 6 → Z.
pub fn effect_tier(value: i64) -> EffectTier {
    match value {
        ..=3 => EffectTier::X,
        4 | 5 => EffectTier::Y,
        _ => EffectTier::Z,
    }
}

/// The result of a fight from the two dice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fight {
    pub diff: i64,
    pub attacker_tier: Tier,
    pub defender_tier: Tier,
    pub exchange_avoided: bool,
}

/// The fight's totals A and D (§3.1): each die (or, under `@2`, a fixed
/// roll) plus its side's modifier and the experience left after
/// cancelling. Never clamped: A and D may fall below 1 or rise above 6.
pub fn fight_totals(attacker_die: u32, defender_die: u32, attacker: &Attacker, defender: &Defender) -> (i64, i64) {
    let (attack_bonus, defense_bonus) = experience_bonuses(attacker.attack_experience, defender.defense_experience);
    let attacker_total = i64::from(attacker_die) + i64::from(attacker.die_modifier) + attack_bonus;
    let defender_total = i64::from(defender_die) + i64::from(defender.die_modifier) + defense_bonus;
    (attacker_total, defender_total)
}

/// Whether the row of `diff` has both sides striking: +2, +4 and −4, the
/// rows where the side that rolled higher may step toward zero.
pub fn is_exchange(diff: i64, attacker_total: i64) -> bool {
    let (attacker_tier, defender_tier) = fight_row(diff, attacker_total);
    attacker_tier.strikes() && defender_tier.strikes()
}

/// The row one step toward zero (+2 → +1, +4 → +3, −4 → −3): the exchange
/// avoided.
pub fn stepped_row(diff: i64, attacker_total: i64) -> (Tier, Tier) {
    fight_row(diff - diff.signum(), attacker_total)
}

/// docs/rules.md §3.1 for a fight: totals, the table, and the exchange rule —
/// when both would strike, the side that rolled higher steps one row toward
/// zero (+2 → +1, +4 → +3, −4 → −3) if it declared `avoid_exchange`.
pub fn fight(attacker_die: u32, defender_die: u32, attacker: &Attacker, defender: &Defender) -> Fight {
    let (attacker_total, defender_total) = fight_totals(attacker_die, defender_die, attacker, defender);
    let diff = attacker_total - defender_total;
    let (attacker_tier, defender_tier) = fight_row(diff, attacker_total);
    let higher_avoids = match diff {
        1.. => attacker.avoid_exchange.unwrap_or(false),
        ..=-1 => defender.avoid_exchange.unwrap_or(false),
        0 => false,
    };
    if is_exchange(diff, attacker_total) && higher_avoids {
        let (attacker_tier, defender_tier) = stepped_row(diff, attacker_total);
        return Fight { diff, attacker_tier, defender_tier, exchange_avoided: true };
    }
    Fight { diff, attacker_tier, defender_tier, exchange_avoided: false }
}

pub(crate) fn require(battle: &Battle, field: &'static str, id: &str) -> Result<(), Rejection> {
    match battle.participant(id) {
        Some(_) => Ok(()),
        None => Err(Rejection::UnknownParticipant { field, id: id.to_owned() }),
    }
}

/// `fixed_roll` came with `berserk@2`: refused here rather than ignored.
fn refuse_v2_fields(battle: &Battle, strike: &Strike) -> Result<(), Rejection> {
    let not_in = |field| Rejection::FieldNotInVersion { action: "strike", field, ruleset: battle.ruleset() };
    if strike.attacker.fixed_roll.is_some() {
        return Err(not_in("attacker.fixed_roll"));
    }
    if strike.defender.fixed_roll.is_some() {
        return Err(not_in("defender.fixed_roll"));
    }
    Ok(())
}

pub(crate) fn dice_needed(battle: &Battle, act: Act<'_>) -> Result<DiceRequest, Rejection> {
    match act {
        Act::Strike(strike) => {
            require(battle, "attacker.id", &strike.attacker.id)?;
            require(battle, "defender.id", &strike.defender.id)?;
            refuse_v2_fields(battle, strike)?;
            let mut rolls = vec![RollSpec::one(6, "attacker")];
            if is_fight(strike) {
                rolls.push(RollSpec::one(6, "defender"));
            }
            Ok(DiceRequest::Rolls(rolls))
        }
        Act::Effect(effect) => {
            require(battle, "actor", &effect.actor)?;
            Ok(DiceRequest::Rolls(vec![RollSpec::one(6, "effect")]))
        }
        Act::ExchangeChoice(_) => Err(Rejection::WrongRuleset { action: "exchange_choice", ruleset: battle.ruleset() }),
    }
}

pub(crate) fn resolve(battle: &Battle, act: Act<'_>, faces: &[u32]) -> Result<(Outcome, Summary), ResolveError> {
    let mut faces = Faces::new(faces);
    match act {
        Act::Strike(strike) => {
            let attacker_die = faces.take()?;
            let (fight, outcome) = if is_fight(strike) {
                let fight = fight(attacker_die, faces.take()?, &strike.attacker, &strike.defender);
                (Some(fight), fight)
            } else {
                let total = i64::from(attacker_die) + i64::from(strike.attacker.die_modifier);
                let closed = Fight {
                    diff: 0,
                    attacker_tier: closed_tier(total),
                    defender_tier: Tier::None,
                    exchange_avoided: false,
                };
                (None, closed)
            };
            let outcome = StrikeOutcome {
                fight: fight.is_some(),
                attacker_tier: outcome.attacker_tier,
                defender_tier: outcome.defender_tier,
                attacker_damage: strike.attacker.strike.map(|values| outcome.attacker_tier.damage(&values)),
                defender_damage: strike.defender.strike.map(|values| outcome.defender_tier.damage(&values)),
                diff: fight.map(|fight| fight.diff),
                exchange_avoided: outcome.exchange_avoided,
                pending_choice: None,
            };
            let summary = strike_summary(strike, &outcome);
            Ok((Outcome::Strike(outcome), summary))
        }
        Act::Effect(effect) => resolve_effect(effect, faces.take()?),
        Act::ExchangeChoice(_) => {
            Err(Rejection::WrongRuleset { action: "exchange_choice", ruleset: battle.ruleset() }.into())
        }
    }
}

/// §3.2: one d6 plus the modifier picks X, Y or Z.
pub(crate) fn resolve_effect(effect: &Effect, die: u32) -> Result<(Outcome, Summary), ResolveError> {
    let value = i64::from(die) + i64::from(effect.die_modifier);
    let tier = effect_tier(value);
    let [x, y, z] = effect.values;
    let (picked, letter) = match tier {
        EffectTier::X => (x, "X"),
        EffectTier::Y => (y, "Y"),
        EffectTier::Z => (z, "Z"),
    };
    let actor = &effect.actor;
    let summary = Summary::new(
        format!("{actor}: эффект {x}-{y}-{z} — срабатывает {letter}: {picked}"),
        format!("{actor}: effect {x}-{y}-{z} gives {letter}: {picked}"),
    );
    Ok((Outcome::Effect(EffectOutcome { tier, value: picked }), summary))
}

pub(crate) fn tier_text(tier: Tier, damage: Option<u32>) -> (String, String) {
    let (ru, en) = match tier {
        Tier::Weak => ("слабый удар", "weak strike"),
        Tier::Medium => ("средний удар", "medium strike"),
        Tier::Strong => ("сильный удар", "strong strike"),
        Tier::Miss => ("промах", "miss"),
        Tier::None => ("не бьёт", "no strike"),
    };
    match damage.filter(|_| tier.strikes()) {
        Some(damage) => (format!("{ru} ({damage})"), format!("{en} ({damage})")),
        None => (ru.to_owned(), en.to_owned()),
    }
}

pub(crate) fn strike_summary(strike: &Strike, outcome: &StrikeOutcome) -> Summary {
    let (a, d) = (&strike.attacker.id, &strike.defender.id);
    let (attacker_ru, attacker_en) = tier_text(outcome.attacker_tier, outcome.attacker_damage);
    let Some(diff) = outcome.diff else {
        return Summary::new(
            format!("{a} бьёт {d} без ответного удара: {attacker_ru}"),
            format!("{a} strikes {d} with no return strike: {attacker_en}"),
        );
    };
    let (defender_ru, defender_en) = tier_text(outcome.defender_tier, outcome.defender_damage);
    let mut ru = format!("Бой {a} против {d}, разница {diff:+}: {a} — {attacker_ru}, {d} — {defender_ru}");
    let mut en = format!("Fight {a} against {d}, difference {diff:+}: {a} — {attacker_en}, {d} — {defender_en}");
    if outcome.exchange_avoided {
        let side = if diff > 0 { a } else { d };
        ru.push_str(&format!("; {side} уходит от обмена ударами"));
        en.push_str(&format!("; {side} avoids the exchange of blows"));
    }
    Summary::new(ru, en)
}

#[cfg(test)]
mod tests;
