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
//!
//! This file holds the service's struct, its builders and the `Resolver`
//! impl, which hands each call to the module that answers it:
//!
//! - `act`: `Act` — check, roll, resolve, append.
//! - `commands`: `OpenBattle`, `Dispute`, `Rule`, `Close`.
//! - `optimistic`: the loop `Act`, `Dispute`, `Rule` and `Close` share —
//!   fold, check, (roll,) resolve, append, and on a stale head fold again
//!   and retry.
//! - `reads`: `GetBattle`, `Audit`, `Export`, `Watch`, `RevealSeed`, the
//!   journal's checkpoints and proofs, `ListRulesets`, `ListBattles`.
//! - `access`: [`rights`], the caller, the tenant rule and share links.
//! - `idempotency`: the idempotency keys and the answers to a request seen before.
//! - `stream`: the journal stream underneath — catch up, append and fold
//!   what was appended, read one event back.
//! - `json`: the caller's `Struct`s in, the rules' values out.
//! - `sweep`: the sweeper that finishes pending actions of battles nobody
//!   touches (roll-forward).

mod access;
mod act;
mod commands;
mod idempotency;
mod json;
mod optimistic;
mod reads;
mod stream;
mod sweep;

use std::time::Duration;

use battlelog_auth::{AuthChannel, ShareSecret};
use battlelog_proto::error::Error;
use battlelog_proto::v1::journal_client::JournalClient;
use battlelog_proto::v1::resolver_server::Resolver;
use battlelog_proto::v1::roller_client::RollerClient;
use battlelog_proto::v1::{
    ActRequest, ActResponse, AuditRequest, AuditResponse, CloseRequest, ConsistencyProofRequest,
    ConsistencyProofResponse, DisputeRequest, EventResponse, ExportRequest, ExportResponse, GetBattleRequest,
    GetBattleResponse, GetCheckpointRequest, GetCheckpointResponse, JournalRecord, ListBattlesRequest,
    ListBattlesResponse, ListRulesetsRequest, ListRulesetsResponse, OpenBattleRequest, OpenBattleResponse,
    RevealSeedRequest, RevealSeedResponse, RuleRequest, WatchRequest,
};
use battlelog_runtime::streams::{StreamCaps, StreamLimits};
use battlelog_stream::{DEFAULT_CACHE_BYTES, FoldCache, StreamClient};
use tonic::{Request, Response, Status};
use tracing::{Instrument as _, debug};

use crate::battle_id::BattleIdSecret;
use crate::view::BattleView;

pub use access::rights;
pub(crate) use json::actor_of;
pub use sweep::{DEFAULT_PENDING_SWEEP, PendingSweep};
// The input limits live with every other service's (battlelog_runtime::limits).
pub use battlelog_runtime::limits::resolver::{
    MAX_ACTOR_BYTES, MAX_CLIENT_SEED_BYTES, MAX_JSON_BYTES, MAX_JSON_DEPTH, MAX_PARTICIPANTS, MAX_PURPOSE_BYTES,
    MAX_REQUEST_ID_BYTES, MAX_TEXT_BYTES,
};

/// Open `Watch` streams one token (its subject in its tenant) and one
/// client connection may hold when the configuration names no other limit:
/// enough for a reader following every battle of a busy page, far below
/// what would weigh on the server.
pub const DEFAULT_WATCH_LIMITS: StreamLimits = StreamLimits { per_token: 256, per_connection: 128 };

/// The appeal window of a battle whose configuration names none.
pub const DEFAULT_APPEAL_WINDOW: Duration = Duration::from_secs(14 * 24 * 60 * 60);

/// An invariant of ours failed (battlelog_proto::error, `INTERNAL`).
fn internal(message: impl Into<String>) -> Status {
    Error::internal(message).into_status()
}

/// What the journal holds does not read back as a battle (`DATA_LOSS`).
fn data_loss(message: impl Into<String>) -> Status {
    Error::data_loss(message).into_status()
}

