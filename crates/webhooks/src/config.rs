//! Configuration: defaults ← TOML file ← `BATTLELOG_WEBHOOKS_*` environment
//! ← flags, validated before anything starts (battlelog_runtime::config).
//!
//! The endpoints are per tenant, in the file only (a table per tenant):
//!
//! ```toml
//! [tenants.forum-a]
//! url = "https://forum-a.example/battlelog/webhook"
//! secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
//! ```

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

pub use battlelog_runtime::config::{ConfigError, Layers};
use battlelog_runtime::http::HttpLimits;
use battlelog_runtime::service::{Development, Shared, Tokens};
use battlelog_runtime::tls::ClientTls;
use serde::{Deserialize, Serialize};

use crate::signature::Secret;

/// The service name in its variables (`BATTLELOG_WEBHOOKS_*`).
pub const SERVICE: &str = "webhooks";

/// Versions of a battle one read of the journal takes, by default.
pub const DEFAULT_JOURNAL_READ_COUNT: u32 = 64;
/// The most `journal_read_count` may be: the journal's default
/// `max_read_count`.
pub const MAX_JOURNAL_READ_COUNT: u32 = 1_000;

/// One tenant's endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TenantEndpoint {
    /// Where its events are POSTed: `http://` or `https://`.
    pub url: String,
    /// The signing secret, `whsec_<base64>` (Standard Webhooks).
    pub secret: String,
}

