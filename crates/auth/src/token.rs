//! Issuing and verifying tokens.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};

use crate::claims::{
    Claims, MAX_SUBJECT_BYTES, MAX_TOKEN_ID_BYTES, Role, tenant_reserved, token_id_ok, validate_tenant,
};
use crate::keys::{SigningKey, VerificationKeys};
use crate::revoke::RevocationList;

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
    #[error("bearer token not yet valid: not before {nbf} (seconds since the Unix epoch)")]
    NotYetValid { nbf: u64 },
    #[error(
        "bearer token issued in the future: iat {iat} is ahead of this service's clock (seconds since the Unix epoch)"
    )]
    IssuedInFuture { iat: u64 },
    #[error(
        "bearer token lifetime too long: valid from iat {iat} to exp {exp}; this service accepts tokens valid for \
         at most {max} seconds"
    )]
    LifetimeTooLong { iat: u64, exp: u64, max: u64 },
    #[error("revoked bearer token: its {by} is on this service's revocation list")]
    Revoked { by: &'static str },
    #[error(
        "bearer token names tenant {tenant:?}, which is reserved (the subject of battles without a tenant): no \
         forum may be it; issue the token for the forum's own tenant"
    )]
    TenantReserved { tenant: String },
}

/// Refuses what no service should ever issue, so a mistake shows at once.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IssueError {
    #[error("subject must be 1 to {MAX_SUBJECT_BYTES} printable bytes")]
    Subject,
    #[error(transparent)]
    Tenant(#[from] crate::claims::TenantError),
    #[error("tenant {0:?} is reserved (the subject of battles without a tenant); no token may name it")]
    TenantReserved(String),
    #[error("cannot sign the token: {0}")]
    Sign(String),
    #[error("the operating system has no randomness for a token id: {0}")]
    Random(String),
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

    /// A token with explicit times and a fresh id: tests use it for
    /// expired tokens and others the services refuse.
    pub fn issue_at(&self, subject: &str, tenant: &str, role: Role, iat: u64, exp: u64) -> Result<String, IssueError> {
        if tenant_reserved(tenant) {
            return Err(IssueError::TenantReserved(tenant.to_owned()));
        }
        let claims = Claims {
            sub: subject.to_owned(),
            tenant: tenant.to_owned(),
            role,
            exp,
            iat,
            nbf: None,
            jti: Some(new_token_id()?),
            kid: self.kid(),
        };
        self.sign(claims)
    }

    /// Signs `claims` as they are, but for `kid`, which is always this
    /// key's: for tests that need a claim `issue` never sets (`nbf`, a
    /// reserved tenant).
    pub fn sign(&self, mut claims: Claims) -> Result<String, IssueError> {
        if !subject_ok(&claims.sub) {
            return Err(IssueError::Subject);
        }
        validate_tenant(&claims.tenant)?;
        claims.kid = self.kid();
        let mut header = Header::new(Algorithm::EdDSA);
        header.kid = Some(claims.kid.clone());
        jsonwebtoken::encode(&header, &claims, &EncodingKey::from_ed_der(&self.pkcs8_der()))
            .map_err(|e| IssueError::Sign(e.to_string()))
    }
}

/// A fresh token id: 16 random bytes from the operating system, in hex.
pub fn new_token_id() -> Result<String, IssueError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| IssueError::Random(e.to_string()))?;
    Ok(hex::encode(bytes))
}

/// A verified request's token, as the door admitted it, to be checked
/// again while its call lasts: a `Watch` stream ends when its token is
/// revoked (or expires), not only when the next call is refused. The
/// [`crate::Authenticator`] leaves one in every request's extensions.
#[derive(Debug, Clone)]
pub struct TokenCheck {
    verifier: Verifier,
    claims: Claims,
}

impl TokenCheck {
    pub fn new(verifier: Verifier, claims: Claims) -> Self {
        Self { verifier, claims }
    }

    /// Whether the token is still admitted now: not expired, not revoked
    /// (the revocation list as last reloaded).
    pub fn check(&self) -> Result<(), TokenError> {
        self.verifier.admit(&self.claims, now())
    }

