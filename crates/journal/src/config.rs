//! Configuration: defaults ← TOML file ← `BATTLELOG_JOURNAL_*` environment ←
//! command-line flags, validated before anything starts.
//!
//! Every key has the same name in the file (`data_dir`), the environment
//! (`BATTLELOG_JOURNAL_DATA_DIR`) and the flags (`--data-dir`). clap reads a
//! flag or else its variable, so [`Overrides`] is the environment and flag
//! layers at once, applied over the file.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use battlelog_runtime::config::overlay;
use battlelog_runtime::tls::ServerTls;
use serde::Deserialize;

use crate::limits::Limits;

pub use battlelog_runtime::logging::LogFormat;

/// The journal's configuration.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// gRPC listen address.
    pub listen: SocketAddr,
    /// The sled directory.
    pub data_dir: PathBuf,
    /// NATS server URL; none runs without NATS (events wait in the outbox).
    pub nats_url: Option<String>,
    /// The JetStream stream events go to (created if missing).
    pub nats_stream: String,
    /// Subject prefix: events go to `<prefix>.<stream id>`.
    pub nats_subject_prefix: String,
    /// Most appends one group commit (one flush) takes.
    pub max_commit_batch: usize,
    /// sled's page cache, in bytes.
    pub cache_capacity_bytes: u64,
    /// Largest payload of one event.
    pub max_payload_bytes: usize,
    /// Most events in one append.
    pub max_events_per_append: usize,
    /// Largest sum of payload bytes in one append.
    pub max_append_bytes: usize,
    /// Most events one read returns.
    pub max_read_count: usize,
    /// Record bytes after which a read stops (it returns at least one event).
    pub max_read_bytes: usize,
    /// Log filter, in `tracing_subscriber::EnvFilter` syntax (`RUST_LOG` wins when set).
    pub log: String,
    /// Log format.
    pub log_format: LogFormat,
    /// Public key files (PEM) whose tokens are accepted; several during a
    /// key rotation. Only the `service` role is admitted.
    pub auth_keys: Vec<PathBuf>,
    /// TLS keys `tls_cert`, `tls_key`, `tls_client_ca` (battlelog_runtime::tls).
    #[serde(flatten)]
    pub server_tls: ServerTls,
}

impl Default for Config {
    fn default() -> Self {
        let limits = Limits::default();
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 50053)),
            data_dir: PathBuf::from("data/journal"),
            nats_url: None,
            nats_stream: "BATTLELOG_EVENTS".into(),
            nats_subject_prefix: "battlelog.events".into(),
            max_commit_batch: 1024,
            cache_capacity_bytes: 256 * 1024 * 1024,
            max_payload_bytes: limits.max_payload_bytes,
            max_events_per_append: limits.max_events_per_append,
            max_append_bytes: limits.max_append_bytes,
            max_read_count: limits.max_read_count,
            max_read_bytes: limits.max_read_bytes,
            log: "info".into(),
            log_format: LogFormat::Text,
            auth_keys: Vec::new(),
            server_tls: ServerTls::default(),
        }
    }
}

