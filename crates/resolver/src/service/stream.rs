//! A battle's journal stream as the service uses it: catching a folded view
//! up, appending with an exact expected version and folding what was
//! appended from what was sent, and reading one recorded event back.
//!
//! What this service appends is folded from what it sent and the journal's
//! acknowledgement, not read back: a warm command costs no read.

use battlelog_proto::battle;
use battlelog_proto::v1::battle_event::Event;
use battlelog_proto::v1::{Checkpoint, RecordedEvent};
use battlelog_stream::StreamError;
use tonic::Status;
use tracing::{Instrument as _, warn};

use super::{ResolverService, data_loss, internal};
use crate::view::BattleView;

/// What an append wrote, as the journal acknowledged it.
#[derive(Debug)]
pub(super) struct Wrote {
    /// The first event's version.
    pub(super) version: u64,
    /// The last event's h(version), lowercase hex: the new head.
    pub(super) head_hash: String,
    /// The journal's newest checkpoint in its reply (docs/protocol.md §5).
    pub(super) checkpoint: Option<Checkpoint>,
}

/// What the journal holds at a version: the event and its chain hash.
#[derive(Debug)]
pub(super) struct Journaled {
    pub(super) event: Event,
    /// h(version), lowercase hex.
    pub(super) hash: String,
}

/// A record as the journal stores it, decoded, with its hash in hex.
pub(super) fn journaled(battle_id: &str, recorded: &RecordedEvent) -> Result<Journaled, Status> {
    let record = recorded.event.as_ref().ok_or_else(|| internal("journal sent an event without its record"))?;
    let event = battle::decode(record).map_err(|e| data_loss(format!("battle {battle_id}: {e}")))?;
    Ok(Journaled { event, hash: hex::encode(&recorded.hash) })
}

impl ResolverService {
    /// Folds whatever the journal holds past what `view` has seen.
    pub(super) async fn catch_up(&self, battle_id: &str, view: &mut BattleView) -> Result<(), Status> {
        self.streams.catch_up(battle_id, view).await.map_err(StreamError::into_status)
    }

    /// Folds what this command appended (or the roller appended for it) at
    /// `version`, from what was sent, and when the journal says it committed
    /// it. Should it not fold, the view is dropped and the next command reads
    /// the battle afresh.
    pub(super) fn fold_own(
        battle_id: &str,
        view: &mut BattleView,
        version: u64,
        recorded_at: i64,
        event: &Event,
        key: &str,
    ) {
        if let Err(error) = view.apply_event(version, recorded_at, event, key) {
            warn!(battle_id, %error, "an appended event does not fold; the battle will be read afresh");
            *view = BattleView::default();
        }
    }

    /// Appends `events` after `head` (`None`: the stream must not exist),
    /// and folds them into `view` from what was sent; answers the first
    /// event's version and the hash of the last (the new head), as the
    /// journal acknowledged them, with the journal's checkpoint of that
    /// reply. `Ok(None)` means another writer got there first, or the
    /// request's key was recorded before: the caller catches up and looks
    /// again.
    pub(super) async fn append(
        &self,
        battle_id: &str,
        view: &mut BattleView,
        head: Option<u64>,
        events: Vec<(Event, String)>,
    ) -> Result<Option<Wrote>, Status> {
        let new_events = events.iter().map(|(event, key)| battle::new_event(event.clone(), key.clone())).collect();
        // The span holds the call alone, as the roller's `roller.append`
        // does: encoding and folding are the resolver's own work.
        let appended =
            self.streams.append(battle_id, head, new_events).instrument(tracing::debug_span!("resolver.append")).await;
        match appended {
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

    /// The event journaled at `version` and its chain hash, read from the
    /// journal.
    pub(super) async fn recorded_event(&self, battle_id: &str, version: u64) -> Result<Option<Journaled>, Status> {
        let page = self.streams.page(battle_id, version, 1).await.map_err(StreamError::into_status)?;
        let Some(recorded) = page.events.into_iter().next() else { return Ok(None) };
        match recorded.event.as_ref() {
            Some(record) if record.version == version => journaled(battle_id, &recorded).map(Some),
            _ => Ok(None),
        }
    }
}
