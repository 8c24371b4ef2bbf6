//! `battlelog rules play` as a judge runs it: the real binary on every
//! rules vector script, on stdin, and on scripts with bad lines.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn battlelog(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_battlelog"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the battlelog binary runs");
    let mut input = child.stdin.take().expect("a stdin pipe");
    input.write_all(stdin.unwrap_or_default().as_bytes()).expect("stdin takes the script");
    drop(input);
    child.wait_with_output().expect("the battlelog binary finishes")
}

fn vectors() -> PathBuf {
    std::env::var_os("BATTLELOG_VECTORS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors"))
}

fn rules_vectors() -> PathBuf {
    vectors().join("rules")
}

/// The scripts of `rules/` and of `rules-next/` (the versions issue 25
/// added: berserk@2, pbta-2d6@2), both required.
fn scripts() -> Vec<PathBuf> {
    let mut scripts: Vec<PathBuf> = Vec::new();
    for dir in [rules_vectors(), vectors().join("rules-next")] {
        let entries = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("the rules vectors directory {} is required: {e}", dir.display()));
        scripts.extend(
            entries
                .map(|entry| entry.expect("a readable directory entry").path())
                .filter(|path| path.to_str().is_some_and(|name| name.ends_with(".script.jsonl"))),
        );
    }
    scripts.sort();
    let dir = vectors();
    assert!(!scripts.is_empty(), "no *.script.jsonl in {}", dir.display());
    // Both versions of every ruleset must be there (docs/rules.md §6).
    for prefix in ["pokemon-", "pokemon2-", "arcana-", "arcana2-", "berserk-", "berserk2-", "pbta-", "pbta2-"] {
        assert!(
            scripts.iter().any(|s| s.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(prefix))),
            "no {prefix}* vectors in {}",
            dir.display()
        );
    }
    scripts
}

