//! The `Resolver` gRPC service.
//!
//! Every command works on the battle's folded view (cached, within a budget
//! in bytes; see `battlelog_stream::FoldCache`), checks the rules before any
//! die is drawn, asks the roller for exactly the dice the action needs,
//! resolves, and appends the result with the stream's exact expected
//! version. A warm view is not read again before a command: the expected
//! version is what catches a stale one (the journal refuses, the view is
//! caught up and the command retried), and every refusal the view would
//! give is confirmed against the journal before it is answered. What the
//! resolver and the roller append in a command is folded from what they
//! sent and the journal's acknowledgement, not read back; the roller is told
//! the head it rolls at (`RollRequest.expected_head`). A warm `Act` is so
//! one round trip to the roller and two appends. Commands on one battle are
//! serialised per replica; across replicas the expected version decides.
//!
//! Who may call what is decided here, per RPC, from the verified token the
//! server's authenticator left on the request (see [`rights`]): the roles
//! each call admits, and the tenant, which must own the battle. A battle of
//! another tenant answers exactly as one that does not exist. Command
//! events record the caller's credential; a ruling's judge is the token's
//! subject.
//!
//! Every mutating request carries a request id. The resolver derives the
//! roller's and the journal's idempotency keys from it, so a retry after a
//! crash anywhere — even between the roll and the resolution — finds what
//! was recorded and never rolls again.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use battlelog_auth::share::SHARE_KEY_METADATA;
use battlelog_auth::{AuthChannel, Caller, Role, ShareSecret, TokenError, caller};
use battlelog_proto::battle::{self, StructError, check_struct, die_from_proto, json_to_struct, struct_to_json};
use battlelog_proto::error::{BattleReason, Error, JournalReason};
use battlelog_proto::v1::journal_client::JournalClient;
use battlelog_proto::v1::resolver_server::Resolver;
use battlelog_proto::v1::roller_client::RollerClient;
use battlelog_proto::v1::{
    ActRequest, ActResponse, ActionResolved, AuditFinding, AuditRequest, AuditResponse, BattleClosed, BattleEvent,
    BattleOpened, Checkpoint, CloseRequest, CommitmentRequest, ConsistencyProofRequest, ConsistencyProofResponse,
    Credential, DisputeRaised, DisputeRequest, EventResponse, ExportRequest, ExportResponse, GetBattleRequest,
    GetBattleResponse, GetCheckpointRequest, GetCheckpointResponse, JournalRecord, JudgeRuling, ListRulesetsRequest,
    ListRulesetsResponse, OpenBattleRequest, OpenBattleResponse, RecordedEvent, RecordedRoll, RevealRequest,
    RevealSeedRequest, RevealSeedResponse, RollRequest, RollResponse, RollSpec, RuleRequest, RulesetInfo, SeedRevealed,
    SignedHeadRequest, StreamHead, SubscribeStreamRequest, WatchRequest, battle_event::Event,
};
use battlelog_runtime::grpc::invalid_argument;
use battlelog_runtime::streams::{Ending, StreamCaps, StreamEnd, StreamLimits, deadline_exceeded, grpc_timeout};
use battlelog_runtime::validate;
use battlelog_stream::{DEFAULT_CACHE_BYTES, FoldCache, MAX_ATTEMPTS, StreamClient, StreamError, downstream};
use battlelog_verify::audit::{AuditedRecord, audit_with_roller_key};
use rules::{Action, ActionKind, Battle, RulesetId};
use serde_json::{Map, Value};
use tokio_stream::StreamExt;
use tonic::{Request, Response, Status};
use tracing::{Instrument as _, debug, warn};

use crate::battle_id::{self, BattleIdSecret};
use crate::post;
use crate::view::{BattleView, dispute_action, ruling_action};

// The input limits live with every other service's (battlelog_runtime::limits).
pub use battlelog_runtime::limits::resolver::{
    MAX_ACTOR_BYTES, MAX_CLIENT_SEED_BYTES, MAX_JSON_BYTES, MAX_JSON_DEPTH, MAX_PARTICIPANTS, MAX_PURPOSE_BYTES,
    MAX_REQUEST_ID_BYTES, MAX_TEXT_BYTES,
};
use battlelog_runtime::limits::roller::MAX_DICE_PER_REQUEST;
use battlelog_runtime::limits::{MAX_PAGE_BYTES, PAGE_FRAMING_BYTES};

/// Which roles each RPC admits: the README's rights table, in code. The
/// tenant rule comes on top for every call that names a battle.
pub mod rights {
    use battlelog_auth::Role;

    /// Opening battles, acting and disputing: the forum platform.
    pub const FORUM: &[Role] = &[Role::Forum];
    /// Rulings and mid-battle reveals: a judge.
    pub const JUDGE: &[Role] = &[Role::Judge];
    /// Closing: the forum or a judge.
    pub const CLOSE: &[Role] = &[Role::Forum, Role::Judge];
    /// Reading, exporting, auditing and watching.
    pub const READ: &[Role] = &[Role::Forum, Role::Judge, Role::Reader];
}

/// The answer for a battle this caller may not see, identical to the one
/// for a battle that does not exist, so that no tenant learns of another's.
fn not_found(battle_id: &str) -> Status {
    Error::battle_not_found(battle_id).into_status()
}

/// An invariant of ours failed (battlelog_proto::error, `INTERNAL`).
fn internal(message: impl Into<String>) -> Status {
    Error::internal(message).into_status()
}

/// What the journal holds does not read back as a battle (`DATA_LOSS`).
fn data_loss(message: impl Into<String>) -> Status {
    Error::data_loss(message).into_status()
}

/// A request id reused for another request (`IDEMPOTENCY_KEY_REUSED`,
/// metadata `field` = `request_id`).
fn key_reused(message: String) -> Status {
    Error::new(JournalReason::IdempotencyKeyReused, message).with("field", "request_id").into_status()
}

/// The battle cannot take the request now; the same request id may retry.
fn busy(battle_id: &str, message: String) -> Status {
    Error::new(BattleReason::BattleBusy, message).with("battle_id", battle_id).into_status()
}

/// The journal's answer to a request the resolver forwards as the caller
/// wrote it (GetCheckpoint, GetConsistencyProof): as [`downstream`], except
/// that the journal's INVALID_ARGUMENT (a tree size past its newest
/// checkpoint, say) is the caller's to fix and stays INVALID_ARGUMENT.
fn forwarded(service: &str, status: Status) -> Status {
    if status.code() != tonic::Code::InvalidArgument {
        return downstream(service, status);
    }
    match Error::from_status(&status) {
        Some(mut error) => {
            error.message = format!("{service}: {}", error.message);
            error.into_status()
        }
        None => invalid_argument("request", format!("{service}: {}", status.message())),
    }
}

/// The caller, if its role is one of `roles`.
fn authorize<T>(request: &Request<T>, call: &str, roles: &[Role]) -> Result<Caller, Status> {
    let caller = caller(request)?;
    caller.require(call, roles)?;
    Ok(caller)
}

/// What a command event records of its caller.
fn credential(caller: &Caller) -> Credential {
    Credential { subject: caller.subject.clone(), role: caller.role.as_str().to_owned() }
}

/// `view` is an opened battle that `caller`'s tenant owns; anything else is
/// [`not_found`].
fn check_owner(battle_id: &str, view: &BattleView, caller: &Caller) -> Result<(), Status> {
    check_reach(battle_id, view, &Reach::Tenant(caller))
}

/// Which battles a read reaches. A read carrying a battle's share key
/// ([`SHARE_KEY_METADATA`]) reaches that one battle whatever the token's
/// tenant: the link is the capability, as on the web page. Writes never
/// look at it.
#[derive(Debug, Clone, Copy)]
enum Reach<'a> {
    /// Those of the caller's tenant.
    Tenant(&'a Caller),
    /// The one battle whose share key the request carried.
    SharedLink,
}

impl Reach<'_> {
    fn admits(&self, tenant: &str) -> bool {
        match self {
            Reach::Tenant(caller) => caller.owns(tenant),
            Reach::SharedLink => true,
        }
    }
}

/// `view` is an opened battle within `reach`; anything else is [`not_found`].
fn check_reach(battle_id: &str, view: &BattleView, reach: &Reach<'_>) -> Result<(), Status> {
    match &view.tenant {
        Some(tenant) if reach.admits(tenant) => Ok(()),
        _ => Err(not_found(battle_id)),
    }
}

