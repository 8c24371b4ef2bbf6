//! Strangers at the door: a forum acts at a steady pace from one address
//! while another address holds 2 000 connections that are idle, refused
//! `UNAUTHENTICATED`, or slow. `cargo bench -p battlelog-resolver --bench strangers`.
//!
//! One stack of the services' own servers (`serve` with a `GrpcServer`,
//! tokens checked on every hop, no TLS), with the default connection and
//! request limits (`max_connections` 1 000, `max_connections_per_address`
//! 100, `first_request_timeout_ms` 10 000). The forum connects from
//! 127.0.0.2 and acts every 20 ms: first alone, then while 2 000
//! connections come from 127.0.0.3 — a third never speak, a third make one
//! call without a token (refused `UNAUTHENTICATED`) and hold their
//! connection, a third send the HTTP/2 preface a byte every 200 ms — each
//! opened again a second after the server closes it, as a persistent
//! stranger would. Both phases run in one process, one after the other;
//! it prints the forum's p50 and p99 in each, its failed calls, how many
//! of the stranger's connections the resolver held, and PASS when no
//! `Act` failed and the p99 during the flood is under 3 × the p99 before.
//! A new connection of the forum is opened during the flood too (it must
//! be accepted). `BATTLELOG_BENCH_SECONDS` sets each phase's seconds
//! (default 3).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use battlelog_auth::{AuthChannel, Role, authed};
use battlelog_journal::Journal;
use battlelog_proto::battle::json_to_struct;
use battlelog_proto::v1::OpenBattleRequest;
use battlelog_proto::v1::resolver_client::ResolverClient;
use battlelog_runtime::edge::GrpcLimits;
use battlelog_runtime::serve::GrpcServer;
use battlelog_test_support::TestAuth;
use battlelog_test_support::bench::{figures, report, seconds_per_case};
use http_body_util::BodyExt;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tonic::transport::Endpoint;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod services;
use services::{act, journal_and_roller};

/// The forum's pace.
const PACE: Duration = Duration::from_millis(20);
/// The stranger's connections.
const STRANGERS: usize = 2_000;
const FORUM: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
const STRANGER: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 3));
/// The HTTP/2 client preface, sent slowly by a third of the stranger's connections.
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Journal, roller and resolver; returns the journal (to shut it down) and
/// the resolver's address.
async fn stack(dir: &Path, auth: &TestAuth) -> (Journal, SocketAddr) {
    let limits = GrpcLimits::default();
    let token = auth.service_token();
    let (journal, journal_url, roller_url) = journal_and_roller(dir, auth, &limits).await;
    let service = battlelog_resolver::server::service_for(&journal_url, &roller_url, None, &token).expect("service");
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(battlelog_resolver::serve(
        service,
        listener,
        GrpcServer::new("resolver", auth.verifier()).limits(limits),
        std::future::pending(),
    ));
    (journal, addr)
}

async fn forum(addr: SocketAddr, token: &str) -> ResolverClient<AuthChannel> {
    let channel = Endpoint::from_shared(format!("http://{addr}"))
        .expect("url")
        .local_address(Some(FORUM))
        .connect()
        .await
        .expect("the forum connects");
    ResolverClient::new(authed(channel, token).expect("token"))
}

async fn connect_from(local: IpAddr, addr: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    socket.bind(SocketAddr::new(local, 0))?;
    socket.connect(addr).await
}

/// Reads until the server closes `stream` (or `stop`).
async fn until_closed(stream: &mut TcpStream, stop: &AtomicBool) {
    let mut buf = [0u8; 1024];
    while !stop.load(Ordering::Relaxed) {
        if let Ok(Ok(0) | Err(_)) = tokio::time::timeout(Duration::from_millis(500), stream.read(&mut buf)).await {
            return;
        }
    }
}

/// One call without a token over an HTTP/2 connection of its own (hyper's
/// client), then the connection held until the server closes it.
async fn unauthenticated(stream: TcpStream, addr: SocketAddr, stop: &AtomicBool) -> Option<()> {
    let (mut sender, connection) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(stream),
    )
    .await
    .ok()?;
    let mut connection = Box::pin(connection);
    let body = http_body_util::Full::new(hyper::body::Bytes::from_static(&[0, 0, 0, 0, 0]));
    let request = hyper::Request::post(format!("http://{addr}/battlelog.v1.Resolver/GetBattle"))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(body)
        .ok()?;
    let answered = tokio::select! {
        response = sender.send_request(request) => response.ok(),
        _ = &mut connection => None,
    }?;
    let _ = answered.into_body().collect().await;
    while !stop.load(Ordering::Relaxed) {
        if tokio::time::timeout(Duration::from_millis(500), &mut connection).await.is_ok() {
            return Some(());
        }
    }
    drop(sender);
    Some(())
}

