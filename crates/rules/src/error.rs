//! Why an action was refused, or could not be resolved with the dice given.

use crate::dice_request::DiceError;
use crate::model::sheet::Version;
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
    // The messages below are `@2`'s (docs/rules.md §6) and are worded as the
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

/// The stable, machine-readable name of a [`Rejection`]: the
/// `google.rpc.ErrorInfo` reason a refused request carries (battlelog's
/// one error vocabulary, `battlelog_proto::error`). One reason per rule,
/// whatever the ruleset version: `@1`'s and `@2`'s wordings of the same
/// rule share it. Never renamed: clients branch on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RulesReason {
    ActionNotInRuleset,
    UnknownParticipant,
    MultiHitWithVariablePower,
    DodgesExhausted,
    MetronomeNoMoves,
    MetronomeTooManyMoves,
    SkillPointsOutOfRange,
    AbilityUsedThisEpisode,
    ConcentrationBroken,
    NotACast,
    UnknownTrait,
    UnknownReference,
    OverrideNotAllowed,
    OverrideInvalid,
    InvalidDiceExpression,
    FieldNotInVersion,
    DodgeNotAgainstAnAttack,
    DodgeAgainstAnotherTarget,
    NothingToDodge,
    AttackAlreadyDodged,
    BelowMinPoints,
    StrikeAwaitsChoice,
    AvoidExchangeBeforeRoll,
    FixedRollOutOfRange,
    NotAwaitingChoice,
    NotTheHigherSide,
    AvoidNotBoolean,
    TraitValueFromSheet,
    TraitNotOnSheet,
    StakesRequired,
    HelpersNotOthers,
}

impl RulesReason {
    /// Every reason, in the order of the docs' table.
    pub const ALL: [RulesReason; 31] = [
        RulesReason::ActionNotInRuleset,
        RulesReason::UnknownParticipant,
        RulesReason::MultiHitWithVariablePower,
        RulesReason::DodgesExhausted,
        RulesReason::MetronomeNoMoves,
        RulesReason::MetronomeTooManyMoves,
        RulesReason::SkillPointsOutOfRange,
        RulesReason::AbilityUsedThisEpisode,
        RulesReason::ConcentrationBroken,
        RulesReason::NotACast,
        RulesReason::UnknownTrait,
        RulesReason::UnknownReference,
        RulesReason::OverrideNotAllowed,
        RulesReason::OverrideInvalid,
        RulesReason::InvalidDiceExpression,
        RulesReason::FieldNotInVersion,
        RulesReason::DodgeNotAgainstAnAttack,
        RulesReason::DodgeAgainstAnotherTarget,
        RulesReason::NothingToDodge,
        RulesReason::AttackAlreadyDodged,
        RulesReason::BelowMinPoints,
        RulesReason::StrikeAwaitsChoice,
        RulesReason::AvoidExchangeBeforeRoll,
        RulesReason::FixedRollOutOfRange,
        RulesReason::NotAwaitingChoice,
        RulesReason::NotTheHigherSide,
        RulesReason::AvoidNotBoolean,
        RulesReason::TraitValueFromSheet,
        RulesReason::TraitNotOnSheet,
        RulesReason::StakesRequired,
        RulesReason::HelpersNotOthers,
    ];

