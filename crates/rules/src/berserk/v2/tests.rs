//! docs/rules.md §6.3 item by item, and §3's every-version text on unclamped
//! values. Expected fields and numbers are worked out by hand from the
//! strike table of §3.1 in the comments; the summaries' wording is the
//! code's own, locked in `summaries_say_who_may_choose_and_what_it_gives`
//! (docs/rules.md §5.3 fixes no words), with the numbers from the table.

use serde_json::{Value, json};

use super::*;
use crate::dice_request::DiceError;
use crate::error::Rejection;
use crate::ruleset::RulesetId;
use crate::test_support::{action, fields, open, play, rejection, resolve};
use crate::{Battle, ResolveError};

fn battle() -> Battle {
    open("berserk@2", json!([{"id": "a"}, {"id": "b"}]))
}

fn battle_v1() -> Battle {
    open("berserk@1", json!([{"id": "a"}, {"id": "b"}]))
}

/// A simple strike of `a` on `b`, sides given as JSON objects.
fn strike_json(attacker: Value, defender: Value, kind: &str) -> Value {
    json!({"type": "strike", "attacker": attacker, "defender": defender, "kind": kind})
}

/// A plain fight with strike values a [1, 3, 5] and b [2, 4, 6].
fn valued_fight() -> Value {
    strike_json(json!({"id": "a", "strike": [1, 3, 5]}), json!({"id": "b", "strike": [2, 4, 6]}), "simple")
}

fn choice(actor: &str, against: u64, avoid: Value) -> Value {
    json!({"type": "exchange_choice", "actor": actor, "against": against, "avoid": avoid})
}

fn request(battle: &Battle, json: Value) -> DiceRequest {
    battle.dice_needed(&action(json)).expect("allowed")
}

fn purposes(request: &DiceRequest) -> Vec<&'static str> {
    match request {
        DiceRequest::Rolls(rolls) => rolls.iter().map(|roll| roll.purpose).collect(),
        DiceRequest::Expression(_) => panic!("a fixed request"),
    }
}

// 1. The exchange is chosen after the roll.

#[test]
fn a_choice_at_plus_two_four_and_minus_four_avoided_and_not() {
    // (dice, strike outcome, chooser, kept, avoided), from the table of §3.1
    // with a [1, 3, 5] and b [2, 4, 6], no modifiers or experience:
    let cases = [
        // 3 − 1 = +2: a medium (3), b weak (2); a rolled higher. Avoided,
        // +1: a weak (1), b miss (0).
        ([3, 1], ("medium", "weak", 3, 2, 2), "a", (2, "medium", "weak", 3, 2), (1, "weak", "miss", 1, 0)),
        // 5 − 1 = +4: a strong (5), b weak (2). Avoided, +3: a medium (3), b miss.
        ([5, 1], ("strong", "weak", 5, 2, 4), "a", (4, "strong", "weak", 5, 2), (3, "medium", "miss", 3, 0)),
        // 1 − 5 = −4: a weak (1), b medium (4); b rolled higher. Avoided,
        // −3: a miss (0), b weak (2).
        ([1, 5], ("weak", "medium", 1, 4, -4), "b", (-4, "weak", "medium", 1, 4), (-3, "miss", "weak", 0, 2)),
    ];
    for (dice, (at, dt, ad, dd, diff), chooser, kept, avoided) in cases {
        let side = if chooser == "a" { "attacker" } else { "defender" };
        let mut fight = battle();
        let strike = fields(&play(&mut fight, valued_fight(), &dice));
        assert_eq!(
            strike,
            json!({"fight": true, "attacker_tier": at, "defender_tier": dt, "attacker_damage": ad,
                   "defender_damage": dd, "diff": diff, "exchange_avoided": false, "pending_choice": side}),
            "dice {dice:?}: the table without a step, the choice pending"
        );
        for (avoid, (row, at, dt, ad, dd)) in [(false, kept), (true, avoided)] {
            let mut battle = fight.clone();
            let outcome = fields(&play(&mut battle, choice(chooser, 0, json!(avoid)), &[]));
            assert_eq!(
                outcome,
                json!({"exchange_avoided": avoid, "attacker_tier": at, "defender_tier": dt, "diff": row,
                       "attacker_damage": ad, "defender_damage": dd}),
                "dice {dice:?}, avoid {avoid}"
            );
        }
    }
}

