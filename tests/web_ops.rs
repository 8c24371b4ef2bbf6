//! System tests of the web service's plumbing (issue 21): compressed
//! responses, the roller keys the site trusts, live updates as server-sent
//! events from the resolver's `Watch`, and error pages in the visitor's
//! language. The real `battlelog-web` (and `battlelog up`) in front of the
//! real journal, roller and resolver, over HTTP on loopback.

use std::io::Read;
use std::time::Instant;

use base64::Engine;
use battlelog_auth::{Role, ShareSecret};
use battlelog_test_support::stack::*;
use battlelog_test_support::{ServiceProcess, TestAuth, http_get};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// A valid Ed25519 public key (RFC 8032 §7.1, test 1): a key this site
/// could trust that is not the stack's roller's.
const OTHER_KEY: &str = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";

/// A web in front of `stack` with `envs` as config, reading shared battles
/// as a reader of the test tenant.
async fn start_web(stack: &Stack, name: &str, envs: &[(&str, &str)]) -> (ServiceProcess, ShareSecret) {
    let secret = stack.dir.path().join(format!("{name}.secret"));
    let share = ShareSecret::read_or_create(&secret).expect("a share secret");
    let token_file = stack.dir.path().join(format!("{name}.token"));
    std::fs::write(&token_file, TestAuth::shared().reader()).expect("write the web's reader token");
    let envs: Vec<(String, String)> = envs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    let log = stack.dir.path().join(format!("{name}.log"));
    let web = battlelog_test_support::web_with(&stack.resolver.url(), &secret, &token_file, &log, &envs).await;
    (web, share)
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// A GET answered whole: status, headers, and the body's bytes as sent.
async fn get_raw(url: &str, headers: &[(&str, &str)]) -> (u16, hyper::HeaderMap, Vec<u8>) {
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<http_body_util::Empty<tonic::codegen::Bytes>>();
    let mut request = hyper::Request::get(url);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = client.request(request.body(http_body_util::Empty::new()).expect("a request")).await.expect("GET");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response.into_body().collect().await.expect("the body").to_bytes().to_vec();
    (status, headers, body)
}

/// An open live stream: its status and headers, and what it sent so far.
struct Live {
    status: u16,
    headers: hyper::HeaderMap,
    body: hyper::body::Incoming,
    text: String,
    ended: bool,
}

/// Opens `url` as an `EventSource` in a browser would.
async fn live(url: &str, headers: &[(&str, &str)]) -> Live {
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<http_body_util::Empty<tonic::codegen::Bytes>>();
    // As a browser asks: compression accepted, which a stream must not get.
    let mut request =
        hyper::Request::get(url).header("accept", "text/event-stream").header("accept-encoding", "gzip, br");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response =
        client.request(request.body(http_body_util::Empty::new()).expect("a request")).await.expect("GET live");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    Live { status, headers, body: response.into_body(), text: String::new(), ended: false }
}

impl Live {
    /// Reads until `done` holds of what was received, or the deadline.
    async fn until(&mut self, what: &str, done: impl Fn(&str) -> bool) {
        let deadline = Instant::now() + WAIT;
        while !done(&self.text) {
            let left = deadline.checked_duration_since(Instant::now()).unwrap_or_else(|| {
                panic!("{what}: not received within {WAIT:?}; received:\n{}", self.text);
            });
            match tokio::time::timeout(left, self.body.frame()).await {
                Ok(Some(Ok(frame))) => {
                    if let Some(data) = frame.data_ref() {
                        self.text.push_str(&String::from_utf8_lossy(data));
                    }
                }
                Ok(None) => {
                    self.ended = true;
                    assert!(done(&self.text), "{what}: the stream ended first; received:\n{}", self.text);
                }
                Ok(Some(Err(e))) => panic!("{what}: the stream failed: {e}; received:\n{}", self.text),
                Err(_) => panic!("{what}: not received within {WAIT:?}; received:\n{}", self.text),
            }
        }
    }

    /// The `data` of every `event: line` message received, parsed.
    fn lines(&self) -> Vec<(String, Value)> {
        self.text
            .split("\n\n")
            .filter(|message| message.lines().any(|l| l == "event: line"))
            .map(|message| {
                let data: String =
                    message.lines().filter_map(|l| l.strip_prefix("data: ")).collect::<Vec<_>>().join("\n");
                let value = serde_json::from_str(&data).unwrap_or_else(|e| panic!("{data}: {e}"));
                (data, value)
            })
            .collect()
    }
}

/// h(v) = SHA-256(h(v−1) || record) (docs/protocol.md §4), from an export line.
fn chains_onto(previous_hash: &str, line: &Value) -> bool {
    let previous = hex::decode(previous_hash).expect("hex");
    let record =
        base64::engine::general_purpose::STANDARD.decode(line["record"].as_str().expect("record")).expect("b64");
    let mut hasher = Sha256::new();
    hasher.update(&previous);
    hasher.update(&record);
    hex::encode(hasher.finalize()) == line["hash"].as_str().expect("hash")
}

fn page_head(page: &str) -> String {
    page.split("data-head=\"").nth(1).and_then(|rest| rest.split('"').next()).expect("data-head").to_owned()
}

/// A battle page asked for with `Accept-Encoding: gzip` (or br) comes back
/// compressed and decompresses to exactly the page; without it, as it is.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pages_are_compressed_when_the_client_accepts_it() {
    let stack = Stack::start("web-gzip", false).await;
    let mut forum = resolver_client(&stack.resolver).await;
    open(&mut forum, "web-gzip", "pokemon-d6@2", json!([{"id": "pikachu"}, {"id": "meowth"}]), "gzip seed").await;
    for n in 0..20 {
        let roll = json!({"type": "roll", "actor": "ash", "expression": "6d6", "purpose": format!("roll {n}")});
        act(&mut forum, "web-gzip", &roll, &format!("g-{n}")).await.expect("roll");
    }
    let (web, _) = start_web(&stack, "web-gzip", &[]).await;
    let page = format!("{}/battles/web-gzip", web.url());
    let reader = bearer(&TestAuth::shared().reader());

    let (status, headers, plain) = get_raw(&page, &[("authorization", &reader)]).await;
    assert_eq!(status, 200);
    assert!(headers.get("content-encoding").is_none(), "no Accept-Encoding, no compression: {headers:?}");
    assert!(String::from_utf8_lossy(&plain).contains("id=\"battle-export\""), "the page as it is");

    let (status, headers, gzipped) = get_raw(&page, &[("authorization", &reader), ("accept-encoding", "gzip")]).await;
    assert_eq!(status, 200);
    assert_eq!(headers["content-encoding"], "gzip");
    let mut unzipped = Vec::new();
    flate2::read::GzDecoder::new(&gzipped[..]).read_to_end(&mut unzipped).expect("gunzip");
    assert_eq!(unzipped, plain, "the same page");
    assert!(gzipped.len() * 3 < plain.len(), "compressed: {} → {} bytes", plain.len(), gzipped.len());
    eprintln!("battle page of 20 rolls: {} bytes, gzip {} bytes", plain.len(), gzipped.len());

    let (_, headers, _) = get_raw(&page, &[("authorization", &reader), ("accept-encoding", "br")]).await;
    assert_eq!(headers["content-encoding"], "br");
    // The export download and /verify too.
    let (_, headers, _) =
        get_raw(&format!("{page}/export.jsonl"), &[("authorization", &reader), ("accept-encoding", "gzip")]).await;
    assert_eq!(headers["content-encoding"], "gzip");
    let (_, headers, _) = get_raw(&format!("{}/verify", web.url()), &[("accept-encoding", "gzip")]).await;
    assert_eq!(headers["content-encoding"], "gzip");
}

