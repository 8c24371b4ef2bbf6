//! A battle's state: the ruleset it keeps, its participants, the ruleset's
//! own state and the history of resolved entries, with what reading them
//! takes. How the state changes (resolving, folding, replaying) is
//! [`crate::battle`]'s.

use std::sync::Arc;

use imbl::Vector;
use serde::Serialize;

use super::sheet::{Participant, Version};
use crate::action::Action;
use crate::arcana::types as arcana;
use crate::outcome::Outcome;
use crate::pokemon::types as pokemon;
use crate::ruleset::{Family, RulesetId};
use crate::summary::Summary;

/// The ruleset's own state; `berserk` and `pbta-2d6` keep none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RulesState {
    Pokemon(pokemon::State),
    Arcana(arcana::State),
    Berserk,
    Pbta,
}

impl RulesState {
    pub(crate) fn initial(ruleset: RulesetId, participants: &[Participant]) -> RulesState {
        match ruleset.family() {
            Family::PokemonD6 => RulesState::Pokemon(pokemon::State {
                pokemon: participants.iter().map(|p| (p.id.clone(), pokemon::Pokemon::default())).collect(),
            }),
            Family::Arcana2d10 => RulesState::Arcana(arcana::State::default()),
            Family::Berserk => RulesState::Berserk,
            Family::Pbta2d6 => RulesState::Pbta,
        }
    }
}

/// One resolved action in the battle's history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub version: Version,
    pub action: Action,
    /// The outcome as resolved and journaled; never changes.
    pub outcome: Outcome,
    /// The outcome after every ruling's override so far.
    pub effective: Outcome,
    /// Versions of the disputes raised about this entry.
    pub disputes: Vec<Version>,
    /// Versions of the rulings on this entry.
    pub rulings: Vec<Version>,
}

/// What resolving an action gives: its outcome, the forum summary and the
/// battle after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolution {
    pub outcome: Outcome,
    pub summary: Summary,
    pub battle: Battle,
}

/// A battle's state: pure data, cheap to clone. The history is a
/// persistent vector of shared entries: a clone costs the same at the
/// thousandth action as at the first, and the battle after an action shares
/// all but a path of the one before. (A plain `Vec` made every action copy
/// the whole history, three times per `Act` in the resolver.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Battle {
    pub(crate) ruleset: RulesetId,
    pub(crate) participants: Arc<Vec<Participant>>,
    pub(crate) state: RulesState,
    pub(crate) log: Vector<Arc<Entry>>,
}

impl Battle {
    pub fn ruleset(&self) -> RulesetId {
        self.ruleset
    }

    pub fn participants(&self) -> &[Participant] {
        &self.participants
    }

    pub fn participant(&self, id: &str) -> Option<&Participant> {
        self.participants.iter().find(|participant| participant.id == id)
    }

    pub fn state(&self) -> &RulesState {
        &self.state
    }

    /// A Pokémon's dodges, statuses, charging and flinch (`pokemon-d6` only).
    pub fn pokemon(&self, id: &str) -> Option<&pokemon::Pokemon> {
        match &self.state {
            RulesState::Pokemon(state) => state.pokemon.get(id),
            _ => None,
        }
    }

    /// Per-episode uses and broken concentration (`arcana-2d10` only).
    pub fn arcana(&self) -> Option<&arcana::State> {
        match &self.state {
            RulesState::Arcana(state) => Some(state),
            _ => None,
        }
    }

    /// The resolved actions, oldest first.
    pub fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.log.iter().map(|entry| &**entry)
    }

    pub fn entry(&self, version: Version) -> Option<&Entry> {
        self.index_of(version).map(|index| &*self.log[index])
    }

    pub fn last_version(&self) -> Option<Version> {
        self.log.last().map(|entry| entry.version)
    }

    pub(crate) fn index_of(&self, version: Version) -> Option<usize> {
        self.log.binary_search_by_key(&version, |entry| entry.version).ok()
    }
}
