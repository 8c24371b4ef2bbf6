//! docs/rules.md §6.1 item by item, each against `@1` where they differ. Every
//! expected outcome field and number is worked out by hand from docs/rules.md
//! (the arithmetic is in the comments), not taken from this code's output.
//! The wording of the forum summaries is the exception: docs/rules.md §5.3 fixes
//! no words, so `a_flinch_effect_reads_as_a_flinch_in_the_summary`,
//! `dodge_summaries_say_what_happened` and the summary at the end of
//! `a_status_move_six_breaks_the_targets_preparation` lock the code's
//! wording (only their numbers come from docs/rules.md).

use serde_json::{Value, json};

use crate::dice_request::DiceRequest;
use crate::error::{Rejection, ResolveError};
use crate::model::state::Battle;
use crate::test_support::{action, fields, open, play, rejection, resolve, with_fields};

fn battle() -> Battle {
    open("pokemon-d6@2", json!([{"id": "pikachu"}, {"id": "meowth"}, {"id": "eevee"}]))
}

fn battle_v1() -> Battle {
    open("pokemon-d6@1", json!([{"id": "pikachu"}, {"id": "meowth"}, {"id": "eevee"}]))
}

/// pikachu attacks meowth with Tackle and `extra` flags.
fn attack(extra: Value) -> Value {
    with_fields(json!({"type": "attack", "actor": "pikachu", "target": "meowth", "move": "Tackle"}), extra)
}

fn attack_outcome(extra: Value, faces: &[u32]) -> Value {
    fields(&play(&mut battle(), attack(extra), faces))
}

fn dodge(actor: &str, against: u64, extra: Value) -> Value {
    with_fields(json!({"type": "dodge", "actor": actor, "against": against}), extra)
}

fn status_move(actor: &str, target: &str, status: &str) -> Value {
    json!({"type": "status_move", "actor": actor, "target": target, "move": "Thunder Wave", "status": status})
}

/// The version the next action of `battle` gets from the test helpers.
fn next_version(battle: &Battle) -> u64 {
    battle.last_version().map_or(0, |last| last + 1)
}

/// Plays `json` and returns the version it was recorded under.
fn play_at(battle: &mut Battle, json: Value, faces: &[u32]) -> u64 {
    let version = next_version(battle);
    play(battle, json, faces);
    version
}

fn hit(multiplier: &str, hits: u32, damage: u64) -> Value {
    json!({"result": "hit", "multiplier": multiplier, "hits": hits, "damage": damage, "effect_applied": null,
           "interrupts_target": false, "breaks_charge": false})
}

// §6.1.1 — multi-hit follows the general table.

#[test]
fn multi_hit_reads_the_general_table_then_hits_p_minus_one_times() {
    let flags = json!({"multi_hit": true, "power": 40});
    // p = 1: miss, no hits, damage 0.
    assert_eq!(attack_outcome(flags.clone(), &[1]), json!({"result": "miss", "multiplier": "0", "damage": 0}));
    // p = 2: 1/3 × max(1, 1) = 1 hit: 40 × 1/3 × 1 = 13.33 → 13.
    assert_eq!(attack_outcome(flags.clone(), &[2]), hit("1/3", 1, 13));
    // p = 3: 2/3 × 2 hits: 40 × 2/3 × 2 = 53.33 → 53.
    assert_eq!(attack_outcome(flags.clone(), &[3]), hit("2/3", 2, 53));
    // p = 4: 1 × 3 hits: 40 × 3 = 120.
    assert_eq!(attack_outcome(flags.clone(), &[4]), hit("1", 3, 120));
    // p = 5 (no effect): 1 × 4 hits: 160.
    assert_eq!(attack_outcome(flags.clone(), &[5]), hit("1", 4, 160));
    // p = 6: crit, 2 × 5 hits: 40 × 2 × 5 = 400.
    assert_eq!(
        attack_outcome(flags, &[6]),
        json!({"result": "crit", "multiplier": "2", "hits": 5, "damage": 400, "effect_applied": null,
               "interrupts_target": false, "breaks_charge": false})
    );
}

#[test]
fn multi_hit_under_v1_keeps_its_own_table() {
    // The same p = 2 and p = 6 under `@1`: full power per hit, never a crit.
    let v1 = |die| fields(&play(&mut battle_v1(), attack(json!({"multi_hit": true, "power": 40})), &[die]));
    assert_eq!(v1(2), hit("1", 1, 40));
    assert_eq!(v1(6), hit("1", 5, 200));
}

