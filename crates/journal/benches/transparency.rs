//! What the transparency log (docs/protocol.md §5) costs:
//! `cargo bench -p battlelog-journal --bench transparency`.
//!
//! In one run:
//! 1. appends at concurrency 64 on two sled journals, one with the
//!    transparency log on and one with it off (`TransparencyOptions::off`,
//!    which no configuration can ask for), in four rounds, off first in even
//!    rounds and on first in odd ones, so that neither always runs on the
//!    warmer machine: over gRPC (what a roller or resolver sees) and
//!    `Journal::append` in process (the sharpest view of the follower's and
//!    signer's share). The aim: on is less than 10 % slower over gRPC.
//! 2. a `Tree` of 10 million generated leaf hashes (`BATTLELOG_BENCH_LEAVES`
//!    to change it): how long filling it takes and its memory, then the
//!    cost of an inclusion proof and of a consistency proof at that size
//!    (random indexes and old sizes; each proof is verified once, outside
//!    the timing, so that the figures are of correct proofs).
//!
//! Each append case runs `BATTLELOG_BENCH_SECONDS` (default 3).

use std::time::{Duration, Instant};

use battlelog_journal::{Journal, JournalOptions, TransparencyOptions};
use battlelog_proto::v1 as pb;
use battlelog_proto::v1::journal_client::JournalClient;
use battlelog_test_support::bench::{Figures, figures, report, seconds_per_case};
use tokio::net::TcpListener;
use tonic::transport::Endpoint;

// The allocator the journal binary runs with (see src/main.rs).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod battle;
use battle::{PAYLOAD, direct, gather, opening, roll};

const CONCURRENCY: usize = 64;

/// A journal on sled in `dir`, served on a loopback port: its URL, and how
/// to stop the server.
struct Served {
    journal: Journal,
    url: String,
    stop: tokio::sync::oneshot::Sender<()>,
    server: tokio::task::JoinHandle<Result<(), battlelog_journal::ServeError>>,
}

async fn serve(dir: &std::path::Path, transparency: TransparencyOptions) -> Served {
    let options = JournalOptions { transparency, ..JournalOptions::new(dir) };
    let journal = Journal::open(options).await.expect("open journal");
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let verifier = battlelog_test_support::TestAuth::shared().verifier();
    let server = tokio::spawn(battlelog_journal::serve(
        journal.clone(),
        listener,
        battlelog_runtime::serve::GrpcServer::new("journal", verifier),
        async {
            let _ = stopped.await;
        },
    ));
    Served { journal, url, stop, server }
}

impl Served {
    async fn stop(self) {
        let _ = self.stop.send(());
        self.server.await.expect("server task").expect("serve");
        self.journal.shutdown().await.expect("shutdown");
    }
}

/// `CONCURRENCY` clients over a few shared connections, each appending
/// single rolls to a battle of its own (`label` keeps battles apart).
async fn grpc_appends(url: &str, label: &str, run: Duration) -> Figures {
    let mut channels = Vec::new();
    for _ in 0..4 {
        channels.push(
            Endpoint::from_shared(url.to_owned()).expect("url").tcp_nodelay(true).connect().await.expect("connect"),
        );
    }
    let start = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..CONCURRENCY {
        let token = battlelog_test_support::TestAuth::shared().service_token();
        let channel = battlelog_auth::authed(channels[c % channels.len()].clone(), &token).expect("token");
        let mut client = JournalClient::new(channel);
        let stream = format!("{label}-{c}");
        tasks.push(tokio::spawn(async move {
            let request = |event: pb::NewEvent| pb::AppendRequest {
                stream_id: stream.clone(),
                expected_version: Some(pb::ExpectedVersion {
                    kind: Some(pb::expected_version::Kind::Any(pb::expected_version::Any {})),
                }),
                events: vec![event],
            };
            client.append(request(opening())).await.expect("open");
            let mut latencies = Vec::new();
            let mut nonce = 0;
            while start.elapsed() < run {
                let request = request(roll(nonce));
                nonce += 1;
                let t = Instant::now();
                client.append(request).await.expect("append");
                latencies.push(t.elapsed());
            }
            latencies
        }));
    }
    gather(tasks, start).await
}

/// The same in process: `Journal::append`, no gRPC.
async fn direct_appends(journal: &Journal, label: &str, run: Duration) -> Figures {
    let start = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..CONCURRENCY {
        let journal = journal.clone();
        let stream = format!("{label}-{c}");
        tasks.push(tokio::spawn(async move {
            let any = battlelog_journal::ExpectedVersion::Any;
            journal.append(stream.clone(), any, vec![direct(opening())]).await.expect("open");
            let mut latencies = Vec::new();
            let mut nonce = 0;
            while start.elapsed() < run {
                let event = direct(roll(nonce));
                nonce += 1;
                let t = Instant::now();
                journal.append(stream.clone(), any, vec![event]).await.expect("append");
                latencies.push(t.elapsed());
            }
            latencies
        }));
    }
    gather(tasks, start).await
}

