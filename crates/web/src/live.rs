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
//! open, and its share of them: at most `live_max_streams_per_share_key`
//! per share link, and `live_max_streams_per_tenant` per tenant owning the
//! battle, so that one popular (or hostile) link or one tenant's pages do
//! not take every other tenant's streams. One more is refused with 503 and
//! `Retry-After` (as the edge's shedding does elsewhere: docs/operating.md, *Limits at the edge*) — the global
//! slot and the link's share before the resolver is asked anything, the
//! tenant's once the resolver said whose battle it is. A resolver that
//! refuses a stream for its own limits (`RESOURCE_EXHAUSTED`, or
//! `UNAVAILABLE`) gets the same 503, not a 502: it is busy, not broken.
//! The streams are spread over the web's pool of resolver connections
//! ([`crate::source::Resolver`]).

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use battlelog_runtime::share::{Share, Shares};
use battlelog_verify::export;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, watch};
use tokio_stream::wrappers::ReceiverStream;
use tonic::Code;

use crate::error::PageError;
use crate::source::{Resolver, Watching};

/// The live streams' limits (config keys `live_max_streams`,
/// `live_max_streams_per_share_key`, `live_max_streams_per_tenant`,
/// `live_keep_alive_ms`, `live_retry_after_secs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveLimits {
    pub max_streams: usize,
    pub max_streams_per_share_key: usize,
    pub max_streams_per_tenant: usize,
    pub keep_alive: Duration,
    pub retry_after_secs: u64,
}

impl Default for LiveLimits {
    fn default() -> Self {
        Self {
            max_streams: 256,
            max_streams_per_share_key: 64,
            max_streams_per_tenant: 128,
            keep_alive: Duration::from_secs(15),
            retry_after_secs: 5,
        }
    }
}

/// Battles whose tenant is remembered, at most: past it, the memory is
/// cleared and refilled (a lookup costs one resolver call).
const TENANTS_KNOWN: usize = 10_000;

/// The live streams of one web instance: their slots and limits.
#[derive(Debug, Clone)]
pub struct Live {
    slots: Arc<Semaphore>,
    per_share_key: Arc<Shares<String>>,
    per_tenant: Arc<Shares<String>>,
    /// Each battle's tenant, once asked (a battle never changes tenant).
    tenants: Arc<Mutex<HashMap<String, String>>>,
    limits: LiveLimits,
    /// Set when the server shuts down: every stream ends, so that the
    /// graceful shutdown, which waits for the responses in flight, is not
    /// held by streams that would otherwise never end.
    stopping: Arc<watch::Sender<bool>>,
}

impl Live {
    pub fn new(limits: LiveLimits) -> Self {
        let (stopping, _) = watch::channel(false);
        Self {
            slots: Arc::new(Semaphore::new(limits.max_streams)),
            per_share_key: Shares::new(limits.max_streams_per_share_key),
            per_tenant: Shares::new(limits.max_streams_per_tenant),
            tenants: Arc::new(Mutex::new(HashMap::new())),
            limits,
            stopping: Arc::new(stopping),
        }
    }

    /// Ends every stream open, and every one opened from now on.
    pub fn stop(&self) {
        self.stopping.send_replace(true);
    }

    /// A slot for one more stream, or 503 when all are taken.
    fn slot(&self) -> Result<OwnedSemaphorePermit, PageError> {
        Arc::clone(&self.slots).try_acquire_owned().map_err(|_| {
            tracing::warn!(max_streams = self.limits.max_streams, "live stream refused: at the limit");
            self.busy()
        })
    }

    fn busy(&self) -> PageError {
        PageError::Busy { retry_after_secs: self.limits.retry_after_secs }
    }

    /// The share link's share of the slots, or 503 when it holds it all.
    fn share_key_share(&self, share_key: &str) -> Result<Share<String>, PageError> {
        self.per_share_key.try_take(share_key.to_owned()).ok_or_else(|| {
            tracing::warn!(
                max_streams_per_share_key = self.per_share_key.limit(),
                "live stream refused: its share link holds its share"
            );
            self.busy()
        })
    }

    /// The tenant's share of the slots, or 503 when it holds it all.
    fn tenant_share(&self, tenant: &str) -> Result<Share<String>, PageError> {
        self.per_tenant.try_take(tenant.to_owned()).ok_or_else(|| {
            tracing::warn!(
                tenant,
                max_streams_per_tenant = self.per_tenant.limit(),
                "live stream refused: its tenant holds its share"
            );
            self.busy()
        })
    }

    /// The tenant owning `battle_id`, remembered or asked of the resolver.
    async fn tenant(
        &self,
        resolver: &Resolver,
        battle_id: &str,
        token: &str,
        share_key: Option<&str>,
    ) -> Result<String, PageError> {
        if let Some(tenant) = self.tenants.lock().unwrap_or_else(|p| p.into_inner()).get(battle_id) {
            return Ok(tenant.clone());
        }
        let tenant = resolver.tenant(battle_id, token, share_key).await.map_err(|status| self.refused(status))?;
        // A battle without its opening event is not one to stream; counted
        // under its own id so that it shares with nobody.
        let tenant = tenant.unwrap_or_else(|| format!("battle:{battle_id}"));
        let mut tenants = self.tenants.lock().unwrap_or_else(|p| p.into_inner());
        if tenants.len() >= TENANTS_KNOWN {
            tenants.clear();
        }
        tenants.insert(battle_id.to_owned(), tenant.clone());
        Ok(tenant)
    }

