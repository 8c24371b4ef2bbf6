//! The tree and its proofs against RFC 6962 §2.1's definitions, written
//! out here a third time: MTH, PATH(m, D[n]) and PROOF/SUBPROOF(m, D[n], b)
//! over leaves made in the test.
//!
//! Which way round the implementations are: `Tree` proves with
//! `tlog_tiles` (Go's sumdb/tlog), `verify_inclusion`/`verify_consistency`
//! are the crate's own code from RFC 9162's algorithms, and the
//! definitions below are a third, recursive reading of the RFC. Every
//! proof is also checked with `tlog_tiles::check_record`/`check_tree`.

use battlelog_tlog::{
    EMPTY_ROOT, Hash, ProofError, Tree, leaf_hash, leaf_input, node_hash, verify_consistency, verify_inclusion,
};
use sha2::{Digest, Sha256};

// ---- RFC 6962 §2.1, by its recursive definitions -------------------------

fn sha256(parts: &[&[u8]]) -> Hash {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part);
    }
    hasher.finalize().into()
}

/// The largest power of two smaller than n (n > 1).
fn split(n: usize) -> usize {
    let mut k = 1;
    while k * 2 < n {
        k *= 2;
    }
    k
}

/// MTH(D[n]) over leaf hashes: the empty string's hash, the leaf hash, or
/// SHA-256(0x01 || MTH(D[0:k]) || MTH(D[k:n])).
fn mth(leaves: &[Hash]) -> Hash {
    match leaves.len() {
        0 => sha256(&[]),
        1 => leaves[0],
        n => {
            let k = split(n);
            sha256(&[&[1], &mth(&leaves[..k]), &mth(&leaves[k..])])
        }
    }
}

/// PATH(m, D[n]).
fn path(m: usize, leaves: &[Hash]) -> Vec<Hash> {
    let n = leaves.len();
    if n == 1 {
        return vec![];
    }
    let k = split(n);
    if m < k {
        let mut p = path(m, &leaves[..k]);
        p.push(mth(&leaves[k..]));
        p
    } else {
        let mut p = path(m - k, &leaves[k..]);
        p.push(mth(&leaves[..k]));
        p
    }
}

/// SUBPROOF(m, D[n], b).
fn subproof(m: usize, leaves: &[Hash], b: bool) -> Vec<Hash> {
    let n = leaves.len();
    if m == n {
        return if b { vec![] } else { vec![mth(leaves)] };
    }
    let k = split(n);
    if m <= k {
        let mut p = subproof(m, &leaves[..k], b);
        p.push(mth(&leaves[k..]));
        p
    } else {
        let mut p = subproof(m - k, &leaves[k..], false);
        p.push(mth(&leaves[..k]));
        p
    }
}

/// PROOF(m, D[n]); from 0 it is empty (nothing to be consistent with).
fn proof(m: usize, leaves: &[Hash]) -> Vec<Hash> {
    if m == 0 { vec![] } else { subproof(m, leaves, true) }
}

// ---- the leaves ----------------------------------------------------------

const MAX: usize = 64;

/// Leaves of the §5 form over two streams, each with its own versions and
/// made-up chain hashes.
fn leaves(count: usize) -> Vec<Hash> {
    (0..count)
        .map(|i| {
            let stream = if i % 3 == 0 { "battle-a" } else { "battle-b" };
            let chain = sha256(&[b"chain", &(i as u64).to_be_bytes()]);
            leaf_hash(stream, (i / 2) as u64, &chain)
        })
        .collect()
}

fn tree_of(leaves: &[Hash]) -> Tree {
    let mut tree = Tree::new();
    for (i, leaf) in leaves.iter().enumerate() {
        assert_eq!(tree.push(*leaf), i as u64);
    }
    tree
}

fn flipped(proof: &[Hash], at: usize) -> Vec<Hash> {
    let mut proof = proof.to_vec();
    proof[at][at % 32] ^= 0x01;
    proof
}

