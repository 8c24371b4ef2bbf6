//! The rights table of docs/operating.md as an acceptance test (issue 8):
//! every RPC of the three services, called over the real binaries with each kind of
//! credential, answers the code the table says — and nothing a refused call
//! asked for reaches the journal.
//!
//! Rows: the 14 Resolver, 3 Roller and 14 Journal RPCs. Columns: no token, a
//! malformed one, a good token with its signature altered, an expired one,
//! one signed by a key the services do not know, one valid for longer than
//! the maximum lifetime (91 days, and until 2^64 − 1), one not valid before
//! an hour from now (`nbf`), one issued an hour from now (`iat`), one whose
//! id (`jti`) is on the revocation list, one whose subject is, a role the
//! RPC does not admit, an admitted role of another tenant, an admitted role
//! of the battle's tenant. Each call is a well-formed request on a battle
//! that exists, so that the credential is the only thing that can be wrong.
//!
//! Then revocation as an operator does it, with `battlelog token revoke`,
//! while the services (and `battlelog up`) run: it takes effect without a
//! restart.
//!
//! The expected codes are written from the table (see [`Rpc::admits`] and
//! [`Rpc::scope`]), not from the services' code.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use battlelog_auth::{Claims, Role, SigningKey};
use battlelog_proto::v1 as pb;
use battlelog_proto::v1::journal_client::JournalClient;
use battlelog_proto::v1::resolver_client::ResolverClient;
use battlelog_proto::v1::roller_client::RollerClient;
use battlelog_test_support::auth::{OTHER_TENANT, TEST_TENANT};
use battlelog_test_support::journal_client;
use battlelog_test_support::journal_client::{any, resolved};
use battlelog_test_support::stack;
use battlelog_test_support::stack::{Stack, WAIT, obj};
use battlelog_test_support::{StartOptions, TestAuth, poll_until, temp_dir};
use serde_json::json;
use tonic::metadata::AsciiMetadataValue;
use tonic::service::Interceptor;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;
use tonic::{Code, Request, Status, Streaming};
use tonic_types::StatusExt;

/// The `ErrorInfo` domain of every battlelog error, authentication's
/// included (issue 20: one error vocabulary).
const AUTH_DOMAIN: &str = "battlelog.dev";

/// Sends exactly the `authorization` header it is given, or none: unlike
/// the clients' bearer, it can also send nothing or garbage.
#[derive(Debug, Clone)]
struct Header(Option<AsciiMetadataValue>);

impl Header {
    fn new(value: Option<&str>) -> Self {
        Self(value.map(|v| v.parse().expect("an ASCII header value")))
    }
}

impl Interceptor for Header {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        if let Some(value) = &self.0 {
            request.metadata_mut().insert("authorization", value.clone());
        }
        Ok(request)
    }
}

type Chan = InterceptedService<Channel, Header>;

// ---------------------------------------------------------------------------
// The table.
// ---------------------------------------------------------------------------

const FORUM: &[Role] = &[Role::Forum];
const JUDGE: &[Role] = &[Role::Judge];
const FORUM_OR_JUDGE: &[Role] = &[Role::Forum, Role::Judge];
const READERS: &[Role] = &[Role::Forum, Role::Judge, Role::Reader];
const SERVICE: &[Role] = &[Role::Service];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rpc {
    OpenBattle,
    Act,
    Dispute,
    Rule,
    Close,
    RevealSeed,
    GetBattle,
    Audit,
    Export,
    Watch,
    ListRulesets,
    ListBattles,
    GetCheckpoint,
    GetConsistencyProof,
    Commitment,
    Roll,
    Reveal,
    Append,
    AppendBatch,
    ReadStream,
    ReadAll,
    SubscribeStream,
    SubscribeAll,
    VerifyChain,
    StreamInfo,
    ListBattleIndex,
    ListPendingActions,
    JournalGetCheckpoint,
    JournalGetInclusionProof,
    JournalGetConsistencyProof,
    JournalGetSignedHead,
}

const RPCS: [Rpc; 31] = [
    Rpc::OpenBattle,
    Rpc::Act,
    Rpc::Dispute,
    Rpc::Rule,
    Rpc::Close,
    Rpc::RevealSeed,
    Rpc::GetBattle,
    Rpc::Audit,
    Rpc::Export,
    Rpc::Watch,
    Rpc::ListRulesets,
    Rpc::ListBattles,
    Rpc::GetCheckpoint,
    Rpc::GetConsistencyProof,
    Rpc::Commitment,
    Rpc::Roll,
    Rpc::Reveal,
    Rpc::Append,
    Rpc::AppendBatch,
    Rpc::ReadStream,
    Rpc::ReadAll,
    Rpc::SubscribeStream,
    Rpc::SubscribeAll,
    Rpc::VerifyChain,
    Rpc::StreamInfo,
    Rpc::ListBattleIndex,
    Rpc::ListPendingActions,
    Rpc::JournalGetCheckpoint,
    Rpc::JournalGetInclusionProof,
    Rpc::JournalGetConsistencyProof,
    Rpc::JournalGetSignedHead,
];

/// What "another tenant" means for an RPC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// The call names a battle: another tenant's battle answers NOT_FOUND,
    /// exactly as a battle that does not exist.
    Battle,
    /// OpenBattle names the battle it creates, for the token's own tenant.
    /// Battle ids are one namespace across tenants, so an id another tenant
    /// already opened cannot be opened again: ALREADY_EXISTS, the answer an
    /// id collision gets within a tenant too, and nothing is written.
    Opening,
    /// Not tenant-scoped: ListRulesets names no battle, and the roller and
    /// the journal serve battlelog's own services, whose token's tenant
    /// decides nothing. The right role of another tenant is allowed.
    Untenanted,
}

