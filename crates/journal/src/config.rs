//! Configuration: defaults ← TOML file ← `BATTLELOG_JOURNAL_*` environment ←
//! command-line flags, validated before anything starts.
//!
//! Every key is a field of [`Config`], and has the same name in the file
//! (`data_dir`), the environment (`BATTLELOG_JOURNAL_DATA_DIR`) and the flags
//! (`--data-dir`): the layering is `battlelog_runtime::config`'s.

use std::net::SocketAddr;
use std::path::PathBuf;

pub use battlelog_runtime::config::Layers;
use battlelog_runtime::tls::ServerTls;
use serde::{Deserialize, Serialize};

use crate::limits::Limits;

use battlelog_runtime::edge::GrpcLimits;
pub use battlelog_runtime::logging::LogFormat;
use battlelog_runtime::service::{Development, Shared, Tokens};

/// The service name in its variables (`BATTLELOG_JOURNAL_*`).
pub const SERVICE: &str = "journal";

/// Where the journal keeps its log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// sled in `data_dir`: one process, one machine; committed events fan out
    /// to NATS (when `nats_url` is set) through the outbox.
    #[default]
    Sled,
    /// A NATS JetStream stream (`jetstream_stream`) at `nats_url`: several
    /// journals may serve it at once, and it is itself the fan-out
    /// (`crate::store::jetstream`).
    Jetstream,
}

/// Where `battlelog up`'s journal keeps its log ([`Config::development`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DevelopmentLog {
    /// sled under `<data dir>/journal`, fanned out to NATS when a URL is
    /// given.
    Sled { nats_url: Option<String> },
    /// The JetStream stream at `nats_url`, with `replicas` copies when the
    /// journal creates it.
    Jetstream { nats_url: String, replicas: usize },
}

/// The journal's configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// The keys every service takes: `listen`, `log`, `log_format`,
    /// `metrics_listen`, `otlp_endpoint` (battlelog_runtime::service).
    #[serde(flatten)]
    pub shared: Shared,
    /// Token verification (only the `service` role is admitted):
    /// `auth_keys`, `token_max_lifetime_secs`, `revoked_tokens_*`
    /// (battlelog_runtime::service).
    #[serde(flatten)]
    pub tokens: Tokens,
    /// Where the log is kept: `sled` (default) or `jetstream`.
    pub backend: Backend,
    /// The sled directory (backend `sled`).
    pub data_dir: PathBuf,
    /// NATS server URL; none runs without NATS (events wait in the outbox).
    /// With backend `jetstream`, required: the log's NATS, one URL or
    /// several comma-separated (any nodes of the cluster).
    pub nats_url: Option<String>,
    /// Backend `jetstream`: the JetStream stream holding the log (created
    /// when missing).
    pub jetstream_stream: String,
    /// Backend `jetstream`: the stream's replicas when this journal creates
    /// it (1 on one server, 3 on a three-node cluster).
    pub replicas: usize,
    /// Backend `jetstream`: most battles whose index (head, idempotency
    /// keys) a journal keeps in memory; the least recently used go first.
    pub jetstream_cache_streams: usize,
    /// Backend `jetstream`: how long one JetStream request (a publish's
    /// acknowledgement, a read) may take, in milliseconds.
    pub jetstream_timeout_ms: u64,
    /// Backend `jetstream`: how long the journal waits at start, in
    /// milliseconds, for the cluster to find or create its stream while
    /// the cluster cannot yet (no meta leader, too few nodes for the
    /// replicas, requests timing out); 0 gives up at the first such answer.
    pub jetstream_start_wait_ms: u64,
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
    /// Largest sum of payload bytes in one append, and in one batch. Backend
    /// `jetstream`: lowered at start, and logged, where the largest append
    /// would not fit one message under the NATS server's `max_payload`.
    pub max_append_bytes: usize,
    /// Most appends in one `AppendBatch`.
    pub max_appends_per_batch: usize,
    /// Most events one read returns.
    pub max_read_count: usize,
    /// Bytes a read page may weigh as sent (it returns at least one event).
    pub max_read_bytes: usize,
    /// Most events one battle may hold.
    pub max_battle_events: u64,
    /// Most record bytes one battle may hold.
    pub max_battle_bytes: u64,
    /// About how much memory the battle index (listings) may take; past it
    /// the battles opened longest ago are forgotten (`crate::index`).
    pub battle_index_bytes: usize,
    /// The transparency log's origin (docs/protocol.md §5): the name its
    /// checkpoints and verifier key carry. None: the key's own origin, and
    /// `battlelog.local/journal` for a generated key. Set, a key of another
    /// origin is refused at start.
    pub log_origin: Option<String>,
    /// The log key: a signed-note private key file
    /// (`PRIVATE+KEY+<origin>+<key id>+<key>`). None: the key text in
    /// `BATTLELOG_JOURNAL_LOG_KEY`, else `<data_dir>/log.key`, generated the
    /// first time (journals sharing a JetStream log must be given one key).
    pub log_key_file: Option<PathBuf>,
    /// How often a new checkpoint is signed while the log grows, in
    /// milliseconds (10..=60000).
    pub checkpoint_interval_ms: u64,
    /// TLS keys `tls_cert`, `tls_key`, `tls_client_ca` (battlelog_runtime::tls).
    #[serde(flatten)]
    pub server_tls: ServerTls,
    /// Connection and request limits: `max_connections`,
    /// `first_request_timeout_ms`, `keepalive_*`, … (battlelog_runtime::edge).
    #[serde(flatten)]
    pub grpc_limits: GrpcLimits,
}

