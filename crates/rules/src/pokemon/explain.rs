//! Why a `pokemon-d6` result is what it is (see [`crate::explain`]): the condition dice, power and accuracy, the multipliers and the damage.

use super::types as pokemon;
use super::v1;
use crate::action::Action;
use crate::explain::parts::{Case, DieUse, Explanation, Product, Row, Sum, die, row, term};
use crate::fraction::{Fraction, round_half_up};
use crate::model::state::Battle;
use crate::outcome::Outcome;
use crate::ruleset::RulesetId;

/// Explains a `pokemon-d6` action's outcome, of the action's own kind, into
/// `explanation`.
pub(crate) fn explain(explanation: &mut Explanation, case: &Case<'_>) {
    let (before, faces) = (case.before, case.faces);
    match (case.action, case.outcome) {
        (Action::Attack(act), Outcome::Attack(out)) => explain_attack(explanation, before, act, faces, out),
        (Action::StatusMove(act), Outcome::StatusMove(out)) => {
            explain_status_move(explanation, before, act, faces, out)
        }
        (Action::Dodge(act), Outcome::Dodge(out)) => explain_dodge(explanation, before, act, faces, out),
        (Action::Metronome(act), Outcome::Metronome(_)) => {
            let face = faces.first().copied().unwrap_or(0);
            let sides = u32::try_from(act.moves.len()).unwrap_or(u32::MAX);
            let picked = usize::try_from(face).ok().and_then(|k| k.checked_sub(1)).and_then(|k| act.moves.get(k));
            explanation.dice.push(DieUse {
                role: "metronome",
                face,
                sides,
                who: Some(act.actor.clone()),
                meaning: Some("metronome.picks"),
                picked: picked.cloned(),
            });
            explanation.rows.push(Row { key: "pokemon.metronome", section: "1.4", gives: picked.cloned() });
        }
        (Action::Pass(_), Outcome::Pass(_)) => {
            explanation.rows.push(row("pokemon.pass", "1.5", Some("pass")));
        }
        // [`crate::explain::explain`] hands over only matching kinds.
        _ => {}
    }
}

fn condition_dice(
    explanation: &mut Explanation,
    who: &str,
    actor: Option<&pokemon::Pokemon>,
    faces: &mut impl Iterator<Item = u32>,
) {
    let conditions = actor.map(v1::conditions).unwrap_or_default();
    for condition in conditions {
        let Some(face) = faces.next() else { break };
        let (role, meaning, fails) = match condition {
            v1::Condition::Paralysis => {
                ("paralysis", if face <= 2 { "condition.fails" } else { "condition.passes" }, face <= 2)
            }
            v1::Condition::Infatuation => {
                ("infatuation", if face % 2 == 1 { "condition.fails" } else { "condition.passes" }, face % 2 == 1)
            }
            v1::Condition::Confusion => {
                ("confusion", if face % 2 == 1 { "confusion.self" } else { "confusion.target" }, false)
            }
        };
        explanation.dice.push(die(role, face, 6, who, Some(meaning)));
        if fails {
            let key = if role == "paralysis" { "pokemon.paralysis_fails" } else { "pokemon.infatuation_fails" };
            explanation.rows.push(row(key, "1.1", Some("failed")));
        }
    }
}

