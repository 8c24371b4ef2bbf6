//! Tokens on the wire: the server interceptor and the client's bearer; and
//! the trace context each outgoing call carries ([`inject_trace_context`]).

use battlelog_proto::error::{AuthReason, Error};
use opentelemetry::propagation::Injector;
use tonic::metadata::{AsciiMetadataValue, MetadataKey, MetadataMap, errors::InvalidMetadataValue};
use tonic::service::Interceptor;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;
use tonic::{Request, Status};
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

use crate::claims::{Caller, Claims, Role};
use crate::token::{TokenCheck, TokenError, Verifier};

impl TokenError {
    /// The `ErrorInfo` reason a client can branch on.
    pub fn reason(&self) -> AuthReason {
        match self {
            TokenError::Missing => AuthReason::TokenMissing,
            TokenError::Malformed(_) => AuthReason::TokenMalformed,
            TokenError::Expired { .. } => AuthReason::TokenExpired,
            TokenError::UnknownKey { .. } => AuthReason::TokenUnknownKey,
            TokenError::BadSignature { .. } => AuthReason::TokenBadSignature,
            TokenError::NotYetValid { .. } => AuthReason::TokenNotYetValid,
            TokenError::IssuedInFuture { .. } => AuthReason::TokenIssuedInFuture,
            TokenError::LifetimeTooLong { .. } => AuthReason::TokenLifetimeTooLong,
            TokenError::Revoked { .. } => AuthReason::TokenRevoked,
            TokenError::TenantReserved { .. } => AuthReason::TokenTenantReserved,
        }
    }
}

impl From<TokenError> for Error {
    fn from(error: TokenError) -> Self {
        Error::new(error.reason(), error.to_string())
    }
}

/// `UNAUTHENTICATED` with the token's reason (battlelog_proto::error).
impl From<TokenError> for Status {
    fn from(error: TokenError) -> Self {
        Error::from(error).into_status()
    }
}

impl Caller {
    /// `PERMISSION_DENIED` naming the roles `call` needs, unless this caller
    /// has one of them.
    pub fn require(&self, call: &str, roles: &[Role]) -> Result<(), Status> {
        if roles.contains(&self.role) {
            return Ok(());
        }
        let needed = roles.iter().map(|r| r.as_str()).collect::<Vec<_>>().join(" or ");
        let error = Error::new(
            AuthReason::RoleNotAllowed,
            format!("{call} needs the role {needed}; this token's role is {}", self.role),
        )
        .with_message_ru(format!("{call} требует роль {needed}; роль этого токена — {}", self.role))
        .with("needed", needed);
        Err(error.into_status())
    }
}

/// The server side: verifies the bearer token of every request to the
/// service it wraps and leaves the [`Caller`] in the request's extensions.
/// With `only`, a role outside it is refused at the door (the roller and
/// the journal serve the `service` role alone).
#[derive(Debug, Clone)]
pub struct Authenticator {
    verifier: Verifier,
    only: Option<(&'static str, &'static [Role])>,
}

impl Authenticator {
    /// Authenticates every caller; the handlers check roles per call.
    pub fn new(verifier: Verifier) -> Self {
        Self { verifier, only: None }
    }

    /// Authenticates and admits only `roles` to the whole `service`.
    pub fn only(verifier: Verifier, service: &'static str, roles: &'static [Role]) -> Self {
        Self { verifier, only: Some((service, roles)) }
    }

    fn claims<T>(&self, request: &Request<T>) -> Result<Claims, TokenError> {
        let header = request.metadata().get("authorization").ok_or(TokenError::Missing)?;
        let header = header.to_str().map_err(|_| TokenError::Malformed("authorization is not ASCII".into()))?;
        let token = header
            .strip_prefix("Bearer ")
            .or_else(|| header.strip_prefix("bearer "))
            .ok_or_else(|| TokenError::Malformed("authorization must be `Bearer <token>`".into()))?;
        self.verifier.verify(token.trim())
    }
}

impl Interceptor for Authenticator {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        let claims = self.claims(&request)?;
        let caller = Caller::from(claims.clone());
        if let Some((service, roles)) = self.only {
            caller.require(service, roles)?;
        }
        request.extensions_mut().insert(caller);
        // For a call that outlives the door (a stream): its token checked
        // again while it lasts, so a revocation ends it.
        request.extensions_mut().insert(TokenCheck::new(self.verifier.clone(), claims));
        Ok(request)
    }
}

/// The verified caller of a request that passed an [`Authenticator`].
pub fn caller<T>(request: &Request<T>) -> Result<Caller, Status> {
    request
        .extensions()
        .get::<Caller>()
        .cloned()
        .ok_or_else(|| Error::internal("the request reached its handler without authentication").into_status())
}

/// The client side: `authorization: Bearer <token>` on every call.
/// With [`Bearer::with_accept_language`], calls also carry an
/// `accept-language`: the language of the refusals' `LocalizedMessage`.
#[derive(Debug, Clone)]
pub struct Bearer {
    token: AsciiMetadataValue,
    accept_language: Option<AsciiMetadataValue>,
}

impl Bearer {
    pub fn new(token: &str) -> Result<Self, InvalidMetadataValue> {
        Ok(Self { token: format!("Bearer {}", token.trim()).parse()?, accept_language: None })
    }

