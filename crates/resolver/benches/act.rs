//! `Act` through the whole chain — resolver → roller → journal, each a real
//! gRPC server on loopback, the journal on sled in the target directory:
//! `cargo bench -p battlelog-resolver --bench act`.
//!
//! In one run it measures the baseline, one bare gRPC round trip (a
//! `grpc.health.v1` check on the resolver), then `Act` at concurrency 1 (one
//! battle) and 32 (32 battles, one player each: a busy forum), and 32
//! players on one battle (serialised by design). Each `Act` is a pbta move:
//! one 2d6 roll and one resolution, so two journal appends (two flushes).
//! `BATTLELOG_BENCH_SECONDS` sets the seconds per case (default 3).

use std::time::{Duration, Instant};

use battlelog_auth::{AuthChannel, authed};
use battlelog_proto::battle::json_to_struct;
use battlelog_proto::v1::journal_client::JournalClient;
use battlelog_proto::v1::resolver_client::ResolverClient;
use battlelog_proto::v1::{ActRequest, OpenBattleRequest};
use battlelog_roller::{MasterKey, RollerService};
use battlelog_test_support::TestAuth;
use battlelog_test_support::bench::{Figures, figures, report, seconds_per_case};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tonic::transport::{Channel, Endpoint};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;

// The allocator the service binaries run with.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

async fn listen() -> (TcpListener, String) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    (listener, url)
}

async fn channel(url: &str) -> Channel {
    Endpoint::from_shared(url.to_owned()).expect("url").connect().await.expect("connect")
}

fn object(value: Value) -> prost_types::Struct {
    json_to_struct(value.as_object().expect("an object"))
}

async fn open(resolver: &mut ResolverClient<AuthChannel>, battle_id: &str) {
    resolver
        .open_battle(OpenBattleRequest {
            ruleset: "pbta-2d6@1".into(),
            participants: vec![object(json!({"id": "ash", "traits": {"cool": 1}}))],
            client_seed: format!("bench/{battle_id}"),
            request_id: format!("open-{battle_id}"),
            battle_id: battle_id.into(),
            ..Default::default()
        })
        .await
        .expect("open");
}

/// `workers` tasks, worker `w` acting on `battle(w)`, for `run`.
async fn acts(
    resolver: &ResolverClient<AuthChannel>,
    workers: usize,
    battle: fn(usize) -> String,
    run: Duration,
    tag: &str,
) -> Figures {
    let start = Instant::now();
    let tasks: Vec<_> = (0..workers)
        .map(|w| {
            let mut resolver = resolver.clone();
            let battle_id = battle(w);
            let tag = tag.to_owned();
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                let mut i = 0;
                while start.elapsed() < run {
                    let action = object(json!({"type": "move", "actor": "ash", "trait": "cool", "stakes": "bench"}));
                    let request = ActRequest {
                        battle_id: battle_id.clone(),
                        action: Some(action),
                        request_id: format!("{tag}-{w}-{i}"),
                    };
                    let began = Instant::now();
                    resolver.act(request).await.expect("act");
                    latencies.push(began.elapsed());
                    i += 1;
                }
                latencies
            })
        })
        .collect();
    let mut latencies = Vec::new();
    for task in tasks {
        latencies.extend(task.await.expect("worker"));
    }
    figures(latencies, start.elapsed())
}

fn main() {
    let run = seconds_per_case();
    let seconds = run.as_secs();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    runtime.block_on(async move {
        // The target dir sits on the project's disk, like a real data dir.
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp dir");
        let journal =
            battlelog_journal::Journal::open(battlelog_journal::JournalOptions::new(dir.path().join("journal")))
                .await
                .expect("journal");
        let (listener, journal_url) = listen().await;
        let auth = TestAuth::generate();
        let token = auth.service_token();
        tokio::spawn(battlelog_journal::serve(journal.clone(), listener, auth.verifier(), std::future::pending()));
        let key = MasterKey::from_hex(&"42".repeat(32)).expect("key");
        let journal_client = JournalClient::new(authed(channel(&journal_url).await, &token).expect("token"));
        let roller = RollerService::new(journal_client, key);
        let (listener, roller_url) = listen().await;
        tokio::spawn(battlelog_roller::serve(roller, listener, auth.verifier(), std::future::pending()));
        let (listener, resolver_url) = listen().await;
        let service =
            battlelog_resolver::server::service_for(&journal_url, &roller_url, None, &token).expect("service");
        tokio::spawn(battlelog_resolver::serve(service, listener, auth.verifier(), std::future::pending()));
        let resolver_channel = channel(&resolver_url).await;
        let mut resolver = ResolverClient::new(authed(resolver_channel.clone(), &auth.forum()).expect("token"));

        println!("battlelog Act benchmark: {seconds} s per case");
        let mut health = HealthClient::new(resolver_channel);
        let start = Instant::now();
        let mut latencies = Vec::new();
        while start.elapsed() < run {
            let began = Instant::now();
            health.check(HealthCheckRequest { service: String::new() }).await.expect("health");
            latencies.push(began.elapsed());
        }
        let bare = figures(latencies, start.elapsed());
        report("baseline: bare gRPC round trip", &bare);

        open(&mut resolver, "solo").await;
        let one = acts(&resolver, 1, |_| "solo".to_owned(), run, "c1").await;
        report("Act, concurrency 1", &one);

        for w in 0..32 {
            open(&mut resolver, &format!("table-{w}")).await;
        }
        let many = acts(&resolver, 32, |w| format!("table-{w}"), run, "c32").await;
        report("Act, concurrency 32 (32 battles)", &many);

        open(&mut resolver, "crowd").await;
        let crowd = acts(&resolver, 32, |_| "crowd".to_owned(), run, "crowd").await;
        report("Act, concurrency 32 (one battle)", &crowd);

        println!(
            "Act p50 at concurrency 1 is {:.1}× a bare round trip; 32 battles give {:.1}× the throughput of one",
            one.p50.as_secs_f64() / bare.p50.as_secs_f64(),
            many.per_second / one.per_second
        );
        journal.shutdown().await.expect("journal shutdown");
    });
}
