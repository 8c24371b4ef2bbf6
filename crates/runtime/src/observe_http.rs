//! What every gRPC request leaves behind ([`crate::observe`]), for the
//! plain-HTTP servers too (the web pages, the webhooks admin port): one
//! layer, put on by [`crate::http::serve_limited`] outermost, so that it
//! sees every request, its request timeout's 503 included.
//!
//! Per request: a span `http.request` whose parent is the W3C trace
//! context of the request's `traceparent` header, with its trace id
//! recorded (so the web's calls to the resolver continue the page's
//! trace); `battlelog_http_server_requests_total{route,status}` and
//! `battlelog_http_server_request_duration_seconds{route}` in the
//! service's registry ([`HttpMetrics`]); and one access-log line (target
//! `battlelog::access`: method, route, status, latency_ms, peer).
//!
//! `route` is the route template axum matched (`/battles/{battle_id}`),
//! else `other`: never the path as sent, so that labels stay bounded and no
//! id lands in them. The query string (a share link's key) and header
//! values are never read into a label or a log line. A request is counted
//! when its response head is ready; a stream (the live page) is timed to
//! its head, not its whole life.

use std::borrow::Cow;
use std::net::SocketAddr;
use std::time::Instant;

use axum::extract::{ConnectInfo, MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};
use tracing::Instrument;

/// The label of a request no route matched.
const OTHER: &str = "other";

/// Latency buckets, in seconds: a page is a resolver read or two.
const BUCKETS: [f64; 14] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct RouteLabels {
    route: Cow<'static, str>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct StatusLabels {
    route: Cow<'static, str>,
    status: u16,
}

fn latency_histogram() -> Histogram {
    Histogram::new(BUCKETS)
}

/// The HTTP metric families of one server (cheap to clone: shared), and
/// the battlelog service it is (its spans' `battlelog.service`, as the gRPC
/// layer's: what tells services apart where one process runs several).
#[derive(Debug, Clone)]
pub struct HttpMetrics {
    service: &'static str,
    requests: Family<StatusLabels, Counter>,
    duration: Family<RouteLabels, Histogram, fn() -> Histogram>,
}

impl HttpMetrics {
    /// Registers the families of the service `service` (`web`, `webhooks`)
    /// in `registry`, the service's top-level one (prefix `battlelog`).
    pub fn register(service: &'static str, registry: &mut Registry) -> Self {
        let metrics =
            Self { service, requests: Family::default(), duration: Family::new_with_constructor(latency_histogram) };
        registry.register(
            "http_server_requests",
            "HTTP requests answered, by route template (other if none matched) and status",
            metrics.requests.clone(),
        );
        registry.register_with_unit(
            "http_server_request_duration",
            "Time from an HTTP request's arrival until its response head, by route template",
            Unit::Seconds,
            metrics.duration.clone(),
        );
        metrics
    }
}

/// `app` observed: a `Router::layer`, so that axum's `MatchedPath` is known
/// to it (on every route, and on the fallback as `other`).
pub fn layer(app: axum::Router, metrics: HttpMetrics) -> axum::Router {
    app.layer(axum::middleware::from_fn_with_state(metrics, observe))
}

/// The span of one request, its parent the caller's trace context, with
/// `trace_id` recorded as `observe`'s gRPC request span does.
fn request_span(service: &'static str, method: &str, route: &str, headers: &axum::http::HeaderMap) -> tracing::Span {
    let span = tracing::info_span!(
        "http.request",
        battlelog.service = service,
        http.method = %method,
        http.route = %route,
        otel.kind = "server",
        trace_id = tracing::field::Empty,
    );
    crate::observe::continue_trace(span, headers)
}

async fn observe(State(metrics): State<HttpMetrics>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let route: Cow<'static, str> = match request.extensions().get::<MatchedPath>() {
        Some(matched) => Cow::Owned(matched.as_str().to_owned()),
        None => Cow::Borrowed(OTHER),
    };
    let method = request.method().clone();
    let peer = request.extensions().get::<ConnectInfo<SocketAddr>>().map(|info| info.0.to_string()).unwrap_or_default();
    let span = request_span(metrics.service, method.as_str(), &route, request.headers());
    let response = next.run(request).instrument(span.clone()).await;
    let elapsed = started.elapsed();
    let status = response.status().as_u16();
    metrics.requests.get_or_create(&StatusLabels { route: route.clone(), status }).inc();
    metrics.duration.get_or_create(&RouteLabels { route: route.clone() }).observe(elapsed.as_secs_f64());
    let latency_ms = elapsed.as_micros() as f64 / 1000.0;
    span.in_scope(|| {
        tracing::info!(target: "battlelog::access", method = %method, route = %route, status, latency_ms, peer = %peer);
    });
    response
}
