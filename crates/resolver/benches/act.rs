//! `Act` through the whole chain — resolver → roller → journal, each a real
//! gRPC server on loopback, the journal on sled in the target directory:
//! `cargo bench -p battlelog-resolver --bench act`.
//!
//! One run builds two stacks side by side and measures both, so that the
//! cost of security is read from figures taken under the same load:
//!
//! - **plain**: no TLS and no token checking. The library serves only with
//!   authentication, so this stack is assembled here from the public
//!   service types on bare tonic servers; an interceptor on the resolver
//!   hands every request a fixed forum [`Caller`] of the test tenant, which
//!   is what the handlers read. The clients still attach their bearer
//!   tokens (the services' clients always do): the header costs bytes on
//!   the wire, nobody checks it. Its journal counts the calls it serves, so
//!   that the run shows how many reads and appends one `Act` costs.
//! - **secure**: the services' own servers with token verifiers (the
//!   resolver's without its per-tenant rate limit: the bench's one forum
//!   calls far faster than a tenant may),
//!   as `battlelog up --tls` runs them — mutual TLS between the services
//!   (the journal and the roller require the services' client
//!   certificate), TLS on the resolver (the forum trusts the CA, no client
//!   certificate), a token checked on every hop.
//!
//! The same run measures the floors the acceptance targets (issue 11) are
//! set against: the raw sled insert + flush p50 (one durable write, as the
//! journal benchmark measures it), the bare gRPC round trip (a
//! `grpc.health.v1` check on the resolver) and the journal's own appends
//! at concurrency 1 and 64 (single-event appends to streams of their own,
//! over gRPC on the plain stack's journal). Then, for each stack, `Act` at concurrency 1
//! (one battle), at concurrency 64 (64 battles, one player each: a busy
//! forum), and 32 players on one battle (serialised by design). Each `Act`
//! is a pbta move: one 2d6 roll and one resolution, so two journal appends
//! (two flushes). It prints PASS or FAIL for
//!
//! 1. `Act` p50 at concurrency 1 ≤ 4 × round trip + 2 × sled insert+flush
//!    (the forum's call, the resolver's call to the roller and the two
//!    appends: nothing else on the path), and
//! 2. `Act` throughput at concurrency 64 ≥ 40 % of half the journal's
//!    concurrency-64 append rate (each `Act` is two appends),
//!
//! on the plain stack (the floors are measured without TLS), with the
//! secure stack's ratios beside them. Last, the plain stack on a journal on
//! a three-node JetStream cluster (replicas 3) against a fresh sled one:
//! `Act` p50 at concurrency 1, and the aim of issue 19 (within 2× of sled). `BATTLELOG_BENCH_SECONDS` sets the
//! seconds per case and stack (default 3); a case runs in one-second slices
//! alternating between the stacks, so that a change in the machine's load
//! falls on both alike. `BATTLELOG_BENCH_WORKER_THREADS` sets the runtime's worker threads
//! (default: one per core).

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use battlelog_auth::{AuthChannel, Caller, Role, authed};
use battlelog_journal::service::JournalService;
use battlelog_journal::store::jetstream::{JetStreamOptions, JetStreamStore};
use battlelog_journal::{Journal, JournalOptions};
use battlelog_proto::battle::json_to_struct;
use battlelog_proto::v1 as pb;
use battlelog_proto::v1::journal_client::JournalClient;
use battlelog_proto::v1::journal_server::JournalServer;
use battlelog_proto::v1::resolver_client::ResolverClient;
use battlelog_proto::v1::resolver_server::ResolverServer;
use battlelog_proto::v1::roller_server::RollerServer;
use battlelog_proto::v1::{ActRequest, OpenBattleRequest};
use battlelog_roller::server::journal_client_with_tls;
use battlelog_roller::{MasterKey, RollerService};
use battlelog_runtime::edge::TenantRateLimit;
use battlelog_runtime::grpc::incoming;
use battlelog_runtime::serve::GrpcServer;
use battlelog_runtime::tls::{ServerTls, endpoint};
use battlelog_test_support::auth::TEST_TENANT;
use battlelog_test_support::bench::span_clock::{self, SpanClock, Timed};
use battlelog_test_support::bench::{Figures, figures, raw_sled_insert_flush, report, seconds_per_case};
use battlelog_test_support::{NatsCluster, TestAuth, TestPki, poll_until};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, ClientTlsConfig, Server};
use tonic::{Request, Status};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;