/// The battle web page replies link to.
#[derive(Debug, Clone)]
struct Links {
    /// The web service's public base URL, without a trailing slash.
    web_url: String,
    /// Derives each battle's share key (`?k=`), which the web service checks.
    share: ShareSecret,
}

/// What an append wrote, as the journal acknowledged it.
#[derive(Debug)]
struct Wrote {
    /// The first event's version.
    version: u64,
    /// The last event's h(version), lowercase hex: the new head.
    head_hash: String,
    /// The journal's newest checkpoint in its reply (PROTOCOL.md §5).
    checkpoint: Option<Checkpoint>,
}

/// What the journal holds at a version: the event and its chain hash.
#[derive(Debug)]
struct Journaled {
    event: Event,
    /// h(version), lowercase hex.
    hash: String,
}

#[derive(Debug, Clone)]
pub struct ResolverService {
    /// For the calls that pass records on as they are (audit, export, watch).
    journal: JournalClient<AuthChannel>,
    /// For folding battles and appending to them.
    streams: StreamClient,
    roller: RollerClient<AuthChannel>,
    views: FoldCache<BattleView>,
    /// How long after its close a battle still takes disputes and rulings.
    appeal_window: Duration,
    /// Where replies link to: the web service and the secret of its share
    /// keys. None: replies carry no permalink.
    links: Option<Links>,
    /// What generated battle ids are keyed with.
    battle_ids: BattleIdSecret,
    /// Set when the server begins to shut down: open `Watch` streams end,
    /// so that a graceful shutdown does not wait for them for ever.
    stopping: tokio::sync::watch::Sender<bool>,
    /// Open `Watch` streams per token and per connection.
    watches: StreamCaps,
    /// Most battles one `ListBattles` page holds.
    max_list_page_size: u32,
    metrics: crate::metrics::ResolverMetrics,
}

fn json_of(field: &str, fields: Option<&prost_types::Struct>) -> Result<Value, Status> {
    let fields = fields.ok_or_else(|| invalid_argument(field, "is required"))?;
    // Before any conversion: `struct_to_json` recurses without a bound and
    // would turn NaN or infinity into `null` without a word.
    check_struct(field, fields, MAX_JSON_DEPTH).map_err(|e| struct_refused(field, &e))?;
    let json = Value::Object(struct_to_json(fields));
    let size = json.to_string().len();
    if size > MAX_JSON_BYTES {
        return Err(invalid_argument(field, format!("is {size} bytes as JSON; the limit is {MAX_JSON_BYTES}")));
    }
    Ok(json)
}

/// The refusal of a value the rules' types cannot read, naming its JSON
/// path under `field` (`action.power`, `participants[1].abilities.X.per_episode`)
/// in the message and as the `BadRequest` violation's field.
fn unreadable(field: &str, error: rules::read::FieldError) -> Status {
    invalid_argument(&error.path_under(field), error.message)
}

/// The refusal of sheets that read but do not open a battle, naming the
/// field at fault where the error tells which.
fn sheets_refused(sheets: &[rules::Participant], error: &rules::OpenError) -> Status {
    use rules::OpenError;
    let index_of = |id: &str| sheets.iter().position(|sheet| sheet.id == id);
    let field = match error {
        OpenError::EmptyId { index } => Some(format!("participants[{index}].id")),
        // The second sheet with the id is the one at fault.
        OpenError::DuplicateParticipant { id } => sheets
            .iter()
            .enumerate()
            .filter(|(_, sheet)| &sheet.id == id)
            .nth(1)
            .map(|(index, _)| format!("participants[{index}].id")),
        OpenError::SheetPartNotForRuleset { id, part, .. } => {
            index_of(id).map(|index| format!("participants[{index}].{part}"))
        }
        OpenError::UnknownTrait { id, .. } => index_of(id).map(|index| format!("participants[{index}].traits")),
        OpenError::AbilityFieldNotInVersion { id, ability, field, .. } => {
            index_of(id).map(|index| format!("participants[{index}].abilities.{ability}.{field}"))
        }
        OpenError::MinPointsOutOfRange { id, ability, .. } => {
            index_of(id).map(|index| format!("participants[{index}].abilities.{ability}.min_points"))
        }
        _ => None,
    };
    invalid_argument(field.as_deref().unwrap_or("participants"), error.to_string())
}

/// A Struct as JSON text, its whole numbers as integers (what the
/// `*_json` mirror fields of the replies carry).
fn json_text(fields: Option<&prost_types::Struct>) -> String {
    fields.map(|fields| Value::Object(struct_to_json(fields)).to_string()).unwrap_or_default()
}

/// Every ruleset with its schemas, as ListRulesets answers: built once.
fn ruleset_infos() -> Vec<RulesetInfo> {
    static INFOS: std::sync::LazyLock<Vec<RulesetInfo>> = std::sync::LazyLock::new(|| {
        RulesetId::ALL
            .into_iter()
            .map(|id| {
                let schemas = rules::schema::for_ruleset(id);
                RulesetInfo {
                    id: id.to_string(),
                    sheet_schema: rules::schema::text(&schemas.sheet),
                    action_schema: rules::schema::text(&schemas.action),
                    outcome_schema: rules::schema::text(&schemas.outcome),
                }
            })
            .collect()
    });
    INFOS.clone()
}

/// The refusal of a caller's `Struct`: a value that is wrong names its path
/// (`action.damage`); nesting names the field and the limit.
fn struct_refused(field: &str, error: &StructError) -> Status {
    match error {
        StructError::TooDeep { .. } => invalid_argument(field, error.to_string()),
        StructError::NotFinite { path, value } => {
            invalid_argument(path, format!("must be a finite number, not {value}"))
        }
        StructError::Control { path } => invalid_argument(path, "may not hold control characters"),
    }
}

fn to_struct(value: &impl serde::Serialize) -> Result<prost_types::Struct, Status> {
    match serde_json::to_value(value) {
        Ok(Value::Object(fields)) => Ok(json_to_struct(&fields)),
        Ok(other) => Ok(json_to_struct(&Map::from_iter([("value".to_owned(), other)]))),
        Err(e) => Err(internal(format!("cannot encode: {e}"))),
    }
}

/// A ruleset's state as a Struct. It serialises as `{"<ruleset>": {...}}`;
/// the ruleset is a field of its own in the reply, so the state is the
/// inner object (empty for rulesets that keep none).
fn state_struct(state: &rules::RulesState) -> Result<prost_types::Struct, Status> {
    let value = serde_json::to_value(state).map_err(|e| internal(format!("cannot encode the state: {e}")))?;
    let inner = match value {
        Value::Object(outer) if outer.len() == 1 => outer.into_iter().next().map(|(_, inner)| inner),
        other => Some(other),
    };
    match inner {
        Some(Value::Object(fields)) => Ok(json_to_struct(&fields)),
        _ => Ok(prost_types::Struct::default()),
    }
}

/// Who an action is for, as the roller's `actor`.
pub(crate) fn actor_of(action: &Value) -> String {
    let field = |name: &str| action.get(name).and_then(Value::as_str).map(str::to_owned);
    field("actor")
        .or_else(|| action.get("attacker").and_then(|a| a.get("id")).and_then(Value::as_str).map(str::to_owned))
        .or_else(|| field("by"))
        .or_else(|| field("judge"))
        .unwrap_or_default()
}

