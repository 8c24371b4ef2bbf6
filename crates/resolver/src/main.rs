//! `battlelog-resolver`: loads the configuration, binds, and serves until
//! SIGINT or SIGTERM.

use std::path::PathBuf;

use battlelog_resolver::config::{Config, Overrides};
use clap::Parser;

/// The battlelog resolver: battles' game logic over gRPC.
// mimalloc: gRPC and sled allocate small buffers per request, and the
// system allocator costs about a sixth of the journal's throughput
// (BENCHMARKS.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Debug, Parser)]
#[command(version, about)]
struct Cli {
    /// TOML config file; flags and BATTLELOG_RESOLVER_* variables override it.
    #[arg(long, env = "BATTLELOG_RESOLVER_CONFIG")]
    config: Option<PathBuf>,
    #[command(flatten)]
    overrides: Overrides,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let config = Config::load(cli.config.as_deref(), &cli.overrides)?;
    let (listener, local) = battlelog_runtime::start(&config.log, config.log_format, config.listen).await?;
    tracing::info!(%local, journal = %config.journal_url, roller = %config.roller_url, "battlelog-resolver starting");
    // run() fails on bad URLs (validate() checked them) and TLS files
    // before it serves: read the files now, before the readiness line.
    config.server_tls.server_config()?;
    config.client_tls.client_config()?;
    battlelog_resolver::server::service(&config)?;
    battlelog_resolver::server::verifier(&config)?;
    battlelog_runtime::announce("battlelog-resolver", local)?;
    battlelog_resolver::run(&config, listener, battlelog_runtime::shutdown_signal()).await?;
    tracing::info!("battlelog-resolver stopped");
    Ok(())
}
