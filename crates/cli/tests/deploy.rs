//! The production configs in `deploy/config` load through each service's
//! own loader, with the values an operator reads in them.

use std::path::PathBuf;

fn config(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../deploy/config").join(name)
}

#[test]
fn the_journal_config_loads() {
    let layers =
        battlelog_journal::config::Layers::new(battlelog_journal::config::SERVICE).file(Some(config("journal.toml")));
    let loaded = battlelog_journal::Config::load(&layers).expect("journal.toml");
    assert_eq!(loaded.shared.listen.port(), 50053);
    assert_eq!(loaded.nats_url.as_deref(), Some("nats://nats:4222"));
    assert_eq!(loaded.nats_stream, "BATTLELOG_EVENTS");
    assert!(loaded.server_tls.enabled(), "TLS only");
    assert!(loaded.server_tls.tls_client_ca.is_some(), "mutual: only services call the journal");
    assert_eq!(loaded.tokens.auth_keys.len(), 1, "tokens are checked against the operator's public key");
}

#[test]
fn the_roller_config_loads_and_wants_a_real_key() {
    let layers =
        battlelog_roller::config::Layers::new(battlelog_roller::config::SERVICE).file(Some(config("roller.toml")));
    let loaded = battlelog_roller::Config::load(&layers).expect("roller.toml");
    assert_eq!(loaded.journal_url, "https://journal:50053");
    assert!(loaded.server_tls.enabled() && loaded.server_tls.tls_client_ca.is_some(), "mutual TLS");
    assert!(loaded.client_tls.tls_ca.is_some() && loaded.client_tls.tls_client_cert.is_some());
    assert!(!loaded.dev, "production must not generate keys");
    assert!(loaded.master_key_file.is_some());
    assert!(!loaded.tokens.auth_keys.is_empty() && loaded.token_file.is_some(), "checks tokens and presents its own");
}

#[test]
fn the_resolver_config_loads() {
    let layers = battlelog_resolver::config::Layers::new(battlelog_resolver::config::SERVICE)
        .file(Some(config("resolver.toml")));
    let loaded = battlelog_resolver::Config::load(&layers).expect("resolver.toml");
    assert_eq!(loaded.roller_url, "https://roller:50052");
    assert!(loaded.server_tls.enabled(), "TLS for forums");
    assert!(loaded.server_tls.tls_client_ca.is_none(), "forums present tokens, not certificates");
    assert!(loaded.client_tls.tls_ca.is_some() && loaded.client_tls.tls_client_key.is_some(), "mutual to peers");
    assert_eq!(loaded.nats_url.as_deref(), Some("nats://nats:4222"));
    assert!(!loaded.tokens.auth_keys.is_empty() && loaded.token_file.is_some(), "checks tokens and presents its own");
}

fn web_config() -> battlelog_web::Config {
    let layers = battlelog_web::config::Layers::new(battlelog_web::config::SERVICE).file(Some(config("web.toml")));
    battlelog_web::Config::load(&layers).expect("web.toml")
}

#[test]
fn the_web_config_loads() {
    let loaded = web_config();
    assert_eq!(loaded.shared.listen.port(), 8080);
    assert!(loaded.shared.listen.ip().is_unspecified(), "reachable from the proxy in front of it");
    assert_eq!(loaded.resolver_url, "https://resolver:50051");
    assert!(loaded.client_tls.tls_ca.is_some(), "trusts the resolver's CA");
    assert!(loaded.client_tls.tls_client_cert.is_none(), "the resolver asks no certificate of the web");
    assert_eq!(loaded.token_file, Some(PathBuf::from("/etc/battlelog-auth/web.token")));
    assert_eq!(loaded.share_secret_file, Some(PathBuf::from("/etc/battlelog-web/share.secret")));
    assert_eq!(loaded.shared.log_format, battlelog_runtime::logging::LogFormat::Json);
}

/// resolver.toml with the `web_url` and `share_secret_file` a deployment
/// file gives the resolver in its environment.
fn resolver_with_env(web_url: &str, share_secret_file: &str) -> battlelog_resolver::Config {
    let env = [
        ("BATTLELOG_RESOLVER_WEB_URL".to_owned(), web_url.to_owned()),
        ("BATTLELOG_RESOLVER_SHARE_SECRET_FILE".to_owned(), share_secret_file.to_owned()),
    ];
    let layers = battlelog_resolver::config::Layers::new(battlelog_resolver::config::SERVICE)
        .file(Some(config("resolver.toml")))
        .env(env);
    battlelog_resolver::Config::load(&layers).expect("resolver.toml with the web's keys")
}