#[test]
fn no_choice_is_pending_where_only_one_side_strikes_or_without_a_fight() {
    // 4 − 1 = +3: medium / miss; 1 − 4 = −3: miss / weak; 2 − 1 = +1;
    // 3 − 3 = 0 with A = 3 ≤ 4: weak / miss; 1 − 3 = −2: miss / miss.
    for dice in [[4, 1], [1, 4], [2, 1], [3, 3], [1, 3], [6, 1], [1, 6]] {
        let outcome = fields(&play(&mut battle(), valued_fight(), &dice));
        assert_eq!(outcome["pending_choice"], Value::Null, "dice {dice:?}");
        assert_eq!(outcome["exchange_avoided"], false);
    }
    // Against a closed card: no fight, nothing to choose.
    let closed = strike_json(json!({"id": "a"}), json!({"id": "b", "closed": true}), "simple");
    let outcome = fields(&play(&mut battle(), closed, &[4]));
    assert_eq!(
        outcome,
        json!({"fight": false, "attacker_tier": "medium", "defender_tier": "none", "diff": null,
               "exchange_avoided": false, "pending_choice": null})
    );
}

#[test]
fn the_experience_left_after_cancelling_decides_who_chooses() {
    // a: die 2, experience 3; b: die 2, experience 1, modifier −2.
    // A = 2 + (3 − 1) = 4; D = 2 − 2 = 0; diff +4: strong / weak, a chooses.
    let strike = strike_json(
        json!({"id": "a", "attack_experience": 3}),
        json!({"id": "b", "defense_experience": 1, "die_modifier": -2}),
        "simple",
    );
    let outcome = fields(&play(&mut battle(), strike, &[2, 2]));
    assert_eq!((&outcome["diff"], &outcome["pending_choice"]), (&json!(4), &json!("attacker")));
}

#[test]
fn a_choice_by_the_wrong_side_is_refused() {
    let mut fight = battle();
    play(&mut fight, valued_fight(), &[3, 1]); // +2: a chooses
    assert_eq!(
        rejection(&fight, choice("b", 0, json!(true)), &[]),
        Rejection::NotTheHigherSide { actor: "b".into(), side: "attacker" }
    );
    assert!(matches!(rejection(&fight, choice("ghost", 0, json!(true)), &[]), Rejection::NotTheHigherSide { .. }));
    let mut fight = battle();
    play(&mut fight, valued_fight(), &[1, 5]); // −4: b chooses
    assert_eq!(
        rejection(&fight, choice("a", 0, json!(false)), &[]).to_string(),
        "only the side that rolled higher chooses"
    );
    // The refusals left the choice open for the right side.
    assert_eq!(fields(&play(&mut fight, choice("b", 0, json!(false)), &[]))["diff"], -4);
}

#[test]
fn a_second_choice_is_refused() {
    let mut fight = battle();
    play(&mut fight, valued_fight(), &[5, 1]);
    play(&mut fight, choice("a", 0, json!(false)), &[]);
    let second = rejection(&fight, choice("a", 0, json!(true)), &[]);
    assert_eq!(second, Rejection::NotAwaitingChoice { against: Some(0) });
    assert_eq!(second.to_string(), "against is not a strike awaiting its exchange choice");
}

#[test]
fn against_must_be_a_strike_awaiting_its_choice() {
    let mut fight = battle();
    // 0: an effect; 1: a strike at +3 (no choice); 2: a strike at +2.
    play(&mut fight, json!({"type": "effect", "actor": "a", "values": [1, 2, 3]}), &[4]);
    play(&mut fight, valued_fight(), &[4, 1]);
    play(&mut fight, valued_fight(), &[3, 1]);
    for against in [0, 1, 3, 99] {
        assert_eq!(
            rejection(&fight, choice("a", against, json!(true)), &[]),
            Rejection::NotAwaitingChoice { against: Some(against) },
            "against {against}"
        );
    }
    let missing = json!({"type": "exchange_choice", "actor": "a", "avoid": true});
    assert_eq!(rejection(&fight, missing, &[]), Rejection::NotAwaitingChoice { against: None });
    assert_eq!(fields(&play(&mut fight, choice("a", 2, json!(true)), &[]))["diff"], 1);
}

