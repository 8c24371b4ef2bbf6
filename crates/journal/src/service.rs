//! The gRPC `battlelog.v1.Journal` service over a [`Journal`]: converts wire
//! types, nothing else. Errors become statuses in [`crate::error`].

use std::time::Duration;

use battlelog_proto::error::status_parts;
use battlelog_proto::v1 as pb;
use battlelog_proto::v1::journal_server::Journal as JournalRpc;
use battlelog_runtime::streams::{Ending, StreamEnd, deadline_exceeded, grpc_timeout};
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::{Stream, StreamExt};
use tonic::{Request, Response, Status};
use tracing::Instrument as _;

use crate::chain::ChainCheck;
use crate::error::JournalError;
use crate::index::IndexQuery;
use crate::journal::{Journal, Subscription};
use crate::limits::{ExpectedVersion, NewEvent, validate_batch};
use crate::store::StoredEvent;

/// The gRPC service.
#[derive(Debug, Clone)]
pub struct JournalService {
    journal: Journal,
}

impl JournalService {
    /// Serves `journal`.
    pub fn new(journal: Journal) -> Self {
        Self { journal }
    }
}

/// The server-streaming response type of both subscriptions.
pub type EventStream = std::pin::Pin<Box<dyn Stream<Item = Result<pb::RecordedEvent, Status>> + Send>>;

fn expected_version(expected: Option<pb::ExpectedVersion>) -> Result<ExpectedVersion, JournalError> {
    use pb::expected_version::Kind;
    match expected.and_then(|e| e.kind) {
        Some(Kind::Any(_)) => Ok(ExpectedVersion::Any),
        Some(Kind::NoStream(_)) => Ok(ExpectedVersion::NoStream),
        Some(Kind::Exact(v)) => Ok(ExpectedVersion::Exact(v)),
        None => Err(JournalError::InvalidArgument {
            field: "expected_version".into(),
            message: "must be one of any, no_stream or exact (missing or unknown form)".into(),
        }),
    }
}

fn recorded(event: StoredEvent) -> pb::RecordedEvent {
    pb::RecordedEvent {
        global_position: event.global_position,
        hash: event.hash.to_vec(),
        record: event.record,
        event: Some(event.event),
    }
}

fn checkpoint(checkpoint: battlelog_tlog::Checkpoint) -> pb::Checkpoint {
    pb::Checkpoint { note: checkpoint.note, tree_size: checkpoint.size, root_hash: checkpoint.root.to_vec() }
}

fn hashes(hashes: Vec<battlelog_tlog::Hash>) -> Vec<Vec<u8>> {
    hashes.into_iter().map(|h| h.to_vec()).collect()
}

/// A subscription as a response. The response owns the subscription's
/// receiver: when the server drops it (the caller reset the call or its
/// connection went) the subscription's task sees its channel closed and
/// ends, whether or not an event comes. A call with a deadline
/// (`grpc-timeout`) ends at it with `DEADLINE_EXCEEDED`; tonic's own
/// timeout covers only the response head.
fn stream_of(call: &'static str, subscription: Subscription, timeout: Option<Duration>) -> EventStream {
    let events = ReceiverStream::new(subscription).map(|item| item.map(recorded).map_err(Status::from));
    let end: StreamEnd = Box::pin(async move {
        match timeout {
            Some(timeout) => {
                tokio::time::sleep(timeout).await;
                Some(deadline_exceeded(call, timeout))
            }
            None => std::future::pending().await,
        }
    });
    Box::pin(Ending::new(events, end))
}

/// An append's request as the journal takes it.
fn append_parts(request: pb::AppendRequest) -> Result<(String, ExpectedVersion, Vec<NewEvent>), JournalError> {
    let expected = expected_version(request.expected_version)?;
    let events = request
        .events
        .into_iter()
        .map(|e| NewEvent {
            event_type: e.event_type,
            payload: e.payload,
            idempotency_key: (!e.idempotency_key.is_empty()).then_some(e.idempotency_key),
        })
        .collect();
    Ok((request.stream_id, expected, events))
}

/// What an append wrote, as answered; the caller adds the checkpoint.
fn append_response(outcome: crate::store::AppendOutcome) -> pb::AppendResponse {
    pb::AppendResponse {
        checkpoint: None,
        events: outcome
            .events
            .into_iter()
            .map(|e| pb::AppendedEvent {
                version: e.version,
                global_position: e.global_position,
                event_id: e.event_id,
                hash: e.hash.to_vec(),
                recorded_at_unix_micros: e.recorded_at_unix_micros,
            })
            .collect(),
        deduplicated: outcome.deduplicated,
    }
}

