//! System tests of the web pages (issue 12): the real `battlelog-web`
//! binary in front of the real journal, roller and resolver, over HTTP on
//! loopback. Who may read a battle page, and what it holds; the browser's
//! side (the in-page verification) is `web/browser-tests`.

use battlelog_auth::{Role, ShareSecret};
use battlelog_test_support::stack::*;
use battlelog_test_support::{ServiceProcess, TestAuth, http_get, http_get_raw};
use serde_json::json;

/// A battle with two rolls, and a web in front of its stack whose share
/// links are keyed by the secret in `<dir>/share.secret`.
async fn battle_and_web(stack: &Stack, battle_id: &str, secret_name: &str) -> (ServiceProcess, ShareSecret) {
    let mut forum = resolver_client(&stack.resolver).await;
    open(&mut forum, battle_id, "pokemon-d6@2", json!([{"id": "pikachu"}, {"id": "meowth"}]), "web seed").await;
    let attack = json!({"type": "attack", "actor": "pikachu", "target": "meowth", "move": "Tackle", "power": 40});
    act(&mut forum, battle_id, &attack, "w-1").await.expect("attack");
    let roll = json!({"type": "roll", "actor": "ash", "expression": "4d6kh3", "purpose": "luck"});
    act(&mut forum, battle_id, &roll, "w-2").await.expect("roll");
    let secret = stack.dir.path().join(secret_name);
    let web = start_web(stack, &secret, &TestAuth::shared().reader()).await;
    (web, ShareSecret::read(&secret).expect("the secret"))
}

/// A web in front of `stack` with the share secret at `secret` (created
/// when missing), reading shared battles as the reader `token`.
async fn start_web(stack: &Stack, secret: &std::path::Path, token: &str) -> ServiceProcess {
    ShareSecret::read_or_create(secret).expect("a share secret");
    let name = secret.file_name().and_then(|n| n.to_str()).expect("a file name");
    let token_file = stack.dir.path().join(format!("web-{name}.token"));
    std::fs::write(&token_file, token).expect("write the web's reader token");
    let log = stack.dir.path().join(format!("web-{name}.log"));
    battlelog_test_support::web(&stack.resolver.url(), secret, &token_file, &log).await
}