#[test]
fn avoid_must_be_a_boolean() {
    let mut fight = battle();
    play(&mut fight, valued_fight(), &[3, 1]);
    for avoid in [json!("yes"), json!(1), json!(null), json!([true])] {
        let refused = rejection(&fight, choice("a", 0, avoid.clone()), &[]);
        assert_eq!(refused, Rejection::AvoidNotBoolean, "avoid {avoid}");
        assert_eq!(refused.to_string(), "avoid must be true or false");
    }
    let without = json!({"type": "exchange_choice", "actor": "a", "against": 0});
    assert_eq!(rejection(&fight, without, &[]), Rejection::AvoidNotBoolean);
    // `against` is checked before `actor`, and `actor` before `avoid`.
    assert!(matches!(rejection(&fight, choice("b", 7, json!("yes")), &[]), Rejection::NotAwaitingChoice { .. }));
    assert!(matches!(rejection(&fight, choice("b", 0, json!("yes")), &[]), Rejection::NotTheHigherSide { .. }));
}

#[test]
fn a_choice_draws_no_dice() {
    let mut fight = battle();
    play(&mut fight, valued_fight(), &[3, 1]);
    assert_eq!(request(&fight, choice("a", 0, json!(true))), DiceRequest::none());
    assert!(matches!(
        resolve(&fight, choice("a", 0, json!(true)), &[3]),
        Err(ResolveError::Dice(DiceError::Count { expected: 0, given: 1, .. }))
    ));
}

#[test]
fn a_strike_or_an_effect_while_a_choice_is_pending_is_refused() {
    let mut fight = battle();
    play(&mut fight, valued_fight(), &[3, 1]);
    let another = valued_fight();
    let effect = json!({"type": "effect", "actor": "b", "values": [1, 2, 3]});
    assert_eq!(rejection(&fight, another.clone(), &[4, 4]), Rejection::StrikeAwaitsChoice { strike: 0 });
    assert_eq!(rejection(&fight, effect.clone(), &[4]).to_string(), "a strike awaits its exchange choice");
    // A strike against a closed card is a strike too.
    let closed = strike_json(json!({"id": "b"}), json!({"id": "a", "closed": true}), "shot");
    assert_eq!(rejection(&fight, closed, &[4]), Rejection::StrikeAwaitsChoice { strike: 0 });
    // Free rolls, disputes and rulings are not held back.
    play(&mut fight, json!({"type": "roll", "actor": "b", "expression": "1d6", "purpose": "p"}), &[2]);
    play(&mut fight, json!({"type": "dispute", "by": "b", "refers_to": 0, "reason": "no"}), &[]);
    play(&mut fight, json!({"type": "ruling", "judge": "Oak", "refers_to": 0, "text": "stands"}), &[]);
    assert!(matches!(rejection(&fight, effect.clone(), &[4]), Rejection::StrikeAwaitsChoice { .. }));
    // Once chosen, strikes and effects go ahead.
    play(&mut fight, choice("a", 0, json!(false)), &[]);
    play(&mut fight, effect, &[4]);
    play(&mut fight, another, &[4, 4]);
}

#[test]
fn a_strike_whose_choice_never_comes_stands_as_the_table_gave_it() {
    let mut fight = battle();
    let outcome = fields(&play(&mut fight, valued_fight(), &[5, 1]));
    // +4 stands: strong (5) / weak (2), and nothing later changes it.
    assert_eq!((&outcome["attacker_damage"], &outcome["defender_damage"]), (&json!(5), &json!(2)));
    play(&mut fight, json!({"type": "roll", "actor": "a", "expression": "1d6", "purpose": "p"}), &[1]);
    assert_eq!(fields(&fight.entry(0).expect("recorded").effective), outcome);
}

