//! The journal's backends side by side: `cargo bench -p battlelog-journal
//! --bench backends`.
//!
//! In one run, on one machine and one disk: `Journal::append` in process —
//! the planner and the store, no gRPC — at concurrency 1 and 64 on
//!
//! 1. sled (the data under the target dir),
//! 2. JetStream R1: one real `nats-server`, file storage, every write synced
//!    (`sync_interval: always`, as the shipped cluster configs),
//! 3. JetStream R3: a real three-node cluster on loopback (`NatsCluster`),
//!    every write synced on every node, a Raft quorum per append;
//!
//! and, to show what limits JetStream here, R1 again with JetStream's
//! default sync (not per write, so not what ships).
//!
//! Each client appends to a battle of its own, opened first (not measured):
//! one `DiceRolled` per append with the battle's next nonce, as the roller's.
//! It prints appends/s, p50 and p99 of each, and the aim of issue 19:
//! JetStream R3 at concurrency 64 at least half of sled's rate.
//! `BATTLELOG_BENCH_SECONDS` sets the seconds per case.

use std::sync::Arc;
use std::time::{Duration, Instant};

use battlelog_journal::store::EventStore;
use battlelog_journal::store::conformance::{opened, rolled};
use battlelog_journal::store::jetstream::{JetStreamOptions, JetStreamStore};
use battlelog_journal::{ExpectedVersion, Journal, SledStore};
use battlelog_test_support::bench::{Figures, figures, report, seconds_per_case};
use battlelog_test_support::{NatsCluster, NatsServer, poll_until};

// The allocator the journal binary runs with (see src/main.rs).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Appends for `run` from `concurrency` clients, each on its own battle.
async fn appends(journal: &Journal, label: &str, concurrency: usize, run: Duration) -> Figures {
    let mut tasks = Vec::new();
    for c in 0..concurrency {
        let journal = journal.clone();
        // Battle ids are [A-Za-z0-9_-]: anything else in the label becomes a dash.
        let label: String = label.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
        let stream = format!("{label}-{concurrency}-{c}");
        journal.append(stream.clone(), ExpectedVersion::NoStream, vec![opened("bench")]).await.expect("open");
        tasks.push(stream);
    }
    let start = Instant::now();
    let mut running = Vec::new();
    for stream in tasks {
        let journal = journal.clone();
        running.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut nonce = 0;
            while start.elapsed() < run {
                let t = Instant::now();
                journal.append(stream.clone(), ExpectedVersion::Any, vec![rolled(0, nonce)]).await.expect("append");
                latencies.push(t.elapsed());
                nonce += 1;
            }
            latencies
        }));
    }
    let mut all = Vec::new();
    for task in running {
        all.extend(task.await.expect("client"));
    }
    figures(all, start.elapsed())
}

/// Both concurrencies on one store.
async fn measure(name: &str, store: Arc<dyn EventStore>, run: Duration) -> [Figures; 2] {
    let journal = battlelog_journal::store::conformance::journal_on(store).await;
    // Warm up: connections, the stream's creation, the runtime's threads.
    appends(&journal, &format!("{name}-warm"), 4, Duration::from_millis(500)).await;
    let one = appends(&journal, name, 1, run).await;
    report(&format!("{name}, concurrency 1"), &one);
    let many = appends(&journal, name, 64, run).await;
    report(&format!("{name}, concurrency 64"), &many);
    journal.shutdown().await.expect("shutdown");
    [one, many]
}

async fn jetstream(urls: String, replicas: usize) -> Arc<dyn EventStore> {
    let options = JetStreamOptions { replicas, ..JetStreamOptions::new(urls) };
    // A cluster that has just formed may refuse to place a replicated
    // stream for a moment ("no suitable peers"): try until it takes it.
    let store = poll_until("the journal's JetStream stream", Duration::from_secs(30), || {
        let options = options.clone();
        async move { JetStreamStore::connect(options).await.inspect_err(|e| eprintln!("not yet: {e}")).ok() }
    })
    .await;
    Arc::new(store)
}

fn main() {
    let run = seconds_per_case();
    let base = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp dir");
    println!("journal backends: {} s per case, Journal::append in process", run.as_secs_f64());
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    runtime.block_on(async {
        let sled = SledStore::open(&base.path().join("sled"), 256 * 1024 * 1024, 1024).expect("open sled");
        let sled = measure("sled", Arc::new(sled), run).await;

        let config = base.path().join("r1.conf");
        // One append is one message: up to about 1.1 MiB at the default limits.
        std::fs::write(&config, "max_payload: 8MB\njetstream { sync_interval: always }\n")
            .expect("write the R1 config");
        let server = NatsServer::start_with_config(&config, &[]);
        let r1 = measure("JetStream R1", jetstream(server.url(), 1).await, run).await;
        drop(server);

        // What limits it: the same single node with JetStream's default
        // sync (every 2 minutes, not per write) — not what ships, because an
        // acknowledged write could then be lost on a power cut.
        let lazy = base.path().join("r1-lazy.conf");
        std::fs::write(&lazy, "max_payload: 8MB\n").expect("write the lazy R1 config");
        let server = NatsServer::start_with_config(&lazy, &[]);
        measure("JetStream R1, default sync", jetstream(server.url(), 1).await, run).await;
        drop(server);

        let cluster = NatsCluster::start("bench").await;
        let r3 = measure("JetStream R3", jetstream(cluster.client_urls_joined(), 3).await, run).await;
        drop(cluster);

        println!();
        for (name, [one, many]) in [("JetStream R1", r1), ("JetStream R3", r3)] {
            println!(
                "{name}: concurrency 64 at {:.2}× sled's rate; concurrency 1 p50 {:.2}× sled's",
                many.per_second / sled[1].per_second,
                one.p50.as_secs_f64() / sled[0].p50.as_secs_f64()
            );
        }
        let ratio = r3[1].per_second / sled[1].per_second;
        println!(
            "aim: JetStream R3 at concurrency 64 ≥ 0.5 × sled's rate: {ratio:.2}× — {}",
            if ratio >= 0.5 { "met" } else { "not met" }
        );
    });
}
