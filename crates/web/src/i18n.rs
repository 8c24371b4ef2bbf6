//! The page's two languages. Labels are looked up by key so that both
//! languages always have the same set; summaries come from the events
//! themselves (`summary_ru`, `summary_en`), as the rules wrote them.

use serde::Deserialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Lang {
    #[default]
    En,
    Ru,
}

impl Lang {
    pub fn code(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::Ru => "ru",
        }
    }

    /// `?lang=` when given, else the first of English or Russian the
    /// browser's `Accept-Language` prefers, else English.
    pub fn choose(query: Option<Lang>, accept_language: Option<&str>) -> Lang {
        if let Some(lang) = query {
            return lang;
        }
        let preferred = accept_language.unwrap_or_default().split(',').find_map(|tag| {
            let tag = tag.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
            match tag.split('-').next() {
                Some("ru") => Some(Lang::Ru),
                Some("en") => Some(Lang::En),
                _ => None,
            }
        });
        preferred.unwrap_or_default()
    }

    /// The label `key` in this language; the key itself when unknown, so a
    /// missing label shows rather than breaking the page.
    pub fn t(self, key: &'static str) -> &'static str {
        let pair = LABELS.iter().find(|(k, _, _)| *k == key);
        match (pair, self) {
            (Some((_, en, _)), Lang::En) => en,
            (Some((_, _, ru)), Lang::Ru) => ru,
            (None, _) => key,
        }
    }
}

