//! Replay to a version, and the audit of a battle on the server.

use std::collections::BTreeMap;

use battlelog_proto::battle;
use battlelog_proto::v1 as pb;
use battlelog_proto::v1::battle_event::Event;
use battlelog_test_support::TestAuth;
use battlelog_test_support::journal_client;
use battlelog_test_support::stack::*;
use serde_json::{Value, json};
use tonic::Code;

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
    let client_seed =
        client_seed_where(battle_id, "replay to a version, thread ", |d6| d6(0) != 6 && d6(1) >= 5 && d6(2) > 1);
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
    journal_client::append(&mut journal, forged, journal_client::no_stream(), vec![event])
        .await
        .expect("the journal takes a well-formed BattleOpened from a service");
    let (code, output) = audit(forged);
    assert_eq!(code, Some(1), "an unsigned commitment does not verify:\n{output}");
    assert!(output.contains("version 0: signature: the commitment of epoch 0 has no signature"), "{output}");
    assert!(output.contains(&format!("battle {forged} DOES NOT VERIFY")), "{output}");
    assert!(output.contains("1 finding") && !output.contains("1 findings"), "{output}");
}
