//! A feed that cannot lie: every record of the feed is checked before it
//! is queued, since anyone with the journal's NATS password can publish on
//! its subjects — a battle that never was, or a "next version" ahead of the
//! real one.
//!
//! - **Against its battle's chain** (docs/protocol.md §4): a record at version
//!   v must hash, on the previous hash this service took for its battle
//!   (`h(−1)` for version 0), to the hash the message claims. The last
//!   hash taken is kept per battle in the store (tree `chain`), so the
//!   check survives a restart.
//! - **Against the journal** (`journal_url` set): a record is taken only if
//!   the journal holds it — its battle's record at that version, read with
//!   `ReadStream`, hashes to the same h(v) on the journal's h(v − 1), and
//!   the battle's `BattleOpened.tenant` is the subject's tenant. A battle
//!   this service has not seen is read from the journal; a read takes
//!   `journal_read_count` versions from v − 1 on, kept in memory for at most
//!   `journal_cache_battles` battles, so a battle's next records are
//!   checked without another read. The hash and global position delivered
//!   are then the journal's.
//!
//! A record that fails either check is refused: never queued, counted
//! (`battlelog_webhooks_forged_total`) and logged; the real one, when it
//! comes, is taken. A journal that does not answer refuses nothing and
//! takes nothing: the message is offered again later.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use battlelog_auth::AuthChannel;
use battlelog_proto::v1::journal_client::JournalClient;
use battlelog_proto::v1::{BattleEvent, ReadStreamRequest, ReadStreamResponse, battle_event::Event};
use battlelog_verify::chain::{Hash, chain_hash, genesis_hash};
use prost::Message as _;

use crate::event::Received;
use crate::store::{BattleKey, StoreError};

/// What the check found of one record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The journal's (or, without a journal, its battle's next link): to be
    /// delivered with this hash and position.
    Taken { hash: Option<Hash>, position: Option<u64> },
    /// Not the journal's: never delivered; why.
    Refused(String),
    /// The journal could not be asked: neither taken nor refused.
    Unavailable(String),
}

/// How to reach the journal.
#[derive(Debug, Clone)]
pub struct JournalOptions {
    pub client: JournalClient<AuthChannel>,
    /// Versions one read takes (`journal_read_count`).
    pub read_count: u32,
    /// Battles whose read versions are kept (`journal_cache_battles`).
    pub cache_battles: usize,
    /// How long one read may take (`journal_timeout_ms`).
    pub timeout: Duration,
}

/// A stretch of a battle's versions as the journal holds them.
#[derive(Debug, Clone, Default)]
struct Window {
    /// The version of `held[0]`.
    first: u64,
    /// h(version) and global position of each version from `first` on.
    held: Vec<(Hash, u64)>,
}

impl Window {
    fn get(&self, version: u64) -> Option<(Hash, u64)> {
        let index = usize::try_from(version.checked_sub(self.first)?).ok()?;
        self.held.get(index).copied()
    }
}

/// The checks of the feed (see the module doc).
#[derive(Debug)]
pub struct FeedCheck {
    /// Per battle, `u64_be(version) ‖ h(version)` of the last record taken.
    chain: sled::Tree,
    journal: Option<JournalOptions>,
    /// The journal's versions read, per battle whose tenant it confirmed.
    windows: Mutex<HashMap<BattleKey, Window>>,
}

impl FeedCheck {
    /// Checks against the chain kept in `chain`, and the journal when given.
    pub fn new(chain: sled::Tree, journal: Option<JournalOptions>) -> Self {
        Self { chain, journal, windows: Mutex::new(HashMap::new()) }
    }

    /// The version and hash of the last record taken of `battle`.
    fn last_taken(&self, battle: &BattleKey) -> Result<Option<(u64, Hash)>, StoreError> {
        Ok(self.chain.get(battle_key_bytes(battle))?.and_then(|value| {
            let version = u64::from_be_bytes(value.get(..8)?.try_into().ok()?);
            let hash: Hash = value.get(8..40)?.try_into().ok()?;
            Some((version, hash))
        }))
    }

    /// Notes that `battle`'s record at `version`, hashing to `hash`, was
    /// taken (queued or parked): the next one must chain on it. Made
    /// durable with the store's next flush.
    pub fn taken(&self, battle: &BattleKey, version: u64, hash: &Hash) -> Result<(), StoreError> {
        let mut value = version.to_be_bytes().to_vec();
        value.extend_from_slice(hash);
        self.chain.insert(battle_key_bytes(battle), value)?;
        Ok(())
    }

