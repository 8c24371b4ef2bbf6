//! The one-line rendering of a roll for a forum post, e.g.
//! `4d6kh3: [6, 5, 3, ~~1~~] = 14`.
//!
//! Dice not counted (dropped or rerolled) are struck through with `~~`,
//! which forum markup and Markdown both show as strikethrough; a die drawn
//! by an explosion carries a trailing `!`. Fudge dice show as `-1`, `0`, `+1`.
//!
//! [`pieces`] is the same line without any markup, for a caller that strikes
//! dice its own way (BBCode `[s]`, HTML `<s>`, plain text) and escapes the
//! player's text for its own format.

use std::fmt::Write;

use crate::expr::{Expression, Sides};
use crate::record::{Die, Roll};
use crate::terms::split_by_term;

/// One piece of a rendered roll line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Text the player typed (the formula, the comment after `#`): a caller
    /// writing markup must escape it.
    Text(String),
    /// The renderer's own text: brackets, commas, counted dice, `=`, the
    /// total. Only digits, signs, `!` and that punctuation.
    Fixed(String),
    /// A die that does not count (dropped or rerolled): its face, with `!`
    /// when it exploded, for the caller to strike through.
    Struck(String),
}

/// Renders `roll` of `expression`: one bracket of dice per dice term, in
/// draw order, then the total and the comment if there is one.
///
/// Works from the recorded dice alone (their flags say which term each die
/// belongs to), so a roll read back from a journal renders the same.
pub fn render(expression: &Expression, roll: &Roll) -> String {
    let mut line = String::new();
    for piece in pieces(expression, roll) {
        match piece {
            Piece::Text(text) | Piece::Fixed(text) => line.push_str(&text),
            Piece::Struck(face) => {
                let _ = write!(line, "~~{face}~~");
            }
        }
    }
    line
}

/// The line [`render`] writes, as pieces: the player's text, the
/// renderer's own, and the dice not counted, with no markup in any of them.
pub fn pieces(expression: &Expression, roll: &Roll) -> Vec<Piece> {
    let mut pieces = Vec::new();
    let mut fixed = String::new();
    pieces.push(Piece::Text(expression.formula().to_owned()));
    let groups = split_by_term(expression, &roll.dice);
    if !groups.is_empty() {
        fixed.push(':');
    }
    for (sides, dice) in groups {
        fixed.push_str(" [");
        for (i, die) in dice.iter().enumerate() {
            if i > 0 {
                fixed.push_str(", ");
            }
            let face = face(sides, die);
            if die.kept {
                fixed.push_str(&face);
            } else {
                pieces.push(Piece::Fixed(std::mem::take(&mut fixed)));
                pieces.push(Piece::Struck(face));
            }
        }
        fixed.push(']');
    }
    let _ = write!(fixed, " = {}", roll.total);
    if let Some(comment) = expression.comment().filter(|c| !c.is_empty()) {
        fixed.push_str(" — ");
        pieces.push(Piece::Fixed(std::mem::take(&mut fixed)));
        pieces.push(Piece::Text(comment.to_owned()));
    }
    pieces.push(Piece::Fixed(fixed));
    pieces.retain(|piece| !matches!(piece, Piece::Fixed(text) if text.is_empty()));
    pieces
}

/// A die's face as shown: `+1` for a fudge die's plus, `!` after one drawn
/// by an explosion.
fn face(sides: Option<Sides>, die: &Die) -> String {
    let face = match sides {
        Some(Sides::Fudge) if die.value > 0 => format!("+{}", die.value),
        _ => die.value.to_string(),
    };
    if die.exploded { format!("{face}!") } else { face }
}
