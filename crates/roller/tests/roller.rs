//! The roller against a real journal (sled in a temp dir, gRPC on
//! 127.0.0.1:0): rolls are journaled before they are returned, re-derive
//! from the master key, never repeat for a retried request, and keep nonces
//! consecutive under concurrency.

use std::collections::BTreeSet;

use battlelog_auth::AuthChannel;
use battlelog_proto::battle as events;
use battlelog_proto::v1::journal_client::JournalClient;
use battlelog_proto::v1::roller_client::RollerClient;
use battlelog_proto::v1::roller_server::Roller;
use battlelog_proto::v1::{
    AppendRequest, BattleOpened, CommitmentRequest, ExpectedVersion, ReadStreamRequest, RevealRequest, RollRequest,
    RollSpec, battle_event::Event, expected_version,
};
use battlelog_roller::{MasterKey, RollerMetrics, RollerService};
use battlelog_test_support::TestAuth;
use tokio::net::TcpListener;
use tonic::{Code, Request};
use tonic_types::StatusExt;

const MASTER_KEY: &str = "7f5fa63fb10d8bd9625a6e723efaa688e116332df5109a0fd7d8475e2fb737b6";
/// MASTER_KEY's commitment-signing seed and roller key, computed from
/// docs/PROTOCOL-signatures.md by an independent implementation (Python
/// hmac + `cryptography`'s Ed25519).
const SIGNING_SEED: &str = "156ab9e8e2ffb0fd0eac5bdd8abddc15b9032f59d68051833de7ac66e5071461";
const ROLLER_KEY: &str = "f23b8a24e114f60d51b3df1b2e75a953f0f093ee41c696199d2fcc6ff67e9dde";

fn roller_key() -> dice::RollerKey {
    dice::RollerKey::from_hex(ROLLER_KEY).expect("key")
}

struct Stack {
    journal: JournalClient<AuthChannel>,
    roller: RollerClient<AuthChannel>,
    service: RollerService,
    metrics: RollerMetrics,
    _dir: tempfile::TempDir,
}

async fn stack() -> Stack {
    let dir = tempfile::tempdir().expect("temp dir");
    let journal = battlelog_journal::Journal::open(battlelog_journal::JournalOptions::new(dir.path()))
        .await
        .expect("journal opens");
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let journal_url = format!("http://{}", listener.local_addr().expect("addr"));
    let auth = TestAuth::shared();
    tokio::spawn(battlelog_journal::serve(
        journal,
        listener,
        battlelog_runtime::serve::GrpcServer::new("journal", auth.verifier()),
        std::future::pending(),
    ));
    let journal = battlelog_roller::server::journal_client(&journal_url, &auth.service_token()).expect("url");
    let metrics = RollerMetrics::default();
    let service = RollerService::new(journal.clone(), MasterKey::from_hex(MASTER_KEY).expect("key"))
        .with_metrics(metrics.clone());
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let roller_url = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(battlelog_roller::serve(
        service.clone(),
        listener,
        battlelog_runtime::serve::GrpcServer::new("roller", auth.verifier()),
        std::future::pending(),
    ));
    let channel = tonic::transport::Endpoint::from_shared(roller_url).expect("url").connect_lazy();
    let roller = RollerClient::new(battlelog_auth::authed(channel, &auth.service_token()).expect("token"));
    Stack { journal, roller, service, metrics, _dir: dir }
}

async fn open_battle(stack: &mut Stack, battle_id: &str, client_seed: &str) {
    let commitment = stack
        .roller
        .commitment(CommitmentRequest { battle_id: battle_id.into(), epoch: 0 })
        .await
        .expect("commitment")
        .into_inner()
        .commitment;
    let opened = BattleOpened {
        ruleset: "pokemon-d6@1".into(),
        client_seed: client_seed.into(),
        commitment,
        ..Default::default()
    };
    stack
        .journal
        .append(AppendRequest {
            stream_id: battle_id.into(),
            expected_version: Some(ExpectedVersion {
                kind: Some(expected_version::Kind::NoStream(Default::default())),
            }),
            events: vec![events::new_event(Event::BattleOpened(opened), String::new())],
        })
        .await
        .expect("battle opens");
}

