//! The runner `cargo test` uses: every seed as it is, then random inputs —
//! seeds mutated the way coverage-guided fuzzers mutate (bits flipped,
//! bytes set, inserted, removed, runs copied, two seeds spliced), and pure
//! noise. Deterministic for a given run seed, which a failure prints so
//! that it can be replayed.

use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};

/// Bytes mutations like to write: boundaries of integers, JSON and
/// expression punctuation, protobuf varint continuation.
const INTERESTING: &[u8] = b"\x00\x01\x7f\x80\xff\"{}[],:.-+*/()!<>=#%dkhlrF0123456789 \n\t\\";

/// One input that failed, with how to get it again.
#[derive(Debug)]
pub struct Failure {
    pub input: Vec<u8>,
    pub message: String,
}

/// Runs `target` on every seed, then on `count` random inputs made from
/// them with `run_seed`. The first input whose run panics is returned.
pub fn run(target: crate::Target, seeds: &[Vec<u8>], count: usize, run_seed: u64) -> Result<usize, Failure> {
    let mut runs = 0;
    for seed in seeds {
        attempt(target, seed)?;
        runs += 1;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(run_seed);
    for _ in 0..count {
        let input = make_input(&mut rng, seeds);
        attempt(target, &input)?;
        runs += 1;
    }
    Ok(runs)
}

fn attempt(target: crate::Target, input: &[u8]) -> Result<(), Failure> {
    std::panic::catch_unwind(|| target(input)).map_err(|panic| {
        let message = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_else(|| "a panic without a message".to_owned());
        Failure { input: input.to_vec(), message }
    })
}

fn below(rng: &mut ChaCha8Rng, n: usize) -> usize {
    if n == 0 { 0 } else { (rng.next_u64() % n as u64) as usize }
}

fn make_input(rng: &mut ChaCha8Rng, seeds: &[Vec<u8>]) -> Vec<u8> {
    if seeds.is_empty() || below(rng, 16) == 0 {
        let mut noise = vec![0u8; below(rng, 256)];
        rng.fill_bytes(&mut noise);
        return noise;
    }
    let mut input = seeds[below(rng, seeds.len())].clone();
    for _ in 0..=below(rng, 8) {
        mutate(rng, &mut input, seeds);
    }
    input
}

fn mutate(rng: &mut ChaCha8Rng, input: &mut Vec<u8>, seeds: &[Vec<u8>]) {
    let len = input.len();
    let at = below(rng, len);
    let byte = if below(rng, 2) == 0 { INTERESTING[below(rng, INTERESTING.len())] } else { rng.next_u32() as u8 };
    match below(rng, 7) {
        0 if len > 0 => input[at] ^= 1 << below(rng, 8),
        1 if len > 0 => input[at] = byte,
        2 => input.insert(below(rng, len + 1), byte),
        3 if len > 0 => {
            let end = (at + 1 + below(rng, 16)).min(len);
            input.drain(at..end);
        }
        4 if len > 0 => {
            let end = (at + 1 + below(rng, 32)).min(len);
            let run = input[at..end].to_vec();
            let to = below(rng, len + 1);
            input.splice(to..to, run);
        }
        5 => {
            // The head of this input, the tail of another.
            let other = &seeds[below(rng, seeds.len())];
            let from = below(rng, other.len());
            input.truncate(at);
            input.extend_from_slice(&other[from..]);
        }
        _ => input.truncate(at),
    }
}
