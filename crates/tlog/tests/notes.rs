//! Keys, signed checkpoints and signed heads, checked against a second
//! implementation of C2SP signed-note (`signed_note`, a port of Go's note
//! package) and tlog-checkpoint (`tlog_tiles`), and against §5's formulas
//! computed here.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use battlelog_tlog::{
    Checkpoint, DEFAULT_ORIGIN, KeyError, LogKey, MAX_NOTE_BYTES, MAX_NOTE_SIGNATURES, NoteError, StreamHead,
    VerifierKey, head_message, verify_head,
};
use ed25519_dalek::Verifier as _;
use sha2::{Digest, Sha256};
use signed_note::{Note, StandardSigner, StandardVerifier, VerifierList};

const SEED: [u8; 32] = [7; 32];

fn key() -> LogKey {
    LogKey::from_seed(DEFAULT_ORIGIN, SEED).expect("a key")
}

fn root() -> [u8; 32] {
    Sha256::digest(b"a root").into()
}

fn verifiers(key: &VerifierKey) -> VerifierList {
    VerifierList::new(vec![Box::new(StandardVerifier::new(&key.to_string()).expect("signed_note reads our key"))])
}

#[test]
fn the_key_id_is_the_protocols_formula() {
    let verifier = key().verifier_key();
    let public = ed25519_dalek::SigningKey::from_bytes(&SEED).verifying_key().to_bytes();
    let mut input = DEFAULT_ORIGIN.as_bytes().to_vec();
    input.push(0x0a);
    input.push(0x01);
    input.extend_from_slice(&public);
    let digest = Sha256::digest(&input);
    let expected = u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]]);
    assert_eq!(verifier.key_id(), expected);
    assert_eq!(verifier.public_key(), public);
    let mut key_bytes = vec![0x01];
    key_bytes.extend_from_slice(&public);
    assert_eq!(verifier.to_string(), format!("{DEFAULT_ORIGIN}+{expected:08x}+{}", BASE64.encode(&key_bytes)));
    // And as signed_note writes a verifier key.
    let dalek = ed25519_dalek::VerifyingKey::from_bytes(&public).expect("a key");
    assert_eq!(verifier.to_string(), signed_note::new_ed25519_verifier_key(DEFAULT_ORIGIN, &dalek));
    assert_eq!(signed_note::key_id(DEFAULT_ORIGIN, &key_bytes), expected);
}

#[test]
fn our_checkpoint_verifies_with_signed_note_and_parses_with_tlog_tiles() {
    let key = key();
    let checkpoint = key.sign_checkpoint(12, &root());
    assert_eq!(checkpoint.origin, DEFAULT_ORIGIN);
    assert_eq!(checkpoint.size, 12);
    assert_eq!(checkpoint.root, root());
    let text = format!("{DEFAULT_ORIGIN}\n12\n{}\n", BASE64.encode(root()));
    assert!(checkpoint.note.starts_with(&format!("{text}\n\u{2014} {DEFAULT_ORIGIN} ")));

    let note = Note::from_bytes(checkpoint.note.as_bytes()).expect("signed_note reads the note");
    assert_eq!(note.text(), text.as_bytes());
    let (verified, unverified) = note.verify(&verifiers(&key.verifier_key())).expect("signed_note verifies it");
    assert_eq!(verified.len(), 1);
    assert!(unverified.is_empty());
    assert_eq!(verified[0].id(), key.verifier_key().key_id());

    let parsed = tlog_tiles::Checkpoint::from_bytes(note.text()).expect("tlog_tiles reads the checkpoint");
    assert_eq!(parsed.origin(), DEFAULT_ORIGIN);
    assert_eq!(parsed.size(), 12);
    assert_eq!(parsed.hash().0, root());
    assert_eq!(parsed.extension(), "");

    // The signature line's bytes: key id (big-endian) then 64 signature bytes over the text.
    let line = checkpoint.note.lines().last().expect("a signature line");
    let encoded = line.rsplit(' ').next().expect("base64");
    let bytes = BASE64.decode(encoded).expect("base64");
    assert_eq!(bytes.len(), 68);
    assert_eq!(bytes[..4], key.verifier_key().key_id().to_be_bytes());
    let signature = ed25519_dalek::Signature::from_slice(&bytes[4..]).expect("64 bytes");
    let public = ed25519_dalek::VerifyingKey::from_bytes(&key.verifier_key().public_key()).expect("a key");
    public.verify(text.as_bytes(), &signature).expect("the signature is over the note text");

    assert_eq!(Checkpoint::open(&checkpoint.note, &key.verifier_key()), Ok(checkpoint.clone()));
    assert_eq!(Checkpoint::parse_unverified(&checkpoint.note), Ok(checkpoint));
}

