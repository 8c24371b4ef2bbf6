//! Serving: the gRPC server (journal, `grpc.health.v1`, reflection) on a
//! listener the caller bound, until its shutdown future resolves.

use std::future::Future;
use std::sync::Arc;

use battlelog_auth::{Authenticator, Role, Verifier};
use battlelog_proto::v1::journal_server::JournalServer;
use battlelog_runtime::edge::{self, GrpcLimits};
use tokio::net::TcpListener;
use tonic::service::interceptor::InterceptedService;
use tracing::info;

use crate::config::Config;
use crate::error::JournalError;
use crate::journal::{Journal, JournalOptions};
use crate::nats::JetStreamPublisher;
use crate::outbox::EventPublisher;
use crate::service::JournalService;
use crate::store::jetstream::JetStreamStore;

/// Why serving failed.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The journal could not be opened or closed.
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// The NATS client could not be set up.
    #[error("nats: {0}")]
    Nats(#[from] async_nats::ConnectError),
    /// Reflection could not be built from the descriptors.
    #[error("reflection: {0}")]
    Reflection(#[from] tonic_reflection::server::Error),
    /// The gRPC server failed.
    #[error("grpc: {0}")]
    Transport(#[from] tonic::transport::Error),
    /// A TLS file could not be used.
    #[error(transparent)]
    Tls(#[from] battlelog_runtime::tls::TlsError),
    /// The verification keys could not be read.
    #[error("auth: {0}")]
    Auth(#[from] battlelog_auth::KeyError),
}

/// The verifier of the tokens callers present: `auth_keys`, the maximum
/// lifetime and the revocation list as configured.
pub fn verifier(config: &Config) -> Result<Verifier, ServeError> {
    Ok(Verifier::configured(
        &config.auth_keys,
        std::time::Duration::from_secs(config.token_max_lifetime_secs),
        config.revoked_tokens_file.as_deref(),
        std::time::Duration::from_millis(config.revoked_tokens_reload_ms),
    )?)
}

/// Runs a journal as configured on `listener` until `shutdown` resolves, then
/// shuts down gracefully: stop accepting, let in-flight appends commit and
/// flush, close the store.
pub async fn run(
    config: &Config,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    let tls = config.server_tls.server_config()?;
    let verifier = verifier(config)?;
    if let Some(options) = config.jetstream_options() {
        // The log is in JetStream, and JetStream is its fan-out: no sled,
        // no outbox, no publisher.
        info!(
            url = %crate::nats::redact_url(&options.nats_urls),
            stream = %options.stream,
            replicas = options.replicas,
            "the journal's log is a NATS JetStream stream"
        );
        let store = JetStreamStore::connect(options).await?;
        let journal = Journal::open_on(Arc::new(store), journal_options(config, None)).await?;
        let served =
            serve_limited(journal.clone(), listener, tls, verifier, config.grpc_limits.clone(), shutdown).await;
        journal.shutdown().await?;
        return served;
    }
    let publisher: Option<Arc<dyn EventPublisher>> = match &config.nats_url {
        Some(url) => {
            let url_shown = crate::nats::redact_url(url);
            info!(url = %url_shown, stream = %config.nats_stream, "publishing committed events to NATS JetStream");
            Some(Arc::new(JetStreamPublisher::connect(url, &config.nats_stream, &config.nats_subject_prefix).await?))
        }
        None => {
            info!("no NATS URL configured: running without NATS");
            None
        }
    };
    let journal = Journal::open(journal_options(config, publisher)).await?;
    let served = serve_limited(journal.clone(), listener, tls, verifier, config.grpc_limits.clone(), shutdown).await;
    // Whatever happened to the server, commit and flush what was queued.
    journal.shutdown().await?;
    served
}

fn journal_options(config: &Config, publisher: Option<Arc<dyn EventPublisher>>) -> JournalOptions {
    JournalOptions {
        data_dir: config.data_dir.clone(),
        limits: config.limits(),
        max_commit_batch: config.max_commit_batch,
        cache_capacity_bytes: config.cache_capacity_bytes,
        publisher,
        battle_index_bytes: config.battle_index_bytes,
        metrics: Default::default(),
    }
}

/// Serves an already open `journal` on `listener` until `shutdown` resolves.
/// For embedding: the caller keeps the [`Journal`] and shuts it down after.
pub async fn serve(
    journal: Journal,
    listener: TcpListener,
    verifier: Verifier,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    serve_with_tls(journal, listener, None, verifier, shutdown).await
}

/// [`serve`], over TLS when `tls` is given (health and reflection too),
/// with the default limits.
pub async fn serve_with_tls(
    journal: Journal,
    listener: TcpListener,
    tls: Option<tonic::transport::ServerTlsConfig>,
    verifier: Verifier,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    serve_limited(journal, listener, tls, verifier, GrpcLimits::default(), shutdown).await
}

/// [`serve_with_tls`] with these connection and request limits
/// (battlelog_runtime::edge).
///
/// Who may call: only the `service` role (the roller and the resolver),
/// checked at the door for every `Journal` RPC; health and reflection need
/// no token.
pub async fn serve_limited(
    journal: Journal,
    listener: TcpListener,
    tls: Option<tonic::transport::ServerTlsConfig>,
    verifier: Verifier,
    limits: GrpcLimits,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    let local = listener.local_addr().map_err(JournalError::Io)?;
    let (health, health_service) = tonic_health::server::health_reporter();
    health.set_serving::<JournalServer<JournalService>>().await;
    let name = <JournalServer<JournalService> as tonic::server::NamedService>::NAME;
    let reflection = battlelog_runtime::grpc::reflection(name)?;
    let reflection_v1alpha = battlelog_runtime::grpc::reflection_v1alpha(name)?;
    let limit = journal.limits().grpc_message_limit();
    let service = JournalServer::new(JournalService::new(journal.clone()))
        .max_decoding_message_size(limit)
        .max_encoding_message_size(limit);
    let service = InterceptedService::new(service, Authenticator::only(verifier, "Journal", &[Role::Service]));

    let incoming = edge::incoming(listener, &limits);
    let on_shutdown = {
        let journal = journal.clone();
        async move {
            shutdown.await;
            info!("shutting down: no new requests, finishing in-flight appends");
            health.set_not_serving::<JournalServer<JournalService>>().await;
            // Subscriptions never end on their own; tonic waits for every
            // open call before returning.
            journal.begin_shutdown();
        }
    };
    info!(%local, tls = tls.is_some(), "journal serving gRPC");
    edge::server(tls, &limits)?
        .add_service(health_service)
        .add_service(reflection)
        .add_service(reflection_v1alpha)
        .add_service(service)
        .serve_with_incoming_shutdown(incoming, on_shutdown)
        .await?;
    Ok(())
}
