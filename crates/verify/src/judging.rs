//! Disputes and rulings as a judge follows them: what each contests, who
//! raised or made it (the credential recorded with it), and for a ruling
//! with an override the before and after of every outcome field it
//! changed. A ruling never edits the recorded outcome (RULES.md §5.1): it
//! replaces the referred entry's *effective* outcome, so "before" is the
//! effective outcome just before the ruling (an earlier ruling may already
//! have changed it) and "after" the one the ruling leaves.
//!
//! The audit's replay computes these in its one fold of the battle;
//! `battlelog replay` and `battlelog audit` both show the audit's lists.

use battlelog_proto::v1::{Credential, DisputeRaised, JudgeRuling};
use rules::Battle;
use serde::Serialize;
use serde_json::{Map, Value};

/// Who made a command: the subject and role of the credential the service
/// recorded with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Author {
    pub subject: String,
    pub role: String,
}

impl Author {
    fn of(credential: Option<&Credential>) -> Option<Author> {
        credential.map(|c| Author { subject: c.subject.clone(), role: c.role.clone() })
    }
}

/// One field of an outcome as a ruling found it and as it left it. A field
/// the outcome did not have is `null`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FieldChange {
    pub field: String,
    pub before: Value,
    pub after: Value,
}

/// A dispute as the battle records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DisputeSeen {
    pub version: u64,
    /// The version of the action disputed.
    pub contests: u64,
    /// The party the dispute is raised for (the event's `by`).
    pub party: String,
    pub reason: String,
    /// The credential that raised it; `None` for disputes from before
    /// credentials were recorded.
    pub by: Option<Author>,
}

impl DisputeSeen {
    pub fn new(version: u64, dispute: &DisputeRaised) -> DisputeSeen {
        DisputeSeen {
            version,
            contests: dispute.refers_to,
            party: dispute.by.clone(),
            reason: dispute.reason.clone(),
            by: Author::of(dispute.credential.as_ref()),
        }
    }
}

/// A judge's ruling as the battle records it, with what it changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RulingSeen {
    pub version: u64,
    /// The version of the action ruled on (whose outcome an override
    /// replaces).
    pub contests: u64,
    /// The ruling's judge: the subject of the judge's token.
    pub judge: String,
    /// The role of the credential recorded with it (as in `by`); `None`
    /// for rulings from before credentials were recorded.
    pub role: Option<String>,
    /// The credential the ruling was recorded with.
    pub by: Option<Author>,
    pub text: String,
    /// Every field the override names, and any other field whose value it
    /// changed, by field name; empty without an override, or when the
    /// override could not be applied (the audit then has a finding).
    pub changes: Vec<FieldChange>,
}

impl RulingSeen {
    /// The ruling at `version`; `before` and `after` are the battle folded
    /// up to just before it and with it, `after` being `None` when it did
    /// not fold.
    pub fn new(version: u64, ruling: &JudgeRuling, before: Option<&Battle>, after: Option<&Battle>) -> RulingSeen {
        let changes = match (&ruling.r#override, before, after) {
            (Some(replacement), Some(before), Some(after)) => {
                let named: Vec<String> = replacement.fields.keys().cloned().collect();
                let effective = |battle: &Battle| {
                    battle.entry(ruling.refers_to).map(|entry| outcome_fields(&entry.effective)).unwrap_or_default()
                };
                field_changes(&effective(before), &effective(after), &named)
            }
            _ => Vec::new(),
        };
        RulingSeen {
            version,
            contests: ruling.refers_to,
            judge: ruling.judge.clone(),
            role: ruling.credential.as_ref().map(|c| c.role.clone()),
            by: Author::of(ruling.credential.as_ref()),
            text: ruling.text.clone(),
            changes,
        }
    }
}

fn outcome_fields(outcome: &rules::Outcome) -> Map<String, Value> {
    match serde_json::to_value(outcome) {
        Ok(Value::Object(fields)) => fields,
        _ => Map::new(),
    }
}

/// The fields `named` (an override's, even one that sets a field to the
/// value it had: the judge ruled on it) and every other field whose value
/// differs between `before` and `after`, in field-name order.
pub fn field_changes(before: &Map<String, Value>, after: &Map<String, Value>, named: &[String]) -> Vec<FieldChange> {
    let mut fields: Vec<&String> = before.keys().chain(after.keys()).chain(named).collect();
    fields.sort();
    fields.dedup();
    fields
        .into_iter()
        .filter_map(|field| {
            let before = before.get(field).cloned().unwrap_or(Value::Null);
            let after = after.get(field).cloned().unwrap_or(Value::Null);
            (before != after || named.contains(field)).then(|| FieldChange { field: field.clone(), before, after })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn map(value: Value) -> Map<String, Value> {
        let Value::Object(map) = value else { unreachable!("an object literal") };
        map
    }

    #[test]
    fn named_fields_and_changed_fields_are_listed_in_name_order() {
        let before = map(json!({"result": "dodge", "counted": true, "face": 4}));
        let after = map(json!({"result": "dodge", "counted": false, "face": 4, "note": "overruled"}));
        let changes = field_changes(&before, &after, &["face".to_owned(), "counted".to_owned()]);
        assert_eq!(
            changes,
            vec![
                FieldChange { field: "counted".into(), before: json!(true), after: json!(false) },
                FieldChange { field: "face".into(), before: json!(4), after: json!(4) },
                FieldChange { field: "note".into(), before: Value::Null, after: json!("overruled") },
            ]
        );
    }
}
