//! TLS on every gRPC hop (issue 8), with the real binaries and real TLS on
//! loopback: the three services over mutual TLS play a battle that audits
//! clean; a plaintext client, a client that does not trust the CA and a
//! caller without a client certificate are each refused with an error, not
//! a hang; and `battlelog up --tls` serves `https://` endpoints that
//! `battlelog demo`, `export` and `audit` use.

use std::time::Duration;

use battlelog_test_support::stack::{
    MASTER_KEY_HEX, act, assert_audit_file_clean, assert_audit_file_verifies, assert_audit_rpc_ok, cli, close, open,
    resolver_client, split_trailer, up, up_roller_key,
};
use battlelog_test_support::{ServiceProcess, TestPki, temp_dir};
use serde_json::json;
use tonic::transport::{ClientTlsConfig, Endpoint};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;

/// What a refused connection may take at most: an error, never a hang.
const REFUSAL_DEADLINE: Duration = Duration::from_secs(15);

/// journal, roller and resolver over mutual TLS, each its own process.
struct TlsStack {
    pki: TestPki,
    dir: tempfile::TempDir,
    journal: ServiceProcess,
    _roller: ServiceProcess,
    resolver: ServiceProcess,
}

async fn tls_stack(label: &str) -> TlsStack {
    let pki = TestPki::generate(label);
    let dir = temp_dir(label);
    let journal = battlelog_test_support::journal_tls(&dir.path().join("journal"), None, &pki).await;
    assert!(journal.url().starts_with("https://"), "{}", journal.url());
    let roller =
        battlelog_test_support::roller_tls(&dir.path().join("roller"), &journal.url(), MASTER_KEY_HEX, &pki).await;
    let resolver = battlelog_test_support::resolver_tls(
        &dir.path().join("resolver.log"),
        &journal.url(),
        &roller.url(),
        None,
        &pki,
    )
    .await;
    TlsStack { pki, dir, journal, _roller: roller, resolver }
}

/// A health check of `url` through `endpoint`'s settings: Ok when SERVING,
/// Err with the error's text otherwise; panics when it takes longer than
/// [`REFUSAL_DEADLINE`].
async fn health_check(endpoint: Endpoint) -> Result<(), String> {
    let check = async move {
        let channel = endpoint.connect().await.map_err(|e| format!("connect: {e:?}"))?;
        HealthClient::new(channel)
            .check(HealthCheckRequest { service: String::new() })
            .await
            .map(|_| ())
            .map_err(|status| format!("health: {status:?}"))
    };
    tokio::time::timeout(REFUSAL_DEADLINE, check).await.expect("refused with an error within the deadline, not a hang")
}

fn tls_endpoint(url: &str, tls: ClientTlsConfig) -> Endpoint {
    Endpoint::from_shared(url.to_owned()).expect("url").tls_config(tls).expect("TLS config")
}

/// The services call each other over mutual TLS: a pokemon battle is
/// opened, played and closed through the resolver, its Audit RPC finds
/// nothing, and the CLI exports it over TLS (CA and client certificate
/// from flags) to an export that audits clean offline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_services_over_mutual_tls_play_a_battle_that_audits_clean() {
    let stack = tls_stack("tls-battle").await;
    let mut resolver = resolver_client(&stack.resolver).await;
    let battle_id = "tls-pokemon";
    let participants = json!([{"id": "pikachu"}, {"id": "meowth"}]);
    open(&mut resolver, battle_id, "pokemon-d6@1", participants, "thread 8: over TLS").await;
    let attack = json!({"type": "attack", "actor": "pikachu", "target": "meowth", "move": "Tackle", "power": 40});
    let reply = act(&mut resolver, battle_id, &attack, "tls-attack-1").await.expect("attack over TLS");
    assert!(!reply.rolls.is_empty(), "the roller rolled, through the journal, over mutual TLS");
    let dodge = json!({"type": "dodge", "actor": "meowth", "incoming_damage": 40});
    act(&mut resolver, battle_id, &dodge, "tls-dodge-1").await.expect("dodge over TLS");
    close(&mut resolver, battle_id).await;

    let p = &stack.pki.pki;
    let (ca, cert, key) =
        (p.ca.display().to_string(), p.client_cert.display().to_string(), p.client_key.display().to_string());
    let resolver_url = stack.resolver.url();
    let token = battlelog_test_support::TestAuth::shared().reader();
    let (code, export, stderr) = cli(&[
        "export",
        battle_id,
        "--resolver",
        &resolver_url,
        "--token",
        &token,
        "--ca-file",
        &ca,
        "--client-cert",
        &cert,
        "--client-key",
        &key,
    ]);
    assert_eq!(code, Some(0), "export over mutual TLS: {stderr}");
    // The events, not the trailer line (docs/protocol.md §5) that ends the export.
    assert_audit_rpc_ok(&mut resolver, battle_id, split_trailer(&export).0.lines().count()).await;
    let file = stack.dir.path().join("tls-pokemon.jsonl");
    std::fs::write(&file, &export).expect("write the export");
    assert_audit_file_verifies(&file, battle_id);
}

/// A plaintext gRPC client on a TLS port gets an error (the handshake
/// fails), not a hang; the same port answers over TLS.
#[tokio::test]
async fn a_plaintext_client_on_a_tls_port_fails_cleanly() {
    let stack = tls_stack("tls-plaintext").await;
    let plaintext = format!("http://{}", stack.journal.addr());
    let refused = health_check(Endpoint::from_shared(plaintext).expect("url")).await;
    assert!(refused.is_err(), "a plaintext client must not be served by a TLS port");
    let served = health_check(tls_endpoint(&stack.journal.url(), stack.pki.client())).await;
    assert_eq!(served, Ok(()), "the same port over TLS is healthy, health service included");
}

