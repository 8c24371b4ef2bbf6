//! `ListBattles`: a tenant's battles, newest first, a page at a time.
//!
//! The resolver keeps nothing: the list is the journal's battle index
//! (`Journal.ListBattleIndex`, derived from the global log by every journal
//! process, see `battlelog_journal::index`), asked with the caller's own
//! tenant, so no filter or page token can reach another tenant's battles.
//! The page token carries where the last page stopped (the global position
//! of its last battle's opening), sealed: ChaCha20-Poly1305 under a key
//! derived from `battle_id_secret_file` (every replica's), with a
//! fingerprint of the tenant and filters it was made for as its associated
//! data. So the token shows nothing of the global log (how many events all
//! tenants wrote, and when), and a token altered, used with other filters,
//! or by another tenant is refused (`INVALID_ARGUMENT` naming `page_token`)
//! rather than silently listing something else.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use battlelog_auth::{AuthChannel, Caller};
use battlelog_proto::v1::journal_client::JournalClient;
use battlelog_proto::v1::{BattleIndexRequest, BattleStatus, ListBattlesRequest, ListBattlesResponse};
use battlelog_runtime::grpc::invalid_argument;
use battlelog_stream::downstream;
use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
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
    key: &PageTokenKey,
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
        token => Some(key.open(token, fingerprint)?),
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
        next_page_token: page.next_before_position.map(|p| key.seal(p, fingerprint)).unwrap_or_default(),
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

/// The key page tokens are sealed with.
#[derive(Clone)]
pub struct PageTokenKey(LessSafeKey);

// Never print the key.
impl std::fmt::Debug for PageTokenKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PageTokenKey(..)")
    }
}

/// Bytes of a page token before base64: nonce, sealed position, tag.
const TOKEN_BYTES: usize = NONCE_LEN + 8 + 16;

impl PageTokenKey {
    /// The key derived from the battle id secret (crate::battle_id).
    pub fn derived_from(secret: &crate::battle_id::BattleIdSecret) -> Self {
        let key = secret.derive(b"battlelog/v1/page-token");
        Self(LessSafeKey::new(UnboundKey::new(&CHACHA20_POLY1305, &key).expect("a 32-byte ChaCha20 key")))
    }

    /// The position to continue below, sealed for the listing of
    /// `fingerprint`: base64url of a random nonce, the sealed position and
    /// its tag.
    fn seal(&self, before: u64, fingerprint: [u8; 8]) -> String {
        let mut nonce = [0u8; NONCE_LEN];
        getrandom::fill(&mut nonce).expect("the operating system's randomness");
        let mut sealed = before.to_be_bytes().to_vec();
        self.0
            .seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::from(fingerprint), &mut sealed)
            .expect("8 bytes always seal");
        let mut token = nonce.to_vec();
        token.extend_from_slice(&sealed);
        URL_SAFE_NO_PAD.encode(token)
    }

    /// The position a token of the listing of `fingerprint` holds, or
    /// `INVALID_ARGUMENT` naming `page_token`.
    fn open(&self, token: &str, fingerprint: [u8; 8]) -> Result<u64, Status> {
        let bad = |why: &str| invalid_argument("page_token", why.to_owned());
        let bytes = URL_SAFE_NO_PAD
            .decode(token)
            .ok()
            .filter(|b| b.len() == TOKEN_BYTES)
            .ok_or_else(|| bad("is not a page token: pass next_page_token as it was given"))?;
        let (nonce, sealed) = bytes.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| bad("is not a page token"))?;
        let mut sealed = sealed.to_vec();
        let opened = self.0.open_in_place(nonce, Aad::from(fingerprint), &mut sealed).map_err(|_| {
            bad("is not a page token of this listing: it was altered, or made for another forum_ref, status or \
                 tenant (repeat the filters of the first page), or by a resolver with another battle_id_secret_file")
        })?;
        let before: [u8; 8] = opened.try_into().map_err(|_| bad("is not a page token"))?;
        Ok(u64::from_be_bytes(before))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(byte: u8) -> PageTokenKey {
        PageTokenKey::derived_from(&crate::battle_id::BattleIdSecret::from_bytes([byte; 32]))
    }

    #[test]
    fn a_token_round_trips_only_with_its_own_filters_and_key() {
        let mine = fingerprint("t1", Some("thread/1"), BattleStatus::Open);
        let token = key(1).seal(42, mine);
        assert_eq!(key(1).open(&token, mine).unwrap(), 42);
        assert_eq!(key(1).open(&key(1).seal(u64::MAX, mine), mine).unwrap(), u64::MAX);
        for other in [
            fingerprint("t2", Some("thread/1"), BattleStatus::Open),
            fingerprint("t1", Some("thread/2"), BattleStatus::Open),
            fingerprint("t1", None, BattleStatus::Open),
            fingerprint("t1", Some("thread/1"), BattleStatus::Any),
        ] {
            let err = key(1).open(&token, other).unwrap_err();
            assert_eq!(err.code(), tonic::Code::InvalidArgument);
            assert!(err.message().starts_with("page_token:"), "{}", err.message());
        }
        assert!(key(2).open(&token, mine).is_err(), "another secret's token");
        assert_eq!(key(1).open("zz", mine).unwrap_err().code(), tonic::Code::InvalidArgument);
        assert_eq!(key(1).open(&token[..30], mine).unwrap_err().code(), tonic::Code::InvalidArgument);
    }

    /// Every bit of a token matters, and none shows the position: two
    /// tokens of one position differ, and a token's bytes hold neither the
    /// position's bytes nor its digits.
    #[test]
    fn a_token_is_opaque_and_any_changed_bit_is_refused() {
        let mine = fingerprint("t1", None, BattleStatus::Any);
        let position: u64 = 0x0000_0123_4567_89ab;
        let token = key(1).seal(position, mine);
        assert_ne!(token, key(1).seal(position, mine), "a fresh nonce each time");
        let bytes = URL_SAFE_NO_PAD.decode(&token).unwrap();
        assert_eq!(bytes.len(), TOKEN_BYTES);
        assert!(!bytes.windows(8).any(|w| w == position.to_be_bytes()), "the position is not in the clear");
        assert!(!token.contains(&position.to_string()) && !token.contains(&format!("{position:x}")));
        for bit in 0..bytes.len() * 8 {
            let mut flipped = bytes.clone();
            flipped[bit / 8] ^= 1 << (bit % 8);
            let err = key(1).open(&URL_SAFE_NO_PAD.encode(&flipped), mine).unwrap_err();
            assert!(err.message().starts_with("page_token:"), "bit {bit}: {}", err.message());
        }
    }

    #[test]
    fn an_unset_forum_ref_is_not_an_empty_one() {
        assert_ne!(fingerprint("t", None, BattleStatus::Any), fingerprint("t", Some(""), BattleStatus::Any));
    }
}
