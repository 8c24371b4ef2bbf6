//! Invariant 3: a seed is in nothing anyone can read until it is revealed.

use std::sync::{Arc, Mutex};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use battlelog_proto::battle;
use battlelog_proto::v1 as pb;
use battlelog_test_support::stack::*;
use battlelog_test_support::{StartOptions, poll_until};
use prost::Message;
use serde_json::{Value, json};
use tokio_stream::StreamExt;

use crate::tampered_export::{closed_battle_export, write_lines};

/// Every message on the NATS server (subject `>`) since the capture began:
/// (subject, headers, payload).
type Captured = Arc<Mutex<Vec<(String, String, Vec<u8>)>>>;

async fn capture_nats(url: &str) -> Captured {
    let client = async_nats::connect(url).await.expect("connect to nats");
    let mut subscriber = client.subscribe(">").await.expect("subscribe to everything");
    // The subscription is in place on the server before anything is published.
    client.flush().await.expect("flush");
    let captured = Captured::default();
    let sink = captured.clone();
    tokio::spawn(async move {
        let _client = client;
        while let Some(message) = subscriber.next().await {
            let headers = format!("{:?}", message.headers);
            sink.lock().expect("lock").push((message.subject.to_string(), headers, message.payload.to_vec()));
        }
    });
    captured
}

/// A secret and the forms it could be written in: the bytes, hex either
/// case, base64 (standard and URL-safe; the padding aside) and `{:?}` of
/// the byte array, as a careless log line would print it.
struct Secret {
    name: String,
    forms: Vec<(&'static str, Vec<u8>)>,
}

impl Secret {
    fn new(name: &str, bytes: &[u8]) -> Secret {
        let base64 = BASE64.encode(bytes);
        let forms = vec![
            ("bytes", bytes.to_vec()),
            ("hex", hex::encode(bytes).into_bytes()),
            ("HEX", hex::encode_upper(bytes).into_bytes()),
            ("base64", base64.trim_end_matches('=').as_bytes().to_vec()),
            ("base64url", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes).into_bytes()),
            ("{:?}", format!("{bytes:?}").into_bytes()),
        ];
        Secret { name: name.to_owned(), forms }
    }

    /// The first form of it that `haystack` holds.
    fn found_in(&self, haystack: &[u8]) -> Option<&'static str> {
        let text = String::from_utf8_lossy(haystack);
        self.forms.iter().find_map(|(form, needle)| {
            let found = match std::str::from_utf8(needle) {
                Ok(needle) => text.contains(needle),
                Err(_) => haystack.windows(needle.len()).any(|window| window == needle),
            };
            found.then_some(*form)
        })
    }
}

/// Everything a reader of the journal, of NATS, of an export or of the
/// services' logs can see, by where it was seen; plus `replies`, what the
/// forum was answered.
async fn everything_visible(
    stack: &Stack,
    nats: &Captured,
    battle_id: &str,
    replies: &[String],
) -> Vec<(String, Vec<u8>)> {
    let mut seen: Vec<(String, Vec<u8>)> = Vec::new();

    // The journal's global log: every stream, the record bytes as stored
    // and their payloads decoded.
    let mut journal = stack.journal_client().await;
    let mut position = 0;
    loop {
        let page = journal
            .read_all(pb::ReadAllRequest { from_position: position, max_count: 0 })
            .await
            .expect("read all")
            .into_inner();
        if page.events.is_empty() {
            break;
        }
        position = page.next_position;
        for recorded in page.events {
            let record = pb::JournalRecord::decode(recorded.record.as_slice()).expect("a record");
            let at = format!("journal {}@{}", record.stream_id, record.version);
            let event = battle::decode(&record).unwrap_or_else(|e| panic!("{at}: {e}"));
            seen.push((format!("{at} record"), recorded.record.clone()));
            seen.push((format!("{at} event"), format!("{event:?} {}", battle::event_to_json(&event)).into_bytes()));
        }
    }
    // The journal's files: whatever it keeps besides the records. sled
    // replaces some (snapshots) as it runs: one gone meanwhile is skipped.
    let mut dirs = vec![stack.dir.path().join("journal")];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if let Ok(bytes) = std::fs::read(&path) {
                seen.push((format!("journal file {}", path.display()), bytes));
            }
        }
    }

    // NATS, once every journaled event has been published.
    let total = position as usize;
    let on_events = |captured: &Captured| {
        captured.lock().expect("lock").iter().filter(|(subject, _, _)| subject.starts_with("battlelog.events.")).count()
    };
    poll_until("every event on NATS", WAIT, || async { (on_events(nats) >= total).then_some(()) }).await;
    for (i, (subject, headers, payload)) in nats.lock().expect("lock").iter().enumerate() {
        seen.push((
            format!("NATS message {i} on {subject}: subject and headers"),
            format!("{subject} {headers}").into(),
        ));
        seen.push((format!("NATS message {i} on {subject}: payload"), payload.clone()));
    }

    // The export, as text and each record's bytes.
    let path = stack.dir.path().join(format!("{battle_id}-{position}.jsonl"));
    let export = export_to(&stack.resolver.url(), battle_id, &path);
    for (i, line) in export.lines().enumerate() {
        let line: Value = serde_json::from_str(line).expect("a JSON line");
        let record = BASE64.decode(line["record"].as_str().expect("record")).expect("base64");
        seen.push((format!("export line {i} record"), record));
    }
    seen.push(("export".into(), export.into_bytes()));

    // The logs, at debug, read as bytes: raw bytes would not be UTF-8.
    for name in ["journal.log", "roller.log", "resolver.log"] {
        let log = std::fs::read(stack.dir.path().join(name)).expect("a service log");
        let text = String::from_utf8_lossy(&log);
        assert!(text.contains("DEBUG"), "{name} is at debug level:\n{}", &text[..text.len().min(3000)]);
        seen.push((format!("log {name}"), log));
    }
    let nats_server = stack.nats.as_ref().expect("nats");
    seen.push(("nats-server log".into(), nats_server.log().into_bytes()));

    for (i, reply) in replies.iter().enumerate() {
        seen.push((format!("reply {i}"), reply.clone().into_bytes()));
    }
    seen
}

