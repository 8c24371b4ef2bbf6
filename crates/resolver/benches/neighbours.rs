//! The noisy neighbour: tenant A floods `Act` while tenant B plays at a
//! steady pace. `cargo bench -p battlelog-resolver --bench neighbours`.
//!
//! One stack of the services' own servers (`serve` with a `GrpcServer`, tokens checked
//! on every hop, no TLS), with the default connection and request limits.
//! Two resolvers share its journal and roller: one with the default
//! per-tenant rate limit, one without (`rate_limit_per_sec = 0`), so the run
//! shows what the limit buys under the same load.
//!
//! Tenant B's forum acts on its battle every 20 ms (50 a second, under its
//! rate). Tenant A's forum runs 16 callers, each acting on a battle of its
//! own as fast as the answers come back — refusals included, without
//! honouring their `RetryInfo`, as a misbehaving forum would. The run
//! alternates one-second slices, quiet (B alone) and noisy (B with A's
//! flood), so that both see the same machine; it prints B's p50 and p99 in
//! each, A's served and refused calls, and PASS when B's p99 under the flood
//! is under 3 × its quiet p99 on the rate-limited resolver.
//! `BATTLELOG_BENCH_SECONDS` sets the seconds of each of the three cases
//! (default 3).

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use battlelog_auth::{AuthChannel, Role, authed};
use battlelog_journal::Journal;
use battlelog_proto::battle::json_to_struct;
use battlelog_proto::v1::OpenBattleRequest;
use battlelog_proto::v1::resolver_client::ResolverClient;
use battlelog_runtime::edge::{GrpcLimits, TenantRateLimit};
use battlelog_runtime::serve::GrpcServer;
use battlelog_test_support::TestAuth;
use battlelog_test_support::bench::{Figures, figures, report, seconds_per_case};
use serde_json::json;
use tonic::Code;
use tonic::transport::Endpoint;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod services;
use services::{act, journal_and_roller, listen};

/// Tenant A's concurrent callers.
const FLOODERS: usize = 16;
/// Tenant B's pace.
const PACE: Duration = Duration::from_millis(20);

async fn client(url: &str, token: &str) -> ResolverClient<AuthChannel> {
    let channel = Endpoint::from_shared(url.to_owned()).expect("url").connect().await.expect("connect");
    ResolverClient::new(authed(channel, token).expect("token"))
}

/// Journal and roller, and a resolver per rate limit; returns the journal
/// (to shut it down) and the resolvers' URLs.
async fn stack(dir: &Path, auth: &TestAuth, rates: &[TenantRateLimit]) -> (Journal, Vec<String>) {
    let limits = GrpcLimits::default();
    let token = auth.service_token();
    let (journal, journal_url, roller_url) = journal_and_roller(dir, auth, &limits).await;
    let mut urls = Vec::new();
    for rate in rates {
        let service =
            battlelog_resolver::server::service_for(&journal_url, &roller_url, None, &token).expect("service");
        let (listener, url) = listen().await;
        tokio::spawn(battlelog_resolver::serve(
            service,
            listener,
            GrpcServer::new("resolver", auth.verifier()).limits(limits.clone()).rate_limit(rate.clone()),
            std::future::pending(),
        ));
        urls.push(url);
    }
    (journal, urls)
}

async fn open(client: &mut ResolverClient<AuthChannel>, battle_id: &str) {
    let ash = json!({"id": "ash", "traits": {"cool": 1}});
    client
        .open_battle(OpenBattleRequest {
            ruleset: "pbta-2d6@1".into(),
            participants: vec![json_to_struct(ash.as_object().expect("an object"))],
            client_seed: format!("bench/{battle_id}"),
            request_id: format!("open-{battle_id}"),
            battle_id: battle_id.into(),
            ..Default::default()
        })
        .await
        .expect("open");
}

/// Tenant A's calls in a case: served, and refused for its rate.
#[derive(Debug, Default)]
struct Flood {
    served: AtomicU64,
    refused: AtomicU64,
}

/// What one resolver is measured with: B's latencies, quiet and noisy, and
/// A's calls.
struct Target {
    name: &'static str,
    /// Battle ids: `<prefix>a<n>` for A's callers, `<prefix>b` for B (the
    /// resolvers share a journal).
    prefix: String,
    b: ResolverClient<AuthChannel>,
    a: ResolverClient<AuthChannel>,
    quiet: Vec<Duration>,
    quiet_elapsed: Duration,
    noisy: Vec<Duration>,
    noisy_elapsed: Duration,
    flood: Arc<Flood>,
}

