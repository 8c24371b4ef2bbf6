//! Reading the JSON a caller sends into the rules' own types, with the path
//! of whatever they refuse: `{"type": "attack", "power": "ninety"}` is
//! refused at `power`, a sheet's bad limit at `abilities.Рука крови.per_episode`.
//!
//! The types are the very ones [`crate::schema`] derives the published
//! schemas from, so the server and a client's validator read one
//! vocabulary. serde loses the path inside an internally tagged enum (it
//! buffers the fields before it knows the variant), so an action is read
//! in two steps: its `type`, then that variant's own struct. An outcome is
//! read by [`crate::Outcome::from_json`] through [`typed`]: it knows its
//! action's kind from beside it.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::action::{Action, ActionKind};
use crate::model::sheet::Participant;

/// A value the rules' types refuse, and where it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.describe())]
pub struct FieldError {
    /// The JSON path inside the value read, like `attacker.strike[1]`;
    /// an unknown field is named itself, a missing one by the object that
    /// lacks it (empty for the value as a whole).
    pub path: String,
    /// What serde says, e.g. `invalid type: string "ninety", expected u32`.
    pub message: String,
}

impl FieldError {
    /// The path with the value's own name in front: `action.power`, or
    /// `action` for the value as a whole.
    pub fn path_under(&self, prefix: &str) -> String {
        match (prefix.is_empty(), self.path.is_empty()) {
            (_, true) => prefix.to_owned(),
            (true, false) => self.path.clone(),
            (false, false) => format!("{prefix}.{}", self.path),
        }
    }

    fn describe(&self) -> String {
        if self.path.is_empty() { self.message.clone() } else { format!("{}: {}", self.path, self.message) }
    }

    fn at(path: &str, message: impl Into<String>) -> FieldError {
        FieldError { path: path.to_owned(), message: message.into() }
    }
}

/// `value` as a `T`, or where and why not.
pub fn typed<T: DeserializeOwned>(value: Value) -> Result<T, FieldError> {
    serde_path_to_error::deserialize(value).map_err(|error| {
        let path = error.path().to_string();
        // serde_path_to_error writes the value itself as ".".
        let path = if path == "." { String::new() } else { path };
        FieldError { path, message: error.into_inner().to_string() }
    })
}

/// An action: `{"type": "attack", …}`.
pub fn action(value: Value) -> Result<Action, FieldError> {
    let Value::Object(mut fields) = value else {
        return Err(FieldError::at("", format!("expected an object with a `type`, not {}", kind_of(&value))));
    };
    let kind = match fields.remove("type") {
        None => return Err(FieldError::at("", "missing field `type`")),
        Some(Value::String(name)) => ActionKind::from_name(&name).ok_or_else(|| {
            let known: Vec<String> = ActionKind::ALL.iter().map(|kind| format!("`{}`", kind.name())).collect();
            FieldError::at("type", format!("unknown variant `{name}`, expected one of {}", known.join(", ")))
        })?,
        Some(other) => {
            return Err(FieldError::at("type", format!("invalid type: {}, expected a string", kind_of(&other))));
        }
    };
    let fields = Value::Object(fields);
    Ok(match kind {
        ActionKind::Attack => Action::Attack(typed(fields)?),
        ActionKind::StatusMove => Action::StatusMove(typed(fields)?),
        ActionKind::Dodge => Action::Dodge(typed(fields)?),
        ActionKind::Metronome => Action::Metronome(typed(fields)?),
        ActionKind::Pass => Action::Pass(typed(fields)?),
        ActionKind::Cast => Action::Cast(typed(fields)?),
        ActionKind::Defend => Action::Defend(typed(fields)?),
        ActionKind::StartEpisode => Action::StartEpisode(typed(fields)?),
        ActionKind::Strike => Action::Strike(typed(fields)?),
        ActionKind::Effect => Action::Effect(typed(fields)?),
        ActionKind::ExchangeChoice => Action::ExchangeChoice(typed(fields)?),
        ActionKind::Move => Action::Move(typed(fields)?),
        ActionKind::Ruling => Action::Ruling(typed(fields)?),
        ActionKind::Dispute => Action::Dispute(typed(fields)?),
        ActionKind::Roll => Action::Roll(typed(fields)?),
    })
}

/// One participant's sheet.
pub fn participant(value: Value) -> Result<Participant, FieldError> {
    typed(value)
}

/// serde's words for a JSON value's kind, as in its `invalid type` errors.
fn kind_of(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => format!("boolean `{b}`"),
        Value::Number(n) => format!("number {n}"),
        Value::String(s) => format!("string {s:?}"),
        Value::Array(_) => "sequence".to_owned(),
        Value::Object(_) => "map".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn refused(value: Value) -> FieldError {
        action(value).expect_err("refused")
    }

    #[test]
    fn a_wrong_type_names_its_field() {
        let error = refused(json!({"type": "attack", "actor": "a", "target": "b", "move": "m", "power": "ninety"}));
        assert_eq!(error.path, "power");
        assert_eq!(error.message, "invalid type: string \"ninety\", expected u32");
        assert_eq!(error.path_under("action"), "action.power");
        assert_eq!(error.to_string(), "power: invalid type: string \"ninety\", expected u32");
    }

    #[test]
    fn nested_fields_are_named_with_their_place() {
        let strike = json!({
            "type": "strike", "kind": "simple",
            "attacker": {"id": "a", "strike": [1, "two", 3]},
            "defender": {"id": "d"},
        });
        assert_eq!(refused(strike).path, "attacker.strike[1]");
        let sheet = json!({"id": "mage", "abilities": {"Рука крови": {"per_episode": -1}}});
        let error = participant(sheet).expect_err("a negative limit");
        assert_eq!(error.path_under("participants[1]"), "participants[1].abilities.Рука крови.per_episode");
    }

    #[test]
    fn a_missing_field_names_its_object_and_an_unknown_one_itself() {
        let missing = refused(json!({"type": "pass"}));
        assert_eq!((missing.path.as_str(), missing.message.as_str()), ("", "missing field `actor`"));
        let unknown = refused(json!({"type": "pass", "actor": "a", "never_mis": true}));
        assert_eq!(unknown.path, "never_mis");
        assert!(unknown.message.starts_with("unknown field `never_mis`"), "{unknown}");
        let nested = refused(
            json!({"type": "strike", "kind": "simple", "attacker": {"id": "a", "x": 1}, "defender": {"id": "d"}}),
        );
        assert_eq!(nested.path, "attacker.x");
    }

    #[test]
    fn the_type_itself_is_checked_first() {
        assert_eq!(refused(json!({"actor": "a"})).message, "missing field `type`");
        let unknown = refused(json!({"type": "fly", "actor": "a"}));
        assert_eq!(unknown.path, "type");
        assert!(unknown.message.starts_with("unknown variant `fly`, expected one of `attack`"), "{unknown}");
        assert_eq!(refused(json!({"type": 7})).path, "type");
        assert_eq!(refused(json!([1])).path, "");
    }

    #[test]
    fn reading_in_two_steps_gives_what_serde_gives() {
        for value in [
            json!({"type": "attack", "actor": "a", "target": "b", "move": "m", "power": 90}),
            json!({"type": "start_episode"}),
            json!({"type": "move", "actor": "a", "trait": "grit", "stakes": "s"}),
            json!({"type": "roll", "actor": "a", "expression": "2d6", "purpose": ""}),
        ] {
            let direct: Action = serde_json::from_value(value.clone()).expect("serde reads it");
            assert_eq!(action(value).expect("read"), direct);
        }
    }
}
