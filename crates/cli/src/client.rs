//! Connecting to a running stack: endpoints — given, else those of the
//! `battlelog up` running on the data dir ([`crate::endpoints`]), else the
//! ports `up` listens on by default — and the token every call carries.

use anyhow::Context;
use battlelog_auth::grpc::Bearer;
use battlelog_auth::{AuthChannel, Role};
use battlelog_proto::error::Lang;
use battlelog_proto::v1::journal_client::JournalClient;
use battlelog_proto::v1::resolver_client::ResolverClient;
use battlelog_proto::v1::{ExportRequest, ExportResponse, RecordedEvent, SignedHeadResponse};
use battlelog_runtime::limits::MAX_MESSAGE_BYTES;
use clap::Args;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;

use crate::tls::TlsArgs;

pub const DEFAULT_RESOLVER: &str = "http://127.0.0.1:50051";
pub const DEFAULT_JOURNAL: &str = "http://127.0.0.1:50053";

/// Where the journal is.
#[derive(Debug, Clone, Args)]
pub struct JournalEndpoint {
    /// The journal's gRPC endpoint. Default: the journal of the `battlelog
    /// up` running on --data-dir (it says where in its data dir), else
    /// http://127.0.0.1:50053.
    #[arg(long = "journal", env = "BATTLELOG_JOURNAL_URL")]
    pub journal_url: Option<String>,
}

impl JournalEndpoint {
    /// The flag (or variable), else the running `up`'s, else the default.
    pub fn url(&self, tls: &TlsArgs) -> String {
        self.journal_url
            .clone()
            .or_else(|| crate::endpoints::running(&tls.data_dir).map(|up| up.journal))
            .unwrap_or_else(|| DEFAULT_JOURNAL.to_owned())
    }
}

/// Where the resolver is.
#[derive(Debug, Clone, Args)]
pub struct ResolverEndpoint {
    /// The resolver's gRPC endpoint. Default: the resolver of the
    /// `battlelog up` running on --data-dir (it says where in its data dir),
    /// else http://127.0.0.1:50051.
    #[arg(long = "resolver", env = "BATTLELOG_RESOLVER_URL")]
    pub resolver_url: Option<String>,
}

impl ResolverEndpoint {
    /// The flag (or variable), else the running `up`'s, else the default.
    pub fn url(&self, tls: &TlsArgs) -> String {
        self.resolver_url
            .clone()
            .or_else(|| crate::endpoints::running(&tls.data_dir).map(|up| up.resolver))
            .unwrap_or_else(|| DEFAULT_RESOLVER.to_owned())
    }
}

/// The language of the user's locale (`LC_ALL`, else `LC_MESSAGES`, else
/// `LANG`, as POSIX orders them): Russian for a `ru…` locale, else English.
/// The CLI asks the services for refusals in it (`accept-language`).
pub fn language() -> Lang {
    let locale = ["LC_ALL", "LC_MESSAGES", "LANG"]
        .iter()
        .find_map(|name| std::env::var(name).ok().filter(|value| !value.is_empty()))
        .unwrap_or_default();
    if locale.to_ascii_lowercase().starts_with("ru") { Lang::Ru } else { Lang::En }
}

/// `channel` with `token` and the user's [`language`] on every call.
fn authed(channel: Channel, token: &str) -> anyhow::Result<AuthChannel> {
    let bearer = Bearer::new(token)?.with_accept_language(language().tag())?;
    Ok(InterceptedService::new(channel, bearer))
}

pub async fn channel(url: &str, tls: &TlsArgs) -> anyhow::Result<Channel> {
    let endpoint = tls.endpoint(url)?;
    endpoint.connect().await.with_context(|| format!("cannot reach {url} (is `battlelog up` running?)"))
}

/// The journal admits only the `service` role: a token for it comes from
/// `--token`, or is minted with the development key of `battlelog up`.
pub async fn journal(endpoint: &JournalEndpoint, tls: &TlsArgs) -> anyhow::Result<JournalClient<AuthChannel>> {
    let channel = channel(&endpoint.url(tls), tls).await?;
    let token = tls.token_for(Role::Service, "battlelog-cli")?;
    Ok(JournalClient::new(authed(channel, &token)?).max_decoding_message_size(MAX_MESSAGE_BYTES))
}

/// The resolver, called as `role` (the role a development token is minted
/// with; a `--token` is used as it is).
pub async fn resolver(
    endpoint: &ResolverEndpoint,
    tls: &TlsArgs,
    role: Role,
) -> anyhow::Result<ResolverClient<AuthChannel>> {
    let channel = channel(&endpoint.url(tls), tls).await?;
    let token = tls.token_for(role, "battlelog-cli")?;
    Ok(ResolverClient::new(authed(channel, &token)?).max_decoding_message_size(MAX_MESSAGE_BYTES))
}

/// Every record of a battle, in version order, as the resolver exports it.
pub async fn read_battle(
    resolver: &mut ResolverClient<AuthChannel>,
    battle_id: &str,
) -> anyhow::Result<Vec<RecordedEvent>> {
    read_export(resolver, battle_id).await.map(|(events, _)| events)
}

