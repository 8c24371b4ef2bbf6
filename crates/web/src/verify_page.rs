//! `GET /verify`: a page where a judge chooses or drops an export file and
//! the same JavaScript verifier checks it in the browser, with no server
//! call once its modules are loaded (offline, the same page is
//! `web/verifier/pages/offline.html` on any static server). The DOM
//! contract is the battle page's, but the page starts idle
//! (`body[data-audit="idle"]`) until a file is chosen, and takes the
//! roller key to pin: typed, or given as `?roller_key=`; with none, every
//! key the site trusts (`#roller-keys`). The field is never pre-filled with
//! one of the site's keys: that would pin to it alone, and an export signed
//! by the site's other key (a key being rotated) would be a mismatch.
//! The journal's log key (docs/protocol.md §5) is pinned the same way: typed in
//! `#log-key-input` or given as `?log_key=`, else the key the site
//! publishes (`#log-keys`). Once a file with a trailer is verified, its
//! signed checkpoint is shown to keep (`section#checkpoint`, hidden until
//! then, filled by the page's script).

use maud::{DOCTYPE, Markup, PreEscaped, html};

use crate::assets::verify_script;
use crate::i18n::Lang;
use crate::page::{lang_notice, log_key_fields, roller_key_fields, verdict_banner};
use crate::style::STYLE;

/// What the /verify page shows.
#[derive(Debug, Clone, Copy)]
pub struct VerifyPage<'a> {
    pub lang: Lang,
    /// A `?lang=` the pages do not have, to say so on the page.
    pub unknown_lang: Option<&'a str>,
    /// `?roller_key=`: the key the judge was given to pin.
    pub roller_key: Option<&'a str>,
    /// The roller keys (lowercase hex) this site trusts.
    pub trusted_roller_keys: &'a [String],
    /// `?log_key=`: the journal's log key the judge was given to pin.
    pub log_key: Option<&'a str>,
    /// The journal's log key the site publishes (empty while unknown).
    pub trusted_log_keys: &'a [String],
}

/// A roller key as the field takes it: 64 hex digits, else nothing.
fn roller_key(key: &str) -> Option<String> {
    let key = key.trim();
    (key.len() == 64 && key.bytes().all(|b| b.is_ascii_hexdigit())).then(|| key.to_ascii_lowercase())
}

