//! Configuration: defaults ← TOML file ← `BATTLELOG_RESOLVER_*` environment
//! ← flags, validated before anything starts.

use std::net::SocketAddr;
use std::path::PathBuf;

pub use battlelog_runtime::config::{ConfigError, Layers};
use battlelog_runtime::edge::{GrpcLimits, TenantRateLimit};
use battlelog_runtime::service::{Development, Shared, Tokens};
use battlelog_runtime::tls::{ClientTls, ServerTls};
use serde::{Deserialize, Serialize};

/// The service name in its variables (`BATTLELOG_RESOLVER_*`).
pub const SERVICE: &str = "resolver";

/// The development battle-id secret's file, under `<data dir>/resolver`.
pub const DEVELOPMENT_BATTLE_ID_SECRET: &str = "battle-id.secret";

/// What `battlelog up` decides of its resolver ([`Config::development`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DevelopmentPeers {
    /// The journal's and the roller's endpoints.
    pub journal_url: String,
    pub roller_url: String,
    /// The NATS URL and subject prefix of the event feed; None: no feed.
    pub feed: Option<(String, String)>,
    /// The web pages' URL, and the share secret the links are keyed with.
    pub web_url: String,
    pub share_secret_file: PathBuf,
}

/// `battlelog up`'s own tuning of its resolver: `--cache-bytes`'s share,
/// `--appeal-window-secs`, `--rate-limit-*`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DevelopmentTuning {
    pub cache_bytes: u64,
    pub appeal_window_secs: u64,
    pub rate_limit: TenantRateLimit,
}

