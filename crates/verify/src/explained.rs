//! A battle folded from its records with every action explained: the
//! state at any version and the "why" of each result, for the judge's page
//! and for `battlelog replay`, from one fold.
//!
//! The fold is the one the resolver's view keeps (and so the state
//! `battlelog replay --at` prints): the record bytes decoded, then
//! `BattleOpened` → [`rules::Battle::new`], `ActionResolved` →
//! [`rules::Battle::apply`] of the recorded outcome, disputes and rulings →
//! [`rules::Battle::resolve`] of [`crate::fold`]'s actions. On the way each
//! `ActionResolved` is explained ([`rules::explain::explain`]) from the
//! battle just before it and the raw faces of the rolls it names (taken as
//! the audit takes them).

use std::collections::{BTreeMap, HashMap};

use battlelog_proto::battle::{decode, die_from_proto};
use battlelog_proto::v1::JournalRecord;
use battlelog_proto::v1::battle_event::Event;
use prost::Message;
use rules::explain::{Explanation, explain, state_view};
use rules::{Battle, RulesetId};
use serde_json::Value;

use crate::audit::AuditedRecord;
use crate::fold::{dispute_action, participants, resolved_parts, ruling_action};

/// Why the records do not fold, at which version.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("version {version}: {message}")]
pub struct FoldError {
    pub version: u64,
    pub message: String,
}

/// Records folded up to a version.
#[derive(Debug, Clone)]
pub struct Explained {
    /// The battle right after the last version folded.
    pub battle: Battle,
    /// Each `ActionResolved`'s explanation, by version.
    pub explanations: BTreeMap<u64, Explanation>,
    /// Where the fold stopped short, and why: an event that does not fold
    /// (the audit reports it as a finding). `battle` and `explanations` are
    /// then those of the versions before it.
    pub stopped: Option<FoldError>,
}

/// Folds `records` up to and including `until` (all of them when `None`),
/// explaining every `ActionResolved` on the way. An error only when no
/// battle opens; a later event that does not fold stops the fold there
/// ([`Explained::stopped`]).
pub fn fold(records: &[AuditedRecord], until: Option<u64>) -> Result<Explained, FoldError> {
    let mut explanations = BTreeMap::new();
    let mut battle: Option<Battle> = None;
    let stopped = fold_into(records, until, &mut battle, &mut explanations).err();
    match battle {
        Some(battle) => Ok(Explained { battle, explanations, stopped }),
        None => {
            Err(stopped.unwrap_or(FoldError { version: 0, message: "the records do not open a battle".to_owned() }))
        }
    }
}

/// The state right after `version` ([`state_view`] JSON), folded as
/// `battlelog replay --at` folds it; an error when the records do not fold
/// that far.
pub fn state_at(records: &[AuditedRecord], version: u64) -> Result<Value, FoldError> {
    let folded = fold(records, Some(version))?;
    match folded.stopped {
        Some(problem) => Err(problem),
        None => Ok(state_view(&folded.battle)),
    }
}

fn decoded(record: &AuditedRecord) -> Result<Event, String> {
    let record = JournalRecord::decode(record.record.as_slice()).map_err(|e| format!("record: {e}"))?;
    decode(&record).map_err(|e| e.to_string())
}