fn tl(hash: &Hash) -> tlog_tiles::Hash {
    tlog_tiles::Hash(*hash)
}

fn tl_proof(proof: &[Hash]) -> Vec<tlog_tiles::Hash> {
    proof.iter().map(tl).collect()
}

// ---- the tests -----------------------------------------------------------

#[test]
fn the_hashes_are_rfc_6962s() {
    assert_eq!(EMPTY_ROOT, sha256(&[]));
    let (a, b) = (sha256(&[b"a"]), sha256(&[b"b"]));
    assert_eq!(node_hash(&a, &b), sha256(&[&[1], &a, &b]));
    let chain = [7u8; 32];
    assert_eq!(leaf_hash("s", 3, &chain), sha256(&[&[0], &leaf_input("s", 3, &chain)]));
}

#[test]
fn roots_are_mth_for_every_size() {
    let all = leaves(MAX + 1);
    let tree = tree_of(&all);
    for size in 0..=MAX + 1 {
        let expected = mth(&all[..size]);
        assert_eq!(tree.root(size as u64), Ok(expected), "root at size {size}");
        // The tree grown only to this size agrees with the bigger one.
        assert_eq!(tree_of(&all[..size]).root(size as u64), Ok(expected), "root of a tree of {size}");
    }
}

#[test]
fn inclusion_proofs_are_path_and_verify_and_nothing_else_does() {
    let all = leaves(MAX + 1);
    let tree = tree_of(&all);
    let roots: Vec<Hash> = (0..=MAX + 1).map(|size| mth(&all[..size])).collect();
    for size in 1..=MAX {
        let root = roots[size];
        for index in 0..size {
            let leaf = all[index];
            let proof = tree.inclusion_proof(index as u64, size as u64).expect("a proof");
            assert_eq!(proof, path(index, &all[..size]), "PATH({index}, D[{size}])");
            let (i, n) = (index as u64, size as u64);
            assert_eq!(verify_inclusion(i, n, &leaf, &proof, &root), Ok(()), "leaf {index} of {size}");
            tlog_tiles::check_record(&tl_proof(&proof), n, tl(&root), i, tl(&leaf))
                .unwrap_or_else(|e| panic!("tlog refuses leaf {index} of {size}: {e}"));

            for at in 0..proof.len() {
                let bad = flipped(&proof, at);
                assert!(verify_inclusion(i, n, &leaf, &bad, &root).is_err(), "hash {at} flipped, {index} of {size}");
                let mut dropped = proof.clone();
                dropped.remove(at);
                assert!(matches!(verify_inclusion(i, n, &leaf, &dropped, &root), Err(ProofError::WrongLength { .. })));
            }
            for extra_at in [0, proof.len()] {
                let mut extra = proof.clone();
                extra.insert(extra_at, root);
                assert!(matches!(verify_inclusion(i, n, &leaf, &extra, &root), Err(ProofError::WrongLength { .. })));
            }
            // The same proof for every other leaf of the tree is refused.
            for other in (0..size).filter(|&o| o != index) {
                assert!(
                    verify_inclusion(other as u64, n, &leaf, &proof, &root).is_err(),
                    "leaf {index}'s proof passed as leaf {other} of {size}"
                );
                assert!(verify_inclusion(i, n, &all[other], &proof, &root).is_err());
            }
            // And for the trees one smaller and one larger, with their roots.
            if index < size - 1 && path(index, &all[..size - 1]) != proof {
                assert!(verify_inclusion(i, n - 1, &leaf, &proof, &roots[size - 1]).is_err());
            }
            if path(index, &all[..=size]) != proof {
                assert!(verify_inclusion(i, n + 1, &leaf, &proof, &roots[size + 1]).is_err());
            }
            assert!(matches!(
                verify_inclusion(i, n, &leaf, &proof, &roots[size - 1]),
                Err(ProofError::RootMismatch { .. })
            ));
        }
        assert_eq!(
            verify_inclusion(size as u64, size as u64, &all[0], &[], &root),
            Err(ProofError::IndexOutOfRange { index: size as u64, size: size as u64 })
        );
    }
}

