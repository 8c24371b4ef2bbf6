//! What every gRPC server does at its edge, before a handler runs: bound
//! connections, close the silent ones, shed load, and keep one tenant's
//! flood from stalling the others.
//!
//! - [`GrpcLimits`]: the config keys (flattened into each service's config).
//! - [`server`]: a tonic server with HTTP/2 keepalive, a maximum connection
//!   age and a concurrency limit with load shedding ([`EdgeLayer`]).
//! - [`incoming`]: the listener's connections, at most `max_connections` at
//!   once and `max_connections_per_address` from one client address; each
//!   must send its first *authenticated* request within
//!   `first_request_timeout_ms`, and that request moves the connection from
//!   its address's share to its token's (`max_connections_per_token`,
//!   [`authenticated`]).
//! - [`TenantRateLimit`] / [`TenantLimiter`]: requests per second and burst
//!   per tenant (governor's keyed GCRA limiter), refused with
//!   `RESOURCE_EXHAUSTED`, a `RetryInfo` and the reason `RATE_LIMITED`.
//!
//! Everything here is tonic's, hyper's, tower's or governor's own machinery,
//! configured; the one thing none of them offers is a deadline for a
//! plaintext connection's HTTP/2 preface (hyper's keepalive only starts once
//! the preface is in, and tonic's handshake timeout is TLS's), so
//! [`incoming`] arms one on each connection and [`authenticated`] disarms
//! it at the connection's first request that carries a valid token: a
//! request refused `UNAUTHENTICATED` (or one to the health service, which
//! needs no token) keeps nothing open.
//!
//! The shares ([`crate::share`]) keep one peer from taking a pool from the
//! others: connections per client address until authenticated, then per
//! token; requests at once per client address on connections not yet
//! authenticated (`max_concurrent_requests_per_address`).

use std::net::IpAddr;
use std::num::NonZeroU32;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use battlelog_proto::error::{Error, LimitReason};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_stream::{Stream, StreamExt};
use tonic::Status;
use tonic::codegen::http;
use tonic::transport::Server;
use tonic::transport::ServerTlsConfig;
use tonic::transport::server::{Connected, TcpConnectInfo, TlsConnectInfo};
use tower::layer::util::{Identity, Stack};
use tower::{Layer, Service};

use crate::config::ConfigError;
use crate::share::{Share, Shares, peer_key};

/// The connection and request limits of one gRPC server. Flattened into
/// each service's config: the keys are top-level (`max_connections = 1000`,
/// `BATTLELOG_<SERVICE>_MAX_CONNECTIONS`, `--max-connections`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct GrpcLimits {
    /// Connections served at once; one more is closed as soon as it is
    /// accepted. Keep the services of one process under its file limit.
    #[serde(deserialize_with = "crate::config::number")]
    pub max_connections: usize,
    /// Milliseconds a new connection has to send its first request (after
    /// its TLS handshake and HTTP/2 preface); else the server closes it.
    #[serde(deserialize_with = "crate::config::number")]
    pub first_request_timeout_ms: u64,
    /// Milliseconds between the HTTP/2 PINGs the server sends on every
    /// connection, busy or idle.
    #[serde(deserialize_with = "crate::config::number")]
    pub keepalive_interval_ms: u64,
    /// Milliseconds a PING may wait for its answer; then the server closes
    /// the connection.
    #[serde(deserialize_with = "crate::config::number")]
    pub keepalive_timeout_ms: u64,
    /// Seconds after which a connection is asked to go (HTTP/2 GOAWAY):
    /// clients reconnect, streams already open run on. 0: never.
    #[serde(deserialize_with = "crate::config::number")]
    pub max_connection_age_secs: u64,
    /// Requests handled at once by the whole server; one more is answered
    /// `RESOURCE_EXHAUSTED` (reason `OVERLOADED`) at once instead of queueing.
    #[serde(deserialize_with = "crate::config::number")]
    pub max_concurrent_requests: usize,
    /// Connections one client address (an IPv6 address's /64) holds at once
    /// before their first authenticated request; one more is closed as soon
    /// as it is accepted. Keeps a stranger's flood to its share of
    /// `max_connections`.
    #[serde(deserialize_with = "crate::config::number")]
    pub max_connections_per_address: usize,
    /// Connections one token (its subject within its tenant) holds at once
    /// once authenticated; the first authenticated request of one more is
    /// refused `RESOURCE_EXHAUSTED` (reason `OVERLOADED`) and the
    /// connection is closed at its first-request deadline.
    #[serde(deserialize_with = "crate::config::number")]
    pub max_connections_per_token: usize,
    /// Requests one client address has handled at once on its connections
    /// not yet authenticated, of the server's `max_concurrent_requests`;
    /// one more is answered `RESOURCE_EXHAUSTED` (reason `OVERLOADED`) at
    /// once. An authenticated connection's requests count in the tenant's
    /// rate instead.
    #[serde(deserialize_with = "crate::config::number")]
    pub max_concurrent_requests_per_address: usize,
}

