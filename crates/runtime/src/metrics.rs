//! A service's Prometheus metrics: its own [`Registry`] (prefix
//! `battlelog`), and `GET /metrics` on a port of its own
//! (`metrics_listen`, [`crate::service::Shared`]).
//!
//! Every service has its own registry, never a global one: `battlelog up`
//! runs four services in one process, and each shows only its own metrics
//! on its own port. The registry is made first ([`registry`]), the service
//! registers what it counts into it (the gRPC layer's families, the
//! domain's under `sub_registry_with_prefix("<service>")`), then it is
//! frozen behind an `Arc` and served ([`start`]).
//!
//! Who may call: anyone who reaches the port. It is an operator's port,
//! like a health port: bind it to an internal interface (the default is
//! not to serve it at all).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;

use crate::http::HttpLimits;

/// The prefix of every battlelog metric.
pub const PREFIX: &str = "battlelog";

/// What `/metrics` answers with: prometheus-client's text encoder writes
/// OpenMetrics text, which Prometheus and the usual parsers read.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// A new registry for `service` (`journal`, `roller`, `resolver`, `web`,
/// `webhooks`) with the prefix `battlelog` and, already registered,
/// `battlelog_build_info{service,version}` = 1: which build answers, for
/// dashboards and for an alert on a mixed rollout.
pub fn registry(service: &'static str) -> Registry {
    let mut registry = Registry::with_prefix(PREFIX);
    let build_info = Family::<Vec<(&'static str, String)>, Gauge>::default();
    build_info.get_or_create(&vec![("service", service.to_owned()), ("version", crate::VERSION.to_owned())]).set(1);
    registry.register("build_info", "The service and the battlelog version of this process (always 1).", build_info);
    registry
}

/// The text of `/metrics` for `registry`.
pub fn encode(registry: &Registry) -> Result<String, std::fmt::Error> {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, registry)?;
    Ok(text)
}

/// The router of the metrics port: `GET /metrics`, anything else 404.
pub fn router(registry: Arc<Registry>) -> axum::Router {
    let metrics = move || {
        let registry = Arc::clone(&registry);
        async move {
            match encode(&registry) {
                Ok(text) => ([(header::CONTENT_TYPE, CONTENT_TYPE)], text).into_response(),
                // Only a failing `fmt::Write` into a String: never, in practice.
                Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
            }
        }
    };
    axum::Router::new().route("/metrics", axum::routing::get(metrics)).fallback(|| async {
        Response::builder()
            .status(StatusCode::NOT_FOUND)
            .header(header::CONTENT_TYPE, "text/plain; charset=utf-8")
            .body(axum::body::Body::from("not found; the metrics are at /metrics\n"))
            .unwrap_or_default()
    })
}

/// Serves `GET /metrics` from `registry` on `listener` until `shutdown`
/// resolves, with the hardened HTTP serving of [`crate::http`] (its
/// default limits: a scraper needs no more).
pub async fn serve(
    listener: TcpListener,
    registry: Arc<Registry>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    crate::http::serve_limited(router(registry), listener, HttpLimits::default(), None, shutdown).await
}

/// A metrics port being served; [`Endpoint::stop`] ends it.
#[derive(Debug)]
pub struct Endpoint {
    addr: SocketAddr,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Endpoint {
    /// The address it listens on (port 0 resolved).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops serving and waits for the scrapes in flight.
    pub async fn stop(self) {
        let _ = self.stop.send(());
        match self.task.await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => tracing::warn!(%error, "the metrics port failed"),
            Err(error) => tracing::warn!(%error, "the metrics port's task failed"),
        }
    }
}

/// Binds `listen` and serves `registry`'s `/metrics` there in a task of
/// its own, until [`Endpoint::stop`].
pub async fn start(listen: SocketAddr, registry: Arc<Registry>) -> std::io::Result<Endpoint> {
    let listener = TcpListener::bind(listen).await.map_err(|error| {
        std::io::Error::new(error.kind(), format!("cannot listen on {listen} for metrics_listen: {error}"))
    })?;
    let addr = listener.local_addr()?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(serve(listener, registry, async move {
        // A dropped sender stops it too.
        let _ = stopped.await;
    }));
    Ok(Endpoint { addr, stop, task })
}

#[cfg(test)]
mod tests {
    use prometheus_client::metrics::counter::Counter;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// One HTTP/1.1 request to `addr`; the whole response as text.
    async fn get(addr: SocketAddr, path: &str) -> String {
        let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let request = format!("GET {path} HTTP/1.1\r\nHost: metrics\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.expect("send");
        let mut response = String::new();
        stream.read_to_string(&mut response).await.expect("read");
        response
    }

    /// The value of the sample `name{labels}` in an exposition, parsed
    /// line by line as a scraper does (`# ` lines are metadata).
    fn sample(text: &str, name_and_labels: &str) -> Option<f64> {
        text.lines()
            .filter(|line| !line.starts_with('#'))
            .find_map(|line| line.strip_prefix(name_and_labels)?.strip_prefix(' ')?.trim().parse().ok())
    }

    #[tokio::test]
    async fn metrics_are_served_as_openmetrics_text_and_other_paths_are_404() {
        let mut registry = registry("journal");
        let appends = Counter::<u64>::default();
        registry.sub_registry_with_prefix("journal").register("appends", "Appends.", appends.clone());
        appends.inc_by(3);
        let endpoint = start("127.0.0.1:0".parse().unwrap(), Arc::new(registry)).await.expect("bind");

        let response = get(endpoint.addr(), "/metrics").await;
        let (head, body) = response.split_once("\r\n\r\n").expect("a head and a body");
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert!(head.to_ascii_lowercase().contains(&format!("content-type: {CONTENT_TYPE}")), "{head}");
        let version = format!("battlelog_build_info{{service=\"journal\",version=\"{}\"}}", env!("CARGO_PKG_VERSION"));
        assert_eq!(sample(body, &version), Some(1.0), "{body}");
        assert_eq!(sample(body, "battlelog_journal_appends_total"), Some(3.0), "{body}");
        assert!(body.contains("# TYPE battlelog_journal_appends counter"), "{body}");
        assert!(body.trim_end().ends_with("# EOF"), "OpenMetrics ends with # EOF: {body}");

        for path in ["/", "/metrics/", "/healthz", "/metricsx"] {
            let response = get(endpoint.addr(), path).await;
            assert!(response.starts_with("HTTP/1.1 404"), "{path}: {response}");
        }
        // Read-only: nothing but GET (and HEAD, which axum answers with it).
        for method in ["POST", "PUT", "DELETE"] {
            let mut stream = tokio::net::TcpStream::connect(endpoint.addr()).await.expect("connect");
            let request = format!(
                "{method} /metrics HTTP/1.1\r\nHost: metrics\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
            stream.write_all(request.as_bytes()).await.expect("send");
            let mut response = String::new();
            stream.read_to_string(&mut response).await.expect("read");
            assert!(response.starts_with("HTTP/1.1 405"), "{method}: {response}");
        }
        let addr = endpoint.addr();
        endpoint.stop().await;
        assert!(tokio::net::TcpStream::connect(addr).await.is_err(), "stopped: the port is closed");
    }

    #[tokio::test]
    async fn a_metrics_port_that_cannot_be_bound_names_the_key() {
        let taken = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let error = start(taken.local_addr().unwrap(), Arc::new(registry("roller"))).await.expect_err("in use");
        assert!(error.to_string().contains("metrics_listen"), "{error}");
    }
}
