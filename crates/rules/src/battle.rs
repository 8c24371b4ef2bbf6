//! A battle as a fold: opened with a ruleset version and the participants'
//! sheets, then one resolved action after another, each recorded under the
//! battle version the caller gives it (the journal's version in the
//! service, the action line's index in a script).
//!
//! A rejected action leaves no trace. A judge's ruling with an `override`
//! never edits the earlier entry's recorded outcome; it replaces the
//! entry's *effective* outcome and the state is folded again from the
//! opening, so what follows is resolved on top of the judge's word.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use imbl::Vector;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::action::{Action, Split};
use crate::dice_request::DiceRequest;
use crate::error::{OpenError, Rejection, ResolveError};
use crate::outcome::Outcome;
use crate::ruleset::{Family, RulesetId};
use crate::summary::Summary;
use crate::{arcana, berserk, common, pbta, pokemon};

/// A position in the battle's history that later actions refer to
/// (`against`, `refers_to`).
pub type Version = u64;

/// One participant's sheet, e.g. `{"id": "mage", "abilities": {"Рука крови":
/// {"per_episode": 2, "min_points": 5, "magical": true}}}` (`magical` and
/// `min_points` under `arcana-2d10@2` only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Participant {
    pub id: String,
    /// `arcana-2d10`: abilities by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub abilities: BTreeMap<String, AbilitySheet>,
    /// `pbta-2d6`: trait values by trait name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub traits: BTreeMap<String, i32>,
}

impl Participant {
    pub fn new(id: impl Into<String>) -> Participant {
        Participant { id: id.into(), abilities: BTreeMap::new(), traits: BTreeMap::new() }
    }
}

/// One ability on an `arcana-2d10` sheet.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AbilitySheet {
    /// Uses allowed per episode; no limit without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_episode: Option<u32>,
    /// `arcana-2d10@2` (docs/rules.md §6.2.1): whether broken concentration blocks
    /// it; magical when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub magical: Option<bool>,
    /// `arcana-2d10@2` (docs/rules.md §6.2.1): the least skill points it can be
    /// used with, 1..=12; no minimum when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_points: Option<u32>,
}

impl AbilitySheet {
    /// Magical unless the sheet says otherwise (§6.2.1).
    pub fn is_magical(&self) -> bool {
        self.magical.unwrap_or(true)
    }
}

/// What opening a battle takes: `{"ruleset": "pokemon-d6@1", "participants": […]}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenBattle {
    pub ruleset: String,
    pub participants: Vec<Participant>,
}

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
    fn initial(ruleset: RulesetId, participants: &[Participant]) -> RulesState {
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
    ruleset: RulesetId,
    participants: Arc<Vec<Participant>>,
    state: RulesState,
    log: Vector<Arc<Entry>>,
}

impl Battle {
    /// Opens a battle: checks the ruleset name and the sheets.
    pub fn open(opening: &OpenBattle) -> Result<Battle, OpenError> {
        Battle::new(opening.ruleset.parse()?, opening.participants.clone())
    }

    pub fn new(ruleset: RulesetId, participants: Vec<Participant>) -> Result<Battle, OpenError> {
        validate_sheets(ruleset, &participants)?;
        let state = RulesState::initial(ruleset, &participants);
        Ok(Battle { ruleset, participants: Arc::new(participants), state, log: Vector::new() })
    }

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

    fn index_of(&self, version: Version) -> Option<usize> {
        self.log.binary_search_by_key(&version, |entry| entry.version).ok()
    }