    /// How often checking again can find something new: the revocation
    /// list's reload interval; None without a list (expiry alone, which
    /// the caller knows from `exp`).
    pub fn every(&self) -> Option<Duration> {
        self.verifier.revocations_reloaded_every()
    }
}

/// Verified tokens kept, so that a service's own token (the same string on
/// every call between services) costs a map lookup, not a signature check.
const MAX_CACHED_TOKENS: usize = 4_096;
/// Allowed clock difference between the issuer and this service, for
/// `exp`, `nbf` and `iat` alike.
pub const LEEWAY_SECONDS: u64 = 30;
/// The longest a token may be valid (`exp` − `iat`) unless a service is
/// configured otherwise (`token_max_lifetime_secs`): 90 days.
pub const DEFAULT_MAX_LIFETIME: Duration = Duration::from_secs(90 * 24 * 3600);
/// Longest token read at all; a real one is a few hundred bytes.
const MAX_TOKEN_BYTES: usize = 4_096;

/// Verifies tokens against a service's configured keys.
#[derive(Debug, Clone)]
pub struct Verifier {
    keys: Arc<VerificationKeys>,
    verified: Arc<Mutex<HashMap<String, Claims>>>,
    /// The longest lifetime accepted, in seconds.
    max_lifetime: u64,
    revoked: Option<Arc<RevocationList>>,
}

impl Verifier {
    /// Accepts tokens of `keys` living at most [`DEFAULT_MAX_LIFETIME`],
    /// with no revocation list.
    pub fn new(keys: VerificationKeys) -> Self {
        Self {
            keys: Arc::new(keys),
            verified: Arc::default(),
            max_lifetime: DEFAULT_MAX_LIFETIME.as_secs(),
            revoked: None,
        }
    }

    /// Accepts no token valid (`exp` − `iat`) for longer than `max`.
    pub fn with_max_lifetime(mut self, max: Duration) -> Self {
        self.max_lifetime = max.as_secs();
        self
    }

    /// Refuses the tokens `list` names.
    pub fn with_revocations(mut self, list: RevocationList) -> Self {
        self.revoked = Some(Arc::new(list));
        self
    }

    /// A verifier of the public key files a service is configured with
    /// (`auth_keys`); at least one is required.
    pub fn from_files(paths: &[std::path::PathBuf]) -> Result<Self, crate::KeyError> {
        Ok(Self::new(VerificationKeys::read(paths)?))
    }

    /// A service's verifier as configured: the public key files
    /// (`auth_keys`), the longest lifetime accepted
    /// (`token_max_lifetime_secs`) and, when given, the revocation list
    /// (`revoked_tokens_file`, looked at every `revoked_tokens_reload_ms`).
    pub fn configured(
        auth_keys: &[std::path::PathBuf],
        max_lifetime: Duration,
        revoked_tokens_file: Option<&std::path::Path>,
        reload_every: Duration,
    ) -> Result<Self, crate::KeyError> {
        let verifier = Self::from_files(auth_keys)?.with_max_lifetime(max_lifetime);
        Ok(match revoked_tokens_file {
            Some(path) => verifier.with_revocations(RevocationList::open(path, reload_every)?),
            None => verifier,
        })
    }

    /// How often a revocation may take effect: the revocation list's
    /// reload interval (None: no list, nothing is ever revoked).
    pub fn revocations_reloaded_every(&self) -> Option<Duration> {
        self.revoked.as_ref().map(|list| list.reload_every())
    }

    /// The claims of a valid token, or why it is not valid.
    pub fn verify(&self, token: &str) -> Result<Claims, TokenError> {
        let cached = self.verified.lock().unwrap_or_else(|p| p.into_inner()).get(token).cloned();
        if let Some(claims) = cached {
            // A cached token still expires, and can be revoked.
            self.admit(&claims, now())?;
            return Ok(claims);
        }
        let claims = self.check(token)?;
        self.admit(&claims, now())?;
        let mut verified = self.verified.lock().unwrap_or_else(|p| p.into_inner());
        if verified.len() >= MAX_CACHED_TOKENS {
            verified.clear();
        }
        verified.insert(token.to_owned(), claims.clone());
        Ok(claims)
    }

