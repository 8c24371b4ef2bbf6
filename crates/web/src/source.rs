//! Reading a battle from the resolver, as the visitor or as the service.
//!
//! The page is built from the battle's export (the resolver's `Export`
//! RPC): the records exactly as the journal hashed them. The same text is
//! what the page's JavaScript verifies and what `export.jsonl` serves, so
//! that what a judge sees, checks and downloads is one thing. Past the head
//! the resolver gives the journal's signed head (docs/protocol.md §5), which
//! becomes the export's trailer line; and the journal's log key
//! ([`Resolver::log_key`]), which the site publishes and its pages pin.

use battlelog_auth::share::SHARE_KEY_METADATA;
use battlelog_proto::error::{AuthReason, Error};
use battlelog_proto::v1::resolver_client::ResolverClient;
use battlelog_proto::v1::{
    ExportRequest, GetBattleRequest, GetBattleResponse, GetCheckpointRequest, RecordedEvent, SignedHeadResponse,
    WatchRequest,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use battlelog_runtime::limits::MAX_MESSAGE_BYTES;
use tonic::metadata::AsciiMetadataValue;
use tonic::transport::Channel;
use tonic::{Request, Status, Streaming};

/// The metadata of a call read for a visitor: the token and, for a share
/// link, its key.
#[derive(Debug, Clone)]
struct Credentials {
    bearer: AsciiMetadataValue,
    share_key: Option<AsciiMetadataValue>,
}

impl Credentials {
    fn new(token: &str, share_key: Option<&str>) -> Result<Self, Status> {
        let bearer: AsciiMetadataValue = format!("Bearer {}", token.trim()).parse().map_err(|_| {
            Error::new(AuthReason::TokenMalformed, "the token is not a valid header value").into_status()
        })?;
        let share_key: Option<AsciiMetadataValue> = share_key
            .map(|key| {
                key.parse().map_err(|_| {
                    Error::new(AuthReason::ShareKeyMalformed, "the share key is not a valid header value").into_status()
                })
            })
            .transpose()?;
        Ok(Self { bearer, share_key })
    }

    fn request<T>(&self, message: T) -> Request<T> {
        let mut request = Request::new(message);
        // The page's span's trace, continued by the resolver (as every
        // service-to-service call does through battlelog_auth::Bearer).
        battlelog_auth::inject_trace_context(request.metadata_mut());
        request.metadata_mut().insert("authorization", self.bearer.clone());
        if let Some(key) = &self.share_key {
            request.metadata_mut().insert(SHARE_KEY_METADATA, key.clone());
        }
        request
    }
}

/// A battle's export as the resolver gives it: its records, and the signed
/// head the last (empty) page came with, when the resolver gave one.
#[derive(Debug, Clone, Default)]
pub struct Export {
    pub events: Vec<RecordedEvent>,
    pub signed_head: Option<SignedHeadResponse>,
}

/// The resolver, reached over a bounded pool of connections (config key
/// `resolver_connections`); each call carries the token of whoever the
/// page is read for. Calls take the connections in turn; a `Watch` takes
/// the one with the fewest streams open, so that the live streams are
/// spread over the pool rather than held by one connection, which the
/// resolver caps (its `max_watches_per_connection`).
#[derive(Debug, Clone)]
pub struct Resolver {
    channels: Arc<[Channel]>,
    /// Streams open per connection, by index in `channels`.
    watching: Arc<[AtomicUsize]>,
    next: Arc<AtomicUsize>,
}

/// A `Watch` stream and the place it holds on its connection, given back
/// when it is dropped.
#[derive(Debug)]
pub struct Watching {
    pub stream: Streaming<RecordedEvent>,
    _lease: Lease,
}

#[derive(Debug)]
struct Lease {
    watching: Arc<[AtomicUsize]>,
    index: usize,
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.watching[self.index].fetch_sub(1, Ordering::AcqRel);
    }
}

impl Resolver {
    /// Over one connection.
    pub fn new(channel: Channel) -> Self {
        Self::pool(vec![channel])
    }

    /// Over `channels`, each its own connection (at least one).
    pub fn pool(channels: Vec<Channel>) -> Self {
        assert!(!channels.is_empty(), "a pool of at least one connection");
        let watching = channels.iter().map(|_| AtomicUsize::new(0)).collect();
        Self { channels: channels.into(), watching, next: Arc::new(AtomicUsize::new(0)) }
    }

    /// The streams open on each connection of the pool.
    pub fn watching(&self) -> Vec<usize> {
        self.watching.iter().map(|count| count.load(Ordering::Acquire)).collect()
    }

    /// The next connection in turn, for a call that ends with its answer.
    fn channel(&self) -> Channel {
        let index = self.next.fetch_add(1, Ordering::Relaxed) % self.channels.len();
        self.channels[index].clone()
    }

    /// The connection with the fewest streams, counted as holding one more.
    fn lease(&self) -> (Channel, Lease) {
        let index =
            (0..self.channels.len()).min_by_key(|&index| self.watching[index].load(Ordering::Acquire)).unwrap_or(0);
        self.watching[index].fetch_add(1, Ordering::AcqRel);
        (self.channels[index].clone(), Lease { watching: Arc::clone(&self.watching), index })
    }

