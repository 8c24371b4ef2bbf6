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
    /// A field that a later version of the ruleset added, sent to a battle
    /// of an earlier one: refused rather than silently ignored.
    #[error("`{action}` has no field `{field}` in {ruleset}")]
    FieldNotInVersion { action: &'static str, field: &'static str, ruleset: RulesetId },
    // The messages below are `@2`'s (RULES.md §6) and are worded as the
    // independent implementation's vectors word them; `@1`'s messages above
    // stay as they were.
    /// `pokemon-d6@2`: `against` is missing or names no resolved attack.
    #[error("against is not a resolved attack")]
    NotAnAttack { against: Option<Version> },
    #[error("against is an attack on another Pokémon")]
    AttackOnAnother { against: Version, target: String },
    #[error("against is an attack whose result is not hit, crit or miss")]
    NothingToDodge { against: Version },
    #[error("that attack was already answered by a dodge")]
    AlreadyAnswered { against: Version, by: Version },
    /// `pokemon-d6@2`'s wording of [`Rejection::NoDodgesLeft`].
    #[error("no dodges left")]
    DodgeLimitReached { actor: String, limit: u32 },
    /// `arcana-2d10@2`: the ability's `min_points` exceeds the skill points.
    #[error("ability needs more skill points")]
    BelowMinPoints { ability: String, min_points: u32, points: i64 },
    /// `arcana-2d10@2`: broken concentration blocks magical abilities only.
    #[error("concentration broken in this post: no magical abilities")]
    ConcentrationBrokenForMagic,
    /// `arcana-2d10@2`'s wording of [`Rejection::NotACast`].
    #[error("against is not a resolved cast")]
    AgainstNotACast { against: Version },
    /// `berserk@2` (§6.3.1): a strike or an effect while a strike awaits
    /// its exchange choice.
    #[error("a strike awaits its exchange choice")]
    StrikeAwaitsChoice { strike: Version },
    /// `berserk@2` (§6.3.1): `avoid_exchange` sent with a strike.
    #[error("@2: avoid_exchange is chosen after the roll (exchange_choice)")]
    AvoidExchangeBeforeRoll { field: &'static str },
    /// `berserk@2` (§6.3.2): a `fixed_roll` that is not an integer 1–6.
    #[error("fixed_roll must be an integer from 1 to 6")]
    FixedRollOutOfRange { field: &'static str },
    /// `berserk@2`: `against` is missing or names no strike awaiting its
    /// choice (none, another action, or one already answered).
    #[error("against is not a strike awaiting its exchange choice")]
    NotAwaitingChoice { against: Option<Version> },
    /// `berserk@2`: the `actor` of an exchange choice is not the side that
    /// rolled higher.
    #[error("only the side that rolled higher chooses")]
    NotTheHigherSide { actor: String, side: &'static str },
    #[error("avoid must be true or false")]
    AvoidNotBoolean,
    /// `pbta-2d6@2` (§6.4.1): `trait_value` sent with a move.
    #[error("@2: the trait value comes from the sheet")]
    TraitValueFromSheet,
    /// `pbta-2d6@2`'s wording of [`Rejection::UnknownTrait`].
    #[error("unknown trait")]
    NotATrait { name: String },
    #[error("the actor's sheet has no such trait")]
    TraitNotOnSheet { actor: String, name: String },
    /// `pbta-2d6@2` (§6.4.2): `stakes` missing or blank.
    #[error("stakes are required")]
    StakesRequired,
    /// `pbta-2d6@2` (§6.4.3): a helper who is the actor, or named twice.
    #[error("helpers must be others, each once")]
    HelpersNotOthers { helper: String },
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
    #[error("a recorded outcome does not fit {ruleset}: {reason}")]
    OutcomeNotOfVersion { ruleset: RulesetId, reason: String },
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
    #[error(
        "participant `{id}`, ability «{ability}»: `{field}` is not part of {ruleset}'s sheets (arcana-2d10@2 has it)"
    )]
    AbilityFieldNotInVersion { id: String, ability: String, field: &'static str, ruleset: RulesetId },
    #[error("participant `{id}`, ability «{ability}»: min_points {min_points} is outside 1..=12")]
    MinPointsOutOfRange { id: String, ability: String, min_points: u32 },
}
