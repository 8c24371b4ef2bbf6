//! [`ResolverMetrics`]: what the resolver counts for `/metrics` — its fold
//! cache (size, hits, misses, catch-up reads: `battlelog_stream`'s
//! [`CacheMetrics`], recorded by the cache and the stream client) and the
//! actions it resolved, by ruleset (recorded in `Act` once the journal has
//! taken the resolution).

use battlelog_stream::CacheMetrics;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

/// The ruleset label: a `RulesetId` (a bounded set).
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Ruleset {
    ruleset: String,
}

/// The resolver's metrics; cheap to clone (every handle shares its value).
/// The default one is registered nowhere.
#[derive(Debug, Clone, Default)]
pub struct ResolverMetrics {
    /// The fold cache's, given to the cache and the stream client.
    pub cache: CacheMetrics,
    actions: Family<Ruleset, Counter>,
}

impl ResolverMetrics {
    /// The metrics, registered in `registry` (the caller passes the
    /// `resolver` sub-registry of its service's registry).
    pub fn register(registry: &mut Registry) -> Self {
        let cache = CacheMetrics::register(registry);
        let actions = Family::default();
        registry.register(
            "actions",
            "Actions resolved and journaled by Act, by ruleset (replays of a request not counted).",
            actions.clone(),
        );
        Self { cache, actions }
    }

    /// An action of `ruleset` resolved and journaled.
    pub(crate) fn resolved(&self, ruleset: String) {
        self.actions.get_or_create(&Ruleset { ruleset }).inc();
    }

    /// Actions of `ruleset` resolved so far.
    pub fn actions(&self, ruleset: &str) -> u64 {
        self.actions.get_or_create(&Ruleset { ruleset: ruleset.to_owned() }).get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::encoding::text::encode;

    /// The names a scrape shows are the documented ones (dashboards and
    /// alerts use them), written out here.
    #[test]
    fn the_names_in_a_scrape_are_the_documented_ones() {
        let mut registry = Registry::with_prefix("battlelog");
        let metrics = ResolverMetrics::register(registry.sub_registry_with_prefix("resolver"));
        metrics.resolved("pokemon-d6@1".into());
        let mut text = String::new();
        encode(&mut text, &registry).unwrap();
        for line in [
            "# TYPE battlelog_resolver_cache_bytes gauge",
            "# TYPE battlelog_resolver_cache_battles gauge",
            "battlelog_resolver_cache_hits_total 0",
            "battlelog_resolver_cache_misses_total 0",
            "battlelog_resolver_catch_up_reads_total 0",
            "battlelog_resolver_actions_total{ruleset=\"pokemon-d6@1\"} 1",
        ] {
            assert!(text.contains(line), "no {line} in\n{text}");
        }
    }
}
