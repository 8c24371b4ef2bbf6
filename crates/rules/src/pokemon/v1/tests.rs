//! docs/rules.md §1 row by row. Every expected outcome field and number is read
//! off the tables in docs/rules.md, not taken from this code's output. The one
//! exception is the wording of the forum summaries: docs/rules.md §5.3 asks for a
//! one-line summary in Russian and English but fixes no words, so
//! `summaries_read_naturally_in_both_languages` locks the wording the code
//! had when it was written (only the numbers in it come from the tables).

use serde_json::{Value, json};

use super::*;
use crate::dice_request::DiceRequest;
use crate::model::state::Battle;
use crate::test_support::{fields, open, play, rejection, resolve, with_fields};

fn battle() -> Battle {
    open("pokemon-d6@1", json!([{"id": "pikachu"}, {"id": "meowth"}]))
}

fn attack(extra: Value) -> Value {
    with_fields(json!({"type": "attack", "actor": "pikachu", "target": "meowth", "move": "Tackle"}), extra)
}

/// The outcome of one attack with a fresh battle.
fn attack_outcome(extra: Value, faces: &[u32]) -> Value {
    fields(&play(&mut battle(), attack(extra), faces))
}

fn status_move(status: &str) -> Value {
    json!({"type": "status_move", "actor": "pikachu", "target": "meowth", "move": "Thunder Wave", "status": status})
}

fn dodge(actor: &str, priority: bool, incoming: Option<u32>) -> Value {
    let mut dodge = json!({"type": "dodge", "actor": actor, "priority": priority});
    if let Some(incoming) = incoming {
        dodge["incoming_damage"] = json!(incoming);
    }
    dodge
}

/// A battle where `who` has `status` for `turns` turns, set the way the
/// rules set it: a successful status move (power die 3 + turns − 1).
fn with_status(who: &str, status: &str, turns: u32) -> Battle {
    let mut battle = battle();
    let other = if who == "pikachu" { "meowth" } else { "pikachu" };
    let action = json!({"type": "status_move", "actor": other, "target": who, "move": "x", "status": status});
    play(&mut battle, action, &[turns + 2]);
    assert_eq!(battle.pokemon(who).and_then(|p| p.statuses.get(status)), Some(&turns));
    battle
}

#[test]
fn general_power_table_rows() {
    let power = json!({"power": 90, "effect": "burn"});
    assert_eq!(attack_outcome(power.clone(), &[1]), json!({"result": "miss", "multiplier": "0", "damage": 0}));
    let hit = |multiplier: &str, damage: u64, effect: Value| {
        json!({"result": "hit", "multiplier": multiplier, "damage": damage, "effect_applied": effect,
               "interrupts_target": false, "breaks_charge": false})
    };
    assert_eq!(attack_outcome(power.clone(), &[2]), hit("1/3", 30, Value::Null));
    assert_eq!(attack_outcome(power.clone(), &[3]), hit("2/3", 60, Value::Null));
    assert_eq!(attack_outcome(power.clone(), &[4]), hit("1", 90, Value::Null));
    assert_eq!(attack_outcome(power.clone(), &[5]), hit("1", 90, json!("burn")));
    assert_eq!(
        attack_outcome(power, &[6]),
        json!({"result": "crit", "multiplier": "2", "damage": 180, "effect_applied": null,
               "interrupts_target": false, "breaks_charge": false})
    );
    // p = 5 without an effect: a plain full hit.
    assert_eq!(attack_outcome(json!({"power": 90}), &[5]), hit("1", 90, Value::Null));
}

#[test]
fn damage_is_rounded_half_up_and_absent_without_power() {
    // 80 × 1/3 = 26.67 → 27; 65 × 1/3 = 21.67 → 22; 40 × 2/3 = 26.67 → 27; 10 × 1/3 = 3.33 → 3.
    assert_eq!(attack_outcome(json!({"power": 80}), &[2])["damage"], 27);
    assert_eq!(attack_outcome(json!({"power": 65}), &[2])["damage"], 22);
    assert_eq!(attack_outcome(json!({"power": 40}), &[3])["damage"], 27);
    assert_eq!(attack_outcome(json!({"power": 10}), &[2])["damage"], 3);
    assert_eq!(attack_outcome(json!({}), &[4]).get("damage"), None);
    assert_eq!(attack_outcome(json!({}), &[1]), json!({"result": "miss", "multiplier": "0"}));
}

