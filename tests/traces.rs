//! Traces (issue 22): one `Act` is one trace across resolver → roller →
//! journal, exported over OTLP to a collector (here a stand-in receiver,
//! battlelog_test_support::otlp) by each of the three real binaries; the
//! log lines written while serving it carry its trace id; and without an
//! endpoint nothing is exported and everything still works.

use battlelog_test_support::otlp::{CollectedSpan, Collector, descends_from};
use battlelog_test_support::stack::*;
use battlelog_test_support::{StartOptions, poll_until};
use serde_json::json;

const SERVICES: [&str; 3] = ["battlelog-resolver", "battlelog-roller", "battlelog-journal"];

/// Every service exporting to `collector`, in batches sent every 100 ms
/// (the OpenTelemetry SDK's standard variable; its default is 5 s).
fn exporting_to(collector: &Collector) -> StartOptions {
    let mut envs: Vec<(String, String)> = ["JOURNAL", "ROLLER", "RESOLVER"]
        .iter()
        .map(|service| (format!("BATTLELOG_{service}_OTLP_ENDPOINT"), collector.endpoint()))
        .collect();
    envs.push(("OTEL_BSP_SCHEDULE_DELAY".into(), "100".into()));
    StartOptions { envs, ..StartOptions::default() }
}

/// The resolver's span of its `Act` in `spans`, if it has arrived.
fn act_span(spans: &[CollectedSpan]) -> Option<CollectedSpan> {
    spans.iter().find(|s| s.service == "battlelog-resolver" && s.attribute("rpc.method") == Some("Act")).cloned()
}

/// Waits until trace `trace_id` holds spans of all three services, and
/// returns it.
async fn whole_trace(collector: &Collector, trace_id: &str) -> Vec<CollectedSpan> {
    poll_until(&format!("spans of {SERVICES:?} under trace {trace_id}"), WAIT, || {
        let spans = collector.trace(trace_id);
        let complete =
            SERVICES.iter().all(|service| spans.iter().any(|s| s.service == *service)) && act_span(&spans).is_some();
        async move { complete.then_some(spans) }
    })
    .await
}

/// The roller's and the journal's spans all hang under the resolver's
/// `Act` span, and the journal was reached through the roller too (the
/// roller journals the rolls): one tree, not three traces that share an id.
fn assert_one_tree(spans: &[CollectedSpan]) {
    let act = act_span(spans).expect("the resolver's Act span");
    let shown = || format!("{spans:#?}");
    for span in spans.iter().filter(|s| s.service != "battlelog-resolver") {
        assert!(
            descends_from(spans, span, &act),
            "{} span {:?} is not under the Act:\n{}",
            span.service,
            span.name,
            shown()
        );
    }
    let via_roller = spans.iter().filter(|s| s.service == "battlelog-journal").any(|journal| {
        spans.iter().filter(|s| s.service == "battlelog-roller").any(|roller| descends_from(spans, journal, roller))
    });
    assert!(via_roller, "no journal span under a roller span:\n{}", shown());
}

#[tokio::test(flavor = "multi_thread")]
async fn one_act_is_one_trace_across_resolver_roller_and_journal() {
    let collector = Collector::start().await;
    let stack = Stack::start_with("traces", false, &exporting_to(&collector)).await;
    let mut forum = resolver_client(&stack.resolver).await;
    let battle = "traced";
    open(&mut forum, battle, "pokemon-d6@1", json!([{"id": "pikachu"}, {"id": "meowth"}]), "seed").await;
    let attack = json!({"type": "attack", "actor": "pikachu", "target": "meowth", "move": "Tackle", "power": 40});

    // A caller that traces (a forum's own span) sends its context, W3C: the
    // resolver continues that trace, under the caller's span.
    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let caller_span = "00f067aa0ba902b7";
    let mut request = tonic::Request::new(battlelog_proto::v1::ActRequest {
        battle_id: battle.into(),
        action: Some(obj(attack.clone())),
        request_id: "traced-1".into(),
        ..Default::default()
    });
    let traceparent = format!("00-{trace_id}-{caller_span}-01");
    request.metadata_mut().insert("traceparent", traceparent.parse().expect("ASCII"));
    forum.act(request).await.expect("the traced act");

    let spans = whole_trace(&collector, trace_id).await;
    let act_of_caller = act_span(&spans).expect("the Act span");
    assert_eq!(act_of_caller.parent_span_id, caller_span, "the resolver's span is the caller's child:\n{spans:#?}");
    assert_one_tree(&spans);
    // Each service's request spans name it (`battlelog.service`), as its
    // resource does: where one process runs them all (`battlelog up`),
    // that attribute is what tells them apart.
    for span in spans.iter().filter(|s| s.name == "grpc.request") {
        let service = span.service.strip_prefix("battlelog-").expect("a battlelog service");
        assert_eq!(span.attribute("battlelog.service"), Some(service), "{span:#?}");
    }
    assert!(spans.iter().filter(|s| s.name == "grpc.request").count() >= 3, "request spans of the three services");

    // The resolver's log lines about this Act carry its trace id (its
    // request span's `trace_id` field).
    let log = std::fs::read_to_string(stack.dir.path().join("resolver.log")).expect("the resolver's log");
    assert!(
        log.lines().any(|line| line.contains("Act") && line.contains(&format!("trace_id={trace_id}"))),
        "no resolver log line about the Act with trace_id={trace_id}:\n{log}"
    );

    // A caller that does not trace: the resolver starts the trace, and the
    // roller and the journal still join it.
    let dodge = json!({"type": "dodge", "actor": "meowth", "incoming_damage": 40});
    act(&mut forum, battle, &dodge, "untraced-2").await.expect("the untraced act");
    let root = poll_until("the untraced Act's span", WAIT, || {
        let root = collector
            .spans()
            .into_iter()
            .filter(|s| s.trace_id != trace_id && s.parent_span_id.is_empty())
            .find(|s| s.service == "battlelog-resolver" && s.attribute("rpc.method") == Some("Act"));
        async move { root }
    })
    .await;
    let spans = whole_trace(&collector, &root.trace_id).await;
    assert_one_tree(&spans);
}

