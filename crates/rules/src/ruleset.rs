//! Ruleset identifiers: `name@version`, e.g. `pokemon-d6@1`.
//!
//! Every released version is its own variant of [`RulesetId`] and its own
//! `v1`, `v2` … module beside the others, so adding `pokemon-d6@2` never
//! touches how a battle opened under `@1` re-resolves years later.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The rule systems of docs/rules.md, without a version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Family {
    PokemonD6,
    Arcana2d10,
    Berserk,
    Pbta2d6,
}

impl Family {
    pub const ALL: [Family; 4] = [Family::PokemonD6, Family::Arcana2d10, Family::Berserk, Family::Pbta2d6];

    pub fn name(self) -> &'static str {
        match self {
            Family::PokemonD6 => "pokemon-d6",
            Family::Arcana2d10 => "arcana-2d10",
            Family::Berserk => "berserk",
            Family::Pbta2d6 => "pbta-2d6",
        }
    }

    /// The versions released so far, oldest first.
    pub fn versions(self) -> &'static [u32] {
        match self {
            Family::PokemonD6 | Family::Arcana2d10 | Family::Berserk | Family::Pbta2d6 => &[1, 2],
        }
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One released ruleset version. A battle records it when it opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RulesetId {
    PokemonD6V1,
    Arcana2d10V1,
    BerserkV1,
    Pbta2d6V1,
    /// docs/rules.md §6.1: `@1` plus the changes of a second reading of the seed.
    PokemonD6V2,
    /// docs/rules.md §6.2: `@1` plus ability requirements and magic-only concentration.
    Arcana2d10V2,
    /// docs/rules.md §6.3: `@1` with the exchange chosen after the roll and fixed rolls.
    BerserkV2,
    /// docs/rules.md §6.4: `@1` with the trait from the sheet, required stakes,
    /// help from others and helpers exposed only when something goes wrong.
    Pbta2d6V2,
}

impl RulesetId {
    /// Every released version, each family's oldest first: what
    /// `ListRulesets` offers. Old versions stay forever, so battles opened
    /// under them replay and audit under them.
    pub const ALL: [RulesetId; 8] = [
        RulesetId::PokemonD6V1,
        RulesetId::PokemonD6V2,
        RulesetId::Arcana2d10V1,
        RulesetId::Arcana2d10V2,
        RulesetId::BerserkV1,
        RulesetId::BerserkV2,
        RulesetId::Pbta2d6V1,
        RulesetId::Pbta2d6V2,
    ];

    pub fn family(self) -> Family {
        match self {
            RulesetId::PokemonD6V1 | RulesetId::PokemonD6V2 => Family::PokemonD6,
            RulesetId::Arcana2d10V1 | RulesetId::Arcana2d10V2 => Family::Arcana2d10,
            RulesetId::BerserkV1 | RulesetId::BerserkV2 => Family::Berserk,
            RulesetId::Pbta2d6V1 | RulesetId::Pbta2d6V2 => Family::Pbta2d6,
        }
    }

    pub fn version(self) -> u32 {
        match self {
            RulesetId::PokemonD6V1 | RulesetId::Arcana2d10V1 | RulesetId::BerserkV1 | RulesetId::Pbta2d6V1 => 1,
            RulesetId::PokemonD6V2 | RulesetId::Arcana2d10V2 | RulesetId::BerserkV2 | RulesetId::Pbta2d6V2 => 2,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            RulesetId::PokemonD6V1 => "pokemon-d6@1",
            RulesetId::Arcana2d10V1 => "arcana-2d10@1",
            RulesetId::BerserkV1 => "berserk@1",
            RulesetId::Pbta2d6V1 => "pbta-2d6@1",
            RulesetId::PokemonD6V2 => "pokemon-d6@2",
            RulesetId::Arcana2d10V2 => "arcana-2d10@2",
            RulesetId::BerserkV2 => "berserk@2",
            RulesetId::Pbta2d6V2 => "pbta-2d6@2",
        }
    }
}

