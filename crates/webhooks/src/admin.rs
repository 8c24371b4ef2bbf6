//! The service's HTTP port: `/metrics` (OpenMetrics text), the parked
//! deliveries (`GET /v1/parked`) and their replay (`POST /v1/replay`),
//! both filtered by `?tenant=` and `?battle=`, and `/healthz`.
//!
//! Who may call: everything but `/healthz` needs `Authorization: Bearer`
//! with a token of the `service` role (an operator's, minted with
//! `battlelog token issue --role service`, or battlelog's own), verified
//! against `auth_keys` like every other service's. A missing or bad token
//! is answered 401, another role 403: a forum's token may neither read the
//! events parked for other tenants nor replay them. The port listens on
//! loopback by default as well.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use battlelog_auth::{Role, Verifier};
use prometheus_client::registry::Registry;
use serde_json::json;

use crate::deliver::Deliverer;
use crate::metrics::WebhooksMetrics;
use crate::store::{Filter, Store};

#[derive(Debug, Clone)]
pub struct Admin {
    pub store: Arc<Store>,
    pub deliverer: Deliverer,
    pub metrics: Arc<WebhooksMetrics>,
    /// What `/metrics` shows: the registry `metrics` is registered in.
    pub registry: Arc<Registry>,
    pub verifier: Verifier,
}

/// The content type of prometheus-client's text encoding.
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

pub fn router(admin: Admin) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/metrics", get(metrics))
        .route("/v1/parked", get(parked))
        .route("/v1/replay", post(replay))
        .with_state(admin)
}

fn text(status: StatusCode, body: String) -> Response {
    (status, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], body).into_response()
}

fn json_response(body: serde_json::Value) -> Response {
    (StatusCode::OK, [(header::CONTENT_TYPE, "application/json")], body.to_string()).into_response()
}

/// The refusal of a caller that presents no valid `service` token; None
/// for one that does.
fn refusal(admin: &Admin, headers: &HeaderMap) -> Option<Response> {
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty());
    let Some(token) = token else {
        return Some(text(StatusCode::UNAUTHORIZED, "a bearer token of the service role is required\n".into()));
    };
    match admin.verifier.verify(token) {
        Ok(claims) if claims.role == Role::Service => None,
        Ok(claims) => Some(text(
            StatusCode::FORBIDDEN,
            format!("the {} role may not use the webhooks' admin endpoints; the service role may\n", claims.role),
        )),
        Err(error) => Some(text(StatusCode::UNAUTHORIZED, format!("token refused: {error}\n"))),
    }
}

fn internal(error: impl std::fmt::Display) -> Response {
    text(StatusCode::INTERNAL_SERVER_ERROR, format!("{error}\n"))
}

async fn metrics(State(admin): State<Admin>, headers: HeaderMap) -> Response {
    if let Some(refused) = refusal(&admin, &headers) {
        return refused;
    }
    let mut body = String::new();
    match prometheus_client::encoding::text::encode(&mut body, &admin.registry) {
        Ok(()) => (StatusCode::OK, [(header::CONTENT_TYPE, OPENMETRICS)], body).into_response(),
        // The gauges read the store: it failed (the log says why).
        Err(_) => internal("cannot read the parked and queued deliveries from the store"),
    }
}

async fn parked(State(admin): State<Admin>, headers: HeaderMap, Query(filter): Query<Filter>) -> Response {
    if let Some(refused) = refusal(&admin, &headers) {
        return refused;
    }
    match admin.store.parked(&filter) {
        Ok(entries) => json_response(json!({ "parked": entries })),
        Err(error) => internal(error),
    }
}

async fn replay(State(admin): State<Admin>, headers: HeaderMap, Query(filter): Query<Filter>) -> Response {
    if let Some(refused) = refusal(&admin, &headers) {
        return refused;
    }
    let (battles, count) = match admin.store.replay(&filter) {
        Ok(replayed) => replayed,
        Err(error) => return internal(error),
    };
    // On disk before it is said done: a crash now replays them at start.
    if let Err(error) = admin.store.flush().await {
        return internal(error);
    }
    admin.metrics.replayed.inc_by(count as u64);
    for battle in &battles {
        admin.deliverer.wake(battle.clone());
    }
    json_response(json!({ "replayed": count, "battles": battles }))
}