impl Rpc {
    fn name(self) -> String {
        let service = match self {
            Rpc::Commitment | Rpc::Roll | Rpc::Reveal => "Roller",
            Rpc::Append
            | Rpc::AppendBatch
            | Rpc::ReadStream
            | Rpc::ReadAll
            | Rpc::SubscribeStream
            | Rpc::SubscribeAll
            | Rpc::VerifyChain
            | Rpc::StreamInfo
            | Rpc::ListBattleIndex
            | Rpc::ListPendingActions
            | Rpc::JournalGetCheckpoint
            | Rpc::JournalGetInclusionProof
            | Rpc::JournalGetConsistencyProof
            | Rpc::JournalGetSignedHead => "Journal",
            _ => "Resolver",
        };
        // The journal's transparency RPCs share the resolver's names.
        let name = format!("{self:?}");
        format!("{service}.{}", name.strip_prefix("Journal").unwrap_or(&name))
    }

    /// The rights table of docs/operating.md.
    fn admits(self) -> &'static [Role] {
        match self {
            Rpc::OpenBattle | Rpc::Act | Rpc::Dispute => FORUM,
            Rpc::Rule | Rpc::RevealSeed => JUDGE,
            Rpc::Close => FORUM_OR_JUDGE,
            Rpc::GetBattle
            | Rpc::Audit
            | Rpc::Export
            | Rpc::Watch
            | Rpc::ListRulesets
            | Rpc::ListBattles
            | Rpc::GetCheckpoint
            | Rpc::GetConsistencyProof => READERS,
            _ => SERVICE,
        }
    }

    fn scope(self) -> Scope {
        match self {
            Rpc::OpenBattle => Scope::Opening,
            Rpc::ListRulesets => Scope::Untenanted,
            // It names no battle: another tenant is answered, with its own
            // battles only (tests/listing.rs checks that none of this
            // tenant's are among them).
            Rpc::ListBattles => Scope::Untenanted,
            // The journal's one log of every tenant's records.
            Rpc::GetCheckpoint | Rpc::GetConsistencyProof => Scope::Untenanted,
            _ if self.admits() == SERVICE => Scope::Untenanted,
            _ => Scope::Battle,
        }
    }

    /// The events the row's first admitted call appends (proto docs and
    /// docs/rules.md); its repeats replay and append nothing.
    fn journals(self) -> u64 {
        match self {
            // The setup's own request again: a replay.
            Rpc::OpenBattle => 0,
            // A plain Pokémon attack draws one power die: DiceRolled, then
            // ActionResolved.
            Rpc::Act => 2,
            Rpc::Dispute | Rpc::Rule => 1,
            // BattleClosed, then the closing SeedRevealed.
            Rpc::Close => 2,
            // SeedRevealed and the next epoch's SeedCommitted.
            Rpc::RevealSeed | Rpc::Reveal => 2,
            // One expression: one DiceRolled.
            Rpc::Roll => 1,
            Rpc::Append => 1,
            // One append in the batch, with its own idempotency key.
            Rpc::AppendBatch => 1,
            _ => 0,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Credential {
    None,
    Malformed,
    BadSignature,
    Expired,
    OtherKey,
    TooLong,
    NotBefore,
    IssuedLater,
    RevokedId,
    RevokedSubject,
    WrongRole,
    OtherTenant,
    Right,
}

/// In this order within a row, so that the calls that may write ("other
/// tenant" where allowed, then "right") come after every refusal.
const CREDENTIALS: [Credential; 13] = [
    Credential::None,
    Credential::Malformed,
    Credential::BadSignature,
    Credential::Expired,
    Credential::OtherKey,
    Credential::TooLong,
    Credential::NotBefore,
    Credential::IssuedLater,
    Credential::RevokedId,
    Credential::RevokedSubject,
    Credential::WrongRole,
    Credential::OtherTenant,
    Credential::Right,
];

impl Credential {
    fn label(self) -> &'static str {
        match self {
            Credential::None => "none",
            Credential::Malformed => "malformed",
            Credential::BadSignature => "bad-sig",
            Credential::Expired => "expired",
            Credential::OtherKey => "other-key",
            Credential::TooLong => "too-long",
            Credential::NotBefore => "nbf-later",
            Credential::IssuedLater => "iat-later",
            Credential::RevokedId => "revoked-jti",
            Credential::RevokedSubject => "revoked-sub",
            Credential::WrongRole => "wrong-role",
            Credential::OtherTenant => "other-tenant",
            Credential::Right => "right",
        }
    }
}

/// What a cell must answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// UNAUTHENTICATED with this `ErrorInfo` reason and a message saying so.
    Unauthenticated { reason: &'static str, says: &'static str },
    /// PERMISSION_DENIED naming the roles the RPC admits.
    PermissionDenied,
    /// NOT_FOUND, the same message as for a battle that does not exist.
    NotFound,
    /// Exactly this code.
    Exactly(Code),
}

fn expect(rpc: Rpc, credential: Credential) -> Expect {
    let unauthenticated = |reason, says| Expect::Unauthenticated { reason, says };
    match credential {
        Credential::None => unauthenticated("TOKEN_MISSING", "missing"),
        Credential::Malformed => unauthenticated("TOKEN_MALFORMED", "malformed"),
        Credential::BadSignature => unauthenticated("TOKEN_BAD_SIGNATURE", "signature"),
        Credential::Expired => unauthenticated("TOKEN_EXPIRED", "expired"),
        Credential::OtherKey => unauthenticated("TOKEN_UNKNOWN_KEY", "unknown key"),
        Credential::TooLong => unauthenticated("TOKEN_LIFETIME_TOO_LONG", "lifetime too long"),
        Credential::NotBefore => unauthenticated("TOKEN_NOT_YET_VALID", "not yet valid"),
        Credential::IssuedLater => unauthenticated("TOKEN_ISSUED_IN_FUTURE", "issued in the future"),
        Credential::RevokedId | Credential::RevokedSubject => unauthenticated("TOKEN_REVOKED", "revoked"),
        Credential::WrongRole => Expect::PermissionDenied,
        Credential::OtherTenant => match rpc.scope() {
            Scope::Battle => Expect::NotFound,
            Scope::Opening => Expect::Exactly(Code::AlreadyExists),
            Scope::Untenanted => Expect::Exactly(Code::Ok),
        },
        // Every request below is well formed and fits its battle, so an
        // admitted caller gets a plain OK.
        Credential::Right => Expect::Exactly(Code::Ok),
    }
}

// ---------------------------------------------------------------------------
// Tokens.
// ---------------------------------------------------------------------------

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).expect("after 1970").as_secs()
}

