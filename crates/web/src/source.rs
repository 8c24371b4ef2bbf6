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

/// The resolver, reached over one shared channel; each call carries the
/// token of whoever the page is read for.
#[derive(Debug, Clone)]
pub struct Resolver {
    channel: Channel,
}

impl Resolver {
    pub fn new(channel: Channel) -> Self {
        Self { channel }
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
        let mut client = ResolverClient::new(self.channel.clone()).max_decoding_message_size(MAX_MESSAGE_BYTES);
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
        let mut client = ResolverClient::new(self.channel.clone()).max_decoding_message_size(MAX_MESSAGE_BYTES);
        let request = credentials.request(GetBattleRequest { battle_id: battle_id.to_owned(), at_version: None });
        Ok(client.get_battle(request).await?.into_inner())
    }

    /// The journal's log key (a C2SP verifier key, docs/protocol.md §5) as the
    /// resolver's `GetCheckpoint` gives it, read with `token` (a forum,
    /// judge or reader token: the resolver refuses a service token). `None`
    /// when the journal gives none (empty).
    pub async fn log_key(&self, token: &str) -> Result<Option<String>, Status> {
        let credentials = Credentials::new(token, None)?;
        let mut client = ResolverClient::new(self.channel.clone()).max_decoding_message_size(MAX_MESSAGE_BYTES);
        let reply = client.get_checkpoint(credentials.request(GetCheckpointRequest {})).await?.into_inner();
        let key = reply.log_key.trim().to_owned();
        Ok((!key.is_empty()).then_some(key))
    }

    /// `battle_id`'s records from `from_version` on, then live as they are
    /// committed (the resolver's `Watch`), read as [`Self::export`] reads.
    pub async fn watch(
        &self,
        battle_id: &str,
        from_version: u64,
        token: &str,
        share_key: Option<&str>,
    ) -> Result<Streaming<RecordedEvent>, Status> {
        let credentials = Credentials::new(token, share_key)?;
        let mut client = ResolverClient::new(self.channel.clone()).max_decoding_message_size(MAX_MESSAGE_BYTES);
        let request = credentials.request(WatchRequest { battle_id: battle_id.to_owned(), from_version });
        Ok(client.watch(request).await?.into_inner())
    }
}
