//! Configuration: defaults ← TOML file ← `BATTLELOG_RESOLVER_*` environment
//! ← flags, validated before anything starts.

use std::net::SocketAddr;
use std::path::PathBuf;

pub use battlelog_runtime::config::{ConfigError, Layers};
use battlelog_runtime::logging::LogFormat;
use battlelog_runtime::tls::{ClientTls, ServerTls};
use serde::{Deserialize, Serialize};

/// The service name in its variables (`BATTLELOG_RESOLVER_*`).
pub const SERVICE: &str = "resolver";

/// The resolver's configuration: every key is a field, with the same name in
/// the file, the environment and the flags (battlelog_runtime::config).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
    #[serde(deserialize_with = "battlelog_runtime::config::comma_separated")]
    pub auth_keys: Vec<PathBuf>,
    /// File holding the `service` token presented to the journal and the roller.
    pub token_file: Option<PathBuf>,
    /// Bytes of folded battles kept in memory (the fold cache's budget).
    pub cache_bytes: u64,
    /// Seconds after a battle's close (as the journal recorded it) during
    /// which disputes and rulings are still taken; then the battle is final.
    pub appeal_window_secs: u64,
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
            appeal_window_secs: crate::service::DEFAULT_APPEAL_WINDOW.as_secs(),
            server_tls: ServerTls::default(),
            client_tls: ClientTls::default(),
        }
    }
}

impl Config {
    /// Defaults, then the file, the environment and the flags of `layers`,
    /// then validation.
    pub fn load(layers: &Layers) -> Result<Self, ConfigError> {
        let config: Config = layers.extract()?;
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
