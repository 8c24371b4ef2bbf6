//! The three-node JetStream cluster the journal's replicated backend is
//! tested on (`battlelog_test_support::NatsCluster`) does what it claims,
//! against three real `nats-server`s: a stream with three replicas on file
//! storage keeps taking acknowledged writes when its leader is killed (a new
//! leader, elsewhere) and while a follower is frozen (SIGSTOP, as a
//! partition looks); a killed node restarted on its ports and store rejoins
//! and catches up; and every acknowledged message is in the stream exactly
//! once at the end. And the shipped `deploy/nats/cluster/` configs form
//! such a cluster, syncing every write.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use async_nats::jetstream::{self, Context, message::PublishMessage, stream};
use battlelog_test_support::cluster::{CLUSTER_NODES, free_ports};
use battlelog_test_support::{NatsCluster, poll_until};

/// Deadline for each wait: an election takes a few seconds (JetStream's
/// Raft election timeout is several seconds), a catch-up less.
const WAIT: Duration = Duration::from_secs(20);

/// How long one publish waits for its acknowledgement before it is sent
/// again (with the same message id, so a write that did land is not
/// stored twice). Short, so that a publish lost with a killed node is
/// retried soon; long enough for an fsync on a busy disk.
const ACK_TIMEOUT: Duration = Duration::from_secs(2);

const STREAM: &str = "CLUSTER_TEST";
const SUBJECT: &str = "cluster.test.writes";

/// Messages published in each phase.
const BATCH: usize = 20;

/// What the stream acknowledged: message id → sequence.
type Acked = BTreeMap<String, u64>;

/// A JetStream context on `urls` with the stream `STREAM` created on it,
/// file-stored with a replica on every node.
async fn replicated_stream(urls: &[String]) -> Context {
    let js = jetstream(urls).await;
    js.create_stream(stream::Config {
        name: STREAM.to_owned(),
        subjects: vec![SUBJECT.to_owned()],
        storage: stream::StorageType::File,
        num_replicas: CLUSTER_NODES,
        ..Default::default()
    })
    .await
    .expect("create a stream with three replicas");
    js
}

/// A JetStream context on a client that knows `urls`.
async fn jetstream(urls: &[String]) -> Context {
    let client = async_nats::connect(urls).await.expect("connect to the cluster");
    let mut context = jetstream::new(client);
    context.set_timeout(ACK_TIMEOUT);
    context
}

/// Publishes `id` until the stream acknowledges it (or panics after `WAIT`),
/// recording the acknowledged sequence.
async fn publish_acked(js: &Context, id: String, acked: &mut Acked) {
    let sequence = poll_until(&format!("an acknowledgement of {id}"), WAIT, || {
        let id = id.clone();
        async move {
            let publish = PublishMessage::build().payload(id.clone().into()).message_id(&id);
            let ack = js.send_publish(SUBJECT, publish).await.ok()?.await.ok()?;
            Some(ack.sequence)
        }
    })
    .await;
    acked.insert(id, sequence);
}

/// Publishes `BATCH` messages `<phase>-<n>`, each until acknowledged.
async fn publish_batch(js: &Context, phase: &str, acked: &mut Acked) {
    for n in 0..BATCH {
        publish_acked(js, format!("{phase}-{n}"), acked).await;
    }
}

/// Whether a NATS client can connect to `url` within half a second: a
/// killed node refuses, a stopped one accepts the TCP connection (the
/// kernel does) but never sends its INFO.
async fn answers(url: &str) -> bool {
    let connect = async_nats::ConnectOptions::new().connection_timeout(Duration::from_millis(500)).connect(url);
    matches!(tokio::time::timeout(Duration::from_secs(2), connect).await, Ok(Ok(_)))
}

async fn leader(cluster: &NatsCluster) -> usize {
    poll_until("a stream leader the cluster agrees on", WAIT, || cluster.stream_leader(STREAM)).await
}

