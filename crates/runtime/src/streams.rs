//! Server streams that hold nothing once they are over.
//!
//! A server-streaming response is a stream that the gRPC server polls and
//! drops: when the client resets the call, or its connection goes, hyper
//! drops the response body and with it whatever the stream owns. So a
//! stream that owns its resources (its upstream subscription, its
//! [`StreamSlot`]) and is not fed by a detached task is released at once,
//! not when it next has something to send. What is left is to end it when
//! nothing will poll it to an end: its deadline (`grpc-timeout`, which
//! tonic applies to the response head only), its token's expiry, a server
//! shutdown. [`Ending`] ends a stream when such a future resolves.
//!
//! [`StreamCaps`] bounds how many streams a token and a connection hold at
//! once; each admitted stream holds a [`StreamSlot`] until it is dropped.

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use battlelog_proto::error::{Error, LimitReason};
use tokio_stream::Stream;
use tonic::Status;
use tonic::metadata::MetadataMap;

/// The deadline a caller gave its call in `grpc-timeout`, if any: at most
/// 8 digits and a unit (`H`, `M`, `S`, `m`, `u`, `n`), as the gRPC HTTP/2
/// protocol defines it. A malformed value is no deadline: tonic's own
/// timeout layer has already answered such a call with an error.
pub fn grpc_timeout(metadata: &MetadataMap) -> Option<Duration> {
    let value = metadata.get("grpc-timeout")?.to_str().ok()?;
    if value.len() < 2 || value.len() > 9 {
        return None;
    }
    let (digits, unit) = value.split_at(value.len() - 1);
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let amount: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(amount * 3600),
        "M" => Duration::from_secs(amount * 60),
        "S" => Duration::from_secs(amount),
        "m" => Duration::from_millis(amount),
        "u" => Duration::from_micros(amount),
        "n" => Duration::from_nanos(amount),
        _ => return None,
    })
}

/// `DEADLINE_EXCEEDED` for a stream whose caller's deadline passed.
pub fn deadline_exceeded(call: &str, timeout: Duration) -> Status {
    Error::new(LimitReason::DeadlinePassed, format!("{call}: the call's deadline ({} ms) passed", timeout.as_millis()))
        .into_status()
}

/// A future that ends a stream: `Some(status)` is sent as the stream's
/// last item, `None` ends it without one.
pub type StreamEnd = Pin<Box<dyn Future<Output = Option<Status>> + Send>>;

/// `stream`'s items until `end` resolves (then its status, if any, and
/// nothing more) or `stream` ends. Whichever comes first drops `stream`
/// and everything it owns right away; so does dropping the [`Ending`].
pub struct Ending<S> {
    /// `None` once ended.
    inner: Option<(S, StreamEnd, Option<StreamSlot>)>,
}

impl<S> std::fmt::Debug for Ending<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ending").field("ended", &self.inner.is_none()).finish()
    }
}

impl<S> Ending<S> {
    /// `stream`, ended by `end`.
    pub fn new(stream: S, end: StreamEnd) -> Self {
        Self { inner: Some((stream, end, None)) }
    }

    /// The same stream, holding `slot` until it ends or is dropped.
    pub fn holding(mut self, slot: StreamSlot) -> Self {
        if let Some((_, _, held)) = self.inner.as_mut() {
            *held = Some(slot);
        }
        self
    }
}

impl<S, T> Stream for Ending<S>
where
    S: Stream<Item = Result<T, Status>> + Unpin,
{
    type Item = Result<T, Status>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        let Some((stream, end, _)) = this.inner.as_mut() else { return Poll::Ready(None) };
        // The end first: a stream with events always ready still ends.
        if let Poll::Ready(status) = end.as_mut().poll(cx) {
            this.inner = None;
            return Poll::Ready(status.map(Err));
        }
        match Pin::new(stream).poll_next(cx) {
            Poll::Ready(None) => {
                this.inner = None;
                Poll::Ready(None)
            }
            other => other,
        }
    }
}

/// How many streams one token and one connection may hold at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamLimits {
    /// Per token: its subject within its tenant.
    pub per_token: usize,
    /// Per client connection (its remote address).
    pub per_connection: usize,
}

/// Counts open streams per token and per connection, and refuses one past
/// either limit with `RESOURCE_EXHAUSTED` (`ErrorInfo` reason
/// `TOO_MANY_STREAMS`). Cheap to clone; clones share the counts.
#[derive(Debug, Clone)]
pub struct StreamCaps {
    limits: StreamLimits,
    counts: Arc<Mutex<Counts>>,
}