/// The export a battle page links in its head (`link#export-link`), as a URL of `web`.
fn export_link(web: &str, page: &str) -> String {
    let link = page.split("<link id=\"export-link\"").nth(1).expect("the page links its export");
    let href = link.split("href=\"").nth(1).and_then(|rest| rest.split('"').next()).expect("an href");
    format!("{web}{}", href.replace("&amp;", "&"))
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// Every credential the page admits, and every one it refuses, with the
/// status a visitor sees; `/verify` needs none.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_battle_page_admits_its_tenants_readers_and_its_share_link_only() {
    let stack = Stack::start("web-access", false).await;
    let (web, share) = battle_and_web(&stack, "web-access", "share.secret").await;
    let page = format!("{}/battles/web-access", web.url());
    let auth = TestAuth::shared();

    for (who, token) in [("forum", auth.forum()), ("judge", auth.judge()), ("reader", auth.reader())] {
        let (status, body) = http_get(&page, &[("authorization", &bearer(&token))]).await;
        assert_eq!(status, 200, "a {who} of the tenant reads the page: {body}");
    }
    let key = share.key_for("web-access");
    let (status, body) = http_get(&format!("{page}?k={key}"), &[]).await;
    assert_eq!(status, 200, "the share link opens the page: {body}");
    // The page does not carry its export (issue 39): its verifier reads the
    // one its head links, which the same link opens, as the page's tokens do.
    let link = export_link(&web.url(), &body);
    assert_eq!(link, format!("{page}/export.jsonl?k={key}"), "the link keeps the share key");
    let (status, export) = http_get(&link, &[]).await;
    assert_eq!(status, 200, "the share link reads the export: {export}");
    assert!(export.contains("\"version\":0"), "{export}");
    for (who, token) in [("forum", auth.forum()), ("judge", auth.judge()), ("reader", auth.reader())] {
        let (_, body) = http_get(&page, &[("authorization", &bearer(&token))]).await;
        let (status, body) = http_get(&export_link(&web.url(), &body), &[("authorization", &bearer(&token))]).await;
        assert_eq!(status, 200, "a {who} of the tenant reads the export: {body}");
    }

    // The pages above were read, so the web keeps this battle's export
    // (`recent_exports_bytes`): each refusal below holds for the export
    // too, the resolver asked anew each time.
    let refused = [
        ("no credential", page.clone(), None, 401),
        ("another battle's share key", format!("{page}?k={}", share.key_for("other-battle")), None, 403),
        ("a made-up share key", format!("{page}?k=AAAAAAAAAAAAAAAAAAAAAA"), None, 403),
        ("a reader of another tenant", page.clone(), Some(auth.token(Role::Reader, "elsewhere", "nosy")), 404),
        ("a service token", page.clone(), Some(auth.service_token()), 403),
        ("a battle that does not exist", format!("{}/battles/no-such-battle", web.url()), Some(auth.reader()), 404),
        ("a malformed battle id", format!("{}/battles/bad%20id", web.url()), Some(auth.reader()), 400),
        ("a token that is not one", page.clone(), Some("not-a-token".to_owned()), 401),
    ];
    for (what, url, token, expected) in refused {
        let headers = token.as_deref().map(|t| vec![("authorization", bearer(t))]).unwrap_or_default();
        let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let (status, body) = http_get(&url, &headers).await;
        assert_eq!(status, expected, "{what}: {body}");
        assert!(body.contains("id=\"error\""), "{what}: one line says why: {body}");
        assert!(!body.contains("data-version"), "{what}: nothing of the battle shows: {body}");
        // Nor its export: whoever may not see the page may not read what it links.
        let export = match url.split_once('?') {
            Some((path, query)) => format!("{path}/export.jsonl?{query}"),
            None => format!("{url}/export.jsonl"),
        };
        let (status, body) = http_get(&export, &headers).await;
        assert_eq!(status, expected, "{what}, the export: {body}");
        assert!(!body.contains("\"version\""), "{what}: nothing of the export shows: {body}");
    }
    let (status, body) =
        http_get(&format!("{}/battles/bad%20id", web.url()), &[("authorization", &bearer(&auth.reader()))]).await;
    assert_eq!(status, 400);
    assert!(body.contains("battle_id"), "the error names the field: {body}");

    let (status, body) = http_get(&format!("{}/verify", web.url()), &[]).await;
    assert_eq!(status, 200, "/verify is public");
    // Idle until a file is chosen: nothing is being checked yet.
    assert!(body.contains("id=\"export-file\"") && body.contains("data-audit=\"idle\""), "{body}");
    // The verifier comes as ES modules from this origin, beside the page.
    let src = body.split("type=\"module\" src=\"").nth(1).and_then(|s| s.split('"').next()).expect("a module script");
    let (status, entry) = http_get(&format!("{}{src}", web.url()), &[]).await;
    assert_eq!(status, 200, "{src}");
    assert!(entry.contains("from '../dom.js'"), "the page's own module: {entry:.200}");
    let verify = src.replace("pages/verify-file.js", "verify.js");
    let (status, verify) = http_get(&format!("{}{verify}", web.url()), &[]).await;
    assert_eq!(status, 200);
    assert!(verify.contains("export { ExportFormatError, verifyExport }"), "the verifier's entry: {verify:.200}");
    // A language the pages lack is no error: the page falls back and says so.
    let (status, body) = http_get(&format!("{}/verify?lang=de", web.url()), &[]).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("id=\"lang-notice\"") && body.contains("<html lang=\"en\">"), "{body}");

    // The access log has a line per request, and neither the share key nor
    // any token a visitor sent.
    let log = web.log();
    assert!(log.contains("route=/battles/{battle_id}") && log.contains("status=403"), "{log}");
    assert!(!log.contains("?k="), "no query string in the log:\n{log}");
    assert!(!log.contains(&key) && !log.contains(&auth.reader()), "no secret in the log:\n{log}");

    // Rotating the secret revokes the links made with the old one.
    drop(web);
    let rotated = start_web(&stack, &stack.dir.path().join("rotated.secret"), &auth.reader()).await;
    let (status, _) = http_get(&format!("{}/battles/web-access?k={key}", rotated.url()), &[]).await;
    assert_eq!(status, 403, "a link of the old secret no longer opens the page");
    let new_key = ShareSecret::read(&stack.dir.path().join("rotated.secret")).expect("secret").key_for("web-access");
    let (status, _) = http_get(&format!("{}/battles/web-access?k={new_key}", rotated.url()), &[]).await;
    assert_eq!(status, 200);

    // This resolver has no share secret: a link's key is no capability to
    // it, so a web reading as a reader of another tenant cannot open the
    // battle even with the right key.
    let foreign = auth.token(Role::Reader, "another-tenant", "their-web");
    let foreign_web = start_web(&stack, &stack.dir.path().join("share.secret"), &foreign).await;
    let (status, body) = http_get(&format!("{}/battles/web-access?k={key}", foreign_web.url()), &[]).await;
    assert_eq!(status, 404, "{body}");
}

