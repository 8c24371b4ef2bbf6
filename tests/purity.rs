//! DESIGN.md invariant 7 and the layout's rule: `dice` and `rules` are pure —
//! no I/O, no clock, no randomness of their own. This reads their sources
//! and manifests, so a change that brings any of it in fails here.

use std::path::{Path, PathBuf};

/// What a pure crate must never name: files, sockets, processes, the
/// environment, the clock, threads, and randomness other than the roll's
/// own ChaCha20 stream.
const FORBIDDEN: &[&str] = &[
    "std::fs",
    "std::net",
    "std::process",
    "std::env",
    "std::thread",
    "std::time",
    "SystemTime",
    "Instant::now",
    "stdin()",
    "stdout()",
    "println!",
    "eprintln!",
    "tokio",
    "thread_rng",
    "OsRng",
    "getrandom",
    "from_entropy",
    "rand::random",
];

/// Runtime dependencies a pure crate may not have.
const IMPURE_DEPENDENCIES: &[&str] = &["tokio", "getrandom", "rand.", "sled", "tonic", "async-nats", "reqwest"];

fn crate_dir(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../crates").join(name)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a file without its comments: a comment naming `std::fs` is
/// no I/O. Test modules count too, so that nothing hides behind one.
fn code_of(text: &str) -> String {
    text.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n")
}

fn assert_pure(name: &str) {
    let dir = crate_dir(name);
    let mut files = Vec::new();
    rust_files(&dir.join("src"), &mut files);
    assert!(files.len() > 3, "{name}: found no sources under {}", dir.display());
    for file in files {
        let code = code_of(&std::fs::read_to_string(&file).expect("read source"));
        for word in FORBIDDEN {
            assert!(!code.contains(word), "{name} must stay pure, but {} uses {word}", file.display());
        }
    }
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).expect("read manifest");
    let dependencies = manifest.split("[dependencies]").nth(1).expect("a [dependencies] table");
    let dependencies = dependencies.split("\n[").next().unwrap_or_default();
    for line in dependencies.lines() {
        for impure in IMPURE_DEPENDENCIES {
            assert!(!line.trim_start().starts_with(impure), "{name} must stay pure, but depends on {line}");
        }
    }
}

#[test]
fn the_dice_crate_is_pure() {
    assert_pure("dice");
}

#[test]
fn the_rules_crate_is_pure() {
    assert_pure("rules");
}
