//! The resolver over a real roller and journal (sled in a temp dir, gRPC on
//! 127.0.0.1:0): a battle played through the API, retries that never roll
//! again, rules that refuse before any die is drawn, replay and audit.

use battlelog_auth::AuthChannel;
use battlelog_proto::battle::{json_to_struct, struct_to_json};
use battlelog_proto::v1::journal_client::JournalClient;
use battlelog_proto::v1::resolver_client::ResolverClient;
use battlelog_proto::v1::roller_client::RollerClient;
use battlelog_proto::v1::{
    ActRequest, ActResponse, AuditRequest, BattleEvent, CloseRequest, DisputeRequest, EventResponse, ExportRequest,
    GetBattleRequest, JournalRecord, OpenBattleRequest, ReadStreamRequest, RevealRequest, RevealSeedRequest,
    RuleRequest, WatchRequest, battle_event::Event,
};
use battlelog_roller::{MasterKey, RollerService};
use battlelog_test_support::{TestAuth, authed_channel, loopback_listener};
use battlelog_verify::audit::{AuditedRecord, Check, Problem, audit, audit_with_roller_key};
use battlelog_verify::chain::{chain_hash, genesis_hash};
use prost::Message;
use serde_json::{Value, json};
use std::time::Duration;

use tonic::Code;

const MASTER_KEY: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
/// MASTER_KEY's roller key, computed from docs/PROTOCOL-signatures.md by an
/// independent implementation (Python hmac + `cryptography`'s Ed25519).
const ROLLER_KEY: &str = "3f98a7dbea1f3b78926f7dba089f47d752e62dee7457ce35a68329d10abc02ac";

struct Stack {
    /// As the services call it.
    journal: JournalClient<AuthChannel>,
    /// As a forum of the test tenant.
    resolver: ResolverClient<AuthChannel>,
    /// As a judge of the test tenant.
    judge: ResolverClient<AuthChannel>,
    roller: RollerClient<AuthChannel>,
    /// The resolver's service itself, for what the event feed hands it.
    service: battlelog_resolver::ResolverService,
    resolver_url: String,
    journal_url: String,
    roller_url: String,
    _dir: tempfile::TempDir,
}

async fn stack() -> Stack {
    let dir = tempfile::tempdir().expect("temp dir");
    let journal = battlelog_journal::Journal::open(battlelog_journal::JournalOptions::new(dir.path()))
        .await
        .expect("journal opens");
    let (listener, journal_url) = loopback_listener().await;
    let auth = TestAuth::shared();
    let service_token = auth.service_token();
    tokio::spawn(battlelog_journal::serve(
        journal,
        listener,
        battlelog_runtime::serve::GrpcServer::new("journal", auth.verifier()),
        std::future::pending(),
    ));
    let roller = RollerService::new(
        JournalClient::new(authed_channel(&journal_url, &service_token)),
        MasterKey::from_hex(MASTER_KEY).expect("key"),
    );
    let (listener, roller_url) = loopback_listener().await;
    tokio::spawn(battlelog_roller::serve(
        roller,
        listener,
        battlelog_runtime::serve::GrpcServer::new("roller", auth.verifier()),
        std::future::pending(),
    ));
    let roller_client = RollerClient::new(authed_channel(&roller_url, &service_token));
    let (resolver_url, service) = resolver_for(&journal_url, &roller_url).await;
    Stack {
        journal: JournalClient::new(authed_channel(&journal_url, &service_token)),
        resolver: ResolverClient::new(authed_channel(&resolver_url, &auth.forum())),
        judge: ResolverClient::new(authed_channel(&resolver_url, &auth.judge())),
        roller: roller_client,
        service,
        resolver_url,
        journal_url,
        roller_url,
        _dir: dir,
    }
}

/// Another resolver, served as the stack's is, against these peers.
/// Returns its URL and the service.
async fn resolver_for(journal_url: &str, roller_url: &str) -> (String, battlelog_resolver::ResolverService) {
    let auth = TestAuth::shared();
    let (listener, resolver_url) = loopback_listener().await;
    let service =
        battlelog_resolver::server::service_for(journal_url, roller_url, None, &auth.service_token()).expect("service");
    tokio::spawn(battlelog_resolver::serve(
        service.clone(),
        listener,
        battlelog_runtime::serve::GrpcServer::new("resolver", auth.verifier()),
        std::future::pending(),
    ));
    (resolver_url, service)
}

/// A forum's client of the resolver at `url`.
fn forum_client(url: &str) -> ResolverClient<AuthChannel> {
    ResolverClient::new(authed_channel(url, &TestAuth::shared().forum()))
}

/// A loopback URL nothing listens on: a port the OS handed out, then freed.
async fn dead_url() -> String {
    let (listener, url) = loopback_listener().await;
    drop(listener);
    url
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
            ..Default::default()
        })
        .await
        .expect("opens");
}

