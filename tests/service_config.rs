//! Each service binary as an operator meets it: configuration layered
//! defaults ← TOML file (`--config`) ← `BATTLELOG_<SERVICE>_*` environment ←
//! flags, seen in what the binary does (the address it announces, the
//! format of its logs); JSON logs that parse; the roller's master key; and
//! health and reflection answered on every service without a token.

use std::path::Path;

use battlelog_proto::v1::roller_client::RollerClient;
use battlelog_test_support::stack::*;
use battlelog_test_support::{STARTUP_DEADLINE, ServiceProcess, TestAuth, service_binary, temp_dir};
use serde_json::Value;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;
use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;

#[derive(Debug, Clone, Copy)]
enum LogFormat {
    Json,
    Text,
}

/// An address no layer but one sets: the loopback address a service
/// announces tells which layer its `listen` came from (port 0: a free one).
const FILE_LISTEN: &str = "127.0.0.2:0";
const ENV_LISTEN: &str = "127.0.0.3:0";
const FLAG_LISTEN: &str = "127.0.0.4:0";

/// What one service needs besides `listen` and `log_format`, as TOML lines
/// of its config file; peers are unreachable URLs, which a service only
/// dials when a request needs them.
fn file_keys(service: &str, dir: &Path) -> String {
    match service {
        "journal" => format!("data_dir = {:?}\n", dir.join("journal-data").display().to_string()),
        "roller" => {
            let key = dir.join("master.key");
            std::fs::write(&key, MASTER_KEY_HEX).expect("write the master key");
            format!("journal_url = \"http://127.0.0.1:9\"\nmaster_key_file = {:?}\n", key.display().to_string())
        }
        "resolver" => "journal_url = \"http://127.0.0.1:9\"\nroller_url = \"http://127.0.0.1:9\"\n".to_owned(),
        "web" => {
            let secret = dir.join("share.secret");
            battlelog_auth::ShareSecret::read_or_create(&secret).expect("a share secret");
            let token = TestAuth::shared().reader();
            let token_file = dir.join("web.token");
            std::fs::write(&token_file, token).expect("write the web's token");
            format!(
                "resolver_url = \"http://127.0.0.1:9\"\ntoken_file = {:?}\nshare_secret_file = {:?}\n",
                token_file.display().to_string(),
                secret.display().to_string()
            )
        }
        other => panic!("no service {other}"),
    }
}

/// The log lines of a started service, at least its "starting" line.
fn log_lines(process: &ServiceProcess, service: &str) -> Vec<String> {
    let log = process.log();
    let starting = format!("battlelog-{service} starting");
    assert!(log.contains(&starting), "battlelog-{service} logs that it is starting:\n{log}");
    log.lines().filter(|l| !l.trim().is_empty()).map(str::to_owned).collect()
}

/// Every line is a JSON object; the starting line says so in its message.
fn assert_json_logs(lines: &[String], service: &str) {
    for line in lines {
        let parsed: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        assert!(parsed["level"].is_string() && parsed["timestamp"].is_string(), "a log record: {line}");
    }
    let starting = format!("battlelog-{service} starting");
    assert!(
        lines.iter().any(|l| serde_json::from_str::<Value>(l).is_ok_and(|v| v["fields"]["message"] == starting)),
        "the starting line as JSON: {lines:?}"
    );
}

fn assert_text_logs(lines: &[String]) {
    for line in lines {
        assert!(serde_json::from_str::<Value>(line).is_err(), "a text log line, not JSON: {line}");
    }
    assert!(lines.iter().any(|l| l.contains(" INFO ")), "text lines carry their level: {lines:?}");
}