/// The webhooks service's configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// The keys every service takes: `listen` (the HTTP port of `/metrics`
    /// and the admin endpoints), `log`, `log_format`, `metrics_listen`,
    /// `otlp_endpoint` (battlelog_runtime::service).
    #[serde(flatten)]
    pub shared: Shared,
    /// Verification of the admin endpoints' tokens (the `service` role
    /// only): `auth_keys`, `token_max_lifetime_secs`, `revoked_tokens_*`
    /// (battlelog_runtime::service).
    #[serde(flatten)]
    pub tokens: Tokens,
    /// The NATS server with the journal's JetStream fan-out, or several
    /// comma-separated (any nodes of a cluster); credentials may be given
    /// in it (`nats://webhooks:<password>@host:4222`).
    pub nats_url: String,
    /// The JetStream stream the journal publishes committed events to
    /// (the journal's `nats_stream`).
    pub nats_stream: String,
    /// Their subject prefix (the journal's `nats_subject_prefix`).
    pub nats_subject_prefix: String,
    /// The durable consumer's name: a restart resumes where it left off.
    pub consumer: String,
    /// How long JetStream waits for this service to acknowledge a message
    /// before it delivers it again, in milliseconds.
    pub ack_wait_ms: u64,
    /// Most messages JetStream hands this service unacknowledged at once.
    pub max_ack_pending: u64,
    /// How long a battle waits for a missing event (a later one arrived
    /// first) before it is given up as gone and the later ones delivered,
    /// in milliseconds; at least `ack_wait_ms`, since an event handed to
    /// an instance that died comes again only after that.
    pub gap_wait_ms: u64,
    /// How long JetStream waits before offering again an event that came
    /// before its battle's missing one, in milliseconds.
    pub gap_retry_ms: u64,
    /// Where the queue of deliveries and the parked ones are kept (sled).
    pub data_dir: PathBuf,
    /// How long one POST may take (connecting included), in milliseconds.
    pub request_timeout_ms: u64,
    /// The first retry's delay, in milliseconds; each next one doubles, up
    /// to `retry_max_ms`, with jitter (a delay is drawn in [d/2, d]).
    pub retry_initial_ms: u64,
    /// The longest delay between two attempts, in milliseconds.
    pub retry_max_ms: u64,
    /// Attempts of one delivery before it is parked.
    pub retry_max_attempts: u32,
    /// How long after it was received a delivery that still fails is
    /// parked, in seconds, whatever its attempts.
    pub retry_max_age_secs: u64,
    /// Most POSTs in flight at once, all tenants together.
    pub max_concurrent_deliveries: usize,
    /// Most POSTs in flight at once to one tenant's endpoint, of
    /// `max_concurrent_deliveries`: a tenant whose endpoint hangs holds no
    /// more, so the other tenants' deliveries go on. Its other deliveries
    /// wait in its own queue.
    pub max_concurrent_deliveries_per_tenant: usize,
    /// The HTTP port's connections served at once; one more is closed as
    /// soon as it is accepted (the web's `max_connections`).
    pub http_max_connections: usize,
    /// The HTTP port's connections from one client address at once (the
    /// web's `max_connections_per_address`).
    pub http_max_connections_per_address: usize,
    /// Milliseconds a client of the HTTP port has to send a request's head;
    /// past it the connection is closed (the web's `header_read_timeout_ms`).
    pub http_header_read_timeout_ms: u64,
    /// Milliseconds an HTTP port request may take; past it, 503 (the web's
    /// `request_timeout_ms`; the webhooks' own `request_timeout_ms` is a
    /// delivery's POST).
    pub http_request_timeout_ms: u64,
    /// The journal's gRPC endpoint: every record of the feed is delivered
    /// only if the journal holds it (crate::feed). None: each record is
    /// checked against its battle's chain only, which a forger who computes
    /// the hashes passes (a warning at start says so).
    pub journal_url: Option<String>,
    /// File holding the `service` token presented to the journal; required
    /// with `journal_url`.
    pub token_file: Option<PathBuf>,
    /// Versions of a battle one read of the journal takes (from the one
    /// before the record checked on), kept for the next records' checks;
    /// at most the journal's `max_read_count`.
    pub journal_read_count: u32,
    /// Battles whose versions read from the journal are kept in memory;
    /// past it they are all forgotten (and read again when they move).
    pub journal_cache_battles: usize,
    /// How long one read of the journal may take, in milliseconds; past it
    /// the message is offered again later, neither taken nor refused.
    pub journal_timeout_ms: u64,
    /// TLS keys for calling the journal: `tls_ca`, `tls_client_cert`,
    /// `tls_client_key` (battlelog_runtime::tls).
    #[serde(flatten)]
    pub client_tls: ClientTls,
    /// Each tenant's endpoint, by tenant (`BattleOpened.tenant`); events of
    /// a tenant without one are not delivered (and counted as skipped).
    pub tenants: BTreeMap<String, TenantEndpoint>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            shared: Shared::listening_on(SocketAddr::from(([127, 0, 0, 1], 50054))),
            tokens: Tokens::default(),
            nats_url: "nats://127.0.0.1:4222".into(),
            nats_stream: "BATTLELOG_EVENTS".into(),
            nats_subject_prefix: "battlelog.events".into(),
            consumer: "battlelog-webhooks".into(),
            ack_wait_ms: 30_000,
            max_ack_pending: 1_000,
            gap_wait_ms: 60_000,
            gap_retry_ms: 1_000,
            data_dir: PathBuf::from("data/webhooks"),
            request_timeout_ms: 10_000,
            retry_initial_ms: 500,
            retry_max_ms: 60_000,
            retry_max_attempts: 12,
            retry_max_age_secs: 3_600,
            max_concurrent_deliveries: 64,
            max_concurrent_deliveries_per_tenant: 8,
            http_max_connections: HttpLimits::default().max_connections,
            http_max_connections_per_address: HttpLimits::default().max_connections_per_address,
            http_header_read_timeout_ms: HttpLimits::default().header_read_timeout_ms,
            http_request_timeout_ms: HttpLimits::default().request_timeout_ms,
            journal_url: None,
            token_file: None,
            journal_read_count: DEFAULT_JOURNAL_READ_COUNT,
            journal_cache_battles: 10_000,
            journal_timeout_ms: 5_000,
            client_tls: ClientTls::default(),
            tenants: BTreeMap::new(),
        }
    }
}

/// The retry schedule of one delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retry {
    pub initial: Duration,
    pub max: Duration,
    pub max_attempts: u32,
    pub max_age: Duration,
}

impl Config {
    /// Defaults, then the file, the environment and the flags of `layers`,
    /// then validation.
    pub fn load(layers: &Layers) -> Result<Self, ConfigError> {
        let mut config: Config = layers.extract()?;
        // An empty value (`BATTLELOG_WEBHOOKS_JOURNAL_URL=`) unsets a key.
        config.journal_url = config.journal_url.filter(|url| !url.is_empty());
        config.token_file = config.token_file.filter(|path| !path.as_os_str().is_empty());
        config.validate()?;
        Ok(config)
    }

