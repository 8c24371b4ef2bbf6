//! The service kit: what every battlelog service's configuration shares,
//! and the one way a service binary starts.
//!
//! - [`Shared`]: the keys of every service — `listen`, `log`,
//!   `log_format`, `metrics_listen`, `otlp_endpoint` — flattened into each
//!   service's `Config`. A key every service takes is a field here (and
//!   nowhere else): its file key, its `BATTLELOG_<SERVICE>_*` variable, its
//!   flag and its line in `docs/config.md` follow for all five services.
//! - [`Tokens`]: the keys of the services that verify callers' tokens —
//!   `auth_keys`, `token_max_lifetime_secs`, `revoked_tokens_file`,
//!   `revoked_tokens_reload_ms` — with [`Tokens::verifier`].
//! - [`Service`]: a service as its binary runs it (its name, its config
//!   type, how it loads and runs), implemented by each service's `Config`
//!   with [`service!`](crate::service!), and [`main`], the whole of a
//!   binary's `main`: flags, layers, logs and traces, the listener, the
//!   signals.
//! - [`Development`]: what `battlelog up` hands each service's own
//!   `Config::development` constructor.
//!
//! The TLS keys ([`crate::tls`]) and the connection limits
//! ([`crate::edge::GrpcLimits`], [`crate::http::HttpLimits`]) are sections
//! of their own, flattened by the services that serve gRPC or HTTP: not
//! every service takes them (the journal calls no peer, so it has no client
//! TLS keys), and a key a service does not take is refused by name.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::time::Duration;

use battlelog_auth::Verifier;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use tokio::net::TcpListener;

use crate::config::{CommandLine, ConfigError, Layers};
use crate::logging::LogFormat;
use crate::tls::ClientTls;

/// The keys every service takes. Its default listens on port 0: a service
/// sets its own port in its `Config::default` ([`Shared::listening_on`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct Shared {
    /// The listen address: gRPC for the journal, the roller and the
    /// resolver; HTTP for the web pages, and for the webhooks' `/metrics`
    /// and admin endpoints.
    pub listen: SocketAddr,
    /// Log filter, in `tracing_subscriber::EnvFilter` syntax (`RUST_LOG`
    /// wins when set).
    pub log: String,
    pub log_format: LogFormat,
    /// Where `/metrics` (Prometheus text format) is served, on its own HTTP
    /// port; None (or empty): not served. An operator's port: anyone who
    /// reaches it reads the metrics, so bind it to an internal interface.
    #[serde(deserialize_with = "crate::config::optional")]
    pub metrics_listen: Option<SocketAddr>,
    /// The OTLP/gRPC collector endpoint traces are exported to
    /// (`http://127.0.0.1:4317`); None (or empty): no traces exported.
    #[serde(deserialize_with = "crate::config::optional")]
    pub otlp_endpoint: Option<String>,
}

impl Default for Shared {
    fn default() -> Self {
        Self::listening_on(SocketAddr::from(([127, 0, 0, 1], 0)))
    }
}

impl Shared {
    /// The defaults, listening on `listen` (each service has its own port).
    pub fn listening_on(listen: SocketAddr) -> Self {
        Self { listen, log: "info".into(), log_format: LogFormat::Text, metrics_listen: None, otlp_endpoint: None }
    }

    /// `log` is a filter `tracing_subscriber` can read, and
    /// `otlp_endpoint`, when set, an `http://` URL: the exporter has no CA
    /// to trust a collector's certificate by, so an `https://` one is
    /// refused here, naming the key, rather than losing every span.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if let Err(e) = tracing_subscriber::EnvFilter::try_new(&self.log) {
            return Err(ConfigError::Invalid { key: "log", message: e.to_string() });
        }
        if let Some(endpoint) = &self.otlp_endpoint
            && !endpoint.starts_with("http://")
        {
            return Err(ConfigError::Invalid {
                key: "otlp_endpoint",
                message: format!(
                    "{endpoint:?} must start with http:// (no TLS to a collector yet: run a collector agent beside the service)"
                ),
            });
        }
        Ok(())
    }
}