    /// The dice `action` needs now, in draw order — or why the rules forbid
    /// it, before any die is drawn.
    pub fn dice_needed(&self, action: &Action) -> Result<DiceRequest, Rejection> {
        match (self.ruleset, &self.state, action.split()) {
            (_, _, Split::Common(act)) => common::dice_needed(self, act),
            (RulesetId::PokemonD6V1, RulesState::Pokemon(state), Split::Pokemon(act)) => {
                pokemon::v1::dice_needed(state, act)
            }
            (RulesetId::PokemonD6V2, RulesState::Pokemon(state), Split::Pokemon(act)) => {
                pokemon::v2::dice_needed(self, state, act)
            }
            (RulesetId::Arcana2d10V1, RulesState::Arcana(state), Split::Arcana(act)) => {
                arcana::v1::dice_needed(self, state, act)
            }
            (RulesetId::Arcana2d10V2, RulesState::Arcana(state), Split::Arcana(act)) => {
                arcana::v2::dice_needed(self, state, act)
            }
            (RulesetId::BerserkV1, _, Split::Berserk(act)) => berserk::v1::dice_needed(self, act),
            (RulesetId::BerserkV2, _, Split::Berserk(act)) => berserk::v2::dice_needed(self, act),
            (RulesetId::Pbta2d6V1, _, Split::Pbta(act)) => pbta::v1::dice_needed(self, act),
            (RulesetId::Pbta2d6V2, _, Split::Pbta(act)) => pbta::v2::dice_needed(self, act),
            _ => Err(Rejection::WrongRuleset { action: action.kind().name(), ruleset: self.ruleset }),
        }
    }

    /// Resolves `action` with `faces` (raw faces `1..=sides`, in draw order)
    /// and records it as version `at`, which must come after every version
    /// already recorded. Pure: the same battle, action and faces always give
    /// the same resolution.
    pub fn resolve(&self, at: Version, action: &Action, faces: &[u32]) -> Result<Resolution, ResolveError> {
        self.check_order(at)?;
        let request = self.dice_needed(action)?;
        request.check(faces)?;
        let (outcome, summary) = self.outcome_of(action, faces)?;
        let battle = self.record(at, action, &outcome)?;
        Ok(Resolution { outcome, summary, battle })
    }

    /// Folds a recorded outcome (from the journal) without re-resolving it.
    /// The action must still be allowed; an audit compares [`Battle::resolve`]
    /// against the recorded outcome instead.
    pub fn apply(&self, at: Version, action: &Action, outcome: &Outcome) -> Result<Battle, ResolveError> {
        self.check_order(at)?;
        if outcome.kind() != action.kind() {
            return Err(ResolveError::OutcomeMismatch { action: action.kind().name(), outcome: outcome.kind_name() });
        }
        crate::outcome::fits_version(self.ruleset, outcome)
            .map_err(|reason| ResolveError::OutcomeNotOfVersion { ruleset: self.ruleset, reason })?;
        self.dice_needed(action)?;
        self.record(at, action, outcome)
    }

    /// The battle as it stood right after `version`: replays the recorded
    /// outcomes up to it, rulings included, and nothing after it.
    pub fn as_of(&self, version: Version) -> Result<Battle, ResolveError> {
        let mut battle = Battle {
            ruleset: self.ruleset,
            participants: Arc::clone(&self.participants),
            state: RulesState::initial(self.ruleset, &self.participants),
            log: Vector::new(),
        };
        for entry in self.log.iter().take_while(|entry| entry.version <= version) {
            battle = battle.apply(entry.version, &entry.action, &entry.outcome)?;
        }
        Ok(battle)
    }

    /// The battle with the entry at `version` given `effective` as its
    /// effective outcome and the state folded again from the opening — what
    /// a ruling's override does, but with no ruling recorded. An audit
    /// resolves the actions that followed the entry on it, to tell which of
    /// them a later ruling changed the inputs of.
    pub fn with_effective(&self, version: Version, effective: Outcome) -> Result<Battle, ResolveError> {
        let mut next = self.clone();
        let index = next.index_of(version).ok_or(Rejection::UnknownReference { refers_to: version })?;
        Arc::make_mut(&mut next.log[index]).effective = effective;
        next.refold()?;
        Ok(next)
    }

