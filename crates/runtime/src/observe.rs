//! The one tower layer every gRPC server wears, outermost (the serve
//! builder puts it there), so that it sees every request: health,
//! reflection, and the refusals of every layer and interceptor inside it
//! (load shedding, authentication, rate limits, undecodable requests).
//!
//! For each request it keeps, in the server's own Prometheus registry
//! ([`GrpcMetrics`]):
//!
//! - `battlelog_grpc_server_requests_total{service,method,code}` and
//!   `battlelog_grpc_server_request_duration_seconds{service,method}`;
//! - `battlelog_grpc_server_auth_refusals_total{reason}`,
//!   `battlelog_grpc_server_rate_limited_total{tenant}` and
//!   `battlelog_grpc_server_shed_total{service}`, read from the refusal's
//!   google.rpc `ErrorInfo` (battlelog_proto::error);
//! - `battlelog_grpc_server_open_streams{service,method}`.
//!
//! Every label set known before anything happens is there at zero from the
//! start ([`layer`]): `shed` for each served service, `open_streams` for
//! each of their server-streaming methods, `auth_refusals` for each of
//! battlelog's reasons with an UNAUTHENTICATED or PERMISSION_DENIED code;
//! and `rate_limited` for a tenant from its first request on a server that
//! rate-limits ([`GrpcMetrics::tenant_seen`]), before the first refusal can
//! come. A series that appears only with its first event makes dashboards
//! show "no data" and `rate()`/`increase()` miss that event: Prometheus
//! needs a sample before the change to see one.
//!
//! It opens a span `grpc.request` per request whose parent is the W3C trace
//! context of the request's `traceparent` header (through the globally
//! installed text-map propagator), records the trace id on it, and writes
//! one access-log line per request (target `battlelog::access`: method,
//! code, latency_ms, tenant, subject, peer — never a header's value).
//!
//! When a call ends: a gRPC status is in the response's trailers, except
//! for a trailers-only response (a refusal before the handler answered,
//! whose headers carry `grpc-status`). So the response body is wrapped, and
//! the call is counted when its status is known: at the headers of a
//! trailers-only response, at the trailers otherwise, and as `CANCELLED`
//! when the call is dropped before its status (the client went away before
//! the answer, or in the middle of a stream).
//!
//! Labels stay bounded: `service` and `method` come only from the methods
//! the descriptors of the served services declare (anything else is
//! `other`), an auth reason only from battlelog's own reasons, a tenant only
//! from a rate-limit refusal (whose tenant came from a verified token).
//!
//! A stream is a call to a method its descriptor declares server-streaming
//! (battlelog's watches, health's `Watch`, reflection): it is open from its
//! response headers until its body ends or is dropped.

use std::borrow::Cow;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll, ready};
use std::time::Instant;

use battlelog_proto::error::{LimitReason, Reason};
use http_body::{Body, Frame, SizeHint};
use opentelemetry::propagation::Extractor;
use opentelemetry::trace::{TraceContextExt, TraceId};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};
use tonic::codegen::http;
use tonic::service::Interceptor;
use tonic::transport::server::{TcpConnectInfo, TlsConnectInfo};
use tonic::{Code, Status};
use tonic_types::StatusExt;
use tower::{BoxError, Layer, Service};
use tracing::Instrument;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::edge::EdgeConnectInfo;

/// The label of a path that is not a method of a served service.
const OTHER: &str = "other";