fn act(battle_id: &str, request_id: &str, action: Value) -> ActRequest {
    ActRequest {
        battle_id: battle_id.into(),
        action: Some(object(action)),
        request_id: request_id.into(),
        ..Default::default()
    }
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
    let dodged = stack.resolver.act(act("pk", "d1", dodge)).await.expect("dodge").into_inner();
    let dodge_outcome =
        Value::Object(struct_to_json(dodged.resolved.expect("resolved").outcome.as_ref().expect("outcome")));
    let counted = dodge_outcome["counted"].as_bool().expect("counted");
    let state = stack
        .resolver
        .get_battle(GetBattleRequest { battle_id: "pk".into(), at_version: None })
        .await
        .expect("get")
        .into_inner();
    assert_eq!(state.next_nonce, 2);
    assert!(!state.closed);
    // The replayed state holds the dodge, one level deep under the participants.
    let rules_state = Value::Object(struct_to_json(state.state.as_ref().expect("state")));
    let dodges = rules_state["pokemon"]["meowth"]["dodges_used"].as_u64().expect("meowth's dodges, one level deep");
    assert_eq!(dodges, u64::from(counted), "{rules_state}");

    stack
        .resolver
        .dispute(DisputeRequest {
            battle_id: "pk".into(),
            by: "meowth".into(),
            refers_to: 2,
            reason: "lag".into(),
            request_id: "x1".into(),
            ..Default::default()
        })
        .await
        .expect("dispute");
    stack
        .judge
        .rule(RuleRequest {
            battle_id: "pk".into(),
            judge: String::new(),
            refers_to: 2,
            text: "stands".into(),
            r#override: None,
            request_id: "j1".into(),
            ..Default::default()
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
            ..Default::default()
        })
        .await
        .expect("close");
    let after = stack.resolver.act(act("pk", "late", json!({"type": "pass", "actor": "pikachu"}))).await;
    assert_eq!(after.expect_err("closed").code(), Code::FailedPrecondition);

    let report = stack.resolver.audit(AuditRequest { battle_id: "pk".into() }).await.expect("audit").into_inner();
    assert!(report.ok, "{:?}", report.findings);
    let records = exported(&mut stack, "pk").await;
    let local = audit("pk", &records);
    assert!(local.ok(), "{:?}", local.findings);
    // The ruling names the judge of the token, never the request's text.
    let ruling = local.rulings.first().expect("the ruling is listed");
    assert_eq!((ruling.judge.as_str(), ruling.role.as_deref()), ("judge-jenny", Some("judge")));

    // A ruling re-recorded as a forum's credential, or naming another judge
    // than its credential does, is a finding even with a consistent chain.
    let version = ruling.version as usize;
    for (judge, role) in [("judge-jenny", "forum"), ("squirtle", "judge")] {
        let Event::JudgeRuling(mut forged) = event_of(&records[version]) else { panic!("the ruling") };
        forged.judge = judge.into();
        forged.credential = Some(battlelog_proto::v1::Credential { subject: "judge-jenny".into(), role: role.into() });
        let mut edited = records.clone();
        forge("pk", &mut edited, version, Event::JudgeRuling(forged));
        let findings = audit("pk", &edited).findings;
        assert!(
            findings.iter().any(|f| f.check == Check::Ruling && f.version == version as u64),
            "{judge} as {role}: {findings:?}"
        );
    }
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
        // The same but for the journal's checkpoint: the newest when each
        // was answered (docs/protocol.md §5).
        assert_eq!(ActResponse { checkpoint: None, ..again }, ActResponse { checkpoint: None, ..first.clone() });
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
            ..Default::default()
        })
        .await
        .expect("close");
    let clean = exported(&mut stack, "bz").await;
    assert!(audit("bz", &clean).ok(), "{:?}", audit("bz", &clean).findings);

    // Versions: 0 opened; a fight rolls two dice, so 1 and 2 rolls, 3 the
    // strike; 4, 5, 6 and 7, 8, 9 likewise; 10 closed, 11 revealed.
    let mut removed = clean.clone();
    removed.remove(3);
    let findings = audit("bz", &removed).findings;
    assert!(findings.iter().any(|f| (f.version, f.check) == (3, Check::Sequence)), "{findings:?}");
    // The strike that used rolls 1 and 2 is gone, so they were left
    // without their resolution when the next action's roll came (at 4, the
    // first record after the gap): roll-forward's finding.
    assert!(
        findings.iter().any(|f| f.version == 4 && matches!(f.problem, Problem::RollLeftPending { nonce: 0 })),
        "{findings:?}"
    );

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

async fn close(stack: &mut Stack, battle_id: &str, request_id: &str) {
    stack
        .resolver
        .close(CloseRequest {
            battle_id: battle_id.into(),
            by: "judge".into(),
            reason: "end".into(),
            request_id: request_id.into(),
            ..Default::default()
        })
        .await
        .expect("close");
}

#[tokio::test]
async fn a_roll_peeked_at_and_thrown_away_is_a_finding() {
    let mut stack = stack().await;
    open(&mut stack, "peek", "pokemon-d6@1", json!([{"id": "pikachu"}, {"id": "meowth"}])).await;
    // Someone with access to the roller looks at the next power die…
    let peek = battlelog_proto::v1::RollRequest {
        battle_id: "peek".into(),
        rolls: vec![battlelog_proto::v1::RollSpec { expression: "1d6".into(), purpose: "power".into() }],
        actor: "pikachu".into(),
        request_id: "peek-1".into(),
        expected_head: None,
        for_action: None,
    };
    stack.roller.roll(peek).await.expect("the roller rolls");
    // …and then lets the forum's action take the next one.
    let attack = json!({"type": "attack", "actor": "pikachu", "target": "meowth", "move": "Tackle"});
    let response = stack.resolver.act(act("peek", "a1", attack)).await.expect("attack").into_inner();
    assert_eq!(response.resolved.expect("resolved").rolls, vec![1]);
    close(&mut stack, "peek", "c").await;
    let report = audit("peek", &exported(&mut stack, "peek").await);
    let first = report.findings.first().expect("the unused roll is a finding");
    assert_eq!((first.version, first.check), (1, Check::Roll), "{:?}", report.findings);
}

#[tokio::test]
async fn a_free_roll_that_divides_by_zero_stands_as_rolled() {
    let mut stack = stack().await;
    open(&mut stack, "div", "pbta-2d6@1", json!([{"id": "ash"}])).await;
    let roll = json!({"type": "roll", "actor": "ash", "expression": "1d6/(1d1-1)", "purpose": "oops"});
    let response = stack.resolver.act(act("div", "r1", roll)).await.expect("the roll stands").into_inner();
    let outcome =
        Value::Object(struct_to_json(response.resolved.expect("resolved").outcome.as_ref().expect("outcome")));
    assert_eq!(outcome["error"], "division by zero at 4");
    assert_eq!(outcome["dice"].as_array().expect("dice").len(), 2);
    close(&mut stack, "div", "c").await;
    let report = audit("div", &exported(&mut stack, "div").await);
    assert!(report.ok(), "{:?}", report.findings);
}

#[tokio::test]
async fn bad_free_rolls_and_sheets_are_invalid_arguments_naming_the_field() {
    let mut stack = stack().await;
    open(&mut stack, "bad", "pbta-2d6@1", json!([{"id": "ash"}])).await;
    let cases = [
        (json!({"type": "roll", "actor": "ash", "expression": "2d", "purpose": ""}), "action.expression"),
        (json!({"type": "roll", "actor": "ash", "expression": "1d6", "purpose": "x".repeat(201)}), "action.purpose"),
        (json!({"type": "roll", "actor": "a".repeat(129), "expression": "1d6", "purpose": ""}), "action.actor"),
    ];
    for (i, (action, field)) in cases.into_iter().enumerate() {
        let status = stack.resolver.act(act("bad", &format!("b{i}"), action)).await.expect_err("refused");
        assert_eq!(status.code(), Code::InvalidArgument, "{field}: {status:?}");
        assert!(status.message().starts_with(field), "{field}: {}", status.message());
    }
    let long_id = OpenBattleRequest {
        ruleset: "pbta-2d6@1".into(),
        participants: vec![object(json!({"id": "x".repeat(129)}))],
        request_id: "long-id".into(),
        ..Default::default()
    };
    let status = stack.resolver.open_battle(long_id).await.expect_err("refused");
    assert!(status.message().starts_with("participants[0].id"), "{}", status.message());
    assert_eq!(exported(&mut stack, "bad").await.len(), 1, "nothing was written");
}

