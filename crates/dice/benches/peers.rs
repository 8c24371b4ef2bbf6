//! Our side of `scripts/bench-dice-peers`: the time per roll of each
//! benchmark expression, parse included and pre-parsed, measured as the
//! peer programs measure theirs (the median over 11 batches after a
//! warm-up), one line per case: `battlelog<TAB>expression<TAB>mode<TAB>ns`.
//!
//! A roll is what the roller does for every roll once it holds the epoch's
//! roll key: parse the text (`parse`; `preparsed` skips it), set up the
//! roll's word stream at its nonce, evaluate. The binary runs on mimalloc,
//! the global allocator of the roller's binary (crates/roller/src/main.rs).
//!
//! Run: `cargo bench -p battlelog-dice --bench peers [-- EXPRESSION…]`
//! (`BATTLELOG_BENCH_SECONDS` sets the seconds per case, default 1; named
//! expressions, if any, limit the run to those of the four.)

// A bench measures time and prints its findings; the crate's clippy.toml
// forbids the clock and the terminal to the library, not to its benches.
#![allow(clippy::disallowed_types, clippy::disallowed_methods, clippy::disallowed_macros)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use dice::{Expression, RollKey, RollStream, ServerSeed, evaluate};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const EXPRESSIONS: [&str; 4] = ["2d10", "4d6kh3", "100d6!", "8d6r1dl2>=4"];

fn seconds_per_case() -> f64 {
    std::env::var("BATTLELOG_BENCH_SECONDS").ok().and_then(|s| s.parse::<f64>().ok()).unwrap_or(1.0).max(0.05)
}

/// The median over 11 batches of the time per call of `f`, in nanoseconds,
/// after a warm-up of a fifth of the budget (at least 0.1 s).
fn time_per_call(seconds: f64, mut f: impl FnMut()) -> f64 {
    let start = Instant::now();
    let mut calls = 0u64;
    while start.elapsed() < Duration::from_secs_f64((seconds / 5.0).max(0.1)) {
        f();
        calls += 1;
    }
    let per_call = start.elapsed().as_secs_f64() / calls as f64;
    let batch = ((seconds / 11.0 / per_call) as u64).max(1);
    let mut samples: Vec<f64> = (0..11)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..batch {
                f();
            }
            start.elapsed().as_secs_f64() * 1e9 / batch as f64
        })
        .collect();
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn main() {
    let seconds = seconds_per_case();
    let key = RollKey::derive(&ServerSeed::from_bytes([42; 32]), "forum:bench/thread/1");
    // `cargo bench` passes `--bench`; anything else names expressions.
    let only: Vec<String> = std::env::args().skip(1).filter(|arg| !arg.starts_with("--")).collect();
    let mut nonce = 0u64;
    // Every case in turn for half a second first, as the peer programs do.
    let start = Instant::now();
    while start.elapsed() < Duration::from_millis(500) {
        for text in EXPRESSIONS {
            nonce = nonce.wrapping_add(1);
            let expression = Expression::parse(text).expect("a benchmark expression parses");
            black_box(evaluate(&expression, &mut RollStream::new(&key, nonce)).expect("evaluates"));
        }
    }
    for text in EXPRESSIONS.into_iter().filter(|text| only.is_empty() || only.iter().any(|o| o == text)) {
        let ns = time_per_call(seconds, || {
            nonce = nonce.wrapping_add(1);
            let expression = Expression::parse(black_box(text)).expect("a benchmark expression parses");
            black_box(evaluate(&expression, &mut RollStream::new(&key, nonce)).expect("evaluates"));
        });
        println!("battlelog\t{text}\tparse\t{ns:.1}");
        let expression = Expression::parse(text).expect("a benchmark expression parses");
        let ns = time_per_call(seconds, || {
            nonce = nonce.wrapping_add(1);
            black_box(evaluate(black_box(&expression), &mut RollStream::new(&key, nonce)).expect("evaluates"));
        });
        println!("battlelog\t{text}\tpreparsed\t{ns:.1}");
    }
}
