//! Target `dice_expression`: the dice expression parser and evaluator of
//! crates/dice, on any text a forum may send.
//!
//! Properties, beyond "no panic":
//! - an accepted expression stays within the static limits (length, dice
//!   per roll), and every error message formats;
//! - rendered back to text in a canonical form (written here from the
//!   grammar of docs/protocol.md §3, not by the crate), it parses to the same
//!   tree and comment: nothing the parser accepts is lost or changed by
//!   writing it out again;
//! - evaluated twice from the same words, it draws the same dice and
//!   total; every die lies within its die's faces; no more dice are drawn
//!   than [`dice::Expression::max_dice`] promises; and the canonical text
//!   draws exactly the same dice as the original.

use std::fmt::Write;

use dice::expr::ast::BinaryOp;
use dice::expr::{Cmp, Condition, DiceTerm, Expr, Expression, KeepKind, Limits, Sides};
use dice::{Die, RollKey, RollStream, ServerSeed, WordSource, evaluate_keeping_dice};

/// Runs the target on one input.
pub fn run(data: &[u8]) {
    // Forums send text: invalid UTF-8 never reaches the parser, but the
    // replacement character does, so the lossy text is what to parse.
    let text = String::from_utf8_lossy(data);
    let parsed = match Expression::parse(&text) {
        Ok(parsed) => parsed,
        Err(error) => {
            let message = error.to_string();
            assert!(!message.is_empty(), "an empty error message for {text:?}");
            return;
        }
    };
    assert!(text.len() <= Limits::MAX_EXPRESSION_BYTES, "{} bytes accepted", text.len());
    assert!(parsed.max_dice() <= Limits::MAX_DICE_PER_ROLL, "{text:?} may draw {} dice", parsed.max_dice());

    let canonical = canonical(&parsed);
    let reparsed = Expression::parse(&canonical)
        .unwrap_or_else(|e| panic!("{text:?} parses, its canonical form {canonical:?} does not: {e}"));
    assert_eq!(
        Shape::of(parsed.root()),
        Shape::of(reparsed.root()),
        "{text:?} and its canonical form {canonical:?} parse to different trees"
    );
    assert_eq!(parsed.comment(), reparsed.comment(), "the comment of {text:?} changed in {canonical:?}");

    // Words from the input itself (rejection sampling's edge: words near
    // u32::MAX), then from the protocol's stream.
    let from_input = || InputWords { data: data.to_vec(), next: 0 };
    check_evaluation(&parsed, &reparsed, from_input(), from_input());
    let key = RollKey::derive(&ServerSeed::from_bytes([0x5a; 32]), "fuzz");
    check_evaluation(&parsed, &reparsed, RollStream::new(&key, 7), RollStream::new(&key, 7));
}

fn check_evaluation(parsed: &Expression, reparsed: &Expression, mut a: impl WordSource, mut b: impl WordSource) {
    let (dice, total) = evaluate_keeping_dice(parsed, &mut a);
    let (again, total_again) = evaluate_keeping_dice(reparsed, &mut b);
    assert_eq!(dice, again, "the canonical form drew other dice");
    // Errors carry positions, which differ between the two texts.
    assert_eq!(total.as_ref().ok(), total_again.as_ref().ok(), "the canonical form gave another total");
    assert!(
        dice.len() as u64 <= parsed.max_dice(),
        "{} dice drawn, at most {} promised",
        dice.len(),
        parsed.max_dice()
    );
    let faces: Vec<u32> = parsed.dice_terms().iter().map(|t| t.sides.faces()).collect();
    for die in &dice {
        assert!(faces.contains(&die.sides), "a d{} drawn for terms of {faces:?} faces", die.sides);
        assert!(in_range(die), "{die:?} shows a face its die does not have");
    }
    if let Ok(total) = total {
        let _ = dice::render(parsed, &dice::Roll { total, dice });
    }
}

/// A die's value lies on one of its faces (a fudge die, a d3, shows −1..=1).
fn in_range(die: &Die) -> bool {
    let plain = (1..=i64::from(die.sides)).contains(&die.value);
    let fudge = die.sides == 3 && (-1..=1).contains(&die.value);
    plain || fudge
}

/// The input's bytes as little-endian words, cycled, then zeros (a zero is
/// never rejected, so every evaluation ends).
struct InputWords {
    data: Vec<u8>,
    next: usize,
}

impl WordSource for InputWords {
    fn next_word(&mut self) -> u32 {
        let start = self.next * 4;
        self.next += 1;
        match self.data.get(start..start + 4) {
            Some(bytes) => u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]),
            None => 0,
        }
    }
}

/// The tree without source positions and term texts, which the two texts
/// cannot share.
#[derive(Debug, PartialEq, Eq)]
enum Shape {
    Number(i64),
    Dice(DiceTerm),
    Negate(Box<Shape>),
    Binary(BinaryOp, Box<Shape>, Box<Shape>),
}

