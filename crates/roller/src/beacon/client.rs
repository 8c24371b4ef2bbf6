//! The roller's beacon client (docs/protocol.md §6.1, §6.3 step 4): asks
//! configured relays for a round in drand's HTTP API and uses nothing it
//! has not verified. The chain info is pinned by configuration and checked
//! against each relay's `/info`, never taken from one; a relay that serves
//! another chain, a bad signature or garbage is skipped (and logged) and
//! the next one asked; a round not yet out is waited for until it is due,
//! then asked for until the deadline.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use beacon::{BeaconError, ChainInfo, Randomness};
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper::{StatusCode, Uri};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use serde::Deserialize;
use tokio::time::Instant;
use tracing::warn;

type HttpClient = Client<hyper_rustls::HttpsConnector<HttpConnector>, Empty<Bytes>>;

/// Between two tries at the relays while a round is due but not served.
const RETRY_EVERY: Duration = Duration::from_millis(200);
/// The most a relay's answer may weigh: an info or a round is a few
/// hundred bytes.
const MAX_BODY: usize = 16 * 1024;

/// A round whose signature verified under the pinned key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedRound {
    pub round: u64,
    /// σ_r, lowercase hex (what a v2 `DiceRolled` records).
    pub signature: String,
    /// ρ_r = SHA-256(σ_r).
    pub randomness: Randomness,
}

