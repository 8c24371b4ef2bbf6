//! Configuration: defaults ← TOML file ← `BATTLELOG_ROLLER_*` environment ←
//! flags, validated before anything starts. A key has the same name in the
//! file (`journal_url`), the environment (`BATTLELOG_ROLLER_JOURNAL_URL`) and
//! the flags (`--journal-url`).

use std::net::SocketAddr;
use std::path::PathBuf;

pub use battlelog_runtime::config::{ConfigError, Layers};
use battlelog_runtime::edge::GrpcLimits;
use battlelog_runtime::service::{Development, Shared, Tokens};
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
    /// File holding the master key in hex (at least 32 bytes).
    pub master_key_file: Option<PathBuf>,
    /// Development only: with no key configured, create one at
    /// `<data_dir>/master.key` on first start and reuse it after.
    pub dev: bool,
    /// Where the development key lives.
    pub data_dir: PathBuf,
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
}

impl Default for Config {
    fn default() -> Self {
        Self {
            shared: Shared::listening_on(SocketAddr::from(([127, 0, 0, 1], 50052))),
            tokens: Tokens::default(),
            journal_url: "http://127.0.0.1:50053".into(),
            master_key_file: None,
            dev: false,
            data_dir: PathBuf::from("data/roller"),
            token_file: None,
            cache_bytes: battlelog_stream::DEFAULT_CACHE_BYTES,
            journal_append_batch: battlelog_stream::DEFAULT_APPEND_BATCH,
            journal_append_calls: battlelog_stream::DEFAULT_APPEND_CALLS,
            server_tls: ServerTls::default(),
            client_tls: ClientTls::default(),
            grpc_limits: GrpcLimits::default(),
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
        layers.load(Self::validate)
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
        self.shared.validate()?;
        self.tokens.validate()?;
        battlelog_runtime::config::require_token_file(self.token_file.as_deref())?;
        self.server_tls.validate()?;
        self.grpc_limits.validate()?;
        self.client_tls.validate(&[("journal_url", &self.journal_url)])
    }

    /// `battlelog up`'s roller: listening on `listen` with `server_tls`,
    /// appending to `journal_url`, `cache_bytes` for its ledgers, and its
    /// development master key under `<data dir>/roller` (made on first
    /// start: [`Config::master_key`]).
    pub fn development(
        dev: &Development,
        listen: SocketAddr,
        server_tls: ServerTls,
        journal_url: String,
        cache_bytes: u64,
    ) -> Self {
        Self {
            shared: dev.shared(listen),
            tokens: dev.tokens.clone(),
            journal_url,
            dev: true,
            data_dir: dev.dir(SERVICE),
            token_file: Some(dev.token_file.clone()),
            cache_bytes,
            server_tls,
            client_tls: dev.client_tls.clone(),
            ..Self::default()
        }
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
