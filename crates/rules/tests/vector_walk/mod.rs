//! The walk over the rules vectors that the explanation tests share: every
//! script of `rules/` and `rules-next/` (under `$BATTLELOG_VECTORS` or
//! `<workspace>/tests/vectors`; a missing directory fails), and each of its
//! action lines with the battle as it stood before it and the *expected*
//! outcome (read from `*.expected.jsonl`, never from this crate's output).

use std::path::{Path, PathBuf};

use rules::action::Action;
use rules::model::{Battle, OpenBattle, Version};
use rules::outcome::Outcome;
use serde_json::Value;

fn vectors_dir() -> PathBuf {
    match std::env::var_os("BATTLELOG_VECTORS") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors"),
    }
}

/// Every `(script, expected)` pair of `rules/` and `rules-next/`, sorted
/// within each. Panics when a directory is missing or holds no script.
pub fn scripts() -> Vec<(PathBuf, PathBuf)> {
    let mut pairs = Vec::new();
    for name in ["rules", "rules-next"] {
        let dir = vectors_dir().join(name);
        let entries = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("the rules vectors directory {} is required: {e}", dir.display()));
        let mut found: Vec<(PathBuf, PathBuf)> = entries
            .map(|entry| entry.expect("a readable directory entry").path())
            .filter_map(|path| {
                let stem = path.file_name()?.to_str()?.strip_suffix(".script.jsonl")?.to_owned();
                Some((path.clone(), dir.join(format!("{stem}.expected.jsonl"))))
            })
            .collect();
        assert!(!found.is_empty(), "no *.script.jsonl in {}", dir.display());
        found.sort();
        pairs.extend(found);
    }
    pairs
}

/// One action line of a script, as the walk hands it over.
pub struct Step<'a> {
    /// The battle right before the action.
    pub battle: &'a Battle,
    pub version: Version,
    pub action: &'a Action,
    /// The action as the script writes it.
    pub raw_action: &'a Value,
    /// The script's dice, in draw order.
    pub faces: &'a [u32],
    /// The expected line's outcome fields.
    pub want: &'a Value,
    pub outcome: &'a Outcome,
    /// `<script> action <version>`, for messages.
    pub place: &'a str,
}

/// Walks the script at `script_path` with the expected file beside it, if
/// its battle opens with `ruleset` (any when `None`): each action line that
/// reads and has an expected outcome is handed to `visit`, then that
/// outcome is folded in. Returns how many lines were visited.
pub fn walk(
    script_path: &Path,
    expected_path: &Path,
    ruleset: Option<&str>,
    mut visit: impl FnMut(&Step<'_>),
) -> usize {
    let script =
        std::fs::read_to_string(script_path).unwrap_or_else(|e| panic!("{} is required: {e}", script_path.display()));
    let mut lines = script.lines().filter(|line| !line.trim().is_empty());
    let open: Value = serde_json::from_str(lines.next().expect("an open line")).expect("json");
    if ruleset.is_some_and(|ruleset| open["open"]["ruleset"] != ruleset) {
        return 0;
    }
    let expected = std::fs::read_to_string(expected_path)
        .unwrap_or_else(|e| panic!("{} is required: {e}", expected_path.display()));
    let open: OpenBattle = serde_json::from_value(open["open"].clone()).expect("an opening");
    let mut battle = Battle::open(&open).expect("the battle opens");
    let expected: Vec<Value> = expected
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).expect("json"))
        .collect();
    let mut visited = 0;
    for (version, (line, want)) in (0u64..).zip(lines.zip(&expected)) {
        let line: Value = serde_json::from_str(line).expect("json");
        let Ok(action) = serde_json::from_value::<Action>(line["action"].clone()) else { continue };
        let Some(want) = want.get("outcome") else { continue };
        let faces: Vec<u32> = line["dice"]
            .as_array()
            .map(|dice| dice.iter().filter_map(|d| d.as_u64().and_then(|d| u32::try_from(d).ok())).collect())
            .unwrap_or_default();
        let outcome = Outcome::from_json(action.kind(), want.clone()).expect("the expected outcome reads");
        let place = format!("{} action {version}", script_path.display());
        visit(&Step {
            battle: &battle,
            version,
            action: &action,
            raw_action: &line["action"],
            faces: &faces,
            want,
            outcome: &outcome,
            place: &place,
        });
        visited += 1;
        battle = battle.apply(version, &action, &outcome).unwrap_or_else(|e| panic!("{place}: {e}"));
    }
    visited
}