/// The export a page has just read is answered from the web's recent
/// exports only while the battle's head has not moved: the same bytes
/// twice, then, once the battle goes on, the new events (read again).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_export_kept_from_a_page_is_answered_only_at_the_same_head() {
    let stack = Stack::start("web-recent", false).await;
    let (web, _) = battle_and_web(&stack, "web-recent", "share.secret").await;
    let page = format!("{}/battles/web-recent", web.url());
    let reader = [("authorization", bearer(&TestAuth::shared().reader()))];
    let reader: Vec<(&str, &str)> = reader.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (status, body) = http_get(&page, &reader).await;
    assert_eq!(status, 200, "{body}");
    let link = export_link(&web.url(), &body);
    let (status, first) = http_get(&link, &reader).await;
    assert_eq!(status, 200, "{first}");
    let (_, again) = http_get(&link, &reader).await;
    assert_eq!(first, again, "the same head, the same file");
    let versions = |text: &str| text.lines().filter(|line| line.contains("\"version\":")).count();
    let before = versions(&first);
    // Kept compressed: a client that takes brotli gets those bytes, which
    // decode to the same text, with an ETag of their own; one that does not
    // gets the text (gzip from the compression layer, if it asks).
    let with = |encoding: &'static str| [reader[0], ("accept-encoding", encoding)];
    let (status, headers, packed) = http_get_raw(&link, &with("gzip, br")).await;
    assert_eq!(status, 200);
    assert_eq!(headers.get("content-encoding").map(|v| v.as_bytes()), Some(&b"br"[..]), "{headers:?}");
    let mut unpacked = Vec::new();
    std::io::Read::read_to_end(&mut brotli::Decompressor::new(&packed[..], 4096), &mut unpacked).expect("brotli");
    assert_eq!(String::from_utf8(unpacked).expect("UTF-8"), first);
    let (_, plain_headers, _) = http_get_raw(&link, &reader).await;
    assert_ne!(headers.get("etag"), plain_headers.get("etag"), "one ETag a representation");
    let (_, gzip_headers, _) = http_get_raw(&link, &with("gzip")).await;
    assert_eq!(gzip_headers.get("content-encoding").map(|v| v.as_bytes()), Some(&b"gzip"[..]), "{gzip_headers:?}");
    let etag = headers.get("etag").and_then(|v| v.to_str().ok()).expect("an ETag").to_owned();
    let (status, _, _) = http_get_raw(&link, &[reader[0], ("accept-encoding", "br"), ("if-none-match", &etag)]).await;
    assert_eq!(status, 304, "the same head: not modified");

    let mut forum = resolver_client(&stack.resolver).await;
    let roll = json!({"type": "roll", "actor": "ash", "expression": "1d6", "purpose": "after the page"});
    act(&mut forum, "web-recent", &roll, "w-3").await.expect("roll");
    let (status, moved) = http_get(&link, &reader).await;
    assert_eq!(status, 200, "{moved}");
    assert_eq!(versions(&moved), before + 2, "the roll and its action, read again:\n{moved}");
    assert!(moved.contains("after the page"), "{moved}");
}