#[test]
fn avoid_exchange_is_refused_on_either_side_even_false() {
    let battle = battle();
    for (attacker, defender, field) in [
        (json!({"id": "a", "avoid_exchange": true}), json!({"id": "b"}), "attacker.avoid_exchange"),
        (json!({"id": "a", "avoid_exchange": false}), json!({"id": "b"}), "attacker.avoid_exchange"),
        (json!({"id": "a"}), json!({"id": "b", "avoid_exchange": true}), "defender.avoid_exchange"),
        (json!({"id": "a"}), json!({"id": "b", "avoid_exchange": false, "closed": true}), "defender.avoid_exchange"),
    ] {
        let refused = rejection(&battle, strike_json(attacker, defender, "simple"), &[3, 1]);
        assert_eq!(refused, Rejection::AvoidExchangeBeforeRoll { field });
        assert_eq!(refused.to_string(), "@2: avoid_exchange is chosen after the roll (exchange_choice)");
    }
}

#[test]
fn a_pending_choice_is_refused_before_avoid_exchange() {
    let mut fight = battle();
    play(&mut fight, valued_fight(), &[3, 1]);
    let declared = strike_json(json!({"id": "a", "avoid_exchange": true}), json!({"id": "b"}), "simple");
    assert_eq!(rejection(&fight, declared, &[3, 1]), Rejection::StrikeAwaitsChoice { strike: 0 });
}

#[test]
fn under_v1_an_exchange_choice_and_a_fixed_roll_are_refused() {
    let mut v1 = battle_v1();
    // @1 steps at once on a declared avoidance: 3 − 1 = +2 → +1, no pending field.
    let declared = strike_json(json!({"id": "a", "avoid_exchange": true}), json!({"id": "b"}), "simple");
    let outcome = fields(&play(&mut v1, declared, &[3, 1]));
    assert_eq!(
        outcome,
        json!({"fight": true, "attacker_tier": "weak", "defender_tier": "miss", "diff": 2, "exchange_avoided": true})
    );
    assert_eq!(
        rejection(&v1, choice("a", 0, json!(true)), &[]),
        Rejection::WrongRuleset { action: "exchange_choice", ruleset: RulesetId::BerserkV1 }
    );
    for (attacker, defender, field) in [
        (json!({"id": "a", "fixed_roll": 3}), json!({"id": "b"}), "attacker.fixed_roll"),
        (json!({"id": "a"}), json!({"id": "b", "fixed_roll": 3}), "defender.fixed_roll"),
        (json!({"id": "a", "fixed_roll": null}), json!({"id": "b"}), "attacker.fixed_roll"),
    ] {
        assert_eq!(
            rejection(&v1, strike_json(attacker, defender, "simple"), &[3, 1]),
            Rejection::FieldNotInVersion { action: "strike", field, ruleset: RulesetId::BerserkV1 }
        );
    }
}

// 2. A feature may replace the die roll.

#[test]
fn an_attackers_fixed_roll_in_a_fight_draws_only_the_defenders_die() {
    let mut fight = battle();
    // Fixed 4, modifier −1, experience 2 against 1: A = 4 − 1 + (2 − 1) = 4.
    // Defender's die 2: D = 2. diff +2: medium (3) / weak (2), a chooses.
    let strike = strike_json(
        json!({"id": "a", "fixed_roll": 4, "die_modifier": -1, "attack_experience": 2, "strike": [1, 3, 5]}),
        json!({"id": "b", "defense_experience": 1, "strike": [2, 4, 6]}),
        "simple",
    );
    assert_eq!(purposes(&request(&fight, strike.clone())), ["defender"]);
    let outcome = fields(&play(&mut fight, strike, &[2]));
    assert_eq!(
        outcome,
        json!({"fight": true, "attacker_tier": "medium", "defender_tier": "weak", "attacker_damage": 3,
               "defender_damage": 2, "diff": 2, "exchange_avoided": false, "pending_choice": "attacker"})
    );
}

