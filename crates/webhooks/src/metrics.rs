//! [`WebhooksMetrics`]: the service's counters, and the parked and queued
//! gauges read from the store when scraped, shown at the admin port's
//! `/metrics` in the OpenMetrics text format (prometheus-client's encoder).

use std::sync::{Arc, OnceLock};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;

use crate::store::Store;

/// Counters since the process started; cheap to clone (every handle shares
/// its value). The default one is registered nowhere.
#[derive(Debug, Clone, Default)]
pub struct WebhooksMetrics {
    pub received: Counter,
    pub delivered: Counter,
    pub attempts: Counter,
    pub failures: Counter,
    pub parked: Counter,
    pub replayed: Counter,
    /// Events of tenants without an endpoint: not delivered, by design.
    pub skipped_no_endpoint: Counter,
    /// Messages on the stream that are not a committed event.
    pub undecodable: Counter,
    /// Events received again after they were stored: acknowledged, not sent.
    pub duplicates: Counter,
    /// Events refused (NAK) because their battle's previous one was missing.
    pub out_of_order: Counter,
    /// Gaps given up after `gap_wait_ms`: events that never arrived.
    pub gaps: Counter,
    /// Records of the feed that are not the journal's (not held by it, not
    /// chained on their battle, or under another tenant): never delivered.
    pub forged: Counter,
    /// The store the gauges are read from, once the service has one, and
    /// the configured tenants, whose parked series are shown at zero.
    store: Arc<OnceLock<(Arc<Store>, Vec<String>)>>,
}

impl WebhooksMetrics {
    /// The metrics, registered in `registry` (the caller passes the
    /// `webhooks` sub-registry of its service's registry). The gauges show
    /// once [`Self::read_gauges_from`] has named the store.
    pub fn register(registry: &mut Registry) -> Self {
        let metrics = Self::default();
        metrics.register_again(registry);
        metrics
    }

    /// Registers these very handles in one more registry (the service's
    /// `/metrics` port shows them as its admin port does).
    pub fn register_again(&self, registry: &mut Registry) {
        let metrics = self;
        let counters = [
            ("received", "Events received from the journal's JetStream fan-out.", &metrics.received),
            ("delivered", "Deliveries a tenant's endpoint accepted (2xx).", &metrics.delivered),
            ("attempts", "POSTs attempted.", &metrics.attempts),
            ("failures", "POSTs that failed (no 2xx answer in time).", &metrics.failures),
            // Not `parked`: that family is the gauge of what is parked now,
            // and OpenMetrics allows one family per name.
            ("deliveries_parked", "Deliveries parked (after their attempts, or behind a parked one).", &metrics.parked),
            ("replayed", "Parked deliveries put back in the queue by a replay.", &metrics.replayed),
            ("skipped_no_endpoint", "Events of tenants without a configured endpoint.", &metrics.skipped_no_endpoint),
            ("undecodable", "Messages that are not a committed event of the fan-out.", &metrics.undecodable),
            (
                "duplicates",
                "Events received again after they were stored (redeliveries), not sent again.",
                &metrics.duplicates,
            ),
            (
                "out_of_order",
                "Events refused for now because an earlier one of their battle was missing.",
                &metrics.out_of_order,
            ),
            ("gaps", "Missing events of a battle given up after gap_wait_ms (see the log).", &metrics.gaps),
            (
                "forged",
                "Records of the feed refused as not the journal's (not held by it, out of its battle's chain, or \
                 under another tenant): never delivered (see the log).",
                &metrics.forged,
            ),
        ];
        for (name, help, counter) in counters {
            registry.register(name, help, counter.clone());
        }
        registry.register_collector(Box::new(Gauges(metrics.store.clone())));
    }

    /// Reads the parked and queued gauges from `store` at each scrape;
    /// `tenants` (those with an endpoint) have their parked series from the
    /// start, at zero while nothing of theirs is parked, so that the first
    /// parking is a change Prometheus sees and an alert can fire on.
    pub fn read_gauges_from(&self, store: Arc<Store>, tenants: impl IntoIterator<Item = String>) {
        // One store per service: a second call (the same store) changes nothing.
        let _ = self.store.set((store, tenants.into_iter().collect()));
    }
}

