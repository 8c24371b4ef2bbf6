//! Signed commitments (`docs/PROTOCOL-signatures.md`): the roller signs
//! every commitment it makes with an Ed25519 key derived from its master
//! key, so that a commitment appended to the journal by anyone else — a
//! forged `BattleOpened` or `SeedCommitted` whose seed the forger knows —
//! is told apart from the roller's own.
//!
//! - key: `signing_seed = HMAC-SHA256(master_key, "battlelog/v1/commitment-key")`,
//!   used as the 32-byte Ed25519 secret key (RFC 8032 §5.1.5); every
//!   replica with the same master key derives the same key, and there is no
//!   new secret to manage.
//! - signed bytes: `"battlelog/v1/commitment" || 0x00 || battle_id (UTF-8)
//!   || 0x00 || u32_be(epoch) || commitment` (the commitment's 64 lowercase
//!   hex ASCII bytes, as journaled), signed with plain Ed25519 (no prehash,
//!   no context).
//!
//! Pure: signing is deterministic (RFC 8032), no randomness is drawn.

use std::fmt;

use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// Domain separators: fixed by the signatures addendum to protocol v1.
const KEY_DOMAIN: &[u8] = b"battlelog/v1/commitment-key";
const MESSAGE_DOMAIN: &[u8] = b"battlelog/v1/commitment";

pub const ROLLER_KEY_BYTES: usize = 32;
pub const SIGNATURE_BYTES: usize = 64;

/// Why a roller key or a commitment signature was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("a roller key is {ROLLER_KEY_BYTES} bytes (64 hex digits), got {0} bytes")]
    KeyLength(usize),
    #[error("a roller key is 64 hex digits: {0}")]
    KeyNotHex(String),
    #[error("the roller key is not an Ed25519 public key")]
    KeyInvalid,
    #[error("a commitment signature is {SIGNATURE_BYTES} bytes, got {0}")]
    SignatureLength(usize),
    #[error("the signature does not verify")]
    Mismatch,
}

/// The exact bytes a commitment signature covers.
pub fn commitment_message(battle_id: &str, epoch: u32, commitment: &str) -> Vec<u8> {
    let mut message = Vec::with_capacity(MESSAGE_DOMAIN.len() + battle_id.len() + 6 + commitment.len());
    message.extend_from_slice(MESSAGE_DOMAIN);
    message.push(0);
    message.extend_from_slice(battle_id.as_bytes());
    message.push(0);
    message.extend_from_slice(&epoch.to_be_bytes());
    message.extend_from_slice(commitment.as_bytes());
    message
}

/// The roller's signing key. Holds a secret: its `Debug` shows only the
/// public half, and the key is wiped from memory when dropped.
#[derive(Clone)]
pub struct CommitmentSigner(SigningKey);

impl fmt::Debug for CommitmentSigner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CommitmentSigner(roller key {})", self.roller_key())
    }
}

impl CommitmentSigner {
    /// The key of the roller whose master key is `master_key`.
    pub fn derive(master_key: &[u8]) -> Self {
        let mut mac = Hmac::<Sha256>::new_from_slice(master_key).expect("HMAC accepts any key length");
        mac.update(KEY_DOMAIN);
        let mut seed: [u8; 32] = mac.finalize().into_bytes().into();
        let key = SigningKey::from_bytes(&seed);
        // `SigningKey` wipes its own copy on drop; this one is ours to clear.
        seed.fill(0);
        Self(key)
    }

    /// The public key verifiers check commitments with.
    pub fn roller_key(&self) -> RollerKey {
        RollerKey(self.0.verifying_key())
    }

    /// The signature of `battle_id`'s `epoch` commitment (64 bytes).
    pub fn sign(&self, battle_id: &str, epoch: u32, commitment: &str) -> [u8; SIGNATURE_BYTES] {
        self.0.sign(&commitment_message(battle_id, epoch, commitment)).to_bytes()
    }
}

/// A roller's public key (Ed25519, 32 bytes); shown as 64 lowercase hex digits.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct RollerKey(VerifyingKey);

