//! Why a `berserk` result is what it is (see [`crate::explain`]): the fight's dice and totals, the strike table's row and the damage, or an effect's strength.

use super::types as berserk;
use crate::action::Action;
use crate::explain::parts::{Case, Explanation, Product, Row, Sum, Term, die, row, term};
use crate::outcome::Outcome;
use crate::ruleset::RulesetId;
use serde_json::Value;

/// Explains a `berserk` action's outcome, of the action's own kind, into
/// `explanation`.
pub(crate) fn explain(explanation: &mut Explanation, case: &Case<'_>) {
    let (before, faces) = (case.before, case.faces);
    match (case.action, case.outcome) {
        (Action::Strike(act), Outcome::Strike(out)) => explain_strike(explanation, before.ruleset(), act, faces, out),
        (Action::Effect(act), Outcome::Effect(_)) => {
            let face = faces.first().copied().unwrap_or(0);
            explanation.dice.push(die("effect", face, 6, &act.actor, None));
            let mut terms = Vec::new();
            if act.die_modifier != 0 {
                terms.push(term("die_modifier", i64::from(act.die_modifier), "3.2"));
            }
            let sum = Sum::new("effect_value", Some(&act.actor), vec![face], terms);
            let (key, gives, index) = match sum.value {
                ..=3 => ("berserk.effect.x", "x", 0),
                4 | 5 => ("berserk.effect.y", "y", 1),
                _ => ("berserk.effect.z", "z", 2),
            };
            explanation.sums.push(sum);
            explanation.rows.push(row(key, "3.2", Some(gives)));
            // The strength the row picks from the action's X-Y-Z.
            explanation.products.push(Product {
                key: "effect_strength",
                factors: vec![("effect_values", format!("{}-{}-{}", act.values[0], act.values[1], act.values[2]))],
                value: act.values[index],
            });
        }
        (Action::ExchangeChoice(act), Outcome::ExchangeChoice(out)) => {
            let (key, gives) = if act.avoid == Value::Bool(true) {
                ("berserk.choice.avoid", format!("{}/{}", tier(out.attacker_tier), tier(out.defender_tier)))
            } else {
                ("berserk.choice.keep", format!("{}/{}", tier(out.attacker_tier), tier(out.defender_tier)))
            };
            explanation.rows.push(Row { key, section: "6.3.1", gives: Some(gives) });
        }
        // [`crate::explain::explain`] hands over only matching kinds.
        _ => {}
    }
}

fn tier(tier: berserk::Tier) -> &'static str {
    match tier {
        berserk::Tier::Weak => "weak",
        berserk::Tier::Medium => "medium",
        berserk::Tier::Strong => "strong",
        berserk::Tier::Miss => "miss",
        berserk::Tier::None => "none",
    }
}

/// One side of a berserk fight: its die (or fixed roll), modifier and the
/// experience left after cancelling.
fn side_sum(
    key: &'static str,
    who: &str,
    face: Option<u32>,
    fixed: Option<u32>,
    modifier: i32,
    experience: Option<(i64, i64)>,
) -> Sum {
    let mut terms = Vec::new();
    if let Some(fixed) = fixed {
        terms.push(term("fixed_roll", i64::from(fixed), "6.3.2"));
    }
    if modifier != 0 {
        terms.push(term("die_modifier", i64::from(modifier), "3.1"));
    }
    if let Some((own, other)) = experience.filter(|(own, other)| *own != 0 || *other != 0) {
        let value = (own - other).max(0);
        terms.push(Term { detail: Some(format!("{own} − {other}")), ..term("experience", value, "3.1") });
    }
    Sum::new(key, Some(who), face.into_iter().collect(), terms)
}

fn explain_strike(
    explanation: &mut Explanation,
    ruleset: RulesetId,
    act: &berserk::Strike,
    faces: &[u32],
    out: &berserk::StrikeOutcome,
) {
    // A `@2` fixed roll replaces its side's die; `@1` has none.
    let v2 = ruleset == RulesetId::BerserkV2;
    let fixed = |value: Option<&Value>| {
        if v2 { value.and_then(Value::as_u64).and_then(|v| u32::try_from(v).ok()) } else { None }
    };
    let (attacker_fixed, defender_fixed) =
        (fixed(act.attacker.fixed_roll.as_ref()), fixed(act.defender.fixed_roll.as_ref()));
    let mut faces = faces.iter().copied();
    let attacker_die = if attacker_fixed.is_none() { faces.next() } else { None };
    if let Some(face) = attacker_die {
        explanation.dice.push(die("attacker", face, 6, &act.attacker.id, None));
    }
    let fight = act.kind == berserk::StrikeKind::Simple && !act.defender.closed && !act.own_squad;
    if fight {
        let defender_die = if defender_fixed.is_none() { faces.next() } else { None };
        if let Some(face) = defender_die {
            explanation.dice.push(die("defender", face, 6, &act.defender.id, None));
        }
        let sides = [(attacker_die, attacker_fixed), (defender_die, defender_fixed)];
        explain_fight(explanation, act, sides, out);
    } else {
        explain_no_fight(explanation, act, attacker_die, attacker_fixed);
    }
    strike_damage(explanation, act);
}

