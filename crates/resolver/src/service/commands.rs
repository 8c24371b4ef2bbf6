//! The commands but `Act` (`super::act`): `OpenBattle`, `Dispute`, `Rule`
//! and `Close`.
//!
//! Each is checked against the rules before anything is appended, and
//! appended with the stream's exact expected version. A dispute, a ruling
//! and a close are each a [`Checked`] event, an optimistic command
//! (`super::optimistic`) as an `Act` is. The open's one race, another open
//! of the same battle, needs no loop: whoever lost reads the winner's.

use std::time::{SystemTime, UNIX_EPOCH};

use battlelog_auth::Caller;
use battlelog_proto::error::{BattleReason, Error, JournalReason};
use battlelog_proto::v1::battle_event::Event;
use battlelog_proto::v1::{
    BattleClosed, BattleEvent, BattleOpened, CloseRequest, CommitmentRequest, DisputeRaised, DisputeRequest,
    EventResponse, JudgeRuling, OpenBattleRequest, OpenBattleResponse, RevealRequest, RuleRequest, SeedRevealed,
};
use battlelog_runtime::grpc::invalid_argument;
use battlelog_runtime::validate;
use battlelog_stream::{StreamError, downstream};
use rules::{Action, Battle, RulesetId};
use tonic::{Request, Response, Status};
use tracing::debug;

use super::access::{Reach, authorize, check_owner, credential, not_found, rights};
use super::idempotency::{close_key, dispute_key, key_reused, open_key, replay_event, rule_key};
use super::json::{json_of, sheets_refused, to_struct, unreadable};
use super::optimistic::{Command, Try, Trying};
use super::stream::{Journaled, Wrote, journaled};
use super::{
    MAX_ACTOR_BYTES, MAX_CLIENT_SEED_BYTES, MAX_PARTICIPANTS, MAX_REQUEST_ID_BYTES, MAX_TEXT_BYTES, ResolverService,
    data_loss, internal,
};
use crate::battle_id;
use crate::post;
use crate::view::{BattleView, dispute_action, ruling_action};

/// `OpenBattle`: a battle's `BattleOpened`, with the roller's commitment to
/// its first seed.
pub(super) async fn open_battle(
    service: &ResolverService,
    request: Request<OpenBattleRequest>,
) -> Result<Response<OpenBattleResponse>, Status> {
    let caller = authorize(&request, "OpenBattle", rights::FORUM)?;
    let request = request.into_inner();
    let format = post::format(request.post_format)?;
    validate::request_id(&request.request_id, MAX_REQUEST_ID_BYTES)?;
    let battle_id = opened_battle_id(service, &caller, &request)?;
    let (ruleset, sheets) = read_opening(&request)?;

    let mut view = service.views.lock(&battle_id).await;
    // A cached battle knows its version 0, which is all an open needs.
    if view.next_version() == 0 {
        service.catch_up(&battle_id, &mut view).await?;
    }
    let key = open_key(&request.request_id);
    let opening = Opening { caller: &caller, request: &request, ruleset, sheets: &sheets, key: &key };
    let appended =
        if view.head().is_none() { append_opening(service, &battle_id, &mut view, &opening).await? } else { None };
    match (view.keys.get(&key).copied(), view.tenant.clone()) {
        // Another tenant's battle under the same id: it exists (the id
        // was given explicitly), but nothing more of it is told.
        (_, Some(tenant)) if !caller.owns(&tenant) => Err(battle_exists(&battle_id)),
        (Some(0), Some(_)) => {
            let (opened, head_hash) = match appended {
                Some(appended) => appended,
                None => service.recorded_opening(&battle_id).await?,
            };
            check_same_opening(&opening, &opened, &battle_id)?;
            let permalink = service.permalink(&battle_id, 0);
            let reply = OpenBattleResponse { battle_id, opened: Some(opened), permalink, head_hash, post: None };
            Ok(Response::new(post::opened(format, reply)))
        }
        _ => Err(battle_exists(&battle_id)),
    }
}

