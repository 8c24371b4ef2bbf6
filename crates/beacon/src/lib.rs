//! The public randomness beacon of protocol v2 (docs/protocol.md §6.1 and
//! §6.3 step 3), as anyone checking a roll meets it: drand's
//! `bls-unchained-g1-rfc9380` scheme, nothing that touches a socket or a
//! clock.
//!
//! - [`ChainInfo`]: a beacon named by its chain info (public key, period,
//!   genesis time, chain hash), pinned by whoever verifies, as the roller
//!   key is; [`ChainInfo::quicknet`] is the League of Entropy's.
//! - [`ChainInfo::verify`]: a round's signature checked under the pinned key
//!   (a BLS12-381 pairing, done by the maintained `drand-verify` crate), and
//!   its randomness ρ = SHA-256(σ).
//! - [`ChainInfo::round_after`]: the first round published strictly after a
//!   witnessed time plus one second (§6.3 step 3), and
//!   [`ChainInfo::published_at`], when a round comes out.
//! - [`dev`]: the development beacon's signer, the same scheme from a key of
//!   its own (for machines without the internet, and tests).

pub mod dev;

use drand_verify::{G2PubkeyRfc, Pubkey};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// A beacon's chain info, as drand's `/{chain hash}/info` gives it and a
/// v2 `BattleOpened` records it (§6.1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChainInfo {
    /// The chain hash, lowercase hex: the beacon's name in drand's API.
    pub hash: String,
    /// The group's public key, a compressed G2 point (96 bytes), hex.
    pub public_key: String,
    /// Seconds between rounds (at least 1).
    pub period: u64,
    /// Unix seconds of round 1.
    pub genesis_time: u64,
}

/// A round's randomness: ρ_r = SHA-256(σ_r) (§6.1).
pub type Randomness = [u8; 32];

/// Why a round's signature does not make randomness.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BeaconError {
    #[error("the beacon's public key is not a compressed G2 point of 96 bytes in hex: {0}")]
    PublicKey(String),
    #[error("the signature of round {round} is not a compressed G1 point of 48 bytes in hex")]
    SignatureForm { round: u64 },
    #[error("the signature of round {round} does not verify under the beacon's public key")]
    SignatureInvalid { round: u64 },
    #[error("round 0 does not exist: a beacon's rounds start at 1")]
    RoundZero,
    #[error("the beacon's period is 0 seconds")]
    PeriodZero,
}

impl ChainInfo {
    /// The League of Entropy's `quicknet` (§6.1): what production pins.
    pub fn quicknet() -> ChainInfo {
        ChainInfo {
            hash: "52db9ba70e0cc0f6eaf7803dd07447a1f5477735fd3f661792ba94600c84e971".to_owned(),
            public_key: "83cf0f2896adee7eb8b5f01fcad3912212c437e0073e911fb90022d3e760183c8c4b450b6a0a6c3ac6a5776a2d1064510d1fec758c921cc22b0e17e63aaf4bcb5ed66304de9cf809bd274ca73bab4af5a6e9c76a4bc09e76eae8991ef5ece45a".to_owned(),
            period: 3,
            genesis_time: 1_692_803_367,
        }
    }

    /// Round `round`'s signature (hex) checked under this chain's public key:
    /// a BLS signature over SHA-256(u64_be(round)) hashed to G1 with the
    /// DST `BLS_SIG_BLS12381G1_XMD:SHA-256_SSWU_RO_NUL_`. Its randomness
    /// when it verifies.
    pub fn verify(&self, round: u64, signature_hex: &str) -> Result<Randomness, BeaconError> {
        if round == 0 {
            return Err(BeaconError::RoundZero);
        }
        let key_bytes = hex::decode(&self.public_key).map_err(|e| BeaconError::PublicKey(e.to_string()))?;
        let key = G2PubkeyRfc::from_variable(&key_bytes).map_err(|e| BeaconError::PublicKey(e.to_string()))?;
        let signature = hex::decode(signature_hex)
            .ok()
            .filter(|bytes| bytes.len() == 48)
            .ok_or(BeaconError::SignatureForm { round })?;
        // Unchained: no previous signature enters the message.
        match key.verify(round, &[], &signature) {
            Ok(true) => Ok(Sha256::digest(&signature).into()),
            Ok(false) => Err(BeaconError::SignatureInvalid { round }),
            Err(_) => Err(BeaconError::SignatureForm { round }),
        }
    }

    /// Unix seconds at which round `round` (≥ 1) is published:
    /// `genesis_time + (round − 1) × period`.
    pub fn published_at(&self, round: u64) -> Result<u64, BeaconError> {
        if round == 0 {
            return Err(BeaconError::RoundZero);
        }
        Ok(self.genesis_time.saturating_add((round - 1).saturating_mul(self.period)))
    }

    /// §6.3 step 3: the first round published strictly after `time + 1`
    /// (Unix seconds; the latest cosignature time of the request's
    /// checkpoint): `floor((time + 1 − genesis_time) / period) + 2`. A time
    /// before genesis gives round 1, the first there is.
    pub fn round_after(&self, time: u64) -> Result<u64, BeaconError> {
        if self.period == 0 {
            return Err(BeaconError::PeriodZero);
        }
        match (time + 1).checked_sub(self.genesis_time) {
            Some(since) => Ok(since / self.period + 2),
            None => Ok(1),
        }
    }
}
