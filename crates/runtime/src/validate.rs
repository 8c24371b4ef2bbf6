//! Checks of the inputs every service shares, answered as
//! `INVALID_ARGUMENT` naming the field and the limit.

use tonic::Status;

use crate::grpc::invalid_argument;

/// Battle ids become journal stream ids, NATS subject tokens and sled key
/// prefixes: hence the length and the charset.
pub const MAX_BATTLE_ID_BYTES: usize = 128;

pub fn battle_id(battle_id: &str) -> Result<(), Status> {
    if battle_id.is_empty() || battle_id.len() > MAX_BATTLE_ID_BYTES {
        return Err(invalid_argument("battle_id", format!("must be 1 to {MAX_BATTLE_ID_BYTES} bytes")));
    }
    if !battle_id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
        return Err(invalid_argument("battle_id", "may hold only letters A-Z a-z, digits, '-' and '_'"));
    }
    Ok(())
}

/// Request ids become idempotency keys with a short prefix (`act:` …), which
/// the journal takes up to 128 bytes: each service sets its `max` so that its
/// keys, and those it passes on, fit.
pub fn request_id(request_id: &str, max: usize) -> Result<(), Status> {
    if request_id.is_empty() || request_id.len() > max {
        return Err(invalid_argument("request_id", format!("is required, 1 to {max} bytes")));
    }
    if !request_id.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(invalid_argument("request_id", "may hold only printable ASCII without spaces"));
    }
    Ok(())
}

/// Free text: at most `max` bytes, no control characters but line breaks.
pub fn text(field: &str, text: &str, max: usize) -> Result<(), Status> {
    if text.len() > max {
        return Err(invalid_argument(field, format!("is {} bytes; the limit is {max}", text.len())));
    }
    if text.chars().any(|c| c.is_control() && c != '\n') {
        return Err(invalid_argument(field, "may not hold control characters"));
    }
    Ok(())
}
