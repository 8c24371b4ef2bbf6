//! The parser of dice expressions v1 and every static limit of docs/protocol.md §3.
//!
//! Positions in messages are 1-based character columns, so a forum user
//! can count them on the text they typed (Cyrillic letters included).
//!
//! The parser walks the text's bytes: every token of the grammar is ASCII
//! but the Cyrillic dice letters, so it decodes a character only where a
//! byte is not ASCII, and it turns a byte offset into a column only when a
//! node or a message needs one (for ASCII text, offset + 1). It allocates
//! the expression's own copy of the text, each dice term's text and the
//! boxes of the tree, nothing else (`tests/allocations.rs`).

use super::Limits;
use super::ast::{BinaryOp, Cmp, Condition, DiceTerm, Expr, Expression, Keep, KeepKind, Sides, Source};

/// Why an expression was not accepted. Every message names what is wrong,
/// where, and the limit when one was passed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExprError {
    #[error("{message} at {position}")]
    Syntax { message: String, position: usize },
    #[error("expression is {bytes} bytes long; the limit is {limit} bytes")]
    TooLong { bytes: usize, limit: usize },
    #[error("{what} {value} at {position} is outside the allowed {min}..={max}")]
    OutOfRange { what: &'static str, value: String, position: usize, min: u64, max: u64 },
    #[error("a dice term takes at most one {modifier} modifier; another one is at {position}")]
    RepeatedModifier { modifier: &'static str, position: usize },
    #[error("the explosion condition at {position} is met by every face of a d{faces}, so it would never stop")]
    EndlessExplosion { position: usize, faces: u32 },
    #[error(
        "the expression may draw up to {dice} dice (rerolls and explosions included); the limit is {limit} dice per roll"
    )]
    TooManyDice { dice: u64, limit: u64 },
    #[error("nesting deeper than {limit} levels at {position}")]
    TooDeep { position: usize, limit: usize },
}

impl Expression {
    /// Parses `source` and checks every static limit; nothing is drawn.
    pub fn parse(source: &str) -> Result<Self, ExprError> {
        if source.len() > Limits::MAX_EXPRESSION_BYTES {
            return Err(ExprError::TooLong { bytes: source.len(), limit: Limits::MAX_EXPRESSION_BYTES });
        }
        let mut parser = Parser {
            source,
            bytes: source.as_bytes(),
            ascii: source.is_ascii(),
            pos: 0,
            depth: 0,
            dice: 0,
            min_dice: 0,
        };
        let first = parser.first_atom()?;
        let lone = first.is_some() && parser.pos == parser.bytes.len();
        let root = match first {
            Some(atom) if lone => atom,
            first => parser.expr_after(first)?,
        };
        parser.skip_space()?;
        let comment = match parser.peek() {
            None => None,
            Some('#') => {
                let start = parser.pos + 1;
                let text = &source[start..];
                // The comment is pasted into forum posts and printed on
                // terminals with the roll (`render`): an escape or a bell in
                // it would act there, a line break would forge a line.
                if let Some((offset, c)) = text.char_indices().find(|(_, c)| c.is_control()) {
                    parser.pos = start + offset;
                    return Err(parser.syntax(&format!("the comment holds {}", describe(c))));
                }
                Some(text.trim().to_owned())
            }
            Some(')') => return Err(parser.syntax("unmatched ')'")),
            Some(c) => return Err(parser.syntax(&format!("unexpected {}", describe(c)))),
        };
        // The worst case was summed term by term as the terms were parsed:
        // the same sum as `max_dice`, without walking the tree again.
        let dice = parser.dice;
        if dice > Limits::MAX_DICE_PER_ROLL {
            return Err(ExprError::TooManyDice { dice, limit: Limits::MAX_DICE_PER_ROLL });
        }
        // A lone dice term's text is the whole text (the atom ended at its end).
        let source = if lone && matches!(root, Expr::Dice(_)) { Source::Term } else { Source::Own(source.to_owned()) };
        Ok(Expression { source, root, comment, max_dice: dice, min_dice: parser.min_dice })
    }
}

struct Parser<'a> {
    source: &'a str,
    bytes: &'a [u8],
    /// Whether every character is one byte, so that a column is an offset + 1.
    ascii: bool,
    /// Byte offset into `source`, always at a character boundary.
    pos: usize,
    depth: usize,
    /// The most dice the terms parsed so far may draw (`DiceTerm::max_dice`).
    dice: u64,
    /// The dice the terms parsed so far always draw (their COUNTs).
    min_dice: u64,
}