impl Shape {
    fn of(expr: &Expr) -> Shape {
        match expr {
            Expr::Number(n) => Shape::Number(*n),
            Expr::Dice(term) => Shape::Dice(DiceTerm { text: String::new(), ..term.clone() }),
            Expr::Negate { operand, .. } => Shape::Negate(Box::new(Shape::of(operand))),
            Expr::Binary { op, lhs, rhs, .. } => Shape::Binary(*op, Box::new(Shape::of(lhs)), Box::new(Shape::of(rhs))),
        }
    }
}

/// The expression written out again, in the grammar's shortest spelling:
/// no spaces, only the parentheses precedence needs, `d` for every dice
/// letter, defaults left out. Never longer than any text that parses to the
/// same tree, and never nested deeper, so the parser's limits cannot refuse
/// it when they accepted the original.
pub fn canonical(expression: &Expression) -> String {
    let mut out = String::new();
    write_expr(&mut out, expression.root());
    if let Some(comment) = expression.comment() {
        out.push('#');
        out.push_str(comment);
    }
    out
}

/// Binding strength: sums 1, products 2, negation and atoms 3.
fn precedence(expr: &Expr) -> u8 {
    match expr {
        Expr::Binary { op: BinaryOp::Add | BinaryOp::Subtract, .. } => 1,
        Expr::Binary { .. } => 2,
        _ => 3,
    }
}

fn write_operand(out: &mut String, expr: &Expr, parenthesize: bool) {
    if parenthesize {
        out.push('(');
        write_expr(out, expr);
        out.push(')');
    } else {
        write_expr(out, expr);
    }
}

fn write_expr(out: &mut String, expr: &Expr) {
    match expr {
        Expr::Number(n) => {
            let _ = write!(out, "{n}");
        }
        Expr::Dice(term) => write_term(out, term),
        Expr::Negate { operand, .. } => {
            out.push('-');
            write_operand(out, operand, precedence(operand) < 3);
        }
        Expr::Binary { op, lhs, rhs, .. } => {
            let own = precedence(expr);
            // Left-associative: the left operand may be of equal strength,
            // the right one must bind tighter.
            write_operand(out, lhs, precedence(lhs) < own);
            out.push(match op {
                BinaryOp::Add => '+',
                BinaryOp::Subtract => '-',
                BinaryOp::Multiply => '*',
                BinaryOp::Divide => '/',
            });
            write_operand(out, rhs, precedence(rhs) <= own);
        }
    }
}

fn write_term(out: &mut String, term: &DiceTerm) {
    if term.count != 1 {
        let _ = write!(out, "{}", term.count);
    }
    out.push('d');
    match term.sides {
        Sides::Fudge => out.push('F'),
        Sides::Number(100) => out.push('%'),
        Sides::Number(n) => {
            let _ = write!(out, "{n}");
        }
    }
    if let Some(explode) = term.explode {
        out.push('!');
        let default = Condition { cmp: Cmp::Equal, value: term.sides.highest() };
        // A bare `!` directly before a success comparison would read that
        // comparison as its own condition: then the condition is written.
        let bare_before_success = term.reroll.is_none() && term.keep.is_none() && term.success.is_some();
        if explode != default || bare_before_success {
            write_condition(out, explode);
        }
    }
    if let Some(reroll) = term.reroll {
        out.push('r');
        // `r` without a comparison means `=`.
        if reroll.cmp == Cmp::Equal {
            let _ = write!(out, "{}", reroll.value);
        } else {
            write_condition(out, reroll);
        }
    }
    if let Some(keep) = term.keep {
        out.push_str(match keep.kind {
            KeepKind::KeepHighest => "kh",
            KeepKind::KeepLowest => "kl",
            KeepKind::DropHighest => "dh",
            KeepKind::DropLowest => "dl",
        });
        if keep.n != 1 {
            let _ = write!(out, "{}", keep.n);
        }
    }
    if let Some(success) = term.success {
        write_condition(out, success);
    }
}

fn write_condition(out: &mut String, condition: Condition) {
    let _ = write!(out, "{}{}", condition.cmp, condition.value);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canonical_of(text: &str) -> String {
        canonical(&Expression::parse(text).expect("valid"))
    }

    /// Expected spellings worked out by hand from docs/protocol.md §3's grammar.
    #[test]
    fn canonical_forms_are_the_shortest_spelling() {
        assert_eq!(canonical_of(" 1д6 + 2 "), "d6+2");
        assert_eq!(canonical_of("4d100kh1"), "4d%kh");
        assert_eq!(canonical_of("(1+2)*3"), "(1+2)*3");
        assert_eq!(canonical_of("1-(2-3)"), "1-(2-3)");
        assert_eq!(canonical_of("(1-2)-3"), "1-2-3");
        assert_eq!(canonical_of("-(-(2))"), "--2");
        assert_eq!(canonical_of("4d6!=6>=5"), "4d6!=6>=5");
        assert_eq!(canonical_of("4d6r=1!"), "4d6!r1");
        assert_eq!(canonical_of("dF # look out "), "dF#look out");
    }

    #[test]
    fn the_target_accepts_its_own_examples() {
        for text in ["4d6kh3", "1/(1d2-1)", "10d10!>8r<2dl2>=7 # all of it", "", "(", "d0"] {
            run(text.as_bytes());
        }
    }
}
