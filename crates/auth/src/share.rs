//! Share links: a key that lets whoever holds a link read one battle's web
//! page without a token of their own, as a forum post's readers do.
//!
//! The key is derived, not stored: the first 16 bytes of
//! HMAC-SHA256(secret, `battlelog/v1/share` ‖ 0x00 ‖ battle id), in
//! base64url without padding. Whoever knows the server's share secret (the
//! resolver, which puts links in its replies, and the web service, which
//! checks them) can make and check a battle's key; nobody else can, and a
//! key opens only its own battle. Rotating the secret revokes every link
//! at once.

use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::keys::{KeyError, read, write_private};

/// The gRPC metadata a share key travels in: the web pages forward a
/// link's `k` in it, and the resolver lets a read call that carries the
/// right key reach that one battle whatever the token's tenant (the link is
/// the capability, on the page as over gRPC).
pub const SHARE_KEY_METADATA: &str = "battlelog-share-key";

/// The domain separator of share keys, so that no other HMAC under the same
/// secret can be mistaken for one.
const SHARE_DOMAIN: &[u8] = b"battlelog/v1/share";
/// Bytes of the HMAC a key keeps: 128 bits cannot be guessed.
const KEY_BYTES: usize = 16;
/// Bytes of a share secret.
pub const SECRET_BYTES: usize = 32;

/// The server secret share keys are derived from.
#[derive(Clone)]
pub struct ShareSecret([u8; SECRET_BYTES]);

// Never print the secret, not even in a debug log.
impl std::fmt::Debug for ShareSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ShareSecret(..)")
    }
}

impl ShareSecret {
    pub fn from_bytes(bytes: [u8; SECRET_BYTES]) -> Self {
        Self(bytes)
    }

    /// A fresh secret from the operating system's randomness.
    pub fn generate() -> Result<Self, KeyError> {
        let mut secret = [0u8; SECRET_BYTES];
        getrandom::fill(&mut secret).map_err(|e| KeyError::Random(e.to_string()))?;
        Ok(Self(secret))
    }

    /// Reads a secret file: 64 hex digits (surrounding whitespace ignored).
    pub fn read(path: &Path) -> Result<Self, KeyError> {
        let text = read(path)?;
        let mut secret = [0u8; SECRET_BYTES];
        hex::decode_to_slice(text.trim(), &mut secret)
            .map_err(|e| KeyError::ShareSecret { path: path.to_owned(), message: e.to_string() })?;
        Ok(Self(secret))
    }

    /// Reads `path`, or creates it (owner-only) with a fresh secret. For
    /// development stacks.
    pub fn read_or_create(path: &Path) -> Result<Self, KeyError> {
        if path.exists() {
            return Self::read(path);
        }
        let secret = Self::generate()?;
        write_private(path, format!("{}\n", hex::encode(secret.0)).as_bytes())?;
        Ok(secret)
    }

    fn mac(&self, battle_id: &str) -> Hmac<Sha256> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC accepts any key length");
        mac.update(SHARE_DOMAIN);
        mac.update(&[0]);
        mac.update(battle_id.as_bytes());
        mac
    }

    /// The share key of `battle_id`, for a link's `k` parameter.
    pub fn key_for(&self, battle_id: &str) -> String {
        URL_SAFE_NO_PAD.encode(&self.mac(battle_id).finalize().into_bytes()[..KEY_BYTES])
    }

    /// Whether `key` is `battle_id`'s share key, compared in constant time.
    pub fn admits(&self, battle_id: &str, key: &str) -> bool {
        match URL_SAFE_NO_PAD.decode(key) {
            Ok(tag) if tag.len() == KEY_BYTES => self.mac(battle_id).verify_truncated_left(&tag).is_ok(),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_opens_its_own_battle_only() {
        let secret = ShareSecret::from_bytes([7; SECRET_BYTES]);
        let key = secret.key_for("b-1");
        assert_eq!(key.len(), 22, "16 bytes in base64url without padding: {key}");
        assert!(secret.admits("b-1", &key));
        assert!(!secret.admits("b-2", &key));
        assert!(!secret.admits("b-1", &key[..21]));
        assert!(!secret.admits("b-1", "not base64 at all!"));
        assert!(!secret.admits("b-1", ""));
    }

    #[test]
    fn rotating_the_secret_revokes_every_link() {
        let old = ShareSecret::from_bytes([7; SECRET_BYTES]);
        let new = ShareSecret::from_bytes([8; SECRET_BYTES]);
        assert!(!new.admits("b-1", &old.key_for("b-1")));
    }

    #[test]
    fn the_key_is_the_documented_hmac() {
        // Computed independently: HMAC-SHA256 with a key of 32 bytes 0x07
        // over "battlelog/v1/share\0b-1", first 16 bytes, base64url.
        let secret = ShareSecret::from_bytes([7; SECRET_BYTES]);
        assert_eq!(secret.key_for("b-1"), EXPECTED_B1);
    }

    const EXPECTED_B1: &str = "t-1z6LqhmCbBnCFQ6zwmnA";

    #[test]
    fn a_secret_file_round_trips_and_a_bad_one_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("share.secret");
        let created = ShareSecret::read_or_create(&path).unwrap();
        let read = ShareSecret::read_or_create(&path).unwrap();
        assert_eq!(created.key_for("b"), read.key_for("b"));
        std::fs::write(&path, "xyz").unwrap();
        let error = ShareSecret::read(&path).unwrap_err().to_string();
        assert!(error.contains("share secret file") && error.contains("64 hex digits"), "{error}");
        assert!(!error.contains("PEM"), "{error}");
    }
}
