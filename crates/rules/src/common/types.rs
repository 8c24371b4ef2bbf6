//! The vocabulary of §5: rulings, disputes and free rolls and their
//! outcomes, the same under every ruleset.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::model::sheet::Version;

/// A judge's ruling on an earlier action (§5.1). Only the judge role may
/// append it; checking roles is the service's business, not the rules'.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Ruling {
    pub judge: String,
    pub refers_to: Version,
    pub text: String,
    /// Fields that replace those of the referred outcome, e.g.
    /// `{"counted": false}` on a dodge.
    #[serde(rename = "override", default, skip_serializing_if = "Option::is_none")]
    pub replacement: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A participant contests a result (§5.1); a judge answers with a ruling.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Dispute {
    pub by: String,
    pub refers_to: Version,
    pub reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A free roll of any dice expression (§5.2), resolved by no ruleset.
/// `actor` is whoever rolls: in a Pokémon battle that is often the trainer,
/// who is no participant, so it is not checked against the sheets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FreeRoll {
    pub actor: String,
    pub expression: String,
    pub purpose: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RulingResult {
    Ruling,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RulingOutcome {
    pub result: RulingResult,
    pub refers_to: Version,
    /// The ruling replaced fields of the referred outcome.
    pub overridden: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DisputeResult {
    Disputed,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DisputeOutcome {
    pub result: DisputeResult,
    pub refers_to: Version,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RollOutcome {
    /// The expression's value; 0 when `error` is set.
    pub total: i64,
    /// Every die in draw order, with its flags.
    pub dice: Vec<dice::Die>,
    /// Why the arithmetic failed on these dice (division by zero, overflow).
    /// The roll still stands: its dice were drawn and journaled, so a
    /// failing expression cannot be used to peek at faces without a trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The common actions, borrowed out of [`crate::Action`].
#[derive(Debug, Clone, Copy)]
pub(crate) enum Act<'a> {
    Ruling(&'a Ruling),
    Dispute(&'a Dispute),
    Roll(&'a FreeRoll),
}
