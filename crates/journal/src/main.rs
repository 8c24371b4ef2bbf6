//! `battlelog-journal`: loads the configuration, sets up logging, binds the
//! listener and runs the journal until SIGINT or SIGTERM.

use std::path::PathBuf;

use battlelog_journal::config::{Config, Overrides};
use clap::Parser;

/// The battlelog journal: durable, hash-chained event store with a gRPC API.
// mimalloc: gRPC and sled allocate small buffers per request, and the
// system allocator costs about a sixth of the journal's throughput
// (BENCHMARKS.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
    let (listener, local) = battlelog_runtime::start(&config.log, config.log_format, config.listen).await?;
    tracing::info!(%local, data_dir = %config.data_dir.display(), "battlelog-journal starting");
    // A bad TLS file stops the journal before its readiness line.
    config.server_tls.server_config()?;
    battlelog_auth::Verifier::from_files(&config.auth_keys)?;
    // Whoever started us with port 0 learns the port from this line.
    battlelog_runtime::announce("battlelog-journal", local)?;
    battlelog_journal::run(&config, listener, battlelog_runtime::shutdown_signal()).await?;
    Ok(())
}
