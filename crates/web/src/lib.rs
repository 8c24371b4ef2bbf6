//! The judges' web pages, read from the resolver over gRPC.
//!
//! Who may see what (the rights table of docs/operating.md):
//! - `GET /battles/{id}` and `GET /battles/{id}/export.jsonl`: a forum,
//!   judge or reader of the battle's tenant, with their token as
//!   `Authorization: Bearer <token>` (the resolver checks it, so the page
//!   and the RPCs admit exactly the same callers), or anyone holding the
//!   battle's share link (`?k=…`, see [`battlelog_auth::share`]), read with
//!   this service's own `reader` token and the link's key, which the
//!   resolver checks too (so the link opens a battle of any tenant). No credential: 401; a share key
//!   that does not open this battle, or a role that may not read: 403; a
//!   battle that does not exist or is another tenant's: 404.
//! - `GET /battles/{id}/live?after=<version>`: the same callers as the
//!   page, the battle's new events as server-sent events ([`live`]).
//! - `GET /verify`, `GET /healthz`, `GET /.well-known/battlelog/roller-keys`
//!   (the roller keys this site trusts, [`keys`]) and
//!   `GET /.well-known/battlelog/log-key` (the journal's log key, [`log_key`]):
//!   anyone, with no credential; `/verify` sends nothing back.
//!
//! The battle page does not carry its export: its verifier reads the
//! page's `export.jsonl` (issue 39), so both must admit exactly the same
//! callers, and do (the same credential check and resolver read each; an
//! export a page has just read is answered from [`recent`] only once the
//! resolver has admitted the caller anew, at the same head). The
//! page is sent in two parts: down to its verdict banner as soon as the
//! battle is read and audited, the rest once drawn (on a blocking thread).
//!
//! Every response is compressed (gzip or br) when the client accepts it and
//! it is worth it (tower-http's `CompressionLayer`; not the live streams,
//! whose events must not wait in a compressor's buffer).
//!
//! Modules:
//! - [`config`]: the service's configuration keys.
//! - [`source`]: reading a battle's export from the resolver, as the
//!   visitor or as the service, and following it (`Watch`).
//! - [`live`]: a battle's new events as server-sent events.
//! - [`recent`]: the battles a page read last, kept for its export.
//! - [`keys`]: the roller keys this site trusts, checked and published.
//! - [`log_key`]: the journal's log key (docs/protocol.md §5), read from the
//!   resolver once, published, and pinned by the pages.
//! - [`page`]: the battle page, server-rendered HTML with the DOM contract
//!   the in-page verifier marks.
//! - [`dice`]: a roll and its dice as SVG pictures.
//! - [`explain`]: why each result is what it is (dice, named terms, the
//!   docs/rules.md row, state changes), the state panel at any version, the
//!   translated fields table and a roll's "show the calculation".
//! - [`verify_page`]: `/verify`, which verifies an export file in the browser.
//! - [`assets`]: the JavaScript verifier's modules served from this origin,
//!   the pages' script elements, and the Content-Security-Policy that
//!   admits only them.
//! - [`reasons`]: the server audit's findings in the page's language.
//! - [`style`]: the pages' style sheet.
//! - [`i18n`]: English and Russian labels, and choosing between them.
//! - [`error`]: why a page is refused, as an HTTP status and a page in the
//!   visitor's language.
//!
//! [`serve`] runs the pages on a listener until a shutdown signal, as the
//! gRPC services' `serve` functions do; [`run`] does it from a [`Config`].

pub mod assets;
pub mod config;
pub mod dice;
pub mod error;
pub mod explain;
pub mod i18n;
pub mod keys;
pub mod live;
pub mod log_key;
pub mod page;
pub mod reasons;
pub mod recent;
pub mod source;
pub mod style;
pub mod verify_page;

use std::future::Future;
use std::sync::Arc;

use anyhow::Context;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Router, middleware};
use battlelog_auth::ShareSecret;
use battlelog_verify::AuditedRecord;
use battlelog_verify::export::{self, ExportLine};
use serde::Deserialize;
use tokio::net::TcpListener;

pub use crate::config::{Config, HttpLimits};
use crate::error::PageError;
use crate::i18n::Lang;
use crate::live::Live;
pub use crate::live::LiveLimits;
use crate::recent::{ExportFile, RecentExports};