/// The keys configured (`trusted_roller_keys` and `roller_keys_file`) are
/// what `/.well-known/battlelog/roller-keys` answers, to anyone, cacheable;
/// a key that is not one refuses the start, naming it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_trusted_roller_keys_are_published_and_checked_at_start() {
    let stack = Stack::start("web-keys", false).await;
    let keys_file = stack.dir.path().join("roller-keys");
    std::fs::write(&keys_file, format!("# the old roller\n{OTHER_KEY}\n")).expect("write the keys file");
    let keys_file = keys_file.display().to_string();
    let upper = ROLLER_KEY_HEX.to_ascii_uppercase();
    let (web, _) = start_web(
        &stack,
        "web-keys",
        &[("BATTLELOG_WEB_TRUSTED_ROLLER_KEYS", &upper), ("BATTLELOG_WEB_ROLLER_KEYS_FILE", &keys_file)],
    )
    .await;
    let (status, headers, body) = get_raw(&format!("{}/.well-known/battlelog/roller-keys", web.url()), &[]).await;
    assert_eq!(status, 200, "anyone reads it");
    assert_eq!(headers["content-type"], "application/json");
    assert_eq!(headers["cache-control"], "public, max-age=300");
    let body: Value = serde_json::from_slice(&body).expect("JSON");
    assert_eq!(body, json!({"keys": [ROLLER_KEY_HEX, OTHER_KEY]}), "lowercase, the listed then the file's");

    // None configured: an empty list (the pages then say "unpinned").
    let (plain, _) = start_web(&stack, "web-nokeys", &[]).await;
    let (status, _, body) = get_raw(&format!("{}/.well-known/battlelog/roller-keys", plain.url()), &[]).await;
    assert_eq!(status, 200);
    assert_eq!(serde_json::from_slice::<Value>(&body).expect("JSON"), json!({"keys": []}));

    // A bad key refuses the start, in one line naming it.
    let secret = stack.dir.path().join("web-keys.secret");
    let token = stack.dir.path().join("web-keys.token");
    for (variable, value, named) in [
        ("BATTLELOG_WEB_TRUSTED_ROLLER_KEYS", format!("{ROLLER_KEY_HEX},not-a-key"), "not-a-key".to_owned()),
        ("BATTLELOG_WEB_TRUSTED_ROLLER_KEYS", ROLLER_KEY_HEX[..62].to_owned(), ROLLER_KEY_HEX[..62].to_owned()),
        ("BATTLELOG_WEB_ROLLER_KEYS_FILE", stack.dir.path().join("missing").display().to_string(), "missing".into()),
    ] {
        let output = std::process::Command::new(battlelog_test_support::service_binary("battlelog-web"))
            .args(["--listen", "127.0.0.1:0", "--resolver-url", &stack.resolver.url()])
            .args(["--share-secret-file", &secret.display().to_string(), "--token-file", &token.display().to_string()])
            .env(variable, &value)
            .output()
            .expect("run battlelog-web");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{variable}={value} refuses the start: {stderr}");
        assert!(stderr.contains(&named), "the error names it: {stderr}");
        assert!(!String::from_utf8_lossy(&output.stdout).contains("listening"), "never ready");
    }
    let bad_file = stack.dir.path().join("bad-keys");
    std::fs::write(&bad_file, format!("{OTHER_KEY}\nzz{}\n", &OTHER_KEY[2..])).expect("write");
    let output = std::process::Command::new(battlelog_test_support::service_binary("battlelog-web"))
        .args(["--listen", "127.0.0.1:0", "--resolver-url", &stack.resolver.url()])
        .args(["--share-secret-file", &secret.display().to_string(), "--token-file", &token.display().to_string()])
        .args(["--roller-keys-file", &bad_file.display().to_string()])
        .output()
        .expect("run battlelog-web");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success() && stderr.contains("line 2"), "the file's bad line is named: {stderr}");
}