/// The default maximum lifetime (docs/operating.md: `token_max_lifetime_secs`).
const NINETY_DAYS: u64 = 90 * 24 * 3600;
const HOUR: u64 = 3600;
/// The subject the matrix's revocation list names.
const REVOKED_SUBJECT: &str = "matrix-revoked-subject";

/// The `jti` of `token`, read from its claims as any JWT library would
/// (base64url JSON), not through battlelog's verifier.
fn token_id(token: &str) -> String {
    let payload = token.split('.').nth(1).expect("a JWS has a payload");
    let claims: serde_json::Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).expect("base64url")).expect("the claims are JSON");
    claims["jti"].as_str().expect("every issued token has a jti").to_owned()
}

#[derive(Debug)]
struct Tokens {
    /// The key the services were started with (TestAuth::shared()'s).
    key: SigningKey,
    /// A key no service knows.
    stranger: SigningKey,
    /// A token of each role whose id the revocation list names.
    revoked: HashMap<Role, String>,
}

impl Tokens {
    fn new() -> Self {
        let key = SigningKey::read(&TestAuth::shared().signing_key_file()).expect("the tests' signing key");
        let revoked = Role::ALL
            .into_iter()
            .map(|role| (role, TestAuth::shared().token(role, TEST_TENANT, &format!("matrix-{role}"))))
            .collect();
        Self { key, stranger: SigningKey::generate().expect("a fresh key"), revoked }
    }

    /// The revocation list the services start with: the ids of
    /// [`Self::revoked`]'s tokens, and [`REVOKED_SUBJECT`], as an operator
    /// writes it (a comment, a blank line).
    fn revocation_list(&self, dir: &Path) -> PathBuf {
        let mut text = "# the auth matrix's revoked tokens\n\n".to_owned();
        for token in self.revoked.values() {
            let _ = writeln!(text, "jti {}", token_id(token));
        }
        let _ = writeln!(text, "sub {REVOKED_SUBJECT}");
        let path = dir.join("revoked-tokens");
        std::fs::write(&path, text).expect("write the revocation list");
        path
    }

    /// Valid for longer than the maximum lifetime: 91 days, and until the
    /// end of u64 (no overflow may let it through).
    fn too_long(&self, role: Role) -> Vec<String> {
        let subject = format!("matrix-{role}");
        [now() + NINETY_DAYS + 24 * HOUR, u64::MAX]
            .into_iter()
            .map(|exp| self.key.issue_at(&subject, TEST_TENANT, role, now(), exp).expect("issue"))
            .collect()
    }

    /// Not valid before an hour from now: far beyond the leeway (30 s).
    fn not_before(&self, role: Role) -> String {
        let claims = Claims {
            sub: format!("matrix-{role}"),
            tenant: TEST_TENANT.into(),
            role,
            exp: now() + 2 * HOUR,
            iat: now(),
            nbf: Some(now() + HOUR),
            jti: Some(battlelog_auth::token::new_token_id().expect("an id")),
            kid: String::new(),
        };
        self.key.sign(claims).expect("sign")
    }

    /// Issued an hour from now, by a clock far ahead.
    fn issued_later(&self, role: Role) -> String {
        self.key.issue_at(&format!("matrix-{role}"), TEST_TENANT, role, now() + HOUR, now() + 2 * HOUR).expect("issue")
    }

    fn good(&self, role: Role, tenant: &str) -> String {
        TestAuth::shared().token(role, tenant, &format!("matrix-{role}"))
    }

    /// A valid token whose signature bytes are changed: header and claims
    /// are intact, only the signature no longer verifies.
    fn bad_signature(&self, role: Role) -> String {
        let token = self.good(role, TEST_TENANT);
        let parts: Vec<&str> = token.split('.').collect();
        assert_eq!(parts.len(), 3, "a JWS has three parts");
        let mut signature = URL_SAFE_NO_PAD.decode(parts[2]).expect("base64url signature");
        assert_eq!(signature.len(), 64, "an Ed25519 signature");
        signature[0] ^= 0x01;
        format!("{}.{}.{}", parts[0], parts[1], URL_SAFE_NO_PAD.encode(signature))
    }

    /// Expired an hour ago: far beyond any clock leeway (30 s).
    fn expired(&self, role: Role) -> String {
        self.key.issue_at(&format!("matrix-{role}"), TEST_TENANT, role, now() - 7200, now() - 3600).expect("issue")
    }

    fn other_key(&self, role: Role) -> String {
        self.stranger
            .issue(&format!("matrix-{role}"), TEST_TENANT, role, std::time::Duration::from_secs(3600))
            .expect("issue")
    }

    /// The `authorization` headers of a cell, each with the role it holds
    /// (for messages). The five bad tokens carry an admitted role, so that
    /// the token itself is the only thing wrong; "wrong role", "other
    /// tenant" and "right" try every role that fits the column.
    fn headers(&self, rpc: Rpc, credential: Credential) -> Vec<(Option<Role>, Option<String>)> {
        let role = rpc.admits()[0];
        let bearer = |token: String| Some(format!("Bearer {token}"));
        match credential {
            Credential::None => vec![(None, None)],
            Credential::Malformed => vec![(None, Some("Bearer not.a.jwt".to_owned()))],
            Credential::BadSignature => vec![(Some(role), bearer(self.bad_signature(role)))],
            Credential::Expired => vec![(Some(role), bearer(self.expired(role)))],
            Credential::OtherKey => vec![(Some(role), bearer(self.other_key(role)))],
            Credential::TooLong => self.too_long(role).into_iter().map(|t| (Some(role), bearer(t))).collect(),
            Credential::NotBefore => vec![(Some(role), bearer(self.not_before(role)))],
            Credential::IssuedLater => vec![(Some(role), bearer(self.issued_later(role)))],
            Credential::RevokedId => vec![(Some(role), bearer(self.revoked[&role].clone()))],
            Credential::RevokedSubject => {
                vec![(Some(role), bearer(TestAuth::shared().token(role, TEST_TENANT, REVOKED_SUBJECT)))]
            }
            Credential::WrongRole => Role::ALL
                .into_iter()
                .filter(|r| !rpc.admits().contains(r))
                .map(|r| (Some(r), bearer(self.good(r, TEST_TENANT))))
                .collect(),
            Credential::OtherTenant => {
                rpc.admits().iter().map(|&r| (Some(r), bearer(self.good(r, OTHER_TENANT)))).collect()
            }
            // The service role's tenant claim decides nothing; it is the
            // test tenant here only for symmetry.
            Credential::Right => rpc.admits().iter().map(|&r| (Some(r), bearer(self.good(r, TEST_TENANT)))).collect(),
        }
    }
}

