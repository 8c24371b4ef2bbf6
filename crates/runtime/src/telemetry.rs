//! Logs and traces: what a service installs first ([`init`]).
//!
//! - Logs go to stderr, text or JSON ([`LogFormat`]), filtered by the
//!   service's `log` key (`RUST_LOG` wins when set). Each line shows the
//!   spans it was written in, with their fields: a line written while a
//!   request is served carries the request span's `trace_id` (the observe
//!   layer records it), so the logs of one `Act` can be found in all three
//!   services.
//! - Spans become OpenTelemetry spans (tracing-opentelemetry), always: the
//!   trace context of an incoming call is continued and handed on to the
//!   calls made while serving it, whether or not this process exports.
//!   The W3C `traceparent`/`tracestate` propagator is installed globally
//!   (battlelog_auth injects it into every outgoing call's metadata).
//! - With an OTLP endpoint (`otlp_endpoint`), spans are exported over
//!   OTLP/gRPC in batches, under the resource `service.name =
//!   battlelog-<service>`; without one, nothing is exported. The batches
//!   follow the OpenTelemetry SDK's standard variables (`OTEL_BSP_*`).
//!
//! Which spans: the log filter's, and every span at `info` or above even
//! when the log filter is quieter (`warn`): a request's span must exist for
//! its trace to be continued and for a warning inside it to carry its
//! trace id. Spans print nothing by themselves; only events are lines.

use std::io::IsTerminal;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig as _;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use tracing::{Level, Subscriber};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::filter::{FilterExt as _, filter_fn};
use tracing_subscriber::fmt::writer::BoxMakeWriter;
use tracing_subscriber::layer::{Layer, SubscriberExt as _};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt as _;

pub use crate::logging::LogFormat;

/// The span attribute naming which battlelog service made a span: needed
/// where one process runs several (`battlelog up`), whose spans share one
/// resource.
pub const SERVICE_ATTRIBUTE: &str = "battlelog.service";

/// What [`init`] installed. Keep it until the service has stopped: dropping
/// it flushes the spans not yet exported and shuts the exporter down
/// (within the SDK's shutdown timeout, 5 s, should the collector not answer).
#[derive(Debug)]
#[must_use = "dropping it shuts the trace exporter down"]
pub struct Telemetry {
    provider: SdkTracerProvider,
    exporting: bool,
}

impl Telemetry {
    /// Whether spans are exported (an OTLP endpoint was configured).
    pub fn exporting(&self) -> bool {
        self.exporting
    }
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        if self.exporting
            && let Err(error) = self.provider.shutdown()
        {
            tracing::warn!(%error, "the trace exporter did not shut down cleanly; the last spans may be lost");
        }
    }
}

/// Installs the global subscriber (logs, and spans as OpenTelemetry spans)
/// and the W3C trace-context propagator. `service` is the service's short
/// name (`resolver`): the exported resource is `battlelog-<service>`.
/// `otlp_endpoint` (`http://collector:4317`): where spans are exported over
/// OTLP/gRPC; none: nowhere. Must run inside a tokio runtime (the exporter's
/// channel lives on it).
pub fn init(filter: &str, format: LogFormat, service: &str, otlp_endpoint: Option<&str>) -> Result<Telemetry, String> {
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
    let resource = Resource::builder().with_service_name(format!("battlelog-{service}")).build();
    let mut provider = SdkTracerProvider::builder().with_resource(resource);
    if let Some(endpoint) = otlp_endpoint {
        refuse_https(endpoint)?;
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_tonic()
            .with_endpoint(endpoint)
            .build()
            .map_err(|e| format!("invalid config otlp_endpoint {endpoint:?}: {e}"))?;
        // The SDK's batch processor: its own thread, exporting through the
        // exporter's tonic channel, which runs on this tokio runtime.
        provider = provider.with_batch_exporter(exporter);
    }
    let provider = provider.build();
    // Colours only for a person at a terminal: escape codes in a log file or
    // a collector's stream break every grep for a level or a field.
    let ansi = std::io::stderr().is_terminal();
    let layers = layers(filter, format, BoxMakeWriter::new(std::io::stderr), ansi, provider.tracer("battlelog"))?;
    tracing_subscriber::registry().with(layers).try_init().map_err(|e| e.to_string())?;
    Ok(Telemetry { provider, exporting: otlp_endpoint.is_some() })
}

/// The exporter has no TLS here (no CA to trust a collector's certificate
/// by): an `https://` endpoint would lose every span in silence, so it
/// stops the service at start instead. A collector agent on the host or in
/// the pod, over `http://`, is the supported setup.
fn refuse_https(endpoint: &str) -> Result<(), String> {
    if endpoint.starts_with("https://") {
        return Err(format!(
            "invalid config otlp_endpoint {endpoint:?}: TLS to the collector is not supported; \
             use an http:// endpoint (a collector agent next to the service)"
        ));
    }
    Ok(())
}

/// The log lines (to `writer`) and the OpenTelemetry spans (to `tracer`),
/// each with [`selected`]'s filter.
fn layers<S>(
    filter: &str,
    format: LogFormat,
    writer: BoxMakeWriter,
    ansi: bool,
    tracer: SdkTracer,
) -> Result<Vec<Box<dyn Layer<S> + Send + Sync>>, String>
where
    S: Subscriber + for<'a> LookupSpan<'a> + Send + Sync,
{
    let logs = tracing_subscriber::fmt::layer().with_writer(writer).with_ansi(ansi);
    let logs = match format {
        LogFormat::Json => logs.json().with_filter(selected(filter)?).boxed(),
        LogFormat::Text => logs.with_filter(selected(filter)?).boxed(),
    };
    let spans = tracing_opentelemetry::layer().with_tracer(tracer).with_filter(selected(filter)?).boxed();
    Ok(vec![logs, spans])
}

