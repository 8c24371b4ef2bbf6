//! The record of one roll: every die in draw order with its flags, and the
//! total. This is what the journal keeps and what an auditor re-derives.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One drawn die.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Die {
    /// Faces of the die as drawn: a fudge die is a d3.
    pub sides: u32,
    /// The face shown, after the fudge shift (−1, 0, +1 for `dF`).
    pub value: i64,
    /// Counted in the term's value.
    pub kept: bool,
    /// Met the reroll condition and was replaced by the next die.
    pub rerolled: bool,
    /// Drawn because the die before it exploded.
    pub exploded: bool,
}

/// The outcome of evaluating one expression.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Roll {
    pub total: i64,
    /// Every die drawn, in draw order.
    pub dice: Vec<Die>,
}
