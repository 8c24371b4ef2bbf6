//! Every fuzz target over its checked-in seeds (`seeds/<target>/`) and a
//! few thousand random inputs made from them (`fuzz_targets::runner`):
//! the quick run of the targets in every CI run. `BATTLELOG_FUZZ_INPUTS`
//! sets the number of random inputs per target (default 2 000) and
//! `BATTLELOG_FUZZ_SEED` the run's seed (default fixed, so a failure
//! reproduces); a failure prints both and the input, in hex.

use std::path::PathBuf;

use fuzz_targets::{TARGETS, Target, runner};

const DEFAULT_INPUTS: usize = 2_000;

fn setting(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(text) => text.parse().unwrap_or_else(|_| panic!("{name}={text:?} is not a whole number")),
        Err(_) => default,
    }
}

fn seeds(target: &str) -> Vec<Vec<u8>> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("seeds").join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("a seed file").path())
        .collect();
    files.sort();
    files.iter().map(|path| std::fs::read(path).expect("read a seed")).collect()
}

fn exercise(name: &str, extra_seeds: Vec<Vec<u8>>) {
    let target: Target = TARGETS.iter().find(|(n, _)| *n == name).expect("a target").1;
    let mut seeds = seeds(name);
    assert!(!seeds.is_empty(), "no seeds for {name}");
    seeds.extend(extra_seeds);
    let count = usize::try_from(setting("BATTLELOG_FUZZ_INPUTS", DEFAULT_INPUTS as u64)).expect("a count");
    let run_seed = setting("BATTLELOG_FUZZ_SEED", 18);
    match runner::run(target, &seeds, count, run_seed) {
        Ok(runs) => assert_eq!(runs, seeds.len() + count),
        Err(failure) => panic!(
            "{name} failed with BATTLELOG_FUZZ_SEED={run_seed} BATTLELOG_FUZZ_INPUTS={count}: {}\ninput (hex): {}",
            failure.message,
            hex::encode(&failure.input)
        ),
    }
}

#[test]
fn dice_expression() {
    exercise("dice_expression", Vec::new());
}

#[test]
fn export_audit() {
    exercise("export_audit", Vec::new());
}

#[test]
fn bearer_token() {
    // Tokens valid now, beside the checked-in ones that are signed but
    // long-lived: both sides of every claim check get inputs.
    let key = fuzz_targets::token::signing_key();
    let fresh = ["forum-a", "judge \u{e9}"]
        .into_iter()
        .map(|subject| {
            let token =
                key.issue(subject, "tenant-a", battlelog_auth::Role::Judge, std::time::Duration::from_secs(3_600));
            format!("0Bearer {}", token.expect("issue")).into_bytes()
        })
        .collect();
    exercise("bearer_token", fresh);
}

#[test]
fn journal_decode() {
    exercise("journal_decode", Vec::new());
}

/// The runner reports a failing input rather than passing over it.
#[test]
fn the_runner_reports_a_failing_input() {
    fn fails_on_x(data: &[u8]) {
        assert!(!data.contains(&b'x'), "found an x");
    }
    let failure = runner::run(fails_on_x, &[b"ab".to_vec(), b"x".to_vec()], 0, 1).expect_err("x fails");
    assert_eq!((failure.input.as_slice(), failure.message.as_str()), (&b"x"[..], "found an x"));
    // Mutations reach an 'x' from seeds without one ('x' is not among the
    // interesting bytes; random bytes reach it).
    assert!(runner::run(fails_on_x, &[b"abc".to_vec()], 20_000, 1).is_err());
}
