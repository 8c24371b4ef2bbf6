//! `battlelog-journal`: loads the configuration, sets up logging, binds the
//! listener and runs the journal until SIGINT or SIGTERM.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use battlelog_journal::config::{Config, LogFormat, Overrides};
use clap::Parser;
use tracing_subscriber::EnvFilter;

/// The battlelog journal: durable, hash-chained event store with a gRPC API.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Cli {
    /// TOML config file (keys as in the README); flags and BATTLELOG_JOURNAL_* variables override it.
    #[arg(long, env = "BATTLELOG_JOURNAL_CONFIG")]
    config: Option<PathBuf>,
    #[command(flatten)]
    overrides: Overrides,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let config = Config::load(cli.config.as_deref(), &cli.overrides)?;
    let filter = EnvFilter::try_from_default_env().or_else(|_| EnvFilter::try_new(&config.log))?;
    let logs = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    match config.log_format {
        LogFormat::Json => logs.json().init(),
        LogFormat::Text => logs.init(),
    }

    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("cannot listen on {}", config.listen))?;
    let local = listener.local_addr()?;
    // One machine-readable line on stdout, so that whoever started us with
    // port 0 learns the port (logs go to stderr).
    let mut stdout = std::io::stdout();
    writeln!(stdout, "battlelog-journal listening on {local}")?;
    stdout.flush()?;
    tracing::info!(%local, data_dir = %config.data_dir.display(), "battlelog-journal starting");

    battlelog_journal::run(&config, listener, shutdown_signal()).await?;
    Ok(())
}

/// Resolves on SIGINT or SIGTERM (SIGKILL, of course, is not seen: that is
/// what the flush-before-reply is for).
async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
}
