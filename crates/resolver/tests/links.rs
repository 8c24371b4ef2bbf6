//! What a forum posts with each result (issue 12): the link to the event on
//! the battle's web page, with the battle's share key, and the stream's head
//! hash. Every reply is checked against what the Export RPC returns right
//! after the call, and every key against `ShareSecret::admits` — never
//! against the resolver's own computation. The real journal (sled in a temp
//! dir), roller and resolver, each over gRPC on 127.0.0.1:0.

mod common;

use battlelog_auth::share::SHARE_KEY_METADATA;
use battlelog_auth::{AuthChannel, Role, ShareSecret};
use battlelog_proto::battle::json_to_struct;
use battlelog_proto::v1::resolver_client::ResolverClient;
use battlelog_proto::v1::{
    ActRequest, AuditRequest, BattleEvent, CloseRequest, DisputeRequest, ExportRequest, GetBattleRequest,
    OpenBattleRequest, RecordedEvent, RuleRequest, battle_event::Event,
};
use battlelog_test_support::{TestAuth, authed_channel};
use prost::Message;
use serde_json::{Value, json};

/// The web service's public URL as an operator might write it, with a
/// trailing slash that must not double in the links.
const WEB_URL: &str = "https://battles.example.org/";

struct Stack {
    /// As a forum of the test tenant.
    forum: ResolverClient<AuthChannel>,
    /// As a judge of the test tenant.
    judge: ResolverClient<AuthChannel>,
    resolver_url: String,
    _dir: tempfile::TempDir,
}

/// The services, the resolver linking to [`WEB_URL`] under `share` when given.
async fn stack(share: Option<ShareSecret>) -> Stack {
    let dir = tempfile::tempdir().expect("temp dir");
    let journal = battlelog_journal::Journal::open(battlelog_journal::JournalOptions::new(dir.path()))
        .await
        .expect("journal opens");
    let auth = TestAuth::shared();
    let journal_url = common::serve_journal(journal).await;
    let chain = common::serve_chain(&journal_url, &"22".repeat(32), |service| match share {
        Some(share) => service.with_links(WEB_URL.to_owned(), share),
        None => service,
    })
    .await;
    let resolver_url = chain.resolver_url;
    Stack {
        forum: ResolverClient::new(authed_channel(&resolver_url, &auth.forum())),
        judge: ResolverClient::new(authed_channel(&resolver_url, &auth.judge())),
        resolver_url,
        _dir: dir,
    }
}

fn object(value: Value) -> prost_types::Struct {
    json_to_struct(value.as_object().expect("an object"))
}

/// Every record the Export RPC returns, page by page.
async fn export(stack: &mut Stack, battle_id: &str) -> Vec<RecordedEvent> {
    let mut events: Vec<RecordedEvent> = Vec::new();
    loop {
        let request = ExportRequest { battle_id: battle_id.into(), from_version: events.len() as u64 };
        let page = stack.forum.export(request).await.expect("export").into_inner().events;
        if page.is_empty() {
            return events;
        }
        events.extend(page);
    }
}

/// The `hash` of the export's last line, as `battlelog export` writes it.
async fn exported_head(stack: &mut Stack, battle_id: &str) -> String {
    hex::encode(&export(stack, battle_id).await.last().expect("an exported record").hash)
}

/// The event of an exported record.
fn event_of(recorded: &RecordedEvent) -> Event {
    let record = recorded.event.as_ref().expect("record");
    BattleEvent::decode(record.payload.as_slice()).expect("payload").event.expect("event")
}

/// `permalink` is `{WEB_URL}battles/{battle_id}?k={key}#v{version}` with a
/// key that opens `battle_id`'s page and no other's.
fn assert_links(permalink: &str, share: &ShareSecret, battle_id: &str, version: u64) {
    let url = url::Url::parse(permalink).unwrap_or_else(|e| panic!("{permalink:?} is not a URL: {e}"));
    assert_eq!((url.scheme(), url.host_str()), ("https", Some("battles.example.org")), "{permalink}");
    assert_eq!(url.path(), format!("/battles/{battle_id}"), "one slash between the base and the path: {permalink}");
    let pairs: Vec<(String, String)> = url.query_pairs().into_owned().collect();
    let [(name, key)] = pairs.as_slice() else { panic!("one query parameter, k: {permalink}") };
    assert_eq!(name, "k", "{permalink}");
    assert!(share.admits(battle_id, key), "the key opens {battle_id}: {permalink}");
    assert!(!share.admits(&format!("{battle_id}-other"), key), "and no other battle: {permalink}");
    assert_eq!(url.fragment(), Some(format!("v{version}").as_str()), "{permalink}");
}

