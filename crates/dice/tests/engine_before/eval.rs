//! The evaluation as it was before the optimisation of issue 24, verbatim
//! but for taking the tree rather than an `Expression`, and the word stream
//! and die as they were: `rand_chacha`'s generator and `u64` arithmetic.

use dice::expr::Limits;
use dice::expr::ast::{BinaryOp, DiceTerm, Expr, KeepKind};
use dice::{Die, EvalError, RollKey, WordSource};
use rand_chacha::ChaCha20Rng;
use rand_core::{Rng, SeedableRng};

/// `rand_chacha::ChaCha20Rng::from_seed(roll_key)` + `set_stream(nonce)` +
/// `next_u32()`: docs/protocol.md §2's own words for the stream.
pub struct ReferenceStream(ChaCha20Rng);

impl ReferenceStream {
    pub fn new(key: &RollKey, nonce: u64) -> Self {
        let mut rng = ChaCha20Rng::from_seed(*key.as_bytes());
        rng.set_stream(nonce);
        Self(rng)
    }
}

impl WordSource for ReferenceStream {
    fn next_word(&mut self) -> u32 {
        self.0.next_u32()
    }
}

/// The die as it was drawn: `u64` arithmetic, the limit worked out per die.
pub fn draw_die(words: &mut impl WordSource, sides: u32) -> u32 {
    let sides = u64::from(sides);
    let span = 1u64 << 32;
    let limit = span - span % sides;
    loop {
        let word = u64::from(words.next_word());
        if word < limit {
            return (1 + word % sides) as u32;
        }
    }
}

/// Evaluates like `evaluate` but hands back the dice drawn even when the
/// arithmetic fails. A roll service journals those dice with the error:
/// otherwise an expression that fails on some faces (`1/(1d2-1)`) would let
/// a caller probe the next faces without leaving a trace.
pub fn evaluate_keeping_dice(root: &Expr, words: &mut impl WordSource) -> (Vec<Die>, Result<i64, EvalError>) {
    let mut dice = Vec::new();
    let total = eval_node(root, words, &mut dice);
    (dice, total)
}

fn eval_node(node: &Expr, words: &mut impl WordSource, dice: &mut Vec<Die>) -> Result<i64, EvalError> {
    match node {
        Expr::Number(n) => Ok(*n),
        Expr::Dice(term) => Ok(roll_term(term, words, dice)),
        Expr::Negate { operand, at } => {
            eval_node(operand, words, dice)?.checked_neg().ok_or(EvalError::Overflow { position: *at })
        }
        Expr::Binary { op, lhs, rhs, at } => {
            // The whole left operand draws before the right one.
            let left = eval_node(lhs, words, dice)?;
            let right = eval_node(rhs, words, dice)?;
            let overflow = EvalError::Overflow { position: *at };
            match op {
                BinaryOp::Add => left.checked_add(right).ok_or(overflow),
                BinaryOp::Subtract => left.checked_sub(right).ok_or(overflow),
                BinaryOp::Multiply => left.checked_mul(right).ok_or(overflow),
                BinaryOp::Divide if right == 0 => Err(EvalError::DivisionByZero { position: *at }),
                // `checked_div` truncates toward zero and fails only on MIN / -1.
                BinaryOp::Divide => left.checked_div(right).ok_or(overflow),
            }
        }
    }
}

/// Draws one dice term and returns its value. Cannot overflow: at most
/// 1 100 dice of at most a million faces each.
fn roll_term<W: WordSource>(term: &DiceTerm, words: &mut W, dice: &mut Vec<Die>) -> i64 {
    let faces = term.sides.faces();
    let draw = |words: &mut W| term.sides.value_of(draw_die(words, faces));
    let die =
        |value: i64, rerolled: bool, exploded: bool| Die { sides: faces, value, kept: !rerolled, rerolled, exploded };
    let first = dice.len();
    let mut explosions_left = Limits::MAX_EXPLOSIONS_PER_TERM;
    for _ in 0..term.count {
        let mut value = draw(words);
        if term.reroll.is_some_and(|reroll| reroll.met_by(value)) {
            dice.push(die(value, true, false));
            value = draw(words);
        }
        dice.push(die(value, false, false));
        while explosions_left > 0 && term.explode.is_some_and(|explode| explode.met_by(value)) {
            explosions_left -= 1;
            value = draw(words);
            dice.push(die(value, false, true));
        }
    }
    let drawn = &mut dice[first..];

    if let Some(keep) = term.keep {
        let mut order: Vec<usize> = (0..drawn.len()).filter(|&i| !drawn[i].rerolled).collect();
        let highest_first = matches!(keep.kind, KeepKind::KeepHighest | KeepKind::DropHighest);
        // A stable sort keeps earlier-drawn dice first among equal values:
        // they are kept first by kh/kl and dropped first by dh/dl.
        if highest_first {
            order.sort_by_key(|&i| std::cmp::Reverse(drawn[i].value));
        } else {
            order.sort_by_key(|&i| drawn[i].value);
        }
        let n = (keep.n as usize).min(order.len());
        let dropped = match keep.kind {
            KeepKind::KeepHighest | KeepKind::KeepLowest => &order[n..],
            KeepKind::DropHighest | KeepKind::DropLowest => &order[..n],
        };
        for &i in dropped {
            drawn[i].kept = false;
        }
    }

    let kept = drawn.iter().filter(|d| d.kept);
    match term.success {
        Some(success) => kept.filter(|d| success.met_by(d.value)).count() as i64,
        None => kept.map(|d| d.value).sum(),
    }
}
