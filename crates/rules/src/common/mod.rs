//! What every ruleset shares (docs/rules.md §5): judges' rulings, disputes and
//! free rolls ([`types`]). None of them touches a ruleset's state directly;
//! a ruling's `override` replaces fields of an earlier outcome, and replay folds the
//! battle again on top of it.

pub mod types;

pub use types::*;

use serde_json::{Map, Value};

use crate::action::ActionKind;
use crate::dice_request::{DiceRequest, draw_with_faces};
use crate::engine::Engine;
use crate::error::{Rejection, ResolveError};
use crate::model::sheet::Version;
use crate::model::state::{Battle, Entry};
use crate::outcome::Outcome;
use crate::summary::Summary;

fn referred(battle: &Battle, refers_to: Version) -> Result<&Entry, Rejection> {
    battle.entry(refers_to).ok_or(Rejection::UnknownReference { refers_to })
}

/// The referred entry's outcome with the ruling's fields laid over it; it
/// must still be a valid outcome of the referred action under the battle's
/// ruleset version.
pub(crate) fn overridden(
    engine: &dyn Engine,
    entry: &Entry,
    replacement: &Map<String, Value>,
) -> Result<Outcome, Rejection> {
    let kind = entry.action.kind();
    if matches!(kind, ActionKind::Ruling | ActionKind::Dispute) {
        return Err(Rejection::OverrideNotAllowed { kind: kind.name() });
    }
    let invalid = |reason: String| Rejection::OverrideInvalid { kind: kind.name(), reason };
    let mut fields = match serde_json::to_value(&entry.effective) {
        Ok(Value::Object(fields)) => fields,
        Ok(_) => return Err(invalid("the outcome is not an object".to_owned())),
        Err(err) => return Err(invalid(err.to_string())),
    };
    fields.extend(replacement.iter().map(|(name, value)| (name.clone(), value.clone())));
    // The fields laid over came from the override: a refused one is named there.
    let outcome = Outcome::from_json(kind, Value::Object(fields))
        .map_err(|err| invalid(format!("{}: {}", err.path_under("override"), err.message)))?;
    engine.fits_version(&outcome).map_err(invalid)?;
    Ok(outcome)
}

pub(crate) fn dice_needed(battle: &Battle, engine: &dyn Engine, act: Act<'_>) -> Result<DiceRequest, Rejection> {
    match act {
        Act::Ruling(ruling) => {
            let entry = referred(battle, ruling.refers_to)?;
            if let Some(replacement) = &ruling.replacement {
                overridden(engine, entry, replacement)?;
            }
            Ok(DiceRequest::none())
        }
        Act::Dispute(dispute) => {
            referred(battle, dispute.refers_to)?;
            Ok(DiceRequest::none())
        }
        Act::Roll(roll) => {
            dice::Expression::parse(&roll.expression)?;
            Ok(DiceRequest::Expression(roll.expression.clone()))
        }
    }
}

pub(crate) fn resolve(battle: &Battle, act: Act<'_>, faces: &[u32]) -> Result<(Outcome, Summary), ResolveError> {
    match act {
        Act::Ruling(ruling) => {
            referred(battle, ruling.refers_to)?;
            let overridden = ruling.replacement.is_some();
            let (judge, version, text) = (&ruling.judge, ruling.refers_to, &ruling.text);
            let mut ru = format!("Решение судьи {judge} по действию №{version}: {text}");
            let mut en = format!("Judge {judge}'s ruling on action #{version}: {text}");
            if overridden {
                ru.push_str(" (исход изменён)");
                en.push_str(" (outcome overridden)");
            }
            let outcome = RulingOutcome { result: RulingResult::Ruling, refers_to: version, overridden };
            Ok((Outcome::Ruling(outcome), Summary::new(ru, en)))
        }
        Act::Dispute(dispute) => {
            referred(battle, dispute.refers_to)?;
            let (by, version, reason) = (&dispute.by, dispute.refers_to, &dispute.reason);
            let summary = Summary::new(
                format!("{by} оспаривает действие №{version}: {reason}"),
                format!("{by} disputes action #{version}: {reason}"),
            );
            Ok((Outcome::Dispute(DisputeOutcome { result: DisputeResult::Disputed, refers_to: version }), summary))
        }
        Act::Roll(roll) => {
            let expression = dice::Expression::parse(&roll.expression).map_err(Rejection::from)?;
            let (dice, total) = draw_with_faces(&expression, faces)?;
            let error = total.as_ref().err().map(ToString::to_string);
            let rolled = dice::Roll { total: total.unwrap_or(0), dice };
            let rendering = match &error {
                None => dice::render(&expression, &rolled),
                Some(error) => format!("{}: {error}", expression.formula()),
            };
            let (actor, purpose) = (&roll.actor, &roll.purpose);
            let summary = if purpose.trim().is_empty() {
                Summary::new(format!("{actor} бросает {rendering}"), format!("{actor} rolls {rendering}"))
            } else {
                Summary::new(
                    format!("{actor} бросает на «{purpose}»: {rendering}"),
                    format!("{actor} rolls for {purpose}: {rendering}"),
                )
            };
            Ok((Outcome::Roll(RollOutcome { total: rolled.total, dice: rolled.dice, error }), summary))
        }
    }
}