fn deploy_file(path: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../deploy").join(path);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The Kubernetes manifests are not run by the suite (no cluster on the CI
/// machines), but the NATS logins in them must agree with the shipped NATS
/// config: each service's URL names its user, with the password from the
/// secret key that nats.conf reads that user's password from, defined
/// before the URL that expands it.
#[test]
fn kubernetes_gives_the_journal_the_resolver_and_the_webhooks_their_nats_logins() {
    // The users of both nats.conf and jetstream.conf (each includes it).
    let users = deploy_file("nats/users.conf");
    for file in ["nats/nats.conf", "nats/jetstream.conf"] {
        assert!(deploy_file(file).contains("include ./users.conf"), "{file} includes the users");
    }
    for (file, journal_host) in [
        ("kubernetes/battlelog.yaml", "nats:4222"),
        // The JetStream journal lists every node; the others reach any
        // through the Service.
        ("kubernetes/battlelog-jetstream.yaml", "nats-0.nats:4222"),
    ] {
        let manifest = deploy_file(file);
        for (service, key) in [
            ("journal", "JOURNAL_NATS_PASSWORD"),
            ("resolver", "RESOLVER_NATS_PASSWORD"),
            ("webhooks", "WEBHOOKS_NATS_PASSWORD"),
        ] {
            let command = format!(r#"command: ["battlelog-{service}""#);
            let section = manifest.split("\n---").find(|doc| doc.contains(&command)).expect("the service's workload");
            let secret = format!("secretKeyRef: {{ name: battlelog-nats, key: {key} }}");
            let variable = format!("name: BATTLELOG_{}_NATS_URL", service.to_uppercase());
            let host = if service == "journal" { journal_host } else { "nats:4222" };
            let url = format!("value: nats://{service}:$(NATS_PASSWORD)@{host}");
            for wanted in ["name: NATS_PASSWORD", &secret, &variable, &url] {
                assert!(section.contains(wanted), "{file} {service}: no {wanted:?} in\n{section}");
            }
            let position = |text: &str| section.find(text).expect("present");
            assert!(position("name: NATS_PASSWORD") < position(&variable), "{service}: defined before it is expanded");
            assert!(users.contains(&format!("user: {service}, password: ${key}")), "users.conf's {service} user");
            let expanded = battlelog_runtime::nats_url::NatsUrl::new(&format!("nats://{service}:s3cret@nats:4222"));
            assert_eq!((expanded.user(), expanded.address()), (Some(service), "nats://nats:4222"));
        }
    }
}

/// Every workload mounts the token keys its config names: the public key
/// for all, the service token for the roller and the resolver, at the
/// paths deploy/config gives as `auth_keys` and `token_file`.
#[test]
fn kubernetes_mounts_the_token_keys_the_configs_name() {
    let manifest = deploy_file("kubernetes/battlelog.yaml");
    for (service, token) in [("journal", None), ("roller", Some("roller.token")), ("resolver", Some("resolver.token"))]
    {
        let command = format!(r#"command: ["battlelog-{service}""#);
        let section = manifest.split("\n---").find(|doc| doc.contains(&command)).expect("the service's workload");
        assert!(section.contains("{ name: auth, mountPath: /etc/battlelog-auth, readOnly: true }"), "{service}");
        assert!(section.contains("{ key: token-signing.pub, path: token-signing.pub }"), "{service}");
        if let Some(token) = token {
            assert!(section.contains(&format!("{{ key: {token}, path: service.token }}")), "{service}: {token}");
        } else {
            assert!(!section.contains("service.token"), "the journal calls no one: no token for it");
        }
        let config = deploy_file(&format!("config/{service}.toml"));
        assert!(config.contains(r#"auth_keys = ["/etc/battlelog-auth/token-signing.pub"]"#), "{service}.toml");
        assert_eq!(config.contains(r#"token_file = "/etc/battlelog-auth/service.token""#), token.is_some());
    }
}

/// The web's workload and Service in the manifests agree with web.toml:
/// its port, an HTTP probe of /healthz, its reader token, the resolver's CA
/// and the share secret at the paths web.toml names; and the resolver gets
/// the same share secret and a web_url, so that its links open on the web.
#[test]
fn kubernetes_runs_the_web_with_what_its_config_names() {
    let manifest = deploy_file("kubernetes/battlelog.yaml");
    let web = web_config();
    let workload = |service: &str| {
        let command = format!(r#"command: ["battlelog-{service}""#);
        manifest.split("\n---").find(|doc| doc.contains(&command)).unwrap_or_else(|| panic!("{service}'s workload"))
    };
    let section = workload("web");
    assert!(section.contains("kind: Deployment"), "stateless");
    assert!(section.contains(r#"["battlelog-web", "--config", "/etc/battlelog/web.toml"]"#));
    let port = web.shared.listen.port();
    for wanted in [
        format!("containerPort: {port}"),
        format!("readinessProbe: {{ httpGet: {{ path: /healthz, port: {port} }} }}"),
        format!("livenessProbe: {{ httpGet: {{ path: /healthz, port: {port} }}"),
        // Only the web's token from battlelog-auth, at web.toml's token_file.
        "{ name: auth, mountPath: /etc/battlelog-auth, readOnly: true }".into(),
        "items: [{ key: web.token, path: web.token }]".into(),
        // Only the CA of the resolver's certificate, at web.toml's tls_ca.
        "{ name: tls, mountPath: /etc/battlelog-tls, readOnly: true }".into(),
        "secretName: battlelog-resolver-tls".into(),
        "items: [{ key: ca.crt, path: ca.crt }]".into(),
        "{ name: share, mountPath: /etc/battlelog-web, readOnly: true }".into(),
        "secret: { secretName: battlelog-web-share }".into(),
    ] {
        assert!(section.contains(&wanted), "web: no {wanted:?} in\n{section}");
    }
    assert!(!section.contains("token-signing.pub") && !section.contains("tls.key"), "the web needs neither");
    assert_eq!(web.token_file, Some(PathBuf::from("/etc/battlelog-auth/web.token")));
    assert_eq!(web.client_tls.tls_ca, Some(PathBuf::from("/etc/battlelog-tls/ca.crt")));
    assert_eq!(web.share_secret_file, Some(PathBuf::from("/etc/battlelog-web/share.secret")));

    let service = manifest.split("\n---").find(|doc| doc.contains("metadata: { name: web }")).expect("Service web");
    assert!(service.contains("selector: { app: battlelog-web }"), "{service}");
    assert!(service.contains(&format!("ports: [{{ name: http, port: {port} }}]")), "{service}");
    // The web calls the resolver by the Service name in its resolver_url.
    assert!(manifest.contains("metadata: { name: resolver }") && web.resolver_url.contains("//resolver:50051"));

    let resolver = workload("resolver");
    assert!(resolver.contains("{ name: share, mountPath: /etc/battlelog-web, readOnly: true }"), "{resolver}");
    assert!(resolver.contains("secret: { secretName: battlelog-web-share }"), "{resolver}");
    let value = |name: &str| {
        let after = resolver.split(&format!("- name: {name}\n")).nth(1).unwrap_or_else(|| panic!("no {name}"));
        let line = after.lines().next().expect("its value").trim();
        line.strip_prefix("value: ").unwrap_or_else(|| panic!("{name}: {line}")).to_owned()
    };
    let loaded =
        resolver_with_env(&value("BATTLELOG_RESOLVER_WEB_URL"), &value("BATTLELOG_RESOLVER_SHARE_SECRET_FILE"));
    assert!(loaded.web_url.as_deref().is_some_and(|url| url.starts_with("https://")), "links through the Ingress");
    assert_eq!(loaded.share_secret_file, web.share_secret_file, "the web's own secret");
}

/// docker-compose.yml, likewise: the web mounts its token, the resolver's
/// CA and the share secret where web.toml reads them, and the resolver
/// mounts the same secret file where its environment points.
#[test]
fn compose_runs_the_web_with_what_its_config_names() {
    let compose = deploy_file("docker-compose.yml");
    let web = web_config();
    let service = |name: &str| {
        let command = format!(r#"command: ["battlelog-{name}""#);
        compose.split("\n\n").find(|block| block.contains(&command)).unwrap_or_else(|| panic!("service {name}"))
    };
    let section = service("web");
    let path = |path: &Option<PathBuf>| path.as_ref().expect("set").display().to_string();
    let port = web.shared.listen.port();
    for wanted in [
        r#"command: ["battlelog-web", "--config", "/etc/battlelog/web.toml"]"#.to_owned(),
        format!(r#"- "{port}:{port}""#),
        format!("- ./tls/resolver/ca.crt:{}:ro", path(&web.client_tls.tls_ca)),
        format!("- ./auth/web.token:{}:ro", path(&web.token_file)),
        format!("- ./web/share.secret:{}:ro", path(&web.share_secret_file)),
        // Started once the resolver's healthcheck passes (tests/deploy.rs
        // starts the file as written and checks the order).
        "depends_on:\n      resolver: { condition: service_healthy }".into(),
    ] {
        assert!(section.contains(&wanted), "web: no {wanted:?} in\n{section}");
    }

    let resolver = service("resolver");
    let value = |name: &str| {
        let after = resolver.split(&format!("{name}: ")).nth(1).unwrap_or_else(|| panic!("no {name}"));
        after.lines().next().expect("its value").trim().to_owned()
    };
    let loaded =
        resolver_with_env(&value("BATTLELOG_RESOLVER_WEB_URL"), &value("BATTLELOG_RESOLVER_SHARE_SECRET_FILE"));
    assert_eq!(loaded.web_url, Some(format!("http://localhost:{port}")), "the web's published port");
    assert_eq!(loaded.share_secret_file, web.share_secret_file, "the web's own secret");
    let mount = format!("- ./web/share.secret:{}:ro", path(&loaded.share_secret_file));
    assert!(resolver.contains(&mount), "resolver: no {mount:?} in\n{resolver}");
    // The header tells the operator how to make both files the web reads.
    assert!(compose.contains("--role reader --tenant battlelog --subject battlelog-web"));
    assert!(compose.contains("> deploy/auth/web.token") && compose.contains("> deploy/web/share.secret"));
}

/// NATS's monitoring endpoints (/connz, /subsz, /jsz …) answer anyone who
/// reaches them, without a password: the shipped config binds them to
/// loopback, sets no other monitoring listener, and the compose file
/// publishes no monitoring port.
#[test]
fn nats_serves_monitoring_on_loopback_only() {
    for file in ["nats/nats.conf", "nats/jetstream.conf"] {
        monitoring_on_loopback_only(file);
    }
}

fn monitoring_on_loopback_only(file: &str) {
    let nats_conf = deploy_file(file);
    let settings: Vec<(&str, &str)> = nats_conf
        .lines()
        .map(str::trim)
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| line.split_once(':'))
        .map(|(key, value)| (key.trim(), value.trim()))
        .collect();
    let monitoring: Vec<_> = settings
        .iter()
        .filter(|(key, _)| matches!(*key, "http" | "http_port" | "monitor_port" | "https" | "https_port" | "http_host"))
        .collect();
    assert_eq!(
        monitoring,
        [&("http", "\"127.0.0.1:8222\"")],
        "{file}: only a loopback monitoring listener: {monitoring:?}"
    );
    for compose in ["docker-compose.yml", "docker-compose.jetstream.yml"] {
        assert!(!deploy_file(compose).contains("8222"), "{compose} publishes no monitoring port");
    }
}

#[test]
fn the_webhooks_config_loads_and_its_tenant_example_too() {
    let layers = battlelog_webhooks::config::Layers::new(battlelog_webhooks::config::SERVICE)
        .file(Some(config("webhooks.toml")));
    let loaded = battlelog_webhooks::Config::load(&layers).expect("webhooks.toml");
    assert_eq!(loaded.shared.listen.port(), 50054);
    assert_eq!((loaded.nats_stream.as_str(), loaded.consumer.as_str()), ("BATTLELOG_EVENTS", "battlelog-webhooks"));
    assert_eq!(loaded.tokens.auth_keys.len(), 1, "admin tokens are checked against the operator's public key");
    assert!(loaded.tenants.is_empty(), "the tenants are the deployment's");
    // Only what the journal holds is delivered: each record of the feed is
    // checked with it, as a service, over mutual TLS.
    assert_eq!(loaded.journal_url.as_deref(), Some("https://journal:50053"));
    assert_eq!(loaded.token_file, Some(PathBuf::from("/etc/battlelog-auth/service.token")));
    assert!(loaded.client_tls.tls_ca.is_some() && loaded.client_tls.tls_client_cert.is_some(), "mutual TLS");
    // The commented example, uncommented with a real secret, loads.
    let text = std::fs::read_to_string(config("webhooks.toml")).expect("webhooks.toml");
    let example: String = text
        .lines()
        .map(|line| match line.strip_prefix("# ") {
            Some(rest) if rest.starts_with("[tenants.") || rest.starts_with("url = ") => rest.to_owned(),
            Some(rest) if rest.starts_with("secret = ") => "secret = \"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"".into(),
            _ => line.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("webhooks.toml");
    std::fs::write(&file, example).expect("write");
    let layers = battlelog_webhooks::config::Layers::new(battlelog_webhooks::config::SERVICE).file(Some(file));
    let loaded = battlelog_webhooks::Config::load(&layers).expect("the example tenant");
    assert_eq!(loaded.tenants["forum-a"].url, "https://forum-a.example/battlelog/webhook");
}

#[test]
fn compose_runs_the_webhooks_as_their_nats_user() {
    let compose = deploy_file("docker-compose.yml");
    assert!(
        compose.contains(r#"command: ["battlelog-webhooks", "--config", "/etc/battlelog-webhooks/webhooks.toml"]"#)
    );
    assert!(compose.contains("BATTLELOG_WEBHOOKS_NATS_URL: nats://webhooks:${WEBHOOKS_NATS_PASSWORD:?}@nats:4222"));
    assert!(compose.contains("WEBHOOKS_NATS_PASSWORD: ${WEBHOOKS_NATS_PASSWORD:?"), "the nats service gets it");
    let users = deploy_file("nats/users.conf");
    assert!(users.contains("user: webhooks, password: $WEBHOOKS_NATS_PASSWORD"));
    assert!(deploy_file("Dockerfile").contains("--bin battlelog-webhooks"));
}