    fn check_order(&self, at: Version) -> Result<(), ResolveError> {
        match self.last_version() {
            Some(last) if at <= last => Err(ResolveError::OutOfOrder { at, last }),
            _ => Ok(()),
        }
    }

    fn outcome_of(&self, action: &Action, faces: &[u32]) -> Result<(Outcome, Summary), ResolveError> {
        match (self.ruleset, &self.state, action.split()) {
            (_, _, Split::Common(act)) => common::resolve(self, act, faces),
            (RulesetId::PokemonD6V1, RulesState::Pokemon(state), Split::Pokemon(act)) => {
                pokemon::v1::resolve(state, act, faces)
            }
            (RulesetId::PokemonD6V2, RulesState::Pokemon(state), Split::Pokemon(act)) => {
                pokemon::v2::resolve(self, state, act, faces)
            }
            (RulesetId::Arcana2d10V1, RulesState::Arcana(_), Split::Arcana(act)) => {
                arcana::v1::resolve(self, act, faces)
            }
            (RulesetId::Arcana2d10V2, RulesState::Arcana(_), Split::Arcana(act)) => {
                arcana::v2::resolve(self, act, faces)
            }
            (RulesetId::BerserkV1, _, Split::Berserk(act)) => berserk::v1::resolve(self, act, faces),
            (RulesetId::BerserkV2, _, Split::Berserk(act)) => berserk::v2::resolve(self, act, faces),
            (RulesetId::Pbta2d6V1, _, Split::Pbta(act)) => pbta::v1::resolve(self, act, faces),
            (RulesetId::Pbta2d6V2, _, Split::Pbta(act)) => pbta::v2::resolve(self, act, faces),
            _ => Err(Rejection::WrongRuleset { action: action.kind().name(), ruleset: self.ruleset }.into()),
        }
    }

    /// The one state transition: `outcome` of `action`, recorded as `at`.
    fn record(&self, at: Version, action: &Action, outcome: &Outcome) -> Result<Battle, ResolveError> {
        let mut next = self.clone();
        match action {
            Action::Ruling(ruling) => {
                let index = next
                    .index_of(ruling.refers_to)
                    .ok_or(Rejection::UnknownReference { refers_to: ruling.refers_to })?;
                let effective = match &ruling.replacement {
                    Some(replacement) => Some(common::overridden(next.ruleset, &next.log[index], replacement)?),
                    None => None,
                };
                let entry = Arc::make_mut(&mut next.log[index]);
                entry.rulings.push(at);
                if let Some(effective) = effective {
                    entry.effective = effective;
                    next.refold()?;
                }
            }
            Action::Dispute(dispute) => {
                let index = next
                    .index_of(dispute.refers_to)
                    .ok_or(Rejection::UnknownReference { refers_to: dispute.refers_to })?;
                Arc::make_mut(&mut next.log[index]).disputes.push(at);
            }
            _ => apply_to_state(next.ruleset, &mut next.state, action, outcome)?,
        }
        next.log.push_back(Arc::new(Entry {
            version: at,
            action: action.clone(),
            outcome: outcome.clone(),
            effective: outcome.clone(),
            disputes: Vec::new(),
            rulings: Vec::new(),
        }));
        Ok(next)
    }

    /// Folds the state again from the opening over every entry's effective
    /// outcome: how a judge's override reaches everything after it.
    fn refold(&mut self) -> Result<(), ResolveError> {
        let mut state = RulesState::initial(self.ruleset, &self.participants);
        for entry in &self.log {
            apply_to_state(self.ruleset, &mut state, &entry.action, &entry.effective)?;
        }
        self.state = state;
        Ok(())
    }
}

