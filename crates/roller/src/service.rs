//! The `Roller` gRPC service.
//!
//! A roll is: fold the battle's stream (cached, caught up on each request),
//! derive the epoch's seed from the master key, draw at the next nonces,
//! append the `DiceRolled` events with the stream's exact expected version,
//! and answer only when the journal has acknowledged them (flushed). A stale
//! version means another writer got in first: catch up and try again. A
//! request id seen before returns what was recorded, never a new roll.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use battlelog_auth::AuthChannel;
use battlelog_proto::v1::journal_client::JournalClient;
use battlelog_proto::v1::roller_server::Roller;
use battlelog_proto::v1::{
    AppendRequest, CommitmentRequest, CommitmentResponse, DiceRolled, ExpectedVersion, NewEvent, ReadStreamRequest,
    RecordedRoll, RevealRequest, RevealResponse, RollRequest, RollResponse, SeedCommitted, SeedRevealed,
    battle_event::Event, expected_version,
};
use battlelog_runtime::grpc::{failed_precondition, invalid_argument};
use battlelog_runtime::validate;
use tonic::{Code, Request, Response, Status};
use tracing::{debug, info, warn};

use crate::ledger::{Ledger, reveal_key, roll_key};
use crate::master_key::MasterKey;
use battlelog_proto::battle::{self as events, die_to_proto, rendering};

// The input limits live with every other service's (battlelog_runtime::limits).
pub use battlelog_runtime::limits::roller::{
    MAX_ACTOR_BYTES, MAX_DICE_PER_REQUEST, MAX_PURPOSE_BYTES, MAX_REQUEST_ID_BYTES, MAX_ROLLS_PER_REQUEST,
};
/// How often a request catches up and retries after losing a race for the
/// stream's next version before it gives up with `ABORTED`.
const MAX_ATTEMPTS: usize = 32;

type BattleLedger = Arc<tokio::sync::Mutex<Ledger>>;

#[derive(Debug, Clone)]
pub struct RollerService {
    journal: JournalClient<AuthChannel>,
    master_key: MasterKey,
    /// Derived from the master key once; signs every commitment we make.
    signer: Arc<dice::CommitmentSigner>,
    /// One ledger per battle. The async mutex also serialises this replica's
    /// writes to a battle, so they do not race each other for versions.
    ledgers: Arc<Mutex<HashMap<String, BattleLedger>>>,
}

/// Ledgers kept warm; past this, idle ones are dropped (they are only a cache).
const MAX_CACHED_BATTLES: usize = 10_000;

impl RollerService {
    pub fn new(journal: JournalClient<AuthChannel>, master_key: MasterKey) -> Self {
        let signer = Arc::new(master_key.commitment_signer());
        // The public key only: operators publish it for auditors.
        info!(roller_key = %signer.roller_key(), "commitments are signed with this roller key");
        Self { journal, master_key, signer, ledgers: Arc::default() }
    }

    /// The commitment of `battle_id`'s `epoch`, its signature and our key.
    fn signed_commitment(&self, battle_id: &str, epoch: u32) -> (String, Vec<u8>, Vec<u8>) {
        let commitment = self.master_key.seed(battle_id, epoch).commitment().to_string();
        let signature = self.signer.sign(battle_id, epoch, &commitment).to_vec();
        (commitment, signature, self.signer.roller_key().to_bytes().to_vec())
    }

    fn ledger(&self, battle_id: &str) -> BattleLedger {
        let mut ledgers = self.ledgers.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if ledgers.len() >= MAX_CACHED_BATTLES && !ledgers.contains_key(battle_id) {
            ledgers.retain(|_, ledger| Arc::strong_count(ledger) > 1);
        }
        ledgers.entry(battle_id.to_owned()).or_default().clone()
    }

    /// Folds whatever the journal has past what the ledger has seen.
    async fn catch_up(&self, battle_id: &str, ledger: &mut Ledger) -> Result<(), Status> {
        loop {
            let request =
                ReadStreamRequest { stream_id: battle_id.to_owned(), from_version: ledger.next_version, max_count: 0 };
            let events = self.journal.clone().read_stream(request).await.map_err(journal_error)?.into_inner().events;
            if events.is_empty() {
                return Ok(());
            }
            for recorded in &events {
                let record = recorded
                    .event
                    .as_ref()
                    .ok_or_else(|| Status::internal("journal sent an event without its record"))?;
                if let Err(error) = ledger.apply(record) {
                    // Drop what was folded: the next request starts afresh.
                    *ledger = Ledger::default();
                    return Err(Status::data_loss(format!("battle {battle_id}: {error}")));
                }
            }
        }
    }