// The allocator the service binaries run with.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

async fn listen(scheme: &str) -> (TcpListener, String) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("{scheme}://{}", listener.local_addr().expect("addr"));
    (listener, url)
}

async fn channel(url: &str, tls: Option<&ClientTlsConfig>) -> Channel {
    endpoint(url, tls).expect("url").connect().await.expect("connect")
}

async fn open_journal(dir: &Path) -> Journal {
    Journal::open(JournalOptions::new(dir)).await.expect("journal")
}

/// Calls the plain stack's journal served, by kind.
static JOURNAL_READS: AtomicU64 = AtomicU64::new(0);
static JOURNAL_APPENDS: AtomicU64 = AtomicU64::new(0);

/// Counts one journal call by its gRPC method (tonic hands every request's
/// head to the trace hook, which is all the counting needs).
fn count_journal_call(request: &tonic::codegen::http::Request<()>) -> tracing::Span {
    let path = request.uri().path();
    if path.ends_with("/ReadStream") {
        JOURNAL_READS.fetch_add(1, Ordering::Relaxed);
    } else if path.ends_with("/Append") {
        JOURNAL_APPENDS.fetch_add(1, Ordering::Relaxed);
    }
    tracing::Span::none()
}

fn journal_calls() -> (u64, u64) {
    (JOURNAL_READS.load(Ordering::Relaxed), JOURNAL_APPENDS.load(Ordering::Relaxed))
}

fn object(value: Value) -> prost_types::Struct {
    json_to_struct(value.as_object().expect("an object"))
}

/// One stack, as a forum sees it: its resolver, over the forum's token.
struct Stack {
    name: &'static str,
    /// The journal when it runs in this process (`None`: a process of its own).
    journal: Option<Journal>,
    journal_url: String,
    resolver: ResolverClient<AuthChannel>,
    health: HealthClient<Channel>,
}

/// Without TLS and without token checks (see the module docs).
async fn plain(data_dir: &Path, auth: &TestAuth) -> Stack {
    plain_on(open_journal(data_dir).await, "plain", auth).await
}

/// [`plain`] on a journal of any store.
async fn plain_on(journal: Journal, name: &'static str, auth: &TestAuth) -> Stack {
    let token = auth.service_token();
    let (listener, journal_url) = listen("http").await;
    // The message size limits the journal's own server sets.
    let limit = journal.limits().grpc_message_limit();
    let journal_service = JournalServer::new(JournalService::new(journal.clone()))
        .max_decoding_message_size(limit)
        .max_encoding_message_size(limit);
    // `incoming` turns Nagle off as the services' own servers do: without
    // it, the stacks would differ by delayed ACKs, not by security.
    tokio::spawn(
        Server::builder()
            .trace_fn(count_journal_call)
            .add_service(journal_service)
            .serve_with_incoming(incoming(listener)),
    );

    let key = MasterKey::from_hex(&"42".repeat(32)).expect("key");
    let roller = RollerService::new(journal_client_with_tls(&journal_url, None, &token).expect("client"), key);
    let (listener, roller_url) = listen("http").await;
    tokio::spawn(Server::builder().add_service(RollerServer::new(roller)).serve_with_incoming(incoming(listener)));

    let service = battlelog_resolver::server::service_for(&journal_url, &roller_url, None, &token).expect("service");
    // What the resolver's `Authenticator` would leave for the forum's token.
    let forum =
        Caller { subject: "test-forum".into(), tenant: TEST_TENANT.into(), role: Role::Forum, expires_at: u64::MAX };
    let as_forum = move |mut request: Request<()>| {
        request.extensions_mut().insert(forum.clone());
        Ok::<_, Status>(request)
    };
    let (health, health_service) = tonic_health::server::health_reporter();
    health.set_serving::<ResolverServer<battlelog_resolver::ResolverService>>().await;
    let (listener, resolver_url) = listen("http").await;
    tokio::spawn(
        Server::builder()
            .add_service(health_service)
            .add_service(InterceptedService::new(ResolverServer::new(service), as_forum))
            .serve_with_incoming(incoming(listener)),
    );
    let resolver_channel = channel(&resolver_url, None).await;
    Stack {
        name,
        journal: Some(journal),
        journal_url,
        resolver: ResolverClient::new(authed(resolver_channel.clone(), &auth.forum()).expect("token")),
        health: HealthClient::new(resolver_channel),
    }
}

