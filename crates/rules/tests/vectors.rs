//! Known-answer tests from the independent implementation
//! (`tests/vectors/rules/*.script.jsonl` → `*.expected.jsonl`, and the
//! same for `tests/vectors/rules-next/`), read at test time from
//! `$BATTLELOG_VECTORS` or `<workspace>/tests/vectors`. A missing
//! directory or file fails; nothing is skipped. Both versions of every
//! ruleset are covered: `pokemon-*`, `arcana-*`, `berserk-*` and `pbta-*`
//! open `@1` battles, `pokemon2-*` / `arcana2-*` (in `rules/`) and
//! `berserk2-*` / `pbta2-*` (in `rules-next/`) open `@2` ones.

// The crate's clippy.toml forbids I/O for the crate; this test reads the
// vectors from disk, which is what a test is allowed to do.
#![allow(clippy::disallowed_methods)]

use std::path::{Path, PathBuf};

use serde_json::Value;

fn vectors_dir() -> PathBuf {
    match std::env::var_os("BATTLELOG_VECTORS") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors"),
    }
}

/// The vector directories and the families each must hold.
const DIRECTORIES: [(&str, &[&str]); 2] = [
    // `pokemon2-*` and `arcana2-*` are the `@2` vectors of docs/rules.md §6.1 and
    // §6.2; the bare names are `@1`'s, which must keep passing.
    ("rules", &["pokemon-", "pokemon2-", "arcana-", "arcana2-", "berserk-", "pbta-"]),
    // docs/rules.md §6.3 and §6.4.
    ("rules-next", &["berserk2-", "pbta2-"]),
];

/// Every `(script, expected)` pair of every directory, sorted by name
/// within each. Panics when a directory or a family has none.
fn scripts() -> Vec<(PathBuf, PathBuf)> {
    DIRECTORIES.iter().flat_map(|(name, families)| scripts_in(name, families)).collect()
}

fn scripts_in(name: &str, families: &[&str]) -> Vec<(PathBuf, PathBuf)> {
    let dir = vectors_dir().join(name);
    let entries = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("the rules vectors directory {} is required: {e}", dir.display()));
    let mut pairs: Vec<(PathBuf, PathBuf)> = entries
        .map(|entry| entry.expect("a readable directory entry").path())
        .filter_map(|path| {
            let name = path.file_name()?.to_str()?.strip_suffix(".script.jsonl")?.to_owned();
            Some((path.clone(), dir.join(format!("{name}.expected.jsonl"))))
        })
        .collect();
    pairs.sort();
    assert!(!pairs.is_empty(), "no *.script.jsonl in {}", dir.display());
    for family in families {
        assert!(
            pairs
                .iter()
                .any(|(script, _)| script.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(family))),
            "no {family} vectors in {}",
            dir.display()
        );
    }
    pairs
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{} is required: {e}", path.display()))
}

/// Every field `expected` has must be in `actual` with the same value;
/// objects recursively, everything else exactly.
fn contains(actual: &Value, expected: &Value) -> bool {
    match (actual, expected) {
        (Value::Object(actual), Value::Object(expected)) => {
            expected.iter().all(|(key, value)| actual.get(key).is_some_and(|found| contains(found, value)))
        }
        _ => actual == expected,
    }
}

/// The `@2` scripts really open `@2` battles, and the `@1` ones `@1`
/// battles: a vector renamed or regenerated under the other version fails.
#[test]
fn each_vector_family_opens_its_own_version() {
    for (script, _) in scripts() {
        let name = script.file_name().and_then(|n| n.to_str()).expect("a UTF-8 name").to_owned();
        let first = read(&script).lines().find(|line| !line.trim().is_empty()).map(str::to_owned).unwrap_or_default();
        let open: Value = serde_json::from_str(&first).unwrap_or_else(|e| panic!("{name}: {e}"));
        let ruleset = open["open"]["ruleset"].as_str().unwrap_or_else(|| panic!("{name}: no ruleset"));
        let want = match name.split('-').next() {
            Some("pokemon") => "pokemon-d6@1",
            Some("pokemon2") => "pokemon-d6@2",
            Some("arcana") => "arcana-2d10@1",
            Some("arcana2") => "arcana-2d10@2",
            Some("berserk") => "berserk@1",
            Some("pbta") => "pbta-2d6@1",
            Some("berserk2") => "berserk@2",
            Some("pbta2") => "pbta-2d6@2",
            other => panic!("{name}: unknown vector family {other:?}"),
        };
        assert_eq!(ruleset, want, "{name}");
    }
}

#[test]
fn every_rules_vector_script_gives_its_expected_lines() {
    let mut checked = 0;
    for (script_path, expected_path) in scripts() {
        let expected: Vec<Value> = read(&expected_path)
            .lines()
            .filter(|line| !line.trim().is_empty())
            .map(|line| serde_json::from_str(line).expect("expected lines are JSON"))
            .collect();
        let output =
            rules::script::play(&read(&script_path)).unwrap_or_else(|e| panic!("{}: {e}", script_path.display()));
        assert_eq!(output.len(), expected.len(), "{}: number of output lines", script_path.display());
        for (index, (line, want)) in output.iter().zip(&expected).enumerate() {
            let got = serde_json::to_value(line).expect("output lines serialise");
            assert!(
                contains(&got, want),
                "{} action line {index}:\n  expected {want}\n  got      {got}",
                script_path.display()
            );
            checked += 1;
        }
    }
    assert!(checked > 0, "no expected line was checked");
}
