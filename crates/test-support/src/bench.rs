//! What the benchmarks share: latency samples summed up as a rate and
//! percentiles, printed one case a line; and the storage floor they are
//! held to ([`raw_sled_insert_flush`]).

use std::time::Duration;

#[derive(Debug, Clone, Copy)]
pub struct Figures {
    pub ops: usize,
    pub per_second: f64,
    pub p50: Duration,
    pub p99: Duration,
}

/// Sums up one case: every operation's latency, and the wall time it took.
pub fn figures(mut latencies: Vec<Duration>, elapsed: Duration) -> Figures {
    assert!(!latencies.is_empty(), "a benchmark case ran no operation");
    latencies.sort_unstable();
    let at = |q: f64| latencies[((latencies.len() as f64 - 1.0) * q).round() as usize];
    Figures {
        ops: latencies.len(),
        per_second: latencies.len() as f64 / elapsed.as_secs_f64(),
        p50: at(0.50),
        p99: at(0.99),
    }
}

/// Prints `name  rate ops/s  p50  p99  (count)` on one line.
pub fn report(name: &str, f: &Figures) {
    println!(
        "{name:<40} {:>9.0} ops/s   p50 {:>9.1} µs   p99 {:>9.1} µs   ({} ops)",
        f.per_second,
        f.p50.as_secs_f64() * 1e6,
        f.p99.as_secs_f64() * 1e6,
        f.ops
    );
}

/// Seconds per case: `BATTLELOG_BENCH_SECONDS`, default 3.
pub fn seconds_per_case() -> Duration {
    Duration::from_secs(std::env::var("BATTLELOG_BENCH_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(3))
}

/// The storage floor: raw sled `insert` + `flush` of one `value_bytes`
/// value at a time, for `run`, in a fresh database at `dir` — what one
/// durable journal append cannot beat. Blocking: call it off the runtime.
pub fn raw_sled_insert_flush(dir: &std::path::Path, value_bytes: usize, run: Duration) -> Figures {
    let db = sled::Config::new().path(dir).open().expect("open sled");
    let tree = db.open_tree("raw").expect("tree");
    let value = vec![7u8; value_bytes];
    let mut latencies = Vec::new();
    let start = std::time::Instant::now();
    let mut i = 0u64;
    while start.elapsed() < run {
        let began = std::time::Instant::now();
        tree.insert(i.to_be_bytes(), value.as_slice()).expect("insert");
        db.flush().expect("flush");
        latencies.push(began.elapsed());
        i += 1;
    }
    figures(latencies, start.elapsed())
}