/// Latency buckets, in seconds: from a cached read (a millisecond) to a
/// flush that waited on a slow disk; streams, which last minutes, land in
/// `+Inf`.
const BUCKETS: [f64; 14] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct MethodLabels {
    service: Cow<'static, str>,
    method: Cow<'static, str>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct CodeLabels {
    service: Cow<'static, str>,
    method: Cow<'static, str>,
    code: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ReasonLabels {
    reason: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct TenantLabels {
    tenant: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ServiceLabels {
    service: Cow<'static, str>,
}

type Durations = Family<MethodLabels, Histogram, fn() -> Histogram>;

fn latency_histogram() -> Histogram {
    Histogram::new(BUCKETS)
}

/// The cross-cutting gRPC metric families of one server (cheap to clone:
/// every family is shared).
#[derive(Debug, Clone)]
pub struct GrpcMetrics {
    requests: Family<CodeLabels, Counter>,
    duration: Durations,
    auth_refusals: Family<ReasonLabels, Counter>,
    rate_limited: Family<TenantLabels, Counter>,
    shed: Family<ServiceLabels, Counter>,
    open_streams: Family<MethodLabels, Gauge>,
}

impl GrpcMetrics {
    /// Registers the families in `registry`, the service's top-level one
    /// (prefix `battlelog`).
    pub fn register(registry: &mut Registry) -> Self {
        let metrics = Self {
            requests: Family::default(),
            duration: Family::new_with_constructor(latency_histogram),
            auth_refusals: Family::default(),
            rate_limited: Family::default(),
            shed: Family::default(),
            open_streams: Family::default(),
        };
        registry.register(
            "grpc_server_requests",
            "gRPC requests answered, by service, method and status code (a request dropped by its client is CANCELLED)",
            metrics.requests.clone(),
        );
        registry.register_with_unit(
            "grpc_server_request_duration",
            "Time from a gRPC request's arrival until its status is known (for a stream: its whole life)",
            Unit::Seconds,
            metrics.duration.clone(),
        );
        registry.register(
            "grpc_server_auth_refusals",
            "gRPC requests refused UNAUTHENTICATED or PERMISSION_DENIED, by the ErrorInfo reason (UNKNOWN if none)",
            metrics.auth_refusals.clone(),
        );
        registry.register(
            "grpc_server_rate_limited",
            "gRPC requests refused RESOURCE_EXHAUSTED because their tenant was over its rate limit, by tenant",
            metrics.rate_limited.clone(),
        );
        registry.register(
            "grpc_server_shed",
            "gRPC requests shed at max_concurrent_requests, by service; shedding happens before the token is \
             read, so there is no tenant",
            metrics.shed.clone(),
        );
        registry.register(
            "grpc_server_open_streams",
            "Server streams open now, by service and method",
            metrics.open_streams.clone(),
        );
        for reason in
            Reason::all().into_iter().filter(|r| matches!(r.code(), Code::Unauthenticated | Code::PermissionDenied))
        {
            let _ = metrics.auth_refusals.get_or_create(&ReasonLabels { reason: reason.as_str().to_owned() });
        }
        metrics
    }

    /// Puts `tenant`'s `rate_limited` series on `/metrics` at zero unless it
    /// is there: a server that rate-limits calls it for each admitted
    /// request's tenant, so that the tenant's first refusal is an increase
    /// Prometheus sees. Tenants come from verified tokens only, as the
    /// refusals' do.
    pub fn tenant_seen(&self, tenant: &str) {
        // A read lock in the usual case: the series exists. The guard is
        // dropped at once: the series' being there is the point.
        let _ = self.rate_limited.get_or_create(&TenantLabels { tenant: tenant.to_owned() });
    }

    /// Every label set `served` knows before any request, at zero.
    fn seed(&self, served: &Served) {
        for service in &served.services {
            let _ = self.shed.get_or_create(&ServiceLabels { service: Cow::Borrowed(*service) });
        }
        for info in served.methods.values().filter(|info| info.streaming) {
            let _ = self.open_streams.get_or_create(&info.labels);
        }
    }
}

/// What the layer knows of one served method.
#[derive(Debug, Clone)]
struct MethodInfo {
    labels: MethodLabels,
    streaming: bool,
}

/// The methods of the served services, by path (`/battlelog.v1.Resolver/Act`).
#[derive(Debug)]
struct Served {
    services: Vec<&'static str>,
    methods: HashMap<String, MethodInfo>,
}

/// What every server answers beside its own service (`crate::grpc`'s
/// health and reflections): always counted as served.
const ALWAYS_SERVED: [&str; 3] =
    ["grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection"];

impl Served {
    /// Reads the methods of `served` (and of [`ALWAYS_SERVED`]) from the
    /// descriptors this workspace serves: battlelog's, health's and both
    /// reflections'.
    fn new(served: &[&'static str]) -> Self {
        let mut served = served.to_vec();
        for name in ALWAYS_SERVED {
            if !served.contains(&name) {
                served.push(name);
            }
        }
        let sets = [
            battlelog_proto::FILE_DESCRIPTOR_SET,
            tonic_health::pb::FILE_DESCRIPTOR_SET,
            tonic_reflection::pb::v1::FILE_DESCRIPTOR_SET,
            tonic_reflection::pb::v1alpha::FILE_DESCRIPTOR_SET,
        ];
        let mut methods = HashMap::new();
        for set in sets {
            // The sets are compiled in: one that does not decode is a build
            // fault, and costs only its methods' labels (they count as `other`).
            let Ok(set) = <prost_types::FileDescriptorSet as prost::Message>::decode(set) else {
                tracing::error!("a compiled-in file descriptor set does not decode");
                continue;
            };
            for file in &set.file {
                for service in &file.service {
                    let full = match file.package() {
                        "" => service.name().to_owned(),
                        package => format!("{package}.{}", service.name()),
                    };
                    let Some(&name) = served.iter().find(|&&name| name == full) else {
                        continue;
                    };
                    for method in &service.method {
                        let info = MethodInfo {
                            labels: MethodLabels {
                                service: Cow::Borrowed(name),
                                method: Cow::Owned(method.name().to_owned()),
                            },
                            streaming: method.server_streaming(),
                        };
                        methods.insert(format!("/{full}/{}", method.name()), info);
                    }
                }
            }
        }
        Self { services: served, methods }
    }

    /// The labels of `path`: a declared method of a served service; or a
    /// served service's unknown method (`method="other"`); or neither.
    fn resolve(&self, path: &str) -> Option<MethodInfo> {
        if let Some(info) = self.methods.get(path) {
            return Some(info.clone());
        }
        let service = path.strip_prefix('/')?.split('/').next()?;
        let &service = self.services.iter().find(|&&name| name == service)?;
        Some(MethodInfo {
            labels: MethodLabels { service: Cow::Borrowed(service), method: Cow::Borrowed(OTHER) },
            streaming: false,
        })
    }
}

/// The layer of the battlelog service `service` (`journal`, `roller`,
/// `resolver`: each request span carries it as `battlelog.service`, which
/// tells the services apart where one process runs several, as `battlelog
/// up` does); `served` are the full gRPC names of the services this server
/// answers (`battlelog.v1.Resolver`); health and both reflections, which
/// every server answers, are always counted as served.
pub fn layer(service: &'static str, served: &[&'static str], metrics: GrpcMetrics) -> ObserveLayer {
    let served = Served::new(served);
    metrics.seed(&served);
    ObserveLayer { service, served: Arc::new(served), metrics }
}

/// See [`layer`].
#[derive(Debug, Clone)]
pub struct ObserveLayer {
    service: &'static str,
    served: Arc<Served>,
    metrics: GrpcMetrics,
}

impl<S> Layer<S> for ObserveLayer {
    type Service = Observe<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Observe { inner, service: self.service, served: Arc::clone(&self.served), metrics: self.metrics.clone() }
    }
}

/// See [`layer`].
#[derive(Debug, Clone)]
pub struct Observe<S> {
    inner: S,
    service: &'static str,
    served: Arc<Served>,
    metrics: GrpcMetrics,
}

/// Who called, as the authenticator verified it: [`CallerNote`] fills the
/// slot the layer put in the request's extensions, the access-log line
/// reads it when the call ends.
#[derive(Debug, Clone, Default)]
struct CallerSlot(Arc<OnceLock<(String, String)>>);

/// A tonic interceptor to run right after the authenticator: it notes the
/// verified caller's tenant and subject for the access log. It never
/// refuses: a request without a caller (an unauthenticated service) passes
/// as it came. Chain it after the authenticator in one interceptor
/// (`move |request| CallerNote.call(authenticator.call(request)?)`), or
/// wrap it inside the authenticator's `InterceptedService`.
#[derive(Debug, Clone, Copy, Default)]
pub struct CallerNote;

impl Interceptor for CallerNote {
    fn call(&mut self, request: tonic::Request<()>) -> Result<tonic::Request<()>, Status> {
        let extensions = request.extensions();
        if let (Some(slot), Some(caller)) = (extensions.get::<CallerSlot>(), extensions.get::<battlelog_auth::Caller>())
        {
            // A second note (two interceptors) keeps the first: the same caller.
            let _ = slot.0.set((caller.tenant.clone(), caller.subject.clone()));
        }
        Ok(request)
    }
}

/// The request's headers, as OpenTelemetry's propagators read them.
struct HeaderExtractor<'a>(&'a http::HeaderMap);

impl Extractor for HeaderExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|value| value.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(http::HeaderName::as_str).collect()
    }
}

