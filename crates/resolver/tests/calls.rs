//! What one `Act` costs the journal (issue 11): a battle the resolver has
//! cached is not read again before a command, the roller is told the head
//! instead of reading it, and what both append is folded from what they
//! sent. The journal here is served bare, with a hook that counts the calls
//! it serves; the roller and the resolver are their own servers.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use battlelog_auth::AuthChannel;
use battlelog_journal::service::JournalService;
use battlelog_proto::battle::json_to_struct;
use battlelog_proto::v1::journal_server::JournalServer;
use battlelog_proto::v1::resolver_client::ResolverClient;
use battlelog_proto::v1::roller_client::RollerClient;
use battlelog_proto::v1::{ActRequest, GetBattleRequest, OpenBattleRequest, RollRequest, RollSpec};
use battlelog_test_support::{TestAuth, authed_channel, loopback_listener};
use serde_json::{Value, json};
use tonic::transport::Server;

/// Stream reads and appends the journal has served.
#[derive(Debug, Default)]
struct Calls {
    reads: AtomicU64,
    appends: AtomicU64,
}

impl Calls {
    fn now(&self) -> (u64, u64) {
        (self.reads.load(Ordering::SeqCst), self.appends.load(Ordering::SeqCst))
    }
}

struct Stack {
    calls: Arc<Calls>,
    resolver: ResolverClient<AuthChannel>,
    roller: RollerClient<AuthChannel>,
    _dir: tempfile::TempDir,
}

/// The chain, the resolver keeping at most `cache_bytes` of battles.
async fn stack(cache_bytes: u64) -> Stack {
    let dir = tempfile::tempdir().expect("temp dir");
    let journal = battlelog_journal::Journal::open(battlelog_journal::JournalOptions::new(dir.path()))
        .await
        .expect("journal opens");
    let calls = Arc::new(Calls::default());
    let counted = calls.clone();
    let (listener, journal_url) = loopback_listener().await;
    tokio::spawn(
        Server::builder()
            .trace_fn(move |request| {
                let path = request.uri().path();
                if path.ends_with("/ReadStream") {
                    counted.reads.fetch_add(1, Ordering::SeqCst);
                } else if path.ends_with("/Append") {
                    counted.appends.fetch_add(1, Ordering::SeqCst);
                }
                tracing::Span::none()
            })
            .add_service(JournalServer::new(JournalService::new(journal)))
            .serve_with_incoming(battlelog_runtime::grpc::incoming(listener)),
    );
    let auth = TestAuth::shared();
    let chain =
        common::serve_chain(&journal_url, &"11".repeat(32), |service| service.with_cache_bytes(cache_bytes)).await;
    let (resolver_url, roller_url, token) = (chain.resolver_url, chain.roller_url, auth.service_token());
    Stack {
        calls,
        resolver: ResolverClient::new(authed_channel(&resolver_url, &auth.forum())),
        roller: RollerClient::new(authed_channel(&roller_url, &token)),
        _dir: dir,
    }
}

fn object(value: Value) -> prost_types::Struct {
    json_to_struct(value.as_object().expect("an object"))
}

async fn open(stack: &mut Stack, battle_id: &str) {
    stack
        .resolver
        .open_battle(OpenBattleRequest {
            battle_id: battle_id.into(),
            ruleset: "pbta-2d6@1".into(),
            participants: vec![object(json!({"id": "ash", "traits": {"cool": 1}}))],
            client_seed: format!("calls/{battle_id}"),
            request_id: format!("open-{battle_id}"),
            ..Default::default()
        })
        .await
        .expect("open");
}

/// A pbta move (one 2d6 roll); returns the resolution's version and nonces.
async fn act(stack: &mut Stack, battle_id: &str, request_id: &str) -> (u64, Vec<u64>) {
    let action = json!({"type": "move", "actor": "ash", "trait": "cool", "stakes": "x"});
    let request = ActRequest {
        battle_id: battle_id.into(),
        action: Some(object(action)),
        request_id: request_id.into(),
        ..Default::default()
    };
    let response = stack.resolver.act(request).await.expect("act").into_inner();
    (response.version, response.resolved.expect("resolved").rolls)
}

#[tokio::test]
async fn a_warm_act_reads_nothing_and_appends_twice() {
    let mut stack = stack(battlelog_stream::DEFAULT_CACHE_BYTES).await;
    open(&mut stack, "warm").await;
    act(&mut stack, "warm", "a-0").await;
    let before = stack.calls.now();
    for i in 1..=5 {
        let (version, nonces) = act(&mut stack, "warm", &format!("a-{i}")).await;
        assert_eq!((version, nonces), (2 * i + 2, vec![i]), "act {i}: its roll, then its resolution");
    }
    let after = stack.calls.now();
    assert_eq!((after.0 - before.0, after.1 - before.1), (0, 10), "(stream reads, appends) for five warm Acts");
    // An idempotent retry answers from the journal: it reads, never appends.
    let (version, nonces) = act(&mut stack, "warm", "a-3").await;
    assert_eq!((version, nonces), (8, vec![3]));
    assert_eq!(stack.calls.now().1, after.1, "a replay appends nothing");
}

/// A roll behind the resolver's back leaves its cached view stale: the
/// next `Act` finds out from the journal's expected version, reads, and
/// writes at the real head.
#[tokio::test]
async fn a_stale_view_is_caught_by_the_expected_version() {
    let mut stack = stack(battlelog_stream::DEFAULT_CACHE_BYTES).await;
    open(&mut stack, "stale").await;
    act(&mut stack, "stale", "a-0").await;
    let elsewhere = RollRequest {
        battle_id: "stale".into(),
        rolls: vec![RollSpec { expression: "1d6".into(), purpose: "another replica".into() }],
        actor: "ash".into(),
        request_id: "elsewhere".into(),
        expected_head: None,
        for_action: None,
    };
    stack.roller.roll(elsewhere).await.expect("a roll the resolver did not ask for");
    let (version, nonces) = act(&mut stack, "stale", "a-1").await;
    assert_eq!((version, nonces), (5, vec![2]), "after the foreign roll at version 3 (nonce 1)");
    let got = stack.resolver.get_battle(GetBattleRequest { battle_id: "stale".into(), at_version: None });
    let got = got.await.expect("get").into_inner();
    assert_eq!((got.version, got.next_nonce), (5, 3));
}

/// With a cache too small to keep any battle, every command reads its
/// battle afresh, and the answers are the same.
#[tokio::test]
async fn a_cache_too_small_for_any_battle_only_costs_reads() {
    let mut stack = stack(1).await;
    open(&mut stack, "tiny").await;
    for i in 0..3 {
        let before = stack.calls.now();
        let (version, nonces) = act(&mut stack, "tiny", &format!("a-{i}")).await;
        assert_eq!((version, nonces), (2 * i + 2, vec![i]));
        let after = stack.calls.now();
        assert_eq!(after.1 - before.1, 2, "two appends per Act");
        assert!(after.0 > before.0, "an evicted battle is read again");
    }
}