    /// Every call also says `accept-language: <value>`.
    pub fn with_accept_language(mut self, value: &str) -> Result<Self, InvalidMetadataValue> {
        self.accept_language = Some(value.parse()?);
        Ok(self)
    }
}

impl Interceptor for Bearer {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        inject_trace_context(request.metadata_mut());
        request.metadata_mut().insert("authorization", self.token.clone());
        if let Some(language) = &self.accept_language {
            request.metadata_mut().insert("accept-language", language.clone());
        }
        Ok(request)
    }
}

/// Puts the current span's trace context into `metadata` (W3C
/// `traceparent`, and `tracestate` when there is one), through the globally
/// installed propagator (battlelog_runtime::telemetry installs it): the
/// service called continues this trace. Runs when the call is made, in the
/// caller's span — the request being served, when a service calls another
/// while serving one. Without a propagator or a span nothing is added.
pub fn inject_trace_context(metadata: &mut MetadataMap) {
    let context = tracing::Span::current().context();
    opentelemetry::global::get_text_map_propagator(|propagator| {
        propagator.inject_context(&context, &mut MetadataInjector(metadata));
    });
}

/// gRPC metadata as the propagator's carrier.
struct MetadataInjector<'a>(&'a mut MetadataMap);

impl Injector for MetadataInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        // The W3C fields are lowercase ASCII; anything else is dropped, not
        // sent as a header the server cannot read.
        if let (Ok(key), Ok(value)) = (MetadataKey::from_bytes(key.as_bytes()), AsciiMetadataValue::try_from(value)) {
            self.0.insert(key, value);
        }
    }
}

/// A channel whose calls carry a token.
pub type AuthChannel = InterceptedService<Channel, Bearer>;

/// `channel` with `token` on every call.
pub fn authed(channel: Channel, token: &str) -> Result<AuthChannel, InvalidMetadataValue> {
    Ok(InterceptedService::new(channel, Bearer::new(token)?))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tonic::Code;

    use super::*;
    use crate::keys::{SigningKey, VerificationKeys};

    fn request_with(header: Option<&str>) -> Request<()> {
        let mut request = Request::new(());
        if let Some(value) = header {
            request.metadata_mut().insert("authorization", value.parse().expect("ascii"));
        }
        request
    }

    #[test]
    fn the_interceptor_names_what_is_wrong() {
        let key = SigningKey::generate().expect("key");
        let mut auth = Authenticator::only(Verifier::new(VerificationKeys::from(&key)), "Journal", &[Role::Service]);
        let missing = auth.call(request_with(None)).expect_err("missing");
        assert_eq!(missing.code(), Code::Unauthenticated);
        assert!(missing.message().contains("missing"), "{}", missing.message());
        let basic = auth.call(request_with(Some("Basic abc"))).expect_err("not bearer");
        assert!(basic.message().contains("malformed"), "{}", basic.message());
        let reader = key.issue("r", "t", Role::Reader, Duration::from_secs(60)).expect("issue");
        let denied = auth.call(request_with(Some(&format!("Bearer {reader}")))).expect_err("reader");
        assert_eq!(denied.code(), Code::PermissionDenied);
        assert_eq!(denied.message(), "Journal needs the role service; this token's role is reader");
        let service = key.issue("resolver", "t", Role::Service, Duration::from_secs(60)).expect("issue");
        let admitted = auth.call(request_with(Some(&format!("Bearer {service}")))).expect("service");
        assert_eq!(caller(&admitted).expect("caller").subject, "resolver");
    }

    /// A call made inside a span carries that span's trace context, as W3C
    /// says it is written: `00-<trace id>-<parent span id>-<flags>`; a call
    /// made outside any span carries none.
    #[test]
    fn outgoing_calls_carry_the_current_span_as_traceparent() {
        use opentelemetry::trace::{TraceContextExt as _, TracerProvider as _};
        use tracing_subscriber::layer::SubscriberExt as _;

        opentelemetry::global::set_text_map_propagator(opentelemetry_sdk::propagation::TraceContextPropagator::new());
        let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder().build();
        let subscriber =
            tracing_subscriber::registry().with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")));
        let mut bearer = Bearer::new("t0ken").expect("ascii");
        tracing::subscriber::with_default(subscriber, || {
            let outside = bearer.call(Request::new(())).expect("call");
            assert!(outside.metadata().get("traceparent").is_none(), "no span, no trace context");
            assert_eq!(outside.metadata().get("authorization").expect("token"), "Bearer t0ken");

            let span = tracing::info_span!("grpc.request");
            let context = span.context();
            let span_context = context.span().span_context().clone();
            let inside = span.in_scope(|| bearer.call(Request::new(()))).expect("call");
            let traceparent = inside.metadata().get("traceparent").expect("a traceparent").to_str().expect("ascii");
            assert_eq!(
                traceparent,
                format!("00-{:032x}-{:016x}-01", span_context.trace_id(), span_context.span_id()),
                "the span's ids, sampled"
            );
            assert_eq!(inside.metadata().get("authorization").expect("token"), "Bearer t0ken");
        });
    }
}