/// The services' own servers with TLS and tokens, wired as `battlelog up
/// --tls` wires them.
async fn secure(data_dir: &Path, auth: &TestAuth, pki: &TestPki) -> Stack {
    let token = auth.service_token();
    // Between services, callers must present the client certificate; the
    // resolver is the public port: forums trust the CA and present none.
    let internal = pki.pki.mutual_server().server_config().expect("server TLS").expect("TLS");
    let public =
        ServerTls { tls_client_ca: None, ..pki.pki.mutual_server() }.server_config().expect("server TLS").expect("TLS");
    let between_services = pki.client();

    let journal = open_journal(data_dir).await;
    let (listener, journal_url) = listen("https").await;
    tokio::spawn(battlelog_journal::serve(
        journal.clone(),
        listener,
        GrpcServer::new("journal", auth.verifier()).tls(Some(internal.clone())),
        std::future::pending(),
    ));

    let key = MasterKey::from_hex(&"42".repeat(32)).expect("key");
    let journal_client = journal_client_with_tls(&journal_url, Some(&between_services), &token).expect("client");
    let roller = RollerService::new(journal_client, key);
    let (listener, roller_url) = listen("https").await;
    tokio::spawn(battlelog_roller::serve(
        roller,
        listener,
        GrpcServer::new("roller", auth.verifier()).tls(Some(internal)),
        std::future::pending(),
    ));

    let service = battlelog_resolver::server::service_for(&journal_url, &roller_url, Some(&between_services), &token)
        .expect("service");
    let (listener, resolver_url) = listen("https").await;
    // Without the per-tenant rate limit: one test forum makes every call
    // here, far past what a real one is allowed.
    let unlimited = TenantRateLimit { rate_limit_per_sec: 0, ..TenantRateLimit::default() };
    tokio::spawn(battlelog_resolver::serve(
        service,
        listener,
        GrpcServer::new("resolver", auth.verifier()).tls(Some(public)).rate_limit(unlimited),
        std::future::pending(),
    ));
    let resolver_channel = channel(&resolver_url, Some(&pki.ca_only())).await;
    Stack {
        name: "secure",
        journal: Some(journal),
        journal_url,
        resolver: ResolverClient::new(authed(resolver_channel.clone(), &auth.forum()).expect("token")),
        health: HealthClient::new(resolver_channel),
    }
}

/// The three real binaries, each a process of its own, as an operator
/// runs them (`battlelog-journal`, `battlelog-roller`, `battlelog-resolver`
/// with their default configuration: tokens checked on every hop, no TLS,
/// logs at `info`; only the resolver's per-tenant rate limit is off), started the way the system tests start them. They must
/// be built first: `cargo build --release --bins` (the bench says so when
/// they are missing). The processes stop when the returned handles drop.
async fn processes(dir: &Path) -> (Stack, Vec<battlelog_test_support::ServiceProcess>) {
    let auth = TestAuth::shared();
    std::fs::create_dir_all(dir).expect("the processes' directory");
    let journal = battlelog_test_support::journal(&dir.join("journal"), None).await;
    let roller = battlelog_test_support::roller(&dir.join("roller"), &journal.url(), Some(&"42".repeat(32))).await;
    // Without the per-tenant rate limit, as on the in-process stacks: the
    // bench's one forum calls far faster than a tenant may.
    let unlimited = battlelog_test_support::StartOptions {
        envs: vec![("BATTLELOG_RESOLVER_RATE_LIMIT_PER_SEC".to_owned(), "0".to_owned())],
        ..Default::default()
    };
    let resolver = battlelog_test_support::resolver_with(
        &dir.join("resolver.log"),
        &journal.url(),
        &roller.url(),
        None,
        &unlimited,
    )
    .await;
    let resolver_channel = resolver.channel().await;
    let stack = Stack {
        name: "processes",
        journal: None,
        journal_url: journal.url(),
        resolver: ResolverClient::new(authed(resolver_channel.clone(), &auth.forum()).expect("token")),
        health: HealthClient::new(resolver_channel),
    };
    (stack, vec![resolver, roller, journal])
}