fn fold_into(
    records: &[AuditedRecord],
    until: Option<u64>,
    battle: &mut Option<Battle>,
    explanations: &mut BTreeMap<u64, Explanation>,
) -> Result<(), FoldError> {
    let mut faces_by_nonce: HashMap<u64, Vec<u32>> = HashMap::new();
    for record in records.iter().take_while(|record| until.is_none_or(|until| record.version <= until)) {
        let version = record.version;
        let fail = |message: String| FoldError { version, message };
        let event = decoded(record).map_err(fail)?;
        let next = match (event, battle.as_ref()) {
            (Event::BattleOpened(opened), _) => {
                let ruleset: RulesetId =
                    opened.ruleset.parse().map_err(|e: rules::RulesetError| fail(e.to_string()))?;
                let sheets = participants(&opened).map_err(|e| fail(e.to_string()))?;
                Some(Battle::new(ruleset, sheets).map_err(|e| fail(e.to_string()))?)
            }
            (_, None) => return Err(fail("an event before the battle's opening".to_owned())),
            (Event::DiceRolled(rolled), Some(_)) => {
                // The raw faces the rules read, as the audit takes them.
                let faces = dice::Expression::parse(&rolled.expression)
                    .map(|expression| {
                        let dice: Vec<dice::Die> = rolled.dice.iter().map(die_from_proto).collect();
                        dice::raw_faces(&expression, &dice)
                    })
                    .unwrap_or_default();
                faces_by_nonce.insert(rolled.nonce, faces);
                None
            }
            (Event::ActionResolved(resolved), Some(current)) => {
                let (action, outcome) = resolved_parts(&resolved).map_err(|e| fail(e.to_string()))?;
                let faces: Vec<u32> = resolved
                    .rolls
                    .iter()
                    .flat_map(|nonce| faces_by_nonce.get(nonce).cloned().unwrap_or_default())
                    .collect();
                let next = current.apply(version, &action, &outcome).map_err(|e| fail(e.to_string()))?;
                explanations.insert(version, explain(current, version, &action, &faces, &outcome));
                Some(next)
            }
            (Event::DisputeRaised(dispute), Some(current)) => {
                let resolution = current.resolve(version, &dispute_action(&dispute), &[]);
                Some(resolution.map_err(|e| fail(e.to_string()))?.battle)
            }
            (Event::JudgeRuling(ruling), Some(current)) => {
                let resolution = current.resolve(version, &ruling_action(&ruling), &[]);
                Some(resolution.map_err(|e| fail(e.to_string()))?.battle)
            }
            (Event::SeedCommitted(_) | Event::SeedRevealed(_) | Event::BattleClosed(_), Some(_)) => None,
        };
        if let Some(next) = next {
            *battle = Some(next);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export;

    /// The closed `pokemon-d6@2` demo battle the browser verifier's tests use.
    const DEMO: &str = include_str!("../../../web/verifier/test/fixtures/demo-pokemon-closed.jsonl");

    #[test]
    fn the_fold_explains_each_action_and_stops_where_asked() {
        let records = export::parse(DEMO).expect("an export");
        let all = fold(&records, None).expect("folds");
        assert_eq!(all.stopped, None);
        // Versions 2, 4, 6, 7 and 9 are the demo's ActionResolved events.
        assert_eq!(all.explanations.keys().copied().collect::<Vec<_>>(), vec![2, 4, 6, 7, 9]);
        let to_five = fold(&records, Some(5)).expect("folds");
        assert_eq!(to_five.explanations.keys().copied().collect::<Vec<_>>(), vec![2, 4]);
        // v6's Fake Out (interrupt, p = 2) made pikachu flinch; v7's
        // flinched Thunder Wave cleared it.
        let flinched = |state: &Value| state["participants"][0]["fields"]["flinched"].clone();
        assert_eq!(state_at(&records, 5).map(|s| flinched(&s)), Ok(Value::Bool(false)));
        assert_eq!(state_at(&records, 6).map(|s| flinched(&s)), Ok(Value::Bool(true)));
        assert_eq!(state_at(&records, 7).map(|s| flinched(&s)), Ok(Value::Bool(false)));
        assert_eq!(state_at(&records, 6).map(|s| s["participants"][0]["id"].clone()), Ok(Value::from("pikachu")));
    }

    #[test]
    fn records_that_open_no_battle_are_an_error() {
        let mut records = export::parse(DEMO).expect("an export");
        records.remove(0);
        assert_eq!(fold(&records, None).map(|_| ()).map_err(|e| e.version), Err(1));
    }
}
