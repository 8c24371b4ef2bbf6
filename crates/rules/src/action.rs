//! Every action of every ruleset as one JSON vocabulary:
//! `{"type": "attack", "actor": "pikachu", …}`. Field names and enum
//! strings are docs/rules.md's; unknown fields are refused, so a typo such as
//! `never_mis` is an error rather than a silently ignored flag.

use serde::{Deserialize, Serialize};

use crate::arcana::types as arcana;
use crate::berserk::types as berserk;
use crate::common::types as common;
use crate::pbta::types as pbta;
use crate::pokemon::types as pokemon;
use crate::ruleset::Family;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Action {
    // pokemon-d6
    Attack(pokemon::Attack),
    StatusMove(pokemon::StatusMove),
    Dodge(pokemon::Dodge),
    Metronome(pokemon::Metronome),
    Pass(pokemon::Pass),
    // arcana-2d10
    Cast(arcana::Cast),
    Defend(arcana::Defend),
    StartEpisode(arcana::StartEpisode),
    // berserk
    Strike(berserk::Strike),
    Effect(berserk::Effect),
    /// `berserk@2` only (docs/rules.md §6.3.1).
    ExchangeChoice(berserk::ExchangeChoice),
    // pbta-2d6
    Move(pbta::Move),
    // every ruleset (§5)
    Ruling(common::Ruling),
    Dispute(common::Dispute),
    Roll(common::FreeRoll),
}

/// The `type` of an action, without its fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ActionKind {
    Attack,
    StatusMove,
    Dodge,
    Metronome,
    Pass,
    Cast,
    Defend,
    StartEpisode,
    Strike,
    Effect,
    ExchangeChoice,
    Move,
    Ruling,
    Dispute,
    Roll,
}

impl ActionKind {
    /// Every kind, in the order of [`Action`]'s variants.
    pub const ALL: [ActionKind; 15] = [
        ActionKind::Attack,
        ActionKind::StatusMove,
        ActionKind::Dodge,
        ActionKind::Metronome,
        ActionKind::Pass,
        ActionKind::Cast,
        ActionKind::Defend,
        ActionKind::StartEpisode,
        ActionKind::Strike,
        ActionKind::Effect,
        ActionKind::ExchangeChoice,
        ActionKind::Move,
        ActionKind::Ruling,
        ActionKind::Dispute,
        ActionKind::Roll,
    ];

    /// The kind whose JSON `type` is `name`.
    pub fn from_name(name: &str) -> Option<ActionKind> {
        ActionKind::ALL.into_iter().find(|kind| kind.name() == name)
    }

    /// The JSON `type` string.
    pub fn name(self) -> &'static str {
        match self {
            ActionKind::Attack => "attack",
            ActionKind::StatusMove => "status_move",
            ActionKind::Dodge => "dodge",
            ActionKind::Metronome => "metronome",
            ActionKind::Pass => "pass",
            ActionKind::Cast => "cast",
            ActionKind::Defend => "defend",
            ActionKind::StartEpisode => "start_episode",
            ActionKind::Strike => "strike",
            ActionKind::Effect => "effect",
            ActionKind::ExchangeChoice => "exchange_choice",
            ActionKind::Move => "move",
            ActionKind::Ruling => "ruling",
            ActionKind::Dispute => "dispute",
            ActionKind::Roll => "roll",
        }
    }

    /// The ruleset the action belongs to; `None` for §5's common actions.
    pub fn family(self) -> Option<Family> {
        match self {
            ActionKind::Attack
            | ActionKind::StatusMove
            | ActionKind::Dodge
            | ActionKind::Metronome
            | ActionKind::Pass => Some(Family::PokemonD6),
            ActionKind::Cast | ActionKind::Defend | ActionKind::StartEpisode => Some(Family::Arcana2d10),
            ActionKind::Strike | ActionKind::Effect | ActionKind::ExchangeChoice => Some(Family::Berserk),
            ActionKind::Move => Some(Family::Pbta2d6),
            ActionKind::Ruling | ActionKind::Dispute | ActionKind::Roll => None,
        }
    }
}

