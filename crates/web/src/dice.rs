//! A roll and its dice as pictures (SVG), by the DOM contract v2's roll part.
//!
//! The record alone does not say which die is a fudge die (a `dF` is
//! recorded as a d3 showing −1, 0 or +1) nor which term a die belongs to, so
//! the roll's expression is parsed with the dice crate and the recorded dice
//! are split by its terms ([`dice::split_by_term`]); nothing is guessed from
//! the values. The expression is then drawn as written: each dice term as a
//! group of its dice with its subtotal (or its count of successes), the
//! operators and constants between them.
//!
//! Every die is drawn, in the recorded order, dropped, rerolled and
//! explosion dice included, as an `svg.die` with `data-face` (the recorded
//! value, signed), `data-sides` (as recorded: 3 for a fudge die) and
//! `data-fudge="1"` for a fudge die. Its visible face: a d6 shows pips
//! (`.pip`), a fudge die `−`, nothing or `+` in `.value`, any other die its
//! number in `.value`, in the die's usual shape where it has one (d4, d6, d8,
//! d10, d% as a d10, d12, d20) and otherwise in a rounded box as wide as
//! the number needs. Marks are shapes and signs as well as colours, and each
//! die has an accessible name in the page's language ("d6: 4, dropped"):
//! a dropped die is faded and struck through; a rerolled one faded, dashed
//! and followed by ↻ before its replacement; the die that exploded is
//! rimmed and carries a star ✶, and the die its explosion drew follows it
//! after an arrow; a die that counts as a success is outlined bold and
//! followed by a tick ✓.

use dice::expr::ast::BinaryOp;
use dice::expr::{DiceTerm, Expr, Expression, Sides};
use maud::{Markup, html};
use serde_json::Value;

use crate::i18n::Lang;

/// One die as the record keeps it, and what its term says about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Die {
    /// As recorded: 3 for a fudge die.
    pub sides: u32,
    /// As recorded: −1, 0, +1 for a fudge die.
    pub value: i64,
    pub kept: bool,
    pub rerolled: bool,
    /// The record's `exploded` flag: this die was drawn because the die
    /// before it exploded (docs/protocol.md §3, draw order).
    pub from_explosion: bool,
    /// This die exploded: the next die of its term was drawn because of it.
    pub exploded: bool,
    /// Its term is `dF`.
    pub fudge: bool,
    /// Its term counts successes (`5d10>=7`) and the die is kept: whether
    /// it is one. `None` for a die of a summed term or one not kept.
    pub success: Option<bool>,
}

impl Die {
    /// A plain die: kept, no marks.
    pub fn plain(sides: u32, value: i64) -> Die {
        Die {
            sides,
            value,
            kept: true,
            rerolled: false,
            from_explosion: false,
            exploded: false,
            fudge: false,
            success: None,
        }
    }

    /// The face as a judge reads it: `+1`, `0`, `−1` for a fudge die, else
    /// the number.
    fn spoken_face(&self) -> String {
        match (self.fudge, self.value) {
            (true, v) if v > 0 => format!("+{v}"),
            (true, v) if v < 0 => format!("\u{2212}{}", v.unsigned_abs()),
            (_, v) => v.to_string(),
        }
    }

    /// What the die's `.value` shows, by the contract: `−`, empty or `+`
    /// for a fudge die, the decimal value for any other.
    fn face_text(&self) -> String {
        if self.fudge {
            match self.value.signum() {
                -1 => "\u{2212}".into(),
                1 => "+".into(),
                _ => String::new(),
            }
        } else {
            self.value.to_string()
        }
    }

    fn shows_pips(&self) -> bool {
        !self.fudge && self.sides == 6 && (1..=6).contains(&self.value)
    }
}

