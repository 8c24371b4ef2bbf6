//! `berserk` (RULES.md §3): the Berserk card game's strike table, strikes
//! against closed cards, and X-Y-Z effects.
//!
//! This module is the vocabulary every version shares; [`v1`] is how
//! `berserk@1` resolves it.

pub mod v1;

use serde::{Deserialize, Serialize};

/// The attacking card of a strike.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
    #[serde(default)]
    pub avoid_exchange: bool,
}

/// The defending card of a strike.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
    #[serde(default)]
    pub avoid_exchange: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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

/// A spell or effect of strength X-Y-Z (§3.2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Effect {
    pub actor: String,
    pub values: [i64; 3],
    #[serde(default)]
    pub die_modifier: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EffectTier {
    X,
    Y,
    Z,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
}