fn is_dice_letter(c: char) -> bool {
    matches!(c, 'd' | 'D' | 'д' | 'Д')
}

/// The value of a run of ASCII digits (leading zeros allowed), or `None`
/// past `u64::MAX`: what `str::parse` gives for such a run, without its
/// sign and error handling, which the grammar never needs.
fn decimal(digits: &str) -> Option<u64> {
    digits.bytes().try_fold(0u64, |value, digit| value.checked_mul(10)?.checked_add(u64::from(digit - b'0')))
}

fn describe(c: char) -> String {
    if c.is_control() { format!("control character U+{:04X}", u32::from(c)) } else { format!("'{c}'") }
}

impl<'a> Parser<'a> {
    /// The character at the current offset.
    #[inline]
    fn peek(&self) -> Option<char> {
        match self.bytes.get(self.pos) {
            Some(&b) if b.is_ascii() => Some(char::from(b)),
            Some(_) => self.source[self.pos..].chars().next(),
            None => None,
        }
    }

    /// The byte after the current one. Only asked when the current
    /// character is ASCII and for ASCII bytes, so a byte of a multi-byte
    /// character never matches.
    #[inline]
    fn peek_next_byte(&self) -> Option<u8> {
        self.bytes.get(self.pos + 1).copied()
    }