impl fmt::Display for RulesetId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a text names no ruleset this build knows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RulesetError {
    #[error("ruleset `{0}` must be written name@version, e.g. pokemon-d6@1")]
    Syntax(String),
    #[error("unknown ruleset `{name}`; known: pokemon-d6, arcana-2d10, berserk, pbta-2d6")]
    UnknownName { name: String },
    #[error("unknown version `{version}` of ruleset {family}; known: {known}")]
    UnknownVersion { family: Family, version: String, known: String },
}

impl FromStr for RulesetId {
    type Err = RulesetError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (name, version) = text.split_once('@').ok_or_else(|| RulesetError::Syntax(text.to_owned()))?;
        let family = Family::ALL
            .into_iter()
            .find(|family| family.name() == name)
            .ok_or_else(|| RulesetError::UnknownName { name: name.to_owned() })?;
        RulesetId::ALL.into_iter().find(|id| id.family() == family && id.version().to_string() == version).ok_or_else(
            || RulesetError::UnknownVersion {
                family,
                version: version.to_owned(),
                known: family.versions().iter().map(u32::to_string).collect::<Vec<_>>().join(", "),
            },
        )
    }
}

impl Serialize for RulesetId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for RulesetId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_released_ruleset_round_trips_through_its_name() {
        for id in RulesetId::ALL {
            assert_eq!(id.as_str().parse::<RulesetId>(), Ok(id));
            assert!(id.family().versions().contains(&id.version()));
        }
        assert_eq!("pokemon-d6@1".parse::<RulesetId>(), Ok(RulesetId::PokemonD6V1));
        assert_eq!("arcana-2d10@1".parse::<RulesetId>(), Ok(RulesetId::Arcana2d10V1));
        assert_eq!("berserk@1".parse::<RulesetId>(), Ok(RulesetId::BerserkV1));
        assert_eq!("pbta-2d6@1".parse::<RulesetId>(), Ok(RulesetId::Pbta2d6V1));
        assert_eq!("pokemon-d6@2".parse::<RulesetId>(), Ok(RulesetId::PokemonD6V2));
        assert_eq!("arcana-2d10@2".parse::<RulesetId>(), Ok(RulesetId::Arcana2d10V2));
        assert_eq!("berserk@2".parse::<RulesetId>(), Ok(RulesetId::BerserkV2));
        assert_eq!("pbta-2d6@2".parse::<RulesetId>(), Ok(RulesetId::Pbta2d6V2));
    }

    #[test]
    fn every_family_version_is_offered_once() {
        for family in Family::ALL {
            let offered: Vec<u32> =
                RulesetId::ALL.into_iter().filter(|id| id.family() == family).map(RulesetId::version).collect();
            assert_eq!(offered, family.versions(), "{family}");
        }
        assert_eq!(
            RulesetId::ALL.map(RulesetId::as_str),
            [
                "pokemon-d6@1",
                "pokemon-d6@2",
                "arcana-2d10@1",
                "arcana-2d10@2",
                "berserk@1",
                "berserk@2",
                "pbta-2d6@1",
                "pbta-2d6@2"
            ]
        );
    }

    #[test]
    fn unknown_rulesets_and_versions_are_errors() {
        assert!(matches!("pokemon-d6".parse::<RulesetId>(), Err(RulesetError::Syntax(_))));
        assert!(matches!("chess@1".parse::<RulesetId>(), Err(RulesetError::UnknownName { .. })));
        assert!(matches!("pokemon-d6@3".parse::<RulesetId>(), Err(RulesetError::UnknownVersion { .. })));
        assert!(matches!("berserk@3".parse::<RulesetId>(), Err(RulesetError::UnknownVersion { .. })));
        assert!(matches!("pbta-2d6@3".parse::<RulesetId>(), Err(RulesetError::UnknownVersion { .. })));
        assert!(matches!("berserk@01".parse::<RulesetId>(), Err(RulesetError::UnknownVersion { .. })));
        assert!(matches!("berserk@".parse::<RulesetId>(), Err(RulesetError::UnknownVersion { .. })));
        assert!(matches!("Berserk@1".parse::<RulesetId>(), Err(RulesetError::UnknownName { .. })));
    }
}