#[tokio::test]
async fn reusing_an_open_request_id_for_other_settings_is_refused() {
    let stack = stack().await;
    let mut request = OpenBattleRequest {
        ruleset: "berserk@1".into(),
        participants: vec![object(json!({"id": "a"}))],
        request_id: "open-x".into(),
        battle_id: "bx".into(),
        ..Default::default()
    };
    stack.resolver.clone().open_battle(request.clone()).await.expect("opens");
    request.participants.push(object(json!({"id": "b"})));
    let status = stack.resolver.clone().open_battle(request).await.expect_err("other settings");
    assert_eq!(status.code(), Code::FailedPrecondition);
}

#[tokio::test]
async fn a_close_that_died_before_its_reveal_is_finished_by_the_next_close() {
    let mut stack = stack().await;
    open(&mut stack, "half", "berserk@1", json!([{"id": "a"}])).await;
    // The state a crash between the close and its reveal leaves behind.
    let closed = Event::BattleClosed(battlelog_proto::v1::BattleClosed {
        by: "judge".into(),
        reason: "crashed".into(),
        credential: None,
    });
    stack
        .journal
        .append(battlelog_proto::v1::AppendRequest {
            stream_id: "half".into(),
            expected_version: None.or(Some(battlelog_proto::v1::ExpectedVersion {
                kind: Some(battlelog_proto::v1::expected_version::Kind::Exact(0)),
            })),
            events: vec![battlelog_proto::battle::new_event(closed, "close:first".into())],
        })
        .await
        .expect("append");
    assert!(!audit("half", &exported(&mut stack, "half").await).ok(), "closed without a reveal");
    close(&mut stack, "half", "second").await;
    let report = audit("half", &exported(&mut stack, "half").await);
    assert!(report.ok(), "{:?}", report.findings);
}

/// Replaces the event in `records[version]`'s record and recomputes every
/// hash from there on, as a forger who knows the chain would.
fn forge(battle_id: &str, records: &mut [AuditedRecord], version: usize, event: Event) {
    let mut record = JournalRecord::decode(records[version].record.as_slice()).expect("record");
    record.payload = BattleEvent { event: Some(event) }.encode_to_vec();
    records[version].record = record.encode_to_vec();
    let mut previous = genesis_hash(battle_id).to_vec();
    for line in records.iter_mut() {
        line.hash = chain_hash(&previous, &line.record).to_vec();
        previous.clone_from(&line.hash);
    }
}

fn event_of(record: &AuditedRecord) -> Event {
    battlelog_proto::battle::decode(&JournalRecord::decode(record.record.as_slice()).expect("record")).expect("event")
}

/// docs/PROTOCOL-signatures.md §4 over a battle with two epochs: both
/// commitments signed by the roller's key; pinned to another key, both are
/// findings; the second re-signed (consistently) by another key is a key
/// change within the battle, found at its version; the Audit RPC reports
/// the roller's key.
#[tokio::test]
async fn the_audit_checks_commitment_signatures_and_one_roller_key_per_battle() {
    let mut stack = stack().await;
    open(&mut stack, "sig", "pbta-2d6@1", json!([{"id": "misty"}])).await;
    let mv = json!({"type": "move", "actor": "misty", "trait": "cool", "stakes": "x"});
    stack.resolver.act(act("sig", "m0", mv.clone())).await.expect("move");
    let reveal =
        RevealRequest { battle_id: "sig".into(), closing: false, request_id: "mid".into(), requested_by: None };
    stack.roller.reveal(reveal).await.expect("reveal mid-battle");
    stack.resolver.act(act("sig", "m1", mv)).await.expect("move");
    let close = CloseRequest {
        battle_id: "sig".into(),
        by: "j".into(),
        reason: "end".into(),
        request_id: "c".into(),
        ..Default::default()
    };
    stack.resolver.close(close).await.expect("close");
    let clean = exported(&mut stack, "sig").await;
    // 0 opened, 1–2 a move, 3 revealed, 4 epoch 1 committed, 5–6 a move, 7 closed, 8 revealed.
    let Event::SeedCommitted(committed) = event_of(&clean[4]) else { panic!("version 4 commits epoch 1") };
    assert_eq!(committed.epoch, 1);

    let ours = dice::RollerKey::from_hex(ROLLER_KEY).expect("key");
    let report = audit("sig", &clean);
    assert!(report.ok(), "{:?}", report.findings);
    assert_eq!(report.roller_key.as_deref(), Some(ROLLER_KEY));
    assert!(audit_with_roller_key("sig", &clean, Some(&ours)).ok());
    let other = dice::CommitmentSigner::derive(&[9; 32]);
    let pinned = audit_with_roller_key("sig", &clean, Some(&other.roller_key())).findings;
    assert_eq!(
        pinned.iter().map(|f| (f.version, f.check)).collect::<Vec<_>>(),
        vec![(0, Check::Signature), (4, Check::Signature)],
        "{pinned:?}"
    );

    let mut changed = clean.clone();
    let mut resigned = committed.clone();
    resigned.commitment_signature = other.sign("sig", 1, &committed.commitment).to_vec();
    resigned.roller_key = other.roller_key().to_bytes().to_vec();
    forge("sig", &mut changed, 4, Event::SeedCommitted(resigned));
    let findings = audit("sig", &changed).findings;
    assert_eq!(findings.iter().map(|f| (f.version, f.check)).collect::<Vec<_>>(), vec![(4, Check::Signature)]);
    assert!(
        matches!(&findings[0].problem, Problem::RollerKeyChanged { epoch: 1, first, .. } if first == ROLLER_KEY),
        "names the battle's key: {findings:?}"
    );

    let mut unsigned = clean.clone();
    let mut bare = committed.clone();
    bare.commitment_signature.clear();
    forge("sig", &mut unsigned, 4, Event::SeedCommitted(bare));
    let findings = audit("sig", &unsigned).findings;
    assert_eq!(findings.iter().map(|f| (f.version, f.check)).collect::<Vec<_>>(), vec![(4, Check::Signature)]);
    assert_eq!(findings[0].problem, Problem::SignatureMissing { epoch: 1 }, "{findings:?}");

    let rpc = stack.resolver.audit(AuditRequest { battle_id: "sig".into() }).await.expect("audit").into_inner();
    assert!(rpc.ok, "{rpc:?}");
    assert_eq!(rpc.roller_key, ROLLER_KEY);
}

