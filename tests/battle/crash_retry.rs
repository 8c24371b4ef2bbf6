//! A crash between the roll and the resolution, then a retry.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use battlelog_proto::v1 as pb;
use battlelog_test_support::journal_client;
use battlelog_test_support::stack::*;
use battlelog_test_support::until_counted;
use serde_json::json;
use tonic::Code;

use crate::rules_tables::*;

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
        until_counted("answered Acts under load", WAIT, &acked, 24).await;
        let roller_url = stack.roller.url();
        let restarted = stack.start_resolver(&roller_url).await;
        // Aim the kill between a roll and its resolution: the moment the
        // journal shows a new roll, the resolver that asked for it is still
        // to resolve.
        let mut journal = stack.journal_client().await;
        let head = journal_client::head(&mut journal, battle_id).await.expect("head");
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
