//! The offline script player behind `battlelog rules play`: a judge's way
//! to ask "what would these dice have meant".
//!
//! A script is JSON Lines. Its first line opens the battle,
//! `{"open": {"ruleset": "pokemon-d6@1", "participants": [{"id": "pikachu"}]}}`;
//! every further line is `{"action": {"type": "attack", …}, "dice": [4, 2]}`
//! with the faces in draw order. Blank lines are skipped. An action line's
//! version (for `against` and `refers_to`) is its 0-based index among the
//! action lines: the player records every action line under that index as
//! its battle version (a rejected line or one with wrong dice keeps its
//! index but records nothing), so the index a script writes in a `defend`'s,
//! a `pokemon-d6@2` dodge's or a `berserk@2` exchange choice's `against`
//! is the version the library looks
//! up, with no rewriting — and a reference to a rejected line names no
//! resolved action.
//!
//! Each action line gives exactly one output line:
//! - `{"outcome": {…}, "summary_ru": "…", "summary_en": "…"}`;
//! - `{"rejected": "reason"}` when the rules forbid the action (the state
//!   is unchanged);
//! - `{"error": "…"}` when the dice do not fit the action (too few, too
//!   many, a face out of range); the state is unchanged as well.
//!
//! An action the rules cannot read (an unknown `type` or field, a value of
//! the wrong type or out of range, like `"against": -1`) is refused as the
//! resolver refuses it, on its line alone: `{"rejected": "action.against:
//! invalid value: …"}`, naming the field by the same path
//! ([`crate::read::action`]), and the battle goes on, as it would on the
//! server. A line that is not a script line at all — bad JSON, no `action`,
//! a top-level field other than `action` and `dice`, dice that are not
//! integers, a missing or invalid `open` — is a [`ScriptError`] for the
//! whole script, naming the line number: that is the script's own mistake,
//! not a request the server would have refused.

use serde::{Deserialize, Serialize};

use crate::action::Action;
use crate::dice_request::faces_from_integers;
use crate::error::ResolveError;
use crate::model::sheet::{OpenBattle, Version};
use crate::model::state::Battle;
use crate::outcome::Outcome;

/// One output line, serialised exactly as shown in the module docs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum ScriptLine {
    Outcome { outcome: Outcome, summary_ru: String, summary_en: String },
    Rejected { rejected: String },
    Error { error: String },
}

/// The script is not a valid script; `line` is 1-based in the input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {problem}")]
pub struct ScriptError {
    pub line: usize,
    pub problem: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct OpenLine {
    open: OpenBattle,
}

/// An action line as the script writes it: the action is read by
/// [`crate::read::action`] afterwards, so that an unreadable one is refused
/// on its own line, naming its field.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawActionLine {
    action: serde_json::Value,
    #[serde(default)]
    dice: Vec<i64>,
}

struct ActionLine {
    action: Action,
    dice: Vec<i64>,
}

/// Plays a whole script and returns one [`ScriptLine`] per action line.
pub fn play(script: &str) -> Result<Vec<ScriptLine>, ScriptError> {
    let mut lines =
        script.lines().enumerate().map(|(index, text)| (index + 1, text)).filter(|(_, text)| !text.trim().is_empty());
    let Some((open_line, open_text)) = lines.next() else {
        return Err(ScriptError {
            line: 1,
            problem: "the script is empty; it must start with an {\"open\": …} line".into(),
        });
    };
    let open: OpenLine = serde_json::from_str(open_text)
        .map_err(|err| ScriptError { line: open_line, problem: format!("not an open line: {}", json_problem(&err)) })?;
    let mut battle = Battle::open(&open.open)
        .map_err(|err| ScriptError { line: open_line, problem: format!("cannot open the battle: {err}") })?;

    let mut output = Vec::new();
    for (version, (line, text)) in (0..).zip(lines) {
        let raw: RawActionLine = serde_json::from_str(text)
            .map_err(|err| ScriptError { line, problem: format!("not an action line: {}", json_problem(&err)) })?;
        let action = match crate::read::action(raw.action) {
            Ok(action) => action,
            Err(unreadable) => {
                // The resolver's INVALID_ARGUMENT, in its words: the field's
                // path under `action`, then what is wrong with it.
                let field = unreadable.path_under("action");
                output.push(ScriptLine::Rejected { rejected: format!("{field}: {}", unreadable.message) });
                continue;
            }
        };
        let action_line = ActionLine { action, dice: raw.dice };
        let (next, printed) = play_line(&battle, version, &action_line);
        output.push(printed);
        if let Some(next) = next {
            battle = next;
        }
    }
    Ok(output)
}

