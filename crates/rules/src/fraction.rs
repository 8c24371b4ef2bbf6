//! Exact multipliers such as `2/5` and the one rounding rule of docs/rules.md:
//! round half up on the exact rational value. No float ever enters the rules,
//! so a damage figure re-resolves identically on any machine, forever.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A non-negative fraction in lowest terms, written `0`, `1`, `2/3`, `1/5` …
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fraction {
    numerator: u32,
    denominator: u32,
}

impl Fraction {
    pub const ZERO: Fraction = Fraction { numerator: 0, denominator: 1 };
    pub const ONE: Fraction = Fraction { numerator: 1, denominator: 1 };
    pub const TWO: Fraction = Fraction { numerator: 2, denominator: 1 };
    pub const ONE_THIRD: Fraction = Fraction { numerator: 1, denominator: 3 };
    pub const TWO_THIRDS: Fraction = Fraction { numerator: 2, denominator: 3 };

    /// `numerator / denominator` in lowest terms; `None` for a zero denominator.
    pub fn new(numerator: u32, denominator: u32) -> Option<Fraction> {
        if denominator == 0 {
            return None;
        }
        let divisor = gcd(numerator, denominator);
        Some(Fraction { numerator: numerator / divisor, denominator: denominator / divisor })
    }

    pub fn numerator(self) -> u32 {
        self.numerator
    }

    pub fn denominator(self) -> u32 {
        self.denominator
    }

    /// `round(value × self × times)`, half up, computed exactly.
    pub fn apply_rounded(self, value: u64, times: u32) -> u64 {
        let exact_numerator = u128::from(value) * u128::from(self.numerator) * u128::from(times);
        round_half_up(exact_numerator, u128::from(self.denominator))
    }
}

/// `round(numerator / denominator)` with halves going up. The inputs of the
/// rules keep the result far below `u64::MAX`; it saturates rather than wraps.
pub fn round_half_up(numerator: u128, denominator: u128) -> u64 {
    if denominator == 0 {
        return 0;
    }
    // floor(n/d + 1/2) == floor((2n + d) / 2d)
    let rounded = (2 * numerator + denominator) / (2 * denominator);
    u64::try_from(rounded).unwrap_or(u64::MAX)
}

fn gcd(mut a: u32, mut b: u32) -> u32 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a.max(1)
}

impl fmt::Display for Fraction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.denominator == 1 {
            write!(f, "{}", self.numerator)
        } else {
            write!(f, "{}/{}", self.numerator, self.denominator)
        }
    }
}

/// Why a text is not a fraction.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a fraction like `2/3` or `1`")]
pub struct FractionError(String);

impl FromStr for Fraction {
    type Err = FractionError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let invalid = || FractionError(text.to_owned());
        let (numerator, denominator) = match text.split_once('/') {
            Some((n, d)) => (n, d),
            None => (text, "1"),
        };
        let parse = |part: &str| {
            if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
                return Err(invalid());
            }
            part.parse::<u32>().map_err(|_| invalid())
        };
        Fraction::new(parse(numerator)?, parse(denominator)?).ok_or_else(invalid)
    }
}

impl Serialize for Fraction {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// A fraction is written as text: `"2/3"`, or `"1"` for a whole one.
impl schemars::JsonSchema for Fraction {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Fraction".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "string", "pattern": "^[0-9]+(/[0-9]+)?$"})
    }
}

impl<'de> Deserialize<'de> for Fraction {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fractions_print_in_lowest_terms() {
        assert_eq!(Fraction::new(2, 6).map(|f| f.to_string()).as_deref(), Some("1/3"));
        assert_eq!(Fraction::new(5, 5).map(|f| f.to_string()).as_deref(), Some("1"));
        assert_eq!(Fraction::new(0, 5).map(|f| f.to_string()).as_deref(), Some("0"));
        assert_eq!(Fraction::new(4, 2).map(|f| f.to_string()).as_deref(), Some("2"));
        assert_eq!(Fraction::new(1, 0), None);
    }

    #[test]
    fn fractions_parse_back() {
        assert_eq!("2/5".parse::<Fraction>(), Ok(Fraction { numerator: 2, denominator: 5 }));
        assert_eq!("4/10".parse::<Fraction>(), Ok(Fraction { numerator: 2, denominator: 5 }));
        assert_eq!("2".parse::<Fraction>(), Ok(Fraction::TWO));
        for bad in ["", "/", "1/", "/2", "1/0", "-1", "1.5", "a/b", "1/2/3", " 1"] {
            assert!(bad.parse::<Fraction>().is_err(), "{bad:?} must not parse");
        }
    }

    fn fraction(numerator: u32, denominator: u32) -> Fraction {
        Fraction::new(numerator, denominator).expect("a valid fraction")
    }

    #[test]
    fn rounding_is_half_up_on_the_exact_value() {
        // 80 × 1/3 = 26.67 → 27; 47 × 1/2 = 23.5 → 24; 65 × 1/3 = 21.67 → 22;
        // 10 × 1/3 = 3.33 → 3; 101 × 95/100 = 95.95 → 96.
        let third = fraction(1, 3);
        assert_eq!(third.apply_rounded(80, 1), 27);
        assert_eq!(third.apply_rounded(65, 1), 22);
        assert_eq!(third.apply_rounded(10, 1), 3);
        assert_eq!(fraction(1, 2).apply_rounded(47, 1), 24);
        assert_eq!(fraction(95, 100).apply_rounded(101, 1), 96);
        assert_eq!(fraction(2, 3).apply_rounded(40, 3), 80);
        assert_eq!(round_half_up(5, 2), 3);
        assert_eq!(round_half_up(7, 2), 4);
        assert_eq!(round_half_up(1, 3), 0);
    }
}
