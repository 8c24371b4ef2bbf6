//! Connecting to a running stack: endpoints and their defaults, which are
//! the ports `battlelog up` listens on.

use anyhow::Context;
use battlelog_proto::v1::journal_client::JournalClient;
use battlelog_proto::v1::resolver_client::ResolverClient;
use battlelog_proto::v1::{ReadStreamRequest, RecordedEvent};
use clap::Args;
use tonic::transport::Channel;

use crate::tls::TlsArgs;

pub const DEFAULT_RESOLVER: &str = "http://127.0.0.1:50051";
pub const DEFAULT_JOURNAL: &str = "http://127.0.0.1:50053";

/// Where the journal is.
#[derive(Debug, Clone, Args)]
pub struct JournalEndpoint {
    /// The journal's gRPC endpoint.
    #[arg(long = "journal", env = "BATTLELOG_JOURNAL_URL", default_value = DEFAULT_JOURNAL)]
    pub journal_url: String,
}

/// Where the resolver is.
#[derive(Debug, Clone, Args)]
pub struct ResolverEndpoint {
    /// The resolver's gRPC endpoint.
    #[arg(long = "resolver", env = "BATTLELOG_RESOLVER_URL", default_value = DEFAULT_RESOLVER)]
    pub resolver_url: String,
}

pub async fn channel(url: &str, tls: &TlsArgs) -> anyhow::Result<Channel> {
    let endpoint = tls.endpoint(url)?;
    endpoint.connect().await.with_context(|| format!("cannot reach {url} (is `battlelog up` running?)"))
}

pub async fn journal(endpoint: &JournalEndpoint, tls: &TlsArgs) -> anyhow::Result<JournalClient<Channel>> {
    Ok(JournalClient::new(channel(&endpoint.journal_url, tls).await?))
}

pub async fn resolver(endpoint: &ResolverEndpoint, tls: &TlsArgs) -> anyhow::Result<ResolverClient<Channel>> {
    Ok(ResolverClient::new(channel(&endpoint.resolver_url, tls).await?))
}

/// Every event of a battle's stream, in version order.
pub async fn read_battle(journal: &mut JournalClient<Channel>, battle_id: &str) -> anyhow::Result<Vec<RecordedEvent>> {
    let mut events: Vec<RecordedEvent> = Vec::new();
    loop {
        let request =
            ReadStreamRequest { stream_id: battle_id.to_owned(), from_version: events.len() as u64, max_count: 0 };
        let page = journal
            .read_stream(request)
            .await
            .map_err(|s| anyhow::anyhow!("journal: {}", crate::tls::status_message(&s)))?;
        let page = page.into_inner().events;
        if page.is_empty() {
            break;
        }
        events.extend(page);
    }
    anyhow::ensure!(!events.is_empty(), "battle {battle_id} has no events in the journal");
    Ok(events)
}
