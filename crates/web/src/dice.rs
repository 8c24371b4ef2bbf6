//! Rolls and their dice as pictures (SVG): a d6 with pips, other dice as numbered
//! polygons of their usual shape; a dropped die is faded and struck
//! through, a rerolled one dashed, an exploded one gold-rimmed with a star.

use maud::{Markup, html};
use serde_json::Value;

use crate::i18n::Lang;

/// One die as a roll records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Die {
    pub sides: u64,
    pub value: u64,
    pub kept: bool,
    pub rerolled: bool,
    pub exploded: bool,
}

impl Die {
    /// A die from an export's readable `dice` entry; `None` when a field is
    /// missing (the page then shows the number alone).
    pub fn from_json(die: &Value) -> Option<Die> {
        Some(Die {
            sides: die.get("sides")?.as_u64()?,
            value: die.get("value")?.as_u64()?,
            kept: die.get("kept").and_then(|v| v.as_bool()).unwrap_or(true),
            rerolled: die.get("rerolled").and_then(|v| v.as_bool()).unwrap_or(false),
            exploded: die.get("exploded").and_then(|v| v.as_bool()).unwrap_or(false),
        })
    }
}

const SIZE: f64 = 40.0;

/// Pip centres of a d6 face, on a 40-unit square.
fn pips(value: u64) -> &'static [(f64, f64)] {
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

/// The outline of a die with `sides` faces, as SVG polygon points.
fn outline(sides: u64) -> Option<String> {
    let regular = |corners: usize, rotation: f64| {
        (0..corners)
            .map(|i| {
                let angle = rotation + i as f64 * std::f64::consts::TAU / corners as f64;
                format!("{:.1},{:.1}", 20.0 + 18.0 * angle.cos(), 20.0 + 18.0 * angle.sin())
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    let up = -std::f64::consts::FRAC_PI_2;
    match sides {
        4 => Some(regular(3, up)),
        8 => Some(regular(4, up)),
        10 => Some("20,2 37,17 20,38 3,17".into()),
        12 => Some(regular(5, up)),
        20 => Some(regular(6, up)),
        _ => None,
    }
}

/// What the die's tooltip says: "d6: 4", then its marks.
fn describe(die: &Die, lang: Lang) -> String {
    let mut text = format!("d{}: {}", die.sides, die.value);
    for (on, key) in [(!die.kept, "dropped"), (die.rerolled, "rerolled"), (die.exploded, "exploded")] {
        if on {
            text.push_str(", ");
            text.push_str(lang.t(key));
        }
    }
    text
}

/// One die, 40×40 units, drawn at 2.2em.
pub fn die(die: &Die, lang: Lang) -> Markup {
    let mut class = String::from("die");
    if !die.kept {
        class.push_str(" dropped");
    }
    if die.rerolled {
        class.push_str(" rerolled");
    }
    if die.exploded {
        class.push_str(" exploded");
    }
    let label = describe(die, lang);
    html! {
        svg class=(class) viewBox="0 0 40 40" width="40" height="40" role="img" aria-label=(label)
            data-sides=(die.sides) data-value=(die.value) {
            title { (label) }
            @if die.sides == 6 && (1..=6).contains(&die.value) {
                rect class="face" x="2" y="2" width="36" height="36" rx="7" {}
                @for (x, y) in pips(die.value) {
                    circle class="pip" cx=(x) cy=(y) r="3.6" {}
                }
            } @else {
                @match outline(die.sides) {
                    Some(points) => polygon class="face" points=(points) {},
                    None => circle class="face" cx="20" cy="20" r="18" {},
                }
                text class="value" x="20" y="21" text-anchor="middle" dominant-baseline="middle"
                    font-size=(if die.value >= 100 { "11" } else { "14" }) { (die.value) }
            }
            @if !die.kept {
                line class="strike" x1="4" y1="36" x2="36" y2="4" {}
            }
            @if die.exploded {
                text class="star" x=(SIZE - 7.0) y="10" text-anchor="middle" font-size="11" { "✶" }
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

/// A total as a judge reads it.
fn plain(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => "—".into(),
        other => other.to_string(),
    }
}

/// A `DiceRolled` event's roll: who rolled what for what, every die drawn,
/// the total (the DOM contract's roll element).
pub fn roll(event: &Value, lang: Lang) -> Markup {
    let dice: Vec<Die> = event
        .get("dice")
        .and_then(Value::as_array)
        .map(|d| d.iter().filter_map(Die::from_json).collect())
        .unwrap_or_default();
    html! {
        div.roll data-nonce=(number(event, "nonce").unwrap_or_default()) {
            span.check {}
            span { (text(event, "actor")) " " (lang.t("for")) " " (lang.t("quote_open")) (text(event, "purpose")) (lang.t("quote_close")) ": " code { (text(event, "expression")) } }
            @for d in &dice { (die(d, lang)) }
            span { "= " strong.total { (event.get("total").map(plain).unwrap_or_default()) } }
            @if let Some(error) = event.get("error").and_then(Value::as_str).filter(|e| !e.is_empty()) {
                span.problems { (error) }
            }
            span.muted { (lang.t("nonce")) " " (number(event, "nonce").unwrap_or_default()) ", "
                (lang.t("epoch").to_lowercase()) " " (number(event, "epoch").unwrap_or_default()) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(sides: u64, value: u64) -> Die {
        Die { sides, value, kept: true, rerolled: false, exploded: false }
    }

    #[test]
    fn a_d6_shows_as_many_pips_as_its_value() {
        for value in 1..=6 {
            let svg = die(&d(6, value), Lang::En).into_string();
            assert_eq!(svg.matches("class=\"pip\"").count(), value as usize, "{svg}");
            assert!(!svg.contains("<text class=\"value\""), "a d6 has no number: {svg}");
        }
    }

    #[test]
    fn other_dice_show_their_number_in_their_shape() {
        let d20 = die(&d(20, 17), Lang::En).into_string();
        assert!(d20.contains(">17</text>") && d20.contains("<polygon"), "{d20}");
        let d4 = die(&d(4, 3), Lang::En).into_string();
        assert_eq!(d4.split("points=\"").nth(1).unwrap().split('"').next().unwrap().split(' ').count(), 3);
        let d100 = die(&d(100, 100), Lang::En).into_string();
        assert!(d100.contains("<circle class=\"face\"") && d100.contains(">100</text>"), "{d100}");
    }

    #[test]
    fn marks_are_drawn_and_named() {
        let dropped = Die { kept: false, ..d(6, 2) };
        let svg = die(&dropped, Lang::Ru).into_string();
        assert!(svg.contains("class=\"die dropped\"") && svg.contains("class=\"strike\""), "{svg}");
        assert!(svg.contains("d6: 2, отброшен"), "{svg}");
        let wild = Die { rerolled: true, exploded: true, ..d(10, 10) };
        let svg = die(&wild, Lang::En).into_string();
        assert!(svg.contains("die rerolled exploded") && svg.contains("✶"), "{svg}");
        assert!(svg.contains("d10: 10, rerolled, exploded"), "{svg}");
    }
}