#[test]
fn multi_hit_with_never_miss_high_crit_and_prefer() {
    // never_miss, p = 1: one hit at 1/3: 40 × 1/3 = 13.33 → 13.
    assert_eq!(attack_outcome(json!({"multi_hit": true, "never_miss": true, "power": 40}), &[1]), hit("1/3", 1, 13));
    // high_crit, p = 5, no effect: crit ×2, 4 hits: 40 × 2 × 4 = 320.
    let crit = attack_outcome(json!({"multi_hit": true, "high_crit": true, "power": 40}), &[5]);
    assert_eq!((&crit["result"], &crit["hits"], &crit["damage"]), (&json!("crit"), &json!(4), &json!(320)));
    // high_crit with an effect, p = 5, prefer effect: hit ×1 with the effect, 4 hits: 160.
    let effect = attack_outcome(
        json!({"multi_hit": true, "high_crit": true, "power": 40, "effect": "burn", "prefer": "effect"}),
        &[5],
    );
    assert_eq!(
        (&effect["result"], &effect["multiplier"], &effect["hits"], &effect["damage"], &effect["effect_applied"]),
        (&json!("hit"), &json!("1"), &json!(4), &json!(160), &json!("burn"))
    );
    // … and prefer crit (the default): crit, no effect, 320.
    let crit = attack_outcome(json!({"multi_hit": true, "high_crit": true, "power": 40, "effect": "burn"}), &[5]);
    assert_eq!(
        (&crit["result"], &crit["damage"], &crit["effect_applied"]),
        (&json!("crit"), &json!(320), &Value::Null)
    );
    // Without high_crit, p = 5 lets the effect apply: 4 hits at 1 with burn.
    let plain = attack_outcome(json!({"multi_hit": true, "effect": "burn"}), &[5]);
    assert_eq!((&plain["hits"], &plain["effect_applied"]), (&json!(4), &json!("burn")));
}

#[test]
fn multi_hit_with_variable_power_stays_invalid() {
    let action = attack(json!({"multi_hit": true, "variable_power": true}));
    assert_eq!(rejection(&battle(), action, &[4]), Rejection::MultiHitWithVariablePower);
}

#[test]
fn a_multi_hit_six_breaks_a_preparation() {
    let mut battle = battle();
    play(
        &mut battle,
        json!({"type": "attack", "actor": "meowth", "target": "pikachu", "move": "Fly", "two_turn": true}),
        &[],
    );
    assert_eq!(fields(&play(&mut battle, attack(json!({"multi_hit": true})), &[6]))["breaks_charge"], true);
    assert_eq!(battle.pokemon("meowth").map(|p| p.charging.is_none()), Some(true));
}

// §6.1.2 — interruption as a secondary effect.

#[test]
fn a_flinch_effect_on_five_interrupts_instead_of_a_status() {
    let mut battle = battle();
    let outcome = fields(&play(&mut battle, attack(json!({"power": 30, "effect": "flinch"})), &[5]));
    // p = 5: hit ×1, 30 damage, the effect applies as an interruption.
    assert_eq!(
        outcome,
        json!({"result": "hit", "multiplier": "1", "damage": 30, "effect_applied": "flinch",
               "interrupts_target": true, "breaks_charge": false})
    );
    let meowth = battle.pokemon("meowth").expect("meowth");
    assert!(meowth.flinched);
    assert!(meowth.statuses.is_empty(), "no 2-turn status named flinch");
    // Its next move fails.
    let strike_back = json!({"type": "attack", "actor": "meowth", "target": "pikachu", "move": "Scratch"});
    assert_eq!(fields(&play(&mut battle, strike_back, &[])), json!({"result": "flinched"}));
}

