//! The `Roller` gRPC service.
//!
//! A roll is: know the battle's head, derive the epoch's seed from the
//! master key, draw at the next nonces, append the `DiceRolled` events with
//! the head's exact expected version, and answer only when the journal has
//! acknowledged them (flushed). The head is the caller's when it sends one
//! (`RollRequest.expected_head`: the resolver has just folded the battle, so
//! the roller does not read it again) and otherwise the roller's own fold,
//! caught up from the journal. A stale head means another writer got in
//! first: the caller's is refused back to it (ABORTED, with the journal's
//! `ErrorInfo`), the roller's own is folded again and retried. A request id
//! seen before returns what was recorded, never a new roll.

use std::sync::Arc;

use battlelog_auth::AuthChannel;
use battlelog_proto::error::{BattleReason, Error, JournalReason};
use battlelog_proto::v1::journal_client::JournalClient;
use battlelog_proto::v1::roller_server::Roller;
use battlelog_proto::v1::{
    CommitmentRequest, CommitmentResponse, DiceRolled, NewEvent, RecordedRoll, RevealRequest, RevealResponse,
    RollRequest, RollResponse, SeedCommitted, SeedRevealed, StreamHead, battle_event::Event,
};
use battlelog_runtime::grpc::invalid_argument;
use battlelog_runtime::validate;
use battlelog_stream::{DEFAULT_CACHE_BYTES, FoldCache, MAX_ATTEMPTS, StreamClient, StreamError};
use tonic::{Request, Response, Status};
use tracing::{Instrument as _, debug, info, warn};

use crate::ledger::{Ledger, reveal_key, roll_key};
use crate::master_key::MasterKey;
use crate::metrics::RollerMetrics;
use battlelog_proto::battle::{self as events, die_to_proto, rendering};

// The input limits live with every other service's (battlelog_runtime::limits).
pub use battlelog_runtime::limits::roller::{
    MAX_ACTOR_BYTES, MAX_DICE_PER_REQUEST, MAX_PURPOSE_BYTES, MAX_REQUEST_ID_BYTES, MAX_ROLLS_PER_REQUEST,
};

#[derive(Debug, Clone)]
pub struct RollerService {
    streams: StreamClient,
    master_key: MasterKey,
    /// Derived from the master key once; signs every commitment we make.
    signer: Arc<dice::CommitmentSigner>,
    /// One ledger per battle, within a budget in bytes. Holding one also
    /// serialises this replica's writes to a battle, so they do not race
    /// each other for versions.
    ledgers: FoldCache<Ledger>,
    metrics: RollerMetrics,
}

/// What a hinted roll (one with the caller's head) came to.
enum AtHead {
    Answered(RollResponse),
    /// The caller's head and the roller's fold disagree, or the journal
    /// refused for a reason the roller's own fold must explain: read the
    /// stream and decide from it.
    ReadTheStream,
}

impl RollerService {
    /// The roller, with the default cache budget.
    pub fn new(journal: JournalClient<AuthChannel>, master_key: MasterKey) -> Self {
        let signer = Arc::new(master_key.commitment_signer());
        // The public key only: operators publish it for auditors.
        info!(roller_key = %signer.roller_key(), "commitments are signed with this roller key");
        Self {
            streams: StreamClient::new(journal),
            master_key,
            signer,
            ledgers: FoldCache::new(DEFAULT_CACHE_BYTES),
            metrics: RollerMetrics::default(),
        }
    }

    /// The same roller counting into `metrics` (see [`RollerMetrics::register`]).
    pub fn with_metrics(mut self, metrics: RollerMetrics) -> Self {
        self.metrics = metrics;
        self
    }

    /// The same roller keeping at most about `cache_bytes` of ledgers.
    pub fn with_cache_bytes(mut self, cache_bytes: u64) -> Self {
        self.ledgers = FoldCache::new(cache_bytes);
        self
    }

    /// The same roller sending its appends to the journal within `limits`
    /// (`journal_append_batch`, `journal_append_calls`).
    pub fn with_append_limits(mut self, limits: battlelog_stream::AppendLimits) -> Self {
        self.streams = self.streams.with_append_limits(limits);
        self
    }

    /// Counts rolls the journal has just taken (not replays).
    fn count_rolls(&self, rolled: &[DiceRolled]) {
        self.metrics.rolled(rolled.len() as u64, rolled.iter().map(|r| r.dice.len() as u64).sum());
    }