/// Every record of a battle, in version order, and the journal's signed
/// head past the last one (docs/protocol.md §5: the export's trailer), as the
/// resolver exports them. Pages are asked for until one comes back empty
/// with the signed head. An empty page without it is asked again once: the
/// head may have moved between the resolver's read and its signature (the
/// next page then holds the new events); empty twice, the journal keeps no
/// transparency log and the export has no trailer.
pub async fn read_export(
    resolver: &mut ResolverClient<AuthChannel>,
    battle_id: &str,
) -> anyhow::Result<(Vec<RecordedEvent>, Option<SignedHeadResponse>)> {
    let (events, signed_head) = page_export(|from_version| {
        let mut resolver = resolver.clone();
        let request = ExportRequest { battle_id: battle_id.to_owned(), from_version };
        async move {
            let page =
                resolver.export(request).await.map_err(|s| anyhow::anyhow!("resolver: {}", status_message(&s)))?;
            Ok(page.into_inner())
        }
    })
    .await?;
    anyhow::ensure!(!events.is_empty(), "battle {battle_id} has no events");
    Ok((events, signed_head))
}

/// [`read_export`]'s paging over `ask` (one `Export` call from a version).
async fn page_export<F, Fut>(mut ask: F) -> anyhow::Result<(Vec<RecordedEvent>, Option<SignedHeadResponse>)>
where
    F: FnMut(u64) -> Fut,
    Fut: Future<Output = anyhow::Result<ExportResponse>>,
{
    let mut events: Vec<RecordedEvent> = Vec::new();
    let mut empty_without_head = false;
    let signed_head = loop {
        let page = ask(events.len() as u64).await?;
        if !page.events.is_empty() {
            events.extend(page.events);
            empty_without_head = false;
            continue;
        }
        match page.signed_head {
            Some(signed) => break Some(signed),
            None if empty_without_head || events.is_empty() => break None,
            None => empty_without_head = true,
        }
    };
    Ok((events, signed_head))
}

/// A failed call's message: a battlelog error's in the user's language
/// (read back with `Error::from_status`: the `LocalizedMessage` the server
/// chose by the `accept-language` the CLI sent), else the status message
/// with the transport's causes, if any. A refused TLS handshake surfaces
/// only at the first call (TLS 1.3 finishes the client's side before the
/// server checks its certificate), and the status alone then says no more
/// than "operation was canceled".
pub fn status_message(status: &tonic::Status) -> String {
    if let Some(error) = battlelog_proto::error::Error::from_status(status) {
        return error.localized(language()).to_owned();
    }
    let mut message = status.message().to_owned();
    let mut source = std::error::Error::source(status);
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !message.contains(&cause_text) {
            message.push_str(": ");
            message.push_str(&cause_text);
        }
        source = cause.source();
    }
    message
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::sync::Mutex;

    use battlelog_proto::v1::JournalRecord;

    use super::*;

    fn event(version: u64) -> RecordedEvent {
        RecordedEvent { event: Some(JournalRecord { version, ..Default::default() }), ..Default::default() }
    }

    fn head(version: u64) -> SignedHeadResponse {
        SignedHeadResponse { version, ..Default::default() }
    }

    /// Pages `script` in order, recording the versions asked from.
    async fn paged(script: Vec<ExportResponse>) -> (Vec<u64>, Option<SignedHeadResponse>, Vec<u64>) {
        let pages = Mutex::new(VecDeque::from(script));
        let asked = Mutex::new(Vec::new());
        let (events, signed) = page_export(|from| {
            asked.lock().expect("lock").push(from);
            let page = pages.lock().expect("lock").pop_front().expect("no more pages were scripted");
            async move { Ok(page) }
        })
        .await
        .expect("paged");
        let versions = events.iter().filter_map(|e| e.event.as_ref()).map(|r| r.version).collect();
        (versions, signed, asked.into_inner().expect("lock"))
    }

    fn page(events: &[u64], signed_head: Option<u64>) -> ExportResponse {
        ExportResponse { events: events.iter().copied().map(event).collect(), signed_head: signed_head.map(head) }
    }

    /// Pages until one comes back empty with the signed head.
    #[tokio::test]
    async fn pages_end_at_the_signed_head() {
        let (versions, signed, asked) = paged(vec![page(&[0, 1], None), page(&[2], None), page(&[], Some(2))]).await;
        assert_eq!(versions, [0, 1, 2]);
        assert_eq!(signed.map(|s| s.version), Some(2));
        assert_eq!(asked, [0, 2, 3]);
    }

    /// The head moved between the resolver's read and its signature: no
    /// signed head on the empty page, and the next page holds the new
    /// event; paging goes on to the new head's signature.
    #[tokio::test]
    async fn a_head_that_moved_meanwhile_is_paged_on_to() {
        let script = vec![page(&[0, 1], None), page(&[], None), page(&[2], None), page(&[], Some(2))];
        let (versions, signed, asked) = paged(script).await;
        assert_eq!(versions, [0, 1, 2]);
        assert_eq!(signed.map(|s| s.version), Some(2));
        assert_eq!(asked, [0, 2, 2, 3]);
    }

    /// A resolver or journal without signed heads: empty twice, no trailer.
    #[tokio::test]
    async fn without_signed_heads_the_export_has_no_trailer() {
        let (versions, signed, asked) = paged(vec![page(&[0], None), page(&[], None), page(&[], None)]).await;
        assert_eq!(versions, [0]);
        assert_eq!(signed, None);
        assert_eq!(asked, [0, 1, 1]);
    }
}
