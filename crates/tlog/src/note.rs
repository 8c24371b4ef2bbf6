//! The log key, its verifier key, signed checkpoints and signed heads of
//! docs/protocol.md §5, in the C2SP formats (signed-note, tlog-checkpoint) so
//! that other tools read them.
//!
//! Written here from the C2SP texts rather than on the `signed_note` crate:
//! the tests check every note against that crate, a second implementation.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use ed25519_dalek::{Signer as _, SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};

use crate::Hash;

/// The origin a journal's log key has unless configured otherwise.
pub const DEFAULT_ORIGIN: &str = "battlelog.local/journal";

/// The largest signed note (text and signatures) read, in bytes: a
/// checkpoint is three short lines and a signature or a few; this bounds
/// what an export's trailer or a pasted checkpoint can make us hash.
pub const MAX_NOTE_BYTES: usize = 16 * 1024;

/// The most signature lines a note may carry (Go's note package's limit).
pub const MAX_NOTE_SIGNATURES: usize = 100;

/// C2SP signed-note's algorithm byte for Ed25519.
const ALG_ED25519: u8 = 0x01;

/// Domain separator of a signed head (§5).
const HEAD_DOMAIN: &[u8] = b"battlelog/v1/head";

/// The prefix of a signature line: an em dash (U+2014) and a space.
const SIGNATURE_PREFIX: &str = "\u{2014} ";

/// Prefix of a signed-note private key (Go's note format).
const PRIVATE_PREFIX: &str = "PRIVATE+KEY+";

/// Why a key (its origin or its text) was refused.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum KeyError {
    /// The origin (the key's name) breaks C2SP's rules for key names.
    #[error("origin {origin:?}: {reason}")]
    Origin { origin: String, reason: &'static str },
    /// A part of the key's text is not what the format says.
    #[error("{field}: {message}")]
    Malformed { field: &'static str, message: String },
    /// The key id written in the text is not the id of the key it holds.
    #[error("key id: the text says {found:08x}, the key's id is {computed:08x}")]
    KeyId { found: u32, computed: u32 },
    /// Not an Ed25519 key (algorithm byte 0x01).
    #[error("key: algorithm byte {0:#04x} is not Ed25519 (0x01)")]
    Algorithm(u8),
}

/// Why a note, a checkpoint or a signed head was refused.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum NoteError {
    /// The text is longer than the limit.
    #[error("{field} is {found} bytes, more than the limit of {limit}")]
    TooLarge { field: &'static str, found: usize, limit: usize },
    /// A part of the note or the checkpoint is not what C2SP's formats say.
    #[error("{field}: {message}")]
    Malformed { field: &'static str, message: String },
    /// No signature line of the key the note is checked with.
    #[error("the note has no signature of key {origin}+{key_id:08x}")]
    NoSignature { origin: String, key_id: u32 },
    /// The key's signature line does not verify over the note's text.
    #[error("the signature of key {origin}+{key_id:08x} does not verify over the note's text")]
    BadSignature { origin: String, key_id: u32 },
    /// The checkpoint names another log than the key's.
    #[error("the checkpoint's origin {found:?} is not the key's origin {expected:?}")]
    OriginMismatch { found: String, expected: String },
    /// A head signature is 64 bytes.
    #[error("head signature: {found} bytes, an Ed25519 signature is 64")]
    SignatureLength { found: usize },
    /// The head signature does not verify with the key.
    #[error("the head signature does not verify with key {origin}+{key_id:08x}")]
    HeadSignature { origin: String, key_id: u32 },
}

fn malformed(field: &'static str, message: impl Into<String>) -> NoteError {
    NoteError::Malformed { field, message: message.into() }
}

fn key_malformed(field: &'static str, message: impl Into<String>) -> KeyError {
    KeyError::Malformed { field, message: message.into() }
}

/// C2SP's rules for a key name, which §5 makes the log's origin: not
/// empty, no whitespace (so no newline), no `+`; and no control character,
/// which a note's text may not hold.
fn check_origin(origin: &str) -> Result<(), KeyError> {
    let refuse = |reason| Err(KeyError::Origin { origin: origin.to_owned(), reason });
    if origin.is_empty() {
        return refuse("is empty");
    }
    if origin.chars().any(char::is_whitespace) {
        return refuse("holds whitespace");
    }
    if origin.contains('+') {
        return refuse("holds '+'");
    }
    if origin.chars().any(char::is_control) {
        return refuse("holds a control character");
    }
    Ok(())
}

/// The key id of C2SP signed-note: the first 4 bytes, big-endian, of
/// SHA-256(origin || 0x0A || 0x01 || public key).
fn key_id(origin: &str, public_key: &[u8; 32]) -> u32 {
    let digest: Hash = Sha256::new()
        .chain_update(origin)
        .chain_update([b'\n', ALG_ED25519])
        .chain_update(public_key)
        .finalize()
        .into();
    u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]])
}