/// The recorded dice of an export's readable `DiceRolled` event, in order.
/// An entry missing a field is left out: the verifier then finds fewer dice
/// drawn than recorded and fails the roll, which is right for such a record.
fn recorded(event: &Value) -> Vec<dice::Die> {
    let flag = |die: &Value, name: &str| die.get(name).and_then(Value::as_bool).unwrap_or(false);
    event
        .get("dice")
        .and_then(Value::as_array)
        .map(|dice| {
            dice.iter()
                .filter_map(|die| {
                    Some(dice::Die {
                        sides: u32::try_from(die.get("sides")?.as_u64()?).ok()?,
                        value: die.get("value")?.as_i64()?,
                        kept: flag(die, "kept"),
                        rerolled: flag(die, "rerolled"),
                        exploded: flag(die, "exploded"),
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The dice of one term (or, for dice the expression has no term for, of
/// none), with what the term says about each.
struct Group<'e> {
    term: Option<&'e DiceTerm>,
    dice: Vec<Die>,
}

impl Group<'_> {
    fn new<'e>(term: Option<&'e DiceTerm>, recorded: &[dice::Die]) -> Group<'e> {
        let fudge = term.is_some_and(|t| t.sides == Sides::Fudge);
        let success = term.and_then(|t| t.success);
        let dice = recorded
            .iter()
            .enumerate()
            .map(|(i, d)| Die {
                sides: d.sides,
                value: d.value,
                kept: d.kept,
                rerolled: d.rerolled,
                from_explosion: d.exploded,
                // The record marks the die an explosion drew; the die that
                // exploded is the one before it in the same term.
                exploded: recorded.get(i + 1).is_some_and(|next| next.exploded),
                fudge,
                success: success.filter(|_| d.kept).map(|c| c.met_by(d.value)),
            })
            .collect();
        Group { term, dice }
    }

    /// The term's value as the record gives it: its kept dice summed, or
    /// the number of them that are successes.
    fn subtotal(&self) -> i64 {
        let kept = self.dice.iter().filter(|d| d.kept);
        if self.term.is_some_and(|t| t.success.is_some()) {
            kept.filter(|d| d.success == Some(true)).count() as i64
        } else {
            kept.map(|d| d.value).sum()
        }
    }
}

/// The expression as drawn, left to right.
enum Token {
    Open,
    Close,
    Op(&'static str),
    Number(i64),
    /// The n-th dice term (draw order).
    Term(usize),
}

fn precedence(expr: &Expr) -> u8 {
    match expr {
        Expr::Binary { op: BinaryOp::Add | BinaryOp::Subtract, .. } => 1,
        Expr::Binary { .. } => 2,
        Expr::Negate { .. } => 3,
        Expr::Number(_) | Expr::Dice(_) => 4,
    }
}

/// Flattens the tree in evaluation order (which is the draw order), with
/// the parentheses its shape needs: the parser builds left-leaning chains,
/// so a right operand of the same precedence was parenthesized by its author.
fn flatten(expr: &Expr, terms: &mut usize, out: &mut Vec<Token>) {
    fn wrapped(expr: &Expr, parens: bool, terms: &mut usize, out: &mut Vec<Token>) {
        if parens {
            out.push(Token::Open);
        }
        flatten(expr, terms, out);
        if parens {
            out.push(Token::Close);
        }
    }
    match expr {
        Expr::Number(n) => out.push(Token::Number(*n)),
        Expr::Dice(_) => {
            out.push(Token::Term(*terms));
            *terms += 1;
        }
        Expr::Negate { operand, .. } => {
            out.push(Token::Op("\u{2212}"));
            wrapped(operand, precedence(operand) < 3, terms, out);
        }
        Expr::Binary { op, lhs, rhs, .. } => {
            let own = precedence(expr);
            wrapped(lhs, precedence(lhs) < own, terms, out);
            out.push(Token::Op(match op {
                BinaryOp::Add => "+",
                BinaryOp::Subtract => "\u{2212}",
                BinaryOp::Multiply => "×",
                BinaryOp::Divide => "÷",
            }));
            wrapped(rhs, precedence(rhs) <= own, terms, out);
        }
    }
}

/// The polygon of a die that has a classic shape, on a 40-unit square.
fn outline(sides: u32) -> Option<String> {
    let regular = |corners: usize| {
        (0..corners)
            .map(|i| {
                let angle = -std::f64::consts::FRAC_PI_2 + i as f64 * std::f64::consts::TAU / corners as f64;
                format!("{:.1},{:.1}", 20.0 + 18.0 * angle.cos(), 20.0 + 18.0 * angle.sin())
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    match sides {
        4 => Some(regular(3)),
        8 => Some(regular(4)),
        // A d% is a ten-sided die too.
        10 | 100 => Some("20,2 37,17 20,38 3,17".into()),
        12 => Some(regular(5)),
        20 => Some(regular(6)),
        _ => None,
    }
}

/// Pip centres of a d6 face, on a 40-unit square.
fn pips(value: i64) -> &'static [(f64, f64)] {
    const L: f64 = 11.0;
    const M: f64 = 20.0;
    const R: f64 = 29.0;
    match value {
        1 => &[(M, M)],
        2 => &[(L, L), (R, R)],
        3 => &[(L, L), (M, M), (R, R)],
        4 => &[(L, L), (R, L), (L, R), (R, R)],
        5 => &[(L, L), (R, L), (M, M), (L, R), (R, R)],
        6 => &[(L, L), (R, L), (L, M), (R, M), (L, R), (R, R)],
        _ => &[],
    }
}

/// The die's accessible name: "d6: 4", then its marks.
fn describe(die: &Die, lang: Lang) -> String {
    let name = if die.fudge { "dF".to_owned() } else { format!("d{}", die.sides) };
    let mut text = format!("{name}: {}", die.spoken_face());
    let marks = [
        (!die.kept && !die.rerolled, "dropped"),
        (die.rerolled, "rerolled"),
        (die.exploded, "exploded"),
        (die.from_explosion, "explosion_die"),
        (die.success == Some(true), "success"),
        (die.success == Some(false), "no_success"),
    ];
    for (on, key) in marks {
        if on {
            text.push_str(", ");
            text.push_str(lang.t(key));
        }
    }
    text
}

/// One die: 40 units high, as wide as its number needs.
pub fn die(die: &Die, lang: Lang) -> Markup {
    let face = die.face_text();
    let classic = die.fudge || die.sides == 6 || outline(die.sides).is_some();
    // A bold digit is about 9 units wide at this size: a number too long for
    // the 40-unit square widens a generic die's box instead of shrinking.
    let width: u32 = if classic { 40 } else { 40.max(12 + 9 * face.chars().count() as u32) };
    let mut class = String::from("die");
    for (on, name) in [
        (!die.kept && !die.rerolled, " dropped"),
        (die.rerolled, " rerolled"),
        (die.exploded, " exploded"),
        (die.from_explosion, " explosion"),
        (die.fudge, " fudge"),
        (die.success == Some(true), " success"),
        (width > 40, " wide"),
    ] {
        if on {
            class.push_str(name);
        }
    }
    let label = describe(die, lang);
    let font_size = match (die.fudge, classic, face.chars().count()) {
        (true, _, _) => "26",
        (false, true, n) if n >= 3 => "11",
        _ => "14",
    };
    html! {
        svg class=(class) viewBox={ "0 0 " (width) " 40" } width=(width) height="40" role="img" aria-label=(label)
            data-face=(die.value) data-sides=(die.sides) data-fudge=[die.fudge.then_some("1")] {
            title { (label) }
            @if die.shows_pips() {
                rect class="face" x="2" y="2" width="36" height="36" rx="7" {}
                @for (x, y) in pips(die.value) {
                    circle class="pip" cx=(x) cy=(y) r="3.6" {}
                }
            } @else {
                @match outline(die.sides).filter(|_| !die.fudge) {
                    Some(points) => polygon class="face" points=(points) {},
                    None => rect class="face" x="2" y="2" width=(width - 4) height="36" rx="7" {},
                }
                text class="value" x=(f64::from(width) / 2.0) y="21" text-anchor="middle"
                    dominant-baseline="middle" font-size=(font_size) { (face) }
            }
            @if !die.kept && !die.rerolled {
                line class="strike" x1="4" y1="36" x2=(width - 4) y2="4" {}
            }
            @if die.exploded {
                // On the top edge, clear of every pip and number.
                text class="star" x=(f64::from(width) / 2.0) y="6" text-anchor="middle" dominant-baseline="middle"
                    font-size="12" { "✶" }
            }
        }
    }
}

fn text<'v>(event: &'v Value, field: &str) -> &'v str {
    event.get(field).and_then(Value::as_str).unwrap_or_default()
}

fn number(event: &Value, field: &str) -> Option<u64> {
    event.get(field).and_then(Value::as_u64)
}

/// The roll's evaluation error in the page's language; the recorded text
/// stays in the element's title.
fn error_text(error: &str, lang: Lang) -> String {
    let at = |prefix: &str| error.strip_prefix(prefix).and_then(|rest| rest.split(':').next()).map(str::trim);
    if let Some(position) = at("division by zero at ") {
        format!("{} {position}", lang.t("division_by_zero_at"))
    } else if let Some(position) = at("arithmetic overflow at ") {
        format!("{} {position}", lang.t("overflow_at"))
    } else {
        error.to_owned()
    }
}

/// A term's dice in a box; with other terms around it (`alone` false), its
/// name and subtotal too.
fn group(group: &Group, alone: bool, lang: Lang) -> Markup {
    let counts_successes = group.term.is_some_and(|t| t.success.is_some());
    html! {
        span.term {
            @if !alone {
                span.term-name { (group.term.map_or("?", |t| t.text.as_str())) }
            }
            @if group.dice.is_empty() {
                span.muted { (lang.t("not_rolled")) }
            }
            @for d in &group.dice {
                @if d.from_explosion {
                    span.explosion-arrow aria-hidden="true" { "→" }
                }
                (die(d, lang))
                // Signs beside the die rather than on it, where they would
                // cover a pip; the die's name already says them.
                @if d.rerolled {
                    span.die-mark.reroll-mark aria-hidden="true" { "↻" }
                }
                @if d.success == Some(true) {
                    span.die-mark.success-mark aria-hidden="true" { "✓" }
                }
            }
            @if !group.dice.is_empty() {
                @if counts_successes {
                    span.subtotal { (lang.t("successes")) ": " strong { (group.subtotal()) } }
                } @else if !alone {
                    span.subtotal { "= " (group.subtotal()) }
                }
            }
        }
    }
}

/// A `DiceRolled` event's roll, the action it was drawn for being the one
/// it records (`for_action`, on an action's first roll) when known.
pub fn roll(event: &Value, lang: Lang) -> Markup {
    let action = event.get("for_action").and_then(|requested| requested.get("action"));
    roll_for(event, lang, action)
}

/// Whose die a roll drawn for `action` is, and what for, as a reader
/// reads it: a rules' purpose (`attacker`, `defender`, `power`, `dodge`…)
/// is the rules' word, translated, and the die is its side's (a berserk
/// defender's die is the defender's, though the roller was asked in the
/// attacker's name); a free roll's purpose is the forum's own text.
/// `(who, purpose, the purpose is the forum's text)`.
pub fn roll_owner<'v>(event: &'v Value, action: Option<&'v Value>, lang: Lang) -> (&'v str, String, bool) {
    let purpose = text(event, "purpose");
    let actor = text(event, "actor");
    let kind = action.and_then(|action| action.get("type")).and_then(Value::as_str);
    if kind.is_none_or(|kind| kind == "roll") {
        return (actor, purpose.to_owned(), true);
    }
    let side = |name: &str| {
        action
            .and_then(|action| action.get(name))
            .and_then(|side| side.get("id"))
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty())
    };
    let who = match purpose {
        "attacker" => side("attacker").unwrap_or(actor),
        "defender" => side("defender").unwrap_or(actor),
        _ => actor,
    };
    (who, purpose_word(purpose, lang), false)
}

/// The rules' roll purposes (crates/rules' `RollSpec`s) in `lang`; an
/// unknown one as it is.
pub fn purpose_word(purpose: &str, lang: Lang) -> String {
    let pair = match purpose {
        "attacker" => ("the attacker's die", "кубик атакующего"),
        "defender" => ("the defender's die", "кубик защитника"),
        "effect" => ("the effect", "эффект"),
        "power" => ("power", "силу"),
        "dodge" => ("a dodge", "уклонение"),
        "metronome" => ("Metronome", "Метроном"),
        "paralysis" => ("paralysis", "паралич"),
        "infatuation" => ("infatuation", "очарование"),
        "confusion" => ("confusion", "путаницу"),
        "2d6" | "2d10" => ("the check", "проверку"),
        _ => return purpose.to_owned(),
    };
    (if lang == Lang::En { pair.0 } else { pair.1 }).to_owned()
}

/// A `DiceRolled` event's roll (the DOM contract's roll element): who
/// rolled what for what, every die drawn by its term, the total, and the
/// error when the arithmetic failed.
pub fn roll_for(event: &Value, lang: Lang, action: Option<&Value>) -> Markup {
    let (who, purpose, forum_purpose) = roll_owner(event, action, lang);
    let dice = recorded(event);
    let expression = Expression::parse(text(event, "expression")).ok();
    let mut tokens = Vec::new();
    let mut groups = Vec::new();
    match &expression {
        Some(expression) => {
            flatten(expression.root(), &mut 0, &mut tokens);
            let terms = expression.dice_terms();
            for (i, (_, slice)) in dice::split_by_term(expression, &dice).into_iter().enumerate() {
                groups.push(Group::new(terms.get(i).copied(), slice));
            }
            // Dice the expression has no term for: drawn after it.
            if groups.len() > terms.len() {
                tokens.push(Token::Term(terms.len()));
            }
        }
        None => {
            groups.push(Group::new(None, &dice));
            tokens.push(Token::Term(0));
        }
    }
    // A lone term's subtotal is the total and its name the expression; with
    // others around it, each term's name and value help a judge follow the sum.
    let alone = tokens.len() == 1;
    let error = text(event, "error");
    let total = match event.get("total") {
        Some(Value::Number(n)) if error.is_empty() => n.to_string(),
        _ => String::new(),
    };
    let nonce = number(event, "nonce").unwrap_or_default();
    html! {
        div.roll data-nonce=(nonce) data-total=(total) {
            span.check {}
            // The actor is the forum's word, never translated; so is a free
            // roll's purpose, while a rules' purpose is the rules' word.
            span.roll-who {
                span.forum-text translate="no" { (who) } " " (lang.t("for")) " " (lang.t("quote_open"))
                @if forum_purpose { span.forum-text translate="no" { (purpose) } } @else { span.purpose { (purpose) } }
                (lang.t("quote_close")) ": " code { (text(event, "expression")) }
            }
            span.expr {
                @for token in &tokens {
                    @match token {
                        Token::Open => span.paren { "(" },
                        Token::Close => span.paren { ")" },
                        Token::Op(op) => span.op { (op) },
                        Token::Number(n) => span.constant { (n) },
                        Token::Term(i) => { @if let Some(g) = groups.get(*i) { (group(g, alone, lang)) } },
                    }
                }
            }
            span.sum { @if error.is_empty() { "= " } strong.total { (total) } }
            @if !error.is_empty() {
                span.problems.roll-error title=(error) { (lang.t("roll_error")) ": " (error_text(error, lang)) }
            }
            span.muted { (lang.t("nonce")) " " (nonce) ", "
                (lang.t("epoch").to_lowercase()) " " (number(event, "epoch").unwrap_or_default()) }
        }
    }
}

#[cfg(test)]
mod tests {
    use battlelog_proto::battle::{die_to_proto, event_to_json};
    use battlelog_proto::v1::{DiceRolled, battle_event::Event};
    use dice::WordSource;

    use super::*;

    /// Hands out the given faces (each word maps to face `word + 1` for any
    /// die of at least that many sides), then ones.
    struct Faces<I>(I);

    impl<I: Iterator<Item = u32>> WordSource for Faces<I> {
        fn next_word(&mut self) -> u32 {
            self.0.next().map_or(0, |face| face - 1)
        }
    }

    /// A roll evaluated by the dice crate on scripted raw faces (fudge: the
    /// d3 face, 1..3), as the export shows it; and the record it built.
    fn rolled(expression: &str, faces: &[u32]) -> (Value, dice::Roll, Option<String>) {
        let parsed = Expression::parse(expression).expect("a valid expression");
        let (dice, total) = dice::evaluate_keeping_dice(&parsed, &mut Faces(faces.iter().copied()));
        let error = total.as_ref().err().map(ToString::to_string);
        let record = DiceRolled {
            epoch: 0,
            nonce: 7,
            expression: expression.into(),
            purpose: "test".into(),
            actor: "ash".into(),
            dice: dice.iter().map(die_to_proto).collect(),
            total: *total.as_ref().unwrap_or(&0),
            error: error.clone().unwrap_or_default(),
            for_action: None,
        };
        (event_to_json(&Event::DiceRolled(record)), dice::Roll { total: total.unwrap_or(0), dice }, error)
    }

    /// One drawn die as the page has it.
    #[derive(Debug)]
    struct Seen {
        face: String,
        sides: String,
        fudge: bool,
        class: String,
        label: String,
        /// Pip count when it has pips, else the `.value` text.
        visible: String,
    }

    fn attr(tag: &str, name: &str) -> Option<String> {
        let start = tag.find(&format!(" {name}=\""))? + name.len() + 3;
        Some(tag[start..].split('"').next()?.to_owned())
    }

    fn seen(markup: &str) -> Vec<Seen> {
        markup
            .split("<svg ")
            .skip(1)
            .map(|chunk| {
                let svg = chunk.split("</svg>").next().unwrap();
                let tag = &format!(" {}", svg.split('>').next().unwrap());
                let pips = svg.matches("class=\"pip\"").count();
                let value = svg
                    .split("class=\"value\"")
                    .nth(1)
                    .map(|rest| rest.split_once('>').unwrap().1.split("</text>").next().unwrap().trim().to_owned());
                Seen {
                    face: attr(tag, "data-face").unwrap_or_default(),
                    sides: attr(tag, "data-sides").unwrap_or_default(),
                    fudge: attr(tag, "data-fudge").as_deref() == Some("1"),
                    class: attr(tag, "class").unwrap_or_default(),
                    label: attr(tag, "aria-label").unwrap_or_default(),
                    visible: if pips > 0 { pips.to_string() } else { value.unwrap_or_default() },
                }
            })
            .collect()
    }

    fn roll_tag(markup: &str) -> &str {
        markup.split("<div class=\"roll\"").nth(1).unwrap().split('>').next().unwrap()
    }

    /// The faces drawn are the record's, in its order, and so are the sides.
    fn assert_drawn_in_order(markup: &str, record: &dice::Roll) {
        let drawn = seen(markup);
        let faces: Vec<String> = drawn.iter().map(|d| d.face.clone()).collect();
        let expected: Vec<String> = record.dice.iter().map(|d| d.value.to_string()).collect();
        assert_eq!(faces, expected, "{markup}");
        let sides: Vec<String> = drawn.iter().map(|d| d.sides.clone()).collect();
        let expected: Vec<String> = record.dice.iter().map(|d| d.sides.to_string()).collect();
        assert_eq!(sides, expected, "{markup}");
    }

    fn assert_total(markup: &str, total: &str) {
        assert_eq!(attr(roll_tag(markup), "data-total").as_deref(), Some(total), "{markup}");
        assert_eq!(markup.matches("class=\"total\"").count(), 1, "{markup}");
        let shown = markup.split("class=\"total\">").nth(1).unwrap().split("</strong>").next().unwrap();
        assert_eq!(shown.trim(), total, "{markup}");
    }

    #[test]
    fn fudge_dice_are_minus_blank_plus_every_one_in_order() {
        // d3 faces 1, 2, 3 are −1, 0, +1.
        let (event, record, _) = rolled("10dF", &[1, 1, 2, 3, 1, 2, 1, 2, 3, 1]);
        let values: Vec<i64> = record.dice.iter().map(|d| d.value).collect();
        assert_eq!(values, [-1, -1, 0, 1, -1, 0, -1, 0, 1, -1], "the scripted record");
        let markup = roll(&event, Lang::En).into_string();
        assert_drawn_in_order(&markup, &record);
        let drawn = seen(&markup);
        for (d, recorded) in drawn.iter().zip(&record.dice) {
            assert!(d.fudge, "{d:?}");
            assert_eq!(d.sides, "3");
            let glyph = match recorded.value {
                -1 => "\u{2212}",
                0 => "",
                _ => "+",
            };
            assert_eq!(d.visible, glyph, "{d:?}");
        }
        assert!(drawn[0].label.starts_with("dF: \u{2212}1"), "{:?}", drawn[0]);
        assert!(drawn[3].label.starts_with("dF: +1"), "{:?}", drawn[3]);
        assert_total(&markup, &record.total.to_string());
        assert_eq!(record.total, -3);
    }

    #[test]
    fn a_percentile_die_shows_its_number() {
        let (event, record, _) = rolled("d%", &[100]);
        let markup = roll(&event, Lang::En).into_string();
        assert_drawn_in_order(&markup, &record);
        let d = &seen(&markup)[0];
        assert_eq!((d.sides.as_str(), d.visible.as_str(), d.fudge), ("100", "100", false));
        assert_eq!(d.label, "d100: 100");
        assert_total(&markup, "100");
    }

    #[test]
    fn a_big_die_shows_its_whole_number_in_a_box_wide_enough() {
        let (event, record, _) = rolled("2d1000", &[1000, 7]);
        let markup = roll(&event, Lang::En).into_string();
        assert_drawn_in_order(&markup, &record);
        let drawn = seen(&markup);
        assert_eq!(drawn[0].visible, "1000");
        assert_eq!(drawn[1].visible, "7");
        assert!(drawn[0].class.contains("wide"), "four digits need a wider box: {drawn:?}");
        let width: u32 = markup.split("width=\"").nth(1).unwrap().split('"').next().unwrap().parse().unwrap();
        assert!(width >= 12 + 4 * 9, "{width}");
        assert_total(&markup, "1007");
    }

    #[test]
    fn terms_are_grouped_with_their_signs_and_the_constant() {
        let (event, record, _) = rolled("1d6+2d8-3", &[4, 8, 2]);
        let markup = roll(&event, Lang::En).into_string();
        assert_drawn_in_order(&markup, &record);
        let terms: Vec<&str> = markup.split("<span class=\"term\">").skip(1).collect();
        assert_eq!(terms.len(), 2, "{markup}");
        assert_eq!(seen(terms[0]).len(), 1, "the d6 alone in its group");
        assert!(terms[0].contains(">1d6<") && terms[0].contains("= 4"), "{}", terms[0]);
        assert!(terms[1].starts_with("<span class=\"term-name\">2d8<"), "{}", terms[1]);
        assert!(terms[1].contains("= 10"), "{}", terms[1]);
        let ops: Vec<&str> =
            markup.split("<span class=\"op\">").skip(1).map(|s| s.split('<').next().unwrap()).collect();
        assert_eq!(ops, ["+", "\u{2212}"]);
        assert!(markup.contains("<span class=\"constant\">3</span>"), "{markup}");
        assert_total(&markup, "11");
    }

    #[test]
    fn a_dropped_die_is_drawn_faded_struck_and_named() {
        let (event, record, _) = rolled("4d6kh3", &[6, 1, 5, 3]);
        let markup = roll(&event, Lang::Ru).into_string();
        assert_drawn_in_order(&markup, &record);
        let drawn = seen(&markup);
        let dropped: Vec<usize> = (0..4).filter(|&i| !record.dice[i].kept).collect();
        assert_eq!(dropped, [1], "the scripted record drops the 1");
        assert!(drawn[1].class.contains("dropped"), "{:?}", drawn[1]);
        assert_eq!(drawn[1].label, "d6: 1, отброшен");
        assert_eq!(drawn[1].visible, "1", "a dropped d6 still shows its pip");
        assert!(markup.contains("class=\"strike\""), "struck, not only faded");
        assert_eq!(drawn.iter().filter(|d| d.class.contains("dropped")).count(), 1);
        assert_total(&markup, "14");
    }

    #[test]
    fn a_rerolled_die_and_its_replacement_are_both_drawn() {
        let (event, record, _) = rolled("4d6r1", &[1, 4, 2, 3, 6]);
        assert!(record.dice[0].rerolled && record.dice.len() == 5, "the scripted record rerolls the 1");
        let markup = roll(&event, Lang::En).into_string();
        assert_drawn_in_order(&markup, &record);
        let drawn = seen(&markup);
        assert!(drawn[0].class.contains("rerolled") && !drawn[0].class.contains("dropped"), "{:?}", drawn[0]);
        assert_eq!(drawn[0].label, "d6: 1, rerolled");
        assert_eq!(markup.matches("↻").count(), 1, "marked by a sign, not only a dashed line");
        let after_first = markup.split("</svg>").nth(1).unwrap();
        assert!(after_first.trim_start().starts_with("<span class=\"die-mark reroll-mark\""), "{markup}");
        assert_total(&markup, "15");
    }

    #[test]
    fn the_star_is_on_the_die_that_exploded() {
        // 6 explodes into 6, which explodes into 2; then 3 and 5.
        let (event, record, _) = rolled("3d6!", &[6, 6, 2, 3, 5]);
        let flags: Vec<bool> = record.dice.iter().map(|d| d.exploded).collect();
        assert_eq!(flags, [false, true, true, false, false], "the record marks the dice explosions drew");
        let markup = roll(&event, Lang::En).into_string();
        assert_drawn_in_order(&markup, &record);
        let drawn = seen(&markup);
        let starred: Vec<usize> = (0..drawn.len()).filter(|&i| drawn[i].class.contains(" exploded")).collect();
        assert_eq!(starred, [0, 1], "{drawn:?}");
        assert_eq!(drawn[0].label, "d6: 6, exploded");
        assert_eq!(drawn[1].label, "d6: 6, exploded, explosion die");
        assert_eq!(drawn[2].label, "d6: 2, explosion die");
        assert_eq!(markup.matches("✶").count(), 2);
        assert_eq!(markup.matches("explosion-arrow").count(), 2);
        assert_total(&markup, "22");
    }

    #[test]
    fn successes_are_ticked_and_counted() {
        let (event, record, _) = rolled("5d10>=7", &[7, 3, 10, 6, 9]);
        let markup = roll(&event, Lang::En).into_string();
        assert_drawn_in_order(&markup, &record);
        let drawn = seen(&markup);
        let ticked: Vec<usize> = (0..5).filter(|&i| drawn[i].class.contains("success")).collect();
        let expected: Vec<usize> = (0..5).filter(|&i| record.dice[i].value >= 7).collect();
        assert_eq!(ticked, expected);
        assert_eq!(markup.matches("✓").count(), 3, "a sign, not a colour");
        assert_eq!(drawn[1].label, "d10: 3, not a success");
        assert_eq!(drawn[2].label, "d10: 10, success");
        assert!(markup.contains("successes: <strong>3</strong>"), "{markup}");
        assert_total(&markup, &record.total.to_string());
        assert_eq!(record.total, 3);
    }

    #[test]
    fn an_arithmetic_error_keeps_the_dice_and_has_no_total() {
        let (event, record, error) = rolled("2d6/(1d1-1)", &[3, 4, 1]);
        let error = error.expect("division by zero");
        let markup = roll(&event, Lang::Ru).into_string();
        assert_drawn_in_order(&markup, &record);
        assert_eq!(record.dice.len(), 3);
        assert_total(&markup, "");
        assert!(markup.contains("деление на ноль"), "{markup}");
        assert!(markup.contains(&format!("title=\"{error}\"")), "{markup}");
        assert!(markup.contains("<span class=\"paren\">(</span>"), "parenthesized as written: {markup}");
    }

    #[test]
    fn a_term_the_failed_arithmetic_never_reached_is_shown_not_rolled() {
        let (event, record, error) = rolled("1/(1d1-1)+2d6", &[1, 5, 5]);
        assert!(error.is_some() && record.dice.len() == 1, "the 2d6 is never drawn: {record:?}");
        let markup = roll(&event, Lang::En).into_string();
        assert_drawn_in_order(&markup, &record);
        let last = markup.split("<span class=\"term\">").nth(2).expect("the 2d6 term is shown");
        assert!(last.contains(">2d6<") && last.contains("not rolled"), "{last}");
        assert_total(&markup, "");
    }

    #[test]
    fn dice_after_the_expressions_terms_are_still_drawn() {
        // A record with one die more than `1d6` draws: it shows, so the
        // verifier can count it, and the d6 is still a d6.
        let (mut event, _, _) = rolled("1d6", &[2]);
        event["dice"].as_array_mut().unwrap().push(serde_json::json!({
            "sides": 6, "value": 5, "kept": true, "rerolled": false, "exploded": false
        }));
        let drawn = seen(&roll(&event, Lang::En).into_string());
        let faces: Vec<&str> = drawn.iter().map(|d| d.face.as_str()).collect();
        assert_eq!(faces, ["2", "5"]);
    }

    #[test]
    fn a_d6_shows_as_many_pips_as_its_value() {
        for value in 1..=6 {
            let svg = die(&Die::plain(6, value), Lang::En).into_string();
            assert_eq!(svg.matches("class=\"pip\"").count(), value as usize, "{svg}");
            assert!(!svg.contains("class=\"value\""), "a d6 has no number: {svg}");
        }
    }
}