#[tonic::async_trait]
impl JournalRpc for JournalService {
    async fn append(&self, request: Request<pb::AppendRequest>) -> Result<Response<pb::AppendResponse>, Status> {
        async move {
            let (stream_id, expected, events) = append_parts(request.into_inner())?;
            let mut response = append_response(self.journal.append(stream_id, expected, events).await?);
            response.checkpoint = self.journal.checkpoint().map(checkpoint);
            Ok(Response::new(response))
        }
        .instrument(tracing::debug_span!("journal.append"))
        .await
    }

    async fn append_batch(
        &self,
        request: Request<pb::AppendBatchRequest>,
    ) -> Result<Response<pb::AppendBatchResponse>, Status> {
        async move {
            let appends = request.into_inner().appends;
            let payload_bytes =
                appends.iter().flat_map(|a| &a.events).map(|e| e.payload.len()).fold(0usize, usize::saturating_add);
            validate_batch(self.journal.limits(), appends.len(), payload_bytes)?;
            // A malformed expected version is that append's own refusal.
            let mut outcomes: Vec<Option<Result<pb::AppendResponse, JournalError>>> = Vec::new();
            let mut valid = Vec::new();
            for append in appends {
                match append_parts(append) {
                    Ok(parts) => {
                        valid.push(parts);
                        outcomes.push(None);
                    }
                    Err(error) => outcomes.push(Some(Err(error))),
                }
            }
            let mut written = self.journal.append_batch(valid).await.into_iter();
            let checkpoint = self.journal.checkpoint().map(checkpoint);
            let results = outcomes
                .into_iter()
                .map(|outcome| {
                    let outcome = outcome.unwrap_or_else(|| {
                        written
                            .next()
                            .unwrap_or_else(|| Err(JournalError::Poisoned("an append got no answer".into())))
                            .map(append_response)
                    });
                    let result = match outcome {
                        Ok(mut appended) => {
                            appended.checkpoint = checkpoint.clone();
                            pb::append_result::Result::Appended(appended)
                        }
                        Err(error) => {
                            let (code, message, details) = status_parts(&Status::from(error));
                            pb::append_result::Result::Error(pb::AppendError { code, message, details })
                        }
                    };
                    pb::AppendResult { result: Some(result) }
                })
                .collect();
            Ok(Response::new(pb::AppendBatchResponse { results }))
        }
        .instrument(tracing::debug_span!("journal.append_batch"))
        .await
    }

    async fn read_stream(
        &self,
        request: Request<pb::ReadStreamRequest>,
    ) -> Result<Response<pb::ReadStreamResponse>, Status> {
        let request = request.into_inner();
        let events = self.journal.read_stream(&request.stream_id, request.from_version, request.max_count).await?;
        let head = self.journal.stream_head(&request.stream_id).await?;
        Ok(Response::new(pb::ReadStreamResponse {
            events: events.into_iter().map(recorded).collect(),
            head_version: head.version,
        }))
    }

    async fn read_all(&self, request: Request<pb::ReadAllRequest>) -> Result<Response<pb::ReadAllResponse>, Status> {
        let request = request.into_inner();
        let events = self.journal.read_all(request.from_position, request.max_count).await?;
        let next_position = events.last().map_or(request.from_position, |e| e.global_position + 1);
        Ok(Response::new(pb::ReadAllResponse { events: events.into_iter().map(recorded).collect(), next_position }))
    }

    type SubscribeStreamStream = EventStream;

    async fn subscribe_stream(
        &self,
        request: Request<pb::SubscribeStreamRequest>,
    ) -> Result<Response<EventStream>, Status> {
        let timeout = grpc_timeout(request.metadata());
        let request = request.into_inner();
        let subscription = self.journal.subscribe_stream(&request.stream_id, request.from_version)?;
        Ok(Response::new(stream_of("SubscribeStream", subscription, timeout)))
    }

    type SubscribeAllStream = EventStream;

    async fn subscribe_all(&self, request: Request<pb::SubscribeAllRequest>) -> Result<Response<EventStream>, Status> {
        let timeout = grpc_timeout(request.metadata());
        let subscription = self.journal.subscribe_all(request.into_inner().from_position);
        Ok(Response::new(stream_of("SubscribeAll", subscription, timeout)))
    }

    async fn verify_chain(
        &self,
        request: Request<pb::VerifyChainRequest>,
    ) -> Result<Response<pb::VerifyChainResponse>, Status> {
        let stream_id = request.into_inner().stream_id;
        let check = self.journal.verify_chain(&stream_id).await?;
        Ok(Response::new(match check {
            ChainCheck::Ok { count, head_hash } => pb::VerifyChainResponse {
                ok: true,
                verified_count: count,
                first_bad_version: None,
                reason: String::new(),
                head_hash: head_hash.to_vec(),
            },
            ChainCheck::Broken { version, reason } => pb::VerifyChainResponse {
                ok: false,
                verified_count: version,
                first_bad_version: Some(version),
                reason,
                head_hash: Vec::new(),
            },
        }))
    }