/// Splits `<origin>+<8 hex key id>+<base64(0x01 || key)>` (the base64 may
/// itself hold `+`) into its origin, key id and 32 key bytes.
fn split_key_text(text: &str) -> Result<(&str, u32, [u8; 32]), KeyError> {
    let mut parts = text.splitn(3, '+');
    let (Some(origin), Some(id), Some(key)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(key_malformed("key", "expected <origin>+<key id>+<base64 key>"));
    };
    check_origin(origin)?;
    if id.len() != 8 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(key_malformed("key id", format!("{id:?} is not 8 hex digits")));
    }
    let id = u32::from_str_radix(id, 16).map_err(|e| key_malformed("key id", e.to_string()))?;
    let bytes = BASE64.decode(key).map_err(|e| key_malformed("key", format!("not base64: {e}")))?;
    let Some((&algorithm, key)) = bytes.split_first() else {
        return Err(key_malformed("key", "empty"));
    };
    if algorithm != ALG_ED25519 {
        return Err(KeyError::Algorithm(algorithm));
    }
    let key: [u8; 32] =
        key.try_into().map_err(|_| key_malformed("key", format!("{} key bytes, an Ed25519 key is 32", key.len())))?;
    Ok((origin, id, key))
}

/// A log's verifier key: `<origin>+<key id, 8 hex>+<base64(0x01 || public key)>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifierKey {
    origin: String,
    key_id: u32,
    key: VerifyingKey,
}

impl VerifierKey {
    /// Reads the text form (trailing whitespace, as a file's newline, is
    /// ignored). Refuses a key id that is not the key's.
    pub fn parse(text: &str) -> Result<VerifierKey, KeyError> {
        let (origin, found, key) = split_key_text(text.trim_end())?;
        let computed = key_id(origin, &key);
        if found != computed {
            return Err(KeyError::KeyId { found, computed });
        }
        let key = VerifyingKey::from_bytes(&key)
            .map_err(|e| key_malformed("key", format!("not an Ed25519 public key: {e}")))?;
        Ok(VerifierKey { origin: origin.to_owned(), key_id: computed, key })
    }

    /// The log's origin, the key's name.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The key id (first 4 bytes of SHA-256(origin || 0x0A || 0x01 || key)).
    pub fn key_id(&self) -> u32 {
        self.key_id
    }

    /// The 32 bytes of the Ed25519 public key.
    pub fn public_key(&self) -> [u8; 32] {
        self.key.to_bytes()
    }

    /// Strict Ed25519 verification (no small-order keys or points, as the
    /// dice crate's commitment signatures).
    fn verifies(&self, message: &[u8], signature: &[u8]) -> bool {
        let Ok(bytes) = <[u8; 64]>::try_from(signature) else {
            return false;
        };
        self.key.verify_strict(message, &ed25519_dalek::Signature::from_bytes(&bytes)).is_ok()
    }
}

