//! Protocol v2's beacon over HTTP (docs/protocol.md §6.1, issue 40): the
//! real `battlelog beacon` (the development beacon) asked by the roller's
//! [`BeaconClient`], as the roller will ask quicknet's relays.
//!
//! - A round comes only when it is due: the beacon answers 404 before, and
//!   the client waits for it, then verifies it under the chain it pinned
//!   itself (computed here from the label, never read from the beacon).
//! - The pin holds: a relay serving another chain is refused by name, a
//!   relay serving a signature that does not verify is never used (the
//!   next relay's round is), and with no relay answering the client gives
//!   up at its deadline, saying which round and why.

use std::net::SocketAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use battlelog_roller::beacon::{BeaconClient, BeaconFailure};
use battlelog_test_support::{ServiceProcess, cli_binary, http_get, temp_dir};
use beacon::ChainInfo;
use beacon::dev::DevSigner;
use tokio::time::Instant;

const PERIOD: u64 = 1;

fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).expect("after 1970").as_secs()
}

/// A running `battlelog beacon` and the chain it must be, computed here.
async fn start_beacon(label: &str, genesis: u64, log: &std::path::Path) -> (ServiceProcess, ChainInfo) {
    let args = ["beacon", "--period", &PERIOD.to_string(), "--genesis-time", &genesis.to_string(), "--label", label]
        .map(str::to_owned);
    let process = ServiceProcess::start_http(&cli_binary(), &args, &[], log).await;
    (process, DevSigner::from_label(label, PERIOD, genesis).chain().clone())
}

#[tokio::test]
async fn a_round_comes_when_it_is_due_and_verifies_under_the_pinned_chain() {
    let dir = temp_dir("beacon-due");
    let genesis = unix_now();
    let (beacon, chain) = start_beacon("beacon test: due", genesis, &dir.path().join("beacon.log")).await;
    let relay = format!("http://{}", beacon.addr());

    // The beacon's own info is the chain computed here.
    let (status, body) = http_get(&format!("{relay}/{}/info", chain.hash), &[]).await;
    assert_eq!(status, 200, "{body}");
    let info: serde_json::Value = serde_json::from_str(&body).expect("JSON info");
    assert_eq!(
        (info["public_key"].as_str(), info["schemeID"].as_str()),
        (Some(chain.public_key.as_str()), Some("bls-unchained-g1-rfc9380"))
    );

    // Invariant 9 at the beacon: a round not yet due is not served.
    let later = chain.round_after(unix_now() + 30).expect("a period");
    let (status, body) = http_get(&format!("{relay}/{}/public/{later}", chain.hash), &[]).await;
    assert_eq!(status, 404, "{body}");
    assert!(body.contains(&format!("round {later} is not published yet")), "{body}");

    let client = BeaconClient::new(chain.clone(), &[relay]).expect("a client");
    client.check_relays().await.expect("the relay serves the pinned chain");
    let round = chain.round_after(unix_now()).expect("a period");
    let verified = client.round(round, Instant::now() + Duration::from_secs(20)).await.expect("the round comes");
    assert!(
        unix_now() >= chain.published_at(round).expect("round ≥ 1"),
        "round {round} was handed out before it was due"
    );
    assert_eq!(verified.round, round);
    assert_eq!(Ok(verified.randomness), chain.verify(round, &verified.signature));
    assert_eq!(verified.signature, DevSigner::from_label("beacon test: due", PERIOD, genesis).sign(round));
    assert!(beacon.terminate().await);
}

#[tokio::test]
async fn a_relay_of_another_chain_is_refused_and_a_lying_one_is_never_used() {
    let dir = temp_dir("beacon-pin");
    let genesis = unix_now().saturating_sub(100);
    let (honest, chain) = start_beacon("beacon test: honest", genesis, &dir.path().join("honest.log")).await;
    let (impostor, _) = start_beacon("beacon test: impostor", genesis, &dir.path().join("impostor.log")).await;
    let honest_url = format!("http://{}", honest.addr());
    let impostor_url = format!("http://{}", impostor.addr());

    // The impostor's info is another chain: named, with the field.
    let checked = BeaconClient::new(chain.clone(), &[honest_url.clone(), impostor_url.clone()])
        .expect("a client")
        .check_relays()
        .await;
    match checked {
        Err(BeaconFailure::OtherChain { relay, field, .. }) => {
            assert!(impostor_url.starts_with(relay.trim_end_matches('/')), "{relay}");
            assert_eq!(field, "hash");
        }
        other => panic!("the impostor must be refused, got {other:?}"),
    }

    // A relay that answers the pinned chain's round with another round's
    // (valid) signature: skipped, and the honest relay's round is used.
    let round = chain.round_after(unix_now().saturating_sub(10)).expect("a period");
    let signer = DevSigner::from_label("beacon test: honest", PERIOD, genesis);
    let liar = lying_relay(round, signer.sign(round - 1)).await;
    let client = BeaconClient::new(chain.clone(), &[format!("http://{liar}"), honest_url]).expect("a client");
    let verified =
        client.round(round, Instant::now() + Duration::from_secs(20)).await.expect("the honest relay answers");
    assert_eq!(verified.signature, signer.sign(round));
    assert!(honest.terminate().await && impostor.terminate().await);
}

