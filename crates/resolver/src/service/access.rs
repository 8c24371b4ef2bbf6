//! Who may call what, and which battles a call reaches.
//!
//! The roles each RPC admits are [`rights`]; the caller is the verified
//! token the server's authenticator left on the request. On top of the
//! role comes the tenant rule: a battle of another tenant answers exactly
//! as one that does not exist ([`not_found`]), so that no tenant learns of
//! another's. The one exception is a read carrying a battle's share key
//! ([`Reach::SharedLink`]).

use battlelog_auth::share::SHARE_KEY_METADATA;
use battlelog_auth::{Caller, Role, caller};
use battlelog_proto::battle;
use battlelog_proto::error::Error;
use battlelog_proto::v1::Credential;
use battlelog_proto::v1::battle_event::Event;
use battlelog_stream::StreamError;
use tonic::{Request, Status};

use super::ResolverService;
use crate::view::BattleView;

/// Which roles each RPC admits: the rights table of docs/operating.md, in code. The
/// tenant rule comes on top for every call that names a battle.
pub mod rights {
    use battlelog_auth::Role;

    /// Opening battles, acting and disputing: the forum platform.
    pub const FORUM: &[Role] = &[Role::Forum];
    /// Rulings and mid-battle reveals: a judge.
    pub const JUDGE: &[Role] = &[Role::Judge];
    /// Closing: the forum or a judge.
    pub const CLOSE: &[Role] = &[Role::Forum, Role::Judge];
    /// Reading, exporting, auditing and watching.
    pub const READ: &[Role] = &[Role::Forum, Role::Judge, Role::Reader];
}

/// The answer for a battle this caller may not see, identical to the one
/// for a battle that does not exist, so that no tenant learns of another's.
pub(super) fn not_found(battle_id: &str) -> Status {
    Error::battle_not_found(battle_id).into_status()
}

/// The caller, if its role is one of `roles`.
pub(super) fn authorize<T>(request: &Request<T>, call: &str, roles: &[Role]) -> Result<Caller, Status> {
    let caller = caller(request)?;
    caller.require(call, roles)?;
    Ok(caller)
}

/// What a command event records of its caller.
pub(super) fn credential(caller: &Caller) -> Credential {
    Credential { subject: caller.subject.clone(), role: caller.role.as_str().to_owned() }
}

/// `view` is an opened battle that `caller`'s tenant owns; anything else is
/// [`not_found`].
pub(super) fn check_owner(battle_id: &str, view: &BattleView, caller: &Caller) -> Result<(), Status> {
    check_reach(battle_id, view, &Reach::Tenant(caller))
}

/// Which battles a read reaches. A read carrying a battle's share key
/// ([`SHARE_KEY_METADATA`]) reaches that one battle whatever the token's
/// tenant: the link is the capability, as on the web page. Writes never
/// look at it.
#[derive(Debug, Clone, Copy)]
pub(super) enum Reach<'a> {
    /// Those of the caller's tenant.
    Tenant(&'a Caller),
    /// The one battle whose share key the request carried.
    SharedLink,
}

impl Reach<'_> {
    fn admits(&self, tenant: &str) -> bool {
        match self {
            Reach::Tenant(caller) => caller.owns(tenant),
            Reach::SharedLink => true,
        }
    }
}

/// `view` is an opened battle within `reach`; anything else is [`not_found`].
pub(super) fn check_reach(battle_id: &str, view: &BattleView, reach: &Reach<'_>) -> Result<(), Status> {
    match &view.tenant {
        Some(tenant) if reach.admits(tenant) => Ok(()),
        _ => Err(not_found(battle_id)),
    }
}

impl ResolverService {
    /// What a read call of `caller` reaches: the one battle whose share key
    /// the request carries (when this resolver has the share secret), else
    /// the caller's tenant's battles.
    pub(super) fn reach<'a, T>(&self, request: &Request<T>, battle_id: &str, caller: &'a Caller) -> Reach<'a> {
        let key = request.metadata().get(SHARE_KEY_METADATA).and_then(|key| key.to_str().ok());
        match (&self.links, key) {
            (Some(links), Some(key)) if links.share.admits(battle_id, key) => Reach::SharedLink,
            _ => Reach::Tenant(caller),
        }
    }

    /// The battle caught up from the journal, if it is within `reach`: for
    /// reads, which answer what the journal holds now.
    pub(super) async fn opened_view(&self, battle_id: &str, reach: &Reach<'_>) -> Result<BattleView, Status> {
        let mut view = self.views.lock(battle_id).await;
        self.catch_up(battle_id, &mut view).await?;
        check_reach(battle_id, &view, reach)?;
        Ok(view.clone())
    }

    /// Whether the battle is within `reach`, from its `BattleOpened` alone:
    /// for the calls that read the record as it is (audit, export, watch),
    /// which must work on a battle whose later events no longer fold — that
    /// is what an audit is for.
    pub(super) async fn check_reach_in_journal(&self, battle_id: &str, reach: &Reach<'_>) -> Result<(), Status> {
        let events = self.streams.page(battle_id, 0, 1).await.map_err(StreamError::into_status)?.events;
        let opened = events.first().and_then(|e| e.event.as_ref()).map(battle::decode);
        match opened {
            Some(Ok(Event::BattleOpened(opened))) if reach.admits(&opened.tenant) => Ok(()),
            _ => Err(not_found(battle_id)),
        }
    }
}