// ---------------------------------------------------------------------------
// The calls.
// ---------------------------------------------------------------------------

/// The battle most resolver rows act on.
const BATTLE: &str = "matrix-battle";
/// Closed by the Close row, so that no other row meets a closed battle.
const CLOSE_BATTLE: &str = "matrix-close";
/// Where the roller and journal rows roll, reveal and append.
const SERVICE_BATTLE: &str = "matrix-service";
/// A battle nobody opened: what another tenant's battle must look like.
const NOBODY: &str = "matrix-nobody";

fn participants() -> Vec<prost_types::Struct> {
    vec![obj(json!({"id": "pikachu"})), obj(json!({"id": "meowth"}))]
}

/// The request that opened `battle_id` in setup: repeating it is a replay.
fn open_request(battle_id: &str) -> pb::OpenBattleRequest {
    pb::OpenBattleRequest {
        ruleset: "pokemon-d6@1".into(),
        title: format!("auth matrix {battle_id}"),
        forum_ref: format!("forum:tests/thread/{battle_id}"),
        participants: participants(),
        client_seed: "auth matrix".into(),
        request_id: format!("open-{battle_id}"),
        battle_id: battle_id.into(),
        ..Default::default()
    }
}

#[derive(Debug)]
struct Harness {
    resolver: Channel,
    roller: Channel,
    journal: Channel,
    /// The journal as battlelog's own services reach it, for the global head.
    head_reader: journal_client::Client,
    /// The version of an ActionResolved on BATTLE, for Dispute and Rule.
    resolved_at: u64,
}

/// The first message of a server stream, or the status the call or the
/// stream ended with: a refusal may come either way.
async fn first<T>(call: Result<tonic::Response<Streaming<T>>, Status>) -> Result<(), Status> {
    let mut stream = call?.into_inner();
    match tokio::time::timeout(WAIT, stream.message()).await {
        Err(_) => Err(Status::deadline_exceeded(format!("no first message within {WAIT:?}"))),
        Ok(Ok(Some(_))) => Ok(()),
        // Every streamed call here starts at an event that exists.
        Ok(Ok(None)) => Err(Status::unknown("the stream ended without a message")),
        Ok(Err(status)) => Err(status),
    }
}

impl Harness {
    fn resolver(&self, header: Header) -> ResolverClient<Chan> {
        ResolverClient::new(InterceptedService::new(self.resolver.clone(), header))
    }

    fn roller(&self, header: Header) -> RollerClient<Chan> {
        RollerClient::new(InterceptedService::new(self.roller.clone(), header))
    }

    fn journal(&self, header: Header) -> JournalClient<Chan> {
        JournalClient::new(InterceptedService::new(self.journal.clone(), header))
    }