// What its binary runs, and `battlelog up` (battlelog_runtime::service).
battlelog_runtime::service!(Config, config::SERVICE, anyhow::Error, run);
use crate::log_key::LogKey;
use crate::source::{Export, Resolver};

/// What every request shares.
#[derive(Debug, Clone)]
pub struct Pages {
    resolver: Resolver,
    /// The `reader` token share links are read with (with the link's key;
    /// the token's tenant does not matter then).
    service_token: Arc<str>,
    share: ShareSecret,
    /// The roller keys this site trusts, checked, in lowercase hex.
    trusted_roller_keys: Arc<[String]>,
    live: Live,
    /// Timeline entries per battle page (`page_events`).
    page_events: usize,
    /// The journal's log key, once the resolver gave it.
    log_key: LogKey,
    /// The battles pages read last, for their exports (`recent_exports_bytes`).
    recent: RecentExports,
}

impl Pages {
    pub fn new(resolver: Resolver, service_token: &str, share: ShareSecret) -> Self {
        Self {
            resolver,
            service_token: service_token.trim().into(),
            share,
            trusted_roller_keys: Arc::from(Vec::new()),
            live: Live::new(LiveLimits::default()),
            page_events: page::DEFAULT_PAGE_EVENTS,
            log_key: LogKey::default(),
            recent: RecentExports::new(config::DEFAULT_RECENT_EXPORTS_BYTES),
        }
    }

    /// The same, keeping up to `bytes` of the battles pages read last for
    /// their exports (0: none).
    pub fn with_recent_exports_bytes(mut self, bytes: usize) -> Self {
        self.recent = RecentExports::new(bytes);
        self
    }

    /// The same, showing `page_events` timeline entries per battle page.
    pub fn with_page_events(mut self, page_events: usize) -> Self {
        self.page_events = page_events;
        self
    }

    /// These pages trusting `keys` (each 64 hex digits of an Ed25519 public
    /// key; checked, so a bad one fails here naming it, not in a browser).
    pub fn with_trusted_roller_keys(mut self, keys: &[String]) -> anyhow::Result<Self> {
        self.trusted_roller_keys = keys::collect(keys, None)?.into();
        Ok(self)
    }

    /// These pages with the live streams' `limits`.
    pub fn with_live_limits(mut self, limits: LiveLimits) -> Self {
        self.live = Live::new(limits);
        self
    }

    /// The roller keys this site trusts (lowercase hex), as
    /// `/.well-known/battlelog/roller-keys` serves them: what the battle
    /// page and `/verify` embed for their verifier to pin
    /// (`BattlePage.trusted_roller_keys`).
    pub fn trusted_roller_keys(&self) -> &[String] {
        &self.trusted_roller_keys
    }

    /// The journal's log key as `/.well-known/battlelog/log-key` publishes
    /// it and the pages pin it (none while the resolver has not given it):
    /// read with this service's own reader token.
    pub async fn trusted_log_keys(&self) -> Vec<String> {
        self.log_key.get(&self.resolver, &self.service_token).await.into_iter().collect()
    }
}

/// The query a battle page takes.
#[derive(Debug, Deserialize)]
pub struct PageQuery {
    /// A share key.
    k: Option<String>,
    /// Any text: a language the pages lack falls back with a notice
    /// rather than refusing the page.
    lang: Option<String>,
    /// Paging, search, the head to pre-fill, the final-outcome view.
    #[serde(flatten)]
    view: page::ViewQuery,
}

/// The query of a live stream.
#[derive(Debug, Deserialize)]
pub struct LiveQuery {
    /// A share key.
    k: Option<String>,
    /// The last version the page holds: the stream starts after it.
    after: Option<u64>,
}

/// The token to read `battle_id` with: the visitor's own, or the
/// service's when the visitor holds the battle's share link.
fn credential<'a>(
    pages: &'a Pages,
    headers: &'a HeaderMap,
    battle_id: &str,
    share_key: Option<&str>,
) -> Result<&'a str, PageError> {
    if let Some(key) = share_key {
        return if pages.share.admits(battle_id, key) {
            Ok(&pages.service_token)
        } else {
            Err(PageError::BadShareKey { battle_id: battle_id.to_owned() })
        };
    }
    let header = headers.get(header::AUTHORIZATION).ok_or(PageError::NoCredential)?;
    let header = header.to_str().map_err(|_| PageError::NoCredential)?;
    header.strip_prefix("Bearer ").or_else(|| header.strip_prefix("bearer ")).ok_or(PageError::NoCredential)
}

