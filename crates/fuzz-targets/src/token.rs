//! Target `bearer_token`: the `authorization` header value as the services'
//! [`Authenticator`] reads it, down to the JWT and its Ed25519 signature,
//! against a real key so that signatures are checked for real.
//!
//! The first byte picks a mode:
//! - even: the rest is the header value, as a client may send any.
//!   The checked-in seeds hold tokens signed by the target's fixed key, so
//!   the fuzzer starts from tokens whose signature verifies.
//! - odd: the rest is read with `arbitrary` as claims and edits: the
//!   target issues a token for those claims with its key (as an operator
//!   would), then edits the token's text (a character changed, inserted or
//!   removed, parts swapped or cut), and presents it.
//!
//! Properties, beyond "no panic":
//! - a refusal is `UNAUTHENTICATED` with an `ErrorInfo` whose reason is
//!   one of the documented `TOKEN_*` reasons and a message;
//! - an admitted request carries the caller of claims that verify on their
//!   own: the target's key id, a subject of 1 to 128 printable bytes, a
//!   valid tenant, not expired;
//! - an edited token is admitted only with exactly the claims the key
//!   signed: no edit forges a claim;
//! - a token issued now for an hour, unedited, is admitted; and verifying
//!   the same token twice (the second time from the verifier's cache) gives
//!   the same answer.

use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use arbitrary::{Arbitrary, Unstructured};
use battlelog_auth::claims::MAX_SUBJECT_BYTES;
use battlelog_auth::{Authenticator, Caller, Claims, Role, SigningKey, VerificationKeys, Verifier, caller};
use battlelog_proto::error::{AuthReason, DOMAIN as ERROR_DOMAIN};
use ed25519_dalek::pkcs8::EncodePrivateKey;
use ed25519_dalek::pkcs8::spki::der::pem::LineEnding;
use tonic::metadata::AsciiMetadataValue;
use tonic::service::Interceptor;
use tonic::{Code, Request};
use tonic_types::StatusExt;

/// Whether `reason` is one a token refusal may carry (crates/auth/src/grpc.rs): any of the
/// error vocabulary's UNAUTHENTICATED token reasons (taken from the
/// vocabulary itself, so a reason added there is admitted here: the last
/// list by hand missed `TOKEN_TENANT_RESERVED`, which a random input found).
fn is_token_reason(reason: &str) -> bool {
    AuthReason::ALL.iter().any(|r| r.code() == Code::Unauthenticated && r.as_str() == reason)
}

/// The fixed secret of the target's signing key: fixed so that tokens in
/// the seed corpus verify in every run. It signs nothing outside fuzzing.
pub const KEY_SECRET: [u8; 32] = [0x42; 32];

struct Fixture {
    key: SigningKey,
    verifier: Verifier,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        // The auth crate reads signing keys from PEM files only, as
        // operators provision them; so does the target.
        let pem = ed25519_dalek::SigningKey::from_bytes(&KEY_SECRET)
            .to_pkcs8_pem(LineEnding::LF)
            .expect("a PKCS#8 PEM of an Ed25519 key");
        let file = tempfile::NamedTempFile::new().expect("a temporary file");
        std::fs::write(file.path(), pem.as_bytes()).expect("write the key");
        let key = SigningKey::read(file.path()).expect("the key reads back");
        let verifier = Verifier::new(VerificationKeys::from(&key));
        Fixture { key, verifier }
    })
}

/// The target's signing key, for making seeds.
pub fn signing_key() -> &'static SigningKey {
    &fixture().key
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or_default()
}

/// Runs the target on one input.
pub fn run(data: &[u8]) {
    match data.split_first() {
        Some((mode, rest)) if mode & 1 == 1 => issued_and_edited(rest),
        Some((_, rest)) => {
            present(rest);
        }
        None => {
            present(data);
        }
    }
}

