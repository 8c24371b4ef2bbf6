//! `battlelog roll`, `battlelog commitment` and `battlelog roller-key` as a
//! user runs them: the real binary, checked against known answers.

// The positions the dice library's tests hold its errors to: one table.
#[path = "../../dice/tests/invalid_positions/mod.rs"]
mod invalid_positions;

use std::path::PathBuf;
use std::process::{Command, Output};

use invalid_positions::{invalid_at, last_position};
use serde_json::Value;

fn battlelog(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_battlelog")).args(args).output().expect("the battlelog binary runs")
}

fn vectors() -> Value {
    let dir = std::env::var_os("BATTLELOG_VECTORS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors"));
    let path = dir.join("rolls.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{} is required: {e}", path.display()));
    serde_json::from_str(&text).expect("rolls.json parses")
}

fn assert_refused(output: &Output, needle: &str) {
    assert_eq!(output.status.code(), Some(2), "exit status");
    assert!(output.stdout.is_empty(), "stdout must stay empty: {:?}", String::from_utf8_lossy(&output.stdout));
    let stderr = String::from_utf8(output.stderr.clone()).expect("utf-8 stderr");
    assert_eq!(stderr.lines().count(), 1, "one line on stderr: {stderr:?}");
    assert!(stderr.contains(needle), "{stderr:?} should mention {needle:?}");
}

#[test]
fn json_output_matches_every_vector() {
    let vectors = vectors();
    for v in vectors["vectors"].as_array().expect("vectors") {
        let nonce = v["nonce"].to_string();
        let output = battlelog(&[
            "roll",
            v["notation"].as_str().expect("notation"),
            "--server-seed",
            v["server_seed"].as_str().expect("seed"),
            "--client-seed",
            v["client_seed"].as_str().expect("client seed"),
            "--nonce",
            &nonce,
            "--json",
        ]);
        assert!(output.status.success(), "{}: {}", v["notation"], String::from_utf8_lossy(&output.stderr));
        let json: Value = serde_json::from_slice(&output.stdout).expect("one JSON object");
        assert_eq!(json["total"], v["total"], "{}", v["notation"]);
        assert_eq!(json["dice"], v["dice"], "{}", v["notation"]);
        assert_eq!(json["commitment"], v["commitment"], "{}", v["notation"]);
    }
}

#[test]
fn plain_output_is_the_forum_rendering() {
    // Vector: 4d6kh3 at nonce 12 draws 5, 3, 4, 2 and keeps the top three.
    let output = battlelog(&[
        "roll",
        "4d6kh3",
        "--server-seed",
        "efa1f375d76194fa51a3556a97e641e61685f914d446979da50a551a4333ffd7",
        "--client-seed",
        "forum:rpg-example/thread/1024",
        "--nonce",
        "12",
    ]);
    assert!(output.status.success());
    assert_eq!(String::from_utf8_lossy(&output.stdout), "4d6kh3: [5, 3, 4, ~~2~~] = 12\n");
}

#[test]
fn commitment_prints_the_seed_hash() {
    let output =
        battlelog(&["commitment", "--server-seed", "efa1f375d76194fa51a3556a97e641e61685f914d446979da50a551a4333ffd7"]);
    assert!(output.status.success());
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), vectors()["vectors"][0]["commitment"]);
}

#[test]
fn every_invalid_vector_exits_2_with_one_line() {
    let seed = "00".repeat(32);
    for notation in vectors()["invalid"].as_array().expect("invalid") {
        let notation = notation.as_str().expect("string");
        let output = battlelog(&["roll", notation, "--server-seed", &seed, "--client-seed", "c", "--nonce", "0"]);
        assert_refused(&output, "battlelog: invalid dice expression: ");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(last_position(&stderr), Some(invalid_at(notation)), "{notation:?}: {stderr:?}");
    }
    let output = battlelog(&["roll", "2d", "--server-seed", &seed, "--client-seed", "c", "--nonce", "0"]);
    assert_refused(&output, "expected a number after 'd' at 3");
}