fn assert_hidden(seen: &[(String, Vec<u8>)], secrets: &[&Secret], when: &str) {
    for (source, bytes) in seen {
        for secret in secrets {
            if let Some(form) = secret.found_in(bytes) {
                panic!("{when}: {} is in the {source} (as {form})", secret.name);
            }
        }
    }
}

/// The revealed seed is where a reveal puts it: the journal, NATS and the
/// export (so the searches above look in the right places).
fn assert_shown(seen: &[(String, Vec<u8>)], secret: &Secret) {
    for place in ["journal ", "journal file ", "NATS message ", "export line "] {
        assert!(
            seen.iter().any(|(source, bytes)| source.starts_with(place) && secret.found_in(bytes).is_some()),
            "once revealed, {} is in the {place}…",
            secret.name
        );
    }
}

/// Invariant 3 and docs/protocol.md §1: an epoch's server seed (and the roll key
/// made from it, and the master key ever) is in nothing anyone can read
/// before its reveal — the journal's records and files, every NATS message,
/// the export, the forum's replies, the three services' logs at debug
/// level — in any form. A judge's RevealSeed then puts epoch 0's seed in
/// the journal, on NATS and in the export while epoch 1's stays hidden; the
/// close reveals epoch 1's the same way.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_seed_is_nowhere_until_it_is_revealed() {
    let stack = Stack::start_with("secret", true, &StartOptions::log("debug")).await;
    let nats = capture_nats(&stack.nats_url().expect("nats")).await;
    let (battle_id, client_seed) = ("secret-seeds", "nobody peeks");
    let seed = |epoch: u32| server_seed(battle_id, epoch);
    let roll_key = |epoch: u32| dice::RollKey::derive(&seed(epoch), client_seed);
    let seed_0 = Secret::new("epoch 0's seed", seed(0).as_bytes());
    let seed_1 = Secret::new("epoch 1's seed", seed(1).as_bytes());
    let key_0 = Secret::new("epoch 0's roll key", roll_key(0).as_bytes());
    let key_1 = Secret::new("epoch 1's roll key", roll_key(1).as_bytes());
    let master = Secret::new("the master key", &master_key());

    let mut resolver = resolver_client(&stack.resolver).await;
    let mut replies = Vec::new();
    let opened =
        open(&mut resolver, battle_id, "pbta-2d6@1", json!([{"id": "misty", "traits": {"wits": 1}}]), client_seed)
            .await;
    replies.push(format!("{opened:?}"));
    let mv = |stakes: &str| json!({"type": "move", "actor": "misty", "trait": "wits", "stakes": stakes});
    let mut play = async |replies: &mut Vec<String>, from: usize| {
        for i in from..from + 2 {
            let reply = act(&mut resolver, battle_id, &mv("secret"), &format!("s-{i}")).await.expect("act");
            replies.push(format!("{reply:?}"));
        }
        let state = resolver
            .get_battle(pb::GetBattleRequest { battle_id: battle_id.into(), at_version: None })
            .await
            .expect("get")
            .into_inner();
        replies.push(format!("{state:?}"));
    };
    play(&mut replies, 0).await;
    let seen = everything_visible(&stack, &nats, battle_id, &replies).await;
    assert_hidden(&seen, &[&seed_0, &key_0, &seed_1, &key_1, &master], "before any reveal");

    let mut judge = judge_client(&stack.resolver).await;
    let reveal = pb::RevealSeedRequest { battle_id: battle_id.into(), request_id: "reveal-0".into() };
    let revealed = judge.reveal_seed(reveal).await.expect("a judge reveals").into_inner();
    assert_eq!(revealed.revealed.expect("revealed").server_seed, seed(0).to_hex());
    play(&mut replies, 2).await;
    let seen = everything_visible(&stack, &nats, battle_id, &replies).await;
    assert_hidden(&seen, &[&seed_1, &key_1, &master], "after epoch 0's reveal");
    assert_shown(&seen, &seed_0);

    close(&mut resolver, battle_id).await;
    let seen = everything_visible(&stack, &nats, battle_id, &replies).await;
    assert_hidden(&seen, &[&master], "after the close");
    assert_shown(&seen, &seed_1);
    let events = journaled(&stack, battle_id).await;
    assert_nonces_consecutive(battle_id, &events);
    for (_, roll) in rolls_of(&events) {
        assert_rederives(battle_id, client_seed, &roll);
    }
}

/// A closed battle's export with its SeedRevealed (the last line) removed:
/// no roll can be re-derived, yet docs/protocol.md §1 reveals the seed when the
/// battle closes and the resolver's Close always reveals. The audit must
/// not call it verified; the finding belongs to the BattleClosed (version 9)
/// that no reveal follows.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_audit_refuses_a_closed_battle_whose_reveal_was_removed() {
    let battle_id = "unrevealed";
    let (stack, mut lines) = closed_battle_export("unrevealed", battle_id).await;
    lines.pop();
    let path = stack.dir.path().join("reveal-removed.jsonl");
    write_lines(&path, &lines);
    let (code, output) = audit_file(&path);
    assert_eq!(code, Some(1), "a closed battle without its reveal does not verify:\n{output}");
    assert!(output.contains("version 9: "), "names the BattleClosed at version 9:\n{output}");
}