/// What the log filter selects (`RUST_LOG` wins over `filter`, so an
/// operator can raise verbosity without editing the config), and every span
/// at `info` or above.
fn selected<S>(filter: &str) -> Result<impl tracing_subscriber::layer::Filter<S> + Send + Sync + 'static, String>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    let logs = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(filter))
        .map_err(|e| format!("invalid log filter {filter:?}: {e}"))?;
    Ok(logs.or(filter_fn(|metadata| metadata.is_span() && *metadata.level() <= Level::INFO)))
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    use opentelemetry::trace::TraceContextExt as _;
    use tracing_opentelemetry::OpenTelemetrySpanExt as _;

    use super::*;

    /// The lines written, shared with the writer the layers got.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("lock").extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Captured {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().expect("lock").clone()).expect("UTF-8 logs")
        }
    }

    /// Runs `body` under the layers `init` installs (logs captured, spans to
    /// a tracer that exports nothing) and returns the log text.
    fn logged(filter: &str, format: LogFormat, body: impl FnOnce()) -> String {
        let captured = Captured::default();
        let writer = captured.clone();
        let provider = SdkTracerProvider::builder().build();
        let layers = layers(filter, format, BoxMakeWriter::new(move || writer.clone()), false, provider.tracer("test"))
            .expect("a valid filter");
        tracing::subscriber::with_default(tracing_subscriber::registry().with(layers), body);
        captured.text()
    }

    /// A request's span as the observe layer makes it: `trace_id` recorded
    /// once the trace is known. Returns the trace id the span really has.
    fn in_request(event: impl FnOnce()) -> String {
        let span = tracing::info_span!("grpc.request", rpc.method = "Act", trace_id = tracing::field::Empty);
        let trace_id = span.context().span().span_context().trace_id().to_string();
        span.record("trace_id", tracing::field::display(&trace_id));
        span.in_scope(event);
        trace_id
    }

    #[test]
    fn a_text_line_inside_a_request_shows_its_trace_id() {
        let mut trace_id = String::new();
        let text = logged("info", LogFormat::Text, || trace_id = in_request(|| tracing::info!("acted")));
        assert_ne!(trace_id, "00000000000000000000000000000000", "the span has a real trace id");
        let line = text.lines().find(|l| l.contains("acted")).unwrap_or_else(|| panic!("no line: {text}"));
        assert!(line.contains(&format!("trace_id={trace_id}")), "{line}");
    }

    #[test]
    fn a_json_line_inside_a_request_shows_its_trace_id() {
        let mut trace_id = String::new();
        let text = logged("info", LogFormat::Json, || trace_id = in_request(|| tracing::info!("acted")));
        let line = text.lines().find(|l| l.contains("acted")).unwrap_or_else(|| panic!("no line: {text}"));
        let line: serde_json::Value = serde_json::from_str(line).expect("one JSON object a line");
        assert_eq!(line["span"]["trace_id"], trace_id.as_str(), "{line}");
        assert_eq!(line["span"]["name"], "grpc.request", "{line}");
    }

    /// With `log = "warn"` the request's info span is still made: a warning
    /// inside it carries the trace id, and the trace is continued.
    #[test]
    fn a_quiet_log_filter_still_keeps_request_spans() {
        let mut trace_id = String::new();
        let text = logged("warn", LogFormat::Text, || {
            trace_id = in_request(|| {
                tracing::info!("not shown");
                tracing::warn!("refused");
            })
        });
        assert_ne!(trace_id, "00000000000000000000000000000000", "the span exists for the traces");
        assert!(!text.contains("not shown"), "{text}");
        let line = text.lines().find(|l| l.contains("refused")).unwrap_or_else(|| panic!("no line: {text}"));
        assert!(line.contains(&format!("trace_id={trace_id}")), "{line}");
    }

    /// Debug spans stay off under an `info` filter: only the log filter and
    /// info spans are selected, not everything.
    #[test]
    fn spans_below_info_follow_the_log_filter() {
        let text = logged("info", LogFormat::Text, || {
            let span = tracing::debug_span!("inner", detail = 7);
            let id = span.context().span().span_context().trace_id();
            assert_eq!(id, opentelemetry::trace::TraceId::INVALID, "a debug span is not made under `info`");
            span.in_scope(|| tracing::info!("outside any span"));
        });
        assert!(!text.contains("detail=7"), "{text}");
    }

    #[test]
    fn an_https_collector_is_refused_and_http_is_not() {
        let error = refuse_https("https://collector:4317").expect_err("no TLS to the collector");
        assert!(error.starts_with("invalid config otlp_endpoint") && error.contains("http://"), "{error}");
        assert_eq!(refuse_https("http://127.0.0.1:4317"), Ok(()));
    }

    #[test]
    fn a_bad_log_filter_is_refused() {
        let provider = SdkTracerProvider::builder().build();
        let error = layers::<tracing_subscriber::Registry>(
            "info,[",
            LogFormat::Text,
            BoxMakeWriter::new(std::io::sink),
            false,
            provider.tracer("test"),
        )
        .err()
        .expect("refused");
        assert!(error.starts_with("invalid log filter"), "{error}");
    }
}