impl Default for Config {
    fn default() -> Self {
        let limits = Limits::default();
        Self {
            shared: Shared::listening_on(SocketAddr::from(([127, 0, 0, 1], 50053))),
            tokens: Tokens::default(),
            backend: Backend::Sled,
            data_dir: PathBuf::from("data/journal"),
            nats_url: None,
            jetstream_stream: crate::store::jetstream::DEFAULT_STREAM.into(),
            replicas: 1,
            jetstream_cache_streams: 10_000,
            jetstream_timeout_ms: 5_000,
            jetstream_start_wait_ms: 60_000,
            nats_stream: "BATTLELOG_EVENTS".into(),
            nats_subject_prefix: "battlelog.events".into(),
            max_commit_batch: 1024,
            cache_capacity_bytes: 256 * 1024 * 1024,
            max_payload_bytes: limits.max_payload_bytes,
            max_events_per_append: limits.max_events_per_append,
            max_append_bytes: limits.max_append_bytes,
            max_appends_per_batch: limits.max_appends_per_batch,
            max_read_count: limits.max_read_count,
            max_read_bytes: limits.max_read_bytes,
            max_battle_events: limits.max_battle_events,
            max_battle_bytes: limits.max_battle_bytes,
            battle_index_bytes: crate::index::DEFAULT_INDEX_BYTES,
            log_origin: None,
            log_key_file: None,
            checkpoint_interval_ms: crate::merkle_log::DEFAULT_CHECKPOINT_INTERVAL.as_millis() as u64,
            server_tls: ServerTls::default(),
            grpc_limits: GrpcLimits::default(),
        }
    }
}

pub use battlelog_runtime::config::ConfigError;

/// The log key may also come from this variable (the key's text, as in a
/// `log_key_file`), so that a secret store can inject it without a file; it
/// is never a flag, which `ps` shows.
pub const LOG_KEY_ENV: &str = "BATTLELOG_JOURNAL_LOG_KEY";

/// Where the journal keeps the log key it generates (no key configured),
/// under `data_dir`.
pub const GENERATED_LOG_KEY_FILE: &str = "log.key";

impl Config {
    /// Defaults, then the file, the environment and the flags of `layers`,
    /// then validation.
    pub fn load(layers: &Layers) -> Result<Self, ConfigError> {
        let mut config: Config = layers.extract()?;
        config.log_key_file = config.log_key_file.filter(|path| !path.as_os_str().is_empty());
        // An empty URL (e.g. `BATTLELOG_JOURNAL_NATS_URL=`) switches NATS off.
        if config.nats_url.as_deref().is_some_and(|u| u.trim().is_empty()) {
            config.nats_url = None;
        }
        config.validate()?;
        Ok(config)
    }

