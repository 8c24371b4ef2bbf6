//! The production configs in `deploy/config` load through each service's
//! own loader, with the values an operator reads in them.

use std::path::PathBuf;

fn config(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../deploy/config").join(name)
}

#[test]
fn the_journal_config_loads() {
    let overrides = battlelog_journal::config::Overrides::default();
    let loaded = battlelog_journal::Config::load(Some(&config("journal.toml")), &overrides).expect("journal.toml");
    assert_eq!(loaded.listen.port(), 50053);
    assert_eq!(loaded.nats_url.as_deref(), Some("nats://nats:4222"));
    assert_eq!(loaded.nats_stream, "BATTLELOG_EVENTS");
    assert!(loaded.server_tls.enabled(), "TLS only");
    assert!(loaded.server_tls.tls_client_ca.is_some(), "mutual: only services call the journal");
    assert_eq!(loaded.auth_keys.len(), 1, "tokens are checked against the operator's public key");
}

#[test]
fn the_roller_config_loads_and_wants_a_real_key() {
    let overrides = battlelog_roller::config::Overrides::default();
    let loaded = battlelog_roller::Config::load(Some(&config("roller.toml")), &overrides).expect("roller.toml");
    assert_eq!(loaded.journal_url, "https://journal:50053");
    assert!(loaded.server_tls.enabled() && loaded.server_tls.tls_client_ca.is_some(), "mutual TLS");
    assert!(loaded.client_tls.tls_ca.is_some() && loaded.client_tls.tls_client_cert.is_some());
    assert!(!loaded.dev, "production must not generate keys");
    assert!(loaded.master_key_file.is_some());
    assert!(!loaded.auth_keys.is_empty() && loaded.token_file.is_some(), "checks tokens and presents its own");
}

#[test]
fn the_resolver_config_loads() {
    let overrides = battlelog_resolver::config::Overrides::default();
    let loaded = battlelog_resolver::Config::load(Some(&config("resolver.toml")), &overrides).expect("resolver.toml");
    assert_eq!(loaded.roller_url, "https://roller:50052");
    assert!(loaded.server_tls.enabled(), "TLS for forums");
    assert!(loaded.server_tls.tls_client_ca.is_none(), "forums present tokens, not certificates");
    assert!(loaded.client_tls.tls_ca.is_some() && loaded.client_tls.tls_client_key.is_some(), "mutual to peers");
    assert_eq!(loaded.nats_url.as_deref(), Some("nats://nats:4222"));
    assert!(!loaded.auth_keys.is_empty() && loaded.token_file.is_some(), "checks tokens and presents its own");
}