/// For each of the three binaries, three starts with the same config file
/// (`listen` 127.0.0.2, `log_format = "json"`): alone, the file wins over
/// the defaults (127.0.0.1, text); with `BATTLELOG_<SERVICE>_LISTEN`
/// 127.0.0.3 and `_LOG_FORMAT=text`, the environment wins over the file;
/// with `--listen` 127.0.0.4 and `--log-format json` as well, the flags win
/// over the environment. Which layer won shows in the address the binary
/// announces and in the format of its logs on stderr.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_service_layers_defaults_file_environment_and_flags() {
    let dir = temp_dir("config-layers");
    for service in ["journal", "roller", "resolver", "web"] {
        let upper = service.to_ascii_uppercase();
        let file = dir.path().join(format!("{service}.toml"));
        let config = format!(
            "listen = {FILE_LISTEN:?}\nlog_format = \"json\"\nlog = \"info\"\n{}",
            file_keys(service, dir.path())
        );
        std::fs::write(&file, config).expect("write the config file");
        let mut env = TestAuth::shared().env(service);
        // RUST_LOG would win over `log`: fix it, so that there are lines to read.
        env.push(("RUST_LOG".to_owned(), "info".to_owned()));
        let args = vec!["--config".to_owned(), file.display().to_string()];
        let env_layer = [
            (format!("BATTLELOG_{upper}_LISTEN"), ENV_LISTEN.to_owned()),
            (format!("BATTLELOG_{upper}_LOG_FORMAT"), "text".to_owned()),
        ];
        let flag_layer = ["--listen", FLAG_LISTEN, "--log-format", "json"].map(str::to_owned);
        let with_env = [env.clone(), env_layer.to_vec()].concat();
        let with_flags = [args.clone(), flag_layer.to_vec()].concat();
        // (the layers given, flags, environment, the address and log format expected)
        let runs = [
            ("file", &args, &env, "127.0.0.2", LogFormat::Json),
            ("file + environment", &args, &with_env, "127.0.0.3", LogFormat::Text),
            ("file + environment + flags", &with_flags, &with_env, "127.0.0.4", LogFormat::Json),
        ];
        for (i, (layers, args, envs, ip, format)) in runs.into_iter().enumerate() {
            let log = dir.path().join(format!("{service}-{i}.log"));
            let binary = service_binary(&format!("battlelog-{service}"));
            // The web pages are HTTP, not gRPC: ready once they announce it.
            let process = if service == "web" {
                ServiceProcess::start_http(&binary, args, envs, &log).await
            } else {
                ServiceProcess::start(&binary, args, envs, &log).await
            };
            assert_eq!(
                process.addr().ip().to_string(),
                ip,
                "battlelog-{service} with the {layers} listens where the last layer says"
            );
            assert_ne!(process.addr().port(), 0);
            let lines = log_lines(&process, service);
            match format {
                LogFormat::Json => assert_json_logs(&lines, service),
                LogFormat::Text => assert_text_logs(&lines),
            }
        }
    }
}

/// What a service binary prints on stderr when it refuses to start: it
/// must exit at once, with no readiness line.
async fn refused_start(service: &str, args: &[String], envs: &[(String, String)]) -> String {
    battlelog_test_support::refused_start(&format!("battlelog-{service}"), args, envs).await
}

