//! The battle page (`GET /battles/{id}`), rendered on the server from the
//! battle's export, so that it reads without JavaScript: the battle's
//! facts, each epoch's commitment, then the timeline — every event under
//! its permalink `#v<version>`, dice as pictures, disputes linked to what
//! they contest, rulings with the before and after of what they changed.
//!
//! The DOM contract the in-page verifier (and tests) work by:
//! `<body data-audit="pending|verified|failed|unrevealed">`, every event
//! element `data-version`, every roll element `data-nonce` (both given
//! `data-check` by the verifier), and `#first-failure`.

use std::collections::BTreeMap;

use battlelog_verify::AuditReport;
use battlelog_verify::export::ExportLine;
use battlelog_verify::judging::{Author, RulingSeen};
use maud::{DOCTYPE, Markup, PreEscaped, html};
use serde_json::Value;

use crate::assets::battle_script;
use crate::dice::roll;
use crate::i18n::Lang;
use crate::style::STYLE;

/// What a battle page shows.
#[derive(Debug)]
pub struct BattlePage<'a> {
    pub battle_id: &'a str,
    pub lines: &'a [ExportLine],
    /// The export as the page embeds it for the in-page verifier.
    pub export: &'a str,
    /// The server's own audit of the same export (battlelog_verify).
    pub report: &'a AuditReport,
    pub lang: Lang,
    /// The share key the visitor came with, kept in the page's own links.
    pub share_key: Option<&'a str>,
}

fn text<'v>(event: &'v Value, field: &str) -> &'v str {
    event.get(field).and_then(Value::as_str).unwrap_or_default()
}

fn number(event: &Value, field: &str) -> Option<u64> {
    event.get(field).and_then(Value::as_u64)
}

/// The action an `ActionResolved` records (null for other events).
fn action_of(event: &Value) -> &Value {
    event.get("action").unwrap_or(&Value::Null)
}

/// The `type` of the action an `ActionResolved` records.
fn action_type(event: &Value) -> Option<&str> {
    action_of(event).get("type").and_then(Value::as_str)
}

/// A JSON value as a judge reads it: strings bare, the rest as JSON.
fn plain(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => "—".into(),
        other => other.to_string(),
    }
}

/// The export for a `<script type="application/x-ndjson">` element: `<`
/// escaped inside JSON strings (a comment or reason holding `</script>`
/// must not end the element; `\u003c` parses back to the same text).
fn embeddable(export: &str) -> String {
    export.replace('<', "\\u003c")
}