impl Default for GrpcLimits {
    fn default() -> Self {
        Self {
            max_connections: 1_000,
            first_request_timeout_ms: 10_000,
            keepalive_interval_ms: 30_000,
            keepalive_timeout_ms: 10_000,
            max_connection_age_secs: 3_600,
            max_concurrent_requests: 256,
            max_connections_per_address: 100,
            max_connections_per_token: 100,
            max_concurrent_requests_per_address: 64,
        }
    }
}

fn at_least_one(key: &'static str, value: u64) -> Result<(), ConfigError> {
    if value == 0 {
        return Err(ConfigError::Invalid { key, message: "must be at least 1".into() });
    }
    Ok(())
}

impl GrpcLimits {
    /// Every limit but `max_connection_age_secs` is at least 1: a zero
    /// would refuse everything or close every connection at once.
    pub fn validate(&self) -> Result<(), ConfigError> {
        at_least_one("max_connections", self.max_connections as u64)?;
        at_least_one("first_request_timeout_ms", self.first_request_timeout_ms)?;
        at_least_one("keepalive_interval_ms", self.keepalive_interval_ms)?;
        at_least_one("keepalive_timeout_ms", self.keepalive_timeout_ms)?;
        at_least_one("max_concurrent_requests", self.max_concurrent_requests as u64)?;
        at_least_one("max_connections_per_address", self.max_connections_per_address as u64)?;
        at_least_one("max_connections_per_token", self.max_connections_per_token as u64)?;
        at_least_one("max_concurrent_requests_per_address", self.max_concurrent_requests_per_address as u64)
    }

    fn first_request_timeout(&self) -> Duration {
        Duration::from_millis(self.first_request_timeout_ms)
    }
}

/// The tonic server every service serves with: TLS when `tls` is given,
/// HTTP/2 keepalive PINGs (a peer that stops answering is dropped), a
/// maximum connection age, and [`EdgeLayer`]'s concurrency limit with load
/// shedding, inside `outer` (the observe layer of [`crate::serve`], which
/// so sees the shed requests too). Serve it on [`incoming`].
pub fn server<L>(
    outer: L,
    tls: Option<ServerTlsConfig>,
    limits: &GrpcLimits,
) -> Result<EdgeServer<L>, tonic::transport::Error> {
    let mut server = crate::tls::server(tls)?
        .http2_keepalive_interval(Some(Duration::from_millis(limits.keepalive_interval_ms)))
        .http2_keepalive_timeout(Some(Duration::from_millis(limits.keepalive_timeout_ms)));
    if limits.max_connection_age_secs > 0 {
        // No grace: a stream still open when its connection is asked to go
        // (a `Watch`) runs on; the connection closes when it ends.
        server = server.max_connection_age(Duration::from_secs(limits.max_connection_age_secs));
    }
    // tonic's `layer` nests each new layer inside the ones before it.
    Ok(server
        .layer(outer)
        .layer(EdgeLayer::new(limits.max_concurrent_requests, limits.max_concurrent_requests_per_address)))
}

/// The server [`server`] builds: `L` outermost, then [`EdgeLayer`].
pub type EdgeServer<L> = Server<Stack<EdgeLayer, Stack<L, Identity>>>;

/// The connections `listener` accepts, with Nagle's algorithm off (small
/// gRPC frames left to Nagle meet the peer's delayed ACK, about 40 ms per
/// round trip): at most `max_connections` at once, and at most
/// `max_connections_per_address` from one client address until they are
/// authenticated — one more is closed as soon as it is accepted, so that a
/// flood costs the process no more file descriptors than the limit, and a
/// flood from one address leaves the other addresses their slots — and
/// each closed by the server if it has not sent an authenticated request
/// within `first_request_timeout_ms`.
pub fn incoming(
    listener: tokio::net::TcpListener,
    limits: &GrpcLimits,
) -> impl Stream<Item = std::io::Result<Guarded>> + Send + use<> {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let addresses = Shares::new(limits.max_connections_per_address);
    let tokens = Shares::new(limits.max_connections_per_token);
    let max = limits.max_connections;
    let timeout = limits.first_request_timeout();
    tokio_stream::wrappers::TcpListenerStream::new(listener).filter_map(move |accepted| {
        let stream = match accepted {
            Ok(stream) => stream,
            Err(error) => return Some(Err(error)),
        };
        let peer = stream.peer_addr().ok();
        // The address's share first: a peer at its share takes no slot.
        let share = match peer {
            Some(peer) => match addresses.try_take(peer_key(peer.ip())) {
                Some(share) => Some(share),
                None => {
                    tracing::debug!(
                        ?peer,
                        max_connections_per_address = addresses.limit(),
                        "connection refused: its address holds its share"
                    );
                    return None;
                }
            },
            None => None,
        };
        match Arc::clone(&slots).try_acquire_owned() {
            Ok(permit) => {
                let _ = stream.set_nodelay(true);
                let held = share.map_or(Held::Nothing, |share| Held::Address { _share: share });
                Some(Ok(Guarded::new(stream, permit, held, Arc::clone(&tokens), timeout)))
            }
            Err(_) => {
                tracing::debug!(?peer, max_connections = max, "connection refused: at the limit");
                None
            }
        }
    })
}

