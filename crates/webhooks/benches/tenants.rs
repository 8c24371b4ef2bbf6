//! A tenant whose endpoint hangs, and another tenant's deliveries:
//! `cargo bench -p battlelog-webhooks --bench tenants`.
//!
//! The service's own deliverer (its sled store, its HTTP client, the
//! default `max_concurrent_deliveries` 64 and
//! `max_concurrent_deliveries_per_tenant` 8, `request_timeout_ms` 10 000)
//! with two tenants: B's endpoint answers 204 at once, A's takes each
//! request and never answers. B has an event every 20 ms, each of a battle
//! of its own; its delivery time is from the event's queueing to its
//! arrival at B's endpoint. First B alone, then, in the same run, B while
//! 200 battles of A are queued for the hanging endpoint (the issue's
//! finding: before the per-tenant share, B's first delivery waited 27 s).
//! It prints B's p50 and p99 in each, and PASS when the p99 with A hanging
//! is within 2 × the p99 alone. `BATTLELOG_BENCH_SECONDS` sets each
//! phase's seconds (default 3).

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use battlelog_test_support::bench::{figures, report, seconds_per_case};
use battlelog_webhooks::WebhooksMetrics;
use battlelog_webhooks::config::{Config, TenantEndpoint};
use battlelog_webhooks::deliver::{Deliverer, Endpoint, http_client};
use battlelog_webhooks::store::{Entry, Store, now_ms};
use tokio::io::AsyncReadExt;
use tokio::sync::watch;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
/// B's pace.
const PACE: Duration = Duration::from_millis(20);
/// A's battles queued for its hanging endpoint.
const HANGING_BATTLES: usize = 200;

/// When each of B's events was queued, by webhook id, and how long each
/// took to arrive.
#[derive(Default)]
struct Timings {
    queued: Mutex<HashMap<String, Instant>>,
    took: Mutex<Vec<Duration>>,
}

/// B's endpoint: answers 204 at once and notes the delivery time.
async fn prompt(timings: Arc<Timings>) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else { continue };
            let timings = timings.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                    let timings = timings.clone();
                    async move {
                        let id = request.headers().get("webhook-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
                        if let Some(queued) = id.and_then(|id| timings.queued.lock().unwrap().remove(&id)) {
                            timings.took.lock().unwrap().push(queued.elapsed());
                        }
                        Ok::<_, std::convert::Infallible>(
                            hyper::Response::builder()
                                .status(204)
                                .body(http_body_util::Empty::<hyper::body::Bytes>::new())
                                .expect("a response"),
                        )
                    }
                });
                let io = hyper_util::rt::TokioIo::new(stream);
                let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, service).await;
            });
        }
    });
    addr
}

/// A's endpoint: takes each request and never answers; counts them.
async fn hanging(requests: Arc<AtomicUsize>) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else { continue };
            let requests = requests.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                if matches!(stream.read(&mut buf).await, Ok(n) if n > 0) {
                    requests.fetch_add(1, Ordering::Relaxed);
                }
                while matches!(stream.read(&mut buf).await, Ok(n) if n > 0) {}
            });
        }
    });
    addr
}

fn entry(tenant: &str, battle: &str) -> Entry {
    Entry {
        tenant: tenant.into(),
        battle: battle.into(),
        version: 0,
        webhook_id: format!("{tenant}-{battle}"),
        event_type: "BattleOpened".into(),
        body: "{}".into(),
        received_at_ms: now_ms(),
        attempts: 0,
        last_error: None,
        parked_at_ms: None,
    }
}

fn queue(store: &Store, deliverer: &Deliverer, entry: &Entry) {
    store.enqueue(entry, Duration::from_secs(3600), now_ms()).expect("enqueue");
    deliverer.wake(entry.battle_key());
}

/// B's events at [`PACE`] for `run`; its delivery times once all arrived.
async fn play(store: &Store, deliverer: &Deliverer, timings: &Timings, run: Duration, phase: &str) -> Vec<Duration> {
    let start = Instant::now();
    let mut ticks = tokio::time::interval(PACE);
    let mut sent = 0;
    while start.elapsed() < run {
        ticks.tick().await;
        let entry = entry("b", &format!("{phase}-{sent}"));
        timings.queued.lock().unwrap().insert(entry.webhook_id.clone(), Instant::now());
        queue(store, deliverer, &entry);
        sent += 1;
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    while !timings.queued.lock().unwrap().is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let left = timings.queued.lock().unwrap().len();
    assert_eq!(left, 0, "{phase}: {left} of B's {sent} deliveries never arrived");
    std::mem::take(&mut *timings.took.lock().unwrap())
}

fn main() {
    let run = seconds_per_case();
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp dir");
    let defaults = Config::default();
    println!(
        "battlelog webhook tenants benchmark: B has an event every {} ms, {} s alone then {} s while \
         {HANGING_BATTLES} battles of A wait on an endpoint that never answers; max_concurrent_deliveries {}, \
         max_concurrent_deliveries_per_tenant {}, request_timeout_ms {}",
        PACE.as_millis(),
        run.as_secs(),
        run.as_secs(),
        defaults.max_concurrent_deliveries,
        defaults.max_concurrent_deliveries_per_tenant,
        defaults.request_timeout_ms,
    );
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    runtime.block_on(async move {
        let timings = Arc::new(Timings::default());
        let a_requests = Arc::new(AtomicUsize::new(0));
        let b_addr = prompt(timings.clone()).await;
        let a_addr = hanging(a_requests.clone()).await;
        let endpoint = |addr: SocketAddr| {
            Endpoint::new(&TenantEndpoint { url: format!("http://{addr}/hook"), secret: SECRET.into() })
                .expect("endpoint")
        };
        let endpoints = BTreeMap::from([("a".to_owned(), endpoint(a_addr)), ("b".to_owned(), endpoint(b_addr))]);
        let store = Arc::new(Store::open(dir.path()).expect("store"));
        let (_stop, stopped) = watch::channel(false);
        let deliverer = Deliverer::new(
            store.clone(),
            endpoints,
            http_client(),
            defaults.retry(),
            Duration::from_millis(defaults.request_timeout_ms),
            defaults.max_concurrent_deliveries,
            defaults.max_concurrent_deliveries_per_tenant,
            Arc::new(WebhooksMetrics::default()),
            stopped,
        );

        let quiet_start = Instant::now();
        let quiet = play(&store, &deliverer, &timings, run, "alone").await;
        let quiet = figures(quiet, quiet_start.elapsed());

        for battle in 0..HANGING_BATTLES {
            queue(&store, &deliverer, &entry("a", &format!("hangs-{battle}")));
        }
        let noisy_start = Instant::now();
        let noisy = play(&store, &deliverer, &timings, run, "hanging").await;
        let noisy = figures(noisy, noisy_start.elapsed());

        report("B alone", &quiet);
        report("B while A's endpoint hangs", &noisy);
        let ratio = noisy.p99.as_secs_f64() / quiet.p99.as_secs_f64();
        println!(
            "A's POSTs to its hanging endpoint: {} (its share); B's p99 with A hanging / alone: {ratio:.2}×, p50 {:.2}×",
            a_requests.load(Ordering::Relaxed),
            noisy.p50.as_secs_f64() / quiet.p50.as_secs_f64()
        );
        println!(
            "target: B's p99 delivery time with A hanging ≤ 2 × its p99 alone: {}",
            if ratio <= 2.0 { "PASS" } else { "FAIL" }
        );
    });
}