impl RollerKey {
    /// Accepts exactly 32 bytes that decode to a curve point.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, SignatureError> {
        let bytes: [u8; ROLLER_KEY_BYTES] = bytes.try_into().map_err(|_| SignatureError::KeyLength(bytes.len()))?;
        VerifyingKey::from_bytes(&bytes).map(Self).map_err(|_| SignatureError::KeyInvalid)
    }

    /// Accepts 64 hex digits, either case, surrounding whitespace ignored
    /// (a key pasted from a web page).
    pub fn from_hex(text: &str) -> Result<Self, SignatureError> {
        let bytes = hex::decode(text.trim()).map_err(|e| SignatureError::KeyNotHex(e.to_string()))?;
        Self::from_bytes(&bytes)
    }

    pub fn to_bytes(&self) -> [u8; ROLLER_KEY_BYTES] {
        self.0.to_bytes()
    }

    /// Checks `signature` over `battle_id`'s `epoch` commitment. Strict
    /// verification: non-canonical signatures and small-order keys, which
    /// an honest signer never produces, are refused.
    pub fn verify(
        &self,
        battle_id: &str,
        epoch: u32,
        commitment: &str,
        signature: &[u8],
    ) -> Result<(), SignatureError> {
        let signature =
            Signature::from_slice(signature).map_err(|_| SignatureError::SignatureLength(signature.len()))?;
        self.0
            .verify_strict(&commitment_message(battle_id, epoch, commitment), &signature)
            .map_err(|_| SignatureError::Mismatch)
    }
}

impl fmt::Display for RollerKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex::encode(self.0.as_bytes()))
    }
}