/// A judge's mid-battle reveal (`RevealSeed`): the seed of epoch 0 comes
/// out with the judge's credential, epoch 1 is committed, the battle goes
/// on, and the audit re-derives the rolls of epoch 0 already. A forum may
/// not reveal.
#[tokio::test]
async fn a_judge_reveals_mid_battle_and_the_battle_goes_on() {
    let mut stack = stack().await;
    open(&mut stack, "rv", "pbta-2d6@1", json!([{"id": "misty"}])).await;
    let mv = json!({"type": "move", "actor": "misty", "trait": "cool", "stakes": "x"});
    stack.resolver.act(act("rv", "m0", mv.clone())).await.expect("move");
    let request = RevealSeedRequest { battle_id: "rv".into(), request_id: "r1".into() };
    let refused = stack.resolver.reveal_seed(request.clone()).await.expect_err("a forum may not reveal");
    assert_eq!(refused.code(), Code::PermissionDenied, "{refused:?}");
    let revealed = stack.judge.reveal_seed(request.clone()).await.expect("the judge reveals").into_inner();
    let seed = revealed.revealed.expect("the revealed seed");
    assert_eq!(seed.epoch, 0);
    let credential = seed.credential.expect("who asked");
    assert_eq!((credential.subject.as_str(), credential.role.as_str()), ("judge-jenny", "judge"));
    assert_eq!(revealed.next.expect("the next epoch").epoch, 1);
    // A retry is the recorded reveal, not a second one.
    let again = stack.judge.reveal_seed(request).await.expect("retry").into_inner();
    assert_eq!(again.version, revealed.version);
    let after = stack.resolver.act(act("rv", "m1", mv)).await.expect("the battle goes on").into_inner();
    let epoch = after.rolls.first().and_then(|r| r.roll.as_ref()).map(|r| r.epoch);
    assert_eq!(epoch, Some(1), "rolls after the reveal use the new epoch's secret");
    let report = audit("rv", &exported(&mut stack, "rv").await);
    assert!(report.ok(), "{:?}", report.findings);
    assert!(report.rolls_verified >= 1, "epoch 0's roll re-derives before the close");
}

/// `Export` pages through the battle as stored and `Watch` follows it
/// live, for the owning tenant; another tenant's forum gets NOT_FOUND from
/// both, worded as for a battle that does not exist.
#[tokio::test]
async fn export_and_watch_serve_the_owning_tenant_only() {
    let mut stack = stack().await;
    open(&mut stack, "ew", "pbta-2d6@1", json!([{"id": "misty"}])).await;
    let mv = json!({"type": "move", "actor": "misty", "trait": "cool", "stakes": "x"});
    stack.resolver.act(act("ew", "m0", mv.clone())).await.expect("move");
    let export = |from_version| ExportRequest { battle_id: "ew".into(), from_version };
    let page = stack.resolver.export(export(0)).await.expect("export").into_inner().events;
    let stored = exported(&mut stack, "ew").await;
    assert_eq!(
        page.iter().map(|e| e.hash.clone()).collect::<Vec<_>>(),
        stored.iter().map(|r| r.hash.clone()).collect::<Vec<_>>()
    );
    assert!(
        stack.resolver.export(export(stored.len() as u64)).await.expect("past the head").into_inner().events.is_empty()
    );

    let mut watch = stack
        .resolver
        .watch(WatchRequest { battle_id: "ew".into(), from_version: 1 })
        .await
        .expect("watch")
        .into_inner();
    let first = watch.message().await.expect("a message").expect("an event");
    assert_eq!(first.event.expect("record").version, 1, "from the version asked");
    let acted = stack.resolver.act(act("ew", "m1", mv)).await.expect("move").into_inner();
    let mut seen = 1;
    while seen < acted.version {
        seen = watch.message().await.expect("a message").expect("an event").event.expect("record").version;
    }
    assert_eq!(seen, acted.version, "the new events arrive live, in order");

    let outsider = ResolverClient::new(authed_channel(
        &stack.resolver_url,
        &TestAuth::shared().token(battlelog_auth::Role::Forum, battlelog_test_support::auth::OTHER_TENANT, "eve"),
    ));
    let missing = stack.resolver.export(ExportRequest { battle_id: "nope".into(), from_version: 0 }).await;
    let missing = missing.expect_err("no such battle");
    for refused in [
        outsider.clone().export(export(0)).await.expect_err("another tenant's export"),
        outsider.clone().watch(WatchRequest { battle_id: "ew".into(), from_version: 0 }).await.expect_err("watch"),
        outsider
            .clone()
            .get_battle(GetBattleRequest { battle_id: "ew".into(), at_version: None })
            .await
            .expect_err("get"),
    ] {
        assert_eq!(refused.code(), Code::NotFound, "{refused:?}");
        assert_eq!(refused.message(), missing.message().replace("nope", "ew"), "no hint that it exists");
    }
}

/// `{"a": {"a": … 1}}` with `levels` objects, the outermost included.
fn nested_objects(levels: usize) -> prost_types::Struct {
    let mut inner = prost_types::Struct::default();
    inner.fields.insert("a".into(), number(1.0));
    for _ in 1..levels {
        let value = prost_types::Value { kind: Some(prost_types::value::Kind::StructValue(inner)) };
        inner = prost_types::Struct { fields: [("a".to_owned(), value)].into() };
    }
    inner
}

/// `{"a": [[… [1]]]}`: one object and `lists` lists, `lists + 1` levels.
fn nested_lists(lists: usize) -> prost_types::Struct {
    let mut value = number(1.0);
    for _ in 0..lists {
        value = prost_types::Value {
            kind: Some(prost_types::value::Kind::ListValue(prost_types::ListValue { values: vec![value] })),
        };
    }
    prost_types::Struct { fields: [("a".to_owned(), value)].into() }
}

