//! Known answers for protocol v2's rolls (docs/protocol.md §6.3 step 4) from
//! the independent implementation (`tests/vectors/v2.json`, or
//! `$BATTLELOG_VECTORS/v2.json`): each roll key from its seed, client seed,
//! round and randomness, then the same words and dice as v1 draws them. A
//! missing file fails.

// The crate's clippy.toml forbids I/O for the crate; this test reads the
// vectors from disk, which is what a test is allowed to do.
#![allow(clippy::disallowed_methods)]

use std::path::PathBuf;

use dice::{Die, Expression, RollKey, RollStream, ServerSeed, WordSource, evaluate};
use serde::Deserialize;

#[derive(Debug, Deserialize)]
struct Vectors {
    protocol: String,
    rolls: Vec<Roll>,
}

#[derive(Debug, Deserialize)]
struct Roll {
    server_seed: String,
    client_seed: String,
    nonce: u64,
    notation: String,
    round: u64,
    randomness: String,
    roll_key: String,
    first_words: Vec<u32>,
    total: i64,
    dice: Vec<Die>,
}

fn load() -> Vectors {
    let dir = match std::env::var_os("BATTLELOG_VECTORS") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors"),
    };
    let path = dir.join("v2.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("the known-answer file {} is required: {e}", path.display()));
    let vectors: Vectors = serde_json::from_str(&text).expect("v2.json parses");
    assert!(vectors.protocol.starts_with("battlelog/v2"), "{}", vectors.protocol);
    assert!(!vectors.rolls.is_empty(), "v2.json holds no rolls");
    vectors
}

#[test]
fn every_v2_roll_rederives_its_key_words_and_dice() {
    for v in load().rolls {
        let seed = ServerSeed::from_hex(&v.server_seed).expect("vector seed");
        let randomness: [u8; 32] =
            hex::decode(&v.randomness).expect("randomness hex").try_into().expect("32 bytes of randomness");
        let key = RollKey::derive_v2(&seed, &v.client_seed, v.round, &randomness);
        assert_eq!(key.to_hex(), v.roll_key, "roll key of {} at round {}", v.notation, v.round);

        let mut stream = RollStream::new(&key, v.nonce);
        let words: Vec<u32> = (0..v.first_words.len()).map(|_| stream.next_word()).collect();
        assert_eq!(words, v.first_words, "first words of {} at nonce {}", v.notation, v.nonce);

        let expression = Expression::parse(&v.notation).expect("a vector's expression parses");
        let rolled = evaluate(&expression, &mut RollStream::new(&key, v.nonce)).expect("a vector's roll evaluates");
        assert_eq!(rolled.dice, v.dice, "dice of {} at nonce {}", v.notation, v.nonce);
        assert_eq!(rolled.total, v.total, "total of {} at nonce {}", v.notation, v.nonce);
    }
}

#[test]
fn a_v2_key_depends_on_the_round_and_the_randomness_and_is_never_the_v1_key() {
    let seed = ServerSeed::from_bytes([7; 32]);
    let key = |round, randomness: [u8; 32]| RollKey::derive_v2(&seed, "client", round, &randomness).to_hex();
    assert_ne!(key(1, [0; 32]), key(2, [0; 32]));
    assert_ne!(key(1, [0; 32]), key(1, [1; 32]));
    assert_ne!(key(1, [0; 32]), RollKey::derive(&seed, "client").to_hex());
}
