//! `battlelog-journal`: loads the configuration, sets up logging, binds the
//! listener and runs the journal until SIGINT or SIGTERM.

use battlelog_journal::config::{Config, SERVICE};
use battlelog_runtime::config::{CommandLine, Layers};
use clap::CommandFactory;

// mimalloc: gRPC and sled allocate small buffers per request, and the
// system allocator costs about a sixth of the journal's throughput
// (BENCHMARKS.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

// The name, version and about of `--help`; `--config`
// and one flag per config key come from `Config`'s fields
// (battlelog_runtime::config).
/// The battlelog journal: durable, hash-chained event store with a gRPC API.
#[derive(Debug, clap::Parser)]
#[command(version, about)]
struct Cli {}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let command_line = CommandLine::parse::<Config>(SERVICE, Cli::command());
    let config = Config::load(&Layers::from_process(SERVICE, command_line))?;
    let (listener, local) = battlelog_runtime::start(&config.log, config.log_format, config.listen).await?;
    tracing::info!(%local, backend = ?config.backend, data_dir = %config.data_dir.display(), "battlelog-journal starting");
    // Installed before the readiness line, which `run` prints once every
    // file is read: a SIGTERM right after it shuts down gracefully.
    let shutdown = battlelog_runtime::shutdown_signal();
    battlelog_journal::run(&config, listener, shutdown).await?;
    tracing::info!("battlelog-journal stopped");
    Ok(())
}
