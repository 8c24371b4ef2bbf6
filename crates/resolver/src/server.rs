//! Serving the resolver: gRPC (`Resolver`, `grpc.health.v1`, reflection) on
//! a listener the caller bound, until the shutdown future resolves.

use battlelog_runtime::limits::MAX_MESSAGE_BYTES;

use crate::battle_id::BattleIdSecret;
use std::future::Future;
use std::time::Duration;

use battlelog_auth::{AuthChannel, ShareSecret, authed, read_token_file};
use battlelog_feed::log::LogSpan;
use battlelog_proto::v1::JournalRecord;
use battlelog_proto::v1::journal_client::JournalClient;
use battlelog_proto::v1::resolver_server::ResolverServer;
use battlelog_proto::v1::roller_client::RollerClient;
use battlelog_runtime::grpc;
use battlelog_runtime::nats_url::NatsUrls;
use battlelog_runtime::serve::GrpcServer;
use battlelog_runtime::tls::{self, TlsError};
use prost::Message;
use tokio::net::TcpListener;
use tokio_stream::StreamExt;
use tonic::transport::ClientTlsConfig;

use crate::config::{Config, SERVICE};
use crate::service::ResolverService;

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("{key}: {source}")]
    Url { key: &'static str, source: tonic::transport::Error },
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
    #[error("share_secret_file: {0}")]
    ShareSecret(battlelog_auth::KeyError),
    #[error("battle_id_secret_file: {0}")]
    BattleIdSecret(#[from] crate::battle_id::SecretError),
    #[error(transparent)]
    Config(#[from] battlelog_runtime::config::ConfigError),
}

/// A lazily connecting channel presenting `token`: the resolver may start
/// before its peers.
fn channel(
    key: &'static str,
    url: &str,
    tls: Option<&ClientTlsConfig>,
    token: &str,
) -> Result<AuthChannel, ServeError> {
    let endpoint = tls::endpoint(url, tls).map_err(|source| ServeError::Url { key, source })?;
    Ok(authed(endpoint.connect_lazy(), token)?)
}

/// The service calling the journal and roller at these URLs with `token`
/// (over TLS for `https://` URLs with `tls`).
pub fn service_for(
    journal_url: &str,
    roller_url: &str,
    tls: Option<&ClientTlsConfig>,
    token: &str,
) -> Result<ResolverService, ServeError> {
    Ok(ResolverService::new(
        JournalClient::new(channel("journal_url", journal_url, tls, token)?)
            .max_decoding_message_size(MAX_MESSAGE_BYTES),
        RollerClient::new(channel("roller_url", roller_url, tls, token)?).max_decoding_message_size(MAX_MESSAGE_BYTES),
    ))
}

/// The service for `config`, connected lazily to the journal and roller
/// (over TLS for `https://` URLs, with the config's CA and client identity)
/// with the service token of `token_file`; with `web_url`, linking replies
/// to the battle pages there under the secret of `share_secret_file`.
pub fn service(config: &Config) -> Result<ResolverService, ServeError> {
    let tls = config.client_tls.client_config()?;
    let token = read_token_file(config.token_file.as_deref().unwrap_or(std::path::Path::new("")))?;
    let service = service_for(&config.journal_url, &config.roller_url, tls.as_ref(), &token)?
        .with_cache_bytes(config.cache_bytes)
        .with_append_limits(config.append_limits())
        .with_appeal_window(Duration::from_secs(config.appeal_window_secs))
        .with_max_list_page_size(config.max_list_page_size)
        .with_pending_sweep(config.pending_sweep())
        .with_watch_limits(battlelog_runtime::streams::StreamLimits {
            per_token: config.max_watches_per_token,
            per_connection: config.max_watches_per_connection,
        });
    let service = match &config.battle_id_secret_file {
        Some(path) => service.with_battle_id_secret(BattleIdSecret::read(path)?),
        None => {
            tracing::warn!(
                "no battle_id_secret_file: generated battle ids are keyed with a secret of this process only, \
                 so a retried OpenBattle without battle_id that reaches another replica, or comes after a \
                 restart, opens a second battle"
            );
            service
        }
    };
    // validate() made sure that a web_url comes with its secret's file.
    match (&config.web_url, &config.share_secret_file) {
        (Some(web_url), Some(path)) => {
            let share = ShareSecret::read(path).map_err(ServeError::ShareSecret)?;
            Ok(service.with_links(web_url.clone(), share))
        }
        _ => Ok(service),
    }
}

/// Runs the resolver as configured on `listener` until `shutdown` resolves;
/// serves `/metrics` on `metrics_listen` when set, and prints its readiness
/// line once every file is read.
pub async fn run(
    config: &Config,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    let mut server = GrpcServer::new(SERVICE, config.tokens.verifier()?)
        .configured(&config.shared, &config.server_tls, &config.grpc_limits)?
        .rate_limit(config.rate_limit.clone());
    let metrics = crate::ResolverMetrics::register(server.registry().sub_registry_with_prefix(SERVICE));
    let service = service(config)?.with_metrics(metrics);
    if let Some(url) = &config.nats_url {
        // validate() read it already; a config built in code may not have been.
        let urls = NatsUrls::for_key("nats_url", url)?;
        let feed = warm_from_nats(service.clone(), urls, format!("{}.>", config.nats_subject_prefix));
        tokio::spawn(feed);
    }
    serve(service, listener, server, shutdown).await
}

/// Keeps cached battles warm from the journal's NATS fan-out: each message
/// is a hint that its battle moved on (see [`ResolverService::warm`]), and
/// the journal is read for what it holds. Reconnects for ever; a lost
/// message only means the next command reads a little more from the journal.
///
/// `urls` are any nodes of the cluster and may carry credentials
/// (`nats://resolver:<password>@nats:4222`); async-nats 0.51 ignores a URL's
/// userinfo, so [`NatsUrls`] hands them over as connect options, and only
/// the URLs with their passwords masked are logged.
pub async fn warm_from_nats(service: ResolverService, urls: NatsUrls, subject: String) {
    let client = match urls
        .connect_options()
        .name("battlelog-resolver")
        .retry_on_initial_connect()
        .max_reconnects(None)
        .connect(urls.addresses())
        .await
    {
        Ok(client) => client,
        Err(error) => {
            tracing::warn!(
                url = %urls.redacted(),
                %error,
                "cannot follow the NATS event feed; battles warm from the journal only"
            );
            return;
        }
    };
    let mut messages = match client.subscribe(subject.clone()).await {
        Ok(messages) => messages,
        Err(error) => {
            tracing::warn!(%subject, %error, "cannot subscribe to the NATS event feed");
            return;
        }
    };
    tracing::info!(url = %urls.redacted(), %subject, "following the NATS event feed");
    while let Some(message) = messages.next().await {
        if let Some(record) = hint(message.headers.as_ref(), message.payload.as_ref()) {
            service.warm(record);
        }
    }
}

/// What a message of the event feed says moved: the sled journal's fan-out
/// (`battlelog.events.>`) carries one record as its payload; the JetStream
/// journal's log (`battlelog.journal.>`) carries a group of records, named
/// by its headers (both formats: battlelog_feed). A hint needs only the
/// battle and its newest version (the journal is read for the rest).
fn hint(headers: Option<&async_nats::HeaderMap>, payload: &[u8]) -> Option<JournalRecord> {
    let header = |name: &str| headers.and_then(|h| h.get(name)).map(|v| v.as_str().to_owned());
    match LogSpan::decode(&header) {
        Ok(Some(span)) => {
            Some(JournalRecord { version: span.last_version(), stream_id: span.stream_id, ..JournalRecord::default() })
        }
        // An append message whose headers are wrong hints nothing.
        Err(_) => None,
        Ok(None) => JournalRecord::decode(payload).ok(),
    }
}

/// Serves `service` on `listener` with `server` (TLS, limits, the tenant
/// rate limit, metrics: battlelog_runtime::serve) until `shutdown`
/// resolves; in-flight requests finish before it returns.
///
/// Who may call: every RPC of `Resolver` needs a valid token (checked at
/// the door); which roles and tenant each call admits is checked by the
/// service itself (`service::rights`). Health and reflection need none.
/// With a rate limit, every verified call but a `service` token's counts
/// against its tenant's rate: the forums' and readers' traffic is what one
/// tenant could flood with, and battlelog's own services must not be
/// throttled by it.
pub async fn serve(
    service: ResolverService,
    listener: TcpListener,
    server: GrpcServer,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    // Roll-forward for battles nobody touches; it ends with the shutdown.
    tokio::spawn(service.clone().sweep_pending());
    let on_shutdown = {
        let service = service.clone();
        async move {
            shutdown.await;
            service.begin_shutdown();
        }
    };
    server.serve(ResolverServer::new(service), listener, on_shutdown).await?;
    Ok(())
}

#[cfg(test)]
mod hint_tests {
    use super::*;

    #[test]
    fn hints_come_from_a_record_or_a_journal_message_headers() {
        let record = JournalRecord { stream_id: "b1".into(), version: 4, ..JournalRecord::default() };
        assert_eq!(hint(None, &record.encode_to_vec()), Some(record));
        let mut headers = async_nats::HeaderMap::new();
        headers.insert(battlelog_feed::headers::STREAM, "b2");
        headers.insert(battlelog_feed::headers::FIRST_VERSION, "5");
        headers.insert(battlelog_feed::headers::COUNT, "3");
        let got = hint(Some(&headers), b"not a record").expect("a hint");
        assert_eq!((got.stream_id.as_str(), got.version), ("b2", 7));
        headers.insert(battlelog_feed::headers::COUNT, "0");
        assert_eq!(hint(Some(&headers), b""), None, "an empty group names no version");
    }
}
