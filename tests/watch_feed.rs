//! issue 18, finding 7: `battlelog watch` over NATS shows only what the
//! journal holds. The real journal, roller and resolver publish to a real
//! `nats-server`; the test publishes forged events on the same subjects, as
//! anyone allowed to publish there could, and reads what the real
//! `battlelog watch` binary prints.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

use battlelog_proto::v1 as pb;
use battlelog_test_support::auth::TEST_TENANT;
use battlelog_test_support::stack;
use battlelog_test_support::stack::{Stack, WAIT};
use battlelog_test_support::{TestAuth, poll_until};
use prost::Message;
use serde_json::json;
use sha2::{Digest, Sha256};

/// `battlelog watch`, killed when dropped, its stdout and stderr lines
/// collected as they come.
struct Watcher {
    child: Child,
    stdout: Arc<Mutex<Vec<String>>>,
    stderr: Arc<Mutex<Vec<String>>>,
}

impl Watcher {
    fn start(args: &[&str]) -> Self {
        let mut child = Command::new(battlelog_test_support::cli_binary())
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start battlelog watch");
        let collect = |pipe: Box<dyn std::io::Read + Send>| {
            let lines = Arc::new(Mutex::new(Vec::new()));
            let sink = lines.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                    sink.lock().expect("lines").push(line);
                }
            });
            lines
        };
        let stdout = collect(Box::new(child.stdout.take().expect("stdout")));
        let stderr = collect(Box::new(child.stderr.take().expect("stderr")));
        Self { child, stdout, stderr }
    }

    fn stdout(&self) -> Vec<String> {
        self.stdout.lock().expect("lines").clone()
    }

    fn stderr(&self) -> Vec<String> {
        self.stderr.lock().expect("lines").clone()
    }

    /// Waits until stdout has a line starting with `prefix`.
    async fn shows(&self, prefix: &str) -> String {
        poll_until(&format!("watch to print {prefix:?}"), WAIT, || async {
            self.stdout().into_iter().find(|line| line.starts_with(prefix))
        })
        .await
    }

    /// Waits until stderr has `count` lines containing `text`.
    async fn says(&self, text: &str, count: usize) -> Vec<String> {
        poll_until(&format!("watch to say {text:?} {count} times"), WAIT, || async {
            let lines: Vec<String> = self.stderr().into_iter().filter(|line| line.contains(text)).collect();
            (lines.len() >= count).then_some(lines)
        })
        .await
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A record the journal never wrote: version `version` of `battle`.
fn forged_record(battle: &str, version: u64) -> Vec<u8> {
    pb::JournalRecord {
        stream_id: battle.to_owned(),
        version,
        event_id: format!("forged-{version}"),
        event_type: "Forged".to_owned(),
        recorded_at_unix_micros: 1,
        idempotency_key: String::new(),
        payload: b"whatever the forger likes".to_vec(),
    }
    .encode_to_vec()
}

/// Publishes `record` where the journal publishes `battle`'s events, with
/// `hash` as its claimed chain hash.
async fn publish(nats: &async_nats::Client, battle: &str, record: Vec<u8>, hash: &[u8]) {
    let mut headers = async_nats::HeaderMap::new();
    headers.insert("Battlelog-Hash", hex::encode(hash).as_str());
    headers.insert("Battlelog-Stream", battle);
    let subject = format!("battlelog.events.{TEST_TENANT}.{battle}");
    nats.publish_with_headers(subject, headers, record.into()).await.expect("publish");
    nats.flush().await.expect("flush");
}

/// The journal's head hash of `battle`.
async fn head_hash(stack: &Stack, battle: &str) -> Vec<u8> {
    let mut journal = stack.journal_client().await;
    journal
        .stream_info(pb::StreamInfoRequest { stream_id: battle.to_owned() })
        .await
        .expect("info")
        .into_inner()
        .head_hash
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_over_nats_drops_or_flags_what_the_journal_does_not_hold() {
    let stack = Stack::start("watch-feed", true).await;
    let nats_url = stack.nats_url().expect("a NATS server");
    let battle = "fed";
    let mut forum = stack::resolver_client(&stack.resolver).await;
    stack::open(&mut forum, battle, "pbta-2d6@1", json!([{"id": "ash", "traits": {"cool": 1}}]), battle).await;
    let reader = TestAuth::shared().reader();
    let resolver_url = stack.resolver.url();
    let journal_url = stack.journal.url();
    let watcher = Watcher::start(&[
        "watch",
        "--battle",
        battle,
        "--nats-url",
        &nats_url,
        "--resolver",
        &resolver_url,
        "--journal",
        &journal_url,
        "--token",
        &reader,
    ]);
    watcher.says(&format!("watching battlelog.events.*.{battle}"), 1).await;
    let nats = async_nats::connect(&nats_url).await.expect("connect to NATS");
    let act = |n: u32| {
        let mut forum = forum.clone();
        async move {
            let action = json!({"type": "move", "actor": "ash", "trait": "cool", "stakes": "the feed"});
            stack::act(&mut forum, battle, &action, &format!("act-{n}")).await.expect("act")
        }
    };

    // The first event of the battle the watcher hears of is forged: the
    // journal holds no version 1 yet, so it is dropped, and said so.
    publish(&nats, battle, forged_record(battle, 1), &[7; 32]).await;
    let dropped = watcher.says("dropped from the NATS feed", 1).await;
    assert!(dropped[0].contains("#1") && dropped[0].contains("holds no such version"), "{dropped:?}");

    // The real act's events: #1 checked against the journal, #2 by its link.
    act(1).await;
    watcher.shows(&format!("{battle} #2 ActionResolved")).await;
    let shown = watcher.stdout();
    assert!(shown.iter().any(|l| l.starts_with(&format!("{battle} #1 DiceRolled"))), "{shown:?}");

    // A forged #3 that does not link to the #2 shown (a made-up hash), for
    // a version the journal does not hold: dropped.
    publish(&nats, battle, forged_record(battle, 3), &[9; 32]).await;
    let dropped = watcher.says("dropped from the NATS feed", 2).await;
    assert!(dropped[1].contains("#3") && dropped[1].contains("does not follow #2"), "{dropped:?}");
    act(2).await;
    watcher.shows(&format!("{battle} #4 ActionResolved")).await;
    assert!(watcher.stdout().iter().any(|l| l.starts_with(&format!("{battle} #3 DiceRolled"))));
    assert!(!watcher.stdout().iter().any(|l| l.contains("Forged")), "{:?}", watcher.stdout());

    // A forger that links its #5 to the journal's #4 (hashes are public)
    // gets it shown: the link alone cannot tell. When the journal's own #5
    // comes it does not follow what was shown; the journal holds it, so it
    // is shown and the earlier #5 named as not the journal's.
    let forged = forged_record(battle, 5);
    let link: Vec<u8> =
        Sha256::new().chain_update(head_hash(&stack, battle).await).chain_update(&forged).finalize().to_vec();
    publish(&nats, battle, forged, &link).await;
    watcher.shows(&format!("{battle} #5 Forged")).await;
    act(3).await;
    watcher.shows(&format!("{battle} #6 ActionResolved")).await;
    let fives: Vec<String> = watcher.stdout().into_iter().filter(|l| l.starts_with(&format!("{battle} #5 "))).collect();
    assert_eq!(fives.len(), 2, "{fives:?}");
    assert!(fives[0].contains("Forged") && fives[1].contains("DiceRolled"), "{fives:?}");
    watcher.says("was not the journal's", 1).await;
    assert_eq!(watcher.stderr().iter().filter(|l| l.contains("dropped from the NATS feed")).count(), 2);
}
