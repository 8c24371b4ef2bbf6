//! Configuration: defaults ← TOML file ← `BATTLELOG_WEB_*` environment ←
//! flags, validated before anything starts (battlelog_runtime::config).

use std::net::SocketAddr;
use std::path::PathBuf;

pub use battlelog_runtime::config::{ConfigError, Layers};
pub use battlelog_runtime::http::HttpLimits;
use battlelog_runtime::logging::LogFormat;
use battlelog_runtime::tls::ClientTls;
use serde::{Deserialize, Serialize};

/// The service name in its variables (`BATTLELOG_WEB_*`).
pub const SERVICE: &str = "web";

/// The most timeline entries a page may show at once: more makes a big
/// battle's page as heavy as it was before paging.
pub const MAX_PAGE_EVENTS: usize = 5000;

/// The web service's configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// HTTP listen address.
    pub listen: SocketAddr,
    /// The resolver's gRPC endpoint: every page is read from it.
    pub resolver_url: String,
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
    /// Log filter (`RUST_LOG` wins when set).
    pub log: String,
    pub log_format: LogFormat,
    /// Timeline entries a battle page shows at once (a roll drawn inside
    /// its action counts with it); the rest are on further pages, while
    /// the page's embedded export, which the browser verifies, stays whole.
    pub page_events: usize,
    /// TLS keys for calling the resolver: `tls_ca`, `tls_client_cert`, `tls_client_key`.
    #[serde(flatten)]
    pub client_tls: ClientTls,
    /// Connection and request limits: `max_connections`,
    /// `header_read_timeout_ms`, `request_timeout_ms`.
    #[serde(flatten)]
    pub http_limits: HttpLimits,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            resolver_url: "http://127.0.0.1:50051".into(),
            token_file: None,
            share_secret_file: None,
            log: "info".into(),
            log_format: LogFormat::Text,
            page_events: crate::page::DEFAULT_PAGE_EVENTS,
            client_tls: ClientTls::default(),
            http_limits: HttpLimits::default(),
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
        if !(1..=MAX_PAGE_EVENTS).contains(&self.page_events) {
            return Err(ConfigError::Invalid {
                key: "page_events",
                message: format!("{} must be from 1 to {MAX_PAGE_EVENTS}", self.page_events),
            });
        }
        self.http_limits.validate()?;
        self.client_tls.validate(&[("resolver_url", &self.resolver_url)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(Config::default().page_events, 200);
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
        let dir = std::env::temp_dir().join(format!("battlelog-web-config-{}", std::process::id()));
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