/// A value that does not fit its key stops every service before it serves,
/// with a message naming the key and where the value came from, whichever
/// layer gave it: the file, a variable or a flag. A key the service does
/// not know, in its file, is refused by name (a typo is not ignored).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_service_refuses_a_bad_value_or_an_unknown_key_naming_it_and_its_layer() {
    let dir = temp_dir("config-refused");
    for service in ["journal", "roller", "resolver", "web"] {
        let upper = service.to_ascii_uppercase();
        let env = TestAuth::shared().env(service);
        let base = format!("listen = \"127.0.0.1:0\"\n{}", file_keys(service, dir.path()));
        let with_file = |name: &str, extra: &str| {
            let file = dir.path().join(format!("{service}-{name}.toml"));
            std::fs::write(&file, format!("{base}{extra}")).expect("write the config file");
            vec!["--config".to_owned(), file.display().to_string()]
        };

        let args = with_file("typo", "lisen = \"127.0.0.1:0\"\n");
        let stderr = refused_start(service, &args, &env).await;
        assert!(stderr.contains("invalid config lisen: unknown key `lisen`"), "{service}: {stderr}");
        assert!(stderr.contains(&format!("{service}-typo.toml")), "{service} names the file: {stderr}");

        let args = with_file("type", "log_format = 7\n");
        let stderr = refused_start(service, &args, &env).await;
        assert!(stderr.contains("invalid config log_format: "), "{service}: {stderr}");
        assert!(stderr.contains(&format!("{service}-type.toml")), "{service} names the file: {stderr}");

        // A TLS key, one of the keys the services share (flattened); the
        // web pages only call out over TLS.
        let tls_key = if service == "web" { "tls_ca" } else { "tls_cert" };
        let args = with_file("tls", &format!("{tls_key} = 7\n"));
        let stderr = refused_start(service, &args, &env).await;
        assert!(stderr.contains(&format!("invalid config {tls_key}: ")), "{service}: {stderr}");
        assert!(!stderr.contains("unknown key"), "{service} knows {tls_key}: {stderr}");
        assert!(stderr.contains(&format!("{service}-tls.toml")), "{service} names the file: {stderr}");

        let args = with_file("ok", "");
        let variable = format!("BATTLELOG_{upper}_LISTEN");
        let bad_env = [env.clone(), vec![(variable.clone(), "nowhere".to_owned())]].concat();
        let stderr = refused_start(service, &args, &bad_env).await;
        assert!(stderr.contains("invalid config listen: "), "{service}: {stderr}");
        assert!(stderr.contains(&format!("(from {variable})")), "{service} names the variable: {stderr}");

        let bad_flag = [args.clone(), ["--log-format", "xml"].map(str::to_owned).to_vec()].concat();
        let stderr = refused_start(service, &bad_flag, &env).await;
        assert!(stderr.contains("invalid config log_format: unknown variant"), "{service}: {stderr}");
        assert!(stderr.contains("(from --log-format)"), "{service} names the flag: {stderr}");

        // The batch of appends to the journal, and the calls it queues
        // behind: at least 1, on both ends (1 is taken: tests/append_batch.rs
        // runs a journal at 1, and the client's unit tests at 1 and 2 calls).
        let batch_keys: &[&str] = match service {
            "journal" => &["max_appends_per_batch"],
            "roller" | "resolver" => &["journal_append_batch", "journal_append_calls"],
            _ => &[],
        };
        for key in batch_keys {
            let variable = format!("BATTLELOG_{upper}_{}", key.to_ascii_uppercase());
            let zero = [env.clone(), vec![(variable.clone(), "0".to_owned())]].concat();
            let stderr = refused_start(service, &args, &zero).await;
            assert!(stderr.contains(key) && stderr.contains("at least 1"), "{service}: {stderr}");
        }
    }
}

/// Outside dev mode the roller does not start without a master key, and
/// says what is missing; `--master-key-file` gives it one: the commitment
/// it signs is SHA-256 of the seed the test derives from that key
/// (docs/protocol.md §1), under the roller key that key derives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_roller_needs_a_master_key_outside_dev_mode_and_reads_it_from_a_file() {
    let dir = temp_dir("master-key");
    let binary = service_binary("battlelog-roller");
    let base = ["--listen", "127.0.0.1:0", "--journal-url", "http://127.0.0.1:9", "--data-dir"].map(str::to_owned);
    let mut args = base.to_vec();
    args.push(dir.path().join("roller").display().to_string());
    let refused = tokio::process::Command::new(&binary)
        .args(&args)
        .envs(TestAuth::shared().env("roller"))
        .env_remove("BATTLELOG_ROLLER_MASTER_KEY")
        .env_remove("BATTLELOG_ROLLER_MASTER_KEY_FILE")
        .env_remove("BATTLELOG_ROLLER_DEV")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        // A roller that starts anyway is stopped when the deadline drops it.
        .kill_on_drop(true)
        .spawn()
        .expect("run the roller");
    let output = tokio::time::timeout(STARTUP_DEADLINE, refused.wait_with_output())
        .await
        .expect("the roller exits at once without a master key, instead of serving")
        .expect("the roller's output");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "no master key, no roller: {output:?}");
    assert!(stderr.contains("invalid config master_key: no master key"), "names what is missing: {stderr}");
    assert!(String::from_utf8_lossy(&output.stdout).is_empty(), "no readiness line: {output:?}");
    assert!(!dir.path().join("roller").join("master.key").exists(), "no development key made outside dev mode");

    let key_file = dir.path().join("master.key");
    std::fs::write(&key_file, format!("{MASTER_KEY_HEX}\n")).expect("write the master key");
    args.extend(["--master-key-file".to_owned(), key_file.display().to_string()]);
    let roller =
        ServiceProcess::start(&binary, &args, &TestAuth::shared().env("roller"), &dir.path().join("roller.log")).await;
    let mut client = RollerClient::new(roller.authed(&TestAuth::shared().service_token()).await);
    let request = battlelog_proto::v1::CommitmentRequest { battle_id: "keyed".into(), epoch: 0 };
    let reply = client.commitment(request).await.expect("commitment").into_inner();
    assert_eq!(
        reply.commitment,
        server_seed("keyed", 0).commitment().to_string(),
        "the seed comes from the file's key"
    );
    assert_eq!(hex::encode(&reply.roller_key), ROLLER_KEY_HEX, "the roller key is the file's key's");
    assert_eq!(roller_key().verify("keyed", 0, &reply.commitment, &reply.commitment_signature), Ok(()));
}