#[test]
fn a_flinch_effect_applies_only_where_an_effect_applies() {
    // p = 4: no effect, so no interruption.
    let four = attack_outcome(json!({"effect": "flinch"}), &[4]);
    assert_eq!((&four["effect_applied"], &four["interrupts_target"]), (&Value::Null, &json!(false)));
    // p = 6: a crit brings no effect.
    let six = attack_outcome(json!({"effect": "flinch"}), &[6]);
    assert_eq!((&six["result"], &six["interrupts_target"]), (&json!("crit"), &json!(false)));
    // high_crit with prefer effect: p = 5 is the effect (hit ×1, flinch) …
    let effect = attack_outcome(json!({"effect": "flinch", "high_crit": true, "prefer": "effect"}), &[5]);
    assert_eq!(
        (&effect["result"], &effect["effect_applied"], &effect["interrupts_target"]),
        (&json!("hit"), &json!("flinch"), &json!(true))
    );
    // … with prefer crit it is the crit, no interruption.
    let crit = attack_outcome(json!({"effect": "flinch", "high_crit": true}), &[5]);
    assert_eq!((&crit["result"], &crit["interrupts_target"]), (&json!("crit"), &json!(false)));
    // The interrupt flag is unchanged: p > 1 interrupts, whatever the effect.
    assert_eq!(attack_outcome(json!({"interrupt": true}), &[2])["interrupts_target"], true);
    assert_eq!(attack_outcome(json!({"interrupt": true, "never_miss": true}), &[1])["interrupts_target"], false);
}

#[test]
fn a_flinch_effect_under_v1_is_a_two_turn_status() {
    let mut battle = battle_v1();
    let outcome = fields(&play(&mut battle, attack(json!({"effect": "flinch"})), &[5]));
    assert_eq!((&outcome["effect_applied"], &outcome["interrupts_target"]), (&json!("flinch"), &json!(false)));
    let meowth = battle.pokemon("meowth").expect("meowth");
    assert_eq!((meowth.flinched, meowth.statuses.get("flinch")), (false, Some(&2)));
}

#[test]
fn a_flinch_effect_reads_as_a_flinch_in_the_summary() {
    let resolution = resolve(&battle(), attack(json!({"power": 30, "effect": "flinch"})), &[5]).expect("resolves");
    assert_eq!(
        resolution.summary.en,
        "pikachu → meowth, Tackle: hit ×1, 30 damage; meowth flinches: its next move fails"
    );
    assert_eq!(
        resolution.summary.ru,
        "pikachu → meowth, «Tackle»: попадание ×1, урон 30; meowth вздрагивает: следующий приём сорвётся"
    );
}

// §6.1.3 — a dodge answers an attack.

#[test]
fn against_must_name_a_resolved_attack() {
    let mut battle = battle();
    // Missing.
    let missing = json!({"type": "dodge", "actor": "meowth"});
    assert_eq!(rejection(&battle, missing, &[3]), Rejection::NotAnAttack { against: None });
    // Nothing at that version.
    assert_eq!(rejection(&battle, dodge("meowth", 7, json!({})), &[3]), Rejection::NotAnAttack { against: Some(7) });
    // A status move is not an attack.
    let status = play_at(&mut battle, status_move("pikachu", "meowth", "sleep"), &[4]);
    let refused = rejection(&battle, dodge("meowth", status, json!({})), &[3]);
    assert_eq!(refused.to_string(), "against is not a resolved attack");
    // A pass neither.
    let pass = play_at(&mut battle, json!({"type": "pass", "actor": "pikachu"}), &[]);
    assert!(matches!(rejection(&battle, dodge("meowth", pass, json!({})), &[3]), Rejection::NotAnAttack { .. }));
}

#[test]
fn against_must_be_an_attack_on_the_dodger() {
    let mut battle = battle();
    let on_meowth = play_at(&mut battle, attack(json!({})), &[4]);
    let refused = rejection(&battle, dodge("eevee", on_meowth, json!({})), &[3]);
    assert_eq!(refused, Rejection::AttackOnAnother { against: on_meowth, target: "meowth".into() });
    assert_eq!(refused.to_string(), "against is an attack on another Pokémon");
    // The attacker cannot dodge its own attack either.
    assert!(matches!(
        rejection(&battle, dodge("pikachu", on_meowth, json!({})), &[3]),
        Rejection::AttackOnAnother { .. }
    ));
}

