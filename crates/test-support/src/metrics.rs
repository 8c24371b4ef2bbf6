//! What the tests read services' `/metrics` with: the metric families the
//! services export (the contract the deploy files and the running services
//! are both held to), the families counted only by event, and one
//! sample's value in a `/metrics` text.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
}

/// The metric families the services export, as issue 22's metrics contract
/// names them (`/metrics`, prometheus-client with the prefix `battlelog`).
///
/// tests/dashboards.rs holds the deploy files to this list; tests/deploy.rs
/// holds this list to the running services (every family here is one
/// their `/metrics` declare, with this type, after the demo), so that a
/// renamed metric fails one of them.
pub const EXPORTED: &[(&str, Kind)] = &[
    // Every gRPC server (runtime's observe layer) and the serve builder.
    ("battlelog_grpc_server_requests_total", Kind::Counter),
    ("battlelog_grpc_server_request_duration_seconds", Kind::Histogram),
    ("battlelog_grpc_server_auth_refusals_total", Kind::Counter),
    ("battlelog_grpc_server_rate_limited_total", Kind::Counter),
    ("battlelog_grpc_server_shed_total", Kind::Counter),
    ("battlelog_grpc_server_open_streams", Kind::Gauge),
    ("battlelog_build_info", Kind::Gauge),
    // Every plain-HTTP server (runtime's observe_http layer): the web
    // pages and the webhooks' admin port.
    ("battlelog_http_server_requests_total", Kind::Counter),
    ("battlelog_http_server_request_duration_seconds", Kind::Histogram),
    // The journal.
    ("battlelog_journal_appends_total", Kind::Counter),
    ("battlelog_journal_events_appended_total", Kind::Counter),
    ("battlelog_journal_append_group_size", Kind::Histogram),
    ("battlelog_journal_flush_duration_seconds", Kind::Histogram),
    ("battlelog_journal_outbox_lag_events", Kind::Gauge),
    ("battlelog_journal_nats_publish_failures_total", Kind::Counter),
    ("battlelog_journal_nats_published_total", Kind::Counter),
    ("battlelog_journal_store_behind_checkpoint", Kind::Gauge),
    // The roller.
    ("battlelog_roller_rolls_total", Kind::Counter),
    ("battlelog_roller_dice_total", Kind::Counter),
    ("battlelog_roller_reveals_total", Kind::Counter),
    ("battlelog_roller_commitments_total", Kind::Counter),
    // The resolver.
    ("battlelog_resolver_cache_bytes", Kind::Gauge),
    ("battlelog_resolver_cache_battles", Kind::Gauge),
    ("battlelog_resolver_cache_hits_total", Kind::Counter),
    ("battlelog_resolver_cache_misses_total", Kind::Counter),
    ("battlelog_resolver_catch_up_reads_total", Kind::Counter),
    ("battlelog_resolver_actions_total", Kind::Counter),
    // battlelog-webhooks (docs/operating.md, *Webhooks*).
    ("battlelog_webhooks_received_total", Kind::Counter),
    ("battlelog_webhooks_delivered_total", Kind::Counter),
    ("battlelog_webhooks_attempts_total", Kind::Counter),
    ("battlelog_webhooks_failures_total", Kind::Counter),
    ("battlelog_webhooks_parked", Kind::Gauge),
    ("battlelog_webhooks_queued", Kind::Gauge),
];

/// The families counted only when something happens (a refusal, a shed
/// request, an open stream, a parked delivery). Each is on `/metrics` at
/// zero from the start for every label set its service knows then (issue
/// 37: absent, a dashboard shows "no data" and `rate()` / `increase()` miss
/// the first event); tests/metrics_at_start.rs holds each real binary to
/// that, and tests/deploy.rs sees every one declared.
pub const BY_EVENT: &[&str] = &[
    "battlelog_grpc_server_auth_refusals_total",
    "battlelog_grpc_server_rate_limited_total",
    "battlelog_grpc_server_shed_total",
    "battlelog_grpc_server_open_streams",
    "battlelog_webhooks_parked",
];

/// The value of the sample `name_and_labels` (`name{label="v"}` as the
/// text writes it) in a `/metrics` text, if there is one.
pub fn sample(text: &str, name_and_labels: &str) -> Option<f64> {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .find_map(|line| line.strip_prefix(name_and_labels)?.strip_prefix(' ')?.trim().parse().ok())
}
