//! `battlelog rules schemas`: the real binary writes every ruleset
//! version's schemas, and what it writes is exactly what the repository
//! keeps in docs/schemas — so a change to the rules' types that changes a
//! schema fails here until the files are written again with
//! `cargo run -p battlelog-cli -- rules schemas --out docs/schemas`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const REGENERATE: &str = "cargo run -p battlelog-cli -- rules schemas --out docs/schemas";

/// Every file under `dir`, by its path relative to `dir`, with its bytes.
fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, files: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                walk(root, &path, files);
            } else {
                let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                files.insert(path.strip_prefix(root).expect("under the root").to_owned(), bytes);
            }
        }
    }
    let mut files = BTreeMap::new();
    walk(dir, dir, &mut files);
    files
}

#[test]
fn the_committed_schemas_are_what_the_rules_generate() {
    let out = tempfile::tempdir().expect("a temporary directory");
    let run = Command::new(env!("CARGO_BIN_EXE_battlelog"))
        .args(["rules", "schemas", "--out"])
        .arg(out.path())
        .output()
        .expect("the battlelog binary runs");
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    assert!(String::from_utf8_lossy(&run.stdout).contains("wrote 24 schemas"));

    let generated = tree(out.path());
    // Eight versions, three documents each, named after the version.
    assert_eq!(generated.len(), 24);
    let rulesets = [
        "pokemon-d6@1",
        "pokemon-d6@2",
        "arcana-2d10@1",
        "arcana-2d10@2",
        "berserk@1",
        "berserk@2",
        "pbta-2d6@1",
        "pbta-2d6@2",
    ];
    for ruleset in rulesets {
        for name in ["sheet", "action", "outcome"] {
            let path = PathBuf::from(ruleset).join(format!("{name}.schema.json"));
            let text = generated.get(&path).unwrap_or_else(|| panic!("{} was not written", path.display()));
            let document: serde_json::Value = serde_json::from_slice(text).expect("JSON");
            assert_eq!(document["$schema"], "https://json-schema.org/draft/2020-12/schema");
        }
    }

    let committed_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/schemas");
    let committed = tree(&committed_dir);
    let stale: Vec<_> = committed.keys().filter(|path| !generated.contains_key(*path)).collect();
    let differing: Vec<_> =
        generated.iter().filter(|(path, bytes)| committed.get(*path) != Some(*bytes)).map(|(path, _)| path).collect();
    assert!(
        stale.is_empty() && differing.is_empty(),
        "docs/schemas is out of date (differs: {differing:?}; not generated any more: {stale:?}); \
         regenerate it with `{REGENERATE}` (and remove the stale files)"
    );
}
