//! Roll-forward (ARCHITECTURE.md, invariant 8, issue 35): a journaled roll is
//! never abandoned. Once an action's roll is in the journal, that action is
//! resolved with it, whoever goes away: a caller that cancels, times out or
//! disappears cannot get a different roll for the same action by asking
//! again with a new request id, and no one acts in the battle until the
//! pending action is resolved.
//!
//! The real `battlelog-journal`, `battlelog-roller` and `battlelog-resolver`
//! binaries as separate processes on loopback, real sled on disk. A pending
//! action is made the way a crashed resolver leaves one: the roller is asked
//! exactly what the resolver asks it (the action journaled with its first
//! roll), and nothing resolves it.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use battlelog_proto::v1 as pb;
use battlelog_proto::v1::battle_event::Event;
use battlelog_test_support::journal_client;
use battlelog_test_support::stack::*;
use battlelog_test_support::{StartOptions, TestAuth, poll_until};
use serde_json::{Value, json};
use tonic::Code;

/// A resolver whose sweeper does not come during the test: only the next
/// command may finish a pending action.
fn no_sweep() -> StartOptions {
    StartOptions {
        envs: vec![("BATTLELOG_RESOLVER_PENDING_SWEEP_MS".into(), "3600000".into())],
        ..StartOptions::default()
    }
}

fn attack() -> Value {
    json!({"type": "attack", "actor": "pikachu", "target": "meowth", "move": "Thunderbolt", "power": 90})
}

/// The forum's credential as the resolver records it for the test tenant's
/// forum token.
fn forum_credential(events: &[Journaled]) -> pb::Credential {
    resolutions_of(events).first().and_then(|(_, _, r)| r.credential.clone()).expect("a resolution's credential")
}

/// Asks the roller for `request_id`'s power die exactly as the resolver's
/// `Act` does — the action journaled with its first roll — and leaves it
/// there: the state a resolver that crashed right after the roll leaves.
async fn roll_and_leave(
    stack: &Stack,
    battle_id: &str,
    request_id: &str,
    action: &prost_types::Struct,
    credential: &pb::Credential,
) -> pb::RecordedRoll {
    let mut roller = stack.roller_client().await;
    let rolled = roller
        .roll(pb::RollRequest {
            battle_id: battle_id.into(),
            rolls: vec![pb::RollSpec { expression: "1d6".into(), purpose: "power die".into() }],
            actor: "pikachu".into(),
            request_id: format!("act:{request_id}"),
            expected_head: None,
            for_action: Some(pb::RequestedAction {
                action: Some(action.clone()),
                credential: Some(credential.clone()),
            }),
        })
        .await
        .expect("the roll a resolver asked for before it went away")
        .into_inner();
    assert!(!rolled.replayed);
    rolled.rolls.into_iter().next().expect("one roll")
}

async fn pending_in_journal(stack: &Stack) -> Vec<pb::PendingAction> {
    let mut journal = stack.journal_client().await;
    journal
        .list_pending_actions(pb::PendingActionsRequest::default())
        .await
        .expect("ListPendingActions")
        .into_inner()
        .pending
}

