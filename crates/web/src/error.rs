//! Why a page is refused, as an HTTP status and one line saying why.
//!
//! The resolver decides who may read a battle; its gRPC codes map onto
//! HTTP ones so that a visitor (or a test) sees the same verdict: no
//! credential 401, a credential that may not read 403, a battle that does
//! not exist or belongs to another tenant 404 (the two are not told apart,
//! as over gRPC), a malformed battle id 400.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use battlelog_runtime::limits::FieldError;
use maud::{DOCTYPE, html};
use tonic::Code;

#[derive(Debug, thiserror::Error)]
pub enum PageError {
    #[error(
        "this page needs a credential: the battle's share link (?k=…) or `Authorization: Bearer <token>` \
         of a forum, judge or reader of the battle's tenant"
    )]
    NoCredential,
    #[error("the share key does not open battle {battle_id} (mistyped, or revoked by a new share secret)")]
    BadShareKey { battle_id: String },
    #[error("{0}")]
    BadInput(#[from] FieldError),
    #[error("the resolver refused: {}", .0.message())]
    Resolver(tonic::Status),
    #[error("{0}")]
    Internal(String),
}

impl From<tonic::Status> for PageError {
    fn from(status: tonic::Status) -> Self {
        PageError::Resolver(status)
    }
}

impl PageError {
    pub fn status(&self) -> StatusCode {
        match self {
            PageError::NoCredential => StatusCode::UNAUTHORIZED,
            PageError::BadShareKey { .. } => StatusCode::FORBIDDEN,
            PageError::BadInput(_) => StatusCode::BAD_REQUEST,
            PageError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
            PageError::Resolver(status) => match status.code() {
                Code::Unauthenticated => StatusCode::UNAUTHORIZED,
                Code::PermissionDenied => StatusCode::FORBIDDEN,
                Code::NotFound => StatusCode::NOT_FOUND,
                Code::InvalidArgument => StatusCode::BAD_REQUEST,
                Code::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
                Code::DeadlineExceeded => StatusCode::GATEWAY_TIMEOUT,
                _ => StatusCode::BAD_GATEWAY,
            },
        }
    }
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        let status = self.status();
        if status.is_server_error() {
            tracing::warn!(%status, error = %self, "page failed");
        }
        let reason = self.to_string();
        let body = html! {
            (DOCTYPE)
            html lang="en" {
                head { meta charset="utf-8"; title { (status) } }
                body {
                    h1 { (status) }
                    p id="error" { (reason) }
                    p { a href="/verify" { "Verify an export file / Проверить файл экспорта" } }
                }
            }
        };
        let mut response = (status, body).into_response();
        if status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}