/// When the resolver holds the share secret too (`share_secret_file`, as
/// `battlelog up` and the deployment kit configure it), a share link opens
/// its battle whatever tenant the web's own reader token is of: one web
/// serves the links of every tenant. A token of another tenant alone still
/// opens nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_share_link_opens_a_battle_of_any_tenant_when_the_resolver_holds_the_secret() {
    let secret_dir = battlelog_test_support::temp_dir("web-secret");
    let secret = secret_dir.path().join("share.secret");
    let (share, options) = share_link_options(&secret, "http://127.0.0.1:8080");
    let stack = Stack::start_with("web-tenants", false, &options).await;
    let mut forum = resolver_client(&stack.resolver).await;
    open(&mut forum, "web-tenants", "pokemon-d6@2", json!([{"id": "pikachu"}, {"id": "meowth"}]), "seed").await;
    let auth = TestAuth::shared();
    let foreign = auth.token(Role::Reader, "another-tenant", "their-web");
    let web = start_web(&stack, &secret, &foreign).await;
    let page = format!("{}/battles/web-tenants", web.url());

    let (status, body) = http_get(&format!("{page}?k={}", share.key_for("web-tenants")), &[]).await;
    assert_eq!(status, 200, "the link opens the battle: {body}");
    assert!(body.contains("data-version=\"0\"") && body.contains("system test web-tenants"), "{body}");
    let (status, _) = http_get(&page, &[("authorization", &bearer(&foreign))]).await;
    assert_eq!(status, 404, "the other tenant's token alone opens nothing");
    let (status, _) = http_get(&format!("{page}?k={}", share.key_for("another-battle")), &[]).await;
    assert_eq!(status, 403, "another battle's key");
}

/// The page links the battle's export exactly as `battlelog export`
/// writes it (what the in-page verifier checks), marks every event and
/// roll for the DOM contract, and serves the same export as a download.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_page_links_the_export_and_holds_the_dom_contract() {
    let stack = Stack::start("web-page", false).await;
    let (web, share) = battle_and_web(&stack, "web-page", "share.secret").await;
    let key = share.key_for("web-page");
    // The whole export, its §5 trailer included: the page embeds that too.
    let export = export_full_to(&stack.resolver.url(), "web-page", &stack.dir.path().join("web-page.jsonl"));
    // The event lines (the trailer has no version).
    let lines: Vec<serde_json::Value> = export
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("JSON"))
        .filter(|l| l.get("version").is_some())
        .collect();

    let (status, page) = http_get(&format!("{}/battles/web-page?k={key}&lang=en", web.url()), &[]).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("<body data-audit=\"pending\""), "pending until the browser has verified");
    assert!(page.contains("id=\"first-failure\""));
    // The export is not in the page (issue 39): the page links it, and
    // what the link gives is exactly the export.
    assert!(
        page.contains("<script type=\"application/x-ndjson\" id=\"battle-export\"></script>"),
        "empty until checked"
    );
    let (status, linked) = http_get(&export_link(&web.url(), &page), &[]).await;
    assert_eq!(status, 200, "{linked}");
    assert_eq!(linked.trim_end(), export.trim_end(), "the page links exactly the export");
    let head = lines.last().and_then(|l| l["hash"].as_str()).expect("a head hash");
    assert!(page.contains(&format!("data-head=\"{head}\"")), "the head the export ends at");
    for line in &lines {
        let version = line["version"].as_u64().expect("version");
        assert!(page.contains(&format!("id=\"v{version}\" data-version=\"{version}\"")), "event {version}");
        if let Some(nonce) = line["event"]["nonce"].as_u64() {
            assert!(page.contains(&format!("data-nonce=\"{nonce}\"")), "roll {nonce}");
        }
        if let Some(summary) = line["event"]["summary_en"].as_str() {
            assert!(page.contains(&drawn_summary(summary)), "the English summary of {version}: {summary}");
        }
    }
    // The 4d6kh3 roll's dropped die is drawn dropped.
    assert!(page.contains("class=\"die dropped\""), "a dropped die is marked");

    let (status, russian) = http_get(&format!("{}/battles/web-page?k={key}&lang=ru", web.url()), &[]).await;
    assert_eq!(status, 200);
    for summary in lines.iter().filter_map(|l| l["event"]["summary_ru"].as_str()) {
        assert!(russian.contains(&drawn_summary(summary)), "the Russian summary: {summary}");
    }

    let (status, download) = http_get(&format!("{}/battles/web-page/export.jsonl?k={key}", web.url()), &[]).await;
    assert_eq!(status, 200);
    assert_eq!(download.trim_end(), export.trim_end(), "the download is the export");
    let (status, _) = http_get(&format!("{}/battles/web-page/export.jsonl", web.url()), &[]).await;
    assert_eq!(status, 401, "the download needs a credential too");
}

