//! A battle as a fold ([`Battle`]'s methods that change it; the model itself
//! is [`crate::model`]): opened with a ruleset version and the participants'
//! sheets, then one resolved action after another, each recorded under the
//! battle version the caller gives it (the journal's version in the
//! service, the action line's index in a script).
//!
//! A rejected action leaves no trace. A judge's ruling with an `override`
//! never edits the earlier entry's recorded outcome; it replaces the
//! entry's *effective* outcome and the state is folded again from the
//! opening, so what follows is resolved on top of the judge's word.

use std::collections::HashSet;
use std::sync::Arc;

use imbl::Vector;

use crate::action::{Action, Split};
use crate::common;
use crate::dice_request::DiceRequest;
use crate::error::{OpenError, Rejection, ResolveError};
use crate::model::sheet::{AbilitySheet, OpenBattle, Participant, Version};
use crate::model::state::{Battle, Entry, Resolution, RulesState};
use crate::outcome::Outcome;
use crate::pbta::types::TRAITS;
use crate::registry;
use crate::ruleset::{Family, RulesetId};
use crate::summary::Summary;

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

    /// The dice `action` needs now, in draw order — or why the rules forbid
    /// it, before any die is drawn.
    pub fn dice_needed(&self, action: &Action) -> Result<DiceRequest, Rejection> {
        let engine = registry::engine(self.ruleset);
        match action.split() {
            Split::Common(act) => common::dice_needed(self, engine, act),
            _ => engine.dice_needed(self, action),
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
        registry::engine(self.ruleset)
            .fits_version(outcome)
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
        match action.split() {
            Split::Common(act) => common::resolve(self, act, faces),
            _ => registry::engine(self.ruleset).resolve(self, action, faces),
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
                    Some(replacement) => {
                        Some(common::overridden(registry::engine(next.ruleset), &next.log[index], replacement)?)
                    }
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
    match action.split() {
        Split::Common(_) => Ok(()),
        _ => registry::engine(ruleset).apply(state, action, outcome),
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
        if let Some(name) = participant.traits.keys().find(|name| !TRAITS.contains(&name.as_str())) {
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