/// Off unless configured: the OpenTelemetry SDK's own endpoint variable
/// alone does not turn exporting on; the services serve as before, and
/// their log lines still carry trace ids (the context is still propagated).
#[tokio::test(flavor = "multi_thread")]
async fn without_an_endpoint_nothing_is_exported_and_everything_works() {
    let collector = Collector::start().await;
    let options = StartOptions {
        envs: vec![
            ("OTEL_EXPORTER_OTLP_ENDPOINT".into(), collector.endpoint()),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT".into(), collector.endpoint()),
            ("OTEL_BSP_SCHEDULE_DELAY".into(), "100".into()),
        ],
        ..StartOptions::default()
    };
    let stack = Stack::start_with("traces-off", false, &options).await;
    let mut forum = resolver_client(&stack.resolver).await;
    let battle = "untraced";
    open(&mut forum, battle, "pokemon-d6@1", json!([{"id": "pikachu"}, {"id": "meowth"}]), "seed").await;
    let attack = json!({"type": "attack", "actor": "pikachu", "target": "meowth", "move": "Tackle", "power": 40});
    let reply = act(&mut forum, battle, &attack, "off-1").await.expect("the act");
    assert_eq!(faces(&reply).len(), 1, "one power die: {reply:?}");

    // The services stop cleanly (nothing to flush, nothing hangs) ...
    let dir = stack.dir.path().to_owned();
    let Stack { resolver, roller, journal, dir: _keep, .. } = stack;
    for service in [resolver, roller, journal] {
        assert!(service.terminate().await, "a service failed to stop");
    }
    // ... and have exited: whatever they would have exported (each batch
    // within 100 ms, the rest flushed at exit) has been sent by now.
    assert_eq!(collector.exports(), 0, "something was exported: {:#?}", collector.spans());

    // The trace ids are still in the logs: the resolver's Act line and the
    // roller's line of the same request share one.
    let resolver_log = std::fs::read_to_string(dir.join("resolver.log")).expect("the resolver's log");
    let act_line = resolver_log
        .lines()
        .find(|l| l.contains("/Act") && l.contains("trace_id="))
        .unwrap_or_else(|| panic!("no Act line with a trace id:\n{resolver_log}"));
    let trace_id = act_line.split("trace_id=").nth(1).expect("a trace id").get(..32).expect("32 hex digits");
    assert!(trace_id.chars().all(|c| c.is_ascii_hexdigit()) && trace_id != "0".repeat(32), "{act_line}");
    let roller_log = std::fs::read_to_string(dir.join("roller.log")).expect("the roller's log");
    assert!(roller_log.contains(&format!("trace_id={trace_id}")), "the roller's lines lack {trace_id}:\n{roller_log}");
}

/// An `https://` collector is refused at start, naming the key: the
/// exporter has no CA to trust one by, and would lose every span in silence.
#[tokio::test(flavor = "multi_thread")]
async fn an_https_collector_stops_the_service_at_start() {
    let binary = battlelog_test_support::service_binary("battlelog-resolver");
    let output = std::process::Command::new(binary)
        .args(["--listen", "127.0.0.1:0", "--otlp-endpoint", "https://127.0.0.1:4317"])
        .envs(battlelog_test_support::TestAuth::shared().env("resolver"))
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run the resolver");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "it started: {stderr}");
    assert!(output.stdout.is_empty(), "no readiness line: {}", String::from_utf8_lossy(&output.stdout));
    assert!(stderr.contains("otlp_endpoint") && stderr.contains("http://"), "{stderr}");
}
