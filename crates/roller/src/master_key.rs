//! The master key: the roller's one secret. Every server seed is
//! `HMAC-SHA256(master_key, battle id, epoch)`, so the roller needs no
//! database of seeds and any replica derives the same ones. The key that
//! signs commitments derives from it too
//! (`HMAC-SHA256(master_key, "battlelog/v1/commitment-key")`, see
//! `docs/PROTOCOL-signatures.md`): replicas agree on it and there is no
//! second secret to store, rotate or leak.

use std::fmt;
use std::path::Path;

/// Fewer bytes than this would make seeds guessable.
pub const MIN_MASTER_KEY_BYTES: usize = 32;

#[derive(Debug, thiserror::Error)]
pub enum MasterKeyError {
    #[error("master key must be hex: {0}")]
    NotHex(hex::FromHexError),
    #[error("master key is {0} bytes; at least {MIN_MASTER_KEY_BYTES} are required")]
    TooShort(usize),
    #[error("cannot read master key file {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("cannot create master key file {path}: {source}")]
    Write { path: String, source: std::io::Error },
    #[error("the operating system has no randomness for a new master key: {0}")]
    Random(String),
}

#[derive(Clone)]
pub struct MasterKey(Vec<u8>);

// Never print the key, not even in a debug log.
impl fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("MasterKey(..)")
    }
}

impl MasterKey {
    /// Hex text, surrounding whitespace ignored.
    pub fn from_hex(text: &str) -> Result<Self, MasterKeyError> {
        let bytes = hex::decode(text.trim()).map_err(MasterKeyError::NotHex)?;
        if bytes.len() < MIN_MASTER_KEY_BYTES {
            return Err(MasterKeyError::TooShort(bytes.len()));
        }
        Ok(Self(bytes))
    }

    pub fn read_file(path: &Path) -> Result<Self, MasterKeyError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| MasterKeyError::Read { path: path.display().to_string(), source })?;
        Self::from_hex(&text)
    }

    /// Reads `path`, or on first start creates it with 32 fresh random bytes
    /// (readable by the owner only). For development: production keys come
    /// from a secret store.
    pub fn read_or_create(path: &Path) -> Result<Self, MasterKeyError> {
        if path.exists() {
            return Self::read_file(path);
        }
        let mut bytes = [0u8; MIN_MASTER_KEY_BYTES];
        getrandom::fill(&mut bytes).map_err(|e| MasterKeyError::Random(e.to_string()))?;
        let write_error = |source| MasterKeyError::Write { path: path.display().to_string(), source };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(write_error)?;
        }
        write_private(path, &hex::encode(bytes)).map_err(write_error)?;
        Ok(Self(bytes.to_vec()))
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The server seed of `battle_id`'s `epoch`.
    pub fn seed(&self, battle_id: &str, epoch: u32) -> dice::ServerSeed {
        dice::ServerSeed::derive(&self.0, battle_id, epoch)
    }

    /// The Ed25519 key that signs this roller's commitments.
    pub fn commitment_signer(&self) -> dice::CommitmentSigner {
        dice::CommitmentSigner::derive(&self.0)
    }
}

#[cfg(unix)]
fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)?;
    file.write_all(text.as_bytes())?;
    file.sync_all()
}

#[cfg(not(unix))]
fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    std::fs::write(path, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_commitment_key_derives_from_the_master_key() {
        // Computed from docs/PROTOCOL-signatures.md by an independent
        // implementation (Python hmac + `cryptography`'s Ed25519).
        let key = MasterKey::from_hex("7f5fa63fb10d8bd9625a6e723efaa688e116332df5109a0fd7d8475e2fb737b6").expect("key");
        assert_eq!(
            key.commitment_signer().roller_key().to_string(),
            "f23b8a24e114f60d51b3df1b2e75a953f0f093ee41c696199d2fcc6ff67e9dde"
        );
        assert_eq!(format!("{key:?}"), "MasterKey(..)");
    }
}