#[test]
fn consistency_proofs_are_proof_and_verify_and_nothing_else_does() {
    let all = leaves(MAX + 1);
    let tree = tree_of(&all);
    let roots: Vec<Hash> = (0..=MAX + 1).map(|size| mth(&all[..size])).collect();
    for new in 0..=MAX {
        for old in 0..=new {
            let (o, n) = (old as u64, new as u64);
            let p = tree.consistency_proof(o, n).expect("a proof");
            assert_eq!(p, proof(old, &all[..new]), "PROOF({old}, D[{new}])");
            assert_eq!(verify_consistency(o, &roots[old], n, &roots[new], &p), Ok(()), "{old} -> {new}");
            if old > 0 {
                tlog_tiles::check_tree(&tl_proof(&p), n, tl(&roots[new]), o, tl(&roots[old]))
                    .unwrap_or_else(|e| panic!("tlog refuses {old} -> {new}: {e}"));
            }

            for at in 0..p.len() {
                let bad = flipped(&p, at);
                assert!(verify_consistency(o, &roots[old], n, &roots[new], &bad).is_err(), "{old}->{new} flip {at}");
                let mut dropped = p.clone();
                dropped.remove(at);
                assert!(matches!(
                    verify_consistency(o, &roots[old], n, &roots[new], &dropped),
                    Err(ProofError::WrongLength { .. })
                ));
            }
            for extra_at in [0, p.len()] {
                let mut extra = p.clone();
                extra.insert(extra_at, roots[new]);
                assert!(matches!(
                    verify_consistency(o, &roots[old], n, &roots[new], &extra),
                    Err(ProofError::WrongLength { .. })
                ));
            }
            // Other sizes, each with its own root, do not pass with this
            // proof (unless it is theirs too: the empty proof from 0 and
            // between equal sizes).
            for other in (0..=new).filter(|&x| x != old && proof(x, &all[..new]) != p) {
                assert!(
                    verify_consistency(other as u64, &roots[other], n, &roots[new], &p).is_err(),
                    "PROOF({old}, D[{new}]) passed from {other}"
                );
            }
            if new < MAX && proof(old, &all[..=new]) != p {
                assert!(verify_consistency(o, &roots[old], n + 1, &roots[new + 1], &p).is_err(), "{old}->{new}+1");
            }
            // A rewritten past: the old root of another tree.
            if old > 0 {
                let mut forged = roots[old];
                forged[0] ^= 0x80;
                assert!(verify_consistency(o, &forged, n, &roots[new], &p).is_err());
            }
            // From 0 any tree is consistent: there is no new root to forge.
            if old > 0 {
                let mut forged = roots[new];
                forged[31] ^= 0x01;
                assert!(verify_consistency(o, &roots[old], n, &forged, &p).is_err());
            }
        }
    }
}

#[test]
fn the_tree_stores_about_two_hashes_a_leaf() {
    let mut tree = Tree::new();
    let base = tree.memory_bytes();
    let count = 1024u64;
    for leaf in leaves(count as usize) {
        tree.push(leaf);
    }
    // tlog's count of stored hashes for 1024 records, 2n - popcount(n) + levels:
    // 2047 here; allow the vector's growth on top.
    let stored = tlog_tiles::stored_hash_count(count) as usize;
    assert!(stored < 2 * count as usize, "{stored} stored hashes for {count} leaves");
    let bytes = tree.memory_bytes() - base;
    assert!(bytes >= stored * 32 && bytes <= 2 * stored * 32, "{bytes} bytes for {stored} hashes");
}

