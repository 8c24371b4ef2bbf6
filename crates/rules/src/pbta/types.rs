//! The `pbta-2d6` vocabulary every version shares: its actions, outcomes and
//! state, as they read and write in JSON.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The six traits of a trainer's sheet.
pub const TRAITS: [&str; 6] = ["brawn", "grace", "charm", "grit", "wits", "cool"];

/// A move (§4.1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Move {
    pub actor: String,
    /// One of [`TRAITS`]; any other name is rejected by the rules.
    #[serde(rename = "trait")]
    pub trait_name: String,
    /// Overrides the sheet's value (`@1`); refused under `@2`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trait_value: Option<i32>,
    /// Anyone helping: a non-empty list gives +1, never more. Under `@2`
    /// neither the actor nor one id twice.
    #[serde(default)]
    pub helpers: Vec<String>,
    /// Required under `@2` (not blank); free under `@1`.
    #[serde(default)]
    pub stakes: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MoveResult {
    FullSuccess,
    SuccessWithCost,
    Miss,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MoveOutcome {
    pub result: MoveResult,
    pub total: i64,
    pub help: u32,
    /// The helpers, who share the risk (under `@2`, only on
    /// `success_with_cost` and `miss`).
    pub exposed: Vec<String>,
}

/// The `pbta-2d6` actions, borrowed out of [`crate::Action`].
#[derive(Debug, Clone, Copy)]
pub(crate) enum Act<'a> {
    Move(&'a Move),
}
