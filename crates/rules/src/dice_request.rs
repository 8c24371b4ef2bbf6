//! Which dice an action needs, asked of the roller before anything is drawn,
//! and the check that the faces handed back fit that request exactly.
//!
//! Faces are the raw faces `1..=sides` in draw order (for `dF`, the
//! underlying d3 face). Wrong dice are an error value, never a panic: a judge
//! asking "what would these dice have meant" may type anything.

use std::fmt;

use dice::{Expression, WordSource};
use serde::Serialize;

/// One roll the rules ask for: `count` dice with `sides` faces each.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RollSpec {
    pub count: u32,
    pub sides: u32,
    /// What the dice decide, e.g. `power`, `confusion`, `dodge`; fit for the
    /// journal's `purpose` field.
    pub purpose: &'static str,
}

impl RollSpec {
    pub(crate) fn one(sides: u32, purpose: &'static str) -> RollSpec {
        RollSpec { count: 1, sides, purpose }
    }

    /// The dice expression that draws exactly these dice, e.g. `2d10`.
    pub fn expression(&self) -> String {
        format!("{}d{}", self.count, self.sides)
    }
}

/// The dice an action needs, given the battle's current state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiceRequest {
    /// A fixed list of rolls, drawn in this order; the faces of all of them,
    /// concatenated, are what [`crate::Battle::resolve`] takes. Empty when the
    /// action needs no dice.
    Rolls(Vec<RollSpec>),
    /// A free roll (docs/rules.md §5.2): the expression itself decides how many
    /// dice it draws (rerolls and explosions depend on the faces).
    Expression(String),
}

impl DiceRequest {
    pub(crate) fn none() -> DiceRequest {
        DiceRequest::Rolls(Vec::new())
    }

    /// The expressions to roll, in order: one per [`RollSpec`], or the free
    /// roll's own expression.
    pub fn expressions(&self) -> Vec<String> {
        match self {
            DiceRequest::Rolls(rolls) => rolls.iter().map(RollSpec::expression).collect(),
            DiceRequest::Expression(expression) => vec![expression.clone()],
        }
    }

    /// How many faces [`crate::Battle::resolve`] expects; `None` for a free
    /// roll, whose count depends on the faces.
    pub fn die_count(&self) -> Option<usize> {
        match self {
            DiceRequest::Rolls(rolls) => Some(rolls.iter().map(|roll| roll.count as usize).sum()),
            DiceRequest::Expression(_) => None,
        }
    }

    /// The faces each die may show, one entry per die in draw order; `None`
    /// for a free roll.
    pub fn die_sides(&self) -> Option<Vec<u32>> {
        match self {
            DiceRequest::Rolls(rolls) => {
                Some(rolls.iter().flat_map(|roll| std::iter::repeat_n(roll.sides, roll.count as usize)).collect())
            }
            DiceRequest::Expression(_) => None,
        }
    }

    /// Checks `faces` against a fixed request: the count and every face's range.
    pub(crate) fn check(&self, faces: &[u32]) -> Result<(), DiceError> {
        let DiceRequest::Rolls(rolls) = self else {
            return Ok(());
        };
        let expected: usize = rolls.iter().map(|roll| roll.count as usize).sum();
        if faces.len() != expected {
            return Err(DiceError::Count { expected, given: faces.len(), wanted: DiceList(rolls.clone()) });
        }
        let dice = rolls.iter().flat_map(|roll| std::iter::repeat_n(roll, roll.count as usize));
        for (index, (roll, &face)) in dice.zip(faces).enumerate() {
            if !(1..=roll.sides).contains(&face) {
                return Err(DiceError::Face { position: index + 1, face, sides: roll.sides, purpose: roll.purpose });
            }
        }
        Ok(())
    }
}

/// A list of rolls as text, e.g. `1d6 (power), 1d6 (confusion)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiceList(pub Vec<RollSpec>);