    async fn append(&self, battle_id: &str, head: u64, events: Vec<NewEvent>) -> Result<Option<Vec<u64>>, Status> {
        let request = AppendRequest {
            stream_id: battle_id.to_owned(),
            expected_version: Some(ExpectedVersion { kind: Some(expected_version::Kind::Exact(head)) }),
            events,
        };
        match self.journal.clone().append(request).await {
            Ok(response) => Ok(Some(response.into_inner().events.iter().map(|e| e.version).collect())),
            Err(status) if status.code() == Code::Aborted => Ok(None),
            Err(status) => Err(journal_error(status)),
        }
    }
}

/// The journal's answer, passed on with where it came from. Its
/// `INVALID_ARGUMENT`s would be our bugs, not the caller's.
fn journal_error(status: Status) -> Status {
    let code = match status.code() {
        Code::InvalidArgument => Code::Internal,
        code => code,
    };
    Status::new(code, format!("journal: {}", status.message()))
}

fn recorded_rolls(recorded: Vec<(u64, Event)>) -> Vec<RecordedRoll> {
    recorded
        .into_iter()
        .filter_map(|(version, event)| match event {
            Event::DiceRolled(roll) => Some(RecordedRoll { rendering: rendering(&roll), roll: Some(roll), version }),
            _ => None,
        })
        .collect()
}

#[tonic::async_trait]
impl Roller for RollerService {
    async fn commitment(&self, request: Request<CommitmentRequest>) -> Result<Response<CommitmentResponse>, Status> {
        let request = request.into_inner();
        validate::battle_id(&request.battle_id)?;
        let (commitment, commitment_signature, roller_key) = self.signed_commitment(&request.battle_id, request.epoch);
        Ok(Response::new(CommitmentResponse { commitment, commitment_signature, roller_key }))
    }

    async fn roll(&self, request: Request<RollRequest>) -> Result<Response<RollResponse>, Status> {
        let request = request.into_inner();
        validate::battle_id(&request.battle_id)?;
        validate::request_id(&request.request_id, MAX_REQUEST_ID_BYTES)?;
        validate::text("actor", &request.actor, MAX_ACTOR_BYTES)?;
        if request.rolls.is_empty() || request.rolls.len() > MAX_ROLLS_PER_REQUEST {
            return Err(invalid_argument("rolls", format!("must hold 1 to {MAX_ROLLS_PER_REQUEST} expressions")));
        }
        let mut expressions = Vec::with_capacity(request.rolls.len());
        for (i, spec) in request.rolls.iter().enumerate() {
            let expression = dice::Expression::parse(&spec.expression)
                .map_err(|e| invalid_argument(&format!("rolls[{i}].expression"), e.to_string()))?;
            validate::text(&format!("rolls[{i}].purpose"), &spec.purpose, MAX_PURPOSE_BYTES)?;
            expressions.push(expression);
        }
        let worst_case: u64 = expressions.iter().map(dice::Expression::max_dice).sum();
        if worst_case > MAX_DICE_PER_REQUEST {
            return Err(invalid_argument(
                "rolls",
                format!("may draw up to {worst_case} dice together; the limit is {MAX_DICE_PER_REQUEST} per request"),
            ));
        }

        let battle_id = request.battle_id.as_str();
        let ledger = self.ledger(battle_id);
        let mut ledger = ledger.lock().await;
        for _ in 0..MAX_ATTEMPTS {
            self.catch_up(battle_id, &mut ledger).await?;
            let recorded = ledger.recorded_for(|i| roll_key(&request.request_id, i));
            if !recorded.is_empty() {
                let rolls = recorded_rolls(recorded);
                let same = rolls.len() == request.rolls.len()
                    && rolls
                        .iter()
                        .zip(&request.rolls)
                        .all(|(r, spec)| r.roll.as_ref().is_some_and(|roll| roll.expression == spec.expression));
                if !same {
                    return Err(failed_precondition(
                        "request_id",
                        "IDEMPOTENCY_KEY_REUSED",
                        format!("request_id {} was already used for other rolls", request.request_id),
                    ));
                }
                debug!(battle_id, request_id = %request.request_id, "replaying recorded rolls");
                return Ok(Response::new(RollResponse { rolls, replayed: true }));
            }
            let (Some(client_seed), Some(head)) = (ledger.client_seed.clone(), ledger.head()) else {
                return Err(Status::not_found(format!("battle {battle_id} has not been opened")));
            };
            if ledger.closed {
                return Err(failed_precondition(battle_id, "BATTLE_CLOSED", format!("battle {battle_id} is closed")));
            }
            if !ledger.epoch_secret {
                return Err(failed_precondition(
                    battle_id,
                    "EPOCH_REVEALED",
                    format!(
                        "the seed of epoch {} of battle {battle_id} is revealed and no new one is committed",
                        ledger.epoch
                    ),
                ));
            }
            let key = dice::RollKey::derive(&self.master_key.seed(battle_id, ledger.epoch), &client_seed);
            let rolled: Vec<DiceRolled> = expressions
                .iter()
                .zip(&request.rolls)
                .enumerate()
                .map(|(i, (expression, spec))| {
                    let nonce = ledger.next_nonce + i as u64;
                    let (drawn, total) =
                        dice::evaluate_keeping_dice(expression, &mut dice::RollStream::new(&key, nonce));
                    DiceRolled {
                        epoch: ledger.epoch,
                        nonce,
                        expression: spec.expression.clone(),
                        purpose: spec.purpose.clone(),
                        actor: request.actor.clone(),
                        dice: drawn.iter().map(die_to_proto).collect(),
                        total: total.as_ref().copied().unwrap_or(0),
                        error: total.err().map(|e| e.to_string()).unwrap_or_default(),
                    }
                })
                .collect();
            let new_events = rolled
                .iter()
                .enumerate()
                .map(|(i, roll)| events::new_event(Event::DiceRolled(roll.clone()), roll_key(&request.request_id, i)))
                .collect();
            // The faces leave this function only through this branch, after
            // the journal has acknowledged (flushed) them.
            if let Some(versions) = self.append(battle_id, head, new_events).await? {
                let rolls = rolled
                    .into_iter()
                    .zip(versions)
                    .map(|(roll, version)| RecordedRoll { rendering: rendering(&roll), roll: Some(roll), version })
                    .collect();
                return Ok(Response::new(RollResponse { rolls, replayed: false }));
            }
            debug!(battle_id, "lost the race for the next version; catching up");
        }
        warn!(battle_id, "gave up after {MAX_ATTEMPTS} conflicting appends");
        Err(Status::aborted(format!("battle {battle_id} is too busy: {MAX_ATTEMPTS} appends in a row lost the race")))
    }

