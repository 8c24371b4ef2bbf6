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

/// Where the time of one request goes: a `tracing` layer that notes when
/// each span of the chosen names opened and closed, while recording is on.
///
/// The services mark each hop of a write with a `debug` span (`resolver.act`,
/// `roller.roll`, `journal.append`, `journal.flush`, …). A benchmark
/// installs [`SpanClock`](span_clock::SpanClock) as the process's subscriber, runs its case at
/// concurrency 1 with recording on, and cuts each request's interval into
/// what the spans inside it cover: what the spans do not cover is transport
/// (encoding, HTTP/2, the socket, the task hand-offs on both ends).
/// Recording off, no span of the set is even created.
pub mod span_clock {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Instant;

    use tracing::span::{Attributes, Id};
    use tracing::subscriber::Interest;
    use tracing::{Metadata, Subscriber};
    use tracing_subscriber::layer::{Context, Layer};
    use tracing_subscriber::registry::LookupSpan;

    /// One closed span: its name and when it opened and closed.
    #[derive(Debug, Clone, Copy)]
    pub struct Timed {
        pub name: &'static str,
        pub start: Instant,
        pub end: Instant,
    }

    static RECORDING: AtomicBool = AtomicBool::new(false);
    static TIMED: Mutex<Vec<Timed>> = Mutex::new(Vec::new());

    /// The layer; spans whose names start with one of `prefixes` are timed.
    #[derive(Debug, Clone, Copy)]
    pub struct SpanClock {
        pub prefixes: &'static [&'static str],
    }

    #[derive(Clone, Copy)]
    struct Opened(Instant);

    impl SpanClock {
        fn wanted(&self, metadata: &Metadata<'_>) -> bool {
            metadata.is_span() && self.prefixes.iter().any(|prefix| metadata.name().starts_with(prefix))
        }

        /// Installs the layer as the process's only subscriber. Panics if
        /// another is installed: a benchmark sets up its process once.
        pub fn install(self) {
            use tracing_subscriber::layer::SubscriberExt as _;
            tracing::subscriber::set_global_default(tracing_subscriber::registry().with(self))
                .expect("no other subscriber is installed");
        }
    }

    /// Starts recording, forgetting what was recorded before.
    pub fn start() {
        TIMED.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clear();
        RECORDING.store(true, Ordering::SeqCst);
    }

    /// Stops recording and hands over the spans closed meanwhile, in the
    /// order they closed.
    pub fn stop() -> Vec<Timed> {
        RECORDING.store(false, Ordering::SeqCst);
        std::mem::take(&mut *TIMED.lock().unwrap_or_else(|poisoned| poisoned.into_inner()))
    }

    impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for SpanClock {
        fn register_callsite(&self, metadata: &'static Metadata<'static>) -> Interest {
            // `sometimes`: asked again per span, so that recording off
            // costs one atomic load and no span.
            if self.wanted(metadata) { Interest::sometimes() } else { Interest::never() }
        }

        fn enabled(&self, metadata: &Metadata<'_>, _: Context<'_, S>) -> bool {
            self.wanted(metadata) && RECORDING.load(Ordering::Relaxed)
        }

        fn on_new_span(&self, _: &Attributes<'_>, id: &Id, context: Context<'_, S>) {
            if let Some(span) = context.span(id) {
                span.extensions_mut().insert(Opened(Instant::now()));
            }
        }

        fn on_close(&self, id: Id, context: Context<'_, S>) {
            let end = Instant::now();
            let Some(span) = context.span(&id) else { return };
            let Some(Opened(start)) = span.extensions().get::<Opened>().copied() else { return };
            TIMED.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push(Timed { name: span.name(), start, end });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::span_clock::{self, SpanClock};

    /// The only test in this crate that installs a subscriber: a process
    /// has one global default.
    #[test]
    fn the_span_clock_times_the_chosen_spans_only_while_recording() {
        SpanClock { prefixes: &["hop."] }.install();
        tracing::debug_span!("hop.before").in_scope(|| {});
        span_clock::start();
        tracing::debug_span!("hop.outer").in_scope(|| {
            tracing::debug_span!("hop.inner").in_scope(|| {});
            tracing::debug_span!("other.inner").in_scope(|| {});
        });
        let timed = span_clock::stop();
        tracing::debug_span!("hop.after").in_scope(|| {});
        let names: Vec<&str> = timed.iter().map(|t| t.name).collect();
        // In the order they closed; neither the span of another name nor
        // those outside the recording.
        assert_eq!(names, ["hop.inner", "hop.outer"]);
        let (inner, outer) = (timed[0], timed[1]);
        assert!(outer.start <= inner.start && inner.end <= outer.end, "the outer span holds the inner one");
        assert!(span_clock::stop().is_empty(), "stopping hands over what was recorded once");
    }
}
