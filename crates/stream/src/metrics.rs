//! [`CacheMetrics`]: how a service's fold cache is doing — its size in bytes
//! and battles, hits and misses, and the journal reads that catch a fold
//! up — recorded by [`crate::FoldCache`] and [`crate::StreamClient`] as they
//! work.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

/// A fold cache's metrics; cheap to clone (every handle shares its value).
/// The default one is registered nowhere.
#[derive(Debug, Clone, Default)]
pub struct CacheMetrics {
    bytes: Gauge,
    battles: Gauge,
    hits: Counter,
    misses: Counter,
    catch_up_reads: Counter,
}

impl CacheMetrics {
    /// The metrics, registered in `registry` (the service's own
    /// sub-registry: `resolver` gives `battlelog_resolver_cache_*`).
    pub fn register(registry: &mut Registry) -> Self {
        let metrics = Self::default();
        registry.register(
            "cache_bytes",
            "Bytes of folded battle state the cache holds now (as weighed for its budget).",
            metrics.bytes.clone(),
        );
        registry.register("cache_battles", "Battles the cache holds now.", metrics.battles.clone());
        registry.register("cache_hits", "Commands that found their battle in the cache.", metrics.hits.clone());
        registry.register(
            "cache_misses",
            "Commands that did not find their battle in the cache (it is folded from the journal).",
            metrics.misses.clone(),
        );
        registry.register(
            "catch_up_reads",
            "Journal reads (ReadStream pages) made to catch a folded battle up.",
            metrics.catch_up_reads.clone(),
        );
        metrics
    }

    pub(crate) fn looked_up(&self, hit: bool) {
        if hit {
            self.hits.inc()
        } else {
            self.misses.inc()
        };
    }

    pub(crate) fn set_size(&self, bytes: u64, battles: usize) {
        self.bytes.set(i64::try_from(bytes).unwrap_or(i64::MAX));
        self.battles.set(i64::try_from(battles).unwrap_or(i64::MAX));
    }

    pub(crate) fn catch_up_read(&self) {
        self.catch_up_reads.inc();
    }

    /// Hits and misses so far.
    pub fn lookups(&self) -> (u64, u64) {
        (self.hits.get(), self.misses.get())
    }

    /// The size last recorded: bytes and battles.
    pub fn size(&self) -> (u64, u64) {
        (u64::try_from(self.bytes.get()).unwrap_or(0), u64::try_from(self.battles.get()).unwrap_or(0))
    }

    /// Catch-up reads so far.
    pub fn catch_up_reads(&self) -> u64 {
        self.catch_up_reads.get()
    }
}