/// The environment and flag layers (a flag wins over its variable).
#[derive(Debug, Default, Clone, clap::Args)]
pub struct Overrides {
    /// gRPC listen address, e.g. 127.0.0.1:50053 (port 0 picks a free one).
    #[arg(long, env = "BATTLELOG_JOURNAL_LISTEN")]
    pub listen: Option<SocketAddr>,
    /// The sled directory.
    #[arg(long, env = "BATTLELOG_JOURNAL_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
    /// NATS server URL, e.g. nats://127.0.0.1:4222.
    #[arg(long, env = "BATTLELOG_JOURNAL_NATS_URL")]
    pub nats_url: Option<String>,
    /// JetStream stream name.
    #[arg(long, env = "BATTLELOG_JOURNAL_NATS_STREAM")]
    pub nats_stream: Option<String>,
    /// Subject prefix.
    #[arg(long, env = "BATTLELOG_JOURNAL_NATS_SUBJECT_PREFIX")]
    pub nats_subject_prefix: Option<String>,
    /// Most appends per group commit.
    #[arg(long, env = "BATTLELOG_JOURNAL_MAX_COMMIT_BATCH")]
    pub max_commit_batch: Option<usize>,
    /// sled page cache bytes.
    #[arg(long, env = "BATTLELOG_JOURNAL_CACHE_CAPACITY_BYTES")]
    pub cache_capacity_bytes: Option<u64>,
    /// Largest payload of one event.
    #[arg(long, env = "BATTLELOG_JOURNAL_MAX_PAYLOAD_BYTES")]
    pub max_payload_bytes: Option<usize>,
    /// Most events in one append.
    #[arg(long, env = "BATTLELOG_JOURNAL_MAX_EVENTS_PER_APPEND")]
    pub max_events_per_append: Option<usize>,
    /// Largest sum of payload bytes in one append.
    #[arg(long, env = "BATTLELOG_JOURNAL_MAX_APPEND_BYTES")]
    pub max_append_bytes: Option<usize>,
    /// Most events one read returns.
    #[arg(long, env = "BATTLELOG_JOURNAL_MAX_READ_COUNT")]
    pub max_read_count: Option<usize>,
    /// Record bytes after which a read stops.
    #[arg(long, env = "BATTLELOG_JOURNAL_MAX_READ_BYTES")]
    pub max_read_bytes: Option<usize>,
    /// Log filter.
    #[arg(long, env = "BATTLELOG_JOURNAL_LOG")]
    pub log: Option<String>,
    /// Log format.
    #[arg(long, env = "BATTLELOG_JOURNAL_LOG_FORMAT", value_enum)]
    pub log_format: Option<LogFormat>,
    /// Public key files (PEM, comma-separated) whose tokens are accepted.
    #[arg(long, env = "BATTLELOG_JOURNAL_AUTH_KEYS", value_delimiter = ',')]
    pub auth_keys: Option<Vec<PathBuf>>,
    /// PEM certificate chain to serve TLS with (with --tls-key).
    #[arg(long, env = "BATTLELOG_JOURNAL_TLS_CERT")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert.
    #[arg(long, env = "BATTLELOG_JOURNAL_TLS_KEY")]
    pub tls_key: Option<PathBuf>,
    /// PEM CA: callers must present a certificate it signed (mutual TLS).
    #[arg(long, env = "BATTLELOG_JOURNAL_TLS_CLIENT_CA")]
    pub tls_client_ca: Option<PathBuf>,
}

pub use battlelog_runtime::config::ConfigError;

impl Config {
    /// Defaults, then the file (when given), then `overrides`, then validation.
    pub fn load(file: Option<&Path>, overrides: &Overrides) -> Result<Self, ConfigError> {
        let mut config: Config = battlelog_runtime::config::read_file(file)?;
        config.apply(overrides);
        config.validate()?;
        Ok(config)
    }

    /// Parses a TOML file's text over the defaults.
    pub fn from_toml(text: &str) -> Result<Self, String> {
        toml::from_str(text).map_err(|e| e.to_string())
    }

    /// Applies the environment and flag layer.
    pub fn apply(&mut self, o: &Overrides) {
        overlay(&mut self.listen, &o.listen);
        overlay(&mut self.data_dir, &o.data_dir);
        if o.nats_url.is_some() {
            self.nats_url = o.nats_url.clone();
        }
        overlay(&mut self.nats_stream, &o.nats_stream);
        overlay(&mut self.nats_subject_prefix, &o.nats_subject_prefix);
        overlay(&mut self.max_commit_batch, &o.max_commit_batch);
        overlay(&mut self.cache_capacity_bytes, &o.cache_capacity_bytes);
        overlay(&mut self.max_payload_bytes, &o.max_payload_bytes);
        overlay(&mut self.max_events_per_append, &o.max_events_per_append);
        overlay(&mut self.max_append_bytes, &o.max_append_bytes);
        overlay(&mut self.max_read_count, &o.max_read_count);
        overlay(&mut self.max_read_bytes, &o.max_read_bytes);
        overlay(&mut self.log, &o.log);
        overlay(&mut self.log_format, &o.log_format);
        overlay(&mut self.auth_keys, &o.auth_keys);
        self.server_tls.apply(o.tls_cert.as_ref(), o.tls_key.as_ref(), o.tls_client_ca.as_ref());
        // An empty URL (e.g. `BATTLELOG_JOURNAL_NATS_URL=`) switches NATS off.
        if self.nats_url.as_deref().is_some_and(|u| u.trim().is_empty()) {
            self.nats_url = None;
        }
    }

    /// The input limits.
    pub fn limits(&self) -> Limits {
        Limits {
            max_payload_bytes: self.max_payload_bytes,
            max_events_per_append: self.max_events_per_append,
            max_append_bytes: self.max_append_bytes,
            max_read_count: self.max_read_count,
            max_read_bytes: self.max_read_bytes,
        }
    }

