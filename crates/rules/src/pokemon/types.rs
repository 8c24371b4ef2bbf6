//! The `pokemon-d6` vocabulary every version shares: its actions, outcomes and
//! state, as they read and write in JSON.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::fraction::Fraction;
use crate::model::sheet::Version;
use crate::present_or_null;

/// A physical or special move (§1.1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Attack {
    pub actor: String,
    pub target: String,
    #[serde(rename = "move")]
    pub move_name: String,
    /// Base power; without it the outcome carries no `damage`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power: Option<u32>,
    /// Secondary effect (a status name such as `burn`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<String>,
    #[serde(default)]
    pub interrupt: bool,
    #[serde(default)]
    pub multi_hit: bool,
    #[serde(default)]
    pub two_turn: bool,
    #[serde(default)]
    pub variable_power: bool,
    #[serde(default)]
    pub never_miss: bool,
    #[serde(default)]
    pub high_crit: bool,
    #[serde(default)]
    pub priority: bool,
    #[serde(default)]
    pub prefer: Prefer,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// What a `high_crit` move with an `effect` takes on a 5.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Prefer {
    #[default]
    Crit,
    Effect,
}

/// A status attack (§1.2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StatusMove {
    pub actor: String,
    pub target: String,
    #[serde(rename = "move")]
    pub move_name: String,
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The defender's reaction (§1.3, and §6.1.3 under `@2`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Dodge {
    pub actor: String,
    /// `@2` only, and required there: the battle version of the attack this
    /// dodge answers. Optional in the vocabulary so that a missing one is a
    /// rejection naming the rule, not a parse error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(description = "The battle version of the attack this dodge answers.")]
    pub against: Option<Version>,
    /// The attack was a priority move: −1 on the dodge die. Ignored under
    /// `@2`, which takes it from the attack.
    #[serde(default)]
    pub priority: bool,
    /// The move Teleport, which counts as a dodge attempt.
    #[serde(default)]
    pub teleport: bool,
    /// Ignored under `@2`, which takes the attack's own `damage`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incoming_damage: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A move picked at random from a list (§1.4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Metronome {
    pub actor: String,
    pub moves: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Skipping a turn (§1.5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Pass {
    pub actor: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AttackResult {
    Miss,
    Hit,
    Crit,
    Failed,
    SelfHit,
    Flinched,
    Charging,
}

/// The outcome of an [`Attack`]. Which fields are present depends on the
/// result, exactly as docs/rules.md §1.1 lists them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AttackOutcome {
    pub result: AttackResult,
    /// With `miss`, `self_hit`, `hit` and `crit`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multiplier: Option<Fraction>,
    /// Multi-hit moves that hit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hits: Option<u32>,
    /// When the attack gave a `power`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub damage: Option<u64>,
    /// With `hit` and `crit`: `Some(None)` is written `null` (no effect).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "present_or_null")]
    #[schemars(with = "Option<String>")]
    pub effect_applied: Option<Option<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupts_target: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breaks_charge: Option<bool>,
}

impl AttackOutcome {
    pub(crate) fn bare(result: AttackResult) -> AttackOutcome {
        AttackOutcome {
            result,
            multiplier: None,
            hits: None,
            damage: None,
            effect_applied: None,
            interrupts_target: None,
            breaks_charge: None,
        }
    }

    /// The status the target received, if any.
    pub fn effect(&self) -> Option<&str> {
        self.effect_applied.as_ref().and_then(Option::as_deref)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StatusMoveResult {
    Success,
    Failed,
    SelfHit,
    Flinched,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StatusMoveOutcome {
    pub result: StatusMoveResult,
    /// Turns the status lasts; 0 when it did not land.
    pub turns: u32,
    /// `@2` always (§6.1.4): a 6 that landed on a charging target broke its
    /// preparation. Absent under `@1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breaks_charge: Option<bool>,
}

/// How a `@2` dodge went (§6.1.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DodgeResult {
    /// The dodge die was rolled and read on the table of §1.3.
    Rolled,
    /// The attack missed: nothing to dodge, no die, not counted.
    NotNeeded,
    /// A flinched Pokémon's Teleport failed: no die, counted.
    Flinched,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DodgeOutcome {
    /// `@2` only; absent under `@1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<DodgeResult>,
    pub reduction_percent: u32,
    pub counted: bool,
    pub dodges_left: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub damage_after: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MetronomeOutcome {
    pub picked: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PassResult {
    Pass,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PassOutcome {
    pub result: PassResult,
}

/// Where one Pokémon stands in the battle.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pokemon {
    /// Dodges that counted toward the limit of five.
    pub dodges_used: u32,
    /// Status name → turns left; a status at 0 turns is removed, never kept.
    pub statuses: BTreeMap<String, u32>,
    /// The two-turn move being prepared.
    pub charging: Option<String>,
    /// Its next move fails.
    pub flinched: bool,
}

/// Every Pokémon of the battle by participant id.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    pub pokemon: BTreeMap<String, Pokemon>,
}

/// The `pokemon-d6` actions, borrowed out of [`crate::Action`].
#[derive(Debug, Clone, Copy)]
pub(crate) enum Act<'a> {
    Attack(&'a Attack),
    StatusMove(&'a StatusMove),
    Dodge(&'a Dodge),
    Metronome(&'a Metronome),
    Pass(&'a Pass),
}
