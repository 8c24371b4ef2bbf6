//! docs/rules.md §3 row by row: the strike table, closed cards, the exchange and
//! X-Y-Z effects. Expected outcome fields and numbers are the table's, by
//! hand. The wording of the forum summaries in `summaries_describe_the_fight`
//! is the code's own, locked here (docs/rules.md §5.3 fixes no words); only the
//! numbers in it come from the table.

use serde_json::{Value, json};

use super::*;
use crate::berserk::EffectTier;
use crate::error::Rejection;
use crate::test_support::{fields, open, play, rejection};

fn battle() -> Battle {
    open("berserk@1", json!([{"id": "a"}, {"id": "b"}]))
}

fn attacker(avoid: bool) -> Attacker {
    Attacker {
        id: "a".into(),
        strike: None,
        attack_experience: 0,
        die_modifier: 0,
        avoid_exchange: Some(avoid),
        fixed_roll: None,
    }
}

fn defender(avoid: bool) -> Defender {
    Defender {
        id: "b".into(),
        strike: None,
        defense_experience: 0,
        die_modifier: 0,
        closed: false,
        avoid_exchange: Some(avoid),
        fixed_roll: None,
    }
}

fn strike(attacker: Value, defender: Value, kind: &str, faces: &[u32]) -> Value {
    let action = json!({"type": "strike", "attacker": attacker, "defender": defender, "kind": kind});
    fields(&play(&mut battle(), action, faces))
}

#[test]
fn every_row_of_the_strike_table() {
    use Tier::{Medium, Miss, Strong, Weak};
    // (attacker die, defender die) chosen to give each diff with plain totals.
    let rows = [
        ((2, 1), 1, (Weak, Miss)),
        ((3, 1), 2, (Medium, Weak)),
        ((4, 1), 3, (Medium, Miss)),
        ((5, 1), 4, (Strong, Weak)),
        ((6, 1), 5, (Strong, Miss)),
        ((1, 2), -1, (Weak, Miss)),
        ((1, 3), -2, (Miss, Miss)),
        ((1, 4), -3, (Miss, Weak)),
        ((1, 5), -4, (Weak, Medium)),
        ((1, 6), -5, (Miss, Medium)),
        ((4, 4), 0, (Weak, Miss)),
        ((1, 1), 0, (Weak, Miss)),
        ((5, 5), 0, (Miss, Weak)),
        ((6, 6), 0, (Miss, Weak)),
    ];
    for ((a, d), diff, tiers) in rows {
        let fight = fight(a, d, &attacker(false), &defender(false));
        assert_eq!(fight.diff, diff, "dice {a}, {d}");
        assert_eq!((fight.attacker_tier, fight.defender_tier), tiers, "diff {diff}");
        assert!(!fight.exchange_avoided);
    }
    // Beyond ±5 the edge rows hold.
    assert_eq!(fight_row(9, 10), (Strong, Miss));
    assert_eq!(fight_row(-9, 1), (Miss, Medium));
    // A tie is read by the attacker's total, modifiers included: 3 + 1 = 4 vs 4.
    let plus_one = Attacker { die_modifier: 1, ..attacker(false) };
    assert_eq!(fight(3, 4, &plus_one, &defender(false)).attacker_tier, Weak);
    let plus_two = Attacker { die_modifier: 2, ..attacker(false) };
    assert_eq!(fight(3, 5, &plus_two, &defender(false)).attacker_tier, Miss);
}

#[test]
fn experience_cancels_and_the_difference_adds_to_the_die() {
    assert_eq!(experience_bonuses(2, 0), (2, 0));
    assert_eq!(experience_bonuses(1, 3), (0, 2));
    assert_eq!(experience_bonuses(2, 2), (0, 0));
    // 2 + (2 − 1) = 3 against 2: diff +1.
    let veteran = Attacker { attack_experience: 2, ..attacker(false) };
    let guard = Defender { defense_experience: 1, ..defender(false) };
    assert_eq!(fight(2, 2, &veteran, &guard).diff, 1);
    assert_eq!(fight(2, 2, &attacker(false), &Defender { defense_experience: 3, ..defender(false) }).diff, -3);
}

#[test]
fn exchange_avoidance_steps_one_row_toward_zero() {
    use Tier::{Medium, Miss, Weak};
    // +2 → +1: medium/weak becomes weak/miss.
    let plus_two = fight(3, 1, &attacker(true), &defender(false));
    assert_eq!((plus_two.diff, plus_two.attacker_tier, plus_two.defender_tier), (2, Weak, Miss));
    assert!(plus_two.exchange_avoided);
    // +4 → +3: strong/weak becomes medium/miss.
    let plus_four = fight(5, 1, &attacker(true), &defender(false));
    assert_eq!((plus_four.diff, plus_four.attacker_tier, plus_four.defender_tier), (4, Medium, Miss));
    assert!(plus_four.exchange_avoided);
    // −4 → −3: weak/medium becomes miss/weak.
    let minus_four = fight(1, 5, &attacker(false), &defender(true));
    assert_eq!((minus_four.diff, minus_four.attacker_tier, minus_four.defender_tier), (-4, Miss, Weak));
    assert!(minus_four.exchange_avoided);
    // Only the side that rolled higher may avoid.
    let lower = fight(3, 1, &attacker(false), &defender(true));
    assert_eq!((lower.attacker_tier, lower.defender_tier, lower.exchange_avoided), (Medium, Weak, false));
    let lower = fight(1, 5, &attacker(true), &defender(false));
    assert_eq!((lower.attacker_tier, lower.defender_tier, lower.exchange_avoided), (Weak, Medium, false));
    // Nothing to avoid when only one side strikes.
    let one_sided = fight(4, 1, &attacker(true), &defender(true));
    assert_eq!((one_sided.attacker_tier, one_sided.defender_tier, one_sided.exchange_avoided), (Medium, Miss, false));
}