#[test]
fn sizes_and_indexes_out_of_range_are_errors() {
    let tree = tree_of(&leaves(5));
    assert_eq!(tree.root(6), Err(ProofError::SizeOutOfRange { size: 6, tree_size: 5 }));
    assert_eq!(tree.root(u64::MAX), Err(ProofError::SizeOutOfRange { size: u64::MAX, tree_size: 5 }));
    assert_eq!(tree.inclusion_proof(0, 0), Err(ProofError::EmptyTree));
    assert_eq!(tree.inclusion_proof(5, 5), Err(ProofError::IndexOutOfRange { index: 5, size: 5 }));
    assert_eq!(tree.inclusion_proof(u64::MAX, 5), Err(ProofError::IndexOutOfRange { index: u64::MAX, size: 5 }));
    assert_eq!(tree.inclusion_proof(0, 6), Err(ProofError::SizeOutOfRange { size: 6, tree_size: 5 }));
    assert_eq!(tree.consistency_proof(3, 2), Err(ProofError::OldSizeAfterNew { old_size: 3, new_size: 2 }));
    assert_eq!(tree.consistency_proof(0, 6), Err(ProofError::SizeOutOfRange { size: 6, tree_size: 5 }));
    assert_eq!(tree.consistency_proof(0, 0), Ok(vec![]));
    assert_eq!(tree.consistency_proof(0, 5), Ok(vec![]));
    assert_eq!(tree.consistency_proof(5, 5), Ok(vec![]));
}

#[test]
fn empty_trees_and_huge_sizes_never_panic() {
    let leaf = [1u8; 32];
    let root = [2u8; 32];
    assert_eq!(verify_inclusion(0, 0, &leaf, &[], &root), Err(ProofError::EmptyTree));
    assert_eq!(verify_consistency(0, &EMPTY_ROOT, 0, &EMPTY_ROOT, &[]), Ok(()));
    assert_eq!(verify_consistency(0, &EMPTY_ROOT, 7, &root, &[]), Ok(()));
    assert!(matches!(verify_consistency(0, &root, 7, &root, &[]), Err(ProofError::OldRootMismatch { .. })));
    assert!(matches!(verify_consistency(0, &EMPTY_ROOT, 0, &root, &[]), Err(ProofError::RootMismatch { .. })));
    assert!(matches!(verify_consistency(0, &EMPTY_ROOT, 7, &root, &[root]), Err(ProofError::WrongLength { .. })));
    assert!(matches!(verify_consistency(3, &root, 3, &root, &[root]), Err(ProofError::WrongLength { .. })));
    assert!(matches!(verify_consistency(3, &leaf, 3, &root, &[]), Err(ProofError::OldRootMismatch { .. })));
    assert_eq!(
        verify_consistency(u64::MAX, &root, 1, &root, &[]),
        Err(ProofError::OldSizeAfterNew { old_size: u64::MAX, new_size: 1 })
    );
    // Proofs of every length up to past the deepest tree, at the largest
    // sizes and indexes: an error each time, never an overflow or a panic.
    for length in [0, 1, 2, 63, 64, 65, 200] {
        let proof = vec![[3u8; 32]; length];
        for (index, size) in [(0, u64::MAX), (u64::MAX - 1, u64::MAX), (u64::MAX / 2, u64::MAX), (u64::MAX, u64::MAX)] {
            assert!(verify_inclusion(index, size, &leaf, &proof, &root).is_err());
        }
        for (old, new) in [(1, u64::MAX), (u64::MAX - 1, u64::MAX), (1 << 63, u64::MAX), (u64::MAX, u64::MAX)] {
            // Distinct roots, so that equal sizes with the empty proof fail too.
            assert!(verify_consistency(old, &leaf, new, &root, &proof).is_err());
        }
    }
    // The deepest trees' proofs have 64 hashes; one more is refused by length.
    assert!(matches!(
        verify_inclusion(0, u64::MAX, &leaf, &[[0u8; 32]; 65], &root),
        Err(ProofError::WrongLength { expected: 64, found: 65 })
    ));
}