impl fmt::Display for DiceList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("no dice");
        }
        for (i, roll) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{} ({})", roll.expression(), roll.purpose)?;
        }
        Ok(())
    }
}

/// The faces given do not fit the dice the action needs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DiceError {
    #[error("the action needs {expected} dice ({wanted}) but {given} faces were given")]
    Count { expected: usize, given: usize, wanted: DiceList },
    #[error("die {position} ({purpose}) is a d{sides}: face {face} is outside 1..={sides}")]
    Face { position: usize, face: u32, sides: u32, purpose: &'static str },
    #[error("the expression `{expression}` drew more dice than the {given} faces given")]
    TooFewForExpression { expression: String, given: usize },
    #[error("the expression `{expression}` drew {drawn} dice but {given} faces were given")]
    TooManyForExpression { expression: String, drawn: usize, given: usize },
    #[error("die {position} is missing")]
    Missing { position: usize },
    #[error("face {face} at position {position} is not a die face")]
    NotAFace { position: usize, face: i64 },
}

/// Hands out checked faces one by one to a ruleset's resolution.
#[derive(Debug)]
pub(crate) struct Faces<'a> {
    faces: &'a [u32],
    next: usize,
}

impl<'a> Faces<'a> {
    pub(crate) fn new(faces: &'a [u32]) -> Faces<'a> {
        Faces { faces, next: 0 }
    }

    /// The next face. The request was checked first, so a missing face means
    /// a ruleset asked for fewer dice than it reads: an error, not a panic.
    pub(crate) fn take(&mut self) -> Result<u32, DiceError> {
        let face = self.faces.get(self.next).copied().ok_or(DiceError::Missing { position: self.next + 1 })?;
        self.next += 1;
        Ok(face)
    }
}

/// Raw faces from loosely typed input (a script line): anything that is not
/// a `u32` names its position.
pub fn faces_from_integers(values: &[i64]) -> Result<Vec<u32>, DiceError> {
    values
        .iter()
        .enumerate()
        .map(|(index, &face)| u32::try_from(face).map_err(|_| DiceError::NotAFace { position: index + 1, face }))
        .collect()
}

/// Evaluates a free roll's expression with the given faces standing in for
/// the roller's draws, so the dice crate's own draw order (rerolls,
/// explosions, keep/drop) decides which face is which die.
/// Evaluates a free roll's expression with the given faces standing in for
/// the roller's draws. Faces that do not fit are an error; an arithmetic
/// failure on fitting faces (division by zero, overflow) comes back beside
/// the dice, because those dice were drawn and journaled: the roll stands.
pub(crate) fn draw_with_faces(
    expression: &Expression,
    faces: &[u32],
) -> Result<(Vec<dice::Die>, Result<i64, dice::EvalError>), DiceError> {
    let mut source = GivenFaces { faces, next: 0, exhausted: false };
    // The dice drawn come back even when the arithmetic fails, so wrong
    // faces are reported as such before any arithmetic error they caused.
    let (dice, total) = dice::evaluate_keeping_dice(expression, &mut source);
    let text = expression.source().to_owned();
    for (index, (die, &face)) in dice.iter().zip(faces).enumerate() {
        if !(1..=die.sides).contains(&face) {
            return Err(DiceError::Face { position: index + 1, face, sides: die.sides, purpose: "free roll" });
        }
    }
    if source.exhausted {
        return Err(DiceError::TooFewForExpression { expression: text, given: faces.len() });
    }
    if dice.len() != faces.len() {
        return Err(DiceError::TooManyForExpression { expression: text, drawn: dice.len(), given: faces.len() });
    }
    Ok((dice, total))
}

/// Hands out `face − 1` as the next word: the protocol's die maps word `w`
/// below the rejection limit to face `1 + w mod sides`, which is `face` for
/// every face in range. Faces out of range are caught after evaluation.
struct GivenFaces<'a> {
    faces: &'a [u32],
    next: usize,
    exhausted: bool,
}

