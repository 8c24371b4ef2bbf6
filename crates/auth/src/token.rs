//! Issuing and verifying tokens.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};

use crate::claims::{Claims, MAX_SUBJECT_BYTES, Role, validate_tenant};
use crate::keys::{SigningKey, VerificationKeys};

/// Why a token is not accepted. Each says which, so an integrator knows
/// whether to fetch a new token, fix its header or ask for another key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("missing bearer token: send `authorization: Bearer <token>`")]
    Missing,
    #[error("malformed bearer token: {0}")]
    Malformed(String),
    #[error("expired bearer token: it expired at {exp} (seconds since the Unix epoch)")]
    Expired { exp: u64 },
    #[error("bearer token signed by an unknown key (kid {kid}): this service does not accept that key")]
    UnknownKey { kid: String },
    #[error("bearer token signature does not verify with key {kid}")]
    BadSignature { kid: String },
}

/// Refuses what no service should ever issue, so a mistake shows at once.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IssueError {
    #[error("subject must be 1 to {MAX_SUBJECT_BYTES} printable bytes")]
    Subject,
    #[error(transparent)]
    Tenant(#[from] crate::claims::TenantError),
    #[error("cannot sign the token: {0}")]
    Sign(String),
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or_default()
}

fn subject_ok(subject: &str) -> bool {
    !subject.is_empty() && subject.len() <= MAX_SUBJECT_BYTES && !subject.chars().any(char::is_control)
}

impl SigningKey {
    /// A token for `subject` of `tenant` in `role`, valid for `ttl`.
    pub fn issue(&self, subject: &str, tenant: &str, role: Role, ttl: Duration) -> Result<String, IssueError> {
        self.issue_at(subject, tenant, role, now(), now().saturating_add(ttl.as_secs()))
    }

    /// A token with explicit times: tests use it for expired tokens.
    pub fn issue_at(&self, subject: &str, tenant: &str, role: Role, iat: u64, exp: u64) -> Result<String, IssueError> {
        if !subject_ok(subject) {
            return Err(IssueError::Subject);
        }
        validate_tenant(tenant)?;
        let kid = self.kid();
        let claims = Claims { sub: subject.to_owned(), tenant: tenant.to_owned(), role, exp, iat, kid: kid.clone() };
        let mut header = Header::new(Algorithm::EdDSA);
        header.kid = Some(kid);
        jsonwebtoken::encode(&header, &claims, &EncodingKey::from_ed_der(&self.pkcs8_der()))
            .map_err(|e| IssueError::Sign(e.to_string()))
    }
}

/// Verified tokens kept, so that a service's own token (the same string on
/// every call between services) costs a map lookup, not a signature check.
const MAX_CACHED_TOKENS: usize = 4_096;
/// Allowed clock difference between the issuer and this service.
const LEEWAY_SECONDS: u64 = 30;
/// Longest token read at all; a real one is a few hundred bytes.
const MAX_TOKEN_BYTES: usize = 4_096;

/// Verifies tokens against a service's configured keys.
#[derive(Debug, Clone)]
pub struct Verifier {
    keys: Arc<VerificationKeys>,
    verified: Arc<Mutex<HashMap<String, Claims>>>,
}

impl Verifier {
    pub fn new(keys: VerificationKeys) -> Self {
        Self { keys: Arc::new(keys), verified: Arc::default() }
    }

    /// A verifier of the public key files a service is configured with
    /// (`auth_keys`); at least one is required.
    pub fn from_files(paths: &[std::path::PathBuf]) -> Result<Self, crate::KeyError> {
        Ok(Self::new(VerificationKeys::read(paths)?))
    }

    /// The claims of a valid token, or why it is not valid.
    pub fn verify(&self, token: &str) -> Result<Claims, TokenError> {
        let cached = self.verified.lock().unwrap_or_else(|p| p.into_inner()).get(token).cloned();
        let claims = match cached {
            Some(claims) => claims,
            None => {
                let claims = self.check(token)?;
                let mut verified = self.verified.lock().unwrap_or_else(|p| p.into_inner());
                if verified.len() >= MAX_CACHED_TOKENS {
                    verified.clear();
                }
                verified.insert(token.to_owned(), claims.clone());
                claims
            }
        };
        // A cached token still expires.
        if claims.exp.saturating_add(LEEWAY_SECONDS) < now() {
            return Err(TokenError::Expired { exp: claims.exp });
        }
        Ok(claims)
    }

