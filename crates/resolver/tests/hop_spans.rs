//! The spans the `Act` benchmark's breakdown reads (BENCHMARKS.md, issue
//! 24): one clean `Act` opens each hop's span the expected number of times,
//! each inside the hop that called it. A renamed or moved span would leave
//! the benchmark's table without its rows; this fails first.
//!
//! Its own test binary: the span clock is the process's global subscriber.

mod common;

use std::time::Instant;

use battlelog_auth::AuthChannel;
use battlelog_proto::battle::json_to_struct;
use battlelog_proto::v1::resolver_client::ResolverClient;
use battlelog_proto::v1::{ActRequest, OpenBattleRequest};
use battlelog_test_support::bench::span_clock::{self, SpanClock, Timed};
use battlelog_test_support::{TestAuth, authed_channel};
use serde_json::{Value, json};

/// Each hop and how often one `Act` opens it: the roll's append and the
/// resolution's each pass the journal's.
const HOPS: [(&str, usize); 10] = [
    ("resolver.act", 1),
    ("resolver.roll", 1),
    ("roller.roll", 1),
    ("roller.append", 1),
    ("journal.append", 2),
    ("journal.plan", 2),
    ("journal.commit", 2),
    ("journal.write", 2),
    ("journal.flush", 2),
    ("resolver.append", 1),
];

/// The names alone, for the span clock (a `const` so that it is `'static`).
const NAMES: [&str; 10] = {
    let mut names = [""; 10];
    let mut i = 0;
    while i < HOPS.len() {
        names[i] = HOPS[i].0;
        i += 1;
    }
    names
};

fn object(value: Value) -> prost_types::Struct {
    json_to_struct(value.as_object().expect("an object"))
}

/// The chain on loopback: journal, roller and resolver, each its own server.
async fn resolver(dir: &std::path::Path) -> ResolverClient<AuthChannel> {
    let journal =
        battlelog_journal::Journal::open(battlelog_journal::JournalOptions::new(dir)).await.expect("journal opens");
    let journal_url = common::serve_journal(journal).await;
    let chain = common::serve_chain(&journal_url, &"11".repeat(32), |service| service).await;
    ResolverClient::new(authed_channel(&chain.resolver_url, &TestAuth::shared().forum()))
}

async fn act(resolver: &mut ResolverClient<AuthChannel>, request_id: &str) {
    let action = json!({"type": "move", "actor": "ash", "trait": "cool", "stakes": "x"});
    let request = ActRequest {
        battle_id: "spans".into(),
        action: Some(object(action)),
        request_id: request_id.into(),
        ..Default::default()
    };
    resolver.act(request).await.expect("act");
}

fn within(inner: &Timed, outer: &Timed) -> bool {
    outer.start <= inner.start && inner.end <= outer.end
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_act_opens_each_hop_span_inside_its_caller() {
    SpanClock { prefixes: &NAMES }.install();
    let dir = tempfile::tempdir().expect("temp dir");
    let mut resolver = resolver(dir.path()).await;
    resolver
        .open_battle(OpenBattleRequest {
            battle_id: "spans".into(),
            ruleset: "pbta-2d6@1".into(),
            participants: vec![object(json!({"id": "ash", "traits": {"cool": 1}}))],
            client_seed: "spans".into(),
            request_id: "open-spans".into(),
            ..Default::default()
        })
        .await
        .expect("open");
    // The first Act reads the battle into the resolver's cache; the one
    // measured is warm, as in the benchmark.
    act(&mut resolver, "cold").await;

    span_clock::start();
    let began = Instant::now();
    act(&mut resolver, "warm").await;
    let ended = Instant::now();
    let timed = span_clock::stop();

    let named = |name: &str| -> Vec<Timed> {
        let mut spans: Vec<Timed> = timed.iter().filter(|t| t.name == name).copied().collect();
        spans.sort_by_key(|t| t.start);
        spans
    };
    for (name, count) in HOPS {
        let spans = named(name);
        assert_eq!(spans.len(), count, "{name}: {spans:?}");
        assert!(spans.iter().all(|s| began <= s.start && s.end <= ended), "{name} falls inside the Act");
    }
    let one = |name: &str| named(name)[0];
    let act = one("resolver.act");
    let (roll, resolution) = (one("resolver.roll"), one("resolver.append"));
    assert!(within(&roll, &act) && within(&resolution, &act), "the resolver's calls inside its handler");
    assert!(roll.end <= resolution.start, "the resolution is appended after the roll came back");
    assert!(within(&one("roller.roll"), &roll), "the roller's handler inside the resolver's call");
    assert!(within(&one("roller.append"), &one("roller.roll")), "the roller's append inside its handler");
    let appends = named("journal.append");
    assert!(within(&appends[0], &one("roller.append")), "the roll's append is the roller's");
    assert!(within(&appends[1], &resolution), "the resolution's append is the resolver's");
    for (i, append) in appends.iter().enumerate() {
        let [plan, commit, write, flush] =
            ["journal.plan", "journal.commit", "journal.write", "journal.flush"].map(|name| named(name)[i]);
        assert!(within(&plan, append) && within(&commit, append), "append {i}: plan and commit inside it");
        assert!(plan.end <= commit.start, "append {i}: planned before committed");
        assert!(within(&write, &commit) && within(&flush, &commit), "append {i}: write and flush inside the commit");
        assert!(write.end <= flush.start, "append {i}: written before flushed");
    }
}
