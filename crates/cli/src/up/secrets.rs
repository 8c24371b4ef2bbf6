//! `up`'s secrets: the data directory kept private, the development
//! signing key and the tokens minted with it, the revocation list, the
//! webhook secret; each service's own secrets (the master key, the share
//! and battle-id secrets) where its development config puts them.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use battlelog_auth::{RevocationList, Role, SigningKey};
use battlelog_runtime::service::{Development, Tokens};

use super::SERVICE_TOKEN_TTL;

/// The development keys and tokens every service is given.
pub(super) struct Secrets {
    /// What each service's development config is built from.
    pub(super) development: Development,
    /// The development signing key's file (the banner names it).
    pub(super) signing_key_path: PathBuf,
    /// The web pages' `reader` token of the development tenant.
    pub(super) web_token_file: PathBuf,
}

impl Secrets {
    /// The development token signing key under `data_dir`: every service
    /// accepts the tokens it signs (its public half, `auth_keys`), and the
    /// client commands mint theirs with it (tenant `dev`). The services'
    /// own tokens are minted at every start, each in a file as a service's
    /// `token_file` is.
    pub(super) fn make(data_dir: &Path, client_tls: battlelog_runtime::tls::ClientTls) -> anyhow::Result<Self> {
        let signing_key_path = crate::dev_token::dev_signing_key(data_dir);
        let signing_key = SigningKey::read_or_create(&signing_key_path)?;
        let auth_key = battlelog_auth::keys::public_path(&signing_key_path);
        // Written at every start: a data dir from before may hold the
        // private half alone.
        write_private(&auth_key, &signing_key.public_pem())?;
        revocation_list(data_dir)?;
        let tokens = data_dir.join("tokens");
        std::fs::create_dir_all(&tokens)?;
        let token_file = tokens.join("service.token");
        let service_token = signing_key.issue("battlelog-up", "battlelog", Role::Service, SERVICE_TOKEN_TTL)?;
        write_private(&token_file, &service_token)?;
        // The web pages read a shared battle as a reader of the development
        // tenant.
        let web_token_file = tokens.join("web.token");
        let web_token =
            signing_key.issue("battlelog-web", crate::dev_token::DEV_TENANT, Role::Reader, SERVICE_TOKEN_TTL)?;
        write_private(&web_token_file, &web_token)?;
        let revoked = Some(crate::dev_token::dev_revoked_tokens(data_dir));
        let development = Development {
            data_dir: data_dir.to_owned(),
            tokens: Tokens::accepting(vec![auth_key], revoked),
            token_file,
            client_tls,
        };
        Ok(Self { development, signing_key_path, web_token_file })
    }
}

/// Writes `text` to `path` readable by the owner only (it holds passwords).
pub(super) fn write_private(path: &Path, text: &str) -> anyhow::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        options.mode(0o600);
        // An older file keeps its mode through `create`: set it anyway.
        if path.exists() {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
        }
    }
    let mut file = options.open(path).with_context(|| format!("cannot write {}", path.display()))?;
    file.write_all(text.as_bytes())?;
    Ok(())
}

/// The development webhook secret at `path`: read, or made (random,
/// `whsec_…`, owner-only) on first start, so that a receiver configured
/// with it keeps working across restarts.
pub(super) fn webhook_secret(path: &Path) -> anyhow::Result<String> {
    match std::fs::read_to_string(path) {
        Ok(text) => {
            let secret = text.trim().to_owned();
            battlelog_webhooks::signature::Secret::parse(&secret)
                .map_err(|e| anyhow::anyhow!("{}: the webhook secret {e}", path.display()))?;
            Ok(secret)
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            let secret = battlelog_webhooks::signature::Secret::generate()
                .map_err(|e| anyhow::anyhow!("cannot make a webhook secret: {e}"))?;
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            write_private(path, &format!("{secret}\n"))?;
            Ok(secret)
        }
        Err(error) => Err(error).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// Makes `data_dir` its owner's alone (0700), creating it if missing, and
/// every file and directory this process creates from now on (sled's, the
/// keys', NATS's, which inherits it): they hold the battles before their
/// seeds are revealed, and secrets.
pub(super) fn private_data_dir(data_dir: &Path) -> anyhow::Result<()> {
    battlelog_runtime::private::owner_only_from_now_on();
    // A data dir from before, or made by hand, may be open to others.
    battlelog_runtime::private::private_dir(data_dir)
        .with_context(|| format!("cannot make the data dir {} owner-only (0700)", data_dir.display()))
}

/// `up`'s revocation list, created empty on first start.
fn revocation_list(data_dir: &Path) -> anyhow::Result<RevocationList> {
    let path = crate::dev_token::dev_revoked_tokens(data_dir);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    match std::fs::OpenOptions::new().write(true).create_new(true).open(&path) {
        Ok(mut file) => file.write_all(
            b"# Tokens battlelog up's services refuse, one `jti <token id>` or `sub <subject>` a line.\n\
              # `battlelog token revoke --data-dir <this data dir>` adds to it; no restart needed.\n",
        )?,
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(error) => return Err(error).with_context(|| format!("cannot create {}", path.display())),
    }
    Ok(RevocationList::open(&path, battlelog_auth::revoke::DEFAULT_RELOAD_EVERY)?)
}