    /// The commitment of `battle_id`'s `epoch`, its signature and our key.
    fn signed_commitment(&self, battle_id: &str, epoch: u32) -> (String, Vec<u8>, Vec<u8>) {
        let commitment = self.master_key.seed(battle_id, epoch).commitment().to_string();
        let signature = self.signer.sign(battle_id, epoch, &commitment).to_vec();
        (commitment, signature, self.signer.roller_key().to_bytes().to_vec())
    }

    /// Folds whatever the journal has past what the ledger has seen.
    async fn catch_up(&self, battle_id: &str, ledger: &mut Ledger) -> Result<(), Status> {
        self.streams.catch_up(battle_id, ledger).await.map_err(StreamError::into_status)
    }

    /// The events recorded at `versions`, fetched from the journal: a
    /// replay is rare, so the ledger keeps versions, not events.
    async fn recorded(&self, battle_id: &str, versions: &[u64]) -> Result<Vec<(u64, Event)>, Status> {
        let (Some(&first), Some(&last)) = (versions.iter().min(), versions.iter().max()) else {
            return Ok(Vec::new());
        };
        let records = self.streams.records(battle_id, first, last).await.map_err(StreamError::into_status)?;
        versions
            .iter()
            .map(|&version| {
                let record = records.iter().find(|r| r.version == version).ok_or_else(|| {
                    Error::data_loss(format!("battle {battle_id}: version {version} is missing")).into_status()
                })?;
                let event = events::decode(record)
                    .map_err(|e| Error::data_loss(format!("battle {battle_id}: {e}")).into_status())?;
                Ok((version, event))
            })
            .collect()
    }

    /// The rolls a request recorded before, if they are the ones it asks for.
    async fn replay(&self, request: &RollRequest, versions: &[u64]) -> Result<RollResponse, Status> {
        let rolls = recorded_rolls(self.recorded(&request.battle_id, versions).await?);
        let same = rolls.len() == request.rolls.len()
            && rolls
                .iter()
                .zip(&request.rolls)
                .all(|(r, spec)| r.roll.as_ref().is_some_and(|roll| roll.expression == spec.expression));
        if !same {
            return Err(Error::new(
                JournalReason::IdempotencyKeyReused,
                format!("request_id {} was already used for other rolls", request.request_id),
            )
            .with("field", "request_id")
            .into_status());
        }
        debug!(battle_id = %request.battle_id, request_id = %request.request_id, "replaying recorded rolls");
        Ok(RollResponse { rolls, replayed: true })
    }

    /// The request's dice, drawn from `epoch`'s seed at consecutive nonces
    /// from `first_nonce`. They leave the roller only once journaled.
    fn draw(
        &self,
        request: &RollRequest,
        expressions: &[dice::Expression],
        client_seed: &str,
        epoch: u32,
        first_nonce: u64,
    ) -> Vec<DiceRolled> {
        let key = dice::RollKey::derive(&self.master_key.seed(&request.battle_id, epoch), client_seed);
        expressions
            .iter()
            .zip(&request.rolls)
            .enumerate()
            .map(|(i, (expression, spec))| {
                let nonce = first_nonce + i as u64;
                let (drawn, total) = dice::evaluate_keeping_dice(expression, &mut dice::RollStream::new(&key, nonce));
                DiceRolled {
                    epoch,
                    nonce,
                    expression: spec.expression.clone(),
                    purpose: spec.purpose.clone(),
                    actor: request.actor.clone(),
                    dice: drawn.iter().map(die_to_proto).collect(),
                    total: total.as_ref().copied().unwrap_or(0),
                    error: total.err().map(|e| e.to_string()).unwrap_or_default(),
                    // The action goes into the journal with its first roll:
                    // from here on it is pending and can only be finished
                    // with these dice (roll-forward).
                    for_action: if i == 0 { request.for_action.clone() } else { None },
                }
            })
            .collect()
    }

