//! The reads: `GetBattle`, `Audit`, `Export`, `Watch`, the journal's
//! checkpoints and consistency proofs, `ListRulesets` and `ListBattles`;
//! and `RevealSeed`, a judge's mid-battle reveal, which the roller appends.
//!
//! A read answers what the journal holds now: the view is caught up before
//! it is read (see [`ResolverService::opened_view`]). Audit, export and
//! watch pass the journal's records on as they are, and check only the
//! battle's `BattleOpened`, so that they work on a battle whose later
//! events no longer fold.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use battlelog_auth::{TokenCheck, TokenError};
use battlelog_proto::error::{BattleReason, Error, JournalReason};
use battlelog_proto::v1::{
    AuditFinding, AuditRequest, AuditResponse, CommitmentRequest, ConsistencyProofRequest, ConsistencyProofResponse,
    ExportRequest, ExportResponse, GetBattleRequest, GetBattleResponse, GetCheckpointRequest, GetCheckpointResponse,
    ListBattlesRequest, ListBattlesResponse, ListRulesetsRequest, ListRulesetsResponse, RecordedEvent, RevealRequest,
    RevealSeedRequest, RevealSeedResponse, RulesetInfo, SignedHeadRequest, SubscribeStreamRequest, WatchRequest,
};
use battlelog_runtime::grpc::invalid_argument;
use battlelog_runtime::limits::{MAX_PAGE_BYTES, PAGE_FRAMING_BYTES};
use battlelog_runtime::streams::{Ending, StreamEnd, deadline_exceeded, grpc_timeout};
use battlelog_runtime::validate;
use battlelog_stream::{StreamError, downstream};
use battlelog_verify::audit::{AuditedRecord, audit_with_roller_key};
use rules::RulesetId;
use tokio_stream::StreamExt;
use tonic::{Request, Response, Status};

use super::access::{Reach, authorize, credential, not_found, rights};
use super::idempotency::reveal_key;
use super::json::{json_text, state_struct};
use super::{MAX_REQUEST_ID_BYTES, ResolverService, data_loss, internal};
use crate::view::BattleView;

/// `GetBattle`: the battle's state now, or as it stood at `at_version`.
pub(super) async fn get_battle(
    service: &ResolverService,
    request: Request<GetBattleRequest>,
) -> Result<Response<GetBattleResponse>, Status> {
    let caller = authorize(&request, "GetBattle", rights::READ)?;
    let reach = service.reach(&request, &request.get_ref().battle_id, &caller);
    let request = request.into_inner();
    validate::battle_id(&request.battle_id)?;
    let view = service.opened_view(&request.battle_id, &reach).await?;
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
        Some(version) if version < head => service.view_as_of(&request.battle_id, version).await?,
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
        appeal_deadline_unix_micros: view.appeal_ends_unix_micros(service.appeal_window),
    }))
}