    fn check(&self, token: &str) -> Result<Claims, TokenError> {
        if token.len() > MAX_TOKEN_BYTES {
            return Err(TokenError::Malformed(format!("longer than {MAX_TOKEN_BYTES} bytes")));
        }
        let header = jsonwebtoken::decode_header(token).map_err(|e| TokenError::Malformed(e.to_string()))?;
        if header.alg != Algorithm::EdDSA {
            return Err(TokenError::Malformed(format!("alg is {:?}; battlelog tokens are EdDSA", header.alg)));
        }
        let kid = header.kid.ok_or_else(|| TokenError::Malformed("the header has no kid".into()))?;
        let key = self.keys.get(&kid).ok_or_else(|| TokenError::UnknownKey { kid: kid.clone() })?;
        let mut validation = Validation::new(Algorithm::EdDSA);
        validation.leeway = LEEWAY_SECONDS;
        validation.set_required_spec_claims(&["exp", "sub"]);
        // Expiry is checked below, so that the error can say when.
        validation.validate_exp = false;
        let data = jsonwebtoken::decode::<Claims>(token, &DecodingKey::from_ed_der(key.as_bytes()), &validation)
            .map_err(|e| match e.kind() {
                ErrorKind::InvalidSignature => TokenError::BadSignature { kid: kid.clone() },
                _ => TokenError::Malformed(e.to_string()),
            })?;
        let claims = data.claims;
        if claims.exp.saturating_add(LEEWAY_SECONDS) < now() {
            return Err(TokenError::Expired { exp: claims.exp });
        }
        if claims.kid != kid {
            return Err(TokenError::Malformed(format!("claims name key {} but the header names {kid}", claims.kid)));
        }
        if !subject_ok(&claims.sub) {
            return Err(TokenError::Malformed(format!("sub must be 1 to {MAX_SUBJECT_BYTES} printable bytes")));
        }
        validate_tenant(&claims.tenant).map_err(|e| TokenError::Malformed(e.to_string()))?;
        Ok(claims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: Duration = Duration::from_secs(3600);

    fn verifier(key: &SigningKey) -> Verifier {
        Verifier::new(VerificationKeys::from(key))
    }

    #[test]
    fn a_token_carries_its_claims() {
        let key = SigningKey::generate().expect("key");
        let token = key.issue("forum-a", "tenant-a", Role::Forum, HOUR).expect("issue");
        let claims = verifier(&key).verify(&token).expect("valid");
        assert_eq!((claims.sub.as_str(), claims.tenant.as_str(), claims.role), ("forum-a", "tenant-a", Role::Forum));
        assert_eq!(claims.kid, key.kid());
        assert!(claims.exp >= claims.iat + 3600 - 1);
    }

    #[test]
    fn each_kind_of_bad_token_is_named() {
        let key = SigningKey::generate().expect("key");
        let other = SigningKey::generate().expect("other key");
        let verifier = verifier(&key);
        assert!(matches!(verifier.verify("not a token"), Err(TokenError::Malformed(_))));
        let expired = key.issue_at("f", "t", Role::Forum, now() - 7200, now() - 3600).expect("issue");
        assert!(matches!(verifier.verify(&expired), Err(TokenError::Expired { .. })));
        let foreign = other.issue("f", "t", Role::Forum, HOUR).expect("issue");
        assert_eq!(verifier.verify(&foreign), Err(TokenError::UnknownKey { kid: other.kid() }));
        // Signed by another key but claiming ours: the signature is checked.
        let forged = {
            let mut header = Header::new(Algorithm::EdDSA);
            header.kid = Some(key.kid());
            let claims = Claims {
                sub: "f".into(),
                tenant: "t".into(),
                role: Role::Service,
                exp: now() + 3600,
                iat: now(),
                kid: key.kid(),
            };
            jsonwebtoken::encode(&header, &claims, &EncodingKey::from_ed_der(&other.pkcs8_der())).expect("encode")
        };
        assert_eq!(verifier.verify(&forged), Err(TokenError::BadSignature { kid: key.kid() }));
    }

    #[test]
    fn a_changed_claim_breaks_the_signature() {
        let key = SigningKey::generate().expect("key");
        let token = key.issue("f", "t", Role::Reader, HOUR).expect("issue");
        let parts: Vec<&str> = token.split('.').collect();
        let payload =
            String::from_utf8(base64_url_decode(parts[1])).expect("utf-8").replace("\"reader\"", "\"service\"");
        let tampered = format!("{}.{}.{}", parts[0], base64_url_encode(payload.as_bytes()), parts[2]);
        assert_eq!(verifier(&key).verify(&tampered), Err(TokenError::BadSignature { kid: key.kid() }));
    }

    #[test]
    fn a_cached_token_still_expires_and_bad_ones_are_not_cached() {
        let key = SigningKey::generate().expect("key");
        let verifier = verifier(&key);
        let short = key.issue_at("f", "t", Role::Forum, now(), now()).expect("issue");
        // Within the leeway it is accepted, and cached.
        assert!(verifier.verify(&short).is_ok());
        assert_eq!(verifier.verified.lock().expect("lock").len(), 1);
        assert!(verifier.verify("x.y.z").is_err());
        assert_eq!(verifier.verified.lock().expect("lock").len(), 1);
    }

    #[test]
    fn issuing_refuses_bad_names() {
        let key = SigningKey::generate().expect("key");
        assert_eq!(key.issue("", "t", Role::Forum, HOUR), Err(IssueError::Subject));
        assert!(matches!(key.issue("f", "a.b", Role::Forum, HOUR), Err(IssueError::Tenant(_))));
        assert!(matches!(key.issue("f", "", Role::Forum, HOUR), Err(IssueError::Tenant(_))));
    }

    fn base64_url_decode(text: &str) -> Vec<u8> {
        use base64::Engine;
        base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(text).expect("base64url")
    }

    fn base64_url_encode(bytes: &[u8]) -> String {
        use base64::Engine;
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    }
}
