//! `battlelog roll`, `battlelog commitment` and `battlelog roller-key` as a
//! user runs them: the real binary, checked against known answers.

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

fn battlelog(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_battlelog")).args(args).output().expect("the battlelog binary runs")
}

fn vectors() -> Value {
    let dir = std::env::var_os("BATTLELOG_VECTORS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/vectors"));
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

/// Where each invalid vector of `rolls.json` is wrong, as README.md shows it
/// (`expected a number after 'd' at 3` for `2d`): the 1-based position of the
/// offending character, or one past the end when the text ends too soon.
/// Worked out by hand from PROTOCOL.md §3's grammar and limits.
const INVALID_AT: &[(&str, usize)] = &[
    ("", 1),          // an operand is needed; the text ends at once
    ("d", 2),         // SIDES after the D
    ("2d", 3),        // README.md's own example
    ("0d6", 1),       // COUNT 0 is outside 1..1000; the count starts at 1
    ("1001d6", 1),    // COUNT 1001, likewise
    ("1d0", 3),       // SIDES 0 is outside 1..1 000 000; the sides start at 3
    ("1d1000001", 3), // SIDES 1 000 001, likewise
    ("1d6+", 5),      // a term after the '+'; the text ends at 5
    ("1d6kh1kl1", 7), // a second keep/drop modifier, at the 'k' of "kl1"
    ("1d1!", 4),      // the explosion '!': a d1's every face is its highest
    ("1d6!>=1", 4),   // the explosion '!': every face is >= 1
    ("1/0", 2),       // division by zero, at its operator (as crates/dice/tests/expressions.rs places overflows)
    ("(((1d6)", 8),   // the ')' for the '(' at 2 is missing; the end is at 8
    ("1d6)", 4),      // a ')' that closes nothing
    ("abc", 1),       // 'a' starts no number, dice term or '('
    ("2d6**2", 5),    // the second '*' where an operand is needed
];

/// The position an error message names last (`… at N`): the place of the
/// error, after any other place it mentions (`the '(' at 2, found the end
/// at 8`).
fn last_position(message: &str) -> Option<usize> {
    message
        .match_indices(" at ")
        .filter_map(|(i, _)| {
            let digits: String = message[i + 4..].chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .last()
}

/// The position [`INVALID_AT`] gives an invalid vector; a vector without
/// one fails until its position is worked out and added.
fn invalid_at(notation: &str) -> usize {
    INVALID_AT
        .iter()
        .find(|(text, _)| *text == notation)
        .map(|&(_, at)| at)
        .unwrap_or_else(|| panic!("no expected position for the invalid vector {notation:?}: work it out and add it"))
}