impl VerifyPage<'_> {
    pub fn render(&self) -> Markup {
        let lang = self.lang;
        let pinned = self.roller_key.and_then(roller_key);
        let keys = serde_json::json!({ "keys": self.trusted_roller_keys }).to_string().replace('<', "\\u003c");
        let log_keys = crate::log_key::document(self.trusted_log_keys).replace('<', "\\u003c");
        // Only a well-formed key is put back in the field.
        let pinned_log_key = self.log_key.and_then(|k| crate::log_key::parse(k).ok());
        html! {
            (DOCTYPE)
            html lang=(lang.code()) {
                head {
                    meta charset="utf-8";
                    meta name="viewport" content="width=device-width, initial-scale=1";
                    title { (lang.t("verify_title")) " — battlelog" }
                    style { (PreEscaped(STYLE)) }
                }
                body data-audit="idle" data-roller-key="pending" {
                    header { nav {
                        a href="?lang=en" hreflang="en" lang="en" { "English" }
                        a href="?lang=ru" hreflang="ru" lang="ru" { "Русский" }
                    } }
                    main {
                        (lang_notice(lang, self.unknown_lang))
                        h1 { (lang.t("verify_title")) }
                        (verdict_banner(lang, true))
                        p { (crate::page::prose(lang.t("verify_intro"))) }
                        p.field {
                            label for="head" { (lang.t("posted_head")) }
                            input #head type="text" spellcheck="false" autocomplete="off";
                        }
                        p.field {
                            label for="roller-key-input" { (lang.t("roller_key_input")) }
                            input #roller-key-input type="text" spellcheck="false" autocomplete="off" value=[pinned.as_deref()];
                        }
                        p.field {
                            label for="log-key-input" { (lang.t("log_key_input")) }
                            input #log-key-input type="text" spellcheck="false" autocomplete="off" value=[pinned_log_key.as_deref()];
                        }
                        div #drop-zone {
                            p { label for="export-file" { (lang.t("drop_here")) } }
                            input #export-file type="file" accept=".jsonl,.json,.txt,application/x-ndjson,application/json,text/plain";
                        }
                        section #verification {
                            h2 { (lang.t("verification")) }
                            p { span #first-failure {} span { " ← " (lang.t("first_failure")) } }
                            h3 { (lang.t("checks")) }
                            ul #checks {}
                            (roller_key_fields(lang, self.trusted_roller_keys))
                            (log_key_fields(lang, self.trusted_log_keys))
                            section #checkpoint hidden aria-labelledby="checkpoint-heading" {
                                h3 #checkpoint-heading { (lang.t("checkpoint_keep")) }
                                p #checkpoint-why { (crate::page::prose(lang.t("checkpoint_keep_why"))) }
                                pre #checkpoint-note translate="no" {}
                                button #copy-checkpoint type="button" aria-controls="checkpoint-note" { (lang.t("copy")) }
                            }
                            ul #client-problems .problems {}
                        }
                        noscript { p { (crate::page::prose(lang.t("no_js"))) } }
                        div #results {}
                    }
                    script type="application/json" id="roller-keys" { (PreEscaped(keys)) }
                    script type="application/json" id="log-keys" { (PreEscaped(log_keys)) }
                    (verify_script())
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(roller_key: Option<&str>, trusted: &[String]) -> String {
        VerifyPage {
            lang: Lang::Ru,
            unknown_lang: None,
            roller_key,
            trusted_roller_keys: trusted,
            log_key: None,
            trusted_log_keys: &[],
        }
        .render()
        .into_string()
    }

    #[test]
    fn the_page_is_idle_until_a_file_is_chosen() {
        let html = page(None, &[]);
        assert!(html.contains("<body data-audit=\"idle\" data-roller-key=\"pending\">"), "{html}");
        assert!(html.contains("<p id=\"verdict-headline\">выберите файл экспорта для проверки</p>"), "{html}");
        for id in [
            "id=\"head\"",
            "id=\"export-file\"",
            "id=\"checks\"",
            "id=\"roller-key-input\"",
            "id=\"roller-keys\"",
            "<main>",
        ] {
            assert!(html.contains(id), "{id}");
        }
        assert!(html.contains("data-verdict=\"idle\" aria-live=\"polite\""));
    }

    #[test]
    fn the_roller_key_field_holds_only_the_query_s_and_the_site_s_keys_come_apart() {
        let given = "AB".repeat(32);
        let site = vec!["cd".repeat(32), "ef".repeat(32)];
        let value = |html: &str| {
            let at = html.find("id=\"roller-key-input\"").unwrap();
            html[at..]
                .split('>')
                .next()
                .unwrap()
                .split("value=\"")
                .nth(1)
                .map(|v| v.split('"').next().unwrap().to_owned())
        };
        assert_eq!(value(&page(Some(&given), &site)), Some("ab".repeat(32)));
        assert_eq!(value(&page(None, &site)), None, "not one of the site's keys alone");
        assert_eq!(value(&page(Some("not a key"), &[])), None);
        assert!(page(None, &site).contains(&format!("{{\"keys\":[\"{}\",\"{}\"]}}", site[0], site[1])));
    }

    #[test]
    fn the_log_key_field_holds_only_a_well_formed_query_key_and_the_site_s_key_is_embedded() {
        const KEY: &str = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW";
        let render = |log_key: Option<&str>| {
            VerifyPage {
                lang: Lang::En,
                unknown_lang: None,
                roller_key: None,
                trusted_roller_keys: &[],
                log_key,
                trusted_log_keys: &[KEY.to_owned()],
            }
            .render()
            .into_string()
        };
        assert!(render(Some(KEY)).contains(&format!(
            "id=\"log-key-input\" type=\"text\" spellcheck=\"false\" autocomplete=\"off\" value=\"{KEY}\""
        )));
        let html = render(Some("\"><script>"));
        assert!(
            html.contains("id=\"log-key-input\" type=\"text\" spellcheck=\"false\" autocomplete=\"off\">"),
            "{html}"
        );
        assert!(html.contains(&format!("id=\"log-keys\">{{\"keys\":[\"{KEY}\"]}}<")));
        assert!(html.contains("<section id=\"checkpoint\" hidden"), "hidden until a file's checkpoint fills it");
    }
}
