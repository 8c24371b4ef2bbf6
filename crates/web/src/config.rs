//! Configuration: defaults ← TOML file ← `BATTLELOG_WEB_*` environment ←
//! flags, validated before anything starts (battlelog_runtime::config).

use std::net::SocketAddr;
use std::path::PathBuf;

pub use battlelog_runtime::config::{ConfigError, Layers};
pub use battlelog_runtime::http::HttpLimits;
use battlelog_runtime::service::{Development, Shared};
use battlelog_runtime::tls::ClientTls;
use serde::{Deserialize, Deserializer, Serialize, de};

/// The service name in its variables (`BATTLELOG_WEB_*`).
pub const SERVICE: &str = "web";

/// The most timeline entries a page may show at once: more makes a big
/// battle's page as heavy as it was before paging.
pub const MAX_PAGE_EVENTS: usize = 5000;

/// `recent_exports_bytes` by default: 64 MiB, some twenty files of
/// 2 000-event battles (3.2 MB each, with their brotli form).
pub const DEFAULT_RECENT_EXPORTS_BYTES: usize = 64 << 20;

/// The development share secret's file, under `<data dir>/web`.
pub const DEVELOPMENT_SHARE_SECRET: &str = "share.secret";

/// The web service's configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// The keys every service takes: `listen`, `log`, `log_format`,
    /// `metrics_listen`, `otlp_endpoint` (battlelog_runtime::service).
    #[serde(flatten)]
    pub shared: Shared,
    /// The resolver's gRPC endpoint: every page is read from it.
    pub resolver_url: String,
    /// Connections to the resolver, a pool: calls take them in turn, and
    /// each live stream the least busy one. Keep it at least
    /// `live_max_streams` / the resolver's `max_watches_per_connection`, or
    /// the resolver refuses streams before this service does.
    pub resolver_connections: usize,
    /// File holding the `reader` token the service reads a battle with when
    /// a visitor comes with its share link, together with the link's key
    /// (a visitor's own token is used as it is). With a resolver that holds
    /// the same share secret, the key reaches its battle whatever this
    /// token's tenant.
    pub token_file: Option<PathBuf>,
    /// File holding the share secret (64 hex digits) that share links are
    /// derived from; the resolver, which puts the links in its replies,
    /// holds the same one. Rotating it revokes every link.
    pub share_secret_file: Option<PathBuf>,
    /// Timeline entries a battle page shows at once (a roll drawn inside
    /// its action counts with it); the rest are on further pages, while
    /// the export the page's verifier reads stays whole.
    pub page_events: usize,
    /// Bytes of export files (the text and its brotli form) kept of the
    /// battles pages read last, so that the export a page's verifier asks
    /// for next is not read from the resolver again (it is answered from
    /// here only once the resolver admits its caller anew, at the same
    /// head). The oldest go first; a file bigger than this is not kept; 0
    /// keeps none.
    pub recent_exports_bytes: usize,
    /// TLS keys for calling the resolver: `tls_ca`, `tls_client_cert`, `tls_client_key`.
    #[serde(flatten)]
    pub client_tls: ClientTls,
    /// Connection and request limits: `max_connections`,
    /// `header_read_timeout_ms`, `request_timeout_ms`.
    #[serde(flatten)]
    pub http_limits: HttpLimits,
    /// The roller keys (Ed25519 public keys, 64 hex digits each) whose
    /// signatures this site trusts: served at
    /// `/.well-known/battlelog/roller-keys` and given to the pages, whose
    /// verifier fails a battle signed by any other key. A list in the file,
    /// keys separated by commas in the environment or a flag.
    #[serde(deserialize_with = "comma_separated_keys")]
    pub trusted_roller_keys: Vec<String>,
    /// A file of more trusted roller keys: one per line, blank lines and
    /// `#` comments ignored (what `battlelog roller-key` prints, collected).
    pub roller_keys_file: Option<PathBuf>,
    /// Live streams (`/battles/{id}/live`) open at once on this instance;
    /// one more is refused with 503 and `Retry-After`.
    pub live_max_streams: usize,
    /// Live streams one share link holds at once, of `live_max_streams`;
    /// one more is refused with 503 and `Retry-After`.
    pub live_max_streams_per_share_key: usize,
    /// Live streams of one tenant's battles at once, of `live_max_streams`
    /// (share links and tokens together); one more is refused with 503 and
    /// `Retry-After`.
    pub live_max_streams_per_tenant: usize,
    /// Milliseconds between the keep-alive comments of a quiet live stream
    /// (so that proxies do not cut it).
    pub live_keep_alive_ms: u64,
    /// Seconds a client refused for `live_max_streams` is told to wait
    /// (`Retry-After`).
    pub live_retry_after_secs: u64,
}

/// A list in the file, or text separated by commas (`a,b`) in the
/// environment or a flag.
fn comma_separated_keys<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        Many(Vec<String>),
        Text(String),
    }
    match OneOrMany::deserialize(deserializer) {
        Ok(OneOrMany::Many(keys)) => Ok(keys),
        Ok(OneOrMany::Text(text)) => {
            Ok(text.split(',').map(str::trim).filter(|k| !k.is_empty()).map(str::to_owned).collect())
        }
        Err(_) => Err(de::Error::custom("expected a list of keys, or keys separated by commas")),
    }
}

