//! Serving the roller: gRPC (`Roller`, `grpc.health.v1`, reflection) on a
//! listener the caller bound, until the shutdown future resolves.

use battlelog_runtime::limits::MAX_MESSAGE_BYTES;
use std::future::Future;
use std::path::Path;

use battlelog_auth::{AuthChannel, Role, authed, read_token_file};

use battlelog_proto::v1::journal_client::JournalClient;
use battlelog_proto::v1::roller_server::RollerServer;
use battlelog_runtime::config::ConfigError;
use battlelog_runtime::grpc;
use battlelog_runtime::serve::GrpcServer;
use battlelog_runtime::tls::{self, TlsError};
use tokio::net::TcpListener;
use tonic::transport::ClientTlsConfig;

use crate::config::{Config, SERVICE};
use crate::service::RollerService;

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("journal_url: {0}")]
    JournalUrl(tonic::transport::Error),
    #[error("reflection: {0}")]
    Reflection(#[from] grpc::ReflectionError),
    #[error("grpc: {0}")]
    Transport(#[from] tonic::transport::Error),
    #[error(transparent)]
    Serve(#[from] battlelog_runtime::serve::ServeError),
    #[error(transparent)]
    Tls(#[from] TlsError),
    #[error("auth: {0}")]
    Auth(#[from] battlelog_auth::KeyError),
    #[error("token_file: {0}")]
    Token(#[from] tonic::metadata::errors::InvalidMetadataValue),
}

/// A lazily connecting journal client presenting `token`: the roller may
/// start before the journal and rides out its restarts.
pub fn journal_client(url: &str, token: &str) -> Result<JournalClient<AuthChannel>, ServeError> {
    journal_client_with_tls(url, None, token)
}

/// [`journal_client`] over TLS for an `https://` URL.
pub fn journal_client_with_tls(
    url: &str,
    tls: Option<&ClientTlsConfig>,
    token: &str,
) -> Result<JournalClient<AuthChannel>, ServeError> {
    let endpoint = tls::endpoint(url, tls).map_err(ServeError::JournalUrl)?;
    Ok(JournalClient::new(authed(endpoint.connect_lazy(), token)?).max_decoding_message_size(MAX_MESSAGE_BYTES))
}

/// The service as configured: master key, journal client (TLS per config,
/// with the configured service token). Every file is read here, so a bad
/// one fails before serving.
pub fn service(config: &Config) -> Result<RollerService, ServeError> {
    let token = read_token_file(config.token_file.as_deref().unwrap_or(Path::new("")))?;
    let journal = journal_client_with_tls(&config.journal_url, config.client_tls.client_config()?.as_ref(), &token)?;
    Ok(RollerService::new(journal, config.master_key()?)
        .with_cache_bytes(config.cache_bytes)
        .with_append_limits(config.append_limits()))
}

/// Runs the roller as configured on `listener` until `shutdown` resolves;
/// serves `/metrics` on `metrics_listen` when set, and prints its readiness
/// line once every file is read.
pub async fn run(
    config: &Config,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    let mut server = GrpcServer::new(SERVICE, config.tokens.verifier()?).configured(
        &config.shared,
        &config.server_tls,
        &config.grpc_limits,
    )?;
    let metrics = crate::RollerMetrics::register(server.registry().sub_registry_with_prefix(SERVICE));
    let service = service(config)?.with_metrics(metrics);
    serve(service, listener, server, shutdown).await
}

/// Serves `service` on `listener` with `server` (TLS, limits, metrics:
/// battlelog_runtime::serve) until `shutdown` resolves; in-flight requests
/// finish before it returns.
///
/// Who may call: only the `service` role (the resolver), checked at the
/// door for every `Roller` RPC, so no forum or player can peek at dice or
/// reveal a seed; health and reflection need no token.
pub async fn serve(
    service: RollerService,
    listener: TcpListener,
    server: GrpcServer,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    server.only("Roller", &[Role::Service]).serve(RollerServer::new(service), listener, shutdown).await?;
    Ok(())
}
