//! The parser as it was before the optimisation of issue 24, verbatim but
//! for its entry point (which returns the parts of an `Expression`).

use dice::ExprError;
use dice::expr::Limits;
use dice::expr::ast::{BinaryOp, Cmp, Condition, DiceTerm, Expr, Keep, KeepKind, Sides};

/// The pre-optimisation `Expression::parse`, returning the tree and the
/// comment (an `Expression` can only be made by the crate).
pub fn parse(source: &str) -> Result<(Expr, Option<String>), ExprError> {
    if source.len() > Limits::MAX_EXPRESSION_BYTES {
        return Err(ExprError::TooLong { bytes: source.len(), limit: Limits::MAX_EXPRESSION_BYTES });
    }
    let mut parser = Parser { chars: source.chars().collect(), pos: 0, depth: 0 };
    let root = parser.expr()?;
    parser.skip_space()?;
    let comment = match parser.peek() {
        None => None,
        Some('#') => {
            let start = parser.pos + 1;
            if let Some(offset) = parser.chars[start..].iter().position(|c| c.is_control()) {
                parser.pos = start + offset;
                let c = parser.chars[parser.pos];
                return Err(parser.syntax(&format!("the comment holds {}", describe(c))));
            }
            let text: String = parser.chars[start..].iter().collect();
            Some(text.trim().to_owned())
        }
        Some(')') => return Err(parser.syntax("unmatched ')'")),
        Some(c) => return Err(parser.syntax(&format!("unexpected {}", describe(c)))),
    };
    let mut terms = Vec::new();
    collect_dice_terms(&root, &mut terms);
    let dice: u64 = terms.iter().map(|term| term.max_dice()).sum();
    if dice > Limits::MAX_DICE_PER_ROLL {
        return Err(ExprError::TooManyDice { dice, limit: Limits::MAX_DICE_PER_ROLL });
    }
    Ok((root, comment))
}

/// The dice terms in draw order, as `Expression::dice_terms` gave them.
pub fn collect_dice_terms<'a>(node: &'a Expr, out: &mut Vec<&'a DiceTerm>) {
    match node {
        Expr::Number(_) => {}
        Expr::Dice(term) => out.push(term),
        Expr::Negate { operand, .. } => collect_dice_terms(operand, out),
        Expr::Binary { lhs, rhs, .. } => {
            collect_dice_terms(lhs, out);
            collect_dice_terms(rhs, out);
        }
    }
}

struct Parser {
    chars: Vec<char>,
    /// 0-based index into `chars`; messages add 1.
    pos: usize,
    depth: usize,
}

fn is_dice_letter(c: char) -> bool {
    matches!(c, 'd' | 'D' | 'д' | 'Д')
}

