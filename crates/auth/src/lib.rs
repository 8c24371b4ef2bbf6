//! Who may call battlelog, and as what.
//!
//! Every RPC but health and reflection carries `authorization: Bearer <JWT>`:
//! an Ed25519-signed (EdDSA) token whose claims name who (`sub`), which
//! forum platform (`tenant`), which `role` (forum, judge, reader, service),
//! when it was issued (`iat`), from and until when it is valid (`nbf`,
//! optional, and `exp`; at most a configured maximum lifetime), its own id
//! (`jti`) and which key signed it (`kid`). The operator keeps the
//! signing key; each service holds only the verification keys it accepts
//! (several at once, so keys can be rotated).
//!
//! - [`claims`]: roles, claims and the tenant rule; [`Caller`], the verified
//!   identity a handler works with.
//! - [`keys`]: the signing key and verification keys as PEM files, and key ids.
//! - [`share`]: per-battle share keys for web links, derived from a server
//!   secret (revoked by rotating it).
//! - [`token`]: issuing tokens and verifying them ([`Verifier`], with a small
//!   cache so a service's own repeated token costs one signature check; the
//!   times, the lifetime and the revocation list are checked on every call).
//! - [`revoke`]: the revocation list, by token id or subject, from a file
//!   each service re-reads while it runs.
//! - [`grpc`]: the server interceptor that turns a token into a [`Caller`]
//!   (or `UNAUTHENTICATED` saying why, `PERMISSION_DENIED` naming the role
//!   needed), and the client side that attaches a token to every call.

pub mod claims;
pub mod grpc;
pub mod keys;
pub mod revoke;
pub mod share;
pub mod token;

pub use claims::{Caller, Claims, RESERVED_TENANTS, Role, TenantError, tenant_reserved, validate_tenant};
pub use grpc::{AuthChannel, Authenticator, Bearer, authed, caller, inject_trace_context};
pub use keys::{KeyError, SigningKey, VerificationKeys, key_id, read_token_file};
pub use revoke::{Revocation, RevocationError, RevocationList};
pub use share::ShareSecret;
pub use token::{DEFAULT_MAX_LIFETIME, IssueError, TokenCheck, TokenError, Verifier};