/// The span of one request, its parent the trace context the caller sent,
/// with `trace_id` recorded: the span's own trace id when an OpenTelemetry
/// layer builds spans, else the caller's, so the log lines inside it show
/// the trace they belong to either way.
fn request_span(service: &'static str, labels: &MethodLabels, headers: &http::HeaderMap) -> tracing::Span {
    let span = tracing::info_span!(
        "grpc.request",
        battlelog.service = service,
        rpc.service = %labels.service,
        rpc.method = %labels.method,
        otel.kind = "server",
        trace_id = tracing::field::Empty,
    );
    continue_trace(span, headers)
}

/// `span` (a request's, with an empty `trace_id` field) as a child of the
/// trace context the caller sent in `headers` (W3C `traceparent`, through
/// the global propagator), with `trace_id` recorded: the span's own trace
/// id when an OpenTelemetry layer builds spans, else the caller's, so the
/// log lines inside it show the trace they belong to either way. The gRPC
/// and the plain-HTTP layers (observe_http) both start their spans here.
pub(crate) fn continue_trace(span: tracing::Span, headers: &http::HeaderMap) -> tracing::Span {
    if span.is_disabled() {
        return span;
    }
    let parent =
        opentelemetry::global::get_text_map_propagator(|propagator| propagator.extract(&HeaderExtractor(headers)));
    let parent_trace = parent.span().span_context().trace_id();
    // Fails only without an OpenTelemetry layer (no exporter configured):
    // the caller's trace id is still recorded below.
    let _ = span.set_parent(parent);
    let own_trace = span.context().span().span_context().trace_id();
    let trace = if own_trace != TraceId::INVALID { own_trace } else { parent_trace };
    if trace != TraceId::INVALID {
        span.record("trace_id", tracing::field::display(trace));
    }
    span
}

/// The peer's address, from whichever connection info the listener left.
fn peer(extensions: &http::Extensions) -> Option<SocketAddr> {
    extensions
        .get::<EdgeConnectInfo>()
        .map(|info| &info.tcp)
        .or_else(|| extensions.get::<TlsConnectInfo<EdgeConnectInfo>>().map(|info| &info.get_ref().tcp))
        .or_else(|| extensions.get::<TcpConnectInfo>())
        .or_else(|| extensions.get::<TlsConnectInfo<TcpConnectInfo>>().map(TlsConnectInfo::get_ref))
        .and_then(TcpConnectInfo::remote_addr)
}

/// The canonical name of a gRPC code, as Prometheus labels and logs show it.
fn code_name(code: Code) -> &'static str {
    match code {
        Code::Ok => "OK",
        Code::Cancelled => "CANCELLED",
        Code::Unknown => "UNKNOWN",
        Code::InvalidArgument => "INVALID_ARGUMENT",
        Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
        Code::NotFound => "NOT_FOUND",
        Code::AlreadyExists => "ALREADY_EXISTS",
        Code::PermissionDenied => "PERMISSION_DENIED",
        Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
        Code::FailedPrecondition => "FAILED_PRECONDITION",
        Code::Aborted => "ABORTED",
        Code::OutOfRange => "OUT_OF_RANGE",
        Code::Unimplemented => "UNIMPLEMENTED",
        Code::Internal => "INTERNAL",
        Code::Unavailable => "UNAVAILABLE",
        Code::DataLoss => "DATA_LOSS",
        Code::Unauthenticated => "UNAUTHENTICATED",
    }
}

/// A call not yet counted. Dropped unfinished (its body dropped before the
/// trailers: the client went away, or the server shut down), it counts as
/// `CANCELLED`.
struct Pending {
    metrics: GrpcMetrics,
    labels: MethodLabels,
    /// What the access log names: the path of a known method, else `other`.
    path: Cow<'static, str>,
    peer: Option<SocketAddr>,
    caller: CallerSlot,
    started: Instant,
    span: tracing::Span,
    /// Set while a server stream is open: it leaves the gauge when dropped.
    stream: Option<StreamOpen>,
    done: bool,
}

/// One open stream in `battlelog_grpc_server_open_streams`.
struct StreamOpen(Gauge);

impl Drop for StreamOpen {
    fn drop(&mut self) {
        self.0.dec();
    }
}

impl Pending {
    /// Counts the call with its final status (`None`: no status to read,
    /// `code` says why).
    fn finish(&mut self, code: Code, status: Option<&Status>) {
        if std::mem::replace(&mut self.done, true) {
            return;
        }
        self.stream = None;
        let elapsed = self.started.elapsed();
        let metrics = &self.metrics;
        let name = code_name(code);
        metrics
            .requests
            .get_or_create(&CodeLabels {
                service: self.labels.service.clone(),
                method: self.labels.method.clone(),
                code: name,
            })
            .inc();
        metrics.duration.get_or_create(&self.labels).observe(elapsed.as_secs_f64());
        let mut tenant = self.caller.0.get().map(|(tenant, _)| tenant.as_str()).unwrap_or_default().to_owned();
        // Refusals are rare: their details are decoded, an OK's never are.
        if let Some(status) =
            status.filter(|_| matches!(code, Code::Unauthenticated | Code::PermissionDenied | Code::ResourceExhausted))
        {
            let info = status.get_error_details().error_info().cloned();
            match code {
                Code::ResourceExhausted => {
                    let reason = info.as_ref().map(|info| info.reason.as_str());
                    if reason == Some(LimitReason::Overloaded.as_str()) {
                        metrics.shed.get_or_create(&ServiceLabels { service: self.labels.service.clone() }).inc();
                    } else if reason == Some(LimitReason::RateLimited.as_str()) {
                        // The limiter runs after the authenticator: the tenant
                        // is a verified token's, a valid tenant name.
                        let limited = info.as_ref().and_then(|info| info.metadata.get("tenant"));
                        if let Some(limited) = limited.filter(|t| battlelog_auth::validate_tenant(t).is_ok()) {
                            metrics.rate_limited.get_or_create(&TenantLabels { tenant: limited.clone() }).inc();
                            limited.clone_into(&mut tenant);
                        }
                    }
                }
                _ => {
                    // Only battlelog's own reasons become labels: a status
                    // passed on from elsewhere cannot grow the family.
                    let reason = info
                        .map(|info| info.reason)
                        .filter(|reason| Reason::parse(reason).is_some())
                        .unwrap_or_else(|| "UNKNOWN".to_owned());
                    metrics.auth_refusals.get_or_create(&ReasonLabels { reason }).inc();
                }
            }
        }
        let subject = self.caller.0.get().map(|(_, subject)| subject.as_str()).unwrap_or_default();
        let latency_ms = elapsed.as_micros() as f64 / 1000.0;
        let peer = self.peer.map(|peer| peer.to_string()).unwrap_or_default();
        self.span.in_scope(|| {
            tracing::info!(
                target: "battlelog::access",
                method = %self.path,
                code = %name,
                latency_ms,
                tenant = %tenant,
                subject = %subject,
                peer = %peer,
            );
        });
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.finish(Code::Cancelled, None);
    }
}

