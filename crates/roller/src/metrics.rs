//! [`RollerMetrics`]: what the roller counts for `/metrics` — rolls and dice
//! drawn and journaled, seeds revealed, commitments signed — recorded in
//! [`crate::service`] where the journal has acknowledged them.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::registry::Registry;

/// The roller's metrics; cheap to clone (every handle shares its value).
/// The default one is registered nowhere.
#[derive(Debug, Clone, Default)]
pub struct RollerMetrics {
    rolls: Counter,
    dice: Counter,
    reveals: Counter,
    commitments: Counter,
}

impl RollerMetrics {
    /// The metrics, registered in `registry` (the caller passes the
    /// `roller` sub-registry of its service's registry).
    pub fn register(registry: &mut Registry) -> Self {
        let metrics = Self::default();
        registry.register(
            "rolls",
            "Roll expressions drawn and journaled (a replayed request counts once, when first rolled).",
            metrics.rolls.clone(),
        );
        registry.register(
            "dice",
            "Dice drawn in journaled rolls (rerolls and explosions included).",
            metrics.dice.clone(),
        );
        registry.register("reveals", "Epoch seeds revealed and journaled.", metrics.reveals.clone());
        registry.register(
            "commitments",
            "Seed commitments signed: answered to Commitment calls, or journaled by a reveal for the next epoch.",
            metrics.commitments.clone(),
        );
        metrics
    }

    /// Rolls newly journaled, with `dice` dice among them.
    pub(crate) fn rolled(&self, rolls: u64, dice: u64) {
        self.rolls.inc_by(rolls);
        self.dice.inc_by(dice);
    }

    /// A reveal newly journaled, with the next epoch's commitment when it
    /// carried one.
    pub(crate) fn revealed(&self, committed_next: bool) {
        self.reveals.inc();
        if committed_next {
            self.commitments.inc();
        }
    }

    pub(crate) fn committed(&self) {
        self.commitments.inc();
    }

    /// Rolls, dice, reveals and commitments so far.
    pub fn counts(&self) -> [u64; 4] {
        [self.rolls.get(), self.dice.get(), self.reveals.get(), self.commitments.get()]
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
        let metrics = RollerMetrics::register(registry.sub_registry_with_prefix("roller"));
        metrics.rolled(2, 7);
        metrics.revealed(true);
        let mut text = String::new();
        encode(&mut text, &registry).unwrap();
        for line in [
            "battlelog_roller_rolls_total 2",
            "battlelog_roller_dice_total 7",
            "battlelog_roller_reveals_total 1",
            "battlelog_roller_commitments_total 1",
        ] {
            assert!(text.contains(line), "no {line} in\n{text}");
        }
    }
}
