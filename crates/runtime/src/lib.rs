//! What every battlelog service binary shares, so the three behave alike.
//!
//! - [`logging`]: structured logs to stderr, text or JSON.
//! - [`shutdown_signal`]: resolves on SIGINT or SIGTERM.
//! - [`announce`]: the one readiness line on stdout (`<service> listening on <addr>`).
//! - [`config`]: reading a service's TOML file layer.
//! - [`grpc`]: `INVALID_ARGUMENT` with google.rpc `BadRequest` details, and
//!   the health and reflection services.
//! - [`validate`]: battle ids, request ids and free text, checked alike everywhere.

pub mod config;
pub mod grpc;
pub mod logging;
pub mod validate;

use std::io::Write;
use std::net::SocketAddr;

/// Prints `<service> listening on <addr>` on stdout and flushes it: whoever
/// started the service with port 0 learns its port from this line (logs go
/// to stderr, so the line is never interleaved with them).
pub fn announce(service: &str, addr: SocketAddr) -> std::io::Result<()> {
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{service} listening on {addr}")?;
    stdout.flush()
}

/// Resolves on SIGINT or SIGTERM. SIGKILL is never seen: that is what
/// flushing before every reply is for.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = terminate => {}
    }
}
