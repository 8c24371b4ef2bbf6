//! Where each invalid dice vector is wrong, worked out by hand: one table
//! for the library's tests and the CLI's (which includes this file by path),
//! so that both hold the same positions.

/// Where each invalid vector of `rolls.json` is wrong, as README.md shows it
/// (`expected a number after 'd' at 3` for `2d`): the 1-based position of the
/// offending character, or one past the end when the text ends too soon.
/// Worked out by hand from docs/protocol.md §3's grammar and limits.
pub const INVALID_AT: &[(&str, usize)] = &[
    ("", 1),          // an operand is needed; the text ends at once
    ("d", 2),         // SIDES after the D
    ("2d", 3),        // README.md's own example
    ("0d6", 1),       // COUNT 0 is outside 1..1000; the count starts at 1
    ("1001d6", 1),    // COUNT 1001, likewise
    ("1d0", 3),       // SIDES 0 is outside 1..1 000 000; the sides start at 3
    ("1d1000001", 3), // SIDES 1 000 001, likewise
    ("1d6+", 5),      // a term after the '+'; the text ends at 5
    ("1d6kh1kl1", 7), // a second keep/drop modifier, at the 'k' of "kl1"
    ("1d1!", 4),      // the explosion '!': a d1's every face is its highest
    ("1d6!>=1", 4),   // the explosion '!': every face is >= 1
    ("1/0", 2),       // division by zero, at its operator (as crates/dice/tests/expressions.rs places overflows)
    ("(((1d6)", 8),   // the ')' for the '(' at 2 is missing; the end is at 8
    ("1d6)", 4),      // a ')' that closes nothing
    ("abc", 1),       // 'a' starts no number, dice term or '('
    ("2d6**2", 5),    // the second '*' where an operand is needed
];

/// The position an error message names last (`… at N`): the place of the
/// error, after any other place it mentions (`the '(' at 2, found the end
/// at 8`).
pub fn last_position(message: &str) -> Option<usize> {
    message
        .match_indices(" at ")
        .filter_map(|(i, _)| {
            let digits: String = message[i + 4..].chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .last()
}

/// The position [`INVALID_AT`] gives an invalid vector; a vector without
/// one fails until its position is worked out and added.
pub fn invalid_at(notation: &str) -> usize {
    INVALID_AT
        .iter()
        .find(|(text, _)| *text == notation)
        .map(|&(_, at)| at)
        .unwrap_or_else(|| panic!("no expected position for the invalid vector {notation:?}: work it out and add it"))
}