#[test]
fn only_a_hit_crit_or_miss_can_be_dodged() {
    let mut battle = battle();
    // charging: a preparation turn deals nothing.
    let charging = play_at(&mut battle, attack(json!({"move": "Fly", "two_turn": true})), &[]);
    let refused = rejection(&battle, dodge("meowth", charging, json!({})), &[3]);
    assert_eq!(refused, Rejection::NothingToDodge { against: charging });
    assert_eq!(refused.to_string(), "against is an attack whose result is not hit, crit or miss");
    // flinched: meowth flinches pikachu, whose next attack fails.
    play(
        &mut battle,
        json!({"type": "attack", "actor": "meowth", "target": "pikachu", "move": "Fake Out", "interrupt": true}),
        &[3],
    );
    let flinched = play_at(&mut battle, attack(json!({})), &[]);
    assert!(matches!(rejection(&battle, dodge("meowth", flinched, json!({})), &[3]), Rejection::NothingToDodge { .. }));
    // failed: paralysed (status move p = 3 → 1 turn), paralysis die 1.
    play(&mut battle, status_move("meowth", "pikachu", "paralysis"), &[3]);
    let failed = play_at(&mut battle, attack(json!({})), &[4, 1]);
    assert!(matches!(rejection(&battle, dodge("meowth", failed, json!({})), &[3]), Rejection::NothingToDodge { .. }));
    // self_hit: confused (p = 4 → 2 turns), confusion die odd.
    play(&mut battle, status_move("meowth", "pikachu", "confusion"), &[4]);
    let self_hit = play_at(&mut battle, attack(json!({})), &[4, 3]);
    assert_eq!(fields(&battle.entry(self_hit).expect("recorded").outcome)["result"], "self_hit");
    assert!(matches!(rejection(&battle, dodge("meowth", self_hit, json!({})), &[3]), Rejection::NothingToDodge { .. }));
}

#[test]
fn an_attack_is_answered_once_by_any_dodge() {
    let mut battle = battle();
    let hit = play_at(&mut battle, attack(json!({"power": 40})), &[4]);
    let first = play_at(&mut battle, dodge("meowth", hit, json!({})), &[3]);
    let refused = rejection(&battle, dodge("meowth", hit, json!({})), &[3]);
    assert_eq!(refused, Rejection::AlreadyAnswered { against: hit, by: first });
    assert_eq!(refused.to_string(), "that attack was already answered by a dodge");
    // A dodge that needed no die answers a miss …
    let miss = play_at(&mut battle, attack(json!({})), &[1]);
    play(&mut battle, dodge("meowth", miss, json!({})), &[]);
    assert!(matches!(rejection(&battle, dodge("meowth", miss, json!({})), &[]), Rejection::AlreadyAnswered { .. }));
    // … and a failed Teleport answers its attack.
    let fake_out = play_at(&mut battle, attack(json!({"move": "Fake Out", "interrupt": true})), &[2]);
    play(&mut battle, dodge("meowth", fake_out, json!({"teleport": true})), &[]);
    assert!(matches!(
        rejection(&battle, dodge("meowth", fake_out, json!({})), &[3]),
        Rejection::AlreadyAnswered { .. }
    ));
    // A rejected dodge answers nothing.
    let next = play_at(&mut battle, attack(json!({})), &[4]);
    let _ = rejection(&battle, dodge("eevee", next, json!({})), &[3]);
    assert_eq!(fields(&play(&mut battle, dodge("meowth", next, json!({})), &[3]))["result"], "rolled");
}

#[test]
fn a_miss_needs_no_dodge() {
    let mut battle = battle();
    let miss = play_at(&mut battle, attack(json!({"power": 90})), &[1]);
    let request = battle.dice_needed(&action(dodge("meowth", miss, json!({})))).expect("allowed");
    assert_eq!(request, DiceRequest::none());
    // The attack had damage (0 on a miss): damage_after 0; nothing counted, 5 left.
    assert_eq!(
        fields(&play(&mut battle, dodge("meowth", miss, json!({"incoming_damage": 50})), &[])),
        json!({"result": "not_needed", "reduction_percent": 100, "counted": false, "dodges_left": 5,
               "damage_after": 0})
    );
    assert_eq!(battle.pokemon("meowth").map(|p| p.dodges_used), Some(0));
    // Without power the attack had no damage: no damage_after.
    let bare_miss = play_at(&mut battle, attack(json!({})), &[1]);
    assert_eq!(
        fields(&play(&mut battle, dodge("meowth", bare_miss, json!({})), &[])),
        json!({"result": "not_needed", "reduction_percent": 100, "counted": false, "dodges_left": 5})
    );
}

