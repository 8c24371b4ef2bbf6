//! The explanations read back: for every action of every rules vector
//! script, one test per ruleset version, the explanation's *text* (as
//! `battlelog replay` prints it, in English and Russian) is parsed the way a
//! judge reads it and evaluated:
//!   - every sum's written arithmetic (`4 + 5 + trait (wits) 2 = 11`,
//!     `A 6 − D 5 = 1`) gives the number written after it, and that number
//!     is the one the vectors record (`total`, `sum`, `total_skill`, `diff`,
//!     `turns`), or the one docs/rules.md's table gives for the recorded
//!     result (a dodge's effective die, an effect's die);
//!   - a difference subtracts the defender's D from the attacker's A, as
//!     their own lines give them;
//!   - damage is round(power × multiplier × hits), damage after a dodge
//!     round(incoming × kept %), both the recorded numbers;
//!   - every die is the script's die, in order, credited to its side
//!     (docs/rules.md §3.1: the attacker's d6, then the defender's; every other
//!     die the actor's), and a side's sum only holds that side's dice;
//!   - nothing is written twice: no doubled sign (`+ −2`), no lone value
//!     repeated (`= 3 = 3`), no term named twice in one sum.
//!
//! Expected values come from the vectors (`*.expected.jsonl`) and the
//! scripts' dice, never from this crate's output.

// The crate's clippy.toml forbids I/O for the crate; this test reads the
// vectors from disk, which is what a test is allowed to do.
#![allow(clippy::disallowed_methods)]

mod vector_walk;

use rules::explain::{Explanation, Lang, explain};
use serde_json::Value;

/// A number as written: `5`, `−3`, `(−1)`.
fn number(text: &str) -> Option<i64> {
    let text = text.trim().trim_start_matches('(').trim_end_matches(')').replace('−', "-");
    text.parse().ok()
}

/// One piece of a written sum: its operator, its name (empty for a die's
/// face or a bare number) and its number.
#[derive(Debug)]
struct Piece {
    minus: bool,
    name: String,
    value: i64,
}

/// `label (who) = expression = value` or `label (who) = value`, read back.
#[derive(Debug)]
struct ReadSum {
    who: Option<String>,
    pieces: Vec<Piece>,
    value: i64,
}

impl ReadSum {
    fn evaluated(&self) -> i64 {
        self.pieces.iter().map(|p| if p.minus { -p.value } else { p.value }).sum()
    }
}

/// Splits `expression` at the operators written between pieces (` + `,
/// ` − `), outside parentheses (a detail such as `(2 − 1)` is a name).
fn pieces(expression: &str) -> Vec<(bool, String)> {
    let mut found = Vec::new();
    let (mut depth, mut current, mut minus) = (0, String::new(), false);
    let chars: Vec<char> = expression.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ => {}
        }
        if depth == 0 && c == ' ' && i + 2 < chars.len() && matches!(chars[i + 1], '+' | '−') && chars[i + 2] == ' ' {
            found.push((minus, std::mem::take(&mut current)));
            minus = chars[i + 1] == '−';
            i += 3;
            continue;
        }
        current.push(c);
        i += 1;
    }
    found.push((minus, current));
    found
}

fn read_sum(line: &str) -> ReadSum {
    let fields: Vec<&str> = line.split(" = ").collect();
    assert!(fields.len() == 2 || fields.len() == 3, "a sum line reads `name = … = value`: {line:?}");
    let head = fields[0];
    let who = head.strip_suffix(')').and_then(|h| h.rsplit_once(" (")).map(|(_, who)| who.to_owned());
    let value = number(fields[fields.len() - 1]).unwrap_or_else(|| panic!("a value ends {line:?}"));
    let pieces = pieces(fields[1])
        .into_iter()
        .map(|(minus, piece)| {
            let piece = piece.trim();
            let (name, last) = match piece.rsplit_once(' ') {
                Some((name, last)) if number(last).is_some() => (name.trim().to_owned(), last),
                _ => (String::new(), piece),
            };
            let value = number(last).unwrap_or_else(|| panic!("a piece ends with its number: {piece:?} in {line:?}"));
            Piece { minus, name, value }
        })
        .collect();
    let read = ReadSum { who, pieces, value };
    let lone = read.pieces.len() == 1 && read.pieces[0].name.is_empty();
    // `effective die = 3 = 3` repeats itself: a lone value is written once.
    assert!(fields.len() == 2 || !lone, "a lone value written twice: {line:?}");
    read
}