impl Target {
    /// B plays for `run`, one `Act` per [`PACE`]; with `noisy`, A floods
    /// meanwhile. `slice` keeps request ids unique.
    async fn slice(&mut self, run: Duration, noisy: bool, slice: u32) {
        let stop = Arc::new(AtomicBool::new(false));
        let flooders: Vec<_> = if noisy {
            (0..FLOODERS)
                .map(|f| {
                    let (mut a, stop, flood, name) = (self.a.clone(), stop.clone(), self.flood.clone(), self.name);
                    let battle = format!("{}a{f}", self.prefix);
                    tokio::spawn(async move {
                        let mut i = 0u64;
                        while !stop.load(Ordering::Relaxed) {
                            match a.act(act(&battle, format!("{name}-a-{slice}-{f}-{i}"))).await {
                                Ok(_) => flood.served.fetch_add(1, Ordering::Relaxed),
                                Err(status) if status.code() == Code::ResourceExhausted => {
                                    flood.refused.fetch_add(1, Ordering::Relaxed)
                                }
                                Err(status) => panic!("tenant A: {status:?}"),
                            };
                            i += 1;
                        }
                    })
                })
                .collect()
        } else {
            Vec::new()
        };
        let start = Instant::now();
        let mut ticks = tokio::time::interval(PACE);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut i = 0;
        let mut latencies = Vec::new();
        while start.elapsed() < run {
            ticks.tick().await;
            let began = Instant::now();
            let request = act(&format!("{}b", self.prefix), format!("{}-b-{slice}-{}-{i}", self.name, u8::from(noisy)));
            self.b.act(request).await.expect("tenant B is served");
            latencies.push(began.elapsed());
            i += 1;
        }
        stop.store(true, Ordering::Relaxed);
        for flooder in flooders {
            flooder.await.expect("flooder");
        }
        if noisy {
            self.noisy.extend(latencies);
            self.noisy_elapsed += start.elapsed();
        } else {
            self.quiet.extend(latencies);
            self.quiet_elapsed += start.elapsed();
        }
    }

    fn figures(&self) -> (Figures, Figures) {
        (figures(self.quiet.clone(), self.quiet_elapsed), figures(self.noisy.clone(), self.noisy_elapsed))
    }
}

fn main() {
    let run = seconds_per_case();
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp dir");
    println!(
        "battlelog noisy-neighbour benchmark: {} s quiet and {} s noisy per resolver; tenant B acts every {} ms, \
         tenant A floods with {FLOODERS} callers",
        run.as_secs(),
        run.as_secs(),
        PACE.as_millis()
    );
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    runtime.block_on(async move {
        let auth = TestAuth::generate();
        let limited = TenantRateLimit::default();
        let unlimited = TenantRateLimit { rate_limit_per_sec: 0, ..TenantRateLimit::default() };
        println!(
            "rate limit: {} requests per second per tenant, burst {}",
            limited.rate_limit_per_sec, limited.rate_limit_burst
        );
        let (journal, urls) = stack(dir.path(), &auth, &[limited, unlimited]).await;
        let token_a = auth.token(Role::Forum, "tenant-a", "forum-a");
        let token_b = auth.token(Role::Forum, "tenant-b", "forum-b");
        let mut targets = Vec::new();
        for (name, url) in [("rate-limited", &urls[0]), ("unlimited", &urls[1])] {
            let mut a = client(url, &token_a).await;
            let mut b = client(url, &token_b).await;
            let prefix = name.replace('-', "");
            for f in 0..FLOODERS {
                open(&mut a, &format!("{prefix}a{f}")).await;
            }
            open(&mut b, &format!("{prefix}b")).await;
            targets.push(Target {
                name,
                prefix,
                a,
                b,
                quiet: Vec::new(),
                quiet_elapsed: Duration::ZERO,
                noisy: Vec::new(),
                noisy_elapsed: Duration::ZERO,
                flood: Arc::new(Flood::default()),
            });
        }
        let slices = u32::try_from(run.as_secs()).unwrap_or(u32::MAX).max(1);
        let slice_run = Duration::from_secs(1);
        for slice in 0..slices {
            for target in &mut targets {
                // Quiet first or noisy first, alternately; A's bucket
                // refills during the quiet slice as it would between floods.
                let order = if slice % 2 == 0 { [false, true] } else { [true, false] };
                for noisy in order {
                    target.slice(slice_run, noisy, slice).await;
                }
            }
        }
        let mut verdicts = Vec::new();
        for target in &targets {
            let (quiet, noisy) = target.figures();
            report(&format!("{}: B alone", target.name), &quiet);
            report(&format!("{}: B while A floods", target.name), &noisy);
            let served = target.flood.served.load(Ordering::Relaxed);
            let refused = target.flood.refused.load(Ordering::Relaxed);
            let seconds = target.noisy_elapsed.as_secs_f64();
            println!(
                "{}: A's flood: {:.0} served/s, {:.0} refused/s (RESOURCE_EXHAUSTED); B's p99 under the flood is {:.2}× its quiet p99, p50 {:.2}×",
                target.name,
                served as f64 / seconds,
                refused as f64 / seconds,
                noisy.p99.as_secs_f64() / quiet.p99.as_secs_f64(),
                noisy.p50.as_secs_f64() / quiet.p50.as_secs_f64(),
            );
            verdicts.push((target.name, noisy.p99.as_secs_f64() / quiet.p99.as_secs_f64()));
        }
        let (_, ratio) = verdicts[0];
        println!(
            "target: B's p99 under A's flood < 3 × B's quiet p99 on the rate-limited resolver: {:.2}×: {}",
            ratio,
            if ratio < 3.0 { "PASS" } else { "FAIL" }
        );
        journal.shutdown().await.expect("journal shutdown");
    });
}
