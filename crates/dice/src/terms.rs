//! Which recorded die belongs to which dice term, worked out from the dice
//! flags alone, so a roll read back from a journal can be rendered and its
//! raw faces recovered without drawing anything.

use crate::expr::{Expression, Sides};
use crate::record::Die;

/// Splits the dice into their terms: each of a term's COUNT dice is one
/// die, plus its replacement when it was rerolled, plus the explosion dice
/// that follow it. Dice left over (a record that does not fit the
/// expression) form a last group of their own rather than vanish.
pub fn split_by_term<'a>(expression: &Expression, dice: &'a [Die]) -> Vec<(Option<Sides>, &'a [Die])> {
    let mut groups = Vec::new();
    let mut next = 0;
    for term in expression.dice_terms() {
        let start = next;
        for _ in 0..term.count {
            if next >= dice.len() {
                break;
            }
            if dice[next].rerolled {
                next += 1;
            }
            next += 1;
            while next < dice.len() && dice[next].exploded {
                next += 1;
            }
        }
        let end = next.min(dice.len());
        groups.push((Some(term.sides), &dice[start..end]));
    }
    if next < dice.len() {
        groups.push((None, &dice[next..]));
    }
    groups
}

/// The raw face of every die (`1..=sides`), in draw order: the value, or for
/// a fudge die the underlying d3 face (value + 2). This is what a word
/// source must hand out to draw the same dice again.
pub fn raw_faces(expression: &Expression, dice: &[Die]) -> Vec<u32> {
    split_by_term(expression, dice)
        .into_iter()
        .flat_map(|(sides, dice)| {
            let shift = if sides == Some(Sides::Fudge) { 2 } else { 0 };
            dice.iter().map(move |die| u32::try_from(die.value + shift).unwrap_or(0))
        })
        .collect()
}