    /// `battlelog up`'s webhooks: listening on `listen`, following the
    /// stream and subject prefix of `feed` at `nats_url`, delivering only
    /// what the journal at `journal_url` holds, to one tenant's `endpoint`;
    /// its store under `<data dir>/webhooks/store`.
    pub fn development(
        dev: &Development,
        listen: SocketAddr,
        nats_url: String,
        feed: (&str, &str),
        journal_url: String,
        endpoint: (String, TenantEndpoint),
    ) -> Self {
        Self {
            shared: dev.shared(listen),
            tokens: dev.tokens.clone(),
            nats_url,
            nats_stream: feed.0.into(),
            nats_subject_prefix: feed.1.into(),
            data_dir: dev.dir(SERVICE).join("store"),
            tenants: [endpoint].into(),
            // Only what the journal holds is delivered (crate::feed).
            journal_url: Some(journal_url),
            token_file: Some(dev.token_file.clone()),
            client_tls: dev.client_tls.clone(),
            ..Self::default()
        }
    }

    /// The HTTP port's limits.
    pub fn http_limits(&self) -> HttpLimits {
        HttpLimits {
            max_connections: self.http_max_connections,
            header_read_timeout_ms: self.http_header_read_timeout_ms,
            request_timeout_ms: self.http_request_timeout_ms,
            max_connections_per_address: self.http_max_connections_per_address,
        }
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |key: &'static str, message: String| Err(ConfigError::Invalid { key, message });
        battlelog_runtime::nats_url::NatsUrls::for_key("nats_url", &self.nats_url)?;
        for (key, value) in [
            ("nats_stream", &self.nats_stream),
            ("nats_subject_prefix", &self.nats_subject_prefix),
            ("consumer", &self.consumer),
        ] {
            if value.is_empty() || value.contains(|c: char| c.is_whitespace() || c == '*' || c == '>') {
                return invalid(key, format!("{value:?} must be a non-empty NATS name without spaces or wildcards"));
            }
        }
        let at_least_one = [
            ("ack_wait_ms", self.ack_wait_ms),
            ("max_ack_pending", self.max_ack_pending),
            ("gap_wait_ms", self.gap_wait_ms),
            ("gap_retry_ms", self.gap_retry_ms),
            ("request_timeout_ms", self.request_timeout_ms),
            ("retry_initial_ms", self.retry_initial_ms),
            ("retry_max_attempts", u64::from(self.retry_max_attempts)),
            ("retry_max_age_secs", self.retry_max_age_secs),
            ("max_concurrent_deliveries", self.max_concurrent_deliveries as u64),
            ("max_concurrent_deliveries_per_tenant", self.max_concurrent_deliveries_per_tenant as u64),
            ("http_max_connections", self.http_max_connections as u64),
            ("http_max_connections_per_address", self.http_max_connections_per_address as u64),
            ("http_header_read_timeout_ms", self.http_header_read_timeout_ms),
            ("http_request_timeout_ms", self.http_request_timeout_ms),
            ("journal_read_count", u64::from(self.journal_read_count)),
            ("journal_cache_battles", self.journal_cache_battles as u64),
            ("journal_timeout_ms", self.journal_timeout_ms),
        ];
        for (key, value) in at_least_one {
            if value == 0 {
                return invalid(key, "must be at least 1".into());
            }
        }
        if i64::try_from(self.max_ack_pending).is_err() {
            return invalid("max_ack_pending", format!("must be at most {}", i64::MAX));
        }
        if self.gap_wait_ms < self.ack_wait_ms {
            return invalid("gap_wait_ms", format!("must be at least ack_wait_ms ({})", self.ack_wait_ms));
        }
        if self.retry_max_ms < self.retry_initial_ms {
            return invalid("retry_max_ms", format!("must be at least retry_initial_ms ({})", self.retry_initial_ms));
        }
        if self.journal_read_count > MAX_JOURNAL_READ_COUNT {
            return invalid(
                "journal_read_count",
                format!(
                    "{} exceeds {MAX_JOURNAL_READ_COUNT}, the most one read of the journal returns",
                    self.journal_read_count
                ),
            );
        }
        if let Some(url) = &self.journal_url {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return invalid("journal_url", format!("{url:?} must start with http:// or https://"));
            }
            battlelog_runtime::config::require_token_file(self.token_file.as_deref())?;
            self.client_tls.validate(&[("journal_url", url)])?;
        }
        self.tokens.validate()?;
        self.shared.validate()?;
        self.validate_tenants()
    }

    /// Each tenant's name is a NATS subject token, its URL an http(s) one
    /// with a host, its secret a `whsec_` one.
    fn validate_tenants(&self) -> Result<(), ConfigError> {
        let invalid = |key: &'static str, message: String| Err(ConfigError::Invalid { key, message });
        for (tenant, endpoint) in &self.tenants {
            if tenant.is_empty() || tenant.contains(|c: char| c == '.' || c == '*' || c == '>' || c.is_whitespace()) {
                return invalid("tenants", format!("{tenant:?} is not a tenant name (a NATS subject token)"));
            }
            let url = endpoint.url.parse::<hyper::Uri>();
            let scheme_ok = url.as_ref().is_ok_and(|u| matches!(u.scheme_str(), Some("http" | "https")));
            if !scheme_ok || url.as_ref().is_ok_and(|u| u.host().is_none()) {
                return invalid(
                    "tenants",
                    format!("tenants.{tenant}.url {:?} must be an http:// or https:// URL", endpoint.url),
                );
            }
            if let Err(e) = Secret::parse(&endpoint.secret) {
                return invalid("tenants", format!("tenants.{tenant}.secret: {e}"));
            }
        }
        Ok(())
    }

    /// The retry schedule as configured.
    pub fn retry(&self) -> Retry {
        Retry {
            initial: Duration::from_millis(self.retry_initial_ms),
            max: Duration::from_millis(self.retry_max_ms),
            max_attempts: self.retry_max_attempts,
            max_age: Duration::from_secs(self.retry_max_age_secs),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key_file() -> (tempfile::TempDir, Layers) {
        let dir = tempfile::tempdir().expect("temp dir");
        let key = dir.path().join("auth.pub.pem");
        std::fs::write(&key, "not read by validation").expect("write");
        let layers = Layers::new(SERVICE).env([("BATTLELOG_WEBHOOKS_AUTH_KEYS".to_owned(), key.display().to_string())]);
        (dir, layers)
    }

    fn with_file(dir: &tempfile::TempDir, layers: Layers, text: &str) -> Layers {
        let path = dir.path().join("webhooks.toml");
        std::fs::write(&path, text).expect("write");
        layers.file(Some(path))
    }

    fn refused_key(layers: &Layers) -> String {
        match Config::load(layers) {
            Err(ConfigError::Invalid { key, .. }) => key.to_owned(),
            Err(ConfigError::Value { key, .. }) => key,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn tenants_come_from_the_file_and_are_checked() {
        let (dir, layers) = key_file();
        let good = "[tenants.forum-a]\nurl = \"https://forum-a.example/hook\"\nsecret = \"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"\n";
        let config = Config::load(&with_file(&dir, layers.clone(), good)).expect("valid");
        assert_eq!(config.tenants["forum-a"].url, "https://forum-a.example/hook");

        for bad in [
            "[tenants.forum-a]\nurl = \"ftp://forum-a.example/hook\"\nsecret = \"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"\n",
            "[tenants.forum-a]\nurl = \"https://forum-a.example/hook\"\nsecret = \"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"\n",
            "[tenants.forum-a]\nurl = \"https://forum-a.example/hook\"\nsecret = \"whsec_!!!\"\n",
            "[tenants.\"a.b\"]\nurl = \"https://forum-a.example/hook\"\nsecret = \"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"\n",
        ] {
            assert_eq!(refused_key(&with_file(&dir, layers.clone(), bad)), "tenants", "{bad}");
        }
        let unknown = "[tenants.forum-a]\nurl = \"https://x.example/\"\nsecret = \"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"\nsecrte = \"\"\n";
        assert!(Config::load(&with_file(&dir, layers, unknown)).is_err());
    }

    #[test]
    fn every_limit_must_be_at_least_one_and_the_backoff_must_grow() {
        let (_dir, layers) = key_file();
        assert!(Config::load(&layers).is_ok(), "the defaults are valid");
        for key in [
            "max_ack_pending",
            "gap_retry_ms",
            "request_timeout_ms",
            "retry_initial_ms",
            "retry_max_attempts",
            "retry_max_age_secs",
            "max_concurrent_deliveries",
            "max_concurrent_deliveries_per_tenant",
            "http_max_connections_per_address",
        ] {
            let zero = layers.clone().flags([(key.to_owned(), "0".to_owned())]);
            assert_eq!(refused_key(&zero), key);
            let one = layers.clone().flags([(key.to_owned(), "1".to_owned())]);
            assert!(Config::load(&one).is_ok(), "{key} = 1 is allowed");
        }
        // ack_wait_ms and gap_wait_ms: 0 refused, 1 allowed with both at 1;
        // gap_wait_ms just under ack_wait_ms refused, equal or over fine.
        let waits = |ack: &str, gap: &str| {
            layers
                .clone()
                .flags([("ack_wait_ms".to_owned(), ack.to_owned()), ("gap_wait_ms".to_owned(), gap.to_owned())])
        };
        assert_eq!(refused_key(&waits("0", "1")), "ack_wait_ms");
        assert_eq!(refused_key(&waits("1", "0")), "gap_wait_ms");
        assert!(Config::load(&waits("1", "1")).is_ok());
        assert_eq!(refused_key(&waits("1000", "999")), "gap_wait_ms");
        assert!(Config::load(&waits("1000", "1000")).is_ok());
        assert!(Config::load(&waits("1000", "1001")).is_ok());
        let default_ack = layers.clone().flags([("gap_wait_ms".to_owned(), "29999".to_owned())]);
        assert_eq!(refused_key(&default_ack), "gap_wait_ms", "the default ack_wait_ms is 30000");
        // retry_max_ms: just under retry_initial_ms is refused, equal is fine.
        let flags = |max: &str| {
            layers
                .clone()
                .flags([("retry_initial_ms".to_owned(), "100".to_owned()), ("retry_max_ms".to_owned(), max.to_owned())])
        };
        assert_eq!(refused_key(&flags("99")), "retry_max_ms");
        assert!(Config::load(&flags("100")).is_ok());
        let pending = layers.clone().flags([("max_ack_pending".to_owned(), (i64::MAX as u64 + 1).to_string())]);
        assert_eq!(refused_key(&pending), "max_ack_pending");
    }

    #[test]
    fn the_journal_keys_are_checked_at_their_edges() {
        let (dir, layers) = key_file();
        let config = Config::load(&layers).expect("the defaults");
        assert_eq!(config.journal_url, None, "no journal by default: the chain check alone");
        assert_eq!(
            (config.journal_read_count, config.journal_cache_battles, config.journal_timeout_ms),
            (64, 10_000, 5_000)
        );
        let flags = |pairs: &[(&str, &str)]| {
            layers.clone().flags(pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())))
        };
        for key in ["journal_read_count", "journal_cache_battles", "journal_timeout_ms"] {
            assert_eq!(refused_key(&flags(&[(key, "0")])), key);
            assert!(Config::load(&flags(&[(key, "1")])).is_ok(), "{key} = 1 is allowed");
        }
        assert!(Config::load(&flags(&[("journal_read_count", "999")])).is_ok());
        assert!(Config::load(&flags(&[("journal_read_count", "1000")])).is_ok());
        assert_eq!(refused_key(&flags(&[("journal_read_count", "1001")])), "journal_read_count");
        let token = dir.path().join("service.token");
        let token = token.display().to_string();
        assert_eq!(
            refused_key(&flags(&[("journal_url", "grpc://journal:50053"), ("token_file", &token)])),
            "journal_url"
        );
        assert_eq!(refused_key(&flags(&[("journal_url", "http://journal:50053")])), "token_file");
        let config = Config::load(&flags(&[("journal_url", "http://journal:50053"), ("token_file", &token)])).unwrap();
        assert_eq!(config.journal_url.as_deref(), Some("http://journal:50053"));
        let config = Config::load(&flags(&[("journal_url", ""), ("token_file", "")])).unwrap();
        assert_eq!((config.journal_url, config.token_file), (None, None), "empty values unset the keys");
    }

    #[test]
    fn admin_tokens_need_a_key() {
        assert_eq!(refused_key(&Layers::new(SERVICE)), "auth_keys");
    }
}
