//! The file layer of a service's configuration. The layering itself is
//! defaults ← file ← `BATTLELOG_<SERVICE>_*` environment ← flags: the file
//! is read here, and clap reads each flag or else its variable on top.

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

/// A configuration that cannot be used. Names the file or the key.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("config file {path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("invalid config {key}: {message}")]
    Invalid { key: &'static str, message: String },
}

/// Reads `path` as TOML into `T` (unknown keys are errors when `T` says
/// `deny_unknown_fields`); no path gives `T::default()`.
pub fn read_file<T: DeserializeOwned + Default>(path: Option<&Path>) -> Result<T, ConfigError> {
    let Some(path) = path else {
        return Ok(T::default());
    };
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read { path: path.to_owned(), source })?;
    toml::from_str(&text).map_err(|e| ConfigError::Parse { path: path.to_owned(), message: e.message().to_owned() })
}

/// Lays one override (a flag, or else its environment variable) over a
/// value from the defaults or the file.
pub fn overlay<T: Clone>(target: &mut T, value: &Option<T>) {
    if let Some(value) = value {
        target.clone_from(value);
    }
}

/// `auth_keys`, the public keys whose tokens a service accepts: every
/// service requires at least one, since every RPC but health and reflection
/// needs a token.
pub fn require_auth_keys(keys: &[PathBuf]) -> Result<(), ConfigError> {
    if keys.is_empty() {
        return Err(ConfigError::Invalid {
            key: "auth_keys",
            message: "at least one public key file (PEM) is required; `battlelog token keygen` makes a pair".into(),
        });
    }
    Ok(())
}

/// `token_file`, the token a service presents to the journal and roller,
/// which admit only the `service` role.
pub fn require_token_file(token_file: Option<&Path>) -> Result<(), ConfigError> {
    if token_file.is_none_or(|path| path.as_os_str().is_empty()) {
        return Err(ConfigError::Invalid {
            key: "token_file",
            message:
                "a file holding this service's `service` token is required (`battlelog token issue --role service`)"
                    .into(),
        });
    }
    Ok(())
}