/// The reverse direction: signed_note signs with our private key's text,
/// and the note is byte for byte ours (Ed25519 is deterministic).
#[test]
fn a_note_signed_by_signed_note_opens_and_is_ours() {
    let key = key();
    let signer = StandardSigner::new(&key.to_text()).expect("signed_note reads our private key");
    let text = format!("{DEFAULT_ORIGIN}\n12\n{}\n", BASE64.encode(root()));
    let mut note = Note::new(text.as_bytes(), &[]).expect("a note");
    note.add_sigs(&[&signer]).expect("signed");
    let signed = String::from_utf8(note.to_bytes()).expect("UTF-8");
    assert_eq!(signed, key.sign_checkpoint(12, &root()).note);
    let opened = Checkpoint::open(&signed, &key.verifier_key()).expect("opens");
    assert_eq!((opened.size, opened.root), (12, root()));
}

/// Other signature lines (a witness's) are ignored, before or after ours.
#[test]
fn other_signatures_are_ignored() {
    let key = key();
    let witness_key = LogKey::from_seed("witness.example/w1", [9; 32]).expect("a key");
    let witness = StandardSigner::new(&witness_key.to_text()).expect("a signer");
    let ours = StandardSigner::new(&key.to_text()).expect("a signer");
    let text = format!("{DEFAULT_ORIGIN}\n12\n{}\n", BASE64.encode(root()));
    for order in [[&witness as &dyn signed_note::Signer, &ours], [&ours, &witness]] {
        let mut note = Note::new(text.as_bytes(), &[]).expect("a note");
        note.add_sigs(&order).expect("signed");
        let signed = String::from_utf8(note.to_bytes()).expect("UTF-8");
        assert_eq!(signed.lines().filter(|l| l.starts_with('\u{2014}')).count(), 2);
        let opened = Checkpoint::open(&signed, &key.verifier_key()).expect("opens with the log's line");
        assert_eq!(opened.size, 12);
        // Only the witness's line: not the log's signature.
        assert!(matches!(
            Checkpoint::open(&signed, &witness_key.verifier_key()),
            Err(NoteError::OriginMismatch { .. })
        ));
    }
}

#[test]
fn a_note_with_any_byte_changed_is_refused() {
    let key = key();
    let note = key.sign_checkpoint(12, &root()).note;
    let verifier = key.verifier_key();
    let mut refused = 0;
    for at in 0..note.len() {
        for bit in [0x01u8, 0x20] {
            let mut bytes = note.clone().into_bytes();
            bytes[at] ^= bit;
            // A change that breaks UTF-8 cannot even be given as a note.
            let Ok(changed) = String::from_utf8(bytes) else { continue };
            assert!(Checkpoint::open(&changed, &verifier).is_err(), "byte {at} ^ {bit:#x} accepted: {changed:?}");
            refused += 1;
        }
    }
    assert!(refused > note.len(), "only {refused} changes tried");
    // A text edit that keeps the form is a bad signature, by name.
    let edited = note.replacen("\n12\n", "\n13\n", 1);
    assert_eq!(
        Checkpoint::open(&edited, &verifier),
        Err(NoteError::BadSignature { origin: DEFAULT_ORIGIN.to_owned(), key_id: verifier.key_id() })
    );
    // signed_note agrees.
    let theirs = Note::from_bytes(edited.as_bytes()).expect("well-formed");
    assert!(theirs.verify(&verifiers(&verifier)).is_err());
}

#[test]
fn a_wrong_key_or_another_origin_is_refused() {
    let note = key().sign_checkpoint(12, &root()).note;
    let other = LogKey::from_seed(DEFAULT_ORIGIN, [8; 32]).expect("a key").verifier_key();
    assert_eq!(
        Checkpoint::open(&note, &other),
        Err(NoteError::NoSignature { origin: DEFAULT_ORIGIN.to_owned(), key_id: other.key_id() })
    );
    // The same seed under another origin: another key id, another log.
    let elsewhere = LogKey::from_seed("other.example/log", SEED).expect("a key");
    assert_eq!(
        Checkpoint::open(&note, &elsewhere.verifier_key()),
        Err(NoteError::OriginMismatch { found: DEFAULT_ORIGIN.to_owned(), expected: "other.example/log".to_owned() })
    );
    let foreign = elsewhere.sign_checkpoint(12, &root()).note;
    assert!(matches!(Checkpoint::open(&foreign, &key().verifier_key()), Err(NoteError::OriginMismatch { .. })));
    // A line with our name and key id but another key's signature.
    let forged = LogKey::from_seed(DEFAULT_ORIGIN, [8; 32]).expect("a key").sign_checkpoint(12, &root()).note;
    let (text, _) = forged.split_once("\n\n").expect("a note");
    let their_line = forged.lines().last().expect("a line");
    let their_sig = &BASE64.decode(their_line.rsplit(' ').next().expect("b64")).expect("b64")[4..];
    let mut ours = key().verifier_key().key_id().to_be_bytes().to_vec();
    ours.extend_from_slice(their_sig);
    let spliced = format!("{text}\n\n\u{2014} {DEFAULT_ORIGIN} {}\n", BASE64.encode(ours));
    assert!(matches!(Checkpoint::open(&spliced, &key().verifier_key()), Err(NoteError::BadSignature { .. })));
}

