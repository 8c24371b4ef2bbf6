//! `GET /verify`: a page where a judge chooses or drops an export file and
//! the same JavaScript verifier checks it in the browser, with no server
//! call; self-contained, so that it works saved to disk and opened from a
//! file. The DOM contract is the battle page's.

use maud::{DOCTYPE, Markup, PreEscaped, html};

use crate::assets::verify_script;
use crate::i18n::Lang;
use crate::style::STYLE;

pub fn render(lang: Lang) -> Markup {
    html! {
        (DOCTYPE)
        html lang=(lang.code()) {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (lang.t("verify_title")) " — battlelog" }
                style { (PreEscaped(STYLE)) }
            }
            body data-audit="pending" {
                header { nav {
                    a href="?lang=en" hreflang="en" lang="en" { "English" }
                    a href="?lang=ru" hreflang="ru" lang="ru" { "Русский" }
                } }
                h1 { (lang.t("verify_title")) }
                p { (lang.t("verify_intro")) }
                p {
                    label for="head" { (lang.t("posted_head")) }
                    br;
                    input #head type="text" size="70" spellcheck="false" autocomplete="off";
                }
                div #drop-zone {
                    p { (lang.t("drop_here")) }
                    input #export-file type="file" accept=".jsonl,.json,.txt,application/x-ndjson,application/json,text/plain";
                }
                p.verdict {
                    span.pending { (lang.t("verify_pending")) }
                    span.verified { (lang.t("verify_verified")) }
                    span.failed { (lang.t("verify_failed")) }
                    span.unrevealed { (lang.t("verify_unrevealed")) }
                }
                p { span #first-failure {} span { " ← " (lang.t("first_failure")) } }
                noscript { p { (lang.t("no_js")) } }
                div #results {}
                (verify_script())
            }
        }
    }
}
