//! SIGTERM of the roller or the resolver with Acts in flight.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use battlelog_proto::v1 as pb;
use battlelog_test_support::journal_client;
use battlelog_test_support::stack::*;
use battlelog_test_support::until_counted;
use serde_json::json;
use tonic::Code;

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
    until_counted("Acts answered under load", WAIT, &acked, 18).await;
    let mut journal = stack.journal_client().await;
    let from = journal_client::global_head(&mut journal).await;
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
