//! System tests of the whole battle flow (issue 5): the real
//! `battlelog-journal`, `battlelog-roller` and `battlelog-resolver` binaries
//! as separate processes, real sled on disk, real gRPC on 127.0.0.1, a real
//! `nats-server -js` where the fan-out is under test, and the real
//! `battlelog` CLI for `export` and `audit --file`.
//!
//! Expected dice are re-derived by the test from the master key it gave the
//! roller (docs/protocol.md §1–3); expected outcomes come from docs/rules.md's tables.

mod stack;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use battlelog_proto::battle;
use battlelog_proto::v1 as pb;
use battlelog_proto::v1::battle_event::Event;
use battlelog_proto::v1::roller_client::RollerClient;
use battlelog_system_tests::invalid_field;
use battlelog_test_support::{StartOptions, TestAuth, poll_until};
use prost::Message;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use stack::*;
use tokio_stream::StreamExt;
use tonic::{Code, Request, Response, Status};

// ---------------------------------------------------------------------------
// 1. A full battle of each ruleset, audited, and fanned out over NATS.
//
// Every action's expected outcome is worked out here from the faces the test
// derives itself (docs/protocol.md §1–3, from the master key it gave the roller)
// and docs/rules.md's tables, written out below without the rules crate: the
// resolver's Audit re-resolves with the same rules code, so only this can
// catch a rules error.
// ---------------------------------------------------------------------------

/// round(num / den) half up, for non-negative exact fractions (docs/rules.md
/// conventions).
fn round_half_up(num: u64, den: u64) -> u64 {
    (2 * num + den) / (2 * den)
}