#[test]
fn never_miss_turns_a_one_into_a_third() {
    let outcome = attack_outcome(json!({"power": 60, "never_miss": true}), &[1]);
    assert_eq!(
        (&outcome["result"], &outcome["multiplier"], &outcome["damage"]),
        (&json!("hit"), &json!("1/3"), &json!(20))
    );
    // The rest of the table is the general one.
    assert_eq!(attack_outcome(json!({"never_miss": true}), &[6])["result"], "crit");
    assert_eq!(attack_outcome(json!({"never_miss": true}), &[3])["multiplier"], "2/3");
}

#[test]
fn high_crit_makes_five_and_six_crits_and_prefer_decides_with_an_effect() {
    assert_eq!(attack_outcome(json!({"high_crit": true}), &[5])["result"], "crit");
    assert_eq!(attack_outcome(json!({"high_crit": true}), &[5])["multiplier"], "2");
    assert_eq!(attack_outcome(json!({"high_crit": true}), &[6])["result"], "crit");
    assert_eq!(attack_outcome(json!({"high_crit": true}), &[4])["result"], "hit");
    let crit = attack_outcome(json!({"high_crit": true, "effect": "poison", "power": 50}), &[5]);
    assert_eq!(
        (&crit["result"], &crit["damage"], &crit["effect_applied"]),
        (&json!("crit"), &json!(100), &Value::Null)
    );
    let effect = attack_outcome(json!({"high_crit": true, "effect": "poison", "power": 50, "prefer": "effect"}), &[5]);
    assert_eq!(
        (&effect["result"], &effect["multiplier"], &effect["damage"], &effect["effect_applied"]),
        (&json!("hit"), &json!("1"), &json!(50), &json!("poison"))
    );
}

#[test]
fn variable_power_steps_linearly_and_never_crits() {
    let flags = json!({"variable_power": true, "power": 100});
    assert_eq!(attack_outcome(flags.clone(), &[1])["result"], "miss");
    for (die, multiplier, damage) in [(2, "1/5", 20), (3, "2/5", 40), (4, "3/5", 60), (5, "4/5", 80), (6, "1", 100)] {
        let outcome = attack_outcome(flags.clone(), &[die]);
        assert_eq!(outcome["result"], "hit", "die {die}");
        assert_eq!(outcome["multiplier"], multiplier, "die {die}");
        assert_eq!(outcome["damage"], damage, "die {die}");
    }
    let effect = attack_outcome(json!({"variable_power": true, "effect": "burn"}), &[5]);
    assert_eq!(effect["effect_applied"], "burn");
    assert_eq!(attack_outcome(json!({"variable_power": true, "effect": "burn"}), &[6])["effect_applied"], Value::Null);
}

#[test]
fn multi_hit_counts_hits_by_the_die() {
    let flags = json!({"multi_hit": true, "power": 40});
    assert_eq!(attack_outcome(flags.clone(), &[1]), json!({"result": "miss", "multiplier": "0", "damage": 0}));
    for (die, hits) in [(2, 1), (3, 2), (4, 3), (5, 4), (6, 5)] {
        let outcome = attack_outcome(flags.clone(), &[die]);
        assert_eq!((&outcome["result"], &outcome["multiplier"]), (&json!("hit"), &json!("1")), "die {die}");
        assert_eq!(outcome["hits"], hits, "die {die}");
        assert_eq!(outcome["damage"], 40 * hits, "die {die}");
    }
    assert_eq!(attack_outcome(json!({"multi_hit": true, "effect": "poison"}), &[5])["effect_applied"], "poison");
}

#[test]
fn multi_hit_with_variable_power_is_rejected_before_any_die() {
    let battle = battle();
    let action = attack(json!({"multi_hit": true, "variable_power": true}));
    assert_eq!(rejection(&battle, action.clone(), &[4]), Rejection::MultiHitWithVariablePower);
    assert_eq!(battle.dice_needed(&crate::test_support::action(action)), Err(Rejection::MultiHitWithVariablePower));
}

#[test]
fn condition_dice_follow_the_power_die_in_fixed_order() {
    let mut battle = with_status("pikachu", "confusion", 4);
    play(
        &mut battle,
        json!({"type": "status_move", "actor": "meowth", "target": "pikachu", "move": "x",
        "status": "paralysis"}),
        &[6],
    );
    play(
        &mut battle,
        json!({"type": "status_move", "actor": "meowth", "target": "pikachu", "move": "x",
        "status": "infatuation"}),
        &[6],
    );
    let request = battle.dice_needed(&crate::test_support::action(attack(json!({})))).expect("allowed");
    let DiceRequest::Rolls(rolls) = request else { panic!("fixed dice expected") };
    let purposes: Vec<_> = rolls.iter().map(|roll| (roll.count, roll.sides, roll.purpose)).collect();
    assert_eq!(purposes, [(1, 6, "power"), (1, 6, "paralysis"), (1, 6, "infatuation"), (1, 6, "confusion")]);
}

