//! The Merkle tree of docs/protocol.md §5 (RFC 6962 §2.1 hashing, RFC 9162
//! §2.1.3/§2.1.4 proofs) over the journal's global log.
//!
//! Two implementations check each other: [`Tree`] stores its hashes and
//! proves with `tlog_tiles` (Go's sumdb/tlog), while [`verify_inclusion`]
//! and [`verify_consistency`] are written here from RFC 9162's verification
//! algorithms. Neither trusts the other's code, so a proof that passes was
//! made and checked by two hands.

use sha2::{Digest, Sha256};

use crate::Hash;

/// Domain separator of a leaf's input (§5).
const LEAF_DOMAIN: &[u8] = b"battlelog/v1/leaf";

/// The hash of the empty tree, SHA-256 of the empty string (RFC 6962 §2.1).
pub const EMPTY_ROOT: Hash = [
    0xe3, 0xb0, 0xc4, 0x42, 0x98, 0xfc, 0x1c, 0x14, 0x9a, 0xfb, 0xf4, 0xc8, 0x99, 0x6f, 0xb9, 0x24, 0x27, 0xae, 0x41,
    0xe4, 0x64, 0x9b, 0x93, 0x4c, 0xa4, 0x95, 0x99, 0x1b, 0x78, 0x52, 0xb8, 0x55,
];

/// The longest proof any tree can have: one hash per level of a tree of
/// up to 2^64 leaves. Readers refuse longer lists before hashing them.
pub const MAX_PROOF_HASHES: usize = 64;

/// Why a proof could not be made or did not verify.
#[derive(Debug, thiserror::Error, PartialEq, Eq, Clone)]
pub enum ProofError {
    /// The leaf index is not below the tree size.
    #[error("leaf index {index} is not in a tree of size {size}")]
    IndexOutOfRange { index: u64, size: u64 },
    /// A tree of size 0 has no leaves to prove.
    #[error("a tree of size 0 has no leaves: nothing to prove")]
    EmptyTree,
    /// The tree asked to prove or hash a size it has not reached.
    #[error("size {size} is past the tree's {tree_size} leaves")]
    SizeOutOfRange { size: u64, tree_size: u64 },
    /// A consistency proof from a larger tree to a smaller one.
    #[error("old size {old_size} is larger than new size {new_size}")]
    OldSizeAfterNew { old_size: u64, new_size: u64 },
    /// The proof has the wrong number of hashes for its index and sizes.
    #[error("the proof has {found} hashes, the sizes need {expected}")]
    WrongLength { expected: usize, found: usize },
    /// The proof does not lead to the root it should.
    #[error("the proof leads to root {computed}, not to the tree's root {expected}")]
    RootMismatch { expected: String, computed: String },
    /// A consistency proof does not lead back to the old root.
    #[error("the proof leads to old root {computed}, not to the old tree's root {expected}")]
    OldRootMismatch { expected: String, computed: String },
    /// The tree's storage could not give a hash it needs (a bug if ever seen).
    #[error("the tree's stored hashes: {0}")]
    Storage(String),
}

/// The leaf input of §5: `"battlelog/v1/leaf"` || 0x00 || stream id ||
/// 0x00 || u64_le(version) || h(version).
///
/// The stream id is not length-prefixed, and needs not be: everything
/// after it has a fixed length (0x00, 8 and 32 bytes), so the input's
/// length fixes where the id ends, NUL bytes in it or not.
pub fn leaf_input(stream_id: &str, version: u64, chain_hash: &Hash) -> Vec<u8> {
    let mut input = Vec::with_capacity(LEAF_DOMAIN.len() + stream_id.len() + 2 + 8 + 32);
    input.extend_from_slice(LEAF_DOMAIN);
    input.push(0);
    input.extend_from_slice(stream_id.as_bytes());
    input.push(0);
    input.extend_from_slice(&version.to_le_bytes());
    input.extend_from_slice(chain_hash);
    input
}

/// The leaf hash of §5: SHA-256(0x00 || leaf input).
pub fn leaf_hash(stream_id: &str, version: u64, chain_hash: &Hash) -> Hash {
    Sha256::new().chain_update([0u8]).chain_update(leaf_input(stream_id, version, chain_hash)).finalize().into()
}