    /// Rolls at the caller's head without reading the stream (see
    /// `RollRequest.expected_head`).
    async fn roll_at_head(
        &self,
        request: &RollRequest,
        expressions: &[dice::Expression],
        head: &StreamHead,
        ledger: &mut Ledger,
    ) -> Result<AtHead, Status> {
        let battle_id = request.battle_id.as_str();
        if !ledger.is_open() {
            // Only the client seed is needed, and it never changes.
            self.catch_up(battle_id, ledger).await?;
        }
        let versions = ledger.recorded_for(|i| roll_key(&request.request_id, i));
        if !versions.is_empty() {
            return self.replay(request, &versions).await.map(AtHead::Answered);
        }
        if ledger.next_version > head.version + 1 {
            // The caller's fold is behind ours: it folds again and retries.
            return Err(StreamError::Conflict { stream_id: battle_id.to_owned(), actual: ledger.head() }.into_status());
        }
        let Some(client_seed) = ledger.client_seed.clone() else {
            return Ok(AtHead::ReadTheStream);
        };
        let current = ledger.next_version == head.version + 1;
        if current && ledger.stream.pending {
            // Another action is rolled and not resolved: the caller folds
            // again, finishes it, and asks after.
            return Err(pending_action(battle_id, ledger));
        }
        if current
            && (ledger.stream.closed
                || !ledger.stream.epoch_secret()
                || ledger.stream.epoch != head.epoch
                || ledger.stream.next_nonce != head.next_nonce)
        {
            return Ok(AtHead::ReadTheStream);
        }
        let rolled = self.draw(request, expressions, &client_seed, head.epoch, head.next_nonce);
        let new_events: Vec<NewEvent> = rolled
            .iter()
            .enumerate()
            .map(|(i, roll)| events::new_event(Event::DiceRolled(roll.clone()), roll_key(&request.request_id, i)))
            .collect();
        match self
            .streams
            .append(battle_id, Some(head.version), new_events)
            .instrument(tracing::debug_span!("roller.append"))
            .await
        {
            // The faces leave the roller only through this branch, after the
            // journal has acknowledged (flushed) them — or, deduplicated,
            // found these very events recorded under these keys before.
            Ok(appended) => {
                let fresh = appended.follows(Some(head.version));
                let versions: Vec<u64> = appended.events.iter().map(|e| e.version).collect();
                if fresh && current {
                    for (i, (roll, version)) in rolled.iter().zip(&versions).enumerate() {
                        let event = Event::DiceRolled(roll.clone());
                        if ledger.apply_event(*version, &event, &roll_key(&request.request_id, i)).is_err() {
                            *ledger = Ledger::default();
                            break;
                        }
                    }
                }
                if fresh {
                    self.count_rolls(&rolled);
                }
                let rolls = rolled
                    .into_iter()
                    .zip(versions)
                    .map(|(roll, version)| RecordedRoll { rendering: rendering(&roll), roll: Some(roll), version })
                    .collect();
                Ok(AtHead::Answered(RollResponse { rolls, replayed: !fresh }))
            }
            Err(conflict @ StreamError::Conflict { .. }) => Err(conflict.into_status()),
            Err(StreamError::KeyReused { .. } | StreamError::Refused { .. }) => Ok(AtHead::ReadTheStream),
            Err(error) => Err(error.into_status()),
        }
    }
}

/// A `RollRequest`'s fields checked and its expressions parsed, within the
/// limits of one request.
fn read_rolls(request: &RollRequest) -> Result<Vec<dice::Expression>, Status> {
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
    Ok(expressions)
}

/// The client seed and head of a battle that can roll now: open, with no
/// action pending and its epoch's seed still secret.
fn rollable(battle_id: &str, ledger: &Ledger) -> Result<(String, u64), Status> {
    let (Some(client_seed), Some(head)) = (ledger.client_seed.clone(), ledger.head()) else {
        return Err(Error::battle_not_found(battle_id).into_status());
    };
    if ledger.stream.closed {
        return Err(Error::battle_closed(battle_id).into_status());
    }
    if ledger.stream.pending {
        return Err(pending_action(battle_id, ledger));
    }
    if !ledger.stream.epoch_secret() {
        return Err(Error::new(
            JournalReason::EpochRevealed,
            format!(
                "the seed of epoch {} of battle {battle_id} is revealed and no new one is committed",
                ledger.stream.epoch
            ),
        )
        .with("battle_id", battle_id)
        .into_status());
    }
    Ok((client_seed, head))
}