    /// `battlelog up`'s journal: listening on `listen` with `server_tls`,
    /// its log as `log` says, its sled under `<data dir>/journal`,
    /// accepting the development tokens; every other key at its default.
    pub fn development(dev: &Development, listen: SocketAddr, server_tls: ServerTls, log: DevelopmentLog) -> Self {
        let (backend, nats_url, replicas) = match log {
            DevelopmentLog::Sled { nats_url } => (Backend::Sled, nats_url, 1),
            DevelopmentLog::Jetstream { nats_url, replicas } => (Backend::Jetstream, Some(nats_url), replicas),
        };
        Self {
            shared: dev.shared(listen),
            tokens: dev.tokens.clone(),
            backend,
            data_dir: dev.dir(SERVICE),
            nats_url,
            replicas,
            server_tls,
            ..Self::default()
        }
    }

    /// The JetStream store's options (backend `jetstream`).
    pub fn jetstream_options(&self) -> Option<crate::store::jetstream::JetStreamOptions> {
        let url = self.nats_url.as_ref().filter(|_| self.backend == Backend::Jetstream)?;
        Some(crate::store::jetstream::JetStreamOptions {
            nats_urls: url.clone(),
            stream: self.jetstream_stream.clone(),
            replicas: self.replicas,
            max_events_per_append: self.max_events_per_append,
            max_payload_bytes: self.max_payload_bytes,
            max_append_bytes: self.max_append_bytes,
            cache_streams: self.jetstream_cache_streams,
            timeout: std::time::Duration::from_millis(self.jetstream_timeout_ms),
            start_wait: std::time::Duration::from_millis(self.jetstream_start_wait_ms),
        })
    }

    /// The input limits.
    pub fn limits(&self) -> Limits {
        Limits {
            max_payload_bytes: self.max_payload_bytes,
            max_events_per_append: self.max_events_per_append,
            max_append_bytes: self.max_append_bytes,
            max_appends_per_batch: self.max_appends_per_batch,
            max_read_count: self.max_read_count,
            max_read_bytes: self.max_read_bytes,
            max_battle_events: self.max_battle_events,
            max_battle_bytes: self.max_battle_bytes,
        }
    }

    /// The transparency log's key: `log_key_file`, else the text in
    /// [`LOG_KEY_ENV`], else `<data_dir>/log.key`, read or generated the
    /// first time; checked against `log_origin` when that is set. (Journals
    /// sharing one JetStream log must share one key: give them one; a
    /// generated key is per process, which `run` warns about.)
    pub fn log_key(&self) -> Result<battlelog_tlog::LogKey, ConfigError> {
        self.log_key_from(std::env::var(LOG_KEY_ENV).ok())
    }

    /// [`Self::log_key`] with the variable's value given (for tests).
    pub fn log_key_from(&self, env_key: Option<String>) -> Result<battlelog_tlog::LogKey, ConfigError> {
        let invalid = |key, message: String| ConfigError::Invalid { key, message };
        let env_key = env_key.filter(|text| !text.trim().is_empty());
        let key = match (&self.log_key_file, env_key) {
            (Some(path), _) => crate::merkle_log::read_key_file(path).map_err(|e| invalid("log_key_file", e))?,
            (None, Some(text)) => battlelog_tlog::LogKey::parse(&text)
                .map_err(|e| invalid("log_key_file", format!("{LOG_KEY_ENV} holds no usable log key: {e}")))?,
            (None, None) => {
                let origin = self.log_origin.as_deref().unwrap_or(battlelog_tlog::DEFAULT_ORIGIN);
                let path = self.data_dir.join(GENERATED_LOG_KEY_FILE);
                crate::merkle_log::read_or_create_key(&path, origin).map_err(|e| invalid("log_key_file", e))?
            }
        };
        if let Some(origin) = &self.log_origin
            && key.origin() != origin
        {
            return Err(invalid(
                "log_origin",
                format!("is {origin:?} but the log key (log_key_file) is for origin {:?}", key.origin()),
            ));
        }
        Ok(key)
    }

