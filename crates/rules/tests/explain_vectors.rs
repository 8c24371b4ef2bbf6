//! The explanations add up: for every action line of every rules vector
//! script (`$BATTLELOG_VECTORS` or `<workspace>/tests/vectors`, `rules/`
//! and `rules-next/`; a missing directory fails), the explanation of the
//! *expected* outcome (read from `*.expected.jsonl`, never from this
//! crate's output) has sums and products that give the outcome's numbers,
//! and rows whose result is the outcome's result.

// The crate's clippy.toml forbids I/O for the crate; this test reads the
// vectors from disk, which is what a test is allowed to do.
#![allow(clippy::disallowed_methods)]

mod vector_walk;

use rules::action::Action;
use rules::explain::{Explanation, explain};
use serde_json::Value;

fn sum(explanation: &Explanation, key: &str) -> Option<i64> {
    explanation.sums.iter().find(|sum| sum.key == key).map(|sum| sum.value)
}

fn product(explanation: &Explanation, key: &str) -> Option<i64> {
    explanation.products.iter().find(|product| product.key == key).map(|product| product.value)
}

/// The result the last deciding row gives.
fn gives(explanation: &Explanation) -> Option<&str> {
    explanation.rows.iter().rev().find_map(|row| row.gives.as_deref())
}

fn field<'a>(outcome: &'a Value, name: &str) -> &'a Value {
    outcome.get(name).unwrap_or(&Value::Null)
}

/// Checks one explanation against the expected outcome's JSON; returns how
/// many numbers it checked.
fn check(where_: &str, action: &Action, explanation: &Explanation, outcome: &Value) -> usize {
    let text = |name| field(outcome, name).as_str().unwrap_or_default().to_owned();
    let int = |name| field(outcome, name).as_i64();
    let mut checked = 0;
    let mut same = |what: &str, got: Option<i64>, want: Option<i64>| {
        assert_eq!(got, want, "{where_}: {what}\n{explanation:#?}\noutcome {outcome}");
        checked += 1;
    };
    match action {
        Action::Move(_) => {
            same("total", sum(explanation, "total"), int("total"));
            assert_eq!(gives(explanation), Some(text("result").as_str()), "{where_}: {explanation:#?}");
        }
        Action::Cast(_) | Action::Defend(_) => {
            same("sum", sum(explanation, "sum"), int("sum"));
            same("total_skill", sum(explanation, "total_skill"), int("total_skill"));
            let cast_row = explanation.rows.iter().find(|row| row.key.starts_with("arcana.sum"));
            assert_eq!(cast_row.and_then(|row| row.gives.as_deref()), Some(text("result").as_str()), "{where_}");
            if let Action::Defend(_) = action {
                let lands = if field(outcome, "attack_lands") == &Value::Bool(true) {
                    "attack_lands"
                } else {
                    "attack_stopped"
                };
                assert_eq!(gives(explanation), Some(lands), "{where_}: {explanation:#?}");
            }
        }
        Action::Strike(_) | Action::ExchangeChoice(_) => {
            if let Some(diff) = int("diff").filter(|_| matches!(action, Action::Strike(_))) {
                same("diff", sum(explanation, "diff"), Some(diff));
            }
            let tiers = format!("{}/{}", text("attacker_tier"), text("defender_tier"));
            assert_eq!(gives(explanation), Some(tiers.as_str()), "{where_}: {explanation:#?}");
            if matches!(action, Action::Strike(_)) {
                for key in ["attacker_damage", "defender_damage"] {
                    if let Some(damage) = int(key) {
                        same(key, product(explanation, key), Some(damage));
                    }
                }
            }
        }
        Action::Effect(_) => {
            assert_eq!(gives(explanation), Some(text("tier").as_str()), "{where_}");
            same("value", product(explanation, "effect_strength"), int("value"));
        }
        Action::Attack(_) => {
            assert_eq!(gives(explanation), Some(text("result").as_str()), "{where_}: {explanation:#?}");
            if let Some(damage) = int("damage") {
                same("damage", product(explanation, "damage"), Some(damage));
            }
        }
        Action::StatusMove(_) => {
            let result = text("result");
            assert_eq!(gives(explanation), Some(result.as_str()), "{where_}: {explanation:#?}");
            if result == "success" || result == "self_hit" {
                same("turns", sum(explanation, "turns"), int("turns"));
            }
        }
        Action::Dodge(_) => match field(outcome, "result").as_str() {
            Some("not_needed") | Some("flinched") => {
                assert_eq!(gives(explanation), Some(text("result").as_str()), "{where_}");
            }
            _ => {
                let counted = field(outcome, "counted") == &Value::Bool(true);
                let want =
                    format!("{}%{}", int("reduction_percent").unwrap_or(-1), if counted { "" } else { " not_counted" });
                assert_eq!(gives(explanation), Some(want.as_str()), "{where_}: {explanation:#?}");
                if let Some(after) = int("damage_after") {
                    same("damage_after", product(explanation, "damage_after"), Some(after));
                }
            }
        },
        Action::Metronome(_) => {
            assert_eq!(gives(explanation), Some(text("picked").as_str()), "{where_}");
        }
        _ => {}
    }
    checked
}

#[test]
fn every_explanation_adds_up_to_the_vectors_outcome() {
    let (mut actions, mut numbers) = (0, 0);
    for (script_path, expected_path) in vector_walk::scripts() {
        actions += vector_walk::walk(&script_path, &expected_path, None, |step| {
            let explanation = explain(step.battle, step.version, step.action, step.faces, step.outcome);
            // The action as the script writes it, so a failure names it.
            let place = format!("{} {}", step.place, step.raw_action);
            numbers += check(&place, step.action, &explanation, step.want);
        });
    }
    assert!(actions > 100, "only {actions} actions explained");
    assert!(numbers > 100, "only {numbers} numbers checked");
}
