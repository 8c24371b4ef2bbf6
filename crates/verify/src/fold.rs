//! Reading battle events back into rules types: the pure helpers that the
//! audit's re-resolution and the resolver's view both fold with.

use battlelog_proto::battle::struct_to_json;
use battlelog_proto::v1::{ActionResolved, BattleOpened, DisputeRaised, JudgeRuling};
use rules::{Action, Outcome, Participant};
use serde_json::Value;

/// Why a journaled event does not read back as rules types. It names the
/// field; the serde message says what in it is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PartsError {
    #[error("participants[{index}]: {message}")]
    Participant { index: usize, message: String },
    #[error("action: {message}")]
    Action { message: String },
    #[error("outcome: {message}")]
    Outcome { message: String },
}

/// The battle's rules view of a dispute, which the journal keeps as an
/// event of its own.
pub fn dispute_action(dispute: &DisputeRaised) -> Action {
    Action::Dispute(rules::common::Dispute {
        by: dispute.by.clone(),
        refers_to: dispute.refers_to,
        reason: dispute.reason.clone(),
        note: None,
    })
}

/// The battle's rules view of a judge's ruling, which the journal keeps as
/// an event of its own.
pub fn ruling_action(ruling: &JudgeRuling) -> Action {
    Action::Ruling(rules::common::Ruling {
        judge: ruling.judge.clone(),
        refers_to: ruling.refers_to,
        text: ruling.text.clone(),
        replacement: ruling.r#override.as_ref().map(struct_to_json),
        note: None,
    })
}

/// Reads an `ActionResolved`'s action and outcome back into rules types.
pub fn resolved_parts(resolved: &ActionResolved) -> Result<(Action, Outcome), PartsError> {
    let action = resolved.action.as_ref().map(|s| Value::Object(struct_to_json(s))).unwrap_or(Value::Null);
    let action: Action = serde_json::from_value(action).map_err(|e| PartsError::Action { message: e.to_string() })?;
    let outcome = resolved.outcome.as_ref().map(|s| Value::Object(struct_to_json(s))).unwrap_or(Value::Null);
    let outcome =
        Outcome::from_json(action.kind(), outcome).map_err(|e| PartsError::Outcome { message: e.to_string() })?;
    Ok((action, outcome))
}

/// The participants of a `BattleOpened` as rules sheets.
pub fn participants(opened: &BattleOpened) -> Result<Vec<Participant>, PartsError> {
    opened
        .participants
        .iter()
        .enumerate()
        .map(|(index, p)| {
            serde_json::from_value(Value::Object(struct_to_json(p)))
                .map_err(|e| PartsError::Participant { index, message: e.to_string() })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use battlelog_proto::battle::json_to_struct;
    use serde_json::json;

    use super::*;

    fn fields(value: Value) -> prost_types::Struct {
        let Value::Object(map) = value else { unreachable!("an object literal") };
        json_to_struct(&map)
    }

    #[test]
    fn a_bad_participant_is_named_by_its_index() {
        let opened = BattleOpened {
            participants: vec![fields(json!({"id": "misty"})), fields(json!({"id": 7}))],
            ..Default::default()
        };
        let error = participants(&opened).expect_err("an id must be a string");
        assert!(matches!(error, PartsError::Participant { index: 1, .. }), "{error:?}");
        assert!(error.to_string().starts_with("participants[1]: "), "{error}");
    }

    #[test]
    fn a_missing_action_is_an_action_error() {
        let error = resolved_parts(&ActionResolved::default()).expect_err("no action");
        assert!(matches!(error, PartsError::Action { .. }), "{error:?}");
        assert!(error.to_string().starts_with("action: "), "{error}");
    }
}
