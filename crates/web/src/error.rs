//! Why a page is refused, as an HTTP status and one line saying why, on
//! a page in the visitor's language.
//!
//! The resolver decides who may read a battle; its gRPC codes map onto
//! HTTP ones so that a visitor (or a test) sees the same verdict: no
//! credential 401, a credential that may not read 403, a battle that does
//! not exist or belongs to another tenant 404 (the two are not told apart,
//! as over gRPC), a malformed battle id or query 400, too many live
//! streams 503 with `Retry-After`.
//!
//! A refusal (4xx) says why, since it is about the visitor's own request.
//! A failure on our side (5xx) shows only a short public message per
//! status: its detail (the resolver's connection errors, addresses,
//! internal messages) is for the operator's log.
//!
//! Every error response of the router — a [`PageError`], and axum's own
//! rejections (a query that does not parse, a method not allowed) — goes
//! through [`error_pages`], which writes it as an HTML page in the
//! visitor's language (`?lang=`, read leniently: an unknown value is no
//! error; else `Accept-Language`), or as plain text to a client that asks
//! for `text/plain` only. The status and its headers (`WWW-Authenticate`,
//! `Retry-After`) stay as they are.

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use battlelog_runtime::limits::FieldError;
use maud::{DOCTYPE, html};
use serde::{Deserialize, Deserializer};
use tonic::Code;

use crate::i18n::Lang;

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
    #[error("too many live streams are open; retry in {retry_after_secs} s")]
    Busy { retry_after_secs: u64 },
    #[error("there is no such page")]
    NoSuchPage,
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
            PageError::Busy { .. } => StatusCode::SERVICE_UNAVAILABLE,
            PageError::NoSuchPage => StatusCode::NOT_FOUND,
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

    /// Why, for the visitor: in their language where this service words it,
    /// else (a field's limit, the resolver's own message) in English, marked so.
    fn reason(&self) -> Reason {
        match self {
            PageError::NoCredential => Reason::Both(
                self.to_string(),
                "для этой страницы нужен доступ: ссылка на бой (?k=…) или `Authorization: Bearer <токен>` \
                 форума, судьи или читателя площадки этого боя"
                    .into(),
            ),
            PageError::BadShareKey { battle_id } => Reason::Both(
                self.to_string(),
                format!("ключ ссылки не открывает бой {battle_id} (опечатка, или ссылка отозвана новым секретом)"),
            ),
            PageError::Busy { retry_after_secs } => Reason::Both(
                self.to_string(),
                format!("открыто слишком много живых потоков; повторите через {retry_after_secs} с"),
            ),
            PageError::NoSuchPage => Reason::Both(self.to_string(), "такой страницы нет".into()),
            _ => Reason::English(self.to_string()),
        }
    }
}

/// A refusal's reason, as the error page shows it.
#[derive(Debug, Clone)]
enum Reason {
    /// (English, Russian).
    Both(String, String),
    /// Only in English (a field's limit, the resolver's message).
    English(String),
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
        StatusCode::NOT_FOUND => ("There is no such battle or page.", "Такого боя или страницы нет."),
        StatusCode::METHOD_NOT_ALLOWED => {
            ("This page cannot be requested this way.", "Эту страницу нельзя запросить таким способом.")
        }
        StatusCode::BAD_GATEWAY => (
            "The battle service answered with an error. Please try again later.",
            "Служба боёв ответила ошибкой. Попробуйте позже.",
        ),
        StatusCode::SERVICE_UNAVAILABLE => (
            "The battle service is busy or unavailable right now. Please try again later.",
            "Служба боёв сейчас занята или недоступна. Попробуйте позже.",
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
    /// The status, its headers and the reason, for [`error_pages`] to write
    /// in the visitor's language; the body is the English page meanwhile
    /// (what a router without that layer would send).
    fn into_response(self) -> Response {
        let status = self.status();
        // A refusal's reason is the visitor's to know; a failure's detail
        // stays in the log. A busy stream limit is ours but no failure.
        let reason = match &self {
            PageError::Busy { .. } => Some(self.reason()),
            _ if status.is_server_error() => {
                tracing::error!(%status, error = %self, "page failed");
                None
            }
            _ => Some(self.reason()),
        };
        let mut response = (status, render(status, reason.as_ref(), Lang::En)).into_response();
        if status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        if let PageError::Busy { retry_after_secs } = self {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(retry_after_secs));
        }
        response.extensions_mut().insert(Rendered(reason));
        response
    }
}