/// docs/rules.md §1.1 step 4, general table: (result, multiplier as written in the
/// outcome, multiplier's numerator, denominator).
fn pokemon_power_row(p: i64) -> (&'static str, &'static str, u64, u64) {
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
fn pokemon_attack(p: i64, confusion: Option<i64>, power: u64) -> Value {
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
fn pokemon_status_move(p: i64, confusion: Option<i64>) -> (Value, u64, bool) {
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
fn pbta_band(total: i64) -> &'static str {
    match total {
        10.. => "full_success",
        7..=9 => "success_with_cost",
        _ => "miss",
    }
}

/// docs/rules.md §4.1: a `move` without helpers by an actor whose trait is
/// `trait_value`, from its reply's 2d6 (which the caller checks against the
/// journal and re-derives).
fn assert_pbta_move(reply: &pb::ActResponse, trait_value: i64) {
    let dice = faces(reply);
    assert_eq!(dice.len(), 2, "a move rolls 2d6: {reply:?}");
    let total = dice.iter().sum::<i64>() + trait_value;
    let expected = json!({"result": pbta_band(total), "total": total, "help": 0, "exposed": []});
    assert_eq!(outcome(reply), expected, "a move showing {dice:?}");
}

/// docs/rules.md §2.1's specialization bonus by skill points.
fn arcana_bonus(points: i64) -> i64 {
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
fn arcana_cast(sum: i64, total_skill: i64) -> Value {
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
fn arcana_attack_lands(attack: &str, defence: &str) -> bool {
    let succeeded = |r: &str| matches!(r, "success" | "critical_success");
    succeeded(attack) && !(succeeded(defence) && (attack != "critical_success" || defence == "critical_success"))
}

/// docs/rules.md §3.1's fight table (no exchange avoided): (attacker tier,
/// defender tier) by `diff` and the attacker's total `a_total`.
fn berserk_fight(diff: i64, a_total: i64) -> (&'static str, &'static str) {
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
fn berserk_closed(a_total: i64) -> &'static str {
    match a_total {
        ..=3 => "weak",
        4 | 5 => "medium",
        _ => "strong",
    }
}

/// The damage a tier deals from a side's [weak, medium, strong] values.
fn berserk_damage(tier: &str, strike: [i64; 3]) -> i64 {
    match tier {
        "weak" => strike[0],
        "medium" => strike[1],
        "strong" => strike[2],
        _ => 0,
    }
}

/// A battle's dice as the test derives them itself: every roll a reply
/// returns must carry the next nonce, and its faces are re-derived from the
/// test's own server seed and the battle's client seed (docs/protocol.md §2–3).
struct Derived {
    battle_id: &'static str,
    client_seed: &'static str,
    next_nonce: u64,
}

impl Derived {
    fn new(battle_id: &'static str, client_seed: &'static str) -> Derived {
        Derived { battle_id, client_seed, next_nonce: 0 }
    }

    /// The reply's dice as (sides, face), in draw order, derived by the test;
    /// the faces the reply reports must be the same.
    fn dice(&mut self, reply: &pb::ActResponse) -> Vec<(u32, i64)> {
        let mut derived = Vec::new();
        for recorded in &reply.rolls {
            let roll = recorded.roll.as_ref().expect("roll");
            assert_eq!((roll.epoch, roll.nonce), (0, self.next_nonce), "{}: the next nonce", self.battle_id);
            self.next_nonce += 1;
            let seed = server_seed(self.battle_id, 0);
            let (_, rolled) = dice::roll(&roll.expression, &seed, self.client_seed, roll.nonce)
                .unwrap_or_else(|e| panic!("{}: {e}", self.battle_id));
            derived.extend(rolled.dice.iter().map(|d| (d.sides, d.value)));
        }
        let faces: Vec<i64> = derived.iter().map(|&(_, face)| face).collect();
        assert_eq!(faces, self::faces(reply), "{}: the reply's faces are the derived ones", self.battle_id);
        derived
    }

    /// The faces of a reply that drew exactly `count` dice of `sides` faces.
    fn faces(&mut self, reply: &pb::ActResponse, count: usize, sides: u32) -> Vec<i64> {
        let dice = self.dice(reply);
        assert_eq!(dice.len(), count, "{}: {count} dice: {dice:?}", self.battle_id);
        assert!(dice.iter().all(|&(s, _)| s == sides), "{}: every die a d{sides}: {dice:?}", self.battle_id);
        dice.into_iter().map(|(_, face)| face).collect()
    }
}

struct Played {
    battle_id: String,
    client_seed: String,
    replies: Vec<pb::ActResponse>,
}

async fn play_pokemon(stack: &Stack) -> Played {
    let mut resolver = resolver_client(&stack.resolver).await;
    let (battle_id, client_seed) = ("full-pokemon", "thread 1024: pika pika");
    open(&mut resolver, battle_id, "pokemon-d6@1", json!([{"id": "pikachu"}, {"id": "meowth"}]), client_seed).await;
    let mut derived = Derived::new(battle_id, client_seed);
    let mut replies = Vec::new();
    // The state docs/rules.md §1 keeps that these actions touch: meowth's counted
    // dodges, and below pikachu's turns of confusion (the only condition
    // anyone can get here).
    let mut meowth_dodges = 0u64;

    // A plain attack by a Pokémon without conditions: one power die.
    let attack = json!({"type": "attack", "actor": "pikachu", "target": "meowth", "move": "Tackle", "power": 40});
    let reply = act(&mut resolver, battle_id, &attack, "p-1").await.expect("attack");
    let [p] = derived.faces(&reply, 1, 6)[..] else { unreachable!() };
    assert_eq!(outcome(&reply), pokemon_attack(p, None, 40), "Tackle, p={p}");
    let attack_version = reply.version;
    replies.push(reply);

    let dodge = json!({"type": "dodge", "actor": "meowth", "incoming_damage": 40});
    let reply = act(&mut resolver, battle_id, &dodge, "p-2").await.expect("dodge");
    let [d] = derived.faces(&reply, 1, 6)[..] else { unreachable!() };
    let (reduction, counted) = pokemon_dodge(d);
    meowth_dodges += u64::from(counted);
    let expected = json!({"reduction_percent": reduction, "counted": counted, "dodges_left": 5 - meowth_dodges,
        "damage_after": round_half_up(40 * (100 - reduction), 100)});
    assert_eq!(outcome(&reply), expected, "dodge, d={d}");
    replies.push(reply);

    // Meowth has no condition: one power die; on a success pikachu is
    // confused for p − 2 turns. Meowth's turn ends with nothing to tick.
    let supersonic = json!({"type": "status_move", "actor": "meowth", "target": "pikachu", "move": "Supersonic", "status": "confusion"});
    let reply = act(&mut resolver, battle_id, &supersonic, "p-3").await.expect("status move");
    let [p] = derived.faces(&reply, 1, 6)[..] else { unreachable!() };
    let (expected, turns, on_itself) = pokemon_status_move(p, None);
    assert!(!on_itself, "meowth is not confused");
    let pikachu_confused = turns;
    assert_eq!(outcome(&reply), expected, "Supersonic, p={p}");
    replies.push(reply);

    // Step 3: a confused pikachu draws its power die, then a confusion die.
    let quick = json!({"type": "attack", "actor": "pikachu", "target": "meowth", "move": "Quick Attack", "power": 40,
        "priority": true});
    let reply = act(&mut resolver, battle_id, &quick, "p-4").await.expect("quick attack");
    let faces = derived.faces(&reply, if pikachu_confused > 0 { 2 } else { 1 }, 6);
    let (p, confusion) = (faces[0], faces.get(1).copied());
    assert_eq!(outcome(&reply), pokemon_attack(p, confusion, 40), "Quick Attack, faces {faces:?}");
    replies.push(reply);

    // docs/rules.md §1.3 with `priority`: e = d − 1, at least 1. No incoming
    // damage, so no `damage_after`.
    let priority_dodge = json!({"type": "dodge", "actor": "meowth", "priority": true});
    let reply = act(&mut resolver, battle_id, &priority_dodge, "p-5").await.expect("priority dodge");
    let [d] = derived.faces(&reply, 1, 6)[..] else { unreachable!() };
    let (reduction, counted) = pokemon_dodge((d - 1).max(1));
    meowth_dodges += u64::from(counted);
    let expected = json!({"reduction_percent": reduction, "counted": counted, "dodges_left": 5 - meowth_dodges});
    assert_eq!(outcome(&reply), expected, "priority dodge, d={d}");
    replies.push(reply);

    // docs/rules.md §1.4: one die with as many faces as moves; face k picks move k.
    // Not a move: no condition die, whatever pikachu's confusion.
    let moves = ["Thunder", "Surf", "Fly"];
    let metronome = json!({"type": "metronome", "actor": "pikachu", "moves": moves});
    let reply = act(&mut resolver, battle_id, &metronome, "p-6").await.expect("metronome");
    let [k] = derived.faces(&reply, 1, 3)[..] else { unreachable!() };
    assert_eq!(outcome(&reply), json!({"picked": moves[k as usize - 1]}), "metronome, k={k}");
    replies.push(reply);

    // docs/rules.md §1.5: no dice.
    let reply = act(&mut resolver, battle_id, &json!({"type": "pass", "actor": "meowth"}), "p-7").await.expect("pass");
    derived.faces(&reply, 0, 6);
    assert_eq!(outcome(&reply), json!({"result": "pass"}));
    replies.push(reply);

    // docs/rules.md §5.2 and docs/protocol.md §3: 2d20kh1 keeps the higher die (the
    // earlier one on a tie), + 3.
    let free = json!({"type": "roll", "actor": "ash", "expression": "2d20kh1+3", "purpose": "Pokédex check"});
    let reply = act(&mut resolver, battle_id, &free, "p-8").await.expect("free roll");
    assert_eq!(reply.rolls[0].roll.as_ref().expect("roll").expression, "2d20kh1+3");
    let [a, b] = derived.faces(&reply, 2, 20)[..] else { unreachable!() };
    let got = outcome(&reply);
    assert_eq!(got["total"], json!(a.max(b) + 3), "2d20kh1+3 showing {a}, {b}: {got}");
    let kept: Vec<&Value> = got["dice"].as_array().expect("dice").iter().map(|die| &die["kept"]).collect();
    assert_eq!(kept, [&json!(a >= b), &json!(a < b)], "2d20kh1 showing {a}, {b}: {got}");
    replies.push(reply);

    let dispute = pb::DisputeRequest {
        battle_id: battle_id.into(),
        by: "meowth".into(),
        refers_to: attack_version,
        reason: "I was behind a rock".into(),
        request_id: "p-dispute".into(),
        ..Default::default()
    };
    resolver.dispute(dispute).await.expect("dispute");
    let ruling = pb::RuleRequest {
        battle_id: battle_id.into(),
        judge: String::new(),
        refers_to: attack_version,
        text: "the rock was too small; the result stands".into(),
        r#override: None,
        request_id: "p-ruling".into(),
        ..Default::default()
    };
    judge_client(&stack.resolver).await.rule(ruling).await.expect("ruling");
    Played { battle_id: battle_id.into(), client_seed: client_seed.into(), replies }
}

async fn play_arcana(stack: &Stack) -> Played {
    let mut resolver = resolver_client(&stack.resolver).await;
    let (battle_id, client_seed) = ("full-arcana", "the tower, post 7");
    let sheets = json!([
        {"id": "mage", "abilities": {"fireball": {"per_episode": 2}}},
        {"id": "knight", "abilities": {"shield": {"per_episode": 3}}}
    ]);
    open(&mut resolver, battle_id, "arcana-2d10@1", sheets, client_seed).await;
    let mut derived = Derived::new(battle_id, client_seed);
    let mut replies = Vec::new();

    // 8 points: total skill 8 + 3.
    let cast = json!({"type": "cast", "actor": "mage", "ability": "fireball", "skill_points": 8, "post": "post-1"});
    let reply = act(&mut resolver, battle_id, &cast, "a-1").await.expect("cast");
    let sum: i64 = derived.faces(&reply, 2, 10).iter().sum();
    let attack = arcana_cast(sum, 8 + arcana_bonus(8));
    assert_eq!(outcome(&reply), attack, "cast, sum {sum}");
    let cast_version = reply.version;
    replies.push(reply);

    // docs/rules.md §2.2: a cast roll of its own (6 points: 6 + 2), then whether
    // the attack lands.
    let defend = json!({"type": "defend", "actor": "knight", "ability": "shield", "skill_points": 6, "post": "post-2",
        "against": cast_version});
    let reply = act(&mut resolver, battle_id, &defend, "a-2").await.expect("defend");
    let sum: i64 = derived.faces(&reply, 2, 10).iter().sum();
    let mut expected = arcana_cast(sum, 6 + arcana_bonus(6));
    let lands =
        arcana_attack_lands(attack["result"].as_str().expect("result"), expected["result"].as_str().expect("r"));
    expected["attack_lands"] = json!(lands);
    assert_eq!(outcome(&reply), expected, "defence, sum {sum} against {attack}");
    replies.push(reply);

    // docs/rules.md §2.3: no dice.
    let reply = act(&mut resolver, battle_id, &json!({"type": "start_episode"}), "a-3").await.expect("episode");
    derived.faces(&reply, 0, 10);
    assert_eq!(outcome(&reply), json!({"result": "episode_started"}));
    replies.push(reply);

    // No ability: 3 points + 1, + the artifact's 2.
    let plain = json!({"type": "cast", "actor": "knight", "skill_points": 3, "artifact_bonus": 2, "post": "post-3"});
    let reply = act(&mut resolver, battle_id, &plain, "a-4").await.expect("cast");
    let sum: i64 = derived.faces(&reply, 2, 10).iter().sum();
    assert_eq!(outcome(&reply), arcana_cast(sum, 3 + arcana_bonus(3) + 2), "plain cast, sum {sum}");
    replies.push(reply);
    Played { battle_id: battle_id.into(), client_seed: client_seed.into(), replies }
}

async fn play_berserk(stack: &Stack) -> Played {
    let mut resolver = resolver_client(&stack.resolver).await;
    let (battle_id, client_seed) = ("full-berserk", "");
    open(&mut resolver, battle_id, "berserk@1", json!([{"id": "gnome"}, {"id": "troll"}]), client_seed).await;
    let mut derived = Derived::new(battle_id, client_seed);
    let mut replies = Vec::new();
    let (gnome, troll) = ([1, 2, 3], [2, 3, 4]);

    // A fight: the attacker's d6, then the defender's. Experience 1 against
    // 0 gives the attacker +1; nobody avoids the exchange.
    let fight = json!({"type": "strike", "kind": "simple",
        "attacker": {"id": "gnome", "strike": gnome, "attack_experience": 1},
        "defender": {"id": "troll", "strike": troll}});
    let reply = act(&mut resolver, battle_id, &fight, "b-1").await.expect("strike");
    let [a, d] = derived.faces(&reply, 2, 6)[..] else { unreachable!() };
    let (a_total, d_total) = (a + 1, d);
    let diff = a_total - d_total;
    let (attacker_tier, defender_tier) = berserk_fight(diff, a_total);
    let expected = json!({"fight": true, "attacker_tier": attacker_tier, "defender_tier": defender_tier,
        "attacker_damage": berserk_damage(attacker_tier, gnome), "defender_damage": berserk_damage(defender_tier, troll),
        "diff": diff, "exchange_avoided": false});
    assert_eq!(outcome(&reply), expected, "fight, a={a} d={d}");
    replies.push(reply);

    // Against a closed card only the attacker rolls; no experience applies.
    // The gnome gives no `strike` values, so the outcome has no
    // `defender_damage` ("from that side's `strike` values when given").
    let closed = json!({"type": "strike", "kind": "simple",
        "attacker": {"id": "troll", "strike": troll}, "defender": {"id": "gnome", "closed": true}});
    let reply = act(&mut resolver, battle_id, &closed, "b-2").await.expect("strike on a closed card");
    let [a] = derived.faces(&reply, 1, 6)[..] else { unreachable!() };
    let tier = berserk_closed(a);
    let expected = json!({"fight": false, "attacker_tier": tier, "defender_tier": "none",
        "attacker_damage": berserk_damage(tier, troll), "diff": null, "exchange_avoided": false});
    assert_eq!(outcome(&reply), expected, "closed card, a={a}");
    replies.push(reply);

    // docs/rules.md §3.2: X-Y-Z by one d6.
    let effect = json!({"type": "effect", "actor": "gnome", "values": [1, 2, 3]});
    let reply = act(&mut resolver, battle_id, &effect, "b-3").await.expect("effect");
    let [d] = derived.faces(&reply, 1, 6)[..] else { unreachable!() };
    let (tier, value) = match d {
        ..=3 => ("x", 1),
        4 | 5 => ("y", 2),
        _ => ("z", 3),
    };
    assert_eq!(outcome(&reply), json!({"tier": tier, "value": value}), "effect, d={d}");
    replies.push(reply);
    Played { battle_id: battle_id.into(), client_seed: client_seed.into(), replies }
}

async fn play_pbta(stack: &Stack) -> Played {
    let mut resolver = resolver_client(&stack.resolver).await;
    let (battle_id, client_seed) = ("full-pbta", "Cerulean gym");
    let sheets = json!([{"id": "misty", "traits": {"cool": 1, "grace": 2}}, {"id": "brock", "traits": {"grit": -1}}]);
    open(&mut resolver, battle_id, "pbta-2d6@1", sheets, client_seed).await;
    let mut derived = Derived::new(battle_id, client_seed);
    let mut replies = Vec::new();
    // (action, trait from the sheet (0 when absent), help, who is exposed)
    let moves = [
        (
            json!({"type": "move", "actor": "misty", "trait": "grace", "helpers": ["brock"], "stakes": "cross"}),
            2,
            1,
            json!(["brock"]),
        ),
        (json!({"type": "move", "actor": "brock", "trait": "grit", "stakes": "hold the door"}), -1, 0, json!([])),
        (json!({"type": "move", "actor": "brock", "trait": "wits", "stakes": "read the map"}), 0, 0, json!([])),
    ];
    for (i, (action, trait_value, help, exposed)) in moves.iter().enumerate() {
        let reply = act(&mut resolver, battle_id, action, &format!("m-{i}")).await.expect("move");
        let total = derived.faces(&reply, 2, 6).iter().sum::<i64>() + trait_value + help;
        let expected = json!({"result": pbta_band(total), "total": total, "help": help, "exposed": exposed});
        assert_eq!(outcome(&reply), expected, "{action}");
        replies.push(reply);
    }
    let unknown = json!({"type": "move", "actor": "misty", "trait": "luck", "stakes": "x"});
    let status = act(&mut resolver, battle_id, &unknown, "m-unknown").await.unwrap_err();
    assert_eq!(status.code(), Code::FailedPrecondition, "an unknown trait is a rule rejection: {status:?}");
    Played { battle_id: battle_id.into(), client_seed: client_seed.into(), replies }
}

/// Checks a closed battle end to end: its journal (chain, nonces, every
/// roll re-derived, every reply's rolls journaled, the reveal), the
/// resolver's Audit, and `battlelog audit --file` on `battlelog export`.
async fn check_closed_battle(stack: &Stack, played: &Played) -> Vec<Journaled> {
    let battle_id = played.battle_id.as_str();
    let events = journaled(stack, battle_id).await;
    assert_nonces_consecutive(battle_id, &events);
    let rolls = rolls_of(&events);
    assert!(!rolls.is_empty());
    for (_, roll) in &rolls {
        assert_eq!(roll.epoch, 0);
        assert_rederives(battle_id, &played.client_seed, roll);
    }
    for reply in &played.replies {
        assert_reply_rolls_journaled(battle_id, reply, &events);
    }
    let used: Vec<u64> = resolutions_of(&events).iter().flat_map(|(_, _, r)| r.rolls.clone()).collect();
    assert_eq!(used, (0..rolls.len() as u64).collect::<Vec<_>>(), "{battle_id}: each roll used once, in order");
    let tail: Vec<&Event> = events.iter().rev().take(2).map(|e| &e.event).collect();
    let expected_seed = server_seed(battle_id, 0).to_hex();
    assert!(
        matches!(tail[..], [Event::SeedRevealed(r), Event::BattleClosed(_)] if r.epoch == 0 && r.server_seed == expected_seed),
        "{battle_id}: close journals BattleClosed, then reveals the epoch-0 seed: {tail:?}"
    );

    let mut resolver = resolver_client(&stack.resolver).await;
    assert_audit_rpc_ok(&mut resolver, battle_id, events.len()).await;
    let file = stack.dir.path().join(format!("{battle_id}.jsonl"));
    let export = export_to(&stack.resolver.url(), battle_id, &file);
    check_export_fields(battle_id, &export, &events);
    assert_audit_file_verifies(&file, battle_id);
    events
}

/// docs/protocol.md §4's export: one line per event with `stream`, `version`,
/// `hash` (hex h(v)), `record` (base64 of the stored bytes) and `event`.
fn check_export_fields(battle_id: &str, export: &str, events: &[Journaled]) {
    let lines: Vec<Value> = export.lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect();
    assert_eq!(lines.len(), events.len(), "one line per event");
    for (line, event) in lines.iter().zip(events) {
        assert_eq!(line["stream"], json!(battle_id));
        assert_eq!(line["version"], json!(event.version()));
        assert_eq!(line["hash"], json!(hex::encode(&event.recorded.hash)));
        let record = BASE64.decode(line["record"].as_str().expect("record")).expect("base64");
        assert_eq!(record, event.recorded.record, "the exact stored record bytes");
        let shown = &line["event"];
        let required: &[&str] = match &event.event {
            Event::BattleOpened(_) => {
                &["ruleset", "participants", "client_seed", "commitment", "commitment_signature", "roller_key"]
            }
            Event::SeedCommitted(_) => &["epoch", "commitment", "commitment_signature", "roller_key"],
            Event::DiceRolled(_) => &["epoch", "nonce", "expression", "total", "dice"],
            Event::ActionResolved(_) => &["action", "rolls", "outcome", "summary_ru", "summary_en"],
            Event::SeedRevealed(_) => &["epoch", "server_seed"],
            Event::DisputeRaised(_) => &["by", "refers_to", "reason"],
            Event::JudgeRuling(_) => &["judge", "refers_to", "text"],
            Event::BattleClosed(_) => &["by", "reason"],
        };
        assert_eq!(shown["type"], json!(battle::type_name(&event.event)));
        for field in required {
            assert!(shown.get(field).is_some(), "{battle_id}@{}: event.{field} in {shown}", event.version());
        }
        // docs/PROTOCOL-signatures.md §3: both in lowercase hex.
        if let Event::BattleOpened(pb::BattleOpened { commitment_signature, .. })
        | Event::SeedCommitted(pb::SeedCommitted { commitment_signature, .. }) = &event.event
        {
            assert_eq!(shown["commitment_signature"], json!(hex::encode(commitment_signature)));
            assert_eq!(shown["roller_key"], json!(ROLLER_KEY_HEX));
        }
        if let Event::DiceRolled(roll) = &event.event {
            for (die, proto) in shown["dice"].as_array().expect("dice").iter().zip(&roll.dice) {
                let expected = json!({"sides": proto.sides, "value": proto.value, "kept": proto.kept,
                    "rerolled": proto.rerolled, "exploded": proto.exploded});
                assert_eq!(die, &expected);
            }
        }
    }
}

/// Acceptance: a full battle of each ruleset through the resolver's gRPC
/// API with the three services and nats-server as separate processes;
/// closed; the Audit RPC and `battlelog audit --file` on the export verify;
/// JetStream holds each battle's events in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_full_battle_of_each_ruleset_verifies_and_fans_out() {
    let stack = Stack::start("full", true).await;
    let mut resolver = resolver_client(&stack.resolver).await;
    let listed = resolver.list_rulesets(pb::ListRulesetsRequest {}).await.expect("list").into_inner().rulesets;
    for ruleset in ["pokemon-d6@1", "arcana-2d10@1", "berserk@1", "pbta-2d6@1"] {
        assert!(listed.iter().any(|r| r == ruleset), "{ruleset} in {listed:?}");
    }
    let (pokemon, arcana, berserk, pbta) =
        tokio::join!(play_pokemon(&stack), play_arcana(&stack), play_berserk(&stack), play_pbta(&stack));
    let mut journals = HashMap::new();
    for played in [pokemon, arcana, berserk, pbta] {
        let before = resolver
            .get_battle(pb::GetBattleRequest { battle_id: played.battle_id.clone(), at_version: None })
            .await
            .expect("get battle")
            .into_inner();
        assert!(!before.closed);
        close(&mut resolver, &played.battle_id).await;
        let after = resolver
            .get_battle(pb::GetBattleRequest { battle_id: played.battle_id.clone(), at_version: None })
            .await
            .expect("get battle")
            .into_inner();
        assert!(after.closed && after.version == before.version + 2, "{before:?} → {after:?}");
        let action = json!({"type": "pass", "actor": "pikachu"});
        let late = act(&mut resolver, &played.battle_id, &action, "after-close").await.unwrap_err();
        assert_eq!(late.code(), Code::FailedPrecondition, "a closed battle takes no action: {late:?}");
        let events = check_closed_battle(&stack, &played).await;
        journals.insert(played.battle_id.clone(), events);
    }
    assert_jetstream_has(&stack.nats_url().expect("nats"), &journals).await;
}

// ---------------------------------------------------------------------------
// 2. A crash between the roll and the resolution, then a retry.
// ---------------------------------------------------------------------------

/// The state a resolver crash right after the roll leaves — the roll
/// journaled under the resolver's key `act:<request id>`, no resolution —
/// made deterministically by asking the roller exactly what the resolver
/// would have; the resolver is then killed -9 and restarted, and the retried
/// `Act` reuses that roll: same nonce, same faces, no gap, one resolution.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_retry_after_a_crash_between_roll_and_resolution_reuses_the_roll() {
    let mut stack = Stack::start("crash", false).await;
    let battle_id = "crash-between";
    let client_seed = "crash test";
    let mut resolver = resolver_client(&stack.resolver).await;
    open(&mut resolver, battle_id, "pokemon-d6@1", json!([{"id": "pikachu"}, {"id": "meowth"}]), client_seed).await;
    let warm_up = json!({"type": "dodge", "actor": "meowth"});
    act(&mut resolver, battle_id, &warm_up, "c-0").await.expect("a first action, so the nonce is not 0");

    let attack = json!({"type": "attack", "actor": "pikachu", "target": "meowth", "move": "Thunderbolt", "power": 90});
    let mut roller = stack.roller_client().await;
    let crashed_roll = roller
        .roll(pb::RollRequest {
            battle_id: battle_id.into(),
            rolls: vec![pb::RollSpec { expression: "1d6".into(), purpose: "power".into() }],
            actor: "pikachu".into(),
            request_id: "act:c-1".into(),
            expected_head: None,
            for_action: None,
        })
        .await
        .expect("the roll the resolver asked for before it crashed")
        .into_inner();
    assert!(!crashed_roll.replayed);
    let crashed_roll = crashed_roll.rolls[0].clone();
    assert_eq!(crashed_roll.roll.as_ref().expect("roll").nonce, 1);

    let roller_url = stack.roller.url();
    let restarted = stack.start_resolver(&roller_url).await;
    std::mem::replace(&mut stack.resolver, restarted).kill_9();
    let mut resolver = resolver_client(&stack.resolver).await;
    let reply = act(&mut resolver, battle_id, &attack, "c-1").await.expect("the retried Act");
    assert_eq!(reply.rolls, vec![crashed_roll.clone()], "the retry reuses the journaled roll: same nonce and faces");
    let again = act(&mut resolver, battle_id, &attack, "c-1").await.expect("one more retry");
    assert_eq!(act_result(&again), act_result(&reply), "a retry returns the recorded resolution");
    let next = act(&mut resolver, battle_id, &json!({"type": "dodge", "actor": "meowth"}), "c-2").await.expect("next");
    assert_eq!(next.rolls[0].roll.as_ref().expect("roll").nonce, 2, "no nonce gap and no reuse after the retry");

    let events = journaled(&stack, battle_id).await;
    assert_nonces_consecutive(battle_id, &events);
    let for_c1: Vec<_> = resolutions_of(&events).into_iter().filter(|(_, key, _)| key == "act:c-1").collect();
    assert_eq!(for_c1.len(), 1, "exactly one ActionResolved for the request");
    assert_eq!(for_c1[0].2.rolls, vec![1]);
    assert_eq!(rolls_of(&events).len(), 3, "nothing was rolled again");
    for (_, roll) in rolls_of(&events) {
        assert_rederives(battle_id, client_seed, &roll);
    }
    assert_reply_rolls_journaled(battle_id, &reply, &events);
    close(&mut resolver, battle_id).await;
    let events = journaled(&stack, battle_id).await;
    assert_audit_rpc_ok(&mut resolver, battle_id, events.len()).await;
}

/// A real kill -9 of the resolver under load, aimed between a roll and its
/// resolution (and tried again, a bounded number of times, until a journaled
/// roll is indeed left without its resolution): every request that was
/// answered returns the identical reply when retried against the restarted
/// resolver, every request in flight completes on retry reusing its roll,
/// and the journal holds one resolution per request, every roll used
/// exactly once, nonces without a gap.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill_9_of_the_resolver_under_load_then_retries_lose_and_reroll_nothing() {
    /// Kills tried before the test gives up on hitting the window.
    const ROUNDS: usize = 5;
    let mut stack = Stack::start("kill9", false).await;
    let battle_id = "kill-under-load";
    let client_seed = "kill -9";
    let mut resolver = resolver_client(&stack.resolver).await;
    open(&mut resolver, battle_id, "pbta-2d6@1", json!([{"id": "misty"}, {"id": "brock"}]), client_seed).await;
    let mut attempts = Vec::new();
    let mut unresolved = Vec::new();
    for round in 0..ROUNDS {
        let acked = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for t in 0..8 {
            let mut resolver = resolver_client(&stack.resolver).await;
            let acked = acked.clone();
            tasks.push(tokio::spawn(async move {
                let mut answered = Vec::new();
                for i in 0.. {
                    let request_id = format!("load-{round}-{t}-{i}");
                    let action = json!({"type": "move", "actor": "misty", "trait": "cool", "stakes": request_id});
                    match act(&mut resolver, "kill-under-load", &action, &request_id).await {
                        Ok(reply) => {
                            answered.push((request_id, action, Some(reply)));
                            acked.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(status) => {
                            assert_ne!(status.code(), Code::InvalidArgument, "{status:?}");
                            answered.push((request_id, action, None));
                            return answered;
                        }
                    }
                }
                unreachable!()
            }));
        }
        let counter = acked.clone();
        poll_until("answered Acts under load", WAIT, || {
            let counter = counter.clone();
            async move { (counter.load(Ordering::Relaxed) >= 24).then_some(()) }
        })
        .await;
        let roller_url = stack.roller.url();
        let restarted = stack.start_resolver(&roller_url).await;
        // Aim the kill between a roll and its resolution: the moment the
        // journal shows a new roll, the resolver that asked for it is still
        // to resolve.
        let mut journal = stack.journal_client().await;
        let head = battlelog_system_tests::head(&mut journal, battle_id).await.expect("head");
        let mut feed = journal
            .subscribe_stream(pb::SubscribeStreamRequest { stream_id: battle_id.into(), from_version: head + 1 })
            .await
            .expect("subscribe")
            .into_inner();
        loop {
            let next = tokio::time::timeout(WAIT, feed.message()).await.expect("the load goes on");
            let record = next.expect("feed").expect("open feed").event.expect("record");
            if record.event_type == "DiceRolled" {
                break;
            }
        }
        std::mem::replace(&mut stack.resolver, restarted).kill_9();
        drop(feed);
        let mut cut_off = 0;
        for task in tasks {
            let answered = task.await.expect("load task");
            cut_off += answered.iter().filter(|(_, _, reply)| reply.is_none()).count();
            attempts.extend(answered);
        }
        assert_eq!(cut_off, 8, "round {round}: every task was cut off by the kill");

        // Nothing is retried before the last round, so a roll left without
        // its resolution in an earlier round is still counted here.
        let before = journaled(&stack, battle_id).await;
        let resolved_keys: HashSet<String> = resolutions_of(&before).into_iter().map(|(_, key, _)| key).collect();
        unresolved = before
            .iter()
            .filter(|e| e.key().starts_with("roll:act:"))
            .map(|e| e.key().trim_start_matches("roll:act:").trim_end_matches(":0").to_owned())
            .filter(|request_id| !resolved_keys.contains(&format!("act:{request_id}")))
            .collect();
        if !unresolved.is_empty() {
            break;
        }
    }
    assert!(
        !unresolved.is_empty(),
        "in {ROUNDS} kills, none landed between a journaled roll and its resolution: the window went untested"
    );
    let in_flight: HashSet<&str> =
        attempts.iter().filter(|(_, _, reply)| reply.is_none()).map(|(id, _, _)| id.as_str()).collect();
    for request_id in &unresolved {
        assert!(
            in_flight.contains(request_id.as_str()),
            "{request_id}: a roll without a resolution was never answered"
        );
    }
    let before = journaled(&stack, battle_id).await;

    let mut resolver = resolver_client(&stack.resolver).await;
    let mut final_replies = HashMap::new();
    for (request_id, action, reply) in &attempts {
        let retried = act(&mut resolver, battle_id, action, request_id).await.expect("a retry succeeds");
        if let Some(reply) = reply {
            assert_eq!(
                act_result(&retried),
                act_result(reply),
                "{request_id}: an answered request gets its recorded reply again"
            );
        }
        if let Some(rolled) =
            rolls_of(&before).iter().find(|(v, _)| before[*v as usize].key() == format!("roll:act:{request_id}:0"))
        {
            assert_eq!(retried.rolls[0].roll.as_ref(), Some(&rolled.1), "{request_id}: the journaled roll is reused");
        }
        final_replies.insert(request_id.clone(), retried);
    }

    let events = journaled(&stack, battle_id).await;
    assert_nonces_consecutive(battle_id, &events);
    let resolutions = resolutions_of(&events);
    assert_eq!(resolutions.len(), attempts.len(), "one resolution per request");
    let keys: HashSet<&str> = resolutions.iter().map(|(_, k, _)| k.as_str()).collect();
    assert_eq!(keys.len(), attempts.len(), "no request resolved twice");
    let mut used: Vec<u64> = resolutions.iter().flat_map(|(_, _, r)| r.rolls.clone()).collect();
    used.sort_unstable();
    assert_eq!(used, (0..rolls_of(&events).len() as u64).collect::<Vec<_>>(), "every roll used exactly once");
    for reply in final_replies.values() {
        assert_reply_rolls_journaled(battle_id, reply, &events);
        // Misty's sheet has no traits: `cool` is 0.
        assert_pbta_move(reply, 0);
    }
    for (_, roll) in rolls_of(&events) {
        assert_rederives(battle_id, client_seed, &roll);
    }
    close(&mut resolver, battle_id).await;
    let events = journaled(&stack, battle_id).await;
    assert_audit_rpc_ok(&mut resolver, battle_id, events.len()).await;
}

// ---------------------------------------------------------------------------
// 3 and 4. Concurrent Acts, replicas, retry storms.
// ---------------------------------------------------------------------------

/// Retries a request that a replica gave up on as too busy (ABORTED), with
/// the same request id, as the API asks.
async fn act_until_decided(
    resolver: &mut battlelog_proto::v1::resolver_client::ResolverClient<battlelog_auth::AuthChannel>,
    battle_id: &str,
    action: &Value,
    request_id: &str,
    aborted: &AtomicUsize,
) -> Result<pb::ActResponse, Status> {
    for _ in 0..100 {
        match act(resolver, battle_id, action, request_id).await {
            Err(status) if status.code() == Code::Aborted => {
                aborted.fetch_add(1, Ordering::Relaxed);
            }
            other => return other,
        }
    }
    panic!("{battle_id}: {request_id} was still ABORTED after 100 retries");
}

/// 16 concurrent dodges by one Pokémon on each of `resolvers`: each succeeds
/// or is rejected by the rules; never more than docs/rules.md's 5 counted
/// dodges; `dodges_left` follows journal order; nonces consecutive.
async fn concurrent_dodges(stack: &Stack, resolvers: &[&battlelog_test_support::ServiceProcess], battle_id: &str) {
    let client_seed = "dodge storm";
    let mut first = resolver_client(resolvers[0]).await;
    open(&mut first, battle_id, "pokemon-d6@1", json!([{"id": "pikachu"}, {"id": "meowth"}]), client_seed).await;
    let aborted = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for t in 0..16 {
        let mut resolver = resolver_client(resolvers[t % resolvers.len()]).await;
        let (battle_id, aborted) = (battle_id.to_owned(), aborted.clone());
        tasks.push(tokio::spawn(async move {
            let action = json!({"type": "dodge", "actor": "meowth", "incoming_damage": 100});
            act_until_decided(&mut resolver, &battle_id, &action, &format!("dodge-{t}"), &aborted).await
        }));
    }
    let mut accepted = Vec::new();
    let mut rejected = 0;
    for task in tasks {
        match task.await.expect("task") {
            Ok(reply) => accepted.push(reply),
            Err(status) => {
                assert_eq!(status.code(), Code::FailedPrecondition, "only rule rejections: {status:?}");
                assert!(status.message().contains("dodge"), "the rejection names the rule: {status:?}");
                rejected += 1;
            }
        }
    }
    if resolvers.len() == 1 {
        assert_eq!(aborted.load(Ordering::Relaxed), 0, "one replica serialises its commands without conflicts");
    }
    let events = journaled(stack, battle_id).await;
    assert_nonces_consecutive(battle_id, &events);
    for reply in &accepted {
        assert_reply_rolls_journaled(battle_id, reply, &events);
    }
    let rolls: BTreeMap<u64, pb::DiceRolled> = rolls_of(&events).into_iter().map(|(_, r)| (r.nonce, r)).collect();
    let mut counted = 0;
    for (version, _, resolved) in resolutions_of(&events) {
        let d = rolls[&resolved.rolls[0]].dice[0].value;
        let (reduction, counts) = pokemon_dodge(d);
        counted += u64::from(counts);
        let got = struct_json(resolved.outcome.as_ref());
        assert_eq!(got["reduction_percent"].as_u64(), Some(reduction), "@{version}: {got}");
        assert_eq!(got["dodges_left"].as_u64(), Some(5 - counted), "@{version}: dodges_left in journal order: {got}");
    }
    assert!(counted <= 5, "never more than 5 counted dodges: {counted}");
    assert_eq!(accepted.len() + rejected, 16);
    if rejected > 0 {
        assert_eq!(counted, 5, "a dodge is rejected only once 5 are counted");
    }
    if resolvers.len() == 1 {
        // Serialised: each resolution directly follows its own roll.
        let kinds: Vec<&str> = events.iter().skip(1).map(|e| battle::type_name(&e.event)).collect();
        let expected: Vec<&str> = (0..accepted.len()).flat_map(|_| ["DiceRolled", "ActionResolved"]).collect();
        assert_eq!(kinds, expected, "one replica: roll, resolution, roll, resolution …; no roll for a rejection");
    }
    for (_, roll) in rolls_of(&events) {
        assert_rederives(battle_id, client_seed, &roll);
    }
}

/// 16 concurrent moves (never rejected) across `resolvers`: all succeed,
/// one roll and one resolution each, nonces consecutive.
async fn concurrent_moves(stack: &Stack, resolvers: &[&battlelog_test_support::ServiceProcess], battle_id: &str) {
    let mut first = resolver_client(resolvers[0]).await;
    open(&mut first, battle_id, "pbta-2d6@1", json!([{"id": "misty"}]), battle_id).await;
    let aborted = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for t in 0..16 {
        let mut resolver = resolver_client(resolvers[t % resolvers.len()]).await;
        let (battle_id, aborted) = (battle_id.to_owned(), aborted.clone());
        tasks.push(tokio::spawn(async move {
            let action = json!({"type": "move", "actor": "misty", "trait": "cool", "stakes": format!("{t}")});
            act_until_decided(&mut resolver, &battle_id, &action, &format!("move-{t}"), &aborted).await
        }));
    }
    let mut replies = Vec::new();
    for task in tasks {
        replies.push(task.await.expect("task").expect("a move is never rejected"));
    }
    let events = journaled(stack, battle_id).await;
    assert_nonces_consecutive(battle_id, &events);
    assert_eq!(rolls_of(&events).len(), 16, "one roll per request");
    assert_eq!(resolutions_of(&events).len(), 16, "one resolution per request");
    let versions: HashSet<u64> = replies.iter().map(|r| r.version).collect();
    assert_eq!(versions.len(), 16, "each resolution has its own version");
    for reply in &replies {
        assert_reply_rolls_journaled(battle_id, reply, &events);
        assert_pbta_move(reply, 0);
    }
    for (_, roll) in rolls_of(&events) {
        assert_rederives(battle_id, battle_id, &roll);
    }
}

/// Acceptance: concurrent Acts on one battle are serialised and nonces are
/// consecutive — with one resolver, and with two resolver replicas behind
/// the same roller and journal.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_acts_on_one_battle_are_serialised_on_one_and_two_replicas() {
    let mut stack = Stack::start("concurrent", false).await;
    concurrent_dodges(&stack, &[&stack.resolver], "dodges-one-replica").await;
    concurrent_moves(&stack, &[&stack.resolver], "moves-one-replica").await;
    let roller = stack.roller.url();
    let replica = stack.start_resolver(&roller).await;
    concurrent_dodges(&stack, &[&stack.resolver, &replica], "dodges-two-replicas").await;
    concurrent_moves(&stack, &[&stack.resolver, &replica], "moves-two-replicas").await;
}

/// Acceptance: a retry storm — one request id sent many times at once —
/// draws one roll and one resolution, and every reply is identical; first
/// through one resolver, then split over two resolver replicas that each
/// have their own roller replica.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_retry_storm_rolls_once_and_answers_identically() {
    let mut stack = Stack::start("storm", false).await;
    let second_roller = stack.start_roller().await;
    let second_resolver = stack.start_resolver(&second_roller.url()).await;
    let battle_id = "storm";
    let mut resolver = resolver_client(&stack.resolver).await;
    open(&mut resolver, battle_id, "pokemon-d6@1", json!([{"id": "pikachu"}, {"id": "meowth"}]), "storm").await;
    let attack = json!({"type": "attack", "actor": "pikachu", "target": "meowth", "move": "Tackle", "power": 40});
    let dodge = json!({"type": "dodge", "actor": "meowth", "incoming_damage": 40});

    // Several storms per setup, as the races between replicas are short.
    // Across replicas, storms of an attack (whose outcome does not depend on
    // the state) and of a dodge (whose `dodges_left` does; at most 4 of them,
    // so that none is refused by the limit of 5).
    let one = vec![&stack.resolver];
    let two = vec![&stack.resolver, &second_resolver];
    let storms: Vec<(String, &Vec<_>, &Value)> = (0..3)
        .map(|i| (format!("storm-one-{i}"), &one, &attack))
        .chain((0..12).map(|i| (format!("storm-two-{i}"), &two, if i % 3 == 1 { &dodge } else { &attack })))
        .collect();
    for (request_id, targets, action) in &storms {
        let request_id = request_id.as_str();
        let mut tasks = Vec::new();
        for t in 0..24 {
            let mut resolver = resolver_client(targets[t % targets.len()]).await;
            let (action, id) = ((*action).clone(), request_id.to_owned());
            tasks.push(tokio::spawn(async move {
                let aborted = AtomicUsize::new(0);
                act_until_decided(&mut resolver, "storm", &action, &id, &aborted).await
            }));
        }
        let mut replies = Vec::new();
        for task in tasks {
            replies.push(task.await.expect("task").unwrap_or_else(|s| panic!("{request_id}: {s:?}")));
        }
        // Identical but for the journal's checkpoint, the newest when each was answered.
        assert!(
            replies.iter().all(|r| act_result(r) == act_result(&replies[0])),
            "{request_id}: every reply is identical"
        );
        if *action == &attack {
            // Pikachu never gets a condition here: one power die.
            let p = faces(&replies[0]);
            assert_eq!(outcome(&replies[0]), pokemon_attack(p[0], None, 40), "{request_id}: Tackle, p={p:?}");
        }
        let events = journaled(&stack, battle_id).await;
        let rolled: Vec<_> = events.iter().filter(|e| e.key() == format!("roll:act:{request_id}:0")).collect();
        assert_eq!(rolled.len(), 1, "{request_id}: one roll");
        let resolved: Vec<_> = events.iter().filter(|e| e.key() == format!("act:{request_id}")).collect();
        assert_eq!(resolved.len(), 1, "{request_id}: one resolution");
        assert_reply_rolls_journaled(battle_id, &replies[0], &events);
        assert_nonces_consecutive(battle_id, &events);
    }
    let events = journaled(&stack, battle_id).await;
    assert_eq!(rolls_of(&events).len(), storms.len());
    assert_eq!(resolutions_of(&events).len(), storms.len());
}