fn share() -> ShareSecret {
    ShareSecret::from_bytes([0x5a; battlelog_auth::share::SECRET_BYTES])
}

#[tokio::test]
async fn every_reply_links_to_its_event_and_gives_the_head_the_export_ends_at() {
    let share = share();
    let mut stack = stack(Some(share.clone())).await;
    let battle = "linked";

    let opened = stack
        .forum
        .open_battle(OpenBattleRequest {
            battle_id: battle.into(),
            ruleset: "pokemon-d6@2".into(),
            participants: vec![object(json!({"id": "pikachu"})), object(json!({"id": "meowth"}))],
            client_seed: "forum:links/1".into(),
            request_id: "open".into(),
            ..Default::default()
        })
        .await
        .expect("open")
        .into_inner();
    assert_links(&opened.permalink, &share, battle, 0);
    assert_eq!(opened.head_hash, exported_head(&mut stack, battle).await, "OpenBattle's head");

    // An attack (its dice, then its resolution), a dodge that answers it on
    // the now warm battle, and a free roll.
    let mut first: Option<battlelog_proto::v1::ActResponse> = None;
    for i in 0..3 {
        let action = match (i, &first) {
            (0, _) => {
                json!({"type": "attack", "actor": "pikachu", "target": "meowth", "move": "Thunderbolt", "power": 90})
            }
            (1, Some(attack)) => json!({"type": "dodge", "actor": "meowth", "against": attack.version}),
            _ => json!({"type": "roll", "actor": "ash", "expression": "1d20+2", "purpose": "check"}),
        };
        let request = ActRequest {
            battle_id: battle.into(),
            action: Some(object(action)),
            request_id: format!("a{i}"),
            ..Default::default()
        };
        let acted = stack.forum.act(request).await.expect("act").into_inner();
        assert_links(&acted.permalink, &share, battle, acted.version);
        let exported = export(&mut stack, battle).await;
        let last = exported.last().expect("records");
        assert_eq!(acted.head_hash, hex::encode(&last.hash), "Act {i}'s head is the export's last hash");
        assert_eq!(last.event.as_ref().expect("record").version, acted.version, "and the resolution is the head");
        first.get_or_insert(acted);
    }

    // A retry answers as the first attempt did: its own event and hash,
    // although the battle has moved on since.
    let attack = first.expect("the attack");
    let retry = ActRequest {
        battle_id: battle.into(),
        action: Some(object(
            json!({"type": "attack", "actor": "pikachu", "target": "meowth", "move": "Thunderbolt", "power": 90}),
        )),
        request_id: "a0".into(),
        ..Default::default()
    };
    let retried = stack.forum.act(retry).await.expect("retry").into_inner();
    assert_eq!((&retried.permalink, &retried.head_hash), (&attack.permalink, &attack.head_hash));
    let exported = export(&mut stack, battle).await;
    let at_attack = usize::try_from(attack.version).expect("version");
    assert_eq!(attack.head_hash, hex::encode(&exported[at_attack].hash), "the hash of the attack's own line");

    let disputed = stack
        .forum
        .dispute(DisputeRequest {
            battle_id: battle.into(),
            by: "meowth".into(),
            refers_to: attack.version,
            reason: "lag".into(),
            request_id: "d1".into(),
            ..Default::default()
        })
        .await
        .expect("dispute")
        .into_inner();
    assert_links(&disputed.permalink, &share, battle, disputed.version);
    assert_eq!(disputed.head_hash, exported_head(&mut stack, battle).await, "Dispute's head");

    let ruled = stack
        .judge
        .rule(RuleRequest {
            battle_id: battle.into(),
            refers_to: disputed.version,
            text: "the attack stands".into(),
            request_id: "r1".into(),
            ..Default::default()
        })
        .await
        .expect("rule")
        .into_inner();
    assert_links(&ruled.permalink, &share, battle, ruled.version);
    assert_eq!(ruled.head_hash, exported_head(&mut stack, battle).await, "Rule's head");

    let close = |request_id: &str| CloseRequest {
        battle_id: battle.into(),
        by: "judge".into(),
        reason: "over".into(),
        request_id: request_id.into(),
        ..Default::default()
    };
    let closed = stack.forum.close(close("c1")).await.expect("close").into_inner();
    let exported = export(&mut stack, battle).await;
    let last = exported.last().expect("records");
    let at_close = usize::try_from(closed.version).expect("version");
    assert!(matches!(event_of(&exported[at_close]), Event::BattleClosed(_)), "the reply's version is the close");
    assert!(matches!(event_of(last), Event::SeedRevealed(_)), "the close's reveal is the export's last line");
    // The link points at the BattleClosed; the head is the reveal after it.
    assert_links(&closed.permalink, &share, battle, closed.version);
    assert_eq!(closed.head_hash, hex::encode(&last.hash), "Close's head is the SeedRevealed's hash");
    // A retry of the close, and a close under another request id (the
    // battle is closed already: it answers with the first close), give the
    // same link and head.
    for request_id in ["c1", "c2"] {
        let again = stack.forum.close(close(request_id)).await.expect("close again").into_inner();
        assert_eq!(
            (again.version, &again.permalink, &again.head_hash),
            (closed.version, &closed.permalink, &closed.head_hash)
        );
    }

    let audited = stack.forum.audit(AuditRequest { battle_id: battle.into() }).await.expect("audit").into_inner();
    assert!(audited.ok, "{:?}", audited.findings);
    assert_eq!(audited.head_hash, exported_head(&mut stack, battle).await, "the audit names the head it checked");
}

