//! battlelog-webhooks against the real journal and a real nats-server with
//! JetStream: a real HTTP receiver (in this test, on a loopback port) gets
//! every committed event of its tenant's battles, signed, in order per
//! battle, through failures, an outage of its own and a restart of the
//! service; a permanently failing endpoint's deliveries are parked,
//! reported and replayed; the admin endpoints refuse all but `service`
//! tokens. Signatures are checked here with an HMAC-SHA256 written from
//! RFC 2104 and the Standard Webhooks text, not with the service's code.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use battlelog_auth::Role;
use battlelog_proto::v1 as pb;
use battlelog_test_support::journal_client;
use battlelog_test_support::journal_client::{append, client, no_stream, opened, read_stream, resolved, rolled};
use battlelog_test_support::stack;
use battlelog_test_support::{
    NatsServer, ServiceProcess, TestAuth, closed_by_server, poll_until, service_binary, temp_dir,
};
use http_body_util::BodyExt;
use serde_json::Value;
use sha2::{Digest, Sha256};

const DEADLINE: Duration = Duration::from_secs(60);
/// The tenants' secrets (Standard Webhooks form: `whsec_` + base64 of the key).
const SECRET_A: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const SECRET_B: &str = "whsec_c2Vjb25kIHRlbmFudCdzIHNpZ25pbmcga2V5ISE=";

/// HMAC-SHA256 (RFC 2104): H((K ⊕ opad) ‖ H((K ⊕ ipad) ‖ m)), 64-byte blocks.
fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    let mut block = [0u8; 64];
    if key.len() > 64 {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let inner: Vec<u8> = block.iter().map(|b| b ^ 0x36).collect();
    let outer: Vec<u8> = block.iter().map(|b| b ^ 0x5c).collect();
    let inner_hash = Sha256::new().chain_update(&inner).chain_update(message).finalize();
    Sha256::new().chain_update(&outer).chain_update(inner_hash).finalize().into()
}

/// Whether `signature` (space-separated `v1,<base64>`) signs `{id}.{timestamp}.{body}`
/// with `secret`.
fn signature_valid(secret: &str, id: &str, timestamp: &str, body: &str, signature: &str) -> bool {
    let key = BASE64.decode(secret.strip_prefix("whsec_").expect("whsec_")).expect("base64 secret");
    let expected = hmac_sha256(&key, format!("{id}.{timestamp}.{body}").as_bytes());
    signature
        .split(' ')
        .filter_map(|s| s.strip_prefix("v1,"))
        .any(|s| BASE64.decode(s).ok().as_deref() == Some(&expected[..]))
}

/// One POST the receiver got.
#[derive(Debug, Clone)]
struct Delivery {
    id: String,
    timestamp: String,
    signature: String,
    body: String,
    /// Whether it was answered 2xx.
    accepted: bool,
}

impl Delivery {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).expect("a JSON body")
    }
    fn battle(&self) -> String {
        self.json()["data"]["battle_id"].as_str().expect("battle_id").to_owned()
    }
    fn version(&self) -> u64 {
        self.json()["data"]["version"].as_u64().expect("version")
    }
}

/// What the receiver does and has seen; its behaviour can be changed live.
#[derive(Debug, Default)]
struct ReceiverState {
    deliveries: Mutex<Vec<Delivery>>,
    /// Answer 500 to this many more POSTs.
    fail_next: AtomicU32,
    /// Answer 500 to every POST.
    fail_all: AtomicBool,
}

impl ReceiverState {
    fn deliveries(&self) -> Vec<Delivery> {
        self.deliveries.lock().unwrap().clone()
    }

    /// The accepted deliveries, deduplicated by `webhook-id` (the first
    /// accepted copy of each), in the order they were accepted.
    fn deduped(&self) -> Vec<Delivery> {
        let mut seen = std::collections::HashSet::new();
        self.deliveries().into_iter().filter(|d| d.accepted && seen.insert(d.id.clone())).collect()
    }
}

/// A real HTTP/1 server on a loopback port, stoppable (its connections
/// closed, the port refused) and restartable on the same port.
struct Receiver {
    state: Arc<ReceiverState>,
    addr: SocketAddr,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Receiver {
    async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let state = Arc::new(ReceiverState::default());
        let task = Some(tokio::spawn(serve(listener, state.clone())));
        Self { state, addr, task }
    }

    fn url(&self) -> String {
        format!("http://{}/hook", self.addr)
    }

    /// Down: the server and every open connection gone.
    fn stop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }

    async fn restart(&mut self) {
        self.stop();
        let listener = poll_until("the receiver's port to be free again", DEADLINE, || async {
            tokio::net::TcpListener::bind(self.addr).await.ok()
        })
        .await;
        self.task = Some(tokio::spawn(serve(listener, self.state.clone())));
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Serves `state` on `listener`; the connections are tasks of this one, so
/// aborting it closes them too.
async fn serve(listener: tokio::net::TcpListener, state: Arc<ReceiverState>) {
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let Ok((stream, _)) = listener.accept().await else { continue };
        let state = state.clone();
        connections.spawn(async move {
            let service = hyper::service::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                let state = state.clone();
                async move {
                    let header = |name: &str| {
                        request.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned()
                    };
                    let (id, timestamp, signature) =
                        (header("webhook-id"), header("webhook-timestamp"), header("webhook-signature"));
                    let body = request.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
                    let fail = state.fail_all.load(Ordering::SeqCst)
                        || state
                            .fail_next
                            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                            .is_ok();
                    state.deliveries.lock().unwrap().push(Delivery {
                        id,
                        timestamp,
                        signature,
                        body: String::from_utf8_lossy(&body).into_owned(),
                        accepted: !fail,
                    });
                    let status = if fail { 500 } else { 204 };
                    Ok::<_, std::convert::Infallible>(
                        hyper::Response::builder()
                            .status(status)
                            .body(http_body_util::Empty::<hyper::body::Bytes>::new())
                            .expect("a response"),
                    )
                }
            });
            let io = hyper_util::rt::TokioIo::new(stream);
            let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, service).await;
        });
        while connections.try_join_next().is_some() {}
    }
}