#[test]
fn a_miss_needs_no_dodge_even_with_five_used_or_a_flinch() {
    let mut battle = battle();
    // Five counted dodges: each against its own hit (p = 4), dodge die 3 (50 %, counted).
    for left in (0..5).rev() {
        let hit = play_at(&mut battle, attack(json!({})), &[4]);
        assert_eq!(fields(&play(&mut battle, dodge("meowth", hit, json!({})), &[3]))["dodges_left"], left);
    }
    let hit = play_at(&mut battle, attack(json!({})), &[4]);
    let refused = rejection(&battle, dodge("meowth", hit, json!({})), &[3]);
    assert_eq!(refused, Rejection::DodgeLimitReached { actor: "meowth".into(), limit: 5 });
    assert_eq!(refused.to_string(), "no dodges left");
    // A Teleport counts toward the limit like any dodge.
    assert!(matches!(
        rejection(&battle, dodge("meowth", hit, json!({"teleport": true})), &[3]),
        Rejection::DodgeLimitReached { .. }
    ));
    // The miss is still answered, and a flinched defender stays flinched.
    let fake_out = attack(json!({"move": "Fake Out", "interrupt": true}));
    play(&mut battle, fake_out, &[2]);
    assert_eq!(battle.pokemon("meowth").map(|p| p.flinched), Some(true));
    let miss = play_at(&mut battle, attack(json!({})), &[1]);
    let outcome = fields(&play(&mut battle, dodge("meowth", miss, json!({"teleport": true})), &[]));
    assert_eq!(outcome, json!({"result": "not_needed", "reduction_percent": 100, "counted": false, "dodges_left": 0}));
    assert_eq!(battle.pokemon("meowth").map(|p| p.flinched), Some(true));
}

#[test]
fn a_flinched_teleport_fails_without_dice_and_counts() {
    let mut battle = battle();
    // meowth gets 3 turns of poison (p = 5) and prepares Fly, then pikachu
    // interrupts it with 40 power at p = 4 (×1 → 40 damage).
    play(&mut battle, status_move("pikachu", "meowth", "poison"), &[5]);
    play(
        &mut battle,
        json!({"type": "attack", "actor": "meowth", "target": "pikachu", "move": "Fly", "two_turn": true}),
        &[],
    );
    let fake_out = play_at(&mut battle, attack(json!({"move": "Fake Out", "interrupt": true, "power": 40})), &[4]);
    let before = battle.pokemon("meowth").cloned().expect("meowth");
    assert!(before.flinched);
    let teleport = dodge("meowth", fake_out, json!({"teleport": true}));
    assert_eq!(battle.dice_needed(&action(teleport.clone())), Ok(DiceRequest::none()));
    assert_eq!(
        fields(&play(&mut battle, teleport, &[])),
        json!({"result": "flinched", "reduction_percent": 0, "counted": true, "dodges_left": 4, "damage_after": 40})
    );
    let after = battle.pokemon("meowth").expect("meowth");
    assert!(!after.flinched, "the failed Teleport spent the flinch");
    assert_eq!(after.dodges_used, 1);
    // Not a turn: the poison did not tick and Fly is still being prepared.
    assert_eq!(after.statuses, before.statuses);
    assert_eq!(after.charging.as_deref(), Some("Fly"));
}

#[test]
fn a_plain_dodge_ignores_the_flinch() {
    let mut battle = battle();
    let fake_out = play_at(&mut battle, attack(json!({"move": "Fake Out", "interrupt": true, "power": 40})), &[4]);
    // Die 4, no priority: 60 % off 40 → 40 × 40 / 100 = 16.
    assert_eq!(
        fields(&play(&mut battle, dodge("meowth", fake_out, json!({})), &[4])),
        json!({"result": "rolled", "reduction_percent": 60, "counted": true, "dodges_left": 4, "damage_after": 16})
    );
    assert_eq!(battle.pokemon("meowth").map(|p| p.flinched), Some(true));
}

