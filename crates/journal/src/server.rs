//! Serving: the gRPC server (journal, `grpc.health.v1`, reflection) on a
//! listener the caller bound, until its shutdown future resolves.

use std::future::Future;
use std::sync::Arc;

use battlelog_auth::Role;
use battlelog_proto::v1::journal_server::JournalServer;
use battlelog_runtime::serve::GrpcServer;
use tokio::net::TcpListener;
use tracing::{info, warn};

use crate::config::{Config, SERVICE};
use crate::error::JournalError;
use crate::journal::{Journal, JournalOptions};
use crate::merkle_log::TransparencyOptions;
use crate::metrics::JournalMetrics;
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
    /// The server could not be built or serve (battlelog_runtime::serve).
    #[error(transparent)]
    Serve(#[from] battlelog_runtime::serve::ServeError),
    /// A TLS file could not be used.
    #[error(transparent)]
    Tls(#[from] battlelog_runtime::tls::TlsError),
    /// A configured value could not be used (the log key).
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    /// The verification keys could not be read.
    #[error("auth: {0}")]
    Auth(#[from] battlelog_auth::KeyError),
    /// The data dir could not be made owner-only.
    #[error("cannot make the data dir {path} owner-only (0700): {source}")]
    DataDir { path: std::path::PathBuf, source: std::io::Error },
}

/// Runs a journal as configured on `listener` until `shutdown` resolves, then
/// shuts down gracefully: stop accepting, let in-flight appends commit and
/// flush, close the store. Serves `/metrics` on `metrics_listen` when set,
/// and prints its readiness line once everything is open.
pub async fn run(
    config: &Config,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    // Its battles before their seeds are revealed, and the generated log
    // key: the owner's alone, whatever umask the journal was started with.
    battlelog_runtime::private::private_dir(&config.data_dir)
        .map_err(|source| ServeError::DataDir { path: config.data_dir.clone(), source })?;
    let mut server = GrpcServer::new(SERVICE, config.tokens.verifier()?).configured(
        &config.shared,
        &config.server_tls,
        &config.grpc_limits,
    )?;
    let metrics = JournalMetrics::register(server.registry().sub_registry_with_prefix(SERVICE));
    let journal = if let Some(options) = config.jetstream_options() {
        // The log is in JetStream, and JetStream is its fan-out: no sled,
        // no outbox, no publisher.
        info!(
            url = %crate::nats::redact_url(&options.nats_urls),
            stream = %options.stream,
            replicas = options.replicas,
            "the journal's log is a NATS JetStream stream"
        );
        let store = JetStreamStore::connect(options).await.map_err(JournalError::from)?;
        // Under the server's max_payload (the store fitted it): an append
        // NATS would refuse is refused here first, by name.
        let limits = crate::limits::Limits { max_append_bytes: store.max_append_bytes(), ..config.limits() };
        // After the log is reached: a journal that cannot reach it leaves
        // no generated key behind.
        let log_key = config.log_key()?;
        if config.log_key_file.is_none() && std::env::var_os(crate::config::LOG_KEY_ENV).is_none() {
            warn!(
                path = %config.data_dir.join(crate::config::GENERATED_LOG_KEY_FILE).display(),
                "backend jetstream with the log key generated in this journal's data dir: journals sharing \
                 the log should be given one key (log_key_file or {})",
                crate::config::LOG_KEY_ENV
            );
        }
        let options = JournalOptions { limits, ..journal_options(config, None, log_key) };
        Journal::open_on(Arc::new(store), options.with_metrics(metrics)).await?
    } else {
        let publisher: Option<Arc<dyn EventPublisher>> = match &config.nats_url {
            Some(url) => {
                // validate() read it already; a config built in code may not have been.
                let urls = crate::nats::NatsUrls::parse(url)
                    .map_err(|e| JournalError::InvalidArgument { field: "nats_url".into(), message: e.to_string() })?;
                info!(url = %urls.redacted(), stream = %config.nats_stream, "publishing committed events to NATS JetStream");
                Some(Arc::new(
                    JetStreamPublisher::connect(&urls, &config.nats_stream, &config.nats_subject_prefix).await?,
                ))
            }
            None => {
                info!("no NATS URL configured: running without NATS");
                None
            }
        };
        // Read (or generated) once NATS is reached and before the store
        // opens: a journal that cannot reach NATS leaves no generated key
        // behind, and a key that cannot be used stops it naming the key.
        let log_key = config.log_key()?;
        Journal::open(journal_options(config, publisher, log_key).with_metrics(metrics)).await?
    };
    let served = serve(journal.clone(), listener, server, shutdown).await;
    // Whatever happened to the server, commit and flush what was queued.
    journal.shutdown().await?;
    served
}

fn journal_options(
    config: &Config,
    publisher: Option<Arc<dyn EventPublisher>>,
    log_key: battlelog_tlog::LogKey,
) -> JournalOptions {
    JournalOptions {
        data_dir: config.data_dir.clone(),
        limits: config.limits(),
        max_commit_batch: config.max_commit_batch,
        cache_capacity_bytes: config.cache_capacity_bytes,
        publisher,
        battle_index_bytes: config.battle_index_bytes,
        metrics: JournalMetrics::default(),
        // In the data dir on both backends (crate::kept says why): on
        // JetStream it is the one place that is this journal's own.
        transparency: TransparencyOptions::with_key(
            log_key,
            std::time::Duration::from_millis(config.checkpoint_interval_ms),
        )
        .keeping_at(config.data_dir.join(crate::kept::KEPT_CHECKPOINT_FILE)),
    }
}

/// Serves an already open `journal` on `listener` with `server` (TLS,
/// limits, metrics: battlelog_runtime::serve) until `shutdown` resolves.
/// For tests and embedding: the caller keeps the [`Journal`] and shuts it
/// down after.
///
/// Who may call: only the `service` role (the roller and the resolver),
/// checked at the door for every `Journal` RPC; health and reflection need
/// no token. Health says `battlelog.v1.Journal` is `NOT_SERVING` while the
/// journal takes no appends because its store is behind its last signed
/// checkpoint (its reads still answer; the whole server, `""`, stays
/// `SERVING`).
pub async fn serve(
    journal: Journal,
    listener: TcpListener,
    server: GrpcServer,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    let limit = journal.limits().grpc_message_limit();
    let service = JournalServer::new(JournalService::new(journal.clone()))
        .max_decoding_message_size(limit)
        .max_encoding_message_size(limit);
    let writable = journal.watch_writable();
    let on_shutdown = async move {
        shutdown.await;
        // Subscriptions never end on their own; tonic waits for every
        // open call before returning.
        journal.begin_shutdown();
    };
    server.only("Journal", &[Role::Service]).readiness(writable).serve(service, listener, on_shutdown).await?;
    Ok(())
}