/// A client that trusts another CA refuses the server's certificate.
#[tokio::test]
async fn a_client_that_does_not_trust_the_ca_is_refused() {
    let stack = tls_stack("tls-untrusted").await;
    let stranger = TestPki::generate("stranger");
    for service in [&stack.journal, &stack.resolver] {
        let refused = health_check(tls_endpoint(&service.url(), stranger.client())).await;
        let error = refused.expect_err("a certificate from an untrusted CA is refused");
        assert!(error.to_lowercase().contains("certificate"), "the error says why: {error}");
    }
}

/// With `tls_client_ca` set, a caller that trusts the CA but presents no
/// client certificate — or one from another CA — is refused; the stack's
/// own client certificate is accepted.
#[tokio::test]
async fn a_caller_without_a_client_certificate_is_refused() {
    let stack = tls_stack("tls-mutual").await;
    let refused = health_check(tls_endpoint(&stack.journal.url(), stack.pki.ca_only())).await;
    assert!(refused.is_err(), "no client certificate: refused");
    let stranger = TestPki::generate("stranger-client");
    let foreign_identity = tonic::transport::Identity::from_pem(
        std::fs::read(&stranger.pki.client_cert).expect("cert"),
        std::fs::read(&stranger.pki.client_key).expect("key"),
    );
    let foreign = tls_endpoint(&stack.journal.url(), stack.pki.ca_only().identity(foreign_identity));
    assert!(health_check(foreign).await.is_err(), "a client certificate from another CA: refused");
    let accepted = health_check(tls_endpoint(&stack.journal.url(), stack.pki.client())).await;
    assert_eq!(accepted, Ok(()), "the services' client certificate is accepted");
}

/// `battlelog up --tls`: https:// endpoints; `battlelog demo --ca-file`
/// plays against them; with the dev CA found under `--data-dir` (no other
/// flag) the demo plays again and every export line it prints works as
/// printed and audits clean, and every battle page it links opens (the web
/// service reads the resolver over TLS); without any CA an https:// endpoint is an
/// error that names `--ca-file`.
#[test]
fn up_tls_serves_https_that_the_cli_uses() {
    let dir = temp_dir("up-tls");
    let up = up(dir.path(), &["--tls", "--no-nats"]);
    assert!(up.resolver.starts_with("https://"), "up --tls serves https://: {:?}", up.banner);
    let resolver = up.endpoint("resolver");
    up.endpoint("roller");
    up.endpoint("journal");
    let ca = dir.path().join("tls").join("ca.pem");
    assert!(up.banner.iter().any(|l| l.contains(&ca.display().to_string())), "names its CA: {:?}", up.banner);

    let ca_file = ca.display().to_string();
    let data = dir.path().display().to_string();
    // An operator's path: a token issued with up's key, and the CA by file.
    let (code, token, stderr) =
        cli(&["token", "issue", "--role", "forum", "--tenant", "dev", "--subject", "tls-forum", "--data-dir", &data]);
    assert_eq!(code, Some(0), "token issue: {stderr}");
    let (code, stdout, stderr) = cli(&[
        "demo",
        "--resolver",
        &resolver,
        "--ca-file",
        &ca_file,
        "--token",
        token.trim(),
        "--data-dir",
        "/nonexistent",
    ]);
    assert_eq!(code, Some(0), "demo --ca-file over TLS: {stderr}\n{stdout}");

    let (code, stdout, stderr) = cli(&["demo", "--resolver", &resolver, "--data-dir", &data]);
    assert_eq!(code, Some(0), "demo with the dev CA from --data-dir: {stderr}\n{stdout}");
    let exports: Vec<Vec<&str>> = stdout
        .lines()
        .filter_map(|l| l.trim().strip_prefix("battlelog "))
        .map(|l| l.split_whitespace().collect())
        .filter(|words: &Vec<&str>| words.first() == Some(&"export") && words.contains(&"--resolver"))
        .collect();
    assert_eq!(exports.len(), 4, "one export line per ruleset:\n{stdout}");
    // The web pages read the resolver over TLS too: each printed page opens.
    let pages: Vec<&str> = stdout.lines().filter_map(|l| l.strip_prefix("Page / Страница: ")).collect();
    assert_eq!(pages.len(), 4, "one page link per battle:\n{stdout}");
    for page in pages {
        let (status, body) = battlelog_test_support::http_get_blocking(page, &[]);
        assert_eq!(status, 200, "{page} through the resolver's TLS: {body}");
        assert!(body.contains("data-version=\"0\""), "{page} shows the battle");
    }
    for words in exports {
        let battle = words[1];
        assert!(words.contains(&"--data-dir"), "the printed line finds the CA as the demo did: {words:?}");
        let (code, export, stderr) = cli(&words);
        assert_eq!(code, Some(0), "export {battle} over mutual TLS as printed: {stderr}");
        let file = dir.path().join(format!("{battle}.jsonl"));
        std::fs::write(&file, export).expect("write the export");
        assert_audit_file_clean(&file, battle, &up_roller_key(dir.path()));
    }

    let nowhere = temp_dir("up-tls-no-ca");
    let nowhere = nowhere.path().display().to_string();
    let (code, _, stderr) = cli(&["demo", "--resolver", &resolver, "--data-dir", &nowhere]);
    assert_eq!(code, Some(2), "no CA to trust: {stderr}");
    assert!(stderr.contains("--ca-file"), "the error says what to pass: {stderr}");
}