fn play_line(battle: &Battle, version: Version, line: &ActionLine) -> (Option<Battle>, ScriptLine) {
    let resolved = faces_from_integers(&line.dice)
        .map_err(ResolveError::from)
        .and_then(|faces| battle.resolve(version, &line.action, &faces));
    match resolved {
        Ok(resolution) => (
            Some(resolution.battle),
            ScriptLine::Outcome {
                outcome: resolution.outcome,
                summary_ru: resolution.summary.ru,
                summary_en: resolution.summary.en,
            },
        ),
        Err(ResolveError::Rejected(rejection)) => (None, ScriptLine::Rejected { rejected: rejection.to_string() }),
        Err(error) => (None, ScriptLine::Error { error: error.to_string() }),
    }
}

/// serde_json's message with its "at line 1 column N" turned into a column:
/// each script line is parsed alone, so its line is always 1.
fn json_problem(err: &serde_json::Error) -> String {
    let message = err.to_string();
    let suffix = format!(" at line {} column {}", err.line(), err.column());
    match message.strip_suffix(&suffix) {
        Some(message) if err.column() > 0 => format!("{message} (column {})", err.column()),
        Some(message) => message.to_owned(),
        None => message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPEN: &str =
        r#"{"open": {"ruleset": "pokemon-d6@1", "participants": [{"id": "pikachu"}, {"id": "meowth"}]}}"#;

    fn play_lines(lines: &[&str]) -> Result<Vec<ScriptLine>, ScriptError> {
        play(&lines.join("\n"))
    }

    #[test]
    fn every_action_line_gives_one_output_line() {
        let output = play_lines(&[
            OPEN,
            "",
            r#"{"action": {"type": "pass", "actor": "pikachu"}, "dice": []}"#,
            r#"{"action": {"type": "dodge", "actor": "pikachu"}, "dice": [9]}"#,
            r#"{"action": {"type": "dodge", "actor": "ash"}, "dice": [3]}"#,
            r#"{"action": {"type": "dodge", "actor": "pikachu"}, "dice": [-1]}"#,
            r#"{"action": {"type": "dodge", "actor": "pikachu"}, "dice": [3]}"#,
        ])
        .expect("a valid script");
        assert_eq!(output.len(), 5);
        assert!(matches!(&output[0], ScriptLine::Outcome { summary_en, .. } if summary_en == "pikachu passes"));
        assert!(matches!(&output[1], ScriptLine::Error { error } if error.contains("face 9 is outside 1..=6")));
        assert!(matches!(&output[2], ScriptLine::Rejected { rejected } if rejected.contains("`ash`")));
        assert!(matches!(&output[3], ScriptLine::Error { error } if error.contains("face -1")));
        // The wrong dice left the state alone: this is the first counted dodge.
        let ScriptLine::Outcome { outcome: Outcome::Dodge(dodge), .. } = &output[4] else {
            panic!("expected a dodge outcome, got {:?}", output[4]);
        };
        assert_eq!(dodge.dodges_left, 4);
    }

    #[test]
    fn unreadable_actions_are_refused_on_their_line_naming_the_field() {
        let output = play_lines(&[
            OPEN,
            r#"{"action": {"type": "jump", "actor": "pikachu"}}"#,
            r#"{"action": {"type": "pass", "actor": "pikachu", "fast": 1}}"#,
            r#"{"action": {"type": "pass"}}"#,
            r#"{"action": 7}"#,
            r#"{"action": {"type": "pass", "actor": "pikachu"}}"#,
        ])
        .expect("a valid script");
        let rejected: Vec<String> = output
            .iter()
            .map(|line| match line {
                ScriptLine::Rejected { rejected } => rejected.clone(),
                other => format!("{other:?}"),
            })
            .collect();
        assert!(rejected[0].starts_with("action.type: unknown variant `jump`"), "{}", rejected[0]);
        assert!(rejected[1].starts_with("action.fast: unknown field `fast`"), "{}", rejected[1]);
        assert_eq!(rejected[2], "action: missing field `actor`");
        assert_eq!(rejected[3], "action: expected an object with a `type`, not number 7");
        assert!(matches!(&output[4], ScriptLine::Outcome { summary_en, .. } if summary_en == "pikachu passes"));
    }

    #[test]
    fn lines_that_are_not_script_lines_fail_the_script_with_their_number() {
        let error = play_lines(&[OPEN, r#"{"act": {"type": "pass", "actor": "pikachu"}}"#]).expect_err("no action");
        assert_eq!(error.line, 2);
        assert!(error.problem.contains("act"), "{error}");

        let error = play_lines(&[OPEN, "", r#"{"action": {"type": "pass", "actor": "pikachu"}, "dice": [1.5]}"#])
            .expect_err("dice that are not integers");
        assert_eq!(error.line, 3);

        let error = play_lines(&[OPEN, "{not json"]).expect_err("bad json");
        assert_eq!(error.line, 2);

        let error = play_lines(&[r#"{"action": {"type": "pass", "actor": "pikachu"}}"#]).expect_err("no open");
        assert_eq!(error.line, 1);

        let error = play_lines(&[r#"{"open": {"ruleset": "chess@1", "participants": [{"id": "a"}]}}"#])
            .expect_err("unknown ruleset");
        assert!(error.problem.contains("chess"), "{error}");

        let error = play("\n\n").expect_err("empty");
        assert_eq!(error.line, 1);
    }

    #[test]
    fn against_is_the_index_of_an_action_line() {
        let output = play_lines(&[
            r#"{"open": {"ruleset": "pokemon-d6@2", "participants": [{"id": "pikachu"}, {"id": "meowth"}]}}"#,
            r#"{"action": {"type": "pass", "actor": "pikachu"}}"#,
            "",
            r#"{"action": {"type": "attack", "actor": "pikachu", "target": "mew", "move": "Tackle"}, "dice": [4]}"#,
            r#"{"action": {"type": "attack", "actor": "pikachu", "target": "meowth", "move": "Tackle", "power": 40}, "dice": [4]}"#,
            r#"{"action": {"type": "dodge", "actor": "meowth", "against": 1}, "dice": [3]}"#,
            r#"{"action": {"type": "dodge", "actor": "meowth", "against": 2}, "dice": [3]}"#,
        ])
        .expect("a valid script");
        assert!(matches!(&output[1], ScriptLine::Rejected { .. }), "line 1 refers to an unknown Pokémon");
        // Index 1 is the rejected attack: nothing was recorded there.
        assert_eq!(
            serde_json::to_value(&output[3]).expect("serialisable"),
            serde_json::json!({"rejected": "against is not a resolved attack"})
        );
        // Index 2 is the 40-power hit (p = 4, ×1 = 40); die 3: 50 % off → 20.
        let ScriptLine::Outcome { outcome: Outcome::Dodge(dodge), .. } = &output[4] else {
            panic!("expected a dodge outcome, got {:?}", output[4]);
        };
        assert_eq!((dodge.reduction_percent, dodge.damage_after), (50, Some(20)));
    }

    #[test]
    fn a_script_without_actions_prints_nothing() {
        assert_eq!(play_lines(&[OPEN]), Ok(Vec::new()));
    }

    #[test]
    fn output_lines_serialise_as_documented() {
        let output = play_lines(&[
            OPEN,
            r#"{"action": {"type": "metronome", "actor": "pikachu", "moves": ["Ember", "Surf"]}, "dice": [2]}"#,
            r#"{"action": {"type": "metronome", "actor": "pikachu", "moves": []}, "dice": []}"#,
        ])
        .expect("a valid script");
        let json: Vec<serde_json::Value> =
            output.iter().map(|line| serde_json::to_value(line).expect("serialisable")).collect();
        assert_eq!(json[0]["outcome"], serde_json::json!({"picked": "Surf"}));
        assert_eq!(json[0]["summary_en"], "pikachu's Metronome picks Surf");
        assert_eq!(json[0]["summary_ru"], "Метроном у pikachu: выпадает «Surf»");
        assert_eq!(json[1], serde_json::json!({"rejected": "metronome needs at least one move"}));
    }
}
