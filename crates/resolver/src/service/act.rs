//! `Act`: an action checked by the rules, its dice drawn by the roller,
//! resolved, and its resolution appended right after its rolls.
//!
//! A warm `Act` is one round trip to the roller and two appends (the
//! roller's and the resolution): the roller is told the head it rolls at
//! (`RollRequest.expected_head`), and what both append is folded from what
//! they sent. The roll is journaled by the roller before it answers, and the
//! resolver resolves only from that answer: no die is seen, by the resolver
//! or anyone, before it is in the journal.
//!
//! Roll-forward (ARCHITECTURE.md, invariant 8): the roller journals the action with
//! its first roll (`RollRequest.for_action`), and from then on the action is
//! pending until it is resolved with exactly those dice. The command runs in
//! a task of its own, so a caller who cancels or times out cannot stop it
//! between the roll and the resolution; and a pending action left by a
//! crash is finished ([`Trying::roll_forward`]) before any other command of
//! its battle is taken, so a new request id never gets a new roll while one
//! is pending.

use battlelog_auth::Caller;
use battlelog_proto::battle::{self, die_from_proto};
use battlelog_proto::error::Error;
use battlelog_proto::v1::battle_event::Event;
use battlelog_proto::v1::{
    ActRequest, ActResponse, ActionResolved, DiceRolled, RecordedRoll, RequestedAction, RollRequest, RollResponse,
    RollSpec, StreamHead,
};
use battlelog_runtime::grpc::invalid_argument;
use battlelog_runtime::limits::roller::MAX_DICE_PER_REQUEST;
use battlelog_runtime::validate;
use battlelog_stream::{StreamError, downstream};
use rules::{Action, ActionKind};
use serde_json::Value;
use tonic::{Request, Response, Status};
use tracing::Instrument as _;

use super::access::{authorize, check_owner, credential, not_found, rights};
use super::commands::rejected;
use super::idempotency::act_key;
use super::json::{actor_of, json_of, json_text, to_struct, unreadable};
use super::optimistic::{Command, Try, Trying, busy, caller_gone};
use super::stream::Wrote;
use super::{MAX_ACTOR_BYTES, MAX_PURPOSE_BYTES, MAX_REQUEST_ID_BYTES, ResolverService, data_loss, internal};
use crate::post;
use crate::view::{BattleView, PendingAct};

/// `Act`: an action resolved, with the dice it needs drawn by the roller.
pub(super) async fn act(
    service: &ResolverService,
    request: Request<ActRequest>,
) -> Result<Response<ActResponse>, Status> {
    let caller = authorize(&request, "Act", rights::FORUM)?;
    let request = request.into_inner();
    let format = post::format(request.post_format)?;
    validate::battle_id(&request.battle_id)?;
    validate::request_id(&request.request_id, MAX_REQUEST_ID_BYTES)?;
    let (json, action) = read_action(request.action.as_ref())?;
    // Dropped with this call's future: the command then knows its caller
    // went away (`Act::caller_gone`).
    let (_caller_here, caller_gone) = tokio::sync::oneshot::channel::<()>();
    let act = Act {
        caller_gone,
        key: act_key(&request.request_id),
        caller,
        request_id: request.request_id,
        normalized: to_struct(&action)?,
        json,
        action,
    };
    // Roll-forward: the command runs in a task of its own, which the
    // caller's going away (a cancelled call drops this future) cannot stop
    // between the roll and its resolution. Before the roll it can: a caller
    // gone by then leaves no work behind (see `Act::caller_gone`), so that
    // cancelled calls cannot pile up tasks past the server's limits.
    let service = service.clone();
    let battle_id = request.battle_id;
    let command = tokio::spawn(async move { service.optimistic(&battle_id, act).await }.in_current_span());
    let reply = command.await.map_err(|e| internal(format!("the Act's task ended without an answer: {e}")))??;
    Ok(Response::new(post::acted(format, reply)))
}