#[test]
fn paralysis_fails_on_one_or_two() {
    for (die, result) in [(1, "failed"), (2, "failed"), (3, "hit"), (4, "hit"), (5, "hit"), (6, "hit")] {
        let mut battle = with_status("pikachu", "paralysis", 3);
        let outcome = fields(&play(&mut battle, attack(json!({"power": 30})), &[4, die]));
        assert_eq!(outcome["result"], result, "paralysis die {die}");
        if result == "failed" {
            assert_eq!(outcome, json!({"result": "failed"}));
        }
    }
}

#[test]
fn infatuation_fails_on_odd() {
    for (die, result) in [(1, "failed"), (2, "hit"), (3, "failed"), (4, "hit"), (5, "failed"), (6, "hit")] {
        let mut battle = with_status("pikachu", "infatuation", 3);
        assert_eq!(fields(&play(&mut battle, attack(json!({})), &[4, die]))["result"], result, "die {die}");
    }
}

#[test]
fn confusion_odd_hits_itself_and_a_miss_stays_a_miss() {
    let mut battle = with_status("pikachu", "confusion", 3);
    let outcome =
        fields(&play(&mut battle, attack(json!({"power": 60, "effect": "burn", "interrupt": true})), &[5, 3]));
    assert_eq!(outcome, json!({"result": "self_hit", "multiplier": "1", "damage": 60}));
    assert_eq!(battle.pokemon("meowth"), Some(&Pokemon::default()), "no effect or flinch on the target");

    let mut battle = with_status("pikachu", "confusion", 3);
    assert_eq!(fields(&play(&mut battle, attack(json!({"power": 60})), &[5, 2]))["result"], "hit");

    let mut battle = with_status("pikachu", "confusion", 3);
    assert_eq!(fields(&play(&mut battle, attack(json!({"power": 60})), &[1, 3]))["result"], "miss");
}

#[test]
fn an_effect_on_five_lasts_two_turns_of_the_target() {
    let mut battle = battle();
    play(&mut battle, attack(json!({"effect": "burn"})), &[5]);
    assert_eq!(battle.pokemon("meowth").and_then(|p| p.statuses.get("burn")), Some(&2));
    play(&mut battle, json!({"type": "pass", "actor": "meowth"}), &[]);
    assert_eq!(battle.pokemon("meowth").and_then(|p| p.statuses.get("burn")), Some(&1));
    // A dodge is not a turn.
    play(&mut battle, dodge("meowth", false, None), &[3]);
    assert_eq!(battle.pokemon("meowth").and_then(|p| p.statuses.get("burn")), Some(&1));
    play(&mut battle, json!({"type": "pass", "actor": "meowth"}), &[]);
    assert_eq!(battle.pokemon("meowth").map(|p| p.statuses.is_empty()), Some(true));
}

#[test]
fn interrupt_flinches_the_target_whose_next_move_then_fails() {
    let mut battle = battle();
    let outcome = fields(&play(&mut battle, attack(json!({"interrupt": true})), &[2]));
    assert_eq!(outcome["interrupts_target"], true);
    assert_eq!(battle.pokemon("meowth").map(|p| p.flinched), Some(true));
    let strike_back = json!({"type": "attack", "actor": "meowth", "target": "pikachu", "move": "Scratch"});
    assert_eq!(battle.dice_needed(&crate::test_support::action(strike_back.clone())), Ok(DiceRequest::none()));
    assert_eq!(fields(&play(&mut battle, strike_back, &[])), json!({"result": "flinched"}));
    assert_eq!(battle.pokemon("meowth").map(|p| p.flinched), Some(false));
    // A miss does not interrupt (p > 1 only).
    let mut battle = self::battle();
    assert_eq!(
        fields(&play(&mut battle, attack(json!({"interrupt": true})), &[1])),
        json!({"result": "miss", "multiplier": "0"})
    );
    assert_eq!(battle.pokemon("meowth").map(|p| p.flinched), Some(false));
}