#[test]
fn keys_round_trip_and_bad_ones_are_refused_by_name() {
    let key = key();
    let text = key.to_text();
    assert!(text.starts_with(&format!("PRIVATE+KEY+{DEFAULT_ORIGIN}+")));
    let parsed = LogKey::parse(&format!("{text}\n")).expect("reads back, trailing newline ok");
    assert_eq!(parsed.verifier_key(), key.verifier_key());
    assert_eq!(parsed.to_text(), text);
    assert_eq!(parsed.origin(), DEFAULT_ORIGIN);
    assert!(!format!("{key:?}").contains(text.rsplit('+').next().expect("seed")), "Debug shows no seed");
    let verifier = key.verifier_key();
    assert_eq!(VerifierKey::parse(&format!("{verifier}\n")), Ok(verifier.clone()));
    assert_eq!(verifier.origin(), DEFAULT_ORIGIN);

    for origin in ["", "a b", "a+b", "a\nb", "a\tb"] {
        assert!(matches!(LogKey::from_seed(origin, SEED), Err(KeyError::Origin { .. })), "{origin:?}");
    }
    let vtext = verifier.to_string();
    let (name, rest) = vtext.split_once('+').expect("+");
    let (id, b64) = rest.split_once('+').expect("+");
    let wrong_id = format!("{name}+{:08x}+{b64}", verifier.key_id() ^ 1);
    assert_eq!(
        VerifierKey::parse(&wrong_id),
        Err(KeyError::KeyId { found: verifier.key_id() ^ 1, computed: verifier.key_id() })
    );
    let mut alg2 = BASE64.decode(b64).expect("b64");
    alg2[0] = 2;
    assert_eq!(VerifierKey::parse(&format!("{name}+{id}+{}", BASE64.encode(&alg2))), Err(KeyError::Algorithm(2)));
    for bad in [
        "",
        "origin",
        "origin+1234",
        &format!("{name}+1234567+{b64}"),
        &format!("{name}+1234567g+{b64}"),
        &format!("{name}+{id}+not base64"),
        &format!("{name}+{id}+{}", BASE64.encode([1u8; 20])),
        &format!("{name}+{id}+"),
        &format!(" {vtext}"),
        &format!("a b+{id}+{b64}"),
    ] {
        let error = VerifierKey::parse(bad).expect_err(bad);
        assert!(!error.to_string().is_empty());
    }
    for bad in ["", "PRIVATE+KEY+", &vtext, &text.replace("PRIVATE+KEY", "PRIVATE+KEX"), &text[..text.len() - 4]] {
        assert!(LogKey::parse(bad).is_err(), "{bad:?}");
    }
    let (head, seed) = text.rsplit_once('+').expect("+");
    let (head, _) = head.rsplit_once('+').expect("+");
    assert!(matches!(
        LogKey::parse(&format!("{head}+{:08x}+{seed}", verifier.key_id() ^ 1)),
        Err(KeyError::KeyId { .. })
    ));
}