#[test]
fn a_defenders_fixed_roll_in_a_fight_draws_only_the_attackers_die() {
    // Attacker's die 3: A = 3; fixed 6 + 1 = D = 7; diff −4: weak / medium, b chooses.
    let strike = strike_json(json!({"id": "a"}), json!({"id": "b", "fixed_roll": 6, "die_modifier": 1}), "simple");
    assert_eq!(purposes(&request(&battle(), strike.clone())), ["attacker"]);
    let outcome = fields(&play(&mut battle(), strike.clone(), &[3]));
    assert_eq!((&outcome["diff"], &outcome["pending_choice"]), (&json!(-4), &json!("defender")));
    // The die the fixed roll replaced is not drawn: two faces are one too many.
    assert!(matches!(
        resolve(&battle(), strike, &[3, 6]),
        Err(ResolveError::Dice(DiceError::Count { expected: 1, given: 2, .. }))
    ));
}

#[test]
fn both_fixed_rolls_in_a_fight_draw_no_dice() {
    // A = 5, D = 1: +4, strong / weak.
    let strike = strike_json(json!({"id": "a", "fixed_roll": 5}), json!({"id": "b", "fixed_roll": 1}), "simple");
    assert_eq!(request(&battle(), strike.clone()), DiceRequest::none());
    let outcome = fields(&play(&mut battle(), strike, &[]));
    assert_eq!((&outcome["attacker_tier"], &outcome["defender_tier"]), (&json!("strong"), &json!("weak")));
}

#[test]
fn without_a_fight_only_the_attackers_fixed_roll_matters() {
    // Attacker fixed 6 − 1 = 5 against a closed card: medium; the defender's
    // fixed roll is ignored and no die is drawn.
    let strike = strike_json(
        json!({"id": "a", "fixed_roll": 6, "die_modifier": -1}),
        json!({"id": "b", "closed": true, "fixed_roll": 1}),
        "simple",
    );
    assert_eq!(request(&battle(), strike.clone()), DiceRequest::none());
    let outcome = fields(&play(&mut battle(), strike, &[]));
    assert_eq!(
        outcome,
        json!({"fight": false, "attacker_tier": "medium", "defender_tier": "none", "diff": null,
               "exchange_avoided": false, "pending_choice": null})
    );
    // A shot at an open card with the defender fixed: the attacker's die
    // alone is drawn (4: medium), the defender's fixed roll is ignored.
    let shot = strike_json(json!({"id": "a"}), json!({"id": "b", "fixed_roll": 6}), "shot");
    assert_eq!(purposes(&request(&battle(), shot.clone())), ["attacker"]);
    assert_eq!(fields(&play(&mut battle(), shot, &[4]))["attacker_tier"], "medium");
}

#[test]
fn a_fixed_roll_outside_one_to_six_is_refused_with_or_without_a_fight() {
    let battle = battle();
    for bad in [json!(0), json!(7), json!(-1), json!(2.5), json!("3"), json!(true), json!(null)] {
        for (attacker, defender, kind, field) in [
            (json!({"id": "a", "fixed_roll": bad}), json!({"id": "b"}), "simple", "attacker.fixed_roll"),
            (json!({"id": "a"}), json!({"id": "b", "fixed_roll": bad}), "simple", "defender.fixed_roll"),
            (json!({"id": "a", "fixed_roll": bad}), json!({"id": "b"}), "magic", "attacker.fixed_roll"),
            (
                json!({"id": "a"}),
                json!({"id": "b", "closed": true, "fixed_roll": bad}),
                "simple",
                "defender.fixed_roll",
            ),
        ] {
            let refused = rejection(&battle, strike_json(attacker, defender, kind), &[3, 1]);
            assert_eq!(refused, Rejection::FixedRollOutOfRange { field }, "{bad} {kind}");
            assert_eq!(refused.to_string(), "fixed_roll must be an integer from 1 to 6");
        }
    }
    // 1 and 6 are the edges inside.
    let edges = strike_json(json!({"id": "a", "fixed_roll": 1}), json!({"id": "b", "fixed_roll": 6}), "simple");
    assert!(resolve(&battle, edges, &[]).is_ok());
}

// docs/rules.md §3, every version: modified values are never clamped.

