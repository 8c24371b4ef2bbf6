//! The resolver over a real roller and journal (sled in a temp dir, gRPC on
//! 127.0.0.1:0): a battle played through the API, retries that never roll
//! again, rules that refuse before any die is drawn, replay and audit.

use battlelog_proto::battle::{json_to_struct, struct_to_json};
use battlelog_proto::v1::journal_client::JournalClient;
use battlelog_proto::v1::resolver_client::ResolverClient;
use battlelog_proto::v1::{
    ActRequest, AuditRequest, CloseRequest, DisputeRequest, GetBattleRequest, OpenBattleRequest, ReadStreamRequest,
    RuleRequest,
};
use battlelog_resolver::audit::{AuditedRecord, Check, audit};
use battlelog_roller::{MasterKey, RollerService};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tonic::Code;
use tonic::transport::{Channel, Endpoint};

const MASTER_KEY: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

struct Stack {
    journal: JournalClient<Channel>,
    resolver: ResolverClient<Channel>,
    _dir: tempfile::TempDir,
}

async fn listen() -> (TcpListener, String) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    (listener, url)
}

fn channel(url: &str) -> Channel {
    Endpoint::from_shared(url.to_owned()).expect("url").connect_lazy()
}

async fn stack() -> Stack {
    let dir = tempfile::tempdir().expect("temp dir");
    let journal = battlelog_journal::Journal::open(battlelog_journal::JournalOptions::new(dir.path()))
        .await
        .expect("journal opens");
    let (listener, journal_url) = listen().await;
    tokio::spawn(battlelog_journal::serve(journal, listener, std::future::pending()));
    let roller =
        RollerService::new(JournalClient::new(channel(&journal_url)), MasterKey::from_hex(MASTER_KEY).expect("key"));
    let (listener, roller_url) = listen().await;
    tokio::spawn(battlelog_roller::serve(roller, listener, std::future::pending()));
    let config = battlelog_resolver::Config { journal_url: journal_url.clone(), roller_url, ..Default::default() };
    let (listener, resolver_url) = listen().await;
    let service = battlelog_resolver::server::service(&config).expect("service");
    tokio::spawn(battlelog_resolver::serve(service, listener, std::future::pending()));
    Stack {
        journal: JournalClient::new(channel(&journal_url)),
        resolver: ResolverClient::new(channel(&resolver_url)),
        _dir: dir,
    }
}

fn object(value: Value) -> prost_types::Struct {
    match value {
        Value::Object(fields) => json_to_struct(&fields),
        other => panic!("not an object: {other}"),
    }
}

async fn open(stack: &mut Stack, battle_id: &str, ruleset: &str, participants: Value) {
    let participants = participants.as_array().expect("array").iter().cloned().map(object).collect();
    stack
        .resolver
        .open_battle(OpenBattleRequest {
            ruleset: ruleset.into(),
            title: "test".into(),
            forum_ref: "forum:test/1".into(),
            participants,
            client_seed: "forum:test/1".into(),
            request_id: format!("open-{battle_id}"),
            battle_id: battle_id.into(),
        })
        .await
        .expect("opens");
}

fn act(battle_id: &str, request_id: &str, action: Value) -> ActRequest {
    ActRequest { battle_id: battle_id.into(), action: Some(object(action)), request_id: request_id.into() }
}

async fn exported(stack: &mut Stack, battle_id: &str) -> Vec<AuditedRecord> {
    let events = stack
        .journal
        .read_stream(ReadStreamRequest { stream_id: battle_id.into(), from_version: 0, max_count: 0 })
        .await
        .expect("read")
        .into_inner()
        .events;
    events
        .into_iter()
        .map(|e| AuditedRecord {
            stream: battle_id.into(),
            version: e.event.as_ref().expect("record").version,
            hash: e.hash,
            record: e.record,
            event: None,
        })
        .collect()
}

