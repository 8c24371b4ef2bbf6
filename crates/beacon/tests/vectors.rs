//! Known answers for the beacon (docs/protocol.md §6.1, §6.3 step 3) from the
//! independent implementation (`tests/vectors/v2.json`, or
//! `$BATTLELOG_VECTORS/v2.json`): quicknet's round 657413 and a signature
//! that is not its round's, the development test key's rounds, the rolls'
//! beacon signatures, and the round rule. A missing file fails.

// The crate's clippy.toml forbids I/O for the crate; this test reads the
// vectors from disk, which is what a test is allowed to do.
#![allow(clippy::disallowed_methods)]

use std::path::PathBuf;

use beacon::dev::DevSigner;
use beacon::{BeaconError, ChainInfo};
use serde::Deserialize;

#[derive(Debug, Deserialize)]
struct Vectors {
    quicknet: Quicknet,
    dev_beacon: DevBeacon,
    rolls: Vec<Roll>,
    rounds: Vec<RoundRule>,
}

#[derive(Debug, Deserialize)]
struct Quicknet {
    #[serde(flatten)]
    chain: ChainInfo,
    known_answer: Round,
    not_valid: Vec<NotValid>,
}

#[derive(Debug, Deserialize)]
struct DevBeacon {
    public_key: String,
    period: u64,
    genesis_time: u64,
    rounds: Vec<Round>,
}

#[derive(Debug, Deserialize)]
struct Round {
    round: u64,
    signature: String,
    randomness: String,
}

#[derive(Debug, Deserialize)]
struct NotValid {
    round: u64,
    signature: String,
}

#[derive(Debug, Deserialize)]
struct Roll {
    beacon: String,
    round: u64,
    beacon_signature: String,
    randomness: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
struct RoundRule {
    #[serde(rename = "T")]
    time: u64,
    genesis_time: u64,
    period: u64,
    round: u64,
}

fn load() -> Vectors {
    let dir = match std::env::var_os("BATTLELOG_VECTORS") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors"),
    };
    let path = dir.join("v2.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("the known-answer file {} is required: {e}", path.display()));
    serde_json::from_str(&text).expect("v2.json parses")
}

fn dev_chain(dev: &DevBeacon) -> ChainInfo {
    ChainInfo {
        hash: String::new(),
        public_key: dev.public_key.clone(),
        period: dev.period,
        genesis_time: dev.genesis_time,
    }
}

#[test]
fn quicknet_is_pinned_as_the_protocol_names_it() {
    let vectors = load();
    assert_eq!(ChainInfo::quicknet(), vectors.quicknet.chain);
}

#[test]
fn quicknets_known_round_verifies_and_gives_its_randomness() {
    let quicknet = load().quicknet;
    let known = &quicknet.known_answer;
    let randomness = ChainInfo::quicknet().verify(known.round, &known.signature).expect("the known round verifies");
    assert_eq!(hex::encode(randomness), known.randomness);
}

#[test]
fn a_signature_of_another_round_does_not_verify() {
    let quicknet = load().quicknet;
    assert!(!quicknet.not_valid.is_empty(), "v2.json lists no invalid signature");
    for case in &quicknet.not_valid {
        assert_eq!(
            ChainInfo::quicknet().verify(case.round, &case.signature),
            Err(BeaconError::SignatureInvalid { round: case.round })
        );
    }
}

#[test]
fn the_development_keys_rounds_verify_and_no_other_key_takes_them() {
    let vectors = load();
    let dev = dev_chain(&vectors.dev_beacon);
    assert!(!vectors.dev_beacon.rounds.is_empty());
    for round in &vectors.dev_beacon.rounds {
        let randomness = dev.verify(round.round, &round.signature).expect("a development round verifies");
        assert_eq!(hex::encode(randomness), round.randomness, "round {}", round.round);
        // Pinning matters: quicknet's key refuses the development beacon.
        assert_eq!(
            ChainInfo::quicknet().verify(round.round, &round.signature),
            Err(BeaconError::SignatureInvalid { round: round.round })
        );
    }
}

#[test]
fn every_rolls_beacon_signature_verifies_to_its_randomness() {
    let vectors = load();
    let dev = dev_chain(&vectors.dev_beacon);
    for roll in &vectors.rolls {
        let chain = match roll.beacon.as_str() {
            "quicknet" => ChainInfo::quicknet(),
            "dev" => dev.clone(),
            other => panic!("v2.json names an unknown beacon {other:?}"),
        };
        let randomness = chain.verify(roll.round, &roll.beacon_signature).expect("the roll's round verifies");
        assert_eq!(hex::encode(randomness), roll.randomness, "round {} of {}", roll.round, roll.beacon);
    }
}

#[test]
fn the_round_of_a_witnessed_time_is_the_first_published_strictly_after_it_plus_one_second() {
    let vectors = load();
    assert!(!vectors.rounds.is_empty());
    for rule in &vectors.rounds {
        let chain = ChainInfo {
            hash: String::new(),
            public_key: String::new(),
            period: rule.period,
            genesis_time: rule.genesis_time,
        };
        let round = chain.round_after(rule.time).expect("a period");
        assert_eq!(round, rule.round, "T = {}", rule.time);
        // What the rule means, checked apart from its formula: the round is
        // out strictly after T + 1, and the one before it is not.
        assert!(chain.published_at(round).expect("round ≥ 1") > rule.time + 1);
        if round > 1 {
            assert!(chain.published_at(round - 1).expect("round ≥ 1") <= rule.time + 1);
        }
    }
}

#[test]
fn malformed_input_is_an_error_naming_what_is_wrong() {
    let quicknet = ChainInfo::quicknet();
    assert_eq!(quicknet.verify(0, "00"), Err(BeaconError::RoundZero));
    assert_eq!(quicknet.verify(5, "not hex"), Err(BeaconError::SignatureForm { round: 5 }));
    assert_eq!(quicknet.verify(5, &"ab".repeat(47)), Err(BeaconError::SignatureForm { round: 5 }));
    let broken = ChainInfo { public_key: "00".repeat(96), ..quicknet.clone() };
    assert!(matches!(broken.verify(5, &"ab".repeat(48)), Err(BeaconError::PublicKey(_))));
    let stopped = ChainInfo { period: 0, ..quicknet };
    assert_eq!(stopped.round_after(1), Err(BeaconError::PeriodZero));
}

/// The development beacon's signer, from the label v2.json names, makes its
/// public key and every one of its rounds bit for bit; what it signs
/// verifies, and its chain is not quicknet's.
#[test]
fn the_development_signer_makes_the_vectors_key_and_rounds() {
    let vectors = load();
    let dev = &vectors.dev_beacon;
    let signer = DevSigner::from_label("battlelog test beacon", dev.period, dev.genesis_time);
    assert_eq!(signer.chain().public_key, dev.public_key);
    assert_eq!((signer.chain().period, signer.chain().genesis_time), (dev.period, dev.genesis_time));
    assert_ne!(signer.chain().hash, ChainInfo::quicknet().hash);
    for round in &dev.rounds {
        assert_eq!(signer.sign(round.round), round.signature, "round {}", round.round);
    }
    let later = signer.sign(123_456);
    assert!(signer.chain().verify(123_456, &later).is_ok());
    assert_eq!(signer.chain().verify(123_457, &later), Err(BeaconError::SignatureInvalid { round: 123_457 }));
}