// ---------------------------------------------------------------------------
// 5. A reveal mid-battle.
// ---------------------------------------------------------------------------

/// Acceptance: revealing an open battle's seed (the roller's Reveal with
/// closing = false) journals SeedRevealed and the next epoch's
/// SeedCommitted together; later rolls use epoch 1, nonces go on, and the
/// whole battle still verifies once it is closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_reveal_mid_battle_starts_a_new_epoch_and_later_rolls_verify() {
    let stack = Stack::start("reveal", false).await;
    let battle_id = "reveal-mid";
    let client_seed = "reveal";
    let mut resolver = resolver_client(&stack.resolver).await;
    open(&mut resolver, battle_id, "pbta-2d6@1", json!([{"id": "misty", "traits": {"wits": 1}}]), client_seed).await;
    let mv = |stakes: &str| json!({"type": "move", "actor": "misty", "trait": "wits", "stakes": stakes});
    for i in 0..2 {
        let reply = act(&mut resolver, battle_id, &mv("before"), &format!("r-{i}")).await.expect("act");
        assert_eq!(reply.rolls[0].roll.as_ref().expect("roll").epoch, 0);
    }
    let mut roller = stack.roller_client().await;
    let reveal = pb::RevealRequest {
        battle_id: battle_id.into(),
        closing: false,
        request_id: "judge-reveal".into(),
        requested_by: None,
    };
    let revealed = roller.reveal(reveal.clone()).await.expect("reveal").into_inner();
    let seed0 = revealed.revealed.as_ref().expect("revealed");
    assert_eq!((seed0.epoch, seed0.server_seed.clone()), (0, server_seed(battle_id, 0).to_hex()));
    let next = revealed.next.as_ref().expect("the next epoch is committed");
    assert_eq!((next.epoch, next.commitment.clone()), (1, server_seed(battle_id, 1).commitment().to_string()));
    assert_eq!(next.roller_key, roller_key().to_bytes());
    assert_eq!(
        roller_key().verify(battle_id, 1, &next.commitment, &next.commitment_signature),
        Ok(()),
        "the roller signs the next epoch's commitment"
    );
    assert_eq!(roller.reveal(reveal).await.expect("retried reveal").into_inner(), revealed, "a retry is a replay");

    let events = journaled(&stack, battle_id).await;
    let tail: Vec<&Event> = events.iter().rev().take(2).rev().map(|e| &e.event).collect();
    assert!(
        matches!(tail[..], [Event::SeedRevealed(_), Event::SeedCommitted(c)] if c.epoch == 1),
        "SeedRevealed and the next SeedCommitted in one append: {tail:?}"
    );
    assert_eq!(events[revealed.version as usize].version(), revealed.version);
    let state = resolver
        .get_battle(pb::GetBattleRequest { battle_id: battle_id.into(), at_version: None })
        .await
        .expect("get")
        .into_inner();
    assert_eq!((state.epoch, state.next_nonce), (1, 2));

    for i in 2..5 {
        let reply = act(&mut resolver, battle_id, &mv("after"), &format!("r-{i}")).await.expect("act");
        let roll = reply.rolls[0].roll.as_ref().expect("roll");
        assert_eq!((roll.epoch, roll.nonce), (1, i), "later rolls use the new epoch; nonces go on");
    }
    // Before the close, epoch 1's rolls await their reveal; the rest verifies.
    let file = stack.dir.path().join("open.jsonl");
    export_to(&stack.resolver.url(), battle_id, &file);
    let (code, output) = audit_file(&file);
    assert_eq!(code, Some(0), "{output}");
    assert!(output.contains("2 rolls re-derived") && output.contains("3 rolls await"), "{output}");

    close(&mut resolver, battle_id).await;
    let events = journaled(&stack, battle_id).await;
    assert_nonces_consecutive(battle_id, &events);
    for (_, roll) in rolls_of(&events) {
        assert_rederives(battle_id, client_seed, &roll);
    }
    let reveals: Vec<(u32, String)> = events
        .iter()
        .filter_map(|e| match &e.event {
            Event::SeedRevealed(r) => Some((r.epoch, r.server_seed.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(reveals, vec![(0, server_seed(battle_id, 0).to_hex()), (1, server_seed(battle_id, 1).to_hex())]);
    assert_audit_rpc_ok(&mut resolver, battle_id, events.len()).await;
    let file = stack.dir.path().join("closed.jsonl");
    let export = export_to(&stack.resolver.url(), battle_id, &file);
    let (code, output) = audit_file(&file);
    assert_eq!(code, Some(0), "{output}");
    assert!(output.contains("verifies") && output.contains("5 rolls re-derived"), "{output}");
    check_export_fields(battle_id, &export, &events);
    assert_audit_file_verifies(&file, battle_id);
}

// ---------------------------------------------------------------------------
// 6. The audit catches a tampered export.
// ---------------------------------------------------------------------------

type Lines = Vec<serde_json::Map<String, Value>>;

fn record_of(line: &serde_json::Map<String, Value>) -> pb::JournalRecord {
    let bytes = BASE64.decode(line["record"].as_str().expect("record")).expect("base64");
    pb::JournalRecord::decode(bytes.as_slice()).expect("a JournalRecord")
}

/// Rewrites a line's record with `event` (and its shown `event` JSON).
fn set_event(line: &mut serde_json::Map<String, Value>, event: Event) {
    let mut record = record_of(line);
    record.payload = pb::BattleEvent { event: Some(event.clone()) }.encode_to_vec();
    line.insert("record".into(), json!(BASE64.encode(record.encode_to_vec())));
    line.insert("event".into(), battle::event_to_json(&event));
}

/// Recomputes every `hash` from the record bytes (docs/protocol.md §4), as a
/// forger who knows the chain would.
fn rechain(battle_id: &str, lines: &mut Lines) {
    let mut previous: Vec<u8> = battlelog_system_tests::genesis(battle_id).to_vec();
    for line in lines.iter_mut() {
        let record = BASE64.decode(line["record"].as_str().expect("record")).expect("base64");
        let hash: [u8; 32] = Sha256::new().chain_update(&previous).chain_update(&record).finalize().into();
        line.insert("hash".into(), json!(hex::encode(hash)));
        previous = hash.to_vec();
    }
}

fn write_lines(path: &std::path::Path, lines: &Lines) {
    let text: String = lines.iter().map(|l| format!("{}\n", Value::Object(l.clone()))).collect();
    std::fs::write(path, text).expect("write");
}

fn event_at(lines: &Lines, version: usize) -> Event {
    battle::decode(&record_of(&lines[version])).expect("event")
}

/// Audits a tampered export: exit status 1 and a finding at `version`.
fn assert_caught(stack: &Stack, name: &str, lines: &Lines, version: usize, check: &str) {
    let path = stack.dir.path().join(format!("{name}.jsonl"));
    write_lines(&path, lines);
    let (code, output) = audit_file(&path);
    assert_eq!(code, Some(1), "{name}: the audit fails (and did not crash):\n{output}");
    assert!(output.contains("DOES NOT VERIFY"), "{name}:\n{output}");
    assert!(
        output.contains(&format!("version {version}: {check}")),
        "{name}: names version {version} ({check}):\n{output}"
    );
}

/// A closed pbta battle of four moves, exported and verified:
/// (stack, export lines). Versions: 0 opened, then (DiceRolled,
/// ActionResolved) × 4 at 1–8, 9 BattleClosed, 10 SeedRevealed.
async fn closed_battle_export(label: &str, battle_id: &str) -> (Stack, Lines) {
    let stack = Stack::start(label, false).await;
    let mut resolver = resolver_client(&stack.resolver).await;
    open(&mut resolver, battle_id, "pbta-2d6@1", json!([{"id": "misty"}, {"id": "brock"}]), "tamper").await;
    for i in 0..4 {
        let action = json!({"type": "move", "actor": "brock", "trait": "grit", "stakes": format!("{i}")});
        act(&mut resolver, battle_id, &action, &format!("t-{i}")).await.expect("act");
    }
    close(&mut resolver, battle_id).await;
    let file = stack.dir.path().join("original.jsonl");
    let export = export_to(&stack.resolver.url(), battle_id, &file);
    assert_audit_file_verifies(&file, battle_id);
    let lines: Lines = export.lines().map(|l| serde_json::from_str(l).expect("JSON object")).collect();
    assert_eq!(lines.len(), 11);
    assert!(matches!(event_at(&lines, 9), Event::BattleClosed(_)));
    assert!(matches!(event_at(&lines, 10), Event::SeedRevealed(_)));
    (stack, lines)
}

/// Acceptance: `battlelog audit --file` catches a changed die (with the
/// chain recomputed, so only re-deriving the roll can tell; and without),
/// a changed shown event, a removed event, two events swapped and a wrong
/// revealed seed, each named by version; the untouched export verifies.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_audit_catches_a_tampered_export_by_version() {
    let battle_id = "tampered";
    let (stack, original) = closed_battle_export("tamper", battle_id).await;
    let roll_version = 3;
    let Event::DiceRolled(roll) = event_at(&original, roll_version) else { panic!("version 3 is a roll") };
    let reveal_version = 10;

    // A changed die, re-chained, the shown event and the total kept in
    // step: only the re-derivation from the revealed seed can tell.
    let mut forged = roll.clone();
    let old = forged.dice[0].value;
    forged.dice[0].value = old % 6 + 1;
    forged.total += forged.dice[0].value - old;
    let mut lines = original.clone();
    set_event(&mut lines[roll_version], Event::DiceRolled(forged));
    rechain(battle_id, &mut lines);
    assert_caught(&stack, "die-rechained", &lines, roll_version, "roll");
    let (_, output) = audit_file(&stack.dir.path().join("die-rechained.jsonl"));
    assert!(!output.contains(": chain:"), "the chain itself was recomputed, so it holds:\n{output}");

    // The same change without recomputing the hashes: the chain breaks there.
    let mut lines = original.clone();
    let mut forged = roll.clone();
    forged.dice[1].value = forged.dice[1].value % 6 + 1;
    set_event(&mut lines[roll_version], Event::DiceRolled(forged));
    assert_caught(&stack, "die-not-rechained", &lines, roll_version, "chain");

    // A removed event (the roll at version 5).
    let mut lines = original.clone();
    lines.remove(5);
    assert_caught(&stack, "removed", &lines, 5, "sequence");
    rechain(battle_id, &mut lines);
    assert_caught(&stack, "removed-rechained", &lines, 5, "sequence");

    // The shown event alone changed: a reader would be misled.
    let mut lines = original.clone();
    lines[roll_version].get_mut("event").expect("event")["dice"][0]["value"] = json!(0);
    assert_caught(&stack, "shown-event", &lines, roll_version, "event");

    // Two events swapped (versions 5 and 6: a roll and its resolution).
    let mut lines = original.clone();
    lines.swap(5, 6);
    assert_caught(&stack, "swapped", &lines, 5, "sequence");

    // A wrong revealed seed (a real seed, of another epoch), re-chained.
    let mut lines = original.clone();
    let wrong = pb::SeedRevealed { epoch: 0, server_seed: server_seed(battle_id, 1).to_hex(), credential: None };
    set_event(&mut lines[reveal_version], Event::SeedRevealed(wrong));
    rechain(battle_id, &mut lines);
    assert_caught(&stack, "wrong-seed", &lines, reveal_version, "commitment");
}

/// Splices `event` into an export as a forger would, at version `at`: the
/// displaced line's stream and time, a fresh event id, the type named, the
/// shown event in step, and every later line moved up one version (its
/// record re-encoded with the new version, so that only the hashes still
/// remember the old order). The hashes are left as they were: a forger who
/// knows the chain calls [`rechain`] after.
fn insert_event(lines: &mut Lines, at: usize, event: Event) {
    let mut record = record_of(&lines[at]);
    record.version = at as u64;
    let last = if record.event_id.ends_with('0') { "1" } else { "0" };
    record.event_id = format!("{}{last}", &record.event_id[..record.event_id.len() - 1]);
    record.event_type = battle::type_name(&event).into();
    record.idempotency_key = "act:forged".into();
    record.payload = pb::BattleEvent { event: Some(event.clone()) }.encode_to_vec();
    let mut line = lines[at].clone();
    line.insert("version".into(), json!(at));
    line.insert("record".into(), json!(BASE64.encode(record.encode_to_vec())));
    line.insert("event_id".into(), json!(record.event_id));
    line.insert("event_type".into(), json!(record.event_type));
    line.insert("event".into(), battle::event_to_json(&event));
    lines.insert(at, line);
    for (version, later) in lines.iter_mut().enumerate().skip(at + 1) {
        let mut record = record_of(later);
        record.version = version as u64;
        later.insert("version".into(), json!(version));
        later.insert("record".into(), json!(BASE64.encode(record.encode_to_vec())));
    }
}

/// Invariant 5 names insertion: a record spliced into an export is a
/// finding at its version. A forged roll (the nonce the next real roll
/// has, better faces) re-chained from there is caught by re-deriving it
/// from the revealed seed (docs/protocol.md §2); a real resolution copied in a
/// second time, re-chained, by its roll being used twice; the forged roll
/// without re-chaining, by the chain. Nothing else changed, and the
/// original export still verifies.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_audit_catches_an_inserted_record_by_version() {
    let battle_id = "inserted";
    let (stack, original) = closed_battle_export("insert", battle_id).await;
    // Versions 1, 3, 5, 7 are the rolls of nonces 0–3; 2, 4, 6, 8 their resolutions.
    let Event::DiceRolled(real) = event_at(&original, 5) else { panic!("version 5 is a roll") };
    assert_eq!(real.nonce, 2);
    let mut forged = real.clone();
    let old = forged.dice[0].value;
    forged.dice[0].value = old % 6 + 1;
    forged.total += forged.dice[0].value - old;

    let mut lines = original.clone();
    insert_event(&mut lines, 5, Event::DiceRolled(forged.clone()));
    assert_eq!(lines.len(), original.len() + 1);
    rechain(battle_id, &mut lines);
    assert_caught(&stack, "roll-inserted-rechained", &lines, 5, "roll");
    let (_, output) = audit_file(&stack.dir.path().join("roll-inserted-rechained.jsonl"));
    assert!(!output.contains(": chain:") && !output.contains(": sequence:"), "re-chained and renumbered:\n{output}");

    let Event::ActionResolved(resolution) = event_at(&original, 4) else { panic!("version 4 resolves nonce 1") };
    assert_eq!(resolution.rolls, vec![1]);
    let mut lines = original.clone();
    insert_event(&mut lines, 5, Event::ActionResolved(resolution));
    rechain(battle_id, &mut lines);
    assert_caught(&stack, "resolution-inserted-rechained", &lines, 5, "resolution");

    let mut lines = original.clone();
    insert_event(&mut lines, 5, Event::DiceRolled(forged));
    assert_caught(&stack, "roll-inserted", &lines, 5, "chain");

    let path = stack.dir.path().join("untouched.jsonl");
    write_lines(&path, &original);
    assert_audit_file_verifies(&path, battle_id);
}

/// Audits an export that differs from a verified one only in what
/// `check` looks at: exit status 1, findings at `version`, and every
/// finding is of that check (the chain and shown event were kept in step).
fn assert_caught_only(stack: &Stack, name: &str, lines: &Lines, version: usize, check: &str) {
    assert_caught(stack, name, lines, version, check);
    // The findings of the JSON report: the text also lists the close (and
    // any dispute or ruling) by version.
    let path = stack.dir.path().join(format!("{name}.jsonl"));
    let (_, stdout, stderr) =
        cli(&["audit", "--file", &path.display().to_string(), "--roller-key", ROLLER_KEY_HEX, "--json"]);
    let report: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{name}: {e}: {stdout}{stderr}"));
    let findings = report["findings"].as_array().expect("findings");
    assert!(!findings.is_empty(), "{name}: {stdout}");
    for finding in findings {
        assert_eq!(
            (finding["version"].as_u64(), finding["check"].as_str()),
            (Some(version as u64), Some(check)),
            "{name}: only {check}:\n{stdout}"
        );
    }
}

/// Acceptance (docs/PROTOCOL-signatures.md §4): the audit checks the
/// signature of every commitment. The BattleOpened of a real battle's
/// export is edited — re-encoded, shown and re-chained, so that only the
/// signature check can tell — and each edit is a `signature` finding at
/// version 0: a flipped bit, no signature, no key, a signature of the
/// roller's own for another epoch or battle. Signed consistently by another
/// key, the export verifies on its own, but not against the roller's key.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_audit_checks_the_signature_of_every_commitment() {
    let battle_id = "signed";
    let (stack, original) = closed_battle_export("signed", battle_id).await;
    let Event::BattleOpened(opened) = event_at(&original, 0) else { panic!("version 0 opens the battle") };
    assert_eq!(opened.roller_key, roller_key().to_bytes());
    let edited = |name: &str, edit: &dyn Fn(&mut pb::BattleOpened)| {
        let mut forged = opened.clone();
        edit(&mut forged);
        let mut lines = original.clone();
        set_event(&mut lines[0], Event::BattleOpened(forged));
        rechain(battle_id, &mut lines);
        let path = stack.dir.path().join(format!("{name}.jsonl"));
        write_lines(&path, &lines);
        (lines, path)
    };

    let (lines, _) = edited("signature-bit", &|o| o.commitment_signature[5] ^= 0x10);
    assert_caught_only(&stack, "signature-bit", &lines, 0, "signature");
    let (lines, _) = edited("signature-removed", &|o| o.commitment_signature.clear());
    assert_caught_only(&stack, "signature-removed", &lines, 0, "signature");
    let (lines, _) = edited("unsigned", &|o| {
        o.commitment_signature.clear();
        o.roller_key.clear();
    });
    assert_caught_only(&stack, "unsigned", &lines, 0, "signature");
    let (_, output) = audit_file(&stack.dir.path().join("unsigned.jsonl"));
    assert!(output.contains("no roller key signed the commitments"), "{output}");
    // Genuine signatures by the roller's own key, of other messages.
    let roller = dice::CommitmentSigner::derive(&master_key());
    let (lines, _) =
        edited("other-epoch", &|o| o.commitment_signature = roller.sign(battle_id, 1, &o.commitment).to_vec());
    assert_caught_only(&stack, "other-epoch", &lines, 0, "signature");
    let (lines, _) =
        edited("other-battle", &|o| o.commitment_signature = roller.sign("tampered", 0, &o.commitment).to_vec());
    assert_caught_only(&stack, "other-battle", &lines, 0, "signature");

    // Another key, consistently: a forger's own key signs the commitment.
    let forger = dice::CommitmentSigner::derive(&[0x42; 32]);
    let forger_key = forger.roller_key().to_string();
    assert_ne!(forger_key, ROLLER_KEY_HEX);
    let (_, path) = edited("forger-key", &|o| {
        o.commitment_signature = forger.sign(battle_id, 0, &o.commitment).to_vec();
        o.roller_key = forger.roller_key().to_bytes().to_vec();
    });
    // Consistently signed, it passes every other check: without a pinned
    // key the audit says so and exits 3 (issue 21), never 0.
    let (code, output) = audit_file_unpinned(&path, &[]);
    assert_eq!(code, Some(3), "consistently signed, the key is not pinned:\n{output}");
    assert!(output.contains(&format!("roller key {forger_key} signed")), "the report names the key it saw:\n{output}");
    assert!(output.contains("NOT PINNED"), "{output}");
    let (code, output) = audit_file_unpinned(&path, &["--accept-any-roller-key"]);
    assert_eq!(code, Some(0), "any key accepted explicitly:\n{output}");
    let (code, output) = audit_file_with_key(&path, ROLLER_KEY_HEX);
    assert_eq!(code, Some(1), "not the roller's key:\n{output}");
    assert!(output.contains("DOES NOT VERIFY") && output.contains("version 0: signature: "), "{output}");
    assert!(output.contains(&format!("not the trusted one: expected {ROLLER_KEY_HEX}")), "{output}");

    // And the untouched export against someone else's key.
    let (code, output) = audit_file_with_key(&stack.dir.path().join("original.jsonl"), &forger_key);
    assert_eq!(code, Some(1), "{output}");
    assert!(output.contains("version 0: signature: "), "{output}");
    let (code, _, stderr) = cli(&["audit", "--file", "unused.jsonl", "--roller-key", "not-hex"]);
    assert_eq!(code, Some(2), "a malformed --roller-key is refused: {stderr}");
    assert!(stderr.contains("--roller-key"), "{stderr}");
}