#[tokio::test]
async fn a_pokemon_battle_plays_closes_and_audits_clean() {
    let mut stack = stack().await;
    open(&mut stack, "pk", "pokemon-d6@1", json!([{"id": "pikachu"}, {"id": "meowth"}])).await;
    let attack = json!({"type": "attack", "actor": "pikachu", "target": "meowth", "move": "Thunderbolt", "power": 90});
    let response = stack.resolver.act(act("pk", "a1", attack)).await.expect("attack").into_inner();
    let resolved = response.resolved.expect("resolved");
    assert_eq!(resolved.rolls, vec![0], "one power die at nonce 0");
    assert_eq!(response.rolls.len(), 1);
    let outcome = Value::Object(struct_to_json(resolved.outcome.as_ref().expect("outcome")));
    assert!(outcome.get("result").is_some(), "{outcome}");
    assert!(!resolved.summary_ru.is_empty() && !resolved.summary_en.is_empty());

    let dodge = json!({"type": "dodge", "actor": "meowth", "incoming_damage": 90});
    stack.resolver.act(act("pk", "d1", dodge)).await.expect("dodge");
    let state = stack
        .resolver
        .get_battle(GetBattleRequest { battle_id: "pk".into(), at_version: None })
        .await
        .expect("get")
        .into_inner();
    assert_eq!(state.next_nonce, 2);
    assert!(!state.closed);

    stack
        .resolver
        .dispute(DisputeRequest {
            battle_id: "pk".into(),
            by: "meowth".into(),
            refers_to: 2,
            reason: "lag".into(),
            request_id: "x1".into(),
        })
        .await
        .expect("dispute");
    stack
        .resolver
        .rule(RuleRequest {
            battle_id: "pk".into(),
            judge: "oak".into(),
            refers_to: 2,
            text: "stands".into(),
            r#override: None,
            request_id: "j1".into(),
        })
        .await
        .expect("ruling");
    stack
        .resolver
        .close(CloseRequest {
            battle_id: "pk".into(),
            by: "oak".into(),
            reason: "done".into(),
            request_id: "c1".into(),
        })
        .await
        .expect("close");
    let after = stack.resolver.act(act("pk", "late", json!({"type": "pass", "actor": "pikachu"}))).await;
    assert_eq!(after.expect_err("closed").code(), Code::FailedPrecondition);

    let report = stack.resolver.audit(AuditRequest { battle_id: "pk".into() }).await.expect("audit").into_inner();
    assert!(report.ok, "{:?}", report.findings);
    let local = audit("pk", &exported(&mut stack, "pk").await);
    assert!(local.ok(), "{:?}", local.findings);
    assert_eq!(local.rolls_verified, 2);
    assert_eq!(local.actions_verified, 2);
}

#[tokio::test]
async fn a_retried_act_returns_the_recorded_resolution() {
    let mut stack = stack().await;
    open(&mut stack, "pb", "pbta-2d6@1", json!([{"id": "ash", "traits": {"cool": 1}}])).await;
    let action = json!({"type": "move", "actor": "ash", "trait": "cool", "stakes": "the bridge"});
    let first = stack.resolver.act(act("pb", "m1", action.clone())).await.expect("act").into_inner();
    for _ in 0..3 {
        let again = stack.resolver.act(act("pb", "m1", action.clone())).await.expect("retry").into_inner();
        assert_eq!(again, first);
    }
    assert_eq!(
        exported(&mut stack, "pb").await.len(),
        3,
        "opened, one 2d6 roll, one resolution: the retries added nothing"
    );
}

#[tokio::test]
async fn the_rules_refuse_before_any_die_is_drawn() {
    let mut stack = stack().await;
    open(&mut stack, "ar", "arcana-2d10@1", json!([{"id": "mage", "abilities": {"field": {"per_episode": 1}}}])).await;
    let cast =
        |post: &str| json!({"type": "cast", "actor": "mage", "ability": "field", "skill_points": 5, "post": post});
    stack.resolver.act(act("ar", "c1", cast("p1"))).await.expect("first cast");
    let before = exported(&mut stack, "ar").await.len();
    let refused = stack.resolver.act(act("ar", "c2", cast("p2"))).await.expect_err("used up");
    assert_eq!(refused.code(), Code::FailedPrecondition);
    assert!(refused.message().contains("used up"), "{}", refused.message());
    assert_eq!(exported(&mut stack, "ar").await.len(), before, "no die was drawn, nothing journaled");

    let invalid =
        stack.resolver.act(act("ar", "c3", json!({"type": "cast", "actor": "mage"}))).await.expect_err("invalid");
    assert_eq!(invalid.code(), Code::InvalidArgument);
    let missing = stack.resolver.act(act("nope", "c4", cast("p"))).await.expect_err("no battle");
    assert_eq!(missing.code(), Code::NotFound);
}