fn apply_to_state(
    ruleset: RulesetId,
    state: &mut RulesState,
    action: &Action,
    outcome: &Outcome,
) -> Result<(), ResolveError> {
    match (ruleset, state, action.split()) {
        (_, _, Split::Common(_)) => Ok(()),
        (RulesetId::PokemonD6V1, RulesState::Pokemon(state), Split::Pokemon(act)) => {
            pokemon::v1::apply(state, act, outcome)
        }
        (RulesetId::PokemonD6V2, RulesState::Pokemon(state), Split::Pokemon(act)) => {
            pokemon::v2::apply(state, act, outcome)
        }
        // §6.2 changes what is allowed, not what a use leaves behind.
        (RulesetId::Arcana2d10V1 | RulesetId::Arcana2d10V2, RulesState::Arcana(state), Split::Arcana(act)) => {
            arcana::v1::apply(state, act, outcome)
        }
        // Stateless rulesets: only the outcome's kind has to fit. A
        // `berserk@2` choice awaiting its answer is read from the history
        // (the strikes' effective outcomes), not kept as state.
        (RulesetId::BerserkV1 | RulesetId::BerserkV2, RulesState::Berserk, Split::Berserk(_))
        | (RulesetId::Pbta2d6V1 | RulesetId::Pbta2d6V2, RulesState::Pbta, Split::Pbta(_)) => {
            if outcome.kind() == action.kind() {
                Ok(())
            } else {
                Err(ResolveError::OutcomeMismatch { action: action.kind().name(), outcome: outcome.kind_name() })
            }
        }
        _ => Err(Rejection::WrongRuleset { action: action.kind().name(), ruleset }.into()),
    }
}

fn validate_sheets(ruleset: RulesetId, participants: &[Participant]) -> Result<(), OpenError> {
    if participants.is_empty() {
        return Err(OpenError::NoParticipants);
    }
    let mut seen = HashSet::new();
    for (index, participant) in participants.iter().enumerate() {
        let id = &participant.id;
        if id.trim().is_empty() {
            return Err(OpenError::EmptyId { index });
        }
        if !seen.insert(id.as_str()) {
            return Err(OpenError::DuplicateParticipant { id: id.clone() });
        }
        let family = ruleset.family();
        if !participant.abilities.is_empty() && family != Family::Arcana2d10 {
            return Err(OpenError::SheetPartNotForRuleset {
                id: id.clone(),
                part: "abilities",
                wanted: Family::Arcana2d10.name(),
                ruleset,
            });
        }
        if !participant.traits.is_empty() && family != Family::Pbta2d6 {
            return Err(OpenError::SheetPartNotForRuleset {
                id: id.clone(),
                part: "traits",
                wanted: Family::Pbta2d6.name(),
                ruleset,
            });
        }
        if let Some(name) = participant.traits.keys().find(|name| !pbta::TRAITS.contains(&name.as_str())) {
            return Err(OpenError::UnknownTrait { id: id.clone(), name: name.clone() });
        }
        for (ability, sheet) in &participant.abilities {
            validate_ability(ruleset, id, ability, sheet)?;
        }
    }
    Ok(())
}

/// `magical` and `min_points` came with `arcana-2d10@2`: an `@1` sheet that
/// carries them is refused (before `@2` it was not a sheet at all), so an
/// `@1` battle never holds a requirement its rules would ignore.
fn validate_ability(ruleset: RulesetId, id: &str, ability: &str, sheet: &AbilitySheet) -> Result<(), OpenError> {
    let not_in =
        |field| OpenError::AbilityFieldNotInVersion { id: id.to_owned(), ability: ability.to_owned(), field, ruleset };
    if ruleset == RulesetId::Arcana2d10V1 {
        if sheet.magical.is_some() {
            return Err(not_in("magical"));
        }
        if sheet.min_points.is_some() {
            return Err(not_in("min_points"));
        }
    }
    match sheet.min_points {
        Some(min_points) if !(1..=12).contains(&min_points) => {
            Err(OpenError::MinPointsOutOfRange { id: id.to_owned(), ability: ability.to_owned(), min_points })
        }
        _ => Ok(()),
    }
}