    /// Checks every value; the first problem is reported with its key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |key, message: String| Err(ConfigError::Invalid { key, message });
        if self.data_dir.as_os_str().is_empty() {
            return invalid("data_dir", "must not be empty".into());
        }
        let token_ok = |t: &str| !t.is_empty() && t.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if self.backend == Backend::Jetstream && self.nats_url.is_none() {
            return invalid("nats_url", "backend jetstream keeps the log in NATS: a NATS URL is required".into());
        }
        if let Some(urls) = &self.nats_url {
            battlelog_runtime::nats_url::NatsUrls::for_key("nats_url", urls)?;
        }
        if !token_ok(&self.jetstream_stream) {
            return invalid(
                "jetstream_stream",
                format!("{:?} must be 1+ characters of A-Z a-z 0-9 _ -", self.jetstream_stream),
            );
        }
        if self.backend == Backend::Jetstream && self.jetstream_stream == self.nats_stream {
            return invalid("jetstream_stream", "must differ from nats_stream (the sled outbox's fan-out)".into());
        }
        if !(1..=5).contains(&self.replicas) {
            return invalid("replicas", format!("{} is not in 1..=5 (JetStream's range)", self.replicas));
        }
        if self.jetstream_cache_streams == 0 {
            return invalid("jetstream_cache_streams", "must be at least 1".into());
        }
        if !(100..=600_000).contains(&self.jetstream_timeout_ms) {
            return invalid("jetstream_timeout_ms", format!("{} is not in 100..=600000", self.jetstream_timeout_ms));
        }
        if self.jetstream_start_wait_ms > 3_600_000 {
            return invalid(
                "jetstream_start_wait_ms",
                format!("{} is not in 0..=3600000", self.jetstream_start_wait_ms),
            );
        }
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
        if self.battle_index_bytes == 0 {
            return invalid("battle_index_bytes", "must be at least 1".into());
        }
        if let Some(origin) = &self.log_origin
            && let Err(message) = crate::merkle_log::check_origin(origin)
        {
            return invalid("log_origin", message);
        }
        let interval = crate::merkle_log::CHECKPOINT_INTERVAL_MS;
        if !interval.contains(&self.checkpoint_interval_ms) {
            return invalid(
                "checkpoint_interval_ms",
                format!("{} is not in {}..={}", self.checkpoint_interval_ms, interval.start(), interval.end()),
            );
        }
        if let Err(message) = self.limits().validate() {
            return invalid("limits", message);
        }
        self.shared.validate()?;
        self.tokens.validate()?;
        self.grpc_limits.validate()?;
        self.server_tls.validate()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Accepting the tokens of `token.pub`.
    fn keyed_tokens() -> Tokens {
        Tokens::accepting(vec![PathBuf::from("token.pub")], None)
    }

    fn keyed() -> Layers {
        Layers::new(SERVICE).flags([("auth_keys".to_owned(), "token.pub".to_owned())])
    }

    fn with_file(layers: Layers, text: &str) -> (tempfile::TempDir, Layers) {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("journal.toml");
        std::fs::write(&path, text).expect("write the file");
        (dir, layers.file(Some(path)))
    }

    fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn defaults_need_only_auth_keys() {
        let error = Config::load(&Layers::new(SERVICE)).unwrap_err();
        assert!(error.to_string().contains("auth_keys"), "{error}");
        let config = Config::load(&keyed()).unwrap();
        assert_eq!(config, Config { tokens: keyed_tokens(), ..Config::default() });
        assert_eq!(config.nats_url, None);
    }

    #[test]
    fn file_then_environment_then_flags() {
        let text = "listen = \"127.0.0.1:7000\"\ndata_dir = \"/srv/j\"\nnats_url = \"nats://n:4222\"\nmax_payload_bytes = 300000\n";
        let (_dir, layers) = with_file(keyed(), text);
        let config = Config::load(&layers).unwrap();
        assert_eq!(config.shared.listen.port(), 7000);
        assert_eq!(config.max_payload_bytes, 300_000);
        assert_eq!(config.max_read_count, Limits::default().max_read_count);
        assert_eq!(config.nats_url.as_deref(), Some("nats://n:4222"));

        let layers = layers.env(vars(&[
            ("BATTLELOG_JOURNAL_LISTEN", "127.0.0.1:7001"),
            ("BATTLELOG_JOURNAL_MAX_COMMIT_BATCH", "8"),
            ("BATTLELOG_JOURNAL_AUTH_KEYS", "a.pub,b.pub"),
            // An empty URL switches NATS off.
            ("BATTLELOG_JOURNAL_NATS_URL", ""),
        ]));
        let config = Config::load(&layers).unwrap();
        assert_eq!((config.shared.listen.port(), config.max_commit_batch), (7001, 8));
        assert_eq!(config.data_dir, PathBuf::from("/srv/j"));
        assert_eq!(config.nats_url, None);
        assert_eq!(config.tokens.auth_keys, [PathBuf::from("token.pub")], "the flag wins over the variable");
        let config = Config::load(&layers.flags(vars(&[("listen", "127.0.0.1:7002")]))).unwrap();
        assert_eq!(config.shared.listen.port(), 7002);
        assert_eq!(config.tokens.auth_keys, [PathBuf::from("a.pub"), PathBuf::from("b.pub")]);
    }

