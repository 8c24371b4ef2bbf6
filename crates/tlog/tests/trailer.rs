//! The export trailer of §5 and the checkpoints a judge keeps: one honest
//! trailer checks, and each way of breaking it gives its own finding.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use battlelog_tlog::{
    DEFAULT_ORIGIN, EMPTY_ROOT, KeptCheckpoint, LogKey, MAX_NOTE_BYTES, MAX_TRAILER_BYTES, NoteError, ProofError,
    StreamHead, Trailer, TrailerError, Tree, leaf_hash, verify_consistency,
};
use sha2::{Digest, Sha256};

fn key() -> LogKey {
    LogKey::from_seed(DEFAULT_ORIGIN, [7; 32]).expect("a key")
}

fn chain(stream: &str, version: u64) -> [u8; 32] {
    Sha256::new().chain_update(stream).chain_update(version.to_le_bytes()).finalize().into()
}

/// A journal of two interleaved streams, 12 records; stream "b"'s head is
/// its version 4, at global index 9, and the checkpoint is of size 12.
struct Journal {
    tree: Tree,
    head: StreamHead,
    head_index: u64,
}

fn journal() -> Journal {
    let mut tree = Tree::new();
    let (mut a, mut b) = (0u64, 0u64);
    let mut head = None;
    for i in 0..12u64 {
        let (stream, version) = if [1, 3, 5, 7, 9].contains(&i) {
            b += 1;
            ("b", b - 1)
        } else {
            a += 1;
            ("a", a - 1)
        };
        let index = tree.push(leaf_hash(stream, version, &chain(stream, version)));
        if stream == "b" {
            head = Some((StreamHead { stream_id: "b".to_owned(), version, hash: chain("b", version) }, index));
        }
    }
    let (head, head_index) = head.expect("b has events");
    assert_eq!((head.version, head_index), (4, 9));
    Journal { tree, head, head_index }
}

fn trailer_with(key: &LogKey, journal: &Journal) -> Trailer {
    let size = journal.tree.size();
    let checkpoint = key.sign_checkpoint(size, &journal.tree.root(size).expect("root"));
    let signature = key.sign_head(&journal.head, size);
    let proof = journal.tree.inclusion_proof(journal.head_index, size).expect("proof");
    Trailer::new(&checkpoint, &key.verifier_key(), &journal.head, &signature, journal.head_index, &proof)
}

fn honest() -> (Trailer, StreamHead) {
    let journal = journal();
    (trailer_with(&key(), &journal), journal.head)
}

#[test]
fn an_honest_trailer_checks_and_has_the_protocols_fields() {
    let (trailer, last) = honest();
    let key = key();
    let checkpoint = trailer.check(Some(&last), Some(&key.verifier_key())).expect("checks");
    assert_eq!(checkpoint.size, 12);
    assert_eq!(checkpoint.root, journal().tree.root(12).expect("root"));
    assert_eq!(trailer.check(Some(&last), None), Ok(checkpoint));

    // The line's JSON has exactly §5's fields, and no `version`.
    let line = serde_json::to_string(&trailer).expect("JSON");
    let value: serde_json::Value = serde_json::from_str(&line).expect("JSON");
    let mut fields: Vec<&str> = value.as_object().expect("object").keys().map(String::as_str).collect();
    fields.sort_unstable();
    assert_eq!(fields, ["checkpoint", "head", "head_signature", "inclusion_proof", "leaf_index", "log_key"]);
    let mut head_fields: Vec<&str> = value["head"].as_object().expect("object").keys().map(String::as_str).collect();
    head_fields.sort_unstable();
    assert_eq!(head_fields, ["hash", "stream", "version"]);
    assert_eq!(value["head"]["hash"], hex::encode(last.hash));
    assert_eq!(value["head"]["stream"], "b");
    assert_eq!(value["head"]["version"], 4);
    assert_eq!(value["leaf_index"], 9);
    assert_eq!(value["log_key"], key.verifier_key().to_string());
    assert_eq!(BASE64.decode(value["head_signature"].as_str().expect("text")).expect("base64").len(), 64);
    assert_eq!(Trailer::from_json(&line), Ok(trailer));
}