#[test]
fn totals_are_never_clamped_in_either_version() {
    for mut battle in [battle(), battle_v1()] {
        // A = 1 − 3 = −2, D = 1 − 3 = −2: a tie with A ≤ 4 (below 1 too): weak / miss.
        let low = strike_json(json!({"id": "a", "die_modifier": -3}), json!({"id": "b", "die_modifier": -3}), "simple");
        let outcome = fields(&play(&mut battle, low, &[1, 1]));
        assert_eq!((&outcome["diff"], &outcome["attacker_tier"]), (&json!(0), &json!("weak")));
        // A = 6 + 3 = 9, D = 6 + 3 = 9: a tie with A ≥ 5: miss / weak.
        let high = strike_json(json!({"id": "a", "die_modifier": 3}), json!({"id": "b", "die_modifier": 3}), "simple");
        let outcome = fields(&play(&mut battle, high, &[6, 6]));
        assert_eq!((&outcome["diff"], &outcome["defender_tier"]), (&json!(0), &json!("weak")));
        // A = 6 + 3 = 9 against D = 1 − 3 = −2: +11, strong / miss.
        let wide = strike_json(json!({"id": "a", "die_modifier": 3}), json!({"id": "b", "die_modifier": -3}), "simple");
        let outcome = fields(&play(&mut battle, wide, &[6, 1]));
        assert_eq!((&outcome["diff"], &outcome["attacker_tier"]), (&json!(11), &json!("strong")));
        // Closed card: 1 − 3 = −2 is weak (≤ 3); 6 + 2 = 8 is strong (≥ 6).
        let closed = |modifier: i32| {
            strike_json(json!({"id": "a", "die_modifier": modifier}), json!({"id": "b", "closed": true}), "simple")
        };
        assert_eq!(fields(&play(&mut battle, closed(-3), &[1]))["attacker_tier"], "weak");
        assert_eq!(fields(&play(&mut battle, closed(2), &[6]))["attacker_tier"], "strong");
    }
}

// Judges' overrides.

#[test]
fn a_judge_may_close_a_pending_choice_but_not_invent_one() {
    let ruling = |refers_to: u64, replacement: Value| json!({"type": "ruling", "judge": "Oak", "refers_to": refers_to, "text": "t", "override": replacement});
    let mut fight = battle();
    play(&mut fight, valued_fight(), &[3, 1]); // +2: a chooses
    // The defender did not roll higher at +2.
    assert!(matches!(
        rejection(&fight, ruling(0, json!({"pending_choice": "defender"})), &[]),
        Rejection::OverrideInvalid { .. }
    ));
    // Nor may a side be named on a row where only one side strikes.
    let mut without = fight.clone();
    play(&mut without, choice("a", 0, json!(false)), &[]);
    play(&mut without, valued_fight(), &[4, 1]); // +3, nothing pending
    assert!(matches!(
        rejection(&without, ruling(2, json!({"pending_choice": "attacker"})), &[]),
        Rejection::OverrideInvalid { .. }
    ));
    // Closing it: strikes go ahead and the choice is refused.
    play(&mut fight, ruling(0, json!({"pending_choice": null})), &[]);
    assert_eq!(rejection(&fight, choice("a", 0, json!(true)), &[]), Rejection::NotAwaitingChoice { against: Some(0) });
    play(&mut fight, valued_fight(), &[4, 1]);
    // Under @1 the field does not exist.
    let mut v1 = battle_v1();
    play(&mut v1, valued_fight(), &[3, 1]);
    assert!(matches!(
        rejection(&v1, ruling(0, json!({"pending_choice": null})), &[]),
        Rejection::OverrideInvalid { .. }
    ));
}

#[test]
fn recorded_outcomes_fold_back_and_replay_keeps_the_choice_open() {
    let mut fight = battle();
    play(&mut fight, valued_fight(), &[1, 5]);
    let after_strike = fight.clone();
    play(&mut fight, choice("b", 0, json!(true)), &[]);
    // Folding the journaled outcomes rebuilds the same battle.
    let mut folded = battle();
    for entry in fight.entries() {
        folded = folded.apply(entry.version, &entry.action, &entry.outcome).expect("folds");
    }
    assert_eq!(folded, fight);
    // As of the strike, the choice is still open.
    let replayed = fight.as_of(0).expect("replays");
    assert_eq!(replayed, after_strike);
    assert_eq!(rejection(&replayed, valued_fight(), &[1, 1]), Rejection::StrikeAwaitsChoice { strike: 0 });
}