/// The battle an `OpenBattle` opens: the one it names, or one generated.
fn opened_battle_id(service: &ResolverService, caller: &Caller, request: &OpenBattleRequest) -> Result<String, Status> {
    // A generated id is keyed with the resolver's secret over the tenant
    // and the request id: a retried OpenBattle finds the battle its first
    // attempt opened, and no other tenant can know the id beforehand.
    // Ids of that form are never taken explicitly (crate::battle_id).
    let battle_id = if request.battle_id.is_empty() {
        service.battle_ids.battle_id(&caller.tenant, &request.request_id)
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
    Ok(battle_id)
}

/// An `OpenBattle`'s fields checked, its ruleset and its participants'
/// sheets read, and the battle they make accepted by the rules.
fn read_opening(request: &OpenBattleRequest) -> Result<(RulesetId, Vec<rules::Participant>), Status> {
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
    Ok((ruleset, sheets))
}

/// What an `OpenBattle` asks for, read and checked.
struct Opening<'a> {
    caller: &'a Caller,
    request: &'a OpenBattleRequest,
    ruleset: RulesetId,
    sheets: &'a [rules::Participant],
    key: &'a str,
}

/// Appends the `BattleOpened` with the roller's commitment to epoch 0; what
/// was appended and its head hash, or `None` when another open won the race
/// (the view then caught up with it).
async fn append_opening(
    service: &ResolverService,
    battle_id: &str,
    view: &mut BattleView,
    opening: &Opening<'_>,
) -> Result<Option<(BattleOpened, String)>, Status> {
    let commitment = service
        .roller
        .clone()
        .commitment(CommitmentRequest { battle_id: battle_id.to_owned(), epoch: 0 })
        .await
        .map_err(|s| downstream("roller", s))?
        .into_inner();
    let request = opening.request;
    let opened = BattleOpened {
        ruleset: opening.ruleset.to_string(),
        title: request.title.clone(),
        forum_ref: request.forum_ref.clone(),
        participants: opening.sheets.iter().map(to_struct).collect::<Result<_, _>>()?,
        client_seed: request.client_seed.clone(),
        commitment: commitment.commitment,
        tenant: opening.caller.tenant.clone(),
        // The roller's signature travels with its commitment, so
        // that an audit can tell it from one anybody else journaled.
        commitment_signature: commitment.commitment_signature,
        roller_key: commitment.roller_key,
        credential: Some(credential(opening.caller)),
    };
    let event = (Event::BattleOpened(opened.clone()), opening.key.to_owned());
    if let Some(Wrote { head_hash, .. }) = service.append(battle_id, view, None, vec![event]).await? {
        Ok(Some((opened, head_hash)))
    } else {
        debug!(battle_id, "the battle was opened meanwhile");
        service.catch_up(battle_id, view).await?;
        Ok(None)
    }
}

/// A retried `OpenBattle` (the same request id) must ask for the battle its
/// first attempt opened.
fn check_same_opening(opening: &Opening<'_>, opened: &BattleOpened, battle_id: &str) -> Result<(), Status> {
    if opened.ruleset != opening.ruleset.to_string()
        || opened.participants != opening.sheets.iter().map(to_struct).collect::<Result<Vec<_>, _>>()?
        || opened.client_seed != opening.request.client_seed
    {
        return Err(key_reused(format!(
            "request_id {} already opened battle {battle_id} with other settings",
            opening.request.request_id
        )));
    }
    Ok(())
}

fn battle_exists(battle_id: &str) -> Status {
    Error::new(BattleReason::BattleExists, format!("battle {battle_id} already exists"))
        .with("battle_id", battle_id)
        .into_status()
}