/// A strike with no fight (a closed card, one's own squad, or not a simple
/// strike): the attacker's total alone picks the row.
fn explain_no_fight(explanation: &mut Explanation, act: &berserk::Strike, face: Option<u32>, fixed: Option<u32>) {
    let reason = match (act.kind, act.defender.closed) {
        (berserk::StrikeKind::Simple, true) => "berserk.no_fight.closed",
        (berserk::StrikeKind::Simple, false) => "berserk.no_fight.own_squad",
        _ => "berserk.no_fight.kind",
    };
    explanation.rows.push(row(reason, "3.1", None));
    let sum = side_sum("attacker_total", &act.attacker.id, face, fixed, act.attacker.die_modifier, None);
    let (key, gives) = match sum.value {
        ..=3 => ("berserk.closed.weak", "weak/none"),
        4 | 5 => ("berserk.closed.medium", "medium/none"),
        _ => ("berserk.closed.strong", "strong/none"),
    };
    explanation.sums.push(sum);
    explanation.rows.push(row(key, "3.1", Some(gives)));
}

/// A fight: both sides' totals (each side's `(die, fixed roll)` in
/// `sides`), their difference and the fight table's row for it, then what
/// an avoided exchange or a pending `@2` choice made of it.
fn explain_fight(
    explanation: &mut Explanation,
    act: &berserk::Strike,
    sides: [(Option<u32>, Option<u32>); 2],
    out: &berserk::StrikeOutcome,
) {
    let [(attacker_die, attacker_fixed), (defender_die, defender_fixed)] = sides;
    let (x, y) = (i64::from(act.attacker.attack_experience), i64::from(act.defender.defense_experience));
    let a = side_sum(
        "attacker_total",
        &act.attacker.id,
        attacker_die,
        attacker_fixed,
        act.attacker.die_modifier,
        Some((x, y)),
    );
    let d = side_sum(
        "defender_total",
        &act.defender.id,
        defender_die,
        defender_fixed,
        act.defender.die_modifier,
        Some((y, x)),
    );
    let diff = Sum::new(
        "diff",
        None,
        Vec::new(),
        vec![term("attacker_total", a.value, "3.1"), Term { minus: true, ..term("defender_total", d.value, "3.1") }],
    );
    let (key, gives) = fight_table_row(diff.value, a.value);
    explanation.rows.push(row(key, "3.1", Some(gives)));
    if out.exchange_avoided {
        let (_, gives) = fight_table_row(diff.value - diff.value.signum(), a.value);
        explanation.rows.push(row("berserk.exchange_avoided", "3.1", Some(gives)));
    }
    if let Some(Some(side)) = out.pending_choice {
        let key = match side {
            berserk::Side::Attacker => "berserk.pending_choice.attacker",
            berserk::Side::Defender => "berserk.pending_choice.defender",
        };
        explanation.rows.push(row(key, "6.3.1", None));
    }
    explanation.sums.extend([a, d, diff]);
}

/// The fight table's row for `diff` (docs/rules.md §3.1) and the tiers it
/// gives the attacker and the defender; a draw depends on the attacker's
/// total.
fn fight_table_row(diff: i64, attacker_total: i64) -> (&'static str, &'static str) {
    match diff {
        5.. => ("berserk.diff.ge5", "strong/miss"),
        4 => ("berserk.diff.p4", "strong/weak"),
        3 => ("berserk.diff.p3", "medium/miss"),
        2 => ("berserk.diff.p2", "medium/weak"),
        1 => ("berserk.diff.p1", "weak/miss"),
        0 if attacker_total <= 4 => ("berserk.diff.zero_low", "weak/miss"),
        0 => ("berserk.diff.zero_high", "miss/weak"),
        -1 => ("berserk.diff.m1", "weak/miss"),
        -2 => ("berserk.diff.m2", "miss/miss"),
        -3 => ("berserk.diff.m3", "miss/weak"),
        -4 => ("berserk.diff.m4", "weak/medium"),
        _ => ("berserk.diff.le_m5", "miss/medium"),
    }
}

/// Damage as the last row gives it: each side's strike value for its tier.
fn strike_damage(explanation: &mut Explanation, act: &berserk::Strike) {
    let tiers = explanation.rows.iter().rev().find_map(|row| row.gives.clone()).unwrap_or_default();
    let mut tiers = tiers.split('/').map(str::to_owned);
    let (attacker_tier, defender_tier) = (tiers.next().unwrap_or_default(), tiers.next().unwrap_or_default());
    for (key, tier_name, strike) in [
        ("attacker_damage", attacker_tier, act.attacker.strike),
        ("defender_damage", defender_tier, act.defender.strike),
    ] {
        if let Some(strike) = strike {
            let value = match tier_name.as_str() {
                "weak" => strike[0],
                "medium" => strike[1],
                "strong" => strike[2],
                _ => 0,
            };
            explanation.products.push(Product {
                key,
                factors: vec![
                    ("strike_values", format!("{}-{}-{}", strike[0], strike[1], strike[2])),
                    ("tier", tier_name.clone()),
                ],
                value: i64::from(value),
            });
        }
    }
}