/// The journal refuses any event but the action's own resolution over a
/// pending action (reason `ACTION_PENDING`), and lists the battle as
/// pending; the next command of the battle — whatever its request id —
/// first resolves the pending action with exactly its journaled dice and
/// its own caller's credential, under its own request's key; the caller's
/// retry then gets that resolution, and the new request rolls anew after
/// it. The same holds for a dispute, a ruling, a judge's reveal and a
/// close. Every roll is resolved right after itself, and the audit is clean.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_pending_action_is_finished_with_its_dice_before_the_next_command() {
    let stack = Stack::start_with("roll-forward", false, &no_sweep()).await;
    let battle_id = "roll-forward";
    let mut forum = resolver_client(&stack.resolver).await;
    open(&mut forum, battle_id, "pokemon-d6@1", json!([{"id": "pikachu"}, {"id": "meowth"}]), "rf").await;
    act(&mut forum, battle_id, &attack(), "first").await.expect("a first attack");
    let events = journaled(&stack, battle_id).await;
    // The attack as the resolver records it: what its Act journals with its
    // roll.
    let recorded_attack = resolutions_of(&events)[0].2.action.clone().expect("the recorded action");
    let credential = forum_credential(&events);

    let left = roll_and_leave(&stack, battle_id, "left-1", &recorded_attack, &credential).await;
    let left_roll = left.roll.clone().expect("dice");
    assert_eq!(left_roll.for_action.as_ref().and_then(|a| a.action.as_ref()), Some(&recorded_attack));
    let listed = pending_in_journal(&stack).await;
    assert_eq!(
        listed.iter().map(|p| (p.battle_id.as_str(), p.version)).collect::<Vec<_>>(),
        vec![(battle_id, left.version)],
        "the journal lists the battle's pending action"
    );

    // Nothing but the action's resolution goes on top of it.
    let mut journal = stack.journal_client().await;
    let dispute = battlelog_proto::battle::new_event(
        Event::DisputeRaised(pb::DisputeRaised { by: "meowth".into(), refers_to: 2, ..Default::default() }),
        "dispute:sneaked-in".into(),
    );
    let refused = journal
        .append(pb::AppendRequest {
            stream_id: battle_id.into(),
            expected_version: journal_client::exact(Some(left.version)),
            events: vec![dispute],
        })
        .await
        .expect_err("an event over a pending action");
    assert_eq!(refused.code(), Code::FailedPrecondition, "{refused:?}");
    assert_eq!(journal_client::error_reason(&refused), "ACTION_PENDING", "{refused:?}");

    // A new request id — the hostile forum's re-roll — gets a new roll only
    // after the pending action is resolved with its own.
    let dodge = json!({"type": "dodge", "actor": "meowth"});
    let other = act(&mut forum, battle_id, &dodge, "other-2").await.expect("the next Act");
    let events = journaled(&stack, battle_id).await;
    let at = |version: u64| &events[version as usize];
    let Event::ActionResolved(finished) = &at(left.version + 1).event else {
        panic!("the pending action's resolution right after its roll: {:?}", at(left.version + 1).event)
    };
    assert_eq!(at(left.version + 1).key(), "act:left-1", "under its own request's key");
    assert_eq!(finished.rolls, vec![left_roll.nonce], "with exactly its journaled die");
    assert_eq!(finished.action.as_ref(), Some(&recorded_attack));
    assert_eq!(finished.credential.as_ref(), Some(&credential), "credited to whoever asked for it");
    assert_eq!(other.rolls[0].roll.as_ref().expect("roll").nonce, left_roll.nonce + 1, "the new request rolls after");
    assert!(pending_in_journal(&stack).await.is_empty(), "nothing pending once resolved");

    // The caller who went away retries: the roll it left, resolved.
    let retried = act(&mut forum, battle_id, &attack(), "left-1").await.expect("the retry");
    assert_eq!(retried.rolls, vec![left], "the retry gets the journaled roll");
    assert_eq!(retried.version, left_roll_version(&events, "act:left-1"));

    // A dispute, a ruling, a judge's reveal and a close each finish a
    // pending action first too.
    let mut judge = judge_client(&stack.resolver).await;
    for (i, command) in ["dispute", "rule", "reveal", "close"].into_iter().enumerate() {
        let request_id = format!("left-{}", i + 3);
        let rolled = roll_and_leave(&stack, battle_id, &request_id, &recorded_attack, &credential).await;
        let answered = match command {
            "dispute" => forum
                .dispute(pb::DisputeRequest {
                    battle_id: battle_id.into(),
                    by: "meowth".into(),
                    refers_to: 2,
                    reason: "too strong".into(),
                    request_id: "d-1".into(),
                    ..Default::default()
                })
                .await
                .map(drop),
            "rule" => judge
                .rule(pb::RuleRequest {
                    battle_id: battle_id.into(),
                    refers_to: 2,
                    text: "stands".into(),
                    request_id: "r-1".into(),
                    ..Default::default()
                })
                .await
                .map(drop),
            "reveal" => judge
                .reveal_seed(pb::RevealSeedRequest { battle_id: battle_id.into(), request_id: "s-1".into() })
                .await
                .map(drop),
            _ => {
                close(&mut forum, battle_id).await;
                Ok(())
            }
        };
        answered.unwrap_or_else(|s| panic!("{command} over a pending action: {s:?}"));
        let events = journaled(&stack, battle_id).await;
        let next = &events[rolled.version as usize + 1];
        assert_eq!(next.key(), format!("act:{request_id}"), "{command}: the pending action first");
        assert!(matches!(next.event, Event::ActionResolved(_)), "{command}: {:?}", next.event);
    }

    let events = journaled(&stack, battle_id).await;
    assert_nonces_consecutive(battle_id, &events);
    assert_each_roll_resolved_right_after(battle_id, &events);
    assert_audit_rpc_ok(&mut forum, battle_id, events.len()).await;
    let export = stack.dir.path().join("roll-forward.jsonl");
    export_full_to(&stack.resolver.url(), battle_id, &export);
    assert_audit_file_clean(&export, battle_id, ROLLER_KEY_HEX);
}

