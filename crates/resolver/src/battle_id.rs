//! Battle ids the resolver generates, and the room they keep to themselves.
//!
//! An `OpenBattle` without a `battle_id` gets `b-` and 32 hex digits: the
//! first 16 bytes of HMAC-SHA256(secret, `battlelog/v1/battle-id` ‖ 0x00 ‖
//! tenant ‖ 0x00 ‖ request id). A retry of the same request (same tenant,
//! same request id) finds the battle its first attempt opened, on any
//! replica that holds the same secret; and no other tenant can work the id
//! out ahead of time, so none can open it first. Ids of that form are the
//! resolver's alone: an explicit `battle_id` that looks like one is
//! refused, so an explicit id can never take a generated one's place.

use std::path::Path;

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// The domain separator, so that no other HMAC under the secret is an id.
const DOMAIN: &[u8] = b"battlelog/v1/battle-id";
/// The prefix of every generated id.
const PREFIX: &str = "b-";
/// Bytes of the HMAC an id keeps: 128 bits cannot be guessed.
const ID_BYTES: usize = 16;
/// Bytes of the secret.
const SECRET_BYTES: usize = 32;

/// The secret generated battle ids are keyed with.
#[derive(Clone)]
pub struct BattleIdSecret([u8; SECRET_BYTES]);

// Never print the secret, not even in a debug log.
impl std::fmt::Debug for BattleIdSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BattleIdSecret(..)")
    }
}

/// A secret file that could not be read or is not 64 hex digits.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {message}")]
pub struct SecretError {
    pub path: String,
    pub message: String,
}

impl BattleIdSecret {
    pub fn from_bytes(bytes: [u8; SECRET_BYTES]) -> Self {
        Self(bytes)
    }

    /// A fresh secret from the operating system's randomness: ids then
    /// differ per process, so a retry that reaches another replica, or
    /// comes after a restart, opens a second battle. For tests and a
    /// resolver run without `battle_id_secret_file`.
    pub fn generate() -> Self {
        let mut secret = [0u8; SECRET_BYTES];
        getrandom::fill(&mut secret).expect("the operating system's randomness");
        Self(secret)
    }

    /// A key for another use of the same secret (every replica holds it):
    /// HMAC-SHA256(secret, `domain`), so that no key derived for one
    /// domain is an id or another domain's key.
    pub fn derive(&self, domain: &[u8]) -> [u8; 32] {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.0).expect("HMAC takes a key of any length");
        mac.update(domain);
        mac.finalize().into_bytes().into()
    }

    /// Reads a secret file: 64 hex digits (surrounding whitespace ignored).
    pub fn read(path: &Path) -> Result<Self, SecretError> {
        let error = |message: String| SecretError { path: path.display().to_string(), message };
        let text = std::fs::read_to_string(path).map_err(|e| error(e.to_string()))?;
        let mut secret = [0u8; SECRET_BYTES];
        hex::decode_to_slice(text.trim(), &mut secret).map_err(|e| error(format!("must hold 64 hex digits ({e})")))?;
        Ok(Self(secret))
    }

    /// Reads `path`, or creates it (owner-only) with a fresh secret. For
    /// development stacks (`battlelog up`).
    pub fn read_or_create(path: &Path) -> Result<Self, SecretError> {
        if path.exists() {
            return Self::read(path);
        }
        let error = |e: std::io::Error| SecretError { path: path.display().to_string(), message: e.to_string() };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(error)?;
        }
        let secret = Self::generate();
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(path).map_err(error)?;
        std::io::Write::write_all(&mut file, format!("{}\n", hex::encode(secret.0)).as_bytes()).map_err(error)?;
        Ok(secret)
    }

    /// The id of the battle `tenant` opens with `request_id` and no id.
    pub fn battle_id(&self, tenant: &str, request_id: &str) -> String {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.0).expect("HMAC takes any key length");
        for part in [DOMAIN, b"\0", tenant.as_bytes(), b"\0", request_id.as_bytes()] {
            mac.update(part);
        }
        let digest = mac.finalize().into_bytes();
        format!("{PREFIX}{}", hex::encode(&digest[..ID_BYTES]))
    }
}

/// Whether `battle_id` has the form of a generated id, which no caller may
/// choose.
pub fn is_generated_form(battle_id: &str) -> bool {
    battle_id.strip_prefix(PREFIX).is_some_and(|hex| {
        hex.len() == 2 * ID_BYTES && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_depends_on_the_secret_the_tenant_and_the_request() {
        let secret = BattleIdSecret::from_bytes([7; 32]);
        let id = secret.battle_id("forum-a", "req-1");
        assert!(is_generated_form(&id), "{id}");
        assert_eq!(id, secret.battle_id("forum-a", "req-1"), "a retry finds the same id");
        assert_ne!(id, secret.battle_id("forum-b", "req-1"), "another tenant's id differs");
        assert_ne!(id, secret.battle_id("forum-a", "req-2"));
        assert_ne!(id, BattleIdSecret::from_bytes([8; 32]).battle_id("forum-a", "req-1"), "unknown without the secret");
        // The separators keep ("a\0b", "c") and ("a", "b\0c") apart.
        assert_ne!(secret.battle_id("a", "b-c"), secret.battle_id("a-b", "c"));
    }

    #[test]
    fn an_id_is_hmac_sha256_under_the_domain() {
        // Computed independently: HMAC-SHA256 with key 32 × 0x07 over
        // "battlelog/v1/battle-id\0forum-a\0req-1", first 16 bytes.
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&[7; 32]).unwrap();
        mac.update(b"battlelog/v1/battle-id\x00forum-a\x00req-1");
        let expected = format!("b-{}", hex::encode(&mac.finalize().into_bytes()[..16]));
        assert_eq!(BattleIdSecret::from_bytes([7; 32]).battle_id("forum-a", "req-1"), expected);
    }

    #[test]
    fn only_the_exact_generated_form_is_reserved() {
        assert!(is_generated_form(&format!("b-{}", "0123456789abcdef".repeat(2))));
        for free in ["b-1", "battle-1", &format!("b-{}", "A".repeat(32)), &format!("b-{}", "0".repeat(33)), "c-0"] {
            assert!(!is_generated_form(free), "{free}");
        }
    }

    #[test]
    fn a_secret_file_must_hold_64_hex_digits() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("good");
        std::fs::write(&good, format!("{}\n", "ab".repeat(32))).unwrap();
        let secret = BattleIdSecret::read(&good).unwrap();
        assert_eq!(secret.battle_id("t", "r"), BattleIdSecret::from_bytes([0xab; 32]).battle_id("t", "r"));
        let bad = dir.path().join("bad");
        std::fs::write(&bad, "xyz").unwrap();
        let error = BattleIdSecret::read(&bad).unwrap_err().to_string();
        assert!(error.contains("64 hex digits"), "{error}");
        assert!(BattleIdSecret::read(&dir.path().join("none")).is_err());
        let created = dir.path().join("dev").join("battle-id.secret");
        let first = BattleIdSecret::read_or_create(&created).unwrap().battle_id("t", "r");
        assert_eq!(BattleIdSecret::read_or_create(&created).unwrap().battle_id("t", "r"), first, "kept across starts");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&created).unwrap().permissions().mode() & 0o777, 0o600);
        }
    }
}
