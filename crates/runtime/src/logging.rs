//! Structured logs on stderr.

use serde::{Deserialize, Serialize};
use tracing_subscriber::EnvFilter;

/// How logs are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line, for log shippers.
    Json,
}

/// Installs the global subscriber. `RUST_LOG`, when set, wins over `filter`
/// so an operator can raise verbosity without editing the config.
pub fn init(filter: &str, format: LogFormat) -> Result<(), String> {
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(filter))
        .map_err(|e| format!("invalid log filter {filter:?}: {e}"))?;
    // Colours only for a person at a terminal: escape codes in a log file or
    // a collector's stream break every grep for a level or a field.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let logs = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(ansi);
    let installed = match format {
        LogFormat::Json => logs.json().try_init(),
        LogFormat::Text => logs.try_init(),
    };
    installed.map_err(|e| e.to_string())
}