#[tokio::test]
async fn the_audit_names_the_version_of_each_tampering() {
    let mut stack = stack().await;
    open(&mut stack, "bz", "berserk@1", json!([{"id": "a"}, {"id": "b"}])).await;
    let strike = json!({"type": "strike", "attacker": {"id": "a"}, "defender": {"id": "b"}, "kind": "simple"});
    for i in 0..3 {
        stack.resolver.act(act("bz", &format!("s{i}"), strike.clone())).await.expect("strike");
    }
    stack
        .resolver
        .close(CloseRequest {
            battle_id: "bz".into(),
            by: "judge".into(),
            reason: "end".into(),
            request_id: "c".into(),
        })
        .await
        .expect("close");
    let clean = exported(&mut stack, "bz").await;
    assert!(audit("bz", &clean).ok(), "{:?}", audit("bz", &clean).findings);

    // Versions: 0 opened, 1 roll, 2 action, 3 roll, 4 action, 5 roll, 6 action, 7 closed, 8 revealed.
    let mut removed = clean.clone();
    removed.remove(3);
    let first = &audit("bz", &removed).findings[0];
    assert_eq!((first.version, first.check), (3, Check::Sequence));

    let mut swapped = clean.clone();
    swapped.swap(3, 4);
    assert_eq!(audit("bz", &swapped).findings[0].version, 3);

    let mut changed = clean.clone();
    let last = changed[3].record.len() - 1;
    changed[3].record[last] ^= 1;
    assert_eq!(audit("bz", &changed).findings[0].version, 3);
}

#[tokio::test]
async fn a_retried_open_without_a_battle_id_finds_the_same_battle() {
    let stack = stack().await;
    let request = OpenBattleRequest {
        ruleset: "berserk@1".into(),
        participants: vec![object(json!({"id": "a"}))],
        request_id: "open-generated".into(),
        ..Default::default()
    };
    let first = stack.resolver.clone().open_battle(request.clone()).await.expect("opens").into_inner();
    let again = stack.resolver.clone().open_battle(request).await.expect("retry").into_inner();
    assert_eq!(first, again);
    assert!(first.battle_id.starts_with("b-"));
}

#[tokio::test]
async fn the_longest_request_id_passes_through_roller_and_journal() {
    let mut stack = stack().await;
    open(&mut stack, "long", "pbta-2d6@1", json!([{"id": "ash"}])).await;
    let request_id = "r".repeat(battlelog_resolver::service::MAX_REQUEST_ID_BYTES);
    let action = json!({"type": "move", "actor": "ash", "trait": "cool", "stakes": "x"});
    stack.resolver.act(act("long", &request_id, action.clone())).await.expect("the longest request id works");
    let longer = format!("{request_id}r");
    let status = stack.resolver.act(act("long", &longer, action)).await.expect_err("one byte more is refused");
    assert_eq!(status.code(), Code::InvalidArgument);
}

#[tokio::test]
async fn a_request_id_reused_for_another_action_is_refused() {
    let mut stack = stack().await;
    open(&mut stack, "reuse", "pbta-2d6@1", json!([{"id": "ash"}])).await;
    let first = json!({"type": "move", "actor": "ash", "trait": "cool", "stakes": "a"});
    stack.resolver.act(act("reuse", "same-id", first)).await.expect("first");
    let other = json!({"type": "move", "actor": "ash", "trait": "wits", "stakes": "b"});
    let status = stack.resolver.act(act("reuse", "same-id", other)).await.expect_err("reuse refused");
    assert_eq!(status.code(), Code::FailedPrecondition);
    assert!(status.message().contains("already used"), "{}", status.message());
}