    /// The UPPER_SNAKE reason on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            RulesReason::ActionNotInRuleset => "ACTION_NOT_IN_RULESET",
            RulesReason::UnknownParticipant => "UNKNOWN_PARTICIPANT",
            RulesReason::MultiHitWithVariablePower => "MULTI_HIT_WITH_VARIABLE_POWER",
            RulesReason::DodgesExhausted => "DODGES_EXHAUSTED",
            RulesReason::MetronomeNoMoves => "METRONOME_NO_MOVES",
            RulesReason::MetronomeTooManyMoves => "METRONOME_TOO_MANY_MOVES",
            RulesReason::SkillPointsOutOfRange => "SKILL_POINTS_OUT_OF_RANGE",
            RulesReason::AbilityUsedThisEpisode => "ABILITY_USED_THIS_EPISODE",
            RulesReason::ConcentrationBroken => "CONCENTRATION_BROKEN",
            RulesReason::NotACast => "NOT_A_CAST",
            RulesReason::UnknownTrait => "UNKNOWN_TRAIT",
            RulesReason::UnknownReference => "UNKNOWN_REFERENCE",
            RulesReason::OverrideNotAllowed => "OVERRIDE_NOT_ALLOWED",
            RulesReason::OverrideInvalid => "OVERRIDE_INVALID",
            RulesReason::InvalidDiceExpression => "INVALID_DICE_EXPRESSION",
            RulesReason::FieldNotInVersion => "FIELD_NOT_IN_VERSION",
            RulesReason::DodgeNotAgainstAnAttack => "DODGE_NOT_AGAINST_AN_ATTACK",
            RulesReason::DodgeAgainstAnotherTarget => "DODGE_AGAINST_ANOTHER_TARGET",
            RulesReason::NothingToDodge => "NOTHING_TO_DODGE",
            RulesReason::AttackAlreadyDodged => "ATTACK_ALREADY_DODGED",
            RulesReason::BelowMinPoints => "BELOW_MIN_POINTS",
            RulesReason::StrikeAwaitsChoice => "STRIKE_AWAITS_CHOICE",
            RulesReason::AvoidExchangeBeforeRoll => "AVOID_EXCHANGE_BEFORE_ROLL",
            RulesReason::FixedRollOutOfRange => "FIXED_ROLL_OUT_OF_RANGE",
            RulesReason::NotAwaitingChoice => "NOT_AWAITING_CHOICE",
            RulesReason::NotTheHigherSide => "NOT_THE_HIGHER_SIDE",
            RulesReason::AvoidNotBoolean => "AVOID_NOT_BOOLEAN",
            RulesReason::TraitValueFromSheet => "TRAIT_VALUE_FROM_SHEET",
            RulesReason::TraitNotOnSheet => "TRAIT_NOT_ON_SHEET",
            RulesReason::StakesRequired => "STAKES_REQUIRED",
            RulesReason::HelpersNotOthers => "HELPERS_NOT_OTHERS",
        }
    }

    /// The reason named `text`, if it is one.
    pub fn parse(text: &str) -> Option<RulesReason> {
        RulesReason::ALL.into_iter().find(|r| r.as_str() == text)
    }
}

impl Rejection {
    /// The rule's stable reason.
    pub fn reason(&self) -> RulesReason {
        use RulesReason as R;
        match self {
            Rejection::WrongRuleset { .. } => R::ActionNotInRuleset,
            Rejection::UnknownParticipant { .. } => R::UnknownParticipant,
            Rejection::MultiHitWithVariablePower => R::MultiHitWithVariablePower,
            Rejection::NoDodgesLeft { .. } | Rejection::DodgeLimitReached { .. } => R::DodgesExhausted,
            Rejection::NoMoves => R::MetronomeNoMoves,
            Rejection::TooManyMoves { .. } => R::MetronomeTooManyMoves,
            Rejection::SkillPointsOutOfRange { .. } => R::SkillPointsOutOfRange,
            Rejection::AbilityUsedUp { .. } => R::AbilityUsedThisEpisode,
            Rejection::ConcentrationBroken | Rejection::ConcentrationBrokenForMagic => R::ConcentrationBroken,
            Rejection::NotACast { .. } | Rejection::AgainstNotACast { .. } => R::NotACast,
            Rejection::UnknownTrait { .. } | Rejection::NotATrait { .. } => R::UnknownTrait,
            Rejection::UnknownReference { .. } => R::UnknownReference,
            Rejection::OverrideNotAllowed { .. } => R::OverrideNotAllowed,
            Rejection::OverrideInvalid { .. } => R::OverrideInvalid,
            Rejection::InvalidExpression(_) => R::InvalidDiceExpression,
            Rejection::FieldNotInVersion { .. } => R::FieldNotInVersion,
            Rejection::NotAnAttack { .. } => R::DodgeNotAgainstAnAttack,
            Rejection::AttackOnAnother { .. } => R::DodgeAgainstAnotherTarget,
            Rejection::NothingToDodge { .. } => R::NothingToDodge,
            Rejection::AlreadyAnswered { .. } => R::AttackAlreadyDodged,
            Rejection::BelowMinPoints { .. } => R::BelowMinPoints,
            Rejection::StrikeAwaitsChoice { .. } => R::StrikeAwaitsChoice,
            Rejection::AvoidExchangeBeforeRoll { .. } => R::AvoidExchangeBeforeRoll,
            Rejection::FixedRollOutOfRange { .. } => R::FixedRollOutOfRange,
            Rejection::NotAwaitingChoice { .. } => R::NotAwaitingChoice,
            Rejection::NotTheHigherSide { .. } => R::NotTheHigherSide,
            Rejection::AvoidNotBoolean => R::AvoidNotBoolean,
            Rejection::TraitValueFromSheet => R::TraitValueFromSheet,
            Rejection::TraitNotOnSheet { .. } => R::TraitNotOnSheet,
            Rejection::StakesRequired => R::StakesRequired,
            Rejection::HelpersNotOthers { .. } => R::HelpersNotOthers,
        }
    }

