//! Subjects: `<prefix>.<tenant>.<battle>`, `<tenant>` being the battle's
//! `BattleOpened.tenant` as a subject token so that NATS permissions can
//! give each tenant its own battles.

use std::borrow::Cow;

/// The default prefix of the sled journal's fan-out (`nats_subject_prefix`).
pub const EVENTS_PREFIX: &str = "battlelog.events";
/// The prefix of the JetStream journal's own log.
pub const LOG_PREFIX: &str = "battlelog.journal";
/// The subject token of battles opened without a tenant:
/// `battlelog.events._.<battle>`. No tenant may be named this.
pub const TENANT_PLACEHOLDER: &str = "_";
/// Longest tenant, in bytes.
pub const MAX_TENANT_BYTES: usize = 128;

/// What keeps `tenant` from being a subject token of its own, `None` when
/// nothing does (the empty tenant is the caller's to handle: it becomes
/// [`TENANT_PLACEHOLDER`]).
pub fn tenant_problem(tenant: &str) -> Option<String> {
    if tenant == TENANT_PLACEHOLDER {
        return Some(format!("{TENANT_PLACEHOLDER:?} is reserved for battles without a tenant"));
    }
    if tenant.len() > MAX_TENANT_BYTES {
        return Some(format!("{} bytes exceeds the limit of {MAX_TENANT_BYTES}", tenant.len()));
    }
    // NATS reads these as a separator or wildcards.
    if let Some(c) = tenant.chars().find(|c| matches!(c, '.' | '*' | '>') || c.is_whitespace() || c.is_control()) {
        return Some(format!("character {c:?} is not allowed (no '.', '*', '>', whitespace or control characters)"));
    }
    None
}

/// The subject token of a tenant: itself when it is a safe token, the
/// placeholder `_` when empty (or, for records written before tenants were
/// checked, unsafe).
pub fn subject_token(tenant: &str) -> Cow<'_, str> {
    if !tenant.is_empty() && tenant_problem(tenant).is_none() {
        Cow::Borrowed(tenant)
    } else {
        Cow::Borrowed(TENANT_PLACEHOLDER)
    }
}

/// `<prefix>.<tenant token>.<battle>`.
pub fn subject(prefix: &str, tenant_token: &str, battle: &str) -> String {
    format!("{prefix}.{tenant_token}.{battle}")
}

/// `<prefix>.*.<battle>`: the battle under any tenant.
pub fn battle_filter(prefix: &str, battle: &str) -> String {
    format!("{prefix}.*.{battle}")
}

/// The tenant token and battle of `subject` under `prefix`.
pub fn parts<'a>(prefix: &str, subject: &'a str) -> Option<(&'a str, &'a str)> {
    let rest = subject.strip_prefix(prefix)?.strip_prefix('.')?;
    let (tenant, battle) = rest.split_once('.')?;
    (!tenant.is_empty() && !battle.is_empty() && !battle.contains('.')).then_some((tenant, battle))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_round_trip_and_unsafe_tenants_become_the_placeholder() {
        let s = subject(LOG_PREFIX, &subject_token("forum-a"), "b1");
        assert_eq!(s, "battlelog.journal.forum-a.b1");
        assert_eq!(parts(LOG_PREFIX, &s), Some(("forum-a", "b1")));
        assert_eq!(battle_filter(EVENTS_PREFIX, "b1"), "battlelog.events.*.b1");
        for unsafe_tenant in ["", "_", "a.b", "a*", "a>", "a b", "a\u{7}", &"x".repeat(129)] {
            assert_eq!(subject_token(unsafe_tenant), TENANT_PLACEHOLDER, "{unsafe_tenant:?}");
        }
        assert_eq!(tenant_problem(&"x".repeat(128)), None);
        assert!(tenant_problem("a.b").is_some_and(|p| p.contains("'.'")));
        assert_eq!(parts(EVENTS_PREFIX, "elsewhere.a.b1"), None);
        assert_eq!(parts(EVENTS_PREFIX, "battlelog.events.a.b.c"), None, "a battle is one token");
        assert_eq!(parts(EVENTS_PREFIX, "battlelog.events..b"), None);
    }
}
