//! Issue 37: a metric family that counts what has not happened yet must be
//! on `/metrics` at zero, not absent. Absent, a dashboard shows "no data"
//! and `rate()` / `increase()` miss the first event (Prometheus needs a
//! sample before the change to see one), so the alerts on shed load, rate
//! limits, refused tokens and parked webhooks would not fire on the first.
//!
//! Each real binary is started with its metrics port and scraped at once,
//! before anything is asked of it: every family of
//! [`battlelog_test_support::metrics::BY_EVENT`] it exports is there, with each label set
//! it can know at start at 0 — the served services and their streaming
//! methods (from the .proto files), the auth reasons (docs/errors.md's
//! table), the webhooks' configured tenants. A tenant's rate-limit series
//! is there from its first request, before its first refusal could be.

use std::path::Path;

use battlelog_proto::v1::ListRulesetsRequest;
use battlelog_proto::v1::resolver_client::ResolverClient;
use battlelog_test_support::auth::TEST_TENANT;
use battlelog_test_support::metrics::BY_EVENT;
use battlelog_test_support::{
    NatsServer, ServiceProcess, StartOptions, TestAuth, http_get, journal_with, resolver_with, roller_with,
    service_binary, temp_dir,
};

fn with_metrics(prefix: &str) -> StartOptions {
    StartOptions {
        envs: vec![(format!("BATTLELOG_{prefix}_METRICS_LISTEN"), "127.0.0.1:0".to_owned())],
        ..StartOptions::default()
    }
}

async fn scrape(url: &str, headers: &[(&str, &str)]) -> String {
    let (status, text) = http_get(url, headers).await;
    assert_eq!(status, 200, "{url}: {text}");
    text
}

/// The sample `name{labels}` reads exactly 0 in `text`.
fn assert_zero(text: &str, what: &str, sample: &str) {
    let value = text.lines().find_map(|line| line.strip_prefix(sample)?.strip_prefix(' '));
    assert_eq!(value.map(str::trim), Some("0"), "{what}: {sample} is not on /metrics at 0 right after start:\n{text}");
}

/// The reasons docs/errors.md gives the codes an authentication or a
/// permission refusal has: the label sets of `auth_refusals`.
fn auth_reasons() -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/errors.md");
    let table = std::fs::read_to_string(&path).expect("docs/errors.md");
    let reasons: Vec<String> = table
        .lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let code = *cells.get(3)?;
            (code == "UNAUTHENTICATED" || code == "PERMISSION_DENIED").then(|| cells[1].trim_matches('`').to_owned())
        })
        .collect();
    assert!(reasons.iter().any(|r| r == "TOKEN_EXPIRED"), "docs/errors.md lists the auth reasons: {reasons:?}");
    reasons
}

/// What every gRPC server answers beside its own service, and their
/// server-streaming methods (grpc/health/v1 and grpc/reflection's protos).
const ALWAYS: &[(&str, &[&str])] = &[
    ("grpc.health.v1.Health", &["Watch"]),
    ("grpc.reflection.v1.ServerReflection", &["ServerReflectionInfo"]),
    ("grpc.reflection.v1alpha.ServerReflection", &["ServerReflectionInfo"]),
];

/// A gRPC service's scrape holds shed, open_streams and auth_refusals at 0
/// for every label set it knows: `own` is its service and its
/// server-streaming methods (proto/battlelog/v1/*.proto: `returns (stream`).
fn assert_grpc_families_at_zero(text: &str, what: &str, own: (&str, &[&str])) {
    for (service, streams) in std::iter::once(&own).chain(ALWAYS) {
        assert_zero(text, what, &format!("battlelog_grpc_server_shed_total{{service=\"{service}\"}}"));
        for method in *streams {
            let sample = format!("battlelog_grpc_server_open_streams{{service=\"{service}\",method=\"{method}\"}}");
            assert_zero(text, what, &sample);
        }
    }
    for reason in auth_reasons() {
        assert_zero(text, what, &format!("battlelog_grpc_server_auth_refusals_total{{reason=\"{reason}\"}}"));
    }
}

