//! No input makes the readers and verifiers panic: honest notes, keys,
//! trailers and proofs mutated many ways (a fixed-seed xorshift, so a
//! failure reruns the same), and random sizes and indexes up to u64::MAX.

use battlelog_tlog::{
    Checkpoint, DEFAULT_ORIGIN, KeptCheckpoint, LogKey, StreamHead, Trailer, Tree, VerifierKey, leaf_hash,
    verify_consistency, verify_inclusion,
};

struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// A size or index near an edge (0, 1, a power of two, u64::MAX) or anywhere.
    fn size(&mut self) -> u64 {
        match self.below(6) {
            0 => self.next() % 4,
            1 => u64::MAX - self.next() % 4,
            2 => 1u64 << self.below(64),
            3 => (1u64 << self.below(64)).wrapping_add(self.next() % 3).wrapping_sub(1),
            4 => self.next() % 100,
            _ => self.next(),
        }
    }
}

/// Inserts, deletes, replaces or duplicates a few bytes; bytes that break
/// UTF-8 become U+FFFD (the readers take `&str`).
fn mutate(rng: &mut XorShift, text: &str) -> String {
    const PIECES: &[&str] = &["\n", "\n\n", " ", "+", "\u{2014} ", "=", "0", "/", "\0", "\u{2014}", "é", "AAAA"];
    let mut bytes = text.as_bytes().to_vec();
    for _ in 0..=rng.below(3) {
        let at = rng.below(bytes.len() + 1);
        match rng.below(5) {
            0 if at < bytes.len() => bytes[at] ^= 1 << rng.below(8),
            1 if at < bytes.len() => {
                let end = (at + rng.below(8)).min(bytes.len());
                bytes.drain(at..end);
            }
            2 => {
                let piece = PIECES[rng.below(PIECES.len())].as_bytes();
                bytes.splice(at..at, piece.iter().copied());
            }
            3 if at < bytes.len() => {
                let end = (at + rng.below(16)).min(bytes.len());
                let copy = bytes[at..end].to_vec();
                bytes.splice(at..at, copy);
            }
            _ => bytes.truncate(at),
        }
    }
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

#[test]
fn mutated_notes_keys_and_trailers_never_panic() {
    let key = LogKey::from_seed(DEFAULT_ORIGIN, [7; 32]).expect("a key");
    let verifier = key.verifier_key();
    let mut tree = Tree::new();
    for i in 0..9u64 {
        tree.push(leaf_hash("s", i, &[i as u8; 32]));
    }
    let head = StreamHead { stream_id: "s".to_owned(), version: 8, hash: [8; 32] };
    let checkpoint = key.sign_checkpoint(9, &tree.root(9).expect("root"));
    let proof = tree.inclusion_proof(8, 9).expect("proof");
    let trailer = Trailer::new(&checkpoint, &verifier, &head, &key.sign_head(&head, 9), 8, &proof);
    let line = serde_json::to_string(&trailer).expect("JSON");
    assert!(trailer.check(Some(&head), Some(&verifier)).is_ok());

    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    let (mut notes_opened, mut trailers_read) = (0, 0);
    for _ in 0..4000 {
        let note = mutate(&mut rng, &checkpoint.note);
        notes_opened += usize::from(Checkpoint::open(&note, &verifier).is_ok());
        let _ = Checkpoint::parse_unverified(&note);
        let _ = KeptCheckpoint::parse(&note, Some(&verifier));
        let _ = KeptCheckpoint::parse(&mutate(&mut rng, "9 q2z1p8mTX9s3rY3kl2E1cwJ3f8Yk7Zy2w9QyLq8N1mA="), None);
        let _ = VerifierKey::parse(&mutate(&mut rng, &verifier.to_string()));
        let _ = LogKey::parse(&mutate(&mut rng, &key.to_text()));
        if let Ok(mutated) = Trailer::from_json(&mutate(&mut rng, &line)) {
            trailers_read += 1;
            let _ = mutated.check(Some(&head), Some(&verifier));
            let _ = mutated.check(None, None);
        }
        // Field by field, so the JSON stays readable and the check runs deep.
        let mut fields = trailer.clone();
        match rng.below(5) {
            0 => fields.checkpoint = mutate(&mut rng, &fields.checkpoint),
            1 => fields.log_key = mutate(&mut rng, &fields.log_key),
            2 => fields.head.hash = mutate(&mut rng, &fields.head.hash),
            3 => fields.head_signature = mutate(&mut rng, &fields.head_signature),
            _ => {
                let at = rng.below(fields.inclusion_proof.len());
                fields.inclusion_proof[at] = mutate(&mut rng, &fields.inclusion_proof[at]);
            }
        }
        fields.leaf_index = if rng.below(4) == 0 { rng.size() } else { 8 };
        let _ = fields.check(Some(&head), Some(&verifier));
    }
    // The mutations were not all rejected at the door: some notes still
    // opened (a change after the signature line's end), many trailers parsed.
    assert!(trailers_read > 100, "only {trailers_read} mutated trailers parsed");
    assert!(notes_opened < 4000);
}

#[test]
fn random_sizes_indexes_and_proofs_never_panic() {
    let mut rng = XorShift(0x2545_f491_4f6c_dd1d);
    let mut tree = Tree::new();
    for i in 0..40u64 {
        tree.push(leaf_hash("s", i, &[0; 32]));
    }
    for _ in 0..20_000 {
        let (a, b) = (rng.size(), rng.size());
        let proof: Vec<[u8; 32]> = (0..rng.below(70)).map(|i| [i as u8; 32]).collect();
        let (x, y) = ([rng.next() as u8; 32], [rng.next() as u8; 32]);
        let _ = verify_inclusion(a, b, &x, &proof, &y);
        let _ = verify_consistency(a, &x, b, &y, &proof);
        let _ = tree.root(a);
        let _ = tree.inclusion_proof(a, b);
        let _ = tree.consistency_proof(a, b);
        let (small_a, small_b) = (a % 42, b % 42);
        let _ = tree.inclusion_proof(small_a, small_b);
        let _ = tree.consistency_proof(small_a, small_b);
    }
}
