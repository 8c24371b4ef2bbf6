//! Every outcome as docs/rules.md names its fields. An outcome is written as its
//! fields alone (`{"result": "hit", "multiplier": "1/3", …}`); which action
//! it belongs to is known from the action beside it, so reading one back
//! takes that [`ActionKind`].

use serde::Serialize;
use serde_json::Value;

use crate::action::ActionKind;
use crate::arcana::types as arcana;
use crate::berserk::types as berserk;
use crate::common::types as common;
use crate::pbta::types as pbta;
use crate::pokemon::types as pokemon;
use crate::read::FieldError;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Outcome {
    Attack(pokemon::AttackOutcome),
    StatusMove(pokemon::StatusMoveOutcome),
    Dodge(pokemon::DodgeOutcome),
    Metronome(pokemon::MetronomeOutcome),
    Pass(pokemon::PassOutcome),
    Cast(arcana::CastOutcome),
    Defend(arcana::DefendOutcome),
    StartEpisode(arcana::EpisodeOutcome),
    Strike(berserk::StrikeOutcome),
    Effect(berserk::EffectOutcome),
    ExchangeChoice(berserk::ExchangeOutcome),
    Move(pbta::MoveOutcome),
    Ruling(common::RulingOutcome),
    Dispute(common::DisputeOutcome),
    Roll(common::RollOutcome),
}

impl Outcome {
    /// The kind of action this outcome belongs to.
    pub fn kind(&self) -> ActionKind {
        match self {
            Outcome::Attack(_) => ActionKind::Attack,
            Outcome::StatusMove(_) => ActionKind::StatusMove,
            Outcome::Dodge(_) => ActionKind::Dodge,
            Outcome::Metronome(_) => ActionKind::Metronome,
            Outcome::Pass(_) => ActionKind::Pass,
            Outcome::Cast(_) => ActionKind::Cast,
            Outcome::Defend(_) => ActionKind::Defend,
            Outcome::StartEpisode(_) => ActionKind::StartEpisode,
            Outcome::Strike(_) => ActionKind::Strike,
            Outcome::Effect(_) => ActionKind::Effect,
            Outcome::ExchangeChoice(_) => ActionKind::ExchangeChoice,
            Outcome::Move(_) => ActionKind::Move,
            Outcome::Ruling(_) => ActionKind::Ruling,
            Outcome::Dispute(_) => ActionKind::Dispute,
            Outcome::Roll(_) => ActionKind::Roll,
        }
    }

    pub(crate) fn kind_name(&self) -> &'static str {
        self.kind().name()
    }

    /// Reads the outcome of a `kind` action from its JSON fields (a journal
    /// record, or an outcome with a judge's override laid over it).
    /// A refusal names the field's path, as [`crate::read`] does.
    pub fn from_json(kind: ActionKind, fields: Value) -> Result<Outcome, FieldError> {
        use crate::read::typed as read;
        Ok(match kind {
            ActionKind::Attack => Outcome::Attack(read(fields)?),
            ActionKind::StatusMove => Outcome::StatusMove(read(fields)?),
            ActionKind::Dodge => Outcome::Dodge(read(fields)?),
            ActionKind::Metronome => Outcome::Metronome(read(fields)?),
            ActionKind::Pass => Outcome::Pass(read(fields)?),
            ActionKind::Cast => Outcome::Cast(read(fields)?),
            ActionKind::Defend => Outcome::Defend(read(fields)?),
            ActionKind::StartEpisode => Outcome::StartEpisode(read(fields)?),
            ActionKind::Strike => Outcome::Strike(read(fields)?),
            ActionKind::Effect => Outcome::Effect(read(fields)?),
            ActionKind::ExchangeChoice => Outcome::ExchangeChoice(read(fields)?),
            ActionKind::Move => Outcome::Move(read(fields)?),
            ActionKind::Ruling => Outcome::Ruling(read(fields)?),
            ActionKind::Dispute => Outcome::Dispute(read(fields)?),
            ActionKind::Roll => Outcome::Roll(read(fields)?),
        })
    }
}