fn explain_attack(
    explanation: &mut Explanation,
    before: &Battle,
    act: &pokemon::Attack,
    faces: &[u32],
    out: &pokemon::AttackOutcome,
) {
    let v2 = before.ruleset() == RulesetId::PokemonD6V2;
    let actor = before.pokemon(&act.actor);
    match out.result {
        pokemon::AttackResult::Flinched => {
            explanation.rows.push(row("pokemon.flinched", "1.1", Some("flinched")));
            return;
        }
        pokemon::AttackResult::Charging => {
            explanation.rows.push(row("pokemon.charging", "1.1", Some("charging")));
            return;
        }
        _ => {}
    }
    let mut faces = faces.iter().copied();
    let Some(p) = faces.next() else { return };
    explanation.dice.push(die("power", p, 6, &act.actor, None));
    condition_dice(explanation, &act.actor, actor, &mut faces);
    if out.result == pokemon::AttackResult::Failed {
        return;
    }
    // The power row, from the flags docs/rules.md §1.1 (and §6.1.1) names.
    let p_eff = if p == 1 && act.never_miss { 2 } else { p };
    let (gives, multiplier, hits) = if act.multi_hit && !v2 && p_eff > 1 {
        // `@1`: the die sets the number of hits, each at full power.
        explanation.rows.push(row("pokemon.power.multi_hit", "1.1", Some("hit")));
        ("hit", Fraction::ONE, Some(p_eff - 1))
    } else {
        let (key, gives, multiplier) = power_row(act, p);
        explanation.rows.push(row(key, "1.1", Some(gives)));
        let hits = if act.multi_hit && v2 && gives != "miss" {
            explanation.rows.push(row("pokemon.power.multi_hit_v2", "6.1.1", Some(gives)));
            Some(p.saturating_sub(1).max(1))
        } else {
            None
        };
        (gives, multiplier, hits)
    };
    if out.result == pokemon::AttackResult::SelfHit && gives != "miss" {
        explanation.rows.push(row("pokemon.confusion_self_hit", "1.1", Some("self_hit")));
    }
    if let Some(effect) = out.effect() {
        let flinch = v2 && effect == v1::FLINCH;
        let (key, section) = if flinch { ("pokemon.effect.flinch", "6.1.2") } else { ("pokemon.effect.status", "1.1") };
        explanation.rows.push(row(key, section, None));
    }
    if out.interrupts_target == Some(true) && act.interrupt {
        explanation.rows.push(row("pokemon.interrupt", "1.1", None));
    }
    if out.breaks_charge == Some(true) {
        explanation.rows.push(row("pokemon.breaks_charge", "1.1", None));
    }
    attack_damage(explanation, act, multiplier, hits);
}

/// The power table's row for die `p` (docs/rules.md §1.1, the flags it
/// names), what it gives and its damage multiplier.
fn power_row(act: &pokemon::Attack, p: u32) -> (&'static str, &'static str, Fraction) {
    let has_effect = act.effect.is_some();
    let third = |n| Fraction::new(n, 3).unwrap_or(Fraction::ONE);
    if p == 1 && act.never_miss {
        return ("pokemon.power.never_miss", "hit", third(1));
    }
    if p <= 1 {
        return ("pokemon.power.p1", "miss", Fraction::ZERO);
    }
    if act.variable_power {
        return ("pokemon.power.variable", "hit", Fraction::new(p - 1, 5).unwrap_or(Fraction::ONE));
    }
    match p {
        2 => ("pokemon.power.p2", "hit", third(1)),
        3 => ("pokemon.power.p3", "hit", third(2)),
        4 => ("pokemon.power.p4", "hit", Fraction::ONE),
        5 if act.high_crit && !(has_effect && act.prefer == pokemon::Prefer::Effect) => {
            ("pokemon.power.high_crit", "crit", Fraction::TWO)
        }
        5 if act.high_crit => ("pokemon.power.high_crit_prefer_effect", "hit", Fraction::ONE),
        5 if has_effect => ("pokemon.power.p5_effect", "hit", Fraction::ONE),
        5 => ("pokemon.power.p5", "hit", Fraction::ONE),
        _ => ("pokemon.power.p6", "crit", Fraction::TWO),
    }
}

/// Damage as the row gives it: round(power × multiplier × hits).
fn attack_damage(explanation: &mut Explanation, act: &pokemon::Attack, multiplier: Fraction, hits: Option<u32>) {
    if let Some(power) = act.power {
        let mut factors = vec![("power", power.to_string()), ("multiplier", multiplier.to_string())];
        if let Some(hits) = hits {
            factors.push(("hits", hits.to_string()));
        }
        let damage = multiplier.apply_rounded(u64::from(power), hits.unwrap_or(1));
        explanation.products.push(Product { key: "damage", factors, value: i64::try_from(damage).unwrap_or(i64::MAX) });
    }
}