#[test]
fn bad_arguments_exit_2_naming_them() {
    let seed = "00".repeat(32);
    assert_refused(
        &battlelog(&["roll", "1d6", "--server-seed", "abc", "--client-seed", "c", "--nonce", "0"]),
        "--server-seed",
    );
    let not_hex = "zz".repeat(32);
    assert_refused(
        &battlelog(&["roll", "1d6", "--server-seed", &not_hex, "--client-seed", "c", "--nonce", "0"]),
        "hex",
    );
    assert_refused(&battlelog(&["roll", "1d6", "--server-seed", &seed, "--client-seed", "c", "--nonce", "-1"]), "-1");
    assert_refused(&battlelog(&["roll", "1d6", "--server-seed", &seed, "--nonce", "0"]), "--client-seed");
    assert_refused(&battlelog(&["commitment", "--server-seed", "12"]), "--server-seed");
}

#[test]
fn roller_key_prints_the_public_key_of_a_master_key_file() {
    let path = std::env::temp_dir().join(format!("battlelog-roller-key-{}.hex", std::process::id()));
    std::fs::write(&path, "5b1e6c0d9a8f7e6d5c4b3a29181706f5e4d3c2b1a09f8e7d6c5b4a3928170605\n").expect("write");
    let output = battlelog(&["roller-key", "--master-key-file", &path.display().to_string()]);
    std::fs::remove_file(&path).expect("remove");
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    // Computed from docs/PROTOCOL-signatures.md §1 by an independent
    // implementation (Python hmac + `cryptography`'s Ed25519).
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "d4274985d1199f4902a113b7f4a757f2d4346bf7c848b2d941656b54340c3024\n"
    );
    let missing = battlelog(&["roller-key", "--master-key-file", "/nonexistent/battlelog-master-key"]);
    assert_refused(&missing, "/nonexistent/battlelog-master-key");
}

/// A roll whose arithmetic fails after its dice are drawn is journaled with
/// those dice, a total of 0 and the error (docs/protocol.md §3), and the
/// audit passes it: `battlelog roll` re-derives it the same way, exit 0.
#[test]
fn a_roll_whose_arithmetic_fails_shows_its_dice_and_the_error() {
    // Vector: 4d6kh3 at nonce 12 draws 5, 3, 4, 2; dividing by zero
    // fails at the '/', the 7th character, after all four are drawn.
    let args = |json: bool| {
        let mut args = vec![
            "roll",
            "4d6kh3/0",
            "--server-seed",
            "efa1f375d76194fa51a3556a97e641e61685f914d446979da50a551a4333ffd7",
            "--client-seed",
            "forum:rpg-example/thread/1024",
            "--nonce",
            "12",
        ];
        if json {
            args.push("--json");
        }
        args
    };
    let output = battlelog(&args(false));
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8(output.stdout).expect("UTF-8");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.first(), Some(&"4d6kh3/0: [5, 3, 4, ~~2~~] = 0"), "{stdout}");
    assert!(lines.get(1).is_some_and(|l| l.starts_with("error: division by zero at 7")), "{stdout}");
    let output = battlelog(&args(true));
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let json: Value = serde_json::from_slice(&output.stdout).expect("one JSON object");
    let faces: Vec<i64> =
        json["dice"].as_array().expect("dice").iter().map(|d| d["value"].as_i64().expect("a face")).collect();
    assert_eq!(faces, [5, 3, 4, 2]);
    assert_eq!(json["total"], 0);
    assert_eq!(json["error"], "division by zero at 7");
    // One that fails before any die is drawn fails whatever the seed: an
    // invalid expression, as the vectors' `1/0` (every_invalid_vector_…).
    let seed = "00".repeat(32);
    assert_refused(
        &battlelog(&["roll", "2/(1-1)", "--server-seed", &seed, "--client-seed", "c", "--nonce", "0"]),
        "division by zero at 2",
    );
}
