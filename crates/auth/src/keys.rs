//! Keys as files: the operator's signing key (PKCS#8 PEM, as
//! `openssl genpkey -algorithm ed25519` writes it) and the public keys
//! services verify with (SPKI PEM, `openssl pkey -pubout`).

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use ed25519_dalek::pkcs8::spki::der::pem::LineEnding;
use ed25519_dalek::pkcs8::{DecodePrivateKey, DecodePublicKey, EncodePrivateKey, EncodePublicKey};
use sha2::{Digest, Sha256};

#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("cannot read key file {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("cannot write key file {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
    #[error("key file {path} is not an Ed25519 {what} in PEM: {message}")]
    Parse { path: PathBuf, what: &'static str, message: String },
    #[error("the operating system has no randomness for a new key: {0}")]
    Random(String),
    #[error("share secret file {path} must hold 64 hex digits (32 bytes): {message}")]
    ShareSecret { path: PathBuf, message: String },
    #[error("no verification key is configured: at least one public key file is required")]
    NoKeys,
    #[error("token file {path} holds no token")]
    EmptyToken { path: PathBuf },
    #[error("revoked_tokens_file: {0}")]
    Revocations(#[from] crate::revoke::RevocationError),
}

/// The bearer token a service presents to its peers, from a file the
/// operator provisions (a secret, like a key). Surrounding whitespace is
/// ignored, so `battlelog token issue … > file` works as it is.
pub fn read_token_file(path: &Path) -> Result<String, KeyError> {
    let text = read(path)?;
    let token = text.trim();
    if token.is_empty() {
        return Err(KeyError::EmptyToken { path: path.to_owned() });
    }
    Ok(token.to_owned())
}

/// The id of a public key: the first 8 bytes of SHA-256 of its 32 raw
/// bytes, in hex. Tokens name it in `kid`, so a service with several keys
/// (during a rotation) knows which to check.
pub fn key_id(public_key: &ed25519_dalek::VerifyingKey) -> String {
    hex::encode(&Sha256::digest(public_key.as_bytes())[..8])
}

/// The operator's token signing key.
#[derive(Clone)]
pub struct SigningKey(ed25519_dalek::SigningKey);

// Never print the key, not even in a debug log.
impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SigningKey(kid {})", self.kid())
    }
}

impl SigningKey {
    /// A fresh key from the operating system's randomness.
    pub fn generate() -> Result<Self, KeyError> {
        let mut secret = [0u8; 32];
        getrandom::fill(&mut secret).map_err(|e| KeyError::Random(e.to_string()))?;
        Ok(Self(ed25519_dalek::SigningKey::from_bytes(&secret)))
    }

    pub fn read(path: &Path) -> Result<Self, KeyError> {
        let text = read(path)?;
        ed25519_dalek::SigningKey::from_pkcs8_pem(&text).map(Self).map_err(|e| KeyError::Parse {
            path: path.to_owned(),
            what: "private key",
            message: e.to_string(),
        })
    }

    /// Reads `path`, or creates it (owner-only) with a fresh key and writes
    /// the public half beside it as `<path>.pub`. For development stacks.
    pub fn read_or_create(path: &Path) -> Result<Self, KeyError> {
        if path.exists() {
            return Self::read(path);
        }
        let key = Self::generate()?;
        key.write(path)?;
        Ok(key)
    }

    /// Writes the private key (owner-only) and its public key at `<path>.pub`.
    pub fn write(&self, path: &Path) -> Result<(), KeyError> {
        let pem = self.0.to_pkcs8_pem(LineEnding::LF).map_err(|e| KeyError::Parse {
            path: path.to_owned(),
            what: "private key",
            message: e.to_string(),
        })?;
        write_private(path, pem.as_bytes())?;
        let public = public_path(path);
        std::fs::write(&public, self.public_pem()).map_err(|source| KeyError::Write { path: public, source })
    }

    pub fn public_key(&self) -> ed25519_dalek::VerifyingKey {
        self.0.verifying_key()
    }

