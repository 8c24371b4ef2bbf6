//! Disputes and rulings as a judge follows them: what each contests, who
//! raised or made it (the credential recorded with it), and for a ruling
//! with an override the before and after of every outcome field it
//! changed. A ruling never edits the recorded outcome (docs/rules.md §5.1): it
//! replaces the referred entry's *effective* outcome, so "before" is the
//! effective outcome just before the ruling (an earlier ruling may already
//! have changed it) and "after" the one the ruling leaves.
//!
//! The audit's replay computes these in its one fold of the battle;
//! `battlelog replay` and `battlelog audit` both show the audit's lists, and
//! the battle page renders them. Their JSON field names (the `--json`
//! report's) are stable:
//!
//! - [`DisputeSeen`]: `version`, `contests` (the action's version), `party`,
//!   `reason`, `by` ([`Author`] or `null`), `after_close` (bool).
//! - [`RulingSeen`]: `version`, `contests`, `judge`, `role`, `by`, `text`,
//!   `changes` (a list of [`FieldChange`]: `field`, `before`, `after`; a
//!   field whose value the ruling left as it was is never listed), and
//!   `after_close` (bool: the battle was closed when the ruling was
//!   journaled, which the resolver takes only within its appeal window),
//!   `answers_dispute` (the version of the dispute it answers, or `null`:
//!   rulings recorded before the field existed answer no recorded dispute)
//!   and `affected` (a list of [`AffectedAction`]: `version`, `changes`,
//!   `refused`).
//! - [`AffectedAction`]: an action resolved between the ruled action and
//!   the ruling whose resolution the ruling's override changes: resolved
//!   again with the same dice on the battle as the override leaves it, its
//!   outcome differs (`changes`: each field as recorded, `before`, and as
//!   resolved again, `after`) or the rules no longer allow it (`refused`:
//!   why, in English).
//! - [`CloseSeen`]: `version`, `by` (the credential that closed: the
//!   identity), `note` (the request's free-text `by`: a note, never who
//!   closed), `reason`.
//! - [`FinalOutcome`]: for each action's version, `outcome` (its effective
//!   outcome after every ruling, as JSON) and `rulings` (the versions of the
//!   rulings that changed it, in order; empty when none did).

use battlelog_proto::v1::{BattleClosed, Credential, DisputeRaised, JudgeRuling};
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

/// One field of an outcome as a ruling found it and as it left it, listed
/// only when the two differ. A field the outcome did not have is `null`.
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
    /// Raised after the battle's close (in the resolver's appeal window).
    pub after_close: bool,
}

