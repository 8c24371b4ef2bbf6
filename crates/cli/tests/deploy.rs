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
    assert_eq!(loaded.listen.port(), 50053);
    assert_eq!(loaded.nats_url.as_deref(), Some("nats://nats:4222"));
    assert_eq!(loaded.nats_stream, "BATTLELOG_EVENTS");
    assert!(loaded.server_tls.enabled(), "TLS only");
    assert!(loaded.server_tls.tls_client_ca.is_some(), "mutual: only services call the journal");
    assert_eq!(loaded.auth_keys.len(), 1, "tokens are checked against the operator's public key");
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
    assert!(!loaded.auth_keys.is_empty() && loaded.token_file.is_some(), "checks tokens and presents its own");
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
    assert!(!loaded.auth_keys.is_empty() && loaded.token_file.is_some(), "checks tokens and presents its own");
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
fn kubernetes_gives_the_journal_and_the_resolver_their_nats_logins() {
    let manifest = deploy_file("kubernetes/battlelog.yaml");
    let nats_conf = deploy_file("nats/nats.conf");
    for (service, key) in [("journal", "JOURNAL_NATS_PASSWORD"), ("resolver", "RESOLVER_NATS_PASSWORD")] {
        let command = format!(r#"command: ["battlelog-{service}""#);
        let section = manifest.split("\n---").find(|doc| doc.contains(&command)).expect("the service's workload");
        let secret = format!("secretKeyRef: {{ name: battlelog-nats, key: {key} }}");
        let variable = format!("name: BATTLELOG_{}_NATS_URL", service.to_uppercase());
        let url = format!("value: nats://{service}:$(NATS_PASSWORD)@nats:4222");
        for wanted in ["name: NATS_PASSWORD", &secret, &variable, &url] {
            assert!(section.contains(wanted), "{service}: no {wanted:?} in\n{section}");
        }
        let position = |text: &str| section.find(text).expect("present");
        assert!(position("name: NATS_PASSWORD") < position(&variable), "{service}: defined before it is expanded");
        assert!(nats_conf.contains(&format!("user: {service}, password: ${key}")), "nats.conf's {service} user");
        let expanded = battlelog_runtime::nats_url::NatsUrl::new(&format!("nats://{service}:s3cret@nats:4222"));
        assert_eq!((expanded.user(), expanded.address()), (Some(service), "nats://nats:4222"));
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
