//! What the resolver's benchmarks `neighbours` and `strangers` run on: the
//! journal and the roller served on loopback, and the action they repeat.

use std::path::Path;

use battlelog_journal::{Journal, JournalOptions};
use battlelog_proto::battle::json_to_struct;
use battlelog_proto::v1::ActRequest;
use battlelog_roller::server::journal_client_with_tls;
use battlelog_roller::{MasterKey, RollerService};
use battlelog_runtime::edge::GrpcLimits;
use battlelog_runtime::serve::GrpcServer;
use battlelog_test_support::TestAuth;
use serde_json::json;
use tokio::net::TcpListener;

/// A loopback listener and its URL.
pub async fn listen() -> (TcpListener, String) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    (listener, url)
}

/// The journal (in `dir`) and the roller, served with `limits`: the journal
/// (to shut it down) and both URLs.
pub async fn journal_and_roller(dir: &Path, auth: &TestAuth, limits: &GrpcLimits) -> (Journal, String, String) {
    let token = auth.service_token();
    let journal = Journal::open(JournalOptions::new(dir)).await.expect("journal");
    let (listener, journal_url) = listen().await;
    tokio::spawn(battlelog_journal::serve(
        journal.clone(),
        listener,
        GrpcServer::new("journal", auth.verifier()).limits(limits.clone()),
        std::future::pending(),
    ));
    let key = MasterKey::from_hex(&"42".repeat(32)).expect("key");
    let roller = RollerService::new(journal_client_with_tls(&journal_url, None, &token).expect("client"), key);
    let (listener, roller_url) = listen().await;
    tokio::spawn(battlelog_roller::serve(
        roller,
        listener,
        GrpcServer::new("roller", auth.verifier()).limits(limits.clone()),
        std::future::pending(),
    ));
    (journal, journal_url, roller_url)
}

/// A pbta move by `ash`, the action every bench battle repeats.
pub fn act(battle_id: &str, request_id: String) -> ActRequest {
    let action = json!({"type": "move", "actor": "ash", "trait": "cool", "stakes": "bench"});
    ActRequest {
        battle_id: battle_id.into(),
        action: Some(json_to_struct(action.as_object().expect("an object"))),
        request_id,
        ..Default::default()
    }
}