/// The dice line: `(face, who, sides)` of each die.
fn read_dice(line: &str) -> Vec<(u32, String, u32)> {
    let (_, list) = line.split_once(": ").expect("`dice: …`");
    let mut dice = Vec::new();
    let mut rest = list;
    while let Some(open) = rest.find(" (") {
        let face: u32 = rest[..open].trim_start_matches(", ").trim().parse().unwrap_or_else(|_| panic!("{line:?}"));
        let close = rest[open..].find(')').map(|c| c + open).expect("a closing parenthesis");
        let inner = &rest[open + 2..close];
        let (who, role) =
            inner.split_once(": ").unwrap_or_else(|| panic!("a die names its side: {inner:?} in {line:?}"));
        let sides: u32 = role.rsplit_once(" d").and_then(|(_, s)| s.parse().ok()).expect("d<sides>");
        dice.push((face, who.to_owned(), sides));
        // Past the die's meaning or pick, up to the next die.
        rest = &rest[close + 1..];
        rest = match rest.find(", ") {
            Some(next) if rest[next + 2..].chars().next().is_some_and(|c| c.is_ascii_digit()) => &rest[next + 2..],
            _ => "",
        };
    }
    dice
}

/// `name value × name value … = result` of a product line: the factors'
/// values and the result.
fn read_product(line: &str) -> (Vec<String>, i64) {
    let (head, value) = line.rsplit_once(" = ").expect("a product's value");
    let (_, factors) = head.split_once(" = ").expect("a product's factors");
    let factors = factors.split(" × ").map(|f| f.rsplit_once(' ').map_or(f, |(_, v)| v).to_owned()).collect();
    (factors, number(value).unwrap_or_else(|| panic!("{line:?}")))
}

fn fraction(text: &str) -> (u128, u128) {
    match text.split_once('/') {
        Some((n, d)) => (n.parse().expect("a numerator"), d.parse().expect("a denominator")),
        None => (text.parse().expect("a whole number"), 1),
    }
}

fn round_half_up(numerator: u128, denominator: u128) -> i64 {
    i64::try_from((2 * numerator + denominator) / (2 * denominator)).expect("fits")
}

/// Whose each die of `action` is (docs/rules.md §3.1, §6.3.2: the
/// attacker's, then the defender's in a fight, a fixed roll drawing none;
/// every other die the actor's), for `count` dice.
fn sides_of(ruleset: &str, action: &Value, count: usize) -> Vec<String> {
    if action["type"] == "strike" {
        let id = |side: &str| action[side]["id"].as_str().unwrap_or_default().to_owned();
        let fixed = |side: &str| ruleset == "berserk@2" && action[side]["fixed_roll"].is_u64();
        let fight = action["kind"] == "simple" && action["defender"]["closed"] != true && action["own_squad"] != true;
        let mut owners = Vec::new();
        if !fixed("attacker") {
            owners.push(id("attacker"));
        }
        if fight && !fixed("defender") {
            owners.push(id("defender"));
        }
        return owners;
    }
    let actor = action["actor"].as_str().unwrap_or_default().to_owned();
    vec![actor; count]
}

/// docs/rules.md §1.3: the reduction an effective die gives.
fn reduction(effective: i64) -> i64 {
    match effective {
        ..=1 => 0,
        2 => 5,
        3 => 50,
        4 => 60,
        _ => 100,
    }
}

/// docs/rules.md §3.2: the tier an effect's value gives.
fn effect_tier(value: i64) -> &'static str {
    match value {
        ..=3 => "x",
        4 | 5 => "y",
        _ => "z",
    }
}

