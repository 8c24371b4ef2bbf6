//! An OTLP collector stand-in: a real OTLP/gRPC trace receiver
//! (`opentelemetry.proto.collector.trace.v1.TraceService/Export`) on a free
//! loopback port, keeping every span it is sent with the `service.name` of
//! the resource it came under. The services export to it as to a real
//! collector (`--otlp-endpoint`, [`Collector::endpoint`]).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{TraceService, TraceServiceServer};
use opentelemetry_proto::tonic::collector::trace::v1::{ExportTraceServiceRequest, ExportTraceServiceResponse};
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue};
use tokio::sync::oneshot;
use tonic::{Request, Response, Status};

/// One span as the collector received it; ids in lowercase hex, as in a
/// `traceparent` and in the services' logs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollectedSpan {
    /// The `service.name` of the resource it was exported under.
    pub service: String,
    pub name: String,
    pub trace_id: String,
    pub span_id: String,
    /// Empty for a trace's root span.
    pub parent_span_id: String,
    /// Its attributes, every value as text.
    pub attributes: Vec<(String, String)>,
}

impl CollectedSpan {
    /// The value of attribute `key`, if it has one.
    pub fn attribute(&self, key: &str) -> Option<&str> {
        self.attributes.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
}

/// The receiver, serving until dropped.
#[derive(Debug)]
pub struct Collector {
    addr: SocketAddr,
    spans: Arc<Mutex<Vec<CollectedSpan>>>,
    requests: Arc<Mutex<usize>>,
    stop: Option<oneshot::Sender<()>>,
}

impl Collector {
    /// Starts it on `127.0.0.1:0`.
    pub async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await.expect("bind the collector");
        let addr = listener.local_addr().expect("the collector's address");
        let receiver = Receiver { spans: Arc::default(), requests: Arc::default() };
        let (spans, requests) = (receiver.spans.clone(), receiver.requests.clone());
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(TraceServiceServer::new(receiver))
                .serve_with_incoming_shutdown(tonic::transport::server::TcpIncoming::from(listener), async {
                    let _ = stopped.await;
                }),
        );
        Self { addr, spans, requests, stop: Some(stop) }
    }

    /// `http://127.0.0.1:<port>`: the value of a service's `otlp_endpoint`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<CollectedSpan> {
        self.spans.lock().expect("lock").clone()
    }

    /// The spans of trace `trace_id` received so far.
    pub fn trace(&self, trace_id: &str) -> Vec<CollectedSpan> {
        self.spans().into_iter().filter(|s| s.trace_id == trace_id).collect()
    }

    /// How many `Export` calls it has answered (empty ones too).
    pub fn exports(&self) -> usize {
        *self.requests.lock().expect("lock")
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Whether `ancestor` is `span`'s parent, grandparent, … within `spans`.
pub fn descends_from(spans: &[CollectedSpan], span: &CollectedSpan, ancestor: &CollectedSpan) -> bool {
    let mut parent = span.parent_span_id.clone();
    // A trace is a tree; the bound only stops a malformed (cyclic) one.
    for _ in 0..=spans.len() {
        if parent.is_empty() {
            return false;
        }
        if parent == ancestor.span_id {
            return true;
        }
        match spans.iter().find(|s| s.span_id == parent) {
            Some(next) => parent = next.parent_span_id.clone(),
            None => return false,
        }
    }
    false
}

struct Receiver {
    spans: Arc<Mutex<Vec<CollectedSpan>>>,
    requests: Arc<Mutex<usize>>,
}

#[tonic::async_trait]
impl TraceService for Receiver {
    async fn export(
        &self,
        request: Request<ExportTraceServiceRequest>,
    ) -> Result<Response<ExportTraceServiceResponse>, Status> {
        let mut received = Vec::new();
        for resource_spans in request.into_inner().resource_spans {
            let resource = resource_spans.resource.map(|r| r.attributes).unwrap_or_default();
            let service = attributes(&resource)
                .into_iter()
                .find(|(k, _)| k == "service.name")
                .map(|(_, v)| v)
                .unwrap_or_default();
            for scope_spans in resource_spans.scope_spans {
                for span in scope_spans.spans {
                    received.push(CollectedSpan {
                        service: service.clone(),
                        name: span.name,
                        trace_id: hex(&span.trace_id),
                        span_id: hex(&span.span_id),
                        parent_span_id: hex(&span.parent_span_id),
                        attributes: attributes(&span.attributes),
                    });
                }
            }
        }
        self.spans.lock().expect("lock").extend(received);
        *self.requests.lock().expect("lock") += 1;
        Ok(Response::new(ExportTraceServiceResponse { partial_success: None }))
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn attributes(list: &[KeyValue]) -> Vec<(String, String)> {
    list.iter().map(|kv| (kv.key.clone(), kv.value.as_ref().map(text).unwrap_or_default())).collect()
}

fn text(value: &AnyValue) -> String {
    match &value.value {
        Some(Value::StringValue(s)) => s.clone(),
        Some(Value::BoolValue(b)) => b.to_string(),
        Some(Value::IntValue(i)) => i.to_string(),
        Some(Value::DoubleValue(d)) => d.to_string(),
        Some(other) => format!("{other:?}"),
        None => String::new(),
    }
}