/// The resolver's configuration: every key is a field, with the same name in
/// the file, the environment and the flags (battlelog_runtime::config).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// The keys every service takes: `listen`, `log`, `log_format`,
    /// `metrics_listen`, `otlp_endpoint` (battlelog_runtime::service).
    #[serde(flatten)]
    pub shared: Shared,
    /// Token verification: `auth_keys`, `token_max_lifetime_secs`,
    /// `revoked_tokens_*` (battlelog_runtime::service).
    #[serde(flatten)]
    pub tokens: Tokens,
    /// The journal's gRPC endpoint.
    pub journal_url: String,
    /// The roller's gRPC endpoint.
    pub roller_url: String,
    /// NATS server whose event feed keeps cached battles warm, or several
    /// comma-separated (any nodes of a cluster); none: the journal alone
    /// (every command catches up from it either way).
    pub nats_url: Option<String>,
    /// Subject prefix the journal publishes under.
    pub nats_subject_prefix: String,
    /// File holding the `service` token presented to the journal and the roller.
    pub token_file: Option<PathBuf>,
    /// Bytes of folded battles kept in memory (the fold cache's budget).
    pub cache_bytes: u64,
    /// Most appends one `AppendBatch` to the journal carries
    /// (battlelog_stream::AppendQueue): at most the journal's
    /// `max_appends_per_batch`; 1: every append alone.
    pub journal_append_batch: usize,
    /// Most append calls out to the journal at once before appends queue
    /// up for the next batch (battlelog_stream::AppendQueue).
    pub journal_append_calls: usize,
    /// Seconds after a battle's close (as the journal recorded it) during
    /// which disputes and rulings are still taken; then the battle is final.
    pub appeal_window_secs: u64,
    /// The web service's public base URL (`https://battles.example.org`):
    /// replies link to the event on the battle's page there, with the
    /// battle's share key. None: replies carry no link. Stored without a
    /// trailing slash.
    pub web_url: Option<String>,
    /// File holding the secret (64 hex digits) share keys are derived from,
    /// the web service's own: required with `web_url`, so that the links
    /// open the pages.
    pub share_secret_file: Option<PathBuf>,
    /// File holding the secret (64 hex digits) that generated battle ids are
    /// keyed with; every replica needs the same one. None: a secret of this
    /// process only (a retried OpenBattle on another replica or after a
    /// restart opens a second battle).
    pub battle_id_secret_file: Option<PathBuf>,
    /// Most `Watch` streams one token (its subject in its tenant) holds
    /// open at once; one more is refused with `RESOURCE_EXHAUSTED`.
    pub max_watches_per_token: usize,
    /// Most `Watch` streams one client connection holds open at once.
    pub max_watches_per_connection: usize,
    /// Most battles one `ListBattles` page holds; a larger `page_size` is
    /// `INVALID_ARGUMENT`.
    pub max_list_page_size: u32,
    /// How often the sweeper asks the journal for pending actions (rolled,
    /// not resolved) and finishes those nobody else did, in milliseconds
    /// (roll-forward).
    pub pending_sweep_ms: u64,
    /// How long after its roll a pending action is left to its own `Act`
    /// before the sweeper finishes it, in milliseconds. 0: at the next sweep.
    pub pending_grace_ms: u64,
    /// TLS keys `tls_cert`, `tls_key`, `tls_client_ca` (battlelog_runtime::tls).
    #[serde(flatten)]
    pub server_tls: ServerTls,
    /// TLS keys for calling peers: `tls_ca`, `tls_client_cert`, `tls_client_key`.
    #[serde(flatten)]
    pub client_tls: ClientTls,
    /// Connection and request limits: `max_connections`,
    /// `first_request_timeout_ms`, `keepalive_*`, … (battlelog_runtime::edge).
    #[serde(flatten)]
    pub grpc_limits: GrpcLimits,
    /// Per-tenant rate limit: `rate_limit_per_sec`, `rate_limit_burst`,
    /// `rate_limit_tenants` (battlelog_runtime::edge).
    #[serde(flatten)]
    pub rate_limit: TenantRateLimit,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            shared: Shared::listening_on(SocketAddr::from(([127, 0, 0, 1], 50051))),
            tokens: Tokens::default(),
            journal_url: "http://127.0.0.1:50053".into(),
            roller_url: "http://127.0.0.1:50052".into(),
            nats_url: None,
            nats_subject_prefix: "battlelog.events".into(),
            token_file: None,
            cache_bytes: battlelog_stream::DEFAULT_CACHE_BYTES,
            journal_append_batch: battlelog_stream::DEFAULT_APPEND_BATCH,
            journal_append_calls: battlelog_stream::DEFAULT_APPEND_CALLS,
            appeal_window_secs: crate::service::DEFAULT_APPEAL_WINDOW.as_secs(),
            web_url: None,
            share_secret_file: None,
            battle_id_secret_file: None,
            max_watches_per_token: crate::service::DEFAULT_WATCH_LIMITS.per_token,
            max_watches_per_connection: crate::service::DEFAULT_WATCH_LIMITS.per_connection,
            max_list_page_size: crate::listing::DEFAULT_MAX_PAGE_SIZE,
            pending_sweep_ms: crate::service::DEFAULT_PENDING_SWEEP.every.as_millis() as u64,
            pending_grace_ms: crate::service::DEFAULT_PENDING_SWEEP.grace.as_millis() as u64,
            server_tls: ServerTls::default(),
            client_tls: ClientTls::default(),
            grpc_limits: GrpcLimits::default(),
            rate_limit: TenantRateLimit::default(),
        }
    }
}

impl Config {
    /// Defaults, then the file, the environment and the flags of `layers`,
    /// then validation.
    pub fn load(layers: &Layers) -> Result<Self, ConfigError> {
        let mut config: Config = layers.extract()?;
        // An empty value (`BATTLELOG_RESOLVER_WEB_URL=`) unsets a key, as
        // for `token_file`; a trailing slash would double in every link.
        config.web_url = config.web_url.map(|url| url.trim_end_matches('/').to_owned()).filter(|url| !url.is_empty());
        config.share_secret_file = config.share_secret_file.filter(|path| !path.as_os_str().is_empty());
        config.battle_id_secret_file = config.battle_id_secret_file.filter(|path| !path.as_os_str().is_empty());
        config.nats_url = config.nats_url.filter(|url| !url.trim().is_empty());
        config.validate()?;
        Ok(config)
    }

