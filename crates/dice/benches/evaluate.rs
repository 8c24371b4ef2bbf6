//! Expression evaluations per second: parse once, then derive the word
//! stream and evaluate, as the roller does for every roll.
//! Run: `cargo bench -p battlelog-dice --bench evaluate`

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use dice::{Expression, RollKey, RollStream, ServerSeed, evaluate};

fn evaluations(c: &mut Criterion) {
    let key = RollKey::derive(&ServerSeed::from_bytes([42; 32]), "forum:bench/thread/1");
    let mut group = c.benchmark_group("evaluate");
    group.throughput(Throughput::Elements(1));
    for text in ["2d10", "4d6kh3", "100d6!", "8d6r1dl2>=4"] {
        let expression = Expression::parse(text).expect("benchmark expression parses");
        let mut nonce = 0u64;
        group.bench_function(text, |b| {
            b.iter(|| {
                nonce = nonce.wrapping_add(1);
                let mut words = RollStream::new(&key, nonce);
                black_box(evaluate(black_box(&expression), &mut words).expect("evaluates"))
            })
        });
    }
    group.bench_function("parse+evaluate 4d6kh3", |b| {
        let mut nonce = 0u64;
        b.iter(|| {
            nonce = nonce.wrapping_add(1);
            let expression = Expression::parse(black_box("4d6kh3")).expect("parses");
            black_box(evaluate(&expression, &mut RollStream::new(&key, nonce)).expect("evaluates"))
        })
    });
    group.finish();
}

criterion_group!(benches, evaluations);
criterion_main!(benches);