    #[test]
    fn the_jetstream_backend_needs_nats_and_takes_its_keys_from_every_layer() {
        let jetstream = keyed().env(vars(&[("BATTLELOG_JOURNAL_BACKEND", "jetstream")]));
        let error = Config::load(&jetstream).unwrap_err().to_string();
        assert!(error.contains("nats_url"), "{error}");
        let layers = jetstream.env(vars(&[
            ("BATTLELOG_JOURNAL_BACKEND", "jetstream"),
            ("BATTLELOG_JOURNAL_NATS_URL", "nats://a:4222,nats://b:4222"),
            ("BATTLELOG_JOURNAL_REPLICAS", "3"),
            ("BATTLELOG_JOURNAL_JETSTREAM_STREAM", "LOG"),
        ]));
        let config = Config::load(&layers).unwrap();
        assert_eq!(config.backend, Backend::Jetstream);
        let options = config.jetstream_options().expect("jetstream options");
        assert_eq!(
            (options.nats_urls.as_str(), options.replicas, options.stream.as_str()),
            ("nats://a:4222,nats://b:4222", 3, "LOG")
        );
        assert_eq!(options.timeout.as_millis(), 5_000);
        // sled (the default) has none, NATS or not.
        let sled = Config::load(&keyed().env(vars(&[("BATTLELOG_JOURNAL_NATS_URL", "nats://a:4222")]))).unwrap();
        assert_eq!((sled.backend, sled.jetstream_options().is_none()), (Backend::Sled, true));
        let (_dir, file) = with_file(keyed(), "backend = \"etcd\"");
        assert!(matches!(file.extract::<Config>(), Err(ConfigError::Value { key, .. }) if key == "backend"));
    }

    #[test]
    fn jetstream_keys_are_checked_at_their_edges() {
        let base = Config {
            tokens: keyed_tokens(),
            backend: Backend::Jetstream,
            nats_url: Some("nats://a:4222".into()),
            ..Config::default()
        };
        let ok = |config: Config| config.validate().map_err(|e| e.to_string());
        for (replicas, valid) in [(0, false), (1, true), (5, true), (6, false)] {
            assert_eq!(ok(Config { replicas, ..base.clone() }).is_ok(), valid, "replicas {replicas}");
        }
        for (ms, valid) in [(99, false), (100, true), (600_000, true), (600_001, false)] {
            assert_eq!(ok(Config { jetstream_timeout_ms: ms, ..base.clone() }).is_ok(), valid, "timeout {ms}");
        }
        for (ms, valid) in [(0, true), (3_600_000, true), (3_600_001, false)] {
            let checked = ok(Config { jetstream_start_wait_ms: ms, ..base.clone() });
            assert_eq!(checked.is_ok(), valid, "start wait {ms}");
            if let Err(e) = checked {
                assert!(e.contains("jetstream_start_wait_ms") && e.contains("0..=3600000"), "{e}");
            }
        }
        assert!(
            ok(Config { jetstream_cache_streams: 0, ..base.clone() }).unwrap_err().contains("jetstream_cache_streams")
        );
        assert!(ok(Config { jetstream_cache_streams: 1, ..base.clone() }).is_ok());
        assert!(
            ok(Config { jetstream_stream: "a.b".into(), ..base.clone() }).unwrap_err().contains("jetstream_stream")
        );
        let same = Config { jetstream_stream: base.nats_stream.clone(), ..base.clone() };
        assert!(ok(same).unwrap_err().contains("jetstream_stream"));
    }