    /// Whether claims whose signature verified are valid at `now`: every
    /// call, cached or not. The times allow [`LEEWAY_SECONDS`] of clock
    /// difference; the lifetime is the issuer's alone (`exp` − `iat`, both
    /// its clock), so it has none. With `iat` at most the leeway ahead of
    /// now, a lifetime within the maximum also keeps `exp` within the
    /// maximum (and the leeway) of now, however large `exp` is.
    fn admit(&self, claims: &Claims, now: u64) -> Result<(), TokenError> {
        if claims.exp.saturating_add(LEEWAY_SECONDS) < now {
            return Err(TokenError::Expired { exp: claims.exp });
        }
        if let Some(nbf) = claims.nbf.filter(|nbf| *nbf > now.saturating_add(LEEWAY_SECONDS)) {
            return Err(TokenError::NotYetValid { nbf });
        }
        if claims.iat > now.saturating_add(LEEWAY_SECONDS) {
            return Err(TokenError::IssuedInFuture { iat: claims.iat });
        }
        if claims.exp.saturating_sub(claims.iat) > self.max_lifetime {
            return Err(TokenError::LifetimeTooLong { iat: claims.iat, exp: claims.exp, max: self.max_lifetime });
        }
        match &self.revoked {
            Some(list) => list.check(claims),
            None => Ok(()),
        }
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
        // The times are checked in `admit`, on every call, so that the error
        // can say which and when.
        validation.validate_exp = false;
        let data = jsonwebtoken::decode::<Claims>(token, &DecodingKey::from_ed_der(key.as_bytes()), &validation)
            .map_err(|e| match e.kind() {
                ErrorKind::InvalidSignature => TokenError::BadSignature { kid: kid.clone() },
                _ => TokenError::Malformed(e.to_string()),
            })?;
        let claims = data.claims;
        if claims.kid != kid {
            return Err(TokenError::Malformed(format!("claims name key {} but the header names {kid}", claims.kid)));
        }
        if !subject_ok(&claims.sub) {
            return Err(TokenError::Malformed(format!("sub must be 1 to {MAX_SUBJECT_BYTES} printable bytes")));
        }
        validate_tenant(&claims.tenant).map_err(|e| TokenError::Malformed(e.to_string()))?;
        // A signed token naming a reserved tenant (issued by other tooling,
        // or before the issuer refused them) is refused here, at the door,
        // for what it is — not deep inside a call, as an internal error.
        if tenant_reserved(&claims.tenant) {
            return Err(TokenError::TenantReserved { tenant: claims.tenant });
        }
        if claims.jti.as_deref().is_some_and(|jti| !token_id_ok(jti)) {
            return Err(TokenError::Malformed(format!(
                "jti must be 1 to {MAX_TOKEN_ID_BYTES} bytes of printable ASCII without spaces"
            )));
        }
        Ok(claims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::RESERVED_TENANTS;

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
                nbf: None,
                jti: None,
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

    /// `_` is refused when issued, and a signed token naming it (issued by
    /// other tooling) at the token check, with its own reason, in every
    /// role; a tenant merely starting with `_` is anyone's.
    #[test]
    fn a_reserved_tenant_is_refused_at_the_token_check() {
        let key = SigningKey::generate().expect("key");
        let verifier = verifier(&key);
        for tenant in RESERVED_TENANTS {
            assert_eq!(key.issue("f", tenant, Role::Forum, HOUR), Err(IssueError::TenantReserved((*tenant).into())));
            for role in [Role::Forum, Role::Judge, Role::Reader, Role::Service] {
                let claims = Claims {
                    sub: "f".into(),
                    tenant: (*tenant).into(),
                    role,
                    exp: now() + 3600,
                    iat: now(),
                    nbf: None,
                    jti: None,
                    kid: String::new(),
                };
                let token = key.sign(claims).expect("signed as it is");
                let refused = verifier.verify(&token).expect_err("a reserved tenant");
                assert_eq!(refused, TokenError::TenantReserved { tenant: (*tenant).into() });
                assert_eq!(refused.reason(), battlelog_proto::error::AuthReason::TokenTenantReserved);
                assert!(refused.to_string().contains("reserved"), "{refused}");
            }
        }
        for near in ["__", "_a", "a_"] {
            let token = key.issue("f", near, Role::Forum, HOUR).expect("not reserved");
            assert!(verifier.verify(&token).is_ok(), "{near}");
        }
    }

    #[test]
    fn issuing_refuses_bad_names() {
        let key = SigningKey::generate().expect("key");
        assert_eq!(key.issue("", "t", Role::Forum, HOUR), Err(IssueError::Subject));
        assert!(matches!(key.issue("f", "a.b", Role::Forum, HOUR), Err(IssueError::Tenant(_))));
        assert!(matches!(key.issue("f", "", Role::Forum, HOUR), Err(IssueError::Tenant(_))));
    }

    const MAX: u64 = DEFAULT_MAX_LIFETIME.as_secs();
    /// A fixed clock for the edges: the checks take `now` as an argument.
    const NOW: u64 = 1_800_000_000;

    fn claims(iat: u64, exp: u64, nbf: Option<u64>) -> Claims {
        Claims {
            sub: "f".into(),
            tenant: "t".into(),
            role: Role::Forum,
            exp,
            iat,
            nbf,
            jti: Some("id-1".into()),
            kid: "k".into(),
        }
    }

    fn admit(verifier: &Verifier, iat: u64, exp: u64, nbf: Option<u64>) -> Result<(), TokenError> {
        verifier.admit(&claims(iat, exp, nbf), NOW)
    }

    #[test]
    fn the_lifetime_is_capped_at_the_maximum() {
        let key = SigningKey::generate().expect("key");
        let verifier = verifier(&key);
        assert_eq!(MAX, 90 * 86_400, "the default is 90 days");
        assert_eq!(admit(&verifier, NOW, NOW + MAX - 1, None), Ok(()), "just under");
        assert_eq!(admit(&verifier, NOW, NOW + MAX, None), Ok(()), "at");
        let over = TokenError::LifetimeTooLong { iat: NOW, exp: NOW + MAX + 1, max: MAX };
        assert_eq!(admit(&verifier, NOW, NOW + MAX + 1, None), Err(over), "over");
        // Far beyond, without overflowing: the year 2200, and 2^64 − 1.
        for exp in [7_258_118_400, u64::MAX] {
            assert!(matches!(admit(&verifier, NOW, exp, None), Err(TokenError::LifetimeTooLong { .. })), "{exp}");
        }
        // Issued long ago with a long life: still too long, though its
        // remaining life is short.
        assert!(matches!(admit(&verifier, NOW - MAX, NOW + 60, None), Err(TokenError::LifetimeTooLong { .. })));
        // A configured maximum.
        let hour = verifier.clone().with_max_lifetime(HOUR);
        assert_eq!(admit(&hour, NOW, NOW + 3600, None), Ok(()));
        assert!(matches!(admit(&hour, NOW, NOW + 3601, None), Err(TokenError::LifetimeTooLong { max: 3600, .. })));
    }

    #[test]
    fn nbf_and_iat_have_the_leeway_of_exp() {
        let key = SigningKey::generate().expect("key");
        let verifier = verifier(&key);
        let lee = LEEWAY_SECONDS;
        assert_eq!(admit(&verifier, NOW, NOW + 60, Some(NOW + lee - 1)), Ok(()), "nbf just within");
        assert_eq!(admit(&verifier, NOW, NOW + 60, Some(NOW + lee)), Ok(()), "nbf at the leeway");
        let nbf = NOW + lee + 1;
        assert_eq!(admit(&verifier, NOW, NOW + 60, Some(nbf)), Err(TokenError::NotYetValid { nbf }), "beyond");
        assert_eq!(admit(&verifier, NOW, NOW + 60, Some(u64::MAX)), Err(TokenError::NotYetValid { nbf: u64::MAX }));
        assert_eq!(admit(&verifier, NOW + lee - 1, NOW + 60, None), Ok(()), "iat just within");
        assert_eq!(admit(&verifier, NOW + lee, NOW + 60, None), Ok(()), "iat at the leeway");
        let iat = NOW + lee + 1;
        assert_eq!(admit(&verifier, iat, NOW + 60, None), Err(TokenError::IssuedInFuture { iat }), "beyond");
        // And exp, for comparison: expired only past the same leeway.
        assert_eq!(admit(&verifier, NOW - 60, NOW - lee, None), Ok(()), "exp at the leeway");
        assert_eq!(admit(&verifier, NOW - 60, NOW - lee - 1, None), Err(TokenError::Expired { exp: NOW - lee - 1 }));
    }

    #[test]
    fn a_signed_token_with_a_future_nbf_is_refused_until_then() {
        let key = SigningKey::generate().expect("key");
        let verifier = verifier(&key);
        let mut future = claims(now(), now() + 3600, Some(now() + 600));
        future.jti = Some(new_token_id().expect("id"));
        let token = key.sign(future).expect("sign");
        assert!(matches!(verifier.verify(&token), Err(TokenError::NotYetValid { .. })));
        assert!(verifier.verified.lock().expect("lock").is_empty(), "a refused token is not cached");
        // And a jti that could not be written on the revocation list.
        let mut spaced = claims(now(), now() + 60, None);
        spaced.jti = Some("two words".into());
        let token = key.sign(spaced).expect("sign");
        assert!(matches!(verifier.verify(&token), Err(TokenError::Malformed(m)) if m.contains("jti")));
    }

    #[test]
    fn every_issued_token_has_its_own_id() {
        let key = SigningKey::generate().expect("key");
        let verifier = verifier(&key);
        let a = verifier.verify(&key.issue("f", "t", Role::Forum, HOUR).expect("issue")).expect("valid");
        let b = verifier.verify(&key.issue("f", "t", Role::Forum, HOUR).expect("issue")).expect("valid");
        let (a, b) = (a.jti.expect("a jti"), b.jti.expect("a jti"));
        assert_ne!(a, b);
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()), "{a}");
    }