    /// The battle `rpc`'s row works on.
    fn battle_of(rpc: Rpc) -> &'static str {
        match rpc {
            Rpc::Close => CLOSE_BATTLE,
            _ if rpc.admits() == SERVICE => SERVICE_BATTLE,
            _ => BATTLE,
        }
    }

    /// The global head, read with the service token.
    async fn global_head(&self) -> u64 {
        journal_client::global_head(&mut self.head_reader.clone()).await
    }

    /// Calls `rpc` about `battle` with `header`: the same well-formed
    /// request every time, so that repeats of an admitted write replay.
    async fn call(&self, rpc: Rpc, header: Option<&str>, battle: &str) -> Result<(), Status> {
        let header = Header::new(header);
        let id = battle.to_owned();
        match rpc {
            Rpc::OpenBattle => self.resolver(header).open_battle(open_request(battle)).await.map(drop),
            Rpc::Act => {
                let action =
                    json!({"type": "attack", "actor": "pikachu", "target": "meowth", "move": "Tackle", "power": 40});
                let request = pb::ActRequest {
                    battle_id: id,
                    action: Some(obj(action)),
                    request_id: "matrix-act".into(),
                    ..Default::default()
                };
                self.resolver(header).act(request).await.map(drop)
            }
            Rpc::Dispute => {
                let request = pb::DisputeRequest {
                    battle_id: id,
                    by: "meowth".into(),
                    refers_to: self.resolved_at,
                    reason: "I was behind a rock".into(),
                    request_id: "matrix-dispute".into(),
                    ..Default::default()
                };
                self.resolver(header).dispute(request).await.map(drop)
            }
            Rpc::Rule => {
                let request = pb::RuleRequest {
                    battle_id: id,
                    judge: String::new(),
                    refers_to: self.resolved_at,
                    text: "the result stands".into(),
                    r#override: None,
                    request_id: "matrix-rule".into(),
                    ..Default::default()
                };
                self.resolver(header).rule(request).await.map(drop)
            }
            Rpc::Close => {
                let request = pb::CloseRequest {
                    battle_id: id,
                    by: "the referee".into(),
                    reason: "the matrix is done with it".into(),
                    request_id: "matrix-close".into(),
                    ..Default::default()
                };
                self.resolver(header).close(request).await.map(drop)
            }
            Rpc::RevealSeed => {
                let request = pb::RevealSeedRequest { battle_id: id, request_id: "matrix-reveal-seed".into() };
                self.resolver(header).reveal_seed(request).await.map(drop)
            }
            Rpc::GetBattle => self
                .resolver(header)
                .get_battle(pb::GetBattleRequest { battle_id: id, at_version: None })
                .await
                .map(drop),
            Rpc::Audit => self.resolver(header).audit(pb::AuditRequest { battle_id: id }).await.map(drop),
            Rpc::Export => {
                self.resolver(header).export(pb::ExportRequest { battle_id: id, from_version: 0 }).await.map(drop)
            }
            Rpc::Watch => {
                first(self.resolver(header).watch(pb::WatchRequest { battle_id: id, from_version: 0 }).await).await
            }
            Rpc::ListRulesets => self.resolver(header).list_rulesets(pb::ListRulesetsRequest {}).await.map(drop),
            Rpc::ListBattles => self.resolver(header).list_battles(pb::ListBattlesRequest::default()).await.map(drop),
            Rpc::GetCheckpoint => self.resolver(header).get_checkpoint(pb::GetCheckpointRequest {}).await.map(drop),
            Rpc::GetConsistencyProof => {
                let request = pb::ConsistencyProofRequest { old_size: 1, new_size: 0 };
                self.resolver(header).get_consistency_proof(request).await.map(drop)
            }
            Rpc::Commitment => {
                self.roller(header).commitment(pb::CommitmentRequest { battle_id: id, epoch: 0 }).await.map(drop)
            }
            Rpc::Roll => {
                let request = pb::RollRequest {
                    battle_id: id,
                    rolls: vec![pb::RollSpec { expression: "1d20".into(), purpose: "matrix".into() }],
                    actor: "pikachu".into(),
                    request_id: "matrix-roll".into(),
                    expected_head: None,
                    for_action: None,
                };
                self.roller(header).roll(request).await.map(drop)
            }
            Rpc::Reveal => {
                let request = pb::RevealRequest {
                    battle_id: id,
                    closing: false,
                    request_id: "matrix-reveal".into(),
                    requested_by: Some(pb::Credential { subject: "matrix-judge".into(), role: "judge".into() }),
                };
                self.roller(header).reveal(request).await.map(drop)
            }
            Rpc::Append => {
                let request = pb::AppendRequest {
                    stream_id: id,
                    expected_version: any(),
                    events: vec![resolved("appended by the matrix", "matrix-append")],
                };
                self.journal(header).append(request).await.map(drop)
            }
            Rpc::AppendBatch => {
                let append = pb::AppendRequest {
                    stream_id: id,
                    expected_version: any(),
                    events: vec![resolved("appended by the matrix in a batch", "matrix-append-batch")],
                };
                let reply = self.journal(header).append_batch(pb::AppendBatchRequest { appends: vec![append] }).await;
                // An admitted call's one append must have been written (or
                // replayed): its own error would hide behind an OK call.
                reply.map(|r| match &r.get_ref().results[..] {
                    [pb::AppendResult { result: Some(pb::append_result::Result::Appended(_)) }] => {}
                    other => panic!("the batch's append was not written: {other:?}"),
                })
            }
            Rpc::ReadStream => {
                let request = pb::ReadStreamRequest { stream_id: id, from_version: 0, max_count: 0 };
                self.journal(header).read_stream(request).await.map(drop)
            }
            Rpc::ReadAll => {
                self.journal(header).read_all(pb::ReadAllRequest { from_position: 0, max_count: 10 }).await.map(drop)
            }
            Rpc::SubscribeStream => {
                let request = pb::SubscribeStreamRequest { stream_id: id, from_version: 0 };
                first(self.journal(header).subscribe_stream(request).await).await
            }
            Rpc::SubscribeAll => {
                first(self.journal(header).subscribe_all(pb::SubscribeAllRequest { from_position: 0 }).await).await
            }
            Rpc::VerifyChain => {
                self.journal(header).verify_chain(pb::VerifyChainRequest { stream_id: id }).await.map(drop)
            }
            Rpc::StreamInfo => {
                self.journal(header).stream_info(pb::StreamInfoRequest { stream_id: id }).await.map(drop)
            }
            Rpc::JournalGetCheckpoint => {
                self.journal(header).get_checkpoint(pb::GetCheckpointRequest {}).await.map(drop)
            }
            Rpc::JournalGetInclusionProof => {
                let request = pb::InclusionProofRequest { stream_id: id, version: 0, tree_size: 0 };
                self.journal(header).get_inclusion_proof(request).await.map(drop)
            }
            Rpc::JournalGetConsistencyProof => {
                let request = pb::ConsistencyProofRequest { old_size: 1, new_size: 0 };
                self.journal(header).get_consistency_proof(request).await.map(drop)
            }
            Rpc::JournalGetSignedHead => {
                self.journal(header).get_signed_head(pb::SignedHeadRequest { stream_id: id }).await.map(drop)
            }
            Rpc::ListBattleIndex => {
                let request = pb::BattleIndexRequest { tenant: TEST_TENANT.into(), ..Default::default() };
                self.journal(header).list_battle_index(request).await.map(drop)
            }
            Rpc::ListPendingActions => {
                self.journal(header).list_pending_actions(pb::PendingActionsRequest::default()).await.map(drop)
            }
        }
    }
}

async fn setup(stack: &Stack) -> Harness {
    let forum = TestAuth::shared().forum();
    let mut resolver = stack::resolver_as(&stack.resolver, &forum).await;
    for battle in [BATTLE, CLOSE_BATTLE, SERVICE_BATTLE] {
        resolver.open_battle(open_request(battle)).await.unwrap_or_else(|s| panic!("open {battle}: {s:?}"));
    }
    // A couple of actions, so that Dispute and Rule have one to refer to.
    let attack = json!({"type": "attack", "actor": "pikachu", "target": "meowth", "move": "Tackle", "power": 40});
    let resolved_at = stack::act(&mut resolver, BATTLE, &attack, "setup-1").await.expect("attack").version;
    let dodge = json!({"type": "dodge", "actor": "meowth", "incoming_damage": 40});
    stack::act(&mut resolver, BATTLE, &dodge, "setup-2").await.expect("dodge");
    // A checkpoint over all of that (a signed head issues one on demand):
    // the proofs the rows ask for are within it.
    let mut journal = stack.journal_client().await;
    journal.get_signed_head(pb::SignedHeadRequest { stream_id: BATTLE.into() }).await.expect("a signed head");
    Harness {
        resolver: stack.resolver.channel().await,
        roller: stack.roller.channel().await,
        journal: stack.journal.channel().await,
        head_reader: stack.journal_client().await,
        resolved_at,
    }
}