/// A small deterministic generator (splitmix64) for leaf hashes, indexes
/// and sizes: the same tree and the same proofs every run.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn hash(&mut self) -> [u8; 32] {
        let mut hash = [0u8; 32];
        for chunk in hash.chunks_mut(8) {
            chunk.copy_from_slice(&self.next().to_le_bytes());
        }
        hash
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn append_cases(run: Duration) {
    let base = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp dir");
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    runtime.block_on(async {
        let key = battlelog_tlog::LogKey::from_seed("bench.example/journal", [9; 32]).expect("key");
        let on = serve(
            &base.path().join("on"),
            TransparencyOptions::with_key(key, battlelog_journal::merkle_log::DEFAULT_CHECKPOINT_INTERVAL),
        )
        .await;
        let off = serve(&base.path().join("off"), TransparencyOptions::off()).await;
        // Warm both servers' connections and threads first.
        grpc_appends(&on.url, "warm", Duration::from_millis(500)).await;
        grpc_appends(&off.url, "warm", Duration::from_millis(500)).await;

        let (mut grpc_on, mut grpc_off, mut direct_on, mut direct_off) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        // Off first in even rounds, on first in odd ones: neither always
        // runs on the journal warmed by the other's case.
        for round in 0..4 {
            for on_now in [round % 2 == 1, round % 2 == 0] {
                let (served, grpc, direct, name) = if on_now {
                    (&on, &mut grpc_on, &mut direct_on, "on ")
                } else {
                    (&off, &mut grpc_off, &mut direct_off, "off")
                };
                let f = grpc_appends(&served.url, &format!("g{round}"), run).await;
                report(&format!("gRPC append c{CONCURRENCY}, log {name} (round {round})"), &f);
                grpc.push(f.per_second);
                let f = direct_appends(&served.journal, &format!("d{round}"), run).await;
                report(&format!("in-process c{CONCURRENCY}, log {name} (round {round})"), &f);
                direct.push(f.per_second);
            }
        }
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        let cost = |on: &[f64], off: &[f64]| 100.0 * (1.0 - mean(on) / mean(off));
        let grpc_cost = cost(&grpc_on, &grpc_off);
        println!();
        println!(
            "gRPC: log on {:.0} appends/s vs off {:.0}: {grpc_cost:.1} % lower (aim < 10 %): {}",
            mean(&grpc_on),
            mean(&grpc_off),
            if grpc_cost < 10.0 { "PASS" } else { "FAIL" }
        );
        println!(
            "in process: log on {:.0} appends/s vs off {:.0}: {:.1} % lower",
            mean(&direct_on),
            mean(&direct_off),
            cost(&direct_on, &direct_off)
        );
        let checkpoint = on.journal.checkpoint().expect("the log-on journal signed checkpoints");
        println!(
            "log-on journal: tree of {} leaves, {} bytes of tree and positions; newest checkpoint {} leaves",
            on.journal.tree_size(),
            on.journal.tree_memory_bytes(),
            checkpoint.size
        );
        on.stop().await;
        off.stop().await;
    });
}

fn proof_cases(leaves: u64) {
    let mut rng = SplitMix(23);
    let start = Instant::now();
    let mut tree = battlelog_tlog::Tree::new();
    for _ in 0..leaves {
        tree.push(rng.hash());
    }
    let filled = start.elapsed();
    let root = tree.root(leaves).expect("root");
    println!(
        "tree of {leaves} generated leaves: filled in {:.2} s ({:.0} ns a leaf), {:.0} MiB ({:.1} bytes a leaf)",
        filled.as_secs_f64(),
        filled.as_nanos() as f64 / leaves as f64,
        tree.memory_bytes() as f64 / (1024.0 * 1024.0),
        tree.memory_bytes() as f64 / leaves as f64
    );

    // Each proof checked once (outside the timing): the figures are of
    // proofs that verify.
    const PROOFS: usize = 20_000;
    let indexes: Vec<u64> = (0..PROOFS).map(|_| rng.below(leaves)).collect();
    let probe = indexes[0];
    // The probe's leaf, generated again from the same seed.
    let mut leaf_rng = SplitMix(23);
    let probe_leaf = (0..=probe).map(|_| leaf_rng.hash()).last().expect("at least one leaf");
    let proof = tree.inclusion_proof(probe, leaves).expect("inclusion proof");
    battlelog_tlog::verify_inclusion(probe, leaves, &probe_leaf, &proof, &root).expect("it verifies");
    let mut latencies = Vec::with_capacity(PROOFS);
    let t = Instant::now();
    for &index in &indexes {
        let s = Instant::now();
        let proof = tree.inclusion_proof(index, leaves).expect("inclusion proof");
        latencies.push(s.elapsed());
        std::hint::black_box(proof);
    }
    report(&format!("inclusion proof at {leaves} leaves"), &figures(latencies, t.elapsed()));

    let olds: Vec<u64> = (0..PROOFS).map(|_| 1 + rng.below(leaves - 1)).collect();
    let old = olds[0];
    let proof = tree.consistency_proof(old, leaves).expect("consistency proof");
    let old_root = tree.root(old).expect("old root");
    battlelog_tlog::verify_consistency(old, &old_root, leaves, &root, &proof).expect("it verifies");
    let mut latencies = Vec::with_capacity(PROOFS);
    let t = Instant::now();
    for &old in &olds {
        let s = Instant::now();
        let proof = tree.consistency_proof(old, leaves).expect("consistency proof");
        latencies.push(s.elapsed());
        std::hint::black_box(proof);
    }
    report(&format!("consistency proof at {leaves} leaves"), &figures(latencies, t.elapsed()));
    let mut latencies = Vec::with_capacity(1000);
    let t = Instant::now();
    for _ in 0..1000 {
        let s = Instant::now();
        std::hint::black_box(tree.root(leaves).expect("root"));
        latencies.push(s.elapsed());
    }
    report(&format!("root at {leaves} leaves (a checkpoint)"), &figures(latencies, t.elapsed()));
}

fn main() {
    let run = seconds_per_case();
    let leaves = std::env::var("BATTLELOG_BENCH_LEAVES").ok().and_then(|s| s.parse().ok()).unwrap_or(10_000_000u64);
    println!(
        "transparency log benchmark: {} s per append case, concurrency {CONCURRENCY}, {PAYLOAD}-byte payloads; \
         proofs at {leaves} leaves",
        run.as_secs_f64()
    );
    append_cases(run);
    println!();
    proof_cases(leaves.max(2));
}