/// One accepted connection: it holds its slot under `max_connections` until
/// it closes, and fails its reads once its first-request deadline passes
/// without an authenticated request (hyper then closes it).
#[derive(Debug)]
pub struct Guarded {
    stream: TcpStream,
    _slot: OwnedSemaphorePermit,
    info: EdgeConnectInfo,
    /// Armed until the first authenticated request; `None` afterwards.
    deadline: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl Guarded {
    fn new(
        stream: TcpStream,
        slot: OwnedSemaphorePermit,
        held: Held,
        tokens: Arc<Shares<String>>,
        timeout: Duration,
    ) -> Self {
        let info = EdgeConnectInfo {
            tcp: stream.connect_info(),
            served: Arc::new(AtomicBool::new(false)),
            share: Arc::new(ConnectionShare { held: Mutex::new(held), tokens }),
        };
        Self { stream, _slot: slot, info, deadline: Some(Box::pin(tokio::time::sleep(timeout))) }
    }
}

/// The share a connection is counted in: its address's until its first
/// authenticated request, its token's after. Given back when the
/// connection and every request of it are gone.
#[derive(Debug)]
enum Held {
    Nothing,
    Address { _share: Share<IpAddr> },
    Token { _share: Share<String> },
}

#[derive(Debug)]
struct ConnectionShare {
    held: Mutex<Held>,
    tokens: Arc<Shares<String>>,
}

/// What a request learns about its connection (in its extensions): the
/// TCP addresses, the flag its first authenticated request raises, and the
/// share the connection is counted in.
#[derive(Debug, Clone)]
pub struct EdgeConnectInfo {
    /// The addresses, as tonic gives them for a plain `TcpStream`.
    pub tcp: TcpConnectInfo,
    served: Arc<AtomicBool>,
    share: Arc<ConnectionShare>,
}

fn connect_info(extensions: &http::Extensions) -> Option<&EdgeConnectInfo> {
    extensions
        .get::<EdgeConnectInfo>()
        .or_else(|| extensions.get::<TlsConnectInfo<EdgeConnectInfo>>().map(TlsConnectInfo::get_ref))
}

/// [`connect_info`] of a tonic request's extensions.
fn tonic_connect_info(extensions: &tonic::Extensions) -> Option<&EdgeConnectInfo> {
    extensions
        .get::<EdgeConnectInfo>()
        .or_else(|| extensions.get::<TlsConnectInfo<EdgeConnectInfo>>().map(TlsConnectInfo::get_ref))
}

/// Called with each request whose token was verified, `token` being its
/// subject within its tenant: the connection's first such request lifts
/// its first-request deadline and moves it from its address's share to the
/// token's. `RESOURCE_EXHAUSTED` (reason `OVERLOADED`) when the token
/// already holds `max_connections_per_token` connections: the connection
/// then stays unauthenticated, and is closed at its deadline. `None` for
/// battlelog's own services (the `service` role), whose connections count
/// in no share, as their calls count in no tenant's rate.
pub fn authenticated(extensions: &tonic::Extensions, token: Option<&str>) -> Result<(), Status> {
    let Some(info) = tonic_connect_info(extensions) else { return Ok(()) };
    if info.served.load(Ordering::Acquire) {
        return Ok(());
    }
    let mut held = info.share.held.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    // Checked again under the lock: two first requests may race.
    if info.served.load(Ordering::Acquire) {
        return Ok(());
    }
    let Some(token) = token else {
        *held = Held::Nothing;
        info.served.store(true, Ordering::Release);
        return Ok(());
    };
    let Some(share) = info.share.tokens.try_take(token.to_owned()) else {
        let max = info.share.tokens.limit();
        tracing::debug!(
            token,
            max_connections_per_token = max,
            "request refused: its token holds its share of connections"
        );
        return Err(Error::new(
            LimitReason::Overloaded,
            format!(
                "this token already holds its limit of {max} connections (max_connections_per_token); \
                 send its calls over the ones it has"
            ),
        )
        .with("max_connections_per_token", max)
        .with_retry_after(Duration::from_secs(1))
        .into_status());
    };
    *held = Held::Token { _share: share };
    info.served.store(true, Ordering::Release);
    Ok(())
}

/// The peer's address of a request that came through [`incoming`]: tonic's
/// own `Request::remote_addr` knows only its own connection types, so it
/// finds none there. Falls back to tonic's for other listeners.
pub fn remote_addr<T>(request: &tonic::Request<T>) -> Option<std::net::SocketAddr> {
    tonic_connect_info(request.extensions()).and_then(|info| info.tcp.remote_addr()).or_else(|| request.remote_addr())
}

impl Connected for Guarded {
    type ConnectInfo = EdgeConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.info.clone()
    }
}