    /// The section of docs/rules.md that states the rule, as `docs/rules.md §x.y`
    /// (`§6.1.3` is item 3 of §6.1). Rules common to every ruleset (who
    /// takes part, which actions a ruleset has) are §5's.
    pub fn section(&self) -> &'static str {
        match self {
            Rejection::WrongRuleset { .. } | Rejection::UnknownParticipant { .. } => "docs/rules.md §5",
            Rejection::MultiHitWithVariablePower => "docs/rules.md §1.1",
            Rejection::NoDodgesLeft { .. } => "docs/rules.md §1.3",
            Rejection::NoMoves | Rejection::TooManyMoves { .. } => "docs/rules.md §1.4",
            Rejection::SkillPointsOutOfRange { .. }
            | Rejection::AbilityUsedUp { .. }
            | Rejection::ConcentrationBroken => "docs/rules.md §2.1",
            Rejection::NotACast { .. } => "docs/rules.md §2.2",
            Rejection::UnknownTrait { .. } => "docs/rules.md §4.1",
            Rejection::UnknownReference { .. }
            | Rejection::OverrideNotAllowed { .. }
            | Rejection::OverrideInvalid { .. } => "docs/rules.md §5.1",
            Rejection::InvalidExpression(_) => "docs/rules.md §5.2",
            Rejection::FieldNotInVersion { .. } => "docs/rules.md §6",
            Rejection::NotAnAttack { .. }
            | Rejection::AttackOnAnother { .. }
            | Rejection::NothingToDodge { .. }
            | Rejection::AlreadyAnswered { .. }
            | Rejection::DodgeLimitReached { .. } => "docs/rules.md §6.1.3",
            Rejection::BelowMinPoints { .. } => "docs/rules.md §6.2.1",
            Rejection::ConcentrationBrokenForMagic => "docs/rules.md §6.2.2",
            Rejection::AgainstNotACast { .. } => "docs/rules.md §6.2",
            Rejection::StrikeAwaitsChoice { .. }
            | Rejection::AvoidExchangeBeforeRoll { .. }
            | Rejection::NotAwaitingChoice { .. }
            | Rejection::NotTheHigherSide { .. }
            | Rejection::AvoidNotBoolean => "docs/rules.md §6.3.1",
            Rejection::FixedRollOutOfRange { .. } => "docs/rules.md §6.3.2",
            Rejection::TraitValueFromSheet | Rejection::NotATrait { .. } | Rejection::TraitNotOnSheet { .. } => {
                "docs/rules.md §6.4.1"
            }
            Rejection::StakesRequired => "docs/rules.md §6.4.2",
            Rejection::HelpersNotOthers { .. } => "docs/rules.md §6.4.3",
        }
    }

    /// The message in Russian, the players' language (docs/rules.md §5.3). The
    /// English one is the `Display` text, which the `@2` vectors fix.
    pub fn message_ru(&self) -> String {
        match self {
            Rejection::WrongRuleset { action, ruleset } => format!("действия `{action}` нет в {ruleset}"),
            Rejection::UnknownParticipant { field, id } => format!("{field} `{id}` не участвует в этом бою"),
            Rejection::MultiHitWithVariablePower => {
                "multi_hit и variable_power нельзя сочетать в одной атаке".to_owned()
            }
            Rejection::NoDodgesLeft { actor, limit } => {
                format!("{actor} уже использовал все {limit} уклонений этого боя")
            }
            Rejection::NoMoves => "метроному нужен хотя бы один приём".to_owned(),
            Rejection::TooManyMoves { count, max } => {
                format!("метроном принимает не больше {max} приёмов, получено {count}")
            }
            Rejection::SkillPointsOutOfRange { points } => format!("skill_points {points} вне 1..=12"),
            Rejection::AbilityUsedUp { actor, ability, limit } => {
                format!("способность «{ability}» у {actor} исчерпана в этом эпизоде ({limit} за эпизод)")
            }
            Rejection::ConcentrationBroken => "концентрация сбита в этом посте".to_owned(),
            Rejection::NotACast { against } => format!("against {against}: не разрешённое применение в этом бою"),
            Rejection::UnknownTrait { name } => {
                format!("неизвестная черта `{name}`; черты: brawn, grace, charm, grit, wits, cool")
            }
            Rejection::UnknownReference { refers_to } => {
                format!("refers_to {refers_to}: не разрешённое действие этого боя")
            }
            Rejection::OverrideNotAllowed { kind } => format!("решение судьи не может заменить исход `{kind}`"),
            Rejection::OverrideInvalid { kind, reason } => {
                format!("замена не подходит к исходу `{kind}`: {reason}")
            }
            Rejection::InvalidExpression(e) => format!("неверное выражение кубов: {e}"),
            Rejection::FieldNotInVersion { action, field, ruleset } => {
                format!("у `{action}` нет поля `{field}` в {ruleset}")
            }
            Rejection::NotAnAttack { .. } => "against — не разрешённая атака".to_owned(),
            Rejection::AttackOnAnother { .. } => "against — атака на другого покемона".to_owned(),
            Rejection::NothingToDodge { .. } => "against — атака с результатом не hit, crit и не miss".to_owned(),
            Rejection::AlreadyAnswered { .. } => "на эту атаку уже ответили уклонением".to_owned(),
            Rejection::DodgeLimitReached { .. } => "уклонений не осталось".to_owned(),
            Rejection::BelowMinPoints { .. } => "способности нужно больше очков навыка".to_owned(),
            Rejection::ConcentrationBrokenForMagic => {
                "концентрация сбита в этом посте: магические способности недоступны".to_owned()
            }
            Rejection::AgainstNotACast { .. } => "against — не разрешённое применение".to_owned(),
            Rejection::StrikeAwaitsChoice { .. } => "удар ждёт выбора обмена".to_owned(),
            Rejection::AvoidExchangeBeforeRoll { .. } => {
                "@2: от обмена отказываются после броска (exchange_choice)".to_owned()
            }
            Rejection::FixedRollOutOfRange { .. } => "fixed_roll должен быть целым числом от 1 до 6".to_owned(),
            Rejection::NotAwaitingChoice { .. } => "against — не удар, ждущий выбора обмена".to_owned(),
            Rejection::NotTheHigherSide { .. } => "выбирает только сторона, выбросившая больше".to_owned(),
            Rejection::AvoidNotBoolean => "avoid должен быть true или false".to_owned(),
            Rejection::TraitValueFromSheet => "@2: значение черты берётся из листа".to_owned(),
            Rejection::NotATrait { .. } => "неизвестная черта".to_owned(),
            Rejection::TraitNotOnSheet { .. } => "в листе персонажа нет такой черты".to_owned(),
            Rejection::StakesRequired => "ставки обязательны".to_owned(),
            Rejection::HelpersNotOthers { .. } => "помощники должны быть другими, каждый по одному разу".to_owned(),
        }
    }

    /// One refusal of every kind, with made-up fields: what the docs' table
    /// of reasons shows, and what the tests check every variant with.
    pub fn examples() -> Vec<Rejection> {
        use crate::ruleset::RulesetId as Id;
        let actor = || "pikachu".to_owned();
        vec![
            Rejection::WrongRuleset { action: "cast", ruleset: Id::PokemonD6V2 },
            Rejection::UnknownParticipant { field: "target", id: "mewtwo".into() },
            Rejection::MultiHitWithVariablePower,
            Rejection::NoDodgesLeft { actor: actor(), limit: 5 },
            Rejection::DodgeLimitReached { actor: actor(), limit: 5 },
            Rejection::NoMoves,
            Rejection::TooManyMoves { count: 40, max: 32 },
            Rejection::SkillPointsOutOfRange { points: 13 },
            Rejection::AbilityUsedUp { actor: "morgana".into(), ability: "Щит".into(), limit: 1 },
            Rejection::ConcentrationBroken,
            Rejection::ConcentrationBrokenForMagic,
            Rejection::NotACast { against: 3 },
            Rejection::AgainstNotACast { against: 3 },
            Rejection::UnknownTrait { name: "luck".into() },
            Rejection::NotATrait { name: "luck".into() },
            Rejection::UnknownReference { refers_to: 9 },
            Rejection::OverrideNotAllowed { kind: "roll" },
            Rejection::OverrideInvalid { kind: "dodge", reason: "unknown field `x`".into() },
            Rejection::InvalidExpression(dice::ExprError::TooLong { bytes: 300, limit: 256 }),
            Rejection::FieldNotInVersion { action: "dodge", field: "against", ruleset: Id::PokemonD6V1 },
            Rejection::NotAnAttack { against: Some(2) },
            Rejection::AttackOnAnother { against: 2, target: "meowth".into() },
            Rejection::NothingToDodge { against: 2 },
            Rejection::AlreadyAnswered { against: 2, by: 3 },
            Rejection::BelowMinPoints { ability: "Длань крови".into(), min_points: 5, points: 3 },
            Rejection::StrikeAwaitsChoice { strike: 4 },
            Rejection::AvoidExchangeBeforeRoll { field: "attacker.avoid_exchange" },
            Rejection::FixedRollOutOfRange { field: "attacker.fixed_roll" },
            Rejection::NotAwaitingChoice { against: Some(4) },
            Rejection::NotTheHigherSide { actor: "guts".into(), side: "defender" },
            Rejection::AvoidNotBoolean,
            Rejection::TraitValueFromSheet,
            Rejection::TraitNotOnSheet { actor: "ash".into(), name: "cool".into() },
            Rejection::StakesRequired,
            Rejection::HelpersNotOthers { helper: "ash".into() },
        ]
    }
}

