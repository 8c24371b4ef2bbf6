//! [`JournalMetrics`]: what the journal counts for `/metrics`, recorded where
//! it happens — appends in [`crate::Journal::append`], group sizes and flush
//! times in the group commit ([`crate::store::group_commit`]), the outbox lag and
//! publishes in the outbox drain ([`crate::outbox`]).
//!
//! Registered under the registry it is given (the service passes its own
//! registry's `journal` sub-registry, so the names read
//! `battlelog_journal_*`); never a global one, since `battlelog up` runs
//! several services in one process.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};

/// How an append ended.
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct AppendResult {
    pub result: AppendResultKind,
}

/// `committed`: durable (or a repeat of durable events); `refused`: an error
/// was answered and nothing was written.
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq, prometheus_client::encoding::EncodeLabelValue)]
#[allow(non_camel_case_types)]
pub enum AppendResultKind {
    committed,
    refused,
}

/// The journal's metrics; cheap to clone (every handle shares its value).
#[derive(Debug, Clone)]
pub struct JournalMetrics {
    appends: Family<AppendResult, Counter>,
    events_appended: Counter,
    group_size: Histogram,
    flush_duration: Histogram,
    outbox_lag: Gauge,
    publish_failures: Counter,
    published: Counter,
    store_behind: Gauge,
}

impl Default for JournalMetrics {
    /// Handles registered nowhere: for embedders and tests that do not
    /// scrape (recording into them costs the same and goes nowhere).
    fn default() -> Self {
        Self {
            appends: Family::default(),
            events_appended: Counter::default(),
            // 1, 2, 4 … 4096 events per group (the default max_commit_batch
            // is 1024 appends, each of up to several events).
            group_size: Histogram::new(exponential_buckets(1.0, 2.0, 13)),
            // 100 µs … about 3.3 s: an fsync on a fast disk up to a stalled one.
            flush_duration: Histogram::new(exponential_buckets(0.0001, 2.0, 16)),
            outbox_lag: Gauge::default(),
            publish_failures: Counter::default(),
            published: Counter::default(),
            store_behind: Gauge::default(),
        }
    }
}

impl JournalMetrics {
    /// The journal's metrics, registered in `registry` (the caller passes
    /// the `journal` sub-registry of its service's registry).
    pub fn register(registry: &mut Registry) -> Self {
        let metrics = Self::default();
        registry.register(
            "appends",
            "Append calls answered, by result: committed (durable, or a repeat of durable events) or refused (an error, nothing written).",
            metrics.appends.clone(),
        );
        registry.register(
            "events_appended",
            "Events newly written by committed appends (repeats not counted).",
            metrics.events_appended.clone(),
        );
        registry.register(
            "append_group_size",
            "Events written per group commit, i.e. per flush (sled and memory stores).",
            metrics.group_size.clone(),
        );
        registry.register_with_unit(
            "flush_duration",
            "Time one group commit's flush (fsync) took (sled and memory stores).",
            Unit::Seconds,
            metrics.flush_duration.clone(),
        );
        registry.register(
            "outbox_lag_events",
            "Committed events not yet published to the fan-out (NATS), as the outbox drain last saw it.",
            metrics.outbox_lag.clone(),
        );
        registry.register(
            "nats_publish_failures",
            "Publishes of a committed event to NATS JetStream that failed (each is retried until it works).",
            metrics.publish_failures.clone(),
        );
        registry.register(
            "nats_published",
            "Committed events published to NATS JetStream and acknowledged.",
            metrics.published.clone(),
        );
        registry.register(
            "store_behind_checkpoint",
            "1 while the journal's store does not hold the log its last signed checkpoint covers (records lost, or \
             another log): it takes no appends and signs nothing (docs/operating.md); 0 otherwise.",
            metrics.store_behind.clone(),
        );
        metrics
    }

    /// Whether the store is behind the last signed checkpoint.
    pub(crate) fn set_store_behind(&self, behind: bool) {
        self.store_behind.set(i64::from(behind));
    }