fn expected_for(script: &Path) -> Vec<Value> {
    let path = PathBuf::from(script.to_str().expect("a UTF-8 path").replace(".script.jsonl", ".expected.jsonl"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{} is required: {e}", path.display()));
    text.lines().filter(|line| !line.trim().is_empty()).map(|line| serde_json::from_str(line).expect("JSON")).collect()
}

fn stdout_lines(output: &Output) -> Vec<Value> {
    assert!(output.status.success(), "exit status {:?}: {}", output.status, String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8(output.stdout.clone()).expect("UTF-8 stdout");
    stdout.lines().map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{line:?}: {e}"))).collect()
}

/// Every field `expected` has is in `actual` with the same value.
fn contains(actual: &Value, expected: &Value) -> bool {
    match (actual, expected) {
        (Value::Object(actual), Value::Object(expected)) => {
            expected.iter().all(|(key, value)| actual.get(key).is_some_and(|found| contains(found, value)))
        }
        _ => actual == expected,
    }
}

fn assert_refused(output: &Output, needle: &str) {
    assert_eq!(output.status.code(), Some(2), "exit status");
    assert!(output.stdout.is_empty(), "stdout must stay empty: {:?}", String::from_utf8_lossy(&output.stdout));
    let stderr = String::from_utf8(output.stderr.clone()).expect("UTF-8 stderr");
    assert_eq!(stderr.lines().count(), 1, "one line on stderr: {stderr:?}");
    assert!(stderr.contains(needle), "{stderr:?} should mention {needle:?}");
}

const OPEN: &str = r#"{"open": {"ruleset": "pokemon-d6@1", "participants": [{"id": "pikachu"}, {"id": "meowth"}]}}"#;

#[test]
fn every_vector_script_prints_its_expected_lines() {
    for script in scripts() {
        let path = script.to_str().expect("a UTF-8 path");
        let got = stdout_lines(&battlelog(&["rules", "play", "--script", path], None));
        let expected = expected_for(&script);
        assert_eq!(got.len(), expected.len(), "{path}: number of lines");
        for (index, (got, want)) in got.iter().zip(&expected).enumerate() {
            assert!(contains(got, want), "{path} action line {index}:\n  expected {want}\n  got      {got}");
            if got.get("outcome").is_some() {
                assert!(got["summary_ru"].is_string() && got["summary_en"].is_string(), "{path}: summaries");
            }
        }
    }
}

#[test]
fn a_dash_reads_the_script_from_stdin() {
    let script = scripts().into_iter().next().expect("a vector script");
    let text = std::fs::read_to_string(&script).expect("readable");
    let from_file = battlelog(&["rules", "play", "--script", script.to_str().expect("UTF-8")], None);
    let from_stdin = battlelog(&["rules", "play", "--script", "-"], Some(&text));
    assert_eq!(stdout_lines(&from_stdin), stdout_lines(&from_file));
}

#[test]
fn rejections_and_wrong_dice_are_lines_of_their_own() {
    let script = [
        OPEN,
        r#"{"action": {"type": "attack", "actor": "pikachu", "target": "meowth", "move": "Tackle", "power": 80}, "dice": [2]}"#,
        r#"{"action": {"type": "attack", "actor": "pikachu", "target": "meowth", "move": "Tackle"}, "dice": [4, 4]}"#,
        r#"{"action": {"type": "attack", "actor": "pikachu", "target": "mew", "move": "Tackle"}, "dice": [4]}"#,
        r#"{"action": {"type": "dodge", "actor": "meowth"}, "dice": [0]}"#,
        r#"{"action": {"type": "ruling", "judge": "Oak", "refers_to": 0, "text": "ok"}}"#,
    ]
    .join("\n");
    let lines = stdout_lines(&battlelog(&["rules", "play", "--script", "-"], Some(&script)));
    assert_eq!(lines.len(), 5);
    assert_eq!(lines[0]["outcome"]["damage"], 27);
    // 80 × 1/3 = 26.67, rounded half up: 27 (docs/rules.md §1.1); the wording is
    // the rules crate's own, locked here (docs/rules.md §5.3 fixes no words).
    assert_eq!(lines[0]["summary_en"], "pikachu → meowth, Tackle: hit ×1/3, 27 damage");
    assert!(lines[1]["error"].as_str().is_some_and(|e| e.contains("needs 1 dice")), "{}", lines[1]);
    assert!(lines[2]["rejected"].as_str().is_some_and(|e| e.contains("mew")), "{}", lines[2]);
    assert!(lines[3]["error"].as_str().is_some_and(|e| e.contains("face 0")), "{}", lines[3]);
    assert_eq!(lines[4]["outcome"], serde_json::json!({"result": "ruling", "refers_to": 0, "overridden": false}));
}

/// An action the resolver would refuse as unreadable (INVALID_ARGUMENT
/// naming the field) is refused on its own line, naming the same field, and
/// the battle goes on: the line keeps its index, and what follows plays.
#[test]
fn an_unreadable_action_is_a_refused_line_naming_its_field_and_the_script_goes_on() {
    let script = [
        r#"{"open": {"ruleset": "pokemon-d6@2", "participants": [{"id": "pikachu"}, {"id": "meowth"}]}}"#,
        r#"{"action": {"type": "attack", "actor": "pikachu", "target": "meowth", "move": "Tackle", "power": 40}, "dice": [4]}"#,
        r#"{"action": {"type": "dodge", "actor": "meowth", "against": -1}, "dice": [3]}"#,
        r#"{"action": {"type": "fly", "actor": "meowth"}}"#,
        r#"{"action": {"type": "pass", "actor": "pikachu", "fast": true}}"#,
        r#"{"action": {"type": "dodge", "actor": "meowth", "against": 0}, "dice": [3]}"#,
    ]
    .join("\n");
    let lines = stdout_lines(&battlelog(&["rules", "play", "--script", "-"], Some(&script)));
    assert_eq!(lines.len(), 5, "one line per action line: {lines:?}");
    assert!(lines[0].get("outcome").is_some(), "{}", lines[0]);
    let refused = |line: &Value, field: &str| {
        let text = line["rejected"].as_str().unwrap_or_else(|| panic!("a refused line: {line}"));
        assert!(text.starts_with(&format!("{field}: ")), "{text:?} names {field}, as the resolver does");
    };
    refused(&lines[1], "action.against");
    assert!(lines[1]["rejected"].as_str().is_some_and(|t| t.contains("-1")), "{}", lines[1]);
    refused(&lines[2], "action.type");
    assert!(lines[2]["rejected"].as_str().is_some_and(|t| t.contains("fly")), "{}", lines[2]);
    refused(&lines[3], "action.fast");
    // The battle went on: the dodge of the attack at index 0 plays (a 40
    // power hit at p = 4 is 40 damage, die 3 takes 50 % off: 20).
    assert_eq!(lines[4]["outcome"]["damage_after"], 20, "{}", lines[4]);
}

#[test]
fn a_line_that_is_not_a_script_line_fails_the_run_naming_it() {
    let no_action = [OPEN, r#"{"action": {"type": "pass", "actor": "pikachu"}}"#, r#"{"act": {"type": "pass"}}"#];
    assert_refused(&battlelog(&["rules", "play", "--script", "-"], Some(&no_action.join("\n"))), "line 3");
    let bad_dice = [OPEN, r#"{"action": {"type": "pass", "actor": "pikachu"}, "dice": ["six"]}"#];
    assert_refused(&battlelog(&["rules", "play", "--script", "-"], Some(&bad_dice.join("\n"))), "line 2");
    let bad_json = [OPEN, "", "{oops"];
    assert_refused(&battlelog(&["rules", "play", "--script", "-"], Some(&bad_json.join("\n"))), "line 3");
    let no_open = r#"{"action": {"type": "pass", "actor": "pikachu"}}"#;
    assert_refused(&battlelog(&["rules", "play", "--script", "-"], Some(no_open)), "line 1");
    let unknown = r#"{"open": {"ruleset": "pokemon-d6@9", "participants": [{"id": "a"}]}}"#;
    assert_refused(&battlelog(&["rules", "play", "--script", "-"], Some(unknown)), "unknown version");
}

#[test]
fn a_missing_script_file_fails() {
    let missing = rules_vectors().join("no-such-script.jsonl");
    assert_refused(
        &battlelog(&["rules", "play", "--script", missing.to_str().expect("UTF-8")], None),
        "no-such-script",
    );
    assert_eq!(battlelog(&["rules", "play"], None).status.code(), Some(2));
}

#[test]
fn help_documents_the_output_and_the_failures() {
    let output = battlelog(&["rules", "play", "--help"], None);
    assert!(output.status.success());
    let help = String::from_utf8(output.stdout).expect("UTF-8 help");
    for needle in ["--script", "{\"rejected\": \"reason\"}", "{\"error\": \"...\"}", "exit status 2", "stdin"] {
        assert!(help.contains(needle), "help should mention {needle:?}:\n{help}");
    }
}