/// What a case does, again and again.
#[derive(Debug, Clone, Copy)]
enum Case {
    /// A health check on the resolver, one at a time.
    RoundTrip,
    /// `workers` tasks, worker `w` acting on `battle(w)`.
    Act { workers: usize, battle: fn(usize) -> String, tag: &'static str },
}

/// The latencies of a case so far and the wall time they took.
#[derive(Debug, Default)]
struct Samples {
    latencies: Vec<Duration>,
    elapsed: Duration,
}

impl Stack {
    async fn shutdown(self) {
        if let Some(journal) = self.journal {
            journal.shutdown().await.expect("journal shutdown");
        }
    }

    /// Every connection made and every token verified once before
    /// measuring (the TLS handshakes and the first signature checks are once
    /// per connection and per token, not per call); then the battle the
    /// concurrency-1 cases act on, `solo`, opened.
    async fn warm_up(&mut self) {
        self.open("warm-up").await;
        let mut warm = Samples::default();
        self.measure(Case::RoundTrip, Duration::from_millis(200), 0, &mut warm).await;
        let case = Case::Act { workers: 4, battle: |_| "warm-up".to_owned(), tag: "warm" };
        self.measure(case, Duration::from_millis(300), 0, &mut warm).await;
        self.open("solo").await;
    }

