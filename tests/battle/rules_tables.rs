//! docs/rules.md's tables, written out here without the rules crate: the
//! resolver's Audit re-resolves with the same rules code, so only the
//! outcomes the tests work out from these can catch a rules error.

use battlelog_proto::v1 as pb;
use battlelog_test_support::stack::*;
use serde_json::{Value, json};

/// round(num / den) half up, for non-negative exact fractions (docs/rules.md
/// conventions).
pub(crate) fn round_half_up(num: u64, den: u64) -> u64 {
    (2 * num + den) / (2 * den)
}

/// docs/rules.md §1.1 step 4, general table: (result, multiplier as written in the
/// outcome, multiplier's numerator, denominator).
pub(crate) fn pokemon_power_row(p: i64) -> (&'static str, &'static str, u64, u64) {
    match p {
        1 => ("miss", "0", 0, 1),
        2 => ("hit", "1/3", 1, 3),
        3 => ("hit", "2/3", 2, 3),
        4 | 5 => ("hit", "1", 1, 1),
        6 => ("crit", "2", 2, 1),
        _ => panic!("a d6 showed {p}"),
    }
}

/// docs/rules.md §1.1 for an attack with `power`, without an `effect` and without
/// flags other than `priority` (which does not touch the roll), by an actor
/// whose only condition may be confusion (`confusion` = its die), on a
/// target that is not charging: the whole outcome.
pub(crate) fn pokemon_attack(p: i64, confusion: Option<i64>, power: u64) -> Value {
    let (result, multiplier, num, den) = pokemon_power_row(p);
    // Step 6: round(power × multiplier × hits), hits = 1.
    let damage = round_half_up(power * num, den);
    if result == "miss" {
        // "A miss stays a miss whatever the confusion die says."
        return json!({"result": "miss", "multiplier": "0", "damage": 0});
    }
    if confusion.is_some_and(|c| c % 2 == 1) {
        // Step 4: a confused Pokémon whose die was odd hits itself; no
        // effect, interrupt or charge-break.
        return json!({"result": "self_hit", "multiplier": multiplier, "damage": damage});
    }
    json!({"result": result, "multiplier": multiplier, "damage": damage,
        "effect_applied": null, "interrupts_target": false, "breaks_charge": false})
}

/// docs/rules.md §1.2 for a status move by an actor whose only condition may be
/// confusion: (outcome, turns the status lands for, whether it lands on the
/// actor itself).
pub(crate) fn pokemon_status_move(p: i64, confusion: Option<i64>) -> (Value, u64, bool) {
    assert!((1..=6).contains(&p), "a d6 showed {p}");
    if p <= 2 {
        return (json!({"result": "failed", "turns": 0}), 0, false);
    }
    // p = 3 → 1 turn … p = 6 → 4 turns.
    let turns = (p - 2) as u64;
    if confusion.is_some_and(|c| c % 2 == 1) {
        return (json!({"result": "self_hit", "turns": turns}), turns, true);
    }
    (json!({"result": "success", "turns": turns}), turns, false)
}

/// docs/rules.md §4.1.
pub(crate) fn pbta_band(total: i64) -> &'static str {
    match total {
        10.. => "full_success",
        7..=9 => "success_with_cost",
        _ => "miss",
    }
}

/// docs/rules.md §4.1: a `move` without helpers by an actor whose trait is
/// `trait_value`, from its reply's 2d6 (which the caller checks against the
/// journal and re-derives).
pub(crate) fn assert_pbta_move(reply: &pb::ActResponse, trait_value: i64) {
    let dice = faces(reply);
    assert_eq!(dice.len(), 2, "a move rolls 2d6: {reply:?}");
    let total = dice.iter().sum::<i64>() + trait_value;
    let expected = json!({"result": pbta_band(total), "total": total, "help": 0, "exposed": []});
    assert_eq!(outcome(reply), expected, "a move showing {dice:?}");
}

/// docs/rules.md §2.1's specialization bonus by skill points.
pub(crate) fn arcana_bonus(points: i64) -> i64 {
    match points {
        1 => 0,
        2..=4 => 1,
        5..=7 => 2,
        8 | 9 => 3,
        10..=12 => 4,
        _ => panic!("{points} skill points"),
    }
}

/// docs/rules.md §2.1 for points ≠ 12: the `cast` outcome of 2d10 with `sum`.
pub(crate) fn arcana_cast(sum: i64, total_skill: i64) -> Value {
    let result = match sum {
        2 => "critical_success",
        20 => "critical_failure",
        19 => "ordinary_failure",
        s if s <= total_skill => "success",
        _ => "failure",
    };
    let broken = matches!(result, "ordinary_failure" | "critical_failure");
    json!({"result": result, "sum": sum, "total_skill": total_skill, "concentration_broken": broken})
}

/// docs/rules.md §2.2: whether the attacking cast lands against the defence.
pub(crate) fn arcana_attack_lands(attack: &str, defence: &str) -> bool {
    let succeeded = |r: &str| matches!(r, "success" | "critical_success");
    succeeded(attack) && !(succeeded(defence) && (attack != "critical_success" || defence == "critical_success"))
}

/// docs/rules.md §3.1's fight table (no exchange avoided): (attacker tier,
/// defender tier) by `diff` and the attacker's total `a_total`.
pub(crate) fn berserk_fight(diff: i64, a_total: i64) -> (&'static str, &'static str) {
    match diff {
        5.. => ("strong", "miss"),
        4 => ("strong", "weak"),
        3 => ("medium", "miss"),
        2 => ("medium", "weak"),
        1 => ("weak", "miss"),
        0 if a_total <= 4 => ("weak", "miss"),
        0 => ("miss", "weak"),
        -1 => ("weak", "miss"),
        -2 => ("miss", "miss"),
        -3 => ("miss", "weak"),
        -4 => ("weak", "medium"),
        _ => ("miss", "medium"),
    }
}

/// docs/rules.md §3.1 against a closed card: the attacker's tier by A.
pub(crate) fn berserk_closed(a_total: i64) -> &'static str {
    match a_total {
        ..=3 => "weak",
        4 | 5 => "medium",
        _ => "strong",
    }
}

/// The damage a tier deals from a side's [weak, medium, strong] values.
pub(crate) fn berserk_damage(tier: &str, strike: [i64; 3]) -> i64 {
    match tier {
        "weak" => strike[0],
        "medium" => strike[1],
        "strong" => strike[2],
        _ => 0,
    }
}
