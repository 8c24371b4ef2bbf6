//! Writes the generated part of the checked-in seed corpus under
//! `crates/fuzz-targets/seeds/`: tokens signed by the bearer-token
//! target's fixed key, and journal bytes taken from a real export (the
//! JavaScript verifier's fixture). Run it again when a format changes:
//! `cargo run -p battlelog-fuzz-targets --example make_seeds`.
//! The dice expressions and small export seeds are written by hand.

use std::path::{Path, PathBuf};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use battlelog_auth::Role;
use battlelog_journal::guard::BattleState;
use battlelog_journal::store::kv_tables::{Table, WriteSet};
use battlelog_proto::v1::JournalRecord;
use prost::Message;

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn write(target: &str, name: &str, bytes: &[u8]) {
    let dir = crate_dir().join("seeds").join(target);
    std::fs::create_dir_all(&dir).expect("create the seed folder");
    std::fs::write(dir.join(name), bytes).expect("write a seed");
}

fn main() {
    let fixtures = crate_dir().join("../../web/verifier/test/fixtures");
    tokens();
    exports(&fixtures);
    journal(&fixtures.join("demo-pokemon-closed.jsonl"));
    println!("seeds written under {}", crate_dir().join("seeds").display());
}

fn tokens() {
    let key = fuzz_targets::token::signing_key();
    // Issued 2026-01-01 until 2100: long past any maximum lifetime, but
    // signed, so the fuzzer starts past the signature check.
    let (iat, exp) = (1_767_225_600, 4_102_444_800);
    for (name, subject, tenant, role) in
        [("forum", "forum-a", "tenant-a", Role::Forum), ("service", "resolver", "system", Role::Service)]
    {
        let token = key.issue_at(subject, tenant, role, iat, exp).expect("issue");
        write("bearer_token", &format!("signed-{name}"), format!("0Bearer {token}").as_bytes());
    }
    write("bearer_token", "basic", b"0Basic dXNlcjpwYXNz");
    write("bearer_token", "not-a-jwt", b"0Bearer a.b.c");
    // Odd first byte: claims and edits for `arbitrary`.
    write("bearer_token", "plan", b"1forum-a\x00tenant-a\x00\x02\x00\x00\x00\x00\x10\x0e\x00\x00\x01\x05\x00\x41");
}

fn lines(export: &Path) -> Vec<String> {
    std::fs::read_to_string(export).expect("read the fixture").lines().map(str::to_owned).collect()
}

fn exports(fixtures: &Path) {
    // The open battle as it is, chained again and audited against head
    // hashes too ('3').
    let open = lines(&fixtures.join("open-pokemon.jsonl")).join("\n");
    write("export_audit", "open-battle", format!("3{open}").as_bytes());
    // The closed battle, its shown events left out (`null`: the audit then
    // decodes the records alone), so that the seed stays small.
    let closed: Vec<String> = lines(&fixtures.join("demo-pokemon-closed.jsonl"))
        .iter()
        .map(|line| {
            let mut value: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
            value["event"] = serde_json::Value::Null;
            for field in ["event_id", "event_type", "recorded_at_unix_micros"] {
                value.as_object_mut().expect("an object").remove(field);
            }
            value.to_string()
        })
        .collect();
    write("export_audit", "closed-battle", format!("0{}", closed.join("\n")).as_bytes());
}

fn journal(export: &Path) {
    for line in lines(export) {
        let value: serde_json::Value = serde_json::from_str(&line).expect("a JSON line");
        let version = value["version"].as_u64().expect("a version");
        let bytes = BASE64.decode(value["record"].as_str().expect("a record")).expect("base64");
        let record = JournalRecord::decode(bytes.as_slice()).expect("a record");
        // A record of each type once.
        if ![0, 1, 2, 10, 11].contains(&version) {
            continue;
        }
        write("journal_decode", &format!("record-{version}"), &[&[0u8][..], &bytes].concat());
        let index = fuzz_targets::journal_decode::TYPES.iter().position(|t| *t == record.event_type).expect("a type");
        write("journal_decode", &format!("append-{version}"), &[&[1, index as u8][..], &record.payload].concat());
    }
    let state = BattleState {
        next_nonce: 3,
        epoch: 1,
        commitment: [0xab; 32],
        revealed: true,
        closed: false,
        pending: false,
        bytes: 4096,
    };
    write("journal_decode", "state", &[&[2u8][..], &state.encode()].concat());
    let mut set = WriteSet::default();
    set.put(Table::Records, b"battle\x00\x00\x00\x00\x00\x00\x00\x01".to_vec(), b"record".to_vec());
    set.put(Table::Heads, b"battle".to_vec(), vec![0; 8]);
    write("journal_decode", "write-set", &[&[3u8][..], &set.encode()].concat());
}