/// The threat of issue 8: whoever can append to the journal opens a battle
/// with a commitment to a seed of their own (signed with their own key, or
/// not at all). The resolver's Audit RPC holds the battle to the key its
/// roller reports and flags the commitment.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_audit_rpc_refuses_commitments_its_roller_did_not_sign() {
    let stack = Stack::start("forged", false).await;
    let mut journal = stack.journal_client().await;
    let mut resolver = resolver_client(&stack.resolver).await;
    let forger_master_key = [0x42u8; 32];
    let forger = dice::CommitmentSigner::derive(&forger_master_key);
    for (battle_id, signed) in [("forged-signed", true), ("forged-unsigned", false)] {
        let commitment = dice::ServerSeed::derive(&forger_master_key, battle_id, 0).commitment().to_string();
        let mut opened = pb::BattleOpened {
            ruleset: "pbta-2d6@1".into(),
            participants: vec![obj(json!({"id": "misty"}))],
            client_seed: "forged".into(),
            commitment,
            tenant: battlelog_test_support::auth::TEST_TENANT.into(),
            ..Default::default()
        };
        if signed {
            opened.commitment_signature = forger.sign(battle_id, 0, &opened.commitment).to_vec();
            opened.roller_key = forger.roller_key().to_bytes().to_vec();
        }
        let event = battle::new_event(Event::BattleOpened(opened), String::new());
        battlelog_system_tests::append(&mut journal, battle_id, battlelog_system_tests::no_stream(), vec![event])
            .await
            .expect("the journal takes any well-formed append");
        let report =
            resolver.audit(pb::AuditRequest { battle_id: battle_id.into() }).await.expect("audit").into_inner();
        assert!(!report.ok, "{battle_id}: {report:?}");
        assert!(report.findings.iter().any(|f| (f.version, f.check.as_str()) == (0, "signature")), "{report:?}");
        let expected_key = if signed { forger.roller_key().to_string() } else { String::new() };
        assert_eq!(report.roller_key, expected_key, "{battle_id}: the report names the key it saw");
    }
}