/// An interior node's hash: SHA-256(0x01 || left || right).
pub fn node_hash(left: &Hash, right: &Hash) -> Hash {
    Sha256::new().chain_update([1u8]).chain_update(left).chain_update(right).finalize().into()
}

/// Append-only tree kept incrementally: pushing a leaf stores the hashes it
/// completes (tlog's stored hashes: ~2 per leaf), never recomputes the
/// whole tree. Roots and proofs for any size up to the current one read at
/// most O(log n) stored hashes.
#[derive(Clone, Default)]
pub struct Tree {
    /// tlog's stored hashes, in `tlog_tiles::stored_hash_index` order.
    hashes: Vec<Hash>,
    size: u64,
}

/// The size and the number of stored hashes, not the hashes themselves
/// (a journal's tree holds millions).
impl std::fmt::Debug for Tree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tree").field("size", &self.size).field("stored_hashes", &self.hashes.len()).finish()
    }
}

/// The stored hashes as tlog reads them.
struct Stored<'a>(&'a [Hash]);

impl tlog_tiles::HashReader for Stored<'_> {
    fn read_hashes(&self, indexes: &[u64]) -> Result<Vec<tlog_tiles::Hash>, tlog_tiles::Error> {
        indexes
            .iter()
            .map(|&index| {
                usize::try_from(index)
                    .ok()
                    .and_then(|i| self.0.get(i))
                    .map(|h| tlog_tiles::Hash(*h))
                    .ok_or(tlog_tiles::Error::IndexesNotInTree)
            })
            .collect()
    }
}

fn storage(error: tlog_tiles::Error) -> ProofError {
    ProofError::Storage(error.to_string())
}

fn unwrap_hashes(hashes: Vec<tlog_tiles::Hash>) -> Vec<Hash> {
    hashes.into_iter().map(|h| h.0).collect()
}

impl Tree {
    /// An empty tree.
    pub fn new() -> Tree {
        Tree::default()
    }

    /// Appends a leaf (its hash, see [`leaf_hash`]) and returns its index.
    pub fn push(&mut self, leaf_hash: Hash) -> u64 {
        let index = self.size;
        // The reader only reads hashes stored by earlier pushes, which are
        // all there: an error would be a bug in the index arithmetic.
        match tlog_tiles::stored_hashes_for_record_hash(index, tlog_tiles::Hash(leaf_hash), &Stored(&self.hashes)) {
            Ok(new) => self.hashes.extend(new.into_iter().map(|h| h.0)),
            Err(error) => unreachable!("tlog reads only hashes stored before leaf {index}: {error}"),
        }
        self.size += 1;
        index
    }

    /// The number of leaves.
    pub fn size(&self) -> u64 {
        self.size
    }

    fn check_size(&self, size: u64) -> Result<(), ProofError> {
        if size > self.size {
            return Err(ProofError::SizeOutOfRange { size, tree_size: self.size });
        }
        Ok(())
    }

    /// The root hash of the tree's first `size` leaves (RFC 6962 MTH);
    /// [`EMPTY_ROOT`] for size 0.
    pub fn root(&self, size: u64) -> Result<Hash, ProofError> {
        self.check_size(size)?;
        tlog_tiles::tree_hash(size, &Stored(&self.hashes)).map(|h| h.0).map_err(storage)
    }

    /// The inclusion proof (RFC 9162 §2.1.3) of leaf `index` in the tree
    /// of the first `size` leaves.
    pub fn inclusion_proof(&self, index: u64, size: u64) -> Result<Vec<Hash>, ProofError> {
        self.check_size(size)?;
        if size == 0 {
            return Err(ProofError::EmptyTree);
        }
        if index >= size {
            return Err(ProofError::IndexOutOfRange { index, size });
        }
        tlog_tiles::prove_record(size, index, &Stored(&self.hashes)).map(unwrap_hashes).map_err(storage)
    }

    /// The consistency proof (RFC 9162 §2.1.4) from the tree of the first
    /// `old_size` leaves to that of the first `new_size`. From size 0, and
    /// between equal sizes, it is the empty proof.
    pub fn consistency_proof(&self, old_size: u64, new_size: u64) -> Result<Vec<Hash>, ProofError> {
        self.check_size(new_size)?;
        if old_size > new_size {
            return Err(ProofError::OldSizeAfterNew { old_size, new_size });
        }
        if old_size == 0 {
            return Ok(Vec::new());
        }
        tlog_tiles::prove_tree(new_size, old_size, &Stored(&self.hashes)).map(unwrap_hashes).map_err(storage)
    }