/// `battlelog up` serves the key of the roller it starts, as `battlelog
/// roller-key` derives it from the master key in its data dir.
#[test]
fn ups_web_trusts_the_roller_it_starts() {
    let dir = battlelog_test_support::temp_dir("up-roller-keys");
    let up = up(dir.path(), &["--no-nats"]);
    let web = up.endpoint("web");
    let master_key = dir.path().join("roller").join("master.key").display().to_string();
    let (code, roller_key, stderr) = cli(&["roller-key", "--master-key-file", &master_key]);
    assert_eq!(code, Some(0), "{stderr}");
    let (status, body) =
        battlelog_test_support::http_get_blocking(&format!("{web}/.well-known/battlelog/roller-keys"), &[]);
    assert_eq!(status, 200, "{body}");
    let body: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(body, json!({"keys": [roller_key.trim()]}));
}

/// An open battle's page follows it live: a stream after the page's last
/// version gets each new event as its export line, chained onto the page's
/// head, and ends after the close; the page's credential rules hold.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_open_battle_streams_its_new_events_until_it_closes() {
    let stack = Stack::start("web-live", false).await;
    let mut forum = resolver_client(&stack.resolver).await;
    open(&mut forum, "web-live", "pokemon-d6@2", json!([{"id": "pikachu"}, {"id": "meowth"}]), "live seed").await;
    let (web, share) = start_web(&stack, "web-live", &[("BATTLELOG_WEB_LIVE_KEEP_ALIVE_MS", "200")]).await;
    let auth = TestAuth::shared();
    let reader = bearer(&auth.reader());
    let (status, page) = http_get(&format!("{}/battles/web-live", web.url()), &[("authorization", &reader)]).await;
    assert_eq!(status, 200);
    let head = page_head(&page);
    let url = format!("{}/battles/web-live/live?after=0", web.url());

    // The page's credential rules.
    let other_tenant = bearer(&auth.token(Role::Reader, "elsewhere", "nosy"));
    for (what, url, headers, expected) in [
        ("no credential", url.clone(), vec![], 401),
        ("a reader of another tenant", url.clone(), vec![("authorization", other_tenant.as_str())], 404),
        ("another battle's share key", format!("{url}&k={}", share.key_for("other")), vec![], 403),
        ("a battle that does not exist", url.replace("web-live/", "no-such/"), vec![("authorization", &reader)], 404),
        ("a malformed version", format!("{}/battles/web-live/live?after=soon", web.url()), vec![], 400),
    ] {
        let (status, headers, body) = get_raw(&url, &headers).await;
        assert_eq!(status, expected, "{what}");
        assert!(headers["content-type"].to_str().expect("ascii").starts_with("text/html"), "{what}: an error page");
        assert!(String::from_utf8_lossy(&body).contains("id=\"error\""), "{what}: says why");
    }

    let mut stream = live(&url, &[("authorization", &reader)]).await;
    assert_eq!(stream.status, 200);
    assert_eq!(stream.headers["content-type"], "text/event-stream");
    assert!(stream.headers.get("content-encoding").is_none(), "events are not held in a compressor");
    assert_eq!(stream.headers["x-accel-buffering"], "no", "nor in a proxy's buffer");
    // Quiet: keep-alive comments.
    stream.until("a keep-alive comment", |text| text.lines().any(|l| l.starts_with(':'))).await;
    let mut shared = live(&format!("{url}&k={}", share.key_for("web-live")), &[]).await;
    assert_eq!(shared.status, 200, "the share link streams too");

    let attack = json!({"type": "attack", "actor": "pikachu", "target": "meowth", "move": "Tackle", "power": 40});
    act(&mut forum, "web-live", &attack, "l-1").await.expect("attack");
    stream.until("the action's events", |text| text.contains("\"event_type\":\"ActionResolved\"")).await;
    let lines = stream.lines();
    assert!(lines.len() >= 2, "the roll and the action: {}", stream.text);
    assert_eq!(lines[0].1["version"], 1, "the first event after the page's version 0");
    assert!(chains_onto(&head, &lines[0].1), "it chains onto the page's head {head}: {}", lines[0].0);
    for pair in lines.windows(2) {
        assert!(chains_onto(pair[0].1["hash"].as_str().expect("hash"), &pair[1].1), "{}", pair[1].0);
    }
    assert!(stream.text.contains("id: 1\n"), "each message carries its version as its id");
    // Exactly the export's lines.
    let (_, export) =
        http_get(&format!("{}/battles/web-live/export.jsonl", web.url()), &[("authorization", &reader)]).await;
    let export: Vec<&str> = export.lines().collect();
    for (data, line) in &lines {
        let version = line["version"].as_u64().expect("version") as usize;
        assert_eq!(data, export[version], "the export's line {version}");
    }

    close(&mut forum, "web-live").await;
    stream.until("the close", |text| text.contains("event: closed")).await;
    let lines = stream.lines();
    let types: Vec<&str> = lines.iter().rev().take(2).filter_map(|(_, l)| l["event_type"].as_str()).collect();
    assert_eq!(types, ["SeedRevealed", "BattleClosed"], "the close and its reveal, then `closed`");
    let closed_version = lines.last().map(|(_, l)| l["version"].clone()).expect("a line");
    let deadline = Instant::now() + WAIT;
    while !stream.ended {
        assert!(Instant::now() < deadline, "the stream ends after the close: {}", stream.text);
        match tokio::time::timeout(WAIT, stream.body.frame()).await {
            Ok(None) => stream.ended = true,
            Ok(Some(Ok(_))) => {}
            other => panic!("the stream ends cleanly: {other:?}"),
        }
    }
    shared.until("the close, through the share link", |text| text.contains("event: closed")).await;

    // A page of the closed battle that reconnects after its head: closed at once.
    let after_close = format!("{}/battles/web-live/live?after={closed_version}", web.url());
    let mut late = live(&after_close, &[("authorization", &reader)]).await;
    assert_eq!(late.status, 200);
    late.until("closed at once", |text| text.contains("event: closed")).await;
    assert!(late.lines().is_empty(), "nothing new: {}", late.text);
    // Last-Event-ID (an EventSource reconnecting) resumes after it.
    let mut resumed =
        live(&format!("{}/battles/web-live/live", web.url()), &[("authorization", &reader), ("last-event-id", "1")])
            .await;
    resumed.until("resumed to the close", |text| text.contains("event: closed")).await;
    assert_eq!(resumed.lines().first().expect("a line").1["version"], 2, "after the last id: {}", resumed.text);
}