    /// The resolver's refusal as the page's: busy (503 with `Retry-After`)
    /// when it is at a limit of its own, else as any other page's.
    fn refused(&self, status: tonic::Status) -> PageError {
        match status.code() {
            Code::ResourceExhausted | Code::Unavailable => {
                tracing::warn!(code = ?status.code(), message = status.message(), "live stream refused by the resolver");
                self.busy()
            }
            _ => PageError::from(status),
        }
    }
}

/// What one open stream holds until it ends: its slot, its shares and its
/// place on a resolver connection.
#[derive(Debug)]
struct Held {
    _slot: OwnedSemaphorePermit,
    _share_key: Option<Share<String>>,
    _tenant: Share<String>,
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
    let share_key_share = share_key.map(|key| live.share_key_share(key)).transpose()?;
    // The battle's state first: it checks the credential as the page does,
    // and says whether the battle is already closed (its BattleClosed then
    // may be before `after`, so the stream ends at the head instead).
    let battle = resolver.battle(battle_id, token, share_key).await.map_err(|status| live.refused(status))?;
    let tenant = live.tenant(resolver, battle_id, token, share_key).await?;
    let held = Held { _slot: slot, _share_key: share_key_share, _tenant: live.tenant_share(&tenant)? };
    let (closed, head) = (battle.closed, battle.version);
    let from_version = after.map_or(0, |version| version.saturating_add(1));
    let end_at = closed.then_some(head);
    let (sender, receiver) = mpsc::channel::<Result<Event, Infallible>>(BUFFER);
    if end_at.is_some_and(|head| from_version > head) {
        let _ = sender.try_send(Ok(Event::default().event("closed").data(head.to_string())));
        drop(sender);
        drop(held);
    } else {
        let watch =
            resolver.watch(battle_id, from_version, token, share_key).await.map_err(|status| live.refused(status))?;
        let stopping = live.stopping.subscribe();
        tokio::spawn(forward(battle_id.to_owned(), watch, sender, end_at, held, stopping));
    }
    let keep_alive = KeepAlive::new().interval(live.limits.keep_alive);
    let mut response = Sse::new(ReceiverStream::new(receiver)).keep_alive(keep_alive).into_response();
    // A reverse proxy (nginx) would otherwise hold the events in its buffer.
    response.headers_mut().insert("x-accel-buffering", axum::http::HeaderValue::from_static("no"));
    Ok(response)
}

/// Copies the `Watch` stream to the client until the battle closes, the
/// client leaves (its receiver dropped) or the resolver's stream ends;
/// the slot, the shares and the resolver connection's place are released
/// with the task.
async fn forward(
    battle_id: String,
    mut watching: Watching,
    sender: mpsc::Sender<Result<Event, Infallible>>,
    end_at: Option<u64>,
    _held: Held,
    mut stopping: watch::Receiver<bool>,
) {
    let watch = &mut watching.stream;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn busy(result: Result<Share<String>, PageError>) -> bool {
        matches!(result, Err(PageError::Busy { retry_after_secs: 5 }))
    }

    #[test]
    fn a_share_link_and_a_tenant_get_their_share_of_the_streams_and_no_more() {
        let live =
            Live::new(LiveLimits { max_streams_per_share_key: 2, max_streams_per_tenant: 3, ..LiveLimits::default() });
        let under = live.share_key_share("link-1").expect("1 of 2");
        let at = live.share_key_share("link-1").expect("2 of 2");
        assert!(busy(live.share_key_share("link-1")), "3 of 2: 503 with Retry-After");
        let other_link = live.share_key_share("link-2").expect("another link has its own share");
        drop(under);
        let again = live.share_key_share("link-1").expect("a stream ended gives its place back");

        let tenant: Vec<_> =
            (1..=3).map(|n| live.tenant_share("forum-a").unwrap_or_else(|_| panic!("{n} of 3"))).collect();
        assert!(busy(live.tenant_share("forum-a")), "4 of 3: 503 with Retry-After");
        let other_tenant = live.tenant_share("forum-b").expect("another tenant has its own share");
        drop((at, other_link, again, tenant, other_tenant));
    }

    #[test]
    fn the_resolver_at_its_limits_is_busy_not_broken() {
        let live = Live::new(LiveLimits::default());
        for code in [Code::ResourceExhausted, Code::Unavailable] {
            let refused = live.refused(tonic::Status::new(code, "at a limit"));
            assert!(matches!(refused, PageError::Busy { retry_after_secs: 5 }), "{code:?}: {refused:?}");
        }
        let not_found = live.refused(tonic::Status::not_found("no such battle"));
        assert!(matches!(not_found, PageError::Resolver(_)), "{not_found:?}");
    }
}