/// The keys of a service that verifies its callers' tokens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct Tokens {
    /// Public key files (PEM) whose tokens are accepted; several during a
    /// key rotation.
    #[serde(deserialize_with = "crate::config::comma_separated")]
    pub auth_keys: Vec<PathBuf>,
    /// The longest a token may be valid (`exp` − `iat`), in seconds; a
    /// token valid for longer is refused (`TOKEN_LIFETIME_TOO_LONG`).
    #[serde(deserialize_with = "crate::config::number")]
    pub token_max_lifetime_secs: u64,
    /// The revocation list (battlelog_auth::revoke): tokens refused by id
    /// or subject before they expire, re-read while running. None (or
    /// empty): no list.
    #[serde(deserialize_with = "crate::config::optional")]
    pub revoked_tokens_file: Option<PathBuf>,
    /// How often, at most, the revocation list's file is looked at for
    /// changes, in milliseconds: a revocation takes effect within it.
    #[serde(deserialize_with = "crate::config::number")]
    pub revoked_tokens_reload_ms: u64,
}

impl Default for Tokens {
    fn default() -> Self {
        Self {
            auth_keys: Vec::new(),
            token_max_lifetime_secs: battlelog_auth::DEFAULT_MAX_LIFETIME.as_secs(),
            revoked_tokens_file: None,
            revoked_tokens_reload_ms: battlelog_auth::revoke::DEFAULT_RELOAD_EVERY.as_millis() as u64,
        }
    }
}

impl Tokens {
    /// Accepting the tokens signed by `auth_keys`, refusing those on
    /// `revoked_tokens_file`; the other keys at their defaults.
    pub fn accepting(auth_keys: Vec<PathBuf>, revoked_tokens_file: Option<PathBuf>) -> Self {
        Self { auth_keys, revoked_tokens_file, ..Self::default() }
    }

    /// At least one key, and a lifetime of at least a second: every RPC but
    /// health and reflection needs a token, and a token must be able to
    /// pass.
    pub fn validate(&self) -> Result<(), ConfigError> {
        crate::config::require_auth_keys(&self.auth_keys)?;
        crate::config::require_token_lifetime(self.token_max_lifetime_secs)
    }

    /// The verifier of the tokens callers present: `auth_keys`, the
    /// maximum lifetime and the revocation list as configured.
    pub fn verifier(&self) -> Result<Verifier, battlelog_auth::KeyError> {
        Verifier::configured(
            &self.auth_keys,
            Duration::from_secs(self.token_max_lifetime_secs),
            self.revoked_tokens_file.as_deref(),
            Duration::from_millis(self.revoked_tokens_reload_ms),
        )
    }
}

/// What `battlelog up` gives every service it runs in one process, for
/// each service's own development constructor (`Config::development`) to
/// build its configuration from: the stack's data directory, the
/// development token keys, the `service` token and the client TLS keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Development {
    /// The stack's data directory; a service keeps its files under
    /// `<data_dir>/<service>` ([`Development::dir`]).
    pub data_dir: PathBuf,
    /// The development signing key's public half and `up`'s revocation
    /// list.
    pub tokens: Tokens,
    /// The `service` token the services present to one another.
    pub token_file: PathBuf,
    /// The keys for calling a peer (none without `--tls`).
    pub client_tls: ClientTls,
}

impl Development {
    /// The shared keys of a service listening on `listen`, with its
    /// `/metrics` on a free loopback port (printed under its line).
    pub fn shared(&self, listen: SocketAddr) -> Shared {
        Shared { metrics_listen: Some(SocketAddr::from(([127, 0, 0, 1], 0))), ..Shared::listening_on(listen) }
    }

    /// `<data_dir>/<service>`: where `service` keeps its files.
    pub fn dir(&self, service: &str) -> PathBuf {
        self.data_dir.join(service)
    }
}