/// The battle's records (and signed head), read with whatever credential the visitor has.
async fn read_battle(
    pages: &Pages,
    headers: &HeaderMap,
    battle_id: &str,
    share_key: Option<&str>,
) -> Result<Export, PageError> {
    battlelog_runtime::limits::battle_id(battle_id)?;
    let token = credential(pages, headers, battle_id, share_key)?;
    // A share link's key goes along: the resolver, not this service, lets it
    // reach a battle of any tenant.
    Ok(pages.resolver.export(battle_id, token, share_key).await?)
}

/// The battle's `export.jsonl`: the one written for a page just read, when
/// the resolver admits the caller anew (`GetBattle`, the same refusals as
/// `Export`) and the battle's head has not moved since; else read again.
async fn read_export_file(
    pages: &Pages,
    headers: &HeaderMap,
    battle_id: &str,
    share_key: Option<&str>,
) -> Result<Arc<ExportFile>, PageError> {
    battlelog_runtime::limits::battle_id(battle_id)?;
    if pages.recent.holds(battle_id) {
        let token = credential(pages, headers, battle_id, share_key)?;
        let battle = pages.resolver.battle(battle_id, token, share_key).await?;
        if let Some(file) = pages.recent.wait_at_head(battle_id, battle.version).await {
            return Ok(file);
        }
    }
    let export = read_battle(pages, headers, battle_id, share_key).await?;
    Ok(Arc::new(ExportFile::write(battle_id, &export)?))
}