/// Whether `recorded`, found under a request's key, is what `asked` asks
/// for. Compared on the request's own fields, not as whole events: the
/// resolver may add fields of its own to an event (who asked, with which
/// credential) that a retry need not repeat.
fn same_request(recorded: &Event, asked: &Event) -> bool {
    match (recorded, asked) {
        (Event::DisputeRaised(r), Event::DisputeRaised(a)) => {
            (&r.by, r.refers_to, &r.reason) == (&a.by, a.refers_to, &a.reason)
        }
        (Event::JudgeRuling(r), Event::JudgeRuling(a)) => {
            (&r.judge, r.refers_to, &r.text, &r.r#override) == (&a.judge, a.refers_to, &a.text, &a.r#override)
        }
        (Event::BattleClosed(r), Event::BattleClosed(a)) => (&r.by, &r.reason) == (&a.by, &a.reason),
        _ => false,
    }
}

/// The recorded answer to a Dispute, Rule or Close seen before under its
/// key (`recorded`, read from the journal), or the refusal of a request id
/// reused for another request.
fn replay_event(
    recorded: Option<Journaled>,
    version: u64,
    asked: &Event,
    request_id: &str,
    permalink: String,
    checkpoint: Option<Checkpoint>,
) -> Result<EventResponse, Status> {
    match recorded {
        Some(Journaled { event, hash }) if same_request(&event, asked) => Ok(EventResponse {
            checkpoint,
            version,
            event: Some(BattleEvent { event: Some(event) }),
            permalink,
            head_hash: hash,
            post: None,
        }),
        _ => Err(key_reused(format!(
            "request_id {request_id} was already used for another request (version {version}); \
             a retry must repeat the {} it was first sent with",
            battle::type_name(asked)
        ))),
    }
}

/// A record as the journal stores it, decoded, with its hash in hex.
fn journaled(battle_id: &str, recorded: &RecordedEvent) -> Result<Journaled, Status> {
    let record = recorded.event.as_ref().ok_or_else(|| internal("journal sent an event without its record"))?;
    let event = battle::decode(record).map_err(|e| data_loss(format!("battle {battle_id}: {e}")))?;
    Ok(Journaled { event, hash: hex::encode(&recorded.hash) })
}

/// Whether a roll (the roller's answer) was appended right after `head`, so
/// that the resolver may fold it from the answer instead of reading it.
fn rolled_after(head: u64, rolled: &RollResponse, wanted: usize) -> bool {
    !rolled.replayed
        && rolled.rolls.len() == wanted
        && rolled.rolls.iter().enumerate().all(|(i, r)| r.version == head + 1 + i as u64 && r.roll.is_some())
}

/// A refusal of the rules: its reason, RULES.md section and Russian
/// message (battlelog_proto::error). Any other failure to resolve is ours:
/// the dice the roller drew no longer fit, or a fold went wrong.
fn rejected(battle_id: &str, error: &rules::ResolveError) -> Status {
    match error {
        rules::ResolveError::Rejected(rejection) => {
            Error::rejection(rejection).with("battle_id", battle_id).into_status()
        }
        other => internal(format!("battle {battle_id}: {other}")),
    }
}

fn open_key(request_id: &str) -> String {
    format!("open:{request_id}")
}
fn act_key(request_id: &str) -> String {
    format!("act:{request_id}")
}
fn dispute_key(request_id: &str) -> String {
    format!("dispute:{request_id}")
}
fn rule_key(request_id: &str) -> String {
    format!("rule:{request_id}")
}
fn close_key(request_id: &str) -> String {
    format!("close:{request_id}")
}
/// Open `Watch` streams one token (its subject in its tenant) and one
/// client connection may hold when the configuration names no other limit:
/// enough for a reader following every battle of a busy page, far below
/// what would weigh on the server.
pub const DEFAULT_WATCH_LIMITS: StreamLimits = StreamLimits { per_token: 256, per_connection: 128 };

/// The appeal window of a battle whose configuration names none.
pub const DEFAULT_APPEAL_WINDOW: Duration = Duration::from_secs(14 * 24 * 60 * 60);

/// This replica's clock, in the journal's unit. Only compared with the
/// journal's recorded close time: replicas whose clocks differ by a second
/// disagree for that second about a window of days, never about its start.
fn unix_micros_now() -> i64 {
    let since_epoch = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    i64::try_from(since_epoch.as_micros()).unwrap_or(i64::MAX)
}

/// `micros` since the Unix epoch as RFC 3339 text (UTC).
fn rfc3339(micros: i64) -> String {
    let timestamp = prost_types::Timestamp {
        seconds: micros.div_euclid(1_000_000),
        nanos: i32::try_from(micros.rem_euclid(1_000_000) * 1_000).unwrap_or(0),
    };
    timestamp.to_string()
}

fn reveal_key(request_id: &str) -> String {
    format!("reveal:{request_id}")
}

/// What ends a `Watch` that its watcher does not: the server shutting down
/// (a graceful shutdown must not wait for open watches), its token's expiry
/// (`UNAUTHENTICATED`, reason `TOKEN_EXPIRED`, as a token expired at the
/// door), or the call's deadline.
fn watch_end(
    mut stopping: tokio::sync::watch::Receiver<bool>,
    expires_at: u64,
    timeout: Option<Duration>,
) -> StreamEnd {
    let since_epoch = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    let expires_in = Duration::from_secs(expires_at).saturating_sub(since_epoch);
    Box::pin(async move {
        let deadline = async {
            match timeout {
                Some(timeout) => tokio::time::sleep(timeout).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = async { stopping.wait_for(|stop| *stop).await.map_or((), |_| ()) } => None,
            () = tokio::time::sleep(expires_in) => Some(Status::from(TokenError::Expired { exp: expires_at })),
            () = deadline => Some(deadline_exceeded("Watch", timeout.unwrap_or_default())),
        }
    })
}

impl ResolverService {
    /// The resolver calling `journal` and `roller` (each with this
    /// service's `service` token on every call), with the default cache
    /// budget.
    pub fn new(journal: JournalClient<AuthChannel>, roller: RollerClient<AuthChannel>) -> Self {
        Self {
            streams: StreamClient::new(journal.clone()),
            journal,
            roller,
            views: FoldCache::new(DEFAULT_CACHE_BYTES),
            appeal_window: DEFAULT_APPEAL_WINDOW,
            links: None,
            battle_ids: BattleIdSecret::generate(),
            stopping: tokio::sync::watch::Sender::new(false),
            watches: StreamCaps::new(DEFAULT_WATCH_LIMITS),
            max_list_page_size: crate::listing::DEFAULT_MAX_PAGE_SIZE,
            metrics: Default::default(),
        }
    }

    /// The same resolver counting into `metrics` (see
    /// [`crate::ResolverMetrics::register`]): its cache and catch-up reads
    /// too.
    pub fn with_metrics(mut self, metrics: crate::metrics::ResolverMetrics) -> Self {
        self.views = self.views.with_metrics(metrics.cache.clone());
        self.streams = self.streams.with_metrics(metrics.cache.clone());
        self.metrics = metrics;
        self
    }

    /// The same resolver answering at most `max` battles per `ListBattles`
    /// page.
    pub fn with_max_list_page_size(mut self, max: u32) -> Self {
        self.max_list_page_size = max;
        self
    }

    /// The same resolver holding at most `limits` open `Watch` streams per
    /// token and per connection.
    pub fn with_watch_limits(mut self, limits: StreamLimits) -> Self {
        self.watches = StreamCaps::new(limits);
        self
    }

    /// The same resolver keeping at most about `cache_bytes` of folded
    /// battles.
    pub fn with_cache_bytes(mut self, cache_bytes: u64) -> Self {
        // In either order with `with_metrics`: the new cache keeps counting.
        self.views = FoldCache::new(cache_bytes).with_metrics(self.metrics.cache.clone());
        self
    }

    /// The same resolver taking disputes and rulings for `window` after a
    /// battle's close.
    pub fn with_appeal_window(mut self, window: Duration) -> Self {
        self.appeal_window = window;
        self
    }

    /// The same resolver keying the battle ids it generates with `secret`
    /// (the same on every replica, so that a retry finds its battle).
    pub fn with_battle_id_secret(mut self, secret: BattleIdSecret) -> Self {
        self.battle_ids = secret;
        self
    }

    /// The same resolver putting in its replies links to the battle pages of
    /// the web service at `web_url` (its public base URL), each with the
    /// battle's share key under `share`, the secret the web service checks
    /// keys with.
    pub fn with_links(mut self, web_url: String, share: ShareSecret) -> Self {
        let web_url = web_url.trim_end_matches('/').to_owned();
        self.links = Some(Links { web_url, share });
        self
    }

    /// The link to the event at `version` on `battle_id`'s web page, with
    /// the battle's share key; empty without a web service to link to.
    fn permalink(&self, battle_id: &str, version: u64) -> String {
        match &self.links {
            // Battle ids are [A-Za-z0-9_-] and keys base64url: nothing to escape.
            Some(Links { web_url, share }) => {
                format!("{web_url}/battles/{battle_id}?k={}#v{version}", share.key_for(battle_id))
            }
            None => String::new(),
        }
    }

    /// Ends open `Watch` streams: the server is shutting down.
    pub fn begin_shutdown(&self) {
        self.stopping.send_replace(true);
    }

    /// Takes a record from the event feed (NATS or the in-process fan-out)
    /// as a hint, never as a source: the feed is not the system of record,
    /// and a record on it that the journal does not hold must change
    /// nothing. Only its stream id and version are read. When that battle is
    /// cached and the record is news to it, a catch-up from the journal is
    /// spawned, so that the next command finds the view warm.
    pub fn warm(&self, record: JournalRecord) {
        let JournalRecord { stream_id, version, .. } = record;
        let Some(shared) = self.views.peek(&stream_id) else {
            return;
        };
        // A command holding the view catches up by itself; don't wait for it.
        let Ok(mut view) = shared.try_lock_owned() else { return };
        if version < view.next_version() {
            return;
        }
        // Called from the journal's outbox or the NATS follower, both on a
        // runtime; without one there is nobody to hint.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let streams = self.streams.clone();
        runtime.spawn(async move {
            if let Err(error) = streams.catch_up(&stream_id, &mut *view).await {
                debug!(battle_id = %stream_id, %error, "catching up on a hint from the event feed failed");
            }
        });
    }

    /// The head version of `battle_id`'s cached view as it stands, without
    /// catching up: `None` when the battle is not cached, has no events yet,
    /// or a command holds it right now. For tests and diagnostics.
    pub fn cached_head(&self, battle_id: &str) -> Option<u64> {
        self.views.peek(battle_id)?.try_lock().ok()?.head()
    }

    /// Folds whatever the journal holds past what `view` has seen.
    async fn catch_up(&self, battle_id: &str, view: &mut BattleView) -> Result<(), Status> {
        self.streams.catch_up(battle_id, view).await.map_err(StreamError::into_status)
    }

    /// Folds what this command appended (or the roller appended for it) at
    /// `version`, from what was sent, and when the journal says it committed
    /// it. Should it not fold, the view is dropped and the next command reads
    /// the battle afresh.
    fn fold_own(battle_id: &str, view: &mut BattleView, version: u64, recorded_at: i64, event: &Event, key: &str) {
        if let Err(error) = view.apply_event(version, recorded_at, event, key) {
            warn!(battle_id, %error, "an appended event does not fold; the battle will be read afresh");
            *view = BattleView::default();
        }
    }

    /// The battle caught up from the journal, if it is within `reach`: for
    /// reads, which answer what the journal holds now.
    async fn opened_view(&self, battle_id: &str, reach: &Reach<'_>) -> Result<BattleView, Status> {
        let mut view = self.views.lock(battle_id).await;
        self.catch_up(battle_id, &mut view).await?;
        check_reach(battle_id, &view, reach)?;
        Ok(view.clone())
    }

    /// What a read call of `caller` reaches: the one battle whose share key
    /// the request carries (when this resolver has the share secret), else
    /// the caller's tenant's battles.
    fn reach<'a, T>(&self, request: &Request<T>, battle_id: &str, caller: &'a Caller) -> Reach<'a> {
        let key = request.metadata().get(SHARE_KEY_METADATA).and_then(|key| key.to_str().ok());
        match (&self.links, key) {
            (Some(links), Some(key)) if links.share.admits(battle_id, key) => Reach::SharedLink,
            _ => Reach::Tenant(caller),
        }
    }

    /// The battle as it stood right after `version`, folded afresh from the
    /// journal's records (no cache keeps them).
    async fn view_as_of(&self, battle_id: &str, version: u64) -> Result<BattleView, Status> {
        let records = self.streams.records(battle_id, 0, version).await.map_err(StreamError::into_status)?;
        let mut view = BattleView::default();
        for record in &records {
            view.apply(record).map_err(|e| data_loss(format!("battle {battle_id}: {e}")))?;
        }
        Ok(view)
    }

    /// The event journaled at `version` and its chain hash, read from the
    /// journal.
    async fn recorded_event(&self, battle_id: &str, version: u64) -> Result<Option<Journaled>, Status> {
        let page = self.streams.page(battle_id, version, 1).await.map_err(StreamError::into_status)?;
        let Some(recorded) = page.events.into_iter().next() else { return Ok(None) };
        match recorded.event.as_ref() {
            Some(record) if record.version == version => journaled(battle_id, &recorded).map(Some),
            _ => Ok(None),
        }
    }

    /// The `BattleOpened` of a battle and its hash, read from the journal.
    async fn recorded_opening(&self, battle_id: &str) -> Result<(BattleOpened, String), Status> {
        match self.recorded_event(battle_id, 0).await? {
            Some(Journaled { event: Event::BattleOpened(opened), hash }) => Ok((opened, hash)),
            _ => Err(data_loss(format!("battle {battle_id}: version 0 is not its BattleOpened"))),
        }
    }

    /// The hash of the SeedRevealed that closed the battle whose
    /// BattleClosed is at `closed`, and that reveal: the first one after it
    /// (a closed battle has no seed left to reveal but that one's). Read
    /// from the journal; a close is rare.
    async fn closing_reveal(&self, battle_id: &str, closed: u64) -> Result<(String, SeedRevealed, u64), Status> {
        let recorded = self.streams.recorded(battle_id, closed + 1).await.map_err(StreamError::into_status)?;
        for event in &recorded {
            if let Journaled { event: Event::SeedRevealed(revealed), hash } = journaled(battle_id, event)? {
                let version = event.event.as_ref().map_or(closed + 1, |record| record.version);
                return Ok((hash, revealed, version));
            }
        }
        Err(internal(format!("battle {battle_id}: no SeedRevealed follows its close at version {closed}")))
    }

    /// Whether the battle is within `reach`, from its `BattleOpened` alone:
    /// for the calls that read the record as it is (audit, export, watch),
    /// which must work on a battle whose later events no longer fold — that
    /// is what an audit is for.
    async fn check_reach_in_journal(&self, battle_id: &str, reach: &Reach<'_>) -> Result<(), Status> {
        let events = self.streams.page(battle_id, 0, 1).await.map_err(StreamError::into_status)?.events;
        let opened = events.first().and_then(|e| e.event.as_ref()).map(battle::decode);
        match opened {
            Some(Ok(Event::BattleOpened(opened))) if reach.admits(&opened.tenant) => Ok(()),
            _ => Err(not_found(battle_id)),
        }
    }

    /// The journal's newest checkpoint, for the reply to a request answered
    /// from what the journal already held (a retry): no append of this
    /// request returned one. Best effort: a journal that cannot say (one
    /// without a transparency log answers UNIMPLEMENTED, or a failure)
    /// leaves the reply's checkpoint unset rather than failing a write that
    /// is already journaled.
    async fn newest_checkpoint(&self) -> Option<Checkpoint> {
        match self.journal.clone().get_checkpoint(GetCheckpointRequest {}).await {
            Ok(reply) => reply.into_inner().checkpoint,
            Err(status) => {
                tracing::debug!(code = ?status.code(), "no checkpoint for a repeated request's reply: {}", status.message());
                None
            }
        }
    }

    /// Appends `events` after `head` (`None`: the stream must not exist),
    /// and folds them into `view` from what was sent; answers the first
    /// event's version and the hash of the last (the new head), as the
    /// journal acknowledged them, with the journal's checkpoint of that
    /// reply. `Ok(None)` means another writer got there first, or the
    /// request's key was recorded before: the caller catches up and looks
    /// again.
    async fn append(
        &self,
        battle_id: &str,
        view: &mut BattleView,
        head: Option<u64>,
        events: Vec<(Event, String)>,
    ) -> Result<Option<Wrote>, Status> {
        let new_events = events.iter().map(|(event, key)| battle::new_event(event.clone(), key.clone())).collect();
        match self.streams.append(battle_id, head, new_events).await {
            Ok(appended) if appended.follows(head) => {
                for ((event, key), written) in events.iter().zip(&appended.events) {
                    Self::fold_own(battle_id, view, written.version, written.recorded_at_unix_micros, event, key);
                }
                match (appended.events.first(), appended.events.last()) {
                    (Some(first), Some(last)) => Ok(Some(Wrote {
                        version: first.version,
                        head_hash: hex::encode(&last.hash),
                        checkpoint: appended.checkpoint,
                    })),
                    _ => Err(internal("the journal acknowledged an append without its events")),
                }
            }
            // Deduplicated: this request's key was recorded before.
            Ok(_) => Ok(None),
            Err(StreamError::Conflict { .. } | StreamError::KeyReused { .. }) => Ok(None),
            Err(error) => Err(error.into_status()),
        }
    }

    /// The recorded answer to an `Act` seen before — if it was for the same
    /// action; reusing a request id for another action is refused. The
    /// resolution and its rolls are read from the journal: no cache keeps
    /// records.
    async fn replay_act(
        &self,
        battle_id: &str,
        view: &BattleView,
        version: u64,
        action: &prost_types::Struct,
        request_id: &str,
    ) -> Result<ActResponse, Status> {
        let Some(Journaled { event: Event::ActionResolved(resolved), hash }) =
            self.recorded_event(battle_id, version).await?
        else {
            return Err(internal(format!("version {version} is not the recorded ActionResolved")));
        };
        if resolved.action.as_ref() != Some(action) {
            return Err(key_reused(format!(
                "request_id {request_id} was already used for another action (version {version})"
            )));
        }
        let versions: Vec<u64> = resolved
            .rolls
            .iter()
            .filter_map(|nonce| view.roll_versions.get(usize::try_from(*nonce).ok()?).copied())
            .collect();
        let mut rolls = Vec::new();
        if let (Some(&first), Some(&last)) = (versions.iter().min(), versions.iter().max()) {
            let records = self.streams.records(battle_id, first, last).await.map_err(StreamError::into_status)?;
            for record in records.iter().filter(|r| versions.contains(&r.version)) {
                if let Ok(Event::DiceRolled(roll)) = battle::decode(record) {
                    rolls.push(RecordedRoll {
                        rendering: battle::rendering(&roll),
                        roll: Some(roll),
                        version: record.version,
                    });
                }
            }
        }
        Ok(ActResponse {
            checkpoint: self.newest_checkpoint().await,
            outcome_json: json_text(resolved.outcome.as_ref()),
            resolved: Some(resolved),
            version,
            rolls,
            permalink: self.permalink(battle_id, version),
            head_hash: hash,
            post: None,
        })
    }

    /// Appends one judge or participant event after checking it against the
    /// rules, idempotently under `key` (derived from `request_id`).
    async fn append_checked(
        &self,
        caller: &Caller,
        battle_id: &str,
        request_id: &str,
        key: String,
        action: Option<Action>,
        event: Event,
    ) -> Result<EventResponse, Status> {
        let mut view = self.views.lock(battle_id).await;
        // A warm view is trusted until the journal says otherwise; a
        // refusal is only answered from a view read in this request.
        let mut read = view.next_version() == 0;
        let mut caught_up = false;
        for _ in 0..MAX_ATTEMPTS {
            if read {
                self.catch_up(battle_id, &mut view).await?;
                caught_up = true;
            }
            read = true;
            if let Err(status) = check_owner(battle_id, &view, caller) {
                if caught_up {
                    return Err(status);
                }
                continue;
            }
            if let Some(&version) = view.keys.get(&key) {
                let recorded = self.recorded_event(battle_id, version).await?;
                let checkpoint = self.newest_checkpoint().await;
                return replay_event(
                    recorded,
                    version,
                    &event,
                    request_id,
                    self.permalink(battle_id, version),
                    checkpoint,
                );
            }
            let (Some(rules), Some(head)) = (view.rules.as_ref(), view.head()) else {
                return Err(not_found(battle_id));
            };
            let appeal = matches!(event, Event::DisputeRaised(_) | Event::JudgeRuling(_));
            let refusal = if view.closed() && !appeal {
                Some(Error::battle_closed(battle_id).into_status())
            } else if let Some(ends) = view.appeal_ends_unix_micros(self.appeal_window)
                && unix_micros_now() >= ends
            {
                Some(
                    Error::new(
                        BattleReason::BattleFinal,
                        format!(
                            "battle {battle_id} is final: its appeal window ended at {}; no dispute or ruling may follow",
                            rfc3339(ends)
                        ),
                    )
                    .with_message_ru(format!(
                        "бой {battle_id} окончательный: срок обжалования истёк {}; споры и решения судьи больше не принимаются",
                        rfc3339(ends)
                    ))
                    .with("battle_id", battle_id)
                    .with("appeal_ended", rfc3339(ends))
                    .into_status(),
                )
            } else {
                action
                    .as_ref()
                    .and_then(|action| rules.resolve(head + 1, action, &[]).err())
                    .map(|e| rejected(battle_id, &e))
            };
            if let Some(refusal) = refusal {
                if caught_up {
                    return Err(refusal);
                }
                continue;
            }
            if let Some(Wrote { version, head_hash, checkpoint }) =
                self.append(battle_id, &mut view, Some(head), vec![(event.clone(), key.clone())]).await?
            {
                return Ok(EventResponse {
                    checkpoint,
                    version,
                    event: Some(BattleEvent { event: Some(event) }),
                    permalink: self.permalink(battle_id, version),
                    head_hash,
                    post: None,
                });
            }
        }
        Err(busy(battle_id, format!("battle {battle_id} is too busy; retry with the same request_id")))
    }
}