fn check(ruleset: &str, where_: &str, action: &Value, dice: &[u32], explanation: &Explanation, want: &Value) -> usize {
    let mut checked = 0;
    for lang in [Lang::En, Lang::Ru] {
        let lines = explanation.lines(lang);
        let context = format!("{where_} ({lang:?})\n{}\noutcome {want}", lines.join("\n"));
        for line in &lines {
            for doubled in ["+ −", "− −", "+ +", "− +", "+ -"] {
                assert!(!line.contains(doubled), "a doubled sign {doubled:?}: {context}");
            }
        }
        let mut at = 0;
        let mut owners: Vec<(u32, String)> = Vec::new();
        if !explanation.dice.is_empty() {
            let read = read_dice(&lines[at]);
            at += 1;
            let faces: Vec<u32> = read.iter().map(|(face, _, _)| *face).collect();
            assert_eq!(faces.as_slice(), &dice[..faces.len().min(dice.len())], "the script's dice: {context}");
            let expected = sides_of(ruleset, action, faces.len());
            let named: Vec<&str> = read.iter().map(|(_, who, _)| who.as_str()).collect();
            let expected: Vec<&str> = expected.iter().take(named.len()).map(String::as_str).collect();
            assert_eq!(named, expected, "each die credited to its side: {context}");
            owners = read.iter().map(|(face, who, _)| (*face, who.clone())).collect();
            checked += named.len();
        }
        let mut totals = std::collections::BTreeMap::new();
        for sum in &explanation.sums {
            let read = read_sum(&lines[at]);
            at += 1;
            assert_eq!(read.evaluated(), read.value, "the written arithmetic gives the written value: {context}");
            let names: Vec<&str> = read.pieces.iter().map(|p| p.name.as_str()).filter(|n| !n.is_empty()).collect();
            let unique: std::collections::BTreeSet<&&str> = names.iter().collect();
            assert_eq!(unique.len(), names.len(), "no term named twice: {context}");
            // A side's sum holds only that side's dice.
            if let Some(who) = &read.who {
                // (A bare number subtracted is the rules' constant, not a die.)
                for face in read.pieces.iter().filter(|p| p.name.is_empty() && !p.minus) {
                    let ok = owners.iter().any(|(f, w)| i64::from(*f) == face.value && w == who);
                    assert!(ok || owners.is_empty(), "a die in {who}'s sum is {who}'s: {context}");
                }
            }
            let recorded = |name: &str| want.get(name).and_then(Value::as_i64);
            let expected = match sum.key {
                "total" => recorded("total"),
                "sum" => recorded("sum"),
                "total_skill" => recorded("total_skill"),
                "diff" => recorded("diff"),
                "turns" => recorded("turns"),
                _ => None,
            };
            if let Some(expected) = expected {
                assert_eq!(read.value, expected, "{}: the recorded number: {context}", sum.key);
                checked += 1;
            }
            match sum.key {
                "attacker_total" | "defender_total" => {
                    let id = if sum.key == "attacker_total" { "attacker" } else { "defender" };
                    assert_eq!(read.who.as_deref(), action[id]["id"].as_str(), "{}'s side: {context}", sum.key);
                    totals.insert(sum.key, read.value);
                }
                "diff" => {
                    let [a, d] = read.pieces.as_slice() else { panic!("A − D: {context}") };
                    assert!(!a.minus && d.minus, "the difference subtracts D: {context}");
                    assert_eq!(Some(&a.value), totals.get("attacker_total"), "A as its line gives it: {context}");
                    assert_eq!(Some(&d.value), totals.get("defender_total"), "D as its line gives it: {context}");
                    checked += 2;
                }
                "effective_die" => {
                    assert_eq!(Some(reduction(read.value)), recorded("reduction_percent"), "§1.3: {context}");
                    checked += 1;
                }
                "effect_value" => {
                    assert_eq!(Some(effect_tier(read.value)), want["tier"].as_str(), "§3.2: {context}");
                    checked += 1;
                }
                _ => {}
            }
        }
        for product in &explanation.products {
            let (factors, value) = read_product(&lines[at]);
            at += 1;
            let recorded = |name: &str| want.get(name).and_then(Value::as_i64);
            let expected = match product.key {
                "damage" => {
                    let mut n: u128 = 1;
                    let mut d: u128 = 1;
                    for factor in &factors {
                        let (a, b) = fraction(factor);
                        n *= a;
                        d *= b;
                    }
                    assert_eq!(round_half_up(n, d), value, "round(power × multiplier × hits): {context}");
                    recorded("damage")
                }
                "damage_after" => {
                    let incoming: u128 = factors[0].parse().expect("incoming damage");
                    let kept: u128 = factors[1].trim_end_matches('%').parse().expect("a percentage kept");
                    assert_eq!(round_half_up(incoming * kept, 100), value, "round(incoming × kept %): {context}");
                    recorded("damage_after")
                }
                "attacker_damage" | "defender_damage" => recorded(product.key),
                "effect_strength" => recorded("value"),
                _ => None,
            };
            if let Some(expected) = expected {
                assert_eq!(value, expected, "{}: the recorded number: {context}", product.key);
                checked += 1;
            }
        }
    }
    checked
}

fn read_back(ruleset: &str) {
    let (mut actions, mut numbers) = (0, 0);
    for (script_path, expected_path) in vector_walk::scripts() {
        actions += vector_walk::walk(&script_path, &expected_path, Some(ruleset), |step| {
            let explanation = explain(step.battle, step.version, step.action, step.faces, step.outcome);
            numbers += check(ruleset, step.place, step.raw_action, step.faces, &explanation, step.want);
        });
    }
    assert!(actions > 20, "{ruleset}: only {actions} actions read back");
    assert!(numbers > 20, "{ruleset}: only {numbers} numbers and sides checked");
}

#[test]
fn pokemon_v1_explanations_read_back() {
    read_back("pokemon-d6@1");
}

#[test]
fn pokemon_v2_explanations_read_back() {
    read_back("pokemon-d6@2");
}

#[test]
fn arcana_v1_explanations_read_back() {
    read_back("arcana-2d10@1");
}

#[test]
fn arcana_v2_explanations_read_back() {
    read_back("arcana-2d10@2");
}

#[test]
fn berserk_v1_explanations_read_back() {
    read_back("berserk@1");
}

#[test]
fn berserk_v2_explanations_read_back() {
    read_back("berserk@2");
}

#[test]
fn pbta_v1_explanations_read_back() {
    read_back("pbta-2d6@1");
}

#[test]
fn pbta_v2_explanations_read_back() {
    read_back("pbta-2d6@2");
}