fn roll_request(battle_id: &str, request_id: &str, expressions: &[&str]) -> RollRequest {
    RollRequest {
        battle_id: battle_id.into(),
        rolls: expressions.iter().map(|e| RollSpec { expression: (*e).into(), purpose: "test".into() }).collect(),
        actor: "pikachu".into(),
        request_id: request_id.into(),
        expected_head: None,
        for_action: None,
    }
}

async fn journaled(stack: &mut Stack, battle_id: &str) -> Vec<(battlelog_proto::v1::JournalRecord, Vec<u8>)> {
    let response = stack
        .journal
        .read_stream(ReadStreamRequest { stream_id: battle_id.into(), from_version: 0, max_count: 0 })
        .await
        .expect("read")
        .into_inner();
    response.events.into_iter().map(|e| (e.event.expect("record"), e.record)).collect()
}

fn master_key() -> Vec<u8> {
    hex::decode(MASTER_KEY).expect("hex")
}

#[tokio::test]
async fn a_roll_is_journaled_and_rederives_from_the_seed() {
    let mut stack = stack().await;
    open_battle(&mut stack, "b1", "forum:test/1").await;
    let response = stack.roller.roll(roll_request("b1", "r-1", &["4d6kh3", "1d20"])).await.expect("roll").into_inner();
    assert!(!response.replayed);
    assert_eq!(response.rolls.len(), 2);

    let records = journaled(&mut stack, "b1").await;
    assert_eq!(records.len(), 3, "BattleOpened and two DiceRolled");
    let seed = dice::ServerSeed::derive(&master_key(), "b1", 0);
    for (nonce, recorded) in response.rolls.iter().enumerate() {
        let roll = recorded.roll.as_ref().expect("roll");
        assert_eq!(roll.nonce, nonce as u64);
        assert_eq!(recorded.version, nonce as u64 + 1);
        // The same faces re-derived independently from the seed, the client seed and the nonce.
        let (_, expected) = dice::roll(&roll.expression, &seed, "forum:test/1", roll.nonce).expect("rederives");
        assert_eq!(roll.total, expected.total);
        assert_eq!(roll.dice.iter().map(events::die_from_proto).collect::<Vec<_>>(), expected.dice);
        // What was returned is exactly what the journal holds.
        let Event::DiceRolled(stored) = events::decode(&records[nonce + 1].0).expect("decodes") else {
            panic!("version {} is not DiceRolled", nonce + 1)
        };
        assert_eq!(&stored, roll);
    }
    assert!(response.rolls[0].rendering.starts_with("4d6kh3: ["), "{}", response.rolls[0].rendering);
}

#[tokio::test]
async fn a_repeated_request_id_returns_the_recorded_roll() {
    let mut stack = stack().await;
    open_battle(&mut stack, "b2", "").await;
    let first = stack.roller.roll(roll_request("b2", "same", &["1d1000000"])).await.expect("roll").into_inner();
    for _ in 0..5 {
        let again = stack.roller.roll(roll_request("b2", "same", &["1d1000000"])).await.expect("roll").into_inner();
        assert!(again.replayed);
        assert_eq!(again.rolls, first.rolls);
    }
    assert_eq!(journaled(&mut stack, "b2").await.len(), 2, "no roll was added by the retries");

    let reused = stack.roller.roll(roll_request("b2", "same", &["2d6"])).await.expect_err("key reuse");
    assert_eq!(reused.code(), Code::FailedPrecondition);
}

