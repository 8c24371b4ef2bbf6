//! The journal's log key this site trusts (issue 23, docs/protocol.md §5).
//!
//! An export's trailer names the key that signed its checkpoint and head; a
//! verifier that accepts any key certifies a trailer made by anyone. So the
//! site publishes the journal's verifier key at a stable URL,
//! `GET /.well-known/battlelog/log-key` (`{"keys":["<origin>+<key id>+<key>"]}`,
//! anyone may read it, no credential), and hands it to its pages
//! (`#log-keys`), whose verifier fails a trailer signed by another key —
//! as the roller keys are pinned ([`crate::keys`]).
//!
//! Where the key comes from: the resolver's `GetCheckpoint` (its
//! `log_key`), asked with this service's own reader token the first time a
//! page or the URL needs it, and then kept for the life of the process
//! (there is no config key for it: the journal is the one place the key
//! lives). A journal whose key changes under a running site is therefore
//! not followed: its new trailers fail the pages' check until the web is
//! restarted — an operator who rotates the log key restarts the web too.
//! Until the resolver has given a key (the journal unreachable, no log yet)
//! the URL answers 503 and the pages embed no key (their check is then
//! "unpinned", and says so).

use std::sync::Arc;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use tokio::sync::OnceCell;

use crate::source::Resolver;

/// The URL the key is published at.
pub const WELL_KNOWN_PATH: &str = "/.well-known/battlelog/log-key";

/// How long a browser or proxy may keep it (as the roller keys: public, short).
const CACHE_CONTROL: &str = "public, max-age=300";

/// The longest key text taken from the resolver: a 255-byte origin (the
/// journal's `log_origin` limit), `+`, 8 hex digits, `+`, 44 base64 digits.
const MAX_KEY_BYTES: usize = 255 + 1 + 8 + 1 + 44;

/// `text` as a C2SP signed-note verifier key of an Ed25519 key
/// (`<origin>+<key id, 8 hex>+<base64(0x01 || public key)>`, the key id
/// the first 4 bytes of SHA-256(origin || 0x0A || 0x01 || public key)),
/// trimmed, or why not (naming it). The format is battlelog-tlog's; the
/// pages' JavaScript reads it with its own code (transparency.js).
pub fn parse(text: &str) -> Result<String, String> {
    let text = text.trim();
    let shown: String = text.chars().take(80).collect();
    if text.len() > MAX_KEY_BYTES {
        return Err(format!("log key {shown:?}: longer than {MAX_KEY_BYTES} bytes"));
    }
    battlelog_tlog::VerifierKey::parse(text)
        .map(|key| key.to_string())
        .map_err(|error| format!("log key {shown:?}: {error}"))
}

/// The journal's log key, once the resolver has given it.
#[derive(Debug, Clone, Default)]
pub struct LogKey {
    known: Arc<OnceCell<String>>,
}

impl LogKey {
    /// The key, asked of `resolver` with `token` the first time (and again
    /// after a failure, which is logged, not kept).
    pub async fn get(&self, resolver: &Resolver, token: &str) -> Option<String> {
        let key = self
            .known
            .get_or_try_init(|| async {
                match resolver.log_key(token).await {
                    Ok(Some(key)) => parse(&key),
                    Ok(None) => Err("the resolver gave no log key".to_owned()),
                    Err(status) => Err(format!("GetCheckpoint: {:?}: {}", status.code(), status.message())),
                }
            })
            .await;
        match key {
            Ok(key) => Some(key.clone()),
            Err(why) => {
                tracing::warn!(%why, "cannot read the journal's log key");
                None
            }
        }
    }
}

/// The body of the well-known URL, and of the pages' `#log-keys`: `{"keys":[…]}`.
pub fn document(keys: &[String]) -> String {
    serde_json::json!({ "keys": keys }).to_string()
}

/// The well-known URL's response: the key, or 503 while it is not known.
pub fn response(key: Option<String>) -> Response {
    match key {
        Some(key) => (
            [
                (header::CONTENT_TYPE, HeaderValue::from_static("application/json")),
                (header::CACHE_CONTROL, HeaderValue::from_static(CACHE_CONTROL)),
                // Anyone may read it, a verifier on another origin too.
                (header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*")),
            ],
            document(&[key]),
        )
            .into_response(),
        None => (
            StatusCode::SERVICE_UNAVAILABLE,
            [
                (header::CONTENT_TYPE, HeaderValue::from_static("application/json")),
                (header::RETRY_AFTER, HeaderValue::from_static("5")),
            ],
            serde_json::json!({ "keys": [], "error": "the journal's log key is not known yet" }).to_string(),
        )
            .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // golang.org/x/mod/sumdb/note's example verifier key (made by Go).
    const PETER: &str = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW";

    #[test]
    fn a_verifier_key_made_elsewhere_parses_and_each_mangling_is_named() {
        assert_eq!(parse(&format!("  {PETER}\n")).as_deref(), Ok(PETER));
        for bad in [
            "",
            "PeterNeumann",
            "PeterNeumann+c74f20a4+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",
            "Peter Neumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",
            "PeterNeumann+c74f20a3+AhpC2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",
            "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10",
            "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW+x",
        ] {
            let error = parse(bad).expect_err(bad);
            assert!(error.starts_with("log key "), "{error}");
        }
        // At the length limit: a 255-byte origin is read up to the key id
        // check; one byte more is refused for its length.
        let long = format!("{}+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW", "o".repeat(255));
        assert!(!parse(&long).expect_err("id").contains("longer than"));
        let longer = format!("{}+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW", "o".repeat(256));
        assert!(parse(&longer).expect_err("length").contains("longer than"));
    }

    #[test]
    fn the_document_lists_the_key() {
        let value: serde_json::Value = serde_json::from_str(&document(&[PETER.to_owned()])).expect("JSON");
        assert_eq!(value, serde_json::json!({ "keys": [PETER] }));
    }
}
