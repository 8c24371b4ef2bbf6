//! issue 11's memory budget, through the real `battlelog up` process: 20 000
//! `Act`s over 2 000 battles, with the process's resident set (VmRSS from
//! /proc/<pid>/status) read before, right after, and after a few idle
//! seconds. The services keep folded battles only within `--cache-bytes`,
//! so what the process holds after the run stays within that budget plus
//! 100 MB (the runtime, sled's page cache of what was written, the
//! allocator's slack), however many battles and records went through — and
//! plus what the journal's battle index (issue 20) holds by design: an
//! entry per battle ([`battlelog_journal::index::entry_cost`]) and the one
//! page of the log it folds at a time; and what the journal's transparency
//! log (issue 23) holds: its tree, about two 32-byte hashes and an 8-byte
//! position a record (counted twice: its vectors grow by doubling), and
//! the page of the log its follower reads at a time.
//!
//! It runs in the ordinary debug test build in well under a minute on two
//! cores: 32 clients, each `Act` a pbta move (one 2d6 roll, two appends).

use std::time::{Duration, Instant};

use battlelog_auth::{Role, SigningKey, authed};
use battlelog_proto::battle::json_to_struct;
use battlelog_proto::v1 as pb;
use battlelog_proto::v1::resolver_client::ResolverClient;
use battlelog_test_support::stack;
use battlelog_test_support::{mib, rss_bytes};
use serde_json::{Value, json};

const BATTLES: usize = 2_000;
const ACTS: usize = 20_000;
const CLIENTS: usize = 32;
/// The budget given to `battlelog up` (all its fold caches together).
const CACHE_BYTES: u64 = 64 * 1024 * 1024;
/// What the process may hold beyond the cache budget.
const HEADROOM_BYTES: u64 = 100 * 1000 * 1000;
/// How long the process is left idle before the last reading.
const IDLE: Duration = Duration::from_secs(3);

fn object(value: Value) -> prost_types::Struct {
    json_to_struct(value.as_object().expect("an object"))
}

/// Runs `work(client, i)` for every `i` in `0..count`, `CLIENTS` at a time.
async fn in_parallel<F, Fut>(client: &ResolverClient<battlelog_auth::AuthChannel>, count: usize, work: F)
where
    F: Fn(ResolverClient<battlelog_auth::AuthChannel>, usize) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = ()> + Send,
{
    let tasks: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let (client, work) = (client.clone(), work.clone());
            tokio::spawn(async move {
                for i in (c..count).step_by(CLIENTS) {
                    work(client.clone(), i).await;
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("a client task");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_thousand_acts_over_two_thousand_battles_stay_within_the_cache_budget() {
    let dir = battlelog_test_support::temp_dir("memory");
    let budget = CACHE_BYTES.to_string();
    // One tenant drives the whole load: its rate limit (issue 18) would
    // refuse it, and this test measures memory, not the limit.
    let up = stack::up(dir.path(), &["--no-nats", "--cache-bytes", &budget, "--rate-limit-per-sec", "0"]);
    let pid = up.child.id();
    // A forum token of the development stack's tenant, signed with the key
    // `up` keeps under its data dir.
    let key = SigningKey::read(&dir.path().join("auth").join("signing-key.pem")).expect("up's signing key");
    let token = key.issue("memory-test", "dev", Role::Forum, Duration::from_secs(3600)).expect("a token");
    let channel = tonic::transport::Endpoint::from_shared(up.resolver.clone())
        .expect("url")
        .connect()
        .await
        .expect("connect to the resolver");
    let client = ResolverClient::new(authed(channel, &token).expect("token"));

    let before = rss_bytes(pid);
    let started = Instant::now();
    in_parallel(&client, BATTLES, |mut client, b| async move {
        client
            .open_battle(pb::OpenBattleRequest {
                battle_id: format!("mem-{b}"),
                ruleset: "pbta-2d6@1".into(),
                participants: vec![object(json!({"id": "ash", "traits": {"cool": 1}}))],
                client_seed: format!("memory/{b}"),
                request_id: format!("open-{b}"),
                ..Default::default()
            })
            .await
            .expect("open");
    })
    .await;
    // Act i goes to battle i mod 2000: every battle is touched again only
    // after all the others, the worst order for a cache.
    in_parallel(&client, ACTS, |mut client, i| async move {
        let action = json!({"type": "move", "actor": "ash", "trait": "cool", "stakes": "memory"});
        let response = client
            .act(pb::ActRequest {
                battle_id: format!("mem-{}", i % BATTLES),
                action: Some(object(action)),
                request_id: format!("act-{i}"),
                ..Default::default()
            })
            .await
            .expect("act")
            .into_inner();
        assert_eq!(response.rolls.len(), 1, "a move rolls once");
    })
    .await;
    let took = started.elapsed();
    let after = rss_bytes(pid);
    tokio::time::sleep(IDLE).await;
    let idle = rss_bytes(pid);

    // The index's entries of these battles (ids `mem-<b>`, tenant `dev`, no
    // title or forum reference) and the page of the log it reads at a time.
    let index_bytes: u64 = (0..BATTLES)
        .map(|b| battlelog_journal::index::entry_cost(&format!("mem-{b}"), "dev", "pbta-2d6@1", "", "") as u64)
        .sum::<u64>()
        + battlelog_runtime::limits::MAX_PAGE_BYTES as u64;
    // At most: each battle's opening and its seed events, and each `Act`'s
    // roll and resolution.
    let records = (BATTLES * 4 + ACTS * 2) as u64;
    let tree_bytes = records * 2 * (2 * 32 + 8) + battlelog_runtime::limits::MAX_PAGE_BYTES as u64;
    let limit = CACHE_BYTES + HEADROOM_BYTES + index_bytes + tree_bytes;
    println!(
        "battlelog up, {ACTS} Acts over {BATTLES} battles by {CLIENTS} clients in {:.1} s ({:.0} Acts/s): \
         RSS before {:.1} MiB, after {:.1} MiB, after {} s idle {:.1} MiB; cache budget {:.1} MiB, limit {:.1} MiB",
        took.as_secs_f64(),
        ACTS as f64 / took.as_secs_f64(),
        mib(before),
        mib(after),
        IDLE.as_secs(),
        mib(idle),
        mib(CACHE_BYTES),
        mib(limit)
    );
    assert!(after <= limit, "RSS after the run is {:.1} MiB, over the limit of {:.1} MiB", mib(after), mib(limit));
    assert!(idle <= limit, "RSS after idling is {:.1} MiB, over the limit of {:.1} MiB", mib(idle), mib(limit));
}