fn number(n: f64) -> prost_types::Value {
    prost_types::Value { kind: Some(prost_types::value::Kind::NumberValue(n)) }
}

/// The field a refusal's `BadRequest` detail names.
fn bad_field(status: &tonic::Status) -> String {
    use tonic_types::StatusExt;
    let details = status.get_details_bad_request().unwrap_or_else(|| panic!("no BadRequest: {status:?}"));
    details.field_violations.first().expect("a violation").field.clone()
}

fn expect_invalid(status: tonic::Status, field: &str, says: &str) {
    assert_eq!(status.code(), Code::InvalidArgument, "{field}: {status:?}");
    assert_eq!(bad_field(&status), field, "{status:?}");
    assert!(status.message().starts_with(&format!("{field}: ")), "{}", status.message());
    assert!(status.message().contains(says), "{field}: {}", status.message());
}

fn rule_request(
    battle_id: &str,
    request_id: &str,
    text: &str,
    replacement: Option<prost_types::Struct>,
) -> RuleRequest {
    RuleRequest {
        battle_id: battle_id.into(),
        judge: String::new(),
        refers_to: 2,
        text: text.into(),
        r#override: replacement,
        request_id: request_id.into(),
        ..Default::default()
    }
}

/// A struct nested past the limit is refused naming the field and the
/// limit, in every place a caller hands one in; one nested past what prost
/// decodes at all (100 messages deep, three per level: 34 levels) is an
/// invalid argument too, never INTERNAL.
#[tokio::test]
async fn structs_nested_too_deep_are_invalid_arguments_never_internal() {
    let mut stack = stack().await;
    open(&mut stack, "deep", "pokemon-d6@1", json!([{"id": "pikachu"}, {"id": "meowth"}])).await;
    let limit = battlelog_resolver::service::MAX_JSON_DEPTH;
    let says = format!("nests deeper than {limit} levels");

    // One level past our limit, well within what prost decodes.
    let mut action = object(json!({"type": "pass", "actor": "pikachu"}));
    action.fields.insert(
        "note".into(),
        prost_types::Value { kind: Some(prost_types::value::Kind::StructValue(nested_objects(limit))) },
    );
    let request =
        ActRequest { battle_id: "deep".into(), action: Some(action), request_id: "d1".into(), ..Default::default() };
    expect_invalid(stack.resolver.act(request).await.expect_err("too deep"), "action", &says);
    let request = ActRequest {
        battle_id: "deep".into(),
        action: Some(nested_lists(limit + 8)),
        request_id: "d2".into(),
        ..Default::default()
    };
    expect_invalid(stack.resolver.act(request).await.expect_err("lists too deep"), "action", &says);

    let open_deep = OpenBattleRequest {
        ruleset: "pokemon-d6@1".into(),
        participants: vec![object(json!({"id": "a"})), nested_objects(limit + 1)],
        request_id: "open-deep".into(),
        battle_id: "deep2".into(),
        ..Default::default()
    };
    expect_invalid(stack.resolver.open_battle(open_deep).await.expect_err("too deep"), "participants[1]", &says);
    let rule = rule_request("deep", "r1", "no", Some(nested_objects(limit + 1)));
    expect_invalid(stack.judge.rule(rule).await.expect_err("too deep"), "override", &says);

    // Past prost's recursion limit the request does not even decode.
    for levels in [34, 60] {
        let request = ActRequest {
            battle_id: "deep".into(),
            action: Some(nested_objects(levels)),
            request_id: format!("p{levels}"),
            ..Default::default()
        };
        let status = stack.resolver.act(request).await.expect_err("undecodable");
        assert_eq!(status.code(), Code::InvalidArgument, "{levels} levels: {status:?}");
        assert_eq!(bad_field(&status), "request");
        assert!(status.message().contains("recursion limit reached"), "{}", status.message());
    }
    assert_eq!(exported(&mut stack, "deep").await.len(), 1, "nothing was written");
}

/// JSON has no NaN or infinity; a Struct can carry them. They are refused
/// by the path of the value, before anything reads or journals them (an
/// override used to be journaled as sent).
#[tokio::test]
async fn nan_and_infinite_numbers_are_refused_by_path() {
    let mut stack = stack().await;
    open(&mut stack, "nan", "pokemon-d6@1", json!([{"id": "pikachu"}, {"id": "meowth"}])).await;
    let mut attack = object(json!({"type": "attack", "actor": "pikachu", "target": "meowth", "move": "Tackle"}));
    attack.fields.insert("power".into(), number(f64::NAN));
    let request =
        ActRequest { battle_id: "nan".into(), action: Some(attack), request_id: "a1".into(), ..Default::default() };
    expect_invalid(stack.resolver.act(request).await.expect_err("NaN"), "action.power", "not NaN");

    let mut sheet = object(json!({"id": "a", "stats": {"hp": 10}}));
    let prost_types::value::Kind::StructValue(stats) =
        sheet.fields.get_mut("stats").and_then(|v| v.kind.as_mut()).expect("stats")
    else {
        panic!("stats is an object")
    };
    stats.fields.insert("hp".into(), number(f64::INFINITY));
    let opening = OpenBattleRequest {
        ruleset: "berserk@1".into(),
        participants: vec![sheet],
        request_id: "open-inf".into(),
        battle_id: "inf".into(),
        ..Default::default()
    };
    let status = stack.resolver.open_battle(opening).await.expect_err("infinity");
    expect_invalid(status, "participants[0].stats.hp", "not inf");

    let mut replacement = object(json!({"result": "hit"}));
    replacement.fields.insert("damage".into(), number(f64::NEG_INFINITY));
    let status = stack.judge.rule(rule_request("nan", "r1", "x", Some(replacement))).await.expect_err("-inf");
    expect_invalid(status, "override.damage", "not -inf");
    assert_eq!(exported(&mut stack, "nan").await.len(), 1, "nothing was written");
}

