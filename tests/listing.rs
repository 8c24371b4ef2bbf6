//! `ListBattles` over the real binaries (issue 20): battles of two tenants
//! in two forum references, open and closed, listed newest first, a page at
//! a time, filtered by forum reference and status; each tenant sees its own
//! battles only, a `service` token is refused, `max_list_page_size` holds
//! at its edge, and the listing survives a journal restart. Then the
//! journal's index on the JetStream backend: two journal processes over one
//! stream list each other's battles at once, and a restarted one lists the
//! same.

use battlelog_auth::Role;
use battlelog_proto::v1 as pb;
use battlelog_proto::v1::BattleStatus;
use battlelog_test_support::auth::{OTHER_TENANT, TEST_TENANT};
use battlelog_test_support::journal_client::{append, client, no_stream, opened};
use battlelog_test_support::stack;
use battlelog_test_support::stack::{Stack, resolver_as};
use battlelog_test_support::{NatsServer, ServiceProcess, StartOptions, TestAuth};
use serde_json::json;
use tonic::Code;

/// The resolver's `max_list_page_size` in the first test: small, so that
/// its edge is cheap to reach.
const MAX_PAGE: u32 = 3;

fn list(forum_ref: Option<&str>, status: BattleStatus, page_size: u32, page_token: &str) -> pb::ListBattlesRequest {
    pb::ListBattlesRequest {
        forum_ref: forum_ref.map(Into::into),
        status: status as i32,
        page_size,
        page_token: page_token.into(),
    }
}

/// Every page of a listing, following the tokens; the ids in order.
async fn all_pages(
    token: &str,
    resolver: &ServiceProcess,
    forum_ref: Option<&str>,
    status: BattleStatus,
) -> Vec<String> {
    let mut client = resolver_as(resolver, token).await;
    let mut ids = Vec::new();
    let mut page_token = String::new();
    for _ in 0..100 {
        let page = client
            .list_battles(list(forum_ref, status, 2, &page_token))
            .await
            .unwrap_or_else(|s| panic!("list {forum_ref:?} {status:?}: {s:?}"))
            .into_inner();
        assert!(page.battles.len() <= 2, "a page holds at most page_size");
        ids.extend(page.battles.into_iter().map(|b| b.battle_id));
        if page.next_page_token.is_empty() {
            return ids;
        }
        page_token = page.next_page_token;
    }
    panic!("a listing that never ends");
}

fn participants() -> serde_json::Value {
    json!([{"id": "pikachu"}, {"id": "meowth"}])
}

