//! The dice expression language v1 (docs/protocol.md §3).
//!
//! - [`ast`]: the parsed form, with source positions for messages.
//! - [`parse`]: the parser and every static limit.
//! - [`eval`]: evaluation in the protocol's draw order.

pub mod ast;
pub mod eval;
pub mod parse;

pub use ast::{Cmp, Condition, DiceTerm, Expr, Expression, Keep, KeepKind, Sides};
pub use eval::{EvalError, evaluate, evaluate_keeping_dice};
pub use parse::ExprError;

/// The limits of docs/protocol.md §3, in one place so messages and checks agree.
#[derive(Debug, Clone, Copy)]
pub struct Limits;

impl Limits {
    pub const MAX_EXPRESSION_BYTES: usize = 1_000;
    pub const MAX_COUNT: u32 = 1_000;
    pub const MAX_SIDES: u32 = crate::stream::MAX_SIDES;
    pub const MAX_DICE_PER_ROLL: u64 = 10_000;
    pub const MAX_EXPLOSIONS_PER_TERM: u32 = 100;
    pub const MAX_NESTING: usize = 32;
}