/// Control characters act on the terminals and forums that show a battle:
/// refused in a dice expression's comment, in strings inside an action, in
/// names and single lines, and (but for line feeds) in longer texts.
#[tokio::test]
async fn control_characters_are_refused_naming_the_field() {
    let mut stack = stack().await;
    open(&mut stack, "esc", "pbta-2d6@1", json!([{"id": "ash"}])).await;
    let fine = json!({"type": "move", "actor": "ash", "trait": "cool", "stakes": "x"});
    stack.resolver.act(act("esc", "m0", fine)).await.expect("a move to dispute");
    // An escape or a bell anywhere in a string of the action…
    let roll = json!({"type": "roll", "actor": "ash", "expression": "1d20 # \u{1b}[2Jcrit!", "purpose": "p"});
    let status = stack.resolver.act(act("esc", "e1", roll)).await.expect_err("ESC in a comment");
    expect_invalid(status, "action.expression", "control characters");
    let bell = json!({"type": "roll", "actor": "ash", "expression": "1d20 # ding\u{7}", "purpose": "p"});
    let status = stack.resolver.act(act("esc", "e2", bell)).await.expect_err("BEL in a comment");
    expect_invalid(status, "action.expression", "control characters");
    // …and a line break, which other strings of an action may hold, in a
    // dice comment, which is shown on one line with the roll.
    let forged = json!({"type": "roll", "actor": "ash", "expression": "1d20 # ok\nJUDGE: void", "purpose": "p"});
    let status = stack.resolver.act(act("esc", "e4", forged)).await.expect_err("a line break in a comment");
    expect_invalid(status, "action.expression", "the comment holds control character U+000A at 10");
    let moved = json!({"type": "move", "actor": "ash", "trait": "cool", "stakes": "the \u{1b}[31mbridge"});
    let status = stack.resolver.act(act("esc", "e3", moved)).await.expect_err("ESC in a string");
    expect_invalid(status, "action.stakes", "control characters");

    let dispute = |by: &str, reason: &str, id: &str| DisputeRequest {
        battle_id: "esc".into(),
        by: by.into(),
        refers_to: 2,
        reason: reason.into(),
        request_id: id.into(),
        ..Default::default()
    };
    let status = stack.resolver.dispute(dispute("ash\nJUDGE", "r", "x1")).await.expect_err("a line break in a name");
    expect_invalid(status, "by", "U+000A");
    let status = stack.resolver.dispute(dispute("ash", "see \u{7f}", "x2")).await.expect_err("DEL in a reason");
    expect_invalid(status, "reason", "U+007F");
    assert_eq!(exported(&mut stack, "esc").await.len(), 3, "nothing was written but the move");
    // A reason may run over several lines.
    stack.resolver.dispute(dispute("ash", "first\nsecond", "x3")).await.expect("a line feed in a reason");
}

fn precondition_type(status: &tonic::Status) -> String {
    use tonic_types::StatusExt;
    let info = status.get_details_error_info().unwrap_or_else(|| panic!("{status:?}"));
    assert_eq!(info.domain, "battlelog.dev", "{status:?}");
    info.reason
}

fn expect_reused(status: tonic::Status) {
    assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
    assert_eq!(precondition_type(&status), "IDEMPOTENCY_KEY_REUSED", "{status:?}");
    assert!(status.message().contains("already used"), "{}", status.message());
}