/// An action borrowed as its ruleset's own vocabulary.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Split<'a> {
    Pokemon(pokemon::Act<'a>),
    Arcana(arcana::Act<'a>),
    Berserk(berserk::Act<'a>),
    Pbta(pbta::Act<'a>),
    Common(common::Act<'a>),
}

impl Action {
    pub fn kind(&self) -> ActionKind {
        match self {
            Action::Attack(_) => ActionKind::Attack,
            Action::StatusMove(_) => ActionKind::StatusMove,
            Action::Dodge(_) => ActionKind::Dodge,
            Action::Metronome(_) => ActionKind::Metronome,
            Action::Pass(_) => ActionKind::Pass,
            Action::Cast(_) => ActionKind::Cast,
            Action::Defend(_) => ActionKind::Defend,
            Action::StartEpisode(_) => ActionKind::StartEpisode,
            Action::Strike(_) => ActionKind::Strike,
            Action::Effect(_) => ActionKind::Effect,
            Action::ExchangeChoice(_) => ActionKind::ExchangeChoice,
            Action::Move(_) => ActionKind::Move,
            Action::Ruling(_) => ActionKind::Ruling,
            Action::Dispute(_) => ActionKind::Dispute,
            Action::Roll(_) => ActionKind::Roll,
        }
    }

    /// The free text kept with the action and never interpreted.
    pub fn note(&self) -> Option<&str> {
        match self {
            Action::Attack(a) => a.note.as_deref(),
            Action::StatusMove(a) => a.note.as_deref(),
            Action::Dodge(a) => a.note.as_deref(),
            Action::Metronome(a) => a.note.as_deref(),
            Action::Pass(a) => a.note.as_deref(),
            Action::Cast(a) => a.note.as_deref(),
            Action::Defend(a) => a.note.as_deref(),
            Action::StartEpisode(a) => a.note.as_deref(),
            Action::Strike(a) => a.note.as_deref(),
            Action::Effect(a) => a.note.as_deref(),
            Action::ExchangeChoice(a) => a.note.as_deref(),
            Action::Move(a) => a.note.as_deref(),
            Action::Ruling(a) => a.note.as_deref(),
            Action::Dispute(a) => a.note.as_deref(),
            Action::Roll(a) => a.note.as_deref(),
        }
    }

    pub(crate) fn split(&self) -> Split<'_> {
        match self {
            Action::Attack(a) => Split::Pokemon(pokemon::Act::Attack(a)),
            Action::StatusMove(a) => Split::Pokemon(pokemon::Act::StatusMove(a)),
            Action::Dodge(a) => Split::Pokemon(pokemon::Act::Dodge(a)),
            Action::Metronome(a) => Split::Pokemon(pokemon::Act::Metronome(a)),
            Action::Pass(a) => Split::Pokemon(pokemon::Act::Pass(a)),
            Action::Cast(a) => Split::Arcana(arcana::Act::Cast(a)),
            Action::Defend(a) => Split::Arcana(arcana::Act::Defend(a)),
            Action::StartEpisode(_) => Split::Arcana(arcana::Act::StartEpisode),
            Action::Strike(a) => Split::Berserk(berserk::Act::Strike(a)),
            Action::Effect(a) => Split::Berserk(berserk::Act::Effect(a)),
            Action::ExchangeChoice(a) => Split::Berserk(berserk::Act::ExchangeChoice(a)),
            Action::Move(a) => Split::Pbta(pbta::Act::Move(a)),
            Action::Ruling(a) => Split::Common(common::Act::Ruling(a)),
            Action::Dispute(a) => Split::Common(common::Act::Dispute(a)),
            Action::Roll(a) => Split::Common(common::Act::Roll(a)),
        }
    }
}
