//! The battle page (`GET /battles/{id}`), rendered on the server from the
//! battle's export, so that it reads without JavaScript: the verdict, the
//! disputes (`#disputes`: each open or answered, linked to its ruling), the
//! battle's facts (participants' sheets, client seed, forum post), the
//! timeline, then the technical panels (the verification section, each
//! epoch's commitment, the state panel) — in the timeline every event under
//! its permalink `#v<version>` with who caused it (the credential recorded
//! with it) and when, a roll drawn inside the action that used it,
//! disputes and rulings linked to what they contest, and an overridden
//! action showing its final outcome with the recorded one struck through.
//!
//! A big battle is paged ([`window`]): the server renders one window of
//! the timeline (`?page=`, `?v=` for the page holding a version, and a
//! search by actor, type and version range), while the export the in-page
//! verifier checks stays whole, so it checks the entire log.
//!
//! The export is not in the page (issue 39: it was three quarters of a big
//! battle's HTML): the page links it (`link#export-link`, the very
//! `export.jsonl` a judge downloads, share key included) and its head starts
//! the check at once, in a worker that fetches it while the page arrives.
//! The service sends the page in two parts ([`BattlePage::top`], down to
//! the verdict banner, then [`BattlePage::rest`]), so that the title and the
//! banner are painted, and the check started, while the rest is drawn.
//! `?view=final` lists every action's final outcome after all rulings.
//!
//! The DOM contract v2 (the contract; the in-page verifier and the
//! tests work by it): `<body data-audit data-head data-battle data-status
//! data-roller-key [data-live-url]>`, in the head `link#export-link` (the
//! export to check) and `#roller-keys` (the trusted roller keys, JSON),
//! `script#battle-export` (the export checked, once the script has it), every event element `id="v<N>" data-version data-type
//! class="event"` with its visible summary as the one `[data-summary]`
//! element of its own, every roll drawn by [`crate::dice::roll`], and the
//! verdict banner `#verdict[data-verdict][aria-live]` right under the
//! title (issue 39), the verification section's `#first-failure`,
//! `ul#checks`, `#roller-key`, `#roller-key-status`, `ul#client-problems`
//! and `input#posted-head`. Issue 23 (docs/protocol.md §5): `#log-keys` (the
//! journal's log key the site publishes, JSON, in the head), `#log-key`,
//! `#log-key-status`, and — when the export came with a trailer — the
//! signed checkpoint to keep in `pre#checkpoint-note` with
//! `button#copy-checkpoint` (else `#no-checkpoint` says there is none).

pub mod record;
pub mod window;

use std::collections::BTreeMap;

use battlelog_verify::AuditReport;
use battlelog_verify::export::ExportLine;
use battlelog_verify::judging::{AffectedAction, FieldChange, RulingSeen};
use maud::{DOCTYPE, Markup, PreEscaped, html};
use serde_json::Value;

use crate::assets::{battle_head_scripts, battle_script};
use crate::dice::{roll, roll_for};
use crate::explain;
use crate::i18n::Lang;
use crate::style::STYLE;
pub use window::{View, ViewQuery};

/// How many timeline entries a page shows when the service is not told
/// (the web config's `page_events`): 100, some 40 000 px on a desktop
/// (200 made 88 000 px, and twice the page to draw and parse before its
/// check could report; issue 39).
pub const DEFAULT_PAGE_EVENTS: usize = 100;

/// What a battle page shows.
#[derive(Debug)]
pub struct BattlePage<'a> {
    pub battle_id: &'a str,
    pub lines: &'a [ExportLine],
    /// The server's own audit of the same export (battlelog_verify).
    pub report: &'a AuditReport,
    pub lang: Lang,
    /// A `?lang=` the pages do not have, to say so on the page.
    pub unknown_lang: Option<&'a str>,
    /// The share key the visitor came with, kept in the page's own links.
    pub share_key: Option<&'a str>,
    /// The roller keys (lowercase hex) this site trusts: the verifier pins
    /// the battle's signing key against them.
    pub trusted_roller_keys: &'a [String],
    /// The journal's log key the site publishes (C2SP verifier keys; empty
    /// while unknown): the verifier pins the trailer's key against it.
    pub trusted_log_keys: &'a [String],
    /// The signed checkpoint of the export's trailer, for a judge to keep
    /// (the same text the trailer line holds; the verifier compares them).
    pub checkpoint_note: Option<&'a str>,
    /// Until when the battle's rulings may be appealed, when there is such
    /// a deadline (readable text, as the resolver gives it).
    pub appeal_deadline: Option<String>,
    /// The query's paging, search and view.
    pub view: &'a View,
    /// Timeline entries per page (the web config's `page_events`).
    pub page_events: usize,
}

fn text<'v>(event: &'v Value, field: &str) -> &'v str {
    event.get(field).and_then(Value::as_str).unwrap_or_default()
}

/// A sentence of the page's own text, a command in it (written between
/// backticks in the tables of i18n.rs) drawn as a `<code>` element: the
/// backticks never show.
pub(crate) fn prose(sentence: &str) -> Markup {
    html! {
        @for (index, part) in sentence.split('`').enumerate() {
            @if index % 2 == 1 { code translate="no" { (part) } } @else { (part) }
        }
    }
}

