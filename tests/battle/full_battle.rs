//! A full battle of each ruleset, audited, and fanned out over NATS.
//!
//!
//! Every action's expected outcome is worked out here from the faces the test
//! derives itself (docs/protocol.md §1–3, from the master key it gave the roller)
//! and docs/rules.md's tables, written out below without the rules crate: the
//! resolver's Audit re-resolves with the same rules code, so only this can
//! catch a rules error.

use std::collections::HashMap;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use battlelog_proto::battle;
use battlelog_proto::v1 as pb;
use battlelog_proto::v1::battle_event::Event;
use battlelog_test_support::stack::*;
use serde_json::{Value, json};
use tonic::Code;

use crate::rules_tables::*;

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
pub(crate) fn check_export_fields(battle_id: &str, export: &str, events: &[Journaled]) {
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
