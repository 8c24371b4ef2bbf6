//! `battlelog-web`: loads the configuration, binds, and serves the judges'
//! pages until SIGINT or SIGTERM.

use battlelog_runtime::config::{CommandLine, Layers};
use battlelog_web::config::{Config, SERVICE};
use clap::CommandFactory;

// The name, version and about of `--help`; `--config` and one flag per
// config key come from `Config`'s fields (battlelog_runtime::config).
/// The battlelog web pages: battles verified in the browser, for judges and forum readers.
#[derive(Debug, clap::Parser)]
#[command(version, about)]
struct Cli {}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let command_line = CommandLine::parse::<Config>(SERVICE, Cli::command());
    let config = Config::load(&Layers::from_process(SERVICE, command_line))?;
    let (listener, local) = battlelog_runtime::start(&config.log, config.log_format, config.listen).await?;
    tracing::info!(%local, resolver = %config.resolver_url, "battlelog-web starting");
    // Installed before the readiness line, which `run` prints once every
    // file is read: a SIGTERM right after it shuts down gracefully.
    let shutdown = battlelog_runtime::shutdown_signal();
    battlelog_web::run(&config, listener, shutdown).await?;
    tracing::info!("battlelog-web stopped");
    Ok(())
}