/// `live_max_streams`: that many streams are served at once, one more is
/// refused with 503 and `Retry-After` (`live_retry_after_secs`), and a slot
/// is free again once its stream's client has gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn live_streams_over_the_limit_are_refused_with_retry_after() {
    let stack = Stack::start("web-live-limit", false).await;
    let mut forum = resolver_client(&stack.resolver).await;
    open(&mut forum, "web-limit", "pokemon-d6@2", json!([{"id": "pikachu"}, {"id": "meowth"}]), "seed").await;
    let (web, _) = start_web(
        &stack,
        "web-limit",
        &[("BATTLELOG_WEB_LIVE_MAX_STREAMS", "2"), ("BATTLELOG_WEB_LIVE_RETRY_AFTER_SECS", "9")],
    )
    .await;
    let reader = bearer(&TestAuth::shared().reader());
    let url = format!("{}/battles/web-limit/live?after=0", web.url());
    let first = live(&url, &[("authorization", &reader)]).await;
    assert_eq!(first.status, 200, "under the limit");
    let second = live(&url, &[("authorization", &reader)]).await;
    assert_eq!(second.status, 200, "at the limit");
    let (status, headers, body) = get_raw(&url, &[("authorization", &reader), ("accept-language", "ru")]).await;
    assert_eq!(status, 503, "over the limit");
    assert_eq!(headers["retry-after"], "9");
    let body = String::from_utf8_lossy(&body);
    assert!(body.contains("<html lang=\"ru\"") && body.contains("слишком много живых потоков"), "{body}");
    // A credential is checked before the limit: no slot is needed to be told 401.
    let (status, _, _) = get_raw(&url, &[]).await;
    assert_eq!(status, 401);

    drop(first);
    let reopened = battlelog_test_support::poll_until("a slot freed by the client gone", WAIT, || {
        let (url, reader) = (url.clone(), reader.clone());
        async move {
            let stream = live(&url, &[("authorization", &reader)]).await;
            (stream.status == 200).then_some(stream)
        }
    })
    .await;
    assert_eq!(reopened.status, 200);

    // Open streams do not hold a shutdown: SIGTERM ends them and the
    // service exits cleanly.
    let mut open_stream = second;
    assert!(web.terminate().await, "a clean exit with live streams open");
    let ended = tokio::time::timeout(WAIT, async {
        while let Some(frame) = open_stream.body.frame().await {
            if frame.is_err() {
                break;
            }
        }
    })
    .await;
    assert!(ended.is_ok(), "the stream ended with the service");
    drop(reopened);
}

