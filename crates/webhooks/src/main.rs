//! `battlelog-webhooks`: loads the configuration, binds its HTTP port, and
//! delivers until SIGINT or SIGTERM.

use battlelog_runtime::config::{CommandLine, Layers};
use battlelog_webhooks::config::{Config, SERVICE};
use clap::CommandFactory;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

// The name, version and about of `--help`; `--config` and one flag per
// config key come from `Config`'s fields (battlelog_runtime::config).
/// The battlelog webhooks: committed events POSTed to each tenant's endpoint, signed, in order.
#[derive(Debug, clap::Parser)]
#[command(version, about)]
struct Cli {}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let command_line = CommandLine::parse::<Config>(SERVICE, Cli::command());
    let config = Config::load(&Layers::from_process(SERVICE, command_line))?;
    let (listener, local) = battlelog_runtime::start(&config.log, config.log_format, config.listen).await?;
    tracing::info!(%local, tenants = config.tenants.len(), "battlelog-webhooks starting");
    // Installed before the readiness line, which `run` prints once every
    // file is read: a SIGTERM right after it shuts down gracefully.
    let shutdown = battlelog_runtime::shutdown_signal();
    battlelog_webhooks::run(&config, listener, shutdown).await?;
    tracing::info!("battlelog-webhooks stopped");
    Ok(())
}