impl std::fmt::Display for VerifierKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut key = vec![ALG_ED25519];
        key.extend_from_slice(self.key.as_bytes());
        write!(f, "{}+{:08x}+{}", self.origin, self.key_id, BASE64.encode(key))
    }
}

/// The journal's log key: an Ed25519 signing key named by the log's origin.
#[derive(Clone)]
pub struct LogKey {
    signing: SigningKey,
    verifier: VerifierKey,
}

/// Shows the origin and key id, never the seed.
impl std::fmt::Debug for LogKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogKey").field("verifier", &self.verifier.to_string()).finish_non_exhaustive()
    }
}

impl LogKey {
    /// The key of a 32-byte Ed25519 seed. The origin must be a C2SP key
    /// name: not empty, no whitespace or newline, no `+`.
    pub fn from_seed(origin: &str, seed: [u8; 32]) -> Result<LogKey, KeyError> {
        check_origin(origin)?;
        let signing = SigningKey::from_bytes(&seed);
        let key = signing.verifying_key();
        let key_id = key_id(origin, key.as_bytes());
        Ok(LogKey { signing, verifier: VerifierKey { origin: origin.to_owned(), key_id, key } })
    }

    /// Reads a signed-note private key (Go's note format):
    /// `PRIVATE+KEY+<origin>+<8 hex key id>+<base64(0x01 || seed)>`;
    /// trailing whitespace is ignored. Refuses a key id that is not the
    /// id of the seed's public key.
    pub fn parse(text: &str) -> Result<LogKey, KeyError> {
        let Some(rest) = text.trim_end().strip_prefix(PRIVATE_PREFIX) else {
            return Err(key_malformed("private key", "does not start with PRIVATE+KEY+"));
        };
        let (origin, found, seed) = split_key_text(rest)?;
        let key = LogKey::from_seed(origin, seed)?;
        let computed = key.verifier.key_id;
        if found != computed {
            return Err(KeyError::KeyId { found, computed });
        }
        Ok(key)
    }

    /// The private key's text, as [`LogKey::parse`] reads it.
    pub fn to_text(&self) -> String {
        let mut seed = vec![ALG_ED25519];
        seed.extend_from_slice(self.signing.as_bytes());
        format!("{PRIVATE_PREFIX}{}+{:08x}+{}", self.verifier.origin, self.verifier.key_id, BASE64.encode(seed))
    }

    /// The log's origin.
    pub fn origin(&self) -> &str {
        &self.verifier.origin
    }

    /// The verifier key anyone checks the log's notes and heads with.
    pub fn verifier_key(&self) -> VerifierKey {
        self.verifier.clone()
    }

    /// The checkpoint of a tree of `size` leaves with root `root`, as a
    /// whole signed note: `<origin>\n<size>\n<base64 root>\n`, a blank line
    /// and this key's signature line.
    pub fn sign_checkpoint(&self, size: u64, root: &Hash) -> Checkpoint {
        let origin = &self.verifier.origin;
        let text = format!("{origin}\n{size}\n{}\n", BASE64.encode(root));
        let signature = self.signing.sign(text.as_bytes());
        let mut signed = self.verifier.key_id.to_be_bytes().to_vec();
        signed.extend_from_slice(&signature.to_bytes());
        let note = format!("{text}\n{SIGNATURE_PREFIX}{origin} {}\n", BASE64.encode(signed));
        Checkpoint { origin: origin.clone(), size, root: *root, note }
    }

    /// The signed head of §5: the journal's statement that at `tree_size`
    /// the stream's last version is `head.version`.
    pub fn sign_head(&self, head: &StreamHead, tree_size: u64) -> [u8; 64] {
        self.signing.sign(&head_message(head, tree_size)).to_bytes()
    }
}

