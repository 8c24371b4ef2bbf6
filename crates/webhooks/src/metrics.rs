//! The service's counters, shown at `/metrics` in the Prometheus text
//! format (version 0.0.4), with the parked and queued gauges read from the
//! store when scraped.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};

/// Counters since the process started.
#[derive(Debug, Default)]
pub struct Metrics {
    pub received: AtomicU64,
    pub delivered: AtomicU64,
    pub attempts: AtomicU64,
    pub failures: AtomicU64,
    pub parked: AtomicU64,
    pub replayed: AtomicU64,
    /// Events of tenants without an endpoint: not delivered, by design.
    pub skipped_no_endpoint: AtomicU64,
    /// Messages on the stream that are not a committed event.
    pub undecodable: AtomicU64,
    /// Events received again after they were stored: acknowledged, not sent.
    pub duplicates: AtomicU64,
    /// Events refused (NAK) because their battle's previous one was missing.
    pub out_of_order: AtomicU64,
    /// Gaps given up after `gap_wait_ms`: events that never arrived.
    pub gaps: AtomicU64,
}

impl Metrics {
    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// The text of `/metrics`: these counters, and the gauges given.
    pub fn render(&self, parked_by_tenant: &BTreeMap<String, u64>, queued: usize) -> String {
        let mut out = String::new();
        let counters = [
            ("received", "Events received from the journal's JetStream fan-out.", &self.received),
            ("delivered", "Deliveries a tenant's endpoint accepted (2xx).", &self.delivered),
            ("attempts", "POSTs attempted.", &self.attempts),
            ("failures", "POSTs that failed (no 2xx answer in time).", &self.failures),
            ("parked", "Deliveries parked (after their attempts, or behind a parked one).", &self.parked),
            ("replayed", "Parked deliveries put back in the queue by a replay.", &self.replayed),
            ("skipped_no_endpoint", "Events of tenants without a configured endpoint.", &self.skipped_no_endpoint),
            ("undecodable", "Messages that are not a committed event of the fan-out.", &self.undecodable),
            (
                "duplicates",
                "Events received again after they were stored (redeliveries), not sent again.",
                &self.duplicates,
            ),
            (
                "out_of_order",
                "Events refused for now because an earlier one of their battle was missing.",
                &self.out_of_order,
            ),
            ("gaps", "Missing events of a battle given up after gap_wait_ms (see the log).", &self.gaps),
        ];
        for (name, help, counter) in counters {
            let _ = writeln!(out, "# HELP battlelog_webhooks_{name}_total {help}");
            let _ = writeln!(out, "# TYPE battlelog_webhooks_{name}_total counter");
            let _ = writeln!(out, "battlelog_webhooks_{name}_total {}", counter.load(Ordering::Relaxed));
        }
        let _ = writeln!(out, "# HELP battlelog_webhooks_parked Deliveries parked now, by tenant.");
        let _ = writeln!(out, "# TYPE battlelog_webhooks_parked gauge");
        let _ = writeln!(out, "battlelog_webhooks_parked {}", parked_by_tenant.values().sum::<u64>());
        for (tenant, count) in parked_by_tenant {
            // Tenants are NATS subject tokens: no quote, backslash or newline
            // to escape in practice, but escape as the format says.
            let tenant = tenant.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n");
            let _ = writeln!(out, "battlelog_webhooks_parked{{tenant=\"{tenant}\"}} {count}");
        }
        let _ = writeln!(out, "# HELP battlelog_webhooks_queued Deliveries waiting to be delivered.");
        let _ = writeln!(out, "# TYPE battlelog_webhooks_queued gauge");
        let _ = writeln!(out, "battlelog_webhooks_queued {queued}");
        out
    }
}