#[test]
fn a_rolled_dodge_takes_priority_and_damage_from_the_attack() {
    // A priority attack, power 60, p = 4: 60 damage. Dodge die 4 − 1 = 3: 50 %
    // → 60 × 50 / 100 = 30, whatever the dodge itself says about priority.
    for own_priority in [false, true] {
        let mut battle = battle();
        let quick = play_at(&mut battle, attack(json!({"move": "Quick Attack", "priority": true, "power": 60})), &[4]);
        let outcome = fields(&play(
            &mut battle,
            dodge("meowth", quick, json!({"priority": own_priority, "incoming_damage": 999})),
            &[4],
        ));
        assert_eq!(
            outcome,
            json!({"result": "rolled", "reduction_percent": 50, "counted": true, "dodges_left": 4, "damage_after": 30})
        );
    }
    // No priority, power 90, p = 4: 90 damage. Die 4 stays 4: 60 % → 90 × 40 / 100 = 36;
    // the dodge's own priority and incoming_damage are ignored.
    let mut battle = battle();
    let tackle = play_at(&mut battle, attack(json!({"power": 90})), &[4]);
    let outcome =
        fields(&play(&mut battle, dodge("meowth", tackle, json!({"priority": true, "incoming_damage": 10})), &[4]));
    assert_eq!((&outcome["reduction_percent"], &outcome["damage_after"]), (&json!(60), &json!(36)));
    // Priority die 1 − 1 = 0 counts as 1: 0 %.
    let mut battle = self::battle();
    let quick = play_at(&mut battle, attack(json!({"priority": true, "power": 25})), &[4]);
    let outcome = fields(&play(&mut battle, dodge("meowth", quick, json!({})), &[1]));
    assert_eq!((&outcome["reduction_percent"], &outcome["damage_after"]), (&json!(0), &json!(25)));
    // A crit's doubled damage is what is dodged: 30 × 2 = 60; die 2: 5 % → 60 × 95 / 100 = 57.
    let mut battle = self::battle();
    let crit = play_at(&mut battle, attack(json!({"power": 30})), &[6]);
    assert_eq!(fields(&play(&mut battle, dodge("meowth", crit, json!({})), &[2]))["damage_after"], 57);
    // An attack without power has no damage: no damage_after, even if the dodge sends one.
    let mut battle = self::battle();
    let bare = play_at(&mut battle, attack(json!({})), &[4]);
    assert_eq!(
        fields(&play(&mut battle, dodge("meowth", bare, json!({"incoming_damage": 50})), &[6])),
        json!({"result": "rolled", "reduction_percent": 100, "counted": false, "dodges_left": 5})
    );
}

#[test]
fn against_is_a_battle_version_not_a_position() {
    // The service records actions under journal versions with gaps between them.
    let battle = battle();
    let at = |battle: &Battle, version, json, faces: &[u32]| {
        battle.resolve(version, &action(json), faces).expect("resolves").battle
    };
    let battle = at(&battle, 3, json!({"type": "pass", "actor": "eevee"}), &[]);
    let battle = at(&battle, 8, attack(json!({"power": 20})), &[4]);
    // Position 1 holds the attack, but version 1 is nothing.
    assert!(matches!(
        battle.resolve(12, &action(dodge("meowth", 1, json!({}))), &[3]),
        Err(ResolveError::Rejected(Rejection::NotAnAttack { against: Some(1) }))
    ));
    let resolution = battle.resolve(12, &action(dodge("meowth", 8, json!({}))), &[3]).expect("answers version 8");
    // Die 3: 50 % off 20 → 10.
    assert_eq!(fields(&resolution.outcome)["damage_after"], 10);
}

#[test]
fn a_judges_ruling_on_the_attack_is_what_the_dodge_answers() {
    let mut battle = battle();
    let tackle = play_at(&mut battle, attack(json!({"power": 40})), &[4]);
    let ruling = json!({"type": "ruling", "judge": "Oak", "refers_to": tackle, "text": "it missed",
                        "override": {"result": "miss", "multiplier": "0", "damage": 0}});
    play(&mut battle, ruling, &[]);
    assert_eq!(fields(&play(&mut battle, dodge("meowth", tackle, json!({})), &[]))["result"], "not_needed");
}

#[test]
fn dodge_summaries_say_what_happened() {
    let mut battle = battle();
    let miss = play_at(&mut battle, attack(json!({})), &[1]);
    let resolution = resolve(&battle, dodge("meowth", miss, json!({})), &[]).expect("resolves");
    assert_eq!(resolution.summary.en, "meowth: attack #0 missed, nothing to dodge; dodge not counted, 5 left");
    let fake_out = play_at(&mut battle, attack(json!({"interrupt": true, "power": 40})), &[4]);
    let resolution = resolve(&battle, dodge("meowth", fake_out, json!({"teleport": true})), &[]).expect("resolves");
    assert_eq!(
        resolution.summary.en,
        "Teleport: meowth flinches and the teleport fails (40 damage); dodge counted, 4 left"
    );
    let resolution = resolve(&battle, dodge("meowth", fake_out, json!({})), &[4]).expect("resolves");
    assert_eq!(resolution.summary.en, "meowth dodges: damage reduced by 60% (40 → 16); dodge counted, 4 left");
}