#[test]
fn summaries_say_who_may_choose_and_what_it_gives() {
    let mut fight = battle();
    let strike = resolve(&fight, valued_fight(), &[3, 1]).expect("resolves");
    // +2: a medium (3), b weak (2); avoided, +1: a weak (1), b miss.
    assert_eq!(
        strike.summary.ru,
        "Бой a против b, разница +2: a — средний удар (3), b — слабый удар (2); a может уйти от обмена ударами \
         (разница +1: a — слабый удар (1), b — промах) или принять его"
    );
    assert_eq!(
        strike.summary.en,
        "Fight a against b, difference +2: a — medium strike (3), b — weak strike (2); a may avoid the exchange \
         of blows (difference +1: a — weak strike (1), b — miss) or take it"
    );
    fight = strike.battle;
    let avoided = resolve(&fight, choice("a", 0, json!(true)), &[]).expect("resolves");
    assert_eq!(avoided.summary.ru, "a уходит от обмена ударами в бою №0, разница +1: a — слабый удар (1), b — промах");
    assert_eq!(
        avoided.summary.en,
        "a avoids the exchange of blows in fight #0, difference +1: a — weak strike (1), b — miss"
    );
    let kept = resolve(&fight, choice("a", 0, json!(false)), &[]).expect("resolves");
    assert_eq!(
        kept.summary.en,
        "a takes the exchange of blows in fight #0, difference +2: a — medium strike (3), b — weak strike (2)"
    );
    assert_eq!(
        kept.summary.ru,
        "a принимает обмен ударами в бою №0, разница +2: a — средний удар (3), b — слабый удар (2)"
    );
    // Nothing pending: @1's words.
    let plain = resolve(&battle(), valued_fight(), &[4, 1]).expect("resolves");
    assert_eq!(plain.summary.en, "Fight a against b, difference +3: a — medium strike (3), b — miss");
}

#[test]
fn chooser_and_fixed_roll_read_the_table_and_the_range() {
    assert_eq!(chooser(Some(2)), Some(Side::Attacker));
    assert_eq!(chooser(Some(4)), Some(Side::Attacker));
    assert_eq!(chooser(Some(-4)), Some(Side::Defender));
    for diff in [None, Some(0), Some(1), Some(3), Some(5), Some(-2), Some(-3), Some(-5)] {
        assert_eq!(chooser(diff), None, "{diff:?}");
    }
    assert_eq!(fixed_roll(None, "f"), Ok(None));
    assert_eq!(fixed_roll(Some(&json!(null)), "f"), Err(Rejection::FixedRollOutOfRange { field: "f" }));
    assert_eq!(fixed_roll(Some(&json!(1)), "f"), Ok(Some(1)));
    assert_eq!(fixed_roll(Some(&json!(6)), "f"), Ok(Some(6)));
    assert_eq!(fixed_roll(Some(&json!(6.0)), "f"), Err(Rejection::FixedRollOutOfRange { field: "f" }));
}

#[test]
fn sent_fields_keep_their_presence_through_the_journal() {
    // A strike as journaled (serialised) and read back refuses or accepts
    // alike: `avoid_exchange: false` stays present, an absent one absent.
    for (side, refused) in [(json!({"id": "a", "avoid_exchange": false}), true), (json!({"id": "a"}), false)] {
        let strike = action(strike_json(side, json!({"id": "b"}), "simple"));
        let reread: Action =
            serde_json::from_value(serde_json::to_value(&strike).expect("serialises")).expect("reads back");
        assert_eq!(reread, strike);
        assert_eq!(battle().dice_needed(&reread).is_err(), refused);
    }
    // `null` is no boolean, in either version: not an action at all, as before `@2`.
    let null = strike_json(json!({"id": "a", "avoid_exchange": null}), json!({"id": "b"}), "simple");
    assert!(serde_json::from_value::<Action>(null).is_err());
}