/// Why no verified round came.
#[derive(Debug, thiserror::Error)]
pub enum BeaconFailure {
    #[error("no beacon relay is configured")]
    NoRelay,
    #[error("beacon relay {relay} is not a URL: {message}")]
    RelayUrl { relay: String, message: String },
    #[error("beacon relay {relay} serves another chain: {field} is {found}, the pinned chain's is {pinned}")]
    OtherChain { relay: String, field: &'static str, found: String, pinned: String },
    #[error("beacon relay {relay} did not answer its chain info: {message}")]
    Unreachable { relay: String, message: String },
    #[error("round {round} of the beacon: {0}", round = .1)]
    Round(#[source] BeaconError, u64),
    #[error("no relay served a verified round {round} by the deadline (it was due at Unix time {due}; last: {last})")]
    Deadline { round: u64, due: u64, last: String },
}

/// The beacon as the roller asks it.
#[derive(Debug, Clone)]
pub struct BeaconClient {
    chain: ChainInfo,
    /// Base URLs without a trailing slash.
    relays: Vec<String>,
    http: HttpClient,
}

#[derive(Debug, Deserialize)]
struct InfoBody {
    public_key: String,
    period: u64,
    genesis_time: u64,
    hash: String,
    #[serde(rename = "schemeID", default)]
    scheme: Option<String>,
}

#[derive(Debug, Deserialize)]
struct RoundBody {
    round: u64,
    signature: String,
}

impl BeaconClient {
    /// A client of the chain `chain` (pinned) over `relays` (base URLs,
    /// asked in this order; each serves `/{chain hash}/…`).
    pub fn new(chain: ChainInfo, relays: &[String]) -> Result<BeaconClient, BeaconFailure> {
        if relays.is_empty() {
            return Err(BeaconFailure::NoRelay);
        }
        let relays = relays
            .iter()
            .map(|relay| {
                let base = relay.trim_end_matches('/');
                match base.parse::<Uri>() {
                    Ok(uri) if uri.scheme().is_some() && uri.host().is_some() => Ok(base.to_owned()),
                    Ok(_) => Err("not an absolute http:// or https:// URL".to_owned()),
                    Err(e) => Err(e.to_string()),
                }
                .map_err(|message| BeaconFailure::RelayUrl { relay: relay.clone(), message })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let http = Client::builder(hyper_util::rt::TokioExecutor::new())
            .build(battlelog_runtime::http_client::https_connector());
        Ok(BeaconClient { chain, relays, http })
    }

    /// The pinned chain.
    pub fn chain(&self) -> &ChainInfo {
        &self.chain
    }

    /// Every relay's `/{chain hash}/info` against the pinned chain: the
    /// first relay that serves another chain, or cannot be reached, is the
    /// error. A relay that does not know the pinned chain's hash is asked
    /// its default chain (`/info`), to say which chain it serves instead.
    pub async fn check_relays(&self) -> Result<(), BeaconFailure> {
        for relay in &self.relays {
            let unreachable = |message| BeaconFailure::Unreachable { relay: relay.clone(), message };
            let body = match self.get(relay, &format!("{}/info", self.chain.hash)).await {
                Ok(body) => body,
                Err(Failed::Status(StatusCode::NOT_FOUND, _)) => {
                    self.get(relay, "info").await.map_err(|failed| unreachable(failed.to_string()))?
                }
                Err(failed) => return Err(unreachable(failed.to_string())),
            };
            let info: InfoBody = serde_json::from_slice(&body).map_err(|e| unreachable(e.to_string()))?;
            self.same_chain(relay, &info)?;
        }
        Ok(())
    }

    fn same_chain(&self, relay: &str, info: &InfoBody) -> Result<(), BeaconFailure> {
        let pinned = &self.chain;
        let differs = |field, found: String, pinned: String| {
            (found != pinned).then(|| BeaconFailure::OtherChain { relay: relay.to_owned(), field, found, pinned })
        };
        let scheme = info.scheme.clone().unwrap_or_default();
        let first = differs("hash", info.hash.to_lowercase(), pinned.hash.to_lowercase())
            .or_else(|| differs("public_key", info.public_key.to_lowercase(), pinned.public_key.to_lowercase()))
            .or_else(|| differs("period", info.period.to_string(), pinned.period.to_string()))
            .or_else(|| differs("genesis_time", info.genesis_time.to_string(), pinned.genesis_time.to_string()))
            .or_else(|| differs("schemeID", scheme, super::dev::SCHEME.to_owned()));
        first.map_or(Ok(()), Err)
    }

    /// Round `round`, verified: waits until it is due (its publication time
    /// on this machine's clock), then asks the relays in turn until one
    /// serves a signature that verifies, or `deadline` passes.
    pub async fn round(&self, round: u64, deadline: Instant) -> Result<VerifiedRound, BeaconFailure> {
        let due = self.chain.published_at(round).map_err(|e| BeaconFailure::Round(e, round))?;
        let wait = Duration::from_secs(due.saturating_sub(unix_now()));
        tokio::time::sleep_until((Instant::now() + wait).min(deadline)).await;
        let mut last = "not asked yet".to_owned();
        loop {
            for relay in &self.relays {
                match self.ask(relay, round).await {
                    Ok(verified) => return Ok(verified),
                    Err(reason) => last = format!("{relay}: {reason}"),
                }
            }
            if Instant::now() + RETRY_EVERY >= deadline {
                return Err(BeaconFailure::Deadline { round, due, last });
            }
            tokio::time::sleep(RETRY_EVERY).await;
        }
    }

    /// One relay's round, verified; why not otherwise.
    async fn ask(&self, relay: &str, round: u64) -> Result<VerifiedRound, String> {
        let body = self.get(relay, &format!("{}/public/{round}", self.chain.hash)).await.map_err(|f| f.to_string())?;
        let served: RoundBody = serde_json::from_slice(&body).map_err(|e| format!("not a round: {e}"))?;
        if served.round != round {
            return Err(format!("served round {} for round {round}", served.round));
        }
        match self.chain.verify(round, &served.signature) {
            Ok(randomness) => Ok(VerifiedRound { round, signature: served.signature.to_lowercase(), randomness }),
            Err(error) => {
                // A relay serving what does not verify is either broken or
                // lying: never used, always said.
                warn!(%relay, round, %error, "a beacon relay served a round that does not verify; asking the next");
                Err(error.to_string())
            }
        }
    }

    /// GET `<relay>/<path>`: the body of a 200 answer.
    async fn get(&self, relay: &str, path: &str) -> Result<Bytes, Failed> {
        let uri: Uri = format!("{relay}/{path}").parse().map_err(|e| Failed::Request(format!("{e}")))?;
        let response = self.http.get(uri).await.map_err(|e| Failed::Request(format!("{e}")))?;
        let status = response.status();
        let body = http_body_util::Limited::new(response.into_body(), MAX_BODY)
            .collect()
            .await
            .map_err(|e| Failed::Request(format!("{e}")))?
            .to_bytes();
        if status != StatusCode::OK {
            return Err(Failed::Status(status, String::from_utf8_lossy(&body).trim().to_owned()));
        }
        Ok(body)
    }
}

/// Why one HTTP request gave no body.
#[derive(Debug)]
enum Failed {
    Request(String),
    Status(StatusCode, String),
}

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failed::Request(message) => f.write_str(message),
            Failed::Status(status, body) => write!(f, "HTTP {status}: {body}"),
        }
    }
}

fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}