    /// `battlelog up`'s resolver: listening on `listen` with `server_tls`,
    /// calling and following its `peers`, tuned by `tuning`, with its
    /// battle-id secret under `<data dir>/resolver`.
    pub fn development(
        dev: &Development,
        listen: SocketAddr,
        server_tls: ServerTls,
        peers: DevelopmentPeers,
        tuning: DevelopmentTuning,
    ) -> Self {
        let (nats_url, nats_subject_prefix) = match peers.feed {
            Some((url, prefix)) => (Some(url), prefix),
            None => (None, Self::default().nats_subject_prefix),
        };
        Self {
            shared: dev.shared(listen),
            tokens: dev.tokens.clone(),
            journal_url: peers.journal_url,
            roller_url: peers.roller_url,
            nats_url,
            nats_subject_prefix,
            token_file: Some(dev.token_file.clone()),
            cache_bytes: tuning.cache_bytes,
            appeal_window_secs: tuning.appeal_window_secs,
            web_url: Some(peers.web_url),
            share_secret_file: Some(peers.share_secret_file),
            battle_id_secret_file: Some(dev.dir(SERVICE).join(DEVELOPMENT_BATTLE_ID_SECRET)),
            server_tls,
            client_tls: dev.client_tls.clone(),
            rate_limit: tuning.rate_limit,
            ..Self::default()
        }
    }

    /// How the service sends its appends to the journal.
    pub fn append_limits(&self) -> battlelog_stream::AppendLimits {
        battlelog_stream::AppendLimits { max_batch: self.journal_append_batch, max_calls: self.journal_append_calls }
    }

    /// How the sweeper of pending actions runs.
    pub fn pending_sweep(&self) -> crate::service::PendingSweep {
        crate::service::PendingSweep {
            every: std::time::Duration::from_millis(self.pending_sweep_ms),
            grace: std::time::Duration::from_millis(self.pending_grace_ms),
        }
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        self.append_limits().validate()?;
        if self.pending_sweep_ms == 0 {
            return Err(ConfigError::Invalid {
                key: "pending_sweep_ms",
                message: "must be at least 1: a battle nobody touches would keep its pending action for ever".into(),
            });
        }
        if let Some(urls) = &self.nats_url {
            battlelog_runtime::nats_url::NatsUrls::for_key("nats_url", urls)?;
        }
        for (key, url) in [("journal_url", &self.journal_url), ("roller_url", &self.roller_url)] {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(ConfigError::Invalid {
                    key,
                    message: format!("{url:?} must start with http:// or https://"),
                });
            }
        }
        if let Some(web_url) = &self.web_url {
            check_web_url(web_url)?;
            if self.share_secret_file.is_none() {
                return Err(ConfigError::Invalid {
                    key: "share_secret_file",
                    message: "is required when web_url is set: the links in replies carry share keys derived \
                              from the web service's secret; set share_secret_file to that file (64 hex digits) \
                              or unset web_url"
                        .into(),
                });
            }
        }
        for (key, value) in [
            ("max_watches_per_token", self.max_watches_per_token),
            ("max_watches_per_connection", self.max_watches_per_connection),
        ] {
            if value == 0 {
                return Err(ConfigError::Invalid {
                    key,
                    message: "must be at least 1: 0 would refuse every Watch".into(),
                });
            }
        }
        // The journal's index answers at most its max_read_count (default
        // 1000) per call; a page is one call.
        if !(1..=1000).contains(&self.max_list_page_size) {
            return Err(ConfigError::Invalid {
                key: "max_list_page_size",
                message: format!("{} is not in 1..=1000", self.max_list_page_size),
            });
        }
        self.shared.validate()?;
        self.tokens.validate()?;
        battlelog_runtime::config::require_token_file(self.token_file.as_deref())?;
        self.server_tls.validate()?;
        self.grpc_limits.validate()?;
        self.rate_limit.validate()?;
        self.client_tls.validate(&[("journal_url", &self.journal_url), ("roller_url", &self.roller_url)])
    }
}