/// Presents `header` as the `authorization` value; the claims admitted.
fn present(header: &[u8]) -> Option<Claims> {
    // What HTTP/2 cannot carry as a header value never reaches the service.
    let value = AsciiMetadataValue::try_from(header).ok()?;
    let mut request = Request::new(());
    request.metadata_mut().insert("authorization", value);
    let mut authenticator = Authenticator::new(fixture().verifier.clone());
    match authenticator.call(request) {
        Ok(admitted) => {
            let admitted = caller(&admitted).expect("an admitted request carries its caller");
            // The token as the interceptor took it out of the header.
            let text = std::str::from_utf8(header).expect("an admitted header is ASCII");
            let token = text.strip_prefix("Bearer ").or_else(|| text.strip_prefix("bearer ")).expect("a bearer");
            let claims = fixture().verifier.verify(token.trim()).expect("an admitted token verifies again");
            assert_eq!(Caller::from(claims.clone()), admitted, "the caller is not the token's");
            check_claims(&claims);
            Some(claims)
        }
        Err(status) => {
            assert_eq!(status.code(), Code::Unauthenticated, "{status:?}");
            assert!(!status.message().is_empty());
            let info = status.get_details_error_info().expect("a refusal carries an ErrorInfo");
            assert!(is_token_reason(&info.reason), "unknown reason {}", info.reason);
            assert_eq!(info.domain, ERROR_DOMAIN);
            None
        }
    }
}

/// What admitted claims must satisfy on their own.
fn check_claims(claims: &Claims) {
    assert_eq!(claims.kid, signing_key().kid(), "admitted under another key id");
    assert!(!claims.sub.is_empty() && claims.sub.len() <= MAX_SUBJECT_BYTES, "subject {:?}", claims.sub);
    assert!(!claims.sub.chars().any(char::is_control), "subject {:?}", claims.sub);
    battlelog_auth::validate_tenant(&claims.tenant).expect("an admitted tenant is valid");
    assert!(claims.exp.saturating_add(60) >= now(), "admitted although it expired at {}", claims.exp);
}

/// Claims to issue, and edits to make to the token, from the fuzzer's bytes.
#[derive(Debug, Arbitrary)]
struct Plan {
    /// Taken as it is when `raw`; else made a valid subject and tenant, so
    /// that most plans get a token to edit.
    raw: bool,
    subject: String,
    tenant: String,
    role: u8,
    /// Minutes from now, both ways.
    issued: i8,
    lifetime: i16,
    edits: Vec<Edit>,
}

impl Plan {
    fn subject(&self) -> String {
        if self.raw {
            return self.subject.clone();
        }
        let mut subject: String = self.subject.chars().filter(|c| !c.is_control()).collect();
        while subject.len() > MAX_SUBJECT_BYTES {
            subject.pop();
        }
        if subject.is_empty() { "s".to_owned() } else { subject }
    }

    fn tenant(&self) -> String {
        if self.raw {
            return self.tenant.clone();
        }
        const LETTERS: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-";
        let tenant: String =
            self.tenant.bytes().take(64).map(|b| char::from(LETTERS[usize::from(b) % LETTERS.len()])).collect();
        if tenant.is_empty() { "t".to_owned() } else { tenant }
    }
}

#[derive(Debug, Arbitrary)]
enum Edit {
    /// Replaces the byte at (index mod length) by this one.
    Replace(u16, u8),
    Insert(u16, u8),
    Remove(u16),
    /// Cuts the token at (index mod length).
    Truncate(u16),
    /// Swaps two of the three dot-separated parts.
    Swap(u8, u8),
    /// Puts the prefix on in another spelling or none.
    Prefix(u8),
}

fn issued_and_edited(data: &[u8]) {
    if let Ok(plan) = Plan::arbitrary_take_rest(Unstructured::new(data)) {
        check_plan(&plan);
    }
}