/// The refusal of a roll while another action of the battle is rolled and
/// not yet resolved: a conflict with the stream's head, so that the caller
/// folds again, finds the pending action and finishes it first
/// (`RollRequest.for_action`).
fn pending_action(battle_id: &str, ledger: &Ledger) -> Status {
    StreamError::Conflict { stream_id: battle_id.to_owned(), actual: ledger.head() }.into_status()
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
        self.metrics.committed();
        Ok(Response::new(CommitmentResponse { commitment, commitment_signature, roller_key }))
    }

    async fn roll(&self, request: Request<RollRequest>) -> Result<Response<RollResponse>, Status> {
        async move {
            let request = request.into_inner();
            let expressions = read_rolls(&request)?;

            let battle_id = request.battle_id.as_str();
            let mut ledger = self.ledgers.lock(battle_id).await;
            if let Some(head) = &request.expected_head
                && let AtHead::Answered(response) = self.roll_at_head(&request, &expressions, head, &mut ledger).await?
            {
                return Ok(Response::new(response));
            }
            for _ in 0..MAX_ATTEMPTS {
                self.catch_up(battle_id, &mut ledger).await?;
                let versions = ledger.recorded_for(|i| roll_key(&request.request_id, i));
                if !versions.is_empty() {
                    return self.replay(&request, &versions).await.map(Response::new);
                }
                let (client_seed, head) = rollable(battle_id, &ledger)?;
                let rolled =
                    self.draw(&request, &expressions, &client_seed, ledger.stream.epoch, ledger.stream.next_nonce);
                let new_events = rolled
                    .iter()
                    .enumerate()
                    .map(|(i, roll)| {
                        events::new_event(Event::DiceRolled(roll.clone()), roll_key(&request.request_id, i))
                    })
                    .collect();
                // The faces leave this function only through this branch, after
                // the journal has acknowledged (flushed) them.
                match self.streams.append(battle_id, Some(head), new_events).await {
                    Ok(appended) if appended.follows(Some(head)) => {
                        self.count_rolls(&rolled);
                        let rolls = rolled
                            .into_iter()
                            .zip(appended.events)
                            .map(|(roll, e)| RecordedRoll {
                                rendering: rendering(&roll),
                                roll: Some(roll),
                                version: e.version,
                            })
                            .collect();
                        return Ok(Response::new(RollResponse { rolls, replayed: false }));
                    }
                    // Recorded before, or taken by a concurrent attempt of the
                    // same request: the next round finds it.
                    Ok(_) | Err(StreamError::Conflict { .. } | StreamError::KeyReused { .. }) => {}
                    Err(error) => return Err(error.into_status()),
                }
                debug!(battle_id, "lost the race for the next version; catching up");
            }
            warn!(battle_id, "gave up after {MAX_ATTEMPTS} conflicting appends");
            Err(Error::new(
                BattleReason::BattleBusy,
                format!("battle {battle_id} is too busy: {MAX_ATTEMPTS} appends in a row lost the race"),
            )
            .with("battle_id", battle_id)
            .into_status())
        }
        .instrument(tracing::debug_span!("roller.roll"))
        .await
    }

    async fn reveal(&self, request: Request<RevealRequest>) -> Result<Response<RevealResponse>, Status> {
        let request = request.into_inner();
        validate::battle_id(&request.battle_id)?;
        validate::request_id(&request.request_id, MAX_REQUEST_ID_BYTES)?;
        let battle_id = request.battle_id.as_str();
        let mut ledger = self.ledgers.lock(battle_id).await;
        for _ in 0..MAX_ATTEMPTS {
            self.catch_up(battle_id, &mut ledger).await?;
            let versions = ledger.recorded_for(|i| reveal_key(&request.request_id, i));
            if !versions.is_empty() {
                return Ok(Response::new(reveal_response(self.recorded(battle_id, &versions).await?)));
            }
            let Some(head) = ledger.head().filter(|_| ledger.is_open()) else {
                return Err(Error::battle_not_found(battle_id).into_status());
            };
            if !ledger.stream.epoch_secret() {
                return Err(Error::new(
                    JournalReason::EpochRevealed,
                    format!("the seed of epoch {} of battle {battle_id} is already revealed", ledger.stream.epoch),
                )
                .with("battle_id", battle_id)
                .into_status());
            }
            let epoch = ledger.stream.epoch;
            let mut reveal = vec![Event::SeedRevealed(SeedRevealed {
                epoch,
                server_seed: self.master_key.seed(battle_id, epoch).to_hex(),
                credential: request.requested_by.clone(),
            })];
            // A battle that goes on gets a fresh secret before its next roll,
            // so revealing never makes a future roll predictable.
            if !request.closing && !ledger.stream.closed {
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
            match self.streams.append(battle_id, Some(head), new_events).await {
                Ok(appended) if appended.follows(Some(head)) => {
                    self.metrics.revealed(reveal.len() > 1);
                    let versions = appended.events.iter().map(|e| e.version);
                    return Ok(Response::new(reveal_response(versions.zip(reveal).collect())));
                }
                Ok(_) | Err(StreamError::Conflict { .. } | StreamError::KeyReused { .. }) => {}
                Err(error) => return Err(error.into_status()),
            }
        }
        Err(Error::new(
            BattleReason::BattleBusy,
            format!("battle {battle_id} is too busy: {MAX_ATTEMPTS} appends in a row lost the race"),
        )
        .with("battle_id", battle_id)
        .into_status())
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
