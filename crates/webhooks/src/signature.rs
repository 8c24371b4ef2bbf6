//! Signing the Standard Webhooks way (standardwebhooks.com): the secret is
//! `whsec_<base64 key>`; a delivery carries `webhook-id`,
//! `webhook-timestamp` (Unix seconds) and `webhook-signature: v1,<base64
//! HMAC-SHA256(key, "{id}.{timestamp}.{body}")>`, so that a receiver checks
//! the body, its id and its time with one MAC, and can refuse a replay of
//! an old delivery by its timestamp.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// The prefix of a Standard Webhooks secret.
pub const SECRET_PREFIX: &str = "whsec_";
/// The shortest key accepted, in bytes (the spec asks for 24 to 64).
pub const MIN_KEY_BYTES: usize = 24;
/// The longest key accepted, in bytes.
pub const MAX_KEY_BYTES: usize = 64;

/// The header names.
pub mod headers {
    pub const ID: &str = "webhook-id";
    pub const TIMESTAMP: &str = "webhook-timestamp";
    pub const SIGNATURE: &str = "webhook-signature";
}

/// A secret that cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SecretError {
    #[error("must start with {SECRET_PREFIX}")]
    Prefix,
    #[error("is not base64 after {SECRET_PREFIX}")]
    Base64,
    #[error("its key is {0} bytes; it must be {MIN_KEY_BYTES} to {MAX_KEY_BYTES}")]
    Length(usize),
}

/// A tenant's signing key, decoded from its `whsec_` form.
#[derive(Clone)]
pub struct Secret {
    key: Vec<u8>,
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key: configs and entries are logged.
        f.write_str("Secret(..)")
    }
}

impl Secret {
    pub fn parse(text: &str) -> Result<Self, SecretError> {
        let encoded = text.trim().strip_prefix(SECRET_PREFIX).ok_or(SecretError::Prefix)?;
        let key = BASE64.decode(encoded).map_err(|_| SecretError::Base64)?;
        if !(MIN_KEY_BYTES..=MAX_KEY_BYTES).contains(&key.len()) {
            return Err(SecretError::Length(key.len()));
        }
        Ok(Self { key })
    }

    /// A new random secret (32 bytes), in its `whsec_` form.
    pub fn generate() -> Result<String, getrandom::Error> {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key)?;
        Ok(format!("{SECRET_PREFIX}{}", BASE64.encode(key)))
    }

    fn mac(&self, id: &str, timestamp: u64, body: &[u8]) -> Hmac<Sha256> {
        // A key of any length is accepted by HMAC: this cannot fail.
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.key).expect("HMAC takes any key length");
        mac.update(id.as_bytes());
        mac.update(b".");
        mac.update(timestamp.to_string().as_bytes());
        mac.update(b".");
        mac.update(body);
        mac
    }

    /// The `webhook-signature` value: `v1,<base64 HMAC-SHA256>`.
    pub fn sign(&self, id: &str, timestamp: u64, body: &[u8]) -> String {
        format!("v1,{}", BASE64.encode(self.mac(id, timestamp, body).finalize().into_bytes()))
    }

    /// Whether one of the space-separated signatures of `header` is a `v1`
    /// signature of this id, time and body (compared in constant time).
    pub fn verify(&self, id: &str, timestamp: u64, body: &[u8], header: &str) -> bool {
        header
            .split(' ')
            .filter_map(|s| s.strip_prefix("v1,"))
            .filter_map(|s| BASE64.decode(s).ok())
            .any(|tag| self.mac(id, timestamp, body).verify_slice(&tag).is_ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of the Standard Webhooks specification's test vectors
    /// (its reference libraries' tests): this secret, id, timestamp and
    /// body sign to this value.
    #[test]
    fn the_specifications_example_signs_to_its_value() {
        let secret = Secret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").expect("the spec's secret");
        let body = br#"{"test": 2432232314}"#;
        let signature = secret.sign("msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body);
        assert_eq!(signature, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
        assert!(secret.verify("msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body, &format!("v1,bogus= {signature}")));
        assert!(!secret.verify("msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265331, body, &signature));
        assert!(!secret.verify("msg_other", 1614265330, body, &signature));
        assert!(!secret.verify("msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, b"{}", &signature));
    }

    #[test]
    fn secrets_are_whsec_base64_of_24_to_64_bytes() {
        assert_eq!(Secret::parse("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").err(), Some(SecretError::Prefix));
        assert_eq!(Secret::parse("whsec_%%%").err(), Some(SecretError::Base64));
        let of = |n: usize| format!("{SECRET_PREFIX}{}", BASE64.encode(vec![7u8; n]));
        assert_eq!(Secret::parse(&of(MIN_KEY_BYTES - 1)).err(), Some(SecretError::Length(MIN_KEY_BYTES - 1)));
        assert!(Secret::parse(&of(MIN_KEY_BYTES)).is_ok());
        assert!(Secret::parse(&of(MAX_KEY_BYTES)).is_ok());
        assert_eq!(Secret::parse(&of(MAX_KEY_BYTES + 1)).err(), Some(SecretError::Length(MAX_KEY_BYTES + 1)));
        let generated = Secret::generate().expect("random");
        assert!(Secret::parse(&generated).is_ok(), "{generated}");
        assert_ne!(generated, Secret::generate().expect("random"));
    }
}