#[tokio::test]
async fn concurrent_rolls_from_two_replicas_get_consecutive_nonces() {
    let mut stack = stack().await;
    open_battle(&mut stack, "b3", "c").await;
    // A second replica over the same journal: the two race for versions.
    let other = RollerService::new(stack.journal.clone(), MasterKey::from_hex(MASTER_KEY).expect("key"));
    let mut tasks = Vec::new();
    for i in 0..24 {
        let replica = if i % 2 == 0 { stack.service.clone() } else { other.clone() };
        tasks.push(tokio::spawn(async move {
            replica.roll(Request::new(roll_request("b3", &format!("req-{i}"), &["1d6"]))).await
        }));
    }
    let mut nonces = BTreeSet::new();
    for task in tasks {
        let response = task.await.expect("task").expect("roll").into_inner();
        assert!(nonces.insert(response.rolls[0].roll.as_ref().expect("roll").nonce), "a nonce was reused");
    }
    assert_eq!(nonces, (0..24).collect::<BTreeSet<u64>>());
    let records = journaled(&mut stack, "b3").await;
    let journal_nonces: Vec<u64> = records[1..]
        .iter()
        .map(|(record, _)| match events::decode(record).expect("decodes") {
            Event::DiceRolled(roll) => roll.nonce,
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(journal_nonces, (0..24).collect::<Vec<u64>>(), "nonces follow journal order");
}

#[tokio::test]
async fn a_reveal_starts_a_new_epoch_and_later_rolls_use_it() {
    let mut stack = stack().await;
    open_battle(&mut stack, "b4", "seed").await;
    stack.roller.roll(roll_request("b4", "r1", &["1d6"])).await.expect("roll");
    let revealed = stack
        .roller
        .reveal(RevealRequest {
            battle_id: "b4".into(),
            closing: false,
            request_id: "rev-1".into(),
            requested_by: None,
        })
        .await
        .expect("reveal")
        .into_inner();
    let seed0 = dice::ServerSeed::derive(&master_key(), "b4", 0);
    let seed1 = dice::ServerSeed::derive(&master_key(), "b4", 1);
    assert_eq!(revealed.revealed.as_ref().expect("revealed").server_seed, seed0.to_hex());
    let next = revealed.next.as_ref().expect("next epoch");
    assert_eq!(next.commitment, seed1.commitment().to_string());
    assert_eq!(next.roller_key, roller_key().to_bytes(), "the next epoch names the roller key");
    assert_eq!(roller_key().verify("b4", 1, &next.commitment, &next.commitment_signature), Ok(()), "and is signed");
    let (journaled_next, _) = journaled(&mut stack, "b4").await.pop().expect("the SeedCommitted");
    assert_eq!(
        battlelog_proto::battle::decode(&journaled_next).expect("event"),
        Event::SeedCommitted(next.clone()),
        "journaled with its signature"
    );

    let later = stack.roller.roll(roll_request("b4", "r2", &["3d6"])).await.expect("roll").into_inner();
    let roll = later.rolls[0].roll.as_ref().expect("roll");
    assert_eq!((roll.epoch, roll.nonce), (1, 1), "the nonce goes on across epochs");
    let (_, expected) = dice::roll("3d6", &seed1, "seed", 1).expect("rederives");
    assert_eq!(roll.total, expected.total);

    // Closing reveals epoch 1 and commits nothing new: no roll is possible after.
    let closing = stack
        .roller
        .reveal(RevealRequest { battle_id: "b4".into(), closing: true, request_id: "rev-2".into(), requested_by: None })
        .await
        .expect("reveal")
        .into_inner();
    assert!(closing.next.is_none());
    let refused = stack.roller.roll(roll_request("b4", "r3", &["1d6"])).await.expect_err("no secret epoch left");
    assert_eq!(refused.code(), Code::FailedPrecondition);
}

#[tokio::test]
async fn the_master_key_never_reaches_the_journal() {
    let mut stack = stack().await;
    open_battle(&mut stack, "b5", "x").await;
    stack.roller.roll(roll_request("b5", "r", &["10d10"])).await.expect("roll");
    stack
        .roller
        .reveal(RevealRequest { battle_id: "b5".into(), closing: false, request_id: "v".into(), requested_by: None })
        .await
        .expect("reveal");
    let key = master_key();
    let signing_seed = hex::decode(SIGNING_SEED).expect("hex");
    for (_, bytes) in journaled(&mut stack, "b5").await {
        assert!(!bytes.windows(key.len()).any(|w| w == key.as_slice()), "master key bytes in a record");
        assert!(!bytes.windows(32).any(|w| w == signing_seed.as_slice()), "signing key bytes in a record");
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains(MASTER_KEY), "master key hex in a record");
        assert!(!text.contains(SIGNING_SEED), "signing key hex in a record");
    }
}

/// Every commitment comes signed with the key derived from the master key
/// (docs/PROTOCOL-signatures.md), the same on every replica.
#[tokio::test]
async fn commitments_are_signed_with_the_key_derived_from_the_master_key() {
    let mut stack = stack().await;
    let replica = RollerService::new(stack.journal.clone(), MasterKey::from_hex(MASTER_KEY).expect("key"));
    for epoch in [0, 1, 7] {
        let request = CommitmentRequest { battle_id: "b6".into(), epoch };
        let signed = stack.roller.commitment(request.clone()).await.expect("commitment").into_inner();
        assert_eq!(signed.commitment, dice::ServerSeed::derive(&master_key(), "b6", epoch).commitment().to_string());
        assert_eq!(signed.roller_key, roller_key().to_bytes());
        assert_eq!(roller_key().verify("b6", epoch, &signed.commitment, &signed.commitment_signature), Ok(()));
        let from_replica = replica.commitment(Request::new(request)).await.expect("commitment").into_inner();
        assert_eq!(from_replica, signed, "replicas sign alike: Ed25519 is deterministic");
    }
    let rendered = format!("{:?}", stack.service);
    assert!(!rendered.contains(SIGNING_SEED) && !rendered.contains(MASTER_KEY), "no secret in {rendered}");
}

#[tokio::test]
async fn a_failed_expression_still_spends_its_nonce() {
    let mut stack = stack().await;
    open_battle(&mut stack, "b6", "x").await;
    // 1d1 always shows 1, so this divides by zero on every seed.
    let response =
        stack.roller.roll(roll_request("b6", "r", &["1d6/(1d1-1)", "1d6"])).await.expect("roll").into_inner();
    let failed = response.rolls[0].roll.as_ref().expect("roll");
    assert_eq!(failed.error, "division by zero at 4");
    assert_eq!(failed.dice.len(), 2, "the dice drawn before the failure are journaled");
    assert_eq!(response.rolls[1].roll.as_ref().expect("roll").nonce, 1);
}

#[tokio::test]
async fn bad_input_is_invalid_argument_naming_the_field() {
    let mut stack = stack().await;
    open_battle(&mut stack, "b7", "x").await;
    let cases = [
        (roll_request("b7", "r", &["2d"]), "rolls[0].expression"),
        (roll_request("b7", "r", &["1d6", "1001d6"]), "rolls[1].expression"),
        (roll_request("b 7", "r", &["1d6"]), "battle_id"),
        (roll_request("b7", "", &["1d6"]), "request_id"),
        (roll_request("b7", "r", &[]), "rolls"),
        (roll_request("b7", "r", &["1000d6"; 11]), "rolls"),
    ];
    for (request, field) in cases {
        let status = stack.roller.roll(request).await.expect_err("refused");
        assert_eq!(status.code(), Code::InvalidArgument, "{field}: {status:?}");
        let details = status.get_error_details();
        let violations = &details.bad_request().expect("BadRequest detail").field_violations;
        assert_eq!(violations[0].field, field);
    }
    assert_eq!(journaled(&mut stack, "b7").await.len(), 1, "nothing was written");
    let missing = stack.roller.roll(roll_request("nobattle", "r", &["1d6"])).await.expect_err("no battle");
    assert_eq!(missing.code(), Code::NotFound);
}

/// Rolls, dice, reveals and commitments are counted once, when the journal
/// takes them: replays of a request add nothing.
#[tokio::test]
async fn rolls_reveals_and_commitments_are_counted_once() {
    let mut stack = stack().await;
    open_battle(&mut stack, "m1", "seed").await;
    assert_eq!(stack.metrics.counts(), [0, 0, 0, 1], "the opening's commitment");
    // 4d6kh3 draws four dice (one is dropped, but drawn), 1d20 one.
    stack.roller.roll(roll_request("m1", "r1", &["4d6kh3", "1d20"])).await.expect("roll");
    assert_eq!(stack.metrics.counts(), [2, 5, 0, 1]);
    let replayed = stack.roller.roll(roll_request("m1", "r1", &["4d6kh3", "1d20"])).await.expect("roll").into_inner();
    assert!(replayed.replayed);
    assert_eq!(stack.metrics.counts(), [2, 5, 0, 1], "a replay is not a roll");

    let reveal = |request_id: &str, closing: bool| RevealRequest {
        battle_id: "m1".into(),
        closing,
        request_id: request_id.into(),
        requested_by: None,
    };
    stack.roller.reveal(reveal("v1", false)).await.expect("reveal");
    assert_eq!(stack.metrics.counts(), [2, 5, 1, 2], "a reveal, and the next epoch's commitment");
    stack.roller.reveal(reveal("v1", false)).await.expect("reveal replayed");
    assert_eq!(stack.metrics.counts(), [2, 5, 1, 2], "a replayed reveal adds nothing");
    stack.roller.reveal(reveal("v2", true)).await.expect("closing reveal");
    assert_eq!(stack.metrics.counts(), [2, 5, 2, 2], "a closing reveal commits to no next epoch");
}