impl WordSource for GivenFaces<'_> {
    fn next_word(&mut self) -> u32 {
        match self.faces.get(self.next) {
            Some(&face) => {
                self.next += 1;
                face.saturating_sub(1)
            }
            None => {
                // Word 0 is face 1 on any die; the roll is refused anyway.
                self.exhausted = true;
                0
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Expression {
        Expression::parse(text).expect("a valid expression")
    }

    #[test]
    fn fixed_requests_check_count_and_range() {
        let request =
            DiceRequest::Rolls(vec![RollSpec::one(6, "power"), RollSpec { count: 2, sides: 10, purpose: "x" }]);
        assert_eq!(request.die_count(), Some(3));
        assert_eq!(request.die_sides(), Some(vec![6, 10, 10]));
        assert_eq!(request.expressions(), vec!["1d6".to_owned(), "2d10".to_owned()]);
        assert_eq!(request.check(&[6, 10, 1]), Ok(()));
        assert!(matches!(request.check(&[6, 10]), Err(DiceError::Count { expected: 3, given: 2, .. })));
        assert!(matches!(request.check(&[6, 10, 1, 1]), Err(DiceError::Count { expected: 3, given: 4, .. })));
        assert!(matches!(request.check(&[7, 10, 1]), Err(DiceError::Face { position: 1, face: 7, sides: 6, .. })));
        assert!(matches!(request.check(&[1, 0, 1]), Err(DiceError::Face { position: 2, face: 0, .. })));
        assert_eq!(DiceRequest::none().check(&[]), Ok(()));
        assert!(DiceRequest::none().check(&[1]).is_err());
    }

    /// The roll, or the faces' error; an arithmetic failure as its message.
    fn evaluate_with_faces(expression: &Expression, faces: &[u32]) -> Result<dice::Roll, DiceError> {
        let (dice, total) = draw_with_faces(expression, faces)?;
        Ok(dice::Roll { total: total.unwrap_or(i64::MIN), dice })
    }

    #[test]
    fn free_rolls_follow_the_dice_crate_draw_order() {
        let roll = evaluate_with_faces(&parse("4d6kh3"), &[6, 5, 3, 1]).expect("fits");
        assert_eq!(roll.total, 14);
        // An explosion draws one more die than the count.
        let roll = evaluate_with_faces(&parse("1d6!"), &[6, 2]).expect("fits");
        assert_eq!(roll.total, 8);
        assert_eq!(roll.dice.len(), 2);
        let roll = evaluate_with_faces(&parse("1dF+1"), &[1]).expect("fits");
        assert_eq!(roll.total, 0);
        assert!(matches!(evaluate_with_faces(&parse("1d6!"), &[6]), Err(DiceError::TooFewForExpression { .. })));
        assert!(matches!(
            evaluate_with_faces(&parse("2d6"), &[1, 2, 3]),
            Err(DiceError::TooManyForExpression { drawn: 2, given: 3, .. })
        ));
        assert!(matches!(evaluate_with_faces(&parse("2d6"), &[1, 7]), Err(DiceError::Face { position: 2, .. })));
        assert!(matches!(evaluate_with_faces(&parse("2d6"), &[0, 1]), Err(DiceError::Face { position: 1, .. })));
        let (dice, total) = draw_with_faces(&parse("1d6/(1d2-1)"), &[3, 1]).expect("the faces fit");
        assert_eq!(dice.len(), 2, "the dice stand");
        assert_eq!(total, Err(dice::EvalError::DivisionByZero { position: 4 }));
        assert_eq!(evaluate_with_faces(&parse("3+4"), &[]).map(|roll| roll.total), Ok(7));
    }

    #[test]
    fn loosely_typed_faces_name_the_bad_position() {
        assert_eq!(faces_from_integers(&[1, 6]), Ok(vec![1, 6]));
        assert_eq!(faces_from_integers(&[1, -2]), Err(DiceError::NotAFace { position: 2, face: -2 }));
        assert!(faces_from_integers(&[i64::MAX]).is_err());
    }
}
