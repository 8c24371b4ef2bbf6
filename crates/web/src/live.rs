//! `GET /battles/{id}/live?after=<version>`: an open battle's new events as
//! server-sent events, from the resolver's `Watch`.
//!
//! The same credentials as the page (a Bearer token or the share link's
//! `?k=`) and the same refusals (401, 403, 404), checked by the resolver
//! before anything is streamed. Then, for each event journaled after
//! `after` (or after the browser's `Last-Event-ID`, when it reconnects
//! further on), one message
//!
//! ```text
//! event: line
//! id: <version>
//! data: <the event's export line, exactly as export.jsonl holds it>
//! ```
//!
//! and keep-alive comments while the battle is quiet. When the battle's
//! close has been sent (its `BattleClosed` and the `SeedRevealed` that
//! follows it; for a battle already closed, its head), one `event: closed`
//! and the stream ends.
//!
//! Each stream holds one of `live_max_streams` slots for as long as it is
//! open; one more is refused with 503 and `Retry-After` (as the edge's
//! shedding does elsewhere: docs/operating.md, *Limits at the edge*),
//! before the resolver is asked anything.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use battlelog_proto::v1::RecordedEvent;
use battlelog_verify::export;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, watch};
use tokio_stream::wrappers::ReceiverStream;

use crate::error::PageError;
use crate::source::Resolver;

/// The live streams' limits (config keys `live_max_streams`,
/// `live_keep_alive_ms`, `live_retry_after_secs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveLimits {
    pub max_streams: usize,
    pub keep_alive: Duration,
    pub retry_after_secs: u64,
}

impl Default for LiveLimits {
    fn default() -> Self {
        Self { max_streams: 256, keep_alive: Duration::from_secs(15), retry_after_secs: 5 }
    }
}

/// The live streams of one web instance: their slots and limits.
#[derive(Debug, Clone)]
pub struct Live {
    slots: Arc<Semaphore>,
    limits: LiveLimits,
    /// Set when the server shuts down: every stream ends, so that the
    /// graceful shutdown, which waits for the responses in flight, is not
    /// held by streams that would otherwise never end.
    stopping: Arc<watch::Sender<bool>>,
}

impl Live {
    pub fn new(limits: LiveLimits) -> Self {
        let (stopping, _) = watch::channel(false);
        Self { slots: Arc::new(Semaphore::new(limits.max_streams)), limits, stopping: Arc::new(stopping) }
    }

    /// Ends every stream open, and every one opened from now on.
    pub fn stop(&self) {
        self.stopping.send_replace(true);
    }

    /// A slot for one more stream, or 503 when all are taken.
    fn slot(&self) -> Result<OwnedSemaphorePermit, PageError> {
        Arc::clone(&self.slots).try_acquire_owned().map_err(|_| {
            tracing::warn!(max_streams = self.limits.max_streams, "live stream refused: at the limit");
            PageError::Busy { retry_after_secs: self.limits.retry_after_secs }
        })
    }
}

/// Events waiting to be written to one stream: a few, since the task
/// waits for the client anyway.
const BUFFER: usize = 16;

/// The live stream of `battle_id` after version `after` (None: from the
/// start), read with `token` (and the share link's key).
pub async fn stream(
    live: &Live,
    resolver: &Resolver,
    battle_id: &str,
    after: Option<u64>,
    token: &str,
    share_key: Option<&str>,
) -> Result<Response, PageError> {
    let slot = live.slot()?;
    // The battle's state first: it checks the credential as the page does,
    // and says whether the battle is already closed (its BattleClosed then
    // may be before `after`, so the stream ends at the head instead).
    let battle = resolver.battle(battle_id, token, share_key).await?;
    let (closed, head) = (battle.closed, battle.version);
    let from_version = after.map_or(0, |version| version.saturating_add(1));
    let end_at = closed.then_some(head);
    let (sender, receiver) = mpsc::channel::<Result<Event, Infallible>>(BUFFER);
    if end_at.is_some_and(|head| from_version > head) {
        let _ = sender.try_send(Ok(Event::default().event("closed").data(head.to_string())));
        drop(sender);
        drop(slot);
    } else {
        let watch = resolver.watch(battle_id, from_version, token, share_key).await?;
        let stopping = live.stopping.subscribe();
        tokio::spawn(forward(battle_id.to_owned(), watch, sender, end_at, slot, stopping));
    }
    let keep_alive = KeepAlive::new().interval(live.limits.keep_alive);
    let mut response = Sse::new(ReceiverStream::new(receiver)).keep_alive(keep_alive).into_response();
    // A reverse proxy (nginx) would otherwise hold the events in its buffer.
    response.headers_mut().insert("x-accel-buffering", axum::http::HeaderValue::from_static("no"));
    Ok(response)
}

/// Copies the `Watch` stream to the client until the battle closes, the
/// client leaves (its receiver dropped) or the resolver's stream ends;
/// the slot is released with the task.
async fn forward(
    battle_id: String,
    mut watch: tonic::Streaming<RecordedEvent>,
    sender: mpsc::Sender<Result<Event, Infallible>>,
    end_at: Option<u64>,
    _slot: OwnedSemaphorePermit,
    mut stopping: watch::Receiver<bool>,
) {
    let mut closing = false;
    loop {
        let message = tokio::select! {
            message = watch.message() => message,
            // A quiet battle must not keep a slot for a client gone.
            () = sender.closed() => return,
            // The browser reconnects to another instance, or this one restarted.
            _ = stopping.wait_for(|stop| *stop) => return,
        };
        let event = match message {
            Ok(Some(event)) => event,
            Ok(None) => return,
            Err(status) => {
                // The browser reconnects (with Last-Event-ID) and resumes.
                tracing::warn!(battle_id, code = ?status.code(), message = status.message(), "live stream ended by the resolver");
                return;
            }
        };
        let (version, event_type) =
            event.event.as_ref().map_or((0, ""), |record| (record.version, record.event_type.as_str()));
        // A close is two records: the BattleClosed, then the SeedRevealed
        // of its epoch, which the page needs to check the last rolls.
        let closes = match event_type {
            "BattleClosed" => {
                closing = true;
                false
            }
            "SeedRevealed" if closing => true,
            _ => !closing && end_at.is_some_and(|head| version >= head),
        };
        let line = match export::write(&battle_id, std::slice::from_ref(&event)) {
            Ok(line) => line,
            Err(error) => {
                tracing::error!(battle_id, %error, "cannot write an export line");
                return;
            }
        };
        let message = Event::default().event("line").id(version.to_string()).data(line);
        if sender.send(Ok(message)).await.is_err() {
            return;
        }
        if closes {
            let _ = sender.send(Ok(Event::default().event("closed").data(version.to_string()))).await;
            return;
        }
    }
}