/// `Audit`: the battle's records checked, against the key of the roller
/// this resolver works with.
pub(super) async fn audit(
    service: &ResolverService,
    request: Request<AuditRequest>,
) -> Result<Response<AuditResponse>, Status> {
    let caller = authorize(&request, "Audit", rights::READ)?;
    let reach = service.reach(&request, &request.get_ref().battle_id, &caller);
    let request = request.into_inner();
    validate::battle_id(&request.battle_id)?;
    service.check_reach_in_journal(&request.battle_id, &reach).await?;
    let recorded = service.streams.recorded(&request.battle_id, 0).await.map_err(StreamError::into_status)?;
    let lines: Vec<AuditedRecord> =
        recorded.into_iter().map(|e| AuditedRecord::from_recorded(&request.battle_id, e)).collect();
    let Some(head_hash) = lines.last().map(|line| hex::encode(&line.hash)) else {
        return Err(not_found(&request.battle_id));
    };
    // Hold the battle to the key of the roller we work with: a
    // commitment signed by any other key is not our roller's.
    let roller_key = service
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

/// `RevealSeed`: a judge has the roller reveal the current epoch's seed
/// mid-battle (and commit to the next).
pub(super) async fn reveal_seed(
    service: &ResolverService,
    request: Request<RevealSeedRequest>,
) -> Result<Response<RevealSeedResponse>, Status> {
    let caller = authorize(&request, "RevealSeed", rights::JUDGE)?;
    let request = request.into_inner();
    validate::battle_id(&request.battle_id)?;
    validate::request_id(&request.request_id, MAX_REQUEST_ID_BYTES)?;
    let battle_id = request.battle_id.as_str();
    let view = service.opened_view(battle_id, &Reach::Tenant(&caller)).await?;
    if view.closed() {
        // Closing revealed (or reveals) the last epoch; there is no next.
        return Err(Error::battle_closed(battle_id).into_status());
    }
    // A seed revealed over a pending action would let its dice be known
    // before it is resolved; the journal refuses it, so finish it first.
    if view.pending.is_some() {
        service.finish_pending(battle_id).await?;
    }
    let reveal = RevealRequest {
        battle_id: battle_id.to_owned(),
        closing: false,
        request_id: reveal_key(&request.request_id),
        requested_by: Some(credential(&caller)),
    };
    let revealed = service.roller.clone().reveal(reveal).await.map_err(|s| downstream("roller", s))?.into_inner();
    Ok(Response::new(RevealSeedResponse {
        revealed: revealed.revealed,
        next: revealed.next,
        version: revealed.version,
    }))
}

/// `Export`: one page of the battle's records as the journal holds them,
/// and past the head, the journal's signed head.
pub(super) async fn export(
    service: &ResolverService,
    request: Request<ExportRequest>,
) -> Result<Response<ExportResponse>, Status> {
    let caller = authorize(&request, "Export", rights::READ)?;
    let reach = service.reach(&request, &request.get_ref().battle_id, &caller);
    let request = request.into_inner();
    validate::battle_id(&request.battle_id)?;
    service.check_reach_in_journal(&request.battle_id, &reach).await?;
    let page =
        service.streams.page(&request.battle_id, request.from_version, 0).await.map_err(StreamError::into_status)?;
    // Past the head, the journal's signed head is the export's trailer
    // (docs/protocol.md §5). It is asked for only then, once per export, and
    // attached only when it signs the very head this page ends after: an
    // event appended in between moves the head past `from_version`, and
    // the exporter keeps paging (it gets the new events, then the head).
    let past_head = page.events.is_empty()
        && page.head_version.is_some_and(|head| head.checked_add(1) == Some(request.from_version));
    let signed_head = if past_head {
        let asked = SignedHeadRequest { stream_id: request.battle_id.clone() };
        match service.journal.clone().get_signed_head(asked).await {
            Ok(signed) => Some(signed.into_inner()).filter(|s| s.version.checked_add(1) == Some(request.from_version)),
            // A journal without a transparency log: an export without a
            // trailer, which its audit says verifies only as far as §4.
            Err(status) if status.code() == tonic::Code::Unimplemented => None,
            // A journal whose store is behind its last signed checkpoint
            // signs nothing, yet the records it holds are still shown: an
            // export without a trailer, which no audit takes for a proved one.
            Err(status)
                if Error::from_status(&status)
                    .is_some_and(|e| e.reason == JournalReason::StoreBehindCheckpoint.into()) =>
            {
                None
            }
            Err(status) => return Err(downstream("journal", status)),
        }
    } else {
        None
    };
    Ok(Response::new(ExportResponse { events: page.events, signed_head }))
}

/// What `Watch` answers: the battle's records as the journal appends them.
pub(super) type WatchStream = std::pin::Pin<Box<dyn tokio_stream::Stream<Item = Result<RecordedEvent, Status>> + Send>>;

/// `Watch`: the journal's subscription to the battle, passed on.
pub(super) async fn watch(
    service: &ResolverService,
    request: Request<WatchRequest>,
) -> Result<Response<WatchStream>, Status> {
    let caller = authorize(&request, "Watch", rights::READ)?;
    let token = request.extensions().get::<TokenCheck>().cloned();
    let reach = service.reach(&request, &request.get_ref().battle_id, &caller);
    let connection = battlelog_runtime::edge::remote_addr(&request);
    let timeout = grpc_timeout(request.metadata());
    let request = request.into_inner();
    validate::battle_id(&request.battle_id)?;
    // Counted before anything else, so a refused watch costs nothing.
    let slot = service.watches.admit("Watch", &format!("{}/{}", caller.tenant, caller.subject), connection)?;
    service.check_reach_in_journal(&request.battle_id, &reach).await?;
    let mut subscribe = Request::new(SubscribeStreamRequest {
        stream_id: request.battle_id.clone(),
        from_version: request.from_version,
    });
    // The journal ends its side at the same deadline.
    if let Some(timeout) = timeout {
        subscribe.set_timeout(timeout);
    }
    let events = service
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
    let end = watch_end(service.stopping.subscribe(), caller.expires_at, token, timeout);
    Ok(Response::new(Box::pin(Ending::new(Box::pin(events), end).holding(slot))))
}

/// What ends a `Watch` that its watcher does not: the server shutting down
/// (a graceful shutdown must not wait for open watches), its token's expiry
/// (`UNAUTHENTICATED`, reason `TOKEN_EXPIRED`, as a token expired at the
/// door), its token's revocation (`TOKEN_REVOKED`: checked again as often
/// as the revocation list is reloaded, `revoked_tokens_reload_ms`), or the
/// call's deadline.
fn watch_end(
    mut stopping: tokio::sync::watch::Receiver<bool>,
    expires_at: u64,
    token: Option<TokenCheck>,
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
        let revoked = async {
            let Some((token, every)) = token.and_then(|t| t.every().map(|every| (t, every))) else {
                return std::future::pending().await;
            };
            let mut ticks = tokio::time::interval(every);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                if let Err(refused @ TokenError::Revoked { .. }) = token.check() {
                    return refused;
                }
            }
        };
        tokio::select! {
            () = async { stopping.wait_for(|stop| *stop).await.map_or((), |_| ()) } => None,
            () = tokio::time::sleep(expires_in) => Some(Status::from(TokenError::Expired { exp: expires_at })),
            refused = revoked => Some(Status::from(refused)),
            () = deadline => Some(deadline_exceeded("Watch", timeout.unwrap_or_default())),
        }
    })
}

