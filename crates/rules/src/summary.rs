//! One-line summaries of outcomes for a forum post, in Russian and English
//! (docs/rules.md §5.3), e.g. «Критическая атака: двойной урон» /
//! "Critical hit: double damage".

use serde::{Deserialize, Serialize};

/// The same line in both languages.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    pub ru: String,
    pub en: String,
}

impl Summary {
    /// Builds a summary, folding any line break that free text (names, notes,
    /// a judge's text) brought in, so it stays one line.
    pub(crate) fn new(ru: impl Into<String>, en: impl Into<String>) -> Summary {
        Summary { ru: one_line(&ru.into()), en: one_line(&en.into()) }
    }
}

fn one_line(text: &str) -> String {
    text.split(['\n', '\r']).map(str::trim).filter(|part| !part.is_empty()).collect::<Vec<_>>().join(" ")
}

/// Picks the Russian noun form for `n`: `one` for 1, 21, 31 …, `few` for
/// 2–4, 22–24 …, `many` for the rest (5–20, 25–30 …).
pub(crate) fn plural_ru<'a>(n: u64, one: &'a str, few: &'a str, many: &'a str) -> &'a str {
    let last_two = n % 100;
    let last = n % 10;
    if (11..=14).contains(&last_two) {
        many
    } else if last == 1 {
        one
    } else if (2..=4).contains(&last) {
        few
    } else {
        many
    }
}

/// `n` with the Russian word for turns: «1 ход», «3 хода», «5 ходов».
pub(crate) fn turns_ru(n: u32) -> String {
    format!("{n} {}", plural_ru(u64::from(n), "ход", "хода", "ходов"))
}

/// `n` with the English word for turns.
pub(crate) fn turns_en(n: u32) -> String {
    if n == 1 { "1 turn".to_owned() } else { format!("{n} turns") }
}

/// The Russian name of a well-known Pokémon status; other names stay as given.
pub(crate) fn status_ru(status: &str) -> &str {
    match status {
        "paralysis" => "паралич",
        "infatuation" => "очарование",
        "confusion" => "путаница",
        "burn" => "ожог",
        "poison" => "отравление",
        "sleep" => "сон",
        "freeze" => "заморозка",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn russian_plurals_follow_the_last_digits() {
        let forms: Vec<String> = [1, 2, 4, 5, 11, 12, 14, 20, 21, 22, 25, 101, 111, 112].map(turns_ru).to_vec();
        assert_eq!(
            forms,
            [
                "1 ход",
                "2 хода",
                "4 хода",
                "5 ходов",
                "11 ходов",
                "12 ходов",
                "14 ходов",
                "20 ходов",
                "21 ход",
                "22 хода",
                "25 ходов",
                "101 ход",
                "111 ходов",
                "112 ходов"
            ]
        );
        assert_eq!(turns_en(1), "1 turn");
        assert_eq!(turns_en(0), "0 turns");
    }

    #[test]
    fn summaries_stay_on_one_line() {
        let summary = Summary::new("первая\nвторая\r\n", " a \n\n b ");
        assert_eq!(summary.ru, "первая вторая");
        assert_eq!(summary.en, "a b");
    }
}
