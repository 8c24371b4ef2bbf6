//! Append benchmark: `cargo bench -p battlelog-journal --bench append`.
//!
//! In one run, on one disk (the target dir's tmp), it measures:
//! 1. the floor — raw sled `insert` + `flush`, one at a time; and what an
//!    append's four writes cost on raw sled as one `apply_batch` (sled's
//!    atomic batch, the mechanism of its transactions) + `flush`, and as four
//!    plain inserts + `flush` (what the journal's sled store does, see
//!    src/store/sled.rs);
//! 2. one bare gRPC round trip (a `grpc.health.v1` check) to the same server;
//! 3. single-event appends over gRPC at concurrency 1, 16 and 64, one
//!    `Append` call each; and at concurrency 1 and 64 through the services'
//!    own journal client (`battlelog_stream::StreamClient`, one connection,
//!    with an exact expected version as the roller's and the resolver's
//!    appends have), which sends appends that queue up behind the calls in
//!    flight together in one `AppendBatch`;
//!
//! Each client appends to a battle of its own, which it opens first (that
//! append is not measured): one `DiceRolled` per append with the battle's
//! next nonce (about `PAYLOAD` bytes), so every append passes the battle
//! guard as the roller's do, decoding included.
//!
//! and checks the targets:
//!
//! 1. at concurrency 64, through the services' client, the journal sustains
//!    ≥ 50 % of the bare gRPC round-trip rate at concurrency 64 (what the transport carries), *and*
//!    ≥ 3× the raw one-at-a-time rate (group commit) whenever one flush
//!    costs more than the journal's CPU per append — on a fast disk a flush
//!    is cheaper than the work it groups, and nothing is left for group
//!    commit to hide (issue 24). The CPU per append is the process's CPU
//!    time (`/proc/self/stat`, user + system) over the in-process
//!    `Journal::append` case at concurrency 64, divided by its appends;
//! 2. at concurrency 1 its p50 is within 2× of (raw insert + flush p50 +
//!    round trip p50).
//!
//! Each case runs for a few seconds. Set `BATTLELOG_BENCH_SECONDS` to change the per-case duration.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use battlelog_journal::{Journal, JournalOptions};
use battlelog_proto::v1 as pb;
use battlelog_proto::v1::journal_client::JournalClient;
use battlelog_test_support::bench::{Figures, figures, report, seconds_per_case};
use tokio::net::TcpListener;
use tonic::transport::{Channel, Endpoint};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;

// The allocator the journal binary runs with (see src/main.rs).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod battle;
use battle::{PAYLOAD, direct, gather, opening, roll};

fn raw_sled(dir: &Path, run: Duration) -> Figures {
    let db = sled::Config::new().path(dir).open().expect("open sled");
    let tree = db.open_tree("raw").expect("tree");
    let value = vec![7u8; PAYLOAD + 100];
    let mut latencies = Vec::new();
    let start = Instant::now();
    let mut i = 0u64;
    while start.elapsed() < run {
        let t = Instant::now();
        tree.insert(i.to_be_bytes(), value.as_slice()).expect("insert");
        db.flush().expect("flush");
        latencies.push(t.elapsed());
        i += 1;
    }
    figures(latencies, start.elapsed())
}

/// An append's worth of writes (record, global entry, head, idempotency
/// entry) on raw sled, then a flush: as one atomic batch, or as plain inserts.
fn raw_sled_four(dir: &Path, run: Duration, atomic: bool) -> Figures {
    let db = sled::Config::new().path(dir).open().expect("open sled");
    let value = vec![7u8; PAYLOAD + 100];
    let mut latencies = Vec::new();
    let start = Instant::now();
    let mut i = 0u64;
    while start.elapsed() < run {
        let key = i.to_be_bytes();
        let writes = [
            ([&b"r"[..], &key].concat(), value.clone()),
            ([&b"g"[..], &key].concat(), key.to_vec()),
            ([&b"h"[..], &key[..2]].concat(), key.to_vec()),
            ([&b"i"[..], &key].concat(), key.to_vec()),
        ];
        let t = Instant::now();
        if atomic {
            let mut batch = sled::Batch::default();
            for (k, v) in writes {
                batch.insert(k, v);
            }
            db.apply_batch(batch).expect("apply_batch");
        } else {
            for (k, v) in writes {
                db.insert(k, v).expect("insert");
            }
        }
        db.flush().expect("flush");
        latencies.push(t.elapsed());
        i += 1;
    }
    figures(latencies, start.elapsed())
}

async fn channel(url: &str) -> Channel {
    Endpoint::from_shared(url.to_owned()).expect("url").tcp_nodelay(true).connect().await.expect("connect")
}

