//! Serving the roller: gRPC (`Roller`, `grpc.health.v1`, reflection) on a
//! listener the caller bound, until the shutdown future resolves.

use std::future::Future;

use battlelog_proto::v1::journal_client::JournalClient;
use battlelog_proto::v1::roller_server::RollerServer;
use battlelog_runtime::config::ConfigError;
use battlelog_runtime::grpc;
use tokio::net::TcpListener;
use tonic::transport::{Channel, Endpoint};

use crate::config::Config;
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
}

/// A lazily connecting journal client: the roller may start before the
/// journal and rides out its restarts.
pub fn journal_client(url: &str) -> Result<JournalClient<Channel>, ServeError> {
    let endpoint = Endpoint::from_shared(url.to_owned()).map_err(ServeError::JournalUrl)?;
    Ok(JournalClient::new(endpoint.connect_lazy()))
}

/// Runs the roller as configured on `listener` until `shutdown` resolves.
pub async fn run(
    config: &Config,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    let master_key = config.master_key()?;
    let service = RollerService::new(journal_client(&config.journal_url)?, master_key);
    serve(service, listener, shutdown).await
}

/// Serves `service` on `listener`; in-flight requests finish before it returns.
pub async fn serve(
    service: RollerService,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    let (health, health_service) = grpc::health();
    health.set_serving::<RollerServer<RollerService>>().await;
    tonic::transport::Server::builder()
        .add_service(health_service)
        .add_service(grpc::reflection()?)
        .add_service(RollerServer::new(service))
        .serve_with_incoming_shutdown(grpc::incoming(listener), shutdown)
        .await?;
    Ok(())
}