impl AsyncRead for Guarded {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        if let Some(deadline) = &mut this.deadline {
            if this.info.served.load(Ordering::Acquire) {
                this.deadline = None;
            } else if deadline.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "no request within first_request_timeout_ms",
                )));
            }
        }
        Pin::new(&mut this.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Guarded {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}

/// tower's `ConcurrencyLimit` behind a `LoadShed` for the whole server (the
/// limit's semaphore is shared by every connection's clone), answering a
/// shed request with its own `RESOURCE_EXHAUSTED`; before it, each client
/// address's share of those requests on its connections not yet
/// authenticated (`max_concurrent_requests_per_address`).
#[derive(Debug, Clone)]
pub struct EdgeLayer {
    max_concurrent_requests: usize,
    per_address: Arc<Shares<IpAddr>>,
}

impl EdgeLayer {
    pub fn new(max_concurrent_requests: usize, max_concurrent_requests_per_address: usize) -> Self {
        Self { max_concurrent_requests, per_address: Shares::new(max_concurrent_requests_per_address) }
    }
}

impl<S> Layer<S> for EdgeLayer {
    type Service = Edge<S>;

    fn layer(&self, inner: S) -> Self::Service {
        let limited =
            tower::ServiceBuilder::new().load_shed().concurrency_limit(self.max_concurrent_requests).service(inner);
        Edge {
            inner: limited,
            max_concurrent_requests: self.max_concurrent_requests,
            per_address: Arc::clone(&self.per_address),
        }
    }
}

/// See [`EdgeLayer`].
#[derive(Debug, Clone)]
pub struct Edge<S> {
    inner: tower::load_shed::LoadShed<tower::limit::ConcurrencyLimit<S>>,
    max_concurrent_requests: usize,
    per_address: Arc<Shares<IpAddr>>,
}

/// `RESOURCE_EXHAUSTED` for a request shed at `max` concurrent requests.
pub fn overloaded(max: usize) -> Status {
    Error::new(
        LimitReason::Overloaded,
        format!("the server is handling its limit of {max} requests at once (max_concurrent_requests); retry shortly"),
    )
    .with("max_concurrent_requests", max)
    .with_retry_after(Duration::from_millis(100))
    .into_status()
}

/// `RESOURCE_EXHAUSTED` for a request of an address that has `max` at once.
pub fn address_overloaded(max: usize) -> Status {
    Error::new(
        LimitReason::Overloaded,
        format!(
            "your address has its share of {max} requests at once (max_concurrent_requests_per_address); \
             retry when one of them is answered"
        ),
    )
    .with("max_concurrent_requests_per_address", max)
    .with_retry_after(Duration::from_millis(100))
    .into_status()
}

impl<S> Service<http::Request<tonic::body::Body>> for Edge<S>
where
    S: Service<http::Request<tonic::body::Body>, Response = http::Response<tonic::body::Body>>,
    S::Error: Into<tower::BoxError>,
    S::Future: Send + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = tower::BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<tonic::body::Body>) -> Self::Future {
        let info = connect_info(request.extensions());
        // Only a connection not yet authenticated counts in its address's
        // share: once authenticated it is its token's, and the traffic of
        // one busy client (a resolver to its journal) is not a stranger's.
        let unauthenticated = info.is_some_and(|info| !info.served.load(Ordering::Acquire));
        let peer = info.filter(|_| unauthenticated).and_then(|info| info.tcp.remote_addr());
        // Held until the response's head is out, as the server's own limit is.
        let share = match peer {
            Some(peer) => match self.per_address.try_take(peer_key(peer.ip())) {
                Some(share) => Some(share),
                None => {
                    let max = self.per_address.limit();
                    tracing::warn!(
                        ?peer,
                        max_concurrent_requests_per_address = max,
                        "request shed: its address holds its share"
                    );
                    // The server's slot reserved by `poll_ready` stays with
                    // this service for its next request.
                    return Box::pin(async move { Ok(address_overloaded(max).into_http()) });
                }
            },
            None => None,
        };
        let max = self.max_concurrent_requests;
        let response = self.inner.call(request);
        Box::pin(async move {
            let response = response.await;
            drop(share);
            match response {
                Err(error) if error.is::<tower::load_shed::error::Overloaded>() => {
                    tracing::warn!(max_concurrent_requests = max, "request shed: the server is at its limit");
                    Ok(overloaded(max).into_http())
                }
                other => other,
            }
        })
    }
}