// ---------------------------------------------------------------------------
// 8. Invariant 1 and bad input.
// ---------------------------------------------------------------------------

/// The number of events in the whole journal (every stream).
async fn global_count(stack: &Stack) -> usize {
    let mut journal = stack.journal_client().await;
    let mut count = 0;
    loop {
        let page = journal
            .read_all(pb::ReadAllRequest { from_position: count as u64, max_count: 0 })
            .await
            .expect("read all")
            .into_inner();
        if page.events.is_empty() {
            return count;
        }
        count += page.events.len();
    }
}

/// Invariant 1 and the input rule of docs/operating.md, *Security*: bad
/// input to `OpenBattle`, `Act` and the roller's `Roll` is INVALID_ARGUMENT
/// with a google.rpc BadRequest naming the field, and writes nothing anywhere in the journal; a rule
/// rejection draws no die.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn bad_input_is_refused_by_field_and_writes_nothing() {
    let stack = Stack::start("invalid", false).await;
    let battle_id = "inputs";
    let mut resolver = resolver_client(&stack.resolver).await;
    open(&mut resolver, battle_id, "pokemon-d6@1", json!([{"id": "pikachu"}, {"id": "meowth"}]), "inputs").await;
    let good = json!({"type": "dodge", "actor": "meowth"});
    let reply = act(&mut resolver, battle_id, &good, "ok-1").await.expect("a good act");
    let before = global_count(&stack).await;
    assert_eq!(before, 3, "opened, rolled, resolved");

    let open_request = |f: &dyn Fn(&mut pb::OpenBattleRequest)| {
        let mut request = pb::OpenBattleRequest {
            ruleset: "pokemon-d6@1".into(),
            participants: vec![obj(json!({"id": "pikachu"}))],
            request_id: "open-bad".into(),
            battle_id: "fresh-battle".into(),
            ..Default::default()
        };
        f(&mut request);
        request
    };
    let open_cases: Vec<(pb::OpenBattleRequest, &str)> = vec![
        (open_request(&|r| r.ruleset = "chess@1".into()), "ruleset"),
        (open_request(&|r| r.participants.clear()), "participants"),
        (open_request(&|r| r.request_id.clear()), "request_id"),
        (open_request(&|r| r.battle_id = "no spaces".into()), "battle_id"),
        (open_request(&|r| r.client_seed = "s".repeat(1001)), "client_seed"),
        (open_request(&|r| r.title = "bell\u{7}".into()), "title"),
        // An unknown field is named itself (its sheet would also lack `id`).
        (open_request(&|r| r.participants.push(obj(json!({"name": "no id"})))), "participants[1].name"),
    ];
    for (request, field) in open_cases {
        let status = resolver.open_battle(request).await.unwrap_err();
        assert_eq!(invalid_field(&status), field, "{status:?}");
    }

    let act_request = |action: Option<Value>, request_id: &str, battle: &str| pb::ActRequest {
        battle_id: battle.into(),
        action: action.map(obj),
        request_id: request_id.into(),
        ..Default::default()
    };
    let act_cases = vec![
        (act_request(Some(good.clone()), "", battle_id), "request_id"),
        (act_request(Some(good.clone()), "has space", battle_id), "request_id"),
        (act_request(Some(good.clone()), "ok-2", "bad/id"), "battle_id"),
        (act_request(None, "ok-2", battle_id), "action"),
        (act_request(Some(json!({"type": "teleport_everyone"})), "ok-2", battle_id), "action.type"),
        (act_request(Some(json!({"actor": "meowth"})), "ok-2", battle_id), "action"),
        (
            act_request(
                Some(json!({"type": "dodge", "actor": "meowth", "note": "x".repeat(20_000)})),
                "ok-2",
                battle_id,
            ),
            "action",
        ),
        (
            act_request(Some(json!({"type": "ruling", "judge": "j", "refers_to": 1, "text": "x"})), "ok-2", battle_id),
            "action",
        ),
    ];
    for (request, field) in act_cases {
        let status = resolver.act(request).await.unwrap_err();
        assert_eq!(invalid_field(&status), field, "{status:?}");
    }

    let mut roller = stack.roller_client().await;
    let roll_request = |expression: &str, purpose: &str, request_id: &str, specs: usize| pb::RollRequest {
        battle_id: battle_id.into(),
        rolls: (0..specs).map(|_| pb::RollSpec { expression: expression.into(), purpose: purpose.into() }).collect(),
        actor: "meowth".into(),
        request_id: request_id.into(),
        expected_head: None,
        for_action: None,
    };
    let roll_cases = vec![
        (roll_request("2d", "x", "r-1", 1), "rolls[0].expression"),
        (roll_request("1d6", "tab\there", "r-1", 1), "rolls[0].purpose"),
        (roll_request("1d6", "x", "", 1), "request_id"),
        (roll_request("1d6", "x", "r-1", 0), "rolls"),
        (roll_request("1d6", "x", "r-1", 17), "rolls"),
        (roll_request(&["1000d6"; 6].join("+"), "x", "r-1", 2), "rolls"),
    ];
    for (request, field) in roll_cases {
        let status = roller.roll(request).await.unwrap_err();
        assert_eq!(invalid_field(&status), field, "{status:?}");
    }

    // A rule rejection (pikachu is not in the battle as the dodger's target
    // … here: an unknown participant) draws no die either.
    let stranger = json!({"type": "dodge", "actor": "mewtwo"});
    let status = act(&mut resolver, battle_id, &stranger, "ok-3").await.unwrap_err();
    assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");

    assert_eq!(global_count(&stack).await, before, "nothing reached the journal");
    let events = journaled(&stack, battle_id).await;
    assert_reply_rolls_journaled(battle_id, &reply, &events);
    let again = act(&mut resolver, battle_id, &good, "ok-1").await.expect("retry");
    assert_eq!(act_result(&again), act_result(&reply));
}