/// battlelog-webhooks with an endpoint for each of `tenants` (nothing
/// listens there: nothing is delivered in this test), its store under
/// `dir`, its metrics port on.
async fn webhooks(dir: &Path, nats_url: &str, tenants: &[&str]) -> ServiceProcess {
    std::fs::create_dir_all(dir).expect("data dir");
    let mut toml = String::new();
    for tenant in tenants {
        toml.push_str(&format!(
            "[tenants.{tenant}]\nurl = \"http://127.0.0.1:9/{tenant}\"\nsecret = \"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"\n"
        ));
    }
    let config = dir.join("webhooks.toml");
    std::fs::write(&config, toml).expect("write the config");
    let args: Vec<String> = ["--config", &config.display().to_string(), "--listen", "127.0.0.1:0"]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    let mut envs = TestAuth::shared().env("webhooks");
    envs.extend([
        ("BATTLELOG_WEBHOOKS_NATS_URL".to_owned(), nats_url.to_owned()),
        ("BATTLELOG_WEBHOOKS_DATA_DIR".to_owned(), dir.join("store").display().to_string()),
        ("BATTLELOG_WEBHOOKS_METRICS_LISTEN".to_owned(), "127.0.0.1:0".to_owned()),
    ]);
    ServiceProcess::start_http(&service_binary("battlelog-webhooks"), &args, &envs, &dir.join("webhooks.log")).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_family_counted_by_event_is_on_metrics_at_zero_right_after_start() {
    assert!(BY_EVENT.len() >= 5, "the families are listed in exported_metrics.rs");
    let dir = temp_dir("metrics-at-start");
    let nats = NatsServer::start();

    let journal = journal_with(&dir.path().join("journal"), None, &with_metrics("JOURNAL")).await;
    let text = scrape(&journal.metrics_url().expect("a metrics port"), &[]).await;
    assert_grpc_families_at_zero(&text, "journal", ("battlelog.v1.Journal", &["SubscribeStream", "SubscribeAll"]));

    let roller = roller_with(&dir.path().join("roller"), &journal.url(), None, &with_metrics("ROLLER")).await;
    let text = scrape(&roller.metrics_url().expect("a metrics port"), &[]).await;
    assert_grpc_families_at_zero(&text, "roller", ("battlelog.v1.Roller", &[]));

    let resolver =
        resolver_with(&dir.path().join("resolver.log"), &journal.url(), &roller.url(), None, &with_metrics("RESOLVER"))
            .await;
    let metrics = resolver.metrics_url().expect("a metrics port");
    let text = scrape(&metrics, &[]).await;
    assert_grpc_families_at_zero(&text, "resolver", ("battlelog.v1.Resolver", &["Watch"]));
    // The resolver rate-limits each tenant (rate_limit_per_sec, on by
    // default): a tenant's series starts at its first request, at 0,
    // before any refusal of it could come.
    let mut client = ResolverClient::new(resolver.authed(&TestAuth::shared().forum()).await);
    client.list_rulesets(ListRulesetsRequest::default()).await.expect("a forum lists the rulesets");
    let text = scrape(&metrics, &[]).await;
    assert_zero(&text, "resolver", &format!("battlelog_grpc_server_rate_limited_total{{tenant=\"{TEST_TENANT}\"}}"));

    // battlelog-webhooks: its configured tenants' parked series, on its
    // admin port (a service token) and on its metrics port alike.
    let hooks = webhooks(&dir.path().join("webhooks"), &nats.url(), &["forum-a", "forum-b"]).await;
    let token = format!("Bearer {}", TestAuth::shared().service_token());
    let admin = scrape(&format!("http://{}/metrics", hooks.addr()), &[("authorization", &token)]).await;
    let port = scrape(&hooks.metrics_url().expect("a metrics port"), &[]).await;
    for (what, text) in [("webhooks admin port", &admin), ("webhooks metrics port", &port)] {
        assert_zero(text, what, "battlelog_webhooks_parked");
        for tenant in ["forum-a", "forum-b"] {
            assert_zero(text, what, &format!("battlelog_webhooks_parked{{tenant=\"{tenant}\"}}"));
        }
    }
}