/// The stranger's connection `n`, opened again a second after each close,
/// until `stop`; `held` counts the ones open now that the server has
/// accepted (it sent its HTTP/2 SETTINGS).
async fn stranger(n: usize, addr: SocketAddr, stop: Arc<AtomicBool>, held: Arc<AtomicU64>) {
    while !stop.load(Ordering::Relaxed) {
        if let Ok(mut stream) = connect_from(STRANGER, addr).await {
            let mut probe = [0u8; 64];
            // Held once the server sends its SETTINGS (its first bytes);
            // refused when it closes the connection instead. A connection
            // still in the listener's backlog after 5 s counts as refused.
            let accepted =
                matches!(tokio::time::timeout(Duration::from_secs(5), stream.peek(&mut probe)).await, Ok(Ok(1..)));
            if accepted {
                held.fetch_add(1, Ordering::Relaxed);
                match n % 3 {
                    0 => until_closed(&mut stream, &stop).await,
                    1 => {
                        let _ = unauthenticated(stream, addr, &stop).await;
                    }
                    _ => {
                        let slow = async {
                            for byte in PREFACE {
                                tokio::time::sleep(Duration::from_millis(200)).await;
                                if stream.write_all(&[*byte]).await.is_err() {
                                    return;
                                }
                            }
                            until_closed(&mut stream, &stop).await;
                        };
                        slow.await;
                    }
                }
                held.fetch_sub(1, Ordering::Relaxed);
            }
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// The forum acts every [`PACE`] for `run`: its latencies and its failures.
async fn play(client: &mut ResolverClient<AuthChannel>, run: Duration, phase: &str) -> (Vec<Duration>, u64) {
    let start = Instant::now();
    let mut ticks = tokio::time::interval(PACE);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let (mut latencies, mut failed) = (Vec::new(), 0);
    let mut i = 0;
    while start.elapsed() < run {
        ticks.tick().await;
        let began = Instant::now();
        match client.act(act("strangers", format!("{phase}-{i}"))).await {
            Ok(_) => latencies.push(began.elapsed()),
            Err(status) => {
                failed += 1;
                eprintln!("{phase}: the forum's Act failed: {status:?}");
            }
        }
        i += 1;
    }
    (latencies, failed)
}

fn main() {
    let run = seconds_per_case();
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp dir");
    rlimit::increase_nofile_limit(u64::MAX).expect("raise the file limit");
    println!(
        "battlelog strangers benchmark: the forum acts every {} ms from {FORUM}, {} s alone then {} s while \
         {STRANGERS} connections come from {STRANGER} (idle, unauthenticated, slow)",
        PACE.as_millis(),
        run.as_secs(),
        run.as_secs(),
    );
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    runtime.block_on(async move {
        let auth = TestAuth::generate();
        let (journal, addr) = stack(dir.path(), &auth).await;
        let token = auth.token(Role::Forum, "forum-a", "forum-a");
        let mut client = forum(addr, &token).await;
        let ash = json!({"id": "ash", "traits": {"cool": 1}});
        client
            .open_battle(OpenBattleRequest {
                ruleset: "pbta-2d6@1".into(),
                participants: vec![json_to_struct(ash.as_object().expect("an object"))],
                client_seed: "bench/strangers".into(),
                request_id: "open-strangers".into(),
                battle_id: "strangers".into(),
                ..Default::default()
            })
            .await
            .expect("open");

        let quiet_start = Instant::now();
        let (quiet, quiet_failed) = play(&mut client, run, "quiet").await;
        let quiet = figures(quiet, quiet_start.elapsed());

        let stop = Arc::new(AtomicBool::new(false));
        let held = Arc::new(AtomicU64::new(0));
        let strangers: Vec<_> =
            (0..STRANGERS).map(|n| tokio::spawn(stranger(n, addr, stop.clone(), held.clone()))).collect();
        // Until the stranger has tried every connection once.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let held_at_start = held.load(Ordering::Relaxed);
        let new_connection = Instant::now();
        let mut fresh = forum(addr, &token).await;
        fresh.act(act("strangers", "fresh-connection".into())).await.expect("a new forum connection acts");
        let fresh_took = new_connection.elapsed();
        let flood_start = Instant::now();
        let (noisy, noisy_failed) = play(&mut client, run, "flood").await;
        let noisy = figures(noisy, flood_start.elapsed());
        let held_at_end = held.load(Ordering::Relaxed);
        stop.store(true, Ordering::Relaxed);
        for stranger in strangers {
            let _ = stranger.await;
        }

        report("the forum alone", &quiet);
        report("the forum during the strangers' flood", &noisy);
        let ratio = noisy.p99.as_secs_f64() / quiet.p99.as_secs_f64();
        println!(
            "the stranger's connections held by the resolver: {held_at_start} after 2 s, {held_at_end} at the end \
             (of {STRANGERS} tried); a new forum connection and its Act during the flood: {:.1} ms",
            fresh_took.as_secs_f64() * 1e3
        );
        println!(
            "failed Acts: {quiet_failed} alone, {noisy_failed} during; p99 during / p99 alone: {ratio:.2}×; \
             p50 {:.2}×",
            noisy.p50.as_secs_f64() / quiet.p50.as_secs_f64()
        );
        let pass = quiet_failed == 0 && noisy_failed == 0 && ratio < 3.0;
        println!(
            "target: no failed Act, and the forum's p99 during the flood < 3 × its p99 alone: {}",
            if pass { "PASS" } else { "FAIL" }
        );
        journal.shutdown().await.expect("journal shutdown");
    });
}