/// HTML text as maud escapes it (`&`, `<`, `>`, `"`).
fn maud_escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A summary as the page draws it: escaped, each `~~die~~` struck (`<s>`).
fn drawn_summary(summary: &str) -> String {
    maud_escape(summary)
        .split("~~")
        .enumerate()
        .map(|(i, part)| {
            if i == 0 {
                part.to_owned()
            } else if i % 2 == 1 {
                format!("<s>{part}")
            } else {
                format!("</s>{part}")
            }
        })
        .collect()
}

/// A failure on our side (the resolver unreachable) shows the visitor a
/// short public message, in their language, and none of its detail: the
/// connection error and the resolver's address are in the web's log only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_resolver_shows_a_public_message_and_logs_the_detail() {
    let dir = battlelog_test_support::temp_dir("web-unreachable");
    // A port nothing listens on: bound, then closed.
    let (listener, resolver_url) = battlelog_test_support::loopback_listener().await;
    let port = listener.local_addr().expect("an address").port().to_string();
    drop(listener);
    let secret = dir.path().join("share.secret");
    let share = ShareSecret::read_or_create(&secret).expect("a share secret");
    let token_file = dir.path().join("web.token");
    std::fs::write(&token_file, TestAuth::shared().reader()).expect("write the web's token");
    let web = battlelog_test_support::web(&resolver_url, &secret, &token_file, &dir.path().join("web.log")).await;

    let url = format!("{}/battles/web-unreachable?k={}", web.url(), share.key_for("web-unreachable"));
    let (status, body) = http_get(&url, &[]).await;
    assert!((502..=504).contains(&status), "the resolver's failure is a gateway error: {status} {body}");
    assert!(body.contains("The battle service"), "a public message: {body}");
    let (status, russian) = http_get(&format!("{url}&lang=ru"), &[]).await;
    assert!((502..=504).contains(&status), "{status} {russian}");
    assert!(russian.contains("Служба боёв"), "in the visitor's language: {russian}");
    for internal in ["127.0.0.1", &port, "transport", "connect", "refused", "resolver refused"] {
        assert!(!body.contains(internal), "the page shows no internal detail ({internal:?}): {body}");
        assert!(!russian.contains(internal), "the page shows no internal detail ({internal:?}): {russian}");
    }
    // The detail is logged for the operator.
    let log = battlelog_test_support::poll_until("the failure in the log", WAIT, || {
        let log = web.log();
        async move { log.contains("page failed").then_some(log) }
    })
    .await;
    assert!(log.contains(&port) || log.to_ascii_lowercase().contains("connect"), "the detail is logged: {log}");
}

/// berserk@2 (docs/rules.md §6.3): the page shows a strike awaiting its
/// exchange choice, and links the strike and the choice that answers it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_pending_exchange_choice_and_its_answer_link_each_other() {
    let stack = Stack::start("web-choice", false).await;
    let battle_id = "web-choice";
    let mut forum = resolver_client(&stack.resolver).await;
    open(&mut forum, battle_id, "berserk@2", json!([{"id": "a"}, {"id": "b"}]), "choice seed").await;
    // Fixed rolls 1 against 5: diff −4, the defender may choose.
    let side =
        |id: &str, experience: &str, face: i64| json!({"id": id, experience: 0, "die_modifier": 0, "fixed_roll": face});
    let mut defender = side("b", "defense_experience", 5);
    defender["closed"] = json!(false);
    let strike = json!({"type": "strike", "attacker": side("a", "attack_experience", 1), "defender": defender,
        "kind": "simple", "own_squad": false});
    let struck = act(&mut forum, battle_id, &strike, "strike").await.expect("a strike");
    let secret = stack.dir.path().join("share.secret");
    let web = start_web(&stack, &secret, &TestAuth::shared().reader()).await;
    let page = format!("{}/battles/{battle_id}", web.url());
    let reader = bearer(&TestAuth::shared().reader());
    let (status, body) = http_get(&page, &[("authorization", &reader)]).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("awaits the exchange choice of the defender"), "the pending choice shows: {body}");

    let choice = json!({"type": "exchange_choice", "actor": "b", "against": struck.version, "avoid": false});
    let chosen = act(&mut forum, battle_id, &choice, "choice").await.expect("the defender's choice");
    let (_, body) = http_get(&format!("{page}?lang=ru"), &[("authorization", &reader)]).await;
    assert!(
        body.contains(&format!("выбор обмена для удара <a class=\"refers\" href=\"#v{}\">", struck.version)),
        "the choice links its strike: {body}"
    );
    assert!(body.contains(&format!("ответ: <a href=\"#v{}\">", chosen.version)), "the strike links its choice: {body}");
}