#[test]
fn closed_card_tiers() {
    for (die, modifier, tier) in [
        (1, 0, "weak"),
        (3, 0, "weak"),
        (4, 0, "medium"),
        (5, 0, "medium"),
        (6, 0, "strong"),
        (5, 1, "strong"),
        (4, -1, "weak"),
        (6, 3, "strong"),
        (1, -3, "weak"),
    ] {
        let outcome =
            strike(json!({"id": "a", "die_modifier": modifier}), json!({"id": "b", "closed": true}), "simple", &[die]);
        assert_eq!(
            outcome,
            json!({"fight": false, "attacker_tier": tier, "defender_tier": "none", "diff": null,
                   "exchange_avoided": false}),
            "die {die} {modifier:+}"
        );
    }
    // Experience does not apply against a closed card: 3 stays weak.
    let outcome =
        strike(json!({"id": "a", "attack_experience": 3}), json!({"id": "b", "closed": true}), "simple", &[3]);
    assert_eq!(outcome["attacker_tier"], "weak");
}

#[test]
fn only_a_simple_strike_on_an_open_card_of_the_other_squad_is_a_fight() {
    for kind in ["unanswerable", "special", "magic", "through_row", "shot", "discharge", "throw"] {
        let outcome = strike(json!({"id": "a"}), json!({"id": "b"}), kind, &[4]);
        assert_eq!((&outcome["fight"], &outcome["attacker_tier"]), (&json!(false), &json!("medium")), "{kind}");
    }
    let own = json!({"type": "strike", "attacker": {"id": "a"}, "defender": {"id": "b"}, "kind": "simple",
        "own_squad": true});
    assert_eq!(fields(&play(&mut battle(), own, &[4]))["fight"], false);
    let outcome = strike(json!({"id": "a"}), json!({"id": "b"}), "simple", &[4, 2]);
    assert_eq!((&outcome["fight"], &outcome["diff"]), (&json!(true), &json!(2)));
}

#[test]
fn damage_comes_from_the_strike_values_when_given() {
    let outcome =
        strike(json!({"id": "a", "strike": [1, 3, 5]}), json!({"id": "b", "strike": [2, 4, 6]}), "simple", &[3, 1]);
    assert_eq!(
        outcome,
        json!({"fight": true, "attacker_tier": "medium", "defender_tier": "weak", "attacker_damage": 3,
               "defender_damage": 2, "diff": 2, "exchange_avoided": false})
    );
    let outcome = strike(json!({"id": "a", "strike": [1, 3, 5]}), json!({"id": "b"}), "simple", &[1, 3]);
    assert_eq!((&outcome["attacker_damage"], outcome.get("defender_damage")), (&json!(0), None));
    let outcome = strike(json!({"id": "a"}), json!({"id": "b", "strike": [2, 4, 6]}), "shot", &[6]);
    assert_eq!((outcome.get("attacker_damage"), &outcome["defender_damage"]), (None, &json!(0)));
}

#[test]
fn x_y_z_effect_tiers() {
    for (die, modifier, tier, value) in [
        (1, 0, EffectTier::X, 2),
        (3, 0, EffectTier::X, 2),
        (4, 0, EffectTier::Y, 4),
        (5, 0, EffectTier::Y, 4),
        (6, 0, EffectTier::Z, 7),
        (5, 1, EffectTier::Z, 7),
        (4, -1, EffectTier::X, 2),
        (1, -2, EffectTier::X, 2),
    ] {
        let action = json!({"type": "effect", "actor": "a", "values": [2, 4, 7], "die_modifier": modifier});
        let outcome = fields(&play(&mut battle(), action, &[die]));
        assert_eq!(outcome, json!({"tier": tier, "value": value}), "die {die} {modifier:+}");
    }
    assert_eq!(effect_tier(3), EffectTier::X);
    assert_eq!(effect_tier(4), EffectTier::Y);
    assert_eq!(effect_tier(6), EffectTier::Z);
}

#[test]
fn strikes_by_unknown_cards_are_rejected() {
    let action = json!({"type": "strike", "attacker": {"id": "x"}, "defender": {"id": "b"}, "kind": "simple"});
    assert!(matches!(rejection(&battle(), action, &[1, 1]), Rejection::UnknownParticipant { .. }));
}

#[test]
fn summaries_describe_the_fight() {
    let action = json!({"type": "strike", "attacker": {"id": "a", "avoid_exchange": true, "strike": [1, 2, 3]},
        "defender": {"id": "b", "strike": [1, 2, 3]}, "kind": "simple"});
    let resolution = crate::test_support::resolve(&battle(), action, &[3, 1]).expect("resolves");
    assert_eq!(
        resolution.summary.ru,
        "Бой a против b, разница +2: a — слабый удар (1), b — промах; a уходит от обмена ударами"
    );
    assert_eq!(
        resolution.summary.en,
        "Fight a against b, difference +2: a — weak strike (1), b — miss; a avoids the exchange of blows"
    );
}
