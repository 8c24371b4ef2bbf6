//! The one dispatch: every released ruleset version and its [`Engine`]. A
//! new version is its family folder's `Engine` implementation plus one line
//! here (and its [`RulesetId`] variant).

use crate::engine::Engine;
use crate::ruleset::RulesetId;
use crate::{arcana, berserk, pbta, pokemon};

/// The rules `ruleset` resolves by.
pub(crate) fn engine(ruleset: RulesetId) -> &'static dyn Engine {
    match ruleset {
        RulesetId::PokemonD6V1 => &pokemon::V1,
        RulesetId::PokemonD6V2 => &pokemon::V2,
        RulesetId::Arcana2d10V1 => &arcana::V1,
        RulesetId::Arcana2d10V2 => &arcana::V2,
        RulesetId::BerserkV1 => &berserk::V1,
        RulesetId::BerserkV2 => &berserk::V2,
        RulesetId::Pbta2d6V1 => &pbta::V1,
        RulesetId::Pbta2d6V2 => &pbta::V2,
    }
}
