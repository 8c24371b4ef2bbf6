//! Configuration: defaults ← TOML file ← `BATTLELOG_RESOLVER_*` environment
//! ← flags, validated before anything starts.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use battlelog_runtime::config::{ConfigError, overlay, read_file};
use battlelog_runtime::logging::LogFormat;
use battlelog_runtime::tls::{ClientTls, ServerTls};
use serde::Deserialize;

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// gRPC listen address.
    pub listen: SocketAddr,
    /// The journal's gRPC endpoint.
    pub journal_url: String,
    /// The roller's gRPC endpoint.
    pub roller_url: String,
    /// NATS server whose event feed keeps cached battles warm; none: the
    /// journal alone (every command catches up from it either way).
    pub nats_url: Option<String>,
    /// Subject prefix the journal publishes under.
    pub nats_subject_prefix: String,
    /// Log filter (`RUST_LOG` wins when set).
    pub log: String,
    pub log_format: LogFormat,
    /// Public key files (PEM) whose tokens are accepted; several during a
    /// key rotation.
    pub auth_keys: Vec<PathBuf>,
    /// File holding the `service` token presented to the journal and the roller.
    pub token_file: Option<PathBuf>,
    /// Bytes of folded battles kept in memory (the fold cache's budget).
    pub cache_bytes: u64,
    /// TLS keys `tls_cert`, `tls_key`, `tls_client_ca` (battlelog_runtime::tls).
    #[serde(flatten)]
    pub server_tls: ServerTls,
    /// TLS keys for calling peers: `tls_ca`, `tls_client_cert`, `tls_client_key`.
    #[serde(flatten)]
    pub client_tls: ClientTls,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 50051)),
            journal_url: "http://127.0.0.1:50053".into(),
            roller_url: "http://127.0.0.1:50052".into(),
            nats_url: None,
            nats_subject_prefix: "battlelog.events".into(),
            log: "info".into(),
            log_format: LogFormat::Text,
            auth_keys: Vec::new(),
            token_file: None,
            cache_bytes: battlelog_stream::DEFAULT_CACHE_BYTES,
            server_tls: ServerTls::default(),
            client_tls: ClientTls::default(),
        }
    }
}

/// The environment and flag layers (a flag wins over its variable).
#[derive(Debug, Default, Clone, clap::Args)]
pub struct Overrides {
    /// gRPC listen address (port 0 picks a free one).
    #[arg(long, env = "BATTLELOG_RESOLVER_LISTEN")]
    pub listen: Option<SocketAddr>,
    /// The journal's gRPC endpoint.
    #[arg(long, env = "BATTLELOG_RESOLVER_JOURNAL_URL")]
    pub journal_url: Option<String>,
    /// The roller's gRPC endpoint.
    #[arg(long, env = "BATTLELOG_RESOLVER_ROLLER_URL")]
    pub roller_url: Option<String>,
    /// NATS server for the event feed, e.g. nats://127.0.0.1:4222.
    #[arg(long, env = "BATTLELOG_RESOLVER_NATS_URL")]
    pub nats_url: Option<String>,
    /// Subject prefix the journal publishes under.
    #[arg(long, env = "BATTLELOG_RESOLVER_NATS_SUBJECT_PREFIX")]
    pub nats_subject_prefix: Option<String>,
    /// Log filter.
    #[arg(long, env = "BATTLELOG_RESOLVER_LOG")]
    pub log: Option<String>,
    /// Log format.
    #[arg(long, env = "BATTLELOG_RESOLVER_LOG_FORMAT", value_enum)]
    pub log_format: Option<LogFormat>,
    /// Public key files (PEM, comma-separated) whose tokens are accepted.
    #[arg(long, env = "BATTLELOG_RESOLVER_AUTH_KEYS", value_delimiter = ',')]
    pub auth_keys: Option<Vec<PathBuf>>,
    /// File holding this service's `service` token for its peers.
    #[arg(long, env = "BATTLELOG_RESOLVER_TOKEN_FILE")]
    pub token_file: Option<PathBuf>,
    /// Bytes of folded battles kept in memory.
    #[arg(long, env = "BATTLELOG_RESOLVER_CACHE_BYTES")]
    pub cache_bytes: Option<u64>,
    /// PEM certificate chain to serve TLS with (with --tls-key).
    #[arg(long, env = "BATTLELOG_RESOLVER_TLS_CERT")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert.
    #[arg(long, env = "BATTLELOG_RESOLVER_TLS_KEY")]
    pub tls_key: Option<PathBuf>,
    /// PEM CA: callers must present a certificate it signed (mutual TLS).
    #[arg(long, env = "BATTLELOG_RESOLVER_TLS_CLIENT_CA")]
    pub tls_client_ca: Option<PathBuf>,
    /// PEM CA trusted for https:// peer URLs.
    #[arg(long, env = "BATTLELOG_RESOLVER_TLS_CA")]
    pub tls_ca: Option<PathBuf>,
    /// PEM client certificate presented to peers (mutual TLS; with --tls-client-key).
    #[arg(long, env = "BATTLELOG_RESOLVER_TLS_CLIENT_CERT")]
    pub tls_client_cert: Option<PathBuf>,
    /// PEM private key of --tls-client-cert.
    #[arg(long, env = "BATTLELOG_RESOLVER_TLS_CLIENT_KEY")]
    pub tls_client_key: Option<PathBuf>,
}

impl Config {
    pub fn load(file: Option<&Path>, overrides: &Overrides) -> Result<Self, ConfigError> {
        let mut config: Config = read_file(file)?;
        let o = overrides;
        overlay(&mut config.listen, &o.listen);
        overlay(&mut config.journal_url, &o.journal_url);
        overlay(&mut config.roller_url, &o.roller_url);
        if o.nats_url.is_some() {
            config.nats_url.clone_from(&o.nats_url);
        }
        overlay(&mut config.nats_subject_prefix, &o.nats_subject_prefix);
        overlay(&mut config.log, &o.log);
        overlay(&mut config.log_format, &o.log_format);
        overlay(&mut config.auth_keys, &o.auth_keys);
        if o.token_file.is_some() {
            config.token_file.clone_from(&o.token_file);
        }
        overlay(&mut config.cache_bytes, &o.cache_bytes);
        config.server_tls.apply(o.tls_cert.as_ref(), o.tls_key.as_ref(), o.tls_client_ca.as_ref());
        config.client_tls.apply(o.tls_ca.as_ref(), o.tls_client_cert.as_ref(), o.tls_client_key.as_ref());
        config.validate()?;
        Ok(config)
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        for (key, url) in [("journal_url", &self.journal_url), ("roller_url", &self.roller_url)] {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(ConfigError::Invalid {
                    key,
                    message: format!("{url:?} must start with http:// or https://"),
                });
            }
        }
        battlelog_runtime::config::require_auth_keys(&self.auth_keys)?;
        battlelog_runtime::config::require_token_file(self.token_file.as_deref())?;
        self.server_tls.validate()?;
        self.client_tls.validate(&[("journal_url", &self.journal_url), ("roller_url", &self.roller_url)])
    }
}