#[tokio::test]
async fn without_a_web_url_replies_carry_no_link_but_still_the_head() {
    let mut stack = stack(None).await;
    let battle = "unlinked";
    let opened = stack
        .forum
        .open_battle(OpenBattleRequest {
            battle_id: battle.into(),
            ruleset: "pbta-2d6@1".into(),
            participants: vec![object(json!({"id": "ash", "traits": {"cool": 1}}))],
            request_id: "open".into(),
            ..Default::default()
        })
        .await
        .expect("open")
        .into_inner();
    assert_eq!(opened.permalink, "");
    assert_eq!(opened.head_hash, exported_head(&mut stack, battle).await);

    let action = json!({"type": "move", "actor": "ash", "trait": "cool", "stakes": "the bridge"});
    let request = ActRequest {
        battle_id: battle.into(),
        action: Some(object(action)),
        request_id: "m1".into(),
        ..Default::default()
    };
    let acted = stack.forum.act(request).await.expect("act").into_inner();
    assert_eq!(acted.permalink, "");
    assert_eq!(acted.head_hash, exported_head(&mut stack, battle).await);

    let disputed = stack
        .forum
        .dispute(DisputeRequest {
            battle_id: battle.into(),
            by: "ash".into(),
            refers_to: acted.version,
            reason: "?".into(),
            request_id: "d1".into(),
            ..Default::default()
        })
        .await
        .expect("dispute")
        .into_inner();
    assert_eq!(disputed.permalink, "");
    assert_eq!(disputed.head_hash, exported_head(&mut stack, battle).await);

    let ruled = stack
        .judge
        .rule(RuleRequest {
            battle_id: battle.into(),
            refers_to: disputed.version,
            text: "stands".into(),
            request_id: "r1".into(),
            ..Default::default()
        })
        .await
        .expect("rule")
        .into_inner();
    assert_eq!(ruled.permalink, "");
    assert_eq!(ruled.head_hash, exported_head(&mut stack, battle).await);

    let request = CloseRequest {
        battle_id: battle.into(),
        by: "gm".into(),
        reason: "end".into(),
        request_id: "c1".into(),
        ..Default::default()
    };
    let closed = stack.forum.close(request).await.expect("close").into_inner();
    assert_eq!(closed.permalink, "");
    assert_eq!(closed.head_hash, exported_head(&mut stack, battle).await);

    let audited = stack.forum.audit(AuditRequest { battle_id: battle.into() }).await.expect("audit").into_inner();
    assert_eq!(audited.head_hash, exported_head(&mut stack, battle).await);
}