#[tonic::async_trait]
impl Resolver for ResolverService {
    async fn open_battle(&self, request: Request<OpenBattleRequest>) -> Result<Response<OpenBattleResponse>, Status> {
        let caller = authorize(&request, "OpenBattle", rights::FORUM)?;
        let request = request.into_inner();
        let format = post::format(request.post_format)?;
        validate::request_id(&request.request_id, MAX_REQUEST_ID_BYTES)?;
        // A generated id is keyed with the resolver's secret over the tenant
        // and the request id: a retried OpenBattle finds the battle its first
        // attempt opened, and no other tenant can know the id beforehand.
        // Ids of that form are never taken explicitly (crate::battle_id).
        let battle_id = if request.battle_id.is_empty() {
            self.battle_ids.battle_id(&caller.tenant, &request.request_id)
        } else if battle_id::is_generated_form(&request.battle_id) {
            return Err(invalid_argument(
                "battle_id",
                "ids of the form b-<32 hex digits> are the ones the resolver generates; leave battle_id empty \
                 to get one, or choose another",
            ));
        } else {
            request.battle_id.clone()
        };
        validate::battle_id(&battle_id)?;
        validate::line("title", &request.title, MAX_TEXT_BYTES)?;
        validate::line("forum_ref", &request.forum_ref, MAX_TEXT_BYTES)?;
        validate::line("client_seed", &request.client_seed, MAX_CLIENT_SEED_BYTES)?;
        let ruleset: RulesetId =
            request.ruleset.parse().map_err(|e: rules::RulesetError| invalid_argument("ruleset", e.to_string()))?;
        if request.participants.is_empty() || request.participants.len() > MAX_PARTICIPANTS {
            return Err(invalid_argument("participants", format!("must list 1 to {MAX_PARTICIPANTS} participants")));
        }
        let mut sheets = Vec::new();
        for (i, participant) in request.participants.iter().enumerate() {
            let field = format!("participants[{i}]");
            let json = json_of(&field, Some(participant))?;
            sheets.push(rules::read::participant(json).map_err(|e| unreadable(&field, e))?);
        }
        for (i, sheet) in sheets.iter().enumerate() {
            // A participant's id becomes the roller's `actor`: the same limit.
            validate::line(&format!("participants[{i}].id"), &sheet.id, MAX_ACTOR_BYTES)?;
        }
        Battle::new(ruleset, sheets.clone()).map_err(|e| sheets_refused(&sheets, &e))?;

        let mut view = self.views.lock(&battle_id).await;
        // A cached battle knows its version 0, which is all an open needs.
        if view.next_version() == 0 {
            self.catch_up(&battle_id, &mut view).await?;
        }
        let key = open_key(&request.request_id);
        let mut appended: Option<(BattleOpened, String)> = None;
        if view.head().is_none() {
            let commitment = self
                .roller
                .clone()
                .commitment(CommitmentRequest { battle_id: battle_id.clone(), epoch: 0 })
                .await
                .map_err(|s| downstream("roller", s))?
                .into_inner();
            let opened = BattleOpened {
                ruleset: ruleset.to_string(),
                title: request.title,
                forum_ref: request.forum_ref,
                participants: sheets.iter().map(to_struct).collect::<Result<_, _>>()?,
                client_seed: request.client_seed.clone(),
                commitment: commitment.commitment,
                tenant: caller.tenant.clone(),
                // The roller's signature travels with its commitment, so
                // that an audit can tell it from one anybody else journaled.
                commitment_signature: commitment.commitment_signature,
                roller_key: commitment.roller_key,
                credential: Some(credential(&caller)),
            };
            let event = (Event::BattleOpened(opened.clone()), key.clone());
            if let Some(Wrote { head_hash, .. }) = self.append(&battle_id, &mut view, None, vec![event]).await? {
                appended = Some((opened, head_hash));
            } else {
                debug!(battle_id, "the battle was opened meanwhile");
                self.catch_up(&battle_id, &mut view).await?;
            }
        }
        match (view.keys.get(&key).copied(), view.tenant.clone()) {
            // Another tenant's battle under the same id: it exists (the id
            // was given explicitly), but nothing more of it is told.
            (_, Some(tenant)) if !caller.owns(&tenant) => {
                Err(Error::new(BattleReason::BattleExists, format!("battle {battle_id} already exists"))
                    .with("battle_id", &battle_id)
                    .into_status())
            }
            (Some(0), Some(_)) => {
                let (opened, head_hash) = match appended {
                    Some(appended) => appended,
                    None => self.recorded_opening(&battle_id).await?,
                };
                if opened.ruleset != ruleset.to_string()
                    || opened.participants != sheets.iter().map(to_struct).collect::<Result<Vec<_>, _>>()?
                    || opened.client_seed != request.client_seed
                {
                    return Err(key_reused(format!(
                        "request_id {} already opened battle {battle_id} with other settings",
                        request.request_id
                    )));
                }
                let permalink = self.permalink(&battle_id, 0);
                let reply = OpenBattleResponse { battle_id, opened: Some(opened), permalink, head_hash, post: None };
                Ok(Response::new(post::opened(format, reply)))
            }
            _ => Err(Error::new(BattleReason::BattleExists, format!("battle {battle_id} already exists"))
                .with("battle_id", &battle_id)
                .into_status()),
        }
    }

