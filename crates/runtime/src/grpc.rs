//! gRPC pieces every service serves the same way.

use battlelog_proto::error::{Error, Lang};
use tonic::{Code, Status};

use crate::limits::FieldError;

/// Why the reflection service could not be built.
pub use tonic_reflection::server::Error as ReflectionError;

/// `INVALID_ARGUMENT` naming `field`: battlelog_proto's
/// [`Error::invalid_argument`] (reason `INVALID_FIELD`, metadata `field`,
/// a `BadRequest` violation) as a status.
pub fn invalid_argument(field: &str, description: impl Into<String>) -> Status {
    Error::invalid_argument(field, description).into_status()
}

/// A broken input limit leaves a service as [`invalid_argument`]: the
/// message `<field>: <what was wrong>` and a `BadRequest` violation of the
/// field.
impl From<FieldError> for Error {
    fn from(error: FieldError) -> Self {
        Error::invalid_argument(&error.field, error.violation.to_string())
    }
}

impl From<FieldError> for Status {
    fn from(error: FieldError) -> Self {
        Error::from(error).into_status()
    }
}

/// The standard health service; `set_serving` is called by the service
/// once it is ready.
pub fn health() -> (
    tonic_health::server::HealthReporter,
    tonic_health::pb::health_server::HealthServer<impl tonic_health::pb::health_server::Health>,
) {
    tonic_health::server::health_reporter()
}

/// Server reflection over every battlelog proto, so `grpcurl` and friends
/// work without the `.proto` files. It lists `service` (the full name, e.g.
/// `battlelog.v1.Roller`), health and both reflection versions: the
/// services this server answers. Left to itself the builder would list
/// every service in the descriptors, the other battlelog services' too.
/// Serve [`reflection_v1alpha`] beside it.
pub fn reflection(
    service: &str,
) -> Result<
    tonic_reflection::server::v1::ServerReflectionServer<impl tonic_reflection::server::v1::ServerReflection>,
    tonic_reflection::server::Error,
> {
    reflection_builder(service).build_v1()
}

/// The same reflection under `grpc.reflection.v1alpha`, served beside
/// [`reflection`]: many clients still ask only v1alpha (Python's
/// `grpcio-reflection`, older `grpcurl`) and would get `UNIMPLEMENTED`
/// from a v1-only server. Both list the same services.
pub fn reflection_v1alpha(
    service: &str,
) -> Result<
    tonic_reflection::server::v1alpha::ServerReflectionServer<impl tonic_reflection::server::v1alpha::ServerReflection>,
    tonic_reflection::server::Error,
> {
    reflection_builder(service).build_v1alpha()
}

/// What both reflection versions describe. Each builder adds its own
/// version's descriptors; the other's are registered here so that every
/// service listed can also be described (a file registered twice is kept
/// once).
fn reflection_builder(service: &str) -> tonic_reflection::server::Builder<'static> {
    tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(battlelog_proto::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_reflection::pb::v1::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_reflection::pb::v1alpha::FILE_DESCRIPTOR_SET)
        .with_service_name(service)
        .with_service_name("grpc.health.v1.Health")
        .with_service_name("grpc.reflection.v1.ServerReflection")
        .with_service_name("grpc.reflection.v1alpha.ServerReflection")
}

/// The connections `listener` accepts, with Nagle's algorithm off: small
/// gRPC frames left to Nagle meet the peer's delayed ACK, about 40 ms per
/// round trip. tonic's own `TcpIncoming` sets `TCP_NODELAY` on each accepted
/// stream; the listener stays the caller's, so port 0 and the address it
/// announced keep working, and graceful shutdown is the server's as before.
pub fn incoming(listener: tokio::net::TcpListener) -> tonic::transport::server::TcpIncoming {
    tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true))
}

/// What prost's `DecodeError` says first, as tonic passes it on.
const UNDECODABLE: &str = "failed to decode Protobuf message";

/// `service` answering a request that does not decode with
/// `INVALID_ARGUMENT` (field `request`) instead of tonic's `INTERNAL`, and
/// every error in the language the request's `accept-language` prefers:
/// of the English and Russian `LocalizedMessage`s a battlelog status
/// carries (battlelog_proto::error), only that one is sent.
///
/// tonic follows gRPC's status code table, which files an unparseable
/// request under `INTERNAL`; battlelog promises `INVALID_ARGUMENT` for
/// every bad input (docs/operating.md, *Security*), and a caller must be able to tell
/// "you sent something we refuse" (e.g. a `Struct` nested past prost's
/// recursion limit of 100 messages) from a fault of ours. Decoding happens
/// before the handler runs, so its error always leaves as a trailers-only
/// response whose headers this rewrites. A handler's error leaves the same
/// way (a stream's own last status, in its trailers, keeps both messages).
pub fn undecodable_is_invalid<S>(service: S) -> UndecodableIsInvalid<S> {
    UndecodableIsInvalid { inner: service }
}

/// See [`undecodable_is_invalid`].
#[derive(Debug, Clone)]
pub struct UndecodableIsInvalid<S> {
    inner: S,
}

impl<S: tonic::server::NamedService> tonic::server::NamedService for UndecodableIsInvalid<S> {
    const NAME: &'static str = S::NAME;
}

impl<S, B, RB> tonic::codegen::Service<tonic::codegen::http::Request<B>> for UndecodableIsInvalid<S>
where
    S: tonic::codegen::Service<tonic::codegen::http::Request<B>, Response = tonic::codegen::http::Response<RB>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = tonic::codegen::BoxFuture<S::Response, S::Error>;

    fn poll_ready(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: tonic::codegen::http::Request<B>) -> Self::Future {
        let lang = request
            .headers()
            .get("accept-language")
            .and_then(|value| value.to_str().ok())
            .map_or(Lang::En, Lang::from_accept_language);
        let response = self.inner.call(request);
        Box::pin(async move {
            let mut response = response.await?;
            let Some(status) = Status::from_header_map(response.headers()) else {
                return Ok(response);
            };
            let answer = if status.code() == Code::Internal && status.message().starts_with(UNDECODABLE) {
                invalid_argument("request", format!("does not decode: {}", status.message()))
            } else if status.code() != Code::Ok {
                status
            } else {
                return Ok(response);
            };
            let answer = battlelog_proto::error::localize(&answer, lang);
            let headers = response.headers_mut();
            headers.remove("grpc-status-details-bin");
            // Only fails on a header value it cannot encode; ours are ASCII
            // (tonic percent-encodes the message).
            let _ = answer.add_header(headers);
            Ok(response)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_field_error_leaves_as_invalid_argument_with_a_bad_request_detail() {
        let status = Status::from(crate::limits::battle_id("a.b").expect_err("a dot"));
        assert_eq!(status.code(), Code::InvalidArgument);
        assert_eq!(status.message(), "battle_id: may hold only letters A-Z a-z, digits, '-' and '_'");
        let details = tonic_types::StatusExt::get_error_details(&status);
        let violations = details.bad_request().expect("a BadRequest detail").field_violations.clone();
        assert_eq!(violations.len(), 1);
        assert_eq!(violations[0].field, "battle_id");
        assert_eq!(violations[0].description, "may hold only letters A-Z a-z, digits, '-' and '_'");
    }
}