#[test]
fn an_edited_note_is_a_checkpoint_signature_finding() {
    let (mut trailer, last) = honest();
    trailer.checkpoint = trailer.checkpoint.replacen("\n12\n", "\n13\n", 1);
    assert!(matches!(trailer.check(Some(&last), None), Err(TrailerError::CheckpointSignature(_))));
    // The log key swapped for another: the note has no line of that key.
    let (mut trailer, _) = honest();
    trailer.log_key = LogKey::from_seed(DEFAULT_ORIGIN, [8; 32]).expect("a key").verifier_key().to_string();
    assert!(matches!(trailer.check(Some(&last), None), Err(TrailerError::CheckpointSignature(_))));
}

#[test]
fn a_key_not_trusted_is_its_own_finding() {
    let (trailer, last) = honest();
    let trusted = LogKey::from_seed(DEFAULT_ORIGIN, [8; 32]).expect("a key").verifier_key();
    assert_eq!(
        trailer.check(Some(&last), Some(&trusted)),
        Err(TrailerError::LogKeyNotTrusted { found: key().verifier_key().to_string(), trusted: trusted.to_string() })
    );
    // A whole trailer made by another key checks by itself, and only the
    // trusted key tells it apart.
    let impostor = LogKey::from_seed(DEFAULT_ORIGIN, [8; 32]).expect("a key");
    let forged = trailer_with(&impostor, &journal());
    assert!(forged.check(Some(&last), None).is_ok());
    assert!(matches!(
        forged.check(Some(&last), Some(&key().verifier_key())),
        Err(TrailerError::LogKeyNotTrusted { .. })
    ));
}

#[test]
fn a_head_that_is_not_the_last_event_is_named() {
    let (trailer, last) = honest();
    let later = StreamHead { version: 5, ..last.clone() };
    assert_eq!(
        trailer.check(Some(&later), None),
        Err(TrailerError::HeadNotLastEvent { head_version: 4, last_version: Some(5) })
    );
    assert_eq!(trailer.check(None, None), Err(TrailerError::HeadNotLastEvent { head_version: 4, last_version: None }));
    let other_hash = StreamHead { hash: chain("b", 99), ..last.clone() };
    assert_eq!(
        trailer.check(Some(&other_hash), None),
        Err(TrailerError::HeadHashNotLastEvent {
            version: 4,
            head_hash: hex::encode(last.hash),
            last_hash: hex::encode(other_hash.hash)
        })
    );
    let other_stream = StreamHead { stream_id: "a".to_owned(), ..last.clone() };
    assert_eq!(
        trailer.check(Some(&other_stream), None),
        Err(TrailerError::HeadStreamNotLastEvent { head_stream: "b".to_owned(), last_stream: "a".to_owned() })
    );
}

/// An export cut short with its trailer's head rewritten to match: the
/// head signature gives it away.
#[test]
fn a_flipped_or_rewritten_head_signature_is_a_head_signature_finding() {
    let (mut trailer, last) = honest();
    let mut signature = BASE64.decode(&trailer.head_signature).expect("base64");
    signature[0] ^= 1;
    trailer.head_signature = BASE64.encode(&signature);
    assert_eq!(trailer.check(Some(&last), None), Err(TrailerError::HeadSignature));

    let (mut trailer, _) = honest();
    let cut = StreamHead { version: 3, hash: chain("b", 3), ..last };
    trailer.head.version = 3;
    trailer.head.hash = hex::encode(cut.hash);
    assert_eq!(trailer.check(Some(&cut), None), Err(TrailerError::HeadSignature));
}