/// The action an `Act` asks for, as the caller wrote it (JSON) and as the
/// rules read it; refused here, before any die is drawn, when no `Act` may
/// take it.
fn read_action(action: Option<&prost_types::Struct>) -> Result<(Value, Action), Status> {
    let json = json_of("action", action)?;
    let action: Action = rules::read::action(json.clone()).map_err(|e| unreadable("action", e))?;
    if matches!(action.kind(), ActionKind::Ruling | ActionKind::Dispute) {
        return Err(invalid_argument("action", "rulings and disputes have their own calls, Rule and Dispute"));
    }
    if let Action::Roll(roll) = &action {
        let expression = dice::Expression::parse(&roll.expression)
            .map_err(|e| invalid_argument("action.expression", e.to_string()))?;
        // A roll the roller took must always find room for its resolution
        // in the journal.
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
    Ok((json, action))
}

/// One `Act` on its battle: checked by the rules, rolled by the roller,
/// resolved, and its resolution appended right after its rolls.
struct Act {
    /// Closed once the caller has gone away (the sender is dropped with the
    /// call): checked before the roller is asked, never after.
    caller_gone: tokio::sync::oneshot::Receiver<()>,
    caller: Caller,
    request_id: String,
    key: String,
    /// The action as the caller wrote it: the roller's `actor` and a free
    /// roll's purpose are read from it.
    json: Value,
    action: Action,
    /// The action as the resolution records it, and as a retry must repeat it.
    normalized: prost_types::Struct,
}

/// The dice the roller drew for an action.
#[derive(Default)]
struct Drawn {
    /// What the resolution records of them.
    nonces: Vec<u64>,
    /// Their raw faces, in order: what the rules resolve with.
    faces: Vec<u32>,
    /// As the reply lists them.
    rolls: Vec<RecordedRoll>,
}

/// What asking the roller came to.
enum Rolled {
    Drawn(Drawn),
    /// The view was stale: try again.
    Stale,
    /// This very request was resolved meanwhile, at this version.
    Resolved(u64),
}

impl Command for Act {
    type Answer = ActResponse;

    async fn caller_gone(&mut self) {
        // Resolves with an error once the sender is dropped; nothing is sent.
        let _ = (&mut self.caller_gone).await;
    }

    async fn attempt(&mut self, battle: &mut Trying<'_>) -> Result<Try<ActResponse>, Status> {
        if let Some(&version) = battle.view.keys.get(&self.key) {
            // Seen before: answered from the journal. A battle's tenant is
            // its opening's and never changes, so a warm view may refuse
            // another tenant's caller at once.
            check_owner(battle.battle_id, battle.view, &self.caller)?;
            return self.replay(battle, version).await.map(Try::Done);
        }
        let needed = match self.check(battle.battle_id, battle.view) {
            Ok(needed) => needed,
            Err(refusal) => return Ok(Try::Refused(refusal)),
        };
        let Some(head) = battle.view.head() else {
            return Err(internal("the battle stream vanished"));
        };
        let specs = self.specs(&needed);
        // The last moment a caller who went away leaves nothing behind;
        // from the roll on, the action is finished whoever is listening.
        if matches!(self.caller_gone.try_recv(), Err(tokio::sync::oneshot::error::TryRecvError::Closed)) {
            return Err(caller_gone("the caller went away before any die was drawn"));
        }
        let drawn = if specs.is_empty() {
            Drawn::default()
        } else {
            match self.roll(battle, head, specs).await? {
                Rolled::Drawn(drawn) => drawn,
                Rolled::Stale => return Ok(Try::Stale),
                Rolled::Resolved(version) => return self.replay(battle, version).await.map(Try::Done),
            }
        };
        let (head, resolved) =
            resolution(battle.battle_id, battle.view, &self.action, &self.normalized, drawn.nonces, &drawn.faces)?;
        let resolved = ActionResolved { credential: Some(credential(&self.caller)), ..resolved };
        append_resolution(battle, head, resolved, self.key.clone(), drawn.rolls).await
    }
}

impl Act {
    /// The refusal the view gives, or the dice the action needs: the rules
    /// speak before any die is drawn.
    fn check(&self, battle_id: &str, view: &BattleView) -> Result<rules::DiceRequest, Status> {
        match (check_owner(battle_id, view, &self.caller), view.rules.as_ref()) {
            (Err(status), _) => Err(status),
            (Ok(()), None) => Err(not_found(battle_id)),
            (Ok(()), Some(_)) if view.closed() => Err(Error::battle_closed(battle_id).into_status()),
            (Ok(()), Some(rules)) => rules.dice_needed(&self.action).map_err(|e| rejected(battle_id, &e.into())),
        }
    }

    /// What the roller is asked to draw for `needed`.
    fn specs(&self, needed: &rules::DiceRequest) -> Vec<RollSpec> {
        match needed {
            rules::DiceRequest::Rolls(rolls) => {
                rolls.iter().map(|r| RollSpec { expression: r.expression(), purpose: r.purpose.to_owned() }).collect()
            }
            rules::DiceRequest::Expression(expression) => vec![RollSpec {
                expression: expression.clone(),
                purpose: self.json.get("purpose").and_then(Value::as_str).unwrap_or_default().to_owned(),
            }],
        }
    }

    /// Asks the roller for `specs` at `head`. The roller journals the roll
    /// before it answers; what it appended is folded from its answer.
    async fn roll(&self, battle: &mut Trying<'_>, head: u64, specs: Vec<RollSpec>) -> Result<Rolled, Status> {
        let battle_id = battle.battle_id;
        let roll = RollRequest {
            battle_id: battle_id.to_owned(),
            rolls: specs.clone(),
            actor: actor_of(&self.json),
            request_id: self.key.clone(),
            // The roller rolls at the head this view knows, without
            // reading the stream; a stale head comes back as a conflict.
            expected_head: Some(StreamHead {
                version: head,
                next_nonce: battle.view.next_nonce(),
                epoch: battle.view.stream.epoch,
            }),
            // Journaled with the first roll: from then on this action is
            // pending, and whoever goes away, it is finished with these dice.
            for_action: Some(RequestedAction {
                action: Some(self.normalized.clone()),
                credential: Some(credential(&self.caller)),
            }),
        };
        let rolled =
            match battle.service.roller.clone().roll(roll).instrument(tracing::debug_span!("resolver.roll")).await {
                Ok(rolled) => rolled.into_inner(),
                Err(status) if StreamError::is_conflict_status(&status) => return Ok(Rolled::Stale),
                Err(status) => return Err(downstream("roller", status)),
            };
        let mut drawn = Drawn::default();
        for (spec, recorded) in specs.iter().zip(&rolled.rolls) {
            let roll = recorded.roll.as_ref().ok_or_else(|| internal("roller sent a roll without dice"))?;
            if roll.expression != spec.expression {
                // Only possible when another replica changed the
                // battle between this request's roll and its retry.
                return Err(busy(
                    battle_id,
                    format!(
                        "the dice recorded for request {} ({}) no longer fit the action ({})",
                        self.request_id, roll.expression, spec.expression
                    ),
                ));
            }
            drawn.add(roll)?;
        }
        if rolled_after(head, &rolled, specs.len()) {
            for (i, recorded) in rolled.rolls.iter().enumerate() {
                if let Some(roll) = &recorded.roll {
                    ResolverService::fold_own(
                        battle_id,
                        battle.view,
                        recorded.version,
                        // The roller's reply carries no commit time;
                        // a view keeps only the close's.
                        0,
                        &Event::DiceRolled(roll.clone()),
                        // The roller's key: the view reads the pending
                        // action's own key from it.
                        &roll_key(&self.key, i),
                    );
                }
            }
            if battle.view.next_version() == 0 {
                // They did not fold and the view was dropped: read
                // the battle afresh; the roll replays under its key.
                return Ok(Rolled::Stale);
            }
        } else {
            // Rolled before (a retry), elsewhere in the stream: read
            // what it holds now; another replica may even have
            // resolved this very request meanwhile.
            battle.catch_up().await?;
            if let Some(&version) = battle.view.keys.get(&self.key) {
                return Ok(Rolled::Resolved(version));
            }
        }
        drawn.rolls = rolled.rolls;
        Ok(Rolled::Drawn(drawn))
    }

    /// The recorded answer to this request, resolved before at `version`.
    async fn replay(&self, battle: &Trying<'_>, version: u64) -> Result<ActResponse, Status> {
        battle.service.replay_act(battle.battle_id, battle.view, version, &self.normalized, &self.request_id).await
    }
}

/// Whether a roll (the roller's answer) was appended right after `head`, so
/// that the resolver may fold it from the answer instead of reading it.
fn rolled_after(head: u64, rolled: &RollResponse, wanted: usize) -> bool {
    !rolled.replayed
        && rolled.rolls.len() == wanted
        && rolled.rolls.iter().enumerate().all(|(i, r)| r.version == head + 1 + i as u64 && r.roll.is_some())
}

/// The roller's idempotency key of the `index`-th roll of the request keyed
/// `request_key` (the roller's `ledger::roll_key`).
fn roll_key(request_key: &str, index: usize) -> String {
    format!("roll:{request_key}:{index}")
}

impl Drawn {
    /// Adds one journaled roll: its nonce, and its raw faces in draw order.
    fn add(&mut self, roll: &DiceRolled) -> Result<(), Status> {
        let expression = dice::Expression::parse(&roll.expression).map_err(|e| internal(e.to_string()))?;
        let dice: Vec<dice::Die> = roll.dice.iter().map(die_from_proto).collect();
        self.faces.extend(dice::raw_faces(&expression, &dice));
        self.nonces.push(roll.nonce);
        Ok(())
    }
}

/// `action` resolved at the view's head with the raw `faces` of the rolls
/// `nonces`, recorded as `normalized` (the credential is the caller's to
/// add); with the head it follows.
fn resolution(
    battle_id: &str,
    view: &BattleView,
    action: &Action,
    normalized: &prost_types::Struct,
    nonces: Vec<u64>,
    faces: &[u32],
) -> Result<(u64, ActionResolved), Status> {
    let (Some(head), Some(rules)) = (view.head(), view.rules.as_ref()) else {
        return Err(internal("the battle stream vanished"));
    };
    let resolution = rules.resolve(head + 1, action, faces).map_err(|e| rejected(battle_id, &e))?;
    Ok((
        head,
        ActionResolved {
            action: Some(normalized.clone()),
            rolls: nonces,
            outcome: Some(to_struct(&resolution.outcome)?),
            summary_ru: resolution.summary.ru,
            summary_en: resolution.summary.en,
            credential: None,
        },
    ))
}

/// Appends `resolved` after `head` under `key` and answers the `Act` with
/// it and its `rolls`. Its hash, from the journal's acknowledgement, is the
/// new head: the resolution is the last record an action writes.
async fn append_resolution(
    battle: &mut Trying<'_>,
    head: u64,
    resolved: ActionResolved,
    key: String,
    rolls: Vec<RecordedRoll>,
) -> Result<Try<ActResponse>, Status> {
    let (service, battle_id) = (battle.service, battle.battle_id);
    let ruleset = battle.view.rules.as_ref().map(|rules| rules.ruleset().to_string()).unwrap_or_default();
    let event = (Event::ActionResolved(resolved.clone()), key);
    // `None`: another writer got in first, or another replica took this
    // request's key; either way the next try catches up and looks again.
    let Some(Wrote { version, head_hash, checkpoint }) =
        service.append(battle_id, battle.view, Some(head), vec![event]).await?
    else {
        return Ok(Try::Stale);
    };
    service.metrics.resolved(ruleset);
    Ok(Try::Done(ActResponse {
        checkpoint,
        outcome_json: json_text(resolved.outcome.as_ref()),
        resolved: Some(resolved),
        version,
        rolls,
        permalink: service.permalink(battle_id, version),
        head_hash,
        post: None,
    }))
}

impl Trying<'_> {
    /// Finishes the battle's pending action, if it has one: resolved with
    /// exactly the dice journaled for it and credited to whoever asked for
    /// it, under its own request's key, so that its caller's retry finds
    /// it. False when another writer got in first: catch up and look again.
    pub(super) async fn roll_forward(&mut self) -> Result<bool, Status> {
        let Some(PendingAct { key, action: normalized, credential, rolls }) = self.view.pending.clone() else {
            return Ok(true);
        };
        let battle_id = self.battle_id;
        let unreadable = |e: String| data_loss(format!("battle {battle_id}: the pending action: {e}"));
        let action: Action = rules::read::action(json_of("for_action.action", Some(&normalized))?)
            .map_err(|e| unreadable(e.to_string()))?;
        let mut drawn = Drawn::default();
        for (version, roll) in &rolls {
            drawn.add(roll)?;
            drawn.rolls.push(RecordedRoll {
                rendering: battle::rendering(roll),
                roll: Some(roll.clone()),
                version: *version,
            });
        }
        let first_nonce = drawn.nonces.first().copied().unwrap_or_default();
        let (head, resolved) = resolution(battle_id, self.view, &action, &normalized, drawn.nonces, &drawn.faces)?;
        let resolved = ActionResolved { credential, ..resolved };
        // A first roll whose key is not the roller's form (never written by
        // this project) still gets a key of its own.
        let key = if key.is_empty() { format!("act:roll-forward:{first_nonce}") } else { key };
        match append_resolution(self, head, resolved, key.clone(), drawn.rolls).await? {
            Try::Done(_) => {
                tracing::info!(battle_id, key, nonce = first_nonce, "rolled forward an action whose caller left");
                Ok(true)
            }
            Try::Stale | Try::Refused(_) => Ok(false),
        }
    }
}
