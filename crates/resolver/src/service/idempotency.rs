//! Idempotency: the keys derived from a request's id, and the answers to a
//! request seen before.
//!
//! Every mutating request carries a request id. The roller's and the
//! journal's idempotency keys are derived from it (one prefix per call, so
//! that one id may serve an `Act` and a `Dispute` alike), so a retry after a
//! crash anywhere — even between the roll and the resolution — finds what
//! was recorded and never rolls again. A retry is answered from the journal
//! (no cache keeps records): with what was recorded when it repeats the
//! request, with [`key_reused`] when the id was used for another request.

use battlelog_proto::battle;
use battlelog_proto::error::{Error, JournalReason};
use battlelog_proto::v1::battle_event::Event;
use battlelog_proto::v1::{ActResponse, BattleEvent, Checkpoint, EventResponse, GetCheckpointRequest, RecordedRoll};
use battlelog_stream::StreamError;
use tonic::Status;

use super::json::json_text;
use super::stream::Journaled;
use super::{ResolverService, internal};
use crate::view::BattleView;

pub(super) fn open_key(request_id: &str) -> String {
    format!("open:{request_id}")
}
pub(super) fn act_key(request_id: &str) -> String {
    format!("act:{request_id}")
}
pub(super) fn dispute_key(request_id: &str) -> String {
    format!("dispute:{request_id}")
}
pub(super) fn rule_key(request_id: &str) -> String {
    format!("rule:{request_id}")
}
pub(super) fn close_key(request_id: &str) -> String {
    format!("close:{request_id}")
}
pub(super) fn reveal_key(request_id: &str) -> String {
    format!("reveal:{request_id}")
}

/// A request id reused for another request (`IDEMPOTENCY_KEY_REUSED`,
/// metadata `field` = `request_id`).
pub(super) fn key_reused(message: String) -> Status {
    Error::new(JournalReason::IdempotencyKeyReused, message).with("field", "request_id").into_status()
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
            (&r.judge, r.refers_to, &r.text, &r.r#override, r.answers_dispute)
                == (&a.judge, a.refers_to, &a.text, &a.r#override, a.answers_dispute)
        }
        (Event::BattleClosed(r), Event::BattleClosed(a)) => (&r.by, &r.reason) == (&a.by, &a.reason),
        _ => false,
    }
}

/// The recorded answer to a Dispute, Rule or Close seen before under its
/// key (`recorded`, read from the journal), or the refusal of a request id
/// reused for another request.
pub(super) fn replay_event(
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

impl ResolverService {
    /// The journal's newest checkpoint, for the reply to a request answered
    /// from what the journal already held (a retry): no append of this
    /// request returned one. Best effort: a journal that cannot say (one
    /// without a transparency log answers UNIMPLEMENTED, or a failure)
    /// leaves the reply's checkpoint unset rather than failing a write that
    /// is already journaled.
    pub(super) async fn newest_checkpoint(&self) -> Option<Checkpoint> {
        match self.journal.clone().get_checkpoint(GetCheckpointRequest {}).await {
            Ok(reply) => reply.into_inner().checkpoint,
            Err(status) => {
                tracing::debug!(code = ?status.code(), "no checkpoint for a repeated request's reply: {}", status.message());
                None
            }
        }
    }

    /// The recorded answer to an `Act` seen before — if it was for the same
    /// action; reusing a request id for another action is refused. The
    /// resolution and its rolls are read from the journal: no cache keeps
    /// records.
    pub(super) async fn replay_act(
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
}
