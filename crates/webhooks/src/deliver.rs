//! Delivering: one worker per battle with deliveries queued, POSTing them
//! one at a time in version order, so that a battle's later events wait
//! behind its failing one while other battles go on.
//!
//! The POSTs in flight are bounded twice: per tenant
//! (`max_concurrent_deliveries_per_tenant`), then all together
//! (`max_concurrent_deliveries`). A worker takes its tenant's slot before
//! it queues for a shared one, so a tenant whose endpoint hangs holds at
//! most its own share of the shared slots, and its other battles wait in
//! its own queue (its slots' FIFO), not in everyone's.
//!
//! A failed POST (no 2xx answer within `request_timeout_ms`) is retried
//! after an exponential backoff with jitter; once it has failed
//! `retry_max_attempts` times, or `retry_max_age_secs` after it was
//! received, it is parked with the rest of its battle's queue behind it
//! (crate::store), to be replayed by an operator.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::Full;
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use tokio::sync::{Semaphore, watch};
use tracing::{info, warn};

use crate::config::{Retry, TenantEndpoint};
use crate::metrics::WebhooksMetrics;
use crate::signature::{Secret, headers};
use crate::store::{BattleKey, Entry, Store, now_ms};

/// The HTTP client of the deliveries: HTTP/1, `http://` or `https://`
/// (rustls, the system's root certificates).
pub type HttpClient = Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>;

/// The client, trusting the system's roots (battlelog_runtime::http_client).
pub fn http_client() -> HttpClient {
    Client::builder(hyper_util::rt::TokioExecutor::new()).build(battlelog_runtime::http_client::https_connector())
}

/// The delay before attempt `failed + 1`, after `failed` failures:
/// `initial · 2^(failed−1)` capped at `max`, drawn in [d/2, d] so that
/// many deliveries failing together do not retry in lockstep.
pub fn backoff(retry: &Retry, failed: u32, random: u64) -> Duration {
    let exponent = failed.saturating_sub(1).min(32);
    let full = retry.initial.saturating_mul(1u32 << exponent.min(31)).min(retry.max);
    let half = full / 2;
    let spread = (full - half).as_millis() as u64;
    half + Duration::from_millis(if spread == 0 { 0 } else { random % (spread + 1) })
}

fn random_u64() -> u64 {
    let mut bytes = [0u8; 8];
    // Without randomness the jitter is only lost, not the delivery.
    let _ = getrandom::fill(&mut bytes);
    u64::from_le_bytes(bytes)
}

/// A tenant's endpoint, its secret decoded.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub url: hyper::Uri,
    pub secret: Secret,
}

impl Endpoint {
    /// `endpoint` as configured (validated by `Config::validate`).
    pub fn new(endpoint: &TenantEndpoint) -> Result<Self, String> {
        let url = endpoint.url.parse().map_err(|e| format!("{}: {e}", endpoint.url))?;
        let secret = Secret::parse(&endpoint.secret).map_err(|e| e.to_string())?;
        Ok(Self { url, secret })
    }
}

/// The deliveries: the store, the endpoints, and the battles being worked on.
#[derive(Debug, Clone)]
pub struct Deliverer {
    inner: Arc<Inner>,
}

struct Inner {
    store: Arc<Store>,
    endpoints: BTreeMap<String, Endpoint>,
    client: HttpClient,
    retry: Retry,
    request_timeout: Duration,
    metrics: Arc<WebhooksMetrics>,
    /// The battles with a worker running.
    active: Mutex<HashSet<BattleKey>>,
    /// At most `max_concurrent_deliveries` POSTs at once.
    in_flight: Semaphore,
    /// At most `max_concurrent_deliveries_per_tenant` POSTs at once to each
    /// tenant's endpoint.
    per_tenant: BTreeMap<String, Semaphore>,
    stop: watch::Receiver<bool>,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deliverer").field("endpoints", &self.endpoints.keys()).finish_non_exhaustive()
    }
}