/// (key, English, Russian).
const LABELS: &[(&str, &str, &str)] = &[
    ("battle", "Battle", "Бой"),
    ("ruleset", "Ruleset", "Правила"),
    ("participants", "Participants", "Участники"),
    ("forum_ref", "Forum post", "Пост на форуме"),
    ("status", "Status", "Статус"),
    ("open", "open", "идёт"),
    ("closed", "closed", "окончен"),
    ("tenant", "Tenant", "Площадка"),
    ("head", "Head hash", "Хеш вершины"),
    ("events", "Events", "События"),
    ("commitments", "Seed commitments", "Обязательства сида"),
    ("epoch", "Epoch", "Эпоха"),
    ("commitment", "Commitment", "Обязательство"),
    ("signature", "Roller signature", "Подпись роллера"),
    ("unsigned", "unsigned", "без подписи"),
    ("seed", "Seed", "Сид"),
    ("revealed", "revealed", "раскрыт"),
    ("secret", "still secret", "пока секретен"),
    ("roller_key", "Roller key", "Ключ роллера"),
    ("timeline", "Timeline", "Ход боя"),
    ("verification", "Verification in your browser", "Проверка в вашем браузере"),
    ("verify_pending", "checking…", "проверка…"),
    (
        "verify_verified",
        "verified: every roll re-derived, the chain intact",
        "проверено: каждый бросок пересчитан, цепочка цела",
    ),
    ("verify_failed", "FAILED: the log does not check out", "ОШИБКА: журнал не сходится"),
    (
        "verify_unrevealed",
        "nothing wrong so far; rolls of a secret epoch can be re-derived once its seed is revealed",
        "ошибок нет; броски секретной эпохи можно будет пересчитать после раскрытия сида",
    ),
    ("first_failure", "First failing version", "Первая ошибочная версия"),
    ("server_audit", "Server audit", "Аудит сервера"),
    ("findings", "findings", "замечаний"),
    (
        "no_js",
        "Without JavaScript the page is readable but not verified here; download the export and run `battlelog audit --file`.",
        "Без JavaScript страницу можно читать, но проверки здесь нет; скачайте экспорт и выполните `battlelog audit --file`.",
    ),
    ("download", "Download the export (JSON Lines)", "Скачать экспорт (JSON Lines)"),
    ("verify_file", "Verify an export file", "Проверить файл экспорта"),
    ("roll", "Roll", "Бросок"),
    ("nonce", "nonce", "nonce"),
    ("total", "total", "итог"),
    ("expression", "expression", "выражение"),
    ("for", "for", "на"),
    ("quote_open", "“", "«"),
    ("quote_close", "”", "»"),
    ("action", "Action", "Действие"),
    ("details", "details", "подробности"),
    ("dice_used", "dice", "кубики"),
    ("dispute", "Dispute", "Оспаривание"),
    ("contests", "contests", "оспаривает"),
    ("answers_strike", "exchange choice for the strike", "выбор размена для удара"),
    ("awaits_choice", "awaits the exchange choice of the", "ждёт выбора размена:"),
    ("attacker", "attacker", "атакующий"),
    ("defender", "defender", "защищающийся"),
    ("choice_made", "answered by", "ответ:"),
    ("reason", "reason", "причина"),
    ("raised_by", "raised by", "подал"),
    ("ruling", "Ruling", "Решение судьи"),
    ("judge", "judge", "судья"),
    ("on", "on", "по"),
    ("field", "field", "поле"),
    ("before", "before", "было"),
    ("after", "after", "стало"),
    ("no_override", "no override: the outcome stands", "без изменения итога"),
    ("closed_by", "Battle closed by", "Бой закрыл"),
    ("seed_revealed", "Seed revealed", "Сид раскрыт"),
    ("seed_committed", "Next seed committed", "Новое обязательство сида"),
    ("opened", "Battle opened", "Бой открыт"),
    ("dropped", "dropped", "отброшен"),
    ("rerolled", "rerolled", "переброшен"),
    ("exploded", "exploded", "взорвался"),
    ("link", "link", "ссылка"),
    ("verify_title", "Verify a battle export", "Проверка экспорта боя"),
    (
        "verify_intro",
        "Choose or drop an export file (`battlelog export`, JSON Lines). It is checked entirely in this browser, against PROTOCOL.md: nothing is sent anywhere. This page also works saved to disk.",
        "Выберите или перетащите файл экспорта (`battlelog export`, JSON Lines). Проверка идёт целиком в этом браузере по PROTOCOL.md: никуда ничего не отправляется. Страница работает и сохранённой на диск.",
    ),
    (
        "posted_head",
        "Head hash posted on the forum (optional): an export cut short then fails",
        "Хеш вершины из поста на форуме (необязательно): обрезанный экспорт тогда не пройдёт",
    ),
    ("drop_here", "Drop the file here", "Перетащите файл сюда"),
    // A roll's dice (dice.rs).
    ("explosion_die", "explosion die", "от взрыва"),
    ("success", "success", "успех"),
    ("no_success", "not a success", "не успех"),
    ("successes", "successes", "успехов"),
    ("not_rolled", "not rolled", "не брошены"),
    ("roll_error", "no total", "итога нет"),
    ("division_by_zero_at", "division by zero at character", "деление на ноль в символе"),
    ("overflow_at", "arithmetic overflow (beyond 64 bits) at character", "переполнение (больше 64 бит) в символе"),
    // The error pages (error.rs).
    ("error_title", "Error", "Ошибка"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_wins_then_the_browser_then_english() {
        assert_eq!(Lang::choose(Some(Lang::Ru), Some("en-GB")), Lang::Ru);
        assert_eq!(Lang::choose(None, Some("de-DE,ru;q=0.8,en;q=0.5")), Lang::Ru);
        assert_eq!(Lang::choose(None, Some("fr")), Lang::En);
        assert_eq!(Lang::choose(None, None), Lang::En);
    }

    #[test]
    fn every_label_has_both_languages_and_keys_are_unique() {
        let mut keys: Vec<&str> = LABELS.iter().map(|(k, _, _)| *k).collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), LABELS.len(), "a key is listed twice");
        for (key, en, ru) in LABELS {
            assert!(!en.is_empty() && !ru.is_empty(), "{key} lacks a language");
        }
    }
}