    /// Checks every value; the first problem is reported with its key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |key, message: String| Err(ConfigError::Invalid { key, message });
        if self.data_dir.as_os_str().is_empty() {
            return invalid("data_dir", "must not be empty".into());
        }
        let token_ok = |t: &str| !t.is_empty() && t.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !token_ok(&self.nats_stream) {
            return invalid("nats_stream", format!("{:?} must be 1+ characters of A-Z a-z 0-9 _ -", self.nats_stream));
        }
        if !self.nats_subject_prefix.split('.').all(token_ok) {
            return invalid(
                "nats_subject_prefix",
                format!(
                    "{:?} must be dot-separated tokens of A-Z a-z 0-9 _ - (no wildcards)",
                    self.nats_subject_prefix
                ),
            );
        }
        if !(1..=65_536).contains(&self.max_commit_batch) {
            return invalid("max_commit_batch", format!("{} is not in 1..=65536", self.max_commit_batch));
        }
        if self.cache_capacity_bytes < 1024 * 1024 {
            return invalid("cache_capacity_bytes", "must be at least 1 MiB".into());
        }
        if let Err(message) = self.limits().validate() {
            return invalid("limits", message);
        }
        if let Err(e) = tracing_subscriber::EnvFilter::try_new(&self.log) {
            return invalid("log", e.to_string());
        }
        battlelog_runtime::config::require_auth_keys(&self.auth_keys)?;
        self.server_tls.validate()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_need_only_auth_keys() {
        let error = Config::load(None, &Overrides::default()).unwrap_err();
        assert!(error.to_string().contains("auth_keys"), "{error}");
        let keys = Overrides { auth_keys: Some(vec![PathBuf::from("token.pub")]), ..Overrides::default() };
        let config = Config::load(None, &keys).unwrap();
        assert_eq!(config, Config { auth_keys: vec![PathBuf::from("token.pub")], ..Config::default() });
        assert_eq!(config.nats_url, None);
    }

    #[test]
    fn file_then_overrides() {
        let mut config = Config::from_toml(
            "listen = \"127.0.0.1:7000\"\ndata_dir = \"/srv/j\"\nnats_url = \"nats://n:4222\"\nmax_payload_bytes = 1000\n",
        )
        .unwrap();
        assert_eq!(config.listen.port(), 7000);
        assert_eq!(config.max_payload_bytes, 1000);
        assert_eq!(config.max_read_count, Limits::default().max_read_count);
        config.apply(&Overrides { listen: Some("127.0.0.1:7001".parse().unwrap()), ..Overrides::default() });
        assert_eq!(config.listen.port(), 7001);
        assert_eq!(config.data_dir, PathBuf::from("/srv/j"));
        config.apply(&Overrides { nats_url: Some(String::new()), ..Overrides::default() });
        assert_eq!(config.nats_url, None);
    }

    #[test]
    fn unknown_keys_and_bad_values_are_refused() {
        assert!(Config::from_toml("lisen = \"x\"").is_err());
        // The flattened TLS keys leave unknown keys refused, and a client
        // key has no place in the journal's config.
        assert!(Config::from_toml("tls_cert = \"c.pem\"\nlisen = \"x\"").is_err());
        assert!(Config::from_toml("tls_ca = \"ca.pem\"").is_err());
        let tls = Config::from_toml("tls_cert = \"c.pem\"\ntls_key = \"k.pem\"\nmax_commit_batch = 8").unwrap();
        assert_eq!(tls.server_tls.tls_key, Some(PathBuf::from("k.pem")));
        assert_eq!(tls.max_commit_batch, 8);
        let keyed = Config { auth_keys: vec![PathBuf::from("token.pub")], ..tls };
        keyed.validate().unwrap();
        assert!(
            Config { server_tls: ServerTls { tls_key: None, ..keyed.server_tls.clone() }, ..keyed }.validate().is_err()
        );
        let bad = [
            Config { nats_stream: "A.B".into(), ..Config::default() },
            Config { nats_subject_prefix: "a.*".into(), ..Config::default() },
            Config { max_commit_batch: 0, ..Config::default() },
            Config { max_payload_bytes: 0, ..Config::default() },
            Config { max_payload_bytes: 10, max_append_bytes: 5, ..Config::default() },
        ];
        for config in bad {
            let config = Config { auth_keys: vec![PathBuf::from("token.pub")], ..config };
            assert!(config.validate().is_err(), "{config:?}");
        }
    }
}
