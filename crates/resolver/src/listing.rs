//! `ListBattles`: a tenant's battles, newest first, a page at a time.
//!
//! The resolver keeps nothing: the list is the journal's battle index
//! (`Journal.ListBattleIndex`, derived from the global log by every journal
//! process, see `battlelog_journal::index`), asked with the caller's own
//! tenant, so no filter or page token can reach another tenant's battles.
//! The page token carries where the last page stopped (the global position
//! of its last battle's opening) and a fingerprint of the tenant and
//! filters it was made for: a token used with other filters, or by another
//! tenant, is refused rather than silently listing something else.

use battlelog_auth::{AuthChannel, Caller};
use battlelog_proto::v1::journal_client::JournalClient;
use battlelog_proto::v1::{BattleIndexRequest, BattleStatus, ListBattlesRequest, ListBattlesResponse};
use battlelog_runtime::grpc::invalid_argument;
use battlelog_stream::downstream;
use sha2::{Digest, Sha256};
use tonic::Status;

use crate::service::MAX_TEXT_BYTES;

/// The default of `max_list_page_size`.
pub const DEFAULT_MAX_PAGE_SIZE: u32 = 100;

/// What `page_size` 0 asks for (or the maximum, when that is lower).
pub const DEFAULT_PAGE_SIZE: u32 = 50;

/// One page of `caller`'s tenant's battles, from the journal's index; at
/// most `max_page_size` per page.
pub async fn list_battles(
    journal: &JournalClient<AuthChannel>,
    caller: &Caller,
    request: ListBattlesRequest,
    max_page_size: u32,
) -> Result<ListBattlesResponse, Status> {
    let page_size = match request.page_size {
        0 => DEFAULT_PAGE_SIZE.min(max_page_size),
        n if n > max_page_size => {
            return Err(invalid_argument(
                "page_size",
                format!("{n} exceeds the limit of {max_page_size} (max_list_page_size)"),
            ));
        }
        n => n,
    };
    if let Some(forum_ref) = &request.forum_ref {
        // What OpenBattle takes: a longer one names no battle.
        battlelog_runtime::validate::line("forum_ref", forum_ref, MAX_TEXT_BYTES)?;
    }
    let status = BattleStatus::try_from(request.status)
        .map_err(|_| invalid_argument("status", format!("{} is not a BattleStatus", request.status)))?;
    let fingerprint = fingerprint(&caller.tenant, request.forum_ref.as_deref(), status);
    let before = match request.page_token.as_str() {
        "" => None,
        token => Some(decode_token(token, fingerprint)?),
    };
    let index = BattleIndexRequest {
        tenant: caller.tenant.clone(),
        forum_ref: request.forum_ref,
        status: status as i32,
        before_position: before,
        max_count: page_size,
    };
    let page = journal.clone().list_battle_index(index).await.map_err(|s| downstream("journal", s))?.into_inner();
    Ok(ListBattlesResponse {
        battles: page.battles.into_iter().filter_map(|b| b.summary).collect(),
        next_page_token: page.next_before_position.map(|p| encode_token(p, fingerprint)).unwrap_or_default(),
        older_forgotten: page.older_forgotten,
    })
}

/// The tenant and filters a page token belongs to, hashed.
fn fingerprint(tenant: &str, forum_ref: Option<&str>, status: BattleStatus) -> [u8; 8] {
    let mut hash = Sha256::new();
    hash.update(b"battlelog/v1/list-battles\0");
    for part in [tenant, forum_ref.unwrap_or("\u{0}none")] {
        hash.update((part.len() as u64).to_be_bytes());
        hash.update(part.as_bytes());
    }
    hash.update((status as i32).to_be_bytes());
    let digest = hash.finalize();
    let mut out = [0u8; 8];
    out.copy_from_slice(&digest[..8]);
    out
}

/// 32 hex digits: the position to continue below, then the fingerprint.
fn encode_token(before: u64, fingerprint: [u8; 8]) -> String {
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&before.to_be_bytes());
    bytes[8..].copy_from_slice(&fingerprint);
    hex::encode(bytes)
}

fn decode_token(token: &str, fingerprint: [u8; 8]) -> Result<u64, Status> {
    let bad = |why: &str| invalid_argument("page_token", why.to_owned());
    let bytes = hex::decode(token).ok().filter(|b| b.len() == 16).ok_or_else(|| bad("is not a page token"))?;
    if bytes[8..] != fingerprint {
        return Err(bad("belongs to a listing with another forum_ref or status: repeat the filters of the first page"));
    }
    let mut before = [0u8; 8];
    before.copy_from_slice(&bytes[..8]);
    Ok(u64::from_be_bytes(before))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_round_trips_only_with_its_own_filters() {
        let mine = fingerprint("t1", Some("thread/1"), BattleStatus::Open);
        let token = encode_token(42, mine);
        assert_eq!(decode_token(&token, mine).unwrap(), 42);
        for other in [
            fingerprint("t2", Some("thread/1"), BattleStatus::Open),
            fingerprint("t1", Some("thread/2"), BattleStatus::Open),
            fingerprint("t1", None, BattleStatus::Open),
            fingerprint("t1", Some("thread/1"), BattleStatus::Any),
        ] {
            let err = decode_token(&token, other).unwrap_err();
            assert_eq!(err.code(), tonic::Code::InvalidArgument);
            assert!(err.message().starts_with("page_token:"), "{}", err.message());
        }
        assert_eq!(decode_token("zz", mine).unwrap_err().code(), tonic::Code::InvalidArgument);
        assert_eq!(decode_token(&token[..30], mine).unwrap_err().code(), tonic::Code::InvalidArgument);
    }

    #[test]
    fn an_unset_forum_ref_is_not_an_empty_one() {
        assert_ne!(fingerprint("t", None, BattleStatus::Any), fingerprint("t", Some(""), BattleStatus::Any));
    }
}