#[test]
fn two_turn_moves_prepare_without_dice_then_strike() {
    let mut battle = battle();
    let solar_beam = attack(json!({"move": "Solar Beam", "two_turn": true, "power": 120}));
    assert_eq!(battle.dice_needed(&crate::test_support::action(solar_beam.clone())), Ok(DiceRequest::none()));
    assert_eq!(fields(&play(&mut battle, solar_beam.clone(), &[])), json!({"result": "charging"}));
    assert_eq!(battle.pokemon("pikachu").and_then(|p| p.charging.as_deref()), Some("Solar Beam"));
    assert_eq!(fields(&play(&mut battle, solar_beam.clone(), &[4]))["damage"], 120);
    assert_eq!(battle.pokemon("pikachu").map(|p| p.charging.is_none()), Some(true));

    // Another move abandons the preparation; another two-turn move replaces it.
    play(&mut battle, solar_beam.clone(), &[]);
    play(&mut battle, attack(json!({"move": "Dig", "two_turn": true})), &[]);
    assert_eq!(battle.pokemon("pikachu").and_then(|p| p.charging.as_deref()), Some("Dig"));
    play(&mut battle, attack(json!({})), &[4]);
    assert_eq!(battle.pokemon("pikachu").map(|p| p.charging.is_none()), Some(true));
}

#[test]
fn a_six_breaks_the_targets_preparation() {
    let mut battle = battle();
    play(
        &mut battle,
        json!({"type": "attack", "actor": "meowth", "target": "pikachu", "move": "Fly",
        "two_turn": true}),
        &[],
    );
    assert_eq!(fields(&play(&mut battle, attack(json!({})), &[5]))["breaks_charge"], false);
    assert_eq!(battle.pokemon("meowth").and_then(|p| p.charging.as_deref()), Some("Fly"));
    assert_eq!(fields(&play(&mut battle, attack(json!({})), &[6]))["breaks_charge"], true);
    assert_eq!(battle.pokemon("meowth").map(|p| p.charging.is_none()), Some(true));
}

#[test]
fn flinching_loses_the_preparation_too() {
    let mut battle = battle();
    play(
        &mut battle,
        json!({"type": "attack", "actor": "meowth", "target": "pikachu", "move": "Fly",
        "two_turn": true}),
        &[],
    );
    play(&mut battle, attack(json!({"interrupt": true})), &[3]);
    let fly = json!({"type": "attack", "actor": "meowth", "target": "pikachu", "move": "Fly", "two_turn": true});
    assert_eq!(fields(&play(&mut battle, fly.clone(), &[])), json!({"result": "flinched"}));
    assert_eq!(battle.pokemon("meowth").map(|p| (p.flinched, p.charging.clone())), Some((false, None)));
    assert_eq!(fields(&play(&mut battle, fly, &[])), json!({"result": "charging"}));
}

#[test]
fn status_move_table_rows() {
    for (die, result, turns) in
        [(1, "failed", 0), (2, "failed", 0), (3, "success", 1), (4, "success", 2), (5, "success", 3), (6, "success", 4)]
    {
        let mut battle = battle();
        let outcome = fields(&play(&mut battle, status_move("sleep"), &[die]));
        assert_eq!(outcome, json!({"result": result, "turns": turns}), "die {die}");
        let landed = battle.pokemon("meowth").and_then(|p| p.statuses.get("sleep")).copied();
        assert_eq!(landed, (turns > 0).then_some(turns), "die {die}");
    }
}

#[test]
fn a_confused_status_move_lands_on_the_user_and_ticks_at_once() {
    let mut battle = with_status("pikachu", "confusion", 4);
    assert_eq!(fields(&play(&mut battle, status_move("sleep"), &[6, 1])), json!({"result": "self_hit", "turns": 4}));
    let pikachu = battle.pokemon("pikachu").expect("pikachu");
    assert_eq!(pikachu.statuses.get("sleep"), Some(&3));
    assert_eq!(pikachu.statuses.get("confusion"), Some(&3));
    assert_eq!(battle.pokemon("meowth").map(|p| p.statuses.is_empty()), Some(true));

    let mut battle = with_status("pikachu", "confusion", 4);
    assert_eq!(fields(&play(&mut battle, status_move("sleep"), &[2, 1])), json!({"result": "failed", "turns": 0}));
}