impl fmt::Debug for RollerKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RollerKey({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Known answers computed from the addendum's text by an independent
    // implementation (Python: hmac, hashlib and `cryptography`'s Ed25519,
    // i.e. OpenSSL), not by this code.
    const MASTER_KEY: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
    const SIGNING_SEED: &str = "e5753ea4e2e35d9e442a6daf3f42891c271f1bcafebaf278fedeb8ef8f23280e";
    const ROLLER_KEY: &str = "7fdf536f36f082a2b3aed8dfe24c88e4386b05c3be0d29a15c2c5f50ee2d4ef0";
    const BATTLE: &str = "duel-42";
    /// SHA-256 of the epoch-0 seed of "duel-42" under MASTER_KEY (docs/protocol.md §1).
    const COMMITMENT_0: &str = "022ae2b686069fa53281be76db0738b21ef6bb2777ff35ff5e8420f0e2385e76";
    const SIGNATURE_0: &str = "af37887b2ee48295d037d90f7752af2d4c38804d1ce23bf78b6c4a2446437a9a\
                               fa65210aed5a9d5b90b3b95f3dbe42803465ccf290d72ad94a97feabce6b6103";
    const COMMITMENT_1: &str = "b69da86e9bf22f70206360a27cd58c7ea3800368606725baff352d7ad4710b8a";
    const SIGNATURE_1: &str = "fb5ed08e0c6f7a2e16b42a7e8b2813f393215c5186e57115ae57149804d0d7d1\
                               1737b058f0fe8998f18eeea0491b2bc857b80c2e8c8c6233cf539a1d09613c0f";

    fn signer() -> CommitmentSigner {
        CommitmentSigner::derive(&hex::decode(MASTER_KEY).expect("hex"))
    }

    fn known_key() -> RollerKey {
        RollerKey::from_hex(ROLLER_KEY).expect("a valid key")
    }

    fn sig(text: &str) -> Vec<u8> {
        hex::decode(text).expect("hex")
    }

    #[test]
    fn the_signed_bytes_are_exactly_the_documented_ones() {
        let commitment = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
        assert_eq!(
            commitment_message("duel-42", 7, commitment),
            b"battlelog/v1/commitment\x00duel-42\x00\x00\x00\x00\x07\
              00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
                .to_vec()
        );
        // The epoch is big-endian, all four bytes.
        assert_eq!(
            commitment_message("b", 0x0102_0304, "ab"),
            b"battlelog/v1/commitment\x00b\x00\x01\x02\x03\x04ab".to_vec()
        );
    }

    #[test]
    fn the_key_derives_from_the_master_key_as_documented() {
        assert_eq!(signer().roller_key(), known_key());
        assert_eq!(signer().roller_key().to_string(), ROLLER_KEY);
        let from_seed = SigningKey::from_bytes(&hex::decode(SIGNING_SEED).expect("hex").try_into().expect("32"));
        assert_eq!(RollerKey(from_seed.verifying_key()), known_key());
    }

    #[test]
    fn known_signatures_verify_and_signing_reproduces_them() {
        let key = known_key();
        assert_eq!(key.verify(BATTLE, 0, COMMITMENT_0, &sig(SIGNATURE_0)), Ok(()));
        assert_eq!(key.verify(BATTLE, 1, COMMITMENT_1, &sig(SIGNATURE_1)), Ok(()));
        // Ed25519 is deterministic: the same bytes as the independent signer.
        assert_eq!(signer().sign(BATTLE, 0, COMMITMENT_0).to_vec(), sig(SIGNATURE_0));
        assert_eq!(signer().sign(BATTLE, 1, COMMITMENT_1).to_vec(), sig(SIGNATURE_1));
    }

    #[test]
    fn anything_changed_fails() {
        let key = known_key();
        let good = sig(SIGNATURE_0);
        for bit in [0, 7, 100, 511] {
            let mut flipped = good.clone();
            flipped[bit / 8] ^= 1 << (bit % 8);
            assert!(key.verify(BATTLE, 0, COMMITMENT_0, &flipped).is_err(), "signature bit {bit} flipped");
        }
        let mut commitment = COMMITMENT_0.as_bytes().to_vec();
        commitment[10] = b'f';
        let commitment = String::from_utf8(commitment).expect("ascii");
        assert_eq!(key.verify(BATTLE, 0, &commitment, &good), Err(SignatureError::Mismatch), "another commitment");
        assert_eq!(key.verify(BATTLE, 1, COMMITMENT_0, &good), Err(SignatureError::Mismatch), "another epoch");
        assert_eq!(key.verify("duel-43", 0, COMMITMENT_0, &good), Err(SignatureError::Mismatch), "another battle");
        // The upper-case spelling of the same hash is other bytes.
        let upper = COMMITMENT_0.to_uppercase();
        assert_eq!(key.verify(BATTLE, 0, &upper, &good), Err(SignatureError::Mismatch), "the commitment's bytes");
        let other = CommitmentSigner::derive(&[7; 32]).roller_key();
        assert_eq!(other.verify(BATTLE, 0, COMMITMENT_0, &good), Err(SignatureError::Mismatch), "another key");
        assert_eq!(key.verify(BATTLE, 0, COMMITMENT_0, &good[..63]), Err(SignatureError::SignatureLength(63)));
        assert_eq!(key.verify(BATTLE, 0, COMMITMENT_0, &[]), Err(SignatureError::SignatureLength(0)));
    }

    #[test]
    fn roller_keys_are_parsed_strictly() {
        assert_eq!(RollerKey::from_hex(&format!(" {} \n", ROLLER_KEY.to_uppercase())), Ok(known_key()));
        assert_eq!(RollerKey::from_bytes(&[1; 31]), Err(SignatureError::KeyLength(31)));
        assert!(matches!(RollerKey::from_hex("xyz"), Err(SignatureError::KeyNotHex(_))));
        // y = 2 is not the y-coordinate of any point on edwards25519.
        let mut not_a_point = [0u8; 32];
        not_a_point[0] = 2;
        assert_eq!(RollerKey::from_bytes(&not_a_point), Err(SignatureError::KeyInvalid));
    }

    #[test]
    fn the_secret_never_shows_in_debug_output() {
        let shown = format!("{:?}", signer());
        assert!(!shown.contains(SIGNING_SEED) && !shown.contains(MASTER_KEY), "{shown}");
        assert!(shown.contains(ROLLER_KEY), "{shown}");
    }
}