/// A journal in front of the real one that passes every call through, but
/// SIGKILLs the real journal when the first `Append` reaches it and passes
/// that append on once the journal is gone: the journal dies exactly at the
/// append, after serving the reads that led up to it.
struct DyingJournal {
    upstream: battlelog_system_tests::Client,
    /// The real journal's process id and address, until it is killed.
    victim: Mutex<Option<(u32, std::net::SocketAddr)>>,
}

impl DyingJournal {
    fn killed(&self) -> bool {
        self.victim.lock().expect("lock").is_none()
    }

    /// SIGKILL, then wait until its port refuses connections: the process
    /// is gone (a signalled process still accepts until it exits).
    async fn kill(pid: u32, addr: std::net::SocketAddr) -> Result<(), Status> {
        let sent = std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status();
        if !sent.is_ok_and(|s| s.success()) {
            return Err(Status::internal(format!("the test could not kill the journal ({pid})")));
        }
        let gone = async {
            while tokio::net::TcpStream::connect(addr).await.is_ok() {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        };
        tokio::time::timeout(WAIT, gone).await.map_err(|_| Status::internal("the killed journal still accepts"))
    }
}

#[tonic::async_trait]
impl pb::journal_server::Journal for DyingJournal {
    async fn append(&self, request: Request<pb::AppendRequest>) -> Result<Response<pb::AppendResponse>, Status> {
        let victim = self.victim.lock().expect("lock").take();
        let Some((pid, addr)) = victim else {
            return self.upstream.clone().append(request.into_inner()).await;
        };
        Self::kill(pid, addr).await?;
        // A fresh connection, as a roller's after the journal died: the
        // old one may still be failing its way out, which takes a varying
        // time and ends in UNKNOWN ("transport error") rather than UNAVAILABLE.
        let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}")).expect("url").connect_lazy();
        let token = TestAuth::shared().service_token();
        let mut journal =
            pb::journal_client::JournalClient::new(battlelog_auth::authed(channel, &token).expect("token"));
        journal.append(request.into_inner()).await
    }

    // The roller's lone appends are Appends; a batch (none in this test)
    // would pass on untouched.
    async fn append_batch(
        &self,
        request: Request<pb::AppendBatchRequest>,
    ) -> Result<Response<pb::AppendBatchResponse>, Status> {
        self.upstream.clone().append_batch(request.into_inner()).await
    }

    async fn read_stream(
        &self,
        request: Request<pb::ReadStreamRequest>,
    ) -> Result<Response<pb::ReadStreamResponse>, Status> {
        self.upstream.clone().read_stream(request.into_inner()).await
    }

    async fn read_all(&self, request: Request<pb::ReadAllRequest>) -> Result<Response<pb::ReadAllResponse>, Status> {
        self.upstream.clone().read_all(request.into_inner()).await
    }

    type SubscribeStreamStream = tonic::Streaming<pb::RecordedEvent>;

    async fn subscribe_stream(
        &self,
        request: Request<pb::SubscribeStreamRequest>,
    ) -> Result<Response<Self::SubscribeStreamStream>, Status> {
        self.upstream.clone().subscribe_stream(request.into_inner()).await
    }

    type SubscribeAllStream = tonic::Streaming<pb::RecordedEvent>;

    async fn subscribe_all(
        &self,
        request: Request<pb::SubscribeAllRequest>,
    ) -> Result<Response<Self::SubscribeAllStream>, Status> {
        self.upstream.clone().subscribe_all(request.into_inner()).await
    }

    async fn verify_chain(
        &self,
        request: Request<pb::VerifyChainRequest>,
    ) -> Result<Response<pb::VerifyChainResponse>, Status> {
        self.upstream.clone().verify_chain(request.into_inner()).await
    }

    async fn stream_info(
        &self,
        request: Request<pb::StreamInfoRequest>,
    ) -> Result<Response<pb::StreamInfoResponse>, Status> {
        self.upstream.clone().stream_info(request.into_inner()).await
    }

    async fn list_battle_index(
        &self,
        request: Request<pb::BattleIndexRequest>,
    ) -> Result<Response<pb::BattleIndexResponse>, Status> {
        self.upstream.clone().list_battle_index(request.into_inner()).await
    }

    async fn list_pending_actions(
        &self,
        request: Request<pb::PendingActionsRequest>,
    ) -> Result<Response<pb::PendingActionsResponse>, Status> {
        self.upstream.clone().list_pending_actions(request.into_inner()).await
    }

    async fn get_checkpoint(
        &self,
        request: Request<pb::GetCheckpointRequest>,
    ) -> Result<Response<pb::GetCheckpointResponse>, Status> {
        self.upstream.clone().get_checkpoint(request.into_inner()).await
    }

    async fn get_inclusion_proof(
        &self,
        request: Request<pb::InclusionProofRequest>,
    ) -> Result<Response<pb::InclusionProofResponse>, Status> {
        self.upstream.clone().get_inclusion_proof(request.into_inner()).await
    }

    async fn get_consistency_proof(
        &self,
        request: Request<pb::ConsistencyProofRequest>,
    ) -> Result<Response<pb::ConsistencyProofResponse>, Status> {
        self.upstream.clone().get_consistency_proof(request.into_inner()).await
    }

    async fn get_signed_head(
        &self,
        request: Request<pb::SignedHeadRequest>,
    ) -> Result<Response<pb::SignedHeadResponse>, Status> {
        self.upstream.clone().get_signed_head(request.into_inner()).await
    }
}

/// Serves `journal` on a free loopback port: its URL.
async fn serve_journal(journal: Arc<DyingJournal>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let server = tonic::transport::Server::builder()
        .add_service(pb::journal_server::JournalServer::from_arc(journal))
        .serve_with_incoming(battlelog_runtime::grpc::incoming(listener));
    tokio::spawn(server);
    format!("http://{addr}")
}

/// Invariant 1: a roll's faces leave the roller only once its DiceRolled
/// is in the journal. The journal refuses the append (restarted with a
/// payload limit below any roll's), then dies at it (SIGKILL as the append
/// arrives): each time the roller answers an error naming the journal
/// (UNAVAILABLE when it cannot be reached, README) and no faces, and nothing
/// is journaled. With the journal back on its data dir and port, the same
/// request id draws exactly the dice docs/protocol.md §1–3 derives for the next
/// nonce, once; the roller that saw the journal die replays that roll.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn no_roll_leaves_the_roller_while_the_journal_refuses_or_dies_at_the_append() {
    let mut stack = Stack::start("unjournaled", false).await;
    let (battle_id, client_seed) = ("unjournaled", "no faces without the journal");
    let mut resolver = resolver_client(&stack.resolver).await;
    open(&mut resolver, battle_id, "pbta-2d6@1", json!([{"id": "misty", "traits": {"wits": 1}}]), client_seed).await;
    let warm_up = json!({"type": "move", "actor": "misty", "trait": "wits", "stakes": "the next nonce is 1"});
    act(&mut resolver, battle_id, &warm_up, "warm-up").await.expect("a first roll");
    let before = journaled(&stack, battle_id).await;
    assert_eq!(rolls_of(&before).len(), 1);
    let request = pb::RollRequest {
        battle_id: battle_id.into(),
        rolls: vec![pb::RollSpec { expression: "3d6".into(), purpose: "to hit".into() }],
        actor: "misty".into(),
        request_id: "r-1".into(),
        expected_head: None,
        for_action: None,
    };

    // The journal refuses: restarted with a battle budget the battle has
    // filled (3 events, and a roll must leave room for its resolution and
    // the close), it still serves the reads, so the roller gets as far as
    // the append, whose refusal names the budget.
    stack.restart_journal(&[("BATTLELOG_JOURNAL_MAX_BATTLE_EVENTS", "5")]).await;
    let status = stack.roller_client().await.roll(request.clone()).await.expect_err("no faces: the append failed");
    assert!(status.message().contains("journal") && status.message().contains("max_battle_events"), "{status:?}");
    assert_eq!(journaled(&stack, battle_id).await.len(), before.len(), "nothing was journaled");

    // The journal dies at the append: a second roller reaches it through
    // DyingJournal.
    stack.restart_journal(&[]).await;
    let dying = Arc::new(DyingJournal {
        upstream: stack.journal_client().await,
        victim: Mutex::new(Some((stack.journal.pid(), stack.journal.addr()))),
    });
    let dying_url = serve_journal(dying.clone()).await;
    let roller_data = stack.dir.path().join("roller-of-the-dying");
    let witness_process = battlelog_test_support::roller(&roller_data, &dying_url, Some(MASTER_KEY_HEX)).await;
    let mut witness = RollerClient::new(witness_process.authed(&TestAuth::shared().service_token()).await);
    let status = witness.roll(request.clone()).await.expect_err("no faces: the journal died at the append");
    assert!(dying.killed(), "the call reached the append");
    assert_eq!(status.code(), Code::Unavailable, "{status:?}");
    assert!(status.message().contains("journal"), "{status:?}");

    stack.restart_journal(&[]).await;
    assert_eq!(journaled(&stack, battle_id).await.len(), before.len(), "nothing was journaled");
    let (_, expected) = dice::roll("3d6", &server_seed(battle_id, 0), client_seed, 1).expect("derive nonce 1");
    let reply = stack.roller_client().await.roll(request.clone()).await.expect("the retry rolls").into_inner();
    assert!(!reply.replayed, "nothing had been recorded for r-1");
    let roll = reply.rolls[0].roll.clone().expect("roll");
    assert_eq!((roll.epoch, roll.nonce), (0, 1), "the next nonce, not one past a lost roll");
    assert_eq!(
        roll.dice.iter().map(battle::die_from_proto).collect::<Vec<_>>(),
        expected.dice,
        "docs/protocol.md §2–3"
    );
    assert_eq!(roll.total, expected.total);
    let again = witness.roll(request).await.expect("a retry at the roller that saw the failure").into_inner();
    assert!(again.replayed);
    assert_eq!(again.rolls, reply.rolls, "the recorded roll, not a new one");

    let events = journaled(&stack, battle_id).await;
    assert_eq!(events.len(), before.len() + 1, "one event more: the roll");
    assert_eq!(rolls_of(&events), vec![rolls_of(&before)[0].clone(), (reply.rolls[0].version, roll)]);
    assert_nonces_consecutive(battle_id, &events);
}

// ---------------------------------------------------------------------------
// 9. Invariant 3: a seed is in nothing anyone can read until it is revealed.
// ---------------------------------------------------------------------------

/// Every message on the NATS server (subject `>`) since the capture began:
/// (subject, headers, payload).
type Captured = Arc<Mutex<Vec<(String, String, Vec<u8>)>>>;

async fn capture_nats(url: &str) -> Captured {
    let client = async_nats::connect(url).await.expect("connect to nats");
    let mut subscriber = client.subscribe(">").await.expect("subscribe to everything");
    // The subscription is in place on the server before anything is published.
    client.flush().await.expect("flush");
    let captured = Captured::default();
    let sink = captured.clone();
    tokio::spawn(async move {
        let _client = client;
        while let Some(message) = subscriber.next().await {
            let headers = format!("{:?}", message.headers);
            sink.lock().expect("lock").push((message.subject.to_string(), headers, message.payload.to_vec()));
        }
    });
    captured
}

/// A secret and the forms it could be written in: the bytes, hex either
/// case, base64 (standard and URL-safe; the padding aside) and `{:?}` of
/// the byte array, as a careless log line would print it.
struct Secret {
    name: String,
    forms: Vec<(&'static str, Vec<u8>)>,
}

impl Secret {
    fn new(name: &str, bytes: &[u8]) -> Secret {
        let base64 = BASE64.encode(bytes);
        let forms = vec![
            ("bytes", bytes.to_vec()),
            ("hex", hex::encode(bytes).into_bytes()),
            ("HEX", hex::encode_upper(bytes).into_bytes()),
            ("base64", base64.trim_end_matches('=').as_bytes().to_vec()),
            ("base64url", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes).into_bytes()),
            ("{:?}", format!("{bytes:?}").into_bytes()),
        ];
        Secret { name: name.to_owned(), forms }
    }

    /// The first form of it that `haystack` holds.
    fn found_in(&self, haystack: &[u8]) -> Option<&'static str> {
        let text = String::from_utf8_lossy(haystack);
        self.forms.iter().find_map(|(form, needle)| {
            let found = match std::str::from_utf8(needle) {
                Ok(needle) => text.contains(needle),
                Err(_) => haystack.windows(needle.len()).any(|window| window == needle),
            };
            found.then_some(*form)
        })
    }
}