    /// The public key as SPKI PEM, what services are configured with.
    pub fn public_pem(&self) -> String {
        self.public_key().to_public_key_pem(LineEnding::LF).unwrap_or_default()
    }

    pub fn kid(&self) -> String {
        key_id(&self.public_key())
    }

    /// PKCS#8 DER, as `jsonwebtoken` takes an EdDSA key.
    pub(crate) fn pkcs8_der(&self) -> Vec<u8> {
        self.0.to_pkcs8_der().map(|der| der.as_bytes().to_vec()).unwrap_or_default()
    }
}

/// Where [`SigningKey::write`] puts the public half.
pub fn public_path(private: &Path) -> PathBuf {
    let mut name = private.as_os_str().to_owned();
    name.push(".pub");
    PathBuf::from(name)
}

/// The public keys a service accepts tokens from, by key id.
#[derive(Debug, Clone, Default)]
pub struct VerificationKeys {
    keys: HashMap<String, ed25519_dalek::VerifyingKey>,
}

impl VerificationKeys {
    /// Reads each SPKI PEM file; at least one is required.
    pub fn read(paths: &[PathBuf]) -> Result<Self, KeyError> {
        let mut keys = Self::default();
        for path in paths {
            let text = read(path)?;
            let key = ed25519_dalek::VerifyingKey::from_public_key_pem(text.trim()).map_err(|e| KeyError::Parse {
                path: path.clone(),
                what: "public key",
                message: e.to_string(),
            })?;
            keys.insert(key);
        }
        if keys.keys.is_empty() {
            return Err(KeyError::NoKeys);
        }
        Ok(keys)
    }

    pub fn insert(&mut self, key: ed25519_dalek::VerifyingKey) {
        self.keys.insert(key_id(&key), key);
    }

    pub fn get(&self, kid: &str) -> Option<&ed25519_dalek::VerifyingKey> {
        self.keys.get(kid)
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

impl From<&SigningKey> for VerificationKeys {
    fn from(key: &SigningKey) -> Self {
        let mut keys = Self::default();
        keys.insert(key.public_key());
        keys
    }
}

pub(crate) fn read(path: &Path) -> Result<String, KeyError> {
    std::fs::read_to_string(path).map_err(|source| KeyError::Read { path: path.to_owned(), source })
}

pub(crate) fn write_private(path: &Path, bytes: &[u8]) -> Result<(), KeyError> {
    use std::io::Write;
    let error = |source| KeyError::Write { path: path.to_owned(), source };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(error)?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path).map_err(error)?;
    file.write_all(bytes).and_then(|()| file.sync_all()).map_err(error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_key_reads_back_with_its_public_half() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("signing.pem");
        let key = SigningKey::read_or_create(&path).expect("create");
        let again = SigningKey::read_or_create(&path).expect("read");
        assert_eq!(key.public_key(), again.public_key());
        let keys = VerificationKeys::read(&[public_path(&path)]).expect("public key");
        assert_eq!(keys.get(&key.kid()), Some(&key.public_key()));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).expect("metadata").permissions().mode();
            assert_eq!(mode & 0o077, 0, "the private key must be owner-only");
        }
    }

    #[test]
    fn no_keys_and_bad_files_are_named() {
        assert!(matches!(VerificationKeys::read(&[]), Err(KeyError::NoKeys)));
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("junk.pem");
        std::fs::write(&path, "not a key").expect("write");
        let error = VerificationKeys::read(std::slice::from_ref(&path)).expect_err("junk");
        assert!(error.to_string().contains("junk.pem"), "{error}");
    }

    #[test]
    fn a_key_id_is_eight_bytes_of_sha256_of_the_raw_key() {
        // RFC 8032 test 1's public key; the first 8 bytes of its SHA-256,
        // computed outside this code (Python's hashlib).
        let raw = hex::decode("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a").expect("hex");
        let key = ed25519_dalek::VerifyingKey::from_bytes(&raw.try_into().expect("32 bytes")).expect("key");
        assert_eq!(key_id(&key), "21fe31dfa154a261");
        assert_eq!(key_id(&key).len(), 16);
    }
}