    #[test]
    fn unknown_keys_and_bad_values_are_refused_by_key() {
        let key_of = |text: &str| match with_file(keyed(), text).1.extract::<Config>() {
            Err(ConfigError::Value { key, .. }) => key,
            other => panic!("{text:?} is refused, not {other:?}"),
        };
        assert_eq!(key_of("lisen = \"x\""), "lisen");
        // The flattened TLS keys leave unknown keys refused, and a client
        // key has no place in the journal's config.
        assert_eq!(key_of("tls_cert = \"c.pem\"\nlisen = \"x\""), "lisen");
        assert_eq!(key_of("tls_ca = \"ca.pem\""), "tls_ca");
        assert_eq!(key_of("max_commit_batch = \"eight\""), "max_commit_batch");
        assert_eq!(key_of("log_format = \"xml\""), "log_format");
        let env = keyed().env(vars(&[("BATTLELOG_JOURNAL_CACHE_CAPACITY_BYTES", "lots")]));
        let error = Config::load(&env).unwrap_err().to_string();
        assert!(
            error.contains("cache_capacity_bytes") && error.contains("BATTLELOG_JOURNAL_CACHE_CAPACITY_BYTES"),
            "{error}"
        );

        let (_dir, tls) = with_file(keyed(), "tls_cert = \"c.pem\"\ntls_key = \"k.pem\"\nmax_commit_batch = 8");
        let tls = Config::load(&tls).unwrap();
        assert_eq!(tls.server_tls.tls_key, Some(PathBuf::from("k.pem")));
        assert_eq!(tls.max_commit_batch, 8);
        assert!(
            Config { server_tls: ServerTls { tls_key: None, ..tls.server_tls.clone() }, ..tls.clone() }
                .validate()
                .is_err()
        );
        let bad = [
            Config { nats_stream: "A.B".into(), ..Config::default() },
            Config { nats_subject_prefix: "a.*".into(), ..Config::default() },
            Config { max_commit_batch: 0, ..Config::default() },
            Config { max_payload_bytes: 0, ..Config::default() },
            Config { max_payload_bytes: 10, max_append_bytes: 5, ..Config::default() },
        ];
        for config in bad {
            let config = Config { tokens: keyed_tokens(), ..config };
            assert!(config.validate().is_err(), "{config:?}");
        }
    }

    /// `battle_index_bytes` layers like every key and needs at least 1.
    #[test]
    fn battle_index_bytes_needs_at_least_one() {
        let layered = |value: &str| {
            Config::load(&Layers::new(SERVICE).flags([
                ("auth_keys".to_owned(), "token.pub".to_owned()),
                ("battle_index_bytes".to_owned(), value.to_owned()),
            ]))
        };
        assert_eq!(Config::default().battle_index_bytes, crate::index::DEFAULT_INDEX_BYTES);
        assert_eq!(layered("1").expect("1 is enough").battle_index_bytes, 1);
        let err = layered("0").expect_err("0 is refused").to_string();
        assert!(err.contains("battle_index_bytes"), "{err}");
    }

    /// `log_origin` and `checkpoint_interval_ms` layer like every key and
    /// are checked at their edges.
    #[test]
    fn transparency_keys_are_checked_at_their_edges() {
        let layered = |key: &str, value: &str| {
            Config::load(&keyed().env(vars(&[(&format!("BATTLELOG_JOURNAL_{}", key.to_uppercase()), value)])))
        };
        let defaults = Config::load(&keyed()).unwrap();
        assert_eq!((defaults.log_origin, defaults.log_key_file, defaults.checkpoint_interval_ms), (None, None, 1000));
        for (ms, valid) in [("9", false), ("10", true), ("60000", true), ("60001", false)] {
            let loaded = layered("checkpoint_interval_ms", ms);
            assert_eq!(loaded.is_ok(), valid, "checkpoint_interval_ms {ms}");
            if let Err(e) = loaded {
                assert!(e.to_string().contains("checkpoint_interval_ms"), "{e}");
            }
        }
        let longest = "o".repeat(255);
        assert_eq!(layered("log_origin", &longest).unwrap().log_origin.as_deref(), Some(longest.as_str()));
        for bad in ["o".repeat(256), String::new(), "a b".into(), "a+b".into(), "a\nb".into()] {
            let err = layered("log_origin", &bad).expect_err("refused").to_string();
            assert!(err.contains("log_origin"), "{bad:?}: {err}");
        }
        let (_dir, file) = with_file(keyed(), "log_key_file = \"/keys/log.key\"\ncheckpoint_interval_ms = 250");
        let config = Config::load(&file).unwrap();
        assert_eq!(config.log_key_file, Some(PathBuf::from("/keys/log.key")));
        assert_eq!(config.checkpoint_interval_ms, 250);
        let unset = Config::load(&file.env(vars(&[("BATTLELOG_JOURNAL_LOG_KEY_FILE", "")]))).unwrap();
        assert_eq!(unset.log_key_file, None, "an empty value unsets it");
    }

