//! Commit–reveal seeds (docs/protocol.md §1) and the per-battle roll key (§2).

use std::fmt;

use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};

type HmacSha256 = Hmac<Sha256>;

/// HMAC-SHA256 keyed by `key` over `parts` one after the other: every
/// derivation of the protocol is one, its parts (domain, separators,
/// fields) spelled out at its call.
fn hmac_sha256(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    let mut mac = HmacSha256::new_from_slice(key).expect("HMAC accepts any key length");
    for part in parts {
        mac.update(part);
    }
    mac.finalize().into_bytes().into()
}

/// Domain separators: fixed by protocol v1, never to be edited.
const SEED_DOMAIN: &[u8] = b"battlelog/v1/seed";
const ROLL_DOMAIN: &[u8] = b"battlelog/v1/roll";
/// Protocol v2's roll key (docs/protocol.md §6.3 step 4): the v1 key's
/// inputs plus the beacon round and its randomness, under its own domain so
/// that no v1 key can ever equal a v2 one.
const ROLL_DOMAIN_V2: &[u8] = b"battlelog/v2/roll";

/// Why a seed or commitment given as text was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SeedError {
    #[error("server seed must be 64 hex digits (32 bytes), got {0} characters")]
    SeedLength(usize),
    #[error("server seed is not hex: {0}")]
    SeedNotHex(String),
    #[error("commitment must be 64 lowercase hex digits")]
    CommitmentForm,
}

/// The secret 32-byte seed of one epoch of one battle.
#[derive(Clone, PartialEq, Eq)]
pub struct ServerSeed([u8; 32]);

// A seed is a secret until revealed: never print it by accident in a log.
impl fmt::Debug for ServerSeed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ServerSeed(..)")
    }
}

impl ServerSeed {
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// Accepts 64 hex digits, either case.
    pub fn from_hex(text: &str) -> Result<Self, SeedError> {
        if text.len() != 64 {
            return Err(SeedError::SeedLength(text.chars().count()));
        }
        let mut bytes = [0u8; 32];
        hex::decode_to_slice(text, &mut bytes).map_err(|e| SeedError::SeedNotHex(e.to_string()))?;
        Ok(Self(bytes))
    }

    /// The recommended stateless derivation:
    /// `HMAC-SHA256(master_key, "battlelog/v1/seed" 0x00 battle_id 0x00 u32_be(epoch))`.
    pub fn derive(master_key: &[u8], battle_id: &str, epoch: u32) -> Self {
        Self(hmac_sha256(master_key, &[SEED_DOMAIN, &[0], battle_id.as_bytes(), &[0], &epoch.to_be_bytes()]))
    }

    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// Lowercase hex, the form in which a seed is revealed.
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    /// `lowercase_hex(SHA-256(server_seed))`, journaled before the epoch's first roll.
    pub fn commitment(&self) -> Commitment {
        Commitment(Sha256::digest(self.0).into())
    }
}

/// The published hash of a server seed.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Commitment([u8; 32]);

impl Commitment {
    /// Accepts exactly the published form: 64 lowercase hex digits.
    pub fn from_hex(text: &str) -> Result<Self, SeedError> {
        if text.len() != 64 || text.bytes().any(|b| b.is_ascii_uppercase()) {
            return Err(SeedError::CommitmentForm);
        }
        let mut bytes = [0u8; 32];
        hex::decode_to_slice(text, &mut bytes).map_err(|_| SeedError::CommitmentForm)?;
        Ok(Self(bytes))
    }

    /// Whether `seed` is the one this commitment was made to.
    pub fn opens_to(&self, seed: &ServerSeed) -> bool {
        seed.commitment() == *self
    }
}

impl fmt::Display for Commitment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex::encode(self.0))
    }
}

impl fmt::Debug for Commitment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Commitment({self})")
    }
}

/// `HMAC-SHA256(key = server_seed, "battlelog/v1/roll" 0x00 client_seed)`:
/// the ChaCha20 key shared by every roll of one epoch.
#[derive(Clone, PartialEq, Eq)]
pub struct RollKey([u8; 32]);

impl fmt::Debug for RollKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RollKey(..)")
    }
}

impl RollKey {
    pub fn derive(server_seed: &ServerSeed, client_seed: &str) -> Self {
        Self(hmac_sha256(server_seed.as_bytes(), &[ROLL_DOMAIN, &[0], client_seed.as_bytes()]))
    }

    /// The key of a protocol v2 roll (§6.3 step 4): HMAC-SHA256 keyed by
    /// the epoch's seed over `"battlelog/v2/roll" || 0x00 || client_seed ||
    /// 0x00 || u64_be(round) || randomness`, where `randomness` is the
    /// beacon round's ρ = SHA-256(σ). Unlike v1, each roll has its own key
    /// (its round's); the words are still the ChaCha20 stream at the roll's
    /// nonce.
    pub fn derive_v2(server_seed: &ServerSeed, client_seed: &str, round: u64, randomness: &[u8; 32]) -> Self {
        let parts: [&[u8]; 6] = [ROLL_DOMAIN_V2, &[0], client_seed.as_bytes(), &[0], &round.to_be_bytes(), randomness];
        Self(hmac_sha256(server_seed.as_bytes(), &parts))
    }

    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }
}
