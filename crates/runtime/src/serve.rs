//! The one way battlelog serves: every gRPC service (journal, roller,
//! resolver) through [`GrpcServer`], and every service, gRPC or HTTP, with
//! its metrics and readiness through [`Observed`].
//!
//! A gRPC server, from the outside in:
//! - the listener's connections ([`edge::incoming`]: `max_connections`,
//!   the first-request deadline), TLS when configured;
//! - the observe layer ([`observe::layer`]): request metrics, a span and
//!   an access-log line per request, refusals counted — outermost, so it
//!   sees everything, health, reflection and shed requests included;
//! - the edge ([`edge::EdgeLayer`]): HTTP/2 keepalive, connection age,
//!   `max_concurrent_requests` with load shedding;
//! - health (`SERVING` once it serves, `NOT_SERVING` from the shutdown on,
//!   and for the service itself also while its [`GrpcServer::readiness`]
//!   says it is not ready) and both reflection versions, which need no
//!   token;
//! - for the service itself, [`grpc::undecodable_is_invalid`] (a request
//!   that does not decode is `INVALID_ARGUMENT`, every refusal in the
//!   caller's language), then the door: the [`Authenticator`] (with its
//!   `only` roles), [`observe::CallerNote`] right after it, and the
//!   per-tenant rate limit when one is set ([`GrpcServer::rate_limit`]).
//!
//! Then graceful shutdown: once `shutdown` resolves, no new connection or
//! request is taken and the ones in flight finish.
//!
//! A service's `run` builds its registry ([`Observed::configured`]),
//! registers its own metrics into [`Observed::registry`], and hands it to
//! the server; [`Observed::ready`] serves `/metrics` on `metrics_listen`
//! and prints the readiness lines, after everything that can fail on
//! configuration has been built.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use battlelog_auth::{Authenticator, Role, Verifier};
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;
use tonic::codegen::http;
use tonic::server::NamedService;
use tonic::service::Interceptor;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::ServerTlsConfig;

use crate::edge::{self, GrpcLimits, TenantLimiter, TenantRateLimit};
use crate::{grpc, metrics, observe};

/// Why a server could not serve.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("reflection: {0}")]
    Reflection(#[from] grpc::ReflectionError),
    #[error("grpc: {0}")]
    Transport(#[from] tonic::transport::Error),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// A service's metrics registry and where it is shown: its `/metrics`
/// port (`metrics_listen`) and its readiness lines on stdout.
#[derive(Debug)]
pub struct Observed {
    service: &'static str,
    registry: Registry,
    metrics_listen: Option<SocketAddr>,
    announce: bool,
}

impl Observed {
    /// As configured: `/metrics` on `metrics_listen` (if set), and the readiness lines `battlelog-<service> metrics on
    /// http://<addr>/metrics` and `battlelog-<service> listening on
    /// <addr>` (last: once it is printed, everything is up). `service` is
    /// `journal`, `roller`, `resolver`, `web` or `webhooks`.
    pub fn configured(service: &'static str, metrics_listen: Option<SocketAddr>) -> Self {
        Self { service, registry: metrics::registry(service), metrics_listen, announce: true }
    }

    /// Quiet, for tests and embedding: metrics counted, not served, and
    /// no readiness line.
    pub fn quiet(service: &'static str) -> Self {
        Self { service, registry: metrics::registry(service), metrics_listen: None, announce: false }
    }

    /// The service's registry (prefix `battlelog`): a service registers its
    /// domain metrics under `registry().sub_registry_with_prefix("<service>")`
    /// before it serves.
    pub fn registry(&mut self) -> &mut Registry {
        &mut self.registry
    }

    /// The service name (`journal`, …).
    pub fn service(&self) -> &'static str {
        self.service
    }

    /// Serves `/metrics` if configured, then announces the service as
    /// ready on `local`. Call it once everything that can fail on
    /// configuration is built, right before serving; [`Ready::stop`] after.
    pub async fn ready(self, local: SocketAddr) -> std::io::Result<Ready> {
        let binary = format!("battlelog-{}", self.service);
        let endpoint = match self.metrics_listen {
            Some(listen) => Some(metrics::start(listen, Arc::new(self.registry)).await?),
            None => None,
        };
        if self.announce {
            if let Some(endpoint) = &endpoint {
                crate::announce_metrics(&binary, endpoint.addr())?;
            }
            crate::announce(&binary, local)?;
        }
        Ok(Ready { endpoint })
    }
}

/// A service announced ready: its metrics port, served until [`Ready::stop`].
#[derive(Debug)]
pub struct Ready {
    endpoint: Option<metrics::Endpoint>,
}

impl Ready {
    /// Where `/metrics` is served, if it is.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.endpoint.as_ref().map(metrics::Endpoint::addr)
    }

    /// Stops the metrics port (after the service itself has stopped).
    pub async fn stop(self) {
        if let Some(endpoint) = self.endpoint {
            endpoint.stop().await;
        }
    }
}