#[derive(Debug, Default)]
struct Counts {
    tokens: HashMap<String, usize>,
    connections: HashMap<SocketAddr, usize>,
}

impl Counts {
    fn release(&mut self, token: &str, connection: Option<SocketAddr>) {
        decrement(&mut self.tokens, token.to_owned());
        if let Some(connection) = connection {
            decrement(&mut self.connections, connection);
        }
    }
}

/// One fewer under `key`; a key that reaches zero is forgotten, so the maps
/// hold only what is open.
fn decrement<K: std::hash::Hash + Eq>(counts: &mut HashMap<K, usize>, key: K) {
    if let std::collections::hash_map::Entry::Occupied(mut entry) = counts.entry(key) {
        *entry.get_mut() -= 1;
        if *entry.get() == 0 {
            entry.remove();
        }
    }
}

impl StreamCaps {
    pub fn new(limits: StreamLimits) -> Self {
        Self { limits, counts: Arc::default() }
    }

    pub fn limits(&self) -> StreamLimits {
        self.limits
    }

    /// A slot for a stream of `call` by `token` (any text naming the
    /// credential, e.g. tenant and subject) over `connection` (None: not
    /// counted per connection), or the refusal naming the limit reached.
    pub fn admit(&self, call: &str, token: &str, connection: Option<SocketAddr>) -> Result<StreamSlot, Status> {
        let mut counts = self.counts.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let by_token = counts.tokens.get(token).copied().unwrap_or(0);
        if by_token >= self.limits.per_token {
            return Err(too_many(call, "token", self.limits.per_token));
        }
        if let Some(connection) = connection {
            let by_connection = counts.connections.get(&connection).copied().unwrap_or(0);
            if by_connection >= self.limits.per_connection {
                return Err(too_many(call, "connection", self.limits.per_connection));
            }
            *counts.connections.entry(connection).or_default() += 1;
        }
        *counts.tokens.entry(token.to_owned()).or_default() += 1;
        Ok(StreamSlot { counts: self.counts.clone(), token: token.to_owned(), connection })
    }

    /// Streams open under `token` now.
    pub fn open_for_token(&self, token: &str) -> usize {
        let counts = self.counts.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        counts.tokens.get(token).copied().unwrap_or(0)
    }
}

fn too_many(call: &str, per: &str, limit: usize) -> Status {
    Error::new(
        LimitReason::TooManyStreams,
        format!("{call}: this {per} already holds {limit} open streams, the limit; end one first"),
    )
    .with("per", per)
    .with("limit", limit)
    .into_status()
}

/// An admitted stream's place under its limits, given back when dropped.
#[derive(Debug)]
pub struct StreamSlot {
    counts: Arc<Mutex<Counts>>,
    token: String,
    connection: Option<SocketAddr>,
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut counts = self.counts.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        counts.release(&self.token, self.connection);
    }
}

#[cfg(test)]
mod tests {
    use tonic::Code;
    use tonic_types::StatusExt;

    use tokio_stream::StreamExt;

    use super::*;

    fn metadata(value: &str) -> MetadataMap {
        let mut metadata = MetadataMap::new();
        metadata.insert("grpc-timeout", value.parse().expect("ascii"));
        metadata
    }

    #[test]
    fn grpc_timeout_reads_every_unit_and_ignores_what_is_malformed() {
        assert_eq!(grpc_timeout(&metadata("2H")), Some(Duration::from_secs(7200)));
        assert_eq!(grpc_timeout(&metadata("3M")), Some(Duration::from_secs(180)));
        assert_eq!(grpc_timeout(&metadata("5S")), Some(Duration::from_secs(5)));
        assert_eq!(grpc_timeout(&metadata("250m")), Some(Duration::from_millis(250)));
        assert_eq!(grpc_timeout(&metadata("7u")), Some(Duration::from_micros(7)));
        assert_eq!(grpc_timeout(&metadata("99999999n")), Some(Duration::from_nanos(99_999_999)));
        for bad in ["", "S", "100", "999999999S", "-1S", "1x", "1.5S"] {
            assert_eq!(grpc_timeout(&metadata(bad)), None, "{bad:?}");
        }
        assert_eq!(grpc_timeout(&MetadataMap::new()), None);
    }

    fn connection(port: u16) -> Option<SocketAddr> {
        Some(SocketAddr::from(([127, 0, 0, 1], port)))
    }

