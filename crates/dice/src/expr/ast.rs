//! The parsed form of a dice expression.

use std::fmt;

/// A parsed expression with its source text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expression {
    pub(crate) source: Source,
    pub(crate) root: Expr,
    pub(crate) comment: Option<String>,
    /// The worst case of [`Expression::max_dice`], summed as the parser made
    /// the terms.
    pub(crate) max_dice: u64,
    /// The dice every roll draws at least (each term's COUNT): with
    /// `max_dice`, what the evaluation reserves for the record.
    pub(crate) min_dice: u64,
}

impl Expression {
    /// The text as given.
    pub fn source(&self) -> &str {
        match (&self.source, &self.root) {
            (Source::Own(text), _) => text,
            (Source::Term, Expr::Dice(term)) => &term.text,
            // The parser makes `Source::Term` only for a lone dice term.
            (Source::Term, _) => "",
        }
    }

    /// The part before `#`, trimmed.
    pub fn formula(&self) -> &str {
        self.source().split('#').next().unwrap_or_default().trim()
    }

    /// The text after `#`, trimmed; `None` without one.
    pub fn comment(&self) -> Option<&str> {
        self.comment.as_deref()
    }

    pub fn root(&self) -> &Expr {
        &self.root
    }

    /// The dice terms in evaluation (draw) order.
    pub fn dice_terms(&self) -> Vec<&DiceTerm> {
        let mut terms = Vec::new();
        self.root.collect_dice_terms(&mut terms);
        terms
    }

    /// The most dice this expression can ever draw: every die rerolled and
    /// every explosion budget spent. The parser refuses expressions whose
    /// worst case passes the per-roll limit, so the limit holds for every seed.
    pub fn max_dice(&self) -> u64 {
        self.max_dice
    }

    /// How many dice the evaluation makes room for at once: the worst case
    /// when it is small (one allocation, whatever the seed), otherwise the
    /// dice every roll draws, so that a `1000d6r1` does not hold room for
    /// a thousand rerolls it will mostly not make.
    pub(crate) fn dice_capacity(&self) -> usize {
        const SMALL: u64 = 256;
        let dice = if self.max_dice <= SMALL { self.max_dice } else { self.min_dice };
        // Both are at most the per-roll limit (10 000), checked by the parser.
        usize::try_from(dice).unwrap_or(0)
    }
}

/// Where an [`Expression`] keeps its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Source {
    /// A copy of its own.
    Own(String),
    /// The text is one dice term and nothing else (`4d6kh3`, the most
    /// common roll): the term's text is the whole text, kept once rather
    /// than copied twice (one allocation fewer per parse).
    Term,
}

/// A node of the expression tree. `at` is the 1-based character position of
/// the operator, for messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expr {
    Number(i64),
    Dice(DiceTerm),
    Negate { operand: Box<Expr>, at: usize },
    Binary { op: BinaryOp, lhs: Box<Expr>, rhs: Box<Expr>, at: usize },
}

impl Expr {
    fn collect_dice_terms<'a>(&'a self, out: &mut Vec<&'a DiceTerm>) {
        match self {
            Expr::Number(_) => {}
            Expr::Dice(term) => out.push(term),
            Expr::Negate { operand, .. } => operand.collect_dice_terms(out),
            Expr::Binary { lhs, rhs, .. } => {
                lhs.collect_dice_terms(out);
                rhs.collect_dice_terms(out);
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryOp {
    Add,
    Subtract,
    Multiply,
    /// Truncates toward zero.
    Divide,
}

/// One `[COUNT] d SIDES {modifier} [cmp INT]` term.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiceTerm {
    pub count: u32,
    pub sides: Sides,
    pub explode: Option<Condition>,
    pub reroll: Option<Condition>,
    pub keep: Option<Keep>,
    /// A trailing comparison: the term counts the kept dice that meet it.
    pub success: Option<Condition>,
    /// The term's text, for the rendering.
    pub text: String,
}

impl DiceTerm {
    pub fn max_dice(&self) -> u64 {
        let per_die = if self.reroll.is_some() { 2 } else { 1 };
        let explosions = if self.explode.is_some() { super::Limits::MAX_EXPLOSIONS_PER_TERM } else { 0 };
        u64::from(self.count) * per_die + u64::from(explosions)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sides {
    Number(u32),
    /// `dF`: a d3 shifted to −1, 0, +1.
    Fudge,
}

impl Sides {
    /// Faces of the underlying die.
    pub fn faces(self) -> u32 {
        match self {
            Sides::Number(n) => n,
            Sides::Fudge => 3,
        }
    }

    /// The value a face shows.
    pub fn value_of(self, face: u32) -> i64 {
        match self {
            Sides::Number(_) => i64::from(face),
            Sides::Fudge => i64::from(face) - 2,
        }
    }

    pub fn lowest(self) -> i64 {
        self.value_of(1)
    }

    pub fn highest(self) -> i64 {
        self.value_of(self.faces())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    GreaterOrEqual,
    LessOrEqual,
    Greater,
    Less,
    Equal,
}

impl fmt::Display for Cmp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Cmp::GreaterOrEqual => ">=",
            Cmp::LessOrEqual => "<=",
            Cmp::Greater => ">",
            Cmp::Less => "<",
            Cmp::Equal => "=",
        })
    }
}

/// A comparison of a die's value with a constant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Condition {
    pub cmp: Cmp,
    pub value: i64,
}

impl Condition {
    pub fn met_by(self, value: i64) -> bool {
        match self.cmp {
            Cmp::GreaterOrEqual => value >= self.value,
            Cmp::LessOrEqual => value <= self.value,
            Cmp::Greater => value > self.value,
            Cmp::Less => value < self.value,
            Cmp::Equal => value == self.value,
        }
    }

    /// Whether every face of the die meets the condition (an explosion that
    /// could never stop).
    pub fn met_by_every_face(self, sides: Sides) -> bool {
        // Conditions are monotone or a single point, so the two extreme
        // faces decide it.
        self.met_by(sides.lowest()) && self.met_by(sides.highest()) && (self.cmp != Cmp::Equal || sides.faces() == 1)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeepKind {
    KeepHighest,
    KeepLowest,
    DropHighest,
    DropLowest,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keep {
    pub kind: KeepKind,
    pub n: u32,
}