/// `web_url` is an http(s) base URL links can be built on: a host, and no
/// query or fragment for the battle's path to land after.
fn check_web_url(web_url: &str) -> Result<(), ConfigError> {
    let invalid = |message: String| ConfigError::Invalid { key: "web_url", message };
    let url = url::Url::parse(web_url).map_err(|e| invalid(format!("{web_url:?} is not a URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") || !url.has_host() {
        return Err(invalid(format!("{web_url:?} must be an http:// or https:// URL with a host")));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(invalid(format!("{web_url:?} must be a base URL, without a query or a fragment")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let mut flags = vec![("auth_keys", "k.pem"), ("token_file", "t")];
        flags.extend_from_slice(pairs);
        let layers = Layers::new(SERVICE).flags(flags.into_iter().map(|(k, v)| (k.to_owned(), v.to_owned())));
        Config::load(&layers)
    }

    #[test]
    fn token_keys_default_to_ninety_days_and_no_list_and_refuse_a_zero_lifetime() {
        let config = with(&[]).unwrap();
        assert_eq!(config.tokens.token_max_lifetime_secs, 90 * 24 * 3600);
        assert_eq!((config.tokens.revoked_tokens_file, config.tokens.revoked_tokens_reload_ms), (None, 1000));
        let error = with(&[("token_max_lifetime_secs", "0")]).unwrap_err().to_string();
        assert!(error.starts_with("invalid config token_max_lifetime_secs: must be at least 1"), "{error}");
        let config = with(&[("token_max_lifetime_secs", "1"), ("revoked_tokens_file", "")]).unwrap();
        assert_eq!(config.tokens.token_max_lifetime_secs, 1, "one second is a lifetime");
        assert_eq!(config.tokens.revoked_tokens_file, None, "an empty value unsets the list");
        let error = with(&[("token_max_lifetime_secs", "-1")]).unwrap_err().to_string();
        assert!(error.contains("token_max_lifetime_secs") && error.contains("--token-max-lifetime-secs"), "{error}");
    }

    #[test]
    fn web_url_needs_the_share_secret_and_is_kept_without_its_trailing_slash() {
        let error = with(&[("web_url", "https://battles.example.org")]).unwrap_err().to_string();
        assert!(error.contains("share_secret_file") && error.contains("web_url"), "{error}");
        let config = with(&[("web_url", "https://battles.example.org/"), ("share_secret_file", "s")]).unwrap();
        assert_eq!(config.web_url.as_deref(), Some("https://battles.example.org"));
        let config = with(&[("web_url", ""), ("share_secret_file", "")]).unwrap();
        assert_eq!((config.web_url, config.share_secret_file), (None, None), "empty values unset the keys");
    }

    #[test]
    fn watch_limits_default_and_refuse_zero_by_name() {
        let config = with(&[]).unwrap();
        assert_eq!((config.max_watches_per_token, config.max_watches_per_connection), (256, 128));
        let config = with(&[("max_watches_per_token", "1"), ("max_watches_per_connection", "1")]).unwrap();
        assert_eq!((config.max_watches_per_token, config.max_watches_per_connection), (1, 1));
        for key in ["max_watches_per_token", "max_watches_per_connection"] {
            let error = with(&[(key, "0")]).unwrap_err().to_string();
            assert!(error.starts_with(&format!("invalid config {key}: ")), "{error}");
        }
    }

    #[test]
    fn a_web_url_that_cannot_take_a_path_is_refused_by_name() {
        for bad in ["battles.example.org", "ftp://battles.example.org", "https://x.org/?a=1", "https://x.org/#top"] {
            let error = with(&[("web_url", bad), ("share_secret_file", "s")]).unwrap_err().to_string();
            assert!(error.starts_with("invalid config web_url: "), "{bad}: {error}");
        }
    }

    #[test]
    fn max_list_page_size_is_one_to_a_thousand() {
        assert_eq!(with(&[]).unwrap().max_list_page_size, 100);
        for ok in ["1", "1000"] {
            assert_eq!(with(&[("max_list_page_size", ok)]).unwrap().max_list_page_size.to_string(), ok);
        }
        for bad in ["0", "1001"] {
            let error = with(&[("max_list_page_size", bad)]).unwrap_err().to_string();
            assert!(error.contains("max_list_page_size") && error.contains("1..=1000"), "{error}");
        }
    }

    #[test]
    fn the_pending_sweep_defaults_to_five_seconds_after_two_and_refuses_zero_by_name() {
        let config = with(&[]).unwrap();
        assert_eq!((config.pending_sweep_ms, config.pending_grace_ms), (5000, 2000));
        let edge = with(&[("pending_sweep_ms", "1"), ("pending_grace_ms", "0")]).unwrap();
        assert_eq!(
            edge.pending_sweep(),
            crate::service::PendingSweep {
                every: std::time::Duration::from_millis(1),
                grace: std::time::Duration::ZERO
            }
        );
        let error = with(&[("pending_sweep_ms", "0")]).unwrap_err().to_string();
        assert!(error.starts_with("invalid config pending_sweep_ms: must be at least 1"), "{error}");
    }
}