/// The gauges, read from the store when scraped.
#[derive(Debug)]
struct Gauges(Arc<OnceLock<(Arc<Store>, Vec<String>)>>);

impl Collector for Gauges {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Some((store, tenants)) = self.0.get() else { return Ok(()) };
        // An unreadable store fails the scrape (the admin port answers 500)
        // rather than show a made-up zero.
        let mut parked_by_tenant = store.parked_by_tenant().map_err(|_| std::fmt::Error)?;
        for tenant in tenants {
            parked_by_tenant.entry(tenant.clone()).or_insert(0);
        }
        let mut parked = encoder.encode_descriptor(
            "parked",
            "Deliveries parked now: in all, and by tenant.",
            None,
            MetricType::Gauge,
        )?;
        let total: u64 = parked_by_tenant.values().sum();
        parked.encode_gauge(&i64::try_from(total).unwrap_or(i64::MAX))?;
        for (tenant, count) in &parked_by_tenant {
            let labels = [("tenant", tenant.as_str())];
            parked.encode_family(&labels)?.encode_gauge(&i64::try_from(*count).unwrap_or(i64::MAX))?;
        }
        let queued = ConstGauge::new(i64::try_from(store.queued()).unwrap_or(i64::MAX));
        let queued_encoder =
            encoder.encode_descriptor("queued", "Deliveries waiting to be delivered.", None, queued.metric_type())?;
        queued.encode(queued_encoder)
    }
}

/// The registry `/metrics` shows when the caller brings none: this
/// service's metrics under `battlelog_webhooks_`, with the
/// `battlelog_build_info` every service's registry has.
pub fn own_registry() -> (WebhooksMetrics, Arc<Registry>) {
    let mut registry = battlelog_runtime::metrics::registry("webhooks");
    let metrics = WebhooksMetrics::register(registry.sub_registry_with_prefix("webhooks"));
    (metrics, Arc::new(registry))
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::encoding::text::encode;

    /// The names are the ones the service had before prometheus-client
    /// (dashboards, alerts and operators' scripts use them), written out.
    #[test]
    fn the_names_in_a_scrape_are_the_documented_ones() {
        let dir = tempfile::tempdir().unwrap();
        let (metrics, registry) = own_registry();
        metrics.read_gauges_from(Arc::new(Store::open(dir.path()).unwrap()), ["forum-a".to_owned()]);
        metrics.delivered.inc_by(3);
        let mut text = String::new();
        encode(&mut text, &registry).unwrap();
        for line in [
            "battlelog_webhooks_received_total 0",
            "battlelog_webhooks_delivered_total 3",
            "battlelog_webhooks_attempts_total 0",
            "battlelog_webhooks_failures_total 0",
            "battlelog_webhooks_deliveries_parked_total 0",
            "battlelog_webhooks_replayed_total 0",
            "battlelog_webhooks_skipped_no_endpoint_total 0",
            "battlelog_webhooks_undecodable_total 0",
            "battlelog_webhooks_duplicates_total 0",
            "battlelog_webhooks_out_of_order_total 0",
            "battlelog_webhooks_gaps_total 0",
            "# TYPE battlelog_webhooks_parked gauge",
            "battlelog_webhooks_parked 0",
            // A configured tenant's series is there before anything parks.
            "battlelog_webhooks_parked{tenant=\"forum-a\"} 0",
            "battlelog_webhooks_queued 0",
        ] {
            assert!(text.lines().any(|l| l == line), "no {line} in\n{text}");
        }
        // One family per name (OpenMetrics parsers refuse a second): the
        // counter of parkings once clashed with the gauge of what is parked.
        let mut families: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("# TYPE ")).collect();
        let count = families.len();
        families.sort_by_key(|family| family.split(' ').next());
        families.dedup_by_key(|family| family.split(' ').next());
        assert_eq!(families.len(), count, "a family name is declared twice in\n{text}");
    }
}