/// One gRPC server, configured; [`GrpcServer::serve`] serves a service
/// with it.
#[derive(Debug)]
pub struct GrpcServer {
    verifier: Verifier,
    tls: Option<ServerTlsConfig>,
    limits: GrpcLimits,
    only: Option<(&'static str, &'static [Role])>,
    rate: Option<TenantRateLimit>,
    observed: Observed,
    readiness: Option<tokio::sync::watch::Receiver<bool>>,
}

impl GrpcServer {
    /// A server checking tokens with `verifier`: no TLS, the default limits,
    /// no rate limit, metrics counted but not served, no readiness line.
    pub fn new(service: &'static str, verifier: Verifier) -> Self {
        Self {
            verifier,
            tls: None,
            limits: GrpcLimits::default(),
            only: None,
            rate: None,
            observed: Observed::quiet(service),
            readiness: None,
        }
    }

    /// As a gRPC service's config says: its TLS files read
    /// (`tls_cert`, `tls_key`, `tls_client_ca`), its connection limits, and
    /// its `/metrics` port and readiness lines (`metrics_listen`).
    pub fn configured(
        self,
        shared: &crate::service::Shared,
        tls: &crate::tls::ServerTls,
        limits: &GrpcLimits,
    ) -> Result<Self, crate::tls::TlsError> {
        let observed = Observed::configured(self.observed.service(), shared.metrics_listen);
        Ok(self.tls(tls.server_config()?).limits(limits.clone()).observed(observed))
    }

    /// Over TLS when `tls` is given (health and reflection too).
    pub fn tls(mut self, tls: Option<ServerTlsConfig>) -> Self {
        self.tls = tls;
        self
    }

