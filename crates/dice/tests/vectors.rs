//! Known-answer tests from the independent implementation
//! (`tests/vectors/rolls.json`, or `$BATTLELOG_VECTORS/rolls.json`), read at
//! test time. A missing file fails.

// The crate's clippy.toml forbids I/O for the crate; this test reads the
// vectors from disk, which is what a test is allowed to do.
#![allow(clippy::disallowed_methods)]

// Shared with the CLI's tests (crates/cli/tests/roll.rs), which include it by path.
mod invalid_positions;

use std::path::PathBuf;

use dice::{Die, Expression, RollKey, RollStream, ServerSeed, WordSource, evaluate};
use invalid_positions::{invalid_at, last_position};
use serde::Deserialize;

#[derive(Debug, Deserialize)]
struct Vectors {
    protocol: String,
    vectors: Vec<Vector>,
    invalid: Vec<String>,
    seed_derivation: SeedDerivation,
}

#[derive(Debug, Deserialize)]
struct Vector {
    server_seed: String,
    client_seed: String,
    nonce: u64,
    notation: String,
    commitment: String,
    roll_key: String,
    first_words: Vec<u32>,
    total: i64,
    dice: Vec<Die>,
}

#[derive(Debug, Deserialize)]
struct SeedDerivation {
    master_key: String,
    battle_id: String,
    epoch: u32,
    server_seed: String,
    commitment: String,
}

fn vectors_dir() -> PathBuf {
    match std::env::var_os("BATTLELOG_VECTORS") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors"),
    }
}

fn load() -> Vectors {
    let path = vectors_dir().join("rolls.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("the known-answer file {} is required: {e}", path.display()));
    let vectors: Vectors = serde_json::from_str(&text).expect("rolls.json parses");
    assert_eq!(vectors.protocol, "battlelog/v1");
    assert!(!vectors.vectors.is_empty() && !vectors.invalid.is_empty(), "rolls.json holds no cases");
    vectors
}

#[test]
fn every_vector_rederives_commitment_key_words_and_dice() {
    let vectors = load();
    for v in &vectors.vectors {
        let seed = ServerSeed::from_hex(&v.server_seed).expect("vector seed");
        assert_eq!(seed.commitment().to_string(), v.commitment, "commitment of {}", v.notation);
        let key = RollKey::derive(&seed, &v.client_seed);
        assert_eq!(key.to_hex(), v.roll_key, "roll key of {}", v.notation);

        let mut stream = RollStream::new(&key, v.nonce);
        let words: Vec<u32> = (0..v.first_words.len()).map(|_| stream.next_word()).collect();
        assert_eq!(words, v.first_words, "first words of {} at nonce {}", v.notation, v.nonce);

        let (_, rolled) = dice::roll(&v.notation, &seed, &v.client_seed, v.nonce)
            .unwrap_or_else(|e| panic!("{} must roll: {e}", v.notation));
        assert_eq!(rolled.dice, v.dice, "dice of {} at nonce {}", v.notation, v.nonce);
        assert_eq!(rolled.total, v.total, "total of {} at nonce {}", v.notation, v.nonce);
    }
}

#[test]
fn every_invalid_expression_is_refused() {
    let vectors = load();
    let seed = ServerSeed::from_bytes([7; 32]);
    for notation in &vectors.invalid {
        let outcome = Expression::parse(notation).map_err(|e| e.to_string()).and_then(|expression| {
            let mut words = RollStream::new(&RollKey::derive(&seed, "client"), 0);
            evaluate(&expression, &mut words).map_err(|e| e.to_string())
        });
        let message = outcome.err().unwrap_or_else(|| panic!("{notation:?} must be refused"));
        assert_eq!(last_position(&message), Some(invalid_at(notation)), "{notation:?}: {message:?}");
    }
}

#[test]
fn seed_derivation_matches() {
    let d = load().seed_derivation;
    let master_key = hex::decode(&d.master_key).expect("master key hex");
    let seed = ServerSeed::derive(&master_key, &d.battle_id, d.epoch);
    assert_eq!(seed.to_hex(), d.server_seed);
    assert_eq!(seed.commitment().to_string(), d.commitment);
    assert!(dice::Commitment::from_hex(&d.commitment).expect("commitment form").opens_to(&seed));
}