/// Dispute, Rule and Close answer a retry with what was recorded, and a
/// request id reused for another request with IDEMPOTENCY_KEY_REUSED, as
/// Act does; nothing more is journaled either way.
#[tokio::test]
async fn dispute_rule_and_close_refuse_a_request_id_reused_for_another_body() {
    let mut stack = stack().await;
    open(&mut stack, "idem", "pbta-2d6@1", json!([{"id": "ash"}])).await;
    let action = json!({"type": "move", "actor": "ash", "trait": "cool", "stakes": "x"});
    let moved = stack.resolver.act(act("idem", "m1", action)).await.expect("a move to dispute").into_inner();
    let outcome = moved.resolved.and_then(|r| r.outcome).expect("an outcome");
    let mut other_outcome = outcome.clone();
    other_outcome.fields.insert("total".into(), number(99.0));

    let dispute = DisputeRequest {
        battle_id: "idem".into(),
        by: "ash".into(),
        refers_to: 2,
        reason: "lag".into(),
        request_id: "x1".into(),
        ..Default::default()
    };
    let first = stack.resolver.dispute(dispute.clone()).await.expect("dispute").into_inner();
    let again = stack.resolver.dispute(dispute.clone()).await.expect("retry").into_inner();
    // The same but for the journal's newest checkpoint (docs/protocol.md §5).
    assert_eq!(EventResponse { checkpoint: None, ..again }, EventResponse { checkpoint: None, ..first.clone() });
    for other in [
        DisputeRequest { reason: "cheating".into(), ..dispute.clone() },
        DisputeRequest { by: "misty".into(), ..dispute.clone() },
        DisputeRequest { refers_to: 1, ..dispute.clone() },
    ] {
        expect_reused(stack.resolver.dispute(other).await.expect_err("another dispute"));
    }

    let ruling = rule_request("idem", "j1", "stands", Some(outcome));
    let first = stack.judge.rule(ruling.clone()).await.expect("ruling").into_inner();
    assert_eq!(stack.judge.rule(ruling.clone()).await.expect("retry").into_inner(), first);
    for other in [
        RuleRequest { text: "void".into(), ..ruling.clone() },
        RuleRequest { r#override: None, ..ruling.clone() },
        RuleRequest { r#override: Some(other_outcome), ..ruling.clone() },
    ] {
        expect_reused(stack.judge.rule(other).await.expect_err("another ruling"));
    }
    // The same request from another judge is another ruling: its judge is
    // the token's subject.
    let elm = TestAuth::shared().token(battlelog_auth::Role::Judge, battlelog_test_support::auth::TEST_TENANT, "elm");
    let mut elm = ResolverClient::new(authed_channel(&stack.resolver_url, &elm));
    expect_reused(elm.rule(ruling.clone()).await.expect_err("another judge's ruling"));
    // A dispute's request id is its own: reusing a ruling's for a dispute is fine.
    stack.resolver.dispute(DisputeRequest { request_id: "j1".into(), ..dispute.clone() }).await.expect("own key");

    let closing = CloseRequest {
        battle_id: "idem".into(),
        by: "oak".into(),
        reason: "done".into(),
        request_id: "c1".into(),
        ..Default::default()
    };
    let first = stack.resolver.close(closing.clone()).await.expect("close").into_inner();
    let written = exported(&mut stack, "idem").await.len();
    assert_eq!(stack.resolver.close(closing.clone()).await.expect("retry").into_inner(), first);
    for other in
        [CloseRequest { reason: "abandoned".into(), ..closing.clone() }, CloseRequest { by: "elm".into(), ..closing }]
    {
        expect_reused(stack.resolver.close(other).await.expect_err("another close"));
    }
    assert_eq!(exported(&mut stack, "idem").await.len(), written, "retries and refusals wrote nothing");
}

/// A peer that is down is an outage the forum may retry, named as such:
/// UNAVAILABLE naming the service, whatever the transport made of it.
#[tokio::test]
async fn a_roller_or_journal_outage_is_unavailable_naming_the_service() {
    let mut stack = stack().await;
    open(&mut stack, "out", "pbta-2d6@1", json!([{"id": "ash"}])).await;
    let (url, _) = resolver_for(&stack.journal_url, &dead_url().await).await;
    let mut no_roller = forum_client(&url);
    let action = json!({"type": "move", "actor": "ash", "trait": "cool", "stakes": "x"});
    let status = no_roller.act(act("out", "m1", action.clone())).await.expect_err("the roller is down");
    assert_eq!(status.code(), Code::Unavailable, "{status:?}");
    assert!(status.message().starts_with("roller is unavailable: "), "{}", status.message());
    let opening = OpenBattleRequest {
        ruleset: "berserk@1".into(),
        participants: vec![object(json!({"id": "a"}))],
        request_id: "open-out".into(),
        ..Default::default()
    };
    let status = no_roller.open_battle(opening).await.expect_err("no commitment without the roller");
    assert_eq!(status.code(), Code::Unavailable, "{status:?}");
    assert!(status.message().starts_with("roller is unavailable: "), "{}", status.message());

    let (url, _) = resolver_for(&dead_url().await, &stack.roller_url).await;
    let mut no_journal = forum_client(&url);
    let status = no_journal.act(act("out", "m1", action)).await.expect_err("the journal is down");
    assert_eq!(status.code(), Code::Unavailable, "{status:?}");
    assert!(status.message().starts_with("journal is unavailable: "), "{}", status.message());
    let status =
        no_journal.get_battle(GetBattleRequest { battle_id: "out".into(), at_version: None }).await.expect_err("down");
    assert_eq!(status.code(), Code::Unavailable, "{status:?}");
}

/// The record of `battle_id` at `version`, as the journal holds it.
async fn journaled(stack: &mut Stack, battle_id: &str, version: u64) -> JournalRecord {
    let read = ReadStreamRequest { stream_id: battle_id.into(), from_version: version, max_count: 1 };
    let events = stack.journal.read_stream(read).await.expect("read").into_inner().events;
    events.into_iter().next().and_then(|e| e.event).expect("the record")
}

/// The event feed is a hint, never a source: records handed to `warm` that
/// the journal does not hold change nothing the resolver answers.
#[tokio::test]
async fn a_forged_record_on_the_event_feed_changes_nothing() {
    let mut stack = stack().await;
    open(&mut stack, "feed", "pbta-2d6@1", json!([{"id": "ash", "traits": {"cool": 1}}])).await;
    let action = json!({"type": "move", "actor": "ash", "trait": "cool", "stakes": "x"});
    stack.resolver.act(act("feed", "m1", action.clone())).await.expect("move");
    let before = stack
        .resolver
        .get_battle(GetBattleRequest { battle_id: "feed".into(), at_version: None })
        .await
        .expect("get")
        .into_inner();
    assert_eq!((before.version, before.next_nonce), (2, 1));
    assert_eq!(stack.service.cached_head("feed"), Some(2), "the battle is cached");

    // What the journal would publish next, but never journaled: a roll at
    // nonce 1 and a replay of the resolution at version 2.
    let roll = journaled(&mut stack, "feed", 1).await;
    let Event::DiceRolled(mut forged_roll) = battlelog_proto::battle::decode(&roll).expect("a roll") else {
        panic!("version 1 is the move's roll")
    };
    forged_roll.nonce = 1;
    forged_roll.total = 12;
    let forged = |version: u64, event: Event| JournalRecord {
        stream_id: "feed".into(),
        version,
        event_type: battlelog_proto::battle::type_name(&event).into(),
        payload: BattleEvent { event: Some(event) }.encode_to_vec(),
        idempotency_key: "act:forged".into(),
        ..roll.clone()
    };
    let resolution = battlelog_proto::battle::decode(&journaled(&mut stack, "feed", 2).await).expect("resolution");
    stack.service.warm(forged(3, Event::DiceRolled(forged_roll)));
    stack.service.warm(forged(4, resolution));

    let after = stack
        .resolver
        .get_battle(GetBattleRequest { battle_id: "feed".into(), at_version: None })
        .await
        .expect("get")
        .into_inner();
    assert_eq!(after, before, "no trace of the forged records");
    assert_eq!(stack.service.cached_head("feed"), Some(2));
    // The next command writes where the journal's head is, not past a forgery.
    let next = stack.resolver.act(act("feed", "m2", action)).await.expect("the next move").into_inner();
    assert_eq!((next.version, next.resolved.expect("resolved").rolls), (4, vec![1]));
    let report = stack.resolver.audit(AuditRequest { battle_id: "feed".into() }).await.expect("audit").into_inner();
    assert!(report.ok, "{:?}", report.findings);
}

/// A record the journal does hold, arriving on the feed, warms the cached
/// view from the journal without any command asking.
#[tokio::test]
async fn a_journaled_record_on_the_event_feed_warms_the_cache_from_the_journal() {
    let mut stack = stack().await;
    open(&mut stack, "warm", "pbta-2d6@1", json!([{"id": "ash"}])).await;
    assert_eq!(stack.service.cached_head("warm"), Some(0));
    // Journaled behind the resolver's back, as another replica would.
    let peek = battlelog_proto::v1::RollRequest {
        battle_id: "warm".into(),
        rolls: vec![battlelog_proto::v1::RollSpec { expression: "1d6".into(), purpose: "elsewhere".into() }],
        actor: "ash".into(),
        request_id: "other-replica".into(),
        expected_head: None,
        for_action: None,
    };
    stack.roller.roll(peek).await.expect("the roller rolls");
    assert_eq!(stack.service.cached_head("warm"), Some(0), "nothing told the resolver yet");
    // Only the stream id and version count: the payload is not read.
    let hint = JournalRecord { stream_id: "warm".into(), version: 1, ..Default::default() };
    stack.service.warm(hint);
    battlelog_test_support::poll_until("the cache to catch up from the journal", Duration::from_secs(10), || {
        let head = stack.service.cached_head("warm");
        async move { (head == Some(1)).then_some(()) }
    })
    .await;
    let record = journaled(&mut stack, "warm", 1).await;
    assert_eq!(
        battlelog_proto::battle::type_name(&battlelog_proto::battle::decode(&record).expect("event")),
        "DiceRolled"
    );
}

/// A resolver counting into its metrics: the first command on a battle
/// misses its cache and reads the journal, the next hits; the cache's
/// size follows what it holds; a resolved action counts under its ruleset.
#[tokio::test]
async fn the_cache_and_the_actions_are_counted() {
    let mut stack = stack().await;
    open(&mut stack, "mx", "pokemon-d6@1", json!([{"id": "pikachu"}, {"id": "meowth"}])).await;
    // A second resolver, cold, with metrics.
    let auth = TestAuth::shared();
    let metrics = battlelog_resolver::ResolverMetrics::default();
    let service =
        battlelog_resolver::server::service_for(&stack.journal_url, &stack.roller_url, None, &auth.service_token())
            .expect("service")
            .with_metrics(metrics.clone());
    let (listener, url) = loopback_listener().await;
    tokio::spawn(battlelog_resolver::serve(
        service,
        listener,
        battlelog_runtime::serve::GrpcServer::new("resolver", auth.verifier()),
        std::future::pending(),
    ));
    let mut resolver = forum_client(&url);
    assert_eq!(metrics.cache.size(), (0, 0));

    let get = || GetBattleRequest { battle_id: "mx".into(), at_version: None };
    resolver.get_battle(get()).await.expect("get");
    assert_eq!(metrics.cache.lookups(), (0, 1), "a miss");
    assert_eq!(metrics.cache.catch_up_reads(), 1, "the battle fits one page");
    let (bytes, battles) = metrics.cache.size();
    assert_eq!(battles, 1);
    assert!(bytes > 0);

    resolver.get_battle(get()).await.expect("get");
    assert_eq!(metrics.cache.lookups(), (1, 1), "then a hit");
    assert_eq!(metrics.cache.catch_up_reads(), 2, "a read catches up again");

    let attack = json!({"type": "attack", "actor": "pikachu", "target": "meowth", "move": "Thunderbolt", "power": 90});
    resolver.act(act("mx", "a1", attack.clone())).await.expect("attack");
    assert_eq!(metrics.actions("pokemon-d6@1"), 1);
    assert_eq!(metrics.cache.lookups(), (2, 1));
    assert!(metrics.cache.size().0 > bytes, "the folded battle grew by a roll and a resolution");
    // A retry replays the recorded resolution: not another action.
    resolver.act(act("mx", "a1", attack)).await.expect("retried attack");
    assert_eq!(metrics.actions("pokemon-d6@1"), 1);
}

/// Issue 39: a ruling says which dispute it answers (`answers_dispute`). A
/// version that is not a dispute of the battle — an action, a roll, the
/// opening, nothing yet — is INVALID_ARGUMENT naming the field; a dispute
/// is journaled with the ruling and shown in its export line; a retry
/// naming another dispute is another request; and a forum's token still
/// cannot rule at all.
#[tokio::test]
async fn a_ruling_answers_a_dispute_of_its_battle_and_nothing_else() {
    let mut stack = stack().await;
    open(&mut stack, "ans", "pokemon-d6@1", json!([{"id": "pikachu"}, {"id": "meowth"}])).await;
    let attack = json!({"type": "attack", "actor": "pikachu", "target": "meowth", "move": "Swift", "power": 60});
    let acted = stack.resolver.act(act("ans", "a1", attack)).await.expect("act").into_inner();
    let rolled = acted.rolls.first().expect("the attack rolled").version;
    let dispute = |request_id: &str| DisputeRequest {
        battle_id: "ans".into(),
        by: "meowth".into(),
        refers_to: acted.version,
        reason: "lag".into(),
        request_id: request_id.into(),
        ..Default::default()
    };
    let disputed = stack.resolver.dispute(dispute("d1")).await.expect("dispute").into_inner().version;
    let other = stack.resolver.dispute(dispute("d2")).await.expect("dispute").into_inner().version;
    let answering = |answers: Option<u64>, request_id: &str| RuleRequest {
        answers_dispute: answers,
        refers_to: acted.version,
        ..rule_request("ans", request_id, "it stands", None)
    };
    for (answers, says) in [
        (acted.version, "\"attack\" action, not a dispute"),
        (rolled, "is no dispute of this battle"),
        (0, "is no dispute of this battle"),
        (other + 10, "is no dispute of this battle"),
    ] {
        let refused = stack.judge.rule(answering(Some(answers), "bad")).await.expect_err("not a dispute");
        expect_invalid(refused, "answers_dispute", says);
    }
    // The forum's token may dispute, never rule (the rights table).
    let forum = stack.resolver.rule(answering(Some(disputed), "forum")).await.expect_err("a forum rules");
    assert_eq!(forum.code(), Code::PermissionDenied, "{forum:?}");

    let ruled = stack.judge.rule(answering(Some(disputed), "r1")).await.expect("a ruling").into_inner();
    let Some(Event::JudgeRuling(recorded)) = ruled.event.and_then(|e| e.event) else { panic!("not a ruling") };
    assert_eq!(recorded.answers_dispute, Some(disputed));
    // The same request id naming another dispute is another request.
    expect_reused(stack.judge.rule(answering(Some(other), "r1")).await.expect_err("another ruling"));
    // One naming none, as every ruling before the field: taken, recorded without it.
    let plain = stack.judge.rule(answering(None, "r2")).await.expect("a ruling").into_inner();

    let records = exported(&mut stack, "ans").await;
    let shown = |version: u64| {
        let record = records.iter().find(|r| r.version == version).expect("exported");
        let decoded = JournalRecord::decode(record.record.as_slice()).expect("a record");
        battlelog_proto::battle::event_to_json(&battlelog_proto::battle::decode(&decoded).expect("an event"))
    };
    assert_eq!(shown(ruled.version)["answers_dispute"], json!(disputed));
    assert_eq!(shown(plain.version).get("answers_dispute"), None);
    let report = audit("ans", &records);
    assert!(report.ok(), "{:?}", report.findings);
    let answers: Vec<Option<u64>> = report.rulings.iter().map(|r| r.answers_dispute).collect();
    assert_eq!(answers, vec![Some(disputed), None]);
}