#[test]
fn v1_refuses_against_and_keeps_its_dodge() {
    let mut battle = battle_v1();
    let tackle = play_at(&mut battle, attack(json!({"power": 40})), &[1]);
    let refused = rejection(&battle, dodge("meowth", tackle, json!({})), &[3]);
    assert_eq!(
        refused,
        Rejection::FieldNotInVersion { action: "dodge", field: "against", ruleset: crate::RulesetId::PokemonD6V1 }
    );
    // `@1` rolls a dodge against a miss, with its own priority and damage, and writes no result.
    let outcome = fields(&play(
        &mut battle,
        json!({"type": "dodge", "actor": "meowth", "priority": true, "incoming_damage": 40}),
        &[4],
    ));
    assert_eq!(outcome, json!({"reduction_percent": 50, "counted": true, "dodges_left": 4, "damage_after": 20}));
}

// §6.1.4 — a status attack can break a preparation.

/// A battle where meowth is preparing Fly.
fn meowth_charging() -> Battle {
    let mut battle = battle();
    play(
        &mut battle,
        json!({"type": "attack", "actor": "meowth", "target": "pikachu", "move": "Fly", "two_turn": true}),
        &[],
    );
    battle
}

#[test]
fn a_status_move_six_breaks_the_targets_preparation() {
    let mut battle = meowth_charging();
    // p = 6: success for 6 − 2 = 4 turns, and meowth's Fly is broken.
    assert_eq!(
        fields(&play(&mut battle, status_move("pikachu", "meowth", "sleep"), &[6])),
        json!({"result": "success", "turns": 4, "breaks_charge": true})
    );
    let meowth = battle.pokemon("meowth").expect("meowth");
    assert_eq!((meowth.charging.as_deref(), meowth.statuses.get("sleep")), (None, Some(&4)));
    let resolution = resolve(&meowth_charging(), status_move("pikachu", "meowth", "sleep"), &[6]).expect("resolves");
    assert_eq!(
        resolution.summary.en,
        "pikachu → meowth, Thunder Wave: sleep for 4 turns; meowth's preparation is broken"
    );
}

#[test]
fn a_status_move_below_six_or_on_a_target_not_charging_breaks_nothing() {
    // p = 5: success for 3 turns; Fly stays.
    let mut battle = meowth_charging();
    assert_eq!(
        fields(&play(&mut battle, status_move("pikachu", "meowth", "sleep"), &[5])),
        json!({"result": "success", "turns": 3, "breaks_charge": false})
    );
    assert_eq!(battle.pokemon("meowth").and_then(|p| p.charging.as_deref()), Some("Fly"));
    // p = 6 on eevee, who prepares nothing.
    let outcome = fields(&play(&mut meowth_charging(), status_move("pikachu", "eevee", "sleep"), &[6]));
    assert_eq!(outcome, json!({"result": "success", "turns": 4, "breaks_charge": false}));
}

#[test]
fn every_status_move_outcome_carries_breaks_charge() {
    // Failed on p ≤ 2.
    let outcome = fields(&play(&mut meowth_charging(), status_move("pikachu", "meowth", "sleep"), &[2]));
    assert_eq!(outcome, json!({"result": "failed", "turns": 0, "breaks_charge": false}));
    // Flinched: pikachu interrupted first (Fake Out, p = 3), so its status move fails without dice.
    let mut battle = meowth_charging();
    play(
        &mut battle,
        json!({"type": "attack", "actor": "eevee", "target": "pikachu", "move": "Fake Out", "interrupt": true}),
        &[3],
    );
    let outcome = fields(&play(&mut battle, status_move("pikachu", "meowth", "sleep"), &[]));
    assert_eq!(outcome, json!({"result": "flinched", "turns": 0, "breaks_charge": false}));
    // Self-hit: confused pikachu (p = 4 → 2 turns), power 6, confusion die odd:
    // the status lands on pikachu, not on meowth, whose Fly stays.
    let mut battle = meowth_charging();
    play(&mut battle, status_move("eevee", "pikachu", "confusion"), &[4]);
    let outcome = fields(&play(&mut battle, status_move("pikachu", "meowth", "sleep"), &[6, 1]));
    assert_eq!(outcome, json!({"result": "self_hit", "turns": 4, "breaks_charge": false}));
    assert_eq!(battle.pokemon("meowth").and_then(|p| p.charging.as_deref()), Some("Fly"));
}

