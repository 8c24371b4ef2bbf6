//! The one serve builder (battlelog_runtime::serve), as each real binary
//! serves through it: every gRPC service answers a request that does not
//! decode with `INVALID_ARGUMENT` naming `request` (only the resolver did,
//! before the services shared one builder), and every service — the three
//! gRPC ones and the web pages — serves `GET /metrics` on its
//! `metrics_listen` port, announced before its readiness line, with its
//! `battlelog_build_info`, and 404 for any other path.

use battlelog_auth::ShareSecret;
use battlelog_test_support::metrics::sample;
use battlelog_test_support::raw_grpc::Raw;
use battlelog_test_support::{
    ServiceProcess, StartOptions, TestAuth, http_get, journal_with, resolver_with, roller_with, temp_dir, web_with,
};
use tonic::{Code, Status};
use tonic_types::StatusExt;

/// `bytes` as the request of `path` (`/battlelog.v1.Journal/Append`), with
/// a `service` token: past the door, so that decoding is what answers.
async fn raw_call(process: &ServiceProcess, path: &'static str, bytes: Vec<u8>) -> Result<Vec<u8>, Status> {
    let channel = process.authed(&TestAuth::shared().service_token()).await;
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready().await.map_err(|e| Status::unavailable(e.to_string()))?;
    let path = tonic::codegen::http::uri::PathAndQuery::from_static(path);
    grpc.unary(tonic::Request::new(bytes), path, Raw).await.map(tonic::Response::into_inner)
}

fn with_metrics(prefix: &str) -> StartOptions {
    StartOptions {
        envs: vec![(format!("BATTLELOG_{prefix}_METRICS_LISTEN"), "127.0.0.1:0".to_owned())],
        ..StartOptions::default()
    }
}

/// `process` serves its metrics, naming `service` in its build info, and
/// nothing else on that port.
async fn assert_serves_metrics(process: &ServiceProcess, service: &str) {
    let url = process.metrics_url().unwrap_or_else(|| panic!("{service} announced no metrics port"));
    let (status, body) = http_get(&url, &[]).await;
    assert_eq!(status, 200, "{service}: {body}");
    let build = format!("battlelog_build_info{{service=\"{service}\",version=\"{}\"}}", battlelog_runtime::VERSION);
    assert_eq!(sample(&body, &build), Some(1.0), "{service}: {body}");
    assert!(body.trim_end().ends_with("# EOF"), "{service}: {body}");
    let other = url.replace("/metrics", "/healthz");
    assert_eq!(http_get(&other, &[]).await.0, 404, "{service}: only /metrics is served there");
}

#[tokio::test]
async fn every_service_serves_its_metrics_and_every_grpc_service_refuses_what_does_not_decode_as_invalid() {
    let dir = temp_dir("serve");
    let journal = journal_with(&dir.path().join("journal"), None, &with_metrics("JOURNAL")).await;
    let roller = roller_with(&dir.path().join("roller"), &journal.url(), None, &with_metrics("ROLLER")).await;
    let resolver =
        resolver_with(&dir.path().join("resolver.log"), &journal.url(), &roller.url(), None, &with_metrics("RESOLVER"))
            .await;

    // Field 1, length-delimited, 5 bytes long, with none of them sent: no
    // message of any of these methods decodes from it.
    let undecodable = vec![0x0a, 0x05];
    for (process, service, path) in [
        (&journal, "journal", "/battlelog.v1.Journal/Append"),
        (&roller, "roller", "/battlelog.v1.Roller/Roll"),
        (&resolver, "resolver", "/battlelog.v1.Resolver/Act"),
    ] {
        let status = raw_call(process, path, undecodable.clone()).await.expect_err("it does not decode");
        assert_eq!(status.code(), Code::InvalidArgument, "{service}: {status:?}");
        assert!(status.message().starts_with("request: does not decode"), "{service}: {}", status.message());
        let details = status.get_error_details();
        let violations = details.bad_request().map(|b| b.field_violations.clone()).unwrap_or_default();
        assert_eq!(violations.first().map(|v| v.field.as_str()), Some("request"), "{service}: {status:?}");
        assert_serves_metrics(process, service).await;
    }

    let secret = dir.path().join("web.secret");
    ShareSecret::read_or_create(&secret).expect("a share secret");
    let token_file = dir.path().join("web.token");
    std::fs::write(&token_file, TestAuth::shared().reader()).expect("write the web's reader token");
    let envs = [("BATTLELOG_WEB_METRICS_LISTEN".to_owned(), "127.0.0.1:0".to_owned())];
    let web = web_with(&resolver.url(), &secret, &token_file, &dir.path().join("web.log"), &envs).await;
    assert_serves_metrics(&web, "web").await;

    // Its pages are counted by route template and status, never by the
    // path as sent.
    let url = web.metrics_url().expect("the web's metrics port");
    let page = "battlelog_http_server_requests_total{route=\"/battles/{battle_id}\",status=\"401\"}";
    let other = "battlelog_http_server_requests_total{route=\"other\",status=\"404\"}";
    let before = http_get(&url, &[]).await.1;
    let (status, _) = http_get(&format!("{}/battles/counted-battle", web.url()), &[]).await;
    assert_eq!(status, 401, "a page without a credential");
    assert_eq!(http_get(&format!("{}/no/such/page", web.url()), &[]).await.0, 404);
    let after = http_get(&url, &[]).await.1;
    for series in [page, other] {
        let counted = sample(&after, series).unwrap_or(0.0) - sample(&before, series).unwrap_or(0.0);
        assert_eq!(counted, 1.0, "{series}:\n{after}");
    }
    assert!(!after.contains("counted-battle") && !after.contains("no/such"), "{after}");
}

#[tokio::test]
async fn without_metrics_listen_no_metrics_port_is_announced() {
    let dir = temp_dir("serve-quiet");
    let journal = journal_with(&dir.path().join("journal"), None, &StartOptions::default()).await;
    assert_eq!(journal.metrics_url(), None);
}