/// Per-tenant rate limit keys (flattened into the resolver's config).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct TenantRateLimit {
    /// Requests per second a tenant's tokens may make, all together (the
    /// `service` role is not counted). 0: no limit.
    #[serde(deserialize_with = "crate::config::number")]
    pub rate_limit_per_sec: u32,
    /// Requests a tenant may make at once above its rate, after a quiet spell.
    #[serde(deserialize_with = "crate::config::number")]
    pub rate_limit_burst: u32,
    /// Tenants whose counters are kept; past it, counters of tenants back
    /// at their full burst are forgotten (they lose nothing by it).
    #[serde(deserialize_with = "crate::config::number")]
    pub rate_limit_tenants: usize,
}

impl Default for TenantRateLimit {
    fn default() -> Self {
        Self { rate_limit_per_sec: 100, rate_limit_burst: 200, rate_limit_tenants: 10_000 }
    }
}

impl TenantRateLimit {
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.rate_limit_per_sec > 0 {
            at_least_one("rate_limit_burst", u64::from(self.rate_limit_burst))?;
        }
        at_least_one("rate_limit_tenants", self.rate_limit_tenants as u64)
    }

    /// The limiter these keys describe, or `None` when the rate is 0.
    pub fn limiter(&self) -> Option<TenantLimiter> {
        TenantLimiter::new(self, governor::clock::DefaultClock::default())
    }
}

type KeyedLimiter<C> = governor::RateLimiter<
    String,
    governor::state::keyed::DefaultKeyedStateStore<String>,
    C,
    governor::middleware::NoOpMiddleware<<C as governor::clock::Clock>::Instant>,
>;

/// One GCRA limiter per tenant (governor's keyed limiter), shared by every
/// connection of a server.
#[derive(Debug)]
pub struct TenantLimiter<C: governor::clock::Clock = governor::clock::DefaultClock> {
    limiter: Arc<KeyedLimiter<C>>,
    per_sec: u32,
    burst: u32,
    max_tenants: usize,
}

impl<C: governor::clock::Clock> Clone for TenantLimiter<C> {
    fn clone(&self) -> Self {
        Self { limiter: Arc::clone(&self.limiter), ..*self }
    }
}

impl<C: governor::clock::Clock> TenantLimiter<C> {
    /// The limiter of `keys` on `clock`, or `None` when the rate is 0.
    pub fn new(keys: &TenantRateLimit, clock: C) -> Option<Self> {
        let per_sec = NonZeroU32::new(keys.rate_limit_per_sec)?;
        let burst = NonZeroU32::new(keys.rate_limit_burst).unwrap_or(per_sec);
        let quota = governor::Quota::per_second(per_sec).allow_burst(burst);
        Some(Self {
            limiter: Arc::new(governor::RateLimiter::dashmap_with_clock(quota, clock)),
            per_sec: per_sec.get(),
            burst: burst.get(),
            max_tenants: keys.rate_limit_tenants,
        })
    }

    /// Counts one request of `tenant`: `RESOURCE_EXHAUSTED` (reason
    /// `RATE_LIMITED`, with a `RetryInfo` saying when the next one would
    /// pass) once the tenant is past its burst.
    pub fn check(&self, tenant: &str) -> Result<(), Status> {
        let key = tenant.to_owned();
        if self.limiter.len() >= self.max_tenants {
            // Only tenants whose counters are back at a full burst go, so
            // forgetting them changes nothing for them.
            self.limiter.retain_recent();
            self.limiter.shrink_to_fit();
        }
        match self.limiter.check_key(&key) {
            Ok(()) => Ok(()),
            Err(not_until) => {
                let wait = not_until.wait_time_from(self.limiter.clock().now());
                Err(rate_limited(tenant, self.per_sec, self.burst, wait))
            }
        }
    }

    /// How many tenants' counters are kept.
    pub fn tenants(&self) -> usize {
        self.limiter.len()
    }
}