async fn open(token: &str, resolver: &ServiceProcess, battle_id: &str, forum_ref: &str) {
    let mut client = resolver_as(resolver, token).await;
    let request = pb::OpenBattleRequest {
        ruleset: "pokemon-d6@1".into(),
        title: format!("title of {battle_id}"),
        forum_ref: forum_ref.into(),
        participants: participants().as_array().unwrap().iter().cloned().map(stack::obj).collect(),
        client_seed: String::new(),
        request_id: format!("open-{battle_id}"),
        battle_id: battle_id.into(),
        ..Default::default()
    };
    client.open_battle(request).await.unwrap_or_else(|s| panic!("open {battle_id}: {s:?}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn battles_are_listed_newest_first_per_tenant_paged_and_filtered() {
    let options = StartOptions {
        envs: vec![("BATTLELOG_RESOLVER_MAX_LIST_PAGE_SIZE".to_owned(), MAX_PAGE.to_string())],
        ..StartOptions::default()
    };
    let mut stack = Stack::start_with("listing", false, &options).await;
    let auth = TestAuth::shared();
    let forum = auth.forum();
    let other_forum = auth.token(Role::Forum, OTHER_TENANT, "other-forum-platform");

    // In this order: the newest is the last opened. Two forum references in
    // each tenant; the other tenant uses the same references on purpose.
    let battles = [
        ("l-a1", TEST_TENANT, "thread/1"),
        ("l-b1", OTHER_TENANT, "thread/1"),
        ("l-a2", TEST_TENANT, "thread/2"),
        ("l-a3", TEST_TENANT, "thread/1"),
        ("l-b2", OTHER_TENANT, "thread/2"),
        ("l-a4", TEST_TENANT, "thread/2"),
        ("l-a5", TEST_TENANT, "thread/1"),
    ];
    for (id, tenant, forum_ref) in battles {
        let token = if tenant == TEST_TENANT { &forum } else { &other_forum };
        open(token, &stack.resolver, id, forum_ref).await;
    }
    let mut resolver = resolver_as(&stack.resolver, &forum).await;
    let closed_a1 = stack::close(&mut resolver, "l-a1").await;
    stack::close(&mut resolver, "l-a4").await;
    let mut other = resolver_as(&stack.resolver, &other_forum).await;
    stack::close(&mut other, "l-b1").await;

    // Newest first, page after page, each tenant its own only; a judge and a
    // reader of the tenant see what its forum sees.
    let mine = ["l-a5", "l-a4", "l-a3", "l-a2", "l-a1"];
    for token in [&forum, &auth.judge(), &auth.reader()] {
        assert_eq!(all_pages(token, &stack.resolver, None, BattleStatus::Any).await, mine);
    }
    assert_eq!(all_pages(&other_forum, &stack.resolver, None, BattleStatus::Any).await, ["l-b2", "l-b1"]);
    let stranger = auth.token(Role::Reader, "a-tenant-with-no-battles", "nobody");
    assert!(all_pages(&stranger, &stack.resolver, None, BattleStatus::Any).await.is_empty());

    // Filters, alone and together.
    let filtered = [
        (Some("thread/1"), BattleStatus::Any, vec!["l-a5", "l-a3", "l-a1"]),
        (Some("thread/2"), BattleStatus::Any, vec!["l-a4", "l-a2"]),
        (None, BattleStatus::Open, vec!["l-a5", "l-a3", "l-a2"]),
        (None, BattleStatus::Closed, vec!["l-a4", "l-a1"]),
        (Some("thread/1"), BattleStatus::Closed, vec!["l-a1"]),
        (Some("thread/2"), BattleStatus::Open, vec!["l-a2"]),
        (Some("thread/3"), BattleStatus::Any, vec![]),
        (Some(""), BattleStatus::Any, vec![]),
    ];
    for (forum_ref, status, expected) in filtered {
        assert_eq!(all_pages(&forum, &stack.resolver, forum_ref, status).await, expected, "{forum_ref:?} {status:?}");
    }

    // What an entry says: from the opening, the close and the journal.
    let page = resolver.list_battles(list(Some("thread/1"), BattleStatus::Closed, 0, "")).await.unwrap().into_inner();
    let a1 = &page.battles[0];
    assert_eq!(
        (a1.battle_id.as_str(), a1.ruleset.as_str(), a1.title.as_str(), a1.forum_ref.as_str()),
        ("l-a1", "pokemon-d6@1", "title of l-a1", "thread/1")
    );
    assert!(a1.closed);
    // The close writes BattleClosed, then the SeedRevealed that is the head.
    assert_eq!(a1.head_version, closed_a1.version + 1);
    let journaled = stack::journaled(&stack, "l-a1").await;
    assert_eq!(a1.opened_at_unix_micros, journaled[0].record.recorded_at_unix_micros);
    let closed_at = journaled[closed_a1.version as usize].record.recorded_at_unix_micros;
    assert_eq!(a1.closed_at_unix_micros, Some(closed_at));
    let open_page = resolver.list_battles(list(None, BattleStatus::Open, 1, "")).await.unwrap().into_inner();
    assert_eq!((open_page.battles[0].closed, open_page.battles[0].closed_at_unix_micros), (false, None));
    assert_eq!(open_page.battles[0].head_version, 0);
    assert!(!open_page.older_forgotten);

    // max_list_page_size at its edge; 0 is the default page (here capped
    // at the maximum).
    let at_max = resolver.list_battles(list(None, BattleStatus::Any, MAX_PAGE, "")).await.unwrap().into_inner();
    assert_eq!(at_max.battles.len(), MAX_PAGE as usize);
    let default = resolver.list_battles(list(None, BattleStatus::Any, 0, "")).await.unwrap().into_inner();
    assert_eq!(default.battles.len(), MAX_PAGE as usize);
    let over = resolver.list_battles(list(None, BattleStatus::Any, MAX_PAGE + 1, "")).await.unwrap_err();
    assert_eq!(over.code(), Code::InvalidArgument);
    assert!(over.message().starts_with("page_size:") && over.message().contains(&MAX_PAGE.to_string()), "{over:?}");

    // A page token belongs to its filters and its tenant.
    let first = resolver.list_battles(list(None, BattleStatus::Any, 2, "")).await.unwrap().into_inner();
    let elsewhere =
        resolver.list_battles(list(Some("thread/1"), BattleStatus::Any, 2, &first.next_page_token)).await.unwrap_err();
    assert_eq!(elsewhere.code(), Code::InvalidArgument);
    assert!(elsewhere.message().starts_with("page_token:"), "{elsewhere:?}");
    let stolen = other.list_battles(list(None, BattleStatus::Any, 2, &first.next_page_token)).await.unwrap_err();
    assert_eq!(stolen.code(), Code::InvalidArgument, "another tenant cannot continue this listing");
    let garbage = resolver.list_battles(list(None, BattleStatus::Any, 2, "not-a-token")).await.unwrap_err();
    assert_eq!(garbage.code(), Code::InvalidArgument);
    let bad_status = pb::ListBattlesRequest { status: 7, ..list(None, BattleStatus::Any, 2, "") };
    let bad_status = resolver.list_battles(bad_status).await.unwrap_err();
    assert!(bad_status.message().starts_with("status:"), "{bad_status:?}");

    // The services' own token is refused, as on every Resolver call.
    let mut service = resolver_as(&stack.resolver, &auth.service_token()).await;
    let refused = service.list_battles(list(None, BattleStatus::Any, 0, "")).await.unwrap_err();
    assert_eq!(refused.code(), Code::PermissionDenied, "{refused:?}");

    // The journal rebuilds its index from its log after a restart (kill -9).
    stack.restart_journal(&[]).await;
    assert_eq!(all_pages(&forum, &stack.resolver, None, BattleStatus::Any).await, mine);
    assert_eq!(all_pages(&forum, &stack.resolver, None, BattleStatus::Closed).await, ["l-a4", "l-a1"]);
}

/// A journal process with its log in the JetStream stream at `nats_url`.
async fn jetstream_journal(dir: &std::path::Path, name: &str, nats_url: &str) -> ServiceProcess {
    let options = StartOptions {
        envs: vec![("BATTLELOG_JOURNAL_BACKEND".to_owned(), "jetstream".to_owned())],
        ..StartOptions::default()
    };
    battlelog_test_support::journal_with(&dir.join(name), Some(nats_url), &options).await
}

/// The journal's index of `tenant`'s battles of any status, newest first,
/// `max_count` at a time (0: the journal's page size).
fn index_request(tenant: &str, max_count: u32) -> pb::BattleIndexRequest {
    pb::BattleIndexRequest {
        tenant: tenant.into(),
        forum_ref: None,
        status: BattleStatus::Any as i32,
        before_position: None,
        max_count,
    }
}

async fn index_ids(journal: &ServiceProcess, tenant: &str) -> Vec<String> {
    let request = index_request(tenant, 0);
    let page = client(journal).await.list_battle_index(request).await.expect("list").into_inner();
    page.battles.into_iter().filter_map(|b| b.summary).map(|s| s.battle_id).collect()
}

/// Two journals over one JetStream stream: a battle opened through one is
/// listed by the other as soon as its opening is acknowledged (the listing
/// catches its index up with the shared log first), and a journal started
/// afresh lists the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jetstream_journals_list_each_others_battles_and_after_a_restart() {
    let nats_dir = tempfile::tempdir().expect("temp dir");
    let config = nats_dir.path().join("nats.conf");
    std::fs::write(&config, "max_payload: 8MB\n").expect("write the NATS config");
    let nats = NatsServer::start_with_config(&config, &[]);
    let dir = tempfile::tempdir().expect("temp dir");
    let a = jetstream_journal(dir.path(), "a", &nats.url()).await;
    let b = jetstream_journal(dir.path(), "b", &nats.url()).await;

    let mut through_a = client(&a).await;
    let mut through_b = client(&b).await;
    for (i, battle) in ["j1", "j2", "j3", "j4"].into_iter().enumerate() {
        let (writer, tenant) = if i % 2 == 0 { (&mut through_a, "forum-a") } else { (&mut through_b, "forum-b") };
        append(writer, battle, no_stream(), vec![opened(tenant, &format!("{battle}-open"))]).await.expect("open");
        // Right after the acknowledgement, through the other journal too.
        let listed = index_ids(if i % 2 == 0 { &b } else { &a }, tenant).await;
        assert_eq!(listed.first().map(String::as_str), Some(battle), "{battle} through the other journal");
    }
    assert_eq!(index_ids(&a, "forum-a").await, ["j3", "j1"]);
    assert_eq!(index_ids(&b, "forum-b").await, ["j4", "j2"]);

    b.kill_9();
    let c = jetstream_journal(dir.path(), "c", &nats.url()).await;
    assert_eq!(index_ids(&c, "forum-a").await, ["j3", "j1"]);
    assert_eq!(index_ids(&c, "forum-b").await, ["j4", "j2"]);
    // The journal's RPC is the services': a forum token is refused there.
    let forum = TestAuth::shared().forum();
    let mut as_forum = battlelog_proto::v1::journal_client::JournalClient::new(c.authed(&forum).await);
    let refused = as_forum
        .list_battle_index(pb::BattleIndexRequest { tenant: "forum-a".into(), ..Default::default() })
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::PermissionDenied);
}