    /// Whether the store was last said to be behind (for tests and diagnostics).
    pub fn store_behind(&self) -> bool {
        self.store_behind.get() != 0
    }

    /// An append call answered: `Some(n)` committed with `n` events newly
    /// written (0 for a repeat), `None` refused.
    pub(crate) fn append_answered(&self, written: Option<u64>) {
        let result = match written {
            Some(events) => {
                self.events_appended.inc_by(events);
                AppendResultKind::committed
            }
            None => AppendResultKind::refused,
        };
        self.appends.get_or_create(&AppendResult { result }).inc();
    }

    /// One group commit flushed `events` events in `flush`.
    pub(crate) fn group_flushed(&self, events: u64, flush: std::time::Duration) {
        self.group_size.observe(events as f64);
        self.flush_duration.observe(flush.as_secs_f64());
    }

    /// The outbox holds `events` committed events not yet published.
    pub(crate) fn set_outbox_lag(&self, events: u64) {
        self.outbox_lag.set(i64::try_from(events).unwrap_or(i64::MAX));
    }

    pub(crate) fn publish_failed(&self) {
        self.publish_failures.inc();
    }

    pub(crate) fn published(&self) {
        self.published.inc();
    }

    /// Appends answered with `result` so far (for tests and diagnostics).
    pub fn appends(&self, result: AppendResultKind) -> u64 {
        self.appends.get_or_create(&AppendResult { result }).get()
    }

    /// Events newly written so far.
    pub fn events_appended(&self) -> u64 {
        self.events_appended.get()
    }

    /// The outbox lag as last set.
    pub fn outbox_lag(&self) -> u64 {
        u64::try_from(self.outbox_lag.get()).unwrap_or(0)
    }

    /// Failed and acknowledged publishes so far.
    pub fn publishes(&self) -> (u64, u64) {
        (self.publish_failures.get(), self.published.get())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::encoding::text::encode;

    /// The names a scrape shows are the ones operators' dashboards and
    /// alerts use (deploy/, the contract of issue 22): written out here,
    /// not derived from the registration above.
    #[test]
    fn the_names_in_a_scrape_are_the_documented_ones() {
        let mut registry = Registry::with_prefix("battlelog");
        let metrics = JournalMetrics::register(registry.sub_registry_with_prefix("journal"));
        metrics.append_answered(Some(2));
        metrics.append_answered(None);
        let mut text = String::new();
        encode(&mut text, &registry).unwrap();
        for name in [
            "battlelog_journal_appends_total{result=\"committed\"} 1",
            "battlelog_journal_appends_total{result=\"refused\"} 1",
            "battlelog_journal_events_appended_total 2",
            "# TYPE battlelog_journal_append_group_size histogram",
            "# TYPE battlelog_journal_flush_duration_seconds histogram",
            "# TYPE battlelog_journal_outbox_lag_events gauge",
            "battlelog_journal_nats_publish_failures_total 0",
            "battlelog_journal_nats_published_total 0",
            "battlelog_journal_store_behind_checkpoint 0",
        ] {
            assert!(text.contains(name), "no {name} in\n{text}");
        }
    }

    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};

    use crate::journal::tests::{keyed, opened, rolled};
    use crate::outbox::{EventPublisher, PublishError, PublishFuture};
    use crate::store::{EventStore, MemoryStore, OutboxEvent};
    use crate::{ExpectedVersion, Journal, JournalOptions};

    /// The value of the sample `name` (with its labels, if any) in a scrape
    /// of `registry`.
    fn sample(registry: &Registry, name: &str) -> f64 {
        let mut text = String::new();
        encode(&mut text, registry).unwrap();
        text.lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
            .unwrap_or_else(|| panic!("no {name} in\n{text}"))
            .parse()
            .unwrap()
    }