#[test]
fn under_v1_a_status_move_breaks_nothing_and_says_nothing_of_it() {
    let mut battle = battle_v1();
    play(
        &mut battle,
        json!({"type": "attack", "actor": "meowth", "target": "pikachu", "move": "Fly", "two_turn": true}),
        &[],
    );
    assert_eq!(
        fields(&play(&mut battle, status_move("pikachu", "meowth", "sleep"), &[6])),
        json!({"result": "success", "turns": 4})
    );
    assert_eq!(battle.pokemon("meowth").and_then(|p| p.charging.as_deref()), Some("Fly"));
}

// Judges' overrides keep each version's shape.

#[test]
fn an_override_cannot_move_an_outcome_to_the_other_version() {
    let mut battle = battle_v1();
    let dodged = play_at(&mut battle, json!({"type": "dodge", "actor": "meowth"}), &[3]);
    let ruling = |refers_to, replacement: Value| json!({"type": "ruling", "judge": "Oak", "refers_to": refers_to, "text": "t", "override": replacement});
    assert!(matches!(
        rejection(&battle, ruling(dodged, json!({"result": "rolled"})), &[]),
        Rejection::OverrideInvalid { kind: "dodge", .. }
    ));
    assert_eq!(fields(&play(&mut battle, ruling(dodged, json!({"counted": false})), &[]))["overridden"], true);

    let mut battle = self::battle();
    let status = play_at(&mut battle, status_move("pikachu", "meowth", "sleep"), &[4]);
    assert!(matches!(
        rejection(&battle, ruling(status, json!({"breaks_charge": null})), &[]),
        Rejection::OverrideInvalid { kind: "status_move", .. }
    ));
    assert_eq!(fields(&play(&mut battle, ruling(status, json!({"breaks_charge": true})), &[]))["overridden"], true);
}

#[test]
fn a_recorded_outcome_of_the_other_version_does_not_fold() {
    let v1_dodge = resolve(&battle_v1(), json!({"type": "dodge", "actor": "meowth"}), &[3]).expect("resolves").outcome;
    let mut battle = battle();
    let tackle = play_at(&mut battle, attack(json!({})), &[4]);
    let refused = battle.apply(next_version(&battle), &action(dodge("meowth", tackle, json!({}))), &v1_dodge);
    assert!(matches!(refused, Err(ResolveError::OutcomeNotOfVersion { .. })), "{refused:?}");
}

// Readings of ours where docs/rules.md is silent (see the module docs).

#[test]
fn an_unknown_dodger_is_refused_before_against_is_read() {
    let refused = rejection(&battle(), json!({"type": "dodge", "actor": "mew"}), &[3]);
    assert_eq!(refused, Rejection::UnknownParticipant { field: "actor", id: "mew".into() });
}

#[test]
fn a_flinch_effect_on_a_multi_hit_move_interrupts_once() {
    let mut battle = battle();
    // p = 5: hit ×1, max(1, 5 − 1) = 4 hits, 10 × 4 = 40, and the flinch effect applies.
    let outcome = fields(&play(&mut battle, attack(json!({"multi_hit": true, "power": 10, "effect": "flinch"})), &[5]));
    assert_eq!(
        outcome,
        json!({"result": "hit", "multiplier": "1", "hits": 4, "damage": 40, "effect_applied": "flinch",
               "interrupts_target": true, "breaks_charge": false})
    );
    let meowth = battle.pokemon("meowth").expect("meowth");
    assert!(meowth.flinched && meowth.statuses.is_empty());
}

#[test]
fn a_status_move_on_itself_is_judged_on_the_state_before_it() {
    // pikachu prepares Fly, then puts itself to sleep with a 6: like an attack's
    // 6 in `@1`, the preparation the target had before the move counts as broken
    // (the move abandons it anyway).
    let mut battle = battle();
    play(&mut battle, attack(json!({"move": "Fly", "two_turn": true})), &[]);
    let outcome = fields(&play(&mut battle, status_move("pikachu", "pikachu", "sleep"), &[6]));
    assert_eq!(outcome, json!({"result": "success", "turns": 4, "breaks_charge": true}));
    // 4 turns, then its own turn ends: 3 left.
    let pikachu = battle.pokemon("pikachu").expect("pikachu");
    assert_eq!((pikachu.charging.as_deref(), pikachu.statuses.get("sleep")), (None, Some(&3)));
}