    /// With these connection and request limits.
    pub fn limits(mut self, limits: GrpcLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Counting every verified call against its tenant's rate (the
    /// `service` role uncounted; a rate of 0: no limit).
    pub fn rate_limit(mut self, rate: TenantRateLimit) -> Self {
        self.rate = Some(rate);
        self
    }

    /// Admitting only `roles` to the whole service, named `service` in the
    /// refusal (the journal and roller admit the `service` role alone).
    pub fn only(mut self, service: &'static str, roles: &'static [Role]) -> Self {
        self.only = Some((service, roles));
        self
    }

    /// The service's health follows `ready`: `SERVING` while it is true,
    /// `NOT_SERVING` while it is false (a service that answers reads but
    /// refuses writes, say). The server as a whole (`""`) stays `SERVING`.
    pub fn readiness(mut self, ready: tokio::sync::watch::Receiver<bool>) -> Self {
        self.readiness = Some(ready);
        self
    }

    /// With this registry, metrics port and readiness lines.
    pub fn observed(mut self, observed: Observed) -> Self {
        self.observed = observed;
        self
    }

    /// The registry the server's metrics go to: register the service's own
    /// before [`GrpcServer::serve`].
    pub fn registry(&mut self) -> &mut Registry {
        self.observed.registry()
    }

    /// Serves `service` (a tonic-generated server, e.g.
    /// `JournalServer::new(..)`) on `listener` until `shutdown` resolves;
    /// the requests in flight finish before it returns. Fails before it
    /// announces anything if the server cannot be built.
    pub async fn serve<S>(
        mut self,
        service: S,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send,
    ) -> Result<(), ServeError>
    where
        S: tower::Service<
                http::Request<tonic::body::Body>,
                Response = http::Response<tonic::body::Body>,
                Error = Infallible,
            > + NamedService
            + Clone
            + Send
            + Sync
            + 'static,
        S::Future: Send + 'static,
    {
        let local = listener.local_addr()?;
        let served = [
            S::NAME,
            "grpc.health.v1.Health",
            "grpc.reflection.v1.ServerReflection",
            "grpc.reflection.v1alpha.ServerReflection",
        ];
        let grpc_metrics = observe::GrpcMetrics::register(self.observed.registry());
        let door = Door {
            authenticator: match self.only {
                Some((name, roles)) => Authenticator::only(self.verifier, name, roles),
                None => Authenticator::new(self.verifier),
            },
            note: observe::CallerNote,
            rate: self.rate.as_ref().and_then(TenantRateLimit::limiter),
            metrics: grpc_metrics.clone(),
        };
        let (health, health_service) = grpc::health();
        let router =
            edge::server(observe::layer(self.observed.service(), &served, grpc_metrics), self.tls, &self.limits)?
                .add_service(health_service)
                .add_service(grpc::reflection(S::NAME)?)
                .add_service(grpc::reflection_v1alpha(S::NAME)?)
                .add_service(grpc::undecodable_is_invalid(InterceptedService::new(service, door)));
        let follow = match self.readiness.take() {
            None => {
                health.set_serving::<S>().await;
                None
            }
            Some(mut ready) => {
                let (first, health) = (*ready.borrow_and_update(), health.clone());
                if first {
                    health.set_serving::<S>().await;
                } else {
                    health.set_not_serving::<S>().await;
                }
                Some(tokio::spawn(async move {
                    while ready.changed().await.is_ok() {
                        if *ready.borrow_and_update() {
                            health.set_serving::<S>().await;
                        } else {
                            health.set_not_serving::<S>().await;
                        }
                    }
                }))
            }
        };
        let ready = self.observed.ready(local).await?;
        let on_shutdown = async move {
            shutdown.await;
            tracing::info!(service = S::NAME, "shutting down: no new requests, finishing the ones in flight");
            // Readiness no longer counts: nothing may say SERVING again.
            if let Some(follow) = follow {
                follow.abort();
                let _ = follow.await;
            }
            health.set_not_serving::<S>().await;
        };
        let served = router.serve_with_incoming_shutdown(edge::incoming(listener, &self.limits), on_shutdown).await;
        ready.stop().await;
        Ok(served?)
    }
}

/// The door of a battlelog service: the token verified (and its role, with
/// `only`), the caller noted for the access log, then its tenant's rate.
#[derive(Debug, Clone)]
struct Door {
    authenticator: Authenticator,
    note: observe::CallerNote,
    rate: Option<TenantLimiter>,
    /// Where a rate-limited tenant's series starts at zero.
    metrics: observe::GrpcMetrics,
}

impl Interceptor for Door {
    fn call(&mut self, request: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        let request = self.authenticator.call(request)?;
        let caller = battlelog_auth::caller(&request)?;
        // Only now, its token verified, does the connection count as served
        // (its first-request deadline lifted) and move to its token's share.
        let token = (caller.role != Role::Service).then(|| format!("{}:{}", caller.tenant, caller.subject));
        edge::authenticated(request.extensions(), token.as_deref())?;
        let request = self.note.call(request)?;
        if let Some(limiter) = &self.rate {
            // battlelog's own services must not be throttled by a tenant's
            // flood: the `service` role is not counted.
            if caller.role != Role::Service {
                self.metrics.tenant_seen(&caller.tenant);
                limiter.check(&caller.tenant)?;
            }
        }
        Ok(request)
    }
}