#[tokio::test]
async fn with_no_relay_answering_the_client_gives_up_at_its_deadline_naming_the_round() {
    let genesis = unix_now().saturating_sub(100);
    let chain = DevSigner::from_label("beacon test: silent", PERIOD, genesis).chain().clone();
    // A port nobody listens on: bound, then closed.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("a port").local_addr().expect("an address");
    let client = BeaconClient::new(chain.clone(), &[format!("http://{closed}")]).expect("a client");
    let round = chain.round_after(unix_now().saturating_sub(10)).expect("a period");
    match client.round(round, Instant::now() + Duration::from_secs(1)).await {
        Err(BeaconFailure::Deadline { round: failed, last, .. }) => {
            assert_eq!(failed, round);
            assert!(last.contains(&closed.to_string()), "{last}");
        }
        other => panic!("no relay answers: the deadline must pass, got {other:?}"),
    }
    assert!(matches!(BeaconClient::new(chain, &[]), Err(BeaconFailure::NoRelay)));
}

/// `--period` is a limit of the command: 1 to 3600 seconds. Either edge
/// serves a chain of that period; one past either is refused before
/// anything starts, with a non-zero exit and one line naming the flag and
/// its range.
#[tokio::test]
async fn the_period_is_served_at_its_edges_and_refused_past_them() {
    let dir = temp_dir("beacon-period");
    let genesis = unix_now();
    for period in [1u64, 3600] {
        let (period_text, genesis_text) = (period.to_string(), genesis.to_string());
        let args =
            ["beacon", "--period", &period_text, "--genesis-time", &genesis_text, "--label", "beacon test: period"]
                .map(str::to_owned);
        let log = dir.path().join(format!("beacon-{period}.log"));
        let beacon = ServiceProcess::start_http(&cli_binary(), &args, &[], &log).await;
        let chain = DevSigner::from_label("beacon test: period", period, genesis).chain().clone();
        let (status, body) = http_get(&format!("http://{}/{}/info", beacon.addr(), chain.hash), &[]).await;
        assert_eq!(status, 200, "period {period}: {body}");
        let info: serde_json::Value = serde_json::from_str(&body).expect("JSON info");
        assert_eq!(info["period"].as_u64(), Some(period), "{body}");
        assert!(beacon.terminate().await);
    }
    for period in ["0", "3601"] {
        let (code, stdout, stderr) = battlelog_test_support::stack::cli(&["beacon", "--period", period]);
        assert_eq!(code, Some(2), "--period {period}: {stdout}{stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr:?}");
        assert!(stderr.contains("--period") && stderr.contains("1..=3600"), "{stderr}");
        assert!(stdout.is_empty(), "nothing served: {stdout}");
    }
}

/// An HTTP relay that answers every round request with `round` and
/// `signature`, whatever was asked: a relay that lies.
async fn lying_relay(round: u64, signature: String) -> SocketAddr {
    use http_body_util::Full;
    use hyper::body::Bytes;
    use hyper::server::conn::http1;
    use hyper::service::service_fn;
    use hyper_util::rt::TokioIo;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let address = listener.local_addr().expect("an address");
    let body = serde_json::json!({ "round": round, "signature": signature }).to_string();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let body = body.clone();
            tokio::spawn(async move {
                let answer = service_fn(move |_request| {
                    let body = body.clone();
                    async move { Ok::<_, std::convert::Infallible>(hyper::Response::new(Full::new(Bytes::from(body)))) }
                });
                let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), answer).await;
            });
        }
    });
    address
}