#[test]
fn dodge_table_rows() {
    let rows = [(1, 0, true), (2, 5, true), (3, 50, true), (4, 60, true), (5, 100, true), (6, 100, false)];
    for (die, reduction, counted) in rows {
        let mut battle = battle();
        let outcome = fields(&play(&mut battle, dodge("pikachu", false, Some(100)), &[die]));
        let left = if counted { 4 } else { 5 };
        assert_eq!(
            outcome,
            json!({"reduction_percent": reduction, "counted": counted, "dodges_left": left,
                   "damage_after": 100 - reduction}),
            "die {die}"
        );
    }
}

#[test]
fn priority_takes_one_off_the_dodge_die_but_never_below_one() {
    let rows = [(1, 0, true), (2, 0, true), (3, 5, true), (4, 50, true), (5, 60, true), (6, 100, true)];
    for (die, reduction, counted) in rows {
        let outcome = fields(&play(&mut battle(), dodge("pikachu", true, None), &[die]));
        assert_eq!(
            (&outcome["reduction_percent"], &outcome["counted"]),
            (&json!(reduction), &json!(counted)),
            "die {die}"
        );
    }
}

#[test]
fn damage_after_a_dodge_rounds_half_up() {
    // 47 × 50 % = 23.5 → 24; 47 × 40 % = 18.8 → 19; 101 × 95 % = 95.95 → 96; 10 × 95 % = 9.5 → 10.
    for (die, incoming, after) in [(3, 47, 24), (4, 47, 19), (2, 101, 96), (2, 10, 10), (1, 33, 33), (5, 47, 0)] {
        let outcome = fields(&play(&mut battle(), dodge("pikachu", false, Some(incoming)), &[die]));
        assert_eq!(outcome["damage_after"], after, "die {die}, incoming {incoming}");
    }
}

#[test]
fn five_counted_dodges_and_no_more() {
    let mut battle = battle();
    for left in (0..5).rev() {
        assert_eq!(fields(&play(&mut battle, dodge("pikachu", false, None), &[3]))["dodges_left"], left);
        if left > 0 {
            // A six never counts, and says how many are left.
            assert_eq!(fields(&play(&mut battle, dodge("pikachu", false, None), &[6]))["dodges_left"], left);
        }
    }
    let refused = rejection(&battle, dodge("pikachu", false, None), &[6]);
    assert_eq!(refused, Rejection::NoDodgesLeft { actor: "pikachu".into(), limit: 5 });
    assert_eq!(refused.to_string(), "pikachu has already used all 5 dodges of this battle");
    // Teleport is a dodge attempt like any other.
    let teleport = json!({"type": "dodge", "actor": "pikachu", "teleport": true});
    assert!(matches!(rejection(&battle, teleport, &[3]), Rejection::NoDodgesLeft { .. }));
    assert_eq!(fields(&play(&mut battle, dodge("meowth", false, None), &[1]))["dodges_left"], 4);
}

#[test]
fn metronome_picks_by_face() {
    let moves = json!(["Ember", "Surf", "Psychic"]);
    for (face, picked) in [(1, "Ember"), (2, "Surf"), (3, "Psychic")] {
        let action = json!({"type": "metronome", "actor": "pikachu", "moves": moves});
        assert_eq!(fields(&play(&mut battle(), action, &[face])), json!({"picked": picked}));
    }
    let action = json!({"type": "metronome", "actor": "pikachu", "moves": moves});
    let request = battle().dice_needed(&crate::test_support::action(action.clone())).expect("allowed");
    assert_eq!(request.die_sides(), Some(vec![3]));
    assert!(matches!(resolve(&battle(), action, &[4]), Err(ResolveError::Dice(_))));
    let empty = json!({"type": "metronome", "actor": "pikachu", "moves": []});
    assert_eq!(rejection(&battle(), empty, &[]), Rejection::NoMoves);
}

#[test]
fn turns_end_after_attacks_status_moves_and_passes_whatever_their_result() {
    for (action, faces) in [
        (attack(json!({})), vec![1]),
        (attack(json!({"two_turn": true, "move": "Fly"})), vec![]),
        (status_move("sleep"), vec![1]),
        (json!({"type": "pass", "actor": "pikachu"}), vec![]),
    ] {
        let mut battle = with_status("pikachu", "poison", 2);
        play(&mut battle, action.clone(), &faces);
        assert_eq!(battle.pokemon("pikachu").and_then(|p| p.statuses.get("poison")), Some(&1), "{action}");
    }
    // Metronome is not a turn.
    let mut battle = with_status("pikachu", "poison", 2);
    play(&mut battle, json!({"type": "metronome", "actor": "pikachu", "moves": ["Ember"]}), &[1]);
    assert_eq!(battle.pokemon("pikachu").and_then(|p| p.statuses.get("poison")), Some(&2));
}

