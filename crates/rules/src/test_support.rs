//! Helpers for the unit tests: battles from JSON, resolution in one call.

use serde_json::Value;

use crate::{Action, Battle, OpenBattle, Outcome, Rejection, Resolution, ResolveError};

pub(crate) fn open(ruleset: &str, participants: Value) -> Battle {
    let opening: OpenBattle =
        serde_json::from_value(serde_json::json!({"ruleset": ruleset, "participants": participants}))
            .expect("a valid opening");
    Battle::open(&opening).expect("the battle opens")
}

/// `base` (a JSON object) with the fields of `extra` (an object) added or
/// replaced: an action with the flags a test varies.
pub(crate) fn with_fields(mut base: Value, extra: Value) -> Value {
    if let (Some(fields), Value::Object(extra)) = (base.as_object_mut(), extra) {
        fields.extend(extra);
    }
    base
}

pub(crate) fn action(json: Value) -> Action {
    serde_json::from_value(json).expect("a valid action")
}

/// Resolves `json` as the next version of `battle`.
pub(crate) fn resolve(battle: &Battle, json: Value, faces: &[u32]) -> Result<Resolution, ResolveError> {
    let at = battle.last_version().map_or(0, |last| last + 1);
    battle.resolve(at, &action(json), faces)
}

/// Resolves and keeps the new battle; panics on anything but an outcome.
pub(crate) fn play(battle: &mut Battle, json: Value, faces: &[u32]) -> Outcome {
    let resolution = resolve(battle, json, faces).expect("the action resolves");
    *battle = resolution.battle;
    resolution.outcome
}

/// The outcome as JSON, the way scripts and the journal see it.
pub(crate) fn fields(outcome: &Outcome) -> Value {
    serde_json::to_value(outcome).expect("outcomes serialise")
}

pub(crate) fn rejection(battle: &Battle, json: Value, faces: &[u32]) -> Rejection {
    match resolve(battle, json, faces) {
        Err(ResolveError::Rejected(rejection)) => rejection,
        other => panic!("expected a rejection, got {other:?}"),
    }
}
