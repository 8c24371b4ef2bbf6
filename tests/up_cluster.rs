//! An operator's first day with a cluster (issue 37), through the real
//! binaries: `battlelog up` on a real three-node NATS cluster given as a
//! list of URLs, with the journal's stream replicated on all three nodes,
//! and every service and command following that list — the resolver's
//! feed, the webhooks' consumer, `battlelog watch`; a list with a bad
//! entry refused by each of them, naming the key and the entry; `up`'s
//! own flags for the cluster (`--journal-replicas`, `--nats-port`) checked
//! at their edges.

use std::time::Duration;

use battlelog_test_support::stack;
use battlelog_test_support::{NatsCluster, TestAuth, poll_until, temp_dir};
use serde_json::Value;

/// The journal's JetStream stream (`--journal-backend jetstream`).
const STREAM: &str = "BATTLELOG_JOURNAL";

/// How long the stack may take to reach the cluster and place a stream.
const WAIT: Duration = Duration::from_secs(30);

/// A list whose second entry is no NATS address (its port is not a number).
const BAD_ENTRY: &str = "nats://127.0.0.1:notaport";

fn bad_list() -> String {
    format!("nats://127.0.0.1:4222,{BAD_ENTRY}")
}

/// The connections node `index` serves, with their subscriptions.
async fn connections(cluster: &NatsCluster, index: usize) -> Vec<Value> {
    let connz = cluster.monitor(index, "/connz?subs=1").await.unwrap_or_default();
    connz["connections"].as_array().cloned().unwrap_or_default()
}

/// Whether a client named `name` is connected to some node with a
/// subscription on `subject`.
async fn subscribed(cluster: &NatsCluster, name: &str, subject: &str) -> bool {
    for index in 0..battlelog_test_support::cluster::CLUSTER_NODES {
        for connection in connections(cluster, index).await {
            let subjects = connection["subscriptions_list"].as_array().cloned().unwrap_or_default();
            if connection["name"] == name && subjects.iter().any(|s| s == subject) {
                return true;
            }
        }
    }
    false
}

/// `battlelog up --journal-backend jetstream --journal-replicas 3
/// --nats-url a,b,c` on a real three-node cluster: the banner says what was
/// made (the stream, its three replicas, the nodes they are on), the stream
/// has three current replicas, the resolver follows the journal's log and
/// the webhooks consume it through the same list, and `battlelog watch`
/// takes the list too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn up_on_a_three_node_cluster_replicates_the_journal_and_every_service_follows_the_list() {
    let cluster = NatsCluster::start("up-cluster").await;
    let urls = cluster.client_urls_joined();
    let dir = temp_dir("up-cluster");
    let data = dir.path().display().to_string();
    let up = stack::up(
        dir.path(),
        &[
            "--journal-backend",
            "jetstream",
            "--journal-replicas",
            "3",
            "--nats-url",
            &urls,
            // Nothing listens there: this test looks at the consumer only.
            "--webhook",
            "http://127.0.0.1:9/hook",
            "--webhooks-listen",
            "127.0.0.1:0",
        ],
    );
    let banner = up.banner.join("\n");
    let events = up.banner.iter().find(|l| l.trim_start().starts_with("events")).expect("an events line");
    assert_eq!(events.split_whitespace().nth(1), Some(urls.as_str()), "the list, as given: {banner}");
    let stream = up.banner.iter().find(|l| l.trim_start().starts_with("stream")).expect("a stream line");
    assert!(stream.contains(STREAM) && stream.contains("3 replicas"), "{stream}");
    for node in 0..battlelog_test_support::cluster::CLUSTER_NODES {
        assert!(stream.contains(cluster.node_name(node)), "every node named: {stream}");
    }
    poll_until("three current replicas of the journal's stream", WAIT, || async {
        (cluster.stream_current_replicas(STREAM).await == Some(3)).then_some(())
    })
    .await;

    // The resolver keeps its battles warm from the journal's log on some
    // node of the list.
    poll_until("the resolver following battlelog.journal.> on the cluster", WAIT, || async {
        subscribed(&cluster, "battlelog-resolver", "battlelog.journal.>").await.then_some(())
    })
    .await;
    // The webhooks' durable consumer on the journal's stream.
    let client = async_nats::connect(cluster.client_urls().as_slice()).await.expect("connect to the cluster");
    let js = async_nats::jetstream::new(client);
    poll_until("the webhooks' durable consumer on the journal's stream", WAIT, || {
        let js = js.clone();
        async move {
            let stream = js.get_stream(STREAM).await.ok()?;
            let consumer = stream.consumer_info("battlelog-webhooks").await.ok()?;
            Some(consumer.name.clone())
        }
    })
    .await;
    let stderr = std::fs::read_to_string(dir.path().join("up.stderr")).unwrap_or_default();
    assert!(!stderr.contains("invalid"), "nothing in the list is refused:\n{stderr}");

    // `battlelog watch` on the same list subscribes (it does not fall back
    // to the journal).
    let (_watch, first) =
        battlelog_test_support::watch::WatchProcess::start(&["--nats-url", &urls, "--data-dir", &data]).await;
    assert!(first.starts_with("watching") && first.contains(&urls), "{first}");
}

/// A service binary given `env`: its stderr, once it has exited, which it
/// must do at once (no readiness line, a failure status).
async fn refused(binary: &str, args: &[&str], env: &[(String, String)]) -> String {
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    battlelog_test_support::refused_start(binary, &args, env).await
}