async fn battle_page(
    State(pages): State<Pages>,
    Path(battle_id): Path<String>,
    Query(query): Query<PageQuery>,
    headers: HeaderMap,
) -> Result<Response, PageError> {
    let export = read_battle(&pages, &headers, &battle_id, query.k.as_deref()).await?;
    // Its file, for the export the page's verifier asks for next: promised
    // now (an export asked for meanwhile waits for it), written once the
    // page is sent.
    let head_version = export.events.last().and_then(|e| e.event.as_ref()).map(|record| record.version);
    let for_export = head_version
        .filter(|_| pages.recent.enabled())
        .map(|head| (export.clone(), pages.recent.promise(&battle_id, head)));
    let trusted_log_keys = pages.trusted_log_keys().await;
    let accept_language = headers.get(header::ACCEPT_LANGUAGE).and_then(|v| v.to_str().ok());
    let (lang, unknown_lang) = Lang::from_query(query.lang.as_deref(), accept_language);
    let mut parts = PageParts {
        lines: Vec::new(),
        report: battlelog_verify::AuditReport::default(),
        lang,
        unknown_lang,
        share_key: query.k.clone(),
        trusted_roller_keys: Arc::clone(&pages.trusted_roller_keys),
        trusted_log_keys,
        checkpoint_note: None,
        appeal_deadline: None,
        view: page::View::from_query(&query.view),
        page_events: pages.page_events,
        battle_id,
    };
    parts.audit(export);
    // The page down to its verdict banner now; the appeal deadline (a read
    // of its own) and the rest of the page after, while the browser paints
    // the first part and starts the check.
    let top = parts.page().top();
    let token = credential(&pages, &headers, &parts.battle_id, parts.share_key.as_deref())?.to_owned();
    let (sender, receiver) = tokio::sync::mpsc::channel::<Result<String, std::convert::Infallible>>(2);
    // Two places: this one cannot be full.
    let _ = sender.try_send(Ok(top));
    tokio::spawn(async move {
        if parts.report.closed.is_some() {
            parts.appeal_deadline = appeal_deadline(&pages, &parts.battle_id, &token, parts.share_key.as_deref()).await;
        }
        // Drawing the timeline is the page's longest step: off the
        // runtime's threads, which serve the export the page asks for meanwhile.
        let battle_id = parts.battle_id.clone();
        if !sender.is_closed()
            && let Ok(rest) = tokio::task::spawn_blocking(move || parts.page().rest()).await
        {
            let _ = sender.send(Ok(rest)).await;
        }
        // The page ends here (its body ends with the sender), then its
        // export's file is written: the page first, its parse being the
        // browser's longest step.
        drop(sender);
        if let Some((export, promise)) = for_export {
            let _ = tokio::task::spawn_blocking(move || {
                if let Ok(file) = ExportFile::write(&battle_id, &export) {
                    promise.fulfil(file.compressed());
                }
            })
            .await;
        }
    });
    Ok((
        [(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"))],
        axum::body::Body::from_stream(tokio_stream::wrappers::ReceiverStream::new(receiver)),
    )
        .into_response())
}

/// Everything a battle page is drawn from, owned: its first part is sent
/// before its rest is drawn, on another thread.
struct PageParts {
    battle_id: String,
    lines: Vec<ExportLine>,
    /// The server's own audit of the same records the page shows: its
    /// disputes and rulings lists, and its findings next to the browser's.
    report: battlelog_verify::AuditReport,
    lang: Lang,
    unknown_lang: Option<String>,
    share_key: Option<String>,
    trusted_roller_keys: Arc<[String]>,
    trusted_log_keys: Vec<String>,
    checkpoint_note: Option<String>,
    appeal_deadline: Option<String>,
    view: page::View,
    page_events: usize,
}

impl PageParts {
    /// The lines the page draws and the server's audit of them, with its
    /// check of the trailer (docs/protocol.md §5) against the key the site
    /// publishes (a finding next to the browser's when it fails).
    fn audit(&mut self, export: Export) {
        let Export { events, signed_head } = export;
        let battle_id = &self.battle_id;
        self.lines = events.iter().map(|event| ExportLine::new(battle_id, event)).collect();
        let trailer = signed_head.as_ref().map(export::trailer_from);
        self.checkpoint_note = trailer.as_ref().map(|t| t.checkpoint.clone()).filter(|note| !note.is_empty());
        let records: Vec<AuditedRecord> =
            events.into_iter().map(|event| AuditedRecord::from_recorded(battle_id, event)).collect();
        self.report = battlelog_verify::audit(battle_id, &records);
        let site_log_key = self.trusted_log_keys.first().and_then(|key| battlelog_tlog::VerifierKey::parse(key).ok());
        let trust = battlelog_verify::audit::LogTrust { log_key: site_log_key.as_ref(), require_trailer: false };
        battlelog_verify::audit::check_trailer(&mut self.report, &records, trailer.as_ref(), &trust);
    }

    fn page(&self) -> page::BattlePage<'_> {
        page::BattlePage {
            battle_id: &self.battle_id,
            lines: &self.lines,
            report: &self.report,
            lang: self.lang,
            unknown_lang: self.unknown_lang.as_deref(),
            share_key: self.share_key.as_deref(),
            trusted_roller_keys: &self.trusted_roller_keys,
            trusted_log_keys: &self.trusted_log_keys,
            checkpoint_note: self.checkpoint_note.as_deref(),
            appeal_deadline: self.appeal_deadline.clone(),
            view: &self.view,
            page_events: self.page_events,
        }
    }
}

/// A closed battle's appeal deadline, readable: the resolver's (its window
/// is its config, not a record). The page is whole without it: a failure
/// here is logged and the deadline left out.
async fn appeal_deadline(pages: &Pages, battle_id: &str, token: &str, share_key: Option<&str>) -> Option<String> {
    match pages.resolver.battle(battle_id, token, share_key).await {
        Ok(battle) => battle.appeal_deadline_unix_micros.and_then(page::record::time).map(|(_, readable)| readable),
        Err(status) => {
            tracing::warn!(battle_id, code = ?status.code(), "cannot read the appeal deadline");
            None
        }
    }
}

/// `GET /battles/{id}/export.jsonl`: the battle's export, to the same
/// visitors as its page (the page's verifier reads it here too, issue 39).
/// Compressed like every response; cacheable by the visitor's own browser
/// only (`private`), and asked again each time (`no-cache`: the rights are
/// checked on every read), with its hash as its `ETag`, so that a browser
/// that holds the same export gets a 304 rather than the export again.
async fn export_file(
    State(pages): State<Pages>,
    Path(battle_id): Path<String>,
    Query(query): Query<PageQuery>,
    headers: HeaderMap,
) -> Result<Response, PageError> {
    let file = read_export_file(&pages, &headers, &battle_id, query.k.as_deref()).await?;
    // A file kept compressed goes as it is to a client that takes brotli
    // (the compression layer leaves an encoded answer alone); else the
    // layer compresses the text as it would any answer.
    let accept = headers.get(header::ACCEPT_ENCODING).and_then(|v| v.to_str().ok()).unwrap_or_default();
    let brotli = file.brotli.clone().filter(|_| recent::accepts_brotli(accept));
    // One ETag a representation: the compressed bytes are not the text's.
    let etag = if brotli.is_some() { format!("{}-br\"", file.etag.trim_end_matches('"')) } else { file.etag.clone() };
    let cache = [
        (header::CACHE_CONTROL, HeaderValue::from_static("private, no-cache")),
        (header::ETAG, HeaderValue::from_str(&etag).map_err(|e| PageError::Internal(e.to_string()))?),
        (header::VARY, HeaderValue::from_static("accept-encoding")),
    ];
    let held = headers.get_all(header::IF_NONE_MATCH).iter().filter_map(|v| v.to_str().ok());
    if held.flat_map(|v| v.split(',')).any(|tag| tag.trim().trim_start_matches("W/") == etag) {
        return Ok((axum::http::StatusCode::NOT_MODIFIED, cache).into_response());
    }
    let disposition = format!("attachment; filename=\"{battle_id}.jsonl\"");
    let disposition = HeaderValue::from_str(&disposition).map_err(|e| PageError::Internal(e.to_string()))?;
    let content_type = HeaderValue::from_static("application/x-ndjson; charset=utf-8");
    let mut response =
        (cache, [(header::CONTENT_TYPE, content_type), (header::CONTENT_DISPOSITION, disposition)], file.text.clone())
            .into_response();
    if let Some(packed) = brotli {
        *response.body_mut() = axum::body::Body::from(packed);
        response.headers_mut().insert(header::CONTENT_ENCODING, HeaderValue::from_static("br"));
    }
    Ok(response)
}

#[derive(Debug, Deserialize)]
struct VerifyQuery {
    /// Any text: a language the pages lack falls back with a notice.
    lang: Option<String>,
    /// A roller key to pin, pre-filled in the page's key field.
    roller_key: Option<String>,
    /// A log key to pin (a C2SP verifier key), pre-filled in its field.
    log_key: Option<String>,
}

/// The browser's `Last-Event-ID` when an `EventSource` reconnects: the
/// last version it received.
fn last_event_id(headers: &HeaderMap) -> Option<u64> {
    headers.get("last-event-id")?.to_str().ok()?.trim().parse().ok()
}

async fn live_stream(
    State(pages): State<Pages>,
    Path(battle_id): Path<String>,
    Query(query): Query<LiveQuery>,
    headers: HeaderMap,
) -> Result<Response, PageError> {
    battlelog_runtime::limits::battle_id(&battle_id)?;
    let token = credential(&pages, &headers, &battle_id, query.k.as_deref())?;
    // A reconnecting EventSource resumes after what it already has.
    let after = match (query.after, last_event_id(&headers)) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    };
    live::stream(&pages.live, &pages.resolver, &battle_id, after, token, query.k.as_deref()).await
}