/// A refusal of the rules: its reason, docs/rules.md section and Russian
/// message (battlelog_proto::error). Any other failure to resolve is ours:
/// the dice the roller drew no longer fit, or a fold went wrong.
pub(super) fn rejected(battle_id: &str, error: &rules::ResolveError) -> Status {
    match error {
        rules::ResolveError::Rejected(rejection) => {
            Error::rejection(rejection).with("battle_id", battle_id).into_status()
        }
        other => internal(format!("battle {battle_id}: {other}")),
    }
}

/// `Dispute`: a participant contests an event.
pub(super) async fn dispute(
    service: &ResolverService,
    request: Request<DisputeRequest>,
) -> Result<Response<EventResponse>, Status> {
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
    let checked = Checked {
        caller: &caller,
        request_id: &request.request_id,
        key: dispute_key(&request.request_id),
        action: Some(dispute_action(&dispute)),
        event: Event::DisputeRaised(dispute),
    };
    let reply = service.optimistic(&request.battle_id, checked).await?;
    Ok(Response::new(post::event(format, reply, None)))
}

/// `Rule`: a judge's ruling on an event.
pub(super) async fn rule(
    service: &ResolverService,
    request: Request<RuleRequest>,
) -> Result<Response<EventResponse>, Status> {
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
        answers_dispute: request.answers_dispute,
    };
    let checked = Checked {
        caller: &caller,
        request_id: &request.request_id,
        key: rule_key(&request.request_id),
        action: Some(ruling_action(&ruling)),
        event: Event::JudgeRuling(ruling),
    };
    let reply = service.optimistic(&request.battle_id, checked).await?;
    Ok(Response::new(post::event(format, reply, None)))
}

/// `Close`: the battle closed, then its last seed revealed.
pub(super) async fn close(
    service: &ResolverService,
    request: Request<CloseRequest>,
) -> Result<Response<EventResponse>, Status> {
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
    let view = service.opened_view(battle_id, &Reach::Tenant(&caller)).await?;
    // Close first, so that no action slips in; then reveal. A retry after
    // a crash between the two finds the close and goes on to reveal.
    let mut closed = match (view.keys.get(&key), view.closed_at) {
        (Some(&version), _) => {
            let recorded = service.recorded_event(battle_id, version).await?;
            let checkpoint = service.newest_checkpoint().await;
            replay_event(
                recorded,
                version,
                &event,
                &request.request_id,
                service.permalink(battle_id, version),
                checkpoint,
            )?
        }
        // Closed by another request, which may have died before its
        // reveal: answer with that close and make sure of the reveal.
        (None, Some(version)) => EventResponse {
            checkpoint: service.newest_checkpoint().await,
            version,
            event: service.recorded_event(battle_id, version).await?.map(|e| BattleEvent { event: Some(e.event) }),
            permalink: service.permalink(battle_id, version),
            // Set below, from the reveal.
            head_hash: String::new(),
            post: None,
        },
        (None, None) => {
            let checked =
                Checked { caller: &caller, request_id: &request.request_id, key: key.clone(), action: None, event };
            service.optimistic(battle_id, checked).await?
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
    let (head_hash, revealed, head_version) = match service.roller.clone().reveal(reveal).await {
        Ok(revealed) => {
            let version = revealed.into_inner().version;
            match service.recorded_event(battle_id, version).await? {
                Some(Journaled { event: Event::SeedRevealed(revealed), hash }) => (hash, revealed, version),
                _ => return Err(internal(format!("roller: version {version} is not its SeedRevealed"))),
            }
        }
        // Revealed already (by another close that got there first, or a
        // judge's reveal that raced this close): its reveal is the head.
        Err(status) if Error::from_status(&status).is_some_and(|e| e.reason == JournalReason::EpochRevealed.into()) => {
            service.closing_reveal(battle_id, closed.version).await?
        }
        Err(status) => return Err(downstream("roller", status)),
    };
    closed.head_hash = head_hash;
    Ok(Response::new(post::event(format, closed, Some((&revealed, head_version)))))
}

/// One judge's or participant's event (a dispute, a ruling, a close) on its
/// battle: checked against the rules and the appeal window, then appended.
struct Checked<'a> {
    caller: &'a Caller,
    request_id: &'a str,
    key: String,
    /// What the rules check the event as; a close they need not check.
    action: Option<Action>,
    event: Event,
}

impl Command for Checked<'_> {
    type Answer = EventResponse;

    async fn attempt(&mut self, battle: &mut Trying<'_>) -> Result<Try<EventResponse>, Status> {
        let (service, battle_id) = (battle.service, battle.battle_id);
        if let Err(refusal) = check_owner(battle_id, battle.view, self.caller) {
            return Ok(Try::Refused(refusal));
        }
        if let Some(&version) = battle.view.keys.get(&self.key) {
            let recorded = service.recorded_event(battle_id, version).await?;
            let checkpoint = service.newest_checkpoint().await;
            let permalink = service.permalink(battle_id, version);
            return replay_event(recorded, version, &self.event, self.request_id, permalink, checkpoint).map(Try::Done);
        }
        let (Some(rules), Some(head)) = (battle.view.rules.as_ref(), battle.view.head()) else {
            return Err(not_found(battle_id));
        };
        if let Some(refusal) = self.refusal(service, battle_id, battle.view, rules, head) {
            return Ok(Try::Refused(refusal));
        }
        let event = (self.event.clone(), self.key.clone());
        let Some(Wrote { version, head_hash, checkpoint }) =
            service.append(battle_id, battle.view, Some(head), vec![event]).await?
        else {
            return Ok(Try::Stale);
        };
        Ok(Try::Done(EventResponse {
            checkpoint,
            version,
            event: Some(BattleEvent { event: Some(self.event.clone()) }),
            permalink: service.permalink(battle_id, version),
            head_hash,
            post: None,
        }))
    }
}