/// `web_url` makes the resolver link its replies to the web service's
/// battle pages, with share keys derived from the secret of
/// `share_secret_file`: without that file it refuses to start, naming both
/// keys, whether `web_url` came as a flag or from the environment; a file
/// that is not a secret is refused naming its key. Given both
/// (`BATTLELOG_RESOLVER_WEB_URL`, `BATTLELOG_RESOLVER_SHARE_SECRET_FILE`),
/// its replies link there with keys that secret admits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_resolver_links_to_the_web_only_with_the_share_secret() {
    let dir = temp_dir("web-url");
    let env = TestAuth::shared().env("resolver");
    let base = ["--listen", "127.0.0.1:0", "--journal-url", "http://127.0.0.1:9", "--roller-url", "http://127.0.0.1:9"]
        .map(str::to_owned)
        .to_vec();
    // The first line (a backtrace may follow, when RUST_BACKTRACE asks).
    let named_both = |stderr: &str| {
        stderr
            .lines()
            .next()
            .is_some_and(|l| l.contains("invalid config share_secret_file: is required when web_url is set"))
    };

    let flag = [base.clone(), ["--web-url", "https://battles.example.org"].map(str::to_owned).to_vec()].concat();
    let stderr = refused_start("resolver", &flag, &env).await;
    assert!(named_both(&stderr), "a line naming both keys: {stderr}");

    let variable = ("BATTLELOG_RESOLVER_WEB_URL".to_owned(), "https://battles.example.org".to_owned());
    let with_variable = [env.clone(), vec![variable]].concat();
    let stderr = refused_start("resolver", &base, &with_variable).await;
    assert!(named_both(&stderr), "a line naming both keys: {stderr}");

    let not_a_secret = dir.path().join("not-a-secret");
    std::fs::write(&not_a_secret, "xyz\n").expect("write");
    let bad_file = [flag.clone(), vec!["--share-secret-file".to_owned(), not_a_secret.display().to_string()]].concat();
    let stderr = refused_start("resolver", &bad_file, &env).await;
    assert!(stderr.contains("share_secret_file: ") && stderr.contains("must hold 64 hex digits"), "{stderr}");

    let secret_file = dir.path().join("share.secret");
    let (secret, options) = share_link_options(&secret_file, "http://127.0.0.1:8080/");
    let stack = Stack::start_with("web-links", false, &options).await;
    let mut forum = resolver_client(&stack.resolver).await;
    let opened =
        open(&mut forum, "linked", "pbta-2d6@1", serde_json::json!([{"id": "ash", "traits": {"cool": 1}}]), "seed")
            .await;
    let key = opened
        .permalink
        .strip_prefix("http://127.0.0.1:8080/battles/linked?k=")
        .and_then(|rest| rest.strip_suffix("#v0"))
        .unwrap_or_else(|| panic!("a link to the battle's page at v0: {:?}", opened.permalink));
    assert!(secret.admits("linked", key), "the key is the configured secret's: {}", opened.permalink);
}