impl<S, ReqBody, ResBody> Service<http::Request<ReqBody>> for Observe<S>
where
    S: Service<http::Request<ReqBody>, Response = http::Response<ResBody>>,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
    ResBody: Body<Data = tonic::codegen::Bytes> + Send + 'static,
    ResBody::Error: Into<BoxError>,
{
    /// tonic's own body type, so that the layer fits anywhere in a stack of
    /// tonic layers (the edge's layer expects it from what it wraps).
    type Response = http::Response<tonic::body::Body>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, mut request: http::Request<ReqBody>) -> Self::Future {
        let started = Instant::now();
        let info = self.served.resolve(request.uri().path());
        let (labels, streaming, path) = match info {
            Some(info) => {
                // An unknown method of a served service is `other` in the
                // access line too: the client chose that path.
                let path = if info.labels.method == OTHER {
                    Cow::Borrowed(OTHER)
                } else {
                    Cow::Owned(request.uri().path().to_owned())
                };
                (info.labels, info.streaming, path)
            }
            None => (
                MethodLabels { service: Cow::Borrowed(OTHER), method: Cow::Borrowed(OTHER) },
                false,
                Cow::Borrowed(OTHER),
            ),
        };
        let span = request_span(self.service, &labels, request.headers());
        let caller = CallerSlot::default();
        request.extensions_mut().insert(caller.clone());
        let mut pending = Pending {
            metrics: self.metrics.clone(),
            labels,
            path,
            peer: peer(request.extensions()),
            caller,
            started,
            span: span.clone(),
            stream: None,
            done: false,
        };
        // Interceptors run in `call`: inside the span, as the handler.
        let response = span.in_scope(|| self.inner.call(request));
        Box::pin(
            async move {
                let response = match response.await {
                    Ok(response) => response,
                    Err(error) => {
                        let error: BoxError = error.into();
                        let status = error.downcast_ref::<Status>();
                        pending.finish(status.map_or(Code::Unknown, Status::code), status);
                        return Err(error);
                    }
                };
                if let Some(status) = Status::from_header_map(response.headers()) {
                    // Trailers-only: the status is known now.
                    pending.finish(status.code(), Some(&status));
                } else if streaming {
                    let gauge = pending.metrics.open_streams.get_or_create(&pending.labels).clone();
                    gauge.inc();
                    pending.stream = Some(StreamOpen(gauge));
                }
                if response.body().is_end_stream() {
                    // No trailers will come (nothing a gRPC server sends).
                    pending.finish(Code::Unknown, None);
                }
                let pending = (!pending.done).then_some(pending);
                Ok(response.map(|inner| tonic::body::Body::new(ObservedBody { inner, pending })))
            }
            .instrument(span),
        )
    }
}

pin_project_lite::pin_project! {
    /// A response body that counts its call when it yields its trailers.
    struct ObservedBody<B> {
        #[pin]
        inner: B,
        pending: Option<Pending>,
    }
}

impl<B> std::fmt::Debug for ObservedBody<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObservedBody").field("pending", &self.pending.is_some()).finish_non_exhaustive()
    }
}