    /// The heap and inline bytes the tree holds (the stored hashes'
    /// allocation), for the journal's memory accounting.
    pub fn memory_bytes(&self) -> usize {
        size_of::<Self>() + self.hashes.capacity() * size_of::<Hash>()
    }
}

fn hex_of(hash: &Hash) -> String {
    hex::encode(hash)
}

/// The number of hashes an inclusion proof of `index` in a tree of `size`
/// leaves has: the steps RFC 9162 §2.1.3.2 takes until `sn` reaches 0.
fn inclusion_length(index: u64, size: u64) -> usize {
    let (mut f, mut s) = (index, size - 1);
    let mut length = 0;
    while s > 0 {
        // Hashing from the left with an even `fn` equal to `sn`: RFC 9162
        // then skips the levels where this node has no right sibling.
        if f & 1 == 0 && f == s {
            while f & 1 == 0 && f != 0 {
                f >>= 1;
                s >>= 1;
            }
        }
        f >>= 1;
        s >>= 1;
        length += 1;
    }
    length
}

/// The walk up the tree both proofs take (RFC 9162 §2.1.3.2 step 4 and
/// §2.1.4.2 step 6), from node `f` of a tree whose last node is `s`: `step`
/// is given each hash of `path` and whether it sits left of the running
/// hash. The path must end exactly at the root, or the proof's length
/// (`found`, of `expected`) is wrong.
fn walk(
    (mut f, mut s): (u64, u64),
    path: &[Hash],
    (expected, found): (usize, usize),
    mut step: impl FnMut(&Hash, bool),
) -> Result<(), ProofError> {
    let wrong_length = || ProofError::WrongLength { expected, found };
    for p in path {
        // The length checks before make `s == 0` impossible here; RFC 9162
        // still says to fail, so fail rather than assume.
        if s == 0 {
            return Err(wrong_length());
        }
        let left = f & 1 == 1 || f == s;
        step(p, left);
        if left && f & 1 == 0 {
            while f & 1 == 0 && f != 0 {
                f >>= 1;
                s >>= 1;
            }
        }
        f >>= 1;
        s >>= 1;
    }
    if s != 0 {
        return Err(wrong_length());
    }
    Ok(())
}

/// Checks an inclusion proof as RFC 9162 §2.1.3.2 does: that leaf hash
/// `leaf` is leaf `index` of the tree of `size` leaves whose root is `root`.
pub fn verify_inclusion(index: u64, size: u64, leaf: &Hash, proof: &[Hash], root: &Hash) -> Result<(), ProofError> {
    if size == 0 {
        return Err(ProofError::EmptyTree);
    }
    if index >= size {
        return Err(ProofError::IndexOutOfRange { index, size });
    }
    // The length is checked first so that a long list is refused before
    // any hashing, and so the error says what was wrong with it.
    let expected = inclusion_length(index, size);
    if proof.len() != expected {
        return Err(ProofError::WrongLength { expected, found: proof.len() });
    }
    let mut r = *leaf;
    walk((index, size - 1), proof, (expected, proof.len()), |p, left| {
        r = if left { node_hash(p, &r) } else { node_hash(&r, p) }
    })?;
    if r != *root {
        return Err(ProofError::RootMismatch { expected: hex_of(root), computed: hex_of(&r) });
    }
    Ok(())
}

/// The number of hashes a consistency proof from `old_size` to `new_size`
/// has (0 < old_size < new_size): the first hash (or the old root when
/// `old_size` is a power of two, which the proof leaves out) and then one
/// per step RFC 9162 §2.1.4.2 takes until `sn` reaches 0.
fn consistency_length(old_size: u64, new_size: u64) -> usize {
    let (mut f, mut s) = (old_size - 1, new_size - 1);
    while f & 1 == 1 {
        f >>= 1;
        s >>= 1;
    }
    let mut steps = 0;
    while s != 0 {
        // Hashing from the left with an even `fn` equal to `sn`: RFC 9162
        // then skips the levels where this node has no right sibling.
        if f & 1 == 0 && f == s {
            while f & 1 == 0 && f != 0 {
                f >>= 1;
                s >>= 1;
            }
        }
        f >>= 1;
        s >>= 1;
        steps += 1;
    }
    // The path is the first value plus one per step; an old size that is a
    // power of two has its first value (the old root) left out.
    steps + usize::from(!old_size.is_power_of_two())
}