#[cfg(test)]
mod reason_tests {
    use super::*;

    /// Every reason has an example, every example a Russian message other
    /// than its English one, and the reasons read back.
    #[test]
    fn every_reason_has_an_example_and_a_russian_message() {
        let examples = Rejection::examples();
        for reason in RulesReason::ALL {
            assert!(examples.iter().any(|e| e.reason() == reason), "{reason:?} has no example");
            assert_eq!(RulesReason::parse(reason.as_str()), Some(reason));
            let text = reason.as_str();
            assert!(text.bytes().all(|b| b.is_ascii_uppercase() || b == b'_'), "{text} is not UPPER_SNAKE");
        }
        for example in &examples {
            let ru = example.message_ru();
            assert!(ru.chars().any(|c| ('а'..='я').contains(&c)), "{example:?}: {ru}");
            assert_ne!(ru, example.to_string());
            assert!(example.section().starts_with("docs/rules.md §"));
        }
    }

    #[test]
    fn reasons_are_unique() {
        let mut texts: Vec<&str> = RulesReason::ALL.iter().map(|r| r.as_str()).collect();
        texts.sort_unstable();
        texts.dedup();
        assert_eq!(texts.len(), RulesReason::ALL.len());
    }

    /// The examples cover every variant: a new variant fails to compile in
    /// `reason` and `section`, and is caught here if it has no example.
    #[test]
    fn the_examples_cover_every_variant() {
        let examples = Rejection::examples();
        let kinds: std::collections::HashSet<_> = examples.iter().map(std::mem::discriminant).collect();
        assert_eq!(kinds.len(), examples.len(), "an example repeats a variant");
        assert_eq!(kinds.len(), 35);
    }
}
