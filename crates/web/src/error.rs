//! Why a page is refused, as an HTTP status and one line saying why.
//!
//! The resolver decides who may read a battle; its gRPC codes map onto
//! HTTP ones so that a visitor (or a test) sees the same verdict: no
//! credential 401, a credential that may not read 403, a battle that does
//! not exist or belongs to another tenant 404 (the two are not told apart,
//! as over gRPC), a malformed battle id 400.
//!
//! A refusal (4xx) says why, since it is about the visitor's own request.
//! A failure on our side (5xx) shows only a short public message per
//! status, in English and Russian: its detail (the resolver's connection
//! errors, addresses, internal messages) is for the operator's log.

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

/// What a visitor is told for `status`: (English, Russian).
pub fn public_message(status: StatusCode) -> (&'static str, &'static str) {
    match status {
        StatusCode::BAD_REQUEST => ("The request is not valid.", "Неверный запрос."),
        StatusCode::UNAUTHORIZED => (
            "This page needs a credential: the battle's share link or a token.",
            "Для этой страницы нужен доступ: ссылка на бой или токен.",
        ),
        StatusCode::FORBIDDEN => ("This credential does not open this page.", "Этот доступ не открывает эту страницу."),
        StatusCode::NOT_FOUND => ("There is no such battle.", "Такого боя нет."),
        StatusCode::BAD_GATEWAY => (
            "The battle service answered with an error. Please try again later.",
            "Служба боёв ответила ошибкой. Попробуйте позже.",
        ),
        StatusCode::SERVICE_UNAVAILABLE => (
            "The battle service is unavailable right now. Please try again later.",
            "Служба боёв сейчас недоступна. Попробуйте позже.",
        ),
        StatusCode::GATEWAY_TIMEOUT => (
            "The battle service did not answer in time. Please try again later.",
            "Служба боёв не ответила вовремя. Попробуйте позже.",
        ),
        _ => (
            "Something went wrong on our side. Please try again later.",
            "Что-то пошло не так у нас. Попробуйте позже.",
        ),
    }
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        let status = self.status();
        let (english, russian) = public_message(status);
        // A refusal's reason is the visitor's to know; a failure's detail
        // stays in the log.
        let reason = if status.is_server_error() {
            tracing::error!(%status, error = %self, "page failed");
            english.to_owned()
        } else {
            self.to_string()
        };
        let body = html! {
            (DOCTYPE)
            html lang="en" {
                head { meta charset="utf-8"; title { (status) } }
                body {
                    h1 { (status) }
                    p lang="en" { (english) }
                    p lang="ru" { (russian) }
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

#[cfg(test)]
mod tests {
    use super::*;

    async fn page(error: PageError) -> (StatusCode, String) {
        let response = error.into_response();
        let status = response.status();
        let body = axum::body::to_bytes(response.into_body(), 1 << 20).await.expect("the body");
        (status, String::from_utf8(body.to_vec()).expect("utf-8"))
    }

    #[tokio::test]
    async fn a_failure_shows_its_public_message_and_not_its_detail() {
        let detail = "transport error: tcp connect error: 10.0.0.7:50051: Connection refused";
        for (error, expected) in [
            (PageError::Resolver(tonic::Status::unavailable(detail)), StatusCode::SERVICE_UNAVAILABLE),
            (PageError::Resolver(tonic::Status::internal(detail)), StatusCode::BAD_GATEWAY),
            (PageError::Resolver(tonic::Status::deadline_exceeded(detail)), StatusCode::GATEWAY_TIMEOUT),
            (PageError::Internal(detail.to_owned()), StatusCode::INTERNAL_SERVER_ERROR),
        ] {
            let (status, body) = page(error).await;
            assert_eq!(status, expected);
            assert!(!body.contains("10.0.0.7") && !body.contains("Connection refused"), "{body}");
            let (english, russian) = public_message(status);
            assert!(body.contains(english) && body.contains(russian), "{body}");
        }
    }

    #[tokio::test]
    async fn a_refusal_says_why() {
        let (status, body) = page(PageError::BadShareKey { battle_id: "b-1".into() }).await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        assert!(body.contains("the share key does not open battle b-1"), "{body}");
        assert!(body.contains(public_message(status).1), "{body}");
    }
}
