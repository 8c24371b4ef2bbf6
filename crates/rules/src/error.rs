//! Why an action was refused, or could not be resolved with the dice given.

use crate::battle::Version;
use crate::dice_request::DiceError;
use crate::ruleset::{RulesetError, RulesetId};

/// The rules forbid the action: no dice are drawn, nothing is journaled,
/// and the state stays as it was. The message names the rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Rejection {
    #[error("action `{action}` is not part of {ruleset}")]
    WrongRuleset { action: &'static str, ruleset: RulesetId },
    #[error("{field} `{id}` is not a participant of this battle")]
    UnknownParticipant { field: &'static str, id: String },
    #[error("multi_hit and variable_power cannot be combined in one attack")]
    MultiHitWithVariablePower,
    #[error("{actor} has already used all {limit} dodges of this battle")]
    NoDodgesLeft { actor: String, limit: u32 },
    #[error("metronome needs at least one move")]
    NoMoves,
    #[error("metronome takes at most {max} moves, got {count}")]
    TooManyMoves { count: usize, max: u32 },
    #[error("skill_points {points} is outside 1..=12")]
    SkillPointsOutOfRange { points: i64 },
    #[error("ability «{ability}» of {actor} is used up for this episode ({limit} per episode)")]
    AbilityUsedUp { actor: String, ability: String, limit: u32 },
    #[error("concentration broken in this post")]
    ConcentrationBroken,
    #[error("against {against}: not a resolved cast of this battle")]
    NotACast { against: Version },
    #[error("unknown trait `{name}`; the traits are brawn, grace, charm, grit, wits, cool")]
    UnknownTrait { name: String },
    #[error("refers_to {refers_to}: not a resolved action of this battle")]
    UnknownReference { refers_to: Version },
    #[error("a ruling cannot override the outcome of a `{kind}`")]
    OverrideNotAllowed { kind: &'static str },
    #[error("the override does not fit the outcome of `{kind}`: {reason}")]
    OverrideInvalid { kind: &'static str, reason: String },
    #[error("invalid dice expression: {0}")]
    InvalidExpression(#[from] dice::ExprError),
}

/// Why [`crate::Battle::resolve`] or [`crate::Battle::apply`] gave no new state.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    #[error("rejected: {0}")]
    Rejected(#[from] Rejection),
    #[error("wrong dice: {0}")]
    Dice(#[from] DiceError),
    #[error("version {at} is not after the battle's last resolved version {last}")]
    OutOfOrder { at: Version, last: Version },
    #[error("a recorded `{outcome}` outcome does not belong to a `{action}` action")]
    OutcomeMismatch { action: &'static str, outcome: &'static str },
}

/// Why a battle could not be opened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpenError {
    #[error(transparent)]
    Ruleset(#[from] RulesetError),
    #[error("a battle needs at least one participant")]
    NoParticipants,
    #[error("participant {index}: the id must not be empty")]
    EmptyId { index: usize },
    #[error("participant `{id}` is listed twice")]
    DuplicateParticipant { id: String },
    #[error("participant `{id}`: {part} belong to sheets of {wanted}, not {ruleset}")]
    SheetPartNotForRuleset { id: String, part: &'static str, wanted: &'static str, ruleset: RulesetId },
    #[error("participant `{id}`: unknown trait `{name}`; the traits are brawn, grace, charm, grit, wits, cool")]
    UnknownTrait { id: String, name: String },
}
