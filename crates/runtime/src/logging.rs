//! How logs are written: the `log_format` key. The subscriber itself is
//! installed by [`crate::telemetry::init`], with the traces.

use serde::{Deserialize, Serialize};

/// How logs are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line, for log shippers.
    Json,
}
