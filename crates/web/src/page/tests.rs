//! The battle page rendered from a real export (the verifier's fixture, a
//! demo Pokémon battle `battlelog demo` played and closed): expected values
//! are read from that export, not from the page.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use battlelog_verify::judging::{AffectedAction, Author, DisputeSeen, FieldChange, RulingSeen};
use battlelog_verify::{AuditReport, AuditedRecord};
use serde_json::{Value, json};

use super::*;

const FIXTURE: &str = include_str!("../../../../web/verifier/test/fixtures/demo-pokemon-closed.jsonl");

fn lines() -> Vec<ExportLine> {
    FIXTURE.lines().filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str(l).expect("line")).collect()
}

fn report(lines: &[ExportLine]) -> AuditReport {
    let records: Vec<AuditedRecord> = lines
        .iter()
        .map(|line| AuditedRecord {
            stream: line.stream.clone(),
            version: line.version,
            hash: hex_bytes(&line.hash),
            record: BASE64.decode(&line.record).expect("base64"),
            event: Some(line.event.clone()),
        })
        .collect();
    battlelog_verify::audit(&lines[0].stream, &records)
}

fn hex_bytes(hex: &str) -> Vec<u8> {
    (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex")).collect()
}

struct Rendered {
    html: String,
}

fn render_with(lines: &[ExportLine], report: &AuditReport, lang: Lang, view: &View, per_page: usize) -> Rendered {
    let page = BattlePage {
        battle_id: &lines[0].stream,
        lines,
        report,
        lang,
        unknown_lang: None,
        share_key: None,
        trusted_roller_keys: &[],
        trusted_log_keys: &[],
        checkpoint_note: None,
        appeal_deadline: None,
        view,
        page_events: per_page,
    };
    Rendered { html: page.render().into_string() }
}

impl Rendered {
    /// The HTML of the timeline entry holding `id="v<version>"`, up to
    /// the next entry (or the timeline's end).
    fn entry(&self, version: u64) -> &str {
        let at = self.html.find(&format!("id=\"v{version}\"")).unwrap_or_else(|| panic!("no v{version}"));
        let start = self.html[..at].rfind("<li class=\"event\"").expect("entry");
        let rest = &self.html[at..];
        let end = at + rest.find("<li class=\"event\"").or_else(|| rest.find("</ol>")).expect("end");
        &self.html[start..end]
    }
}

#[test]
fn every_event_has_its_element_and_every_summary_its_field() {
    let lines = lines();
    let report = report(&lines);
    assert!(report.findings.is_empty(), "the fixture audits clean: {:?}", report.findings);
    for lang in [Lang::En, Lang::Ru] {
        let page = render_with(&lines, &report, lang, &View::default(), 200);
        for line in &lines {
            let element =
                format!("id=\"v{v}\" data-version=\"{v}\" data-type=\"{t}\"", v = line.version, t = line.event_type);
            assert_eq!(page.html.matches(&element).count(), 1, "{element}");
        }
        let summary = if lang == Lang::En { "summary_en" } else { "summary_ru" };
        for line in lines.iter().filter(|l| l.event_type == "ActionResolved") {
            let entry = page.entry(line.version);
            let text = line.event[summary].as_str().unwrap();
            // A die not counted, `~~2~~` in the record, is drawn struck: <s>2</s>.
            let escaped: String = maud::html! { (text) }
                .into_string()
                .split("~~")
                .enumerate()
                .map(|(i, part)| if i % 2 == 1 { format!("<s>{part}</s>") } else { part.to_string() })
                .collect();
            assert!(entry.contains(&format!("data-summary=\"{summary}\">{escaped}</p>")), "v{}: {entry}", line.version);
            assert_eq!(entry.matches("data-summary=").count(), 1, "{entry}");
        }
        // BattleClosed's reason and BattleOpened's title, verbatim.
        assert!(page.entry(10).contains("data-summary=\"reason\">the demo is over<"));
        assert!(page.entry(0).contains("data-summary=\"title\" translate=\"no\">Pikachu vs Meowth<"));
        assert!(page.html.contains("data-status=\"closed\"") && page.html.contains("data-roller-key=\"pending\""));
        assert!(!page.html.contains("data-live-url"), "a closed battle has nothing live");
        assert!(page.html.contains("<script type=\"application/json\" id=\"roller-keys\">{\"keys\":[]}</script>"));
        for id in ["id=\"checks\"", "id=\"roller-key\"", "id=\"roller-key-status\"", "id=\"posted-head\"", "<main>"] {
            assert!(page.html.contains(id), "{id}");
        }
        assert!(page.html.contains("data-verdict=\"pending\" aria-live=\"polite\""));
    }
}

#[test]
fn a_roll_is_drawn_inside_the_action_that_used_it() {
    let lines = lines();
    let page = render_with(&lines, &report(&lines), Lang::En, &View::default(), 200);
    // v2 (rolls [0]) used v1 (nonce 0); v9 (rolls [3]) used v8 (nonce 3).
    for (action, roll, nonce) in [(2, 1, 0), (4, 3, 1), (6, 5, 2), (9, 8, 3)] {
        let entry = page.entry(action);
        assert!(
            entry.contains(&format!(
                "class=\"event nested\" id=\"v{roll}\" data-version=\"{roll}\" data-type=\"DiceRolled\""
            )),
            "v{roll} not inside v{action}: {entry}"
        );
        assert!(entry.contains(&format!("data-nonce=\"{nonce}\"")), "{entry}");
    }
}

#[test]
fn each_command_shows_its_recorded_credential_and_time() {
    let lines = lines();
    let page = render_with(&lines, &report(&lines), Lang::En, &View::default(), 200);
    // Every command of the fixture was recorded with the CLI's forum token
    // (subject battlelog-cli, role forum: in the record bytes).
    for version in [0, 2, 4, 6, 7, 9, 10] {
        let entry = page.entry(version);
        assert!(entry.contains("data-subject=\"battlelog-cli\" data-role=\"forum\""), "v{version}: {entry}");
    }
    // The close's free-text `by` ("demo judge") is a note, not the identity.
    let close = page.entry(10);
    assert!(close.contains("class=\"muted close-note\""), "{close}");
    assert!(!close.contains("data-subject=\"demo judge\""));
    // v0 was recorded at 1796104963141597 µs: 2026-12-01T06:02:43.141597Z.
    assert!(page.entry(0).contains("<time datetime=\"2026-12-01T06:02:43.141597Z\">2026-12-01 06:02:43 UTC</time>"));
    assert_eq!(page.html.matches("<time datetime=").count(), lines.len());
}

/// The fixture with a dispute and a judge's ruling (after the close)
/// overriding v2's damage, 60 as recorded, to 45; `counted` named but left
/// as it was.
fn with_ruling() -> (Vec<ExportLine>, AuditReport) {
    let mut lines = lines();
    let mut report = report(&lines);
    let extra = |version: u64, event: Value| ExportLine {
        stream: lines[0].stream.clone(),
        version,
        hash: String::new(),
        record: String::new(),
        event_id: String::new(),
        event_type: event["type"].as_str().unwrap().into(),
        recorded_at_unix_micros: 1_796_104_963_200_000,
        event,
    };
    let recorded = lines[2].event["outcome"]["damage"].clone();
    assert_eq!(recorded, json!(60), "the fixture's v2 outcome");
    let dispute = extra(12, json!({"type": "DisputeRaised", "by": "meowth", "refers_to": 2, "reason": "a rock"}));
    let ruling = extra(
        13,
        json!({"type": "JudgeRuling", "judge": "anna", "refers_to": 2, "text": "45, not 60", "override": {}}),
    );
    lines.extend([dispute, ruling]);
    report.disputes.push(DisputeSeen {
        version: 12,
        contests: 2,
        party: "meowth".into(),
        reason: "a rock".into(),
        by: Some(Author { subject: "forum-x".into(), role: "forum".into() }),
        after_close: false,
    });
    report.rulings.push(RulingSeen {
        version: 13,
        contests: 2,
        judge: "anna".into(),
        role: Some("judge".into()),
        by: Some(Author { subject: "anna".into(), role: "judge".into() }),
        text: "45, not 60".into(),
        after_close: false,
        changes: vec![
            FieldChange { field: "counted".into(), before: json!(null), after: json!(null) },
            FieldChange { field: "damage".into(), before: recorded, after: json!(45) },
        ],
        answers_dispute: None,
        affected: Vec::new(),
    });
    (lines, report)
}

#[test]
fn a_ruling_shows_on_the_action_it_overrides() {
    let (lines, report) = with_ruling();
    let page = render_with(&lines, &report, Lang::En, &View::default(), 200);
    let action = page.entry(2);
    assert!(action.contains("<li data-field=\"damage\">"), "{action}");
    assert!(action.contains("<del class=\"recorded\">60</del>"), "{action}");
    assert!(action.contains("<ins class=\"final\">45</ins>"), "{action}");
    assert!(action.contains("href=\"#v13\""), "the ruling is linked: {action}");
    assert!(action.contains("contested by <a href=\"#v12\">#v12</a>"), "{action}");
    assert!(!action.contains("data-field=\"counted\""), "an unchanged field is not listed: {action}");
    let ruling = page.entry(13);
    assert!(ruling.contains("<tr data-field=\"damage\">") && !ruling.contains("data-field=\"counted\""), "{ruling}");
    assert!(ruling.contains("class=\"after-close\""), "made after v10's close: {ruling}");
    assert!(ruling.contains("data-summary=\"text\">45, not 60<"), "{ruling}");
    // Russian: the field's name translated.
    let ru = render_with(&lines, &report, Lang::Ru, &View::default(), 200);
    assert!(ru.entry(2).contains("<span data-field-name=\"damage\">урон</span>"), "{}", ru.entry(2));
    assert!(page.html.contains("href=\"?lang=en&amp;view=final#final-view\""), "the view is linked");
    // ?view=final lists every action; v2 with its final damage.
    let finals = render_with(&lines, &report, Lang::En, &View { final_view: true, ..View::default() }, 200);
    let section = &finals.html[finals.html.find("id=\"final-view\"").expect("final view")..];
    let actions = lines.iter().filter(|l| l.event_type == "ActionResolved").count();
    assert_eq!(section.matches("<li data-action=").count(), actions);
    assert!(section.contains("<ins class=\"final\">45</ins>"));
}

#[test]
fn a_small_window_pages_and_links_reach_other_pages() {
    let lines = lines();
    let report = report(&lines);
    // Entries: v0, v2(+1), v4(+3), v6(+5), v7, v9(+8), v10, v11: 8 entries.
    let first = render_with(&lines, &report, Lang::En, &View::default(), 3);
    assert!(first.html.contains("id=\"v0\"") && first.html.contains("id=\"v4\"") && !first.html.contains("id=\"v6\""));
    assert!(first.html.contains("Page 1 of 3"), "pager");
    let holding = render_with(&lines, &report, Lang::En, &View { v: Some(8), ..View::default() }, 3);
    assert!(holding.html.contains("Page 2 of 3") && holding.html.contains("id=\"v8\""));
    // The commitments table links epoch 0's v0: on page 1 a fragment, from
    // page 2 through ?v=.
    assert!(first.html.contains("<td><a href=\"#v0\">0</a></td>"), "a link on the same page");
    assert!(
        holding.html.contains("<td><a href=\"?lang=en&amp;v=0#v0\">0</a></td>"),
        "a link to another page carries ?v="
    );
}

#[test]
fn an_unknown_language_is_said_and_a_head_prefilled() {
    let lines = lines();
    let report = report(&lines);
    let head = report.head_hash.clone();
    let view = View::from_query(&ViewQuery { head: Some(head.clone()), ..ViewQuery::default() });
    let (lang, unknown) = Lang::from_query(Some("de"), Some("ru-RU"));
    let page = BattlePage {
        battle_id: &lines[0].stream,
        lines: &lines,
        report: &report,
        lang,
        unknown_lang: unknown.as_deref(),
        share_key: None,
        trusted_roller_keys: &["ab".repeat(32)],
        trusted_log_keys: &[],
        checkpoint_note: None,
        appeal_deadline: Some("2026-12-15 00:00 UTC".into()),
        view: &view,
        page_events: 200,
    }
    .render()
    .into_string();
    assert!(page.contains("<html lang=\"ru\">"), "Accept-Language decides");
    assert!(page.contains("id=\"lang-notice\"") && page.contains(">de</code>"), "the notice names the code");
    assert!(page.contains(&format!(
        "id=\"posted-head\" type=\"text\" spellcheck=\"false\" autocomplete=\"off\" value=\"{head}\""
    )));
    assert!(page.contains(&format!("{{\"keys\":[\"{}\"]}}", "ab".repeat(32))));
    assert!(page.contains("id=\"appeal-deadline\">2026-12-15 00:00 UTC<"));
    assert!(page.contains("id=\"no-checkpoint\""), "no trailer: the page says so");
    assert!(page.contains("id=\"log-keys\">{\"keys\":[]}<"));
}

/// golang.org/x/mod/sumdb/note's example verifier key, as a stand-in log key.
const LOG_KEY: &str = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW";

#[test]
fn an_export_with_a_trailer_renders_and_shows_the_checkpoint_to_keep_in_both_languages() {
    let lines = lines();
    let report = report(&lines);
    let view = View::default();
    // A note whose origin holds what HTML must escape: it is shown as text.
    let note = "battlelog.local/<journal>\n12\nAAAA\n\n\u{2014} battlelog.local/<journal> AAAA\n";
    for (lang, copy, why) in [(Lang::En, ">Copy<", "Keep a copy"), (Lang::Ru, ">Копировать<", "Сохраните копию")]
    {
        let page = BattlePage {
            battle_id: &lines[0].stream,
            lines: &lines,
            report: &report,
            lang,
            unknown_lang: None,
            share_key: None,
            trusted_roller_keys: &[],
            trusted_log_keys: &[LOG_KEY.to_owned()],
            checkpoint_note: Some(note),
            appeal_deadline: None,
            view: &view,
            page_events: 200,
        }
        .render()
        .into_string();
        assert!(
            page.contains("<pre id=\"checkpoint-note\" translate=\"no\">battlelog.local/&lt;journal&gt;\n12\nAAAA\n\n\u{2014} battlelog.local/&lt;journal&gt; AAAA\n</pre>"),
            "{lang:?}: the note as text"
        );
        assert!(page.contains("<button id=\"copy-checkpoint\" type=\"button\" aria-controls=\"checkpoint-note\">"));
        assert!(page.contains(copy) && page.contains(why), "{lang:?}");
        assert!(page.contains(&format!("id=\"log-keys\">{{\"keys\":[\"{LOG_KEY}\"]}}<")));
        assert!(
            page.contains(&format!("<code class=\"hash\" translate=\"no\">{LOG_KEY}</code>")),
            "the published key shown"
        );
        // The timeline is the events' alone.
        let past = lines.last().expect("a line").version + 1;
        assert!(!page.contains(&format!("data-version=\"{past}\"")), "the trailer is no event of the timeline");
    }
}

#[test]
fn a_forum_reference_is_a_link_only_when_it_is_a_web_address() {
    let link = forum_ref("https://forum.example/t/1?p=2").into_string();
    assert!(link.starts_with("<a ") && link.contains("rel=\"nofollow noopener noreferrer\""), "{link}");
    assert!(!forum_ref("javascript:alert(1)").into_string().contains("<a "));
    assert!(!forum_ref("forum:demo/1").into_string().contains("<a "));
}

#[test]
fn the_search_shows_only_what_matches_and_keeps_itself_in_the_pager() {
    let lines = lines();
    let report = report(&lines);
    let query = ViewQuery { actor: Some("meowth".into()), ..ViewQuery::default() };
    let page = render_with(&lines, &report, Lang::En, &View::from_query(&query), 1);
    // meowth's entries in the fixture: the dodge v4 (roll v3) and the
    // Fake Out v6 (roll v5); one a page.
    assert!(page.html.contains("id=\"v4\"") && !page.html.contains("id=\"v2\""), "page 1 holds v4 only");
    assert!(page.html.contains("<p class=\"muted\" id=\"matching\">2 matching entries</p>"));
    assert!(
        page.html.contains("href=\"?lang=en&amp;actor=meowth&amp;page=2#timeline\""),
        "the next page keeps the search"
    );
    assert!(
        page.html.contains("<input id=\"search-actor\" name=\"actor\" type=\"text\" list=\"actors\" value=\"meowth\">")
    );
}

/// Issue 39, findings 4 and 10: the server audit's findings are said in the
/// page's language, and counted in events, not in problems (one edited die
/// read as "2 findings").
#[test]
fn the_server_audit_counts_events_and_speaks_the_pages_language() {
    use battlelog_verify::{Check, Finding, Problem};
    let lines = lines();
    let mut report = report(&lines);
    let differs = Problem::RollDiffers {
        nonce: 0,
        expression: "1d6".into(),
        recorded: "1".into(),
        recorded_total: 1,
        derived: "6".into(),
        derived_total: 6,
    };
    report.findings.push(Finding { version: 1, check: Check::Roll, problem: differs });
    report.findings.push(Finding { version: 1, check: Check::Roll, problem: Problem::NonceReused { nonce: 0 } });
    let ru = render_with(&lines, &report, Lang::Ru, &View::default(), 200).html;
    assert!(ru.contains("Аудит сервера: замечания к 1 событию"), "one event, however many findings");
    let findings = &ru[ru.find("id=\"server-findings\"").expect("the findings listed")..];
    let findings = &findings[..findings.find("</ul>").expect("the list ends")];
    assert!(findings.contains("записано [1] = 1, а раскрытый сид даёт [6] = 6"), "{findings}");
    assert!(!findings.contains("lang=\"en\""), "{findings}");
    let en = render_with(&lines, &report, Lang::En, &View::default(), 200).html;
    assert!(en.contains("Server audit: findings at 1 event"), "counted in events in English too");

    let clean = self::report(&lines);
    let ru = render_with(&lines, &clean, Lang::Ru, &View::default(), 200).html;
    assert!(ru.contains("Аудит сервера: замечаний нет"), "no findings said so");
}

/// Issue 39: the disputes panel right after the verdict, each dispute open
/// or answered by the ruling that names it (and linking it), a ruling that
/// names none saying so, and an action a ruling reaches marked with it.
#[test]
fn disputes_come_first_and_rulings_are_followed_through() {
    let (mut lines, mut report) = with_ruling();
    // v13 answers v12; v14 contests v2 as well and nothing answers it.
    let ruling = lines.iter_mut().find(|l| l.version == 13).expect("v13");
    ruling.event["answers_dispute"] = json!(12);
    let mut open = lines.iter().find(|l| l.version == 12).expect("v12").clone();
    open.version = 14;
    open.event["by"] = json!("pikachu");
    lines.push(open);
    report.rulings[0].answers_dispute = Some(12);
    report.rulings[0].affected = vec![AffectedAction {
        version: 4,
        changes: vec![FieldChange { field: "damage_after".into(), before: json!(30), after: json!(22) }],
        refused: None,
    }];
    let mut second = report.disputes[0].clone();
    second.version = 14;
    second.party = "pikachu".into();
    report.disputes.push(second);
    for (lang, answered, open_word) in [(Lang::En, "Answered:", "Open:"), (Lang::Ru, "Отвечено:", "Открыто:")]
    {
        let page = render_with(&lines, &report, lang, &View::default(), 200);
        let html = &page.html;
        let verdict_end = html.find("id=\"verdict\"").expect("verdict");
        let panel = html.find("id=\"disputes\"").expect("the disputes panel");
        assert!(
            verdict_end < panel && panel < html.find("id=\"v0\"").expect("v0"),
            "after the verdict, before any event"
        );
        let panel = &html[panel..];
        let panel = &panel[..panel.find("</section>").expect("panel end")];
        let first = &panel[panel.find("data-dispute-version=\"12\"").expect("v12 listed")..];
        assert!(first.starts_with("data-dispute-version=\"12\" data-status=\"answered\""), "{first}");
        assert!(first.contains(answered) && first.contains("href=\"#v13\""), "{first}");
        let second = &panel[panel.find("data-dispute-version=\"14\"").expect("v14 listed")..];
        assert!(second.starts_with("data-dispute-version=\"14\" data-status=\"open\""), "{second}");
        assert!(second.contains(open_word) && !second.contains("class=\"answer\""), "{second}");
        assert!(second.contains("class=\"contests\" href=\"#v2\""), "{second}");
        // The dispute links back; the ruling links its dispute.
        assert!(page.entry(12).contains("class=\"answer\" href=\"#v13\""), "{}", page.entry(12));
        assert!(page.entry(14).contains("data-status=\"open\""), "{}", page.entry(14));
        assert!(page.entry(13).contains("class=\"answers-link\" href=\"#v12\""), "{}", page.entry(13));
        // The action the ruling reaches, with what it gives now.
        let reached = page.entry(4);
        assert!(reached.contains("data-affected-by=\"13\""), "{reached}");
        assert!(
            reached.contains("<del class=\"recorded\">30</del>") && reached.contains("<ins class=\"again\">22</ins>"),
            "{reached}"
        );
        assert!(!page.entry(2).contains("data-affected-by"), "the ruled action itself is not 'affected'");
    }
    // A ruling naming no dispute says so, in both languages.
    report.rulings[0].answers_dispute = None;
    let ruling = lines.iter_mut().find(|l| l.version == 13).expect("v13");
    ruling.event.as_object_mut().expect("an object").remove("answers_dispute");
    let en = render_with(&lines, &report, Lang::En, &View::default(), 200);
    assert!(en.entry(13).contains("Answers no recorded dispute."), "{}", en.entry(13));
    let ru = render_with(&lines, &report, Lang::Ru, &View::default(), 200);
    assert!(ru.entry(13).contains("Не отвечает ни на одно записанное оспаривание."), "{}", ru.entry(13));
    assert!(en.html.contains("data-dispute-version=\"12\" data-status=\"open\""), "no ruling names v12 now");
}

/// Issue 39, finding 2: a ruling whose override changes nothing says so in
/// plain words, not as a grey aside.
#[test]
fn a_ruling_that_changes_nothing_says_so_plainly() {
    let (lines, mut report) = with_ruling();
    report.rulings[0].changes.clear();
    for (lang, words) in [(Lang::En, "changes nothing"), (Lang::Ru, "ничего не меняет")] {
        let page = render_with(&lines, &report, lang, &View::default(), 200);
        let ruling = page.entry(13);
        let said = &ruling[ruling.find("data-ruling-effect=\"none\"").expect("said")..];
        assert!(said.contains(words) && said.contains("<strong>"), "{said}");
        assert!(!ruling.contains("class=\"muted\" data-ruling-effect"), "{ruling}");
    }
}

#[test]
fn the_first_part_ends_with_the_verdict_and_links_the_export_it_does_not_carry() {
    let lines = lines();
    let report = report(&lines);
    let view = View::default();
    let page = BattlePage {
        battle_id: &lines[0].stream,
        lines: &lines,
        report: &report,
        lang: Lang::En,
        unknown_lang: None,
        share_key: Some("KEY"),
        trusted_roller_keys: &[],
        trusted_log_keys: &[],
        checkpoint_note: None,
        appeal_deadline: None,
        view: &view,
        page_events: 200,
    };
    let (top, rest) = (page.top(), page.rest());
    assert_eq!(format!("{top}{rest}"), page.render().into_string(), "the two parts are the page");
    assert!(top.starts_with("<!DOCTYPE html><html lang=\"en\"><head>"), "{top:.80}");
    assert!(top.trim_end().ends_with("</section>") && top.contains("id=\"verdict\""), "ends with the banner");
    assert!(!top.contains("class=\"event") && rest.contains("class=\"event"), "no event before the banner ends");
    assert!(rest.ends_with("</body></html>"), "the rest closes what the first part opened");
    let head = top.split("</head>").next().expect("a head");
    let link = format!(
        "<link id=\"export-link\" rel=\"alternate\" type=\"application/x-ndjson\" href=\"/battles/{}/export.jsonl?k=KEY\">",
        lines[0].stream
    );
    assert!(head.contains(&link), "{head}");
    assert!(
        head.contains("id=\"roller-keys\"") && head.contains("id=\"log-keys\""),
        "what the check reads, in the head"
    );
    assert!(head.contains("rel=\"modulepreload\"") && head.contains("<script type=\"module\" async"), "{head}");
    // No record of the export is in the page.
    for line in &lines {
        assert!(!top.contains(&line.record) && !rest.contains(&line.record), "v{}'s record", line.version);
    }
    assert!(rest.contains("<script type=\"application/x-ndjson\" id=\"battle-export\"></script>"));
}
