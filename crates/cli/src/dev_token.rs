//! The development tokens of `battlelog up`: where it keeps its token
//! signing key and revocation list under its data dir, and the token a
//! command mints with that key when it is given none (`--token`).

use std::path::{Path, PathBuf};

use crate::tls::TlsArgs;

/// The tenant of the development stack `battlelog up` runs.
pub const DEV_TENANT: &str = "dev";
/// How long a development token minted for one command lives.
const DEV_TOKEN_TTL: std::time::Duration = std::time::Duration::from_secs(3600);

/// Where `up` keeps its token signing key, under its data dir.
pub fn dev_signing_key(data_dir: &Path) -> PathBuf {
    data_dir.join("auth").join("signing-key.pem")
}

/// Where `up` keeps its revocation list (`battlelog token revoke --data-dir`).
pub fn dev_revoked_tokens(data_dir: &Path) -> PathBuf {
    data_dir.join("auth").join("revoked-tokens")
}

impl TlsArgs {
    /// The token to call with: `--token`, else one for `role` minted with
    /// the development signing key under --data-dir.
    pub fn token_for(&self, role: battlelog_auth::Role, subject: &str) -> anyhow::Result<String> {
        if let Some(token) = self.token.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
            return Ok(token.to_owned());
        }
        let key_path = dev_signing_key(&self.data_dir);
        anyhow::ensure!(
            key_path.is_file(),
            "no token: pass --token (or BATTLELOG_TOKEN), or --data-dir of `battlelog up` (no signing key at {})",
            key_path.display()
        );
        let key = battlelog_auth::SigningKey::read(&key_path)?;
        Ok(key.issue(subject, DEV_TENANT, role, DEV_TOKEN_TTL)?)
    }
}