    #[inline]
    fn peek_byte(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn peek_is_digit(&self) -> bool {
        self.peek_byte().is_some_and(|b| b.is_ascii_digit())
    }

    /// The 1-based character column of byte offset `at`.
    fn column_of(&self, at: usize) -> usize {
        if self.ascii { at + 1 } else { self.source[..at].chars().count() + 1 }
    }

    fn column(&self) -> usize {
        self.column_of(self.pos)
    }

    fn syntax(&self, message: &str) -> ExprError {
        ExprError::Syntax { message: message.to_owned(), position: self.column() }
    }

    fn found(&self) -> String {
        match self.peek() {
            None => "the end".to_owned(),
            Some(c) => describe(c),
        }
    }

    /// Spaces and tabs may stand between tokens, never inside a dice term.
    /// Other control characters are refused here so that the message names
    /// them rather than a confusing token.
    fn skip_space(&mut self) -> Result<(), ExprError> {
        while let Some(b) = self.peek_byte() {
            match b {
                b' ' | b'\t' => self.pos += 1,
                // ASCII controls (C0 and DEL); C1 controls are two bytes.
                b if b.is_ascii_control() => {
                    return Err(self.syntax(&format!("unexpected {}", describe(char::from(b)))));
                }
                b if b.is_ascii() => break,
                _ => match self.peek() {
                    Some(c) if c.is_control() => return Err(self.syntax(&format!("unexpected {}", describe(c)))),
                    _ => break,
                },
            }
        }
        Ok(())
    }

    /// Goes one level deeper for the '(' or '-' at column `at`.
    fn enter(&mut self, at: usize) -> Result<(), ExprError> {
        self.depth += 1;
        if self.depth > Limits::MAX_NESTING {
            return Err(ExprError::TooDeep { position: at, limit: Limits::MAX_NESTING });
        }
        Ok(())
    }

    /// The atom the text starts with, if it starts with one. The most
    /// common text is one dice term and nothing else (`4d6kh3`): parsed as
    /// an atom straight away, it skips the three levels of descent above
    /// it, each of which would move the 96-byte node once more. The full
    /// descent would reach the same atom first, with nothing to skip before
    /// it, so the atom and any error in it are the same; when more text
    /// follows, the descent goes on from it ([`Parser::expr_after`]).
    fn first_atom(&mut self) -> Result<Option<Expr>, ExprError> {
        let starts_an_atom = match self.peek() {
            Some(c) => c.is_ascii_digit() || is_dice_letter(c),
            None => false,
        };
        if starts_an_atom { self.atom().map(Some) } else { Ok(None) }
    }

    fn expr(&mut self) -> Result<Expr, ExprError> {
        self.expr_after(None)
    }

    /// An expression whose first atom, if given, was parsed already.
    fn expr_after(&mut self, first: Option<Expr>) -> Result<Expr, ExprError> {
        let mut lhs = self.term_after(first)?;
        loop {
            self.skip_space()?;
            let op = match self.peek_byte() {
                Some(b'+') => BinaryOp::Add,
                Some(b'-') => BinaryOp::Subtract,
                _ => return Ok(lhs),
            };
            let at = self.column();
            self.pos += 1;
            let rhs = self.term()?;
            lhs = Expr::Binary { op, lhs: Box::new(lhs), rhs: Box::new(rhs), at };
        }
    }

    fn term(&mut self) -> Result<Expr, ExprError> {
        self.term_after(None)
    }

    /// A term whose first atom, if given, was parsed already: the unary
    /// level would only have passed it through.
    fn term_after(&mut self, first: Option<Expr>) -> Result<Expr, ExprError> {
        let mut lhs = match first {
            Some(atom) => atom,
            None => self.unary()?,
        };
        loop {
            self.skip_space()?;
            let op = match self.peek_byte() {
                Some(b'*') => BinaryOp::Multiply,
                Some(b'/') => BinaryOp::Divide,
                _ => return Ok(lhs),
            };
            let at = self.column();
            self.pos += 1;
            let rhs = self.unary()?;
            lhs = Expr::Binary { op, lhs: Box::new(lhs), rhs: Box::new(rhs), at };
        }
    }

    fn unary(&mut self) -> Result<Expr, ExprError> {
        self.skip_space()?;
        if self.peek_byte() == Some(b'-') {
            let at = self.column();
            self.pos += 1;
            self.enter(at)?;
            let operand = self.unary()?;
            self.depth -= 1;
            return Ok(Expr::Negate { operand: Box::new(operand), at });
        }
        self.atom()
    }

    fn atom(&mut self) -> Result<Expr, ExprError> {
        match self.peek() {
            Some('(') => {
                let open = self.column();
                self.pos += 1;
                self.enter(open)?;
                let inner = self.expr()?;
                self.skip_space()?;
                if self.peek_byte() != Some(b')') {
                    return Err(
                        self.syntax(&format!("expected ')' to close the '(' at {open}, found {}", self.found()))
                    );
                }
                self.pos += 1;
                self.depth -= 1;
                Ok(inner)
            }
            Some(c) if c.is_ascii_digit() => {
                let start = self.pos;
                let digits = self.digits();
                if self.peek().is_some_and(is_dice_letter) {
                    let count = self.bounded(digits, start, "dice count", 1, Limits::MAX_COUNT)?;
                    self.dice(start, count)
                } else {
                    let value =
                        decimal(digits).and_then(|n| i64::try_from(n).ok()).ok_or_else(|| ExprError::OutOfRange {
                            what: "number",
                            value: digits.to_owned(),
                            position: self.column_of(start),
                            min: 0,
                            max: i64::MAX as u64,
                        })?;
                    Ok(Expr::Number(value))
                }
            }
            Some(c) if is_dice_letter(c) => self.dice(self.pos, 1),
            _ => Err(self.syntax(&format!("expected a number, a dice term or '(', found {}", self.found()))),
        }
    }

    /// The run of ASCII digits at the current offset, consumed.
    fn digits(&mut self) -> &'a str {
        let start = self.pos;
        while self.peek_is_digit() {
            self.pos += 1;
        }
        &self.source[start..self.pos]
    }

    /// Parses `digits` (which start at byte offset `start`) as a number in `min..=max`.
    fn bounded(&self, digits: &str, start: usize, what: &'static str, min: u32, max: u32) -> Result<u32, ExprError> {
        let value = decimal(digits).and_then(|n| u32::try_from(n).ok());
        value.filter(|n| (min..=max).contains(n)).ok_or_else(|| ExprError::OutOfRange {
            what,
            value: digits.to_owned(),
            position: self.column_of(start),
            min: u64::from(min),
            max: u64::from(max),
        })
    }