fn describe(c: char) -> String {
    if c.is_control() { format!("control character U+{:04X}", u32::from(c)) } else { format!("'{c}'") }
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_at(&self, offset: usize) -> Option<char> {
        self.chars.get(self.pos + offset).copied()
    }

    fn column(&self) -> usize {
        self.pos + 1
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
        while let Some(c) = self.peek() {
            match c {
                ' ' | '\t' => self.pos += 1,
                c if c.is_control() => return Err(self.syntax(&format!("unexpected {}", describe(c)))),
                _ => break,
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

    fn expr(&mut self) -> Result<Expr, ExprError> {
        let mut lhs = self.term()?;
        loop {
            self.skip_space()?;
            let op = match self.peek() {
                Some('+') => BinaryOp::Add,
                Some('-') => BinaryOp::Subtract,
                _ => return Ok(lhs),
            };
            let at = self.column();
            self.pos += 1;
            let rhs = self.term()?;
            lhs = Expr::Binary { op, lhs: Box::new(lhs), rhs: Box::new(rhs), at };
        }
    }

    fn term(&mut self) -> Result<Expr, ExprError> {
        let mut lhs = self.unary()?;
        loop {
            self.skip_space()?;
            let op = match self.peek() {
                Some('*') => BinaryOp::Multiply,
                Some('/') => BinaryOp::Divide,
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
        if self.peek() == Some('-') {
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
                if self.peek() != Some(')') {
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
                    let count = self.bounded(&digits, start, "dice count", 1, Limits::MAX_COUNT)?;
                    self.dice(start, count)
                } else {
                    let value = digits.parse::<i64>().map_err(|_| ExprError::OutOfRange {
                        what: "number",
                        value: digits.clone(),
                        position: start + 1,
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

    fn digits(&mut self) -> String {
        let start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        self.chars[start..self.pos].iter().collect()
    }

    /// Parses `digits` (which start at index `start`) as a number in `min..=max`.
    fn bounded(&self, digits: &str, start: usize, what: &'static str, min: u32, max: u32) -> Result<u32, ExprError> {
        digits.parse::<u32>().ok().filter(|n| (min..=max).contains(n)).ok_or_else(|| ExprError::OutOfRange {
            what,
            value: digits.to_owned(),
            position: start + 1,
            min: u64::from(min),
            max: u64::from(max),
        })
    }

    /// `self.pos` is at the dice letter; the term's text starts at `start`.
    fn dice(&mut self, start: usize, count: u32) -> Result<Expr, ExprError> {
        let letter = self.peek().unwrap_or('d');
        self.pos += 1;
        let sides = match self.peek() {
            Some('%') => {
                self.pos += 1;
                Sides::Number(100)
            }
            Some('F') => {
                self.pos += 1;
                Sides::Fudge
            }
            Some(c) if c.is_ascii_digit() => {
                let at = self.pos;
                let digits = self.digits();
                Sides::Number(self.bounded(&digits, at, "die sides", 1, Limits::MAX_SIDES)?)
            }
            _ => return Err(self.syntax(&format!("expected a number after '{letter}'"))),
        };
        let mut term =
            DiceTerm { count, sides, explode: None, reroll: None, keep: None, success: None, text: String::new() };
        loop {
            let at = self.column();
            match (self.peek(), self.peek_at(1)) {
                (Some('!'), _) => {
                    self.pos += 1;
                    if term.explode.is_some() {
                        return Err(ExprError::RepeatedModifier { modifier: "explode ('!')", position: at });
                    }
                    let condition = match self.cmp() {
                        Some(cmp) => Condition { cmp, value: self.condition_value(cmp)? },
                        None => Condition { cmp: Cmp::Equal, value: sides.highest() },
                    };
                    if condition.met_by_every_face(sides) {
                        return Err(ExprError::EndlessExplosion { position: at, faces: sides.faces() });
                    }
                    term.explode = Some(condition);
                }
                (Some('r'), _) => {
                    self.pos += 1;
                    if term.reroll.is_some() {
                        return Err(ExprError::RepeatedModifier { modifier: "reroll ('r')", position: at });
                    }
                    let cmp = self.cmp().unwrap_or(Cmp::Equal);
                    term.reroll = Some(Condition { cmp, value: self.condition_value(cmp)? });
                }
                (Some(first @ ('k' | 'd')), Some(second @ ('h' | 'l'))) => {
                    self.pos += 2;
                    if term.keep.is_some() {
                        return Err(ExprError::RepeatedModifier { modifier: "keep/drop", position: at });
                    }
                    let kind = match (first, second) {
                        ('k', 'h') => KeepKind::KeepHighest,
                        ('k', _) => KeepKind::KeepLowest,
                        (_, 'h') => KeepKind::DropHighest,
                        _ => KeepKind::DropLowest,
                    };
                    let n = if self.peek().is_some_and(|c| c.is_ascii_digit()) {
                        let digits_at = self.pos;
                        let digits = self.digits();
                        self.bounded(&digits, digits_at, "keep/drop count", 0, Limits::MAX_COUNT)?
                    } else {
                        1
                    };
                    term.keep = Some(Keep { kind, n });
                }
                (Some('>' | '<' | '='), _) => {
                    let cmp = self.cmp().expect("a comparison starts here");
                    term.success = Some(Condition { cmp, value: self.condition_value(cmp)? });
                    break;
                }
                _ => break,
            }
        }
        term.text = self.chars[start..self.pos].iter().collect();
        Ok(Expr::Dice(term))
    }

    fn cmp(&mut self) -> Option<Cmp> {
        let (cmp, len) = match (self.peek(), self.peek_at(1)) {
            (Some('>'), Some('=')) => (Cmp::GreaterOrEqual, 2),
            (Some('<'), Some('=')) => (Cmp::LessOrEqual, 2),
            (Some('>'), _) => (Cmp::Greater, 1),
            (Some('<'), _) => (Cmp::Less, 1),
            (Some('='), _) => (Cmp::Equal, 1),
            _ => return None,
        };
        self.pos += len;
        Some(cmp)
    }

    fn condition_value(&mut self, cmp: Cmp) -> Result<i64, ExprError> {
        if !self.peek().is_some_and(|c| c.is_ascii_digit()) {
            return Err(self.syntax(&format!("expected a number after '{cmp}'")));
        }
        let at = self.pos;
        let digits = self.digits();
        // Faces never pass a million; a larger comparison value is a typo.
        Ok(i64::from(self.bounded(&digits, at, "comparison value", 0, Limits::MAX_SIDES)?))
    }
}