fn short(code: Code) -> String {
    match code {
        Code::Ok => "OK".into(),
        Code::Unauthenticated => "UNAUTH".into(),
        Code::PermissionDenied => "DENIED".into(),
        Code::NotFound => "NOT_FOUND".into(),
        Code::AlreadyExists => "EXISTS".into(),
        other => format!("{other:?}"),
    }
}

/// Checks one answer against the table; returns what went wrong, if anything.
fn check(rpc: Rpc, expected: Expect, answer: &Result<(), Status>, missing: Option<&Status>) -> Result<(), String> {
    let status = match answer {
        Ok(()) if expected == Expect::Exactly(Code::Ok) => return Ok(()),
        Ok(()) => return Err(format!("expected {expected:?}, got OK")),
        Err(status) => status,
    };
    match expected {
        Expect::Unauthenticated { reason, says } => {
            if status.code() != Code::Unauthenticated {
                return Err(format!("expected UNAUTHENTICATED ({reason}), got {status:?}"));
            }
            let details = status.get_error_details();
            let info = details.error_info().ok_or_else(|| format!("no ErrorInfo in {status:?}"))?;
            if info.reason != reason || info.domain != AUTH_DOMAIN {
                return Err(format!("expected reason {reason} in {AUTH_DOMAIN}, got {info:?}"));
            }
            if !status.message().contains(says) {
                return Err(format!("the message does not say {says:?}: {}", status.message()));
            }
        }
        Expect::PermissionDenied => {
            if status.code() != Code::PermissionDenied {
                return Err(format!("expected PERMISSION_DENIED, got {status:?}"));
            }
            for role in rpc.admits() {
                if !status.message().contains(role.as_str()) {
                    return Err(format!("the message does not name the admitted role {role}: {}", status.message()));
                }
            }
        }
        Expect::NotFound => {
            if status.code() != Code::NotFound {
                return Err(format!("expected NOT_FOUND, got {status:?}"));
            }
            let missing = missing.expect("the answer for a battle that does not exist");
            let like_missing = missing.message().replace(NOBODY, Harness::battle_of(rpc));
            if status.message() != like_missing {
                return Err(format!(
                    "another tenant's battle must answer like a missing one: {:?} vs {like_missing:?}",
                    status.message()
                ));
            }
        }
        Expect::Exactly(code) => {
            if status.code() != code {
                return Err(format!("expected {code:?}, got {status:?}"));
            }
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_rpc_answers_every_credential_as_the_rights_table_says() {
    let tokens = Tokens::new();
    let lists = temp_dir("auth-matrix-lists");
    let list = tokens.revocation_list(lists.path());
    let stack = Stack::start_with("auth-matrix", false, &revoking(&list)).await;
    let harness = setup(&stack).await;

    let mut failures = Vec::new();
    let mut rows = Vec::new();
    let (mut calls, mut journaled) = (0usize, 0u64);
    for rpc in RPCS {
        let battle = Harness::battle_of(rpc);
        // What a battle that does not exist answers, with an admitted
        // token of the right tenant: the shape another tenant's must have.
        let missing = if rpc.scope() == Scope::Battle {
            let right = tokens.headers(rpc, Credential::Right).remove(0).1;
            let before = harness.global_head().await;
            let answer = harness.call(rpc, right.as_deref(), NOBODY).await;
            let status = answer.expect_err("a battle nobody opened is not found");
            assert_eq!(status.code(), Code::NotFound, "{} on a battle nobody opened: {status:?}", rpc.name());
            assert_eq!(harness.global_head().await, before, "{} on a missing battle journals nothing", rpc.name());
            Some(status)
        } else {
            None
        };
        let mut row = Vec::new();
        let mut row_journaled = 0;
        for credential in CREDENTIALS {
            let expected = expect(rpc, credential);
            let mut codes = Vec::new();
            for (role, header) in tokens.headers(rpc, credential) {
                let before = harness.global_head().await;
                let answer = harness.call(rpc, header.as_deref(), battle).await;
                let after = harness.global_head().await;
                calls += 1;
                let code = answer.as_ref().err().map_or(Code::Ok, Status::code);
                codes.push(code);
                let cell = format!("{} × {} ({role:?})", rpc.name(), credential.label());
                if let Err(problem) = check(rpc, expected, &answer, missing.as_ref()) {
                    failures.push(format!("{cell}: {problem}"));
                }
                // A refused call leaves no trace in the journal.
                if code != Code::Ok && after != before {
                    failures.push(format!("{cell}: answered {code:?} but the global head moved {before} → {after}"));
                }
                row_journaled += after - before;
            }
            let shown = if codes.windows(2).all(|w| w[0] == w[1]) { short(codes[0]) } else { "MIXED".to_owned() };
            row.push((codes, shown));
        }
        // The admitted calls appended exactly what the row's request asks
        // for, once, however often it was repeated.
        if row_journaled != rpc.journals() {
            failures.push(format!("{}: journaled {row_journaled} events, not {}", rpc.name(), rpc.journals()));
        }
        journaled += row_journaled;
        rows.push((rpc, row));
    }

    let expected_events = RPCS.iter().map(|r| r.journals()).sum::<u64>();
    let mut matrix = String::new();
    let _ = write!(matrix, "{:<24}", "RPC \\ credential");
    for credential in CREDENTIALS {
        let _ = write!(matrix, "{:>13}", credential.label());
    }
    matrix.push('\n');
    let (mut cells, mut refused, mut allowed) = (0, 0, 0);
    for (rpc, row) in &rows {
        let _ = write!(matrix, "{:<24}", rpc.name());
        for (codes, shown) in row {
            let _ = write!(matrix, "{shown:>13}");
            cells += 1;
            if codes.iter().all(|c| *c == Code::Ok) {
                allowed += 1;
            } else {
                refused += 1;
            }
        }
        matrix.push('\n');
    }
    println!("{matrix}");
    println!("UNAUTH = UNAUTHENTICATED, DENIED = PERMISSION_DENIED, EXISTS = ALREADY_EXISTS");
    println!(
        "{cells} cells ({} RPCs × {} credentials): {refused} refused, {allowed} allowed; {calls} calls; \
         {journaled} events journaled (the admitted writes account for {expected_events})",
        RPCS.len(),
        CREDENTIALS.len()
    );

    assert!(failures.is_empty(), "{} answers differ from the rights table:\n{}", failures.len(), failures.join("\n"));
    assert_eq!(cells, 31 * 13, "every RPC of the three services against every credential");
    assert_eq!(journaled, expected_events, "every journaled event is one an admitted call asked for");
}

// ---------------------------------------------------------------------------
// Revoking while the services run.
// ---------------------------------------------------------------------------

const SERVICES: [&str; 3] = ["JOURNAL", "ROLLER", "RESOLVER"];

/// Every service of a stack configured with the revocation list `list`.
fn revoking(list: &Path) -> StartOptions {
    let envs = SERVICES
        .iter()
        .map(|service| (format!("BATTLELOG_{service}_REVOKED_TOKENS_FILE"), list.display().to_string()))
        .collect();
    StartOptions { envs, ..StartOptions::default() }
}

/// `battlelog token revoke` with `args`, as an operator runs it: it must
/// succeed and say what it revoked.
fn revoke(args: &[&str]) {
    let output = std::process::Command::new(battlelog_test_support::cli_binary())
        .args(["token", "revoke"])
        .args(args)
        .output()
        .expect("run battlelog token revoke");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "token revoke {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.starts_with("revoked "), "{stdout}");
}

/// Whether `answer` is the refusal of a revoked token.
fn revoked(answer: &Result<(), Status>) -> bool {
    answer.as_ref().err().is_some_and(|status| {
        status.code() == Code::Unauthenticated
            && status.get_error_details().error_info().is_some_and(|info| info.reason == "TOKEN_REVOKED")
    })
}

/// Whether the token got past authentication (the call itself may still
/// answer anything else).
fn authenticated(answer: &Result<(), Status>) -> bool {
    answer.as_ref().err().is_none_or(|status| status.code() != Code::Unauthenticated)
}

async fn list_rulesets(url: &str, token: &str) -> Result<(), Status> {
    let mut client = ResolverClient::new(battlelog_test_support::authed_channel(url, token));
    client.list_rulesets(pb::ListRulesetsRequest {}).await.map(drop)
}

async fn stream_info(url: &str, token: &str) -> Result<(), Status> {
    let mut client = JournalClient::new(battlelog_test_support::authed_channel(url, token));
    client.stream_info(pb::StreamInfoRequest { stream_id: "live-revocation".into() }).await.map(drop)
}

async fn commitment(url: &str, token: &str) -> Result<(), Status> {
    let mut client = RollerClient::new(battlelog_test_support::authed_channel(url, token));
    client.commitment(pb::CommitmentRequest { battle_id: "live-revocation".into(), epoch: 0 }).await.map(drop)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_revoked_while_the_services_run_is_refused_without_a_restart() {
    let lists = temp_dir("live-revocation-list");
    let list = lists.path().join("revoked-tokens");
    std::fs::write(&list, "").expect("an empty revocation list");
    let mut options = revoking(&list);
    // Looked at every 200 ms, and tokens living eight hours at most (the
    // tests' tokens live six; the keys, through the environment).
    for service in SERVICES {
        options.envs.push((format!("BATTLELOG_{service}_REVOKED_TOKENS_RELOAD_MS"), "200".to_owned()));
        options.envs.push((format!("BATTLELOG_{service}_TOKEN_MAX_LIFETIME_SECS"), "28800".to_owned()));
    }
    let stack = Stack::start_with("live-revocation", false, &options).await;
    let (resolver, journal, roller) = (stack.resolver.url(), stack.journal.url(), stack.roller.url());
    let auth = TestAuth::shared();
    let leaked = auth.token(Role::Forum, TEST_TENANT, "live-forum");
    let sibling = auth.token(Role::Forum, TEST_TENANT, "live-forum");
    let service = auth.token(Role::Service, "battlelog", "live-service");
    assert!(authenticated(&list_rulesets(&resolver, &leaked).await));
    assert!(authenticated(&list_rulesets(&resolver, &sibling).await));
    assert!(authenticated(&stream_info(&journal, &service).await));
    assert!(authenticated(&commitment(&roller, &service).await));
    // The configured maximum: eight hours pass, a second more does not.
    let key = SigningKey::read(&auth.signing_key_file()).expect("the tests' signing key");
    let lasting = |secs: u64| key.issue_at("live-forum", TEST_TENANT, Role::Forum, now(), now() + secs).expect("issue");
    assert!(authenticated(&list_rulesets(&resolver, &lasting(28800)).await), "at the configured maximum");
    let status = list_rulesets(&resolver, &lasting(28801)).await.expect_err("over the configured maximum");
    assert!(status.message().contains("at most 28800 seconds"), "{status:?}");

    // One leaked token, by its id: refused from the next reload on; its
    // subject's other token is not.
    let list_arg = list.display().to_string();
    revoke(&["--jti", &token_id(&leaked), "--list", &list_arg]);
    poll_until("the resolver refuses the revoked token", WAIT, || {
        let (resolver, leaked) = (resolver.clone(), leaked.clone());
        async move { revoked(&list_rulesets(&resolver, &leaked).await).then_some(()) }
    })
    .await;
    let answer = list_rulesets(&resolver, &sibling).await;
    assert!(authenticated(&answer), "only the revoked id is refused: {answer:?}");

    // Every token of a subject, at the journal and the roller too.
    revoke(&["--subject", "live-service", "--list", &list_arg]);
    poll_until("the journal and the roller refuse the revoked subject", WAIT, || {
        let (journal, roller, service) = (journal.clone(), roller.clone(), service.clone());
        async move {
            (revoked(&stream_info(&journal, &service).await) && revoked(&commitment(&roller, &service).await))
                .then_some(())
        }
    })
    .await;
    // The stack's own service token was never revoked: it still works.
    let mut forum = stack::resolver_as(&stack.resolver, &sibling).await;
    let open = forum.open_battle(open_request("live-after-revocation")).await;
    assert!(open.is_ok(), "the stack still serves: {open:?}");
    let answer = list_rulesets(&resolver, &leaked).await;
    let status = answer.expect_err("still revoked");
    assert!(status.message().contains("revoked"), "{status:?}");
}

/// Issue 35, finding 6: a `Watch` open when its token is revoked ends
/// with `UNAUTHENTICATED` (`TOKEN_REVOKED`) within the revocation list's
/// reload interval, not at the token's expiry; a sibling token's watch of
/// the same battle goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_ends_when_its_token_is_revoked() {
    let lists = temp_dir("watch-revocation-list");
    let list = lists.path().join("revoked-tokens");
    std::fs::write(&list, "").expect("an empty revocation list");
    let mut options = revoking(&list);
    for service in SERVICES {
        options.envs.push((format!("BATTLELOG_{service}_REVOKED_TOKENS_RELOAD_MS"), "200".to_owned()));
    }
    let stack = Stack::start_with("watch-revocation", false, &options).await;
    let auth = TestAuth::shared();
    let mut forum = stack::resolver_as(&stack.resolver, &auth.forum()).await;
    forum.open_battle(open_request("watched-revoked")).await.expect("open");
    let leaked = auth.token(Role::Reader, TEST_TENANT, "watch-reader");
    let sibling = auth.token(Role::Reader, TEST_TENANT, "watch-reader");
    let mut streams = Vec::new();
    for token in [&leaked, &sibling] {
        let mut reader = stack::resolver_as(&stack.resolver, token).await;
        let request = pb::WatchRequest { battle_id: "watched-revoked".into(), from_version: 0 };
        let mut stream = reader.watch(request).await.expect("a watch").into_inner();
        let first = tokio::time::timeout(WAIT, stream.message()).await.expect("in time").expect("an event");
        assert_eq!(first.expect("the opening").event.expect("a record").version, 0);
        streams.push(stream);
    }
    revoke(&["--jti", &token_id(&leaked), "--list", &list.display().to_string()]);
    let ended = tokio::time::timeout(WAIT, streams[0].message()).await.expect("the revoked watch ends in time");
    let status = ended.expect_err("it ends with an error");
    assert!(revoked(&Err(status.clone())), "{status:?}");
    // The sibling's watch is still open: it gets the next event.
    let attack = json!({"type": "attack", "actor": "pikachu", "target": "meowth", "move": "Tackle", "power": 40});
    stack::act(&mut forum, "watched-revoked", &attack, "after-revocation").await.expect("act");
    let next = tokio::time::timeout(WAIT, streams[1].message()).await.expect("in time").expect("still open");
    assert!(next.is_some(), "the sibling's watch goes on");
}

/// Issue 35, finding 6: a token whose tenant is `_` (the subject token of
/// battles without a tenant; every reserved tenant, `RESERVED_TENANTS`),
/// signed by a key the services accept (other tooling issued it), is
/// refused at the token check of each service, `UNAUTHENTICATED` with its
/// own reason — `OpenBattle` answered `INTERNAL` before — and opens nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_of_a_reserved_tenant_is_refused_at_the_token_check() {
    let stack = Stack::start("reserved-tenant", false).await;
    let key = SigningKey::read(&TestAuth::shared().signing_key_file()).expect("the tests' signing key");
    for tenant in battlelog_auth::RESERVED_TENANTS {
        let signed = |role: Role| {
            key.sign(Claims {
                sub: "placeholder-forum".into(),
                tenant: (*tenant).into(),
                role,
                exp: now() + HOUR,
                iat: now(),
                nbf: None,
                jti: None,
                kid: String::new(),
            })
            .expect("signed as it is")
        };
        let reserved = |answer: Result<(), Status>| {
            let status = answer.expect_err("refused");
            assert_eq!(status.code(), Code::Unauthenticated, "{status:?}");
            let details = status.get_error_details();
            assert_eq!(details.error_info().expect("ErrorInfo").reason, "TOKEN_TENANT_RESERVED", "{status:?}");
            assert!(status.message().contains("reserved") && status.message().contains(tenant), "{status:?}");
        };
        let mut journal = stack.journal_client().await;
        let before = journal_client::global_head(&mut journal).await;
        let mut forum = stack::resolver_as(&stack.resolver, &signed(Role::Forum)).await;
        reserved(forum.open_battle(open_request("reserved-tenant")).await.map(drop));
        reserved(list_rulesets(&stack.resolver.url(), &signed(Role::Reader)).await);
        reserved(stream_info(&stack.journal.url(), &signed(Role::Service)).await);
        reserved(commitment(&stack.roller.url(), &signed(Role::Service)).await);
        assert_eq!(journal_client::global_head(&mut journal).await, before, "nothing was written");
    }
}

/// The token `battlelog token issue --data-dir` mints from `up`'s key.
fn issue_with_up_key(data_dir: &str, subject: &str) -> String {
    let output = std::process::Command::new(battlelog_test_support::cli_binary())
        .args(["token", "issue", "--role", "reader", "--tenant", "dev", "--subject", subject, "--data-dir", data_dir])
        .output()
        .expect("run battlelog token issue");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).expect("utf-8").trim().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn battlelog_up_refuses_what_is_revoked_in_its_data_dir_without_a_restart() {
    let dir = temp_dir("up-revocation");
    let up = stack::up(dir.path(), &["--no-nats"]);
    let data = dir.path().display().to_string();
    let by_id = issue_with_up_key(&data, "up-reader");
    let by_subject = issue_with_up_key(&data, "up-leaver");
    let kept = issue_with_up_key(&data, "up-stayer");
    for token in [&by_id, &by_subject, &kept] {
        assert!(authenticated(&list_rulesets(&up.resolver, token).await));
    }
    revoke(&["--jti", &token_id(&by_id), "--data-dir", &data]);
    revoke(&["--subject", "up-leaver", "--data-dir", &data]);
    poll_until("battlelog up refuses both revoked tokens", WAIT, || {
        let (resolver, by_id, by_subject) = (up.resolver.clone(), by_id.clone(), by_subject.clone());
        async move {
            (revoked(&list_rulesets(&resolver, &by_id).await) && revoked(&list_rulesets(&resolver, &by_subject).await))
                .then_some(())
        }
    })
    .await;
    assert!(authenticated(&list_rulesets(&up.resolver, &kept).await), "an unrevoked token still works");
}