    async fn act(&self, request: Request<ActRequest>) -> Result<Response<ActResponse>, Status> {
        async move {
        let caller = authorize(&request, "Act", rights::FORUM)?;
        let request = request.into_inner();
        let format = post::format(request.post_format)?;
        validate::battle_id(&request.battle_id)?;
        validate::request_id(&request.request_id, MAX_REQUEST_ID_BYTES)?;
        let action_json = json_of("action", request.action.as_ref())?;
        let action: Action = rules::read::action(action_json.clone()).map_err(|e| unreadable("action", e))?;
        if matches!(action.kind(), ActionKind::Ruling | ActionKind::Dispute) {
            return Err(invalid_argument("action", "rulings and disputes have their own calls, Rule and Dispute"));
        }
        if let Action::Roll(roll) = &action {
            let expression = dice::Expression::parse(&roll.expression)
                .map_err(|e| invalid_argument("action.expression", e.to_string()))?;
            // Checked here, before any die is drawn: a roll the roller took
            // must always find room for its resolution in the journal.
            if expression.max_dice() > MAX_DICE_PER_REQUEST {
                return Err(invalid_argument(
                    "action.expression",
                    format!(
                        "may draw up to {} dice (rerolls and explosions included); the limit is {MAX_DICE_PER_REQUEST} per action",
                        expression.max_dice()
                    ),
                ));
            }
            validate::line("action.purpose", &roll.purpose, MAX_PURPOSE_BYTES)?;
            validate::line("action.actor", &roll.actor, MAX_ACTOR_BYTES)?;
        }
        let battle_id = request.battle_id.as_str();
        let key = act_key(&request.request_id);
        let normalized = to_struct(&action)?;
        let mut view = self.views.lock(battle_id).await;
        // A warm view is not read again: the expected versions of the roll
        // and of the resolution catch a stale one. A refusal is only
        // answered from a view read in this request.
        let mut read = view.next_version() == 0;
        let mut caught_up = false;
        for _ in 0..MAX_ATTEMPTS {
            if read {
                self.catch_up(battle_id, &mut view).await?;
                caught_up = true;
            }
            read = true;
            if let Some(&version) = view.keys.get(&key) {
                check_owner(battle_id, &view, &caller)?;
                return self
                    .replay_act(battle_id, &view, version, &normalized, &request.request_id)
                    .await
                    .map(|reply| Response::new(post::acted(format, reply)));
            }
            let refusal = match (check_owner(battle_id, &view, &caller), view.rules.as_ref()) {
                (Err(status), _) => Err(status),
                (Ok(()), None) => Err(not_found(battle_id)),
                (Ok(()), Some(_)) if view.closed() => Err(Error::battle_closed(battle_id).into_status()),
                // The rules speak before any die is drawn.
                (Ok(()), Some(rules)) => rules.dice_needed(&action).map_err(|e| rejected(battle_id, &e.into())),
            };
            let needed = match refusal {
                Ok(needed) => needed,
                Err(status) if caught_up => return Err(status),
                Err(_) => continue,
            };
            let Some(head) = view.head() else {
                return Err(internal("the battle stream vanished"));
            };
            let specs: Vec<RollSpec> = match &needed {
                rules::DiceRequest::Rolls(rolls) => rolls
                    .iter()
                    .map(|r| RollSpec { expression: r.expression(), purpose: r.purpose.to_owned() })
                    .collect(),
                rules::DiceRequest::Expression(expression) => vec![RollSpec {
                    expression: expression.clone(),
                    purpose: action_json.get("purpose").and_then(Value::as_str).unwrap_or_default().to_owned(),
                }],
            };
            let mut nonces = Vec::new();
            let mut faces = Vec::new();
            let mut rolls = Vec::new();
            if !specs.is_empty() {
                let roll = RollRequest {
                    battle_id: battle_id.to_owned(),
                    rolls: specs.clone(),
                    actor: actor_of(&action_json),
                    request_id: key.clone(),
                    // The roller rolls at the head this view knows, without
                    // reading the stream; a stale head comes back as a conflict.
                    expected_head: Some(StreamHead {
                        version: head,
                        next_nonce: view.next_nonce(),
                        epoch: view.stream.epoch,
                    }),
                };
                let rolled = match self.roller.clone().roll(roll).instrument(tracing::debug_span!("resolver.roll")).await {
                    Ok(rolled) => rolled.into_inner(),
                    Err(status) if StreamError::is_conflict_status(&status) => continue,
                    Err(status) => return Err(downstream("roller", status)),
                };
                for (spec, recorded) in specs.iter().zip(&rolled.rolls) {
                    let roll = recorded.roll.as_ref().ok_or_else(|| internal("roller sent a roll without dice"))?;
                    if roll.expression != spec.expression {
                        // Only possible when another replica changed the
                        // battle between this request's roll and its retry.
                        return Err(busy(
                            battle_id,
                            format!(
                                "the dice recorded for request {} ({}) no longer fit the action ({})",
                                request.request_id, roll.expression, spec.expression
                            ),
                        ));
                    }
                    let expression = dice::Expression::parse(&roll.expression).map_err(|e| internal(e.to_string()))?;
                    let dice: Vec<dice::Die> = roll.dice.iter().map(die_from_proto).collect();
                    faces.extend(dice::raw_faces(&expression, &dice));
                    nonces.push(roll.nonce);
                }
                if rolled_after(head, &rolled, specs.len()) {
                    for recorded in &rolled.rolls {
                        if let Some(roll) = &recorded.roll {
                            Self::fold_own(
                                battle_id,
                                &mut view,
                                recorded.version,
                                // The roller's reply carries no commit time;
                                // a view keeps only the close's.
                                0,
                                &Event::DiceRolled(roll.clone()),
                                "",
                            );
                        }
                    }
                    if view.next_version() == 0 {
                        // They did not fold and the view was dropped: read
                        // the battle afresh; the roll replays under its key.
                        continue;
                    }
                } else {
                    // Rolled before (a retry), elsewhere in the stream: read
                    // what it holds now; another replica may even have
                    // resolved this very request meanwhile.
                    self.catch_up(battle_id, &mut view).await?;
                    caught_up = true;
                    if let Some(&version) = view.keys.get(&key) {
                        return self
                            .replay_act(battle_id, &view, version, &normalized, &request.request_id)
                            .await
                            .map(|reply| Response::new(post::acted(format, reply)));
                    }
                }
                rolls = rolled.rolls;
            }
            let (Some(head), Some(rules)) = (view.head(), view.rules.clone()) else {
                return Err(internal("the battle stream vanished"));
            };
            let resolution = rules.resolve(head + 1, &action, &faces).map_err(|e| rejected(battle_id, &e))?;
            let resolved = ActionResolved {
                action: Some(normalized.clone()),
                rolls: nonces,
                outcome: Some(to_struct(&resolution.outcome)?),
                summary_ru: resolution.summary.ru,
                summary_en: resolution.summary.en,
                credential: Some(credential(&caller)),
            };
            // `None`: another writer got in first, or another replica took
            // this request's key; either way the next round catches up and
            // looks again.
            let event = (Event::ActionResolved(resolved.clone()), key.clone());
            // The resolution is the last record an action writes: its hash,
            // from the journal's acknowledgement, is the new head.
            if let Some(Wrote { version, head_hash, checkpoint }) = self
                .append(battle_id, &mut view, Some(head), vec![event])
                .instrument(tracing::debug_span!("resolver.append"))
                .await?
            {
                self.metrics.resolved(rules.ruleset().to_string());
                let reply = ActResponse {
                    checkpoint,
                    outcome_json: json_text(resolved.outcome.as_ref()),
                    resolved: Some(resolved),
                    version,
                    rolls,
                    permalink: self.permalink(battle_id, version),
                    head_hash,
                    post: None,
                };
                return Ok(Response::new(post::acted(format, reply)));
            }
        }
        Err(busy(battle_id, format!("battle {battle_id} is too busy; retry with the same request_id")))
        }
        .instrument(tracing::debug_span!("resolver.act"))
        .await
    }

