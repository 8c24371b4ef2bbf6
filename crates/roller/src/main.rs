//! `battlelog-roller`: loads the configuration, binds, and serves until
//! SIGINT or SIGTERM.

use std::path::PathBuf;

use battlelog_roller::config::{Config, Overrides};
use clap::Parser;

/// The battlelog roller: dice from committed seeds, journaled before they are seen.
// mimalloc: gRPC and sled allocate small buffers per request, and the
// system allocator costs about a sixth of the journal's throughput
// (BENCHMARKS.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Debug, Parser)]
#[command(version, about)]
struct Cli {
    /// TOML config file; flags and BATTLELOG_ROLLER_* variables override it.
    #[arg(long, env = "BATTLELOG_ROLLER_CONFIG")]
    config: Option<PathBuf>,
    #[command(flatten)]
    overrides: Overrides,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let config = Config::load(cli.config.as_deref(), &cli.overrides)?;
    let (listener, local) = battlelog_runtime::start(&config.log, config.log_format, config.listen).await?;
    tracing::info!(%local, journal = %config.journal_url, "battlelog-roller starting");
    // Everything that can fail on bad configuration fails before the
    // readiness line.
    let service = battlelog_roller::server::service(&config)?;
    let tls = config.server_tls.server_config()?;
    let verifier = battlelog_roller::server::verifier(&config)?;
    battlelog_runtime::announce("battlelog-roller", local)?;
    battlelog_roller::serve_with_tls(service, listener, tls, verifier, battlelog_runtime::shutdown_signal()).await?;
    tracing::info!("battlelog-roller stopped");
    Ok(())
}
