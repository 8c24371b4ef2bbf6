//! What an explanation is made of: the dice and what each meant, sums of
//! terms, products, the table rows a result came from and the state
//! changes. Each family's `explain.rs` builds them with `term`, `row`
//! and `die`; [`crate::explain`] renders them.

use serde::Serialize;
use serde_json::Value;

use crate::action::Action;
use crate::model::state::Battle;
use crate::outcome::Outcome;

/// The two languages of the judges' pages and of the CLI's explanations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lang {
    En,
    Ru,
}

/// One resolved action explained.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Explanation {
    /// `name@version` of the rules that gave the result.
    pub ruleset: String,
    /// The action's `type`.
    pub action: &'static str,
    /// The dice in draw order, each with its role and meaning.
    pub dice: Vec<DieUse>,
    /// Every sum the rules computed, with its dice and named terms.
    pub sums: Vec<Sum>,
    /// Products (damage, damage after a dodge): factors and the rounded value.
    pub products: Vec<Product>,
    /// The rules the result came from, in the order they were applied; the
    /// last row that gives a result gives the outcome's.
    pub rows: Vec<Row>,
    /// What the action changed in the state (see [`crate::explain::state_view`]).
    pub changes: Vec<Change>,
}

/// One die as the rules used it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DieUse {
    /// What the die is for: `die`, `power`, `paralysis`, `infatuation`,
    /// `confusion`, `dodge`, `attacker`, `defender`, `effect`, `metronome`.
    pub role: &'static str,
    pub face: u32,
    pub sides: u32,
    /// The participant whose die it is: a berserk defender's die is the
    /// defender's, whoever asked for the roll.
    pub who: Option<String>,
    /// What this face meant, when it decided something on its own
    /// (`condition.fails`, `condition.passes`, `confusion.self`, …).
    pub meaning: Option<&'static str>,
    /// The forum's own text the face picked (a Metronome move), as is.
    pub picked: Option<String>,
}

/// A named modifier added to a sum.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Term {
    pub key: &'static str,
    pub value: i64,
    /// The docs/rules.md section that names it.
    pub section: &'static str,
    /// What the term stands for, e.g. the trait's name or the helpers.
    pub detail: Option<String>,
    /// Subtracted rather than added (`diff` = A − D).
    pub minus: bool,
}

impl Term {
    /// What the term adds to its sum.
    pub fn contribution(&self) -> i64 {
        if self.minus { -self.value } else { self.value }
    }

    /// A bare number of the rule (`p − 2`'s 2): shown without a name.
    pub fn is_constant(&self) -> bool {
        self.key == "constant"
    }
}

/// One piece of a sum as a reader reads it: the operator before it (none
/// for the first piece), the term it shows (none for a die's face) and the
/// number written, so that `first op number op number …` evaluates to the
/// sum's value and no sign is ever doubled ("+ −2" is written "− 2").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part<'a> {
    pub op: Option<char>,
    pub term: Option<&'a Term>,
    /// `5`, `−3` (a first piece only), `(−1)` (a negative value subtracted).
    pub number: String,
}

/// `value` = the dice + every term.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Sum {
    /// `total`, `sum`, `total_skill`, `attacker_total`, `defender_total`,
    /// `diff`, `effective_die`, `effect_value`.
    pub key: &'static str,
    /// The participant it belongs to, when it is one side's.
    pub who: Option<String>,
    pub dice: Vec<u32>,
    pub terms: Vec<Term>,
    pub value: i64,
}

impl Sum {
    pub(crate) fn new(key: &'static str, who: Option<&str>, dice: Vec<u32>, terms: Vec<Term>) -> Sum {
        let value =
            dice.iter().map(|&face| i64::from(face)).sum::<i64>() + terms.iter().map(Term::contribution).sum::<i64>();
        Sum { key, who: who.map(str::to_owned), dice, terms, value }
    }

    /// The sum's pieces in reading order: the dice, then the terms.
    pub fn parts(&self) -> Vec<Part<'_>> {
        let mut parts: Vec<Part<'_>> = Vec::new();
        for &face in &self.dice {
            let op = (!parts.is_empty()).then_some('+');
            parts.push(Part { op, term: None, number: face.to_string() });
        }
        for term in &self.terms {
            let first = parts.is_empty();
            let (op, number) = match (first, term.minus, term.value < 0) {
                (true, false, _) => (None, signed_plain(term.value)),
                (_, true, false) => (Some('−'), term.value.to_string()),
                (_, true, true) => (Some('−'), format!("({})", signed_plain(term.value))),
                (false, false, false) => (Some('+'), term.value.to_string()),
                (false, false, true) => (Some('−'), term.value.unsigned_abs().to_string()),
            };
            parts.push(Part { op, term: Some(term), number });
        }
        parts
    }

    /// Whether writing the pieces out would only repeat the value ("effective
    /// die = 3 = 3"): a lone die and no term.
    pub fn is_bare(&self) -> bool {
        self.dice.len() == 1 && self.terms.is_empty()
    }
}

/// `5`, `−3`: a number with a true minus sign, no plus.
fn signed_plain(value: i64) -> String {
    if value < 0 { format!("−{}", value.unsigned_abs()) } else { value.to_string() }
}

/// `value` = round(product of the factors), as the rules round.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Product {
    /// `damage`, `damage_after`.
    pub key: &'static str,
    /// Factor key and its value as written (`65`, `2/3`, `50%`).
    pub factors: Vec<(&'static str, String)>,
    pub value: i64,
}

/// The rule (a table row or a step of docs/rules.md) a result came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Row {
    pub key: &'static str,
    pub section: &'static str,
    /// The result this row gives, in the outcome's own words (`hit`,
    /// `full_success`, `medium/weak` for a berserk attacker/defender pair).
    pub gives: Option<String>,
}

/// One field of one participant (or of the battle, `who` = `None`) before
/// and after the action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    pub who: Option<String>,
    pub field: String,
    pub before: Value,
    pub after: Value,
}

pub(crate) fn term(key: &'static str, value: i64, section: &'static str) -> Term {
    Term { key, value, section, detail: None, minus: false }
}

pub(crate) fn row(key: &'static str, section: &'static str, gives: Option<&str>) -> Row {
    Row { key, section, gives: gives.map(str::to_owned) }
}

pub(crate) fn die(role: &'static str, face: u32, sides: u32, who: &str, meaning: Option<&'static str>) -> DieUse {
    DieUse { role, face, sides, who: Some(who.to_owned()), meaning, picked: None }
}

/// What one action's explanation is built from: the battle as it stood
/// before it, the action, its dice in draw order and the outcome to
/// explain.
pub(crate) struct Case<'a> {
    pub(crate) before: &'a Battle,
    pub(crate) action: &'a Action,
    pub(crate) faces: &'a [u32],
    pub(crate) outcome: &'a Outcome,
}