async fn round_trips(url: &str, run: Duration) -> Figures {
    let mut health = HealthClient::new(channel(url).await);
    let mut latencies = Vec::new();
    let start = Instant::now();
    while start.elapsed() < run {
        let t = Instant::now();
        health.check(HealthCheckRequest { service: String::new() }).await.expect("health");
        latencies.push(t.elapsed());
    }
    figures(latencies, start.elapsed())
}

async fn round_trips_concurrent(url: &str, concurrency: usize, run: Duration) -> Figures {
    let mut channels = Vec::new();
    for _ in 0..concurrency.min(4) {
        channels.push(channel(url).await);
    }
    let start = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..concurrency {
        let mut health = HealthClient::new(channels[c % channels.len()].clone());
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            while start.elapsed() < run {
                let t = Instant::now();
                health.check(HealthCheckRequest { service: String::new() }).await.expect("health");
                latencies.push(t.elapsed());
            }
            latencies
        }));
    }
    gather(tasks, start).await
}

/// The CPU time this process has used so far (user + system), from
/// `/proc/self/stat`; `None` where there is no such file.
fn process_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The fields after the command name (which may hold spaces, hence the
    // last parenthesis): utime and stime are the 12th and 13th of those.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // USER_HZ is 100 on every Linux the project runs on.
    Some(Duration::from_millis(ticks * 10))
}

/// The storage path alone: `Journal::append` in process, no gRPC.
async fn direct_appends(journal: &Journal, concurrency: usize, run: Duration) -> Figures {
    let start = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..concurrency {
        let journal = journal.clone();
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let stream = format!("direct-{concurrency}-{c}");
            let any = battlelog_journal::ExpectedVersion::Any;
            journal.append(stream.clone(), any, vec![direct(opening())]).await.expect("open");
            let mut nonce = 0;
            while start.elapsed() < run {
                let event = direct(roll(nonce));
                nonce += 1;
                let t = Instant::now();
                journal
                    .append(stream.clone(), battlelog_journal::ExpectedVersion::Any, vec![event])
                    .await
                    .expect("append");
                latencies.push(t.elapsed());
            }
            latencies
        }));
    }
    gather(tasks, start).await
}

async fn appends(url: &str, concurrency: usize, run: Duration) -> Figures {
    // A few HTTP/2 connections shared by the clients, as a service's pool would.
    let mut channels = Vec::new();
    for _ in 0..concurrency.min(4) {
        channels.push(channel(url).await);
    }
    let start = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..concurrency {
        let channel = channels[c % channels.len()].clone();
        let token = battlelog_test_support::TestAuth::shared().service_token();
        let mut client = JournalClient::new(battlelog_auth::authed(channel, &token).expect("token"));
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let stream = format!("bench-{concurrency}-{c}");
            let request = |event: pb::NewEvent| pb::AppendRequest {
                stream_id: stream.clone(),
                expected_version: Some(pb::ExpectedVersion {
                    kind: Some(pb::expected_version::Kind::Any(pb::expected_version::Any {})),
                }),
                events: vec![event],
            };
            client.append(request(opening())).await.expect("open");
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

/// Appends through the services' journal client, as the roller and the
/// resolver make them: one connection, one `StreamClient` shared by every
/// caller, each append guarded by the exact version it follows.
async fn client_appends(url: &str, concurrency: usize, run: Duration) -> Figures {
    let token = battlelog_test_support::TestAuth::shared().service_token();
    let channel = battlelog_auth::authed(channel(url).await, &token).expect("token");
    let streams = battlelog_stream::StreamClient::new(JournalClient::new(channel));
    let start = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..concurrency {
        let streams = streams.clone();
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let stream = format!("client-{concurrency}-{c}");
            let opened = streams.append(&stream, None, vec![opening()]).await.expect("open");
            let mut head = opened.events[0].version;
            let mut nonce = 0;
            while start.elapsed() < run {
                let event = roll(nonce);
                nonce += 1;
                let t = Instant::now();
                let appended = streams.append(&stream, Some(head), vec![event]).await.expect("append");
                latencies.push(t.elapsed());
                head = appended.events[0].version;
            }
            latencies
        }));
    }
    gather(tasks, start).await
}

