//! The development beacon: drand's HTTP API over a [`DevSigner`], on the
//! wall clock. Round r is served from `genesis_time + (r − 1) × period`
//! on, never before (a round not yet out is 404 naming when it comes out);
//! a published round is immutable and cacheable for good.
//!
//! Who may call it: anyone who can reach its port. It holds no secret worth
//! keeping (its key is derived from a label, for development and tests
//! only), and it is never what production pins (`deploy/` pins quicknet).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use beacon::ChainInfo;
use beacon::dev::DevSigner;
use serde_json::json;
use tokio::net::TcpListener;

/// drand's name for the scheme every battlelog beacon uses.
pub const SCHEME: &str = "bls-unchained-g1-rfc9380";

/// A development beacon: its signer, served over HTTP.
#[derive(Clone)]
pub struct DevBeacon {
    signer: Arc<DevSigner>,
}

impl std::fmt::Debug for DevBeacon {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DevBeacon").field("chain", self.chain()).finish()
    }
}

impl DevBeacon {
    /// A beacon whose key derives from `label` (SHA-256, mod r), one round
    /// every `period` seconds from `genesis_time` (Unix seconds).
    pub fn new(label: &str, period: u64, genesis_time: u64) -> DevBeacon {
        DevBeacon { signer: Arc::new(DevSigner::from_label(label, period, genesis_time)) }
    }

    /// What a verifier pins for it.
    pub fn chain(&self) -> &ChainInfo {
        self.signer.chain()
    }

    /// The routes of drand's HTTP API for this chain, under its hash and at
    /// the root (drand's default chain).
    pub fn router(&self) -> Router {
        let hash = &self.chain().hash;
        Router::new()
            .route("/info", get(info))
            .route("/public/latest", get(latest))
            .route("/public/{round}", get(round))
            .route(&format!("/{hash}/info"), get(info))
            .route(&format!("/{hash}/public/latest"), get(latest))
            .route(&format!("/{hash}/public/{{round}}"), get(round))
            .with_state(self.clone())
    }

    /// Serves the API on `listener` until the task is dropped.
    pub async fn serve(self, listener: TcpListener) -> std::io::Result<()> {
        axum::serve(listener, self.router()).await
    }

    /// Binds `address` (port 0: any free port) and serves from a task; the
    /// address it listens on.
    pub async fn spawn(
        self,
        address: SocketAddr,
    ) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<std::io::Result<()>>)> {
        let listener = TcpListener::bind(address).await?;
        let bound = listener.local_addr()?;
        Ok((bound, tokio::spawn(self.serve(listener))))
    }

    /// The newest round out at `now` (Unix seconds), or None before genesis.
    fn current_round(&self, now: u64) -> Option<u64> {
        let chain = self.chain();
        let since = now.checked_sub(chain.genesis_time)?;
        Some(since / chain.period.max(1) + 1)
    }

    fn round_body(&self, round: u64) -> serde_json::Value {
        let signature = self.signer.sign(round);
        let randomness = hex::encode(self.chain().verify(round, &signature).unwrap_or_default());
        json!({ "round": round, "randomness": randomness, "signature": signature })
    }
}

fn now_unix() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

async fn info(State(beacon): State<DevBeacon>) -> Response {
    let chain = beacon.chain();
    let body = json!({
        "public_key": chain.public_key,
        "period": chain.period,
        "genesis_time": chain.genesis_time,
        "hash": chain.hash,
        "groupHash": chain.hash,
        "schemeID": SCHEME,
        "metadata": { "beaconID": "battlelog-dev" },
    });
    (immutable(), axum::Json(body)).into_response()
}

async fn latest(State(beacon): State<DevBeacon>) -> Response {
    match beacon.current_round(now_unix()) {
        Some(round) => {
            // The newest round changes every period: cache it no longer.
            let age = HeaderValue::from_str(&format!("public, max-age={}", beacon.chain().period))
                .unwrap_or(HeaderValue::from_static("no-store"));
            ([(header::CACHE_CONTROL, age)], axum::Json(beacon.round_body(round))).into_response()
        }
        None => not_yet(&beacon, 1),
    }
}

async fn round(State(beacon): State<DevBeacon>, Path(round): Path<String>) -> Response {
    let Ok(round) = round.parse::<u64>() else {
        return (StatusCode::BAD_REQUEST, axum::Json(json!({ "error": "round: not a number" }))).into_response();
    };
    if round == 0 {
        return (StatusCode::BAD_REQUEST, axum::Json(json!({ "error": "round: rounds start at 1" }))).into_response();
    }
    match beacon.current_round(now_unix()) {
        Some(current) if round <= current => (immutable(), axum::Json(beacon.round_body(round))).into_response(),
        _ => not_yet(&beacon, round),
    }
}

/// A round not yet out: drand answers 404 too. Nobody, this beacon's
/// operator included, gets a round's signature before its time.
fn not_yet(beacon: &DevBeacon, round: u64) -> Response {
    let at = beacon.chain().published_at(round).unwrap_or_default();
    let body = json!({ "error": format!("round {round} is not published yet: it comes out at Unix time {at}") });
    ([(header::CACHE_CONTROL, HeaderValue::from_static("no-store"))], (StatusCode::NOT_FOUND, axum::Json(body)))
        .into_response()
}

fn immutable() -> [(header::HeaderName, HeaderValue); 1] {
    [(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=31536000, immutable"))]
}