async fn wait_current_replicas(cluster: &NatsCluster, count: usize) {
    poll_until(&format!("{count} current replicas"), WAIT, || async move {
        (cluster.stream_current_replicas(STREAM).await == Some(count)).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_three_replica_stream_survives_a_killed_leader_and_a_stopped_follower() {
    let mut cluster = NatsCluster::start("survives").await;

    // Every node is its own server, reached at its own client URL, and
    // fsyncs every write (what deploy/nats/cluster ships).
    for node in 0..CLUSTER_NODES {
        let client = async_nats::connect(cluster.client_url(node)).await.expect("connect to one node");
        assert_eq!(client.server_info().server_name, cluster.node_name(node));
        let jsz = cluster.monitor(node, "/jsz").await.expect("the node's /jsz");
        assert_eq!(jsz["config"]["sync_always"], true, "{} must sync every write", cluster.node_name(node));
        assert_eq!(jsz["meta_cluster"]["cluster_size"], CLUSTER_NODES);
    }
    assert_eq!(cluster.client_urls_joined(), cluster.client_urls().join(","));

    let js = replicated_stream(&cluster.client_urls()).await;
    let mut acked = Acked::new();
    publish_batch(&js, "before", &mut acked).await;
    let first_leader = leader(&cluster).await;
    wait_current_replicas(&cluster, CLUSTER_NODES).await;

    // The leader dies without a word: appends resume under a new leader on
    // another node (publish_batch retries each until acknowledged, within
    // WAIT).
    cluster.kill(first_leader);
    assert!(!answers(&cluster.client_url(first_leader)).await, "a killed node is gone");
    publish_batch(&js, "leader-killed", &mut acked).await;
    let second_leader = leader(&cluster).await;
    assert_ne!(second_leader, first_leader, "the killed node cannot lead");
    // The new leader counts the killed node out.
    wait_current_replicas(&cluster, CLUSTER_NODES - 1).await;

    // Restarted on its ports and store, it rejoins: a replica of the stream
    // again, current, holding every acknowledged message.
    cluster.restart(first_leader).await;
    wait_current_replicas(&cluster, CLUSTER_NODES).await;
    let last_acked = *acked.values().max().expect("acknowledged messages");
    poll_until("the restarted node caught up", WAIT, || async {
        let detail = cluster.stream_detail(first_leader, STREAM).await?;
        (detail["state"]["last_seq"] == last_acked).then_some(())
    })
    .await;
    let again = async_nats::connect(cluster.client_url(first_leader)).await.expect("the restarted node's URL");
    assert_eq!(again.server_info().server_name, cluster.node_name(first_leader), "same port, same node");

    // A follower frozen (SIGSTOP): the leader and the other follower are a
    // quorum and keep acknowledging, every publish at its first attempt.
    // The client talks to the leader, so that it is not waiting on the
    // frozen node itself.
    let leader_now = leader(&cluster).await;
    let frozen = (0..CLUSTER_NODES).find(|&n| n != leader_now).expect("a follower");
    let js_leader = jetstream(&[cluster.client_url(leader_now)]).await;
    cluster.stop(frozen).await;
    assert!(!answers(&cluster.client_url(frozen)).await, "a stopped node answers nothing");
    for n in 0..BATCH {
        let id = format!("follower-stopped-{n}");
        let publish = PublishMessage::build().payload(id.clone().into()).message_id(&id);
        let ack =
            js_leader.send_publish(SUBJECT, publish).await.expect("publish").await.unwrap_or_else(|e| {
                panic!("{id} not acknowledged within {ACK_TIMEOUT:?} with one follower stopped: {e}")
            });
        acked.insert(id, ack.sequence);
    }
    assert_eq!(cluster.stream_leader(STREAM).await, Some(leader_now), "the leader kept its place");
    cluster.cont(frozen);
    assert!(answers(&cluster.client_url(frozen)).await, "a continued node answers again");
    wait_current_replicas(&cluster, CLUSTER_NODES).await;

    // No acknowledged message lost, none stored twice.
    assert_eq!(acked.len(), 3 * BATCH, "three phases of {BATCH}");
    let mut stream = js.get_stream(STREAM).await.expect("the stream");
    let state = stream.info().await.expect("the stream's info").state.clone();
    assert_eq!(state.messages, acked.len() as u64, "exactly the acknowledged messages");
    let mut stored = BTreeMap::new();
    for sequence in state.first_sequence..=state.last_sequence {
        let message = stream.get_raw_message(sequence).await.expect("a stored message");
        let id = String::from_utf8(message.payload.to_vec()).expect("a UTF-8 id");
        assert!(stored.insert(id.clone(), sequence).is_none(), "{id} stored twice");
    }
    assert_eq!(stored, acked, "every acknowledged message, at its acknowledged sequence");
}

/// The loopback ports `deploy/nats/cluster/node-{a,b,c}.conf` use: client,
/// route and monitoring, node by node.
const SHIPPED_PORTS: [[u16; 3]; CLUSTER_NODES] = [[4222, 6222, 8222], [4223, 6223, 8223], [4224, 6224, 8224]];

/// The shipped configs with every port moved to a free one (the shipped
/// ones may be taken where the tests run), and the new ports.
fn shipped_configs() -> ([String; CLUSTER_NODES], Vec<u16>) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../deploy/nats/cluster");
    let ports = free_ports(SHIPPED_PORTS.len() * 3);
    let moves: Vec<(u16, u16)> = SHIPPED_PORTS.iter().flatten().copied().zip(ports.iter().copied()).collect();
    let configs = ["a", "b", "c"].map(|node| {
        let path = dir.join(format!("node-{node}.conf"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        move_ports(&text, &moves)
    });
    (configs, ports)
}

/// `text` with every `127.0.0.1:<port>` whose port is a `from` of `moves`
/// given its `to`, in one pass: a moved port is never moved again (a new
/// port such as 62231 starts with a shipped one, 6223).
fn move_ports(text: &str, moves: &[(u16, u16)]) -> String {
    const HOST: &str = "127.0.0.1:";
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(HOST) {
        let (before, after) = rest.split_at(at + HOST.len());
        out.push_str(before);
        let digits = after.find(|c: char| !c.is_ascii_digit()).unwrap_or(after.len());
        let (port, tail) = after.split_at(digits);
        match moves.iter().find(|(from, _)| from.to_string() == port) {
            Some((_, to)) => out.push_str(&to.to_string()),
            None => out.push_str(port),
        }
        rest = tail;
    }
    out.push_str(rest);
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shipped_cluster_configs_form_a_cluster_that_syncs_every_write() {
    // Fresh ports for each start attempt; the last attempt's are the ones
    // the cluster runs on. Returns once the three agree on a meta leader of
    // a three-node group.
    let mut ports = Vec::new();
    let cluster = NatsCluster::start_with_configs("shipped", || {
        let (configs, picked) = shipped_configs();
        ports = picked;
        configs
    })
    .await;
    for node in 0..CLUSTER_NODES {
        let name = cluster.node_name(node).to_owned();
        assert_eq!(name, format!("node-{}", ["a", "b", "c"][node]));
        // The node runs the shipped file with its ports moved, nothing else.
        assert_eq!(cluster.client_url(node), format!("nats://127.0.0.1:{}", ports[node * 3]));
        assert_eq!(cluster.monitor_url(node), format!("http://127.0.0.1:{}", ports[node * 3 + 2]));
        let jsz = cluster.monitor(node, "/jsz").await.expect("the node's /jsz");
        assert_eq!(jsz["config"]["sync_always"], true, "{name} must sync every write");
        assert_eq!(jsz["config"]["store_dir"], format!("data/nats-cluster/{name}/jetstream"), "{name}'s store");
        assert_eq!(jsz["meta_cluster"]["name"], "battlelog");
        assert_eq!(jsz["meta_cluster"]["cluster_size"], CLUSTER_NODES);
    }

    let js = replicated_stream(&cluster.client_urls()).await;
    let mut acked = Acked::new();
    publish_acked(&js, "shipped".to_owned(), &mut acked).await;
    wait_current_replicas(&cluster, CLUSTER_NODES).await;
}