/// Issue 23 (docs/protocol.md §5): the journal's log key is published to anyone
/// (no credential; a bad one is not even looked at) at
/// `/.well-known/battlelog/log-key`, the key the journal itself gives; the
/// battle page embeds it (`#log-keys`), the export it links ends with the
/// trailer and it shows that trailer's checkpoint to keep; `export.jsonl` ends
/// with the same kind of trailer, which the tlog crate checks against the
/// export's last event and the published key.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_log_key_is_published_and_the_page_carries_the_trailer_and_its_checkpoint() {
    use battlelog_proto::v1 as pb;
    let stack = Stack::start("web-trailer", false).await;
    let (web, share) = battle_and_web(&stack, "web-trailer", "share.secret").await;
    // The key as the journal gives it (its own RPC, with a service token).
    let mut journal = stack.journal_client().await;
    let journal_key =
        journal.get_checkpoint(pb::GetCheckpointRequest {}).await.expect("GetCheckpoint").into_inner().log_key;
    let journal_key = battlelog_tlog::VerifierKey::parse(&journal_key).expect("the journal's key parses");

    let url = format!("{}/.well-known/battlelog/log-key", web.url());
    for headers in [vec![], vec![("authorization", "Bearer not-a-token")]] {
        let (status, body) = http_get(&url, &headers).await;
        assert_eq!(status, 200, "anyone reads the log key: {body}");
        let value: serde_json::Value = serde_json::from_str(&body).expect("JSON");
        assert_eq!(value, json!({ "keys": [journal_key.to_string()] }));
    }

    let key = share.key_for("web-trailer");
    let (status, page) = http_get(&format!("{}/battles/web-trailer?k={key}&lang=en", web.url()), &[]).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains(&format!("id=\"log-keys\">{{\"keys\":[\"{journal_key}\"]}}<")), "the page pins the key");
    let (_, linked) = http_get(&export_link(&web.url(), &page), &[]).await;
    let trailer_line = linked.trim_end().lines().last().expect("a last line");
    let trailer: battlelog_tlog::Trailer = serde_json::from_str(trailer_line).expect("the last line is the trailer");
    let note =
        page.split("<pre id=\"checkpoint-note\" translate=\"no\">").nth(1).and_then(|rest| rest.split("</pre>").next());
    assert_eq!(
        note.map(|n| n.replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")),
        Some(trailer.checkpoint.clone()),
        "the checkpoint to keep is the trailer's"
    );
    assert!(page.contains("id=\"copy-checkpoint\""));

    let (status, download) = http_get(&format!("{}/battles/web-trailer/export.jsonl?k={key}", web.url()), &[]).await;
    assert_eq!(status, 200);
    // The last event line and the trailer after it, read as JSON.
    let lines: Vec<serde_json::Value> = download.lines().map(|l| serde_json::from_str(l).expect("JSON")).collect();
    let (trailer, events) = lines.split_last().expect("lines");
    assert!(trailer.get("version").is_none(), "export.jsonl ends with a trailer: {trailer}");
    let trailer: battlelog_tlog::Trailer = serde_json::from_value(trailer.clone()).expect("the trailer's fields");
    let last = events.last().expect("events");
    let hash = hex::decode(last["hash"].as_str().expect("hash")).expect("hex");
    let head = battlelog_tlog::StreamHead {
        stream_id: last["stream"].as_str().expect("stream").to_owned(),
        version: last["version"].as_u64().expect("version"),
        hash: <[u8; 32]>::try_from(hash.as_slice()).expect("32 bytes"),
    };
    let checkpoint = trailer.check(Some(&head), Some(&journal_key)).expect("the trailer checks");
    assert!(checkpoint.size > trailer.leaf_index, "the checkpoint holds the head record");
}