/// forum, judge, reader (a service token is refused, as on every
/// Resolver call): the journal's newest checkpoint and log key.
pub(super) async fn get_checkpoint(
    service: &ResolverService,
    request: Request<GetCheckpointRequest>,
) -> Result<Response<GetCheckpointResponse>, Status> {
    authorize(&request, "GetCheckpoint", rights::READ)?;
    let reply =
        service.journal.clone().get_checkpoint(GetCheckpointRequest {}).await.map_err(|s| forwarded("journal", s))?;
    Ok(Response::new(reply.into_inner()))
}

/// forum, judge, reader (a service token is refused): the journal's
/// consistency proof between two tree sizes, forwarded as asked.
pub(super) async fn get_consistency_proof(
    service: &ResolverService,
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
    let reply = service.journal.clone().get_consistency_proof(request).await.map_err(|s| forwarded("journal", s))?;
    Ok(Response::new(reply.into_inner()))
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

/// `ListRulesets`: every ruleset with its schemas.
pub(super) fn list_rulesets(request: &Request<ListRulesetsRequest>) -> Result<Response<ListRulesetsResponse>, Status> {
    authorize(request, "ListRulesets", rights::READ)?;
    Ok(Response::new(ListRulesetsResponse {
        rulesets: RulesetId::ALL.iter().map(ToString::to_string).collect(),
        ruleset_infos: ruleset_infos(),
    }))
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

/// `ListBattles`: a page of the caller's tenant's battles (`crate::listing`).
pub(super) async fn list_battles(
    service: &ResolverService,
    request: Request<ListBattlesRequest>,
) -> Result<Response<ListBattlesResponse>, Status> {
    let caller = authorize(&request, "ListBattles", rights::READ)?;
    // Derived per page (one HMAC): the page tokens' key is the battle id
    // secret's, which every replica holds.
    let key = crate::listing::PageTokenKey::derived_from(&service.battle_ids);
    let page =
        crate::listing::list_battles(&service.journal, &caller, request.into_inner(), service.max_list_page_size, &key);
    Ok(Response::new(page.await?))
}

impl ResolverService {
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
}