/// What stops a service: SIGINT or SIGTERM for a binary, `battlelog up`
/// stopping for the services it runs.
pub type Shutdown = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A battlelog service as its binary runs it, implemented by the service's
/// configuration type (its `Config`: every key a field, [`Shared`]
/// flattened in), so that its `main.rs` is one call to [`main`] and
/// `battlelog up` runs it as the binary would.
pub trait Service: Serialize + DeserializeOwned + Default + Send + Sync + 'static {
    /// The lowercase name: `journal`, in `BATTLELOG_JOURNAL_*`, the
    /// binary `battlelog-journal` and its metrics.
    const NAME: &'static str;
    /// Why it stopped, if it failed.
    type Error: Into<anyhow::Error>;

    /// Defaults, then the file, the environment and the flags of `layers`,
    /// then validation.
    fn load(layers: &Layers) -> Result<Self, ConfigError>;

    /// The keys every service takes.
    fn shared(&self) -> &Shared;

    /// Serves as configured on `listener` until `shutdown` resolves,
    /// printing the readiness line once everything is open.
    fn run(&self, listener: TcpListener, shutdown: Shutdown) -> impl Future<Output = Result<(), Self::Error>> + Send;
}

/// Implements [`Service`] for a service's configuration type, the same
/// way for every service: `service!(Config, SERVICE, ServeError, run)`
/// names it `SERVICE`, loads it with its own `Config::load`, takes the
/// shared keys from its `shared` field, and runs it with
/// `run(&config, listener, shutdown)`, which fails with `ServeError`.
#[macro_export]
macro_rules! service {
    ($config:ty, $name:expr, $error:ty, $run:path) => {
        impl $crate::service::Service for $config {
            const NAME: &'static str = $name;
            type Error = $error;

            fn load(layers: &$crate::config::Layers) -> Result<Self, $crate::config::ConfigError> {
                // The inherent `load`, which takes precedence over this one.
                <$config>::load(layers)
            }

            fn shared(&self) -> &$crate::service::Shared {
                &self.shared
            }

            fn run(
                &self,
                listener: ::tokio::net::TcpListener,
                shutdown: $crate::service::Shutdown,
            ) -> impl Future<Output = Result<(), Self::Error>> + Send {
                $run(self, listener, shutdown)
            }
        }
    };
}

/// A service binary's `main`: parses its command line (`--help` says
/// `about`), with `--config` and one flag per key of `S`, loads the
/// configuration from the flags, the file and the environment, starts logs
/// and traces, binds, and runs `S` until SIGINT or SIGTERM.
pub fn main<S: Service>(about: &'static str) -> anyhow::Result<()> {
    let command = clap::Command::new(format!("battlelog-{}", S::NAME)).version(crate::VERSION).about(about);
    let command_line = CommandLine::parse::<S>(S::NAME, command);
    let config = S::load(&Layers::from_process(S::NAME, command_line))?;
    tokio::runtime::Builder::new_multi_thread().enable_all().build()?.block_on(serve::<S>(&config))
}