/// Issue 35, finding 6: a page token shows nothing of the global log — not
/// the position its page stopped at, in any form — and a token altered in
/// any character, or in the old clear form (the position and the filters'
/// fingerprint in hex), is refused `INVALID_ARGUMENT` naming `page_token`;
/// the token as given still continues the listing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_token_is_opaque_and_a_tampered_one_is_refused() {
    use base64::Engine as _;
    let stack = Stack::start("listing-tokens", false).await;
    let forum = TestAuth::shared().forum();
    for id in ["t-1", "t-2", "t-3"] {
        open(&forum, &stack.resolver, id, "thread/t").await;
    }
    let mut resolver = resolver_as(&stack.resolver, &forum).await;
    let first = resolver.list_battles(list(None, BattleStatus::Any, 1, "")).await.unwrap().into_inner();
    assert_eq!(first.battles[0].battle_id, "t-3");
    let token = first.next_page_token.clone();
    // Where that page stopped, as the journal's index says.
    let mut journal = stack.journal_client().await;
    let index = index_request(TEST_TENANT, 1);
    let position = journal.list_battle_index(index).await.unwrap().into_inner().next_before_position.expect("more");
    // A small number's digits may turn up in any random text by chance; its
    // fixed-width hex (the old token's form) and its bytes may not.
    assert!(!token.contains(&format!("{position:016x}")), "{token} shows {position}");
    for decoded in [
        base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(&token).ok(),
        base64::engine::general_purpose::STANDARD.decode(&token).ok(),
        hex::decode(&token).ok(),
    ]
    .into_iter()
    .flatten()
    {
        let clear = position.to_be_bytes();
        assert!(!decoded.windows(8).any(|w| w == clear || w == position.to_le_bytes()), "{token} holds {position}");
    }

    let refused = |status: tonic::Status| {
        assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
        assert!(status.message().starts_with("page_token:"), "{status:?}");
        let details = tonic_types::StatusExt::get_error_details(&status);
        assert_eq!(details.bad_request().expect("a BadRequest").field_violations[0].field, "page_token");
    };
    for i in 0..token.len() {
        let mut tampered = token.clone().into_bytes();
        tampered[i] = if tampered[i] == b'A' { b'B' } else { b'A' };
        let tampered = String::from_utf8(tampered).unwrap();
        refused(resolver.list_battles(list(None, BattleStatus::Any, 1, &tampered)).await.unwrap_err());
    }
    let clear_form = format!("{position:016x}{}", "00".repeat(8));
    refused(resolver.list_battles(list(None, BattleStatus::Any, 1, &clear_form)).await.unwrap_err());
    let next = resolver.list_battles(list(None, BattleStatus::Any, 1, &token)).await.unwrap().into_inner();
    assert_eq!(next.battles[0].battle_id, "t-2", "the token as given continues the listing");
}