fn main() {
    let run = seconds_per_case();
    let seconds = run.as_secs_f64();
    // The target dir's tmp: the same disk for the floor and the journal.
    let base = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp dir");
    println!("journal append benchmark: {seconds} s per case, {PAYLOAD}-byte payloads, data under the target dir");

    let raw = raw_sled(&base.path().join("raw"), run);
    report("raw sled insert+flush (1 at a time)", &raw);
    let short = run.min(Duration::from_secs(2));
    report("raw sled apply_batch(4)+flush", &raw_sled_four(&base.path().join("batch"), short, true));
    report("raw sled 4 inserts+flush", &raw_sled_four(&base.path().join("inserts"), short, false));

    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    runtime.block_on(async {
        let journal = Journal::open(JournalOptions::new(base.path().join("journal"))).await.expect("open journal");
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

        // Warm the connection and the runtime's threads first, so that the
        // baseline is a steady-state round trip, not a cold start.
        round_trips(&url, Duration::from_millis(500)).await;
        let rtt = round_trips(&url, run).await;
        report("bare gRPC round trip (health)", &rtt);
        let mut results = Vec::new();
        let stats = journal.commit_stats().expect("a sled journal counts its group commits");
        let counts = || {
            let load = |c: &std::sync::atomic::AtomicU64| c.load(Ordering::Relaxed);
            (load(&stats.groups), load(&stats.appends), load(&stats.alone))
        };
        let groups_since = |(g0, a0, l0): (u64, u64, u64)| {
            let (g1, a1, l1) = counts();
            println!(
                "{:<34} {:.1} appends per group commit (one group write, one flush); {:.0} % committed alone",
                "",
                (a1 - a0) as f64 / (g1 - g0).max(1) as f64,
                100.0 * (l1 - l0) as f64 / (a1 - a0).max(1) as f64
            );
        };
        for concurrency in [1, 16, 64] {
            let before = counts();
            let f = appends(&url, concurrency, run).await;
            report(&format!("journal Append, concurrency {concurrency}"), &f);
            groups_since(before);
            results.push((concurrency, f));
        }

        let mut batched = Vec::new();
        for concurrency in [1, 64] {
            let before = counts();
            let f = client_appends(&url, concurrency, run).await;
            report(&format!("services' client, concurrency {concurrency}"), &f);
            groups_since(before);
            batched.push(f);
        }

        println!("-- what limits it --");
        let f = round_trips_concurrent(&url, 64, run.min(Duration::from_secs(2))).await;
        report("bare gRPC round trip, concurrency 64", &f);
        let bare_c64 = f;
        let mut cpu_per_append = None;
        for concurrency in [1, 64] {
            let cpu_before = process_cpu();
            let f = direct_appends(&journal, concurrency, run.min(Duration::from_secs(2))).await;
            report(&format!("Journal::append in process, conc. {concurrency}"), &f);
            if concurrency == 64 {
                cpu_per_append = process_cpu().zip(cpu_before).map(|(after, before)| (after - before) / f.ops as u32);
            }
        }

        let c1 = results[0].1;
        let c64 = batched[1];
        let ratio = c64.per_second / raw.per_second;
        let share_of_transport = c64.per_second / bare_c64.per_second;
        let budget = (raw.p50 + rtt.p50) * 2;
        println!();
        // Group commit can only hide a flush that costs more than the work
        // of the appends it groups.
        let flush_dominates = cpu_per_append.is_none_or(|cpu| raw.p50 > cpu);
        println!(
            "CPU per append (Journal::append in process, concurrency 64): {}; one raw flush p50 {:.1} µs",
            cpu_per_append.map_or_else(
                || "unknown (no /proc/self/stat)".to_owned(),
                |cpu| format!("{:.1} µs", cpu.as_secs_f64() * 1e6)
            ),
            raw.p50.as_secs_f64() * 1e6,
        );
        let transport_pass = share_of_transport >= 0.5;
        let group_pass = !flush_dominates || ratio >= 3.0;
        println!(
            "target 1: services' client at concurrency 64 {:.0}/s = {:.0} % of bare gRPC at concurrency 64 ({:.0}/s; need ≥ 50 %) \
             and {ratio:.1}× the raw rate ({}): {}",
            c64.per_second,
            share_of_transport * 100.0,
            bare_c64.per_second,
            if flush_dominates {
                "need ≥ 3×: a flush costs more than an append's CPU"
            } else {
                "not held to 3×: a flush costs less than an append's CPU"
            },
            if transport_pass && group_pass { "PASS" } else { "FAIL" }
        );
        println!(
            "          (one Append per call at concurrency 64: {:.0}/s = {:.0} % of bare gRPC; the services' client \
             at concurrency 1: p50 {:.1} µs against {:.1} µs for a lone Append call)",
            results[2].1.per_second,
            100.0 * results[2].1.per_second / bare_c64.per_second,
            batched[0].p50.as_secs_f64() * 1e6,
            c1.p50.as_secs_f64() * 1e6,
        );
        println!(
            "target 2: concurrency 1 p50 {:.1} µs vs 2 × (raw p50 {:.1} + rtt p50 {:.1}) = {:.1} µs: {}",
            c1.p50.as_secs_f64() * 1e6,
            raw.p50.as_secs_f64() * 1e6,
            rtt.p50.as_secs_f64() * 1e6,
            budget.as_secs_f64() * 1e6,
            if c1.p50 <= budget { "PASS" } else { "FAIL" }
        );

        let _ = stop.send(());
        server.await.expect("server task").expect("serve");
        journal.shutdown().await.expect("shutdown");
    });
}
