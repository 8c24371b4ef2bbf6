//! What every battlelog service binary shares, so the three behave alike.
//!
//! - [`logging`]: the log format key (text or JSON).
//! - [`telemetry`]: logs to stderr and spans as OpenTelemetry spans, the
//!   W3C trace-context propagator, and the OTLP exporter when an endpoint
//!   is configured; log lines inside a request carry its trace id.
//! - [`shutdown_signal`]: resolves on SIGINT or SIGTERM.
//! - [`announce`]: the one readiness line on stdout (`<service> listening on <addr>`).
//! - [`start`]: what every binary does first — logs and traces, its file
//!   limit raised ([`raise_file_limit`]), then its listener.
//! - [`config`]: a service's configuration, layered with figment, and its flags.
//! - [`edge`]: what every gRPC server does before a handler runs —
//!   connection limit, first-request deadline, HTTP/2 keepalive, load
//!   shedding, per-tenant rate limits — and their config keys.
//! - [`http`]: the one way plain HTTP is served (web pages, the webhooks
//!   admin port): header-read timeout, connection cap, request timeout.
//! - [`http_client`]: the one way a service reaches out over HTTP
//!   (webhooks' deliveries, the roller's beacon relays).
//! - [`grpc`]: `INVALID_ARGUMENT` with google.rpc `BadRequest` details, and
//!   the health and reflection services.
//! - [`limits`]: every input limit, and the checks of battle ids, request
//!   ids and free text against them, answered as a plain [`limits::FieldError`]
//!   (also reachable as `validate`, the name handlers call the checks by).
//! - [`observe`]: the one tower layer every gRPC server wears outermost —
//!   request metrics by service, method and code, refusal counters, open
//!   streams, a span per request under the caller's W3C trace context, and
//!   the access-log line.
//! - [`observe_http`]: the same for the plain-HTTP servers — metrics by
//!   route template and status, a span per request, the access-log line.
//! - [`nats_url`]: NATS URLs with credentials, split for async-nats and
//!   masked for logs, and the one reader of a list of them (a cluster's
//!   nodes) that every service and command takes.
//! - [`streams`]: server streams released as soon as their client leaves,
//!   ended at their deadline, and capped per token and per connection.
//! - [`tls`]: TLS (and mutual TLS) config keys, server and client TLS
//!   configs, and the development PKI of `battlelog up --tls`.
//! - [`serve`]: the one way a service serves — the gRPC server builder
//!   (listener, TLS, observe layer, edge, authentication, health,
//!   reflection, shutdown) and every service's metrics port and readiness.
//! - [`metrics`]: a service's Prometheus registry and its `/metrics` port.
//! - [`mod@service`]: the service kit — the keys every service shares
//!   ([`service::Shared`], [`service::Tokens`] with its verifier), the
//!   [`service::Service`] trait and the one [`service::main`] of the
//!   service binaries.
//! - [`share`]: fair shares of a pool per peer (client address, token,
//!   tenant), so that no one peer takes all of it.

pub mod config;
pub mod edge;
pub mod grpc;
pub mod http;
pub mod http_client;
pub mod limits;
pub mod logging;
pub mod metrics;
pub mod nats_url;
pub mod observe;
pub mod observe_http;
pub mod private;
pub mod serve;
pub mod service;
pub mod share;
pub mod streams;
pub mod telemetry;
pub mod tls;

/// The checks of [`limits`] under the name handlers call them by
/// (`validate::battle_id(&id)?`).
pub use limits as validate;

use std::io::Write;
use std::net::SocketAddr;

/// The battlelog version every service binary reports
/// (`battlelog_build_info`, `--version`).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Prints `<service> listening on <addr>` on stdout and flushes it: whoever
/// started the service with port 0 learns its port from this line (logs go
/// to stderr, so the line is never interleaved with them).
pub fn announce(service: &str, addr: SocketAddr) -> std::io::Result<()> {
    say(Announcement { service: service.to_owned(), what: Announced::Listening, addr })
}

/// Prints `<service> metrics on http://<addr>/metrics` on stdout, before
/// its readiness line ([`announce`]), which stays the last line.
pub fn announce_metrics(service: &str, addr: SocketAddr) -> std::io::Result<()> {
    say(Announcement { service: service.to_owned(), what: Announced::Metrics, addr })
}