/// Issues, edits and presents the token of `plan`; the claims admitted.
fn check_plan(plan: &Plan) -> Option<Claims> {
    let role = Role::ALL[usize::from(plan.role) % Role::ALL.len()];
    let at = |minutes: i64| now().saturating_add_signed(minutes * 60);
    let iat = at(i64::from(plan.issued));
    let exp = at(i64::from(plan.issued) + i64::from(plan.lifetime));
    let (subject, tenant) = (plan.subject(), plan.tenant());
    let fixture = fixture();
    // Signed as `issue` signs (a token id, no `nbf`), with a fixed id so
    // that the claims admitted can be compared with the claims signed.
    let signed =
        Claims { sub: subject, tenant, role, exp, iat, nbf: None, jti: Some("0f".repeat(16)), kid: fixture.key.kid() };
    let token = fixture.key.sign(signed.clone()).ok()?;
    // A fresh token, issued in the last minute for one to two hours, is admitted.
    let sane = (-1..=0).contains(&plan.issued) && (60..=120).contains(&plan.lifetime);
    let mut prefix = "Bearer ";
    let mut bytes = token.into_bytes();
    for edit in &plan.edits {
        apply(edit, &mut bytes, &mut prefix);
    }
    let edited = plan.edits.iter().any(|e| !matches!(e, Edit::Prefix(_)));
    let header = [prefix.as_bytes(), &bytes].concat();
    let first = present(&header);
    let second = present(&header);
    assert_eq!(first, second, "the same token was answered differently the second time");
    if let Some(admitted) = &first {
        assert_eq!(*admitted, signed, "an edited token was admitted with claims the key never signed");
    } else if sane && !edited && prefix != "Basic " {
        panic!("a fresh token for {signed:?} was refused");
    }
    first
}

fn apply(edit: &Edit, bytes: &mut Vec<u8>, prefix: &mut &'static str) {
    let at = |index: u16, len: usize| usize::from(index) % len.max(1);
    match *edit {
        Edit::Replace(i, b) if !bytes.is_empty() => {
            let i = at(i, bytes.len());
            bytes[i] = b;
        }
        Edit::Insert(i, b) => {
            let i = at(i, bytes.len() + 1);
            bytes.insert(i, b);
        }
        Edit::Remove(i) if !bytes.is_empty() => {
            bytes.remove(at(i, bytes.len()));
        }
        Edit::Truncate(i) => bytes.truncate(at(i, bytes.len() + 1)),
        Edit::Swap(a, b) => {
            let mut parts: Vec<Vec<u8>> = bytes.split(|&c| c == b'.').map(<[u8]>::to_vec).collect();
            let (a, b) = (usize::from(a) % parts.len(), usize::from(b) % parts.len());
            parts.swap(a, b);
            *bytes = parts.join(&b'.');
        }
        Edit::Prefix(p) => *prefix = ["Bearer ", "bearer ", "Bearer  ", "Basic "][usize::from(p) % 4],
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(edits: Vec<Edit>) -> Plan {
        let (subject, tenant) = ("forum-a\u{7}".to_owned(), "tenant a".to_owned());
        Plan { raw: false, subject, tenant, role: 0, issued: 0, lifetime: 60, edits }
    }

    /// The plan's machinery reaches both answers: a token issued and
    /// presented as it is is admitted with the claims signed (the subject
    /// and tenant made valid), and an edited one is refused.
    #[test]
    fn plans_reach_admission_and_refusal() {
        let admitted = check_plan(&plan(Vec::new())).expect("admitted");
        assert_eq!((admitted.sub.as_str(), admitted.role), ("forum-a", Role::Forum));
        assert_eq!(admitted.tenant.len(), "tenant a".len());
        assert_eq!(check_plan(&plan(vec![Edit::Swap(0, 2)])), None, "header and signature swapped");
        assert_eq!(check_plan(&plan(vec![Edit::Prefix(3)])), None, "Basic is not a bearer");
        assert!(check_plan(&plan(vec![Edit::Prefix(2)])).is_some(), "extra spaces are trimmed");
    }
}
