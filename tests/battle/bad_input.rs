//! Invariant 1 and bad input.

use battlelog_proto::battle;
use battlelog_proto::v1 as pb;
use battlelog_proto::v1::roller_client::RollerClient;
use battlelog_test_support::TestAuth;
use battlelog_test_support::journal_client::invalid_field;
use battlelog_test_support::journal_faults::{Call, Fault, FaultyJournal, sigkill};
use battlelog_test_support::stack::*;
use serde_json::{Value, json};
use tonic::Code;

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

    // The journal dies at the append: a second roller reaches it through a
    // FaultyJournal that passes every call through but SIGKILLs the real
    // journal when the first Append reaches it, and passes that append on
    // once the journal is gone: the journal dies exactly at the append,
    // after serving the reads that led up to it.
    stack.restart_journal(&[]).await;
    let dying = FaultyJournal::new(&stack.journal.url());
    dying.plan(Call::Append, Fault::Before(sigkill(stack.journal.pid(), stack.journal.addr())));
    let dying_url = dying.serve().await;
    let roller_data = stack.dir.path().join("roller-of-the-dying");
    let witness_process = battlelog_test_support::roller(&roller_data, &dying_url, Some(MASTER_KEY_HEX)).await;
    let mut witness = RollerClient::new(witness_process.authed(&TestAuth::shared().service_token()).await);
    let status = witness.roll(request.clone()).await.expect_err("no faces: the journal died at the append");
    assert_eq!(dying.injected(), 1, "the call reached the append");
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
