//! Configuration: defaults ← TOML file ← `BATTLELOG_ROLLER_*` environment ←
//! flags, validated before anything starts. A key has the same name in the
//! file (`journal_url`), the environment (`BATTLELOG_ROLLER_JOURNAL_URL`) and
//! the flags (`--journal-url`).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use battlelog_runtime::config::{ConfigError, overlay, read_file};
use battlelog_runtime::logging::LogFormat;
use battlelog_runtime::tls::{ClientTls, ServerTls};
use serde::Deserialize;

use crate::master_key::{MasterKey, MasterKeyError};

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// gRPC listen address.
    pub listen: SocketAddr,
    /// The journal's gRPC endpoint.
    pub journal_url: String,
    /// File holding the master key in hex (at least 32 bytes).
    pub master_key_file: Option<PathBuf>,
    /// Development only: with no key configured, create one at
    /// `<data_dir>/master.key` on first start and reuse it after.
    pub dev: bool,
    /// Where the development key lives.
    pub data_dir: PathBuf,
    /// Log filter (`RUST_LOG` wins when set).
    pub log: String,
    pub log_format: LogFormat,
    /// Public key files (PEM) whose tokens are accepted; several during a
    /// key rotation.
    pub auth_keys: Vec<PathBuf>,
    /// File holding the `service` token presented to the journal.
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
            listen: SocketAddr::from(([127, 0, 0, 1], 50052)),
            journal_url: "http://127.0.0.1:50053".into(),
            master_key_file: None,
            dev: false,
            data_dir: PathBuf::from("data/roller"),
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
    #[arg(long, env = "BATTLELOG_ROLLER_LISTEN")]
    pub listen: Option<SocketAddr>,
    /// The journal's gRPC endpoint, e.g. http://127.0.0.1:50053.
    #[arg(long, env = "BATTLELOG_ROLLER_JOURNAL_URL")]
    pub journal_url: Option<String>,
    /// File holding the master key in hex.
    #[arg(long, env = "BATTLELOG_ROLLER_MASTER_KEY_FILE")]
    pub master_key_file: Option<PathBuf>,
    /// Development: generate the master key under the data dir if none is configured.
    #[arg(long, env = "BATTLELOG_ROLLER_DEV")]
    pub dev: Option<bool>,
    /// Data directory (development key).
    #[arg(long, env = "BATTLELOG_ROLLER_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
    /// Log filter.
    #[arg(long, env = "BATTLELOG_ROLLER_LOG")]
    pub log: Option<String>,
    /// Log format.
    #[arg(long, env = "BATTLELOG_ROLLER_LOG_FORMAT", value_enum)]
    pub log_format: Option<LogFormat>,
    /// Public key files (PEM, comma-separated) whose tokens are accepted.
    #[arg(long, env = "BATTLELOG_ROLLER_AUTH_KEYS", value_delimiter = ',')]
    pub auth_keys: Option<Vec<PathBuf>>,
    /// File holding this service's `service` token for its peers.
    #[arg(long, env = "BATTLELOG_ROLLER_TOKEN_FILE")]
    pub token_file: Option<PathBuf>,
    /// Bytes of folded battles kept in memory.
    #[arg(long, env = "BATTLELOG_ROLLER_CACHE_BYTES")]
    pub cache_bytes: Option<u64>,
    /// PEM certificate chain to serve TLS with (with --tls-key).
    #[arg(long, env = "BATTLELOG_ROLLER_TLS_CERT")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert.
    #[arg(long, env = "BATTLELOG_ROLLER_TLS_KEY")]
    pub tls_key: Option<PathBuf>,
    /// PEM CA: callers must present a certificate it signed (mutual TLS).
    #[arg(long, env = "BATTLELOG_ROLLER_TLS_CLIENT_CA")]
    pub tls_client_ca: Option<PathBuf>,
    /// PEM CA trusted for https:// peer URLs.
    #[arg(long, env = "BATTLELOG_ROLLER_TLS_CA")]
    pub tls_ca: Option<PathBuf>,
    /// PEM client certificate presented to peers (mutual TLS; with --tls-client-key).
    #[arg(long, env = "BATTLELOG_ROLLER_TLS_CLIENT_CERT")]
    pub tls_client_cert: Option<PathBuf>,
    /// PEM private key of --tls-client-cert.
    #[arg(long, env = "BATTLELOG_ROLLER_TLS_CLIENT_KEY")]
    pub tls_client_key: Option<PathBuf>,
}

/// The master key may also come from this variable (hex), so that a secret
/// store can inject it without a file; it is never a flag, which `ps` shows.
pub const MASTER_KEY_ENV: &str = "BATTLELOG_ROLLER_MASTER_KEY";

impl Config {
    pub fn load(file: Option<&Path>, overrides: &Overrides) -> Result<Self, ConfigError> {
        let mut config: Config = read_file(file)?;
        let o = overrides;
        overlay(&mut config.listen, &o.listen);
        overlay(&mut config.journal_url, &o.journal_url);
        if o.master_key_file.is_some() {
            config.master_key_file.clone_from(&o.master_key_file);
        }
        overlay(&mut config.dev, &o.dev);
        overlay(&mut config.data_dir, &o.data_dir);
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
        if !(self.journal_url.starts_with("http://") || self.journal_url.starts_with("https://")) {
            return Err(ConfigError::Invalid {
                key: "journal_url",
                message: format!("{:?} must start with http:// or https://", self.journal_url),
            });
        }
        battlelog_runtime::config::require_auth_keys(&self.auth_keys)?;
        battlelog_runtime::config::require_token_file(self.token_file.as_deref())?;
        self.server_tls.validate()?;
        self.client_tls.validate(&[("journal_url", &self.journal_url)])
    }

    /// The master key: from `BATTLELOG_ROLLER_MASTER_KEY`, else the key
    /// file, else (in dev mode only) the generated development key.
    pub fn master_key(&self) -> Result<MasterKey, ConfigError> {
        let invalid = |e: MasterKeyError| ConfigError::Invalid { key: "master_key", message: e.to_string() };
        if let Ok(hex) = std::env::var(MASTER_KEY_ENV) {
            return MasterKey::from_hex(&hex).map_err(invalid);
        }
        match (&self.master_key_file, self.dev) {
            (Some(path), _) => MasterKey::read_file(path).map_err(invalid),
            (None, true) => MasterKey::read_or_create(&self.data_dir.join("master.key")).map_err(invalid),
            (None, false) => Err(ConfigError::Invalid {
                key: "master_key",
                message: format!(
                    "no master key: set master_key_file or {MASTER_KEY_ENV}, or dev = true to generate one under data_dir"
                ),
            }),
        }
    }
}