#[test]
fn a_flipped_proof_or_a_wrong_leaf_index_is_an_inclusion_finding() {
    let (trailer, last) = honest();
    for at in 0..trailer.inclusion_proof.len() {
        let mut bad = trailer.clone();
        let mut hash = BASE64.decode(&bad.inclusion_proof[at]).expect("base64");
        hash[5] ^= 0x10;
        bad.inclusion_proof[at] = BASE64.encode(&hash);
        assert!(matches!(
            bad.check(Some(&last), None),
            Err(TrailerError::InclusionProof(ProofError::RootMismatch { .. }))
        ));
    }
    for index in (0..12).filter(|&i| i != 9) {
        let bad = Trailer { leaf_index: index, ..trailer.clone() };
        assert!(matches!(bad.check(Some(&last), None), Err(TrailerError::InclusionProof(_))), "index {index}");
    }
    let past = Trailer { leaf_index: 12, ..trailer.clone() };
    assert_eq!(
        past.check(Some(&last), None),
        Err(TrailerError::InclusionProof(ProofError::IndexOutOfRange { index: 12, size: 12 }))
    );
    let mut short = trailer.clone();
    short.inclusion_proof.pop();
    assert!(matches!(
        short.check(Some(&last), None),
        Err(TrailerError::InclusionProof(ProofError::WrongLength { .. }))
    ));
}

#[test]
fn malformed_fields_are_named() {
    let (trailer, last) = honest();
    let field = |trailer: Trailer| match trailer.check(Some(&last), None) {
        Err(TrailerError::Malformed { field, .. }) => field,
        other => panic!("{other:?}"),
    };
    assert_eq!(field(Trailer { log_key: "nonsense".to_owned(), ..trailer.clone() }), "log_key");
    assert_eq!(field(Trailer { checkpoint: "nonsense".to_owned(), ..trailer.clone() }), "checkpoint");
    assert_eq!(field(Trailer { checkpoint: "x".repeat(MAX_NOTE_BYTES + 1), ..trailer.clone() }), "checkpoint");
    let mut upper = trailer.clone();
    upper.head.hash = upper.head.hash.to_uppercase();
    assert_eq!(field(upper), "head.hash");
    let mut short = trailer.clone();
    short.head.hash.pop();
    assert_eq!(field(short), "head.hash");
    assert_eq!(field(Trailer { head_signature: "!!".to_owned(), ..trailer.clone() }), "head_signature");
    assert_eq!(field(Trailer { head_signature: BASE64.encode([0u8; 63]), ..trailer.clone() }), "head_signature");
    let mut bad_hash = trailer.clone();
    bad_hash.inclusion_proof[0] = BASE64.encode([0u8; 31]);
    assert_eq!(field(bad_hash), "inclusion_proof");
    let mut not_b64 = trailer.clone();
    not_b64.inclusion_proof[0] = "*".to_owned();
    assert_eq!(field(not_b64), "inclusion_proof");
    let too_many = Trailer { inclusion_proof: vec![BASE64.encode([0u8; 32]); 65], ..trailer.clone() };
    assert_eq!(field(too_many), "inclusion_proof");
    // At the limit of 64 hashes the proof is read, and fails as a proof:
    // leaf 9 of 12 has 3 (PATH(1, D[8:12]) has 2, then MTH(D[0:8])).
    let at_limit = Trailer { inclusion_proof: vec![BASE64.encode([0u8; 32]); 64], ..trailer.clone() };
    assert!(matches!(
        at_limit.check(Some(&last), None),
        Err(TrailerError::InclusionProof(ProofError::WrongLength { expected: 3, found: 64 }))
    ));
}

#[test]
fn trailer_lines_over_the_limit_or_not_json_are_refused() {
    let (trailer, _) = honest();
    let line = serde_json::to_string(&trailer).expect("JSON");
    let padded = format!("{line}{}", " ".repeat(MAX_TRAILER_BYTES - line.len()));
    assert_eq!(Trailer::from_json(&padded), Ok(trailer));
    assert!(matches!(Trailer::from_json(&format!("{padded} ")), Err(TrailerError::Malformed { field: "line", .. })));
    for garbage in ["", "{}", "[]", "null", "{\"checkpoint\": 1}", "{\"leaf_index\": -1}"] {
        assert!(matches!(Trailer::from_json(garbage), Err(TrailerError::Malformed { field: "line", .. })));
    }
}

