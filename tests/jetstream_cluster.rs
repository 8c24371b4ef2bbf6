//! The journal on a replicated JetStream log, against a real three-node
//! cluster (`NatsCluster`) and two real `battlelog-journal` processes on it
//! (`--backend jetstream --replicas 3`): under continuous appends from
//! several clients through both journals, the stream's leader is killed
//! (`kill -9`), then a follower, each restarted, round after round, and a
//! follower is frozen (SIGSTOP, as a partition looks). At the end no
//! acknowledged append is lost or duplicated, every battle's versions are
//! consecutive, every chain verifies, and appends came back after each
//! kill within an election. Two clients on the two journals append to one
//! battle throughout: it never forks.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use battlelog_proto::v1::VerifyChainRequest;
use battlelog_test_support::journal_client;
use battlelog_test_support::journal_client::{
    Client, append, check_chain, client, event_text, opened, resolved, try_read_stream,
};
use battlelog_test_support::{
    NatsCluster, ServiceProcess, StartOptions, journal_with, poll_until, temp_dir, try_journal_with,
};
use tokio::sync::Mutex;

/// The journal's JetStream stream (the backend's default name).
const STREAM: &str = "BATTLELOG_JOURNAL";
/// Kill rounds (each: the leader, then a follower).
const ROUNDS: usize = 10;
/// Clients with a battle of their own, spread over the two journals.
const WRITERS: usize = 4;
/// Longest wait for appends to resume after a kill: JetStream's election
/// (a few seconds) plus a client's retry.
const ELECTION: Duration = Duration::from_secs(30);
/// Longest wait for a restarted node to be a current replica again.
const REJOIN: Duration = Duration::from_secs(60);

/// What the clients had acknowledged: battle → (idempotency key → version).
type Acked = Arc<Mutex<BTreeMap<String, BTreeMap<String, u64>>>>;

async fn start_journal(cluster: &NatsCluster, dir: &Path) -> ServiceProcess {
    let options = StartOptions {
        envs: vec![
            ("BATTLELOG_JOURNAL_BACKEND".into(), "jetstream".into()),
            ("BATTLELOG_JOURNAL_REPLICAS".into(), "3".into()),
            // Short, so that a request lost with a killed node is retried soon.
            ("BATTLELOG_JOURNAL_JETSTREAM_TIMEOUT_MS".into(), "2000".into()),
        ],
        ..StartOptions::default()
    };
    // The data dir is unused on this backend; the log goes beside it.
    journal_with(dir, Some(&cluster.client_urls_joined()), &options).await
}