    /// Every record of `battle_id` in version order, read with `token` and,
    /// for a visitor who came with a share link, its key: the resolver
    /// checks the token's role and either the key or the token's tenant
    /// (another tenant's battle is NOT_FOUND, as one that does not exist).
    /// The empty page past the head carries the signed head when the
    /// journal has one; a head that moved meanwhile gives a non-empty page,
    /// read on as usual.
    pub async fn export(&self, battle_id: &str, token: &str, share_key: Option<&str>) -> Result<Export, Status> {
        let credentials = Credentials::new(token, share_key)?;
        let mut client = ResolverClient::new(self.channel()).max_decoding_message_size(MAX_MESSAGE_BYTES);
        let mut events: Vec<RecordedEvent> = Vec::new();
        // An empty page without a signed head: the battle moved between the
        // resolver's read and the journal's signature (it signs only the
        // head the page ended at). Ask once more before giving up the
        // trailer, as `battlelog export` does, or a pinned log key would
        // fail the page of a busy battle for nothing.
        let mut empty_without_head = false;
        loop {
            let request = credentials
                .request(ExportRequest { battle_id: battle_id.to_owned(), from_version: events.len() as u64 });
            let page = client.export(request).await?.into_inner();
            if !page.events.is_empty() {
                events.extend(page.events);
                empty_without_head = false;
                continue;
            }
            match page.signed_head {
                Some(signed) => return Ok(Export { events, signed_head: Some(signed) }),
                None if empty_without_head || events.is_empty() => return Ok(Export { events, signed_head: None }),
                None => empty_without_head = true,
            }
        }
    }

    /// `battle_id`'s state as the resolver holds it now (`GetBattle`), read
    /// as [`Self::export`] reads (the same refusals): whether it is closed,
    /// its head version, its appeal deadline.
    pub async fn battle(
        &self,
        battle_id: &str,
        token: &str,
        share_key: Option<&str>,
    ) -> Result<GetBattleResponse, Status> {
        let credentials = Credentials::new(token, share_key)?;
        let mut client = ResolverClient::new(self.channel()).max_decoding_message_size(MAX_MESSAGE_BYTES);
        let request = credentials.request(GetBattleRequest { battle_id: battle_id.to_owned(), at_version: None });
        Ok(client.get_battle(request).await?.into_inner())
    }

    /// The journal's log key (a C2SP verifier key, docs/protocol.md §5) as the
    /// resolver's `GetCheckpoint` gives it, read with `token` (a forum,
    /// judge or reader token: the resolver refuses a service token). `None`
    /// when the journal gives none (empty).
    pub async fn log_key(&self, token: &str) -> Result<Option<String>, Status> {
        let credentials = Credentials::new(token, None)?;
        let mut client = ResolverClient::new(self.channel()).max_decoding_message_size(MAX_MESSAGE_BYTES);
        let reply = client.get_checkpoint(credentials.request(GetCheckpointRequest {})).await?.into_inner();
        let key = reply.log_key.trim().to_owned();
        Ok((!key.is_empty()).then_some(key))
    }

    /// `battle_id`'s records from `from_version` on, then live as they are
    /// committed (the resolver's `Watch`), read as [`Self::export`] reads,
    /// on the pool's least busy connection.
    pub async fn watch(
        &self,
        battle_id: &str,
        from_version: u64,
        token: &str,
        share_key: Option<&str>,
    ) -> Result<Watching, Status> {
        let credentials = Credentials::new(token, share_key)?;
        let (channel, lease) = self.lease();
        let mut client = ResolverClient::new(channel).max_decoding_message_size(MAX_MESSAGE_BYTES);
        let request = credentials.request(WatchRequest { battle_id: battle_id.to_owned(), from_version });
        let stream = client.watch(request).await?.into_inner();
        Ok(Watching { stream, _lease: lease })
    }

    /// The tenant that owns `battle_id` (its `BattleOpened`'s), read as
    /// [`Self::export`] reads: the first page of its export, of which only
    /// the first event is looked at (a unary call: no `Watch` slot of the
    /// resolver's is taken for it, even for a moment). `None` if the
    /// battle's first event is not a `BattleOpened`.
    pub async fn tenant(
        &self,
        battle_id: &str,
        token: &str,
        share_key: Option<&str>,
    ) -> Result<Option<String>, Status> {
        let credentials = Credentials::new(token, share_key)?;
        let mut client = ResolverClient::new(self.channel()).max_decoding_message_size(MAX_MESSAGE_BYTES);
        let request = credentials.request(ExportRequest { battle_id: battle_id.to_owned(), from_version: 0 });
        let page = client.export(request).await?.into_inner();
        let first = page.events.first().and_then(|event| event.event.as_ref());
        let opened = first.and_then(|record| battlelog_proto::battle::decode(record).ok());
        Ok(match opened {
            Some(battlelog_proto::v1::battle_event::Event::BattleOpened(opened)) => Some(opened.tenant),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn streams_take_the_least_busy_connection_of_the_pool_and_give_it_back() {
        // Lazy channels: nothing is connected to count leases.
        let endpoint = tonic::transport::Endpoint::from_static("http://127.0.0.1:1");
        let resolver = Resolver::pool((0..3).map(|_| endpoint.connect_lazy()).collect());
        let first: Vec<Lease> = (0..3).map(|_| resolver.lease().1).collect();
        assert_eq!(resolver.watching(), vec![1, 1, 1], "one stream on each before a second on any");
        let fourth = resolver.lease().1;
        assert_eq!(resolver.watching(), vec![2, 1, 1]);
        drop(first);
        assert_eq!(resolver.watching(), vec![1, 0, 0], "given back when dropped");
        let fifth = resolver.lease().1;
        assert_eq!(fifth.index, 1, "the least busy one");
        drop((fourth, fifth));
        assert_eq!(resolver.watching(), vec![0, 0, 0]);
    }
}
