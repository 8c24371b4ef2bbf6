//! TLS for the command line: the stack `battlelog up --tls` runs, and the
//! client side of the commands that talk to a stack over `https://`.
//!
//! `up --tls` keeps a development PKI under `<data-dir>/tls`
//! (`battlelog_runtime::tls::dev_pki`): every port serves TLS; the journal
//! and the roller, which only services call, also require the services'
//! client certificate (mutual TLS); the resolver, which forums call, does
//! not. The client commands trust `--ca-file`, or else find that dev CA
//! (and the dev client certificate, for the journal) under `--data-dir`,
//! so that a dev stack needs no extra flags.

use std::path::{Path, PathBuf};

use anyhow::Context;
use battlelog_runtime::tls::{ClientTls, DevPki, ServerTls, dev_pki};
use clap::Args;
use tonic::transport::Endpoint;

/// Where `up` keeps its development PKI, under its data dir.
pub fn dev_pki_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("tls")
}

/// The TLS side of `battlelog up`.
#[derive(Debug, Default)]
pub struct UpTls {
    /// The development PKI, when `--tls`.
    pub pki: Option<DevPki>,
}

impl UpTls {
    /// With `enabled`, generates (or reuses) the dev PKI under the data dir.
    pub fn new(enabled: bool, data_dir: &Path) -> anyhow::Result<Self> {
        let pki = enabled.then(|| dev_pki(&dev_pki_dir(data_dir))).transpose()?;
        Ok(Self { pki })
    }

    /// `https` or `http`, for the endpoints `up` prints and its services call.
    pub fn scheme(&self) -> &'static str {
        if self.pki.is_some() { "https" } else { "http" }
    }

    /// How the journal and the roller serve (their TLS keys): mutual TLS,
    /// as between services.
    pub fn internal_server(&self) -> ServerTls {
        self.pki.as_ref().map(DevPki::mutual_server).unwrap_or_default()
    }

    /// How the resolver serves: TLS, without client certificates (forums
    /// and the CLI call it with the CA alone).
    pub fn public_server(&self) -> ServerTls {
        self.pki.as_ref().map(|pki| ServerTls { tls_client_ca: None, ..pki.mutual_server() }).unwrap_or_default()
    }

    /// The keys the services call each other with.
    pub fn client_keys(&self) -> ClientTls {
        self.pki.as_ref().map(DevPki::client).unwrap_or_default()
    }
}

/// How a command trusts an `https://` stack.
#[derive(Debug, Clone, Args)]
pub struct TlsArgs {
    /// PEM CA to trust for https:// endpoints. Default: the development CA
    /// of `battlelog up --tls` under --data-dir, when there is one.
    #[arg(long, env = "BATTLELOG_CA_FILE")]
    pub ca_file: Option<PathBuf>,
    /// PEM client certificate, for servers that require one (mutual TLS).
    /// Default: the development client certificate under --data-dir, when
    /// there is one.
    #[arg(long, env = "BATTLELOG_CLIENT_CERT", requires = "client_key")]
    pub client_cert: Option<PathBuf>,
    /// PEM private key of --client-cert.
    #[arg(long, env = "BATTLELOG_CLIENT_KEY", requires = "client_cert")]
    pub client_key: Option<PathBuf>,
    /// The data dir of `battlelog up`, where its development CA (with
    /// --tls) and token signing key are found.
    #[arg(long, env = "BATTLELOG_DATA_DIR", default_value = "data")]
    pub data_dir: PathBuf,
    /// The bearer token to call with. Default: one minted with the
    /// development signing key of `battlelog up` under --data-dir (tenant
    /// `dev`), when there is one.
    #[arg(long, env = "BATTLELOG_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
}

impl TlsArgs {
    /// The keys to use: the flags, else the development PKI when present.
    fn keys(&self) -> Option<ClientTls> {
        let pki = DevPki::in_dir(&dev_pki_dir(&self.data_dir));
        let Some(ca) = &self.ca_file else {
            return pki.ca.is_file().then(|| pki.client());
        };
        // A client certificate is only sent when a server asks for one, so
        // the development one may be offered beside any CA: `up --tls`'s
        // journal asks, and `--ca-file` alone then still reaches it.
        let dev = pki.client_cert.is_file() && pki.client_key.is_file();
        let (cert, key) = match (&self.client_cert, &self.client_key) {
            (Some(cert), Some(key)) => (Some(cert.clone()), Some(key.clone())),
            _ if dev => (Some(pki.client_cert), Some(pki.client_key)),
            _ => (None, None),
        };
        Some(ClientTls { tls_ca: Some(ca.clone()), tls_client_cert: cert, tls_client_key: key })
    }

    /// An endpoint for `url`: `https://` ones with the CA (and client
    /// certificate) of [`TlsArgs`].
    pub fn endpoint(&self, url: &str) -> anyhow::Result<Endpoint> {
        let tls = if url.starts_with("https://") {
            let keys = self.keys().with_context(|| {
                format!(
                    "{url} is https:// and needs the CA to trust: --ca-file (or BATTLELOG_CA_FILE), or --data-dir \
                     of `battlelog up --tls` (no CA at {})",
                    DevPki::in_dir(&dev_pki_dir(&self.data_dir)).ca.display()
                )
            })?;
            keys.client_config().context("TLS files (--ca-file, --client-cert, --client-key or --data-dir)")?
        } else {
            None
        };
        battlelog_runtime::tls::endpoint(url, tls.as_ref()).with_context(|| format!("invalid endpoint {url:?}"))
    }

    /// The flags that make a printed command trust the stack as this one
    /// does (empty when the defaults do).
    pub fn flags(&self) -> String {
        let mut flags = String::new();
        let mut flag = |name: &str, path: &Option<PathBuf>| {
            if let Some(path) = path {
                flags.push_str(&format!(" --{name} {}", path.display()));
            }
        };
        flag("ca-file", &self.ca_file);
        flag("client-cert", &self.client_cert);
        flag("client-key", &self.client_key);
        // The data dir also gives the development token.
        if (self.ca_file.is_none() || self.token.is_none()) && self.data_dir != Path::new("data") {
            flags.push_str(&format!(" --data-dir {}", self.data_dir.display()));
        }
        flags
    }
}
