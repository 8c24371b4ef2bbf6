//! Roles, claims and the verified caller.

use std::fmt;

use serde::{Deserialize, Serialize};

/// What a credential may do (docs/operating.md, *Who may do what*).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// A forum platform: opens battles, acts, disputes, closes; reads its own.
    Forum,
    /// A judge of a tenant: reads, rules, reveals mid-battle, closes.
    Judge,
    /// Reads, exports, audits and watches a tenant's battles; writes nothing.
    Reader,
    /// battlelog's own services: the only role the roller and journal accept.
    Service,
}

impl Role {
    pub const ALL: [Role; 4] = [Role::Forum, Role::Judge, Role::Reader, Role::Service];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Forum => "forum",
            Role::Judge => "judge",
            Role::Reader => "reader",
            Role::Service => "service",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Role {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Role::ALL
            .into_iter()
            .find(|role| role.as_str() == text)
            .ok_or_else(|| format!("unknown role {text:?}; one of forum, judge, reader, service"))
    }
}

/// The claims of a battlelog token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// Who: a forum's name, a judge's handle, a service's name.
    pub sub: String,
    /// The forum platform whose battles this credential reaches.
    pub tenant: String,
    pub role: Role,
    /// Expiry, seconds since the Unix epoch.
    pub exp: u64,
    /// Issued at, seconds since the Unix epoch.
    pub iat: u64,
    /// Not before, seconds since the Unix epoch: the token is refused until
    /// then. Optional, as in RFC 7519; `battlelog token issue` sets none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nbf: Option<u64>,
    /// The token's own id, random, so that one token can be revoked without
    /// its subject's others. Every token battlelog issues has one; a token
    /// without one (issued before they existed) can be revoked only by its
    /// subject, and lives at most the maximum lifetime anyway.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jti: Option<String>,
    /// The signing key's id; the header's `kid` must say the same.
    pub kid: String,
}

/// Longest subject; it is recorded in events, so it stays short.
pub const MAX_SUBJECT_BYTES: usize = 128;
/// Longest tenant name.
pub const MAX_TENANT_BYTES: usize = 64;
/// Longest token id (`jti`); battlelog's own are 32 hex digits.
pub const MAX_TOKEN_ID_BYTES: usize = 128;

/// A token id is one word of printable ASCII, so that it fits on a line of
/// the revocation list as it is.
pub fn token_id_ok(jti: &str) -> bool {
    !jti.is_empty() && jti.len() <= MAX_TOKEN_ID_BYTES && jti.bytes().all(|b| b.is_ascii_graphic())
}

/// Why a tenant name is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("tenant {tenant:?} must be 1 to {MAX_TENANT_BYTES} bytes of [A-Za-z0-9_-]")]
pub struct TenantError {
    pub tenant: String,
}

/// Tenants no token may name: `_` is the subject token of battles opened
/// without a tenant (`battlelog.events._.<battle>`, the journal's
/// `TENANT_PLACEHOLDER`), so a forum named it would share their subjects
/// and could open no battle of its own.
pub const RESERVED_TENANTS: &[&str] = &["_"];

/// Whether `tenant` is one of [`RESERVED_TENANTS`].
pub fn tenant_reserved(tenant: &str) -> bool {
    RESERVED_TENANTS.contains(&tenant)
}

/// A tenant is one NATS subject token (`battlelog.events.<tenant>.<battle>`)
/// and a path segment: letters, digits, `_` and `-` only.
pub fn validate_tenant(tenant: &str) -> Result<(), TenantError> {
    let ok = !tenant.is_empty()
        && tenant.len() <= MAX_TENANT_BYTES
        && tenant.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok { Ok(()) } else { Err(TenantError { tenant: tenant.to_owned() }) }
}

/// The verified identity behind a request, as handlers see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub subject: String,
    pub tenant: String,
    pub role: Role,
    /// When the token expires (its `exp`), seconds since the Unix epoch: a
    /// long-lived call (a stream) can end when its credential does.
    pub expires_at: u64,
}

impl Caller {
    /// Whether this caller may see a battle owned by `tenant`.
    pub fn owns(&self, tenant: &str) -> bool {
        self.tenant == tenant
    }
}

impl From<Claims> for Caller {
    fn from(claims: Claims) -> Self {
        Caller { subject: claims.sub, tenant: claims.tenant, role: claims.role, expires_at: claims.exp }
    }
}