    async fn dispute(&self, request: Request<DisputeRequest>) -> Result<Response<EventResponse>, Status> {
        let caller = authorize(&request, "Dispute", rights::FORUM)?;
        let request = request.into_inner();
        let format = post::format(request.post_format)?;
        validate::battle_id(&request.battle_id)?;
        validate::request_id(&request.request_id, MAX_REQUEST_ID_BYTES)?;
        validate::line("by", &request.by, MAX_TEXT_BYTES)?;
        validate::text("reason", &request.reason, MAX_TEXT_BYTES)?;
        let dispute = DisputeRaised {
            by: request.by,
            refers_to: request.refers_to,
            reason: request.reason,
            credential: Some(credential(&caller)),
        };
        let action = dispute_action(&dispute);
        let key = dispute_key(&request.request_id);
        let reply = self
            .append_checked(
                &caller,
                &request.battle_id,
                &request.request_id,
                key,
                Some(action),
                Event::DisputeRaised(dispute),
            )
            .await?;
        Ok(Response::new(post::event(format, reply, None)))
    }

    async fn rule(&self, request: Request<RuleRequest>) -> Result<Response<EventResponse>, Status> {
        let caller = authorize(&request, "Rule", rights::JUDGE)?;
        let request = request.into_inner();
        let format = post::format(request.post_format)?;
        validate::battle_id(&request.battle_id)?;
        validate::request_id(&request.request_id, MAX_REQUEST_ID_BYTES)?;
        validate::line("judge", &request.judge, MAX_TEXT_BYTES)?;
        // The judge is who the token says; the old free-text field may only
        // repeat it.
        if !request.judge.is_empty() && request.judge != caller.subject {
            return Err(invalid_argument(
                "judge",
                format!("is {:?}, but this token's subject is {:?}; leave judge empty", request.judge, caller.subject),
            ));
        }
        validate::text("text", &request.text, MAX_TEXT_BYTES)?;
        if let Some(replacement) = &request.r#override {
            json_of("override", Some(replacement))?;
        }
        let ruling = JudgeRuling {
            judge: caller.subject.clone(),
            refers_to: request.refers_to,
            text: request.text,
            r#override: request.r#override,
            credential: Some(credential(&caller)),
        };
        let action = ruling_action(&ruling);
        let key = rule_key(&request.request_id);
        let reply = self
            .append_checked(
                &caller,
                &request.battle_id,
                &request.request_id,
                key,
                Some(action),
                Event::JudgeRuling(ruling),
            )
            .await?;
        Ok(Response::new(post::event(format, reply, None)))
    }

    async fn close(&self, request: Request<CloseRequest>) -> Result<Response<EventResponse>, Status> {
        let caller = authorize(&request, "Close", rights::CLOSE)?;
        let request = request.into_inner();
        let format = post::format(request.post_format)?;
        validate::battle_id(&request.battle_id)?;
        validate::request_id(&request.request_id, MAX_REQUEST_ID_BYTES)?;
        validate::line("by", &request.by, MAX_TEXT_BYTES)?;
        validate::text("reason", &request.reason, MAX_TEXT_BYTES)?;
        let battle_id = request.battle_id.as_str();
        let key = close_key(&request.request_id);
        let event = Event::BattleClosed(BattleClosed {
            by: request.by,
            reason: request.reason,
            credential: Some(credential(&caller)),
        });
        let view = self.opened_view(battle_id, &Reach::Tenant(&caller)).await?;
        // Close first, so that no action slips in; then reveal. A retry after
        // a crash between the two finds the close and goes on to reveal.
        let mut closed = match (view.keys.get(&key), view.closed_at) {
            (Some(&version), _) => {
                let recorded = self.recorded_event(battle_id, version).await?;
                let checkpoint = self.newest_checkpoint().await;
                replay_event(
                    recorded,
                    version,
                    &event,
                    &request.request_id,
                    self.permalink(battle_id, version),
                    checkpoint,
                )?
            }
            // Closed by another request, which may have died before its
            // reveal: answer with that close and make sure of the reveal.
            (None, Some(version)) => EventResponse {
                checkpoint: self.newest_checkpoint().await,
                version,
                event: self.recorded_event(battle_id, version).await?.map(|e| BattleEvent { event: Some(e.event) }),
                permalink: self.permalink(battle_id, version),
                // Set below, from the reveal.
                head_hash: String::new(),
                post: None,
            },
            (None, None) => {
                self.append_checked(&caller, battle_id, &request.request_id, key.clone(), None, event).await?
            }
        };
        let reveal = RevealRequest {
            battle_id: battle_id.to_owned(),
            closing: true,
            request_id: key,
            requested_by: Some(credential(&caller)),
        };
        // The close's last record is the SeedRevealed after the BattleClosed:
        // its hash is the head the reply gives.
        let (head_hash, revealed, head_version) = match self.roller.clone().reveal(reveal).await {
            Ok(revealed) => {
                let version = revealed.into_inner().version;
                match self.recorded_event(battle_id, version).await? {
                    Some(Journaled { event: Event::SeedRevealed(revealed), hash }) => (hash, revealed, version),
                    _ => return Err(internal(format!("roller: version {version} is not its SeedRevealed"))),
                }
            }
            // Revealed already (by another close that got there first, or a
            // judge's reveal that raced this close): its reveal is the head.
            Err(status)
                if Error::from_status(&status).is_some_and(|e| e.reason == JournalReason::EpochRevealed.into()) =>
            {
                self.closing_reveal(battle_id, closed.version).await?
            }
            Err(status) => return Err(downstream("roller", status)),
        };
        closed.head_hash = head_hash;
        Ok(Response::new(post::event(format, closed, Some((&revealed, head_version)))))
    }

    async fn get_battle(&self, request: Request<GetBattleRequest>) -> Result<Response<GetBattleResponse>, Status> {
        let caller = authorize(&request, "GetBattle", rights::READ)?;
        let reach = self.reach(&request, &request.get_ref().battle_id, &caller);
        let request = request.into_inner();
        validate::battle_id(&request.battle_id)?;
        let view = self.opened_view(&request.battle_id, &reach).await?;
        let head = view.head().unwrap_or_default();
        let view = match request.at_version {
            Some(version) if version > head => {
                return Err(Error::new(
                    BattleReason::VersionPastHead,
                    format!("at_version {version} is past the head version {head}"),
                )
                .with("field", "at_version")
                .with("head_version", head)
                .into_status());
            }
            Some(version) if version < head => self.view_as_of(&request.battle_id, version).await?,
            _ => view,
        };
        let rules = view.rules.as_ref().ok_or_else(|| internal("an opened battle without rules"))?;
        let state = state_struct(rules.state())?;
        Ok(Response::new(GetBattleResponse {
            state_json: json_text(Some(&state)),
            battle_id: request.battle_id,
            ruleset: rules.ruleset().to_string(),
            version: view.head().unwrap_or_default(),
            state: Some(state),
            closed: view.closed(),
            next_nonce: view.next_nonce(),
            epoch: view.stream.epoch,
            // The view as of `at_version`: before the close, no deadline yet.
            appeal_deadline_unix_micros: view.appeal_ends_unix_micros(self.appeal_window),
        }))
    }

    async fn audit(&self, request: Request<AuditRequest>) -> Result<Response<AuditResponse>, Status> {
        let caller = authorize(&request, "Audit", rights::READ)?;
        let reach = self.reach(&request, &request.get_ref().battle_id, &caller);
        let request = request.into_inner();
        validate::battle_id(&request.battle_id)?;
        self.check_reach_in_journal(&request.battle_id, &reach).await?;
        let recorded = self.streams.recorded(&request.battle_id, 0).await.map_err(StreamError::into_status)?;
        let lines: Vec<AuditedRecord> =
            recorded.into_iter().map(|e| AuditedRecord::from_recorded(&request.battle_id, e)).collect();
        let Some(head_hash) = lines.last().map(|line| hex::encode(&line.hash)) else {
            return Err(not_found(&request.battle_id));
        };
        // Hold the battle to the key of the roller we work with: a
        // commitment signed by any other key is not our roller's.
        let roller_key = self
            .roller
            .clone()
            .commitment(CommitmentRequest { battle_id: request.battle_id.clone(), epoch: 0 })
            .await
            .map_err(|s| downstream("roller", s))?
            .into_inner()
            .roller_key;
        let roller_key =
            dice::RollerKey::from_bytes(&roller_key).map_err(|e| internal(format!("roller: its roller_key: {e}")))?;
        let report = audit_with_roller_key(&request.battle_id, &lines, Some(&roller_key));
        // Listed until the reply would pass one page: a forged battle can
        // fail every check, and its verdict must still reach the caller.
        let (ok, total) = (report.ok(), report.findings.len());
        let mut findings = Vec::new();
        let mut listed_bytes = 0;
        for f in report.findings {
            let finding =
                AuditFinding { version: f.version, check: f.check.as_str().to_owned(), message: f.problem.to_string() };
            listed_bytes += prost::Message::encoded_len(&finding) + 8;
            if listed_bytes > MAX_PAGE_BYTES - PAGE_FRAMING_BYTES {
                break;
            }
            findings.push(finding);
        }
        Ok(Response::new(AuditResponse {
            roller_key: report.roller_key.clone().unwrap_or_default(),
            head_hash,
            ok,
            events_checked: report.events,
            findings_omitted: (total - findings.len()) as u64,
            findings,
        }))
    }

    async fn reveal_seed(&self, request: Request<RevealSeedRequest>) -> Result<Response<RevealSeedResponse>, Status> {
        let caller = authorize(&request, "RevealSeed", rights::JUDGE)?;
        let request = request.into_inner();
        validate::battle_id(&request.battle_id)?;
        validate::request_id(&request.request_id, MAX_REQUEST_ID_BYTES)?;
        let battle_id = request.battle_id.as_str();
        let view = self.opened_view(battle_id, &Reach::Tenant(&caller)).await?;
        if view.closed() {
            // Closing revealed (or reveals) the last epoch; there is no next.
            return Err(Error::battle_closed(battle_id).into_status());
        }
        let reveal = RevealRequest {
            battle_id: battle_id.to_owned(),
            closing: false,
            request_id: reveal_key(&request.request_id),
            requested_by: Some(credential(&caller)),
        };
        let revealed = self.roller.clone().reveal(reveal).await.map_err(|s| downstream("roller", s))?.into_inner();
        Ok(Response::new(RevealSeedResponse {
            revealed: revealed.revealed,
            next: revealed.next,
            version: revealed.version,
        }))
    }

    async fn export(&self, request: Request<ExportRequest>) -> Result<Response<ExportResponse>, Status> {
        let caller = authorize(&request, "Export", rights::READ)?;
        let reach = self.reach(&request, &request.get_ref().battle_id, &caller);
        let request = request.into_inner();
        validate::battle_id(&request.battle_id)?;
        self.check_reach_in_journal(&request.battle_id, &reach).await?;
        let page =
            self.streams.page(&request.battle_id, request.from_version, 0).await.map_err(StreamError::into_status)?;
        // Past the head, the journal's signed head is the export's trailer
        // (PROTOCOL.md §5). It is asked for only then, once per export, and
        // attached only when it signs the very head this page ends after: an
        // event appended in between moves the head past `from_version`, and
        // the exporter keeps paging (it gets the new events, then the head).
        let past_head = page.events.is_empty()
            && page.head_version.is_some_and(|head| head.checked_add(1) == Some(request.from_version));
        let signed_head = if past_head {
            let asked = SignedHeadRequest { stream_id: request.battle_id.clone() };
            match self.journal.clone().get_signed_head(asked).await {
                Ok(signed) => {
                    Some(signed.into_inner()).filter(|s| s.version.checked_add(1) == Some(request.from_version))
                }
                // A journal without a transparency log: an export without a
                // trailer, which its audit says verifies only as far as §4.
                Err(status) if status.code() == tonic::Code::Unimplemented => None,
                Err(status) => return Err(downstream("journal", status)),
            }
        } else {
            None
        };
        Ok(Response::new(ExportResponse { events: page.events, signed_head }))
    }

    type WatchStream = std::pin::Pin<Box<dyn tokio_stream::Stream<Item = Result<RecordedEvent, Status>> + Send>>;

    async fn watch(&self, request: Request<WatchRequest>) -> Result<Response<Self::WatchStream>, Status> {
        let caller = authorize(&request, "Watch", rights::READ)?;
        let reach = self.reach(&request, &request.get_ref().battle_id, &caller);
        let connection = battlelog_runtime::edge::remote_addr(&request);
        let timeout = grpc_timeout(request.metadata());
        let request = request.into_inner();
        validate::battle_id(&request.battle_id)?;
        // Counted before anything else, so a refused watch costs nothing.
        let slot = self.watches.admit("Watch", &format!("{}/{}", caller.tenant, caller.subject), connection)?;
        self.check_reach_in_journal(&request.battle_id, &reach).await?;
        let mut subscribe = Request::new(SubscribeStreamRequest {
            stream_id: request.battle_id.clone(),
            from_version: request.from_version,
        });
        // The journal ends its side at the same deadline.
        if let Some(timeout) = timeout {
            subscribe.set_timeout(timeout);
        }
        let events = self
            .journal
            .clone()
            .subscribe_stream(subscribe)
            .await
            .map_err(|s| downstream("journal", s))?
            .into_inner()
            .map(|event| event.map_err(|s| downstream("journal", s)));
        // No task in between: the response owns the journal subscription
        // and the slot, so both go the moment the server drops the response
        // (the watcher reset the call or left), not at the battle's next
        // event; the end below covers what no client leaving would.
        let end = watch_end(self.stopping.subscribe(), caller.expires_at, timeout);
        Ok(Response::new(Box::pin(Ending::new(Box::pin(events), end).holding(slot))))
    }

    /// forum, judge, reader (a service token is refused, as on every
    /// Resolver call): the journal's newest checkpoint and log key.
    async fn get_checkpoint(
        &self,
        request: Request<GetCheckpointRequest>,
    ) -> Result<Response<GetCheckpointResponse>, Status> {
        authorize(&request, "GetCheckpoint", rights::READ)?;
        let reply =
            self.journal.clone().get_checkpoint(GetCheckpointRequest {}).await.map_err(|s| forwarded("journal", s))?;
        Ok(Response::new(reply.into_inner()))
    }

    /// forum, judge, reader (a service token is refused): the journal's
    /// consistency proof between two tree sizes, forwarded as asked.
    async fn get_consistency_proof(
        &self,
        request: Request<ConsistencyProofRequest>,
    ) -> Result<Response<ConsistencyProofResponse>, Status> {
        authorize(&request, "GetConsistencyProof", rights::READ)?;
        let request = request.into_inner();
        if request.new_size != 0 && request.old_size > request.new_size {
            return Err(invalid_argument(
                "old_size",
                format!(
                    "is {}, past new_size {}; a consistency proof runs from the older size",
                    request.old_size, request.new_size
                ),
            ));
        }
        let reply = self.journal.clone().get_consistency_proof(request).await.map_err(|s| forwarded("journal", s))?;
        Ok(Response::new(reply.into_inner()))
    }

    async fn list_rulesets(
        &self,
        request: Request<ListRulesetsRequest>,
    ) -> Result<Response<ListRulesetsResponse>, Status> {
        authorize(&request, "ListRulesets", rights::READ)?;
        Ok(Response::new(ListRulesetsResponse {
            rulesets: RulesetId::ALL.iter().map(ToString::to_string).collect(),
            ruleset_infos: ruleset_infos(),
        }))
    }

    async fn list_battles(
        &self,
        request: Request<battlelog_proto::v1::ListBattlesRequest>,
    ) -> Result<Response<battlelog_proto::v1::ListBattlesResponse>, Status> {
        let caller = authorize(&request, "ListBattles", rights::READ)?;
        let page = crate::listing::list_battles(&self.journal, &caller, request.into_inner(), self.max_list_page_size);
        Ok(Response::new(page.await?))
    }
}
