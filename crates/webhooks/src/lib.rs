//! The battlelog webhooks: every committed event of a tenant's battles
//! POSTed to the tenant's endpoint, signed the Standard Webhooks way,
//! retried in order per battle, parked when it keeps failing, replayable.
//!
//! - [`config`]: defaults ← file ← `BATTLELOG_WEBHOOKS_*` ← flags; the
//!   per-tenant endpoints and secrets (file only).
//! - [`signature`]: `whsec_` secrets and the `webhook-signature` HMAC.
//! - [`event`]: a fan-out message (subject, headers, record bytes) into
//!   the JSON body a tenant receives.
//! - [`store`]: the queue, the parked deliveries and what was delivered,
//!   in sled under `data_dir` (why sled: see there).
//! - [`consumer`]: the durable JetStream consumer of the journal's fan-out
//!   (or of the JetStream journal's log).
//! - [`feed`]: each record of the feed checked against its battle's chain
//!   and the journal before it is queued: only what the journal holds is
//!   delivered.
//! - [`deliver`]: one worker per battle, POSTs with backoff and jitter,
//!   parking.
//! - [`metrics`]: [`WebhooksMetrics`], the counters and gauges of `/metrics`
//!   (prometheus-client).
//! - [`admin`]: the HTTP port — `/metrics`, `/v1/parked`, `/v1/replay`
//!   (`service` tokens only), `/healthz`.
//!
//! One instance per data dir: the store is its alone (sled locks it).

pub mod admin;
pub mod config;
pub mod consumer;
pub mod deliver;
pub mod event;
pub mod feed;
pub mod metrics;
pub mod signature;
pub mod store;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use battlelog_auth::Verifier;
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;
use tokio::sync::watch;

pub use config::Config;
pub use metrics::WebhooksMetrics;

// What its binary runs, and `battlelog up` (battlelog_runtime::service).
battlelog_runtime::service!(Config, config::SERVICE, anyhow::Error, run);

/// The service, its files read and its store open, not yet serving.
#[derive(Debug)]
pub struct Webhooks {
    config: Config,
    store: Arc<store::Store>,
    endpoints: BTreeMap<String, deliver::Endpoint>,
    verifier: Verifier,
    /// How to reach the journal the feed is checked with, its files read:
    /// its URL, TLS and token (`journal_url`, `token_file`).
    journal: Option<(String, Option<tonic::transport::ClientTlsConfig>, String)>,
    /// The counters, and the registry the admin port's `/metrics` shows
    /// them from.
    metrics: (WebhooksMetrics, Arc<Registry>),
}

impl Webhooks {
    /// As configured: the admin tokens verified with `auth_keys`.
    pub fn open(config: &Config) -> anyhow::Result<Self> {
        let verifier = config.tokens.verifier().context("auth_keys")?;
        Self::open_with_verifier(config, verifier)
    }

    /// With this verifier of admin tokens (`battlelog up`'s).
    pub fn open_with_verifier(config: &Config, verifier: Verifier) -> anyhow::Result<Self> {
        let endpoints = config
            .tenants
            .iter()
            .map(|(tenant, endpoint)| {
                deliver::Endpoint::new(endpoint).map(|e| (tenant.clone(), e)).map_err(anyhow::Error::msg)
            })
            .collect::<anyhow::Result<_>>()
            .context("tenants")?;
        // The tenants' events and their deliveries: the owner's alone.
        battlelog_runtime::private::private_dir(&config.data_dir)
            .with_context(|| format!("cannot create data_dir {} owner-only (0700)", config.data_dir.display()))?;
        let store = store::Store::open(&config.data_dir).with_context(|| {
            format!("cannot open the store in {} (is another instance using it?)", config.data_dir.display())
        })?;
        let store = Arc::new(store);
        let metrics = metrics::own_registry();
        metrics.0.read_gauges_from(store.clone(), config.tenants.keys().cloned());
        let journal = match &config.journal_url {
            Some(url) => {
                let tls = config.client_tls.client_config().context("tls_ca")?;
                let token_file = config.token_file.as_deref().unwrap_or(std::path::Path::new(""));
                let token = battlelog_auth::read_token_file(token_file).context("token_file")?;
                Some((url.clone(), tls, token))
            }
            None => {
                tracing::warn!(
                    "no journal_url: each record of the feed is checked against its battle's chain only, which a \
                     forger with the journal's NATS password who computes the hashes passes; set journal_url and \
                     token_file so that only what the journal holds is delivered"
                );
                None
            }
        };
        Ok(Self { config: config.clone(), store, endpoints, verifier, journal, metrics })
    }