    #[test]
    fn caps_admit_up_to_each_limit_refuse_past_it_and_free_a_slot_when_dropped() {
        let caps = StreamCaps::new(StreamLimits { per_token: 3, per_connection: 2 });
        let a = caps.admit("Watch", "t/alice", connection(1)).expect("1st on the connection");
        let b = caps.admit("Watch", "t/alice", connection(1)).expect("2nd on the connection: at its limit");
        let refused = caps.admit("Watch", "t/alice", connection(1)).expect_err("3rd on the connection");
        assert_eq!(refused.code(), Code::ResourceExhausted);
        let info = refused.get_error_details().error_info().cloned().expect("an ErrorInfo");
        assert_eq!((info.reason.as_str(), info.domain.as_str()), ("TOO_MANY_STREAMS", "battlelog.dev"));
        assert_eq!(info.metadata.get("per").map(String::as_str), Some("connection"));
        assert_eq!(caps.open_for_token("t/alice"), 2, "a refusal takes no slot");

        let c = caps.admit("Watch", "t/alice", connection(2)).expect("3rd of the token: at its limit");
        let refused = caps.admit("Watch", "t/alice", connection(3)).expect_err("4th of the token");
        let info = refused.get_error_details().error_info().cloned().expect("an ErrorInfo");
        assert_eq!(info.metadata.get("per").map(String::as_str), Some("token"));
        assert_eq!(info.metadata.get("limit").map(String::as_str), Some("3"));
        let other = caps.admit("Watch", "t/bob", connection(3)).expect("another token has its own count");

        drop(a);
        assert_eq!(caps.open_for_token("t/alice"), 2);
        let again = caps.admit("Watch", "t/alice", connection(1)).expect("the dropped slot is free again");
        drop((b, c, other, again));
        assert_eq!(caps.open_for_token("t/alice"), 0);
        let counts = caps.counts.lock().expect("lock");
        assert!(counts.tokens.is_empty() && counts.connections.is_empty(), "nothing is kept for closed streams");
    }

    #[tokio::test]
    async fn an_ending_stream_sends_its_end_status_and_drops_its_source_at_once() {
        let (sender, receiver) = tokio::sync::mpsc::channel::<Result<u32, Status>>(4);
        let (end_tx, end_rx) = tokio::sync::oneshot::channel::<Status>();
        let end: StreamEnd = Box::pin(async move { end_rx.await.ok() });
        let mut stream = Ending::new(tokio_stream::wrappers::ReceiverStream::new(receiver), end);
        sender.send(Ok(1)).await.expect("send");
        assert_eq!(stream.next().await.expect("an item").expect("ok"), 1);
        end_tx.send(Status::unauthenticated("expired")).expect("end");
        sender.send(Ok(2)).await.expect("send");
        let last = stream.next().await.expect("the end status").expect_err("an error");
        assert_eq!(last.code(), Code::Unauthenticated);
        assert!(sender.is_closed(), "the source is dropped as soon as the stream ends");
        assert!(stream.next().await.is_none());
    }

    #[tokio::test]
    async fn dropping_an_ending_stream_drops_its_source_and_frees_its_slot() {
        let caps = StreamCaps::new(StreamLimits { per_token: 1, per_connection: 1 });
        let slot = caps.admit("Watch", "t/alice", connection(1)).expect("a slot");
        let (sender, receiver) = tokio::sync::mpsc::channel::<Result<u32, Status>>(4);
        let stream =
            Ending::new(tokio_stream::wrappers::ReceiverStream::new(receiver), Box::pin(std::future::pending()))
                .holding(slot);
        assert!(!sender.is_closed());
        assert_eq!(caps.open_for_token("t/alice"), 1);
        drop(stream);
        assert!(sender.is_closed());
        assert_eq!(caps.open_for_token("t/alice"), 0);
    }

    #[tokio::test]
    async fn a_stream_that_ends_frees_its_slot_before_it_is_dropped() {
        let caps = StreamCaps::new(StreamLimits { per_token: 1, per_connection: 1 });
        let slot = caps.admit("Watch", "t/alice", None).expect("a slot");
        let mut stream =
            Ending::new(tokio_stream::iter([Ok::<u32, Status>(7)]), Box::pin(std::future::pending())).holding(slot);
        assert_eq!(stream.next().await.expect("an item").expect("ok"), 7);
        assert_eq!(caps.open_for_token("t/alice"), 1);
        assert!(stream.next().await.is_none());
        assert_eq!(caps.open_for_token("t/alice"), 0, "freed when the stream ended");
    }
}