impl<B: Body> Body for ObservedBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.project();
        let frame = ready!(this.inner.poll_frame(cx));
        if let Some(pending) = this.pending.as_mut() {
            match &frame {
                Some(Ok(frame)) => {
                    if let Some(trailers) = frame.trailers_ref() {
                        match Status::from_header_map(trailers) {
                            Some(status) => pending.finish(status.code(), Some(&status)),
                            // gRPC calls trailers without a status an error.
                            None => pending.finish(Code::Unknown, None),
                        }
                    }
                }
                // The body failed: the client sees its stream reset.
                Some(Err(_)) => pending.finish(Code::Unknown, None),
                // Ended without trailers: no status, which gRPC calls an error.
                None => pending.finish(Code::Unknown, None),
            }
            if pending.done {
                *this.pending = None;
            }
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::Mutex;
    use std::time::{Duration, SystemTime, UNIX_EPOCH};

    use battlelog_auth::{Authenticator, Caller, Role, SigningKey, VerificationKeys, Verifier};
    use governor::clock::FakeRelativeClock;
    use opentelemetry::trace::TracerProvider as _;
    use tonic::codegen::http::uri::PathAndQuery;
    use tonic::service::interceptor::InterceptedService;
    use tonic::transport::{Channel, Server};
    use tonic_health::pb::health_client::HealthClient;
    use tonic_health::pb::{HealthCheckRequest, HealthCheckResponse};
    use tracing_subscriber::layer::SubscriberExt as _;

    use super::*;
    use crate::edge::{GrpcLimits, TenantLimiter, TenantRateLimit};

    const HEALTH: &str = "grpc.health.v1.Health";
    /// A W3C `traceparent` a caller's tracer would send.
    const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
    const PARENT_SPAN: &str = "00f067aa0ba902b7";

    /// What the test server's interceptor does, in this order: verify the
    /// token, rate-limit the caller's tenant, note the caller; and how many
    /// requests its edge serves at once before it sheds.
    #[derive(Clone)]
    struct Door {
        auth: Option<Authenticator>,
        limiter: Option<TenantLimiter<FakeRelativeClock>>,
        max_concurrent_requests: usize,
    }

    impl Default for Door {
        fn default() -> Self {
            Self { auth: None, limiter: None, max_concurrent_requests: 100 }
        }
    }

    struct TestServer {
        addr: SocketAddr,
        registry: Registry,
        _reporter: tonic_health::server::HealthReporter,
        _stop: tokio::sync::oneshot::Sender<()>,
    }

    impl TestServer {
        /// The health service, behind `door` and the undecodable-request
        /// rewrite, under the edge's layer and the observe layer outermost,
        /// on the edge's connections: as the serve builder stacks them.
        async fn start(door: Door) -> Self {
            let mut registry = Registry::with_prefix("battlelog");
            let metrics = GrpcMetrics::register(&mut registry);
            let (reporter, health) = tonic_health::server::health_reporter();
            let max_concurrent_requests = door.max_concurrent_requests;
            let mut door = door;
            let intercept = move |request: tonic::Request<()>| {
                let request = match &mut door.auth {
                    Some(auth) => auth.call(request)?,
                    None => request,
                };
                if let (Some(limiter), Some(caller)) = (&door.limiter, request.extensions().get::<Caller>()) {
                    limiter.check(&caller.tenant)?;
                }
                CallerNote.call(request)
            };
            let service = crate::grpc::undecodable_is_invalid(InterceptedService::new(health, intercept));
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
            let addr = listener.local_addr().expect("address");
            let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
            let server = Server::builder()
                .layer(layer("test", &[HEALTH], metrics))
                .layer(crate::edge::EdgeLayer::new(max_concurrent_requests, max_concurrent_requests))
                .add_service(service)
                .serve_with_incoming_shutdown(crate::edge::incoming(listener, &GrpcLimits::default()), async {
                    let _ = stopped.await;
                });
            tokio::spawn(server);
            Self { addr, registry, _reporter: reporter, _stop: stop }
        }

        async fn channel(&self) -> Channel {
            Channel::from_shared(format!("http://{}", self.addr)).expect("url").connect().await.expect("connect")
        }

        fn scrape(&self) -> String {
            let mut text = String::new();
            prometheus_client::encoding::text::encode(&mut text, &self.registry).expect("encode");
            text
        }

        /// The value of the sample `name` whose labels include `labels`
        /// (0 when there is none), read back from the text format.
        fn sample(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
            sample(&self.scrape(), name, labels)
        }
    }

    fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
        let mut total = 0.0;
        for line in text.lines().filter(|line| !line.starts_with('#')) {
            let (series, value) = line.rsplit_once(' ').expect("a sample line");
            let (metric, set) = series.split_once('{').unwrap_or((series, "}"));
            if metric != name {
                continue;
            }
            let set = set.strip_suffix('}').expect("closing brace");
            let pairs: Vec<(&str, &str)> = set
                .split(',')
                .filter(|pair| !pair.is_empty())
                .map(|pair| {
                    let (key, value) = pair.split_once('=').expect("key=value");
                    (key, value.trim_matches('"'))
                })
                .collect();
            if labels.iter().all(|wanted| pairs.contains(wanted)) {
                total += value.parse::<f64>().expect("a number");
            }
        }
        total
    }

    /// Log output, captured for one test: what its thread logs (the server
    /// runs on the test's single-threaded runtime, so on its thread).
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Captured {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().expect("lock").clone()).expect("utf-8")
        }

        fn access_lines(&self) -> Vec<String> {
            self.text().lines().filter(|line| line.contains("battlelog::access")).map(str::to_owned).collect()
        }
    }

    thread_local! {
        static CAPTURE: std::cell::RefCell<Option<Captured>> = const { std::cell::RefCell::new(None) };
        static SPANS_EXPORTED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }

    /// Writes into the capture of the current thread's test, if any.
    struct ThreadWriter;

    impl Write for ThreadWriter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            CAPTURE.with_borrow(|capture| {
                if let Some(captured) = capture {
                    captured.0.lock().expect("lock").extend_from_slice(buf);
                }
            });
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// The spans the OpenTelemetry layer exported (of threads that asked).
    /// (The provider is kept: dropped, it would shut its exporter down.)
    static EXPORTED: OnceLock<(
        opentelemetry_sdk::trace::InMemorySpanExporter,
        opentelemetry_sdk::trace::SdkTracerProvider,
    )> = OnceLock::new();

    /// One global subscriber for the whole test binary, as a service has:
    /// thread-scoped subscribers (`set_default`) of tests running at once
    /// race on tracing's per-callsite interest cache and lose events. Logs
    /// go to the capture of the thread's test; spans reach the
    /// OpenTelemetry layer only on threads that turned it on, so the other
    /// tests see a service without an exporter. It also installs the W3C
    /// propagator, as `telemetry::init` does.
    fn exported() -> &'static opentelemetry_sdk::trace::InMemorySpanExporter {
        use tracing_subscriber::Layer as _;
        &EXPORTED
            .get_or_init(|| {
                opentelemetry::global::set_text_map_propagator(
                    opentelemetry_sdk::propagation::TraceContextPropagator::new(),
                );
                let exporter = opentelemetry_sdk::trace::InMemorySpanExporter::default();
                let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder()
                    .with_simple_exporter(exporter.clone())
                    .build();
                let otel = tracing_opentelemetry::layer()
                    .with_tracer(provider.tracer("test"))
                    .with_filter(tracing_subscriber::filter::filter_fn(|_| SPANS_EXPORTED.get()));
                let subscriber = tracing_subscriber::registry()
                    .with(tracing_subscriber::fmt::layer().with_writer(|| ThreadWriter).with_ansi(false))
                    .with(otel)
                    .with(tracing_subscriber::filter::LevelFilter::INFO);
                tracing::subscriber::set_global_default(subscriber).expect("the test binary's one subscriber");
                (exporter, provider)
            })
            .0
    }

    /// Captures the logs of this thread (and exports its spans, with
    /// `export_spans`) until the guard is dropped.
    fn capture(export_spans: bool) -> (Captured, CaptureGuard) {
        exported();
        let captured = Captured::default();
        CAPTURE.set(Some(captured.clone()));
        SPANS_EXPORTED.set(export_spans);
        (captured, CaptureGuard)
    }

    struct CaptureGuard;

    impl Drop for CaptureGuard {
        fn drop(&mut self) {
            CAPTURE.set(None);
            SPANS_EXPORTED.set(false);
        }
    }

    fn now() -> u64 {
        SystemTime::now().duration_since(UNIX_EPOCH).expect("after 1970").as_secs()
    }

    fn bearer<T>(mut request: tonic::Request<T>, token: &str) -> tonic::Request<T> {
        request.metadata_mut().insert("authorization", format!("Bearer {token}").parse().expect("ascii"));
        request
    }

    fn check() -> tonic::Request<HealthCheckRequest> {
        tonic::Request::new(HealthCheckRequest { service: String::new() })
    }

    /// A unary call of `path` with a message of the wrong shape for it
    /// (a varint where health's request has a string): it does not decode.
    async fn raw_call(channel: Channel, path: &'static str, token: &str) -> Status {
        let mut grpc = tonic::client::Grpc::new(channel);
        grpc.ready().await.expect("ready");
        let codec = tonic_prost::ProstCodec::<prost_types::Duration, HealthCheckResponse>::default();
        let request = bearer(tonic::Request::new(prost_types::Duration { seconds: 5, nanos: 0 }), token);
        grpc.unary(request, PathAndQuery::from_static(path), codec).await.expect_err("refused")
    }

    /// Polls `condition` until it holds, for at most ten seconds.
    async fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !condition() {
            assert!(Instant::now() < deadline, "{what}: not within 10 s");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    #[tokio::test]
    async fn requests_are_counted_by_code_timed_and_logged_once_each_without_their_token() {
        let (captured, _guard) = capture(false);
        let key = SigningKey::generate().expect("key");
        let verifier = Verifier::new(VerificationKeys::from(&key));
        let auth = Authenticator::only(verifier, "Health", &[Role::Forum]);
        let server = TestServer::start(Door { auth: Some(auth), ..Door::default() }).await;
        let channel = server.channel().await;
        let mut client = HealthClient::new(channel.clone());
        let forum = key.issue("alice", "acme", Role::Forum, Duration::from_secs(600)).expect("token");
        let judge = key.issue("jules", "acme", Role::Judge, Duration::from_secs(600)).expect("token");
        let expired = key.issue_at("alice", "acme", Role::Forum, now() - 7200, now() - 3600).expect("token");

        client.check(bearer(check(), &forum)).await.expect("OK with a forum token");
        let undecodable = raw_call(channel.clone(), "/grpc.health.v1.Health/Check", &forum).await;
        assert_eq!(undecodable.code(), Code::InvalidArgument, "{undecodable:?}");
        let missing = client.check(check()).await.expect_err("no token");
        assert_eq!(missing.code(), Code::Unauthenticated);
        let late = client.check(bearer(check(), &expired)).await.expect_err("expired");
        assert_eq!(late.code(), Code::Unauthenticated);
        let denied = client.check(bearer(check(), &judge)).await.expect_err("a judge may not");
        assert_eq!(denied.code(), Code::PermissionDenied);
        let unknown_method = raw_call(channel.clone(), "/grpc.health.v1.Health/Nope", &forum).await;
        assert_eq!(unknown_method.code(), Code::Unimplemented);
        let unknown_service = raw_call(channel.clone(), "/battlelog.v1.Nope/Nope", &forum).await;
        assert_eq!(unknown_service.code(), Code::Unimplemented);

        let requests = "battlelog_grpc_server_requests_total";
        let check_labels = [("service", HEALTH), ("method", "Check")];
        for (code, count) in
            [("OK", 1.0), ("INVALID_ARGUMENT", 1.0), ("UNAUTHENTICATED", 2.0), ("PERMISSION_DENIED", 1.0)]
        {
            let labels = [check_labels[0], check_labels[1], ("code", code)];
            assert_eq!(server.sample(requests, &labels), count, "Check {code}\n{}", server.scrape());
        }
        let unimplemented = [("code", "UNIMPLEMENTED")];
        let other_method = [("service", HEALTH), ("method", "other"), unimplemented[0]];
        assert_eq!(server.sample(requests, &other_method), 1.0, "{}", server.scrape());
        let other_service = [("service", "other"), ("method", "other"), unimplemented[0]];
        assert_eq!(server.sample(requests, &other_service), 1.0, "{}", server.scrape());
        assert!(!server.scrape().contains("Nope"), "a path's own names never become labels");
        let count = server.sample("battlelog_grpc_server_request_duration_seconds_count", &check_labels);
        assert_eq!(count, 5.0, "every Check is timed");
        let refusals = "battlelog_grpc_server_auth_refusals_total";
        for reason in ["TOKEN_MISSING", "TOKEN_EXPIRED", "ROLE_NOT_ALLOWED"] {
            assert_eq!(server.sample(refusals, &[("reason", reason)]), 1.0, "{reason}\n{}", server.scrape());
        }
        assert_eq!(server.sample(refusals, &[]), 3.0, "nothing else is an auth refusal");

        let lines = captured.access_lines();
        assert_eq!(lines.len(), 7, "one line per request:\n{}", lines.join("\n"));
        let ok = &lines[0];
        for field in
            ["method=/grpc.health.v1.Health/Check", "code=OK", "tenant=acme", "subject=alice", "peer=127.0.0.1:"]
        {
            assert!(ok.contains(field), "{field} in {ok}");
        }
        assert!(ok.contains("latency_ms="), "{ok}");
        assert!(lines[1].contains("code=INVALID_ARGUMENT") && lines[1].contains("tenant=acme"), "{}", lines[1]);
        assert!(lines[2].contains("code=UNAUTHENTICATED") && lines[2].contains("tenant= "), "{}", lines[2]);
        assert!(lines[6].contains("method=other"), "an unserved path is not logged as sent: {}", lines[6]);
        let all = captured.text();
        for token in [&forum, &judge, &expired] {
            assert!(!all.contains(token.as_str()), "a token in the logs:\n{all}");
        }
        assert!(!all.contains("Bearer"), "{all}");
    }

    #[tokio::test]
    async fn rate_limited_refusals_count_by_tenant() {
        let (captured, _guard) = capture(false);
        let key = SigningKey::generate().expect("key");
        let verifier = Verifier::new(VerificationKeys::from(&key));
        let keys = TenantRateLimit { rate_limit_per_sec: 1, rate_limit_burst: 1, rate_limit_tenants: 10 };
        let limiter = TenantLimiter::new(&keys, FakeRelativeClock::default());
        let server =
            TestServer::start(Door { auth: Some(Authenticator::new(verifier)), limiter, ..Door::default() }).await;
        let mut client = HealthClient::new(server.channel().await);
        let token = key.issue("alice", "acme", Role::Forum, Duration::from_secs(600)).expect("token");
        client.check(bearer(check(), &token)).await.expect("the burst of 1");
        let limited = client.check(bearer(check(), &token)).await.expect_err("past the burst");
        assert_eq!(limited.code(), Code::ResourceExhausted);
        assert_eq!(server.sample("battlelog_grpc_server_rate_limited_total", &[("tenant", "acme")]), 1.0);
        assert_eq!(server.sample("battlelog_grpc_server_shed_total", &[]), 0.0);
        let refused = &captured.access_lines()[1];
        assert!(refused.contains("code=RESOURCE_EXHAUSTED") && refused.contains("tenant=acme"), "{refused}");
    }

    #[tokio::test]
    async fn requests_shed_at_the_edge_count_by_service() {
        let server = TestServer::start(Door { max_concurrent_requests: 1, ..Door::default() }).await;
        let channel = server.channel().await;
        // A Check whose request message never comes holds the one slot:
        // its handler waits for the message, the edge counts it running.
        let mut grpc = tonic::client::Grpc::new(channel.clone());
        grpc.ready().await.expect("ready");
        let codec = tonic_prost::ProstCodec::<HealthCheckRequest, HealthCheckResponse>::default();
        let held = tokio::spawn(async move {
            let never = tonic::Request::new(tokio_stream::pending::<HealthCheckRequest>());
            let _ = grpc.streaming(never, PathAndQuery::from_static("/grpc.health.v1.Health/Check"), codec).await;
        });
        let mut client = HealthClient::new(channel);
        let deadline = Instant::now() + Duration::from_secs(10);
        let shed = loop {
            // Until the held request has reached the edge.
            match client.check(check()).await {
                Err(status) => break status,
                Ok(_) => assert!(Instant::now() < deadline, "nothing shed within 10 s"),
            }
            tokio::task::yield_now().await;
        };
        assert_eq!(shed.code(), Code::ResourceExhausted, "{shed:?}");
        assert_eq!(shed.get_error_details().error_info().expect("ErrorInfo").reason, "OVERLOADED");
        assert_eq!(server.sample("battlelog_grpc_server_shed_total", &[("service", HEALTH)]), 1.0);
        assert_eq!(server.sample("battlelog_grpc_server_rate_limited_total", &[]), 0.0);
        let exhausted = [("method", "Check"), ("code", "RESOURCE_EXHAUSTED")];
        assert_eq!(server.sample("battlelog_grpc_server_requests_total", &exhausted), 1.0);
        held.abort();
    }

    #[tokio::test]
    async fn an_open_stream_is_counted_until_its_client_leaves() {
        let server = TestServer::start(Door::default()).await;
        let mut client = HealthClient::new(server.channel().await);
        let watch = [("service", HEALTH), ("method", "Watch")];
        let open = "battlelog_grpc_server_open_streams";
        let mut stream = client.watch(check()).await.expect("watch").into_inner();
        stream.message().await.expect("a status").expect("the first status");
        assert_eq!(server.sample(open, &watch), 1.0, "{}", server.scrape());
        client.check(check()).await.expect("a unary call beside it");
        assert_eq!(server.sample(open, &watch), 1.0, "a unary call is no stream");
        assert_eq!(server.sample(open, &[("method", "Check")]), 0.0);

        drop(stream);
        eventually("the stream closed", || server.sample(open, &watch) == 0.0).await;
        let cancelled = [watch[0], watch[1], ("code", "CANCELLED")];
        eventually("the stream counted", || server.sample("battlelog_grpc_server_requests_total", &cancelled) == 1.0)
            .await;
    }

    fn with_traceparent<T>(mut request: tonic::Request<T>) -> tonic::Request<T> {
        let traceparent = format!("00-{TRACE}-{PARENT_SPAN}-01");
        request.metadata_mut().insert("traceparent", traceparent.parse().expect("ascii"));
        request
    }

    #[tokio::test]
    async fn the_callers_trace_id_shows_in_the_access_line_without_an_exporter() {
        let (captured, _guard) = capture(false);
        let server = TestServer::start(Door::default()).await;
        let mut client = HealthClient::new(server.channel().await);
        client.check(with_traceparent(check())).await.expect("OK");
        client.check(check()).await.expect("OK");
        let lines = captured.access_lines();
        assert!(lines[0].contains(&format!("trace_id={TRACE}")), "{}", lines[0]);
        assert!(!lines[1].contains("trace_id="), "no trace, no id: {}", lines[1]);
    }

    #[tokio::test]
    async fn the_span_of_a_request_is_a_child_of_the_callers_span() {
        let (captured, _guard) = capture(true);
        let exporter = exported();
        let server = TestServer::start(Door::default()).await;
        let mut client = HealthClient::new(server.channel().await);
        client.check(with_traceparent(check())).await.expect("OK");
        client.check(check()).await.expect("OK");

        let spans = || {
            exporter
                .get_finished_spans()
                .expect("spans")
                .into_iter()
                .filter(|span| span.name == "grpc.request")
                .collect::<Vec<_>>()
        };
        eventually("both spans ended", || spans().len() == 2).await;
        let spans = spans();
        let child = &spans[0];
        assert_eq!(child.span_context.trace_id().to_string(), TRACE);
        assert_eq!(child.parent_span_id.to_string(), PARENT_SPAN);
        assert_eq!(child.span_kind, opentelemetry::trace::SpanKind::Server);
        let root = &spans[1];
        assert_ne!(root.span_context.trace_id().to_string(), TRACE, "a request without a traceparent starts a trace");
        let lines = captured.access_lines();
        assert!(lines[0].contains(&format!("trace_id={TRACE}")), "{}", lines[0]);
        let own = format!("trace_id={}", root.span_context.trace_id());
        assert!(lines[1].contains(&own), "the new trace's id: {}", lines[1]);
    }

    #[tokio::test]
    async fn a_call_dropped_before_its_answer_counts_as_cancelled() {
        let mut registry = Registry::with_prefix("battlelog");
        let metrics = GrpcMetrics::register(&mut registry);
        let never = tower::service_fn(|_: http::Request<()>| {
            std::future::pending::<Result<http::Response<tonic::body::Body>, Status>>()
        });
        let mut service = layer("test", &[], metrics).layer(never);
        let request = http::Request::builder().uri("/grpc.health.v1.Health/Check").body(()).expect("request");
        let call = service.call(request);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).expect("encode");
        assert_eq!(sample(&text, "battlelog_grpc_server_requests_total", &[]), 0.0, "not answered yet");
        drop(call);
        text.clear();
        prometheus_client::encoding::text::encode(&mut text, &registry).expect("encode");
        let cancelled = [("service", HEALTH), ("method", "Check"), ("code", "CANCELLED")];
        assert_eq!(sample(&text, "battlelog_grpc_server_requests_total", &cancelled), 1.0, "{text}");
        assert_eq!(sample(&text, "battlelog_grpc_server_requests_total", &[]), 1.0, "{text}");
    }

    /// `GET path` over a fresh connection, with a `traceparent` if given:
    /// the response's status line and the rest.
    async fn http_get(addr: SocketAddr, path: &str, traceparent: Option<&str>) -> String {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let trace = traceparent.map(|t| format!("traceparent: {t}\r\n")).unwrap_or_default();
        let head = format!("GET {path} HTTP/1.1\r\nhost: test\r\nconnection: close\r\n{trace}\r\n");
        stream.write_all(head.as_bytes()).await.expect("write");
        let mut response = String::new();
        stream.read_to_string(&mut response).await.expect("read");
        response
    }

    // Here, beside the gRPC layer's tests, for the test binary's one
    // capturing subscriber.
    #[tokio::test]
    async fn plain_http_requests_are_counted_by_route_and_status_traced_and_logged_without_their_query() {
        let (captured, _guard) = capture(true);
        let exporter = exported();
        let mut registry = Registry::with_prefix("battlelog");
        let metrics = crate::observe_http::HttpMetrics::register("test", &mut registry);
        let app = axum::Router::new()
            .route("/battles/{battle_id}", axum::routing::get(|| async { "a page" }))
            .route("/teapot", axum::routing::get(|| async { (http::StatusCode::IM_A_TEAPOT, "no") }));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("address");
        let (_stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let limits = crate::http::HttpLimits::default();
        tokio::spawn(crate::http::serve_limited(app, listener, limits, Some(metrics), async {
            let _ = stopped.await;
        }));

        let traceparent = format!("00-{TRACE}-{PARENT_SPAN}-01");
        let shared = http_get(addr, "/battles/one?k=secret", Some(&traceparent)).await;
        assert!(shared.starts_with("HTTP/1.1 200"), "{shared}");
        assert!(http_get(addr, "/battles/two", None).await.starts_with("HTTP/1.1 200"));
        assert!(http_get(addr, "/teapot", None).await.starts_with("HTTP/1.1 418"));
        assert!(http_get(addr, "/nowhere/at-all", None).await.starts_with("HTTP/1.1 404"));

        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).expect("encode");
        let requests = "battlelog_http_server_requests_total";
        let page = ("route", "/battles/{battle_id}");
        assert_eq!(sample(&text, requests, &[page, ("status", "200")]), 2.0, "{text}");
        assert_eq!(sample(&text, requests, &[("route", "/teapot"), ("status", "418")]), 1.0, "{text}");
        assert_eq!(sample(&text, requests, &[("route", "other"), ("status", "404")]), 1.0, "{text}");
        assert_eq!(sample(&text, requests, &[]), 4.0, "{text}");
        assert_eq!(sample(&text, "battlelog_http_server_request_duration_seconds_count", &[page]), 2.0, "{text}");
        for sent in ["/battles/one", "/battles/two", "nowhere", "secret"] {
            assert!(!text.contains(sent), "a path as sent never becomes a label: {sent}\n{text}");
        }

        let lines = captured.access_lines();
        assert_eq!(lines.len(), 4, "one line per request:\n{}", lines.join("\n"));
        for field in ["method=GET", "route=/battles/{battle_id}", "status=200", "peer=127.0.0.1:", "latency_ms=", TRACE]
        {
            assert!(lines[0].contains(field), "{field} in {}", lines[0]);
        }
        assert!(lines[1].contains("trace_id=") && !lines[1].contains(TRACE), "a trace of its own: {}", lines[1]);
        assert!(lines[3].contains("route=other") && lines[3].contains("status=404"), "{}", lines[3]);
        let all = captured.text();
        assert!(!all.contains("secret") && !all.contains("k="), "no query string in the logs:\n{all}");

        let spans = || {
            exporter
                .get_finished_spans()
                .expect("spans")
                .into_iter()
                .filter(|span| span.name == "http.request")
                .collect::<Vec<_>>()
        };
        eventually("the spans ended", || spans().len() == 4).await;
        let child = spans().into_iter().find(|span| span.span_context.trace_id().to_string() == TRACE);
        let child = child.expect("the traceparent's trace continues");
        assert_eq!(child.parent_span_id.to_string(), PARENT_SPAN);
        assert_eq!(child.span_kind, opentelemetry::trace::SpanKind::Server);
        let attribute = |key: &str| {
            child.attributes.iter().find(|kv| kv.key.as_str() == key).map(|kv| kv.value.as_str().into_owned())
        };
        assert_eq!(attribute("battlelog.service").as_deref(), Some("test"), "{child:#?}");
        assert_eq!(attribute("http.route").as_deref(), Some("/battles/{battle_id}"), "{child:#?}");
    }

    #[test]
    fn only_the_served_services_methods_are_labels_and_their_streams_are_known() {
        let served = Served::new(&["battlelog.v1.Resolver"]);
        let act = served.resolve("/battlelog.v1.Resolver/Act").expect("a resolver method");
        assert_eq!(
            (act.labels.service.as_ref(), act.labels.method.as_ref(), act.streaming),
            ("battlelog.v1.Resolver", "Act", false)
        );
        let watch = served.resolve("/battlelog.v1.Resolver/Watch").expect("a resolver method");
        assert!(watch.streaming, "the resolver's Watch is a server stream");
        assert!(served.resolve("/grpc.health.v1.Health/Watch").expect("health is always served").streaming);
        let reflection = served.resolve("/grpc.reflection.v1.ServerReflection/ServerReflectionInfo");
        assert_eq!(reflection.expect("reflection is always served").labels.method, "ServerReflectionInfo");
        assert!(served.resolve("/battlelog.v1.Journal/Append").is_none(), "the journal is not served here");
        let unknown = served.resolve("/battlelog.v1.Resolver/Nope").expect("a served service");
        assert_eq!(unknown.labels.method, "other");
        assert!(served.resolve("/").is_none() && served.resolve("no-slash").is_none());
    }
}