#[test]
fn kept_checkpoints_read_notes_and_bare_sizes_and_roots() {
    let journal = journal();
    let key = key();
    let root8 = journal.tree.root(8).expect("root");
    let checkpoint = key.sign_checkpoint(8, &root8);
    let kept = KeptCheckpoint::parse(&checkpoint.note, Some(&key.verifier_key())).expect("a note");
    assert_eq!(kept, KeptCheckpoint { size: 8, root: root8, note: Some(checkpoint.note.clone()) });
    assert_eq!(KeptCheckpoint::parse(&checkpoint.note, None), Ok(kept.clone()));
    // Pasted without its final newline, it is the same note.
    assert_eq!(KeptCheckpoint::parse(checkpoint.note.trim_end(), None), Ok(kept.clone()));
    // Saved with a blank line or spaces after it, too (an editor's habit).
    assert_eq!(KeptCheckpoint::parse(&format!("{}\n\n", checkpoint.note), None), Ok(kept.clone()));
    assert_eq!(KeptCheckpoint::parse(&format!("{}  \r\n", checkpoint.note.trim_end()), None), Ok(kept.clone()));
    let other = LogKey::from_seed(DEFAULT_ORIGIN, [8; 32]).expect("a key").verifier_key();
    assert!(matches!(KeptCheckpoint::parse(&checkpoint.note, Some(&other)), Err(NoteError::NoSignature { .. })));

    let bare = KeptCheckpoint { size: 8, root: root8, note: None };
    let b64 = BASE64.encode(root8);
    for text in [
        format!("8 {b64}"),
        format!("8\n{b64}\n"),
        format!("  8\t{b64}  "),
        format!("8 {}", hex::encode(root8)),
        format!("8 {}", hex::encode_upper(root8)),
    ] {
        assert_eq!(KeptCheckpoint::parse(&text, Some(&key.verifier_key())), Ok(bare.clone()), "{text:?}");
    }
    // What was kept holds the log to its past.
    let proof = journal.tree.consistency_proof(8, 12).expect("proof");
    assert_eq!(verify_consistency(bare.size, &bare.root, 12, &journal.tree.root(12).expect("root"), &proof), Ok(()));
    assert_eq!(
        KeptCheckpoint::parse(&format!("0 {}", BASE64.encode(EMPTY_ROOT)), None),
        Ok(KeptCheckpoint { size: 0, root: EMPTY_ROOT, note: None })
    );

    let field = |text: &str| match KeptCheckpoint::parse(text, None) {
        Err(NoteError::Malformed { field, .. } | NoteError::TooLarge { field, .. }) => field,
        other => panic!("{text:?}: {other:?}"),
    };
    assert_eq!(field(""), "checkpoint");
    assert_eq!(field("   \n "), "checkpoint");
    assert_eq!(field(&format!("-8 {b64}")), "size");
    assert_eq!(field(&format!("08 {b64}")), "size");
    assert_eq!(field(&format!("18446744073709551616 {b64}")), "size");
    assert_eq!(field("8 nothex"), "root");
    assert_eq!(field(&format!("8 {}", BASE64.encode([0u8; 31]))), "root");
    assert_eq!(field(&format!("8 {}", &hex::encode(root8)[1..])), "root");
    assert_eq!(field(&format!("0 {b64}")), "root");
    assert_eq!(field("8"), "note");
    assert_eq!(field(&format!("8 {b64} extra")), "note");
    assert_eq!(field(&"8 ".repeat(MAX_NOTE_BYTES)), "checkpoint");
    // Garbage of many shapes: errors, never a panic.
    for garbage in ["\u{2014}", "\n\n", "🙂 🙂", "\0 \0", "8 ====", "8 \u{2014}", "18446744073709551615 x"] {
        assert!(KeptCheckpoint::parse(garbage, Some(&key.verifier_key())).is_err(), "{garbage:?}");
    }
}