impl Default for Config {
    fn default() -> Self {
        Self {
            shared: Shared::listening_on(SocketAddr::from(([127, 0, 0, 1], 8080))),
            resolver_url: "http://127.0.0.1:50051".into(),
            resolver_connections: 4,
            token_file: None,
            share_secret_file: None,
            page_events: crate::page::DEFAULT_PAGE_EVENTS,
            recent_exports_bytes: DEFAULT_RECENT_EXPORTS_BYTES,
            client_tls: ClientTls::default(),
            http_limits: HttpLimits::default(),
            trusted_roller_keys: Vec::new(),
            roller_keys_file: None,
            live_max_streams: 256,
            live_max_streams_per_share_key: 64,
            live_max_streams_per_tenant: 128,
            live_keep_alive_ms: 15_000,
            live_retry_after_secs: 5,
        }
    }
}

impl Config {
    /// Defaults, then the file, the environment and the flags of `layers`,
    /// then validation.
    pub fn load(layers: &Layers) -> Result<Self, ConfigError> {
        layers.load(Self::validate)
    }

    /// `battlelog up`'s web pages: listening on `listen`, reading from
    /// `resolver_url` with the `reader` token in `token_file`, share links
    /// keyed by the secret in `<data dir>/web` ([`Config::share_secret_file`]),
    /// trusting `roller_key`.
    pub fn development(
        dev: &Development,
        listen: SocketAddr,
        resolver_url: String,
        token_file: PathBuf,
        roller_key: String,
    ) -> Self {
        Self {
            shared: dev.shared(listen),
            resolver_url,
            token_file: Some(token_file),
            share_secret_file: Some(dev.dir(SERVICE).join(DEVELOPMENT_SHARE_SECRET)),
            trusted_roller_keys: vec![roller_key],
            client_tls: dev.client_tls.clone(),
            ..Self::default()
        }
    }

    /// The live streams' limits.
    pub fn live_limits(&self) -> crate::live::LiveLimits {
        crate::live::LiveLimits {
            max_streams: self.live_max_streams,
            max_streams_per_share_key: self.live_max_streams_per_share_key,
            max_streams_per_tenant: self.live_max_streams_per_tenant,
            keep_alive: std::time::Duration::from_millis(self.live_keep_alive_ms),
            retry_after_secs: self.live_retry_after_secs,
        }
    }

