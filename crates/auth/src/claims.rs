//! Roles, claims and the verified caller.

use std::fmt;

use serde::{Deserialize, Serialize};

/// What a credential may do (DESIGN.md, Security; the README's rights table).
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
    /// The signing key's id; the header's `kid` must say the same.
    pub kid: String,
}

/// Longest subject; it is recorded in events, so it stays short.
pub const MAX_SUBJECT_BYTES: usize = 128;
/// Longest tenant name.
pub const MAX_TENANT_BYTES: usize = 64;

/// Why a tenant name is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("tenant {tenant:?} must be 1 to {MAX_TENANT_BYTES} bytes of [A-Za-z0-9_-]")]
pub struct TenantError {
    pub tenant: String,
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
    /// When the token expires (its `exp`), seconds since the Unix epoch:
    /// a long call such as a `Watch` ends then.
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
