//! PLACEHOLDER, to be replaced by the real observe layer at merge (issue
//! 22's contract): the signatures the serve builder ([`crate::serve`])
//! calls, doing nothing — an identity layer, an interceptor that passes
//! every request, and metric families that register nothing.

use prometheus_client::registry::Registry;
use tower::Layer;

/// The gRPC request metrics of one server (placeholder: none).
#[derive(Debug, Clone, Default)]
pub struct GrpcMetrics {}

impl GrpcMetrics {
    /// Registers the families into `registry`, the service's top-level one
    /// (prefix `battlelog`). Placeholder: registers nothing.
    pub fn register(_registry: &mut Registry) -> Self {
        Self {}
    }
}

/// The layer on every gRPC server, outermost (placeholder: identity).
pub fn layer(_served: &[&'static str], _metrics: GrpcMetrics) -> ObserveLayer {
    ObserveLayer {}
}

/// See [`layer`].
#[derive(Debug, Clone, Default)]
pub struct ObserveLayer {}

impl<S> Layer<S> for ObserveLayer {
    type Service = S;

    fn layer(&self, inner: S) -> S {
        inner
    }
}

/// Runs right after the authenticator: notes the caller's tenant for the
/// access log (placeholder: passes every request unchanged).
#[derive(Debug, Clone, Copy, Default)]
pub struct CallerNote;

impl tonic::service::Interceptor for CallerNote {
    fn call(&mut self, request: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        Ok(request)
    }
}