/// `RESOURCE_EXHAUSTED` for `tenant` past its rate, retry after `wait`.
fn rate_limited(tenant: &str, per_sec: u32, burst: u32, wait: Duration) -> Status {
    Error::new(
        LimitReason::RateLimited,
        format!(
            "tenant {tenant} is over its rate limit of {per_sec} requests per second (burst {burst}); retry in {} ms",
            wait.as_millis().max(1)
        ),
    )
    .with("tenant", tenant)
    .with("rate_limit_per_sec", per_sec)
    .with("rate_limit_burst", burst)
    // At least a millisecond: a zero delay would invite an immediate retry.
    .with_retry_after(wait.max(Duration::from_millis(1)))
    .into_status()
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt;
    use tonic::Code;
    use tonic_types::StatusExt;

    use governor::clock::FakeRelativeClock;

    use super::*;

    fn limiter(per_sec: u32, burst: u32, max_tenants: usize) -> (TenantLimiter<FakeRelativeClock>, FakeRelativeClock) {
        let clock = FakeRelativeClock::default();
        let keys =
            TenantRateLimit { rate_limit_per_sec: per_sec, rate_limit_burst: burst, rate_limit_tenants: max_tenants };
        (TenantLimiter::new(&keys, clock.clone()).expect("a limiter"), clock)
    }

    #[test]
    fn a_tenant_gets_its_burst_then_is_refused_with_a_retry_delay_while_another_is_served() {
        let (limiter, clock) = limiter(10, 3, 100);
        for n in 1..=3 {
            assert!(limiter.check("a").is_ok(), "request {n} of the burst of 3");
        }
        let refused = limiter.check("a").expect_err("the 4th request, past the burst");
        assert_eq!(refused.code(), Code::ResourceExhausted);
        assert!(refused.message().contains("tenant a is over its rate limit of 10"), "{}", refused.message());
        let details = refused.get_error_details();
        assert_eq!(details.error_info().expect("an ErrorInfo").reason, "RATE_LIMITED");
        let delay = details.retry_info().and_then(|r| r.retry_delay).expect("a RetryInfo delay");
        // 10 per second: the next cell is 100 ms away.
        assert_eq!(delay, Duration::from_millis(100));
        assert!(limiter.check("b").is_ok(), "another tenant is untouched");

        clock.advance(Duration::from_millis(99));
        assert!(limiter.check("a").is_err(), "just before the delay");
        clock.advance(Duration::from_millis(1));
        assert!(limiter.check("a").is_ok(), "at the delay one request passes");
        assert!(limiter.check("a").is_err(), "and only one");
    }

    #[test]
    fn a_rate_of_zero_is_no_limiter() {
        let keys = TenantRateLimit { rate_limit_per_sec: 0, ..TenantRateLimit::default() };
        assert!(keys.limiter().is_none());
        assert!(keys.validate().is_ok());
        let keys = TenantRateLimit { rate_limit_burst: 0, ..TenantRateLimit::default() };
        assert!(keys.validate().unwrap_err().to_string().contains("rate_limit_burst"));
    }

    #[test]
    fn the_counters_of_idle_tenants_are_forgotten_past_the_tenant_bound() {
        let (limiter, clock) = limiter(10, 1, 4);
        for tenant in ["a", "b", "c", "d"] {
            limiter.check(tenant).expect("first request");
        }
        assert_eq!(limiter.tenants(), 4);
        // All four are back at their full burst a second later: the fifth
        // tenant's request drops their counters.
        clock.advance(Duration::from_secs(1));
        limiter.check("e").expect("a new tenant");
        assert_eq!(limiter.tenants(), 1);
        // A tenant still past its burst keeps its counter, and its refusal.
        limiter.check("e").expect_err("e is past its burst of 1");
        for tenant in ["f", "g", "h"] {
            limiter.check(tenant).expect("first request");
        }
        limiter.check("i").expect("a new tenant");
        assert!(limiter.check("e").is_err(), "e was not forgotten: its counter was not at a full burst");
    }

    /// `incoming` on a loopback listener with `limits`, and a way to
    /// connect to it from a given loopback address.
    async fn listening(
        limits: GrpcLimits,
    ) -> (std::net::SocketAddr, impl Stream<Item = std::io::Result<Guarded>> + Unpin) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        (addr, Box::pin(incoming(listener, &limits)))
    }

    async fn connect_from(local: [u8; 4], addr: std::net::SocketAddr) -> TcpStream {
        let socket = tokio::net::TcpSocket::new_v4().expect("socket");
        socket.bind(std::net::SocketAddr::from((local, 0))).expect("bind a loopback address");
        socket.connect(addr).await.expect("connect")
    }

    /// The next connection `incoming` yields within a short wait, if any.
    async fn next<S: Stream<Item = std::io::Result<Guarded>> + Unpin>(accepted: &mut S) -> Option<Guarded> {
        tokio::time::timeout(Duration::from_millis(300), accepted.next()).await.ok().flatten().map(|r| r.expect("ok"))
    }

    fn extensions(guarded: &Guarded) -> tonic::Extensions {
        let mut extensions = tonic::Extensions::new();
        extensions.insert(guarded.connect_info());
        extensions
    }

    #[tokio::test]
    async fn an_address_gets_its_share_of_connections_and_another_address_its_own() {
        let limits = GrpcLimits { max_connections: 10, max_connections_per_address: 2, ..GrpcLimits::default() };
        let (addr, mut accepted) = listening(limits).await;
        let mut clients = Vec::new();
        let mut held = Vec::new();
        for n in 1..=2 {
            clients.push(connect_from([127, 0, 0, 1], addr).await);
            held.push(next(&mut accepted).await.unwrap_or_else(|| panic!("connection {n} of 2 is accepted")));
        }
        clients.push(connect_from([127, 0, 0, 1], addr).await);
        assert!(next(&mut accepted).await.is_none(), "the 3rd of one address is refused");
        clients.push(connect_from([127, 0, 0, 2], addr).await);
        held.push(next(&mut accepted).await.expect("another address is accepted"));
        // A connection closed gives its place back.
        held.remove(0);
        clients.push(connect_from([127, 0, 0, 1], addr).await);
        assert!(next(&mut accepted).await.is_some(), "the freed place is taken again");
    }

    #[tokio::test]
    async fn authentication_moves_a_connection_from_its_addresss_share_to_its_tokens() {
        let limits = GrpcLimits {
            max_connections: 10,
            max_connections_per_address: 1,
            max_connections_per_token: 2,
            ..GrpcLimits::default()
        };
        let (addr, mut accepted) = listening(limits).await;
        let mut clients = Vec::new();
        let mut connections = Vec::new();
        for n in 1..=3 {
            clients.push(connect_from([127, 0, 0, 1], addr).await);
            let connection =
                next(&mut accepted).await.unwrap_or_else(|| panic!("connection {n}: the address has room"));
            let extensions = extensions(&connection);
            assert!(!connection.info.served.load(Ordering::Acquire), "not served before a token");
            if n <= 2 {
                // Under and at the token's share: authenticated, the address's
                // place given back, so the next connection of the address is taken.
                authenticated(&extensions, Some("forum-a:bot")).expect("within the token's share");
                assert!(connection.info.served.load(Ordering::Acquire), "served once authenticated");
                authenticated(&extensions, Some("forum-a:bot")).expect("again on the same connection");
            } else {
                // Over it: refused, naming the key; the connection stays unserved.
                let refused = authenticated(&extensions, Some("forum-a:bot")).expect_err("the token's 3rd");
                assert_eq!(refused.code(), Code::ResourceExhausted);
                assert!(refused.message().contains("max_connections_per_token"), "{}", refused.message());
                assert!(!connection.info.served.load(Ordering::Acquire));
                authenticated(&extensions, Some("forum-b:bot")).expect("another token");
                // The service role counts in no share.
                authenticated(&extensions, None).expect("a service");
            }
            connections.push((connection, extensions));
        }
        // The first connection gone (with its requests' copies), its token has room again.
        connections.remove(0);
        clients.push(connect_from([127, 0, 0, 1], addr).await);
        let connection = next(&mut accepted).await.expect("the address has room: the others are authenticated");
        authenticated(&extensions(&connection), Some("forum-a:bot")).expect("the token's freed place");
    }

    #[tokio::test]
    async fn an_unauthenticated_connection_is_closed_at_its_deadline_an_authenticated_one_is_not() {
        let limits = GrpcLimits { first_request_timeout_ms: 200, ..GrpcLimits::default() };
        let (addr, mut accepted) = listening(limits).await;
        let _client = connect_from([127, 0, 0, 1], addr).await;
        let mut silent = next(&mut accepted).await.expect("accepted");
        let _client2 = connect_from([127, 0, 0, 1], addr).await;
        let mut authed = next(&mut accepted).await.expect("accepted");
        authenticated(&extensions(&authed), Some("forum-a:bot")).expect("authenticated");
        let mut buf = [0u8; 16];
        let silent_read = tokio::time::timeout(Duration::from_secs(5), silent.read(&mut buf)).await.expect("a result");
        assert_eq!(silent_read.expect_err("timed out").kind(), std::io::ErrorKind::TimedOut);
        let authed_read = tokio::time::timeout(Duration::from_millis(600), authed.read(&mut buf)).await;
        assert!(authed_read.is_err(), "the authenticated connection still waits for its peer past the deadline");
    }

    #[tokio::test]
    async fn an_address_gets_its_share_of_requests_at_once_and_another_address_its_own() {
        // Requests answered only when `release` has a permit: they stay in flight.
        let release = Arc::new(Semaphore::new(0));
        let held = Arc::clone(&release);
        let inner = tower::service_fn(move |_request: http::Request<tonic::body::Body>| {
            let held = Arc::clone(&held);
            async move {
                held.acquire().await.expect("open").forget();
                Ok::<_, std::convert::Infallible>(http::Response::new(tonic::body::Body::empty()))
            }
        });
        let mut edge = EdgeLayer::new(10, 2).layer(inner);
        let (addr, mut accepted) = listening(GrpcLimits::default()).await;
        let _one = connect_from([127, 0, 0, 1], addr).await;
        let one = next(&mut accepted).await.expect("accepted");
        let _other = connect_from([127, 0, 0, 2], addr).await;
        let other = next(&mut accepted).await.expect("accepted");
        let request = |from: &Guarded| {
            let mut request = http::Request::new(tonic::body::Body::empty());
            request.extensions_mut().insert(from.connect_info());
            request
        };
        let mut calls = Vec::new();
        for _ in 0..2 {
            // Under and at the share: in flight, not answered.
            let call = tower::ServiceExt::ready(&mut edge).await.expect("ready").call(request(&one));
            calls.push(tokio::spawn(call));
        }
        let over = tower::ServiceExt::ready(&mut edge).await.expect("ready").call(request(&one));
        let refused = tokio::time::timeout(Duration::from_secs(5), over).await.expect("answered at once").expect("ok");
        let status = Status::from_header_map(refused.headers()).expect("a gRPC status");
        assert_eq!(status.code(), Code::ResourceExhausted, "over the share: {status:?}");
        assert!(status.message().contains("max_concurrent_requests_per_address"), "{}", status.message());
        let another = tower::ServiceExt::ready(&mut edge).await.expect("ready").call(request(&other));
        let another = tokio::spawn(another);
        release.add_permits(3);
        for call in calls {
            let response = call.await.expect("joined").expect("answered");
            assert!(Status::from_header_map(response.headers()).is_none(), "served");
        }
        another.await.expect("joined").expect("another address is served");
        // The answered requests gave their places back.
        let again = tower::ServiceExt::ready(&mut edge).await.expect("ready").call(request(&one));
        release.add_permits(1);
        let again = again.await.expect("answered");
        assert!(Status::from_header_map(again.headers()).is_none(), "a freed place is taken again");
        // Once authenticated, the connection's requests are not the address's.
        let mut extensions = tonic::Extensions::new();
        extensions.insert(one.connect_info());
        authenticated(&extensions, Some("forum-a:bot")).expect("authenticated");
        let mut calls = Vec::new();
        for _ in 0..3 {
            let call = tower::ServiceExt::ready(&mut edge).await.expect("ready").call(request(&one));
            calls.push(tokio::spawn(call));
        }
        release.add_permits(3);
        for call in calls {
            let response = call.await.expect("joined").expect("answered");
            assert!(Status::from_header_map(response.headers()).is_none(), "an authenticated connection is served");
        }
    }

    /// A config with both sections flattened, as the services have them.
    #[derive(Debug, Default, Serialize, Deserialize)]
    #[serde(default, deny_unknown_fields)]
    struct Sample {
        #[serde(flatten)]
        limits: GrpcLimits,
        #[serde(flatten)]
        rate: TenantRateLimit,
    }

    #[test]
    fn the_keys_come_as_text_from_the_environment_and_flags_though_flattened() {
        let layers = crate::config::Layers::new("sample")
            .env([("BATTLELOG_SAMPLE_MAX_CONNECTIONS".to_owned(), "20".to_owned())])
            .flags([("rate_limit_burst".to_owned(), "7".to_owned())]);
        let sample: Sample = layers.extract().expect("numbers as text");
        assert_eq!((sample.limits.max_connections, sample.rate.rate_limit_burst), (20, 7));
        assert_eq!(sample.limits.first_request_timeout_ms, 10_000, "the others keep their defaults");
        let error = crate::config::Layers::new("sample")
            .flags([("max_connections".to_owned(), "many".to_owned())])
            .extract::<Sample>()
            .expect_err("not a number")
            .to_string();
        assert!(error.contains("max_connections") && error.contains("many"), "{error}");
    }

    #[test]
    fn limits_of_zero_are_refused_by_name() {
        assert!(GrpcLimits::default().validate().is_ok());
        for (key, limits) in [
            ("max_connections", GrpcLimits { max_connections: 0, ..GrpcLimits::default() }),
            ("first_request_timeout_ms", GrpcLimits { first_request_timeout_ms: 0, ..GrpcLimits::default() }),
            ("keepalive_interval_ms", GrpcLimits { keepalive_interval_ms: 0, ..GrpcLimits::default() }),
            ("keepalive_timeout_ms", GrpcLimits { keepalive_timeout_ms: 0, ..GrpcLimits::default() }),
            ("max_concurrent_requests", GrpcLimits { max_concurrent_requests: 0, ..GrpcLimits::default() }),
            ("max_connections_per_address", GrpcLimits { max_connections_per_address: 0, ..GrpcLimits::default() }),
            ("max_connections_per_token", GrpcLimits { max_connections_per_token: 0, ..GrpcLimits::default() }),
            (
                "max_concurrent_requests_per_address",
                GrpcLimits { max_concurrent_requests_per_address: 0, ..GrpcLimits::default() },
            ),
        ] {
            let error = limits.validate().expect_err(key).to_string();
            assert!(error.starts_with(&format!("invalid config {key}:")), "{error}");
        }
        let no_age = GrpcLimits { max_connection_age_secs: 0, ..GrpcLimits::default() };
        assert!(no_age.validate().is_ok(), "0 is `never` for the age");
    }
}