impl Checked<'_> {
    /// Why the battle, as `view` has it, may not take the event: closed
    /// (only an appeal follows a close), final (the appeal window is over),
    /// or the rules refuse it.
    fn refusal(
        &self,
        service: &ResolverService,
        battle_id: &str,
        view: &BattleView,
        rules: &Battle,
        head: u64,
    ) -> Option<Status> {
        let appeal = matches!(self.event, Event::DisputeRaised(_) | Event::JudgeRuling(_));
        if view.closed() && !appeal {
            return Some(Error::battle_closed(battle_id).into_status());
        }
        if let Some(ends) = view.appeal_ends_unix_micros(service.appeal_window)
            && unix_micros_now() >= ends
        {
            return Some(
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
            );
        }
        if let Event::JudgeRuling(JudgeRuling { answers_dispute: Some(dispute), .. }) = &self.event
            && let Some(refusal) = not_a_dispute(battle_id, rules, *dispute)
        {
            return Some(refusal);
        }
        self.action
            .as_ref()
            .and_then(|action| rules.resolve(head + 1, action, &[]).err())
            .map(|e| rejected(battle_id, &e))
    }
}

/// Why a ruling may not say it answers `dispute`: that version of the
/// battle is no `DisputeRaised` (an action, a ruling, a roll, or nothing
/// yet). The field is the caller's to fix, hence INVALID_ARGUMENT naming
/// it, not a refusal of the rules.
fn not_a_dispute(battle_id: &str, rules: &Battle, dispute: u64) -> Option<Status> {
    let what = match rules.entry(dispute).map(|entry| &entry.action) {
        Some(Action::Dispute(_)) => return None,
        Some(action) => format!("holds a {:?} action, not a dispute", action.kind().name()),
        None => "is no dispute of this battle (no action, dispute or ruling is recorded there)".to_owned(),
    };
    Some(invalid_argument(
        "answers_dispute",
        format!(
            "version {dispute} of battle {battle_id} {what}; name the version of the DisputeRaised the ruling answers, or leave it out"
        ),
    ))
}

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

impl ResolverService {
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
}