#[test]
fn unknown_pokemon_are_rejected() {
    let action = json!({"type": "attack", "actor": "pikachu", "target": "mew", "move": "Tackle"});
    assert_eq!(rejection(&battle(), action, &[4]), Rejection::UnknownParticipant { field: "target", id: "mew".into() });
    assert!(matches!(
        rejection(&battle(), json!({"type": "pass", "actor": "ash"}), &[]),
        Rejection::UnknownParticipant { .. }
    ));
}

#[test]
fn summaries_read_naturally_in_both_languages() {
    let resolution = resolve(&battle(), attack(json!({"power": 90})), &[6]).expect("resolves");
    assert_eq!(resolution.summary.ru, "pikachu → meowth, «Tackle»: критическая атака — двойной урон (180)");
    assert_eq!(resolution.summary.en, "pikachu → meowth, Tackle: critical hit — double damage (180)");
    let resolution = resolve(&battle(), attack(json!({"power": 80, "effect": "burn"})), &[5]).expect("resolves");
    assert_eq!(resolution.summary.ru, "pikachu → meowth, «Tackle»: попадание ×1, урон 80; meowth: ожог на 2 хода");
    assert_eq!(resolution.summary.en, "pikachu → meowth, Tackle: hit ×1, 80 damage; meowth: burn for 2 turns");
    let resolution = resolve(&battle(), status_move("sleep"), &[5]).expect("resolves");
    assert_eq!(resolution.summary.ru, "pikachu → meowth, «Thunder Wave»: сон на 3 хода");
    let resolution = resolve(&battle(), dodge("pikachu", false, Some(47)), &[4]).expect("resolves");
    assert_eq!(
        resolution.summary.ru,
        "pikachu уклоняется: урон снижен на 60 % (47 → 19); уклонение засчитано, осталось уклонений: 4"
    );
    assert_eq!(resolution.summary.en, "pikachu dodges: damage reduced by 60% (47 → 19); dodge counted, 4 left");
}

#[test]
fn never_miss_on_the_other_scales_is_their_weakest_hit() {
    let multi = attack_outcome(json!({"never_miss": true, "multi_hit": true, "power": 30}), &[1]);
    assert_eq!((&multi["result"], &multi["hits"], &multi["damage"]), (&json!("hit"), &json!(1), &json!(30)));
    let variable = attack_outcome(json!({"never_miss": true, "variable_power": true, "power": 30}), &[1]);
    assert_eq!(
        (&variable["result"], &variable["multiplier"], &variable["damage"]),
        (&json!("hit"), &json!("1/5"), &json!(6))
    );
    // The die still shows 1: no interrupt.
    assert_eq!(attack_outcome(json!({"never_miss": true, "interrupt": true}), &[1])["interrupts_target"], false);
}

#[test]
fn high_crit_does_not_make_multi_hit_or_variable_power_moves_crit() {
    assert_eq!(attack_outcome(json!({"high_crit": true, "multi_hit": true}), &[5])["result"], "hit");
    assert_eq!(attack_outcome(json!({"high_crit": true, "variable_power": true}), &[6])["multiplier"], "1");
    // A six still breaks a preparation.
    let mut battle = battle();
    play(
        &mut battle,
        json!({"type": "attack", "actor": "meowth", "target": "pikachu", "move": "Dig",
        "two_turn": true}),
        &[],
    );
    assert_eq!(fields(&play(&mut battle, attack(json!({"multi_hit": true})), &[6]))["breaks_charge"], true);
}

#[test]
fn a_status_move_abandons_a_preparation_and_a_pass_keeps_it() {
    let mut battle = battle();
    play(&mut battle, attack(json!({"move": "Fly", "two_turn": true})), &[]);
    play(&mut battle, json!({"type": "pass", "actor": "pikachu"}), &[]);
    assert_eq!(battle.pokemon("pikachu").and_then(|p| p.charging.as_deref()), Some("Fly"));
    play(&mut battle, status_move("sleep"), &[1]);
    assert_eq!(battle.pokemon("pikachu").map(|p| p.charging.is_none()), Some(true));
}

#[test]
fn a_status_landing_again_replaces_the_turns_left() {
    let mut battle = battle();
    play(&mut battle, status_move("sleep"), &[6]);
    play(&mut battle, status_move("sleep"), &[3]);
    assert_eq!(battle.pokemon("meowth").and_then(|p| p.statuses.get("sleep")), Some(&1));
}