/// Appends `event` until a journal acknowledges it; a retry carries the
/// same idempotency key, so an append that landed before its answer was
/// lost is answered, not appended again.
async fn append_acked(clients: &[Client], battle: &str, key: &str, text: &str, acked: &Acked) {
    let mut turn = 0usize;
    let version = poll_until(&format!("an acknowledgement of {battle}/{key}"), ELECTION, || {
        turn += 1;
        let mut client = clients[turn % clients.len()].clone();
        async move {
            let reply = append(&mut client, battle, journal_client::any(), vec![resolved(text, key)]).await.ok()?;
            Some(reply.events[0].version)
        }
    })
    .await;
    acked.lock().await.entry(battle.to_owned()).or_default().insert(key.to_owned(), version);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kills_and_partitions_lose_no_acknowledged_append_and_fork_no_battle() {
    let mut cluster = NatsCluster::start("journal-chaos").await;
    let dir = temp_dir("journal-chaos");
    let journals =
        [start_journal(&cluster, &dir.path().join("a")).await, start_journal(&cluster, &dir.path().join("b")).await];
    let mut opener = client(&journals[0]).await;
    let battles: Vec<String> = (0..WRITERS).map(|w| format!("chaos-{w}")).chain(["shared".to_owned()]).collect();
    for battle in &battles {
        append(&mut opener, battle, journal_client::no_stream(), vec![opened("chaos", &format!("{battle}-open"))])
            .await
            .expect("open the battle");
    }

    let acked: Acked = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let progress = Arc::new(AtomicU64::new(0));
    let mut writers = tokio::task::JoinSet::new();
    // Each battle's writer talks to both journals (one first, by turns); the
    // shared battle has two writers, one per journal.
    let mut plan: Vec<(String, usize)> = (0..WRITERS).map(|w| (battles[w].clone(), w % 2)).collect();
    plan.push(("shared".into(), 0));
    plan.push(("shared".into(), 1));
    for (index, (battle, first)) in plan.into_iter().enumerate() {
        let clients = vec![client(&journals[first]).await, client(&journals[1 - first]).await];
        let (acked, stop, progress) = (acked.clone(), stop.clone(), progress.clone());
        writers.spawn(async move {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let key = format!("w{index}-{i}");
                append_acked(&clients, &battle, &key, &key, &acked).await;
                progress.fetch_add(1, Ordering::Relaxed);
                i += 1;
            }
        });
    }

    let resumed = |progress: Arc<AtomicU64>, what: String| async move {
        let before = progress.load(Ordering::Relaxed);
        let start = Instant::now();
        poll_until(&what, ELECTION, || {
            let progress = progress.clone();
            async move { (progress.load(Ordering::Relaxed) >= before + 5).then_some(()) }
        })
        .await;
        start.elapsed()
    };
    let mut slowest = Duration::ZERO;
    for round in 0..ROUNDS {
        let leader = poll_until("a stream leader", ELECTION, || cluster.stream_leader(STREAM)).await;
        cluster.kill(leader);
        slowest = slowest
            .max(resumed(progress.clone(), format!("appends after killing leader {leader} (round {round})")).await);
        cluster.restart(leader).await;
        poll_until("three current replicas", REJOIN, || async {
            (cluster.stream_current_replicas(STREAM).await == Some(3)).then_some(())
        })
        .await;

        let leader = poll_until("a stream leader", ELECTION, || cluster.stream_leader(STREAM)).await;
        let follower = (leader + 1 + round % 2) % 3;
        if round == 0 {
            // A partitioned follower: the quorum goes on without it.
            cluster.stop(follower).await;
            resumed(progress.clone(), format!("appends while node {follower} is frozen")).await;
            cluster.cont(follower);
        }
        cluster.kill(follower);
        resumed(progress.clone(), format!("appends after killing follower {follower} (round {round})")).await;
        cluster.restart(follower).await;
        poll_until("three current replicas", REJOIN, || async {
            (cluster.stream_current_replicas(STREAM).await == Some(3)).then_some(())
        })
        .await;
    }
    stop.store(true, Ordering::Relaxed);
    while let Some(done) = writers.join_next().await {
        done.expect("a writer");
    }
    println!("slowest resumption after killing a leader: {slowest:?}");

    let acked = acked.lock().await.clone();
    for battle in &battles {
        let mine = acked.get(battle).cloned().unwrap_or_default();
        assert!(mine.len() > ROUNDS, "{battle}: appends went on through the rounds ({} acknowledged)", mine.len());
        for journal in &journals {
            let reader = client(journal).await;
            // A read may still meet the end of the last election
            // (UNAVAILABLE, which callers retry): retried.
            let (events, check) = poll_until(&format!("{battle} read whole and verified"), ELECTION, || {
                let mut reader = reader.clone();
                async move {
                    let events = try_read_stream(&mut reader, battle).await.ok()?;
                    let request = VerifyChainRequest { stream_id: battle.clone() };
                    let check = reader.verify_chain(request).await.ok()?.into_inner();
                    Some((events, check))
                }
            })
            .await;
            check_chain(battle, &events);
            assert!(check.ok, "{battle}: {}", check.reason);
            let mut seen: BTreeMap<String, u64> = BTreeMap::new();
            for event in &events[1..] {
                let record = event.event.as_ref().expect("a record");
                let text = event_text(&record.payload);
                assert!(seen.insert(text.clone(), record.version).is_none(), "{battle}: {text} appended twice");
            }
            assert_eq!(seen, mine, "{battle}: every acknowledged append at its version, and nothing else");
        }
    }
    for journal in journals {
        assert!(journal.terminate().await, "the journals stop cleanly");
    }
}