    async fn stream_info(
        &self,
        request: Request<pb::StreamInfoRequest>,
    ) -> Result<Response<pb::StreamInfoResponse>, Status> {
        let head = self.journal.stream_head(&request.into_inner().stream_id).await?;
        Ok(Response::new(pb::StreamInfoResponse {
            exists: head.version.is_some(),
            head_version: head.version,
            head_hash: head.hash.to_vec(),
        }))
    }

    /// Who may call: the `service` role only, like every Journal RPC
    /// (checked at the door, `crate::server::serve`).
    async fn get_checkpoint(
        &self,
        _request: Request<pb::GetCheckpointRequest>,
    ) -> Result<Response<pb::GetCheckpointResponse>, Status> {
        Ok(Response::new(pb::GetCheckpointResponse {
            checkpoint: self.journal.checkpoint().map(checkpoint),
            log_key: self.journal.log_key().to_string(),
        }))
    }

    /// Who may call: the `service` role only.
    async fn get_inclusion_proof(
        &self,
        request: Request<pb::InclusionProofRequest>,
    ) -> Result<Response<pb::InclusionProofResponse>, Status> {
        let request = request.into_inner();
        let size = (request.tree_size != 0).then_some(request.tree_size);
        let proof = self.journal.inclusion_proof(&request.stream_id, request.version, size).await?;
        Ok(Response::new(pb::InclusionProofResponse {
            leaf_index: proof.leaf_index,
            tree_size: proof.tree_size,
            proof: hashes(proof.proof),
            checkpoint: proof.checkpoint.map(checkpoint),
        }))
    }

    /// Who may call: the `service` role only.
    async fn get_consistency_proof(
        &self,
        request: Request<pb::ConsistencyProofRequest>,
    ) -> Result<Response<pb::ConsistencyProofResponse>, Status> {
        let request = request.into_inner();
        let new_size = (request.new_size != 0).then_some(request.new_size);
        let proof = self.journal.consistency_proof(request.old_size, new_size)?;
        Ok(Response::new(pb::ConsistencyProofResponse {
            old_size: proof.old_size,
            new_size: proof.new_size,
            proof: hashes(proof.proof),
            checkpoint: proof.checkpoint.map(checkpoint),
        }))
    }

    /// Who may call: the `service` role only.
    async fn get_signed_head(
        &self,
        request: Request<pb::SignedHeadRequest>,
    ) -> Result<Response<pb::SignedHeadResponse>, Status> {
        let head = self.journal.signed_head(&request.into_inner().stream_id).await?;
        Ok(Response::new(pb::SignedHeadResponse {
            checkpoint: Some(checkpoint(head.checkpoint)),
            log_key: head.log_key.to_string(),
            stream_id: head.head.stream_id,
            version: head.head.version,
            hash: head.head.hash.to_vec(),
            head_signature: head.signature.to_vec(),
            leaf_index: head.leaf_index,
            inclusion_proof: hashes(head.inclusion_proof),
        }))
    }

    async fn list_battle_index(
        &self,
        request: Request<pb::BattleIndexRequest>,
    ) -> Result<Response<pb::BattleIndexResponse>, Status> {
        let request = request.into_inner();
        let status = pb::BattleStatus::try_from(request.status).map_err(|_| JournalError::InvalidArgument {
            field: "status".into(),
            message: format!("{} is not a BattleStatus", request.status),
        })?;
        let query = IndexQuery {
            tenant: request.tenant,
            forum_ref: request.forum_ref,
            status,
            before: request.before_position,
            max_count: request.max_count as usize,
        };
        let page = self.journal.list_battles(query).await?;
        Ok(Response::new(pb::BattleIndexResponse {
            battles: page
                .battles
                .into_iter()
                .map(|(opened_position, summary)| pb::IndexedBattle { summary: Some(summary), opened_position })
                .collect(),
            next_before_position: page.next_before,
            older_forgotten: page.older_forgotten,
        }))
    }

    async fn list_pending_actions(
        &self,
        request: Request<pb::PendingActionsRequest>,
    ) -> Result<Response<pb::PendingActionsResponse>, Status> {
        let request = request.into_inner();
        let before = (request.rolled_before_unix_micros != 0).then_some(request.rolled_before_unix_micros);
        let pending = self.journal.pending_actions(before, request.max_count as usize).await?;
        Ok(Response::new(pb::PendingActionsResponse {
            pending: pending
                .into_iter()
                .map(|p| pb::PendingAction {
                    battle_id: p.battle_id,
                    version: p.version,
                    rolled_at_unix_micros: p.rolled_at_unix_micros,
                })
                .collect(),
        }))
    }
}