    async fn reveal(&self, request: Request<RevealRequest>) -> Result<Response<RevealResponse>, Status> {
        let request = request.into_inner();
        validate::battle_id(&request.battle_id)?;
        validate::request_id(&request.request_id, MAX_REQUEST_ID_BYTES)?;
        let battle_id = request.battle_id.as_str();
        let ledger = self.ledger(battle_id);
        let mut ledger = ledger.lock().await;
        for _ in 0..MAX_ATTEMPTS {
            self.catch_up(battle_id, &mut ledger).await?;
            let recorded = ledger.recorded_for(|i| reveal_key(&request.request_id, i));
            if !recorded.is_empty() {
                return Ok(Response::new(reveal_response(recorded)));
            }
            let Some(head) = ledger.head().filter(|_| ledger.is_open()) else {
                return Err(Status::not_found(format!("battle {battle_id} has not been opened")));
            };
            if !ledger.epoch_secret {
                return Err(failed_precondition(
                    battle_id,
                    "EPOCH_REVEALED",
                    format!("the seed of epoch {} of battle {battle_id} is already revealed", ledger.epoch),
                ));
            }
            let epoch = ledger.epoch;
            let mut reveal = vec![Event::SeedRevealed(SeedRevealed {
                epoch,
                server_seed: self.master_key.seed(battle_id, epoch).to_hex(),
                credential: request.requested_by.clone(),
            })];
            // A battle that goes on gets a fresh secret before its next roll,
            // so revealing never makes a future roll predictable.
            if !request.closing && !ledger.closed {
                let next = epoch + 1;
                let (commitment, commitment_signature, roller_key) = self.signed_commitment(battle_id, next);
                reveal.push(Event::SeedCommitted(SeedCommitted {
                    epoch: next,
                    commitment,
                    commitment_signature,
                    roller_key,
                }));
            }
            let new_events = reveal
                .iter()
                .enumerate()
                .map(|(i, event)| events::new_event(event.clone(), reveal_key(&request.request_id, i)))
                .collect();
            if let Some(versions) = self.append(battle_id, head, new_events).await? {
                return Ok(Response::new(reveal_response(versions.into_iter().zip(reveal).collect())));
            }
        }
        Err(Status::aborted(format!("battle {battle_id} is too busy: {MAX_ATTEMPTS} appends in a row lost the race")))
    }
}

fn reveal_response(recorded: Vec<(u64, Event)>) -> RevealResponse {
    let mut response = RevealResponse::default();
    for (version, event) in recorded {
        match event {
            Event::SeedRevealed(revealed) => {
                response.revealed = Some(revealed);
                response.version = version;
            }
            Event::SeedCommitted(next) => response.next = Some(next),
            _ => {}
        }
    }
    response
}
