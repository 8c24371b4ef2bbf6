//! The observe layer (battlelog_runtime::observe) on a real binary: the
//! journal, started as an operator would with `metrics_listen`, counts
//! every gRPC request by service, method and code on its `/metrics` —
//! health checks, a request that does not decode, and the door's refusals
//! by their reason — and writes one access-log line per request, with the
//! verified caller's tenant and never a token.

use std::time::{Duration, Instant};

use battlelog_test_support::metrics::sample;
use battlelog_test_support::raw_grpc::Raw;
use battlelog_test_support::{ServiceProcess, StartOptions, TestAuth, http_get, journal_with, temp_dir};
use tonic::transport::Channel;
use tonic::{Code, Status};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;

const APPEND: &str = "/battlelog.v1.Journal/Append";

/// Bytes that no `AppendRequest` decodes from (field 1, 5 bytes long, none
/// sent) to `Append`, with `token` if any.
async fn undecodable_append(process: &ServiceProcess, token: Option<&str>) -> Status {
    let channel: Channel = process.channel().await;
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready().await.expect("ready");
    let mut request = tonic::Request::new(vec![0x0a, 0x05]);
    if let Some(token) = token {
        request.metadata_mut().insert("authorization", format!("Bearer {token}").parse().expect("ascii"));
    }
    let path = tonic::codegen::http::uri::PathAndQuery::from_static(APPEND);
    grpc.unary(request, path, Raw).await.expect_err("refused")
}

#[tokio::test]
async fn the_journal_counts_its_requests_by_code_and_reason_and_logs_each_once_without_its_token() {
    let dir = temp_dir("observe");
    let options = StartOptions {
        envs: vec![("BATTLELOG_JOURNAL_METRICS_LISTEN".to_owned(), "127.0.0.1:0".to_owned())],
        ..StartOptions::default()
    };
    let journal = journal_with(&dir.path().join("journal"), None, &options).await;
    let auth = TestAuth::shared();
    let (service, forum) = (auth.service_token(), auth.forum());
    let url = journal.metrics_url().expect("a metrics port");
    let health_ok =
        "battlelog_grpc_server_requests_total{service=\"grpc.health.v1.Health\",method=\"Check\",code=\"OK\"}";
    // The harness checked its health before it handed it over.
    let checked = sample(&http_get(&url, &[]).await.1, health_ok).unwrap_or(0.0);

    let mut health = HealthClient::new(journal.channel().await);
    health.check(HealthCheckRequest { service: String::new() }).await.expect("health needs no token");
    let undecodable = undecodable_append(&journal, Some(&service)).await;
    assert_eq!(undecodable.code(), Code::InvalidArgument, "{undecodable:?}");
    let missing = undecodable_append(&journal, None).await;
    assert_eq!(missing.code(), Code::Unauthenticated, "{missing:?}");
    let denied = undecodable_append(&journal, Some(&forum)).await;
    assert_eq!(denied.code(), Code::PermissionDenied, "the journal serves the service role alone: {denied:?}");

    let (status, text) = http_get(&url, &[]).await;
    assert_eq!(status, 200, "{text}");
    let requests = |service: &str, method: &str, code: &str| {
        let name = format!(
            "battlelog_grpc_server_requests_total{{service=\"{service}\",method=\"{method}\",code=\"{code}\"}}"
        );
        sample(&text, &name)
    };
    assert_eq!(sample(&text, health_ok), Some(checked + 1.0), "{text}");
    for code in ["INVALID_ARGUMENT", "UNAUTHENTICATED", "PERMISSION_DENIED"] {
        assert_eq!(requests("battlelog.v1.Journal", "Append", code), Some(1.0), "{code}: {text}");
    }
    let timed =
        "battlelog_grpc_server_request_duration_seconds_count{service=\"battlelog.v1.Journal\",method=\"Append\"}";
    assert_eq!(sample(&text, timed), Some(3.0), "{text}");
    for reason in ["TOKEN_MISSING", "ROLE_NOT_ALLOWED"] {
        let name = format!("battlelog_grpc_server_auth_refusals_total{{reason=\"{reason}\"}}");
        assert_eq!(sample(&text, &name), Some(1.0), "{reason}: {text}");
    }

    // The log is written as the requests end; give the file a moment.
    let deadline = Instant::now() + Duration::from_secs(10);
    let access = loop {
        let log = journal.log();
        let lines: Vec<String> = log
            .lines()
            .filter(|line| line.contains("battlelog::access") && line.contains(APPEND))
            .map(str::to_owned)
            .collect();
        if lines.len() >= 3 || Instant::now() > deadline {
            break lines;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(access.len(), 3, "one line per request:\n{}", journal.log());
    let invalid = access.iter().find(|line| line.contains("code=INVALID_ARGUMENT")).expect("the undecodable Append");
    let method = format!("method={APPEND}");
    for field in [method.as_str(), "tenant=battlelog", "subject=test-service", "peer=127.0.0.1:"] {
        assert!(invalid.contains(field), "{field} in {invalid}");
    }
    let log = journal.log();
    for token in [&service, &forum] {
        assert!(!log.contains(token.as_str()), "a token in the journal's log:\n{log}");
    }
}
