//! The chain these tests share: the roller and the resolver served on
//! loopback by their libraries' own servers (tokens checked, no TLS), in
//! front of a journal each test serves as it needs (plain, or with a hook
//! that counts its calls).

use battlelog_proto::v1::journal_client::JournalClient;
use battlelog_resolver::ResolverService;
use battlelog_roller::{MasterKey, RollerService};
use battlelog_runtime::serve::GrpcServer;
use battlelog_test_support::{TestAuth, authed_channel, loopback_listener};

/// Where the chain's services listen.
#[allow(dead_code, reason = "each test binary reads the URLs it needs")]
#[derive(Debug)]
pub struct Chain {
    pub roller_url: String,
    pub resolver_url: String,
}

/// Serves `journal` (already open) with the journal's own server; its URL.
#[allow(dead_code, reason = "not every test binary serves its journal this way")]
pub async fn serve_journal(journal: battlelog_journal::Journal) -> String {
    let (listener, journal_url) = loopback_listener().await;
    tokio::spawn(battlelog_journal::serve(
        journal,
        listener,
        GrpcServer::new("journal", TestAuth::shared().verifier()),
        std::future::pending(),
    ));
    journal_url
}

/// The roller (its master key `master_key_hex`) and the resolver, as
/// `configure` leaves it, in front of the journal at `journal_url`.
pub async fn serve_chain(
    journal_url: &str,
    master_key_hex: &str,
    configure: impl FnOnce(ResolverService) -> ResolverService,
) -> Chain {
    let auth = TestAuth::shared();
    let token = auth.service_token();
    let roller = RollerService::new(
        JournalClient::new(authed_channel(journal_url, &token)),
        MasterKey::from_hex(master_key_hex).expect("key"),
    );
    let (listener, roller_url) = loopback_listener().await;
    tokio::spawn(battlelog_roller::serve(
        roller,
        listener,
        GrpcServer::new("roller", auth.verifier()),
        std::future::pending(),
    ));
    let service = battlelog_resolver::server::service_for(journal_url, &roller_url, None, &token).expect("service");
    let (listener, resolver_url) = loopback_listener().await;
    tokio::spawn(battlelog_resolver::serve(
        configure(service),
        listener,
        GrpcServer::new("resolver", auth.verifier()),
        std::future::pending(),
    ));
    Chain { roller_url, resolver_url }
}
