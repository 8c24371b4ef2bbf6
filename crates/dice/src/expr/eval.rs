//! Evaluation in the protocol's draw order (docs/protocol.md §3, "Draw order").

use super::Limits;
use super::ast::{BinaryOp, DiceTerm, Expr, Expression, Keep, KeepKind};
use crate::record::{Die, Roll};
use crate::stream::{Faces, WordSource};

/// Why a parsed expression could not be evaluated. These depend on the dice
/// drawn (`1d6/(1d2-1)`), so the parser cannot catch them all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvalError {
    #[error("division by zero at {position}")]
    DivisionByZero { position: usize },
    #[error("arithmetic overflow at {position}: the result leaves the signed 64-bit range")]
    Overflow { position: usize },
}

/// Evaluates `expression`, drawing every die from `words` left to right,
/// depth first.
pub fn evaluate(expression: &Expression, words: &mut impl WordSource) -> Result<Roll, EvalError> {
    let (dice, total) = evaluate_keeping_dice(expression, words);
    Ok(Roll { total: total?, dice })
}

/// Evaluates like [`evaluate`] but hands back the dice drawn even when the
/// arithmetic fails. A roll service journals those dice with the error:
/// otherwise an expression that fails on some faces (`1/(1d2-1)`) would let
/// a caller probe the next faces without leaving a trace.
pub fn evaluate_keeping_dice(
    expression: &Expression,
    words: &mut impl WordSource,
) -> (Vec<Die>, Result<i64, EvalError>) {
    // Room for the dice once, rather than growing 4, 8, 16 … as they come.
    let mut dice = Vec::with_capacity(expression.dice_capacity());
    // Every die reads at least one word.
    words.will_read(expression.min_dice);
    let total = eval_node(&expression.root, words, &mut dice);
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
    // The rejection limit and the remainder's constant, once per term.
    let faces = Faces::new(term.sides.faces());
    let sides = term.sides;
    let draw = |words: &mut W| sides.value_of(faces.draw(words));
    let die = |value: i64, rerolled: bool, exploded: bool| Die {
        sides: sides.faces(),
        value,
        kept: !rerolled,
        rerolled,
        exploded,
    };
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
        apply_keep(keep, drawn);
    }

    let kept = drawn.iter().filter(|d| d.kept);
    match term.success {
        Some(success) => kept.filter(|d| success.met_by(d.value)).count() as i64,
        None => kept.map(|d| d.value).sum(),
    }
}

/// Marks the dice that keep/drop leaves out (docs/protocol.md §3, step 3).
///
/// The protocol's rule is a stable sort of the dice not rerolled by value
/// (highest first for `kh`/`dh`, lowest first for `kl`/`dl`), ties to the
/// earlier die; `kh`/`kl` keep its first `n`, `dh`/`dl` drop them. Ordering
/// by the pair (value, draw index) gives every die its place in that sort,
/// since the pairs are distinct: a die's place is the number of pairs below
/// its own. The pair is packed in one `u64` (value above, index in the low
/// 16 bits). A short term (up to 16 dice, `4d6kh3`) counts the pairs below
/// each die's without a branch to mispredict; a longer one finds the first
/// `n` by selection over the packed pairs on the stack (on the heap past 64
/// dice). No sort, no allocation below 65 dice, the same dice kept.
fn apply_keep(keep: Keep, drawn: &mut [Die]) {
    const COUNTED: usize = 16;
    const ON_STACK: usize = 64;
    let highest_first = matches!(keep.kind, KeepKind::KeepHighest | KeepKind::DropHighest);
    let keeps_first = matches!(keep.kind, KeepKind::KeepHighest | KeepKind::KeepLowest);
    let n = keep.n as usize;
    // Values are faces (−1 ..= 1 000 000), so the offset makes them
    // positive with room to spare; a term draws at most 2 × 1 000 + 100
    // dice, so an index fits in 16 bits.
    let pack = |i: usize, die: &Die| {
        let value = if highest_first { -die.value } else { die.value };
        ((value + (1 << 40)) as u64) << 16 | i as u64
    };
    let index = |packed: u64| (packed & 0xffff) as usize;

    if drawn.len() <= COUNTED {
        // Here an index needs 4 bits and a value shifted by 2^20 needs 21
        // (faces are at most 10^6 < 2^20), so the pair packs in 25 bits and
        // the comparisons run on signed 32-bit lanes, which SSE2 compares
        // natively. A rerolled die gets the largest key: none is above it.
        let mut keys = [i32::MAX; COUNTED];
        for (i, die) in drawn.iter().enumerate() {
            if !die.rerolled {
                let value = if highest_first { -die.value } else { die.value };
                keys[i] = ((value + (1 << 20)) as i32) << 4 | i as i32;
            }
        }
        let keys = &keys[..drawn.len()];
        for (die, &own) in drawn.iter_mut().zip(keys) {
            let place: usize = keys.iter().map(|&other| usize::from(other < own)).sum();
            // The first `n` places are kept by kh/kl, dropped by dh/dl.
            if !die.rerolled && (place < n) != keeps_first {
                die.kept = false;
            }
        }
        return;
    }

    let mut stack = [0u64; ON_STACK];
    let mut heap = Vec::new();
    let keys = drawn.iter().enumerate().filter(|(_, die)| !die.rerolled).map(|(i, die)| pack(i, die));
    let order: &mut [u64] = if drawn.len() <= ON_STACK {
        let mut len = 0;
        for key in keys {
            stack[len] = key;
            len += 1;
        }
        &mut stack[..len]
    } else {
        // Reserved at once: the filter's length is not known ahead.
        heap.reserve_exact(drawn.len());
        heap.extend(keys);
        &mut heap
    };
    let n = n.min(order.len());
    if n < order.len() {
        order.select_nth_unstable(n);
    }
    let dropped = if keeps_first { &order[n..] } else { &order[..n] };
    for &key in dropped {
        drawn[index(key)].kept = false;
    }
}