#[test]
fn signed_heads_verify_and_any_change_is_refused() {
    let key = key();
    let verifier = key.verifier_key();
    let head = StreamHead { stream_id: "battle-1".to_owned(), version: 4, hash: root() };
    let signature = key.sign_head(&head, 12);
    assert_eq!(verify_head(&verifier, &head, 12, &signature), Ok(()));
    // Ed25519 over §5's bytes, checked with the Ed25519 crate itself.
    let public = ed25519_dalek::VerifyingKey::from_bytes(&verifier.public_key()).expect("a key");
    public.verify(&head_message(&head, 12), &ed25519_dalek::Signature::from_bytes(&signature)).expect("verifies");

    let refused = NoteError::HeadSignature { origin: DEFAULT_ORIGIN.to_owned(), key_id: verifier.key_id() };
    assert_eq!(verify_head(&verifier, &head, 13, &signature), Err(refused.clone()));
    let cut_short = StreamHead { version: 3, ..head.clone() };
    assert_eq!(verify_head(&verifier, &cut_short, 12, &signature), Err(refused.clone()));
    let other_stream = StreamHead { stream_id: "battle-2".to_owned(), ..head.clone() };
    assert_eq!(verify_head(&verifier, &other_stream, 12, &signature), Err(refused.clone()));
    let other_hash = StreamHead { hash: [0; 32], ..head.clone() };
    assert_eq!(verify_head(&verifier, &other_hash, 12, &signature), Err(refused.clone()));
    let mut flipped = signature;
    flipped[10] ^= 1;
    assert_eq!(verify_head(&verifier, &head, 12, &flipped), Err(refused));
    let other_key = LogKey::from_seed(DEFAULT_ORIGIN, [8; 32]).expect("a key").verifier_key();
    assert!(matches!(verify_head(&other_key, &head, 12, &signature), Err(NoteError::HeadSignature { .. })));
    for length in [0, 63, 65] {
        assert_eq!(
            verify_head(&verifier, &head, 12, &vec![0; length]),
            Err(NoteError::SignatureLength { found: length })
        );
    }
}

#[test]
fn malformed_notes_are_errors_naming_the_part() {
    let key = key();
    let good = key.sign_checkpoint(12, &root()).note;
    let field = |note: &str| match Checkpoint::parse_unverified(note) {
        Err(NoteError::Malformed { field, .. }) => field,
        Err(NoteError::TooLarge { field, .. }) => field,
        other => panic!("{note:?}: {other:?}"),
    };
    let b64 = BASE64.encode(root());
    let sig = good.split_once("\n\n").expect("note").1;
    assert_eq!(field(""), "note");
    assert_eq!(field("no blank line\n"), "note");
    assert_eq!(field(&format!("o\n012\n{b64}\n\n{sig}")), "size");
    assert_eq!(field(&format!("o\n+12\n{b64}\n\n{sig}")), "size");
    assert_eq!(field(&format!("o\n18446744073709551616\n{b64}\n\n{sig}")), "size");
    assert_eq!(field(&format!("o\n12\n{}\n\n{sig}", BASE64.encode([0u8; 31]))), "root");
    assert_eq!(field(&format!("o\n12\n{}\n\n{sig}", hex::encode(root()))), "root");
    assert_eq!(field(&format!("o\n12\n\n{sig}")), "checkpoint");
    assert_eq!(field(&format!("\n12\n{b64}\n\n{sig}")), "origin");
    assert_eq!(field(&format!("o\n12\n{b64}\n\n{}", sig.trim_end())), "signature");
    assert_eq!(field(&format!("o\n12\n{b64}\n\n- o AAAAAAAA\n")), "signature");
    assert_eq!(field(&format!("o\n12\n{b64}\n\n\u{2014} o AAAA\n")), "signature");
    assert_eq!(field(&format!("o\n12\n{b64}\n\n\u{2014} o+x AAAAAAAA\n")), "signature");
    assert_eq!(field(&format!("o\n12\t\n{b64}\n\n{sig}")), "note");
    assert_eq!(field(&"x".repeat(MAX_NOTE_BYTES + 1)), "note");
    let many = sig.repeat(MAX_NOTE_SIGNATURES + 1);
    assert_eq!(field(&format!("o\n12\n{b64}\n\n{many}")), "signature lines");
    // At the limit of signature lines, the note is read.
    let enough = sig.repeat(MAX_NOTE_SIGNATURES);
    assert_eq!(Checkpoint::open(&good.replace(sig, &enough), &key.verifier_key()).map(|c| c.size), Ok(12));
    // Extension lines are carried, not refused.
    let with_extension = Checkpoint::parse_unverified(&format!("o\n12\n{b64}\nextra line\n\n{sig}")).expect("reads");
    assert_eq!(with_extension.size, 12);
    // Garbage of many shapes: errors, never a panic.
    for garbage in
        ["\n\n", "\n\n\n", "a\n\n\n", "— \n\n— ", "\u{2014}\u{2014}\n\n\u{2014} \n", "\0", "0\n0\n0\n\n— a b\n"]
    {
        assert!(Checkpoint::parse_unverified(garbage).is_err(), "{garbage:?}");
        assert!(Checkpoint::open(garbage, &key.verifier_key()).is_err(), "{garbage:?}");
    }
}