/// The version of the resolution journaled under `key`.
fn left_roll_version(events: &[Journaled], key: &str) -> u64 {
    events.iter().find(|e| e.key() == key).map(Journaled::version).expect("a resolution under the key")
}

/// Every roll drawn for an action (`for_action`) is followed by that
/// action's other rolls and then its resolution, which uses exactly them:
/// the number of rolls equals the number of rolls resolved, and none is
/// left behind.
fn assert_each_roll_resolved_right_after(battle_id: &str, events: &[Journaled]) {
    let mut pending: Option<Vec<u64>> = None;
    let (mut rolled, mut resolved) = (0, 0);
    for e in events {
        match (&e.event, &mut pending) {
            (Event::DiceRolled(roll), _) if roll.for_action.is_some() => {
                assert!(pending.is_none(), "{battle_id} v{}: a roll over a pending action", e.version());
                pending = Some(vec![roll.nonce]);
                rolled += 1;
            }
            (Event::DiceRolled(roll), Some(nonces)) => {
                nonces.push(roll.nonce);
                rolled += 1;
            }
            (Event::ActionResolved(r), _) => {
                if let Some(nonces) = pending.take() {
                    assert_eq!(r.rolls, nonces, "{battle_id} v{}: resolved with its own rolls", e.version());
                    resolved += nonces.len();
                }
            }
            (event, Some(_)) => panic!("{battle_id} v{}: {event:?} over a pending action", e.version()),
            _ => {}
        }
    }
    assert!(pending.is_none(), "{battle_id}: an action left pending at the end");
    assert_eq!(rolled, resolved, "{battle_id}: every roll resolved");
}

/// A battle nobody touches after its resolver went away is finished by the
/// sweeper of a resolver that never saw the roll (the journal lists it).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_sweeper_finishes_an_action_of_a_battle_nobody_touches() {
    let options = StartOptions {
        envs: vec![
            ("BATTLELOG_RESOLVER_PENDING_SWEEP_MS".into(), "100".into()),
            ("BATTLELOG_RESOLVER_PENDING_GRACE_MS".into(), "0".into()),
        ],
        ..StartOptions::default()
    };
    let stack = Stack::start_with("sweep", false, &options).await;
    let battle_id = "swept";
    let mut forum = resolver_client(&stack.resolver).await;
    open(&mut forum, battle_id, "pokemon-d6@1", json!([{"id": "pikachu"}, {"id": "meowth"}]), "sweep").await;
    act(&mut forum, battle_id, &attack(), "first").await.expect("a first attack");
    let events = journaled(&stack, battle_id).await;
    let recorded_attack = resolutions_of(&events)[0].2.action.clone().expect("the recorded action");
    let left = roll_and_leave(&stack, battle_id, "left", &recorded_attack, &forum_credential(&events)).await;
    let events = poll_until("the sweeper's resolution", WAIT, || async {
        let events = journaled(&stack, battle_id).await;
        (events.len() as u64 > left.version + 1).then_some(events)
    })
    .await;
    assert_eq!(events[left.version as usize + 1].key(), "act:left");
    assert_each_roll_resolved_right_after(battle_id, &events);
    assert!(pending_in_journal(&stack).await.is_empty());
}

