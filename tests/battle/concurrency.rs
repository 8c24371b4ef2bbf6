//! Concurrent Acts, replicas, retry storms.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use battlelog_proto::battle;
use battlelog_proto::v1 as pb;
use battlelog_test_support::stack::*;
use serde_json::{Value, json};
use tonic::{Code, Status};

use crate::rules_tables::*;

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

/// 16 Acts at once, the `t`-th on `resolvers[t % len]` with the action and
/// request id `action(t)` gives, each retried while ABORTED: every Act's
/// result in `t` order, and how many ABORTED retries there were.
async fn sixteen_acts_at_once(
    resolvers: &[&battlelog_test_support::ServiceProcess],
    battle_id: &str,
    action: impl Fn(usize) -> (Value, String),
) -> (Vec<Result<pb::ActResponse, Status>>, usize) {
    let aborted = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for t in 0..16 {
        let mut resolver = resolver_client(resolvers[t % resolvers.len()]).await;
        let (battle_id, aborted, (action, request_id)) = (battle_id.to_owned(), aborted.clone(), action(t));
        tasks.push(tokio::spawn(async move {
            act_until_decided(&mut resolver, &battle_id, &action, &request_id, &aborted).await
        }));
    }
    let mut results = Vec::new();
    for task in tasks {
        results.push(task.await.expect("task"));
    }
    (results, aborted.load(Ordering::Relaxed))
}

/// 16 concurrent dodges by one Pokémon on each of `resolvers`: each succeeds
/// or is rejected by the rules; never more than docs/rules.md's 5 counted
/// dodges; `dodges_left` follows journal order; nonces consecutive.
async fn concurrent_dodges(stack: &Stack, resolvers: &[&battlelog_test_support::ServiceProcess], battle_id: &str) {
    let client_seed = "dodge storm";
    let mut first = resolver_client(resolvers[0]).await;
    open(&mut first, battle_id, "pokemon-d6@1", json!([{"id": "pikachu"}, {"id": "meowth"}]), client_seed).await;
    let dodge = json!({"type": "dodge", "actor": "meowth", "incoming_damage": 100});
    let (results, aborted) =
        sixteen_acts_at_once(resolvers, battle_id, |t| (dodge.clone(), format!("dodge-{t}"))).await;
    let mut accepted = Vec::new();
    let mut rejected = 0;
    for result in results {
        match result {
            Ok(reply) => accepted.push(reply),
            Err(status) => {
                assert_eq!(status.code(), Code::FailedPrecondition, "only rule rejections: {status:?}");
                assert!(status.message().contains("dodge"), "the rejection names the rule: {status:?}");
                rejected += 1;
            }
        }
    }
    if resolvers.len() == 1 {
        assert_eq!(aborted, 0, "one replica serialises its commands without conflicts");
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
    let (results, _) = sixteen_acts_at_once(resolvers, battle_id, |t| {
        (json!({"type": "move", "actor": "misty", "trait": "cool", "stakes": format!("{t}")}), format!("move-{t}"))
    })
    .await;
    let replies: Vec<_> = results.into_iter().map(|r| r.expect("a move is never rejected")).collect();
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