/// `request` carrying `key` where the web pages put a share link's key.
fn with_share_key<T>(request: T, key: &str) -> tonic::Request<T> {
    let mut request = tonic::Request::new(request);
    request.metadata_mut().insert(SHARE_KEY_METADATA, key.parse().expect("an ASCII key"));
    request
}

/// A share link's key is a read capability for its one battle: a reader of
/// another tenant carrying it reads that battle (GetBattle, Audit, Export);
/// without it, with another battle's key, or at a resolver that has no share
/// secret, the battle is NOT_FOUND as before; and no write takes it.
#[tokio::test]
async fn a_share_key_lets_a_reader_of_any_tenant_read_that_battle_and_nothing_else() {
    for with_secret in [true, false] {
        let share = share();
        let mut stack = stack(with_secret.then(|| share.clone())).await;
        let battle = "shared";
        stack
            .forum
            .open_battle(OpenBattleRequest {
                battle_id: battle.into(),
                ruleset: "pokemon-d6@2".into(),
                participants: vec![object(json!({"id": "pikachu"})), object(json!({"id": "meowth"}))],
                request_id: "open".into(),
                ..Default::default()
            })
            .await
            .expect("open");
        let head = exported_head(&mut stack, battle).await;
        let auth = TestAuth::shared();
        let outsider = auth.token(Role::Reader, "another-tenant", "outsider");
        let mut outsider = ResolverClient::new(authed_channel(&stack.resolver_url, &outsider));
        let key = share.key_for(battle);

        let export =
            outsider.export(with_share_key(ExportRequest { battle_id: battle.into(), from_version: 0 }, &key)).await;
        let audit = outsider.audit(with_share_key(AuditRequest { battle_id: battle.into() }, &key)).await;
        let state = outsider
            .get_battle(with_share_key(GetBattleRequest { battle_id: battle.into(), at_version: None }, &key))
            .await;
        match (with_secret, export) {
            (true, Ok(page)) => {
                let page = page.into_inner().events;
                assert_eq!(hex::encode(&page.last().expect("records").hash), head, "the battle as it is");
                assert_eq!(audit.expect("Audit with the key").into_inner().head_hash, head);
                assert_eq!(state.expect("GetBattle with the key").into_inner().version, 0);
            }
            (false, Err(status)) => {
                assert_eq!(status.code(), tonic::Code::NotFound, "no secret, no capability: {status:?}");
                assert_eq!(audit.expect_err("Audit").code(), tonic::Code::NotFound);
                assert_eq!(state.expect_err("GetBattle").code(), tonic::Code::NotFound);
            }
            (with_secret, other) => panic!("with the secret: {with_secret}; export answered {other:?}"),
        }

        // Without the key, or with another battle's, the outsider's tenant rules.
        let refusals = [
            outsider.export(ExportRequest { battle_id: battle.into(), from_version: 0 }).await,
            outsider
                .export(with_share_key(
                    ExportRequest { battle_id: battle.into(), from_version: 0 },
                    &share.key_for("another-battle"),
                ))
                .await,
        ];
        for refused in refusals {
            assert_eq!(refused.expect_err("refused").code(), tonic::Code::NotFound);
        }
        // A write never takes a share key: a forum of another tenant that
        // carries it still cannot act on the battle, and nothing is written.
        let stranger = auth.token(Role::Forum, "another-tenant", "stranger");
        let mut stranger = ResolverClient::new(authed_channel(&stack.resolver_url, &stranger));
        let act = ActRequest {
            battle_id: battle.into(),
            action: Some(object(json!({"type": "roll", "actor": "x", "expression": "1d6", "purpose": "p"}))),
            request_id: "stranger-roll".into(),
            ..Default::default()
        };
        let refused = stranger.act(with_share_key(act, &key)).await.expect_err("a write with a share key");
        assert_eq!(refused.code(), tonic::Code::NotFound, "{refused:?}");
        assert_eq!(exported_head(&mut stack, battle).await, head, "nothing was appended");
    }
}