/// `grpc.health.v1.Health/Check` (the whole server, and the service by
/// name) and reflection's `ListServices` answer on the journal, the roller
/// and the resolver without a token, as probes and `grpcurl` call them;
/// reflection lists what that server answers (its own service, health and
/// reflection), not the other services' protos it also describes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_service_answers_health_and_reflection_without_a_token() {
    let stack = Stack::start("probes", false).await;
    for (process, service) in [
        (&stack.journal, "battlelog.v1.Journal"),
        (&stack.roller, "battlelog.v1.Roller"),
        (&stack.resolver, "battlelog.v1.Resolver"),
    ] {
        let mut health = HealthClient::new(process.channel().await);
        for name in ["", service] {
            let reply = health
                .check(HealthCheckRequest { service: name.into() })
                .await
                .unwrap_or_else(|s| panic!("{service}: health of {name:?} without a token: {s:?}"))
                .into_inner();
            assert_eq!(reply.status, ServingStatus::Serving as i32, "{service}: health of {name:?}");
        }
        let mut reflection = ServerReflectionClient::new(process.channel().await);
        let request = tonic_reflection::pb::v1::ServerReflectionRequest {
            host: String::new(),
            message_request: Some(MessageRequest::ListServices(String::new())),
        };
        let mut replies = reflection
            .server_reflection_info(tokio_stream::iter([request]))
            .await
            .unwrap_or_else(|s| panic!("{service}: reflection without a token: {s:?}"))
            .into_inner();
        let reply = replies.message().await.expect("a reply").expect("one reply");
        let Some(MessageResponse::ListServicesResponse(list)) = reply.message_response else { panic!("{reply:?}") };
        let mut names: Vec<&str> = list.service.iter().map(|s| s.name.as_str()).collect();
        names.sort_unstable();
        let mut served = vec![
            service,
            "grpc.health.v1.Health",
            "grpc.reflection.v1.ServerReflection",
            "grpc.reflection.v1alpha.ServerReflection",
        ];
        served.sort_unstable();
        assert_eq!(names, served, "{service} lists the services it answers, and no other");

        // The same under v1alpha, which older clients (Python's
        // grpcio-reflection) ask; it also describes the service.
        use tonic_reflection::pb::v1alpha as alpha;
        let mut reflection = alpha::server_reflection_client::ServerReflectionClient::new(process.channel().await);
        let requests = [
            alpha::ServerReflectionRequest {
                host: String::new(),
                message_request: Some(alpha::server_reflection_request::MessageRequest::ListServices(String::new())),
            },
            alpha::ServerReflectionRequest {
                host: String::new(),
                message_request: Some(alpha::server_reflection_request::MessageRequest::FileContainingSymbol(
                    service.to_owned(),
                )),
            },
        ];
        let mut replies = reflection
            .server_reflection_info(tokio_stream::iter(requests))
            .await
            .unwrap_or_else(|s| panic!("{service}: v1alpha reflection without a token: {s:?}"))
            .into_inner();
        let reply = replies.message().await.expect("a reply").expect("a v1alpha list");
        let Some(alpha::server_reflection_response::MessageResponse::ListServicesResponse(list)) =
            reply.message_response
        else {
            panic!("{reply:?}")
        };
        let mut alpha_names: Vec<&str> = list.service.iter().map(|s| s.name.as_str()).collect();
        alpha_names.sort_unstable();
        assert_eq!(alpha_names, served, "{service}: v1alpha lists the same services");
        let reply = replies.message().await.expect("a reply").expect("a v1alpha file");
        let Some(alpha::server_reflection_response::MessageResponse::FileDescriptorResponse(files)) =
            reply.message_response
        else {
            panic!("{service}: {reply:?}")
        };
        assert!(!files.file_descriptor_proto.is_empty(), "{service}: described under v1alpha");
    }
}
