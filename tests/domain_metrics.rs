//! Each service's own work counted where it happens and shown on its
//! `/metrics` port: the real journal, roller and resolver binaries, each
//! with `metrics_listen` on a free loopback port; a battle opened and one
//! action played through the resolver; then each service's scrape holds the
//! counts of exactly that.

use battlelog_proto::battle::json_to_struct;
use battlelog_proto::v1::resolver_client::ResolverClient;
use battlelog_proto::v1::{ActRequest, OpenBattleRequest};
use battlelog_test_support::metrics;
use battlelog_test_support::{
    ServiceProcess, StartOptions, TestAuth, http_get, journal_with, resolver_with, roller_with, temp_dir,
};
use serde_json::{Value, json};

fn with_metrics(prefix: &str) -> StartOptions {
    StartOptions {
        envs: vec![(format!("BATTLELOG_{prefix}_METRICS_LISTEN"), "127.0.0.1:0".to_owned())],
        ..StartOptions::default()
    }
}

fn object(value: Value) -> prost_types::Struct {
    match value {
        Value::Object(fields) => json_to_struct(&fields),
        other => panic!("not an object: {other}"),
    }
}

/// `process`'s scrape, after checking that no family name is declared
/// twice (OpenMetrics parsers refuse that).
async fn scrape(process: &ServiceProcess) -> String {
    let url = process.metrics_url().expect("a metrics port announced");
    let (status, text) = http_get(&url, &[]).await;
    assert_eq!(status, 200, "{text}");
    let mut families: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("# TYPE ")?.split(' ').next()).collect();
    let count = families.len();
    families.sort_unstable();
    families.dedup();
    assert_eq!(families.len(), count, "a family declared twice in\n{text}");
    text
}

/// The value of the sample `name_and_labels` in a scrape.
fn sample(text: &str, name_and_labels: &str) -> f64 {
    metrics::sample(text, name_and_labels).unwrap_or_else(|| panic!("no {name_and_labels} in\n{text}"))
}

#[tokio::test]
async fn a_battle_and_an_action_show_in_each_services_domain_metrics() {
    let dir = temp_dir("domain-metrics");
    let journal = journal_with(&dir.path().join("journal"), None, &with_metrics("JOURNAL")).await;
    let roller = roller_with(&dir.path().join("roller"), &journal.url(), None, &with_metrics("ROLLER")).await;
    let resolver =
        resolver_with(&dir.path().join("resolver.log"), &journal.url(), &roller.url(), None, &with_metrics("RESOLVER"))
            .await;
    let mut client = ResolverClient::new(resolver.authed(&TestAuth::shared().forum()).await);

    client
        .open_battle(OpenBattleRequest {
            ruleset: "pokemon-d6@1".into(),
            title: "metrics".into(),
            forum_ref: "forum:test/1".into(),
            participants: vec![object(json!({"id": "pikachu"})), object(json!({"id": "meowth"}))],
            client_seed: "forum:test/1".into(),
            request_id: "open-m".into(),
            battle_id: "m1".into(),
            ..Default::default()
        })
        .await
        .expect("opens");
    let attack = json!({"type": "attack", "actor": "pikachu", "target": "meowth", "move": "Thunderbolt", "power": 90});
    let act = ActRequest {
        battle_id: "m1".into(),
        action: Some(object(attack)),
        request_id: "a1".into(),
        ..Default::default()
    };
    let acted = client.act(act.clone()).await.expect("acts").into_inner();
    let dice: usize = acted.rolls.iter().map(|r| r.roll.as_ref().expect("a roll").dice.len()).sum();
    // A retry is answered from the journal: nothing more is rolled, resolved or appended.
    client.act(act).await.expect("a retry");

    // The journal took three appends of one event each: the battle's
    // opening (the resolver's), the roll (the roller's), the resolution.
    let text = scrape(&journal).await;
    assert_eq!(sample(&text, "battlelog_journal_appends_total{result=\"committed\"}"), 3.0, "{text}");
    assert_eq!(sample(&text, "battlelog_journal_events_appended_total"), 3.0);
    assert_eq!(sample(&text, "battlelog_journal_append_group_size_sum"), 3.0, "every event in one flushed group");
    let groups = sample(&text, "battlelog_journal_append_group_size_count");
    assert_eq!(sample(&text, "battlelog_journal_flush_duration_seconds_count"), groups);
    assert_eq!(sample(&text, "battlelog_journal_outbox_lag_events"), 0.0, "no NATS: nothing is published or lagging");
    assert_eq!(sample(&text, "battlelog_journal_nats_published_total"), 0.0);

    let text = scrape(&roller).await;
    assert_eq!(sample(&text, "battlelog_roller_rolls_total"), 1.0, "{text}");
    assert_eq!(sample(&text, "battlelog_roller_dice_total"), dice as f64);
    assert_eq!(sample(&text, "battlelog_roller_commitments_total"), 1.0, "the opening's");
    assert_eq!(sample(&text, "battlelog_roller_reveals_total"), 0.0);

    let text = scrape(&resolver).await;
    assert_eq!(sample(&text, "battlelog_resolver_actions_total{ruleset=\"pokemon-d6@1\"}"), 1.0, "{text}");
    assert_eq!(sample(&text, "battlelog_resolver_cache_battles"), 1.0);
    assert!(sample(&text, "battlelog_resolver_cache_bytes") > 0.0);
    // The opening found no battle cached; the action and its retry did.
    assert_eq!(sample(&text, "battlelog_resolver_cache_misses_total"), 1.0);
    assert_eq!(sample(&text, "battlelog_resolver_cache_hits_total"), 2.0);
    assert!(sample(&text, "battlelog_resolver_catch_up_reads_total") >= 1.0);
}