fn explain_status_move(
    explanation: &mut Explanation,
    before: &Battle,
    act: &pokemon::StatusMove,
    faces: &[u32],
    out: &pokemon::StatusMoveOutcome,
) {
    if out.result == pokemon::StatusMoveResult::Flinched {
        explanation.rows.push(row("pokemon.flinched", "1.2", Some("flinched")));
        return;
    }
    let mut faces = faces.iter().copied();
    let Some(p) = faces.next() else { return };
    explanation.dice.push(die("power", p, 6, &act.actor, None));
    let before_rows = explanation.rows.len();
    condition_dice(explanation, &act.actor, before.pokemon(&act.actor), &mut faces);
    if explanation.rows.len() > before_rows {
        return;
    }
    if p <= 2 {
        explanation.rows.push(row("pokemon.status.failed", "1.2", Some("failed")));
        return;
    }
    explanation.sums.push(Sum::new("turns", Some(&act.actor), vec![p], vec![term("constant", -2, "1.2")]));
    explanation.rows.push(row("pokemon.status.turns", "1.2", Some("success")));
    if out.result == pokemon::StatusMoveResult::SelfHit {
        explanation.rows.push(row("pokemon.confusion_self_hit", "1.2", Some("self_hit")));
    }
    if out.breaks_charge == Some(true) {
        explanation.rows.push(row("pokemon.breaks_charge", "6.1.4", None));
    }
}

fn explain_dodge(
    explanation: &mut Explanation,
    before: &Battle,
    act: &pokemon::Dodge,
    faces: &[u32],
    out: &pokemon::DodgeOutcome,
) {
    match out.result {
        Some(pokemon::DodgeResult::NotNeeded) => {
            explanation.rows.push(row("pokemon.dodge.not_needed", "6.1.3", Some("not_needed")));
            return;
        }
        Some(pokemon::DodgeResult::Flinched) => {
            explanation.rows.push(row("pokemon.dodge.flinched_teleport", "6.1.3", Some("flinched")));
            return;
        }
        _ => {}
    }
    let Some(&face) = faces.first() else { return };
    explanation.dice.push(die("dodge", face, 6, &act.actor, None));
    // `@2` takes priority and damage from the attack it answers (§6.1.3).
    let attack = act.against.and_then(|against| before.entry(against)).and_then(|entry| {
        match (&entry.action, &entry.effective) {
            (Action::Attack(attack), Outcome::Attack(outcome)) => Some((attack.priority, outcome.damage)),
            _ => None,
        }
    });
    let (priority, incoming) = match attack {
        Some((priority, damage)) => (priority, damage),
        None => (act.priority, act.incoming_damage.map(u64::from)),
    };
    let terms = if priority { vec![term("priority", -1, "1.1")] } else { Vec::new() };
    let sum = Sum::new("effective_die", Some(&act.actor), vec![face], terms);
    let (key, reduction, counted) = match sum.value {
        ..=1 => ("pokemon.dodge.e1", 0u32, true),
        2 => ("pokemon.dodge.e2", 5, true),
        3 => ("pokemon.dodge.e3", 50, true),
        4 => ("pokemon.dodge.e4", 60, true),
        5 => ("pokemon.dodge.e5", 100, true),
        _ => ("pokemon.dodge.e6", 100, false),
    };
    explanation.sums.push(sum);
    let gives = format!("{reduction}%{}", if counted { "" } else { " not_counted" });
    explanation.rows.push(Row { key, section: "1.3", gives: Some(gives) });
    if let Some(incoming) = incoming {
        let after = round_half_up(u128::from(incoming) * u128::from(100 - reduction), 100);
        explanation.products.push(Product {
            key: "damage_after",
            factors: vec![("incoming_damage", incoming.to_string()), ("damage_kept", format!("{}%", 100 - reduction))],
            value: i64::try_from(after).unwrap_or(i64::MAX),
        });
    }
}