/// What a service announced: its address, or its metrics port's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Announcement {
    /// `battlelog-journal`, …
    pub service: String,
    pub what: Announced,
    pub addr: SocketAddr,
}

/// See [`Announcement`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Announced {
    Listening,
    Metrics,
}

type Captured = std::sync::Mutex<Option<tokio::sync::mpsc::UnboundedSender<Announcement>>>;
static CAPTURED: std::sync::OnceLock<Captured> = std::sync::OnceLock::new();

/// From now on, this process's announcements come here instead of stdout:
/// for `battlelog up`, which runs every service in one process and prints
/// one banner of its own with their addresses. A later call takes them over.
pub fn capture_announcements() -> tokio::sync::mpsc::UnboundedReceiver<Announcement> {
    let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
    let slot = CAPTURED.get_or_init(Default::default);
    *slot.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(sender);
    receiver
}

fn say(announcement: Announcement) -> std::io::Result<()> {
    if let Some(slot) = CAPTURED.get()
        && let Some(sender) = slot.lock().unwrap_or_else(std::sync::PoisonError::into_inner).as_ref()
        && sender.send(announcement.clone()).is_ok()
    {
        return Ok(());
    }
    let Announcement { service, what, addr } = announcement;
    let mut stdout = std::io::stdout().lock();
    match what {
        Announced::Listening => writeln!(stdout, "{service} listening on {addr}")?,
        Announced::Metrics => writeln!(stdout, "{service} metrics on http://{addr}/metrics")?,
    }
    stdout.flush()
}

/// Why a service binary could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("{0}")]
    Logging(String),
    #[error("cannot listen on {addr}: {source}")]
    Listen { addr: SocketAddr, source: std::io::Error },
}

/// Installs the logs and traces ([`telemetry::init`]: `service` is the
/// short name, `resolver`; `otlp_endpoint` the collector spans are exported
/// to, none: not exported) and binds the service's listener: the first
/// steps of every service binary, before anything else may fail on
/// configuration. Keep the returned [`telemetry::Telemetry`] until the
/// service has stopped: dropping it flushes the last spans.
pub async fn start(
    service: &str,
    log: &str,
    log_format: logging::LogFormat,
    otlp_endpoint: Option<&str>,
    listen: SocketAddr,
) -> Result<(tokio::net::TcpListener, SocketAddr, telemetry::Telemetry), StartError> {
    let telemetry = telemetry::init(log, log_format, service, otlp_endpoint).map_err(StartError::Logging)?;
    raise_file_limit();
    // Before anything is created: whatever umask the binary was started
    // with, its files are its owner's alone (crate::private).
    private::owner_only_from_now_on();
    let listen_error = |source| StartError::Listen { addr: listen, source };
    let listener = tokio::net::TcpListener::bind(listen).await.map_err(listen_error)?;
    let local = listener.local_addr().map_err(listen_error)?;
    Ok((listener, local, telemetry))
}

/// Raises this process's soft limit on open files to its hard limit: each
/// connection is a file, and the connection limits (`max_connections`) are
/// meant to be what bounds them, not a soft limit of 1 024 that the whole
/// process (all four servers, in `battlelog up`) would share. Logs what it
/// got; a limit it cannot raise is left as it is.
pub fn raise_file_limit() {
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(limit) => tracing::debug!(limit, "open file limit"),
        Err(error) => tracing::warn!(%error, "cannot raise the open file limit"),
    }
}

/// Resolves on SIGINT or SIGTERM. SIGKILL is never seen: that is what
/// flushing before every reply is for.
///
/// The handlers are installed when this is called, not when the future is
/// first polled: a service calls it before it announces that it listens, so
/// that a SIGTERM sent the moment it is ready (as supervisors and tests do)
/// starts a graceful shutdown instead of the signal's default, an exit that
/// flushes nothing and reports failure.
pub fn shutdown_signal() -> impl Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    let (interrupt, terminate) = {
        use tokio::signal::unix::{SignalKind, signal};
        (signal(SignalKind::interrupt()).ok(), signal(SignalKind::terminate()).ok())
    };
    async move {
        #[cfg(unix)]
        {
            let received = |signal: Option<tokio::signal::unix::Signal>| async move {
                match signal {
                    Some(mut signal) => {
                        signal.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                () = received(interrupt) => {}
                () = received(terminate) => {}
            }
        }
        #[cfg(not(unix))]
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}