    #[test]
    fn a_revoked_token_is_refused_even_when_cached() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("revoked");
        std::fs::write(&path, "").expect("write");
        let key = SigningKey::generate().expect("key");
        let list = RevocationList::open(&path, Duration::ZERO).expect("open");
        let verifier = verifier(&key).with_revocations(list);
        let token = key.issue("forum-a", "t", Role::Forum, HOUR).expect("issue");
        let jti = verifier.verify(&token).expect("valid").jti.expect("jti");
        let other = key.issue("forum-a", "t", Role::Forum, HOUR).expect("issue");
        crate::revoke::append(&path, &crate::revoke::Revocation::token_id(&jti).expect("id")).expect("revoke");
        assert_eq!(verifier.verify(&token), Err(TokenError::Revoked { by: "token id (jti)" }));
        assert!(verifier.verify(&other).is_ok(), "the subject's other token");
        crate::revoke::append(&path, &crate::revoke::Revocation::subject("forum-a").expect("sub")).expect("revoke");
        assert_eq!(verifier.verify(&other), Err(TokenError::Revoked { by: "subject" }));
    }

    #[test]
    fn a_configured_list_must_exist_at_start_and_the_error_names_its_key() {
        let dir = tempfile::tempdir().expect("temp dir");
        let key = SigningKey::generate().expect("key");
        let private = dir.path().join("signing.pem");
        key.write(&private).expect("write");
        let keys = [crate::keys::public_path(&private)];
        let missing = dir.path().join("revoked");
        let error =
            Verifier::configured(&keys, HOUR, Some(&missing), Duration::ZERO).expect_err("no list file").to_string();
        assert!(error.starts_with("revoked_tokens_file: cannot read revocation list"), "{error}");
        std::fs::write(&missing, "").expect("an empty list");
        let verifier = Verifier::configured(&keys, HOUR, Some(&missing), Duration::ZERO).expect("configured");
        let long = key.issue("f", "t", Role::Forum, HOUR + Duration::from_secs(1)).expect("issue");
        assert!(matches!(verifier.verify(&long), Err(TokenError::LifetimeTooLong { max: 3600, .. })));
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