/// Error pages are HTML in the visitor's language, with the status kept;
/// an unknown `lang` is no error.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn error_pages_speak_the_visitors_language() {
    let stack = Stack::start("web-errors", false).await;
    let mut forum = resolver_client(&stack.resolver).await;
    open(&mut forum, "web-errors", "pokemon-d6@2", json!([{"id": "pikachu"}, {"id": "meowth"}]), "seed").await;
    let (web, share) = start_web(&stack, "web-errors", &[]).await;
    let page = format!("{}/battles/web-errors", web.url());
    for (url, headers, status, lang, text) in [
        (format!("{page}?lang=ru"), vec![], 401, "ru", "нужен доступ"),
        (page.clone(), vec![("accept-language", "ru-RU,ru;q=0.9")], 401, "ru", "нужен доступ"),
        (page.clone(), vec![], 401, "en", "needs a credential"),
        (format!("{page}?k=AAAAAAAAAAAAAAAAAAAAAA&lang=ru"), vec![], 403, "ru", "не открывает бой"),
        (
            format!("{}/battles/no-such?k={}&lang=ru", web.url(), share.key_for("no-such")),
            vec![],
            404,
            "ru",
            "Такого боя",
        ),
        (format!("{}/no/such/page?lang=ru", web.url()), vec![], 404, "ru", "такой страницы нет"),
        (format!("{}/battles/bad%20id?lang=ru", web.url()), vec![], 400, "ru", "battle_id"),
        (format!("{page}?lang=de"), vec![], 401, "en", "needs a credential"),
    ] {
        let (got, headers_back, body) = get_raw(&url, &headers).await;
        let body = String::from_utf8_lossy(&body);
        assert_eq!(got, status, "{url}: {body}");
        assert!(headers_back["content-type"].to_str().expect("ascii").starts_with("text/html"), "{url}");
        assert!(body.contains(&format!("<html lang=\"{lang}\"")) && body.contains(text), "{url}: {body}");
    }
    // An unknown language on a page that opens falls back, never 400.
    let (status, body) = http_get(&format!("{page}?k={}&lang=de", share.key_for("web-errors")), &[]).await;
    assert_eq!(status, 200, "{body}");
    let (status, _) = http_get(&format!("{}/verify?lang=de", web.url()), &[]).await;
    assert_eq!(status, 200);
}
