//! Where one roll's time goes: allocations, ChaCha20 blocks and the tree.
//!
//! For each benchmark expression it prints the allocations made by the
//! parse and by the evaluation (counted per thread by `allocation-counter`,
//! whose global allocator this binary links), the words the roll reads
//! against the ChaCha20 blocks computed to hand them out, the shape of the
//! parsed tree, and the time of each phase on its own: parse, the word
//! stream's set-up with its first block, and the evaluation over words
//! already computed.
//!
//! Run: `cargo bench -p battlelog-dice --bench profile`
//! (`BATTLELOG_BENCH_SECONDS` sets the seconds per timed case, default 0.5.)

// A bench measures time and prints its findings; the crate's clippy.toml
// forbids the clock and the terminal to the library, not to its benches.
#![allow(clippy::disallowed_types, clippy::disallowed_methods, clippy::disallowed_macros)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use dice::expr::{DiceTerm, Expr};
use dice::{Expression, RollKey, RollStream, ServerSeed, WordSource, evaluate};

const EXPRESSIONS: [&str; 5] = ["2d10", "4d6kh3", "100d6!", "8d6r1dl2>=4", "(2d6+3)*2-1d4/2 # attack"];

/// Words computed ahead and handed out again, so that the evaluation is
/// timed without the cipher.
struct Replay<'a> {
    words: &'a [u32],
    next: usize,
}

impl WordSource for Replay<'_> {
    fn next_word(&mut self) -> u32 {
        // The recording holds exactly the words the roll reads.
        let word = self.words.get(self.next).copied().unwrap_or(0);
        self.next += 1;
        word
    }
}

fn seconds_per_case() -> Duration {
    let seconds = std::env::var("BATTLELOG_BENCH_SECONDS").ok().and_then(|s| s.parse::<f64>().ok()).unwrap_or(0.5);
    Duration::from_secs_f64(seconds.max(0.05))
}

/// The median over 11 batches of the time per call of `f`, in nanoseconds.
fn time_per_call(budget: Duration, mut f: impl FnMut()) -> f64 {
    // Size a batch to a 1/11 of the budget from a short calibration.
    let start = Instant::now();
    let mut calls = 0u64;
    while start.elapsed() < Duration::from_millis(20) {
        f();
        calls += 1;
    }
    let per_call = start.elapsed().as_secs_f64() / calls as f64;
    let batch = ((budget.as_secs_f64() / 11.0 / per_call) as u64).max(1);
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

/// Nodes, boxed nodes, dice terms and depth of a tree.
fn shape(node: &Expr) -> (usize, usize, usize, usize) {
    match node {
        Expr::Number(_) => (1, 0, 0, 1),
        Expr::Dice(_) => (1, 0, 1, 1),
        Expr::Negate { operand, .. } => {
            let (n, b, d, depth) = shape(operand);
            (n + 1, b + 1, d, depth + 1)
        }
        Expr::Binary { lhs, rhs, .. } => {
            let (n1, b1, d1, depth1) = shape(lhs);
            let (n2, b2, d2, depth2) = shape(rhs);
            (n1 + n2 + 1, b1 + b2 + 2, d1 + d2, depth1.max(depth2) + 1)
        }
    }
}

fn main() {
    let budget = seconds_per_case();
    let key = RollKey::derive(&ServerSeed::from_bytes([42; 32]), "forum:bench/thread/1");
    println!(
        "sizes: Expr {} B, DiceTerm {} B, Die {} B, RollStream {} B",
        size_of::<Expr>(),
        size_of::<DiceTerm>(),
        size_of::<dice::Die>(),
        size_of::<RollStream>()
    );
    println!(
        "{:<26} {:>6} {:>6} {:>5} {:>6} {:>6} {:>6} {:>8} {:>9} {:>8} {:>9}",
        "expression",
        "p.allo",
        "e.allo",
        "dice",
        "words",
        "blocks",
        "nodes",
        "parse ns",
        "stream ns",
        "eval ns",
        "roll ns"
    );
    for text in EXPRESSIONS {
        let mut parsed = None;
        let parse_allocations = allocation_counter::measure(|| {
            parsed = Some(Expression::parse(black_box(text)).expect("a benchmark expression parses"));
        });
        let expression = parsed.expect("parsed above");
        let mut stream = RollStream::new(&key, 1);
        let mut rolled = None;
        let eval_allocations = allocation_counter::measure(|| {
            rolled = Some(evaluate(&expression, &mut stream).expect("evaluates"));
        });
        let roll = rolled.expect("rolled above");
        let words = stream.words_read();
        let (nodes, boxes, terms, depth) = shape(expression.root());

        // The words of this roll, computed once, so the evaluation can be
        // timed without the cipher.
        let mut fresh = RollStream::new(&key, 1);
        let recorded: Vec<u32> = (0..words).map(|_| fresh.next_word()).collect();

        let parse_ns = time_per_call(budget, || {
            black_box(Expression::parse(black_box(text)).expect("parses"));
        });
        let mut nonce = 0u64;
        let stream_ns = time_per_call(budget, || {
            nonce = nonce.wrapping_add(1);
            let mut words = RollStream::new(black_box(&key), nonce);
            black_box(words.next_word());
        });
        let eval_ns = time_per_call(budget, || {
            let mut replay = Replay { words: &recorded, next: 0 };
            black_box(evaluate(black_box(&expression), &mut replay).expect("evaluates"));
        });
        let roll_ns = time_per_call(budget, || {
            nonce = nonce.wrapping_add(1);
            let parsed = Expression::parse(black_box(text)).expect("parses");
            black_box(evaluate(&parsed, &mut RollStream::new(&key, nonce)).expect("evaluates"));
        });
        println!(
            "{:<26} {:>6} {:>6} {:>5} {:>6} {:>6} {:>6} {:>8.0} {:>9.0} {:>8.0} {:>9.0}",
            text,
            parse_allocations.count_total,
            eval_allocations.count_total,
            roll.dice.len(),
            words,
            stream.blocks_computed(),
            format!("{nodes}/{boxes}/{terms}/{depth}"),
            parse_ns,
            stream_ns,
            eval_ns,
            roll_ns
        );
    }
    println!(
        "p.allo/e.allo: allocations by the parse / by the evaluation; words: words read; blocks: ChaCha20 \
         blocks computed to hand them out; nodes: nodes/boxes/dice terms/depth of the tree; stream ns: \
         the word stream's set-up and its first word; eval ns: the evaluation over words computed ahead; \
         roll ns: parse + stream + evaluation, one roll as the roller makes it."
    );
}