/// battlelog-webhooks with `tenants` (name → (url, secret)) and more config
/// keys in its environment, its store under `data_dir`.
async fn webhooks(
    data_dir: &Path,
    nats_url: &str,
    tenants: &[(&str, &str, &str)],
    envs: &[(&str, &str)],
) -> ServiceProcess {
    std::fs::create_dir_all(data_dir).expect("data dir");
    let mut toml = String::new();
    for (tenant, url, secret) in tenants {
        toml.push_str(&format!("[tenants.{tenant}]\nurl = \"{url}\"\nsecret = \"{secret}\"\n"));
    }
    let config = data_dir.with_extension("toml");
    std::fs::write(&config, toml).expect("write the config");
    let args: Vec<String> = ["--config", &config.display().to_string(), "--listen", "127.0.0.1:0"]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    let mut all: Vec<(String, String)> = TestAuth::shared().env("webhooks");
    all.extend([
        ("BATTLELOG_WEBHOOKS_NATS_URL".to_owned(), nats_url.to_owned()),
        ("BATTLELOG_WEBHOOKS_DATA_DIR".to_owned(), data_dir.join("store").display().to_string()),
        ("BATTLELOG_WEBHOOKS_RETRY_INITIAL_MS".to_owned(), "20".to_owned()),
        ("BATTLELOG_WEBHOOKS_RETRY_MAX_MS".to_owned(), "200".to_owned()),
        ("BATTLELOG_WEBHOOKS_REQUEST_TIMEOUT_MS".to_owned(), "2000".to_owned()),
    ]);
    all.extend(envs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
    let binary = service_binary("battlelog-webhooks");
    ServiceProcess::start_http(&binary, &args, &all, &data_dir.with_extension("log")).await
}

/// A GET or POST on the service's HTTP port with `token`: (status, body).
async fn admin(process: &ServiceProcess, method: &str, path: &str, token: Option<&str>) -> (u16, String) {
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<http_body_util::Empty<hyper::body::Bytes>>();
    let mut request = hyper::Request::builder().method(method).uri(format!("http://{}{path}", process.addr()));
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let response = client.request(request.body(http_body_util::Empty::new()).unwrap()).await.expect("the admin port");
    let status = response.status().as_u16();
    let body = response.into_body().collect().await.expect("body").to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

/// A value of `/metrics` (the line `name value`).
async fn metric(process: &ServiceProcess, name: &str) -> u64 {
    let (status, text) = admin(process, "GET", "/metrics", Some(&TestAuth::shared().service_token())).await;
    assert_eq!(status, 200, "{text}");
    text.lines()
        .find_map(|line| line.strip_prefix(name).and_then(|rest| rest.strip_prefix(' ')))
        .unwrap_or_else(|| panic!("no {name} in\n{text}"))
        .parse()
        .expect("a number")
}

/// `battlelog webhooks <args>` against `process`, as an operator: stdout.
fn cli(process: &ServiceProcess, args: &[&str]) -> String {
    let output = std::process::Command::new(battlelog_test_support::cli_binary())
        .arg("webhooks")
        .args(args)
        .args(["--webhooks", &format!("http://{}", process.addr())])
        .env("BATTLELOG_TOKEN", TestAuth::shared().service_token())
        .output()
        .expect("run battlelog");
    assert!(output.status.success(), "battlelog webhooks {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).expect("UTF-8")
}

fn closed(key: &str) -> pb::NewEvent {
    journal_client::battle_event(
        pb::battle_event::Event::BattleClosed(pb::BattleClosed {
            by: "judge".into(),
            reason: "over".into(),
            ..Default::default()
        }),
        key,
    )
}

/// Checks every accepted delivery of `tenant`'s battles: signed with
/// `secret`, its id the journal's event id, its body the journal's record
/// (version, hash, type); the deduplicated ones arrive in version order
/// per battle, and every version of each battle arrives.
async fn check_deliveries(
    state: &ReceiverState,
    secret: &str,
    tenant: &str,
    journal: &mut journal_client::Client,
    battles: &[&str],
) {
    for delivery in state.deliveries() {
        assert!(
            signature_valid(secret, &delivery.id, &delivery.timestamp, &delivery.body, &delivery.signature),
            "a bad signature on {delivery:?}"
        );
    }
    let deduped = state.deduped();
    // Copies of one id carry the same body (receivers may keep the first).
    let mut bodies: HashMap<String, String> = HashMap::new();
    for delivery in state.deliveries().into_iter().filter(|d| d.accepted) {
        let first = bodies.entry(delivery.id.clone()).or_insert_with(|| delivery.body.clone());
        assert_eq!(*first, delivery.body, "two bodies for {}", delivery.id);
    }
    for battle in battles {
        let recorded = read_stream(journal, battle).await;
        let got: Vec<&Delivery> = deduped.iter().filter(|d| d.battle() == *battle).collect();
        let versions: Vec<u64> = got.iter().map(|d| d.version()).collect();
        let expected: Vec<u64> = (0..recorded.len() as u64).collect();
        assert_eq!(versions, expected, "{battle}: every event once, in order");
        for (delivery, event) in got.iter().zip(&recorded) {
            let record = event.event.as_ref().expect("the decoded record");
            let data = &delivery.json()["data"];
            assert_eq!(delivery.id, record.event_id, "webhook-id is the journal's event id");
            assert_eq!(data["tenant"], tenant);
            assert_eq!(data["event_type"], record.event_type.as_str());
            assert_eq!(data["event"]["type"], record.event_type.as_str());
            assert_eq!(data["hash"], hex::encode(&event.hash).as_str());
            assert_eq!(data["global_position"], event.global_position);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_event_arrives_once_in_order_through_failures_an_outage_and_a_restart() {
    let nats = NatsServer::start();
    let dir = temp_dir("webhooks");
    let journal = battlelog_test_support::journal(&dir.path().join("journal"), Some(&nats.url())).await;
    let mut journal_client = client(&journal).await;
    let mut receiver = Receiver::start().await;
    // The first three POSTs fail: the first event is retried, the rest wait.
    receiver.state.fail_next.store(3, Ordering::SeqCst);
    let tenants = [("forum-a", receiver.url(), SECRET_A)];
    let tenants: Vec<(&str, &str, &str)> = tenants.iter().map(|(t, u, s)| (*t, u.as_str(), *s)).collect();
    let service_dir = dir.path().join("webhooks");
    // Retried for as long as the test's outage lasts.
    let patient = [("BATTLELOG_WEBHOOKS_RETRY_MAX_ATTEMPTS", "100000")];
    let mut service = webhooks(&service_dir, &nats.url(), &tenants, &patient).await;

    let battle = "wh-battle-1";
    append(&mut journal_client, battle, no_stream(), vec![opened("forum-a", "open")]).await.expect("open");
    append(&mut journal_client, battle, journal_client::any(), vec![rolled(0, "attack", "r0"), resolved("hit", "a1")])
        .await
        .expect("act 1");
    // Another tenant's battle, with no endpoint: not delivered anywhere.
    append(&mut journal_client, "wh-other", no_stream(), vec![opened("forum-z", "z")]).await.expect("other");
    poll_until("the first three events", DEADLINE, || async { (receiver.state.deduped().len() >= 3).then_some(()) })
        .await;
    let failed_first: Vec<Delivery> = receiver.state.deliveries().into_iter().take(3).collect();
    assert!(
        failed_first.iter().all(|d| !d.accepted && d.version() == 0),
        "the first event is retried, alone: {failed_first:?}"
    );

    // The receiver goes down; events keep coming; the service is killed
    // (no shutdown code) while it retries, and started again.
    receiver.stop();
    append(
        &mut journal_client,
        battle,
        journal_client::any(),
        vec![rolled(1, "defend", "r1"), resolved("parry", "a2")],
    )
    .await
    .expect("act 2");
    let accepted_before = receiver.state.deduped().len();
    poll_until("attempts on the receiver that is down", DEADLINE, || async {
        (metric(&service, "battlelog_webhooks_failures_total").await > 3).then_some(())
    })
    .await;
    service.kill_9_in_place();
    append(&mut journal_client, battle, journal_client::any(), vec![resolved("riposte", "a3")]).await.expect("act 3");
    service = webhooks(&service_dir, &nats.url(), &tenants, &patient).await;
    append(&mut journal_client, battle, journal_client::any(), vec![closed("close")]).await.expect("close");
    assert_eq!(receiver.state.deduped().len(), accepted_before, "nothing is accepted while down");
    receiver.restart().await;

    let total = read_stream(&mut journal_client, battle).await.len();
    assert_eq!(total, 7);
    poll_until("every event of the battle", DEADLINE, || async {
        (receiver.state.deduped().len() >= total).then_some(())
    })
    .await;
    check_deliveries(&receiver.state, SECRET_A, "forum-a", &mut journal_client, &[battle]).await;
    // Only forum-a's battle reached the receiver.
    assert!(receiver.state.deliveries().iter().all(|d| d.battle() == battle));
    assert_eq!(metric(&service, "battlelog_webhooks_parked").await, 0);
    assert!(service.terminate().await, "a clean shutdown");
}

/// The durable consumer's (delivered but unacknowledged, not yet delivered)
/// counts, as JetStream reports them.
async fn consumer_counts(context: &async_nats::jetstream::Context) -> Option<(usize, u64)> {
    let stream = context.get_stream("BATTLELOG_EVENTS").await.ok()?;
    let mut consumer: async_nats::jetstream::consumer::PullConsumer =
        stream.get_consumer("battlelog-webhooks").await.ok()?;
    let info = consumer.info().await.ok()?;
    Some((info.num_ack_pending, info.num_pending))
}

/// The service is killed holding events JetStream handed it but it had not
/// stored (frozen with SIGSTOP once its pull is waiting, so JetStream hands
/// them to it, then SIGKILL): JetStream offers those again only after
/// `ack_wait_ms`, and the next event, published after the restart, comes
/// first. It must wait for them: every event is delivered once, in order,
/// and the wait is counted; nothing is given up as a gap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_a_killed_instance_held_unacknowledged_are_delivered_before_later_ones() {
    let nats = NatsServer::start();
    let dir = temp_dir("webhooks-held");
    let journal = battlelog_test_support::journal(&dir.path().join("journal"), Some(&nats.url())).await;
    let mut journal_client = client(&journal).await;
    let receiver = Receiver::start().await;
    let tenants = [("forum-a", receiver.url(), SECRET_A)];
    let tenants: Vec<(&str, &str, &str)> = tenants.iter().map(|(t, u, s)| (*t, u.as_str(), *s)).collect();
    let service_dir = dir.path().join("webhooks");
    // Long enough for the restart and the next event to come well before
    // the held ones are offered again; the gap is waited for far longer.
    let envs = [
        ("BATTLELOG_WEBHOOKS_ACK_WAIT_MS", "5000"),
        ("BATTLELOG_WEBHOOKS_GAP_WAIT_MS", "60000"),
        ("BATTLELOG_WEBHOOKS_GAP_RETRY_MS", "200"),
    ];
    let mut service = webhooks(&service_dir, &nats.url(), &tenants, &envs).await;
    let context = async_nats::jetstream::new(async_nats::connect(nats.url()).await.expect("connect"));

    let battle = "wh-held";
    append(&mut journal_client, battle, no_stream(), vec![opened("forum-a", "open")]).await.expect("open");
    poll_until("the first event delivered and acknowledged", DEADLINE, || async {
        let acked = consumer_counts(&context).await == Some((0, 0));
        (acked && receiver.state.deduped().len() == 1).then_some(())
    })
    .await;

    // Frozen: its pull request stays open, so JetStream hands it the next
    // two events, which it cannot store.
    service.freeze().await;
    append(&mut journal_client, battle, journal_client::any(), vec![rolled(0, "attack", "r0"), resolved("hit", "a1")])
        .await
        .expect("act 1");
    poll_until("two events handed to the frozen service", DEADLINE, || async {
        (consumer_counts(&context).await == Some((2, 0))).then_some(())
    })
    .await;
    service.kill_9_in_place();
    service = webhooks(&service_dir, &nats.url(), &tenants, &envs).await;
    append(&mut journal_client, battle, journal_client::any(), vec![closed("close")]).await.expect("close");

    // Done when the last event was delivered and nothing is left anywhere:
    // JetStream has every message acknowledged, the queue is empty.
    poll_until("the last event delivered and everything acknowledged", DEADLINE, || async {
        let last = receiver.state.deduped().iter().any(|d| d.version() == 3);
        let settled = consumer_counts(&context).await == Some((0, 0));
        (last && settled && metric(&service, "battlelog_webhooks_queued").await == 0).then_some(())
    })
    .await;
    assert_eq!(read_stream(&mut journal_client, battle).await.len(), 4);
    check_deliveries(&receiver.state, SECRET_A, "forum-a", &mut journal_client, &[battle]).await;
    // The last event did come first (what this test is about), and waited.
    assert!(metric(&service, "battlelog_webhooks_out_of_order_total").await >= 1);
    assert_eq!(metric(&service, "battlelog_webhooks_gaps_total").await, 0);
    assert!(service.terminate().await, "a clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_endpoints_deliveries_are_parked_in_order_reported_and_replayed() {
    let nats = NatsServer::start();
    let dir = temp_dir("webhooks-parked");
    let journal = battlelog_test_support::journal(&dir.path().join("journal"), Some(&nats.url())).await;
    let mut journal_client = client(&journal).await;
    let good = Receiver::start().await;
    let bad = Receiver::start().await;
    bad.state.fail_all.store(true, Ordering::SeqCst);
    let urls = [good.url(), bad.url()];
    let tenants = [("forum-a", urls[0].as_str(), SECRET_A), ("forum-b", urls[1].as_str(), SECRET_B)];
    // Two attempts, then parked.
    let service = webhooks(
        &dir.path().join("webhooks"),
        &nats.url(),
        &tenants,
        &[("BATTLELOG_WEBHOOKS_RETRY_MAX_ATTEMPTS", "2"), ("BATTLELOG_WEBHOOKS_METRICS_LISTEN", "127.0.0.1:0")],
    )
    .await;

    // Who may see and replay: a service token only.
    let auth = TestAuth::shared();
    assert_eq!(admin(&service, "GET", "/v1/parked", None).await.0, 401);
    assert_eq!(admin(&service, "GET", "/metrics", Some("not-a-token")).await.0, 401);
    for role in [Role::Forum, Role::Judge, Role::Reader] {
        let token = auth.token(role, "forum-b", "someone");
        assert_eq!(admin(&service, "GET", "/v1/parked", Some(&token)).await.0, 403, "{role}");
        assert_eq!(admin(&service, "POST", "/v1/replay", Some(&token)).await.0, 403, "{role}");
        assert_eq!(admin(&service, "GET", "/metrics", Some(&token)).await.0, 403, "{role}");
    }
    assert_eq!(admin(&service, "GET", "/healthz", None).await.0, 200);

    let parked_battle = "wh-parked";
    append(&mut journal_client, parked_battle, no_stream(), vec![opened("forum-b", "b-open")]).await.unwrap();
    append(
        &mut journal_client,
        parked_battle,
        journal_client::any(),
        vec![rolled(0, "x", "b-r0"), resolved("b1", "b-a1")],
    )
    .await
    .unwrap();
    // forum-a's battle goes on meanwhile.
    append(&mut journal_client, "wh-fine", no_stream(), vec![opened("forum-a", "a-open"), resolved("a1", "a-a1")])
        .await
        .unwrap();
    poll_until("forum-b's three events parked", DEADLINE, || async {
        (metric(&service, "battlelog_webhooks_parked").await == 3).then_some(())
    })
    .await;
    // The edge of retry_max_attempts: exactly two attempts of the first
    // event, none of the two behind it.
    let attempts: Vec<u64> = bad.state.deliveries().iter().map(Delivery::version).collect();
    assert_eq!(attempts, [0, 0], "two attempts of version 0, then parked");
    // An event of the parked battle that comes later parks behind it.
    append(&mut journal_client, parked_battle, journal_client::any(), vec![closed("b-close")]).await.unwrap();
    poll_until("the later event parked behind", DEADLINE, || async {
        (metric(&service, "battlelog_webhooks_parked").await == 4).then_some(())
    })
    .await;
    assert_eq!(bad.state.deliveries().len(), 2, "nothing of the parked battle is attempted again");
    let parked_metrics = admin(&service, "GET", "/metrics", Some(&auth.service_token())).await.1;
    assert!(parked_metrics.contains("battlelog_webhooks_parked{tenant=\"forum-b\"} 4"), "{parked_metrics}");
    // The metrics port (metrics_listen, no token: an operator's port) shows
    // the very same counters and gauges.
    // The parkings counter moves just after the store has the parked
    // delivery (which the gauge reads): wait for both.
    let url = service.metrics_url().expect("a metrics port announced");
    poll_until("the metrics port shows the four parked deliveries", DEADLINE, || {
        let url = url.clone();
        async move {
            let (status, scraped) = battlelog_test_support::http_get(&url, &[]).await;
            let shown =
                ["battlelog_webhooks_parked{tenant=\"forum-b\"} 4", "battlelog_webhooks_deliveries_parked_total 4"]
                    .iter()
                    .all(|line| scraped.lines().any(|l| l == *line));
            (status == 200 && shown).then_some(())
        }
    })
    .await;

    let listed = cli(&service, &["parked", "--tenant", "forum-b"]);
    let lines: Vec<&str> = listed.lines().collect();
    assert_eq!(lines.len(), 5, "{listed}");
    for (version, line) in lines[..4].iter().enumerate() {
        assert!(line.starts_with(&format!("forum-b {parked_battle} #{version} ")), "{line}");
    }
    assert!(lines[0].contains("HTTP 500"), "{listed}");
    assert_eq!(lines[4], "4 parked");
    assert_eq!(cli(&service, &["parked", "--tenant", "forum-a"]).trim(), "0 parked");

    poll_until("forum-a's battle delivered", DEADLINE, || async { (good.state.deduped().len() == 2).then_some(()) })
        .await;
    check_deliveries(&good.state, SECRET_A, "forum-a", &mut journal_client, &["wh-fine"]).await;

    // Fixed; replayed: every parked event, in order, nothing else.
    bad.state.fail_all.store(false, Ordering::SeqCst);
    assert_eq!(cli(&service, &["replay", "--battle", "nothing-parked"]).trim(), "0 replayed, of 0 battles");
    assert_eq!(cli(&service, &["replay", "--tenant", "forum-b"]).trim(), "4 replayed, of 1 battles");
    poll_until("the replayed events", DEADLINE, || async { (bad.state.deduped().len() == 4).then_some(()) }).await;
    check_deliveries(&bad.state, SECRET_B, "forum-b", &mut journal_client, &[parked_battle]).await;
    assert_eq!(metric(&service, "battlelog_webhooks_parked").await, 0);
    assert_eq!(cli(&service, &["parked"]).trim(), "0 parked");
    let delivered = metric(&service, "battlelog_webhooks_delivered_total").await;
    assert_eq!(delivered, 6, "2 of forum-a, 4 of forum-b");
    let by_battle: BTreeMap<String, usize> = bad.state.deduped().iter().fold(BTreeMap::new(), |mut m, d| {
        *m.entry(d.battle()).or_default() += 1;
        m
    });
    assert_eq!(by_battle.len(), 1);
}

/// A child process whose stdout lines are read as they come.
struct Lines {
    child: std::process::Child,
    lines: std::sync::mpsc::Receiver<String>,
}

impl Lines {
    fn spawn(command: &mut std::process::Command) -> Self {
        use std::io::BufRead;
        let mut child = command
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {command:?}: {e}"));
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Self { child, lines }
    }

    fn next(&self) -> String {
        self.lines.recv_timeout(DEADLINE).expect("a line within the deadline")
    }

    /// The lines printed so far, without waiting.
    fn ready(&self) -> Vec<String> {
        self.lines.try_iter().collect()
    }
}

impl Drop for Lines {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn example(name: &str) -> String {
    format!("{}/../examples/webhooks/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// A POST to `url` signed with `secret` (by this test's HMAC), or with a
/// signature of another body when `forged`: the status.
async fn post_signed(url: &str, secret: &str, id: &str, body: &str, forged: bool) -> u16 {
    let timestamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs().to_string();
    let key = BASE64.decode(secret.strip_prefix("whsec_").unwrap()).unwrap();
    let signed = if forged { format!("{id}.{timestamp}.{body} ") } else { format!("{id}.{timestamp}.{body}") };
    let signature = format!("v1,{}", BASE64.encode(hmac_sha256(&key, signed.as_bytes())));
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<http_body_util::Full<hyper::body::Bytes>>();
    let request = hyper::Request::post(url)
        .header("content-type", "application/json")
        .header("webhook-id", id)
        .header("webhook-timestamp", timestamp)
        .header("webhook-signature", signature)
        .body(http_body_util::Full::new(hyper::body::Bytes::from(body.to_owned())))
        .unwrap();
    client.request(request).await.unwrap_or_else(|e| panic!("POST {url}: {e}")).status().as_u16()
}

fn sample_body(version: u64) -> String {
    serde_json::json!({"type": "battlelog.event", "timestamp": "2026-12-01T00:00:00Z", "data": {
        "tenant": "forum-a", "battle_id": "b-1", "version": version, "event_type": "DiceRolled", "event": {}
    }})
    .to_string()
}

/// What an example receiver must do with deliveries: `post` sends one and
/// gives its status; `events` is what the receiver recorded so far.
async fn check_receiver<F, Fut>(post: F, events: impl Fn() -> Vec<Value>)
where
    F: Fn(&'static str, String, bool) -> Fut,
    Fut: Future<Output = u16>,
{
    assert_eq!(post("msg_1", sample_body(0), false).await, 200, "a valid delivery is accepted");
    assert_eq!(post("msg_2", sample_body(1), true).await, 401, "a bad signature is refused");
    assert_eq!(post("msg_1", sample_body(0), false).await, 200, "a repeat is answered 2xx, so it is not retried");
    assert_eq!(post("msg_3", sample_body(2), false).await, 200);
    let events = poll_until("the receiver's events", DEADLINE, || {
        let events = events();
        async move { (events.len() >= 2).then_some(events) }
    })
    .await;
    let ids: Vec<&str> = events.iter().map(|e| e["webhook_id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["msg_1", "msg_3"], "once each, the forged one not at all");
    assert_eq!(events[1]["version"], 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_receiver_checks_signatures_and_dedupes() {
    let receiver = Lines::spawn(
        std::process::Command::new("python3")
            .arg(example("receiver.py"))
            .args(["--port", "0"])
            .env("WEBHOOK_SECRET", SECRET_A),
    );
    let listening = receiver.next();
    let addr = listening.strip_prefix("listening on ").unwrap_or_else(|| panic!("{listening}")).to_owned();
    let url = format!("http://{addr}/");
    let seen = Mutex::new(Vec::new());
    check_receiver(
        |id, body, forged| {
            let url = url.clone();
            async move { post_signed(&url, SECRET_A, id, &body, forged).await }
        },
        || {
            let mut seen = seen.lock().unwrap();
            seen.extend(receiver.ready().iter().map(|l| serde_json::from_str::<Value>(l).expect("a JSON line")));
            seen.clone()
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_php_receiver_checks_signatures_and_dedupes() {
    let dir = temp_dir("webhooks-php");
    // PHP's built-in server takes no port 0: a free one, found by binding.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let _server = Lines::spawn(
        std::process::Command::new("php")
            .args(["-S", &format!("127.0.0.1:{port}"), &example("receiver.php")])
            .env("WEBHOOK_SECRET", SECRET_A)
            .env("WEBHOOK_DATA_DIR", dir.path())
            .stderr(std::process::Stdio::null()),
    );
    poll_until("php -S to listen", DEADLINE, || async move {
        tokio::net::TcpStream::connect(("127.0.0.1", port)).await.ok()
    })
    .await;
    let url = format!("http://127.0.0.1:{port}/");
    let events = dir.path().join("events.jsonl");
    check_receiver(
        |id, body, forged| {
            let url = url.clone();
            async move { post_signed(&url, SECRET_A, id, &body, forged).await }
        },
        || {
            std::fs::read_to_string(&events)
                .unwrap_or_default()
                .lines()
                .map(|l| serde_json::from_str::<Value>(l).expect("a JSON line"))
                .collect()
        },
    )
    .await;
}

/// `battlelog up --webhook URL` with the Python example as the receiver,
/// reading the secret `up` wrote: the demo's battles arrive whole, in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn up_with_a_webhook_delivers_the_demo_to_the_example_receiver() {
    up_delivers_the_demo(&[]).await;
}

/// The same with the journal's log in JetStream: the webhooks follow the log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn up_with_a_webhook_and_the_jetstream_journal_delivers_the_demo() {
    up_delivers_the_demo(&["--journal-backend", "jetstream"]).await;
}

async fn up_delivers_the_demo(extra: &[&str]) {
    let dir = temp_dir("webhooks-up");
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let secret_file = data.join("webhooks").join("secret");
    let receiver = Lines::spawn(
        std::process::Command::new("python3")
            .arg(example("receiver.py"))
            .args(["--port", "0", "--secret-file"])
            .arg(&secret_file),
    );
    let listening = receiver.next();
    let url = format!("http://{}/", listening.strip_prefix("listening on ").unwrap());
    let mut flags = vec!["--webhook", url.as_str(), "--webhooks-listen", "127.0.0.1:0"];
    flags.extend(extra);
    let up = stack::up(&data, &flags);
    let line =
        up.banner.iter().find(|l| l.trim_start().starts_with("webhooks")).unwrap_or_else(|| panic!("{:?}", up.banner));
    let admin = line.split("--webhooks ").nth(1).unwrap_or_else(|| panic!("{line}")).trim().to_owned();
    assert!(line.contains(&secret_file.display().to_string()), "the banner names the secret's file: {line}");
    assert!(std::fs::read_to_string(&secret_file).unwrap().starts_with("whsec_"));

    let data_arg = data.display().to_string();
    let (code, stdout, stderr) = stack::cli(&["demo", "--resolver", &up.resolver, "--data-dir", &data_arg]);
    assert_eq!(code, Some(0), "demo: {stderr}\n{stdout}");
    let battles: Vec<String> = stdout
        .lines()
        .filter_map(|l| l.trim().strip_prefix("battlelog "))
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|words| words.first() == Some(&"export") && words.len() == 6)
        .map(|words| words[1].to_owned())
        .collect();
    assert_eq!(battles.len(), 4, "{stdout}");

    let mut events: Vec<Value> = Vec::new();
    let closed = |events: &[Value]| {
        battles.iter().all(|b| events.iter().any(|e| e["battle_id"] == b.as_str() && e["event_type"] == "BattleClosed"))
    };
    poll_until("every demo battle closed at the receiver", DEADLINE, || {
        events.extend(receiver.ready().iter().map(|l| serde_json::from_str::<Value>(l).expect("a JSON line")));
        let done = closed(&events);
        async move { done.then_some(()) }
    })
    .await;
    for battle in &battles {
        let versions: Vec<u64> = events
            .iter()
            .filter(|e| e["battle_id"] == battle.as_str())
            .map(|e| e["version"].as_u64().unwrap())
            .collect();
        let expected: Vec<u64> = (0..versions.len() as u64).collect();
        assert_eq!(versions, expected, "{battle}: every event, once, in order");
        assert!(events.iter().filter(|e| e["battle_id"] == battle.as_str()).all(|e| e["tenant"] == "dev"));
    }
    // The operator's view, with the development token of the data dir.
    let (code, parked, stderr) = stack::cli(&["webhooks", "parked", "--webhooks", &admin, "--data-dir", &data_arg]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(parked.trim(), "0 parked");
}

/// A nats-server on the shipped nats.conf, a journal on it as the
/// `journal` user (started with `options`), a client of it, and a receiver;
/// the webhooks, started by the test, log in as `webhooks_nats`'s user.
struct Shipped {
    nats: NatsServer,
    dir: tempfile::TempDir,
    journal: ServiceProcess,
    journal_client: journal_client::Client,
    receiver: Receiver,
    webhooks_nats: String,
}

async fn shipped(label: &str, options: &battlelog_test_support::StartOptions) -> Shipped {
    let nats = battlelog_test_support::shipped_nats();
    let port = nats.port();
    let dir = temp_dir(label);
    let journal_nats = format!("nats://journal:jp@127.0.0.1:{port}");
    let journal = battlelog_test_support::journal_with(&dir.path().join("journal"), Some(&journal_nats), options).await;
    let journal_client = client(&journal).await;
    let receiver = Receiver::start().await;
    let webhooks_nats = format!("nats://webhooks:wp@127.0.0.1:{port}");
    Shipped { nats, dir, journal, journal_client, receiver, webhooks_nats }
}

/// Under the shipped nats.conf, as its `webhooks` user (the journal as
/// `journal`): the permissions listed there are enough to follow the
/// fan-out with the durable consumer and acknowledge it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shipped_nats_users_permissions_suffice() {
    let Shipped { nats: _nats, dir, journal: _journal, mut journal_client, receiver, webhooks_nats } =
        shipped("webhooks-shipped", &Default::default()).await;
    let url = receiver.url();
    let service = webhooks(&dir.path().join("webhooks"), &webhooks_nats, &[("forum-a", &url, SECRET_A)], &[]).await;
    append(&mut journal_client, "wh-shipped", no_stream(), vec![opened("forum-a", "open"), resolved("one", "a1")])
        .await
        .unwrap();
    poll_until("both events", DEADLINE, || async { (receiver.state.deduped().len() == 2).then_some(()) }).await;
    check_deliveries(&receiver.state, SECRET_A, "forum-a", &mut journal_client, &["wh-shipped"]).await;
    assert!(!service.log().contains("Permissions Violation"), "{}", service.log());
}

/// The JetStream journal: its log is one message per append (several events
/// in one), which the webhooks split into their events, each with the hash
/// and global position the journal reports. Under the shipped nats.conf
/// (whose max_payload the JetStream journal needs), as its users.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_jetstream_journals_log_is_followed_event_by_event() {
    let options = battlelog_test_support::StartOptions {
        envs: vec![("BATTLELOG_JOURNAL_BACKEND".to_owned(), "jetstream".to_owned())],
        ..Default::default()
    };
    let Shipped { nats: _nats, dir, journal: _journal, mut journal_client, receiver, webhooks_nats } =
        shipped("webhooks-jetstream", &options).await;
    let url = receiver.url();
    let envs = [
        ("BATTLELOG_WEBHOOKS_NATS_STREAM", "BATTLELOG_JOURNAL"),
        ("BATTLELOG_WEBHOOKS_NATS_SUBJECT_PREFIX", "battlelog.journal"),
    ];
    let _service = webhooks(&dir.path().join("webhooks"), &webhooks_nats, &[("forum-a", &url, SECRET_A)], &envs).await;
    let battle = "wh-log";
    append(&mut journal_client, battle, no_stream(), vec![opened("forum-a", "open")]).await.unwrap();
    let act = vec![rolled(0, "x", "r0"), resolved("one", "a1"), resolved("two", "a2")];
    append(&mut journal_client, battle, journal_client::any(), act).await.unwrap();
    append(&mut journal_client, battle, journal_client::any(), vec![closed("close")]).await.unwrap();
    poll_until("every event of the log", DEADLINE, || async { (receiver.state.deduped().len() == 5).then_some(()) })
        .await;
    check_deliveries(&receiver.state, SECRET_A, "forum-a", &mut journal_client, &[battle]).await;
}

/// The record bytes a forger makes of `event`: battle `battle`'s version
/// `version`, with every field the journal fills in.
fn forged_record(battle: &str, version: u64, event: pb::NewEvent, event_id: &str) -> Vec<u8> {
    prost::Message::encode_to_vec(&pb::JournalRecord {
        stream_id: battle.into(),
        version,
        event_id: event_id.into(),
        event_type: event.event_type,
        recorded_at_unix_micros: 1_796_158_800_123_456,
        idempotency_key: event.idempotency_key,
        payload: event.payload,
    })
}

/// Publishes `record` on the fan-out as the journal does (its headers, the
/// hash chained on `previous` as docs/protocol.md §4 defines it), stored by
/// JetStream before this returns.
async fn publish_as_the_journal(
    js: &async_nats::jetstream::Context,
    tenant: &str,
    battle: &str,
    version: u64,
    record: Vec<u8>,
    previous: &[u8],
) {
    let hash: [u8; 32] = Sha256::new().chain_update(previous).chain_update(&record).finalize().into();
    let mut headers = async_nats::HeaderMap::new();
    headers.insert("Nats-Msg-Id", format!("forged-{battle}-{version}").as_str());
    headers.insert("Battlelog-Stream", battle);
    headers.insert("Battlelog-Version", version.to_string().as_str());
    headers.insert("Battlelog-Global-Position", "4242");
    headers.insert("Battlelog-Hash", hex::encode(hash).as_str());
    let subject = format!("battlelog.events.{tenant}.{battle}");
    js.publish_with_headers(subject, headers, record.into()).await.expect("published").await.expect("stored");
}

/// Issue 35, finding 5: a forger with the journal's NATS password (the
/// shipped nats.conf's `journal` user) publishes on the fan-out, every
/// field valid-looking and every hash chained as the protocol says: a
/// battle the journal never held, a record of a real battle under another
/// tenant's subject, and a "next version" of a real battle ahead of the
/// real one. None is delivered, each is counted, and the real next version
/// is delivered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_the_journal_does_not_hold_are_never_delivered() {
    let Shipped { nats, dir, journal, mut journal_client, receiver, webhooks_nats } =
        shipped("webhooks-forged", &Default::default()).await;
    let port = nats.port();
    let url = receiver.url();
    let journal_url = journal.url();
    let envs = [("BATTLELOG_WEBHOOKS_JOURNAL_URL", journal_url.as_str())];
    let tenants = [("forum-a", url.as_str(), SECRET_A), ("forum-b", url.as_str(), SECRET_B)];
    let service = webhooks(&dir.path().join("webhooks"), &webhooks_nats, &tenants, &envs).await;

    let battle = "wh-real";
    append(&mut journal_client, battle, no_stream(), vec![opened("forum-a", "open")]).await.unwrap();
    poll_until("the real opening", DEADLINE, || async { (receiver.state.deduped().len() == 1).then_some(()) }).await;
    let opening = read_stream(&mut journal_client, battle).await.remove(0);

    let forger = async_nats::ConnectOptions::with_user_and_password("journal".into(), "jp".into())
        .connect(format!("127.0.0.1:{port}"))
        .await
        .expect("the journal's NATS user");
    let js = async_nats::jetstream::new(forger);
    let never = "wh-never-opened";
    let record = forged_record(never, 0, opened("forum-a", "forged-open"), "forged-open");
    publish_as_the_journal(&js, "forum-a", never, 0, record, &journal_client::genesis(never)).await;
    publish_as_the_journal(&js, "forum-b", battle, 0, opening.record.clone(), &journal_client::genesis(battle)).await;
    let record = forged_record(battle, 1, rolled(0, "forged", "forged-roll"), "forged-roll");
    publish_as_the_journal(&js, "forum-a", battle, 1, record, &opening.hash).await;
    append(&mut journal_client, battle, journal_client::exact(Some(0)), vec![rolled(0, "real", "roll")]).await.unwrap();

    poll_until("the real version 1", DEADLINE, || async {
        receiver.state.deduped().iter().any(|d| d.battle() == battle && d.version() == 1).then_some(())
    })
    .await;
    check_deliveries(&receiver.state, SECRET_A, "forum-a", &mut journal_client, &[battle]).await;
    for delivery in receiver.state.deliveries() {
        let data = &delivery.json()["data"];
        assert_eq!((data["tenant"].as_str(), data["battle_id"].as_str()), (Some("forum-a"), Some(battle)), "{data}");
        assert!(!delivery.id.starts_with("forged"), "a forged record was delivered: {data}");
    }
    assert_eq!(receiver.state.deduped().len(), 2, "the journal's two records, nothing else");
    assert_eq!(metric(&service, "battlelog_webhooks_forged_total").await, 3);
}

/// `ack_wait_ms` and `max_ack_pending` are the durable consumer's, as
/// JetStream reports them, and a restart with other values updates it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_consumer_takes_ack_wait_and_max_ack_pending_from_the_config() {
    let nats = NatsServer::start();
    let dir = temp_dir("webhooks-consumer");
    let journal = battlelog_test_support::journal(&dir.path().join("journal"), Some(&nats.url())).await;
    let mut journal_client = client(&journal).await;
    // The journal creates the stream with its first event.
    append(&mut journal_client, "wh-consumer", no_stream(), vec![opened("forum-z", "open")]).await.unwrap();
    let receiver = Receiver::start().await;
    let url = receiver.url();
    let context = async_nats::jetstream::new(async_nats::connect(nats.url()).await.expect("connect"));
    for (ack_wait, pending) in [("1234", "7"), ("4321", "1")] {
        let envs = [("BATTLELOG_WEBHOOKS_ACK_WAIT_MS", ack_wait), ("BATTLELOG_WEBHOOKS_MAX_ACK_PENDING", pending)];
        let service = webhooks(&dir.path().join("webhooks"), &nats.url(), &[("forum-a", &url, SECRET_A)], &envs).await;
        let config = poll_until("the consumer with this config", DEADLINE, || {
            let context = context.clone();
            async move {
                let stream = context.get_stream("BATTLELOG_EVENTS").await.ok()?;
                let mut consumer: async_nats::jetstream::consumer::PullConsumer =
                    stream.get_consumer("battlelog-webhooks").await.ok()?;
                let config = consumer.info().await.ok()?.config.clone();
                (config.ack_wait == Duration::from_millis(ack_wait.parse().unwrap())).then_some(config)
            }
        })
        .await;
        assert_eq!(config.max_ack_pending.to_string(), pending);
        assert_eq!(config.durable_name.as_deref(), Some("battlelog-webhooks"));
        assert!(service.terminate().await);
    }
}

/// The HTTP port is served the web's way (battlelog_runtime::http), with
/// its own keys: a connection that sends nothing is closed at
/// `http_header_read_timeout_ms` (not before); with `http_max_connections`
/// held, one more is closed at once — long before the header-read timeout
/// that would close it otherwise — and the port serves again once they go.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_http_port_closes_silent_connections_and_those_past_its_limit() {
    let nats = NatsServer::start();
    let dir = temp_dir("webhooks-http-limits");

    let timeout = Duration::from_millis(1_500);
    let envs = [("BATTLELOG_WEBHOOKS_HTTP_HEADER_READ_TIMEOUT_MS", "1500")];
    let service = webhooks(&dir.path().join("timeout"), &nats.url(), &[], &envs).await;
    let mut silent = tokio::net::TcpStream::connect(service.addr()).await.expect("connect");
    let closed = closed_by_server(&mut silent, Instant::now(), timeout * 5).await.expect("a silent connection closed");
    assert!(closed >= timeout.mul_f64(0.9), "closed after {closed:?}, before the timeout of {timeout:?}");
    assert!(service.terminate().await);

    // The header-read timeout stays at its default (10 s) here, so a close
    // within it is the limit's.
    let envs = [("BATTLELOG_WEBHOOKS_HTTP_MAX_CONNECTIONS", "3")];
    let service = webhooks(&dir.path().join("limit"), &nats.url(), &[], &envs).await;
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(tokio::net::TcpStream::connect(service.addr()).await.expect("connect"));
    }
    let mut past = tokio::net::TcpStream::connect(service.addr()).await.expect("connect");
    let closed = closed_by_server(&mut past, Instant::now(), Duration::from_secs(8)).await;
    assert!(closed.is_some(), "the connection past http_max_connections = 3 is closed before the header-read timeout");
    // The three held ones are served.
    for stream in &mut held {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        stream.write_all(b"GET /healthz HTTP/1.1\r\nhost: webhooks\r\n\r\n").await.expect("a request");
        let mut answer = [0u8; 12];
        stream.read_exact(&mut answer).await.expect("an answer");
        assert_eq!(&answer, b"HTTP/1.1 200", "a held connection is served");
    }
    drop(held);
    poll_until("the port serving again once the held connections are gone", DEADLINE, || async {
        let (status, _) = admin_probe(&service).await?;
        (status == 200).then_some(())
    })
    .await;
    assert!(service.terminate().await);
}

/// `/healthz` on the HTTP port, or `None` when the connection is refused or cut.
async fn admin_probe(process: &ServiceProcess) -> Option<(u16, String)> {
    let url = format!("http://{}/healthz", process.addr());
    tokio::time::timeout(Duration::from_secs(2), async {
        let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .build_http::<http_body_util::Empty<hyper::body::Bytes>>();
        let response = client.get(url.parse().ok()?).await.ok()?;
        let status = response.status().as_u16();
        let body = response.into_body().collect().await.ok()?.to_bytes();
        Some((status, String::from_utf8_lossy(&body).into_owned()))
    })
    .await
    .ok()
    .flatten()
}

/// Until the journal's first event creates the fan-out stream, the
/// webhooks service waits for it, asking JetStream again and again; it
/// says so once, not at every try, and says once more when the state
/// changes (it follows the stream). The tries are seen on the server: each
/// is a `$JS.API.STREAM.INFO` request, which a plain subscriber sees too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_for_the_journals_stream_is_logged_once_not_at_every_try() {
    let nats = NatsServer::start();
    let dir = temp_dir("webhooks-waiting");
    let observer = async_nats::connect(nats.url()).await.expect("connect to NATS");
    let mut tries = observer.subscribe("$JS.API.STREAM.INFO.BATTLELOG_EVENTS").await.expect("subscribe");
    observer.flush().await.expect("flush");
    let receiver = Receiver::start().await;
    let url = receiver.url();
    let service = webhooks(&dir.path().join("webhooks"), &nats.url(), &[("forum-a", &url, SECRET_A)], &[]).await;
    // Several tries, each answered "stream not found".
    for _ in 0..4 {
        tokio::time::timeout(DEADLINE, tokio_stream::StreamExt::next(&mut tries))
            .await
            .expect("the service asks for the stream again")
            .expect("the subscription is open");
    }
    let about_the_stream = |log: &str| -> Vec<String> {
        let following = |l: &str| l.contains("following the journal's committed events");
        log.lines().filter(|l| l.contains("BATTLELOG_EVENTS") && !following(l)).map(str::to_owned).collect()
    };
    let waiting = about_the_stream(&service.log());
    assert_eq!(waiting.len(), 1, "said once after several tries: {waiting:#?}");

    // The journal's first event creates the stream: following it is said once.
    let journal = battlelog_test_support::journal(&dir.path().join("journal"), Some(&nats.url())).await;
    let mut journal_client = client(&journal).await;
    append(&mut journal_client, "wh-first", no_stream(), vec![opened("forum-a", "open")]).await.expect("open");
    poll_until("the event delivered", DEADLINE, || async { (!receiver.state.deduped().is_empty()).then_some(()) })
        .await;
    let log = service.log();
    let following: Vec<&str> = log.lines().filter(|l| l.contains("following the journal's committed events")).collect();
    assert_eq!(following.len(), 1, "{log}");
    assert_eq!(about_the_stream(&log), waiting, "nothing more about waiting: {log}");
}