/// Everything a reader of the journal, of NATS, of an export or of the
/// services' logs can see, by where it was seen; plus `replies`, what the
/// forum was answered.
async fn everything_visible(
    stack: &Stack,
    nats: &Captured,
    battle_id: &str,
    replies: &[String],
) -> Vec<(String, Vec<u8>)> {
    let mut seen: Vec<(String, Vec<u8>)> = Vec::new();

    // The journal's global log: every stream, the record bytes as stored
    // and their payloads decoded.
    let mut journal = stack.journal_client().await;
    let mut position = 0;
    loop {
        let page = journal
            .read_all(pb::ReadAllRequest { from_position: position, max_count: 0 })
            .await
            .expect("read all")
            .into_inner();
        if page.events.is_empty() {
            break;
        }
        position = page.next_position;
        for recorded in page.events {
            let record = pb::JournalRecord::decode(recorded.record.as_slice()).expect("a record");
            let at = format!("journal {}@{}", record.stream_id, record.version);
            let event = battle::decode(&record).unwrap_or_else(|e| panic!("{at}: {e}"));
            seen.push((format!("{at} record"), recorded.record.clone()));
            seen.push((format!("{at} event"), format!("{event:?} {}", battle::event_to_json(&event)).into_bytes()));
        }
    }
    // The journal's files: whatever it keeps besides the records. sled
    // replaces some (snapshots) as it runs: one gone meanwhile is skipped.
    let mut dirs = vec![stack.dir.path().join("journal")];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if let Ok(bytes) = std::fs::read(&path) {
                seen.push((format!("journal file {}", path.display()), bytes));
            }
        }
    }

    // NATS, once every journaled event has been published.
    let total = position as usize;
    let on_events = |captured: &Captured| {
        captured.lock().expect("lock").iter().filter(|(subject, _, _)| subject.starts_with("battlelog.events.")).count()
    };
    poll_until("every event on NATS", WAIT, || async { (on_events(nats) >= total).then_some(()) }).await;
    for (i, (subject, headers, payload)) in nats.lock().expect("lock").iter().enumerate() {
        seen.push((
            format!("NATS message {i} on {subject}: subject and headers"),
            format!("{subject} {headers}").into(),
        ));
        seen.push((format!("NATS message {i} on {subject}: payload"), payload.clone()));
    }

    // The export, as text and each record's bytes.
    let path = stack.dir.path().join(format!("{battle_id}-{position}.jsonl"));
    let export = export_to(&stack.resolver.url(), battle_id, &path);
    for (i, line) in export.lines().enumerate() {
        let line: Value = serde_json::from_str(line).expect("a JSON line");
        let record = BASE64.decode(line["record"].as_str().expect("record")).expect("base64");
        seen.push((format!("export line {i} record"), record));
    }
    seen.push(("export".into(), export.into_bytes()));

    // The logs, at debug, read as bytes: raw bytes would not be UTF-8.
    for name in ["journal.log", "roller.log", "resolver.log"] {
        let log = std::fs::read(stack.dir.path().join(name)).expect("a service log");
        let text = String::from_utf8_lossy(&log);
        assert!(text.contains("DEBUG"), "{name} is at debug level:\n{}", &text[..text.len().min(3000)]);
        seen.push((format!("log {name}"), log));
    }
    let nats_server = stack.nats.as_ref().expect("nats");
    seen.push(("nats-server log".into(), nats_server.log().into_bytes()));

    for (i, reply) in replies.iter().enumerate() {
        seen.push((format!("reply {i}"), reply.clone().into_bytes()));
    }
    seen
}

fn assert_hidden(seen: &[(String, Vec<u8>)], secrets: &[&Secret], when: &str) {
    for (source, bytes) in seen {
        for secret in secrets {
            if let Some(form) = secret.found_in(bytes) {
                panic!("{when}: {} is in the {source} (as {form})", secret.name);
            }
        }
    }
}

/// The revealed seed is where a reveal puts it: the journal, NATS and the
/// export (so the searches above look in the right places).
fn assert_shown(seen: &[(String, Vec<u8>)], secret: &Secret) {
    for place in ["journal ", "journal file ", "NATS message ", "export line "] {
        assert!(
            seen.iter().any(|(source, bytes)| source.starts_with(place) && secret.found_in(bytes).is_some()),
            "once revealed, {} is in the {place}…",
            secret.name
        );
    }
}

/// Invariant 3 and docs/protocol.md §1: an epoch's server seed (and the roll key
/// made from it, and the master key ever) is in nothing anyone can read
/// before its reveal — the journal's records and files, every NATS message,
/// the export, the forum's replies, the three services' logs at debug
/// level — in any form. A judge's RevealSeed then puts epoch 0's seed in
/// the journal, on NATS and in the export while epoch 1's stays hidden; the
/// close reveals epoch 1's the same way.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_seed_is_nowhere_until_it_is_revealed() {
    let stack = Stack::start_with("secret", true, &StartOptions::log("debug")).await;
    let nats = capture_nats(&stack.nats_url().expect("nats")).await;
    let (battle_id, client_seed) = ("secret-seeds", "nobody peeks");
    let seed = |epoch: u32| server_seed(battle_id, epoch);
    let roll_key = |epoch: u32| dice::RollKey::derive(&seed(epoch), client_seed);
    let seed_0 = Secret::new("epoch 0's seed", seed(0).as_bytes());
    let seed_1 = Secret::new("epoch 1's seed", seed(1).as_bytes());
    let key_0 = Secret::new("epoch 0's roll key", roll_key(0).as_bytes());
    let key_1 = Secret::new("epoch 1's roll key", roll_key(1).as_bytes());
    let master = Secret::new("the master key", &master_key());

    let mut resolver = resolver_client(&stack.resolver).await;
    let mut replies = Vec::new();
    let opened =
        open(&mut resolver, battle_id, "pbta-2d6@1", json!([{"id": "misty", "traits": {"wits": 1}}]), client_seed)
            .await;
    replies.push(format!("{opened:?}"));
    let mv = |stakes: &str| json!({"type": "move", "actor": "misty", "trait": "wits", "stakes": stakes});
    let mut play = async |replies: &mut Vec<String>, from: usize| {
        for i in from..from + 2 {
            let reply = act(&mut resolver, battle_id, &mv("secret"), &format!("s-{i}")).await.expect("act");
            replies.push(format!("{reply:?}"));
        }
        let state = resolver
            .get_battle(pb::GetBattleRequest { battle_id: battle_id.into(), at_version: None })
            .await
            .expect("get")
            .into_inner();
        replies.push(format!("{state:?}"));
    };
    play(&mut replies, 0).await;
    let seen = everything_visible(&stack, &nats, battle_id, &replies).await;
    assert_hidden(&seen, &[&seed_0, &key_0, &seed_1, &key_1, &master], "before any reveal");

    let mut judge = judge_client(&stack.resolver).await;
    let reveal = pb::RevealSeedRequest { battle_id: battle_id.into(), request_id: "reveal-0".into() };
    let revealed = judge.reveal_seed(reveal).await.expect("a judge reveals").into_inner();
    assert_eq!(revealed.revealed.expect("revealed").server_seed, seed(0).to_hex());
    play(&mut replies, 2).await;
    let seen = everything_visible(&stack, &nats, battle_id, &replies).await;
    assert_hidden(&seen, &[&seed_1, &key_1, &master], "after epoch 0's reveal");
    assert_shown(&seen, &seed_0);

    close(&mut resolver, battle_id).await;
    let seen = everything_visible(&stack, &nats, battle_id, &replies).await;
    assert_hidden(&seen, &[&master], "after the close");
    assert_shown(&seen, &seed_1);
    let events = journaled(&stack, battle_id).await;
    assert_nonces_consecutive(battle_id, &events);
    for (_, roll) in rolls_of(&events) {
        assert_rederives(battle_id, client_seed, &roll);
    }
}

/// A closed battle's export with its SeedRevealed (the last line) removed:
/// no roll can be re-derived, yet docs/protocol.md §1 reveals the seed when the
/// battle closes and the resolver's Close always reveals. The audit must
/// not call it verified; the finding belongs to the BattleClosed (version 9)
/// that no reveal follows.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_audit_refuses_a_closed_battle_whose_reveal_was_removed() {
    let battle_id = "unrevealed";
    let (stack, mut lines) = closed_battle_export("unrevealed", battle_id).await;
    lines.pop();
    let path = stack.dir.path().join("reveal-removed.jsonl");
    write_lines(&path, &lines);
    let (code, output) = audit_file(&path);
    assert_eq!(code, Some(1), "a closed battle without its reveal does not verify:\n{output}");
    assert!(output.contains("version 9: "), "names the BattleClosed at version 9:\n{output}");
}

// ---------------------------------------------------------------------------
// 9. Replay to a version, and the audit of a battle on the server.
// ---------------------------------------------------------------------------

/// One Pokémon as docs/rules.md §1 defines its state: dodges counted toward the
/// limit of five, statuses with their turns left, a preparation (none in
/// these tests) and the flinch flag.
#[derive(Debug, Clone, Default)]
struct Mon {
    dodges_used: u64,
    statuses: BTreeMap<String, u64>,
    flinched: bool,
}

impl Mon {
    /// docs/rules.md §1.1 step 7: each status loses a turn; at 0 it is removed.
    fn end_turn(&mut self) {
        for turns in self.statuses.values_mut() {
            *turns -= 1;
        }
        self.statuses.retain(|_, turns| *turns > 0);
    }

    fn json(&self) -> Value {
        json!({
            "dodges_used": self.dodges_used,
            "statuses": self.statuses,
            "charging": null,
            "flinched": self.flinched,
        })
    }
}

/// µs since the Unix epoch as RFC 3339, UTC (as `replay` shows times).
fn rfc3339(micros: i64) -> String {
    let seconds = micros.div_euclid(1_000_000);
    let nanos = i32::try_from(micros.rem_euclid(1_000_000) * 1_000).expect("under a second");
    prost_types::Timestamp { seconds, nanos }.to_string()
}

fn pokemon_state(pikachu: &Mon, meowth: &Mon) -> Value {
    json!({"pokemon": {"pikachu": pikachu.json(), "meowth": meowth.json()}})
}

/// `battlelog replay BATTLE [--at V] --resolver URL --token <a reader's>`:
/// the event lines it shows, and the state (its header line and JSON).
fn cli_replay(resolver_url: &str, battle_id: &str, at: Option<u64>) -> (Vec<String>, String, Value) {
    let reader = TestAuth::shared().reader();
    let mut args = vec!["replay", battle_id, "--resolver", resolver_url, "--token", &reader];
    let at = at.map(|v| v.to_string());
    if let Some(at) = &at {
        args.extend(["--at", at]);
    }
    let (code, stdout, stderr) = cli(&args);
    assert_eq!(code, Some(0), "replay {battle_id} --at {at:?}: {stderr}");
    let (events, state) = stdout
        .split_once("\nstate at version ")
        .unwrap_or_else(|| panic!("replay prints the state after the events:\n{stdout}"));
    let (header, json) = state.split_once('\n').expect("a header, then the state as JSON");
    let json = serde_json::from_str(json).unwrap_or_else(|e| panic!("the state is JSON ({e}):\n{json}"));
    (events.lines().map(str::to_owned).collect(), format!("state at version {header}"), json)
}