/// A small deterministic generator (xorshift64*): the load's choices are
/// random but repeatable from the seed printed on failure.
struct Random(u64);

impl Random {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

/// What one request id was answered, across all its tries.
type Seen = HashMap<String, Vec<Vec<pb::RecordedRoll>>>;

/// 1 000 `Act`s from hostile forums: each is cut off at a random point
/// (a deadline the server enforces, or the client going away), then either
/// retried with its request id or abandoned for a new one — the re-roll a
/// forum would try; meanwhile the resolver and the roller are each killed
/// -9 and restarted. Afterwards every battle holds as many resolved rolls
/// as rolls, each resolved right after itself, no request id ever saw two
/// different rolls, and every battle audits clean.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cancelled_and_killed_acts_never_roll_twice_and_leave_no_roll_behind() {
    const BATTLES: usize = 8;
    const ACTS: usize = 1000;
    let options = StartOptions {
        envs: vec![
            ("BATTLELOG_RESOLVER_PENDING_SWEEP_MS".into(), "200".into()),
            ("BATTLELOG_RESOLVER_PENDING_GRACE_MS".into(), "500".into()),
            // The load is one tenant's thousands of calls in seconds: the
            // tenant's rate limit (tested in tests/edges.rs) would only slow
            // it down.
            ("BATTLELOG_RESOLVER_RATE_LIMIT_PER_SEC".into(), "0".into()),
        ],
        ..StartOptions::default()
    };
    let mut stack = Stack::start_with("reroll", false, &options).await;
    let answered = Arc::new(AtomicUsize::new(0));
    let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock").as_nanos() as u64 | 1;
    println!("load seed {seed}");
    let mut forum = resolver_client(&stack.resolver).await;
    let battles: Vec<String> = (0..BATTLES).map(|b| format!("reroll-{b}")).collect();
    for battle_id in &battles {
        open(&mut forum, battle_id, "pbta-2d6@1", json!([{"id": "misty"}, {"id": "brock"}]), "reroll").await;
    }