    /// Every trusted roller key, the configured ones then the file's, in
    /// lowercase hex, without repeats; a key that is not one fails naming it
    /// (and the file's line).
    pub fn roller_keys(&self) -> anyhow::Result<Vec<String>> {
        crate::keys::collect(&self.trusted_roller_keys, self.roller_keys_file.as_deref())
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(self.resolver_url.starts_with("http://") || self.resolver_url.starts_with("https://")) {
            return Err(ConfigError::Invalid {
                key: "resolver_url",
                message: format!("{:?} must start with http:// or https://", self.resolver_url),
            });
        }
        if self.token_file.as_ref().is_none_or(|path| path.as_os_str().is_empty()) {
            return Err(ConfigError::Invalid {
                key: "token_file",
                message: "a file holding this service's `reader` token is required \
                          (`battlelog token issue --role reader --tenant <tenant>`)"
                    .into(),
            });
        }
        if self.share_secret_file.as_ref().is_none_or(|path| path.as_os_str().is_empty()) {
            return Err(ConfigError::Invalid {
                key: "share_secret_file",
                message: "a file holding the share secret (64 hex digits, the resolver's too) is required".into(),
            });
        }
        for (key, value) in [
            ("live_max_streams", self.live_max_streams as u64),
            ("live_max_streams_per_share_key", self.live_max_streams_per_share_key as u64),
            ("live_max_streams_per_tenant", self.live_max_streams_per_tenant as u64),
            ("resolver_connections", self.resolver_connections as u64),
            ("live_keep_alive_ms", self.live_keep_alive_ms),
            ("live_retry_after_secs", self.live_retry_after_secs),
        ] {
            if value == 0 {
                return Err(ConfigError::Invalid { key, message: "must be at least 1".into() });
            }
        }
        for key in &self.trusted_roller_keys {
            crate::keys::parse(key).map_err(|message| ConfigError::Invalid { key: "trusted_roller_keys", message })?;
        }
        if !(1..=MAX_PAGE_EVENTS).contains(&self.page_events) {
            return Err(ConfigError::Invalid {
                key: "page_events",
                message: format!("{} must be from 1 to {MAX_PAGE_EVENTS}", self.page_events),
            });
        }
        self.http_limits.validate()?;
        self.shared.validate()?;
        self.client_tls.validate(&[("resolver_url", &self.resolver_url)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";
    const OTHER: &str = "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c";

    fn layers(env: &[(&str, &str)], flags: &[(&str, &str)]) -> Layers {
        let mut all = vec![("token_file", "t"), ("share_secret_file", "s")];
        all.extend_from_slice(flags);
        Layers::new(SERVICE)
            .env(env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())))
            .flags(all.into_iter().map(|(k, v)| (k.to_owned(), v.to_owned())))
    }

    #[test]
    fn the_live_limits_default_and_refuse_a_zero() {
        let config = Config::load(&layers(&[], &[])).expect("the defaults");
        assert_eq!(
            (config.live_max_streams, config.live_keep_alive_ms, config.live_retry_after_secs),
            (256, 15_000, 5)
        );
        assert!(config.trusted_roller_keys.is_empty() && config.roller_keys_file.is_none());
        assert_eq!(
            (config.live_max_streams_per_share_key, config.live_max_streams_per_tenant, config.resolver_connections),
            (64, 128, 4)
        );
        for key in [
            "live_max_streams",
            "live_max_streams_per_share_key",
            "live_max_streams_per_tenant",
            "resolver_connections",
            "live_keep_alive_ms",
            "live_retry_after_secs",
        ] {
            let error = Config::load(&layers(&[], &[(key, "0")])).expect_err(key).to_string();
            assert!(error.contains(key) && error.contains("at least 1"), "{error}");
            let config = Config::load(&layers(&[], &[(key, "1")])).expect("1 is a limit");
            let limits = config.live_limits();
            assert!(limits.max_streams >= 1 && limits.retry_after_secs >= 1);
            assert!(limits.max_streams_per_share_key >= 1 && limits.max_streams_per_tenant >= 1);
        }
        let env = [("BATTLELOG_WEB_LIVE_MAX_STREAMS", "7")];
        assert_eq!(Config::load(&layers(&env, &[])).expect("env").live_max_streams, 7);
        let flag = [("live_max_streams", "9")];
        assert_eq!(Config::load(&layers(&env, &flag)).expect("flag").live_max_streams, 9, "a flag wins");
    }

    #[test]
    fn trusted_keys_are_a_list_or_comma_separated_and_a_bad_one_is_named() {
        let env = [("BATTLELOG_WEB_TRUSTED_ROLLER_KEYS", &*format!("{KEY}, {}", OTHER.to_ascii_uppercase()))];
        let config = Config::load(&layers(&env, &[])).expect("two keys");
        assert_eq!(config.roller_keys().expect("valid"), vec![KEY.to_owned(), OTHER.to_owned()]);

        let dir = std::env::temp_dir().join(format!("battlelog-web-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a dir");
        let file = dir.join("web.toml");
        std::fs::write(&file, format!("trusted_roller_keys = [\"{KEY}\"]\n")).expect("write");
        let config = Config::load(&layers(&[], &[]).file(Some(file))).expect("a TOML list");
        assert_eq!(config.trusted_roller_keys, vec![KEY.to_owned()]);
        let _ = std::fs::remove_dir_all(&dir);

        let error = Config::load(&layers(&[], &[("trusted_roller_keys", &format!("{KEY},beef"))]))
            .expect_err("a short key")
            .to_string();
        assert!(error.contains("trusted_roller_keys") && error.contains("\"beef\""), "{error}");
        assert_eq!(error.lines().count(), 1, "one line: {error}");
    }

    /// A config that validates but for the key under test.
    fn valid() -> Config {
        Config {
            token_file: Some(PathBuf::from("web.token")),
            share_secret_file: Some(PathBuf::from("share.secret")),
            ..Config::default()
        }
    }

    #[test]
    fn page_events_is_from_1_to_its_maximum() {
        assert_eq!(Config::default().page_events, 100);
        for (page_events, ok) in [
            (0, false),
            (1, true),
            (2, true),
            (MAX_PAGE_EVENTS - 1, true),
            (MAX_PAGE_EVENTS, true),
            (MAX_PAGE_EVENTS + 1, false),
        ] {
            let result = Config { page_events, ..valid() }.validate();
            assert_eq!(result.is_ok(), ok, "page_events = {page_events}: {result:?}");
            if let Err(ConfigError::Invalid { key, .. }) = result {
                assert_eq!(key, "page_events");
            }
        }
    }

    #[test]
    fn page_events_layers_file_then_environment_then_flag() {
        let dir = std::env::temp_dir().join(format!("battlelog-web-config-page-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("web.toml");
        std::fs::write(&file, "token_file = \"t\"\nshare_secret_file = \"s\"\npage_events = 50\n").unwrap();
        let layers = Layers::new(SERVICE).file(Some(file.clone()));
        assert_eq!(Config::load(&layers).unwrap().page_events, 50);
        let layers = layers.env([("BATTLELOG_WEB_PAGE_EVENTS".to_owned(), "60".to_owned())]);
        assert_eq!(Config::load(&layers).unwrap().page_events, 60);
        let layers = layers.flags([("page_events".to_owned(), "70".to_owned())]);
        assert_eq!(Config::load(&layers).unwrap().page_events, 70);
        let zero = Layers::new(SERVICE).file(Some(file)).flags([("page_events".to_owned(), "0".to_owned())]);
        assert!(matches!(Config::load(&zero), Err(ConfigError::Invalid { key: "page_events", .. })));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