/// Checks a consistency proof as RFC 9162 §2.1.4.2 does: that the tree of
/// `old_size` leaves with root `old_root` is a prefix of the tree of
/// `new_size` leaves with root `new_root`.
///
/// From size 0 the proof is empty and `old_root` must be [`EMPTY_ROOT`];
/// between equal sizes it is empty and the roots must be equal.
pub fn verify_consistency(
    old_size: u64,
    old_root: &Hash,
    new_size: u64,
    new_root: &Hash,
    proof: &[Hash],
) -> Result<(), ProofError> {
    if old_size > new_size {
        return Err(ProofError::OldSizeAfterNew { old_size, new_size });
    }
    if old_size == 0 || old_size == new_size {
        if !proof.is_empty() {
            return Err(ProofError::WrongLength { expected: 0, found: proof.len() });
        }
        let expected_old = if old_size == 0 { EMPTY_ROOT } else { *new_root };
        if *old_root != expected_old {
            return Err(ProofError::OldRootMismatch { expected: hex_of(&expected_old), computed: hex_of(old_root) });
        }
        if new_size == 0 && *new_root != EMPTY_ROOT {
            return Err(ProofError::RootMismatch { expected: hex_of(new_root), computed: hex_of(&EMPTY_ROOT) });
        }
        return Ok(());
    }
    let expected = consistency_length(old_size, new_size);
    if proof.len() != expected {
        return Err(ProofError::WrongLength { expected, found: proof.len() });
    }
    // Step 2: an old size that is a power of two is a whole subtree whose
    // hash the verifier already has: it starts the path.
    let mut path: Vec<Hash> = Vec::with_capacity(proof.len() + 1);
    if old_size.is_power_of_two() {
        path.push(*old_root);
    }
    path.extend_from_slice(proof);
    let (mut f, mut s) = (old_size - 1, new_size - 1);
    while f & 1 == 1 {
        f >>= 1;
        s >>= 1;
    }
    let (mut fr, mut sr) = (path[0], path[0]);
    walk((f, s), &path[1..], (expected, proof.len()), |c, left| {
        if left {
            fr = node_hash(c, &fr);
            sr = node_hash(c, &sr);
        } else {
            sr = node_hash(&sr, c);
        }
    })?;
    if fr != *old_root {
        return Err(ProofError::OldRootMismatch { expected: hex_of(old_root), computed: hex_of(&fr) });
    }
    if sr != *new_root {
        return Err(ProofError::RootMismatch { expected: hex_of(new_root), computed: hex_of(&sr) });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SHA-256 of "" as `sha256sum` prints it for an empty file.
    #[test]
    fn the_empty_root_is_sha256_of_nothing() {
        assert_eq!(hex::encode(EMPTY_ROOT), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        assert_eq!(Tree::new().root(0), Ok(EMPTY_ROOT));
    }

    #[test]
    fn lengths_agree_with_small_cases_worked_by_hand() {
        // Size 1: the leaf is the root, no hashes.
        assert_eq!(inclusion_length(0, 1), 0);
        // Size 2: the sibling.
        assert_eq!(inclusion_length(1, 2), 1);
        // Size 3, leaf 2: the left subtree of 2 only.
        assert_eq!(inclusion_length(2, 3), 1);
        // Size 3, leaf 0: sibling 1, then leaf 2.
        assert_eq!(inclusion_length(0, 3), 2);
        // RFC 6962 §2.1.3 example tree of 7: PROOF(3, D[7]) = [c, d, g, l].
        assert_eq!(consistency_length(3, 7), 4);
        // PROOF(4, D[7]) = [l]; PROOF(6, D[7]) = [i, j, k].
        assert_eq!(consistency_length(4, 7), 1);
        assert_eq!(consistency_length(6, 7), 3);
    }
}