    let mut seen: Seen = HashMap::new();
    let mut random = Random(seed);
    let mut cut_off = 0;
    for round in 0..3 {
        // Each round: the battles acted on at once, ACTS / 3 Acts in all.
        let per_battle = ACTS / 3 / BATTLES;
        let mut tasks = Vec::new();
        for (b, battle_id) in battles.iter().enumerate() {
            let battle_id = battle_id.clone();
            let mut random = Random(random.below(u64::MAX) | 1);
            let answered = answered.clone();
            // Each forum its own connection, which outlives the restarts
            // (they keep the port).
            let mut forum = resolver_as(&stack.resolver, &TestAuth::shared().forum()).await;
            tasks.push(tokio::spawn(async move {
                let mut seen: Seen = HashMap::new();
                let mut cut = 0;
                for i in 0..per_battle {
                    let action = json!({"type": "move", "actor": "misty", "trait": "cool", "stakes": format!("{b}-{round}-{i}")});
                    let mut request_id = format!("r{round}-b{b}-{i}");
                    // Tries until answered: after a cut, the same id or, as
                    // a hostile forum would, a new one for the same action.
                    for attempt in 0.. {
                        let deadline = match random.below(4) {
                            0 => None,
                            _ => Some(Duration::from_micros(random.below(4000))),
                        };
                        let mut request = tonic::Request::new(pb::ActRequest {
                            battle_id: battle_id.clone(),
                            action: Some(obj(action.clone())),
                            request_id: request_id.clone(),
                            ..Default::default()
                        });
                        let answer = match (deadline, random.below(2)) {
                            (Some(deadline), 0) => {
                                // The server's deadline: the handler is cancelled.
                                request.set_timeout(deadline);
                                forum.act(request).await.map_err(|s| s.code())
                            }
                            (Some(deadline), _) => {
                                // The client goes away: the call is dropped.
                                match tokio::time::timeout(deadline, forum.act(request)).await {
                                    Ok(answer) => answer.map_err(|s| s.code()),
                                    Err(_) => Err(Code::Cancelled),
                                }
                            }
                            (None, _) => forum.act(request).await.map_err(|s| s.code()),
                        };
                        match answer {
                            Ok(reply) => {
                                seen.entry(request_id.clone()).or_default().push(reply.into_inner().rolls);
                                answered.fetch_add(1, Ordering::Relaxed);
                                break;
                            }
                            Err(code) => {
                                assert_ne!(code, Code::InvalidArgument, "{request_id}");
                                cut += 1;
                                if attempt > 200 {
                                    panic!("{request_id}: never answered (last: {code:?})");
                                }
                                if random.below(2) == 0 {
                                    request_id = format!("r{round}-b{b}-{i}-again{attempt}");
                                }
                                if matches!(code, Code::Unavailable | Code::Unknown | Code::Internal) {
                                    // A service is being restarted: a forum
                                    // backs off before it tries again.
                                    tokio::time::sleep(Duration::from_millis(20)).await;
                                }
                            }
                        }
                    }
                }
                (seen, cut)
            }));
        }
        // Mid-round, once the load is under way: kill -9 one service and
        // start it again in place.
        if round < 2 {
            let from = answered.load(Ordering::Relaxed);
            let counter = answered.clone();
            poll_until("Acts answered under load", WAIT, || {
                let counter = counter.clone();
                async move { (counter.load(Ordering::Relaxed) >= from + 2 * BATTLES).then_some(()) }
            })
            .await;
            match round {
                0 => stack.restart_resolver_in_place(&options).await,
                _ => stack.restart_roller_in_place().await,
            }
        }
        for task in tasks {
            let (task_seen, cut) = task.await.expect("a forum's load");
            cut_off += cut;
            for (id, answers) in task_seen {
                seen.entry(id).or_default().extend(answers);
            }
        }
    }
    println!("{cut_off} calls cut off");
    assert!(cut_off > 0, "no call was cut off: the test tested nothing");

    // Whatever is still pending is the sweeper's.
    poll_until("no action pending", WAIT, || async { pending_in_journal(&stack).await.is_empty().then_some(()) }).await;
    let mut forum = resolver_client(&stack.resolver).await;
    let mut rolls_by_request: HashMap<String, HashSet<u64>> = HashMap::new();
    for battle_id in &battles {
        let events = journaled(&stack, battle_id).await;
        assert_nonces_consecutive(battle_id, &events);
        assert_each_roll_resolved_right_after(battle_id, &events);
        for (version, roll) in rolls_of(&events) {
            let key = events[version as usize].key().to_owned();
            rolls_by_request.entry(format!("{battle_id}/{key}")).or_default().insert(roll.nonce);
        }
        assert_audit_rpc_ok(&mut forum, battle_id, events.len()).await;
    }
    for (request_id, answers) in &seen {
        let distinct: HashSet<Vec<u64>> = answers
            .iter()
            .map(|rolls| rolls.iter().filter_map(|r| r.roll.as_ref().map(|d| d.nonce)).collect())
            .collect();
        assert_eq!(distinct.len(), 1, "{request_id}: answered with different rolls {answers:?}");
    }
    assert!(rolls_by_request.values().all(|nonces| nonces.len() == 1), "a request key rolled twice");
}