/// What the journal logs, once, while it waits for a cluster that cannot
/// place its stream yet.
const WAITING: &str = "cannot place the stream yet";

/// `battlelog-journal` on the cluster with three replicas, `jetstream_start_wait_ms`
/// at `wait_ms` and a short request timeout (a cluster without a quorum
/// answers nothing, so each try ends at the timeout).
fn waiting_journal(wait_ms: u64) -> StartOptions {
    StartOptions {
        envs: vec![
            ("BATTLELOG_JOURNAL_BACKEND".into(), "jetstream".into()),
            ("BATTLELOG_JOURNAL_REPLICAS".into(), "3".into()),
            ("BATTLELOG_JOURNAL_JETSTREAM_TIMEOUT_MS".into(), "500".into()),
            ("BATTLELOG_JOURNAL_JETSTREAM_START_WAIT_MS".into(), wait_ms.to_string()),
        ],
        ..StartOptions::default()
    }
}

/// A journal started while its cluster has no quorum (two of three nodes
/// down: no meta leader, nowhere for three replicas) waits for the cluster,
/// says so once, and serves as soon as the nodes are back: operators start
/// the journal with the cluster, and a fresh or loaded cluster answers late.
/// At the edge, `jetstream_start_wait_ms = 0`, it gives up at the first
/// such answer, naming the key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_journal_started_before_its_cluster_has_a_quorum_waits_for_it() {
    let mut cluster = NatsCluster::start("js-quorum").await;
    cluster.kill(1);
    cluster.kill(2);
    let work = temp_dir("js-quorum");
    let urls = cluster.client_urls_joined();

    let refused = try_journal_with(&work.path().join("no-wait"), Some(&urls), &waiting_journal(0)).await;
    let log = refused.expect_err("with no wait, the journal gives up on a cluster without a quorum");
    assert!(log.contains("jetstream_start_wait_ms = 0"), "it names the key that would have waited:\n{log}");
    assert!(!log.contains(WAITING), "with no wait it does not say it waits:\n{log}");

    let dir = work.path().join("waits");
    let starting = {
        let (dir, urls) = (dir.clone(), urls.clone());
        tokio::spawn(async move { try_journal_with(&dir, Some(&urls), &waiting_journal(120_000)).await })
    };
    let log_file = dir.with_extension("log");
    poll_until("the journal says it waits for the cluster", Duration::from_secs(30), || {
        let log_file = log_file.clone();
        async move { std::fs::read_to_string(&log_file).ok().filter(|log| log.contains(WAITING)).map(|_| ()) }
    })
    .await;
    assert!(!starting.is_finished(), "the journal is still starting while the cluster has no quorum");
    cluster.restart(1).await;
    cluster.restart(2).await;
    let journal = starting.await.expect("the start task").unwrap_or_else(|log| panic!("{log}\n{}", cluster.logs()));
    let log = journal.log();
    assert_eq!(log.matches(WAITING).count(), 1, "the wait is said once, not at every try:\n{log}");
    let mut client = client(&journal).await;
    let appended =
        append(&mut client, "quorum-1", journal_client::no_stream(), vec![opened("quorum", "quorum-open")]).await;
    assert!(appended.is_ok(), "the journal serves once the cluster is back: {appended:?}");
    poll_until("the stream has its three replicas", Duration::from_secs(60), || async {
        (cluster.stream_current_replicas(STREAM).await == Some(3)).then_some(())
    })
    .await;
}
