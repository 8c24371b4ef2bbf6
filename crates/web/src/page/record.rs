//! What an event's record holds besides its readable fields: the
//! credential the resolver recorded with a command (who caused it; the
//! readable event does not carry it) and the time it was journaled.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use battlelog_proto::battle;
use battlelog_proto::v1::JournalRecord;
use battlelog_verify::export::ExportLine;
use prost::Message;
use time::OffsetDateTime;
use time::macros::format_description;

/// The subject and role of the credential recorded with a command event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Who {
    pub subject: String,
    pub role: String,
}

/// The credential recorded in `line`'s record bytes: `None` for the
/// roller's own events, records from before credentials were recorded, and
/// records that do not decode (the audit reports those).
pub fn credential(line: &ExportLine) -> Option<Who> {
    let bytes = BASE64.decode(&line.record).ok()?;
    let record = JournalRecord::decode(bytes.as_slice()).ok()?;
    let event = battle::decode(&record).ok()?;
    battle::credential(&event).map(|c| Who { subject: c.subject.clone(), role: c.role.clone() })
}

/// A record's time: the `datetime` attribute (RFC 3339, UTC, to the
/// microsecond, as recorded) and the text a reader sees (to the second).
pub fn time(unix_micros: i64) -> Option<(String, String)> {
    let at = OffsetDateTime::from_unix_timestamp_nanos(i128::from(unix_micros) * 1000).ok()?;
    let machine =
        at.format(format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:6]Z")).ok()?;
    let readable = at.format(format_description!("[year]-[month]-[day] [hour]:[minute]:[second] UTC")).ok()?;
    Some((machine, readable))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_utc_to_the_microsecond() {
        // 2026-12-02T00:00:00Z is 1 796 169 600 s after the epoch (date -u -d).
        let (machine, readable) = time(1_796_169_600_000_000 + 1_234_567).unwrap();
        assert_eq!(machine, "2026-12-02T00:00:01.234567Z");
        assert_eq!(readable, "2026-12-02 00:00:01 UTC");
    }
}
