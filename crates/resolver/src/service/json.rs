//! JSON in and out: the caller's `Struct`s read as the rules' types (and
//! refused naming the field at fault), and the rules' values written back
//! as `Struct`s and the `*_json` mirror fields of the replies.

use battlelog_proto::battle::{StructError, check_struct, json_to_struct, struct_to_json};
use battlelog_runtime::grpc::invalid_argument;
use serde_json::{Map, Value};
use tonic::Status;

use super::{MAX_JSON_BYTES, MAX_JSON_DEPTH, internal};

/// `fields`, the request's `field`, as JSON: required, finite, and within
/// the depth and size limits.
pub(super) fn json_of(field: &str, fields: Option<&prost_types::Struct>) -> Result<Value, Status> {
    let fields = fields.ok_or_else(|| invalid_argument(field, "is required"))?;
    // Before any conversion: `struct_to_json` recurses without a bound and
    // would turn NaN or infinity into `null` without a word.
    check_struct(field, fields, MAX_JSON_DEPTH).map_err(|e| struct_refused(field, &e))?;
    let json = Value::Object(struct_to_json(fields));
    let size = json.to_string().len();
    if size > MAX_JSON_BYTES {
        return Err(invalid_argument(field, format!("is {size} bytes as JSON; the limit is {MAX_JSON_BYTES}")));
    }
    Ok(json)
}

/// The refusal of a value the rules' types cannot read, naming its JSON
/// path under `field` (`action.power`, `participants[1].abilities.X.per_episode`)
/// in the message and as the `BadRequest` violation's field.
pub(super) fn unreadable(field: &str, error: rules::read::FieldError) -> Status {
    invalid_argument(&error.path_under(field), error.message)
}

/// The refusal of sheets that read but do not open a battle, naming the
/// field at fault where the error tells which.
pub(super) fn sheets_refused(sheets: &[rules::Participant], error: &rules::OpenError) -> Status {
    use rules::OpenError;
    let index_of = |id: &str| sheets.iter().position(|sheet| sheet.id == id);
    let field = match error {
        OpenError::EmptyId { index } => Some(format!("participants[{index}].id")),
        // The second sheet with the id is the one at fault.
        OpenError::DuplicateParticipant { id } => sheets
            .iter()
            .enumerate()
            .filter(|(_, sheet)| &sheet.id == id)
            .nth(1)
            .map(|(index, _)| format!("participants[{index}].id")),
        OpenError::SheetPartNotForRuleset { id, part, .. } => {
            index_of(id).map(|index| format!("participants[{index}].{part}"))
        }
        OpenError::UnknownTrait { id, .. } => index_of(id).map(|index| format!("participants[{index}].traits")),
        OpenError::AbilityFieldNotInVersion { id, ability, field, .. } => {
            index_of(id).map(|index| format!("participants[{index}].abilities.{ability}.{field}"))
        }
        OpenError::MinPointsOutOfRange { id, ability, .. } => {
            index_of(id).map(|index| format!("participants[{index}].abilities.{ability}.min_points"))
        }
        _ => None,
    };
    invalid_argument(field.as_deref().unwrap_or("participants"), error.to_string())
}

/// A Struct as JSON text, its whole numbers as integers (what the
/// `*_json` mirror fields of the replies carry).
pub(super) fn json_text(fields: Option<&prost_types::Struct>) -> String {
    fields.map(|fields| Value::Object(struct_to_json(fields)).to_string()).unwrap_or_default()
}

/// The refusal of a caller's `Struct`: a value that is wrong names its path
/// (`action.damage`); nesting names the field and the limit.
fn struct_refused(field: &str, error: &StructError) -> Status {
    match error {
        StructError::TooDeep { .. } => invalid_argument(field, error.to_string()),
        StructError::NotFinite { path, value } => {
            invalid_argument(path, format!("must be a finite number, not {value}"))
        }
        StructError::Control { path } => invalid_argument(path, "may not hold control characters"),
    }
}

/// `value` as a Struct; a value that is not an object is wrapped as
/// `{"value": …}`, since a Struct holds only fields.
pub(super) fn to_struct(value: &impl serde::Serialize) -> Result<prost_types::Struct, Status> {
    match serde_json::to_value(value) {
        Ok(Value::Object(fields)) => Ok(json_to_struct(&fields)),
        Ok(other) => Ok(json_to_struct(&Map::from_iter([("value".to_owned(), other)]))),
        Err(e) => Err(internal(format!("cannot encode: {e}"))),
    }
}

/// A ruleset's state as a Struct. It serialises as `{"<ruleset>": {...}}`;
/// the ruleset is a field of its own in the reply, so the state is the
/// inner object (empty for rulesets that keep none).
pub(super) fn state_struct(state: &rules::RulesState) -> Result<prost_types::Struct, Status> {
    let value = serde_json::to_value(state).map_err(|e| internal(format!("cannot encode the state: {e}")))?;
    let inner = match value {
        Value::Object(outer) if outer.len() == 1 => outer.into_iter().next().map(|(_, inner)| inner),
        other => Some(other),
    };
    match inner {
        Some(Value::Object(fields)) => Ok(json_to_struct(&fields)),
        _ => Ok(prost_types::Struct::default()),
    }
}

/// Who an action is for, as the roller's `actor`.
pub(crate) fn actor_of(action: &Value) -> String {
    let field = |name: &str| action.get(name).and_then(Value::as_str).map(str::to_owned);
    field("actor")
        .or_else(|| action.get("attacker").and_then(|a| a.get("id")).and_then(Value::as_str).map(str::to_owned))
        .or_else(|| field("by"))
        .or_else(|| field("judge"))
        .unwrap_or_default()
}