/// One parser reads every NATS URL list: a list with an entry that is no
/// NATS address stops the journal, the resolver, the webhooks service,
/// `up`, `watch` and `journal copy`, each naming its key or flag and the
/// bad entry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_entry_in_a_nats_url_list_is_refused_everywhere_by_key_and_entry() {
    let dir = temp_dir("bad-nats-list");
    let list = bad_list();
    for service in ["journal", "resolver"] {
        let mut env = TestAuth::shared().env(service);
        let upper = service.to_ascii_uppercase();
        env.push((format!("BATTLELOG_{upper}_NATS_URL"), list.clone()));
        env.push((format!("BATTLELOG_{upper}_LISTEN"), "127.0.0.1:0".into()));
        if service == "journal" {
            env.push(("BATTLELOG_JOURNAL_DATA_DIR".into(), dir.path().join("journal").display().to_string()));
        }
        let stderr = refused(&format!("battlelog-{service}"), &[], &env).await;
        assert!(stderr.contains("nats_url") && stderr.contains(BAD_ENTRY), "battlelog-{service}: {stderr}");
    }
    let config = dir.path().join("webhooks.toml");
    std::fs::write(
        &config,
        "[tenants.forum-a]\nurl = \"http://127.0.0.1:9/\"\nsecret = \"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"\n",
    )
    .expect("write the webhooks config");
    let mut env = TestAuth::shared().env("webhooks");
    env.push(("BATTLELOG_WEBHOOKS_NATS_URL".into(), list.clone()));
    env.push(("BATTLELOG_WEBHOOKS_DATA_DIR".into(), dir.path().join("webhooks").display().to_string()));
    let config = config.display().to_string();
    let stderr = refused("battlelog-webhooks", &["--config", &config, "--listen", "127.0.0.1:0"], &env).await;
    assert!(stderr.contains("nats_url") && stderr.contains(BAD_ENTRY), "battlelog-webhooks: {stderr}");

    // The commands: one line on stderr, exit status 2.
    let data = dir.path().join("up").display().to_string();
    let to = format!("jetstream:{list}");
    let commands: [(&str, Vec<&str>); 3] = [
        ("--nats-url", vec!["up", "--data-dir", &data, "--nats-url", &list, "--web-listen", "127.0.0.1:0"]),
        ("--nats-url", vec!["watch", "--nats-url", &list, "--data-dir", &data]),
        ("--to", vec!["journal", "copy", "--from", "sled:nowhere", "--to", &to]),
    ];
    for (flag, args) in commands {
        let (code, stdout, stderr) = stack::cli(&args);
        assert_ne!(code, Some(0), "{args:?}: {stdout}");
        assert!(stderr.contains(flag) && stderr.contains(BAD_ENTRY), "{args:?}: {stderr}");
    }
}

/// `up`'s cluster flags at their edges, each refusal one line naming the
/// flag: `--journal-replicas` takes 1..=5 (JetStream's range), only for the
/// JetStream journal, and more than 1 only on a cluster given by
/// `--nats-url`; `--nats-port` only for the nats-server `up` starts.
#[test]
fn up_refuses_cluster_flags_it_cannot_honour_in_one_line() {
    let dir = temp_dir("up-cluster-flags");
    let data = dir.path().display().to_string();
    let listen = ["--resolver-listen", "127.0.0.1:0", "--roller-listen", "127.0.0.1:0"];
    let more = ["--journal-listen", "127.0.0.1:0", "--web-listen", "127.0.0.1:0"];
    let refusals: [(&[&str], &[&str]); 6] = [
        (&["--journal-backend", "jetstream", "--journal-replicas", "0"], &["--journal-replicas", "1..=5"]),
        (&["--journal-backend", "jetstream", "--journal-replicas", "6"], &["--journal-replicas", "1..=5"]),
        (&["--journal-backend", "jetstream", "--journal-replicas", "3"], &["--journal-replicas", "--nats-url"]),
        (&["--journal-replicas", "3", "--nats-url", "nats://127.0.0.1:9"], &["--journal-replicas", "jetstream"]),
        (&["--nats-url", "nats://127.0.0.1:9", "--nats-port", "4333"], &["--nats-port", "--nats-url"]),
        (&["--no-nats", "--nats-port", "4333"], &["--nats-port", "--no-nats"]),
    ];
    for (flags, named) in refusals {
        let args = [&["up", "--data-dir", &data][..], &listen, &more, flags].concat();
        let (code, stdout, stderr) = stack::cli(&args);
        assert_eq!(code, Some(2), "{flags:?}: {stdout}{stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "one line for {flags:?}: {stderr:?}");
        for word in named {
            assert!(stderr.contains(word), "{flags:?} names {word}: {stderr}");
        }
    }
}

/// The port in `up`'s events line (`nats://127.0.0.1:<port> (…)`).
fn events_port(up: &stack::Up) -> u16 {
    let events = up.banner.iter().find(|l| l.trim_start().starts_with("events")).expect("an events line");
    let url = events.split_whitespace().nth(1).expect("a URL");
    url.rsplit(':').next().and_then(|p| p.parse().ok()).unwrap_or_else(|| panic!("a port in {events}"))
}

/// The nats-server `up` starts listens on any free port by default — not
/// NATS's usual 4222, which another server of the machine may want — and
/// on `--nats-port` when given; the banner prints it either way.
#[test]
fn ups_own_nats_server_takes_any_free_port_unless_told_one() {
    battlelog_test_support::nats_server_binary();
    let dir = temp_dir("up-nats-port");
    let up = stack::up(dir.path(), &[]);
    assert_ne!(events_port(&up), 4222, "{:?}", up.banner);
    drop(up);

    let free = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let port = free.local_addr().expect("its address").port();
    drop(free);
    let dir = temp_dir("up-nats-port-given");
    let up = stack::up(dir.path(), &["--nats-port", &port.to_string()]);
    assert_eq!(events_port(&up), port, "{:?}", up.banner);
    std::net::TcpStream::connect(("127.0.0.1", port)).expect("its nats-server listens there");
}