/// Why one POST failed.
#[derive(Debug)]
enum Failure {
    Status(u16),
    Timeout,
    Http(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Status(code) => write!(f, "HTTP {code}"),
            Failure::Timeout => f.write_str("no answer within request_timeout_ms"),
            Failure::Http(error) => write!(f, "{error}"),
        }
    }
}

impl Deliverer {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        store: Arc<Store>,
        endpoints: BTreeMap<String, Endpoint>,
        client: HttpClient,
        retry: Retry,
        request_timeout: Duration,
        max_concurrent: usize,
        max_concurrent_per_tenant: usize,
        metrics: Arc<WebhooksMetrics>,
        stop: watch::Receiver<bool>,
    ) -> Self {
        let per_tenant =
            endpoints.keys().map(|tenant| (tenant.clone(), Semaphore::new(max_concurrent_per_tenant))).collect();
        Self {
            inner: Arc::new(Inner {
                store,
                endpoints,
                per_tenant,
                client,
                retry,
                request_timeout,
                metrics,
                active: Mutex::new(HashSet::new()),
                in_flight: Semaphore::new(max_concurrent),
                stop,
            }),
        }
    }

    /// Whether `tenant` has an endpoint.
    pub fn serves(&self, tenant: &str) -> bool {
        self.inner.endpoints.contains_key(tenant)
    }

    /// Makes sure a worker delivers `battle`'s queue: called after
    /// something was queued for it.
    pub fn wake(&self, battle: BattleKey) {
        let mut active = self.inner.active.lock().unwrap_or_else(|p| p.into_inner());
        if active.insert(battle.clone()) {
            tokio::spawn(self.clone().work(battle));
        }
    }

    async fn work(self, battle: BattleKey) {
        let inner = &self.inner;
        loop {
            if *inner.stop.borrow() {
                return;
            }
            let head = match inner.store.head(&battle) {
                Ok(head) => head,
                Err(error) => {
                    // The store failing is the disk failing: leave the
                    // queue as it is for the next start, loudly.
                    warn!(%error, tenant = %battle.tenant, battle = %battle.battle, "cannot read the queue");
                    inner.active.lock().unwrap_or_else(|p| p.into_inner()).remove(&battle);
                    return;
                }
            };
            let Some(entry) = head else {
                // Checked again under the lock that `wake` takes, so an
                // event queued meanwhile either is seen here or wakes a
                // new worker.
                let mut active = inner.active.lock().unwrap_or_else(|p| p.into_inner());
                if matches!(inner.store.head(&battle), Ok(None) | Err(_)) {
                    active.remove(&battle);
                    return;
                }
                continue;
            };
            if !self.deliver(entry).await {
                return;
            }
        }
    }

    /// Delivers `entry`, retrying, or parks it. False when stopping.
    async fn deliver(&self, mut entry: Entry) -> bool {
        let inner = &self.inner;
        let Some(endpoint) = inner.endpoints.get(&entry.tenant) else {
            // Queued under an endpoint since removed from the config:
            // parked, so that nothing is dropped and a replay after the
            // endpoint is back delivers it.
            self.park(&entry, "the tenant has no endpoint configured");
            return true;
        };
        loop {
            entry.attempts += 1;
            inner.metrics.attempts.inc();
            let result = {
                let mut stop = inner.stop.clone();
                let Some(tenant_slots) = inner.per_tenant.get(&entry.tenant) else { return false };
                // The tenant's slot first, then a shared one: see the module docs.
                let slots = async {
                    let tenant = tenant_slots.acquire().await.ok()?;
                    let shared = inner.in_flight.acquire().await.ok()?;
                    Some((tenant, shared))
                };
                let _permits = tokio::select! {
                    permits = slots => match permits {
                        Some(permits) => permits,
                        None => return false,
                    },
                    _ = stop.wait_for(|stop| *stop) => return false,
                };
                tokio::select! {
                    result = self.post(endpoint, &entry) => result,
                    _ = stop.wait_for(|stop| *stop) => return false,
                }
            };
            let failure = match result {
                Ok(()) => {
                    if let Err(error) = inner.store.delivered(&entry) {
                        warn!(%error, "cannot mark a delivery done; it will be sent again");
                    }
                    inner.metrics.delivered.inc();
                    return true;
                }
                Err(failure) => failure,
            };
            inner.metrics.failures.inc();
            let age = Duration::from_millis(now_ms().saturating_sub(entry.received_at_ms));
            if entry.attempts >= inner.retry.max_attempts || age >= inner.retry.max_age {
                self.park(&entry, &format!("{failure} (attempt {})", entry.attempts));
                return true;
            }
            let delay = backoff(&inner.retry, entry.attempts, random_u64());
            info!(tenant = %entry.tenant, battle = %entry.battle, version = entry.version, attempt = entry.attempts, %failure, ?delay, "delivery failed; retrying");
            let mut stop = inner.stop.clone();
            tokio::select! {
                () = tokio::time::sleep(delay) => {}
                _ = stop.wait_for(|stop| *stop) => return false,
            }
        }
    }

    fn park(&self, entry: &Entry, error: &str) {
        match self.inner.store.park(entry, error) {
            Ok(count) => {
                self.inner.metrics.parked.inc_by(count as u64);
                warn!(tenant = %entry.tenant, battle = %entry.battle, version = entry.version, count, error, "delivery parked with its battle's later events");
            }
            Err(error) => warn!(%error, "cannot park a delivery; it stays queued"),
        }
    }

    /// One signed POST of `entry` to `endpoint`.
    async fn post(&self, endpoint: &Endpoint, entry: &Entry) -> Result<(), Failure> {
        let timestamp = now_ms() / 1000;
        let signature = endpoint.secret.sign(&entry.webhook_id, timestamp, entry.body.as_bytes());
        let request = hyper::Request::post(endpoint.url.clone())
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .header(hyper::header::USER_AGENT, concat!("battlelog-webhooks/", env!("CARGO_PKG_VERSION")))
            .header(headers::ID, &entry.webhook_id)
            .header(headers::TIMESTAMP, timestamp.to_string())
            .header(headers::SIGNATURE, signature)
            .body(Full::new(Bytes::from(entry.body.clone())))
            .map_err(|e| Failure::Http(e.to_string()))?;
        let response = tokio::time::timeout(self.inner.request_timeout, self.inner.client.request(request))
            .await
            .map_err(|_| Failure::Timeout)?
            .map_err(|e| Failure::Http(format!("{e:?}")))?;
        // The answer's body is not read: only its status counts, and
        // dropping it closes the connection rather than reading an
        // endpoint's arbitrarily long page.
        let status = response.status();
        if status.is_success() { Ok(()) } else { Err(Failure::Status(status.as_u16())) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backoff_doubles_up_to_its_cap_with_jitter_in_the_upper_half() {
        let retry = Retry {
            initial: Duration::from_millis(100),
            max: Duration::from_millis(1_000),
            max_attempts: 10,
            max_age: Duration::from_secs(60),
        };
        let bounds = |failed| (backoff(&retry, failed, 0), backoff(&retry, failed, u64::MAX - 1));
        let ms = Duration::from_millis;
        assert_eq!(backoff(&retry, 1, 0), ms(50));
        assert_eq!(backoff(&retry, 1, 50), ms(100), "the top of the range");
        assert_eq!(backoff(&retry, 1, 51), ms(50), "wraps within the range");
        assert_eq!(bounds(2).0, ms(100));
        assert_eq!(backoff(&retry, 2, 100), ms(200));
        assert_eq!(backoff(&retry, 4, 400), ms(800));
        // 100 · 2^4 = 1 600 is over the cap: [500, 1 000].
        assert_eq!(backoff(&retry, 5, 0), ms(500));
        assert_eq!(backoff(&retry, 5, 500), ms(1_000));
        for failed in [5, 6, 40, u32::MAX] {
            let (low, high) = bounds(failed);
            assert!(low >= ms(500) && high <= ms(1_000), "{failed}: {low:?}..{high:?}");
        }
    }
}