async fn roller_keys(State(pages): State<Pages>) -> Response {
    keys::response(&pages.trusted_roller_keys)
}

/// `GET /.well-known/battlelog/log-key`: anyone, no credential.
async fn log_key(State(pages): State<Pages>) -> Response {
    log_key::response(pages.trusted_log_keys().await.into_iter().next())
}

async fn verify(State(pages): State<Pages>, Query(query): Query<VerifyQuery>, headers: HeaderMap) -> Response {
    let accept_language = headers.get(header::ACCEPT_LANGUAGE).and_then(|v| v.to_str().ok());
    let (lang, unknown_lang) = Lang::from_query(query.lang.as_deref(), accept_language);
    let trusted_log_keys = pages.trusted_log_keys().await;
    let page = verify_page::VerifyPage {
        lang,
        unknown_lang: unknown_lang.as_deref(),
        roller_key: query.roller_key.as_deref(),
        trusted_roller_keys: pages.trusted_roller_keys(),
        log_key: query.log_key.as_deref(),
        trusted_log_keys: &trusted_log_keys,
    };
    page.render().into_response()
}

/// Every response: the Content-Security-Policy that lets only the pages'
/// own scripts run, no framing, no sniffing, and no caching of pages that
/// a credential opened.
async fn security_headers(request: axum::extract::Request, next: middleware::Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    if let Ok(policy) = HeaderValue::from_str(&assets::CONTENT_SECURITY_POLICY) {
        headers.insert(header::CONTENT_SECURITY_POLICY, policy);
    }
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    // A response that says how it may be cached (the public roller keys)
    // keeps it.
    if !headers.contains_key(header::CACHE_CONTROL) {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}

/// The pages' routes.
pub fn router(pages: Pages) -> Router {
    Router::new()
        .route("/battles/{battle_id}", get(battle_page))
        .route("/battles/{battle_id}/export.jsonl", get(export_file))
        .route("/verify", get(verify))
        .route("/battles/{battle_id}/live", get(live_stream))
        .route(keys::WELL_KNOWN_PATH, get(roller_keys))
        .route(log_key::WELL_KNOWN_PATH, get(log_key))
        .route("/healthz", get(|| async { "ok\n" }))
        .fallback(|| async { PageError::NoSuchPage })
        .layer(middleware::from_fn(error::error_pages))
        .layer(middleware::from_fn(security_headers))
        // Outside the error pages, so that they are compressed too; SSE is
        // left alone by the default predicate (text/event-stream).
        .layer(tower_http::compression::CompressionLayer::new().gzip(true).br(true))
        .merge(assets::routes())
        .with_state(pages)
}

/// Serves the pages on `listener` until `shutdown` resolves, then lets the
/// requests in flight finish, within `limits`
/// ([`battlelog_runtime::http::serve_limited`]); with `metrics`, each
/// request is counted there and logged once (target `battlelog::access`).
/// For tests and embedding; a deployment calls [`run`].
pub async fn serve(
    pages: Pages,
    listener: TcpListener,
    limits: HttpLimits,
    metrics: Option<battlelog_runtime::observe_http::HttpMetrics>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    // Live streams do not end by themselves: they are ended at the shutdown,
    // so that the requests in flight can finish.
    let live = pages.live.clone();
    let shutdown = async move {
        shutdown.await;
        live.stop();
    };
    battlelog_runtime::http::serve_limited(router(pages), listener, limits, metrics, shutdown).await
}

/// Builds the service from `config` (reading its token and secret files,
/// and the TLS files) and serves it on `listener` until `shutdown`; serves
/// `/metrics` on `metrics_listen` when set, and prints its readiness line
/// once every file is read.
pub async fn run(
    config: &Config,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let mut observed = battlelog_runtime::serve::Observed::configured(config::SERVICE, config.shared.metrics_listen);
    let metrics = battlelog_runtime::observe_http::HttpMetrics::register(config::SERVICE, observed.registry());
    let pages = pages(config)?;
    let ready = observed.ready(listener.local_addr()?).await?;
    let served = serve(pages, listener, config.http_limits.clone(), Some(metrics), shutdown).await;
    ready.stop().await;
    served.context("serving the web pages")
}

/// The service's state from `config`: every file is read now, so that a
/// bad one fails the start rather than the first visitor.
pub fn pages(config: &Config) -> anyhow::Result<Pages> {
    let token_file = config.token_file.as_deref().context("token_file is required")?;
    let token = battlelog_auth::read_token_file(token_file)?;
    let secret_file = config.share_secret_file.as_deref().context("share_secret_file is required")?;
    let share = ShareSecret::read(secret_file)?;
    let trusted_roller_keys = config.roller_keys()?;
    let tls = config.client_tls.client_config()?;
    let endpoint = battlelog_runtime::tls::endpoint(&config.resolver_url, tls.as_ref())?;
    // Each lazy channel is a connection of its own.
    let channels = (0..config.resolver_connections).map(|_| endpoint.connect_lazy()).collect();
    Ok(Pages::new(Resolver::pool(channels), &token, share)
        .with_page_events(config.page_events)
        .with_recent_exports_bytes(config.recent_exports_bytes)
        .with_trusted_roller_keys(&trusted_roller_keys)?
        .with_live_limits(config.live_limits()))
}