/// A judge replays a `pokemon-d6@1` battle to any version, through
/// `GetBattle { at_version }` and `battlelog replay --at`: the state at each
/// version is the one docs/rules.md §1 gives for the events up to it — dodges
/// counted by the dodge die's table (1.3), a status move's turns by its
/// power die (1.2), statuses ticking at the end of the actor's turn (1.1
/// step 7), a Fake Out's flinch (1.1 step 5) cleared by the next move
/// (step 1) — and a judge's ruling that overrules a dodge changes the
/// count from the ruling's version on (§5.1), not before it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_battle_replays_to_every_version_with_the_state_the_rules_give() {
    let stack = Stack::start("replay", false).await;
    let battle_id = "replayed";
    // The first client seed of a fixed list under which every branch below
    // is taken: the first dodge counts (nonce 0 not a 6), the burn lands for
    // 3 or 4 turns (nonce 1 at least 5) and outlasts the turns that follow,
    // the Fake Out hits (nonce 2 above 1). The expected states below are
    // worked out from whatever dice come; the plan only makes them rich.
    let d6 = |seed: &str, nonce| dice::roll("1d6", &server_seed(battle_id, 0), seed, nonce).expect("1d6").1.total;
    let client_seed = (0..10_000)
        .map(|i| format!("replay to a version, thread {i}"))
        .find(|seed| d6(seed, 0) != 6 && d6(seed, 1) >= 5 && d6(seed, 2) > 1)
        .expect("a client seed with the planned dice");
    let client_seed = client_seed.as_str();
    let mut resolver = resolver_client(&stack.resolver).await;
    open(&mut resolver, battle_id, "pokemon-d6@1", json!([{"id": "pikachu"}, {"id": "meowth"}]), client_seed).await;
    let (mut pikachu, mut meowth) = (Mon::default(), Mon::default());
    // Version → the state right after it, at every version that changes it.
    let mut states: BTreeMap<u64, Value> = BTreeMap::from([(0, pokemon_state(&pikachu, &meowth))]);

    let dodge = json!({"type": "dodge", "actor": "meowth", "incoming_damage": 40});
    let first_dodge = act(&mut resolver, battle_id, &dodge, "rp-1").await.expect("dodge");
    let counted_first = pokemon_dodge(faces(&first_dodge)[0]).1;
    meowth.dodges_used += u64::from(counted_first);
    states.insert(first_dodge.version, pokemon_state(&pikachu, &meowth));

    // Meowth has no condition: one power die, and 1.2's table for the turns.
    let burn =
        json!({"type": "status_move", "actor": "meowth", "target": "pikachu", "move": "Will-O-Wisp", "status": "burn"});
    let reply = act(&mut resolver, battle_id, &burn, "rp-2").await.expect("status move");
    let p = faces(&reply)[0];
    let turns = match p {
        1 | 2 => 0,
        3..=6 => p as u64 - 2,
        _ => panic!("a d6 showed {p}"),
    };
    assert_eq!(outcome(&reply)["turns"].as_u64(), Some(turns), "p={p}: {}", outcome(&reply));
    if turns > 0 {
        pikachu.statuses.insert("burn".into(), turns);
    }
    meowth.end_turn();
    states.insert(reply.version, pokemon_state(&pikachu, &meowth));

    let reply =
        act(&mut resolver, battle_id, &json!({"type": "pass", "actor": "pikachu"}), "rp-3").await.expect("pass");
    assert!(reply.rolls.is_empty(), "a pass draws no die");
    pikachu.end_turn();
    states.insert(reply.version, pokemon_state(&pikachu, &meowth));

    // A burn is no condition: one power die; on a hit the target flinches.
    let fake_out = json!({"type": "attack", "actor": "pikachu", "target": "meowth", "move": "Fake Out", "power": 40, "interrupt": true});
    let reply = act(&mut resolver, battle_id, &fake_out, "rp-4").await.expect("attack");
    assert_eq!(reply.rolls.len(), 1, "{reply:?}");
    meowth.flinched = faces(&reply)[0] > 1;
    pikachu.end_turn();
    states.insert(reply.version, pokemon_state(&pikachu, &meowth));

    let reply = act(&mut resolver, battle_id, &dodge, "rp-5").await.expect("second dodge");
    let counted_second = pokemon_dodge(faces(&reply)[0]).1;
    meowth.dodges_used += u64::from(counted_second);
    states.insert(reply.version, pokemon_state(&pikachu, &meowth));

    // A dispute changes nothing; the ruling that answers it overrules the
    // first dodge's count, and the state follows from the ruling on.
    let dispute = pb::DisputeRequest {
        battle_id: battle_id.into(),
        by: "meowth".into(),
        refers_to: first_dodge.version,
        reason: "that dodge should not count".into(),
        request_id: "rp-dispute".into(),
        ..Default::default()
    };
    let disputed = resolver.dispute(dispute).await.expect("dispute").into_inner().version;
    let ruling = pb::RuleRequest {
        battle_id: battle_id.into(),
        judge: String::new(),
        refers_to: first_dodge.version,
        text: "the first dodge is overruled".into(),
        r#override: Some(obj(json!({"counted": !counted_first}))),
        request_id: "rp-ruling".into(),
        ..Default::default()
    };
    let ruled = judge_client(&stack.resolver).await.rule(ruling).await.expect("ruling").into_inner().version;
    assert!(disputed < ruled);
    meowth.dodges_used = u64::from(!counted_first) + u64::from(counted_second);
    states.insert(ruled, pokemon_state(&pikachu, &meowth));

    // A flinched Pokémon's next move fails without a die and clears the flag.
    let scratch = json!({"type": "attack", "actor": "meowth", "target": "pikachu", "move": "Scratch", "power": 40});
    let reply = act(&mut resolver, battle_id, &scratch, "rp-6").await.expect("attack after the ruling");
    assert_eq!(reply.rolls.is_empty(), meowth.flinched, "{reply:?}");
    meowth.flinched = false;
    meowth.end_turn();
    states.insert(reply.version, pokemon_state(&pikachu, &meowth));
    let closed_at = close(&mut resolver, battle_id).await.version;

    let events = journaled(&stack, battle_id).await;
    for (_, roll) in rolls_of(&events) {
        assert_rederives(battle_id, client_seed, &roll);
    }
    let head = events.len() as u64 - 1;
    let recorded_at = |v: u64| events[v as usize].record.recorded_at_unix_micros;
    let appeal_deadline = recorded_at(closed_at) + 14 * 24 * 60 * 60 * 1_000_000;
    let expected = |v: u64| states.range(..=v).next_back().map(|(_, state)| state.clone()).expect("a state");
    let nonces_by = |v: u64| rolls_of(&events).iter().filter(|(at, _)| *at <= v).count() as u64;
    let mut reader = resolver_as(&stack.resolver, &TestAuth::shared().reader()).await;
    for v in 0..=head {
        let got = reader
            .get_battle(pb::GetBattleRequest { battle_id: battle_id.into(), at_version: Some(v) })
            .await
            .unwrap_or_else(|s| panic!("GetBattle at {v}: {s:?}"))
            .into_inner();
        assert_eq!((got.version, got.ruleset.as_str()), (v, "pokemon-d6@1"), "at {v}");
        assert_eq!(struct_json(got.state.as_ref()), expected(v), "the state at version {v}");
        assert_eq!((got.next_nonce, got.epoch, got.closed), (nonces_by(v), 0, v >= closed_at), "at {v}");
        // The appeal deadline: the close's journaled time plus the
        // resolver's (default, 14-day) window, once closed.
        assert_eq!(got.appeal_deadline_unix_micros, (v >= closed_at).then_some(appeal_deadline), "at {v}");
    }
    let past = reader
        .get_battle(pb::GetBattleRequest { battle_id: battle_id.into(), at_version: Some(head + 1) })
        .await
        .expect_err("a version past the head");
    assert_eq!(past.code(), Code::OutOfRange, "{past:?}");

    // The CLI at a roll (the state before its action), at a resolution,
    // at the dispute, at the ruling, and at the head (no --at).
    for at in [Some(first_dodge.version - 1), Some(first_dodge.version), Some(disputed), Some(ruled), None] {
        let v = at.unwrap_or(head);
        let (lines, header, state) = cli_replay(&stack.resolver.url(), battle_id, at);
        // An event a line, each opening with its version; a ruling's
        // changed fields follow it, indented.
        let shown: Vec<&str> =
            lines.iter().filter(|l| !l.starts_with(' ')).filter_map(|l| l.split_whitespace().next()).collect();
        let versions: Vec<String> = (0..=v).map(|i| format!("#{i}")).collect();
        assert_eq!(shown, versions, "replay --at {at:?} shows the events up to version {v}:\n{lines:?}");
        let closed = if v >= closed_at {
            format!(", closed, appeals until {}", rfc3339(appeal_deadline))
        } else {
            String::new()
        };
        assert_eq!(
            header,
            format!("state at version {v} (pokemon-d6@1, next nonce {}, epoch 0{closed}):", nonces_by(v))
        );
        // Every event shows its journaled time; a command its credential.
        let line_of = |version: u64| {
            lines.iter().find(|l| l.starts_with(&format!("#{version} "))).unwrap_or_else(|| panic!("#{version}"))
        };
        assert!(line_of(0).ends_with(&format!("[forum test-forum, {}]", rfc3339(recorded_at(0)))), "{}", line_of(0));
        assert!(line_of(1).ends_with(&format!(" [{}]", rfc3339(recorded_at(1)))), "a roll: {}", line_of(1));
        if v >= closed_at {
            // The forum's token closed it; "judge" is only its free text.
            assert_eq!(
                *line_of(closed_at),
                format!(
                    "#{closed_at} closed by forum test-forum (note: \"judge\"): the test is over [forum test-forum, {}]",
                    rfc3339(recorded_at(closed_at))
                )
            );
        }
        assert_eq!(state, expected(v), "replay --at {at:?}: the state at version {v}");
        if v >= ruled {
            // The ruling names its judge's credential and, under it, the
            // overridden dodge's count before and after.
            let at_ruling = lines.iter().position(|l| l.starts_with(&format!("#{ruled} "))).expect("the ruling");
            let ruled_at = rfc3339(recorded_at(ruled));
            assert!(lines[at_ruling].ends_with(&format!("[judge judge-jenny, {ruled_at}]")), "{}", lines[at_ruling]);
            assert!(!lines[at_ruling].contains("after the close"), "ruled before the close: {}", lines[at_ruling]);
            assert_eq!(lines[at_ruling + 1], format!("    counted: {counted_first} -> {}", !counted_first));
            // Under the overruled dodge: what contests it, its final
            // outcome after the ruling and the recorded one.
            let dodge = first_dodge.version;
            let at_dodge = lines.iter().position(|l| l.starts_with(&format!("#{dodge} "))).expect("the dodge");
            assert_eq!(lines[at_dodge + 1], format!("    contested by dispute #{disputed}, ruling #{ruled}"));
            let recorded = outcome(&first_dodge);
            let mut ruled_outcome = recorded.clone();
            ruled_outcome["counted"] = json!(!counted_first);
            let final_line = lines[at_dodge + 2].strip_prefix(&format!("    final outcome after ruling #{ruled}: "));
            let final_json: Value = serde_json::from_str(final_line.expect("the final outcome")).expect("json");
            assert_eq!(final_json, ruled_outcome);
            let recorded_line =
                lines[at_dodge + 3].strip_prefix("    recorded outcome (overruled): ").expect("recorded");
            assert_eq!(serde_json::from_str::<Value>(recorded_line).expect("json"), recorded);
        }
    }
    assert_ne!(expected(ruled - 1), expected(ruled), "the ruling changed the state");
    let burnt = expected(head)["pokemon"]["pikachu"]["statuses"]["burn"].as_u64();
    assert!(burnt.is_some_and(|turns| turns > 0), "the planned burn lasts to the end: {:?}", expected(head));
}

/// `battlelog audit BATTLE --resolver URL --token <a reader's>` (the
/// server mode, not `--file`): a battle played through the services
/// verifies, exit 0; a battle whose `BattleOpened` was appended by hand
/// with an unsigned commitment does not, exit 1, and the report names the
/// finding at version 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn battlelog_audit_on_the_server_verifies_a_clean_battle_and_names_a_bad_commitment() {
    let stack = Stack::start("audit-server", false).await;
    let reader = TestAuth::shared().reader();
    let url = stack.resolver.url();
    let audit = |battle_id: &str| {
        let (code, stdout, stderr) =
            cli(&["audit", battle_id, "--resolver", &url, "--token", &reader, "--roller-key", ROLLER_KEY_HEX]);
        (code, format!("{stdout}{stderr}"))
    };

    let clean = "audited-clean";
    let mut resolver = resolver_client(&stack.resolver).await;
    open(&mut resolver, clean, "pbta-2d6@1", json!([{"id": "misty", "traits": {"cool": 1}}]), "clean").await;
    let mv = json!({"type": "move", "actor": "misty", "trait": "cool", "stakes": "the bridge"});
    act(&mut resolver, clean, &mv, "ac-1").await.expect("move");
    close(&mut resolver, clean).await;
    let (code, output) = audit(clean);
    assert_eq!(code, Some(0), "a clean battle verifies:\n{output}");
    assert!(output.contains(&format!("battle {clean} verifies")), "{output}");
    assert!(output.contains("1 roll re-derived, 1 action re-resolved, 0 findings"), "{output}");
    assert!(output.contains(&format!("roller key {ROLLER_KEY_HEX} signed")), "{output}");

    let forged = "audited-unsigned";
    let opened = pb::BattleOpened {
        ruleset: "pbta-2d6@1".into(),
        participants: vec![obj(json!({"id": "misty"}))],
        client_seed: "forged".into(),
        commitment: server_seed(forged, 0).commitment().to_string(),
        tenant: battlelog_test_support::auth::TEST_TENANT.into(),
        ..Default::default()
    };
    let mut journal = stack.journal_client().await;
    let event = battle::new_event(Event::BattleOpened(opened), String::new());
    battlelog_system_tests::append(&mut journal, forged, battlelog_system_tests::no_stream(), vec![event])
        .await
        .expect("the journal takes a well-formed BattleOpened from a service");
    let (code, output) = audit(forged);
    assert_eq!(code, Some(1), "an unsigned commitment does not verify:\n{output}");
    assert!(output.contains("version 0: signature: the commitment of epoch 0 has no signature"), "{output}");
    assert!(output.contains(&format!("battle {forged} DOES NOT VERIFY")), "{output}");
    assert!(output.contains("1 finding") && !output.contains("1 findings"), "{output}");
}

// ---------------------------------------------------------------------------
// 10. SIGTERM of the roller or the resolver with Acts in flight.
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Terminated {
    Roller,
    Resolver,
}

/// Acts on twelve battles at once, then SIGTERM to `which` the moment the
/// journal shows a roll whose Act is still to be answered. The service
/// exits 0; that Act is answered OK (a graceful shutdown drains what it
/// accepted); every Act answered OK is in the journal with the rolls it
/// returned; and every journaled roll belongs to a resolution — nothing was
/// cut off between the roll and its result.
async fn sigterm_with_acts_in_flight(which: Terminated) {
    let label = format!("sigterm-{which:?}").to_lowercase();
    let mut stack = Stack::start(&label, false).await;
    let battles: Vec<String> = (0..12).map(|i| format!("{label}-{i}")).collect();
    let client_seed = "sigterm";
    let mut resolver = resolver_client(&stack.resolver).await;
    for battle_id in &battles {
        open(&mut resolver, battle_id, "pbta-2d6@1", json!([{"id": "misty", "traits": {"cool": 1}}]), client_seed)
            .await;
    }
    // The process that takes the terminated one's place in the stack
    // (unused by the load, which keeps its connections).
    let replacement = match which {
        Terminated::Roller => stack.start_roller().await,
        Terminated::Resolver => stack.start_resolver(&stack.roller.url()).await,
    };

    let acked = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for battle_id in battles.clone() {
        let mut resolver = resolver_client(&stack.resolver).await;
        let acked = acked.clone();
        tasks.push(tokio::spawn(async move {
            let mut answered = Vec::new();
            for i in 0.. {
                let request_id = format!("{battle_id}-{i}");
                let action = json!({"type": "move", "actor": "misty", "trait": "cool", "stakes": request_id});
                let reply = act(&mut resolver, &battle_id, &action, &request_id).await;
                let done = reply.is_err();
                if reply.is_ok() {
                    acked.fetch_add(1, Ordering::Relaxed);
                }
                answered.push((battle_id.clone(), request_id, reply));
                if done {
                    return answered;
                }
            }
            unreachable!()
        }));
    }
    let counter = acked.clone();
    poll_until("Acts answered under load", WAIT, || {
        let counter = counter.clone();
        async move { (counter.load(Ordering::Relaxed) >= 18).then_some(()) }
    })
    .await;
    let mut journal = stack.journal_client().await;
    let from = battlelog_system_tests::global_head(&mut journal).await;
    let mut feed =
        journal.subscribe_all(pb::SubscribeAllRequest { from_position: from }).await.expect("subscribe").into_inner();
    let in_flight = loop {
        let next = tokio::time::timeout(WAIT, feed.message()).await.expect("the load goes on");
        let record = next.expect("feed").expect("open feed").event.expect("record");
        if record.event_type == "DiceRolled" {
            break record.idempotency_key;
        }
    };
    let terminated = match which {
        Terminated::Roller => std::mem::replace(&mut stack.roller, replacement),
        Terminated::Resolver => std::mem::replace(&mut stack.resolver, replacement),
    };
    assert!(terminated.terminate().await, "the {which:?} exits 0 after SIGTERM");
    drop(feed);

    let mut attempts = Vec::new();
    for task in tasks {
        attempts.extend(task.await.expect("load task"));
    }
    let in_flight = in_flight.strip_prefix("roll:act:").and_then(|k| k.strip_suffix(":0")).expect("an Act's roll key");
    let (_, _, reply) = attempts.iter().find(|(_, id, _)| id == in_flight).expect("the Act in flight was sent");
    assert!(reply.is_ok(), "{in_flight}, in flight at the SIGTERM, is answered: {reply:?}");
    for battle_id in &battles {
        let events = journaled(&stack, battle_id).await;
        let mut answered = 0;
        for (_, request_id, reply) in attempts.iter().filter(|(b, _, _)| b == battle_id) {
            match reply {
                Ok(reply) => {
                    assert_reply_rolls_journaled(battle_id, reply, &events);
                    answered += 1;
                }
                Err(status) => {
                    assert_ne!(status.code(), Code::InvalidArgument, "{request_id}: {status:?}");
                    if which == Terminated::Roller {
                        assert_eq!(status.code(), Code::Unavailable, "{request_id}: the roller is gone: {status:?}");
                        assert!(status.message().starts_with("roller is unavailable"), "{status:?}");
                    }
                }
            }
        }
        assert_nonces_consecutive(battle_id, &events);
        let resolutions = resolutions_of(&events);
        assert_eq!(resolutions.len(), answered, "{battle_id}: a resolution for each Act answered OK, no other");
        let mut used: Vec<u64> = resolutions.iter().flat_map(|(_, _, r)| r.rolls.clone()).collect();
        used.sort_unstable();
        let rolled: Vec<u64> = rolls_of(&events).iter().map(|(_, roll)| roll.nonce).collect();
        assert_eq!(used, rolled, "{battle_id}: every journaled roll has its resolution");
        for (_, roll) in rolls_of(&events) {
            assert_rederives(battle_id, client_seed, &roll);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigterm_of_the_resolver_with_acts_in_flight_loses_no_acknowledged_result() {
    sigterm_with_acts_in_flight(Terminated::Resolver).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigterm_of_the_roller_with_acts_in_flight_loses_no_acknowledged_result() {
    sigterm_with_acts_in_flight(Terminated::Roller).await;
}