    /// The service's counters (the same handles both `/metrics` show).
    pub fn metrics(&self) -> &WebhooksMetrics {
        &self.metrics.0
    }

    /// Follows the journal's events and serves the HTTP port on `listener`
    /// until `shutdown` resolves. Deliveries in progress then stop; what
    /// they had not delivered is in the store, for the next start.
    /// `observed`: its metrics port and readiness line
    /// (battlelog_runtime::serve); the service's counters and gauges are
    /// registered in its registry too, so its port shows them as the admin
    /// port does.
    pub async fn serve(
        self,
        listener: TcpListener,
        mut observed: battlelog_runtime::serve::Observed,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        let config = &self.config;
        let (metrics, registry) = self.metrics;
        metrics.register_again(observed.registry().sub_registry_with_prefix(config::SERVICE));
        let metrics = Arc::new(metrics);
        let (stop, stopped) = watch::channel(false);
        let deliverer = deliver::Deliverer::new(
            self.store.clone(),
            self.endpoints,
            deliver::http_client(),
            config.retry(),
            Duration::from_millis(config.request_timeout_ms),
            config.max_concurrent_deliveries,
            config.max_concurrent_deliveries_per_tenant,
            metrics.clone(),
            stopped.clone(),
        );
        // What was queued when the service last stopped goes first.
        for battle in self.store.queued_battles()? {
            deliverer.wake(battle);
        }
        let options = consumer::ConsumerOptions {
            // validate() read it already; a config built in code may not have been.
            nats_urls: battlelog_runtime::nats_url::NatsUrls::for_key("nats_url", &config.nats_url)?,
            stream: config.nats_stream.clone(),
            subject_prefix: config.nats_subject_prefix.clone(),
            durable: config.consumer.clone(),
            ack_wait: Duration::from_millis(config.ack_wait_ms),
            // Validated to fit.
            max_ack_pending: i64::try_from(config.max_ack_pending).unwrap_or(i64::MAX),
            gap_wait: Duration::from_millis(config.gap_wait_ms),
            gap_retry: Duration::from_millis(config.gap_retry_ms),
        };
        let journal = match self.journal {
            Some((url, tls, token)) => {
                let endpoint = battlelog_runtime::tls::endpoint(&url, tls.as_ref()).context("journal_url")?;
                let channel = battlelog_auth::authed(endpoint.connect_lazy(), &token).context("token_file")?;
                Some(feed::JournalOptions {
                    client: battlelog_proto::v1::journal_client::JournalClient::new(channel)
                        .max_decoding_message_size(battlelog_runtime::limits::MAX_MESSAGE_BYTES),
                    read_count: config.journal_read_count,
                    cache_battles: config.journal_cache_battles,
                    timeout: Duration::from_millis(config.journal_timeout_ms),
                })
            }
            None => None,
        };
        let feed = feed::FeedCheck::new(self.store.tree("chain")?, journal);
        let following = tokio::spawn(consumer::follow(
            options,
            self.store.clone(),
            feed,
            deliverer.clone(),
            metrics.clone(),
            stopped,
        ));
        let admin = admin::Admin { store: self.store.clone(), deliverer, metrics, registry, verifier: self.verifier };
        let http_metrics = battlelog_runtime::observe_http::HttpMetrics::register(config::SERVICE, observed.registry());
        let ready = observed.ready(listener.local_addr()?).await?;
        let served = battlelog_runtime::http::serve_limited(
            admin::router(admin),
            listener,
            config.http_limits(),
            Some(http_metrics),
            shutdown,
        )
        .await;
        stop.send_replace(true);
        let _ = following.await;
        ready.stop().await;
        self.store.flush().await?;
        served.context("serving the HTTP port")
    }
}

/// Runs the service as configured on `listener` until `shutdown` resolves;
/// serves `/metrics` on `metrics_listen` too when set (its admin port keeps
/// its own, token-guarded `/metrics`), and prints its readiness line once
/// every file is read and the store is open.
pub async fn run(
    config: &Config,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let observed = battlelog_runtime::serve::Observed::configured(config::SERVICE, config.shared.metrics_listen);
    Webhooks::open(config)?.serve(listener, observed, shutdown).await
}
