//! The roller keys this site trusts (issue 21, "the roller key is pinned").
//!
//! A battle's commitments are signed by its roller's Ed25519 key; a
//! verifier that accepts any key certifies an export re-signed end to end
//! by someone else. So the site publishes the keys it trusts at a stable
//! URL, `GET /.well-known/battlelog/roller-keys` (`{"keys":["<hex>",…]}`,
//! anyone may read it), and hands the same list to its pages, whose
//! verifier fails a battle signed by another key.
//!
//! The keys come from the config (`trusted_roller_keys`, `roller_keys_file`)
//! and are checked at start: a key that is not 64 hex digits of a valid
//! Ed25519 public key refuses the start, naming it.

use std::path::Path;

use anyhow::Context;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use dice::RollerKey;

/// The URL the keys are published at.
pub const WELL_KNOWN_PATH: &str = "/.well-known/battlelog/roller-keys";

/// How long a browser or proxy may keep the list: short, since an operator
/// who rotates the roller's key wants the new one seen soon, and the list
/// is public (so a shared cache may hold it).
const CACHE_CONTROL: &str = "public, max-age=300";

/// `text` as a roller key in its published form (64 lowercase hex digits),
/// or why it is not one (naming it).
pub fn parse(text: &str) -> Result<String, String> {
    match RollerKey::from_hex(text) {
        Ok(key) => Ok(hex::encode(key.to_bytes())),
        Err(error) => Err(format!("{:?} is not a roller key (64 hex digits of an Ed25519 public key): {error}", text)),
    }
}

/// `listed` then the keys of `file` (one per line; blank lines and `#`
/// comments skipped), each checked and lowercased, without repeats.
pub fn collect(listed: &[String], file: Option<&Path>) -> anyhow::Result<Vec<String>> {
    let mut keys: Vec<String> = Vec::new();
    let mut add = |key: String| {
        if !keys.contains(&key) {
            keys.push(key);
        }
    };
    for text in listed {
        add(parse(text).map_err(|e| anyhow::anyhow!("trusted_roller_keys: {e}"))?);
    }
    if let Some(path) = file {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("roller_keys_file: cannot read {}", path.display()))?;
        for (number, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or_default().trim();
            if line.is_empty() {
                continue;
            }
            add(parse(line)
                .map_err(|e| anyhow::anyhow!("roller_keys_file {} line {}: {e}", path.display(), number + 1))?);
        }
    }
    Ok(keys)
}

/// The body of the well-known URL: `{"keys":[…]}`.
pub fn document(keys: &[String]) -> String {
    serde_json::json!({ "keys": keys }).to_string()
}

/// The well-known URL's response.
pub fn response(keys: &[String]) -> Response {
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static("application/json")),
            (header::CACHE_CONTROL, HeaderValue::from_static(CACHE_CONTROL)),
            // Anyone may read the list, a verifier on another origin too.
            (header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*")),
        ],
        document(keys),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    // RFC 8032 §7.1, test 1: a valid Ed25519 public key.
    const KEY: &str = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";

    #[test]
    fn a_key_is_published_in_lowercase_and_a_bad_one_is_named() {
        assert_eq!(parse(&KEY.to_ascii_uppercase()).as_deref(), Ok(KEY));
        for bad in ["", "zz", &KEY[..62], &format!("{KEY}00")] {
            let error = parse(bad).expect_err(bad);
            assert!(error.contains(&format!("{bad:?}")), "{error}");
        }
    }

    #[test]
    fn the_file_adds_its_keys_skipping_comments_and_repeats() {
        let dir = std::env::temp_dir().join(format!("battlelog-web-keys-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a dir");
        let file = dir.join("keys");
        let other = "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c";
        std::fs::write(&file, format!("# the roller\n{KEY}\n\n{other}  # its successor\n")).expect("write");
        let keys = collect(&[KEY.to_owned()], Some(&file)).expect("the keys");
        assert_eq!(keys, vec![KEY.to_owned(), other.to_owned()]);
        std::fs::write(&file, format!("{KEY}\nnot-a-key\n")).expect("write");
        let error = collect(&[], Some(&file)).expect_err("a bad line").to_string();
        assert!(error.contains("line 2") && error.contains("not-a-key"), "{error}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_document_lists_the_keys() {
        let value: serde_json::Value = serde_json::from_str(&document(&[KEY.to_owned()])).expect("JSON");
        assert_eq!(value, serde_json::json!({ "keys": [KEY] }));
    }
}
