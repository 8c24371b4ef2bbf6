//! Serving the resolver: gRPC (`Resolver`, `grpc.health.v1`, reflection) on
//! a listener the caller bound, until the shutdown future resolves.

use std::future::Future;

use battlelog_proto::v1::journal_client::JournalClient;
use battlelog_proto::v1::resolver_server::ResolverServer;
use battlelog_proto::v1::roller_client::RollerClient;
use battlelog_runtime::grpc;
use tokio::net::TcpListener;
use tokio_stream::wrappers::TcpListenerStream;
use tonic::transport::{Channel, Endpoint};

use crate::config::Config;
use crate::service::ResolverService;

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("{key}: {source}")]
    Url { key: &'static str, source: tonic::transport::Error },
    #[error("reflection: {0}")]
    Reflection(#[from] grpc::ReflectionError),
    #[error("grpc: {0}")]
    Transport(#[from] tonic::transport::Error),
}

/// A lazily connecting channel: the resolver may start before its peers.
fn channel(key: &'static str, url: &str) -> Result<Channel, ServeError> {
    let endpoint = Endpoint::from_shared(url.to_owned()).map_err(|source| ServeError::Url { key, source })?;
    Ok(endpoint.connect_lazy())
}

/// The service for `config`, connected lazily to the journal and roller.
pub fn service(config: &Config) -> Result<ResolverService, ServeError> {
    Ok(ResolverService::new(
        JournalClient::new(channel("journal_url", &config.journal_url)?),
        RollerClient::new(channel("roller_url", &config.roller_url)?),
    ))
}

/// Runs the resolver as configured on `listener` until `shutdown` resolves.
pub async fn run(
    config: &Config,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    serve(service(config)?, listener, shutdown).await
}

/// Serves `service` on `listener`; in-flight requests finish before it returns.
pub async fn serve(
    service: ResolverService,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    let (health, health_service) = grpc::health();
    health.set_serving::<ResolverServer<ResolverService>>().await;
    tonic::transport::Server::builder()
        .add_service(health_service)
        .add_service(grpc::reflection()?)
        .add_service(ResolverServer::new(service))
        .serve_with_incoming_shutdown(TcpListenerStream::new(listener), shutdown)
        .await?;
    Ok(())
}