/// The battle web page replies link to.
#[derive(Debug, Clone)]
struct Links {
    /// The web service's public base URL, without a trailing slash.
    web_url: String,
    /// Derives each battle's share key (`?k=`), which the web service checks.
    share: ShareSecret,
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
    /// How the sweeper of pending actions runs.
    sweep: PendingSweep,
    metrics: crate::metrics::ResolverMetrics,
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
            sweep: DEFAULT_PENDING_SWEEP,
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

    /// The same resolver sweeping pending actions as `sweep` says
    /// ([`Self::sweep_pending`]).
    pub fn with_pending_sweep(mut self, sweep: PendingSweep) -> Self {
        self.sweep = sweep;
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

    /// The same resolver sending its appends to the journal within `limits`
    /// (`journal_append_batch`, `journal_append_calls`).
    pub fn with_append_limits(mut self, limits: battlelog_stream::AppendLimits) -> Self {
        self.streams = self.streams.with_append_limits(limits);
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
}

/// Each call answered by its module. The Act bench's breakdown times one
/// `Act` by three `debug` spans: `resolver.act` around the whole handler
/// (here), `resolver.roll` around the call to the roller (in `act`) and
/// `resolver.append` around each call to the journal's `Append` (in
/// `stream`; an `Act` makes one, for its resolution).
#[tonic::async_trait]
impl Resolver for ResolverService {
    async fn open_battle(&self, request: Request<OpenBattleRequest>) -> Result<Response<OpenBattleResponse>, Status> {
        commands::open_battle(self, request).await
    }

    async fn act(&self, request: Request<ActRequest>) -> Result<Response<ActResponse>, Status> {
        act::act(self, request).instrument(tracing::debug_span!("resolver.act")).await
    }

    async fn dispute(&self, request: Request<DisputeRequest>) -> Result<Response<EventResponse>, Status> {
        commands::dispute(self, request).await
    }

    async fn rule(&self, request: Request<RuleRequest>) -> Result<Response<EventResponse>, Status> {
        commands::rule(self, request).await
    }

    async fn close(&self, request: Request<CloseRequest>) -> Result<Response<EventResponse>, Status> {
        commands::close(self, request).await
    }

    async fn get_battle(&self, request: Request<GetBattleRequest>) -> Result<Response<GetBattleResponse>, Status> {
        reads::get_battle(self, request).await
    }

    async fn audit(&self, request: Request<AuditRequest>) -> Result<Response<AuditResponse>, Status> {
        reads::audit(self, request).await
    }

    async fn reveal_seed(&self, request: Request<RevealSeedRequest>) -> Result<Response<RevealSeedResponse>, Status> {
        reads::reveal_seed(self, request).await
    }

    async fn export(&self, request: Request<ExportRequest>) -> Result<Response<ExportResponse>, Status> {
        reads::export(self, request).await
    }

    type WatchStream = reads::WatchStream;

    async fn watch(&self, request: Request<WatchRequest>) -> Result<Response<Self::WatchStream>, Status> {
        reads::watch(self, request).await
    }

    async fn get_checkpoint(
        &self,
        request: Request<GetCheckpointRequest>,
    ) -> Result<Response<GetCheckpointResponse>, Status> {
        reads::get_checkpoint(self, request).await
    }

    async fn get_consistency_proof(
        &self,
        request: Request<ConsistencyProofRequest>,
    ) -> Result<Response<ConsistencyProofResponse>, Status> {
        reads::get_consistency_proof(self, request).await
    }

    async fn list_rulesets(
        &self,
        request: Request<ListRulesetsRequest>,
    ) -> Result<Response<ListRulesetsResponse>, Status> {
        reads::list_rulesets(&request)
    }

    async fn list_battles(
        &self,
        request: Request<ListBattlesRequest>,
    ) -> Result<Response<ListBattlesResponse>, Status> {
        reads::list_battles(self, request).await
    }
}
