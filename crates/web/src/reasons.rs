//! The server audit's findings in the page's language: each
//! `battlelog_verify` problem (whose own text is the English that
//! `battlelog audit` prints) said in Russian on a Russian page, its values
//! (hashes, keys, JSON, expressions, the wording of a nested error) as
//! `code`, never translated. The same reasons the browser verifier gives
//! (web/verifier/messages.js), in the same words where they are the same.

use battlelog_verify::Problem;
use maud::{Markup, html};

use crate::i18n::Lang;

/// One piece of a reason: words, or a value shown as it is.
enum Piece {
    Words(String),
    Value(String),
}

use Piece::{Value as V, Words as W};

fn w(text: impl Into<String>) -> Piece {
    W(text.into())
}

fn v(text: impl ToString) -> Piece {
    V(text.to_string())
}

/// A finding's reason: the English of `battlelog audit`, or its Russian.
pub fn finding(lang: Lang, problem: &Problem) -> Markup {
    match lang {
        Lang::En => html! { span.reason { (problem.to_string()) } },
        Lang::Ru => html! {
            span.reason {
                @for piece in russian(problem) {
                    @match piece {
                        W(text) => (text),
                        V(text) => code translate="no" { (text) },
                    }
                }
            }
        },
    }
}

// long: data table
/// Each audit problem in Russian: one arm per `Problem` variant, a
/// translation table (the compiler holds it to every variant).
fn russian(problem: &Problem) -> Vec<Piece> {
    use Problem::*;
    match problem {
        VersionMissing { expected, found } => vec![w(format!(
            "здесь ожидалась версия {expected}, а стоит версия {found}: событие пропущено или переставлено"
        ))],
        VersionRepeated { version, after } => {
            vec![w(format!("версия {version} повторяется или стоит не на месте после версии {after}"))]
        }
        OpenedAgain => vec![w("открытие боя должно быть версией 0, и только одно")],
        NotOpened => vec![w("бой начинается с открытия боя")],
        AfterClose => vec![w("после закрытия боя — событие, которое не раскрытие сида, не спор и не решение судьи")],
        ChainBroken => vec![w("хеш не следует из предыдущего хеша и этой записи: событие изменено")],
        LineStream { named, expected } => {
            vec![w("строка называет поток "), v(named), w(", а не "), v(expected)]
        }
        RecordUndecodable(error) => vec![w("байты записи не читаются: "), v(error)],
        RecordStream(stream) => vec![w("запись из другого потока: "), v(stream)],
        RecordVersion(version) => vec![w(format!("в записи стоит версия {version}"))],
        EventUndecodable(error) => vec![w("событие не читается: "), v(error)],
        EventShownDiffers => vec![w("показанное событие расходится с записью")],
        EpochOutOfOrder { epoch, previous } => vec![w(format!("эпоха {epoch} идёт после эпохи {previous}"))],
        EpochBeforeReveal { epoch, previous } => {
            vec![w(format!("эпоха {epoch} начата до раскрытия сида эпохи {previous}"))]
        }
        SeedMalformed { epoch, source } => vec![w(format!("эпоха {epoch}: сид повреждён: ")), v(source)],
        NeverCommitted { epoch } => vec![w(format!("обязательства по эпохе {epoch} не было"))],
        SeedMismatch { epoch, commitment } => {
            vec![w(format!("раскрытый сид эпохи {epoch} не совпадает со своим обязательством ")), v(commitment)]
        }
        ClosedUnrevealed { epoch } => {
            vec![w(format!("бой закрыт, а сид эпохи {epoch} так и не раскрыт"))]
        }
        SignatureMissing { epoch } => vec![w(format!("обязательство эпохи {epoch} не подписано"))],
        RollerKeyMissing { epoch } => vec![w(format!("у обязательства эпохи {epoch} нет ключа роллера"))],
        RollerKeyMalformed { epoch, source } => {
            vec![w(format!("эпоха {epoch}: ключ роллера повреждён: ")), v(source)]
        }
        RollerKeyChanged { epoch, key, first } => vec![
            w(format!("эпоха {epoch} подписана ключом роллера ")),
            v(key),
            w(", а прежние обязательства боя — ключом "),
            v(first),
        ],
        RollerKeyUntrusted { epoch, key, trusted } => vec![
            w(format!("эпоха {epoch} подписана ключом роллера ")),
            v(key),
            w(", а не доверенным ключом роллера "),
            v(trusted),
        ],
        RollerKeyNotAmongTrusted { epoch, key, trusted } => vec![
            w(format!("эпоха {epoch} подписана ключом роллера ")),
            v(key),
            w(", которого нет среди доверенных ("),
            v(trusted.join(", ")),
            w(")"),
        ],
        SignatureInvalid { epoch, commitment, key, source } => vec![
            w(format!("эпоха {epoch}: подпись обязательства ")),
            v(commitment),
            w(" ключом роллера "),
            v(key),
            w(" не сходится: "),
            v(source),
        ],
        NonceOutOfOrder { nonce, next } => {
            vec![w(format!("номер броска {nonce}, а следующим должен быть {next}"))]
        }
        NonceReused { nonce } => vec![w(format!("номер броска {nonce} использован дважды"))],
        RollOutsideEpoch { epoch, current } => {
            vec![w(format!("брошено в эпохе {epoch}, когда текущей, не раскрытой, была эпоха {current}"))]
        }
        RollUnused { nonce, expression } => {
            vec![w(format!("бросок {nonce} (")), v(expression), w(") не использовало ни одно действие")]
        }
        RollLeftPending { nonce } => vec![w(format!(
            "бросок {nonce} сделан для действия, которое не разрешено до этого события: записанный бросок остался без разрешения"
        ))],
        ActionNotTheRolled { nonce } => {
            vec![w(format!("разрешено не то действие, для которого сделан бросок {nonce}"))]
        }
        RollsNotTheDrawn { drawn, used } => vec![
            w("для действия сделаны броски "),
            v(format!("{drawn:?}")),
            w(", а его разрешение берёт броски "),
            v(format!("{used:?}")),
        ],
        RollExpression { nonce, expression, source } => {
            vec![w(format!("бросок {nonce}: выражение ")), v(expression), w(" не вычисляется: "), v(source)]
        }
        RollDiffers { nonce, expression, recorded, recorded_total, derived, derived_total } => vec![
            w(format!("бросок {nonce} (")),
            v(expression),
            w(format!(
                "): записано [{recorded}] = {recorded_total}, а раскрытый сид даёт [{derived}] = {derived_total}"
            )),
        ],
        Parts(error) => vec![w("действие не читается: "), v(error)],
        Ruleset(error) => vec![w("правила боя не известны: "), v(error)],
        Opening(error) => vec![w("бой не открывается по правилам: "), v(error)],
        UsedRollExpression { nonce, source } => {
            vec![w(format!("бросок {nonce}: выражение не вычисляется: ")), v(source)]
        }
        RollUsedTwice { nonce } => vec![w(format!("бросок {nonce} уже использован другим действием"))],
        RollNotJournaled { nonce } => vec![w(format!("броска {nonce} нет в журнале до этого действия"))],
        DiceMismatch { needed, used } => {
            vec![w("действию нужны броски "), v(format!("{needed:?}")), w(", а использованы "), v(format!("{used:?}"))]
        }
        Forbidden(rejection) => vec![w("правила запрещают здесь это действие: "), v(rejection)],
        OutcomeDiffers { recorded, derived } => {
            vec![w("записан исход "), v(recorded), w(", а правила дают "), v(derived)]
        }
        SummaryDiffers => vec![w("описание расходится с описанием по правилам")],
        Resolve(error) => vec![w("действие не разрешается по правилам: "), v(error)],
        CannotReplay(error) => vec![w("не удаётся пересчитать: "), v(error)],
        HeadDiffers { found, expected } => vec![
            w("экспорт кончается на хеше головы "),
            v(found),
            w(", а не на ожидаемой голове "),
            v(expected),
            w(": в конце не хватает событий, или это другой экспорт"),
        ],
        RulingCredential { judge, role, subject } => {
            vec![w("решение называет судью "), v(judge), w(", а записано от имени "), v(format!("{role} {subject}"))]
        }
        RulingAnswersNoDispute { answers } => vec![w(format!(
            "решение судьи называет себя ответом на версию {answers}, а это не спор, поднятый в этом бою до него"
        ))],
        TrailerMissing => vec![w("трейлера нет, а ключ журнала закреплён: где кончается бой, не показано")],
        TrailerMalformed { field, message } => {
            vec![w("трейлер повреждён, поле "), v(field), w(": "), v(message)]
        }
        TrailerCheckpointSignature(message) => vec![w("подпись чекпойнта не сходится: "), v(message)],
        TrailerLogKeyNotTrusted { found, trusted } => vec![
            w("ключ журнала не из доверенных: в трейлере "),
            v(found),
            w(", доверенный ключ журнала — "),
            v(trusted),
        ],
        TrailerHeadNotLastEvent(message) => vec![
            w("подписанная голова — не последнее событие экспорта: "),
            v(message),
            w(": в конце не хватает событий, или трейлер от другого экспорта"),
        ],
        TrailerHeadSignature => vec![w("подпись головы не сходится с ключом журнала из трейлера")],
        TrailerInclusionProof { leaf_index, message } => vec![
            w(format!("доказательство включения головы (лист {leaf_index}) не ведёт к корню чекпойнта: ")),
            v(message),
        ],
        LogRewritten { kept_size, size, message } => vec![
            w(format!(
                "журнал переписан после сохранённого чекпойнта (размер {kept_size}): нет согласованности с чекпойнтом экспорта (размер {size}): "
            )),
            v(message),
        ],
        KeptCheckpointUnchecked(message) => vec![w("сохранённый чекпойнт не проверить: "), v(message)],
        LogShort { kept_size, message } => vec![
            w(format!("в журнале больше нет сохранённого чекпойнта (размер {kept_size}): ")),
            v(message),
            w(": записи, которые он покрывал, потеряны, или это другой журнал"),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Letters of the Latin alphabet in a row, outside `code`.
    fn english_words(markup: &str) -> Vec<String> {
        let mut text = String::new();
        let mut rest = markup;
        while let Some(start) = rest.find("<code") {
            text.push_str(&rest[..start]);
            rest = rest[start..].split_once("</code>").map_or("", |(_, after)| after);
        }
        text.push_str(rest);
        let text = text.split('<').map(|part| part.split_once('>').map_or(part, |(_, t)| t)).collect::<String>();
        text.split(|c: char| !c.is_ascii_alphabetic()).filter(|word| word.len() >= 2).map(str::to_owned).collect()
    }

    #[test]
    fn a_russian_page_says_each_finding_in_russian_values_as_code() {
        let problems = [
            Problem::ChainBroken,
            Problem::RollDiffers {
                nonce: 3,
                expression: "1d6".into(),
                recorded: "1".into(),
                recorded_total: 1,
                derived: "6".into(),
                derived_total: 6,
            },
            Problem::SeedMismatch { epoch: 0, commitment: "ab".repeat(32) },
            Problem::RollerKeyUntrusted { epoch: 0, key: "cd".repeat(32), trusted: "ef".repeat(32) },
            Problem::OutcomeDiffers { recorded: r#"{"damage":60}"#.into(), derived: r#"{"damage":45}"#.into() },
            Problem::HeadDiffers { found: "01".repeat(32), expected: "02".repeat(32) },
            Problem::TrailerMissing,
            Problem::NonceReused { nonce: 2 },
        ];
        for problem in &problems {
            let ru = finding(Lang::Ru, problem).into_string();
            assert!(english_words(&ru).is_empty(), "{problem:?}: {ru} has {:?}", english_words(&ru));
            let en = finding(Lang::En, problem).into_string();
            assert!(en.contains(&maud::html! { (problem.to_string()) }.into_string()), "{en}");
        }
        let ru = finding(Lang::Ru, &problems[1]).into_string();
        assert!(ru.contains("записано [1] = 1, а раскрытый сид даёт [6] = 6"), "{ru}");
    }
}