    /// Polls `done` until it holds, for at most ten seconds.
    async fn eventually(what: &str, mut done: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !done() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Appends through the journal on sled are counted by result, their
    /// new events once (a repeat adds none), and every event written lands
    /// in exactly one flushed group.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn appends_events_and_group_commits_are_counted() {
        let dir = tempfile::tempdir().unwrap();
        let mut registry = Registry::with_prefix("battlelog");
        let metrics = JournalMetrics::register(registry.sub_registry_with_prefix("journal"));
        let journal = Journal::open(JournalOptions::new(dir.path()).with_metrics(metrics.clone())).await.unwrap();
        journal
            .append("s".into(), ExpectedVersion::NoStream, vec![keyed(opened(""), "open"), rolled(0, 0)])
            .await
            .unwrap();
        journal.append("s".into(), ExpectedVersion::Exact(1), vec![rolled(0, 1)]).await.unwrap();
        // A stale expected version: refused, nothing written.
        journal.append("s".into(), ExpectedVersion::Exact(0), vec![rolled(0, 2)]).await.unwrap_err();
        // A repeat of a known key: committed, nothing new written.
        let repeat = journal.append("s".into(), ExpectedVersion::Any, vec![keyed(opened(""), "open")]).await.unwrap();
        assert!(repeat.deduplicated);

        assert_eq!(metrics.appends(AppendResultKind::committed), 3);
        assert_eq!(metrics.appends(AppendResultKind::refused), 1);
        assert_eq!(metrics.events_appended(), 3);
        let groups = sample(&registry, "battlelog_journal_append_group_size_count");
        assert!((1.0..=2.0).contains(&groups), "{groups} groups flushed for two writing appends");
        let events = sample(&registry, "battlelog_journal_append_group_size_sum");
        assert_eq!(events, 3.0, "the groups' sizes add up to the events written");
        let flushes = sample(&registry, "battlelog_journal_flush_duration_seconds_count");
        assert_eq!(flushes, groups, "one flush timed per group");
        assert!(sample(&registry, "battlelog_journal_flush_duration_seconds_sum") > 0.0, "an fsync takes time");
        journal.shutdown().await.unwrap();
    }

    /// A publisher that refuses while `failing` is set.
    #[derive(Debug, Default)]
    struct Flaky {
        failing: AtomicBool,
    }

    impl EventPublisher for Flaky {
        fn publish<'a>(&'a self, _event: &'a OutboxEvent) -> PublishFuture<'a> {
            let failing = self.failing.load(Ordering::SeqCst);
            Box::pin(async move { if failing { Err(PublishError("NATS is down".into())) } else { Ok(()) } })
        }
    }

    /// While the publisher fails, the outbox lag grows with every commit
    /// and failures are counted; once it works again, everything is
    /// published and the lag is back to zero.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_outbox_lag_rises_while_publishing_fails_and_falls_after() {
        let flaky = Arc::new(Flaky { failing: AtomicBool::new(true) });
        let metrics = JournalMetrics::default();
        let store: Arc<dyn EventStore> = Arc::new(MemoryStore::new());
        let options = JournalOptions { publisher: Some(flaky.clone()), ..JournalOptions::new("unused") };
        let journal = Journal::open_on(store, options.with_metrics(metrics.clone())).await.unwrap();
        journal.append("s".into(), ExpectedVersion::NoStream, vec![opened(""), rolled(0, 0)]).await.unwrap();
        eventually("a lag of 2", || metrics.outbox_lag() == 2 && metrics.publishes().0 >= 1).await;
        journal.append("s".into(), ExpectedVersion::Exact(1), vec![rolled(0, 1)]).await.unwrap();
        eventually("a lag of 3", || metrics.outbox_lag() == 3).await;
        assert_eq!(metrics.publishes().1, 0, "nothing published yet");

        flaky.failing.store(false, Ordering::SeqCst);
        eventually("everything published", || metrics.publishes().1 == 3 && metrics.outbox_lag() == 0).await;
        journal.shutdown().await.unwrap();
    }
}
