//! The `arcana-2d10` vocabulary every version shares: its actions, outcomes and
//! state, as they read and write in JSON.

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

use crate::model::sheet::Version;

/// Use an ability or a skill (§2.1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Cast {
    pub actor: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ability: Option<String>,
    /// 1..=12; anything else is rejected by the rules, not by the parser.
    #[schemars(description = "The skill's points, 1 to 12.")]
    pub skill_points: i64,
    #[serde(default = "yes")]
    pub specialization_matches: bool,
    /// Only one artifact counts: a list is read as its maximum.
    #[serde(default, deserialize_with = "one_artifact")]
    #[schemars(schema_with = "artifact_bonus_schema")]
    pub artifact_bonus: u32,
    #[serde(default)]
    pub berserk_bonus: u32,
    #[serde(default)]
    pub aux_bonus: u32,
    /// The forum post this use belongs to.
    pub post: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The defence in an exchange of blows (§2.2): a cast of its own against an
/// earlier cast.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Defend {
    pub actor: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ability: Option<String>,
    pub skill_points: i64,
    #[serde(default = "yes")]
    pub specialization_matches: bool,
    #[serde(default, deserialize_with = "one_artifact")]
    #[schemars(schema_with = "artifact_bonus_schema")]
    pub artifact_bonus: u32,
    #[serde(default)]
    pub berserk_bonus: u32,
    #[serde(default)]
    pub aux_bonus: u32,
    pub post: String,
    /// The battle version of the attacking cast.
    pub against: Version,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Resets every per-episode counter (§2.3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StartEpisode {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

fn yes() -> bool {
    true
}

/// What `one_artifact` reads: one bonus, or a list read as its maximum.
fn artifact_bonus_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let bonus = generator.subschema_for::<u32>();
    schemars::json_schema!({"anyOf": [bonus, {"type": "array", "items": bonus}]})
}

fn one_artifact<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u32, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(u32),
        Many(Vec<u32>),
    }
    Ok(match OneOrMany::deserialize(deserializer)? {
        OneOrMany::One(bonus) => bonus,
        OneOrMany::Many(bonuses) => bonuses.into_iter().max().unwrap_or(0),
    })
}

/// The fields a cast and a defence share: what one 2d10 check reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Check<'a> {
    pub actor: &'a str,
    pub ability: Option<&'a str>,
    pub skill_points: i64,
    pub specialization_matches: bool,
    pub artifact_bonus: u32,
    pub berserk_bonus: u32,
    pub aux_bonus: u32,
    pub post: &'a str,
}

impl Cast {
    pub fn check(&self) -> Check<'_> {
        Check {
            actor: &self.actor,
            ability: self.ability.as_deref(),
            skill_points: self.skill_points,
            specialization_matches: self.specialization_matches,
            artifact_bonus: self.artifact_bonus,
            berserk_bonus: self.berserk_bonus,
            aux_bonus: self.aux_bonus,
            post: &self.post,
        }
    }
}

impl Defend {
    pub fn check(&self) -> Check<'_> {
        Check {
            actor: &self.actor,
            ability: self.ability.as_deref(),
            skill_points: self.skill_points,
            specialization_matches: self.specialization_matches,
            artifact_bonus: self.artifact_bonus,
            berserk_bonus: self.berserk_bonus,
            aux_bonus: self.aux_bonus,
            post: &self.post,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CastResult {
    CriticalSuccess,
    Success,
    Failure,
    OrdinaryFailure,
    CriticalFailure,
}

impl CastResult {
    pub fn succeeded(self) -> bool {
        matches!(self, CastResult::Success | CastResult::CriticalSuccess)
    }

    /// `ordinary_failure` and `critical_failure` break concentration.
    pub fn breaks_concentration(self) -> bool {
        matches!(self, CastResult::OrdinaryFailure | CastResult::CriticalFailure)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CastOutcome {
    pub result: CastResult,
    pub sum: u32,
    pub total_skill: i64,
    pub concentration_broken: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DefendOutcome {
    pub result: CastResult,
    pub sum: u32,
    pub total_skill: i64,
    pub concentration_broken: bool,
    pub attack_lands: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EpisodeResult {
    EpisodeStarted,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EpisodeOutcome {
    pub result: EpisodeResult,
}

/// Per-episode uses and broken concentration, by actor.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    /// Episodes started so far (0 before the first `start_episode`).
    pub episode: u32,
    /// Actor → ability → uses in the current episode.
    pub uses: BTreeMap<String, BTreeMap<String, u32>>,
    /// Actor → posts in which its concentration is broken.
    pub broken_posts: BTreeMap<String, BTreeSet<String>>,
}

impl State {
    pub fn uses(&self, actor: &str, ability: &str) -> u32 {
        self.uses.get(actor).and_then(|abilities| abilities.get(ability)).copied().unwrap_or(0)
    }

    pub fn concentration_broken(&self, actor: &str, post: &str) -> bool {
        self.broken_posts.get(actor).is_some_and(|posts| posts.contains(post))
    }
}

/// The `arcana-2d10` actions, borrowed out of [`crate::Action`].
#[derive(Debug, Clone, Copy)]
pub(crate) enum Act<'a> {
    Cast(&'a Cast),
    Defend(&'a Defend),
    StartEpisode,
}
