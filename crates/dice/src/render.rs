//! The one-line rendering of a roll for a forum post, e.g.
//! `4d6kh3: [6, 5, 3, ~~1~~] = 14`.
//!
//! Dice not counted (dropped or rerolled) are struck through with `~~`,
//! which forum markup and Markdown both show as strikethrough; a die drawn
//! by an explosion carries a trailing `!`. Fudge dice show as `-1`, `0`, `+1`.

use std::fmt::Write;

use crate::expr::{Expression, Sides};
use crate::record::{Die, Roll};
use crate::terms::split_by_term;

/// Renders `roll` of `expression`: one bracket of dice per dice term, in
/// draw order, then the total and the comment if there is one.
///
/// Works from the recorded dice alone (their flags say which term each die
/// belongs to), so a roll read back from a journal renders the same.
pub fn render(expression: &Expression, roll: &Roll) -> String {
    let mut line = expression.formula().to_owned();
    let groups = split_by_term(expression, &roll.dice);
    if !groups.is_empty() {
        line.push(':');
    }
    for (sides, dice) in groups {
        line.push_str(" [");
        for (i, die) in dice.iter().enumerate() {
            if i > 0 {
                line.push_str(", ");
            }
            write_die(&mut line, sides, die);
        }
        line.push(']');
    }
    let _ = write!(line, " = {}", roll.total);
    if let Some(comment) = expression.comment().filter(|c| !c.is_empty()) {
        let _ = write!(line, " — {comment}");
    }
    line
}

fn write_die(line: &mut String, sides: Option<Sides>, die: &Die) {
    let face = match sides {
        Some(Sides::Fudge) if die.value > 0 => format!("+{}", die.value),
        _ => die.value.to_string(),
    };
    let mark = if die.exploded { "!" } else { "" };
    if die.kept {
        let _ = write!(line, "{face}{mark}");
    } else {
        let _ = write!(line, "~~{face}{mark}~~");
    }
}