    /// `self.pos` is at the dice letter; the term's text starts at `start`.
    fn dice(&mut self, start: usize, count: u32) -> Result<Expr, ExprError> {
        let letter = self.peek().unwrap_or('d');
        self.pos += letter.len_utf8();
        let sides = self.sides(letter)?;
        let mut term =
            DiceTerm { count, sides, explode: None, reroll: None, keep: None, success: None, text: String::new() };
        loop {
            let at = self.pos;
            match (self.peek_byte(), self.peek_next_byte()) {
                (Some(b'!'), _) => {
                    self.pos += 1;
                    term.explode = Some(self.explode(&term, at)?);
                }
                (Some(b'r'), _) => {
                    self.pos += 1;
                    if term.reroll.is_some() {
                        return Err(ExprError::RepeatedModifier {
                            modifier: "reroll ('r')",
                            position: self.column_of(at),
                        });
                    }
                    let cmp = self.cmp().unwrap_or(Cmp::Equal);
                    term.reroll = Some(Condition { cmp, value: self.condition_value(cmp)? });
                }
                (Some(first @ (b'k' | b'd')), Some(second @ (b'h' | b'l'))) => {
                    self.pos += 2;
                    if term.keep.is_some() {
                        return Err(ExprError::RepeatedModifier {
                            modifier: "keep/drop",
                            position: self.column_of(at),
                        });
                    }
                    let kind = match (first, second) {
                        (b'k', b'h') => KeepKind::KeepHighest,
                        (b'k', _) => KeepKind::KeepLowest,
                        (_, b'h') => KeepKind::DropHighest,
                        _ => KeepKind::DropLowest,
                    };
                    let n = if self.peek_is_digit() {
                        let digits_at = self.pos;
                        let digits = self.digits();
                        self.bounded(digits, digits_at, "keep/drop count", 0, Limits::MAX_COUNT)?
                    } else {
                        1
                    };
                    term.keep = Some(Keep { kind, n });
                }
                (Some(b'>' | b'<' | b'='), _) => {
                    if let Some(cmp) = self.cmp() {
                        term.success = Some(Condition { cmp, value: self.condition_value(cmp)? });
                    }
                    break;
                }
                _ => break,
            }
        }
        term.text = self.source[start..self.pos].to_owned();
        self.dice += term.max_dice();
        self.min_dice += u64::from(term.count);
        Ok(Expr::Dice(term))
    }

    /// The die after its letter: `%`, `F` or a number of sides.
    fn sides(&mut self, letter: char) -> Result<Sides, ExprError> {
        match self.peek_byte() {
            Some(b'%') => {
                self.pos += 1;
                Ok(Sides::Number(100))
            }
            Some(b'F') => {
                self.pos += 1;
                Ok(Sides::Fudge)
            }
            Some(b) if b.is_ascii_digit() => {
                let at = self.pos;
                let digits = self.digits();
                Ok(Sides::Number(self.bounded(digits, at, "die sides", 1, Limits::MAX_SIDES)?))
            }
            _ => Err(self.syntax(&format!("expected a number after '{letter}'"))),
        }
    }

    /// `self.pos` is past a `!` at `at`: the explosion's condition, by
    /// default the die's highest face; never one every face meets.
    fn explode(&mut self, term: &DiceTerm, at: usize) -> Result<Condition, ExprError> {
        if term.explode.is_some() {
            return Err(ExprError::RepeatedModifier { modifier: "explode ('!')", position: self.column_of(at) });
        }
        let sides = term.sides;
        let condition = match self.cmp() {
            Some(cmp) => Condition { cmp, value: self.condition_value(cmp)? },
            None => Condition { cmp: Cmp::Equal, value: sides.highest() },
        };
        if condition.met_by_every_face(sides) {
            return Err(ExprError::EndlessExplosion { position: self.column_of(at), faces: sides.faces() });
        }
        Ok(condition)
    }

    fn cmp(&mut self) -> Option<Cmp> {
        let (cmp, len) = match (self.peek_byte(), self.peek_next_byte()) {
            (Some(b'>'), Some(b'=')) => (Cmp::GreaterOrEqual, 2),
            (Some(b'<'), Some(b'=')) => (Cmp::LessOrEqual, 2),
            (Some(b'>'), _) => (Cmp::Greater, 1),
            (Some(b'<'), _) => (Cmp::Less, 1),
            (Some(b'='), _) => (Cmp::Equal, 1),
            _ => return None,
        };
        self.pos += len;
        Some(cmp)
    }

    fn condition_value(&mut self, cmp: Cmp) -> Result<i64, ExprError> {
        if !self.peek_is_digit() {
            return Err(self.syntax(&format!("expected a number after '{cmp}'")));
        }
        let at = self.pos;
        let digits = self.digits();
        // Faces never pass a million; a larger comparison value is a typo.
        Ok(i64::from(self.bounded(digits, at, "comparison value", 0, Limits::MAX_SIDES)?))
    }
}