    /// Where the log key comes from: the file, else the variable, else the
    /// data dir (sled only), always checked against `log_origin`.
    #[test]
    fn the_log_key_comes_from_the_file_the_variable_or_the_data_dir() {
        let dir = tempfile::tempdir().unwrap();
        let base = Config { tokens: keyed_tokens(), data_dir: dir.path().join("data"), ..Config::default() };
        // Generated once under the data dir, then reused.
        let generated = base.log_key_from(None).unwrap();
        assert_eq!(generated.origin(), battlelog_tlog::DEFAULT_ORIGIN);
        assert!(dir.path().join("data").join(GENERATED_LOG_KEY_FILE).is_file());
        assert_eq!(base.log_key_from(None).unwrap().verifier_key(), generated.verifier_key());
        let named = Config { log_origin: Some("forum.example/journal".into()), ..base.clone() };
        let err = named.log_key_from(None).unwrap_err().to_string();
        assert!(err.contains("forum.example/journal") && err.contains(battlelog_tlog::DEFAULT_ORIGIN), "{err}");
        assert!(err.contains("log_origin"), "{err}");

        let other = battlelog_tlog::LogKey::from_seed("forum.example/journal", [3; 32]).unwrap();
        // The variable, over the data dir's key.
        let from_env = named.log_key_from(Some(other.to_text())).unwrap();
        assert_eq!(from_env.verifier_key(), other.verifier_key());
        let err = named.log_key_from(Some("not a key".into())).unwrap_err().to_string();
        assert!(err.contains("log_key_file") && err.contains(LOG_KEY_ENV), "{err}");
        // The file, over the variable.
        let path = dir.path().join("other.key");
        std::fs::write(&path, format!("{}\n", other.to_text())).unwrap();
        let with_file = Config { log_key_file: Some(path.clone()), ..base.clone() };
        let env_key = battlelog_tlog::LogKey::from_seed("env.example/journal", [4; 32]).unwrap();
        let from_file = with_file.log_key_from(Some(env_key.to_text())).unwrap();
        assert_eq!(from_file.verifier_key(), other.verifier_key());
        let missing = Config { log_key_file: Some(dir.path().join("missing.key")), ..base.clone() };
        let err = missing.log_key_from(None).unwrap_err().to_string();
        assert!(err.contains("log_key_file") && err.contains("missing.key"), "{err}");

        // JetStream too keeps a generated key in the data dir (a given key
        // is what journals sharing the log need; `run` warns without one).
        let jetstream = Config { backend: Backend::Jetstream, nats_url: Some("nats://a:4222".into()), ..base };
        assert_eq!(jetstream.log_key_from(None).unwrap().verifier_key(), generated.verifier_key());
        assert_eq!(jetstream.log_key_from(Some(other.to_text())).unwrap().origin(), "forum.example/journal");
    }

    /// `battlelog up`'s journal: its backend and NATS as asked, its sled
    /// under the stack's data dir, the development tokens; valid as built.
    #[test]
    fn the_development_journal_is_valid_and_keeps_its_log_where_asked() {
        let dev = Development {
            data_dir: PathBuf::from("stack"),
            tokens: keyed_tokens(),
            token_file: PathBuf::from("stack/tokens/service.token"),
            client_tls: Default::default(),
        };
        let listen = SocketAddr::from(([127, 0, 0, 1], 7000));
        let sled = Config::development(&dev, listen, ServerTls::default(), DevelopmentLog::Sled { nats_url: None });
        sled.validate().expect("valid");
        assert_eq!((sled.backend, sled.nats_url.as_deref()), (Backend::Sled, None));
        assert_eq!((sled.shared.listen, sled.data_dir.clone()), (listen, PathBuf::from("stack/journal")));
        assert_eq!(sled.tokens, keyed_tokens());
        let log = DevelopmentLog::Jetstream { nats_url: "nats://a:4222".into(), replicas: 3 };
        let jetstream = Config::development(&dev, listen, ServerTls::default(), log);
        jetstream.validate().expect("valid");
        let options = jetstream.jetstream_options().expect("the JetStream log");
        assert_eq!((options.nats_urls.as_str(), options.replicas), ("nats://a:4222", 3));
    }
}
