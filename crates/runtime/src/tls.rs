//! TLS on every gRPC hop (tonic over rustls with the ring provider).
//!
//! - [`ServerTls`]: the keys a service serves with — `tls_cert` + `tls_key`
//!   (its identity, PEM) and, for mutual TLS, `tls_client_ca`: then every
//!   caller must present a certificate that CA signed.
//! - [`ClientTls`]: the keys a service calls its peers with — `tls_ca` (the
//!   CA to trust for `https://` URLs) and an optional client identity
//!   `tls_client_cert` + `tls_client_key` for peers that require one.
//! - [`server`] / [`endpoint`]: a tonic server or endpoint with or without TLS.
//! - [`dev_pki`]: a development CA and the server and client certificates
//!   it signs, generated once under a directory (`battlelog up --tls`, tests).
//!
//! Both sections are flattened into each service's config, so the keys are
//! top-level (`tls_cert = "…"`, `BATTLELOG_<SERVICE>_TLS_CERT`,
//! `--tls-cert`). Every error names the config key and the file.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use serde::{Deserialize, Serialize};
use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Identity, Server, ServerTlsConfig};

use crate::config::ConfigError;

/// How long a TLS handshake may take. A server drops a connection that has
/// not finished by then, so a silent or plaintext peer cannot hold a slot;
/// a client gives up instead of waiting on a peer that never answers.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// A TLS file that cannot be used. Names the config key and the path.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    // `error`, not `source`: the message already says it, and a source
    // would print it twice in an error chain.
    #[error("{key}: cannot read {}: {error}", path.display())]
    Read { key: &'static str, path: PathBuf, error: std::io::Error },
    #[error("{key}: {}: {message}", path.display())]
    Pem { key: &'static str, path: PathBuf, message: String },
    #[error("tls_cert {} and tls_key {} do not make an identity: {message}", cert.display(), key.display())]
    Identity { cert: PathBuf, key: PathBuf, message: String },
    #[error("development PKI in {}: {message}", dir.display())]
    DevPki { dir: PathBuf, message: String },
}

/// A service's own TLS identity, and whether callers must present one.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct ServerTls {
    /// PEM certificate chain the service presents. With `tls_key`, the
    /// port speaks TLS only (gRPC, health and reflection alike).
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of `tls_cert`.
    pub tls_key: Option<PathBuf>,
    /// PEM CA certificate(s): when set, a caller without a certificate
    /// signed by one of them is refused in the handshake (mutual TLS).
    pub tls_client_ca: Option<PathBuf>,
}

/// How a service trusts its peers and, when they ask, proves who it is.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct ClientTls {
    /// PEM CA certificate(s) trusted for `https://` peer URLs. There is no
    /// fallback to a system root store: a service trusts exactly what it is
    /// told to.
    pub tls_ca: Option<PathBuf>,
    /// PEM client certificate presented to peers that require one.
    pub tls_client_cert: Option<PathBuf>,
    /// PEM private key of `tls_client_cert`.
    pub tls_client_key: Option<PathBuf>,
}

