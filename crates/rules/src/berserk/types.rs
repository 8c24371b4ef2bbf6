//! The `berserk` vocabulary every version shares: its actions, outcomes and
//! state, as they read and write in JSON.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::model::sheet::Version;
use crate::present_or_null;

/// The attacking card of a strike.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Attacker {
    pub id: String,
    /// Damage of a [weak, medium, strong] strike.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strike: Option<[u32; 3]>,
    #[serde(default)]
    pub attack_experience: u32,
    #[serde(default)]
    pub die_modifier: i32,
    /// `@1` only (absent reads as `false`); `@2` refuses it.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "sent")]
    #[schemars(with = "bool")]
    pub avoid_exchange: Option<bool>,
    /// `@2` only: a feature that replaces this side's die (an integer 1–6).
    /// Kept as sent, so anything else is a rejection naming the rule rather
    /// than a parse error; `null` is kept too, so it is refused as well.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "sent")]
    #[schemars(
        schema_with = "fixed_roll_schema",
        description = "A feature that replaces this side's die: it draws none."
    )]
    pub fixed_roll: Option<Value>,
}

/// What a `fixed_roll` may be: any JSON value, since the parser keeps
/// whatever is sent so that `berserk@2` refuses anything but an integer 1–6
/// by its rule (§6.3.2); the schema notes that rule (`rules::schema`).
fn fixed_roll_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({})
}

/// A field that is `Some` whenever it is sent — a `null` too (as
/// `Value::Null`, or an error for a `bool`) — so that a version refuses a
/// field by its presence, never mistaking `null` for its absence.
fn sent<'de, D: Deserializer<'de>, T: Deserialize<'de>>(deserializer: D) -> Result<Option<T>, D::Error> {
    T::deserialize(deserializer).map(Some)
}

/// The defending card of a strike.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Defender {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strike: Option<[u32; 3]>,
    #[serde(default)]
    pub defense_experience: u32,
    #[serde(default)]
    pub die_modifier: i32,
    /// Tapped.
    #[serde(default)]
    pub closed: bool,
    /// `@1` only (absent reads as `false`); `@2` refuses it.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "sent")]
    #[schemars(with = "bool")]
    pub avoid_exchange: Option<bool>,
    /// `@2` only, as [`Attacker::fixed_roll`]; ignored without a fight.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "sent")]
    #[schemars(
        schema_with = "fixed_roll_schema",
        description = "A feature that replaces this side's die: it draws none; ignored without a fight."
    )]
    pub fixed_roll: Option<Value>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StrikeKind {
    Simple,
    Unanswerable,
    Special,
    Magic,
    ThroughRow,
    Shot,
    Discharge,
    Throw,
}

/// One strike (§3.1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Strike {
    pub attacker: Attacker,
    pub defender: Defender,
    pub kind: StrikeKind,
    /// The target is in the attacker's own squad.
    #[serde(default)]
    pub own_squad: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// `berserk@2` (docs/rules.md §6.3.1): the side that rolled higher in a fight
/// whose row has both sides striking chooses, knowing the dice, whether to
/// step one row toward zero and take no blow. Draws no dice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExchangeChoice {
    /// That side's `id` in the strike.
    pub actor: String,
    /// The strike it answers: its battle version (in a script, the 0-based
    /// index of the strike's action line). Optional in the vocabulary so
    /// that a missing one is a rejection naming the rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(description = "The battle version of the strike this choice answers.")]
    pub against: Option<Version>,
    /// Kept as sent: anything but a boolean is a rejection naming the rule.
    #[serde(default)]
    #[schemars(with = "Value", description = "Step one row toward zero and take no blow.")]
    pub avoid: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A spell or effect of strength X-Y-Z (§3.2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Effect {
    pub actor: String,
    pub values: [i64; 3],
    #[serde(default)]
    pub die_modifier: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    Weak,
    Medium,
    Strong,
    Miss,
    /// The side did not fight.
    None,
}

impl Tier {
    /// The damage of this tier from a [weak, medium, strong] list.
    pub fn damage(self, strike: &[u32; 3]) -> u32 {
        match self {
            Tier::Weak => strike[0],
            Tier::Medium => strike[1],
            Tier::Strong => strike[2],
            Tier::Miss | Tier::None => 0,
        }
    }

    pub fn strikes(self) -> bool {
        matches!(self, Tier::Weak | Tier::Medium | Tier::Strong)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StrikeOutcome {
    pub fight: bool,
    pub attacker_tier: Tier,
    pub defender_tier: Tier,
    /// From the attacker's `strike` values, when it gave them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attacker_damage: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub defender_damage: Option<u32>,
    /// A − D; `null` without a fight.
    pub diff: Option<i64>,
    pub exchange_avoided: bool,
    /// `@2` always (§6.3.1): the side that may still choose to avoid the
    /// exchange, or `null`. Absent under `@1`.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "present_or_null")]
    #[schemars(with = "Option<Side>")]
    pub pending_choice: Option<Option<Side>>,
}

/// A side of a strike.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    Attacker,
    Defender,
}

impl Side {
    /// The JSON name.
    pub fn name(self) -> &'static str {
        match self {
            Side::Attacker => "attacker",
            Side::Defender => "defender",
        }
    }
}

/// The outcome of an [`ExchangeChoice`] (§6.3.1): the strike's final row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExchangeOutcome {
    pub exchange_avoided: bool,
    pub attacker_tier: Tier,
    pub defender_tier: Tier,
    /// The row used: one step toward zero when avoided, else the strike's.
    pub diff: i64,
    /// From the attacker's `strike` values, when the strike gave them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attacker_damage: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub defender_damage: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EffectTier {
    X,
    Y,
    Z,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EffectOutcome {
    pub tier: EffectTier,
    pub value: i64,
}

/// The `berserk` actions, borrowed out of [`crate::Action`].
#[derive(Debug, Clone, Copy)]
pub(crate) enum Act<'a> {
    Strike(&'a Strike),
    Effect(&'a Effect),
    ExchangeChoice(&'a ExchangeChoice),
}
