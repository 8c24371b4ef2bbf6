//! Configuration: defaults ← TOML file ← `BATTLELOG_ROLLER_*` environment ←
//! flags, validated before anything starts. A key has the same name in the
//! file (`journal_url`), the environment (`BATTLELOG_ROLLER_JOURNAL_URL`) and
//! the flags (`--journal-url`).

use std::net::SocketAddr;
use std::path::PathBuf;

use battlelog_runtime::config::Observability;
pub use battlelog_runtime::config::{ConfigError, Layers};
use battlelog_runtime::edge::GrpcLimits;
use battlelog_runtime::logging::LogFormat;
use battlelog_runtime::tls::{ClientTls, ServerTls};
use serde::{Deserialize, Serialize};

use crate::master_key::{MasterKey, MasterKeyError};

/// The service name in its variables (`BATTLELOG_ROLLER_*`).
pub const SERVICE: &str = "roller";

/// The roller's configuration: every key is a field, with the same name in
/// the file, the environment and the flags (battlelog_runtime::config).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
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
    #[serde(deserialize_with = "battlelog_runtime::config::comma_separated")]
    pub auth_keys: Vec<PathBuf>,
    /// The longest a token may be valid (`exp` − `iat`), in seconds; a
    /// token valid for longer is refused (`TOKEN_LIFETIME_TOO_LONG`).
    pub token_max_lifetime_secs: u64,
    /// The revocation list (battlelog_auth::revoke): tokens refused by id
    /// or subject before they expire, re-read while running. None: no list.
    pub revoked_tokens_file: Option<PathBuf>,
    /// How often, at most, the revocation list's file is looked at for
    /// changes, in milliseconds: a revocation takes effect within it.
    pub revoked_tokens_reload_ms: u64,
    /// File holding the `service` token presented to the journal.
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
    /// Metrics and traces: `metrics_listen`, `otlp_endpoint`
    /// (battlelog_runtime::config::Observability).
    #[serde(flatten)]
    pub observability: Observability,
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
            token_max_lifetime_secs: battlelog_auth::DEFAULT_MAX_LIFETIME.as_secs(),
            revoked_tokens_file: None,
            revoked_tokens_reload_ms: battlelog_auth::revoke::DEFAULT_RELOAD_EVERY.as_millis() as u64,
            token_file: None,
            cache_bytes: battlelog_stream::DEFAULT_CACHE_BYTES,
            journal_append_batch: battlelog_stream::DEFAULT_APPEND_BATCH,
            journal_append_calls: battlelog_stream::DEFAULT_APPEND_CALLS,
            server_tls: ServerTls::default(),
            client_tls: ClientTls::default(),
            grpc_limits: GrpcLimits::default(),
            observability: Observability::default(),
        }
    }
}

/// The master key may also come from this variable (hex), so that a secret
/// store can inject it without a file; it is never a flag, which `ps` shows.
pub const MASTER_KEY_ENV: &str = "BATTLELOG_ROLLER_MASTER_KEY";

impl Config {
    /// Defaults, then the file, the environment and the flags of `layers`,
    /// then validation.
    pub fn load(layers: &Layers) -> Result<Self, ConfigError> {
        let mut config: Config = layers.extract()?;
        // An empty value (`BATTLELOG_ROLLER_REVOKED_TOKENS_FILE=`) unsets it.
        config.revoked_tokens_file = config.revoked_tokens_file.filter(|path| !path.as_os_str().is_empty());
        config.validate()?;
        Ok(config)
    }

    /// How the service sends its appends to the journal.
    pub fn append_limits(&self) -> battlelog_stream::AppendLimits {
        battlelog_stream::AppendLimits { max_batch: self.journal_append_batch, max_calls: self.journal_append_calls }
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(self.journal_url.starts_with("http://") || self.journal_url.starts_with("https://")) {
            return Err(ConfigError::Invalid {
                key: "journal_url",
                message: format!("{:?} must start with http:// or https://", self.journal_url),
            });
        }
        self.append_limits().validate()?;
        battlelog_runtime::config::require_auth_keys(&self.auth_keys)?;
        battlelog_runtime::config::require_token_lifetime(self.token_max_lifetime_secs)?;
        battlelog_runtime::config::require_token_file(self.token_file.as_deref())?;
        self.server_tls.validate()?;
        self.grpc_limits.validate()?;
        self.observability.validate()?;
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