    async fn open(&mut self, battle_id: &str) {
        self.resolver
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

    /// Runs `case` for `run`; `slice` keeps request ids unique across slices
    /// (a repeated one would be answered from the idempotency record).
    async fn measure(&mut self, case: Case, run: Duration, slice: u32, into: &mut Samples) {
        let start = Instant::now();
        match case {
            Case::RoundTrip => {
                while start.elapsed() < run {
                    let began = Instant::now();
                    self.health.check(HealthCheckRequest { service: String::new() }).await.expect("health");
                    into.latencies.push(began.elapsed());
                }
            }
            Case::Act { workers, battle, tag } => {
                let tasks: Vec<_> = (0..workers)
                    .map(|w| {
                        let mut resolver = self.resolver.clone();
                        let battle_id = battle(w);
                        tokio::spawn(async move {
                            let mut latencies = Vec::new();
                            let mut i = 0;
                            while start.elapsed() < run {
                                let action =
                                    object(json!({"type": "move", "actor": "ash", "trait": "cool", "stakes": "bench"}));
                                let request = ActRequest {
                                    battle_id: battle_id.clone(),
                                    action: Some(action),
                                    request_id: format!("{tag}-{slice}-{w}-{i}"),
                                    ..Default::default()
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
                for task in tasks {
                    into.latencies.extend(task.await.expect("worker"));
                }
            }
        }
        into.elapsed += start.elapsed();
    }
}

/// The journal's own rate: `concurrency` clients appending one roll at a
/// time, each to a stream of its own, over a few shared connections (as
/// the journal benchmark measures it).
async fn journal_appends(url: &str, token: &str, concurrency: usize, run: Duration) -> Figures {
    let mut channels = Vec::new();
    for _ in 0..concurrency.min(4) {
        channels.push(channel(url, None).await);
    }
    let start = Instant::now();
    let tasks: Vec<_> = (0..concurrency)
        .map(|c| {
            let mut client = JournalClient::new(authed(channels[c % channels.len()].clone(), token).expect("token"));
            tokio::spawn(async move {
                let stream_id = format!("floor-{concurrency}-{c}");
                let append = |event: pb::battle_event::Event| pb::AppendRequest {
                    stream_id: stream_id.clone(),
                    expected_version: Some(pb::ExpectedVersion {
                        kind: Some(pb::expected_version::Kind::Any(pb::expected_version::Any {})),
                    }),
                    events: vec![battlelog_proto::battle::new_event(event, String::new())],
                };
                let opened =
                    pb::BattleOpened { ruleset: "pbta-2d6@1".into(), commitment: "0".repeat(64), ..Default::default() };
                client.append(append(pb::battle_event::Event::BattleOpened(opened))).await.expect("open");
                let mut latencies = Vec::new();
                let mut nonce = 0;
                while start.elapsed() < run {
                    let roll = pb::DiceRolled {
                        nonce,
                        expression: "2d6".into(),
                        purpose: "floor".into(),
                        actor: "ash".into(),
                        dice: vec![pb::Die { sides: 6, value: 4, kept: true, ..Default::default() }; 2],
                        total: 8,
                        ..Default::default()
                    };
                    nonce += 1;
                    let began = Instant::now();
                    client.append(append(pb::battle_event::Event::DiceRolled(roll))).await.expect("append");
                    latencies.push(began.elapsed());
                }
                latencies
            })
        })
        .collect();
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.expect("client"));
    }
    figures(all, start.elapsed())
}

fn verdict(pass: bool) -> &'static str {
    if pass { "PASS" } else { "FAIL" }
}

/// Runs `case` on both stacks for `run` each, in one-second slices that
/// alternate which stack goes first, and reports both.
async fn compare(stacks: &mut [Stack; 2], name: &str, case: Case, run: Duration) -> [Figures; 2] {
    let slices = u32::try_from(run.as_secs()).unwrap_or(u32::MAX).max(1);
    let mut samples = [Samples::default(), Samples::default()];
    for slice in 0..slices {
        let order = if slice % 2 == 0 { [0, 1] } else { [1, 0] };
        for i in order {
            stacks[i].measure(case, run / slices, slice, &mut samples[i]).await;
        }
    }
    let both = samples.map(|s| figures(s.latencies, s.elapsed));
    for (stack, f) in stacks.iter().zip(&both) {
        report(&format!("{}: {name}", stack.name), f);
    }
    both
}

/// `secure` against `plain` as a signed percentage.
fn change(secure: f64, plain: f64) -> String {
    format!("{:+.1} %", (secure / plain - 1.0) * 100.0)
}

fn overhead(label: &str, [plain, secure]: &[Figures; 2]) {
    println!(
        "secure vs plain, {label}: p50 {}, throughput {}",
        change(secure.p50.as_secs_f64(), plain.p50.as_secs_f64()),
        change(secure.per_second, plain.per_second)
    );
}

/// The hops of one `Act` in the order they nest, each a span the services
/// open (`debug` level; see `battlelog_test_support::bench::span_clock`).
const HOPS: [&str; 10] = [
    "resolver.act",
    "resolver.roll",
    "roller.roll",
    "roller.append",
    "journal.append",
    "journal.plan",
    "journal.commit",
    "journal.write",
    "journal.flush",
    "resolver.append",
];

/// One `Act`'s interval cut into the rows of the breakdown table, from the
/// spans that closed inside it; `None` when they are not the one clean
/// pass the table describes (a retry, a stray span).
fn cut(began: Instant, ended: Instant, spans: &[Timed]) -> Option<Vec<(&'static str, Duration)>> {
    let inside: Vec<&Timed> = spans.iter().filter(|s| s.start >= began && s.end <= ended).collect();
    let one = |name: &str| -> Option<Duration> {
        let mut found = inside.iter().filter(|s| s.name == name);
        let span = found.next()?;
        found.next().is_none().then(|| span.end - span.start)
    };
    // The journal's spans come twice: the roller's append, then the
    // resolver's, in the order they opened.
    let two = |name: &str| -> Option<[Duration; 2]> {
        let mut found: Vec<&&Timed> = inside.iter().filter(|s| s.name == name).collect();
        found.sort_by_key(|s| s.start);
        match found.as_slice() {
            [first, second] => Some([first.end - first.start, second.end - second.start]),
            _ => None,
        }
    };
    let total = ended - began;
    let act = one("resolver.act")?;
    let roll = one("resolver.roll")?;
    let roller = one("roller.roll")?;
    let roller_append = one("roller.append")?;
    let resolver_append = one("resolver.append")?;
    let [append_1, append_2] = two("journal.append")?;
    let [plan_1, plan_2] = two("journal.plan")?;
    let [commit_1, commit_2] = two("journal.commit")?;
    let [write_1, write_2] = two("journal.write")?;
    let [flush_1, flush_2] = two("journal.flush")?;
    let rest = |whole: Duration, parts: &[Duration]| whole.checked_sub(parts.iter().sum::<Duration>());
    Some(vec![
        ("forum → resolver: gRPC call (client, HTTP/2, loopback, server)", rest(total, &[act])?),
        ("resolver: its own work (checks, fold, rules, reply)", rest(act, &[roll, resolver_append])?),
        ("resolver → roller: gRPC call", rest(roll, &[roller])?),
        ("roller: its own work (checks, draw, reply)", rest(roller, &[roller_append])?),
        ("roller → journal: gRPC call (the roll)", rest(roller_append, &[append_1])?),
        ("journal: handler (limits, stream turn, reply)", rest(append_1, &[plan_1, commit_1])?),
        ("journal: plan (guard, chain hash, encoding)", plan_1),
        ("journal: commit hand-off and wait", rest(commit_1, &[write_1, flush_1])?),
        ("journal: key-value writes", write_1),
        ("journal: flush", flush_1),
        ("resolver → journal: gRPC call (the resolution)", rest(resolver_append, &[append_2])?),
        ("journal: handler (limits, stream turn, reply) ", rest(append_2, &[plan_2, commit_2])?),
        ("journal: plan (guard, chain hash, encoding) ", plan_2),
        ("journal: commit hand-off and wait ", rest(commit_2, &[write_2, flush_2])?),
        ("journal: key-value writes ", write_2),
        ("journal: flush ", flush_2),
    ])
}

/// Where the time of one `Act` goes: `run` of `Act`s one at a time on
/// `stack` with the span clock on, each cut by [`cut`]; the rows are
/// averaged over the `Act`s between the 40th and the 60th percentile of
/// their total, so that they add up to a figure next to the p50 rather
/// than to a mean that the slow tail pulls up.
async fn breakdown(stack: &mut Stack, run: Duration) {
    let mut intervals = Vec::new();
    span_clock::start();
    let start = Instant::now();
    let mut i = 0;
    while start.elapsed() < run {
        let action = object(json!({"type": "move", "actor": "ash", "trait": "cool", "stakes": "bench"}));
        let request = ActRequest {
            battle_id: "solo".into(),
            action: Some(action),
            request_id: format!("breakdown-{i}"),
            ..Default::default()
        };
        let began = Instant::now();
        stack.resolver.act(request).await.expect("act");
        intervals.push((began, Instant::now()));
        i += 1;
    }
    let spans = span_clock::stop();
    let mut cuts: Vec<(Duration, Vec<(&'static str, Duration)>)> = intervals
        .iter()
        .filter_map(|&(began, ended)| cut(began, ended, &spans).map(|rows| (ended - began, rows)))
        .collect();
    let all = intervals.len();
    let clean = cuts.len();
    assert!(clean > 0, "no Act left the spans of one clean pass ({all} Acts)");
    cuts.sort_by_key(|(total, _)| *total);
    let band = &cuts[clean * 2 / 5..=(clean * 3 / 5).min(clean - 1)];
    let p50 = cuts[clean / 2].0;
    let rows = band[0].1.len();
    let mean = |row: usize| band.iter().map(|(_, cut)| cut[row].1).sum::<Duration>() / band.len() as u32;
    println!(
        "{}: where one Act's time goes (concurrency 1, {clean} of {all} Acts cut cleanly,          rows averaged over the {} between p40 and p60; p50 {:.1} µs):",
        stack.name,
        band.len(),
        p50.as_secs_f64() * 1e6
    );
    let total: Duration = (0..rows).map(mean).sum();
    println!("| hop | µs | share |");
    println!("|---|---:|---:|");
    for row in 0..rows {
        let time = mean(row);
        println!(
            "| {} | {:.1} | {:.1} % |",
            band[0].1[row].0.trim_end(),
            time.as_secs_f64() * 1e6,
            time.as_secs_f64() / total.as_secs_f64() * 100.0
        );
    }
    println!("| **total** | **{:.1}** | 100 % |", total.as_secs_f64() * 1e6);
}

fn main() {
    SpanClock { prefixes: &HOPS }.install();
    let run = seconds_per_case();
    let seconds = run.as_secs();
    // The target dir sits on the project's disk, like a real data dir.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp dir");
    println!("battlelog Act benchmark: {seconds} s per case and stack, plain (no TLS, no token checks) and secure");
    // Before the runtime starts: it blocks. A roll record's size.
    let sled_floor = raw_sled_insert_flush(&dir.path().join("raw"), 400, run);
    report("raw sled insert+flush (1 at a time)", &sled_floor);
    let workers: Option<usize> = std::env::var("BATTLELOG_BENCH_WORKER_THREADS").ok().and_then(|w| w.parse().ok());
    let mut builder = match workers {
        Some(0) => tokio::runtime::Builder::new_current_thread(),
        _ => tokio::runtime::Builder::new_multi_thread(),
    };
    if let Some(workers) = workers.filter(|w| *w > 0) {
        builder.worker_threads(workers);
    }
    let runtime = builder.enable_all().build().expect("runtime");
    runtime.block_on(async move {
        let auth = TestAuth::generate();
        let pki = TestPki::generate("bench");
        let mut stacks =
            [plain(&dir.path().join("plain"), &auth).await, secure(&dir.path().join("secure"), &auth, &pki).await];

        // Warm, then the battles of the concurrency-64 and crowd cases.
        for stack in &mut stacks {
            stack.warm_up().await;
            for w in 0..64 {
                stack.open(&format!("table-{w}")).await;
            }
            stack.open("crowd").await;
        }

        let bare = compare(&mut stacks, "bare gRPC round trip", Case::RoundTrip, run).await;
        // One append alone, for reading the `Act` figure: its floor is two
        // of these plus two round trips (the forum's and the roller's).
        let journal_c1 = journal_appends(&stacks[0].journal_url, &auth.service_token(), 1, run).await;
        report("journal append, concurrency 1", &journal_c1);
        let journal_c64 = journal_appends(&stacks[0].journal_url, &auth.service_token(), 64, run).await;
        report("journal append, concurrency 64", &journal_c64);

        let calls_before = journal_calls();
        let case = Case::Act { workers: 1, battle: |_| "solo".to_owned(), tag: "c1" };
        let one = compare(&mut stacks, "Act, concurrency 1", case, run).await;
        let calls_after = journal_calls();
        let acts = one[0].ops as f64;
        println!(
            "plain: journal calls per Act (concurrency 1): {:.2} stream reads, {:.2} appends",
            (calls_after.0 - calls_before.0) as f64 / acts,
            (calls_after.1 - calls_before.1) as f64 / acts
        );
        let case = Case::Act { workers: 64, battle: |w| format!("table-{w}"), tag: "c64" };
        let many = compare(&mut stacks, "Act, concurrency 64 (64 battles)", case, run).await;
        let case = Case::Act { workers: 32, battle: |_| "crowd".to_owned(), tag: "crowd" };
        let crowd = compare(&mut stacks, "Act, concurrency 32 (one battle)", case, run).await;

        for (i, stack) in stacks.iter().enumerate() {
            println!(
                "{}: Act p50 at concurrency 1 is {:.1}× a bare round trip; 64 battles give {:.1}× the throughput of one",
                stack.name,
                one[i].p50.as_secs_f64() / bare[i].p50.as_secs_f64(),
                many[i].per_second / one[i].per_second
            );
        }
        overhead("bare round trip", &bare);
        overhead("Act concurrency 1", &one);
        overhead("Act concurrency 64 (64 battles)", &many);
        overhead("Act concurrency 32 (one battle)", &crowd);

        println!(
            "plain: Act p50 at concurrency 1 is {:.1} µs; 2 × journal append p50 + 2 × round trip p50 = {:.1} µs",
            one[0].p50.as_secs_f64() * 1e6,
            (journal_c1.p50 * 2 + bare[0].p50 * 2).as_secs_f64() * 1e6
        );
        println!();
        let budget = bare[0].p50 * 4 + sled_floor.p50 * 2;
        println!(
            "target 1: Act p50 at concurrency 1 {:.1} µs vs 4 × round trip {:.1} µs + 2 × sled insert+flush {:.1} µs \
             = {:.1} µs: {} (secure: {:.1} µs)",
            one[0].p50.as_secs_f64() * 1e6,
            bare[0].p50.as_secs_f64() * 1e6,
            sled_floor.p50.as_secs_f64() * 1e6,
            budget.as_secs_f64() * 1e6,
            verdict(one[0].p50 <= budget),
            one[1].p50.as_secs_f64() * 1e6,
        );
        let floor = 0.4 * journal_c64.per_second / 2.0;
        println!(
            "target 2: Act at concurrency 64 over 64 battles {:.0}/s vs 40 % of half the journal's \
             concurrency-64 append rate ({:.0}/s) = {floor:.0}/s: {} (secure: {:.0}/s)",
            many[0].per_second,
            journal_c64.per_second,
            verdict(many[0].per_second >= floor),
            many[1].per_second,
        );
        println!();
        breakdown(&mut stacks[0], run).await;
        println!();
        for stack in stacks {
            stack.shutdown().await;
        }

        // As deployed: the three real binaries, each a process of its own,
        // against a fresh in-process plain stack, in alternating slices; the
        // budget is target 1's, from the floors above.
        println!("-- as deployed: the three services as separate processes --");
        let (separate, running) = processes(&dir.path().join("processes")).await;
        let mut deployed = [plain(&dir.path().join("plain-deployed"), &auth).await, separate];
        for stack in &mut deployed {
            stack.warm_up().await;
        }
        compare(&mut deployed, "bare gRPC round trip", Case::RoundTrip, run).await;
        let case = Case::Act { workers: 1, battle: |_| "solo".to_owned(), tag: "c1" };
        let [in_process, separate] = compare(&mut deployed, "Act, concurrency 1", case, run).await;
        println!(
            "target 1, as deployed: Act p50 at concurrency 1 on separate processes {:.1} µs vs 1.5 × target 1's \
             budget ({:.1} µs) = {:.1} µs: {} (in process, same slices: {:.1} µs)",
            separate.p50.as_secs_f64() * 1e6,
            budget.as_secs_f64() * 1e6,
            budget.as_secs_f64() * 1.5e6,
            verdict(separate.p50.as_secs_f64() <= budget.as_secs_f64() * 1.5),
            in_process.p50.as_secs_f64() * 1e6,
        );
        for stack in deployed {
            stack.shutdown().await;
        }
        drop(running);

        // The same plain stack with its journal on a three-node JetStream
        // cluster (replicas 3, every write synced on every node: the
        // production layout of deploy/nats/cluster), against a fresh sled
        // one, in alternating slices as above.
        println!("-- the journal on JetStream R3 (three local nodes) --");
        let cluster = NatsCluster::start("act-bench").await;
        let options = JetStreamOptions { replicas: 3, ..JetStreamOptions::new(cluster.client_urls_joined()) };
        // A cluster that has just formed may refuse to place a replicated
        // stream for a moment: try until it takes it.
        let store = poll_until("the journal's JetStream stream", Duration::from_secs(30), || {
            let options = options.clone();
            async move { JetStreamStore::connect(options).await.ok() }
        })
        .await;
        let on_jetstream = Journal::open_on(Arc::new(store), JournalOptions::new(dir.path().join("unused")))
            .await
            .expect("journal on JetStream");
        let mut backends = [
            plain(&dir.path().join("plain-again"), &auth).await,
            plain_on(on_jetstream, "plain on JetStream R3", &auth).await,
        ];
        for stack in &mut backends {
            stack.warm_up().await;
        }
        let case = Case::Act { workers: 1, battle: |_| "solo".to_owned(), tag: "c1" };
        let [sled, jetstream] = compare(&mut backends, "Act, concurrency 1", case, run).await;
        let ratio = jetstream.p50.as_secs_f64() / sled.p50.as_secs_f64();
        println!(
            "aim: Act p50 on JetStream R3 {:.1} µs vs 2 × on sled {:.1} µs: {ratio:.2}× — {}",
            jetstream.p50.as_secs_f64() * 1e6,
            sled.p50.as_secs_f64() * 1e6,
            if ratio <= 2.0 { "met" } else { "not met" }
        );
        for stack in backends {
            stack.shutdown().await;
        }
    });
}
