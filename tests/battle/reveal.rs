//! A reveal mid-battle.

use battlelog_proto::v1 as pb;
use battlelog_proto::v1::battle_event::Event;
use battlelog_test_support::stack::*;
use serde_json::json;

use crate::full_battle::check_export_fields;

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
