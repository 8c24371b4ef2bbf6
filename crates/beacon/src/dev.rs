//! The development beacon's signer (docs/protocol.md §6.1): the same
//! `bls-unchained-g1-rfc9380` scheme as quicknet, from a key of its own, so
//! that the one verifier of [`ChainInfo::verify`] checks both. It is for
//! machines without the internet and for tests; nothing about it is secret
//! that a production beacon would keep secret, and a verifier that pins
//! quicknet refuses its rounds.
//!
//! The curve arithmetic is the `bls12_381` crate's (hash to G1 by RFC 9380,
//! scalar multiplication, point compression); this module only arranges it.

use bls12_381::hash_to_curve::{ExpandMsgXmd, HashToCurve};
use bls12_381::{G1Affine, G1Projective, G2Affine, Scalar};
use sha2::{Digest, Sha256};

use crate::ChainInfo;

/// The domain separation tag of drand's rfc9380 scheme on G1.
const DST: &[u8] = b"BLS_SIG_BLS12381G1_XMD:SHA-256_SSWU_RO_NUL_";

/// A beacon's secret key and the chain it signs for.
pub struct DevSigner {
    secret: Scalar,
    chain: ChainInfo,
}

impl std::fmt::Debug for DevSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DevSigner").field("chain", &self.chain).finish_non_exhaustive()
    }
}

impl DevSigner {
    /// The key SHA-256(`label`) read as a big-endian number, reduced mod
    /// the group order r, for a chain of `period` seconds from
    /// `genesis_time`. (`vectors/v2.json`'s development key is the label
    /// "battlelog test beacon".) The chain hash is SHA-256 of the public
    /// key, the period and the genesis time: this beacon's own name, never
    /// one of drand's.
    pub fn from_label(label: &str, period: u64, genesis_time: u64) -> DevSigner {
        let digest: [u8; 32] = Sha256::digest(label.as_bytes()).into();
        // from_bytes_wide reduces a 512-bit little-endian number mod r.
        let mut wide = [0u8; 64];
        for (i, byte) in digest.iter().rev().enumerate() {
            wide[i] = *byte;
        }
        let secret = Scalar::from_bytes_wide(&wide);
        let public_key = G2Affine::from(G2Affine::generator() * secret).to_compressed();
        let mut name = Sha256::new();
        name.update(public_key);
        name.update(period.to_be_bytes());
        name.update(genesis_time.to_be_bytes());
        let chain =
            ChainInfo { hash: hex::encode(name.finalize()), public_key: hex::encode(public_key), period, genesis_time };
        DevSigner { secret, chain }
    }

    /// The chain info a verifier pins for this beacon.
    pub fn chain(&self) -> &ChainInfo {
        &self.chain
    }

    /// Round `round`'s signature, hex: the key times the hash to G1 of
    /// SHA-256(u64_be(round)).
    pub fn sign(&self, round: u64) -> String {
        let message: [u8; 32] = Sha256::digest(round.to_be_bytes()).into();
        let point = <G1Projective as HashToCurve<ExpandMsgXmd<sha2_digest09::Sha256>>>::hash_to_curve(message, DST);
        hex::encode(G1Affine::from(point * self.secret).to_compressed())
    }
}