    /// Checks one record (see the module doc).
    pub async fn check(&self, record: &Received) -> Result<Verdict, StoreError> {
        let battle = record.battle_key();
        let version = record.version();
        // The previous hash this service took, when it took the previous version.
        let previous = if version == 0 {
            Some(genesis_hash(&record.battle))
        } else {
            self.last_taken(&battle)?.filter(|(taken, _)| taken + 1 == version).map(|(_, hash)| hash)
        };
        let chained = previous.map(|previous| chain_hash(&previous, &record.record));
        if let (Some(chained), Some(claimed)) = (chained, record.claimed_hash)
            && chained != claimed
        {
            return Ok(Verdict::Refused(format!(
                "its hash {} is not h({version}) chained on the battle's previous hash ({})",
                hex::encode(claimed),
                hex::encode(chained)
            )));
        }
        let Some(journal) = &self.journal else {
            return Ok(Verdict::Taken { hash: chained.or(record.claimed_hash), position: record.claimed_position });
        };
        Ok(self.confirm(journal, &battle, record, previous).await)
    }

    /// Whether the journal holds `record` (see the module doc).
    async fn confirm(
        &self,
        journal: &JournalOptions,
        battle: &BattleKey,
        record: &Received,
        previous: Option<Hash>,
    ) -> Verdict {
        let version = record.version();
        let from = version.saturating_sub(1);
        let cached = self.window(battle).filter(|w| w.get(version).is_some() && w.get(from).is_some());
        let window = match cached {
            Some(window) => window,
            None => match self.read(journal, battle, from).await {
                Ok(Ok(window)) => window,
                Ok(Err(refused)) => return Verdict::Refused(refused),
                Err(unavailable) => return Verdict::Unavailable(unavailable),
            },
        };
        let Some((hash, position)) = window.get(version) else {
            return Verdict::Refused(format!(
                "the journal holds no version {version} of battle {:?} (it holds up to {})",
                battle.battle,
                window.first + window.held.len() as u64 - 1
            ));
        };
        let before = if version == 0 { Some(genesis_hash(&battle.battle)) } else { window.get(from).map(|(h, _)| h) };
        let Some(before) = before.or(previous) else {
            return Verdict::Unavailable(format!("the journal did not return version {from}"));
        };
        if chain_hash(&before, &record.record) != hash {
            return Verdict::Refused(format!(
                "its record is not the journal's version {version} (h({version}) is {})",
                hex::encode(hash)
            ));
        }
        if record.claimed_hash.is_some_and(|claimed| claimed != hash) {
            return Verdict::Refused(format!("its claimed hash is not the journal's h({version})"));
        }
        Verdict::Taken { hash: Some(hash), position: Some(position) }
    }

    fn window(&self, battle: &BattleKey) -> Option<Window> {
        self.windows.lock().unwrap_or_else(|p| p.into_inner()).get(battle).cloned()
    }

    /// Reads `battle` from `from` on, and its tenant when not confirmed yet;
    /// keeps what it read. `Ok(Err(why))`: the journal says the battle is
    /// not the subject's.
    async fn read(
        &self,
        journal: &JournalOptions,
        battle: &BattleKey,
        from: u64,
    ) -> Result<Result<Window, String>, String> {
        let tenant_known = self.window(battle).is_some();
        let unavailable = |error: ReadError| match error {
            ReadError::NotFound => format!("the journal holds no battle {:?}", battle.battle),
            ReadError::Failed(why) => format!("reading battle {:?} from the journal: {why}", battle.battle),
        };
        let page = match read_page(journal, &battle.battle, from, journal.read_count.max(2)).await {
            Ok(page) => page,
            Err(ReadError::NotFound) => return Ok(Err(format!("the journal holds no battle {:?}", battle.battle))),
            Err(error) => return Err(unavailable(error)),
        };
        if !tenant_known {
            let opening = if from == 0 {
                page.events.first().cloned()
            } else {
                match read_page(journal, &battle.battle, 0, 1).await {
                    Ok(page) => page.events.into_iter().next(),
                    Err(ReadError::NotFound) => None,
                    Err(error) => return Err(unavailable(error)),
                }
            };
            let Some(opening) = opening else {
                return Ok(Err(format!("the journal holds no battle {:?}", battle.battle)));
            };
            let tenant = opening
                .event
                .and_then(|r| BattleEvent::decode(r.payload.as_slice()).ok())
                .and_then(|e| match e.event {
                    Some(Event::BattleOpened(opened)) => Some(opened.tenant),
                    _ => None,
                })
                .unwrap_or_default();
            let token = battlelog_feed::subject::subject_token(&tenant);
            if token != battle.tenant.as_str() {
                return Ok(Err(format!(
                    "battle {:?} is tenant {token:?}'s in the journal, not {:?}'s",
                    battle.battle, battle.tenant
                )));
            }
        }
        let mut window = Window { first: from, held: Vec::with_capacity(page.events.len()) };
        for (i, event) in page.events.iter().enumerate() {
            let Ok(hash) = Hash::try_from(event.hash.as_slice()) else { break };
            if event.event.as_ref().map(|r| r.version) != Some(from + i as u64) {
                break;
            }
            window.held.push((hash, event.global_position));
        }
        if window.held.is_empty() {
            return Ok(Err(format!("the journal holds no version {from} of battle {:?}", battle.battle)));
        }
        let mut windows = self.windows.lock().unwrap_or_else(|p| p.into_inner());
        if windows.len() >= journal.cache_battles && !windows.contains_key(battle) {
            // Forgetting costs one read per battle the next time it moves.
            windows.clear();
        }
        windows.insert(battle.clone(), window.clone());
        Ok(Ok(window))
    }
}

