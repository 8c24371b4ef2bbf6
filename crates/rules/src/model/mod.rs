//! The shared model every ruleset reads: [`sheet`] is what a battle opens
//! with (participants, their sheets, [`Version`]), [`state`] the battle as it
//! stands ([`Battle`], its [`Entry`]s, the ruleset's own [`RulesState`]).
//! Inside the crate, import from the submodule: the rulesets' vocabulary
//! needs [`sheet`], and [`state`] holds that vocabulary.

pub mod sheet;
pub mod state;

pub use sheet::{AbilitySheet, OpenBattle, Participant, Version};
pub use state::{Battle, Entry, Resolution, RulesState};