/// Marks a response as a [`PageError`]'s, with its reason (None: a
/// failure whose detail is not shown).
#[derive(Debug, Clone)]
struct Rendered(Option<Reason>);

/// The error page for `status` in `lang`.
fn render(status: StatusCode, reason: Option<&Reason>, lang: Lang) -> maud::Markup {
    let (english, russian) = public_message(status);
    let message = match lang {
        Lang::En => english,
        Lang::Ru => russian,
    };
    let verify = match lang {
        Lang::En => "/verify?lang=en",
        Lang::Ru => "/verify?lang=ru",
    };
    html! {
        (DOCTYPE)
        html lang=(lang.code()) {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (status.as_u16()) " — " (message) }
            }
            body data-status-code=(status.as_u16()) {
                main {
                    h1 { (status.as_u16()) " — " (lang.t("error_title")) }
                    p id="message" { (message) }
                    @match (reason, lang) {
                        (Some(Reason::Both(_, ru)), Lang::Ru) => p id="error" { (ru) },
                        (Some(Reason::Both(en, _)), Lang::En) => p id="error" { (en) },
                        (Some(Reason::English(en)), _) => p id="error" lang="en" { (en) },
                        (None, _) => {},
                    }
                    p { a href=(verify) { (lang.t("verify_file")) } }
                }
            }
        }
    }
}

/// The same as plain text, for a client that asks for nothing else.
fn render_text(status: StatusCode, reason: Option<&Reason>, lang: Lang) -> String {
    let (english, russian) = public_message(status);
    let (message, reason) = match (lang, reason) {
        (Lang::En, Some(Reason::Both(en, _))) => (english, Some(en)),
        (Lang::Ru, Some(Reason::Both(_, ru))) => (russian, Some(ru)),
        (Lang::En, Some(Reason::English(en))) => (english, Some(en)),
        (Lang::Ru, Some(Reason::English(en))) => (russian, Some(en)),
        (Lang::En, None) => (english, None),
        (Lang::Ru, None) => (russian, None),
    };
    match reason {
        Some(reason) => format!("{} {message}\n{reason}\n", status.as_u16()),
        None => format!("{} {message}\n", status.as_u16()),
    }
}

/// `?lang=` read leniently, for `#[serde(deserialize_with)]`: `en` or `ru`
/// (any case), anything else as if not given, so that an unknown language
/// falls back instead of failing the request.
pub fn lenient_lang<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Lang>, D::Error> {
    let text = Option::<String>::deserialize(deserializer).unwrap_or(None);
    Ok(text.as_deref().and_then(lang_code))
}

/// `en` or `ru`, any case.
pub fn lang_code(text: &str) -> Option<Lang> {
    match text.trim().to_ascii_lowercase().as_str() {
        "en" => Some(Lang::En),
        "ru" => Some(Lang::Ru),
        _ => None,
    }
}

/// The visitor's language from a request's query and headers: `?lang=`
/// (leniently; a query that does not parse at all is skipped), else
/// `Accept-Language`.
pub fn request_lang(query: Option<&str>, headers: &HeaderMap) -> Lang {
    let from_query = query.and_then(|query| {
        query
            .split('&')
            .filter_map(|pair| pair.split_once('='))
            .filter(|(key, _)| *key == "lang")
            .find_map(|(_, v)| lang_code(v))
    });
    let accept_language = headers.get(header::ACCEPT_LANGUAGE).and_then(|v| v.to_str().ok());
    Lang::choose(from_query, accept_language)
}