impl BattlePage<'_> {
    /// A link to this page in `lang`, keeping the share key.
    fn self_link(&self, lang: Lang) -> String {
        match self.share_key {
            Some(key) => format!("?k={key}&lang={}", lang.code()),
            None => format!("?lang={}", lang.code()),
        }
    }

    fn export_link(&self) -> String {
        match self.share_key {
            Some(key) => format!("/battles/{}/export.jsonl?k={key}", self.battle_id),
            None => format!("/battles/{}/export.jsonl", self.battle_id),
        }
    }

    pub fn render(&self) -> Markup {
        let lang = self.lang;
        let opened = self.lines.iter().find(|line| line.event_type == "BattleOpened").map(|line| &line.event);
        let empty = Value::Null;
        let opened = opened.unwrap_or(&empty);
        let closed = self.lines.iter().any(|line| line.event_type == "BattleClosed");
        let title = match text(opened, "title") {
            "" => self.battle_id,
            title => title,
        };
        html! {
            (DOCTYPE)
            html lang=(lang.code()) {
                head {
                    meta charset="utf-8";
                    meta name="viewport" content="width=device-width, initial-scale=1";
                    title { (title) " — battlelog" }
                    style { (PreEscaped(STYLE)) }
                }
                body data-audit="pending" data-head=(self.report.head_hash) data-battle=(self.battle_id) {
                    header { nav {
                        a href=(self.self_link(Lang::En)) hreflang="en" lang="en" { "English" }
                        a href=(self.self_link(Lang::Ru)) hreflang="ru" lang="ru" { "Русский" }
                        a href=(self.export_link()) download { (lang.t("download")) }
                        a href="/verify" { (lang.t("verify_file")) }
                    } }
                    h1 { (title) }
                    (self.facts(opened, closed))
                    (self.verification())
                    (self.commitments())
                    h2 { (lang.t("timeline")) }
                    (self.timeline())
                    script type="application/x-ndjson" id="battle-export" { (PreEscaped(embeddable(self.export))) }
                    (battle_script())
                }
            }
        }
    }

    fn facts(&self, opened: &Value, closed: bool) -> Markup {
        let lang = self.lang;
        let participants: Vec<String> = opened
            .get("participants")
            .and_then(Value::as_array)
            .map(|list| list.iter().map(|p| plain(p.get("id").unwrap_or(&Value::Null))).collect())
            .unwrap_or_default();
        html! {
            dl.facts {
                dt { (lang.t("battle")) } dd { code { (self.battle_id) } }
                dt { (lang.t("ruleset")) } dd { (text(opened, "ruleset")) }
                dt { (lang.t("participants")) } dd { (participants.join(", ")) }
                dt { (lang.t("forum_ref")) } dd { (text(opened, "forum_ref")) }
                dt { (lang.t("tenant")) } dd { (text(opened, "tenant")) }
                dt { (lang.t("status")) } dd id="battle-status" { (lang.t(if closed { "closed" } else { "open" })) }
                dt { (lang.t("events")) } dd { (self.lines.len()) }
                dt { (lang.t("head")) } dd { code.hash id="head-hash" { (self.report.head_hash) } }
                @if let Some(key) = &self.report.roller_key {
                    dt { (lang.t("roller_key")) } dd { code.hash { (key) } }
                }
            }
        }
    }

    fn verification(&self) -> Markup {
        let lang = self.lang;
        html! {
            section #verification {
                h2 { (lang.t("verification")) }
                p.verdict {
                    span.pending { (lang.t("verify_pending")) }
                    span.verified { (lang.t("verify_verified")) }
                    span.failed { (lang.t("verify_failed")) }
                    span.unrevealed { (lang.t("verify_unrevealed")) }
                }
                p { span #first-failure {} span { " ← " (lang.t("first_failure")) } }
                ul #client-problems .problems {}
                noscript { p { (lang.t("no_js")) } }
                p.muted {
                    (lang.t("server_audit")) ": " (self.report.findings.len()) " " (lang.t("findings"))
                }
                @if !self.report.findings.is_empty() {
                    ul.problems #server-findings {
                        @for finding in &self.report.findings {
                            li { a href={ "#v" (finding.version) } { "v" (finding.version) } " " (finding.problem.to_string()) }
                        }
                    }
                }
            }
        }
    }

    fn commitments(&self) -> Markup {
        let lang = self.lang;
        // Per epoch: its commitment and signature, and its seed once revealed.
        let mut epochs: BTreeMap<u64, (u64, &Value, Option<&str>)> = BTreeMap::new();
        for line in self.lines {
            match line.event_type.as_str() {
                "BattleOpened" => {
                    epochs.insert(0, (line.version, &line.event, None));
                }
                "SeedCommitted" => {
                    epochs.insert(number(&line.event, "epoch").unwrap_or_default(), (line.version, &line.event, None));
                }
                "SeedRevealed" => {
                    let epoch = number(&line.event, "epoch").unwrap_or_default();
                    if let Some(entry) = epochs.get_mut(&epoch) {
                        entry.2 = Some(text(&line.event, "server_seed"));
                    }
                }
                _ => {}
            }
        }
        html! {
            h2 { (lang.t("commitments")) }
            table.changes #commitments {
                tr { th { (lang.t("epoch")) } th { (lang.t("commitment")) } th { (lang.t("signature")) } th { (lang.t("seed")) } }
                @for (epoch, (version, event, seed)) in &epochs {
                    tr data-epoch=(epoch) {
                        td { a href={ "#v" (version) } { (epoch) } }
                        td { code.hash { (text(event, "commitment")) } }
                        td { @match text(event, "commitment_signature") {
                            "" => (lang.t("unsigned")),
                            signature => code.hash title=(signature) { (signature.get(..16).unwrap_or(signature)) "…" },
                        } }
                        td { @match seed {
                            Some(seed) => { (lang.t("revealed")) ": " code.hash { (seed) } },
                            None => (lang.t("secret")),
                        } }
                    }
                }
            }
        }
    }

    fn timeline(&self) -> Markup {
        // Cross-links: the version of each nonce's roll, the disputes and
        // rulings contesting each version, and each ruling's changes.
        let roll_versions: BTreeMap<u64, u64> = self
            .lines
            .iter()
            .filter(|line| line.event_type == "DiceRolled")
            .filter_map(|line| Some((number(&line.event, "nonce")?, line.version)))
            .collect();
        let mut contested_by: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
        for dispute in &self.report.disputes {
            contested_by.entry(dispute.contests).or_default().push(dispute.version);
        }
        for ruling in &self.report.rulings {
            contested_by.entry(ruling.contests).or_default().push(ruling.version);
        }
        let rulings: BTreeMap<u64, &RulingSeen> = self.report.rulings.iter().map(|r| (r.version, r)).collect();
        // A berserk@2 strike's version → the exchange choice answering it.
        let choices: BTreeMap<u64, u64> = self
            .lines
            .iter()
            .filter(|line| action_type(&line.event) == Some("exchange_choice"))
            .filter_map(|line| Some((number(action_of(&line.event), "against")?, line.version)))
            .collect();
        html! {
            ol.timeline #timeline {
                @for line in self.lines {
                    li.event id={ "v" (line.version) } data-version=(line.version) data-type=(line.event_type) {
                        (self.event(line, &roll_versions, rulings.get(&line.version).copied(), &choices))
                        @if let Some(versions) = contested_by.get(&line.version) {
                            p.muted.contested {
                                (self.lang.t("contests")) " ← "
                                @for version in versions { a href={ "#v" (version) } { "#v" (version) } " " }
                            }
                        }
                    }
                }
            }
        }
    }

    fn event(
        &self,
        line: &ExportLine,
        roll_versions: &BTreeMap<u64, u64>,
        ruling: Option<&RulingSeen>,
        choices: &BTreeMap<u64, u64>,
    ) -> Markup {
        let lang = self.lang;
        let event = &line.event;
        let heading = |label: &str| {
            html! { span.event-title { (label) } a.permalink href={ "#v" (line.version) } { "#v" (line.version) } }
        };
        // Who made a dispute or ruling: the credential the resolver
        // recorded with it, as the audit reads it from the record.
        let author = |by: Option<&Author>| by.map(|by| format!("{} ({})", by.subject, by.role));
        let dispute_author =
            || author(self.report.disputes.iter().find(|d| d.version == line.version).and_then(|d| d.by.as_ref()));
        html! {
            @match line.event_type.as_str() {
                "BattleOpened" => {
                    (heading(lang.t("opened")))
                    p { (text(event, "title")) " · " (text(event, "ruleset")) }
                }
                "DiceRolled" => {
                    (heading(lang.t("roll")))
                    (roll(event, lang))
                }
                "ActionResolved" => {
                    (heading(lang.t("action")))
                    p.summary lang=(lang.code()) {
                        (text(event, match lang { Lang::En => "summary_en", Lang::Ru => "summary_ru" }))
                    }
                    @if let Some(nonces) = event.get("rolls").and_then(Value::as_array).filter(|n| !n.is_empty()) {
                        p.muted { (lang.t("dice_used")) ": "
                            @for nonce in nonces.iter().filter_map(Value::as_u64) {
                                @match roll_versions.get(&nonce) {
                                    Some(version) => { a href={ "#v" (version) } { (lang.t("nonce")) " " (nonce) } " " },
                                    None => { (lang.t("nonce")) " " (nonce) " " },
                                }
                            }
                        }
                    }
                    // berserk@2 (RULES.md §6.3): a strike whose row lets the
                    // side that rolled higher choose, and the choice that
                    // answers it, link each other.
                    @if let Some(strike) = number(action_of(event), "against").filter(|_| action_type(event) == Some("exchange_choice")) {
                        p.muted.exchange { (lang.t("answers_strike")) " " a.refers href={ "#v" (strike) } { "#v" (strike) } }
                    }
                    @if let Some(side) = event.get("outcome").and_then(|o| o.get("pending_choice")).and_then(Value::as_str) {
                        p.muted.pending-choice {
                            (lang.t("awaits_choice")) " " (lang.t(if side == "attacker" { "attacker" } else { "defender" }))
                            @if let Some(choice) = choices.get(&line.version) {
                                " · " (lang.t("choice_made")) " " a href={ "#v" (choice) } { "#v" (choice) }
                            }
                        }
                    }
                    details { summary { (lang.t("details")) }
                        pre { code { (serde_json::to_string_pretty(&serde_json::json!({
                            "action": event.get("action"), "outcome": event.get("outcome")
                        })).unwrap_or_default()) } }
                    }
                }
                "DisputeRaised" => {
                    (heading(lang.t("dispute")))
                    p { (text(event, "by")) " " (lang.t("contests")) " "
                        @if let Some(refers) = number(event, "refers_to") { a.refers href={ "#v" (refers) } { "#v" (refers) } } }
                    p { (lang.t("reason")) ": " (text(event, "reason")) }
                    @if let Some(who) = dispute_author() { p.muted { (lang.t("raised_by")) ": " span.by { (who) } } }
                }
                "JudgeRuling" => {
                    (heading(lang.t("ruling")))
                    p { (lang.t("judge")) ": " span.judge { (text(event, "judge")) }
                        @if let Some(who) = author(ruling.and_then(|r| r.by.as_ref())) { " · " span.muted.by { (who) } }
                        " · " (lang.t("on")) " "
                        @if let Some(refers) = number(event, "refers_to") { a.refers href={ "#v" (refers) } { "#v" (refers) } } }
                    blockquote { (text(event, "text")) }
                    @match ruling.map(|r| r.changes.as_slice()).filter(|changes| !changes.is_empty()) {
                        Some(changes) => table.changes.override {
                            tr { th { (lang.t("field")) } th { (lang.t("before")) } th { (lang.t("after")) } }
                            @for change in changes {
                                tr data-field=(change.field) {
                                    td { (change.field) }
                                    td.before { (plain(&change.before)) }
                                    td.after { (plain(&change.after)) }
                                }
                            }
                        },
                        None => p.muted { (lang.t("no_override")) },
                    }
                }
                "BattleClosed" => {
                    (heading(lang.t("closed_by")))
                    p { (text(event, "by")) ": " (text(event, "reason")) }
                }
                "SeedRevealed" => {
                    (heading(lang.t("seed_revealed")))
                    p { (lang.t("epoch")) " " (number(event, "epoch").unwrap_or_default()) ": " code.hash { (text(event, "server_seed")) } }
                }
                "SeedCommitted" => {
                    (heading(lang.t("seed_committed")))
                    p { (lang.t("epoch")) " " (number(event, "epoch").unwrap_or_default()) ": " code.hash { (text(event, "commitment")) } }
                }
                other => {
                    (heading(other))
                    pre { code { (event.to_string()) } }
                }
            }
        }
    }
}