/// A signed checkpoint (C2SP tlog-checkpoint): the log's size and root,
/// and the whole signed note they were read from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    pub origin: String,
    pub size: u64,
    pub root: Hash,
    /// The whole signed note text, signature lines included.
    pub note: String,
}

/// One signature line of a note.
struct SignatureLine<'a> {
    name: &'a str,
    key_id: u32,
    signature: Vec<u8>,
}

/// A note split as C2SP signed-note says: the text (up to and with the
/// newline before the last blank line) and its signature lines.
struct SignedNote<'a> {
    text: &'a str,
    signatures: Vec<SignatureLine<'a>>,
}

fn split_note(note: &str) -> Result<SignedNote<'_>, NoteError> {
    if note.len() > MAX_NOTE_BYTES {
        return Err(NoteError::TooLarge { field: "note", found: note.len(), limit: MAX_NOTE_BYTES });
    }
    if let Some(c) = note.chars().find(|&c| c.is_ascii_control() && c != '\n') {
        return Err(malformed("note", format!("holds the control character {c:?}")));
    }
    // The signatures follow the last blank line; the text keeps its final newline.
    let Some(split) = note.rfind("\n\n") else {
        return Err(malformed("note", "no blank line before the signatures"));
    };
    let text = &note[..=split];
    let Some(block) = note[split + 2..].strip_suffix('\n') else {
        return Err(malformed("signature", "the last signature line does not end with a newline"));
    };
    let mut signatures = Vec::new();
    for line in block.split('\n') {
        if signatures.len() == MAX_NOTE_SIGNATURES {
            return Err(NoteError::TooLarge {
                field: "signature lines",
                found: block.split('\n').count(),
                limit: MAX_NOTE_SIGNATURES,
            });
        }
        let Some(rest) = line.strip_prefix(SIGNATURE_PREFIX) else {
            return Err(malformed("signature", format!("{line:?} does not start with an em dash and a space")));
        };
        let Some((name, encoded)) = rest.split_once(' ') else {
            return Err(malformed("signature", format!("{line:?} is not \"— <name> <base64>\"")));
        };
        if check_origin(name).is_err() {
            return Err(malformed("signature", format!("{name:?} is not a key name")));
        }
        let bytes = BASE64.decode(encoded).map_err(|e| malformed("signature", format!("not base64: {e}")))?;
        if bytes.len() < 5 {
            return Err(malformed(
                "signature",
                format!("{} bytes: a key id and a signature are at least 5", bytes.len()),
            ));
        }
        let key_id = u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        signatures.push(SignatureLine { name, key_id, signature: bytes[4..].to_vec() });
    }
    Ok(SignedNote { text, signatures })
}

/// A size as tlog-checkpoint writes it: ASCII decimal, no sign, no leading zero.
fn parse_size(text: &str) -> Result<u64, NoteError> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) || (text.len() > 1 && text.starts_with('0')) {
        return Err(malformed("size", format!("{text:?} is not a decimal number without leading zeros")));
    }
    text.parse().map_err(|_| malformed("size", format!("{text:?} is more than {}", u64::MAX)))
}

/// A root hash as base64 (standard, padded, canonical) of 32 bytes.
fn parse_root_base64(text: &str) -> Result<Hash, NoteError> {
    let bytes = BASE64.decode(text).map_err(|e| malformed("root", format!("{text:?} is not base64: {e}")))?;
    <Hash>::try_from(bytes.as_slice())
        .map_err(|_| malformed("root", format!("{} bytes, a SHA-256 root is 32", bytes.len())))
}