/// A recorded summary, its dice not counted (`~~2~~`, the forum's Markdown)
/// drawn as `<s>` elements: every other character is escaped text, so no
/// mark of any markup shows on the page.
fn summary_markup(summary: &str) -> Markup {
    let mut parts: Vec<(bool, &str)> = Vec::new();
    let mut rest = summary;
    while let Some(start) = rest.find("~~") {
        let after = &rest[start + 2..];
        match after.find("~~") {
            Some(end) if end > 0 && !after[..end].contains(|c: char| c.is_whitespace() || c == '~') => {
                parts.push((false, &rest[..start]));
                parts.push((true, &after[..end]));
                rest = &after[end + 2..];
            }
            _ => {
                parts.push((false, &rest[..start + 2]));
                rest = after;
            }
        }
    }
    parts.push((false, rest));
    html! { @for (struck, part) in parts { @if struck { s { (part) } } @else { (part) } } }
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

/// A recorded value in the page's language: booleans as yes/no, strings as
/// the forum's own text (not translated, marked so), numbers as they are.
/// A recorded value of the field `key`: a rules' word (a result, an action
/// type, a tier, a condition) translated, the recorded word in its title;
/// every other string is the forum's own text.
fn value(lang: Lang, key: &str, recorded: &Value) -> Markup {
    html! {
        @match recorded {
            Value::Bool(true) => (lang.t("yes")),
            Value::Bool(false) => (lang.t("no")),
            Value::String(s) => @match explain::rule_word(key, s, lang) {
                Some(word) => span.rule-word title=(s) { (word) },
                None => span.forum-text translate="no" { (s) },
            },
            Value::Number(n) => (n.to_string()),
            Value::Null => "—",
            // A nested value (a sheet's stats, a list of moves) as a list,
            // never as raw JSON.
            Value::Array(items) => ul.sheet-list { @for item in items { li { (value(lang, key, item)) } } },
            Value::Object(fields) => dl.sheet-fields {
                @for (key, item) in fields { dt { (field_name(lang, key)) } dd { (value(lang, key, item)) } }
            },
        }
    }
}

/// A recorded field's name in the page's language, or raw as code.
fn field_name(lang: Lang, name: &str) -> Markup {
    html! {
        @match lang.field(name) {
            Some(label) => span data-field-name=(name) { (label) },
            None => code data-field-name=(name) translate="no" { (name) },
        }
    }
}

/// The export for a `<script type="application/x-ndjson">` element: `<`
/// escaped inside JSON strings (a comment or reason holding `</script>`
/// must not end the element; `\u003c` parses back to the same text).
fn embeddable(export: &str) -> String {
    export.replace('<', "\\u003c")
}

/// An empty element's start tag alone (`<body …></body>` → `<body …>`):
/// for the elements the page's first part opens and its rest closes, with
/// their attributes escaped by maud as everywhere else.
fn start_tag(element: Markup) -> String {
    let mut tag = element.into_string();
    let end = tag.rfind("</").unwrap_or(tag.len());
    tag.truncate(end);
    tag
}

/// A forum reference: a link when it is a web address, text otherwise.
/// `nofollow`: the page does not vouch for it; `noopener noreferrer`: the
/// forum learns nothing of this page.
fn forum_ref(reference: &str) -> Markup {
    let web = reference.starts_with("https://") || reference.starts_with("http://");
    html! {
        @if web {
            a.forum-text href=(reference) rel="nofollow noopener noreferrer" { (reference) }
        } @else {
            span.forum-text translate="no" { (reference) }
        }
    }
}

/// What a ruling finally did to one field of the action it rules on.
#[derive(Debug, Clone, PartialEq)]
struct FinalField {
    field: String,
    /// The effective value before the first ruling touching the field.
    recorded: Value,
    /// The value the last ruling touching it left.
    last: Value,
    /// That last ruling's version.
    ruling: u64,
}

/// Every action's final outcome fields after all rulings, by the action's
/// version: only fields whose value really changed (a ruling naming a
/// field with the value it had changes nothing a reader needs to see).
fn final_outcomes(rulings: &[RulingSeen]) -> BTreeMap<u64, Vec<FinalField>> {
    let mut finals: BTreeMap<u64, BTreeMap<String, FinalField>> = BTreeMap::new();
    for ruling in rulings {
        for change in &ruling.changes {
            finals
                .entry(ruling.contests)
                .or_default()
                .entry(change.field.clone())
                .and_modify(|f| {
                    f.last = change.after.clone();
                    f.ruling = ruling.version;
                })
                .or_insert_with(|| FinalField {
                    field: change.field.clone(),
                    recorded: change.before.clone(),
                    last: change.after.clone(),
                    ruling: ruling.version,
                });
        }
    }
    finals
        .into_iter()
        .map(|(version, fields)| (version, fields.into_values().filter(|f| f.recorded != f.last).collect::<Vec<_>>()))
        .filter(|(_, fields)| !fields.is_empty())
        .collect()
}

/// A ruling's changes a reader needs: those that changed a value.
fn real_changes(changes: &[FieldChange]) -> Vec<&FieldChange> {
    changes.iter().filter(|c| c.before != c.after).collect()
}

/// By dispute version, the rulings that name it as the dispute they answer.
fn answered_by(rulings: &[RulingSeen]) -> BTreeMap<u64, Vec<u64>> {
    let mut answered: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for ruling in rulings {
        if let Some(dispute) = ruling.answers_dispute {
            answered.entry(dispute).or_default().push(ruling.version);
        }
    }
    answered
}

/// By action version, the rulings whose override reaches it.
fn affected(rulings: &[RulingSeen]) -> BTreeMap<u64, Vec<(u64, &AffectedAction)>> {
    let mut affected: BTreeMap<u64, Vec<(u64, &AffectedAction)>> = BTreeMap::new();
    for ruling in rulings {
        for action in &ruling.affected {
            affected.entry(action.version).or_default().push((ruling.version, action));
        }
    }
    affected
}

/// `data-affected-by`: the versions of the rulings reaching the action at
/// `version`, space-separated (almost always one).
fn affected_by_attr(links: &Links<'_>, version: u64) -> Option<String> {
    links
        .affected
        .get(&version)
        .map(|rulings| rulings.iter().map(|(ruling, _)| ruling.to_string()).collect::<Vec<_>>().join(" "))
}

/// What the timeline's events refer to one another by.
struct Links<'r> {
    roll_versions: BTreeMap<u64, u64>,
    disputes_of: BTreeMap<u64, Vec<u64>>,
    rulings_of: BTreeMap<u64, Vec<u64>>,
    rulings: BTreeMap<u64, &'r RulingSeen>,
    choices: BTreeMap<u64, u64>,
    finals: BTreeMap<u64, Vec<FinalField>>,
    /// By dispute version, the rulings that say they answer it.
    answered_by: BTreeMap<u64, Vec<u64>>,
    /// By action version, the rulings whose override changes what it was
    /// resolved from, and how (issue 39: a ruling followed through).
    affected: BTreeMap<u64, Vec<(u64, &'r AffectedAction)>>,
    closed_at: Option<u64>,
    /// The battle folded from its records with every action explained
    /// (`crate::explain`); none when the records do not fold (the audit
    /// says why).
    explained: Option<explain::Folded>,
}

impl BattlePage<'_> {
    /// The page's base query: share key and language, as `k=…&lang=…`.
    fn base_query(&self, lang: Lang) -> String {
        match self.share_key {
            Some(key) => format!("k={key}&lang={}", lang.code()),
            None => format!("lang={}", lang.code()),
        }
    }

    /// A link to this page in `lang`, keeping the share key.
    fn self_link(&self, lang: Lang) -> String {
        format!("?{}", self.base_query(lang))
    }

    fn export_link(&self) -> String {
        match self.share_key {
            Some(key) => format!("/battles/{}/export.jsonl?k={key}", self.battle_id),
            None => format!("/battles/{}/export.jsonl", self.battle_id),
        }
    }

    /// The URL the page's script follows new events at (open battles).
    fn live_url(&self) -> String {
        let after = self.lines.last().map(|line| line.version).unwrap_or_default();
        match self.share_key {
            Some(key) => format!("/battles/{}/live?after={after}&k={key}", self.battle_id),
            None => format!("/battles/{}/live?after={after}", self.battle_id),
        }
    }

    /// The page with the search kept and another page number.
    fn page_link(&self, page: usize) -> String {
        let mut query = self.base_query(self.lang);
        for (key, value) in [
            ("actor", self.view.actor.clone()),
            ("q", self.view.q.clone()),
            ("disputed", self.view.disputed.then(|| "1".to_owned())),
            ("type", self.view.event_type.clone()),
            ("from", self.view.from.map(|v| v.to_string())),
            ("to", self.view.to.map(|v| v.to_string())),
        ] {
            if let Some(value) = value {
                query.push('&');
                query.push_str(key);
                query.push('=');
                query.push_str(&encode(&value));
            }
        }
        format!("?{query}&page={page}#timeline")
    }

    /// The whole page, as the service sends it: [`Self::top`] then
    /// [`Self::rest`].
    pub fn render(&self) -> Markup {
        let mut page = self.top();
        page.push_str(&self.rest());
        PreEscaped(page)
    }

    /// The page down to its verdict banner (issue 39): what the service
    /// sends first, so that a browser paints the title and the banner and
    /// starts the check while the rest is drawn. Its head holds what the
    /// check needs (the export's link, the trusted keys, every verifier
    /// module preloaded, the script that starts it); the tags it opens
    /// (`html`, `body`, `main`) are closed by [`Self::rest`].
    pub fn top(&self) -> String {
        let lang = self.lang;
        let closed = self.lines.iter().any(|line| line.event_type == "BattleClosed");
        let roller_keys = serde_json::json!({ "keys": self.trusted_roller_keys }).to_string();
        let log_keys = crate::log_key::document(self.trusted_log_keys);
        let document = html! {
            (DOCTYPE)
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (self.battle_title()) " — battlelog" }
                style { (PreEscaped(STYLE)) }
                // The export is not in the page: the verifier reads it here
                // (the download's own URL) while the page arrives.
                link #export-link rel="alternate" type="application/x-ndjson" href=(self.export_link());
                script type="application/json" id="roller-keys" { (PreEscaped(embeddable(&roller_keys))) }
                script type="application/json" id="log-keys" { (PreEscaped(embeddable(&log_keys))) }
                (battle_head_scripts())
            }
        };
        let html_tag = html! { html lang=(lang.code()) {} };
        let body_tag = html! {
            body data-audit="pending" data-head=(self.report.head_hash) data-battle=(self.battle_id)
                data-status=(if closed { "closed" } else { "open" }) data-roller-key="pending"
                data-live-url=[(!closed).then(|| self.live_url())] {}
        };
        let banner = html! {
            // To the timeline's heading, search form first (a judge
            // skipping the facts still wants to search).
            a.skip-link href="#timeline-section" { (lang.t("skip_to_timeline")) }
            header { (self.nav()) }
        };
        let main = html! {
            (lang_notice(lang, self.unknown_lang))
            h1 { span.forum-text translate="no" { (self.battle_title()) } }
            (verdict_banner(lang, false))
        };
        let document = document.into_string();
        // `<!DOCTYPE html><head>…` with the `html` element's start tag
        // after the doctype.
        let (doctype, head) = document.split_at(document.find("<head>").unwrap_or(0));
        let mut top = format!("{doctype}{}{head}", start_tag(html_tag));
        top.push_str(&start_tag(body_tag));
        top.push_str(&banner.into_string());
        top.push_str("<main>");
        top.push_str(&main.into_string());
        top
    }

    /// The page after its verdict banner: the disputes, the facts, the
    /// timeline, the technical panels, and the page's script; it closes
    /// what [`Self::top`] opened.
    pub fn rest(&self) -> String {
        let opened = self.lines.iter().find(|line| line.event_type == "BattleOpened");
        let empty = Value::Null;
        let opened_event = opened.map(|line| &line.event).unwrap_or(&empty);
        let closed = self.lines.iter().any(|line| line.event_type == "BattleClosed");
        let window = window::window(self.lines, self.view, self.page_events);
        let shown = |version: u64| window.shows(self.lines, version);
        let main = html! {
            (self.disputes_panel(&shown))
            (self.facts(opened_event, closed))
            @if self.view.final_view {
                (self.final_view())
            }
            (self.timeline(&window))
            // The technical panels after the battle (issue 39, finding 6):
            // on a phone they pushed the first action thousands of pixels
            // down. The verdict links them.
            (self.verification(&shown))
            (self.commitments(&shown))
            (self.state_section())
        };
        let end = html! {
            // The export the page checked, once it has (pages/battle.js).
            script type="application/x-ndjson" id="battle-export" {}
            (battle_script())
        };
        format!("{}</main>{}</body></html>", main.into_string(), end.into_string())
    }

    /// The battle's title (its `BattleOpened`'s), else its id.
    fn battle_title(&self) -> &str {
        let opened = self.lines.iter().find(|line| line.event_type == "BattleOpened");
        match opened.map_or("", |line| text(&line.event, "title")) {
            "" => self.battle_id,
            title => title,
        }
    }

    /// The header's links: the page in each language, the download, the
    /// file check and, once there are rulings, the final outcomes.
    fn nav(&self) -> Markup {
        let lang = self.lang;
        html! {
            nav {
                a href=(self.self_link(Lang::En)) hreflang="en" lang="en" { "English" }
                a href=(self.self_link(Lang::Ru)) hreflang="ru" lang="ru" { "Русский" }
                a href=(self.export_link()) download { (lang.t("download")) }
                a href={ "/verify?lang=" (lang.code()) } { (lang.t("verify_file")) }
                @if !self.report.rulings.is_empty() {
                    a href={ (self.self_link(lang)) "&view=final#final-view" } { (lang.t("final_view")) }
                }
            }
        }
    }

    /// "Show the calculation" of a roll: drawn for the roll `?calc=N`
    /// names, a link for every other one (a page of 200 rolls with every
    /// ChaCha20 word drawn is thousands of elements a judge rarely opens).
    fn calculation(&self, line: &ExportLine, nested: bool) -> Markup {
        let lang = self.lang;
        if self.view.calc == Some(line.version) {
            return explain::calculation(lang, self.lines, line.version);
        }
        // A roll inside an action: a shortcut for the pointer; the keyboard
        // reaches the same link in the action's "more" disclosure, so that
        // an action is one tab stop (issue 39).
        html! {
            p.muted.calc-link {
                a href=(self.calc_href(line.version)) tabindex=[nested.then_some("-1")] { (lang.t("show_calculation")) }
            }
        }
    }

    /// The page with roll `version`'s calculation drawn.
    fn calc_href(&self, version: u64) -> String {
        format!("?{}&calc={version}&v={version}#v{version}", self.base_query(self.lang))
    }

    /// The state after `?at=N` (else after the last event): the fold
    /// `battlelog replay --at` shows, per participant.
    fn state_section(&self) -> Markup {
        let lang = self.lang;
        let Some(last) = self.lines.last().map(|line| line.version) else {
            return html! {};
        };
        let at = self.view.at.map_or(last, |at| at.min(last));
        html! {
            section #state aria-labelledby="state-heading" {
                h2 #state-heading { (lang.t("state_at")) " #v" (at) }
                @match explain::state_at(self.lines, at) {
                    Ok(state) => (explain::state_panel(lang, &state)),
                    Err(error) => p.muted { (lang.t("state_unavailable")) ": " span lang="en" { (error.to_string()) } },
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
                dt { (lang.t("ruleset")) } dd { code { (text(opened, "ruleset")) } }
                dt { (lang.t("participants")) } dd { span.forum-text translate="no" { (participants.join(", ")) } }
                dt { (lang.t("forum_ref")) } dd { (forum_ref(text(opened, "forum_ref"))) }
                dt { (lang.t("client_seed")) } dd { code.hash.forum-text { (text(opened, "client_seed")) } }
                dt { (lang.t("tenant")) } dd { code { (text(opened, "tenant")) } }
                dt { (lang.t("status")) } dd id="battle-status" { (lang.t(if closed { "closed" } else { "open" })) }
                @if let Some(deadline) = &self.appeal_deadline {
                    dt { (lang.t("appeal_deadline")) } dd #appeal-deadline { (deadline) }
                }
                dt { (lang.t("events")) } dd { (self.lines.len()) }
                dt { (lang.t("head")) } dd { code.hash id="head-hash" { (self.report.head_hash) } }
            }
        }
    }

    fn verification(&self, shown: &dyn Fn(u64) -> bool) -> Markup {
        let lang = self.lang;
        html! {
            section #verification {
                h2 { (lang.t("verification")) }
                p { span #first-failure {} span { " ← " (lang.t("first_failure")) } }
                h3 { (lang.t("checks")) }
                ul #checks {}
                (roller_key_fields(lang, self.trusted_roller_keys))
                (log_key_fields(lang, self.trusted_log_keys))
                (checkpoint_to_keep(lang, self.checkpoint_note))
                p.field {
                    label for="posted-head" { (lang.t("posted_head_battle")) }
                    input #posted-head type="text" spellcheck="false" autocomplete="off"
                        value=[self.view.head.as_deref()];
                }
                ul #client-problems .problems {}
                noscript { p { (prose(lang.t("no_js"))) } }
                // Counted in events, not in problems: one edited die is one
                // event, however many findings say so.
                @let at: std::collections::BTreeSet<u64> = self.report.findings.iter().map(|f| f.version).collect();
                p.muted.server-audit data-findings=(self.report.findings.len()) {
                    (lang.t("server_audit")) ": "
                    @if at.is_empty() { (lang.t("findings_none")) } @else {
                        (lang.t("findings_at")) " "
                        (lang.count(u64::try_from(at.len()).unwrap_or(u64::MAX), ["event", "events", "событию", "событиям", "событиям"]))
                    }
                }
                @if !self.report.findings.is_empty() {
                    // In the page's language (crate::reasons), values as code.
                    ul.problems #server-findings {
                        @for finding in &self.report.findings {
                            li { a href=(self.version_href(finding.version, Some(shown))) { "v" (finding.version) } " "
                                (crate::reasons::finding(lang, &finding.problem)) }
                        }
                    }
                }
            }
        }
    }

    fn commitments(&self, shown: &dyn Fn(u64) -> bool) -> Markup {
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
            // Hashes are long: the table scrolls in its own box on a phone,
            // never the page (the box holds links, so a keyboard reaches
            // it; the other tables wrap instead).
            div.scroll-box {
                table.changes #commitments {
                    tr { th { (lang.t("epoch")) } th { (lang.t("commitment")) } th { (lang.t("signature")) } th { (lang.t("seed")) } }
                    @for (epoch, (version, event, seed)) in &epochs {
                        tr data-epoch=(epoch) {
                            td { a href=(self.version_href(*version, Some(shown))) { (epoch) } }
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
    }

    /// A link to the event at `version`: on this page `#v<N>`, else the
    /// page holding it (`?v=N#vN`, the search dropped so that it shows).
    fn version_href(&self, version: u64, shown: Option<&dyn Fn(u64) -> bool>) -> String {
        match shown {
            Some(shown) if shown(version) => format!("#v{version}"),
            _ => format!("?{}&v={version}#v{version}", self.base_query(self.lang)),
        }
    }

    fn links(&self) -> Links<'_> {
        let roll_versions = self
            .lines
            .iter()
            .filter(|line| line.event_type == "DiceRolled")
            .filter_map(|line| Some((number(&line.event, "nonce")?, line.version)))
            .collect();
        let mut disputes_of: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
        for dispute in &self.report.disputes {
            disputes_of.entry(dispute.contests).or_default().push(dispute.version);
        }
        let mut rulings_of: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
        for ruling in &self.report.rulings {
            rulings_of.entry(ruling.contests).or_default().push(ruling.version);
        }
        // A berserk@2 strike's version → the exchange choice answering it.
        let choices = self
            .lines
            .iter()
            .filter(|line| action_type(&line.event) == Some("exchange_choice"))
            .filter_map(|line| Some((number(action_of(&line.event), "against")?, line.version)))
            .collect();
        Links {
            roll_versions,
            disputes_of,
            rulings_of,
            rulings: self.report.rulings.iter().map(|r| (r.version, r)).collect(),
            choices,
            finals: final_outcomes(&self.report.rulings),
            answered_by: answered_by(&self.report.rulings),
            affected: affected(&self.report.rulings),
            closed_at: self.lines.iter().find(|line| line.event_type == "BattleClosed").map(|line| line.version),
            explained: explain::fold(self.lines, None).ok(),
        }
    }

    fn search_form(&self, window: &window::Window) -> Markup {
        let lang = self.lang;
        let view = self.view;
        let actors: std::collections::BTreeSet<&str> =
            self.lines.iter().filter_map(|line| window::actor_of(&line.event)).collect();
        let types = [
            "BattleOpened",
            "DiceRolled",
            "ActionResolved",
            "DisputeRaised",
            "JudgeRuling",
            "SeedCommitted",
            "SeedRevealed",
            "BattleClosed",
        ];
        html! {
            form #search method="get" action="#timeline" role="search" {
                h3 { (lang.t("filter")) }
                @if let Some(key) = self.share_key { input type="hidden" name="k" value=(key); }
                input type="hidden" name="lang" value=(lang.code());
                span.field { label for="search-actor" { (lang.t("filter_actor")) }
                    input #search-actor name="actor" type="text" list="actors" value=[view.actor.as_deref()]; }
                datalist #actors { @for actor in &actors { option value=(actor) {} } }
                span.field { label for="search-q" { (lang.t("filter_text")) }
                    input #search-q name="q" type="search" value=[view.q.as_deref()]; }
                span.field.check { input #search-disputed name="disputed" type="checkbox" value="1" checked[view.disputed];
                    label for="search-disputed" { (lang.t("filter_disputed")) } }
                span.field { label for="search-type" { (lang.t("filter_type")) }
                    select #search-type name="type" {
                        option value="" { (lang.t("filter_any")) }
                        @for t in types {
                            option value=(t) selected[view.event_type.as_deref() == Some(t)] { (type_label(lang, t)) }
                        }
                    } }
                span.field { label for="search-from" { (lang.t("filter_from")) }
                    input #search-from name="from" type="number" min="0" value=[view.from]; }
                span.field { label for="search-to" { (lang.t("filter_to")) }
                    input #search-to name="to" type="number" min="0" value=[view.to]; }
                button type="submit" { (lang.t("filter_apply")) }
                @if view.filtered() {
                    " " a href={ (self.self_link(lang)) "#timeline" } { (lang.t("filter_clear")) }
                    p.muted #matching {
                        (lang.count(u64::try_from(window.matching).unwrap_or(u64::MAX), ["matching entry", "matching entries", "подходящая запись", "подходящие записи", "подходящих записей"]))
                    }
                }
            }
        }
    }

    /// Previous and next page; the one above the timeline is the
    /// navigation landmark, the one below repeats it (one landmark, so a
    /// screen reader's list of them holds no twins).
    fn pager(&self, window: &window::Window, landmark: bool) -> Markup {
        let lang = self.lang;
        let links = html! {
            @if window.page > 1 {
                a rel="prev" href=(self.page_link(window.page - 1)) { "← " (lang.t("prev_page")) }
            }
            span aria-current="page" { (lang.t("page")) " " (window.page) " " (lang.t("of")) " " (window.pages) }
            @if window.page < window.pages {
                a rel="next" href=(self.page_link(window.page + 1)) { (lang.t("next_page")) " →" }
            }
        };
        html! {
            @if window.pages > 1 {
                @if landmark {
                    nav.pager aria-label=(lang.t("pages")) { (links) }
                } @else {
                    div.pager { (links) }
                }
            }
        }
    }

    fn timeline(&self, window: &window::Window) -> Markup {
        let links = self.links();
        let shown = |version: u64| window.shows(self.lines, version);
        html! {
            section #timeline-section tabindex="-1" aria-labelledby="timeline-heading" {
                h2 #timeline-heading { (self.lang.t("timeline")) }
                (self.search_form(window))
                p.muted #keys-hint { (prose(self.lang.t("keys_hint"))) }
                (self.pager(window, true))
                @if window.items.is_empty() {
                    p.muted { (self.lang.t("nothing_matches")) }
                }
                ol.timeline #timeline tabindex="-1" {
                    @for item in &window.items {
                        (self.event(&self.lines[item.line], &item.nested, &links, &shown))
                    }
                }
                (self.pager(window, false))
            }
        }
    }

    /// Who caused an event (the recorded credential) and when it was
    /// journaled.
    fn who_and_when(&self, line: &ExportLine) -> Markup {
        let lang = self.lang;
        let who = record::credential(line);
        let command = !matches!(line.event_type.as_str(), "DiceRolled" | "SeedCommitted");
        html! {
            p.muted.who-when {
                @if let Some((machine, readable)) = record::time(line.recorded_at_unix_micros) {
                    (lang.t("recorded_at")) " " time datetime=(machine) { (readable) }
                }
                @if let Some(who) = &who {
                    " · " (lang.t("by_credential")) " "
                    span.credential data-subject=(who.subject) data-role=(who.role) {
                        span.forum-text translate="no" { (who.subject) } " (" (lang.role(&who.role)) ")"
                    }
                } @else if command && line.event_type != "SeedRevealed" {
                    " · " span.credential { (lang.t("no_credential")) }
                }
            }
        }
    }

    fn event(&self, line: &ExportLine, nested: &[usize], links: &Links<'_>, shown: &dyn Fn(u64) -> bool) -> Markup {
        let lang = self.lang;
        let version = line.version;
        html! {
            li.event id={ "v" (version) } data-version=(version) data-type=(line.event_type)
                data-affected-by=[affected_by_attr(links, version)] {
                h3 {
                    span.event-title { (self.title(line)) }
                    // An action's one tab stop is its "more" disclosure,
                    // which holds this link too (issue 39).
                    a.permalink href={ "#v" (version) } tabindex=[(line.event_type == "ActionResolved").then_some("-1")] { "#v" (version) }
                }
                (self.who_and_when(line))
                (self.body(line, nested, links, shown))
                @if let Some(disputes) = links.disputes_of.get(&version) {
                    p.muted.contested {
                        (lang.t("contested_by")) " "
                        @for (i, v) in disputes.iter().enumerate() {
                            @if i > 0 { ", " }
                            a href=(self.version_href(*v, Some(shown))) { "#v" (v) }
                        }
                    }
                }
                @if let Some(rulings) = links.rulings_of.get(&version) {
                    p.muted.ruled {
                        (lang.t("ruled_by")) " "
                        @for (i, v) in rulings.iter().enumerate() {
                            @if i > 0 { ", " }
                            a href=(self.version_href(*v, Some(shown))) { "#v" (v) }
                        }
                    }
                }
            }
        }
    }

    fn title(&self, line: &ExportLine) -> &'static str {
        let lang = self.lang;
        match line.event_type.as_str() {
            "BattleOpened" => lang.t("opened"),
            "DiceRolled" => lang.t("roll"),
            "ActionResolved" => lang.t("action"),
            "DisputeRaised" => lang.t("dispute"),
            "JudgeRuling" => lang.t("ruling"),
            "BattleClosed" => lang.t("closed_title"),
            "SeedRevealed" => lang.t("seed_revealed"),
            "SeedCommitted" => lang.t("seed_committed"),
            _ => "?",
        }
    }

    /// An event's content, by its type.
    fn body(&self, line: &ExportLine, nested: &[usize], links: &Links<'_>, shown: &dyn Fn(u64) -> bool) -> Markup {
        let lang = self.lang;
        let event = &line.event;
        html! {
            @match line.event_type.as_str() {
                "BattleOpened" => {
                    p { span.forum-text data-summary="title" translate="no" { (text(event, "title")) } " · " code { (text(event, "ruleset")) } }
                    (self.sheets(event))
                }
                "DiceRolled" => {
                    (roll(event, lang))
                    (self.calculation(line, false))
                }
                "ActionResolved" => (self.action_body(line, nested, links, shown)),
                "DisputeRaised" => {
                    p { (lang.t("dispute_for")) " " span.forum-text translate="no" { (text(event, "by")) } " · "
                        (lang.t("dispute_on")) " " (self.refers(event, shown)) }
                    p { (lang.t("reason")) ": " span.forum-text data-summary="reason" { (text(event, "reason")) } }
                    (self.dispute_answer(line.version, links, shown))
                }
                "JudgeRuling" => (self.ruling_body(line, links, shown)),
                "BattleClosed" => {
                    // The identity is the credential (above); `by` is the
                    // closer's free text, a note.
                    p { (lang.t("reason")) ": " span.forum-text data-summary="reason" { (text(event, "reason")) } }
                    @if !text(event, "by").is_empty() {
                        p.muted.close-note { (lang.t("note")) ": " span.forum-text translate="no" { (text(event, "by")) } }
                    }
                }
                "SeedRevealed" => {
                    p { (lang.t("epoch")) " " (number(event, "epoch").unwrap_or_default()) ": " code.hash { (text(event, "server_seed")) } }
                }
                "SeedCommitted" => {
                    p { (lang.t("epoch")) " " (number(event, "epoch").unwrap_or_default()) ": " code.hash { (text(event, "commitment")) } }
                }
                _ => {
                    pre translate="no" { code { (event.to_string()) } }
                }
            }
        }
    }

    /// The link to the version a dispute or ruling `refers_to`, if any.
    fn refers(&self, event: &Value, shown: &dyn Fn(u64) -> bool) -> Markup {
        html! {
            @if let Some(v) = number(event, "refers_to") {
                a.refers href=(self.version_href(v, Some(shown))) { "#v" (v) }
            }
        }
    }

    /// An action: its summary, what rulings made of it, the rolls it used
    /// (drawn inside it, or linked), its links to a berserk exchange, why
    /// its result is what it is, and the rest behind "more".
    fn action_body(
        &self,
        line: &ExportLine,
        nested: &[usize],
        links: &Links<'_>,
        shown: &dyn Fn(u64) -> bool,
    ) -> Markup {
        let lang = self.lang;
        let event = &line.event;
        let summary_field = match lang {
            Lang::En => "summary_en",
            Lang::Ru => "summary_ru",
        };
        html! {
            p.summary lang=(lang.code()) data-summary=(summary_field) { (summary_markup(text(event, summary_field))) }
            @if let Some(fields) = links.finals.get(&line.version) {
                (self.overridden(fields, shown))
            }
            @if let Some(rulings) = links.affected.get(&line.version) {
                (self.affected_note(rulings, shown))
            }
            @for &i in nested {
                (self.nested_roll(&self.lines[i], event.get("action")))
            }
            (self.rolls_used_elsewhere(event, nested, links, shown))
            (self.exchange_links(line, links, shown))
            // Why the result is what it is: dice, modifiers, the rule's
            // row, what changed (crate::explain).
            @if let Some(why) = links.explained.as_ref().and_then(|folded| folded.explanations.get(&line.version)) {
                (explain::action(lang, why))
            }
            (self.action_more(line, nested))
        }
    }

    /// Rolls an action used that are not drawn inside it (another action
    /// drew it first, or it is missing): linked.
    fn rolls_used_elsewhere(
        &self,
        event: &Value,
        nested: &[usize],
        links: &Links<'_>,
        shown: &dyn Fn(u64) -> bool,
    ) -> Markup {
        let lang = self.lang;
        let inside: Vec<u64> = nested.iter().filter_map(|&i| number(&self.lines[i].event, "nonce")).collect();
        let outside: Vec<u64> = event
            .get("rolls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_u64)
            .filter(|n| !inside.contains(n))
            .collect();
        html! {
            @if !outside.is_empty() {
                p.muted { (lang.t("dice_used")) ": "
                    @for nonce in outside {
                        @match links.roll_versions.get(&nonce) {
                            Some(version) => { a href=(self.version_href(*version, Some(shown))) { (lang.t("nonce")) " " (nonce) } " " },
                            None => { (lang.t("nonce")) " " (nonce) " " },
                        }
                    }
                }
            }
        }
    }

    /// berserk@2 (docs/rules.md §6.3): a strike whose row lets the side
    /// that rolled higher choose, and the choice that answers it, link
    /// each other.
    fn exchange_links(&self, line: &ExportLine, links: &Links<'_>, shown: &dyn Fn(u64) -> bool) -> Markup {
        let lang = self.lang;
        let event = &line.event;
        html! {
            @if let Some(strike) = number(action_of(event), "against").filter(|_| action_type(event) == Some("exchange_choice")) {
                p.muted.exchange { (lang.t("answers_strike")) " " a.refers href=(self.version_href(strike, Some(shown))) { "#v" (strike) } }
            }
            @if let Some(side) = event.get("outcome").and_then(|o| o.get("pending_choice")).and_then(Value::as_str) {
                p.muted.pending-choice {
                    (lang.t("awaits_choice")) " " (lang.t(if side == "attacker" { "attacker" } else { "defender" }))
                    @if let Some(choice) = links.choices.get(&line.version) {
                        " · " (lang.t("choice_made")) " " a href=(self.version_href(*choice, Some(shown))) { "#v" (choice) }
                    }
                }
            }
        }
    }

    /// Everything else about an action behind one disclosure: its link,
    /// each roll's calculation, the state after it and the recorded fields
    /// — one tab stop per action.
    fn action_more(&self, line: &ExportLine, nested: &[usize]) -> Markup {
        let lang = self.lang;
        let event = &line.event;
        html! {
            details.more {
                summary { (lang.t("more_about_action")) " #v" (line.version) }
                p.muted.action-link { a href={ "#v" (line.version) } { (lang.t("link_to_action")) " #v" (line.version) } }
                @for &i in nested {
                    @let roll_version = self.lines[i].version;
                    p.muted.calc-more { a href=(self.calc_href(roll_version)) { (lang.t("show_calculation")) " #v" (roll_version) } }
                }
                p.muted.state-link { a href={ "?" (self.base_query(lang)) "&at=" (line.version) "&v=" (line.version) "#state" } { (lang.t("state_after")) } }
                // The recorded action and outcome, field by field.
                (fields_table(lang, lang.t("action_fields"), event.get("action")))
                (fields_table(lang, lang.t("outcome_fields"), event.get("outcome")))
            }
        }
    }

    /// A ruling: the judge, what it rules on, whether it came after the
    /// close, its text, the dispute it answers, what its override changed
    /// (or plainly that it changed nothing) and the actions it reaches.
    fn ruling_body(&self, line: &ExportLine, links: &Links<'_>, shown: &dyn Fn(u64) -> bool) -> Markup {
        let lang = self.lang;
        let event = &line.event;
        let ruling = links.rulings.get(&line.version).copied();
        html! {
            p { (lang.t("judge")) ": " span.judge.forum-text translate="no" { (text(event, "judge")) }
                " · " (lang.t("on")) " " (self.refers(event, shown)) }
            @if let Some(closed) = links.closed_at.filter(|closed| *closed < line.version) {
                p.after-close { strong { (lang.t("after_close")) } " (" a href=(self.version_href(closed, Some(shown))) { "#v" (closed) } ")" }
            }
            blockquote.forum-text data-summary="text" { (text(event, "text")) }
            (self.ruling_answers(event, shown))
            (self.ruling_changes(event, ruling))
            @if let Some(ruling) = ruling.filter(|r| !r.affected.is_empty()) {
                p.ruling-reaches {
                    (lang.t("ruling_reaches")) " "
                    @for (i, a) in ruling.affected.iter().enumerate() {
                        @if i > 0 { ", " }
                        a href=(self.version_href(a.version, Some(shown))) { "#v" (a.version) }
                    }
                }
            }
        }
    }

    /// What a ruling's override changed, field by field; or, plainly, not
    /// as an aside, that it changed nothing (a judge reading "paralysis
    /// lifted" must see that the record says otherwise).
    fn ruling_changes(&self, event: &Value, ruling: Option<&RulingSeen>) -> Markup {
        let lang = self.lang;
        html! {
            @match ruling.map(|r| real_changes(&r.changes)).filter(|changes| !changes.is_empty()) {
                Some(changes) => table.changes.override {
                    tr { th { (lang.t("field")) } th { (lang.t("before")) } th { (lang.t("after")) } }
                    @for change in changes {
                        tr data-field=(change.field) {
                            td { (field_name(lang, &change.field)) }
                            td.before { (value(lang, &change.field, &change.before)) }
                            td.after { (value(lang, &change.field, &change.after)) }
                        }
                    }
                },
                None => p.ruling-effect data-ruling-effect="none" role="note" {
                    strong { (lang.t(if event.get("override").is_some_and(|o| !o.is_null()) {
                        "override_changes_nothing"
                    } else {
                        "ruling_without_override"
                    })) }
                },
            }
        }
    }

    /// A roll drawn inside the action that used it: its own event element
    /// (the contract's id, version, type and class), a smaller heading.
    fn nested_roll(&self, line: &ExportLine, action: Option<&Value>) -> Markup {
        let lang = self.lang;
        html! {
            div.event.nested id={ "v" (line.version) } data-version=(line.version) data-type=(line.event_type) {
                h4 {
                    span.event-title { (lang.t("roll")) }
                    a.permalink href={ "#v" (line.version) } tabindex="-1" { "#v" (line.version) }
                }
                (self.who_and_when(line))
                (roll_for(&line.event, lang, action))
                (self.calculation(line, true))
            }
        }
    }

    /// An action a ruling changed: its final outcome, the recorded value
    /// struck through, each linked to the ruling that set it.
    fn overridden(&self, fields: &[FinalField], shown: &dyn Fn(u64) -> bool) -> Markup {
        let lang = self.lang;
        html! {
            div.final-outcome {
                p { strong { (lang.t("final_outcome")) } }
                ul {
                    @for f in fields {
                        li data-field=(f.field) {
                            (field_name(lang, &f.field)) ": "
                            del.recorded { (value(lang, &f.field, &f.recorded)) } " "
                            ins.final { (value(lang, &f.field, &f.last)) }
                            " (" a.ruling href=(self.version_href(f.ruling, Some(shown))) { (lang.t("ruling")) " #v" (f.ruling) } ")"
                        }
                    }
                }
            }
        }
    }

    /// The disputes panel (issue 39), right after the verdict: every
    /// dispute, what it contests, who raised it and when, and whether a
    /// ruling answers it (`data-status="open"` or `"answered"`, with a link
    /// to the ruling); the appeal deadline when the battle has one.
    fn disputes_panel(&self, shown: &dyn Fn(u64) -> bool) -> Markup {
        let lang = self.lang;
        let answered = answered_by(&self.report.rulings);
        let disputes = &self.report.disputes;
        let open = disputes.iter().filter(|d| !answered.contains_key(&d.version)).count();
        html! {
            section #disputes .disputes aria-labelledby="disputes-heading" data-labels=(self.dispute_labels()) {
                h2 #disputes-heading { (lang.t("disputes_heading")) }
                // An open battle's page adds disputes and answers as they are
                // journaled (pages/battle.js, `data-labels`): the count and
                // the list are there, hidden, before the first dispute.
                p.muted #no-disputes hidden[!disputes.is_empty()] { (lang.t("no_disputes")) }
                p #disputes-count hidden[disputes.is_empty()] {
                    (lang.t("disputes_open")) ": " strong.open-count { (open) } " · " (lang.t("disputes_answered")) ": " strong.answered-count { (disputes.len() - open) }
                }
                    ul.dispute-list {
                        @for dispute in disputes {
                            @let rulings = answered.get(&dispute.version);
                            li.dispute data-dispute-version=(dispute.version) data-status=(if rulings.is_some() { "answered" } else { "open" }) {
                                strong.dispute-status { (lang.t(if rulings.is_some() { "dispute_answered" } else { "dispute_open" })) }
                                " " a.dispute-link href=(self.version_href(dispute.version, Some(shown))) { (lang.t("dispute")) " #v" (dispute.version) }
                                " · " (lang.t("dispute_contests")) " "
                                a.contests href=(self.version_href(dispute.contests, Some(shown))) { (self.title_at(dispute.contests)) " #v" (dispute.contests) }
                                br;
                                (lang.t("dispute_raised_by")) " " span.forum-text translate="no" { (dispute.party) }
                                @if let Some(by) = &dispute.by {
                                    " (" span.forum-text translate="no" { (by.subject) } ", " (lang.role(&by.role)) ")"
                                }
                                @if let Some((machine, readable)) = self.line_at(dispute.version).and_then(|l| record::time(l.recorded_at_unix_micros)) {
                                    " · " time datetime=(machine) { (readable) }
                                }
                                br;
                                @match rulings {
                                    Some(rulings) => {
                                        (lang.t("answered_by")) " "
                                        @for (i, v) in rulings.iter().enumerate() {
                                            @if i > 0 { ", " }
                                            a.answer href=(self.version_href(*v, Some(shown))) { (lang.t("ruling")) " #v" (v) }
                                        }
                                    }
                                    None => span.awaiting { (lang.t("no_ruling_answers")) },
                                }
                            }
                        }
                    }
                @if let Some(deadline) = &self.appeal_deadline {
                    p #disputes-deadline { (lang.t("appeal_deadline")) ": " strong { (deadline) } }
                }
            }
        }
    }

    /// The panel's words for what pages/battle.js adds live (a dispute, an
    /// answer), as JSON: the page's language lives in i18n.rs only.
    fn dispute_labels(&self) -> String {
        let lang = self.lang;
        let keys = [
            "dispute_open",
            "dispute_answered",
            "dispute",
            "dispute_contests",
            "dispute_raised_by",
            "answered_by",
            "ruling",
            "no_ruling_answers",
        ];
        let labels: serde_json::Map<String, Value> =
            keys.iter().map(|key| ((*key).to_owned(), Value::from(lang.t(key)))).collect();
        Value::Object(labels).to_string()
    }

    /// Under a dispute in the timeline: the rulings answering it, or that
    /// none does yet.
    fn dispute_answer(&self, version: u64, links: &Links<'_>, shown: &dyn Fn(u64) -> bool) -> Markup {
        let lang = self.lang;
        html! {
            @match links.answered_by.get(&version) {
                Some(rulings) => p.dispute-answer data-status="answered" {
                    (lang.t("answered_by")) " "
                    @for (i, v) in rulings.iter().enumerate() {
                        @if i > 0 { ", " }
                        a.answer href=(self.version_href(*v, Some(shown))) { (lang.t("ruling")) " #v" (v) }
                    }
                },
                None => p.dispute-answer data-status="open" { strong { (lang.t("no_ruling_answers")) } },
            }
        }
    }

    /// Under a ruling: the dispute it answers, or that it names none (every
    /// ruling recorded before rulings could say so).
    fn ruling_answers(&self, event: &Value, shown: &dyn Fn(u64) -> bool) -> Markup {
        let lang = self.lang;
        let dispute = number(event, "answers_dispute");
        let is_dispute = |v: u64| self.report.disputes.iter().any(|d| d.version == v);
        html! {
            @match dispute {
                Some(v) if is_dispute(v) => p.answers data-answers-dispute=(v) {
                    (lang.t("answers_dispute")) " " a.answers-link href=(self.version_href(v, Some(shown))) { (lang.t("dispute")) " #v" (v) }
                },
                Some(v) => p.answers data-answers-dispute=(v) {
                    (lang.t("answers_not_a_dispute")) " #v" (v)
                },
                None => p.answers.muted data-answers-dispute="none" { (lang.t("answers_no_dispute")) },
            }
        }
    }

    /// On an action a later ruling reaches: which ruling, on which action,
    /// and what this action gives when resolved again with the ruling's
    /// value (or that the rules no longer allow it).
    fn affected_note(&self, rulings: &[(u64, &AffectedAction)], shown: &dyn Fn(u64) -> bool) -> Markup {
        let lang = self.lang;
        html! {
            @for (ruling, affected) in rulings {
                @let contests = self.report.rulings.iter().find(|r| r.version == *ruling).map(|r| r.contests);
                div.affected-note role="note" data-ruling=(ruling) {
                    p {
                        strong { (lang.t("affected_by_ruling")) " " a href=(self.version_href(*ruling, Some(shown))) { (lang.t("ruling")) " #v" (ruling) } }
                        @if let Some(contests) = contests {
                            " (" (lang.t("affected_on")) " " a href=(self.version_href(contests, Some(shown))) { "#v" (contests) } ")"
                        }
                        ". " (lang.t("affected_explained"))
                    }
                    @if let Some(reason) = &affected.refused {
                        p { (lang.t("affected_refused")) ": " span lang="en" { (reason) } }
                    } @else {
                        ul {
                            @for change in &affected.changes {
                                li data-field=(change.field) {
                                    (field_name(lang, &change.field)) ": "
                                    (lang.t("recorded_value")) " " del.recorded { (value(lang, &change.field, &change.before)) } " → "
                                    (lang.t("affected_again")) " " ins.again { (value(lang, &change.field, &change.after)) }
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /// The line of `version`, when the export has it.
    fn line_at(&self, version: u64) -> Option<&ExportLine> {
        match self.lines.binary_search_by_key(&version, |line| line.version) {
            Ok(index) => self.lines.get(index),
            Err(_) => self.lines.iter().find(|line| line.version == version),
        }
    }

    /// The title of the event at `version` ("Action", "Roll"…).
    fn title_at(&self, version: u64) -> &'static str {
        self.line_at(version).map_or("", |line| self.title(line))
    }

    /// Every participant's sheet as the battle opened with it.
    fn sheets(&self, opened: &Value) -> Markup {
        let lang = self.lang;
        // A sheet that is only a name says nothing the participants list
        // does not.
        let participants: Vec<Value> = opened
            .get("participants")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|p| p.as_object().is_some_and(|fields| fields.keys().any(|k| k != "id")))
            .cloned()
            .collect();
        html! {
            @if !participants.is_empty() {
                details.sheets open[participants.len() <= 4] {
                    summary { (lang.t("sheets")) }
                    @for participant in &participants {
                        table.changes.sheet data-participant=(plain(participant.get("id").unwrap_or(&Value::Null))) {
                            caption { (lang.t("sheet_of")) " " span.forum-text translate="no" { (plain(participant.get("id").unwrap_or(&Value::Null))) } }
                            @for (key, v) in participant.as_object().into_iter().flatten().filter(|(k, _)| *k != "id") {
                                tr { th scope="row" { (field_name(lang, key)) } td { (value(lang, key, v)) } }
                            }
                        }
                    }
                }
            }
        }
    }

    /// `?view=final`: every action's final outcome after all rulings.
    fn final_view(&self) -> Markup {
        let lang = self.lang;
        let finals = final_outcomes(&self.report.rulings);
        let affected = affected(&self.report.rulings);
        let answered = answered_by(&self.report.rulings);
        let summary_field = match lang {
            Lang::En => "summary_en",
            Lang::Ru => "summary_ru",
        };
        html! {
            section #final-view {
                h2 { (lang.t("final_view")) }
                p.muted { (lang.t("final_view_intro")) }
                ol.final-list {
                    @for line in self.lines.iter().filter(|line| line.event_type == "ActionResolved") {
                        li data-action=(line.version) {
                            a href=(self.version_href(line.version, None)) { "#v" (line.version) } " "
                            span lang=(lang.code()) { (summary_markup(text(&line.event, summary_field))) } " — "
                            @match finals.get(&line.version) {
                                Some(fields) => (self.overridden(fields, &|_| false)),
                                None if !affected.contains_key(&line.version) => span.muted { (lang.t("as_recorded")) },
                                None => {}
                            }
                            @if let Some(rulings) = affected.get(&line.version) {
                                (self.affected_note(rulings, &|_| false))
                            }
                            // "Stands as recorded" is not the last word while a
                            // dispute of it waits for a ruling (issue 39).
                            @let open: Vec<u64> = self.report.disputes.iter()
                                .filter(|d| d.contests == line.version && !answered.contains_key(&d.version))
                                .map(|d| d.version).collect();
                            @if !open.is_empty() {
                                " " strong.open-dispute {
                                    (lang.t("open_dispute_of_action")) " "
                                    @for (i, v) in open.iter().enumerate() {
                                        @if i > 0 { ", " }
                                        a href=(self.version_href(*v, None)) { "#v" (v) }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The verdict a judge reads first (issue 39): `#verdict[data-verdict]`,
/// its headline, why in plain words and the technical detail a click away,
/// filled by the verifier (web/verifier/verdict.js); until then it says it
/// is checking (or, on `/verify`, waiting for a file), and without
/// JavaScript that nothing is checked here.
pub(crate) fn verdict_banner(lang: Lang, idle: bool) -> Markup {
    html! {
        section #verdict .verdict data-verdict=(if idle { "idle" } else { "pending" }) aria-live="polite" aria-labelledby="verdict-heading" {
            h2 #verdict-heading .sr-only { (lang.t("verdict_heading")) }
            p #verdict-headline { (lang.t(if idle { "verify_idle" } else { "verify_pending" })) }
            p #verdict-why {}
            details #verdict-details hidden {
                summary { (lang.t("verdict_details")) }
                ul #verdict-technical {}
                p { a href="#verification" { (lang.t("checks")) } }
            }
            noscript { p { (prose(lang.t("no_js"))) } }
        }
    }
}

/// The roller key fields every verifying page has: the trusted keys (JSON,
/// for the verifier), the key that signed and whether it matches (both
/// filled by the verifier).
pub(crate) fn roller_key_fields(lang: Lang, trusted: &[String]) -> Markup {
    html! {
        dl.facts.roller-keys {
            dt { (lang.t("roller_key_signed")) } dd { code.hash #roller-key {} " " span #roller-key-status {} }
            dt { (lang.t("roller_key_trusted")) } dd #roller-keys-pinned {
                @if trusted.is_empty() { (lang.t("none_trusted")) }
                @for key in trusted { code.hash { (key) } " " }
            }
        }
    }
}

/// The log key fields every verifying page has: the key that signed the
/// trailer and whether it is the site's (both filled by the verifier), and
/// the key the site publishes.
pub(crate) fn log_key_fields(lang: Lang, trusted: &[String]) -> Markup {
    html! {
        dl.facts.log-keys {
            dt { (lang.t("log_key_signed")) } dd { code.hash #log-key {} " " span #log-key-status {} }
            dt { (lang.t("log_key_trusted")) } dd {
                @if trusted.is_empty() { (lang.t("log_key_unknown")) }
                @for key in trusted { code.hash translate="no" { (key) } " " }
            }
        }
    }
}

/// The signed checkpoint a judge should keep (the trailer's), with a copy
/// button (the page's script copies it) and why to keep it; or a line
/// saying the export came without one.
fn checkpoint_to_keep(lang: Lang, note: Option<&str>) -> Markup {
    html! {
        section #checkpoint aria-labelledby="checkpoint-heading" {
            h3 #checkpoint-heading { (lang.t("checkpoint_keep")) }
            @match note {
                Some(note) => {
                    p #checkpoint-why { (prose(lang.t("checkpoint_keep_why"))) }
                    pre #checkpoint-note translate="no" { (note) }
                    button #copy-checkpoint type="button" aria-controls="checkpoint-note" { (lang.t("copy")) }
                }
                None => p.muted #no-checkpoint { (lang.t("no_checkpoint")) },
            }
        }
    }
}

/// The notice for a `?lang=` the pages do not have.
pub fn lang_notice(lang: Lang, unknown: Option<&str>) -> Markup {
    html! {
        @if let Some(code) = unknown {
            p.notice #lang-notice role="status" {
                (lang.t("lang_unknown")) " " code translate="no" { (code) }
            }
        }
    }
}

/// An event type as the search lists it.
fn type_label(lang: Lang, event_type: &str) -> &'static str {
    match event_type {
        "BattleOpened" => lang.t("type_BattleOpened"),
        "SeedCommitted" => lang.t("type_SeedCommitted"),
        "DiceRolled" => lang.t("type_DiceRolled"),
        "ActionResolved" => lang.t("type_ActionResolved"),
        "DisputeRaised" => lang.t("type_DisputeRaised"),
        "JudgeRuling" => lang.t("type_JudgeRuling"),
        "BattleClosed" => lang.t("type_BattleClosed"),
        _ => lang.t("type_SeedRevealed"),
    }
}

/// An action's or outcome's fields as a table with translated names.
fn fields_table(lang: Lang, caption: &str, fields: Option<&Value>) -> Markup {
    html! {
        @if let Some(fields) = fields.and_then(Value::as_object).filter(|f| !f.is_empty()) {
            table.changes.fields {
                caption { (caption) }
                @for (key, v) in fields {
                    tr { th scope="row" { (field_name(lang, key)) } td { (value(lang, key, v)) } }
                }
            }
        }
    }
}

/// A query value, percent-encoded (the search's free text).
fn encode(value: &str) -> String {
    let mut out = String::new();
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || b"-_.~".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests;
