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

/// Free text that may run over several lines (a reason, a ruling): at most
/// `max` bytes, no control characters but the line feed. Carriage returns,
/// tabs, escapes (ESC, BEL …), DEL and the C1 controls are refused: the text
/// is shown in forums, exports and terminals, where they could rewrite what
/// a reader sees; a `\r\n` from a client is refused rather than guessed at.
pub fn text(field: &str, text: &str, max: usize) -> Result<(), Status> {
    checked(field, text, max, |c| c.is_control() && c != '\n')
}

/// One line of text (a name, a title, a purpose, a forum reference): as
/// [`text`], but without line breaks either, because these are printed
/// inside other lines (`… by <name>: …`) and a break would forge one.
pub fn line(field: &str, text: &str, max: usize) -> Result<(), Status> {
    checked(field, text, max, char::is_control)
}

fn checked(field: &str, text: &str, max: usize, refused: impl Fn(char) -> bool) -> Result<(), Status> {
    if text.len() > max {
        return Err(invalid_argument(field, format!("is {} bytes; the limit is {max}", text.len())));
    }
    if let Some(c) = text.chars().find(|&c| refused(c)) {
        return Err(invalid_argument(field, format!("may not hold control characters (U+{:04X} found)", u32::from(c))));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use tonic::Code;

    use super::*;

    #[test]
    fn text_takes_line_feeds_and_no_other_control_character() {
        assert!(text("reason", "first line\nsecond line", 100).is_ok());
        for bad in ["esc \u{1b}[2J", "bell \u{7}", "del \u{7f}", "cr \r\n", "tab \t", "c1 \u{9b}"] {
            let status = text("reason", bad, 100).expect_err(bad);
            assert_eq!(status.code(), Code::InvalidArgument);
            assert!(status.message().starts_with("reason: may not hold control characters"), "{}", status.message());
        }
        assert!(text("reason", &"x".repeat(101), 100).is_err());
    }

    #[test]
    fn a_line_takes_no_control_character_at_all() {
        assert!(line("by", "Professor Oak", 100).is_ok());
        let status = line("by", "oak\nJUDGE: forged", 100).expect_err("a line break");
        assert_eq!(status.message(), "by: may not hold control characters (U+000A found)");
        assert!(line("by", "\u{1b}]0;title\u{7}", 100).is_err());
    }
}
