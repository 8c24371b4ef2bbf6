//! What a battle is opened with: the ruleset's name and each participant's
//! sheet, and [`Version`], the position in its history that actions refer
//! to. Every ruleset's vocabulary builds on these, so they import nothing of
//! the crate.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A position in the battle's history that later actions refer to
/// (`against`, `refers_to`).
pub type Version = u64;

/// One participant's sheet, e.g. `{"id": "mage", "abilities": {"Рука крови":
/// {"per_episode": 2, "min_points": 5, "magical": true}}}` (`magical` and
/// `min_points` under `arcana-2d10@2` only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Participant {
    pub id: String,
    /// `arcana-2d10`: abilities by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub abilities: BTreeMap<String, AbilitySheet>,
    /// `pbta-2d6`: trait values by trait name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub traits: BTreeMap<String, i32>,
}

impl Participant {
    pub fn new(id: impl Into<String>) -> Participant {
        Participant { id: id.into(), abilities: BTreeMap::new(), traits: BTreeMap::new() }
    }
}

/// One ability on an `arcana-2d10` sheet.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AbilitySheet {
    /// Uses allowed per episode; no limit without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_episode: Option<u32>,
    /// `arcana-2d10@2` (docs/rules.md §6.2.1): whether broken concentration blocks
    /// it; magical when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub magical: Option<bool>,
    /// `arcana-2d10@2` (docs/rules.md §6.2.1): the least skill points it can be
    /// used with, 1..=12; no minimum when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_points: Option<u32>,
}

impl AbilitySheet {
    /// Magical unless the sheet says otherwise (§6.2.1).
    pub fn is_magical(&self) -> bool {
        self.magical.unwrap_or(true)
    }
}

/// What opening a battle takes: `{"ruleset": "pokemon-d6@1", "participants": […]}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenBattle {
    pub ruleset: String,
    pub participants: Vec<Participant>,
}