fn both_or_neither(
    a: (&'static str, &Option<PathBuf>),
    b: (&'static str, &Option<PathBuf>),
) -> Result<(), ConfigError> {
    match (a.1, b.1) {
        (Some(_), None) => Err(ConfigError::Invalid { key: b.0, message: format!("must be set with {}", a.0) }),
        (None, Some(_)) => Err(ConfigError::Invalid { key: a.0, message: format!("must be set with {}", b.0) }),
        _ => Ok(()),
    }
}

impl ServerTls {
    /// The keys fit together (the files are read by [`Self::server_config`]).
    pub fn validate(&self) -> Result<(), ConfigError> {
        both_or_neither(("tls_cert", &self.tls_cert), ("tls_key", &self.tls_key))?;
        if self.tls_client_ca.is_some() && self.tls_cert.is_none() {
            return Err(ConfigError::Invalid {
                key: "tls_client_ca",
                message: "requires tls_cert and tls_key: client certificates are only asked for over TLS".into(),
            });
        }
        Ok(())
    }

    /// Whether the service serves TLS.
    pub fn enabled(&self) -> bool {
        self.tls_cert.is_some() && self.tls_key.is_some()
    }

    /// The server TLS config, or `None` for plaintext. Reads and checks
    /// every file now, so that a bad one stops the service at start.
    pub fn server_config(&self) -> Result<Option<ServerTlsConfig>, TlsError> {
        let (Some(cert_path), Some(key_path)) = (&self.tls_cert, &self.tls_key) else {
            return Ok(None);
        };
        let cert = read_certs("tls_cert", cert_path)?;
        let key = read_key("tls_key", key_path)?;
        let mut config = ServerTlsConfig::new().identity(Identity::from_pem(&cert, &key)).timeout(HANDSHAKE_TIMEOUT);
        if let Some(ca_path) = &self.tls_client_ca {
            config = config.client_ca_root(Certificate::from_pem(read_certs("tls_client_ca", ca_path)?));
        }
        // rustls checks that the key belongs to the certificate only when
        // the acceptor is built: build one now to name the files if not.
        Server::builder().tls_config(config.clone()).map_err(|e| TlsError::Identity {
            cert: cert_path.clone(),
            key: key_path.clone(),
            message: error_chain(&e),
        })?;
        Ok(Some(config))
    }
}

impl ClientTls {
    /// The keys fit together and with the peer URLs (`(key, url)` pairs):
    /// an `https://` peer needs `tls_ca`, and `tls_ca` with an `http://`
    /// peer would send in plaintext what the operator meant to protect.
    pub fn validate(&self, urls: &[(&'static str, &str)]) -> Result<(), ConfigError> {
        both_or_neither(("tls_client_cert", &self.tls_client_cert), ("tls_client_key", &self.tls_client_key))?;
        for &(key, url) in urls {
            match (url.starts_with("https://"), self.tls_ca.is_some()) {
                (true, false) => {
                    return Err(ConfigError::Invalid {
                        key: "tls_ca",
                        message: format!("{key} {url:?} is https:// and needs the CA to trust"),
                    });
                }
                (false, true) => {
                    return Err(ConfigError::Invalid {
                        key,
                        message: format!("{url:?} must be https:// when tls_ca is set"),
                    });
                }
                _ => {}
            }
        }
        if self.tls_client_cert.is_some() && self.tls_ca.is_none() {
            return Err(ConfigError::Invalid {
                key: "tls_client_cert",
                message: "requires tls_ca: a client certificate is only presented over TLS".into(),
            });
        }
        Ok(())
    }

    /// The client TLS config, or `None` when no CA is configured. Reads and
    /// checks every file now.
    pub fn client_config(&self) -> Result<Option<ClientTlsConfig>, TlsError> {
        let Some(ca_path) = &self.tls_ca else {
            return Ok(None);
        };
        let mut config = ClientTlsConfig::new()
            .ca_certificate(Certificate::from_pem(read_certs("tls_ca", ca_path)?))
            .timeout(HANDSHAKE_TIMEOUT);
        if let (Some(cert), Some(key)) = (&self.tls_client_cert, &self.tls_client_key) {
            let identity = Identity::from_pem(read_certs("tls_client_cert", cert)?, read_key("tls_client_key", key)?);
            config = config.identity(identity);
        }
        Ok(Some(config))
    }
}

/// A tonic server builder, serving TLS when `tls` is given. The listener
/// stays the caller's: tonic runs the handshake on every stream of the
/// incoming it is handed (`serve_with_incoming_shutdown`), off the accept loop.
pub fn server(tls: Option<ServerTlsConfig>) -> Result<Server, tonic::transport::Error> {
    let builder = Server::builder();
    match tls {
        Some(tls) => builder.tls_config(tls),
        None => Ok(builder),
    }
}

/// An endpoint for `url`, with `tls` applied to `https://` URLs.
pub fn endpoint(url: &str, tls: Option<&ClientTlsConfig>) -> Result<Endpoint, tonic::transport::Error> {
    let endpoint = Endpoint::from_shared(url.to_owned())?;
    match tls {
        Some(tls) if url.starts_with("https://") => endpoint.tls_config(tls.clone()),
        _ => Ok(endpoint),
    }
}

fn read(key: &'static str, path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|error| TlsError::Read { key, path: path.to_owned(), error })
}

/// The file's bytes, once it is known to hold at least one PEM certificate.
fn read_certs(key: &'static str, path: &Path) -> Result<Vec<u8>, TlsError> {
    let pem = read(key, path)?;
    let invalid = |message: String| TlsError::Pem { key, path: path.to_owned(), message };
    let certs =
        CertificateDer::pem_slice_iter(&pem).collect::<Result<Vec<_>, _>>().map_err(|e| invalid(e.to_string()))?;
    if certs.is_empty() {
        return Err(invalid("no PEM certificate (-----BEGIN CERTIFICATE-----) in the file".into()));
    }
    Ok(pem)
}

/// The file's bytes, once it is known to hold a PEM private key.
fn read_key(key: &'static str, path: &Path) -> Result<Vec<u8>, TlsError> {
    let pem = read(key, path)?;
    PrivateKeyDer::from_pem_slice(&pem).map_err(|e| TlsError::Pem {
        key,
        path: path.to_owned(),
        message: format!("no usable PEM private key: {e}"),
    })?;
    Ok(pem)
}

fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The files of a development PKI (see [`dev_pki`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DevPki {
    /// The development CA's certificate: what clients trust.
    pub ca: PathBuf,
    /// The server certificate, for `localhost`, `127.0.0.1` and `::1`.
    pub server_cert: PathBuf,
    pub server_key: PathBuf,
    /// The client certificate the services present to each other.
    pub client_cert: PathBuf,
    pub client_key: PathBuf,
}

impl DevPki {
    /// The files `dev_pki` keeps under `dir`, whether or not they exist yet.
    pub fn in_dir(dir: &Path) -> Self {
        Self {
            ca: dir.join("ca.pem"),
            server_cert: dir.join("server.pem"),
            server_key: dir.join("server.key"),
            client_cert: dir.join("client.pem"),
            client_key: dir.join("client.key"),
        }
    }

    /// Serving with the server certificate, requiring callers to present a
    /// client certificate from the development CA.
    pub fn mutual_server(&self) -> ServerTls {
        ServerTls {
            tls_cert: Some(self.server_cert.clone()),
            tls_key: Some(self.server_key.clone()),
            tls_client_ca: Some(self.ca.clone()),
        }
    }

    /// Trusting the development CA and presenting the client certificate.
    pub fn client(&self) -> ClientTls {
        ClientTls {
            tls_ca: Some(self.ca.clone()),
            tls_client_cert: Some(self.client_cert.clone()),
            tls_client_key: Some(self.client_key.clone()),
        }
    }

    fn files(&self) -> [&Path; 5] {
        [&self.ca, &self.server_cert, &self.server_key, &self.client_cert, &self.client_key]
    }
}

/// A development PKI under `dir`: a CA (`ca.pem`; its key `ca.key`), and
/// signed by it a server certificate for `localhost`, `127.0.0.1` and `::1`
/// (`server.pem`, `server.key`) and a client certificate for the services
/// (`client.pem`, `client.key`). Keys are written readable by the owner
/// only. Reused when every file is present, so clients that trusted the CA
/// once keep trusting the stack across restarts; generated afresh (all of
/// it) otherwise. Never for production: the CA key sits beside the certs.
pub fn dev_pki(dir: &Path) -> Result<DevPki, TlsError> {
    let pki = DevPki::in_dir(dir);
    let ca_key_path = dir.join("ca.key");
    if pki.files().iter().all(|f| f.is_file()) && ca_key_path.is_file() {
        return Ok(pki);
    }
    let failed = |message: String| TlsError::DevPki { dir: dir.to_owned(), message };
    let generated = generate_dev_pki().map_err(|e| failed(e.to_string()))?;
    std::fs::create_dir_all(dir).map_err(|e| failed(format!("cannot create it: {e}")))?;
    // The CA certificate goes last: a start interrupted half-way leaves it
    // missing, and the next start generates everything again.
    let writes = [
        (&ca_key_path, &generated.ca_key, true),
        (&pki.server_key, &generated.server_key, true),
        (&pki.server_cert, &generated.server_cert, false),
        (&pki.client_key, &generated.client_key, true),
        (&pki.client_cert, &generated.client_cert, false),
        (&pki.ca, &generated.ca_cert, false),
    ];
    for (path, text, private) in writes {
        write_file(path, text, private).map_err(|e| failed(format!("cannot write {}: {e}", path.display())))?;
    }
    Ok(pki)
}

struct GeneratedPki {
    ca_cert: String,
    ca_key: String,
    server_cert: String,
    server_key: String,
    client_cert: String,
    client_key: String,
}

fn generate_dev_pki() -> Result<GeneratedPki, rcgen::Error> {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose,
    };
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params.distinguished_name.push(DnType::CommonName, "battlelog development CA");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    ca_params.key_usages =
        vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
    let ca_key = KeyPair::generate()?;
    let ca_cert = ca_params.self_signed(&ca_key)?;
    let ca_cert_pem = ca_cert.pem();
    let ca_key_pem = ca_key.serialize_pem();
    let issuer = Issuer::new(ca_params, ca_key);

    let leaf = |names: Vec<String>, common_name: &str, usage: ExtendedKeyUsagePurpose| {
        let mut params = CertificateParams::new(names)?;
        params.distinguished_name.push(DnType::CommonName, common_name);
        params.use_authority_key_identifier_extension = true;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![usage];
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &issuer)?;
        Ok::<_, rcgen::Error>((cert.pem(), key.serialize_pem()))
    };
    let server_names = ["localhost", "127.0.0.1", "::1"].map(String::from).to_vec();
    let (server_cert, server_key) = leaf(server_names, "localhost", ExtendedKeyUsagePurpose::ServerAuth)?;
    let (client_cert, client_key) =
        leaf(vec!["battlelog-service".into()], "battlelog-service", ExtendedKeyUsagePurpose::ClientAuth)?;
    Ok(GeneratedPki { ca_cert: ca_cert_pem, ca_key: ca_key_pem, server_cert, server_key, client_cert, client_key })
}

/// Writes `text` to `path`, replacing it; a private file is created
/// readable by the owner only (removed first, since the mode applies only
/// to a new file).
fn write_file(path: &Path, text: &str, private: bool) -> std::io::Result<()> {
    use std::io::Write;
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    owner_only(&mut options, private);
    let mut file = options.open(path)?;
    file.write_all(text.as_bytes())?;
    file.sync_all()
}

#[cfg(unix)]
fn owner_only(options: &mut std::fs::OpenOptions, private: bool) {
    use std::os::unix::fs::OpenOptionsExt;
    if private {
        options.mode(0o600);
    }
}

#[cfg(not(unix))]
fn owner_only(_options: &mut std::fs::OpenOptions, _private: bool) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dev_pki_is_generated_once_with_private_keys_and_loads() {
        let dir = tempfile::tempdir().unwrap();
        let pki = dev_pki(dir.path()).unwrap();
        let first = std::fs::read_to_string(&pki.ca).unwrap();
        #[cfg(unix)]
        for key in [&pki.server_key, &pki.client_key, &dir.path().join("ca.key")] {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(key).unwrap().permissions().mode() & 0o777, 0o600, "{}", key.display());
        }
        assert_eq!(dev_pki(dir.path()).unwrap(), pki);
        assert_eq!(std::fs::read_to_string(&pki.ca).unwrap(), first, "reused, not regenerated");
        assert!(pki.mutual_server().server_config().unwrap().is_some());
        assert!(pki.client().client_config().unwrap().is_some());
        // A missing file regenerates the whole set, with a new CA.
        std::fs::remove_file(&pki.client_key).unwrap();
        dev_pki(dir.path()).unwrap();
        assert_ne!(std::fs::read_to_string(&pki.ca).unwrap(), first);
    }

    #[test]
    fn errors_name_the_key_and_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let pki = dev_pki(dir.path()).unwrap();
        let missing = dir.path().join("nope.pem");
        let tls = ServerTls { tls_cert: Some(missing.clone()), ..pki.mutual_server() };
        let message = tls.server_config().unwrap_err().to_string();
        assert!(message.starts_with("tls_cert: cannot read") && message.contains("nope.pem"), "{message}");
        // A key in place of a certificate.
        let tls = ServerTls { tls_client_ca: Some(pki.server_key.clone()), ..pki.mutual_server() };
        let message = tls.server_config().unwrap_err().to_string();
        assert!(message.starts_with("tls_client_ca:") && message.contains("server.key"), "{message}");
        // The client's key with the server's certificate.
        let tls = ServerTls { tls_key: Some(pki.client_key.clone()), ..pki.mutual_server() };
        let message = tls.server_config().unwrap_err().to_string();
        assert!(message.contains("tls_cert") && message.contains("client.key"), "{message}");
        let tls = ClientTls { tls_client_key: Some(pki.ca.clone()), ..pki.client() };
        let message = tls.client_config().unwrap_err().to_string();
        assert!(message.starts_with("tls_client_key:"), "{message}");
    }

    #[test]
    fn keys_must_fit_together_and_with_the_urls() {
        let path = Some(PathBuf::from("x.pem"));
        let key_of = |e: ConfigError| match e {
            ConfigError::Invalid { key, .. } => key,
            other => panic!("{other}"),
        };
        assert_eq!(
            key_of(ServerTls { tls_cert: path.clone(), ..Default::default() }.validate().unwrap_err()),
            "tls_key"
        );
        assert_eq!(
            key_of(ServerTls { tls_client_ca: path.clone(), ..Default::default() }.validate().unwrap_err()),
            "tls_client_ca"
        );
        let https = [("journal_url", "https://127.0.0.1:1")];
        let http = [("journal_url", "http://127.0.0.1:1")];
        assert_eq!(key_of(ClientTls::default().validate(&https).unwrap_err()), "tls_ca");
        let with_ca = ClientTls { tls_ca: path.clone(), ..Default::default() };
        assert_eq!(key_of(with_ca.validate(&http).unwrap_err()), "journal_url");
        assert!(with_ca.validate(&https).is_ok());
        let half = ClientTls { tls_client_cert: path.clone(), ..with_ca };
        assert_eq!(key_of(half.validate(&https).unwrap_err()), "tls_client_key");
        assert!(ClientTls::default().validate(&http).is_ok());
    }
}