/// Why a read of the journal gave no page.
#[derive(Debug)]
enum ReadError {
    /// The journal has no such battle.
    NotFound,
    /// It did not answer, or failed.
    Failed(String),
}

/// One `ReadStream` of `battle` from `from_version`, bounded by the timeout.
async fn read_page(
    journal: &JournalOptions,
    battle: &str,
    from_version: u64,
    max_count: u32,
) -> Result<ReadStreamResponse, ReadError> {
    let mut request = tonic::Request::new(ReadStreamRequest { stream_id: battle.to_owned(), from_version, max_count });
    request.set_timeout(journal.timeout);
    let mut client = journal.client.clone();
    match tokio::time::timeout(journal.timeout, client.read_stream(request)).await {
        Ok(Ok(page)) => Ok(page.into_inner()),
        Ok(Err(status)) if status.code() == tonic::Code::NotFound => Err(ReadError::NotFound),
        Ok(Err(status)) => Err(ReadError::Failed(status.to_string())),
        Err(_) => Err(ReadError::Failed(format!("no answer in {} ms", journal.timeout.as_millis()))),
    }
}

/// `tenant \0 battle`: the chain tree's key of a battle.
fn battle_key_bytes(battle: &BattleKey) -> Vec<u8> {
    let mut key = Vec::with_capacity(battle.tenant.len() + battle.battle.len() + 1);
    key.extend_from_slice(battle.tenant.as_bytes());
    key.push(0);
    key.extend_from_slice(battle.battle.as_bytes());
    key
}

#[cfg(test)]
mod tests {
    use battlelog_proto::v1::JournalRecord;
    use sha2::{Digest, Sha256};

    use super::*;

    fn record(battle: &str, version: u64, previous: &[u8], claimed: Option<Hash>) -> (Received, Hash) {
        let decoded =
            JournalRecord { stream_id: battle.into(), version, event_id: format!("e{version}"), ..Default::default() };
        let bytes = decoded.encode_to_vec();
        // h(v) = SHA-256(h(v − 1) || record), written out here.
        let hash: Hash = Sha256::new().chain_update(previous).chain_update(&bytes).finalize().into();
        let received = Received {
            tenant: "forum-a".into(),
            battle: battle.into(),
            record: bytes,
            decoded,
            claimed_hash: Some(claimed.unwrap_or(hash)),
            claimed_position: Some(7),
        };
        (received, hash)
    }

    fn genesis(battle: &str) -> Hash {
        let mut input = b"battlelog/v1/stream\0".to_vec();
        input.extend_from_slice(battle.as_bytes());
        Sha256::digest(&input).into()
    }

    /// Without a journal: each record must chain on the last one taken of
    /// its battle (h(−1) for version 0); a battle first seen mid-way takes
    /// its claimed hash, then chains from it.
    #[tokio::test]
    async fn without_a_journal_each_record_must_chain_on_the_last_one_taken() {
        let dir = tempfile::tempdir().unwrap();
        let db = sled::Config::new().path(dir.path()).open().unwrap();
        let check = FeedCheck::new(db.open_tree("chain").unwrap(), None);

        let (forged, _) = record("b", 0, &genesis("b"), Some([1; 32]));
        assert!(matches!(check.check(&forged).await.unwrap(), Verdict::Refused(_)), "a hash not chained on h(-1)");
        let (opening, h0) = record("b", 0, &genesis("b"), None);
        assert_eq!(check.check(&opening).await.unwrap(), Verdict::Taken { hash: Some(h0), position: Some(7) });
        check.taken(&opening.battle_key(), 0, &h0).unwrap();

        let (forged, _) = record("b", 1, &[9; 32], None);
        assert!(matches!(check.check(&forged).await.unwrap(), Verdict::Refused(_)), "chained on another h(0)");
        let (next, h1) = record("b", 1, &h0, None);
        assert_eq!(check.check(&next).await.unwrap(), Verdict::Taken { hash: Some(h1), position: Some(7) });

        let (mid_way, h5) = record("c", 5, &[3; 32], None);
        assert_eq!(check.check(&mid_way).await.unwrap(), Verdict::Taken { hash: Some(h5), position: Some(7) });
    }
}