impl DisputeSeen {
    pub fn new(version: u64, dispute: &DisputeRaised, after_close: bool) -> DisputeSeen {
        DisputeSeen {
            after_close,
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
    /// Every field whose value the override changed, by field name (a
    /// field it names but leaves as it was is not listed); empty without an
    /// override, when it changed nothing, or when it could not be applied
    /// (the audit then has a finding).
    pub changes: Vec<FieldChange>,
    /// Made after the battle's close: the resolver takes a ruling then only
    /// within its appeal window (`appeal_window_secs`), a policy of its clock
    /// that an offline audit does not judge.
    pub after_close: bool,
    /// The version of the dispute the ruling says it answers
    /// (`JudgeRuling.answers_dispute`); `None` for a ruling that names none,
    /// as every ruling recorded before the field existed.
    pub answers_dispute: Option<u64>,
    /// The actions resolved between the ruled action and this ruling whose
    /// resolution the override changes, in version order (the audit fills
    /// it once the whole battle is folded). Actions after the ruling were
    /// resolved on top of it already.
    pub affected: Vec<AffectedAction>,
}

/// An action a ruling's override reaches: resolved again with its own dice
/// on the battle as the override leaves it, it comes out otherwise.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AffectedAction {
    pub version: u64,
    /// Each outcome field as recorded (`before`) and as resolved again
    /// (`after`); empty when the action is refused instead.
    pub changes: Vec<FieldChange>,
    /// Why the rules no longer allow the action on the overridden battle
    /// (English, the rules' words), when they do not.
    pub refused: Option<String>,
}

impl AffectedAction {
    /// `recorded` against the outcome of resolving the action again (or
    /// the reason it cannot be); `None` when nothing differs.
    pub fn compare(
        version: u64,
        recorded: &rules::Outcome,
        again: Result<&rules::Outcome, String>,
    ) -> Option<AffectedAction> {
        match again {
            Ok(again) => {
                let changes = field_changes(&outcome_fields(recorded), &outcome_fields(again));
                (!changes.is_empty()).then_some(AffectedAction { version, changes, refused: None })
            }
            Err(reason) => Some(AffectedAction { version, changes: Vec::new(), refused: Some(reason) }),
        }
    }
}

impl RulingSeen {
    /// The ruling at `version`; `before` and `after` are the battle folded
    /// up to just before it and with it, `after` being `None` when it did
    /// not fold; `after_close`: the battle was closed by then.
    pub fn new(
        version: u64,
        ruling: &JudgeRuling,
        before: Option<&Battle>,
        after: Option<&Battle>,
        after_close: bool,
    ) -> RulingSeen {
        let changes = match (&ruling.r#override, before, after) {
            (Some(_), Some(before), Some(after)) => {
                let effective = |battle: &Battle| {
                    battle.entry(ruling.refers_to).map(|entry| outcome_fields(&entry.effective)).unwrap_or_default()
                };
                field_changes(&effective(before), &effective(after))
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
            after_close,
            answers_dispute: ruling.answers_dispute,
            affected: Vec::new(),
        }
    }
}

/// The battle's close as recorded: who closed it is the credential the
/// resolver recorded from the caller's token; the request's free-text `by`
/// is only a note (a forum's token may write any name there).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CloseSeen {
    pub version: u64,
    /// Who closed it; `None` for closes from before credentials were
    /// recorded.
    pub by: Option<Author>,
    /// The close's free text `by` (`BattleClosed.by`): a note, not an
    /// identity.
    pub note: String,
    pub reason: String,
}

impl CloseSeen {
    pub fn new(version: u64, closed: &BattleClosed) -> CloseSeen {
        CloseSeen {
            version,
            by: Author::of(closed.credential.as_ref()),
            note: closed.by.clone(),
            reason: closed.reason.clone(),
        }
    }
}

/// An action's outcome once every ruling is applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FinalOutcome {
    /// The effective outcome, as JSON (the recorded one when no ruling
    /// changed it).
    pub outcome: Value,
    /// The versions of the rulings that changed it, in version order.
    pub rulings: Vec<u64>,
}

fn outcome_fields(outcome: &rules::Outcome) -> Map<String, Value> {
    match serde_json::to_value(outcome) {
        Ok(Value::Object(fields)) => fields,
        _ => Map::new(),
    }
}

/// Every field whose value differs between `before` and `after`, in
/// field-name order. A field an override names but sets to the value it
/// had is no change, and listing it would read as one ("— → —").
pub fn field_changes(before: &Map<String, Value>, after: &Map<String, Value>) -> Vec<FieldChange> {
    let mut fields: Vec<&String> = before.keys().chain(after.keys()).collect();
    fields.sort();
    fields.dedup();
    fields
        .into_iter()
        .filter_map(|field| {
            let before = before.get(field).cloned().unwrap_or(Value::Null);
            let after = after.get(field).cloned().unwrap_or(Value::Null);
            (before != after).then(|| FieldChange { field: field.clone(), before, after })
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
    fn changed_fields_are_listed_in_name_order_and_unchanged_ones_never() {
        let before = map(json!({"result": "dodge", "counted": true, "face": 4, "damage": null}));
        let after = map(json!({"result": "dodge", "counted": false, "face": 4, "note": "overruled"}));
        let changes = field_changes(&before, &after);
        assert_eq!(
            changes,
            vec![
                FieldChange { field: "counted".into(), before: json!(true), after: json!(false) },
                FieldChange { field: "note".into(), before: Value::Null, after: json!("overruled") },
            ]
        );
    }
}
