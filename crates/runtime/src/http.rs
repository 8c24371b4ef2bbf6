//! The one way battlelog serves plain HTTP (the web pages, the webhooks
//! service's admin port): hyper's own HTTP/1 server with a header-read
//! timeout, a cap on connections and tower-http's request timeout, each a
//! config key ([`HttpLimits`]).

use std::future::Future;

use serde::{Deserialize, Serialize};
use tokio::net::TcpListener;

use crate::config::ConfigError;

/// An HTTP server's connection and request limits (the web's; the
/// webhooks service's admin port takes the same, under `http_`-prefixed keys).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct HttpLimits {
    /// Connections served at once; one more is closed as soon as it is
    /// accepted.
    #[serde(deserialize_with = "crate::config::number")]
    pub max_connections: usize,
    /// Milliseconds a client has to send a request's whole head (request
    /// line and headers), counted from when the server starts waiting for
    /// it: on a new connection, and on a kept-alive one after each response,
    /// so it is the idle timeout too. Past it, the server closes the
    /// connection (hyper's `header_read_timeout`).
    #[serde(deserialize_with = "crate::config::number")]
    pub header_read_timeout_ms: u64,
    /// Milliseconds a request may take to be answered; past it, 503
    /// (tower-http's `TimeoutLayer`).
    #[serde(deserialize_with = "crate::config::number")]
    pub request_timeout_ms: u64,
    /// Connections one client address (an IPv6 address's /64) holds at
    /// once, of `max_connections`; one more is closed as soon as it is
    /// accepted. Keeps a flood from one address — silent, slow, or kept
    /// alive by a request every few seconds — from taking every visitor's
    /// slot.
    #[serde(deserialize_with = "crate::config::number")]
    pub max_connections_per_address: usize,
}

impl Default for HttpLimits {
    fn default() -> Self {
        Self {
            max_connections: 1_000,
            header_read_timeout_ms: 10_000,
            request_timeout_ms: 30_000,
            max_connections_per_address: 100,
        }
    }
}

impl HttpLimits {
    /// Every limit is at least 1: a zero would refuse or cut everything.
    pub fn validate(&self) -> Result<(), ConfigError> {
        for (key, value) in [
            ("max_connections", self.max_connections as u64),
            ("header_read_timeout_ms", self.header_read_timeout_ms),
            ("request_timeout_ms", self.request_timeout_ms),
            ("max_connections_per_address", self.max_connections_per_address as u64),
        ] {
            if value == 0 {
                return Err(ConfigError::Invalid { key, message: "must be at least 1".into() });
            }
        }
        Ok(())
    }
}

/// Serves `app` on `listener` until `shutdown` resolves, then lets the
/// requests in flight finish.
///
/// hyper's own HTTP/1 server rather than `axum::serve`, which does not
/// expose it: `header_read_timeout` closes a connection that does not send
/// a request head in time — a silent one, a slowloris one, an idle
/// kept-alive one. At most `max_connections` are served at once, and at
/// most `max_connections_per_address` from one client address; one more
/// is closed as soon as it is accepted, so that a flood costs the process
/// no more file descriptors than the limit, and a flood from one address
/// leaves the others their slots. tower-http's `TimeoutLayer`
/// answers a request not done within `request_timeout_ms` with 503.
/// With `metrics`, every request is observed
/// ([`crate::observe_http`]: span, metrics, access-log line), outside the
/// timeout so that its 503 is counted too.
pub async fn serve_limited(
    app: axum::Router,
    listener: TcpListener,
    limits: HttpLimits,
    metrics: Option<crate::observe_http::HttpMetrics>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    use hyper_util::rt::{TokioIo, TokioTimer};
    use hyper_util::server::graceful::GracefulShutdown;
    use hyper_util::service::TowerToHyperService;

    let timeout = std::time::Duration::from_millis(limits.request_timeout_ms);
    let app = app.layer(tower_http::timeout::TimeoutLayer::with_status_code(
        axum::http::StatusCode::SERVICE_UNAVAILABLE,
        timeout,
    ));
    let app = match metrics {
        Some(metrics) => crate::observe_http::layer(app, metrics),
        None => app,
    };
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(std::time::Duration::from_millis(limits.header_read_timeout_ms));
    let slots = std::sync::Arc::new(tokio::sync::Semaphore::new(limits.max_connections));
    let addresses = crate::share::Shares::new(limits.max_connections_per_address);
    let graceful = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of file descriptors, most likely: the listener
                    // stays readable, so wait a little rather than spin.
                    tracing::warn!(%error, "cannot accept a connection");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        // The address's share first: a peer at its share takes no slot.
        let Some(share) = addresses.try_take(crate::share::peer_key(peer.ip())) else {
            tracing::debug!(%peer, max_connections_per_address = limits.max_connections_per_address, "connection refused: its address holds its share");
            continue;
        };
        let Ok(slot) = std::sync::Arc::clone(&slots).try_acquire_owned() else {
            tracing::debug!(max_connections = limits.max_connections, "connection refused: at the limit");
            continue;
        };
        let _ = stream.set_nodelay(true);
        // The peer, for the access log (as `axum::serve` leaves it).
        let app = tower::ServiceExt::map_request(app.clone(), move |mut request: axum::extract::Request<_>| {
            request.extensions_mut().insert(axum::extract::ConnectInfo(peer));
            request
        });
        let connection = graceful.watch(http.serve_connection(TokioIo::new(stream), TowerToHyperService::new(app)));
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(%error, "connection closed");
            }
            drop((slot, share));
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_of_zero_are_refused_by_name_and_one_is_a_limit() {
        assert!(HttpLimits::default().validate().is_ok());
        assert_eq!(HttpLimits::default().max_connections_per_address, 100);
        for key in ["max_connections", "header_read_timeout_ms", "request_timeout_ms", "max_connections_per_address"] {
            let with = |value: &str| {
                crate::config::Layers::new("sample")
                    .flags([(key.to_owned(), value.to_owned())])
                    .extract::<HttpLimits>()
                    .expect("a number")
            };
            let error = with("0").validate().expect_err(key).to_string();
            assert!(error.starts_with(&format!("invalid config {key}:")), "{error}");
            assert!(with("1").validate().is_ok(), "{key} = 1");
        }
        let from_env = crate::config::Layers::new("sample")
            .env([("BATTLELOG_SAMPLE_MAX_CONNECTIONS_PER_ADDRESS".to_owned(), "7".to_owned())])
            .extract::<HttpLimits>()
            .expect("from the environment");
        assert_eq!(from_env.max_connections_per_address, 7);
    }
}