/// Whether the client asks for plain text and not HTML (`Accept:
/// text/plain`); a browser's `text/html,…` and a bare `*/*` get HTML.
fn wants_text(headers: &HeaderMap) -> bool {
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or_default();
    let types: Vec<&str> = accept.split(',').map(|t| t.split(';').next().unwrap_or_default().trim()).collect();
    types.contains(&"text/plain") && !types.iter().any(|t| *t == "text/html" || *t == "*/*" || *t == "text/*")
}

/// Longest body of an axum rejection read to show as its reason.
const REJECTION_BYTES: usize = 4 * 1024;

/// Middleware: every error response (4xx, 5xx) as a page in the visitor's
/// language, whether a [`PageError`] or axum's own rejection, its status
/// and headers kept.
pub async fn error_pages(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let lang = request_lang(request.uri().query(), request.headers());
    let text = wants_text(request.headers());
    let response = next.run(request).await;
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let reason = match parts.extensions.remove::<Rendered>() {
        Some(Rendered(reason)) => reason,
        // axum's rejection (a query or path that does not parse): its text
        // says what, about the visitor's own request; a server error's body
        // is not shown.
        None if status.is_client_error() => axum::body::to_bytes(body, REJECTION_BYTES)
            .await
            .ok()
            .map(|bytes| String::from_utf8_lossy(&bytes).trim().to_owned())
            .filter(|text| !text.is_empty())
            .map(Reason::English),
        None => None,
    };
    parts.headers.remove(header::CONTENT_LENGTH);
    let (content_type, body) = if text {
        ("text/plain; charset=utf-8", axum::body::Body::from(render_text(status, reason.as_ref(), lang)))
    } else {
        ("text/html; charset=utf-8", axum::body::Body::from(render(status, reason.as_ref(), lang).into_string()))
    };
    parts.headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    parts.headers.insert(header::CONTENT_LANGUAGE, HeaderValue::from_static(lang.code()));
    Response::from_parts(parts, body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::Router;
    use axum::routing::get;
    use tower::ServiceExt;

    /// `error` answered through [`error_pages`] for a request to `uri` with `headers`.
    async fn page_for(
        error: fn() -> PageError,
        uri: &str,
        headers: &[(&str, &str)],
    ) -> (StatusCode, HeaderMap, String) {
        #[derive(Deserialize)]
        struct Q {
            #[allow(dead_code)]
            n: Option<u64>,
        }
        let app = Router::new()
            .route("/e", get(move || async move { error() }))
            .route("/q", get(|_: axum::extract::Query<Q>| async { "ok" }))
            .fallback(|| async { PageError::NoSuchPage })
            .layer(axum::middleware::from_fn(error_pages));
        let mut request = axum::http::Request::get(uri);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response =
            app.oneshot(request.body(axum::body::Body::empty()).expect("a request")).await.expect("infallible");
        let status = response.status();
        let headers = response.headers().clone();
        let body = axum::body::to_bytes(response.into_body(), 1 << 20).await.expect("the body");
        (status, headers, String::from_utf8(body.to_vec()).expect("utf-8"))
    }

    #[tokio::test]
    async fn a_failure_shows_its_public_message_and_not_its_detail() {
        const DETAIL: &str = "transport error: tcp connect error: 10.0.0.7:50051: Connection refused";
        let cases: [(fn() -> PageError, StatusCode); 4] = [
            (|| PageError::Resolver(tonic::Status::unavailable(DETAIL)), StatusCode::SERVICE_UNAVAILABLE),
            (|| PageError::Resolver(tonic::Status::internal(DETAIL)), StatusCode::BAD_GATEWAY),
            (|| PageError::Resolver(tonic::Status::deadline_exceeded(DETAIL)), StatusCode::GATEWAY_TIMEOUT),
            (|| PageError::Internal(DETAIL.to_owned()), StatusCode::INTERNAL_SERVER_ERROR),
        ];
        for (error, expected) in cases {
            let (english, russian) = public_message(expected);
            for (uri, message, other) in [("/e", english, russian), ("/e?lang=ru", russian, english)] {
                let (status, _, body) = page_for(error, uri, &[]).await;
                assert_eq!(status, expected);
                assert!(!body.contains("10.0.0.7") && !body.contains("Connection refused"), "{body}");
                assert!(body.contains(message) && !body.contains(other), "{uri}: {body}");
            }
        }
    }

    #[tokio::test]
    async fn a_refusal_says_why_in_the_visitors_language() {
        let bad_key = || PageError::BadShareKey { battle_id: "b-1".into() };
        let (status, headers, body) = page_for(bad_key, "/e", &[]).await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        assert!(body.contains("the share key does not open battle b-1"), "{body}");
        assert!(body.contains("<html lang=\"en\"") && body.contains(public_message(status).0), "{body}");
        assert_eq!(headers[header::CONTENT_TYPE], "text/html; charset=utf-8");

        // Accept-Language, and ?lang= over it.
        for (uri, accept) in [("/e", "ru-RU,ru;q=0.9"), ("/e?lang=ru", "en"), ("/e?lang=RU&lang=de", "en")] {
            let (status, headers, body) = page_for(bad_key, uri, &[("accept-language", accept)]).await;
            assert_eq!(status, StatusCode::FORBIDDEN);
            assert!(body.contains("<html lang=\"ru\"") && body.contains("не открывает бой b-1"), "{uri}: {body}");
            assert!(!body.contains("does not open"), "no English left: {body}");
            assert_eq!(headers[header::CONTENT_LANGUAGE], "ru");
        }
        // An unknown language falls back rather than failing.
        let (status, _, body) = page_for(bad_key, "/e?lang=de", &[]).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
        assert!(body.contains("<html lang=\"en\""), "{body}");
    }

    #[tokio::test]
    async fn the_statuses_and_their_headers_are_kept() {
        let (status, headers, body) = page_for(|| PageError::NoCredential, "/e?lang=ru", &[]).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(headers[header::WWW_AUTHENTICATE], "Bearer");
        assert!(body.contains("нужен доступ"), "{body}");
        let (status, headers, body) = page_for(|| PageError::Busy { retry_after_secs: 7 }, "/e", &[]).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(headers[header::RETRY_AFTER], "7");
        assert!(body.contains("too many live streams"), "a busy refusal says why: {body}");
        let (status, _, body) = page_for(|| PageError::NoCredential, "/no/such/page?lang=ru", &[]).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert!(body.contains("такой страницы нет") && body.contains("id=\"error\""), "{body}");
    }

    #[tokio::test]
    async fn axums_own_rejections_become_pages_too() {
        let (status, headers, body) = page_for(|| PageError::NoSuchPage, "/q?n=many&lang=ru", &[]).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(headers[header::CONTENT_TYPE], "text/html; charset=utf-8");
        assert!(body.contains("<html lang=\"ru\"") && body.contains("Неверный запрос."), "{body}");
        assert!(body.contains("id=\"error\" lang=\"en\"") && body.contains("query string"), "what was wrong: {body}");
    }

    #[tokio::test]
    async fn a_client_asking_for_text_gets_text() {
        let (status, headers, body) =
            page_for(|| PageError::NoCredential, "/e?lang=ru", &[("accept", "text/plain")]).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(headers[header::CONTENT_TYPE], "text/plain; charset=utf-8");
        assert!(body.starts_with("401 Для этой страницы нужен доступ") && !body.contains("<html"), "{body}");
        // A browser (text/html first) or a bare */* gets the page.
        for accept in ["text/html,application/xhtml+xml,*/*;q=0.8", "*/*"] {
            let (_, headers, _) = page_for(|| PageError::NoCredential, "/e", &[("accept", accept)]).await;
            assert_eq!(headers[header::CONTENT_TYPE], "text/html; charset=utf-8", "{accept}");
        }
    }
}
