//! The byte strings §5 defines, built here byte by byte from docs/protocol.md's
//! text, against the crate's functions.

use battlelog_tlog::{StreamHead, head_message, leaf_hash, leaf_input};

/// h(version) of the examples: the bytes 0x00, 0x01, … 0x1f.
fn chain_hash() -> [u8; 32] {
    std::array::from_fn(|i| i as u8)
}

/// Leaf input = "battlelog/v1/leaf" || 0x00 || stream id || 0x00 ||
/// u64_le(version) || h(version), for stream "s1" at version 258.
#[test]
fn leaf_input_is_the_protocols_bytes() {
    let mut expected: Vec<u8> = vec![
        0x62, 0x61, 0x74, 0x74, 0x6c, 0x65, 0x6c, 0x6f, 0x67, // b a t t l e l o g
        0x2f, 0x76, 0x31, 0x2f, // / v 1 /
        0x6c, 0x65, 0x61, 0x66, // l e a f
        0x00, // separator
        0x73, 0x31, // s 1
        0x00, // separator
        0x02, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // 258, little-endian
    ];
    expected.extend(0u8..32);
    assert_eq!(leaf_input("s1", 258, &chain_hash()), expected);
}

/// The leaf hash of that input, as `sha256sum` prints it for 0x00 followed
/// by the bytes above (computed outside this code).
#[test]
fn leaf_hash_is_a_known_answer() {
    assert_eq!(
        hex::encode(leaf_hash("s1", 258, &chain_hash())),
        "8d97ab8957c91ea81ca6544a61b3057afce53a300028c064818eeca7338014a2"
    );
}

/// The signed head = "battlelog/v1/head" || 0x00 || stream id || 0x00 ||
/// u64_le(head version) || h(head version) || u64_le(tree size).
#[test]
fn head_message_is_the_protocols_bytes() {
    let mut expected: Vec<u8> = vec![
        0x62, 0x61, 0x74, 0x74, 0x6c, 0x65, 0x6c, 0x6f, 0x67, // b a t t l e l o g
        0x2f, 0x76, 0x31, 0x2f, // / v 1 /
        0x68, 0x65, 0x61, 0x64, // h e a d
        0x00, 0x73, 0x31, 0x00, // 0x00 s 1 0x00
        0x02, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // version 258
    ];
    expected.extend(0u8..32);
    expected.extend([0xe8, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00]); // tree size 1000
    let head = StreamHead { stream_id: "s1".to_owned(), version: 258, hash: chain_hash() };
    assert_eq!(head_message(&head, 1000), expected);
}

/// A stream id is UTF-8 bytes as they are, not escaped or normalised.
#[test]
fn stream_ids_are_their_utf8_bytes() {
    let input = leaf_input("бой", 0, &[0; 32]);
    assert_eq!(&input[18..24], "бой".as_bytes());
    assert_eq!(input[24], 0);
    assert_eq!(input.len(), 17 + 1 + 6 + 1 + 8 + 32);
}
