//! The delivery limits at their edges, against a real HTTP server on a
//! loopback port: `request_timeout_ms` (an answer just inside it counts,
//! one after it is a failure), `retry_max_age_secs` (a delivery received
//! longer ago than it is parked at its first failure, a fresh one is
//! retried), `retry_max_attempts` (parked at exactly that many),
//! `max_concurrent_deliveries` (never more POSTs at once) and
//! `max_concurrent_deliveries_per_tenant` (never more to one tenant at
//! once, so that a tenant whose endpoint hangs does not hold the others).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use battlelog_webhooks::WebhooksMetrics;
use battlelog_webhooks::config::{Retry, TenantEndpoint};
use battlelog_webhooks::deliver::{Deliverer, Endpoint, http_client};
use battlelog_webhooks::store::{BattleKey, Enqueued, Entry, Filter, Store, now_ms};
use tokio::sync::watch;

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/// How the test server answers.
#[derive(Debug, Default)]
struct Behaviour {
    delay: std::sync::Mutex<Duration>,
    fail: AtomicBool,
    in_flight: AtomicUsize,
    most_in_flight: AtomicUsize,
    requests: AtomicUsize,
}

async fn server(behaviour: Arc<Behaviour>) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else { continue };
            let behaviour = behaviour.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |_request: hyper::Request<hyper::body::Incoming>| {
                    let behaviour = behaviour.clone();
                    async move {
                        behaviour.requests.fetch_add(1, Ordering::SeqCst);
                        let now = behaviour.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                        behaviour.most_in_flight.fetch_max(now, Ordering::SeqCst);
                        let delay = *behaviour.delay.lock().unwrap();
                        tokio::time::sleep(delay).await;
                        behaviour.in_flight.fetch_sub(1, Ordering::SeqCst);
                        let status = if behaviour.fail.load(Ordering::SeqCst) { 503 } else { 200 };
                        Ok::<_, std::convert::Infallible>(
                            hyper::Response::builder()
                                .status(status)
                                .body(http_body_util::Empty::<hyper::body::Bytes>::new())
                                .unwrap(),
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

struct Setup {
    _dir: tempfile::TempDir,
    store: Arc<Store>,
    deliverer: Deliverer,
    metrics: Arc<WebhooksMetrics>,
    _stop: watch::Sender<bool>,
}

fn setup(addr: SocketAddr, retry: Retry, request_timeout: Duration, max_concurrent: usize) -> Setup {
    setup_tenants(&[("t", addr)], retry, request_timeout, max_concurrent, max_concurrent)
}

/// A deliverer of `tenants` (name, endpoint address) with both limits.
fn setup_tenants(
    tenants: &[(&str, SocketAddr)],
    retry: Retry,
    request_timeout: Duration,
    max_concurrent: usize,
    max_concurrent_per_tenant: usize,
) -> Setup {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Arc::new(Store::open(dir.path()).expect("store"));
    let endpoints = tenants
        .iter()
        .map(|(tenant, addr)| {
            let endpoint = TenantEndpoint { url: format!("http://{addr}/hook"), secret: SECRET.into() };
            ((*tenant).to_owned(), Endpoint::new(&endpoint).expect("endpoint"))
        })
        .collect::<BTreeMap<_, _>>();
    let metrics = Arc::new(WebhooksMetrics::default());
    let (stop, stopped) = watch::channel(false);
    let deliverer = Deliverer::new(
        store.clone(),
        endpoints,
        http_client(),
        retry,
        request_timeout,
        max_concurrent,
        max_concurrent_per_tenant,
        metrics.clone(),
        stopped,
    );
    Setup { _dir: dir, store, deliverer, metrics, _stop: stop }
}

fn retry(max_attempts: u32, max_age: Duration) -> Retry {
    Retry { initial: Duration::from_millis(10), max: Duration::from_millis(20), max_attempts, max_age }
}

fn entry(battle: &str, version: u64, received_at_ms: u64) -> Entry {
    tenant_entry("t", battle, version, received_at_ms)
}

fn tenant_entry(tenant: &str, battle: &str, version: u64, received_at_ms: u64) -> Entry {
    Entry {
        tenant: tenant.into(),
        battle: battle.into(),
        version,
        webhook_id: format!("{battle}-{version}"),
        event_type: "DiceRolled".into(),
        body: "{}".into(),
        received_at_ms,
        attempts: 0,
        last_error: None,
        parked_at_ms: None,
    }
}

fn queue(setup: &Setup, entry: &Entry) {
    let routed = setup.store.enqueue(entry, Duration::from_secs(3600), now_ms()).expect("enqueue");
    assert_eq!(routed.placed, Enqueued::Queued, "each battle's first event, version 0");
    setup.deliverer.wake(entry.battle_key());
}

/// Waits until `battle`'s queue is empty: delivered or parked.
async fn settled(setup: &Setup, battle: &str) {
    settled_of(setup, "t", battle).await;
}

async fn settled_of(setup: &Setup, tenant: &str, battle: &str) {
    let key = BattleKey { tenant: tenant.into(), battle: battle.into() };
    let start = Instant::now();
    while setup.store.head(&key).expect("head").is_some() {
        assert!(start.elapsed() < Duration::from_secs(30), "{battle} never settled");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn parked(setup: &Setup) -> Vec<Entry> {
    setup.store.parked(&Filter::default()).expect("parked")
}

#[tokio::test]
async fn an_answer_inside_request_timeout_counts_and_one_after_it_fails() {
    let behaviour = Arc::new(Behaviour::default());
    *behaviour.delay.lock().unwrap() = Duration::from_millis(300);
    let addr = server(behaviour.clone()).await;
    // Inside: 300 ms answers within a 2 s timeout.
    let inside = setup(addr, retry(1, Duration::from_secs(3600)), Duration::from_secs(2), 4);
    queue(&inside, &entry("slow", 0, now_ms()));
    settled(&inside, "slow").await;
    assert!(parked(&inside).is_empty());
    assert_eq!(inside.metrics.delivered.get(), 1);
    // After: the same answer misses a 100 ms timeout; one attempt allowed.
    let after = setup(addr, retry(1, Duration::from_secs(3600)), Duration::from_millis(100), 4);
    queue(&after, &entry("slow", 0, now_ms()));
    settled(&after, "slow").await;
    let parked = parked(&after);
    assert_eq!(parked.len(), 1);
    assert!(parked[0].last_error.as_deref().is_some_and(|e| e.contains("request_timeout_ms")), "{parked:?}");
}

#[tokio::test]
async fn retry_max_attempts_is_exactly_the_attempts_made() {
    let behaviour = Arc::new(Behaviour::default());
    behaviour.fail.store(true, Ordering::SeqCst);
    let addr = server(behaviour.clone()).await;
    let setup = setup(addr, retry(3, Duration::from_secs(3600)), Duration::from_secs(2), 4);
    queue(&setup, &entry("b", 0, now_ms()));
    settled(&setup, "b").await;
    assert_eq!(behaviour.requests.load(Ordering::SeqCst), 3);
    let parked = parked(&setup);
    assert_eq!((parked.len(), parked[0].attempts), (1, 3));
    assert!(parked[0].last_error.as_deref().is_some_and(|e| e.contains("HTTP 503")), "{parked:?}");
}

#[tokio::test]
async fn a_delivery_older_than_retry_max_age_parks_at_its_first_failure_a_younger_one_is_retried() {
    let behaviour = Arc::new(Behaviour::default());
    behaviour.fail.store(true, Ordering::SeqCst);
    let addr = server(behaviour.clone()).await;
    let max_age = Duration::from_secs(60);
    // Over: received 60.5 s ago.
    let over = setup(addr, retry(100, max_age), Duration::from_secs(2), 4);
    queue(&over, &entry("old", 0, now_ms() - 60_500));
    settled(&over, "old").await;
    assert_eq!(parked(&over)[0].attempts, 1, "parked at the first failure");
    // Under: received 50 s ago, with 5 attempts allowed: all five are
    // made (the age is not reached during them).
    let under = setup(addr, retry(5, max_age), Duration::from_secs(2), 4);
    queue(&under, &entry("young", 0, now_ms() - 50_000));
    settled(&under, "young").await;
    assert_eq!(parked(&under)[0].attempts, 5, "retried until its attempts ran out");
}

#[tokio::test]
async fn never_more_posts_at_once_than_max_concurrent_deliveries() {
    for limit in [1usize, 3] {
        let behaviour = Arc::new(Behaviour::default());
        *behaviour.delay.lock().unwrap() = Duration::from_millis(100);
        let addr = server(behaviour.clone()).await;
        let setup = setup(addr, retry(1, Duration::from_secs(3600)), Duration::from_secs(5), limit);
        // Six battles: six workers that could all POST at once.
        for battle in 0..6 {
            queue(&setup, &entry(&format!("b{battle}"), 0, now_ms()));
        }
        for battle in 0..6 {
            settled(&setup, &format!("b{battle}")).await;
        }
        assert_eq!(setup.metrics.delivered.get(), 6);
        let most = behaviour.most_in_flight.load(Ordering::SeqCst);
        assert!(most <= limit, "{most} at once with max_concurrent_deliveries = {limit}");
        if limit > 1 {
            assert!(most > 1, "the limit, not the workers, keeps them apart: {most}");
        }
    }
}

#[tokio::test]
async fn never_more_posts_at_once_to_one_tenant_than_its_share() {
    // Under, at and over the share: with a share of 2, six battles of one
    // tenant never have more than 2 POSTs out at once, though 4 shared
    // slots are free; a share of 1 (under) is one at a time.
    for share in [1usize, 2] {
        let behaviour = Arc::new(Behaviour::default());
        *behaviour.delay.lock().unwrap() = Duration::from_millis(100);
        let addr = server(behaviour.clone()).await;
        let setup =
            setup_tenants(&[("t", addr)], retry(1, Duration::from_secs(3600)), Duration::from_secs(5), 4, share);
        for battle in 0..6 {
            queue(&setup, &entry(&format!("b{battle}"), 0, now_ms()));
        }
        for battle in 0..6 {
            settled(&setup, &format!("b{battle}")).await;
        }
        assert_eq!(setup.metrics.delivered.get(), 6);
        let most = behaviour.most_in_flight.load(Ordering::SeqCst);
        assert_eq!(most, share, "{most} at once with max_concurrent_deliveries_per_tenant = {share}");
    }
}

#[tokio::test]
async fn a_tenant_whose_endpoint_hangs_does_not_hold_back_another_tenants_deliveries() {
    // The hanging endpoint answers after 30 s, past the test; the other
    // answers at once. 4 shared slots, 2 per tenant; 6 battles of the
    // hanging tenant are queued first.
    let hanging = Arc::new(Behaviour::default());
    *hanging.delay.lock().unwrap() = Duration::from_secs(30);
    let hanging_addr = server(hanging.clone()).await;
    let prompt = Arc::new(Behaviour::default());
    let prompt_addr = server(prompt.clone()).await;
    let setup = setup_tenants(
        &[("hangs", hanging_addr), ("prompt", prompt_addr)],
        retry(1, Duration::from_secs(3600)),
        Duration::from_secs(60),
        4,
        2,
    );
    for battle in 0..6 {
        let entry = tenant_entry("hangs", &format!("h{battle}"), 0, now_ms());
        setup.store.enqueue(&entry, Duration::from_secs(3600), now_ms()).expect("enqueue");
        setup.deliverer.wake(entry.battle_key());
    }
    let start = Instant::now();
    while hanging.in_flight.load(Ordering::SeqCst) < 2 {
        assert!(start.elapsed() < Duration::from_secs(10), "the hanging tenant's POSTs never went out");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let start = Instant::now();
    for battle in 0..3 {
        let entry = tenant_entry("prompt", &format!("p{battle}"), 0, now_ms());
        setup.store.enqueue(&entry, Duration::from_secs(3600), now_ms()).expect("enqueue");
        setup.deliverer.wake(entry.battle_key());
    }
    for battle in 0..3 {
        settled_of(&setup, "prompt", &format!("p{battle}")).await;
    }
    let took = start.elapsed();
    assert!(took < Duration::from_secs(5), "the prompt tenant waited {took:?} behind the hanging one");
    assert_eq!(prompt.requests.load(Ordering::SeqCst), 3);
    assert_eq!(hanging.most_in_flight.load(Ordering::SeqCst), 2, "the hanging tenant held its share, no more");
}