/// The checkpoint body: origin, size, root, then extension lines (each
/// non-empty), which C2SP allows and we carry in `note` without reading.
fn parse_checkpoint_text(text: &str, note: &str) -> Result<Checkpoint, NoteError> {
    let mut lines = text.strip_suffix('\n').unwrap_or(text).split('\n');
    let (Some(origin), Some(size), Some(root)) = (lines.next(), lines.next(), lines.next()) else {
        return Err(malformed("checkpoint", "expected origin, size and root lines"));
    };
    if origin.is_empty() {
        return Err(malformed("origin", "empty"));
    }
    if lines.any(str::is_empty) {
        return Err(malformed("checkpoint", "an empty extension line"));
    }
    Ok(Checkpoint {
        origin: origin.to_owned(),
        size: parse_size(size)?,
        root: parse_root_base64(root)?,
        note: note.to_owned(),
    })
}

impl Checkpoint {
    /// Reads a signed checkpoint and checks the signature line of `key`
    /// (other signature lines, e.g. witnesses', are ignored, as C2SP says).
    /// The checkpoint's origin must be the key's.
    pub fn open(note: &str, key: &VerifierKey) -> Result<Checkpoint, NoteError> {
        let signed = split_note(note)?;
        let checkpoint = parse_checkpoint_text(signed.text, note)?;
        if checkpoint.origin != key.origin {
            return Err(NoteError::OriginMismatch { found: checkpoint.origin, expected: key.origin.clone() });
        }
        let mut ours =
            signed.signatures.iter().filter(|line| line.name == key.origin && line.key_id == key.key_id).peekable();
        if ours.peek().is_none() {
            return Err(NoteError::NoSignature { origin: key.origin.clone(), key_id: key.key_id });
        }
        if !ours.any(|line| key.verifies(signed.text.as_bytes(), &line.signature)) {
            return Err(NoteError::BadSignature { origin: key.origin.clone(), key_id: key.key_id });
        }
        Ok(checkpoint)
    }

    /// Reads a signed checkpoint without checking any signature (for
    /// showing one, or when no key is at hand).
    pub fn parse_unverified(note: &str) -> Result<Checkpoint, NoteError> {
        let signed = split_note(note)?;
        parse_checkpoint_text(signed.text, note)
    }
}

/// A stream's head: its last version and that version's chain hash h(v).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamHead {
    pub stream_id: String,
    pub version: u64,
    pub hash: Hash,
}

/// The bytes a signed head signs (§5): `"battlelog/v1/head"` || 0x00 ||
/// stream id || 0x00 || u64_le(version) || h(version) || u64_le(tree size).
pub fn head_message(head: &StreamHead, tree_size: u64) -> Vec<u8> {
    let mut message = Vec::with_capacity(HEAD_DOMAIN.len() + head.stream_id.len() + 2 + 8 + 32 + 8);
    message.extend_from_slice(HEAD_DOMAIN);
    message.push(0);
    message.extend_from_slice(head.stream_id.as_bytes());
    message.push(0);
    message.extend_from_slice(&head.version.to_le_bytes());
    message.extend_from_slice(&head.hash);
    message.extend_from_slice(&tree_size.to_le_bytes());
    message
}

/// Checks a signed head with the log's verifier key.
pub fn verify_head(key: &VerifierKey, head: &StreamHead, tree_size: u64, signature: &[u8]) -> Result<(), NoteError> {
    if signature.len() != 64 {
        return Err(NoteError::SignatureLength { found: signature.len() });
    }
    if !key.verifies(&head_message(head, tree_size), signature) {
        return Err(NoteError::HeadSignature { origin: key.origin.clone(), key_id: key.key_id });
    }
    Ok(())
}

/// Parsing helpers shared with the trailer and kept checkpoints.
pub(crate) fn root_from_text(text: &str) -> Result<Hash, NoteError> {
    if text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
        let mut root = [0u8; 32];
        hex::decode_to_slice(text, &mut root).map_err(|e| malformed("root", e.to_string()))?;
        return Ok(root);
    }
    parse_root_base64(text)
        .map_err(|_| malformed("root", format!("{text:?} is neither base64 of 32 bytes nor 64 hex digits")))
}

pub(crate) fn size_from_text(text: &str) -> Result<u64, NoteError> {
    parse_size(text)
}
