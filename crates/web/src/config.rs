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
        self.http_limits.validate()?;
        self.client_tls.validate(&[("resolver_url", &self.resolver_url)])
    }
}