/// Runs `S` as configured, as its binary does once its config is loaded.
async fn serve<S: Service>(config: &S) -> anyhow::Result<()> {
    let shared = config.shared();
    // `telemetry` lives until the service has stopped: dropping it flushes
    // the spans not yet exported.
    let (listener, local, telemetry) =
        crate::start(S::NAME, &shared.log, shared.log_format, shared.otlp_endpoint.as_deref(), shared.listen).await?;
    tracing::info!(%local, "battlelog-{} starting", S::NAME);
    // Installed before the readiness line, which `run` prints once every
    // file is read: a SIGTERM right after it shuts down gracefully.
    let shutdown = Box::pin(crate::shutdown_signal());
    config.run(listener, shutdown).await.map_err(Into::into)?;
    tracing::info!("battlelog-{} stopped", S::NAME);
    drop(telemetry);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A service's config as the services declare theirs.
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(default, deny_unknown_fields)]
    struct Sample {
        batch: usize,
        #[serde(flatten)]
        shared: Shared,
        #[serde(flatten)]
        tokens: Tokens,
    }

    impl Default for Sample {
        fn default() -> Self {
            Self {
                batch: 8,
                shared: Shared::listening_on(SocketAddr::from(([127, 0, 0, 1], 50099))),
                tokens: Tokens::default(),
            }
        }
    }

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn the_shared_keys_are_top_level_keys_of_the_service() {
        let keys = crate::config::keys::<Sample>();
        for key in [
            "batch",
            "listen",
            "log",
            "log_format",
            "metrics_listen",
            "otlp_endpoint",
            "auth_keys",
            "token_max_lifetime_secs",
            "revoked_tokens_file",
            "revoked_tokens_reload_ms",
        ] {
            assert!(keys.contains(&key.to_owned()), "{key} in {keys:?}");
        }
        assert_eq!(keys.len(), 10, "{keys:?}");
    }

    /// The service's own default port, not the section's, when no layer
    /// sets `listen`: a flattened section's missing keys come from the
    /// service's defaults.
    #[test]
    fn a_flattened_key_no_layer_sets_keeps_the_services_default() {
        let layers = Layers::new("sample").flags([("log".to_owned(), "debug".to_owned())]);
        let config: Sample = layers.extract().expect("extracts");
        assert_eq!(config.shared.listen, SocketAddr::from(([127, 0, 0, 1], 50099)));
        assert_eq!(config.shared.log, "debug");
        assert_eq!(config.tokens, Tokens::default());
    }

    #[test]
    fn the_shared_keys_layer_from_the_environment_and_the_flags() {
        let layers = Layers::new("sample").env(env(&[
            ("BATTLELOG_SAMPLE_LISTEN", "127.0.0.3:7"),
            ("BATTLELOG_SAMPLE_AUTH_KEYS", "a.pem,b.pem"),
            ("BATTLELOG_SAMPLE_TOKEN_MAX_LIFETIME_SECS", "60"),
            ("BATTLELOG_SAMPLE_REVOKED_TOKENS_FILE", ""),
        ]));
        let config: Sample = layers.clone().extract().expect("extracts");
        assert_eq!(config.shared.listen, SocketAddr::from(([127, 0, 0, 3], 7)));
        assert_eq!(config.tokens.auth_keys, [PathBuf::from("a.pem"), PathBuf::from("b.pem")]);
        assert_eq!(config.tokens.token_max_lifetime_secs, 60);
        assert_eq!(config.tokens.revoked_tokens_file, None, "an empty value unsets it");
        let flags = [("revoked_tokens_reload_ms", "250"), ("log_format", "json")];
        let config: Sample =
            layers.flags(flags.map(|(k, v)| (k.to_owned(), v.to_owned()))).extract().expect("extracts");
        assert_eq!(config.tokens.revoked_tokens_reload_ms, 250);
        assert_eq!(config.shared.log_format, LogFormat::Json);
    }

    #[test]
    fn a_bad_shared_value_names_its_key_and_its_layer() {
        let refused = |layers: Layers| match layers.extract::<Sample>() {
            Err(ConfigError::Value { key, origin, .. }) => (key, origin),
            other => panic!("expected a value error, got {other:?}"),
        };
        let (key, origin) = refused(Layers::new("sample").env(env(&[("BATTLELOG_SAMPLE_LISTEN", "nowhere")])));
        assert_eq!((key.as_str(), origin.as_str()), ("listen", "BATTLELOG_SAMPLE_LISTEN"));
        let (key, origin) =
            refused(Layers::new("sample").flags([("token_max_lifetime_secs".to_owned(), "long".to_owned())]));
        assert_eq!((key.as_str(), origin.as_str()), ("token_max_lifetime_secs", "--token-max-lifetime-secs"));
    }

    #[test]
    fn the_shared_checks_name_their_keys() {
        let bad_log = Shared { log: "a=b=c".into(), ..Shared::default() };
        assert!(bad_log.validate().expect_err("not a filter").to_string().contains("invalid config log:"));
        assert!(Shared::default().validate().is_ok());
        let no_keys = Tokens::default().validate().expect_err("no keys").to_string();
        assert!(no_keys.contains("auth_keys"), "{no_keys}");
        let keyed = Tokens::accepting(vec![PathBuf::from("a.pem")], None);
        assert!(keyed.validate().is_ok());
        let never = Tokens { token_max_lifetime_secs: 0, ..keyed };
        assert!(never.validate().expect_err("0 s").to_string().contains("token_max_lifetime_secs"));
    }

    #[test]
    fn the_verifier_reads_the_configured_keys() {
        let missing = Tokens::accepting(vec![PathBuf::from("/nonexistent/key.pem")], None);
        assert!(missing.verifier().is_err(), "a key file that is not there");
        let dir = tempfile::tempdir().expect("temp dir");
        let key = battlelog_auth::SigningKey::read_or_create(&dir.path().join("signing.key")).expect("a key");
        let public = dir.path().join("signing.pub");
        std::fs::write(&public, key.public_pem()).expect("write");
        let tokens = Tokens::accepting(vec![public], None);
        let token = key.issue("sub", "tenant", battlelog_auth::Role::Reader, Duration::from_secs(60)).expect("a token");
        let verifier = tokens.verifier().expect("the key reads");
        assert!(verifier.verify(&token).is_ok(), "a token signed by the configured key passes");
    }

    #[test]
    fn the_observability_keys_layer_like_the_others_and_empty_unsets_them() {
        let unset: Sample = Layers::new("sample").extract().unwrap();
        assert_eq!((unset.shared.metrics_listen, unset.shared.otlp_endpoint), (None, None));
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("sample.toml");
        std::fs::write(&path, "metrics_listen = \"127.0.0.1:9101\"\notlp_endpoint = \"http://collector:4317\"\n")
            .expect("write");
        let from_file: Sample = Layers::new("sample").file(Some(path.clone())).extract().unwrap();
        assert_eq!(from_file.shared.metrics_listen, Some(SocketAddr::from(([127, 0, 0, 1], 9101))));
        assert_eq!(from_file.shared.otlp_endpoint.as_deref(), Some("http://collector:4317"));
        let layers = Layers::new("sample")
            .file(Some(path))
            .env(env(&[("BATTLELOG_SAMPLE_METRICS_LISTEN", "127.0.0.2:0"), ("BATTLELOG_SAMPLE_OTLP_ENDPOINT", "")]));
        let from_env: Sample = layers.extract().unwrap();
        assert_eq!(from_env.shared.metrics_listen, Some(SocketAddr::from(([127, 0, 0, 2], 0))));
        assert_eq!(from_env.shared.otlp_endpoint, None, "an empty variable unsets the file's endpoint");
        let from_flags: Sample =
            layers.flags([("metrics_listen".to_owned(), "127.0.0.3:0".to_owned())]).extract().unwrap();
        assert_eq!(from_flags.shared.metrics_listen, Some(SocketAddr::from(([127, 0, 0, 3], 0))));

        let flags = [("metrics_listen".to_owned(), "nowhere".to_owned())];
        let error = Layers::new("sample").flags(flags).extract::<Sample>().expect_err("not an address").to_string();
        assert!(error.contains("metrics_listen") && error.contains("nowhere"), "{error}");
    }

    #[test]
    fn an_otlp_endpoint_must_be_an_http_url() {
        for good in [None, Some("http://127.0.0.1:4317"), Some("http://collector.internal:4317")] {
            let shared = Shared { otlp_endpoint: good.map(str::to_owned), ..Shared::default() };
            assert!(shared.validate().is_ok(), "{good:?}");
        }
        for bad in ["127.0.0.1:4317", "grpc://collector:4317", "ftp://x", "https://collector.internal:4317"] {
            let shared = Shared { otlp_endpoint: Some(bad.to_owned()), ..Shared::default() };
            let error = shared.validate().expect_err(bad).to_string();
            assert!(error.starts_with("invalid config otlp_endpoint:") && error.contains(bad), "{error}");
        }
    }

    #[test]
    fn a_development_service_serves_its_metrics_on_a_free_port_and_keeps_its_files_apart() {
        let dev = Development {
            data_dir: PathBuf::from("data"),
            tokens: Tokens::accepting(vec![PathBuf::from("data/signing.pub")], None),
            token_file: PathBuf::from("data/tokens/service.token"),
            client_tls: ClientTls::default(),
        };
        let listen = SocketAddr::from(([127, 0, 0, 1], 50053));
        let shared = dev.shared(listen);
        assert_eq!(shared.listen, listen);
        assert_eq!(shared.metrics_listen, Some(SocketAddr::from(([127, 0, 0, 1], 0))));
        assert_eq!((shared.log.as_str(), shared.otlp_endpoint.as_deref()), ("info", None));
        assert!(shared.validate().is_ok());
        assert_eq!(dev.dir("journal"), PathBuf::from("data/journal"));
    }
}
